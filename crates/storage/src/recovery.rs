//! Recovery at open: redo every committed transaction the log holds past the
//! last checkpoint, on the data files, before anything else reads them.
//!
//! The log holds only committed work (a transaction's records are appended when
//! it commits, and its pages stay in the buffer pool until then), so there is
//! nothing to undo. A transaction's records are applied only when its commit
//! record follows them; records without one (the tail of a log torn by a crash)
//! are ignored. A full page image is always applied; a change of byte ranges
//! only to a page older than the transaction (its LSN is smaller), which is the
//! page exactly as the previous change to it left it — pages reach the device
//! only with their whole change logged before them. A page torn by a crash
//! during its write has a full image in the log after the last checkpoint (the
//! first change of any page after a checkpoint logs the whole page), which
//! recovery applies before any range change of it.
//!
//! Recovery first redoes the log in memory ([`redo`]): it reads the data files
//! and writes nothing. A read-write open then writes the redone pages
//! ([`recover`]), but only once it knows the filesystem has room for what they
//! add past the files' ends: a database whose log ran out of room would
//! otherwise fill the disk again midway. If a write fails all the same, the
//! files are cut back to their lengths before, so a failed try keeps none of
//! the room it was given, and the error says how much room recovery needs and
//! where. A read-only open serves the redone pages from memory
//! ([`recover_in_memory`], `device/overlay.rs`) and writes nothing at all: a
//! full disk never keeps a database from being read.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::device::overlay::PageImages;
use crate::device::{AlignedBuf, Device, FaultInjector, FileId, OverlayDevice};
use crate::error::{Result, StorageError};
use crate::page::{self, PAGE_SIZE};
use crate::wal::{self, LogRecord, PageImage};

/// What recovery found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Tables whose sizes the redone transactions changed.
    pub tables: std::collections::BTreeSet<String>,
    /// Where the log ends: the next record's LSN.
    pub end: u64,
    /// The last commit sequence number.
    pub csn: u64,
    /// Committed transactions redone (their records read; pages already newer
    /// are left alone).
    pub transactions: u64,
    /// Page changes applied.
    pub pages_changed: u64,
    /// Where recovery started.
    pub redo_lsn: u64,
    /// Where the first transaction it did not redo starts (one whose commit
    /// record the log does not hold yet), or `end`: every page a later commit
    /// changes carries an LSN at or past it (`device/snapshot.rs`).
    pub snapshot_end: u64,
}

/// Redoes the log of the database in `dir` on its data files through `device`,
/// and brings the table sizes in `catalog` up to the last commit (the caller
/// saves it at the checkpoint that follows). Writes nothing unless the
/// filesystem (or, in tests, the `full-disk` budget of `faults`) has room for
/// everything it will write; see the module docs.
pub fn recover(
    dir: &Path,
    catalog: &mut Catalog,
    device: &dyn Device,
    faults: Option<&FaultInjector>,
) -> Result<Recovered> {
    let (out, mut redone) = redo(dir, catalog, device)?;
    let written = redone.write(dir, device, faults);
    redone.close(device);
    written?;
    Ok(out)
}

/// Redoes the log of the database in `dir` in memory, for a read-only open:
/// what was redone, and the device to read through — `device` itself when
/// the log holds no commit past the last checkpoint, otherwise `device`
/// wrapped in an [`OverlayDevice`] that serves the redone pages and refuses
/// every write. The table sizes in `catalog` are brought up to the last
/// commit, in memory.
pub fn recover_in_memory(
    dir: &Path,
    catalog: &mut Catalog,
    device: Arc<dyn Device>,
) -> Result<(Arc<dyn Device>, Recovered)> {
    let (out, redone) = redo(dir, catalog, device.as_ref())?;
    redone.close(device.as_ref());
    if out.transactions == 0 {
        return Ok((device, out));
    }
    let images: HashMap<PathBuf, PageImages> = redone
        .files
        .into_iter()
        .map(|(name, f)| {
            let pages = f
                .pages
                .into_iter()
                .map(|(no, bytes)| (no, bytes.into_boxed_slice()))
                .collect();
            (dir.join(name), pages)
        })
        .collect();
    Ok((Arc::new(OverlayDevice::new(device, images)), out))
}

