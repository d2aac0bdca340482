//! A device that serves some pages from memory in front of another device and
//! writes none of the files it opens.
//!
//! Why: a read-only open of a database that was not closed cleanly must see the
//! committed state, the last checkpoint plus what the log holds after it, but it
//! may not write (the disk may be full; `strata check` and a `SELECT` must work
//! then, and a reader must not change what a later writer recovers). Recovery
//! redoes the log in memory (`recovery::recover_in_memory`) and hands the redone
//! page images to an [`OverlayDevice`], which answers reads of those pages from
//! them and every other read from the device it wraps. A file the log grew is as
//! long as its last redone page. A write to any file it opened fails, naming the
//! file; only files created through it (a query's temporary spill and sort
//! files, as on any read-only open) are written, through to the device.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;

use super::{Device, FileId, IoStats, PAGE_SIZE, ReadRequest, TraceRecorder};
use crate::error::{Result, StorageError};

/// Page images of one file, by page number.
pub type PageImages = BTreeMap<u64, Box<[u8]>>;

/// Pages from memory over a device whose files are only read.
pub struct OverlayDevice {
    inner: Arc<dyn Device>,
    /// The images, by the file's base path.
    images: HashMap<PathBuf, Arc<PageImages>>,
    /// The images of the open files that have any.
    open: RwLock<HashMap<FileId, Arc<PageImages>>>,
    /// Files created through this device (temporary files): the only ones
    /// written.
    scratch: RwLock<HashSet<FileId>>,
}

impl OverlayDevice {
    /// Serves `images` (by base path; every image is one page) over `inner`.
    pub fn new(inner: Arc<dyn Device>, images: HashMap<PathBuf, PageImages>) -> OverlayDevice {
        OverlayDevice {
            inner,
            images: images.into_iter().map(|(p, i)| (p, Arc::new(i))).collect(),
            open: RwLock::new(HashMap::new()),
            scratch: RwLock::new(HashSet::new()),
        }
    }

    /// How many pages the overlay holds.
    pub fn pages(&self) -> usize {
        self.images.values().map(|i| i.len()).sum()
    }

    fn refuse(&self, path: PathBuf, what: &str) -> StorageError {
        StorageError::Database {
            path,
            reason: format!(
                "{what} refused: the database is open read-only, served from the last \
                 checkpoint and the log redone in memory"
            ),
        }
    }

    fn images_of(&self, file: FileId) -> Option<Arc<PageImages>> {
        self.open.read().get(&file).cloned()
    }

    /// Reads one run of a file with images: the pages the wrapped device has
    /// and the overlay does not in one request, then the images over them
    /// (pages past the wrapped file's end that no image covers are zeros).
    fn read_over(
        &self,
        file: FileId,
        images: &PageImages,
        first_page: u64,
        buf: &mut [u8],
    ) -> Result<()> {
        let n = (buf.len() / PAGE_SIZE) as u64;
        let on_disk = self.inner.num_pages(file)?;
        let from_disk: Vec<u64> = (first_page..first_page + n)
            .filter(|p| *p < on_disk && !images.contains_key(p))
            .collect();
        if let (Some(&lo), Some(&hi)) = (from_disk.first(), from_disk.last()) {
            let at = ((lo - first_page) as usize) * PAGE_SIZE;
            let to = ((hi + 1 - first_page) as usize) * PAGE_SIZE;
            self.inner.read(file, lo, &mut buf[at..to])?;
        }
        for (i, page) in buf.chunks_exact_mut(PAGE_SIZE).enumerate() {
            let no = first_page + i as u64;
            match images.get(&no) {
                Some(img) => page.copy_from_slice(img),
                None if no >= on_disk => page.fill(0),
                None => {}
            }
        }
        Ok(())
    }
}

