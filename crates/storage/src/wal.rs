//! The write-ahead log: `<db>/wal/`, a control file and log segments.
//!
//! A log sequence number (LSN) is a byte position in the log, counted across
//! segments from the creation of the database; a segment `<lsn as 16 hex>.log`
//! holds the records from that position on. A record is
//!
//! ```text
//! | len u32 | crc32c u32 | lsn u64 | kind u8 | payload ... |
//! ```
//!
//! where `len` counts the bytes after the first eight and the checksum covers
//! them, so a record torn by a crash, or the zeros after the last one, end the
//! log there. Two kinds of record exist:
//!
//! * a **page** record: the file (its path in the database), the page number,
//!   and either the page's full image or the byte ranges that changed;
//! * a **commit** record: the transaction's commit sequence number and the size
//!   of every table it changed.
//!
//! A transaction's records are appended together when it commits (nothing is
//! logged before: see `txn.rs` for why), so the log holds only committed work and
//! recovery needs no undo. `wal/control` names the LSN recovery starts from (the
//! last checkpoint) and the last commit sequence number; it is replaced
//! atomically. [`Wal::flush_to`] makes the log durable up to an LSN; committers
//! that arrive while another one is syncing wait and are then synced together
//! (group commit).

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::catalog::sync_dir;
use crate::device::FaultInjector;
use crate::error::{Result, StorageError};
use crate::page::PAGE_SIZE;

/// The directory of the log inside a database.
pub const WAL_DIR: &str = "wal";
const CONTROL_FILE: &str = "control";
/// LSN of the first record of a new database (0 means "never logged").
pub const FIRST_LSN: u64 = 1;
/// Bytes of a record before its payload.
const RECORD_HEADER: usize = 4 + 4 + 8 + 1;
const KIND_PAGE: u8 = 1;
const KIND_COMMIT: u8 = 2;

/// What recovery starts from.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Control {
    /// Every change before this LSN is in the data files.
    pub redo_lsn: u64,
    /// The last commit sequence number handed out before that point.
    pub csn: u64,
}

/// A logged page change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageImage {
    /// The whole page after the change.
    Full(Vec<u8>),
    /// Byte ranges (offset, new bytes) that changed.
    Diff(Vec<(u16, Vec<u8>)>),
}

/// The size of one table after a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSize {
    pub table: String,
    pub pages: u64,
    pub rows: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogRecord {
    Page {
        /// The file's path relative to the database directory (as the catalog names it).
        file: String,
        page: u64,
        image: PageImage,
    },
    Commit {
        csn: u64,
        tables: Vec<TableSize>,
    },
}

/// Ranges closer than this are logged as one (a range costs 4 bytes of header).
const DIFF_GAP: usize = 8;

/// Where `a` and `b` (of one length) first differ; their length when they
/// do not. Compares eight bytes at a time, then the byte within.
fn first_difference(a: &[u8], b: &[u8]) -> usize {
    let words = a.len() / 8 * 8;
    let mut i = 0;
    while i < words {
        let x = u64::from_ne_bytes(a[i..i + 8].try_into().expect("eight bytes"));
        let y = u64::from_ne_bytes(b[i..i + 8].try_into().expect("eight bytes"));
        if x != y {
            break;
        }
        i += 8;
    }
    while i < a.len() && a[i] == b[i] {
        i += 1;
    }
    i
}

impl PageImage {
    /// The ranges of `after` that differ from `before`.
    pub fn diff(before: &[u8], after: &[u8]) -> PageImage {
        let mut ranges: Vec<(u16, Vec<u8>)> = Vec::new();
        let mut i = 0;
        let n = before.len().min(after.len());
        while i < n {
            // Most of a page is as it was: skip it eight bytes at a time.
            i += first_difference(&before[i..n], &after[i..n]);
            if i >= n {
                break;
            }
            let start = i;
            let mut end = i + 1;
            let mut j = end;
            while j < n && j < end + DIFF_GAP {
                if before[j] != after[j] {
                    end = j + 1;
                }
                j += 1;
            }
            ranges.push((start as u16, after[start..end].to_vec()));
            i = end;
        }
        PageImage::Diff(ranges)
    }

