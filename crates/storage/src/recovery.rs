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

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::catalog::Catalog;
use crate::device::{AlignedBuf, Device, FileId};
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
}

/// Redoes the log of the database in `dir` on its data files through `device`,
/// and brings the table sizes in `catalog` up to the last commit (the caller
/// saves it at the checkpoint that follows).
pub fn recover(dir: &Path, catalog: &mut Catalog, device: &dyn Device) -> Result<Recovered> {
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
        for i in &t.indexes {
            files.insert(i.file.clone(), t.segment_pages);
            if let Some(h) = &i.hot {
                files.insert(h.file.clone(), t.segment_pages);
            }
        }
    }
    let mut pages = Pages {
        dir,
        device,
        open: HashMap::new(),
        cache: BTreeMap::new(),
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
                    if pages.apply(&file, segment_pages, page, &image, txn_lsn)? {
                        out.pages_changed += 1;
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
    pages.write_all()?;
    Ok(out)
}

/// The pages recovery changed, kept until the end and then written in order.
struct Pages<'a> {
    dir: &'a Path,
    device: &'a dyn Device,
    open: HashMap<String, FileId>,
    cache: BTreeMap<(FileId, u64), Vec<u8>>,
}

impl Pages<'_> {
    fn file(&mut self, name: &str, segment_pages: u64) -> Result<FileId> {
        if let Some(&f) = self.open.get(name) {
            return Ok(f);
        }
        let path = self.dir.join(name);
        let f = if crate::device::segment_path(&path, 0).exists() {
            self.device.open(&path, segment_pages)?
        } else {
            self.device.create(&path, segment_pages)?
        };
        self.open.insert(name.to_string(), f);
        Ok(f)
    }

    /// Applies one logged change; whether the page changed.
    fn apply(
        &mut self,
        name: &str,
        segment_pages: u64,
        page: u64,
        image: &PageImage,
        txn_lsn: u64,
    ) -> Result<bool> {
        let file = self.file(name, segment_pages)?;
        let key = (file, page);
        if !self.cache.contains_key(&key) {
            let mut buf = vec![0u8; PAGE_SIZE];
            if page < self.device.num_pages(file)? {
                let mut b = AlignedBuf::new(1);
                self.device.read(file, page, &mut b)?;
                buf.copy_from_slice(&b);
            }
            self.cache.insert(key, buf);
        }
        let buf = self.cache.get_mut(&key).expect("just inserted");
        let damaged = |reason: String| StorageError::CorruptPage {
            path: self.device.path(file),
            page,
            reason,
        };
        match image {
            PageImage::Full(_) => {}
            PageImage::Diff(_) => {
                page::verify(buf, page, &self.device.path(file)).map_err(|e| {
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

    fn write_all(self) -> Result<()> {
        let mut page = AlignedBuf::new(1);
        for ((file, no), bytes) in &self.cache {
            page.copy_from_slice(bytes);
            page::seal(&mut page);
            self.device.write(*file, *no, &page)?;
        }
        for &f in self.open.values() {
            self.device.sync(f)?;
            self.device.close(f);
        }
        Ok(())
    }
}