/// Reads the log of the database in `dir` from its last checkpoint and applies
/// every committed transaction to copies of the pages it changes, read through
/// `device`; brings the table sizes in `catalog` up to the last commit. Writes
/// nothing.
pub fn redo(dir: &Path, catalog: &mut Catalog, device: &dyn Device) -> Result<(Recovered, Redone)> {
    let control = wal::read_control(&dir.join(wal::WAL_DIR))?;
    let (records, end) = wal::read_log(dir, control.redo_lsn)?;
    let mut out = Recovered {
        end,
        csn: control.csn,
        redo_lsn: control.redo_lsn,
        ..Recovered::default()
    };
    // Every data file the catalog knows, with its segment size.
    let mut files: HashMap<String, u64> = HashMap::new();
    for t in catalog.tables.values() {
        files.insert(t.heap_file.clone(), t.segment_pages);
        for f in t.columns.iter().flat_map(|c| c.tree_files()) {
            files.insert(f.clone(), t.segment_pages);
        }
        for i in &t.indexes {
            files.insert(i.file.clone(), t.segment_pages);
            if let Some(h) = &i.hot {
                files.insert(h.file.clone(), t.segment_pages);
            }
        }
    }
    let mut redone = Redone {
        files: BTreeMap::new(),
    };
    let mut pending: Vec<(u64, String, u64, PageImage)> = Vec::new();
    for (lsn, rec) in records {
        match rec {
            LogRecord::Page { file, page, image } => pending.push((lsn, file, page, image)),
            LogRecord::Commit { csn, tables } => {
                let txn_lsn = pending.first().map_or(lsn, |p| p.0);
                for (_, file, page, image) in pending.drain(..) {
                    let Some(&segment_pages) = files.get(&file) else {
                        // A file dropped since: its changes do not matter.
                        continue;
                    };
                    let applied =
                        redone.apply(dir, device, &file, segment_pages, page, &image, txn_lsn);
                    match applied {
                        Ok(true) => out.pages_changed += 1,
                        Ok(false) => {}
                        Err(e) => {
                            redone.close(device);
                            return Err(e);
                        }
                    }
                }
                for t in tables {
                    if let Some(def) = catalog.tables.get_mut(&t.table) {
                        def.pages = t.pages;
                        def.rows = t.rows;
                        out.tables.insert(t.table);
                    }
                }
                out.csn = out.csn.max(csn);
                out.transactions += 1;
            }
        }
    }
    out.snapshot_end = pending.first().map_or(out.end, |p| p.0);
    Ok((out, redone))
}

/// The log redone in memory: every page it changes, as the last commit left
/// it, by file (as the catalog names it).
pub struct Redone {
    files: BTreeMap<String, RedoneFile>,
}

struct RedoneFile {
    segment_pages: u64,
    /// The file on the device, once opened (or created to be written).
    id: Option<FileId>,
    /// Pages the file has on the device before recovery.
    on_disk: u64,
    pages: BTreeMap<u64, Vec<u8>>,
}

impl RedoneFile {
    /// Pages the redone ones add past the file's end on the device.
    fn growth(&self) -> u64 {
        self.pages
            .keys()
            .next_back()
            .map_or(0, |last| (last + 1).saturating_sub(self.on_disk))
    }
}

impl Redone {
    /// Pages redone.
    pub fn pages(&self) -> usize {
        self.files.values().map(|f| f.pages.len()).sum()
    }

    /// Bytes the redone pages add past the data files' ends: the room writing
    /// them takes.
    pub fn growth(&self) -> u64 {
        self.files.values().map(|f| f.growth()).sum::<u64>() * PAGE_SIZE as u64
    }

