//! What keeps a read-only handle's snapshot honest while another process
//! writes the database.
//!
//! A read-only open needs no lock a writer waits for (`db/lock.rs`): it reads
//! the catalog, redoes the log in memory up to its last whole transaction
//! (`recovery::recover_in_memory`), and from then on reads the data files the
//! writer goes on writing. That is safe because of two rules of the writer:
//! no page of an uncommitted transaction reaches a data file (undo is copying
//! before-images back in the pool), and every page a commit changes carries
//! that commit's log position (LSN) when it is written back. So a page read
//! from a file is either as the snapshot has it — its LSN is below the end of
//! the last transaction the snapshot redid — or from a later commit, and then
//! its LSN says so.
//!
//! [`SnapshotDevice`] checks every page it reads. A page from after the
//! snapshot is not served: the read fails with
//! [`StorageError::SnapshotMoved`] and the handle remembers that its snapshot
//! moved ([`SnapshotDevice::moved`]), so the statement can be run again on a
//! new snapshot (`strata-sql`'s session reopens the database and retries).
//! A page whose checksum does not match may be one the writer is writing
//! right now (the read saw part of the write): it is read again, a few
//! times, before the mismatch is handed on as the corruption it then is.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::{Device, FileId, IoStats, PAGE_SIZE, ReadRequest, TraceRecorder};
use crate::error::{Result, StorageError};

/// Times a page whose checksum does not match is read again.
const REREADS: usize = 3;

/// A device that refuses pages written after a snapshot.
pub struct SnapshotDevice {
    inner: Arc<dyn Device>,
    /// The snapshot's end: pages with an LSN at or past it came later.
    end: u64,
    moved: Arc<AtomicBool>,
    /// Pages read again because their checksum did not match at first.
    reread: AtomicU64,
    /// Files created through this device (a query's temporary files): not
    /// the database's, not checked.
    scratch: parking_lot::RwLock<std::collections::HashSet<FileId>>,
}

impl SnapshotDevice {
    /// Serves `inner`'s pages whose LSN is below `end`.
    pub fn new(inner: Arc<dyn Device>, end: u64) -> SnapshotDevice {
        SnapshotDevice {
            inner,
            end,
            moved: Arc::default(),
            reread: AtomicU64::new(0),
            scratch: Default::default(),
        }
    }

    /// Whether a page from after the snapshot was refused: a writer has
    /// committed (and written back) since the snapshot was taken.
    pub fn moved(&self) -> Arc<AtomicBool> {
        self.moved.clone()
    }

    /// Pages read again after a checksum mismatch.
    pub fn rereads(&self) -> u64 {
        self.reread.load(Ordering::Relaxed)
    }

    /// Checks the pages of `buf`, read from `file` at `first_page`.
    fn check(&self, file: FileId, first_page: u64, buf: &mut [u8]) -> Result<()> {
        if self.scratch.read().contains(&file) {
            return Ok(());
        }
        for (i, page) in buf.chunks_exact_mut(PAGE_SIZE).enumerate() {
            let no = first_page + i as u64;
            if page.iter().all(|&b| b == 0) {
                continue;
            }
            let mut tries = 0;
            while !sealed(page) && tries < REREADS {
                tries += 1;
                self.reread.fetch_add(1, Ordering::Relaxed);
                std::thread::yield_now();
                self.inner.read(file, no, page)?;
            }
            let lsn = crate::page::lsn_of(page);
            if lsn >= self.end {
                self.moved.store(true, Ordering::Release);
                return Err(StorageError::SnapshotMoved {
                    path: self.inner.path(file),
                    page: no,
                    lsn,
                    end: self.end,
                });
            }
        }
        Ok(())
    }
}

/// Whether the page's checksum matches its bytes.
fn sealed(page: &[u8]) -> bool {
    let stored = u32::from_le_bytes(page[0..4].try_into().expect("4 bytes"));
    stored == crc32c::crc32c(&page[4..PAGE_SIZE])
}