    /// Applies the change to `page`.
    pub fn apply(&self, page: &mut [u8]) -> std::result::Result<(), String> {
        match self {
            PageImage::Full(b) => {
                if b.len() != page.len() {
                    return Err(format!("a page image of {} bytes", b.len()));
                }
                page.copy_from_slice(b);
            }
            PageImage::Diff(ranges) => {
                for (off, bytes) in ranges {
                    let at = *off as usize;
                    let dst = page
                        .get_mut(at..at + bytes.len())
                        .ok_or_else(|| format!("a change at byte {at} runs past the page"))?;
                    dst.copy_from_slice(bytes);
                }
            }
        }
        Ok(())
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

impl LogRecord {
    /// Appends the record, at log position `lsn`, to `out`.
    pub fn encode(&self, lsn: u64, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&lsn.to_le_bytes());
        match self {
            LogRecord::Page { file, page, image } => {
                out.push(KIND_PAGE);
                put_str(out, file);
                out.extend_from_slice(&page.to_le_bytes());
                match image {
                    PageImage::Full(b) => {
                        out.push(0);
                        out.extend_from_slice(b);
                    }
                    PageImage::Diff(ranges) => {
                        out.push(1);
                        out.extend_from_slice(&(ranges.len() as u16).to_le_bytes());
                        for (off, bytes) in ranges {
                            out.extend_from_slice(&off.to_le_bytes());
                            out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
                            out.extend_from_slice(bytes);
                        }
                    }
                }
            }
            LogRecord::Commit { csn, tables } => {
                out.push(KIND_COMMIT);
                out.extend_from_slice(&csn.to_le_bytes());
                out.extend_from_slice(&(tables.len() as u32).to_le_bytes());
                for t in tables {
                    put_str(out, &t.table);
                    out.extend_from_slice(&t.pages.to_le_bytes());
                    out.extend_from_slice(&t.rows.to_le_bytes());
                }
            }
        }
        let len = (out.len() - start - 8) as u32;
        let crc = crc32c::crc32c(&out[start + 8..]);
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
        out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    }

    /// The record at the start of `bytes`, its LSN and its length in bytes;
    /// `None` where the log ends (zeros, a torn or damaged record, too few bytes).
    /// Never panics, whatever the bytes.
    pub fn decode(bytes: &[u8]) -> Option<(u64, LogRecord, usize)> {
        let len = u32::from_le_bytes(bytes.get(0..4)?.try_into().ok()?) as usize;
        let crc = u32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?);
        if len < RECORD_HEADER - 8 {
            return None;
        }
        let body = bytes.get(8..8usize.checked_add(len)?)?;
        if crc32c::crc32c(body) != crc {
            return None;
        }
        let mut r = Reader { b: body, at: 0 };
        let lsn = r.u64()?;
        let rec = match r.u8()? {
            KIND_PAGE => {
                let file = r.str()?;
                let page = r.u64()?;
                let image = match r.u8()? {
                    0 => PageImage::Full(r.take(PAGE_SIZE)?.to_vec()),
                    1 => {
                        let n = r.u16()?;
                        let mut ranges = Vec::with_capacity(n as usize);
                        for _ in 0..n {
                            let off = r.u16()?;
                            let l = r.u16()? as usize;
                            if off as usize + l > PAGE_SIZE {
                                return None;
                            }
                            ranges.push((off, r.take(l)?.to_vec()));
                        }
                        PageImage::Diff(ranges)
                    }
                    _ => return None,
                };
                LogRecord::Page { file, page, image }
            }
            KIND_COMMIT => {
                let csn = r.u64()?;
                let n = r.u32()?;
                let mut tables = Vec::new();
                for _ in 0..n {
                    let table = r.str()?;
                    let (pages, rows) = (r.u64()?, r.u64()?);
                    tables.push(TableSize { table, pages, rows });
                }
                LogRecord::Commit { csn, tables }
            }
            _ => return None,
        };
        if r.at != body.len() {
            return None;
        }
        Some((lsn, rec, 8 + len))
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn str(&mut self) -> Option<String> {
        let n = self.u16()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

fn wal_err(path: &Path, reason: impl Into<String>) -> StorageError {
    StorageError::Database {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn segment_name(lsn: u64) -> String {
    format!("{lsn:016x}.log")
}

/// The log's segments, oldest first, as (first LSN, path).
fn segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| StorageError::io(dir, e))? {
        let e = e.map_err(|e| StorageError::io(dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(hex) = name.strip_suffix(".log")
            && hex.len() == 16
            && let Ok(lsn) = u64::from_str_radix(hex, 16)
        {
            out.push((lsn, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Reads the control file of the log in `dir`.
pub fn read_control(dir: &Path) -> Result<Control> {
    let path = dir.join(CONTROL_FILE);
    let bytes = std::fs::read(&path).map_err(|e| StorageError::io(&path, e))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| wal_err(&path, format!("the log's control file is unreadable: {e}")))
}

fn write_control(dir: &Path, c: &Control) -> Result<()> {
    let tmp = dir.join(format!("{CONTROL_FILE}.tmp"));
    let path = dir.join(CONTROL_FILE);
    let bytes = serde_json::to_vec(c).expect("control serializes");
    let mut f = File::create(&tmp).map_err(|e| StorageError::io(&tmp, e))?;
    if let Err(e) = f.write_all(&bytes).and_then(|()| f.sync_all()) {
        // On a full disk, a half-written file would keep the room it took.
        let _ = std::fs::remove_file(&tmp);
        return Err(StorageError::io(&tmp, e));
    }
    std::fs::rename(&tmp, &path).map_err(|e| StorageError::io(&path, e))?;
    sync_dir(dir)
}

/// Creates the log of a new database.
pub fn create(db_dir: &Path) -> Result<()> {
    let dir = db_dir.join(WAL_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| StorageError::io(&dir, e))?;
    let seg = dir.join(segment_name(FIRST_LSN));
    File::create(&seg)
        .and_then(|f| f.sync_all())
        .map_err(|e| StorageError::io(&seg, e))?;
    write_control(
        &dir,
        &Control {
            redo_lsn: FIRST_LSN,
            csn: 0,
        },
    )
}

/// The records from `from` on, in order, with their LSNs, and the LSN where the
/// log ends (where the next record goes).
pub fn read_log(db_dir: &Path, from: u64) -> Result<(Vec<(u64, LogRecord)>, u64)> {
    let dir = db_dir.join(WAL_DIR);
    let segs = segments(&dir)?;
    let first = segs
        .iter()
        .rposition(|(start, _)| *start <= from)
        .ok_or_else(|| {
            wal_err(
                &dir,
                format!("no log segment holds LSN {from}, where recovery must start"),
            )
        })?;
    let mut out = Vec::new();
    let mut pos = segs[first].0;
    for (start, path) in &segs[first..] {
        if *start != pos {
            // Not where the log ended: written by no one this log knows of.
            break;
        }
        let bytes = std::fs::read(path).map_err(|e| StorageError::io(path, e))?;
        let mut at = 0usize;
        while let Some((lsn, rec, len)) = LogRecord::decode(&bytes[at..]) {
            if lsn != pos {
                break;
            }
            if lsn >= from {
                out.push((lsn, rec));
            }
            at += len;
            pos += len as u64;
        }
    }
    if pos < from {
        return Err(wal_err(
            &dir,
            format!("the log ends at LSN {pos}, before the checkpoint at {from}"),
        ));
    }
    let end = pos;
    Ok((out, end))
}

/// Whether the log holds records past the last checkpoint (the database was
/// not closed cleanly).
pub fn needs_recovery(db_dir: &Path) -> Result<bool> {
    let c = read_control(&db_dir.join(WAL_DIR))?;
    let (recs, _) = read_log(db_dir, c.redo_lsn)?;
    Ok(recs
        .iter()
        .any(|(_, r)| matches!(r, LogRecord::Commit { .. })))
}

struct Appender {
    /// Records appended but not yet written to the segment.
    buf: Vec<u8>,
    /// LSN of the next record.
    next: u64,
}

struct Segment {
    file: File,
    path: PathBuf,
    /// LSN of the segment's first byte.
    start: u64,
    /// Bytes of the file written with zeros ahead of the log.
    allocated: u64,
}

/// The log file grows by this much at a time, written with zeros and synced
/// once, so a commit's sync overwrites blocks the file already has and need
/// not also commit a change of the file's size to the filesystem journal
/// (0.1 ms against 1-3 ms a commit on this machine's disk; PostgreSQL fills
/// its WAL segments with zeros for the same reason).
const PREALLOCATE: u64 = 4 << 20;

/// The open log of a read-write database.
pub struct Wal {
    dir: PathBuf,
    faults: Option<Arc<FaultInjector>>,
    append: Mutex<Appender>,
    /// Held by the one thread writing and syncing the log (the group's leader).
    segment: Mutex<Segment>,
    durable: AtomicU64,
    /// Set when a write or sync of the log failed: what was in flight is lost,
    /// so nothing may commit after it.
    failed: AtomicBool,
    redo: AtomicU64,
    syncs: AtomicU64,
}

impl Wal {
    /// Opens the log of the database in `db_dir` for appending at `end` (what
    /// recovery found), starting a new segment there.
    pub fn open(db_dir: &Path, end: u64, faults: Option<Arc<FaultInjector>>) -> Result<Wal> {
        let dir = db_dir.join(WAL_DIR);
        let control = read_control(&dir)?;
        let segment = Self::new_segment(&dir, end)?;
        let wal = Wal {
            dir,
            faults,
            append: Mutex::new(Appender {
                buf: Vec::new(),
                next: end,
            }),
            segment: Mutex::new(segment),
            durable: AtomicU64::new(end),
            failed: AtomicBool::new(false),
            redo: AtomicU64::new(control.redo_lsn),
            syncs: AtomicU64::new(0),
        };
        Ok(wal)
    }

    fn new_segment(dir: &Path, start: u64) -> Result<Segment> {
        let path = dir.join(segment_name(start));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)
            .map_err(|e| StorageError::io(&path, e))?;
        file.sync_all().map_err(|e| StorageError::io(&path, e))?;
        sync_dir(dir)?;
        Ok(Segment {
            file,
            path,
            start,
            allocated: 0,
        })
    }

    /// LSN the next record gets.
    pub fn next_lsn(&self) -> u64 {
        self.append.lock().next
    }

    /// LSN of the last checkpoint: a page whose LSN is older has not been logged
    /// since, so its next change is logged as a full image (a torn write of it
    /// can then be repaired).
    pub fn redo_lsn(&self) -> u64 {
        self.redo.load(Ordering::Acquire)
    }

    /// Bytes of log since the last checkpoint.
    pub fn since_checkpoint(&self) -> u64 {
        self.next_lsn() - self.redo_lsn()
    }

    /// Times the log was synced (each sync may commit several transactions).
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    fn check_failed(&self) -> Result<()> {
        if self.failed.load(Ordering::Acquire) {
            return Err(wal_err(
                &self.dir,
                "an earlier write to the log failed; reopen the database to recover",
            ));
        }
        Ok(())
    }

    /// Appends encoded records that start at LSN `at` (which must be where the log
    /// ends: only the writer appends) and returns the LSN after them.
    pub fn append(&self, at: u64, bytes: &[u8]) -> Result<u64> {
        self.check_failed()?;
        let mut a = self.append.lock();
        if a.next != at {
            return Err(wal_err(
                &self.dir,
                format!("records built for LSN {at} but the log ends at {}", a.next),
            ));
        }
        a.buf.extend_from_slice(bytes);
        a.next += bytes.len() as u64;
        Ok(a.next)
    }

    /// Makes the log durable up to `lsn`. One caller writes and syncs everything
    /// appended so far; the others wait for it and find their records synced.
    pub fn flush_to(&self, lsn: u64) -> Result<()> {
        if self.durable.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        let mut seg = self.segment.lock();
        if self.durable.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        self.check_failed()?;
        let (bytes, end) = {
            let mut a = self.append.lock();
            (std::mem::take(&mut a.buf), a.next)
        };
        let from = self.durable.load(Ordering::Acquire);
        let result = self.write_synced(&mut seg, from, &bytes);
        if let Err(e) = result {
            self.failed.store(true, Ordering::Release);
            return Err(e);
        }
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.durable.store(end, Ordering::Release);
        if end < lsn {
            return Err(wal_err(
                &self.dir,
                format!("asked to make LSN {lsn} durable, but the log ends at {end}"),
            ));
        }
        Ok(())
    }

    fn write_synced(&self, seg: &mut Segment, from: u64, bytes: &[u8]) -> Result<()> {
        let offset = from - seg.start;
        let need = offset + bytes.len() as u64;
        if need > seg.allocated {
            let to = need.div_ceil(PREALLOCATE) * PREALLOCATE;
            if let Some(f) = &self.faults {
                // The segment grows: under a `full-disk` plan, by its budget.
                f.take_room(&seg.path, to - seg.allocated)?;
            }
            let zeros = vec![0u8; 1 << 20];
            let mut at = seg.allocated;
            let mut grown = Ok(());
            while at < to && grown.is_ok() {
                let n = (to - at).min(zeros.len() as u64) as usize;
                grown = seg.file.write_all_at(&zeros[..n], at);
                at += n as u64;
            }
            if let Err(e) = grown.and_then(|()| seg.file.sync_all()) {
                // A full disk: the zeros written so far go again, so the
                // failed commit keeps none of the room (records end below).
                let _ = seg.file.set_len(seg.allocated);
                return Err(StorageError::io(&seg.path, e));
            }
            seg.allocated = to;
        }
        let path = seg.path.clone();
        let file = &seg.file;
        let write = |b: &[u8]| {
            file.write_all_at(b, offset)
                .map_err(|e| StorageError::io(&path, e))
        };
        if !bytes.is_empty() {
            match &self.faults {
                Some(f) => f.on_append(&path, bytes, write)?,
                None => write(bytes)?,
            }
        }
        if let Some(f) = &self.faults {
            f.on_sync(&path)?;
        }
        file.sync_data().map_err(|e| StorageError::io(&path, e))
    }

    /// Ends a checkpoint whose data pages are durable: recovery will start at
    /// `redo` (the log's end when the checkpoint began, with nothing appended
    /// since), in a new segment; older segments go.
    pub fn checkpoint(&self, redo: u64, csn: u64) -> Result<()> {
        self.flush_to(redo)?;
        let mut seg = self.segment.lock();
        if self.next_lsn() != redo {
            return Err(wal_err(&self.dir, "the log grew during a checkpoint"));
        }
        if seg.start != redo {
            *seg = Self::new_segment(&self.dir, redo)?;
        }
        write_control(
            &self.dir,
            &Control {
                redo_lsn: redo,
                csn,
            },
        )?;
        self.redo.store(redo, Ordering::Release);
        for (start, path) in segments(&self.dir)? {
            if start < redo {
                std::fs::remove_file(&path).map_err(|e| StorageError::io(&path, e))?;
            }
        }
        Ok(())
    }
}

impl crate::buffer::LogGate for Wal {
    fn flush_to(&self, lsn: u64) -> Result<()> {
        Wal::flush_to(self, lsn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(fill: u8) -> Vec<u8> {
        vec![fill; PAGE_SIZE]
    }

    #[test]
    fn diff_applies_back_and_merges_close_ranges() {
        let before = page(0);
        let mut after = before.clone();
        after[10] = 1;
        after[14] = 2; // within DIFF_GAP of 10: one range
        after[100..110].fill(7);
        after[PAGE_SIZE - 1] = 9;
        let d = PageImage::diff(&before, &after);
        let PageImage::Diff(r) = &d else {
            panic!("a diff")
        };
        assert_eq!(r.len(), 3, "{r:?}");
        assert_eq!(r[0], (10, vec![1, 0, 0, 0, 2]));
        let mut p = before.clone();
        d.apply(&mut p).unwrap();
        assert_eq!(p, after);
    }

    /// The ranges a byte-by-byte walk finds: what `diff` must return.
    fn diff_byte_by_byte(before: &[u8], after: &[u8]) -> Vec<(u16, Vec<u8>)> {
        let mut ranges = Vec::new();
        let mut i = 0;
        while i < before.len() {
            if before[i] == after[i] {
                i += 1;
                continue;
            }
            let (start, mut end) = (i, i + 1);
            let mut j = end;
            while j < before.len() && j < end + DIFF_GAP {
                if before[j] != after[j] {
                    end = j + 1;
                }
                j += 1;
            }
            ranges.push((start as u16, after[start..end].to_vec()));
            i = end;
        }
        ranges
    }

    proptest::proptest! {
        /// Changes anywhere (the first and last bytes, within and across
        /// eight-byte words, gaps either side of DIFF_GAP) give the ranges
        /// a byte-by-byte walk gives, and applying them makes the page.
        #[test]
        fn diff_finds_the_ranges_a_byte_walk_finds(
            fill in 0u8..3,
            changes in proptest::collection::vec((0usize..PAGE_SIZE, 1usize..20, 0u8..4), 0..12),
        ) {
            let before: Vec<u8> = (0..PAGE_SIZE).map(|i| (i % 7) as u8 * fill).collect();
            let mut after = before.clone();
            for (at, len, v) in changes {
                for b in after.iter_mut().skip(at).take(len) {
                    *b = b.wrapping_add(v);
                }
            }
            let d = PageImage::diff(&before, &after);
            let PageImage::Diff(r) = &d else { panic!("a diff") };
            proptest::prop_assert_eq!(r, &diff_byte_by_byte(&before, &after));
            let mut p = before.clone();
            d.apply(&mut p).unwrap();
            proptest::prop_assert_eq!(p, after);
        }
    }

    #[test]
    fn records_round_trip_and_a_torn_tail_ends_the_log() {
        let recs = vec![
            LogRecord::Page {
                file: "data/t.heap.1".into(),
                page: 3,
                image: PageImage::Full(page(5)),
            },
            LogRecord::Page {
                file: "data/t.i.idx.2".into(),
                page: 9,
                image: PageImage::Diff(vec![(48, vec![1, 2, 3])]),
            },
            LogRecord::Commit {
                csn: 7,
                tables: vec![TableSize {
                    table: "t".into(),
                    pages: 4,
                    rows: 100,
                }],
            },
        ];
        let mut bytes = Vec::new();
        let mut lsns = Vec::new();
        for r in &recs {
            lsns.push(100 + bytes.len() as u64);
            let lsn = *lsns.last().unwrap();
            r.encode(lsn, &mut bytes);
        }
        let mut at = 0;
        for (i, r) in recs.iter().enumerate() {
            let (lsn, got, len) = LogRecord::decode(&bytes[at..]).unwrap();
            assert_eq!((lsn, &got), (lsns[i], r));
            at += len;
        }
        assert_eq!(at, bytes.len());
        // Any cut inside the last record, or a flipped byte, ends the log.
        let last = lsns[2] as usize - 100;
        for cut in last..bytes.len() {
            assert!(LogRecord::decode(&bytes[last..cut]).is_none());
        }
        let mut bad = bytes[last..].to_vec();
        bad[12] ^= 1;
        assert!(LogRecord::decode(&bad).is_none());
        assert!(LogRecord::decode(&[0; 64]).is_none());
    }

    #[test]
    fn log_survives_reopen_and_checkpoint_drops_old_segments() {
        let dir = tempfile::tempdir().unwrap();
        create(dir.path()).unwrap();
        let wal = Wal::open(dir.path(), FIRST_LSN, None).unwrap();
        let mut bytes = Vec::new();
        let rec = LogRecord::Commit {
            csn: 1,
            tables: vec![],
        };
        rec.encode(FIRST_LSN, &mut bytes);
        let end = wal.append(FIRST_LSN, &bytes).unwrap();
        wal.flush_to(end).unwrap();
        assert_eq!(wal.syncs(), 1);
        wal.flush_to(end).unwrap();
        assert_eq!(wal.syncs(), 1, "nothing new to sync");
        drop(wal);
        assert!(needs_recovery(dir.path()).unwrap());
        let (recs, found_end) = read_log(dir.path(), FIRST_LSN).unwrap();
        assert_eq!(recs, vec![(FIRST_LSN, rec)]);
        assert_eq!(found_end, end);
        let wal = Wal::open(dir.path(), end, None).unwrap();
        wal.checkpoint(end, 1).unwrap();
        assert!(!needs_recovery(dir.path()).unwrap());
        assert_eq!(segments(&dir.path().join(WAL_DIR)).unwrap().len(), 1);
        assert_eq!(
            read_control(&dir.path().join(WAL_DIR)).unwrap(),
            Control {
                redo_lsn: end,
                csn: 1
            }
        );
    }
}