    /// Applies one logged change; whether the page changed.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        dir: &Path,
        device: &dyn Device,
        name: &str,
        segment_pages: u64,
        page: u64,
        image: &PageImage,
        txn_lsn: u64,
    ) -> Result<bool> {
        let path = dir.join(name);
        if !self.files.contains_key(name) {
            // A file the catalog names but the device lacks is empty: the log
            // holds all of its pages.
            let (id, on_disk) = if crate::device::segment_path(&path, 0).exists() {
                let id = device.open(&path, segment_pages)?;
                (Some(id), device.num_pages(id)?)
            } else {
                (None, 0)
            };
            self.files.insert(
                name.to_string(),
                RedoneFile {
                    segment_pages,
                    id,
                    on_disk,
                    pages: BTreeMap::new(),
                },
            );
        }
        let f = self.files.get_mut(name).expect("just inserted");
        if !f.pages.contains_key(&page) {
            let mut buf = vec![0u8; PAGE_SIZE];
            if let Some(id) = f.id
                && page < f.on_disk
            {
                let mut b = AlignedBuf::new(1);
                device.read(id, page, &mut b)?;
                buf.copy_from_slice(&b);
            }
            f.pages.insert(page, buf);
        }
        let buf = f.pages.get_mut(&page).expect("just inserted");
        let damaged = |reason: String| StorageError::CorruptPage {
            path: path.clone(),
            page,
            reason,
        };
        match image {
            PageImage::Full(_) => {}
            PageImage::Diff(_) => {
                page::verify(buf, page, &path).map_err(|e| {
                    damaged(format!(
                        "the log changes this page but it is damaged and the log has no full \
                         image of it ({e})"
                    ))
                })?;
                if page::lsn_of(buf) >= txn_lsn {
                    return Ok(false);
                }
            }
        }
        image
            .apply(buf)
            .map_err(|e| damaged(format!("a log record does not fit the page: {e}")))?;
        // Sealed at once, so a later change of it verifies the page as it now is.
        page::seal(buf);
        Ok(true)
    }

    /// Writes the redone pages to the data files and syncs them, once there is
    /// room for them; a failed write cuts the files back to their lengths before.
    fn write(
        &mut self,
        dir: &Path,
        device: &dyn Device,
        faults: Option<&FaultInjector>,
    ) -> Result<()> {
        if self.pages() == 0 {
            return Ok(());
        }
        let room = Room::needed(dir, self)?;
        let free = free_bytes(&dir.join("data"))?
            .min(faults.and_then(|f| f.free_bytes()).unwrap_or(u64::MAX));
        if free < room.total() {
            return Err(room.error(dir, self, free, None));
        }
        let written = self.write_pages(dir, device);
        let Err(e) = written else {
            return Ok(());
        };
        let cut = self.cut_back(device);
        if !is_enospc(&e) {
            return Err(e);
        }
        let free = free_bytes(&dir.join("data"))?
            .min(faults.and_then(|f| f.free_bytes()).unwrap_or(u64::MAX));
        Err(room.error(dir, self, free, Some((e, cut))))
    }

    fn write_pages(&mut self, dir: &Path, device: &dyn Device) -> Result<()> {
        let mut buf = AlignedBuf::new(1);
        for (name, f) in &mut self.files {
            let id = match f.id {
                Some(id) => id,
                None => {
                    let id = device.create(&dir.join(name), f.segment_pages)?;
                    f.id = Some(id);
                    id
                }
            };
            for (no, bytes) in &f.pages {
                buf.copy_from_slice(bytes);
                page::seal(&mut buf);
                device.write(id, *no, &buf)?;
            }
        }
        for f in self.files.values() {
            if let Some(id) = f.id {
                device.sync(id)?;
            }
        }
        Ok(())
    }

    /// Cuts every file a failed recovery grew back to its length before
    /// (the log still holds those pages); the error of a cut that failed.
    fn cut_back(&self, device: &dyn Device) -> Option<StorageError> {
        let mut failed = None;
        for f in self.files.values() {
            let Some(id) = f.id else { continue };
            let grown = device.num_pages(id).map(|n| n > f.on_disk);
            let cut = match grown {
                Ok(true) => device
                    .truncate(id, f.on_disk)
                    .and_then(|()| device.sync(id)),
                Ok(false) => Ok(()),
                Err(e) => Err(e),
            };
            if let Err(e) = cut {
                failed.get_or_insert(e);
            }
        }
        failed
    }

    fn close(&self, device: &dyn Device) {
        for f in self.files.values() {
            if let Some(id) = f.id {
                device.close(id);
            }
        }
    }
}