impl Device for SnapshotDevice {
    fn create(&self, path: &Path, segment_pages: u64) -> Result<FileId> {
        let file = self.inner.create(path, segment_pages)?;
        self.scratch.write().insert(file);
        Ok(file)
    }
    fn open(&self, path: &Path, segment_pages: u64) -> Result<FileId> {
        self.inner.open(path, segment_pages)
    }
    fn close(&self, file: FileId) {
        self.scratch.write().remove(&file);
        self.inner.close(file)
    }
    fn path(&self, file: FileId) -> PathBuf {
        self.inner.path(file)
    }
    fn locate(&self, file: FileId, page: u64) -> (PathBuf, u64) {
        self.inner.locate(file, page)
    }
    fn num_pages(&self, file: FileId) -> Result<u64> {
        self.inner.num_pages(file)
    }
    fn read(&self, file: FileId, first_page: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read(file, first_page, buf)?;
        self.check(file, first_page, buf)
    }
    fn read_many(&self, reqs: &mut [ReadRequest<'_>]) -> Result<()> {
        self.inner.read_many(reqs)?;
        for r in reqs.iter_mut() {
            self.check(r.file, r.first_page, r.buf)?;
        }
        Ok(())
    }
    fn write(&self, file: FileId, first_page: u64, buf: &[u8]) -> Result<()> {
        self.inner.write(file, first_page, buf)
    }
    fn truncate(&self, file: FileId, pages: u64) -> Result<()> {
        self.inner.truncate(file, pages)
    }
    fn sync(&self, file: FileId) -> Result<()> {
        self.inner.sync(file)
    }
    fn charge_read(&self, file: FileId, first_page: u64, pages: u64) {
        self.inner.charge_read(file, first_page, pages)
    }
    fn open_remote(&self, path: &Path) -> Result<Option<std::sync::Arc<dyn super::RemoteFile>>> {
        self.inner.open_remote(path)
    }
    fn stats(&self) -> &IoStats {
        self.inner.stats()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn parallelism(&self) -> usize {
        self.inner.parallelism()
    }
    fn trace(&self) -> Option<&TraceRecorder> {
        self.inner.trace()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{AlignedBuf, FileDevice};
    use std::sync::atomic::AtomicUsize;

    /// A file device whose first `torn` reads see the first page half
    /// written (its second half other bytes), as a read racing a write may.
    struct Torn {
        inner: FileDevice,
        torn: AtomicUsize,
    }

    impl Device for Torn {
        fn create(&self, path: &Path, segment_pages: u64) -> Result<FileId> {
            self.inner.create(path, segment_pages)
        }
        fn open(&self, path: &Path, segment_pages: u64) -> Result<FileId> {
            self.inner.open(path, segment_pages)
        }
        fn close(&self, file: FileId) {
            self.inner.close(file)
        }
        fn path(&self, file: FileId) -> PathBuf {
            self.inner.path(file)
        }
        fn locate(&self, file: FileId, page: u64) -> (PathBuf, u64) {
            self.inner.locate(file, page)
        }
        fn num_pages(&self, file: FileId) -> Result<u64> {
            self.inner.num_pages(file)
        }
        fn read(&self, file: FileId, first_page: u64, buf: &mut [u8]) -> Result<()> {
            self.inner.read(file, first_page, buf)?;
            if first_page == 0 && self.torn.load(Ordering::Relaxed) > 0 {
                self.torn.fetch_sub(1, Ordering::Relaxed);
                buf[PAGE_SIZE / 2..PAGE_SIZE].fill(0xAB);
            }
            Ok(())
        }
        fn write(&self, file: FileId, first_page: u64, buf: &[u8]) -> Result<()> {
            self.inner.write(file, first_page, buf)
        }
        fn truncate(&self, file: FileId, pages: u64) -> Result<()> {
            self.inner.truncate(file, pages)
        }
        fn sync(&self, file: FileId) -> Result<()> {
            self.inner.sync(file)
        }
        fn stats(&self) -> &IoStats {
            self.inner.stats()
        }
        fn describe(&self) -> String {
            "torn".into()
        }
    }

    /// Pages `lsns` (one each), sealed, in a new file at `path`.
    fn pages(dev: &dyn Device, path: &Path, lsns: &[u64]) -> FileId {
        let f = dev.create(path, 16).unwrap();
        let mut buf = AlignedBuf::new(lsns.len());
        for (i, &lsn) in lsns.iter().enumerate() {
            let p = buf.page_mut(i);
            crate::page::PageMut::init(p, crate::page::PageKind::Heap, i as u64);
            crate::page::set_lsn_csn(p, lsn, 1);
            crate::page::seal(p);
        }
        dev.write(f, 0, &buf).unwrap();
        f
    }

    #[test]
    fn a_page_from_after_the_snapshot_is_refused_and_a_torn_one_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let torn = Arc::new(Torn {
            inner: FileDevice::new(false),
            torn: AtomicUsize::new(2),
        });
        let f = pages(torn.as_ref(), &path, &[10, 99, 100, 250]);
        torn.close(f);
        let dev = SnapshotDevice::new(torn.clone(), 100);
        let f = dev.open(&path, 16).unwrap();
        // Page 0 is read torn twice, then whole; pages below LSN 100 pass.
        let mut two = AlignedBuf::new(2);
        dev.read(f, 0, &mut two).unwrap();
        assert_eq!(dev.rereads(), 2);
        assert!(sealed(two.page(0)) && !dev.moved().load(Ordering::Acquire));
        // LSN 100 is the snapshot's end: a later commit's.
        let mut one = AlignedBuf::new(1);
        let e = dev.read(f, 2, &mut one).unwrap_err();
        assert!(
            matches!(
                e,
                StorageError::SnapshotMoved {
                    page: 2,
                    lsn: 100,
                    end: 100,
                    ..
                }
            ),
            "{e}"
        );
        assert!(dev.moved().load(Ordering::Acquire));
        let mut reqs = [ReadRequest {
            file: f,
            first_page: 3,
            buf: &mut one,
        }];
        assert!(dev.read_many(&mut reqs).is_err());
        // A page torn more often than it is read again is handed on as it
        // is (the pool reports the checksum), not as moved.
        torn.torn.store(REREADS + 1, Ordering::Relaxed);
        let fresh = SnapshotDevice::new(torn.clone(), 1000);
        let g = fresh.open(&path, 16).unwrap();
        fresh.read(g, 0, &mut one).unwrap();
        assert!(!sealed(one.page(0)) && !fresh.moved().load(Ordering::Acquire));
        // A temporary file made through it is not checked.
        let t = fresh.create(&dir.path().join("spill"), 16).unwrap();
        let mut junk = AlignedBuf::new(1);
        junk.page_mut(0).fill(0xFF);
        fresh.write(t, 0, &junk).unwrap();
        fresh.read(t, 0, &mut junk).unwrap();
    }
}