impl Device for OverlayDevice {
    fn create(&self, path: &Path, segment_pages: u64) -> Result<FileId> {
        if self.images.contains_key(path) {
            return Err(self.refuse(path.to_path_buf(), "creating a data file anew"));
        }
        let file = self.inner.create(path, segment_pages)?;
        self.scratch.write().insert(file);
        Ok(file)
    }
    fn open(&self, path: &Path, segment_pages: u64) -> Result<FileId> {
        let file = self.inner.open(path, segment_pages)?;
        if let Some(images) = self.images.get(path) {
            self.open.write().insert(file, images.clone());
        }
        Ok(file)
    }
    fn close(&self, file: FileId) {
        self.open.write().remove(&file);
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
        let on_disk = self.inner.num_pages(file)?;
        let last = self
            .images_of(file)
            .and_then(|i| i.keys().next_back().map(|p| p + 1));
        Ok(on_disk.max(last.unwrap_or(0)))
    }
    fn read(&self, file: FileId, first_page: u64, buf: &mut [u8]) -> Result<()> {
        match self.images_of(file) {
            Some(images) => self.read_over(file, &images, first_page, buf),
            None => self.inner.read(file, first_page, buf),
        }
    }
    fn read_many(&self, reqs: &mut [ReadRequest<'_>]) -> Result<()> {
        let open = self.open.read().clone();
        if !reqs.iter().any(|r| open.contains_key(&r.file)) {
            return self.inner.read_many(reqs);
        }
        for r in reqs.iter_mut() {
            match open.get(&r.file) {
                Some(images) => self.read_over(r.file, images, r.first_page, r.buf)?,
                None => self.inner.read(r.file, r.first_page, r.buf)?,
            }
        }
        Ok(())
    }
    fn write(&self, file: FileId, first_page: u64, buf: &[u8]) -> Result<()> {
        if !self.scratch.read().contains(&file) {
            return Err(self.refuse(self.inner.path(file), "a write"));
        }
        self.inner.write(file, first_page, buf)
    }
    fn truncate(&self, file: FileId, pages: u64) -> Result<()> {
        if !self.scratch.read().contains(&file) {
            return Err(self.refuse(self.inner.path(file), "a truncation"));
        }
        self.inner.truncate(file, pages)
    }
    fn sync(&self, file: FileId) -> Result<()> {
        if !self.scratch.read().contains(&file) {
            // Nothing was written to it through this device.
            return Ok(());
        }
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
        format!(
            "{} (read-only, {} pages redone from the log in memory)",
            self.inner.describe(),
            self.pages()
        )
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

    #[test]
    fn images_shadow_and_extend_the_file_and_writes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let real: Arc<dyn Device> = Arc::new(FileDevice::new(false));
        let f = real.create(&path, 4).unwrap();
        let mut pages = AlignedBuf::new(3);
        for i in 0..3 {
            pages.page_mut(i).fill(i as u8 + 1);
        }
        real.write(f, 0, &pages).unwrap();
        real.sync(f).unwrap();
        real.close(f);
        let mut images = PageImages::new();
        images.insert(1, vec![0xB1; PAGE_SIZE].into_boxed_slice());
        images.insert(5, vec![0xB5; PAGE_SIZE].into_boxed_slice());
        let dev = OverlayDevice::new(real, HashMap::from([(path.clone(), images)]));
        let f = dev.open(&path, 4).unwrap();
        assert_eq!(dev.num_pages(f).unwrap(), 6);
        let mut buf = AlignedBuf::new(6);
        dev.read(f, 0, &mut buf).unwrap();
        let firsts: Vec<u8> = (0..6).map(|i| buf.page(i)[0]).collect();
        assert_eq!(firsts, [1, 0xB1, 3, 0, 0, 0xB5]);
        let mut one = AlignedBuf::new(1);
        let mut reqs = [ReadRequest {
            file: f,
            first_page: 2,
            buf: &mut one,
        }];
        dev.read_many(&mut reqs).unwrap();
        assert_eq!(one.page(0)[0], 3);
        let e = dev.write(f, 0, &buf).unwrap_err().to_string();
        assert!(e.contains("read-only") && e.contains("/f"), "{e}");
        assert!(dev.truncate(f, 0).is_err());
        assert!(
            dev.create(&path, 4).is_err(),
            "a data file is not made anew"
        );
        assert_eq!(
            std::fs::metadata(segment_of(&path)).unwrap().len(),
            3 * 8192
        );
        // A temporary file (a sort's spill) is written as on any read-only open.
        let g = dev.create(&dir.path().join("g"), 4).unwrap();
        dev.write(g, 0, &one).unwrap();
        dev.sync(g).unwrap();
        assert_eq!(dev.num_pages(g).unwrap(), 1);
    }

    fn segment_of(base: &Path) -> PathBuf {
        crate::device::segment_path(base, 0)
    }
}