/// The room a read-write recovery takes on the filesystem of the database.
struct Room {
    /// Bytes the redone pages add past the data files' ends.
    growth: u64,
    /// Bytes of the catalog, written anew (beside the old one until it
    /// replaces it) once the redone pages are durable.
    catalog: u64,
}

impl Room {
    fn needed(dir: &Path, redone: &Redone) -> Result<Room> {
        let path = Catalog::path(dir);
        let len = std::fs::metadata(&path)
            .map_err(|e| StorageError::io(&path, e))?
            .len();
        Ok(Room {
            growth: redone.growth(),
            // Whole filesystem blocks.
            catalog: len.div_ceil(4096) * 4096,
        })
    }

    fn total(&self) -> u64 {
        self.growth + self.catalog
    }

    /// The error of a recovery that found `free` bytes too few, or ran out
    /// of room writing (`failed`: the write's error, and that of cutting the
    /// files back, if that failed too).
    fn error(
        &self,
        dir: &Path,
        redone: &Redone,
        free: u64,
        failed: Option<(StorageError, Option<StorageError>)>,
    ) -> StorageError {
        let data = dir.join("data");
        let grown: Vec<String> = redone
            .files
            .iter()
            .filter(|(_, f)| f.growth() > 0)
            .map(|(name, f)| format!("{name} +{} pages", f.growth()))
            .collect();
        let need = self.total();
        let mut msg = format!(
            "recovery needs {need} bytes ({:.1} MiB) free in {}: {} bytes for the pages the \
             log adds past the data files' ends ({}) and {} bytes to rewrite {}; ",
            need as f64 / (1 << 20) as f64,
            data.display(),
            self.growth,
            if grown.is_empty() {
                "none".to_string()
            } else {
                grown.join(", ")
            },
            self.catalog,
            Catalog::path(dir).display(),
        );
        match failed {
            None => msg.push_str(&format!("{free} bytes are free, so nothing was written")),
            Some((e, None)) => msg.push_str(&format!(
                "it ran out of room ({e}) and cut the files back to their lengths before, \
                 so it keeps none of the room it took ({free} bytes are free now)"
            )),
            Some((e, Some(cut))) => msg.push_str(&format!(
                "it ran out of room ({e}), and cutting the files back failed too ({cut})"
            )),
        }
        msg.push_str(&format!(
            ". The log in {} keeps every committed change until recovery is done, and is \
             removed then (it is at least as large as what recovery adds). A read-only open \
             (strata check, a SELECT) needs no room",
            dir.join(wal::WAL_DIR).display()
        ));
        StorageError::io(
            data,
            std::io::Error::new(std::io::ErrorKind::StorageFull, msg),
        )
    }
}

/// Whether `e` is a full disk.
fn is_enospc(e: &StorageError) -> bool {
    match e {
        StorageError::Io { source, .. } => {
            source.kind() == std::io::ErrorKind::StorageFull
                || source.raw_os_error() == Some(libc::ENOSPC)
        }
        _ => false,
    }
}

/// Bytes an unprivileged process may still write on the filesystem of `path`.
fn free_bytes(path: &Path) -> Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        StorageError::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL byte in the path"),
        )
    })?;
    // SAFETY: statvfs fills the zeroed struct from a valid NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(StorageError::io(path, std::io::Error::last_os_error()));
    }
    Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}
