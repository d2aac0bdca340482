//! [`HeapFile`]: one table's heap, its pages through the buffer pool: tuples
//! read, inserted, updated, deleted and moved, and the fill factor.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::buffer::BufferPool;
use crate::device::{AlignedBuf, FileId};
use crate::error::{Result, StorageError};
use crate::page::{self, MAX_TUPLE, PAGE_SIZE, PageKind, PageMut, PageView};
use crate::row::Tid;
use crate::row::shape::TupleShape;

/// Pages a [`HeapWriter`] buffers before writing them in one request (1 MiB).
pub const WRITE_RUN_PAGES: usize = 128;

/// Rows of `row_len` bytes each that one heap page takes under `fill_factor`
/// (clamped to 0.05..=1.0 as the heap clamps it), by the rule loads and inserts
/// follow: a page takes a tuple while its header, slots and tuples stay within
/// `fill_factor * PAGE_SIZE` bytes, and an empty page always takes one tuple that
/// fits a page. 0 when a row does not fit a page at all. Generators use it to put
/// rows on chosen pages (a fixed-size row `i` of a fresh load lands on page
/// `i / rows_per_page`).
pub fn rows_per_page(row_len: usize, fill_factor: f64) -> usize {
    if row_len == 0 || row_len > MAX_TUPLE {
        return 0;
    }
    let limit = fill_limit_bytes(fill_factor.clamp(0.05, 1.0));
    let per = row_len + page::SLOT_SIZE;
    let by_page = (PAGE_SIZE - page::HEADER_SIZE) / per;
    let by_fill = limit.saturating_sub(page::HEADER_SIZE) / per;
    by_page.min(by_fill).max(1)
}

/// Bytes a page may fill under a (clamped) fill factor.
pub(super) fn fill_limit_bytes(fill_factor: f64) -> usize {
    (fill_factor * PAGE_SIZE as f64) as usize
}

pub struct HeapFile {
    pub(super) pool: Arc<BufferPool>,
    pub(super) file: FileId,
    pub(super) table: String,
    pub(super) pages: AtomicU64,
    /// Pages as of the last commit: what readers see while a write transaction
    /// adds pages.
    pub(super) committed: AtomicU64,
    pub(super) fill_factor: f64,
    /// Page that single inserts try first.
    pub(super) insert_page: Mutex<Option<u64>>,
    /// What every tuple must look like ([`HeapFile::set_tuple_shape`]); pages
    /// are only checked for their kind without it.
    pub(super) shape: OnceLock<TupleShape>,
}

impl HeapFile {
    /// Creates an empty heap file.
    pub fn create(
        pool: Arc<BufferPool>,
        path: &Path,
        table: &str,
        segment_pages: u64,
        fill_factor: f64,
    ) -> Result<HeapFile> {
        let file = pool.device().create(path, segment_pages)?;
        Ok(Self::with(pool, file, table, 0, fill_factor))
    }

    /// Opens a heap file whose committed size is `committed_pages`. Pages past it
    /// were left by a load that did not commit: with `repair` they are cut off,
    /// otherwise (a read-only open) they are ignored.
    pub fn open(
        pool: Arc<BufferPool>,
        path: &Path,
        table: &str,
        segment_pages: u64,
        fill_factor: f64,
        committed_pages: u64,
        repair: bool,
    ) -> Result<HeapFile> {
        let dev = pool.device().clone();
        let file = dev.open(path, segment_pages)?;
        let have = dev.num_pages(file)?;
        if have < committed_pages {
            return Err(StorageError::Truncated {
                path: dev.path(file),
                bytes: have * PAGE_SIZE as u64,
                expected_pages: committed_pages,
            });
        }
        if have > committed_pages && repair {
            dev.truncate(file, committed_pages)?;
            dev.sync(file)?;
        }
        Ok(Self::with(pool, file, table, committed_pages, fill_factor))
    }

    pub(super) fn with(
        pool: Arc<BufferPool>,
        file: FileId,
        table: &str,
        pages: u64,
        fill_factor: f64,
    ) -> HeapFile {
        HeapFile {
            pool,
            file,
            table: table.to_string(),
            pages: AtomicU64::new(pages),
            committed: AtomicU64::new(pages),
            fill_factor: fill_factor.clamp(0.05, 1.0),
            insert_page: Mutex::new(None),
            shape: OnceLock::new(),
        }
    }

    /// Makes every page that reaches a reader be checked against `shape` (the
    /// table's row layout); set once, by the database when it opens or creates
    /// the table. A later call is ignored.
    pub fn set_tuple_shape(&self, shape: TupleShape) {
        let _ = self.shape.set(shape);
    }

    /// The shape tuples are checked against, if set.
    pub fn tuple_shape(&self) -> Option<&TupleShape> {
        self.shape.get()
    }

    pub(super) fn corrupt(&self, page: u64, reason: String) -> StorageError {
        StorageError::CorruptPage {
            path: self.pool.device().path(self.file),
            page,
            reason,
        }
    }

    /// Checks pages `first..` of a run read from the device (already verified by
    /// the pool): each is a heap page whose tuples have the table's shape. Every
    /// read of heap pages that bypasses [`HeapFile::scan`], [`HeapFile::stream`]
    /// and [`HeapFile::with_tuple`] must call this (or use
    /// [`HeapFile::read_runs`] / [`HeapFile::finish_run`], which do).
    pub fn verify_pages(&self, first: u64, bytes: &[u8]) -> Result<()> {
        for (i, page) in bytes.chunks_exact(PAGE_SIZE).enumerate() {
            self.verify_page(first + i as u64, &PageView::new(page))?;
        }
        Ok(())
    }

    pub(super) fn verify_page(&self, page_no: u64, v: &PageView<'_>) -> Result<()> {
        let r = match self.shape.get() {
            Some(shape) => shape.check_page(v),
            None if v.kind() != Some(PageKind::Heap) => Err(format!(
                "expected a heap page, found kind {}",
                v.bytes()[12]
            )),
            None => Ok(()),
        };
        r.map_err(|reason| self.corrupt(page_no, reason))
    }

    /// Reads runs of pages `(first, buf)` in one go, as
    /// [`BufferPool::read_runs`] does, and checks them ([`HeapFile::verify_pages`]).
    pub fn read_runs(&self, runs: &mut [(u64, &mut AlignedBuf)]) -> Result<()> {
        self.pool.read_runs(self.file, runs)?;
        for (first, buf) in runs.iter() {
            self.verify_pages(*first, buf)?;
        }
        Ok(())
    }

    /// Completes a run read straight from the device, as
    /// [`BufferPool::finish_run`] does, and checks it ([`HeapFile::verify_pages`]).
    pub fn finish_run(&self, first: u64, buf: &mut [u8]) -> Result<()> {
        self.pool.finish_run(self.file, first, buf)?;
        self.verify_pages(first, buf)
    }

    pub fn file_id(&self) -> FileId {
        self.file
    }
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }
    /// Pages of the heap — for a reader while a write transaction runs, as of
    /// the last commit (the transaction's new pages are not there for it).
    pub fn num_pages(&self) -> u64 {
        if self.pool.reads_committed() {
            self.committed.load(Ordering::Acquire)
        } else {
            self.pages.load(Ordering::Acquire)
        }
    }

    /// The pages there are now become the committed ones (a transaction that
    /// added pages commits).
    pub fn publish_pages(&self) {
        self.committed
            .store(self.pages.load(Ordering::Acquire), Ordering::Release);
    }
    pub fn fill_factor(&self) -> f64 {
        self.fill_factor
    }

    /// Forgets pages past `pages` (an aborted load truncated the file back).
    pub fn reset_pages(&self, pages: u64) {
        self.pages.store(pages, Ordering::Release);
        self.committed.store(pages, Ordering::Release);
        let mut hint = self.insert_page.lock();
        if hint.is_some_and(|p| p >= pages) {
            *hint = None;
        }
    }

    /// Bytes a page may fill before inserts move on to the next page.
    pub(super) fn fill_limit(&self) -> usize {
        fill_limit_bytes(self.fill_factor)
    }

    pub(super) fn check_size(len: usize) -> Result<()> {
        if len == 0 || len > MAX_TUPLE {
            return Err(StorageError::TupleTooLarge {
                size: len,
                max: MAX_TUPLE,
            });
        }
        Ok(())
    }

    /// Whether `page` (used bytes `used`) takes a tuple of `len` under the fill factor.
    /// An empty page always takes one tuple, however large.
    pub(super) fn accepts(&self, v: &PageView<'_>, len: usize) -> bool {
        let used = PAGE_SIZE - v.free_space();
        if v.free_space() >= len + page::SLOT_SIZE
            && (v.n_slots() == 0 || used + len + page::SLOT_SIZE <= self.fill_limit())
        {
            return true;
        }
        // Deleted tuples' bytes come back when the page compacts (an insert
        // does that when it needs to), and a dead slot is reused.
        let n = v.n_slots() as usize;
        let live: usize = v.tuples().map(|(_, t)| t.len()).sum();
        if live + n * page::SLOT_SIZE + page::HEADER_SIZE == used {
            return false;
        }
        let slot = if (0..v.n_slots()).any(|s| v.slot(s).1 == 0) {
            0
        } else {
            page::SLOT_SIZE
        };
        let need = page::HEADER_SIZE + n * page::SLOT_SIZE + live + len + slot;
        need <= PAGE_SIZE && need <= self.fill_limit()
    }

    /// The next single insert starts a fresh page after the end (clustering
    /// starts its hot region so).
    pub fn start_new_page(&self) {
        *self.insert_page.lock() = None;
    }

    /// The live tuples of page `page_no`, in slot order.
    pub fn live_tids(&self, page_no: u64) -> Result<Vec<Tid>> {
        let g = self.heap_page(page_no)?;
        let v = PageView::new(&g);
        Ok((0..v.n_slots())
            .filter(|&s| v.get(s).is_some())
            .map(|s| Tid::new(page_no as u32, s))
            .collect())
    }

    /// Inserts one tuple through the buffer pool.
    pub fn insert(&self, data: &[u8]) -> Result<Tid> {
        Self::check_size(data.len())?;
        let mut hint = self.insert_page.lock();
        if let Some(p) = *hint
            && let Some(tid) = self.insert_into(p, data)?
        {
            return Ok(tid);
        }
        let p = self.pages.fetch_add(1, Ordering::AcqRel);
        {
            let mut g = self.pool.create(self.file, p)?;
            PageMut::init(&mut g, PageKind::Heap, p);
        }
        *hint = Some(p);
        Ok(self
            .insert_into(p, data)?
            .expect("an empty page takes any tuple that fits a page"))
    }

    /// Inserts tuples through the buffer pool, in order, exactly where
    /// [`HeapFile::insert`] of each in turn would put them (the same tids: the
    /// insert page first while it takes them under the fill factor, then fresh
    /// pages after the end, the last of which becomes the insert page), but
    /// pinning each page once for all the tuples it takes. A tuple of a bad size
    /// is an error before anything changes.
    pub fn insert_many<'a, I>(&self, tuples: I) -> Result<Vec<Tid>>
    where
        I: IntoIterator<Item = &'a [u8]>,
        I::IntoIter: Clone,
    {
        let tuples = tuples.into_iter();
        let mut count = 0;
        for t in tuples.clone() {
            Self::check_size(t.len())?;
            count += 1;
        }
        let mut tuples = tuples.peekable();
        let mut out = Vec::with_capacity(count);
        let mut hint = self.insert_page.lock();
        if let Some(p) = *hint
            && tuples.peek().is_some()
        {
            self.check_page(p)?;
            let mut g = self.pool.write(self.file, p)?;
            let mut pm = PageMut::new(&mut g);
            while let Some(&data) = tuples.peek() {
                if !self.accepts(&pm.view(), data.len()) {
                    break;
                }
                let Some(slot) = pm.insert(data) else { break };
                out.push(Tid::new(p as u32, slot));
                tuples.next();
            }
        }
        while tuples.peek().is_some() {
            let p = self.pages.fetch_add(1, Ordering::AcqRel);
            let mut g = self.pool.create(self.file, p)?;
            let mut pm = PageMut::init(&mut g, PageKind::Heap, p);
            *hint = Some(p);
            while let Some(&data) = tuples.peek() {
                // A fresh page has no dead slots: a push is what insert does.
                if !self.accepts(&pm.view(), data.len()) {
                    break;
                }
                let slot = pm.push(data).expect("accepts() checked the space");
                out.push(Tid::new(p as u32, slot));
                tuples.next();
            }
        }
        Ok(out)
    }

    /// Calls `f` with each tid of `tids` (in the order given) and its tuple's
    /// bytes, `None` for an empty or absent slot, as [`HeapFile::with_tuple`]
    /// does for one; consecutive tids on the same page share one pin of it
    /// (sort them by page to read each page once).
    pub fn with_tuples(
        &self,
        tids: &[Tid],
        mut f: impl FnMut(Tid, Option<&[u8]>) -> Result<()>,
    ) -> Result<()> {
        let mut i = 0;
        while i < tids.len() {
            let page_no = tids[i].page as u64;
            let g = self.heap_page(page_no)?;
            let v = PageView::new(&g);
            while let Some(&tid) = tids.get(i)
                && tid.page as u64 == page_no
            {
                let t = v.get(tid.slot);
                if let (Some(t), Some(shape)) = (t, self.shape.get()) {
                    shape
                        .check(t)
                        .map_err(|e| self.corrupt(page_no, format!("slot {}: {e}", tid.slot)))?;
                }
                f(tid, t)?;
                i += 1;
            }
        }
        Ok(())
    }

    /// [`HeapFile::with_tuples`] of `tids` (sorted) with the pages they are
    /// on read first, neighbouring ones (at most `run_pages` apart from the
    /// run's first) in one request each: what reading the side rows of a run
    /// of rows does (`split.rs`), whose side rows sit in the same order.
    pub fn with_tuples_prefetched(
        &self,
        tids: &[Tid],
        run_pages: usize,
        f: impl FnMut(Tid, Option<&[u8]>) -> Result<()>,
    ) -> Result<()> {
        let mut i = 0;
        while i < tids.len() {
            let first = tids[i].page as u64;
            let mut last = first;
            while let Some(t) = tids.get(i) {
                let p = t.page as u64;
                if p > last + 1 || p - first >= run_pages as u64 {
                    break;
                }
                last = p;
                i += 1;
            }
            self.pool
                .prefetch_missing(self.file_id(), first, (last - first + 1) as usize)?;
        }
        self.with_tuples(tids, f)
    }

    /// Deletes the tuples at `tids` as [`HeapFile::delete`] of each would,
    /// pinning each page once for the run of tids on it (sort them by page to
    /// pin each page once in all). A page's tids are all checked before any of
    /// its slots dies: a missing tuple (or one named twice) is an error that
    /// leaves its page as it was, though pages before it have then lost their
    /// tuples (check first, as [`crate::db::Table::delete_rows`] does, to change
    /// nothing on an error).
    pub fn delete_many(&self, tids: &[Tid]) -> Result<()> {
        let mut i = 0;
        while i < tids.len() {
            let page_no = tids[i].page as u64;
            let mut end = i + 1;
            while end < tids.len() && tids[end].page as u64 == page_no {
                end += 1;
            }
            self.check_page(page_no)?;
            let mut g = self.pool.write(self.file, page_no)?;
            let mut pm = PageMut::new(&mut g);
            let mut slots: Vec<u16> = tids[i..end].iter().map(|t| t.slot).collect();
            slots.sort_unstable();
            for (k, &slot) in slots.iter().enumerate() {
                if pm.view().get(slot).is_none() || (k > 0 && slots[k - 1] == slot) {
                    return Err(self.missing(Tid::new(page_no as u32, slot)));
                }
            }
            for &tid in &tids[i..end] {
                pm.kill(tid.slot);
            }
            i = end;
        }
        Ok(())
    }

    /// Inserts into a given page if it has room under the fill factor.
    pub fn insert_into(&self, page_no: u64, data: &[u8]) -> Result<Option<Tid>> {
        Self::check_size(data.len())?;
        self.check_page(page_no)?;
        let mut g = self.pool.write(self.file, page_no)?;
        let mut p = PageMut::new(&mut g);
        if !self.accepts(&p.view(), data.len()) {
            return Ok(None);
        }
        Ok(p.insert(data).map(|slot| Tid::new(page_no as u32, slot)))
    }

    pub(super) fn check_page(&self, page_no: u64) -> Result<()> {
        let pages = self.num_pages();
        if page_no >= pages {
            return Err(StorageError::PageOutOfRange {
                path: self.pool.device().path(self.file),
                page: page_no,
                pages,
            });
        }
        Ok(())
    }

    /// Page `page_no` through the pool, checked to be in the file and a heap
    /// page.
    pub(super) fn heap_page(&self, page_no: u64) -> Result<crate::buffer::PageRef<'_>> {
        self.heap_page_near(page_no, 0)
    }

    /// [`heap_page`](Self::heap_page) for a reader of one slot: its directory
    /// entry starts loading as the page is pinned.
    pub(super) fn heap_page_near(
        &self,
        page_no: u64,
        slot: u16,
    ) -> Result<crate::buffer::PageRef<'_>> {
        self.check_page(page_no)?;
        let near = crate::page::HEADER_SIZE + slot as usize * crate::page::SLOT_SIZE;
        let g = self.pool.read_near(self.file, page_no, &[near])?;
        if PageView::new(&g).kind() != Some(PageKind::Heap) {
            return Err(self.corrupt(
                page_no,
                format!("expected a heap page, found kind {}", g[12]),
            ));
        }
        Ok(g)
    }

    /// Calls `f` with the tuple's bytes; `None` if the slot is empty or absent.
    /// The page's kind and the tuple's shape are checked first.
    pub fn with_tuple<R>(&self, tid: Tid, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        let page_no = tid.page as u64;
        let g = self.heap_page_near(page_no, tid.slot)?;
        let v = PageView::new(&g);
        let Some(t) = v.get(tid.slot) else {
            return Ok(None);
        };
        if let Some(shape) = self.shape.get() {
            shape
                .check(t)
                .map_err(|e| self.corrupt(page_no, format!("slot {}: {e}", tid.slot)))?;
        }
        Ok(Some(f(t)))
    }

    /// The tuple's bytes.
    pub fn get(&self, tid: Tid) -> Result<Option<Vec<u8>>> {
        self.with_tuple(tid, |b| b.to_vec())
    }

    pub(super) fn missing(&self, tid: Tid) -> StorageError {
        StorageError::NoSuchTuple {
            table: self.table.clone(),
            page: tid.page,
            slot: tid.slot,
        }
    }

    /// Deletes a tuple; its slot number may be reused later.
    pub fn delete(&self, tid: Tid) -> Result<()> {
        self.check_page(tid.page as u64)?;
        let mut g = self.pool.write(self.file, tid.page as u64)?;
        if !PageMut::new(&mut g).kill(tid.slot) {
            return Err(self.missing(tid));
        }
        Ok(())
    }

    /// Replaces a tuple. It stays at `tid` when the new version fits on its page,
    /// otherwise it moves and the new tid is returned (indexes must follow).
    pub fn update(&self, tid: Tid, data: &[u8]) -> Result<Tid> {
        Self::check_size(data.len())?;
        self.check_page(tid.page as u64)?;
        {
            let mut g = self.pool.write(self.file, tid.page as u64)?;
            let mut p = PageMut::new(&mut g);
            if p.view().get(tid.slot).is_none() {
                return Err(self.missing(tid));
            }
            if p.update(tid.slot, data) {
                return Ok(tid);
            }
        }
        let new = self.insert(data)?;
        self.delete(tid)?;
        Ok(new)
    }

    /// Moves a tuple to `target` (a page with room) or, with `None`, to the page
    /// single inserts currently fill. Returns the new tid.
    pub fn move_tuple(&self, tid: Tid, target: Option<u64>) -> Result<Tid> {
        let data = self.get(tid)?.ok_or_else(|| self.missing(tid))?;
        let new = match target {
            Some(p) => self
                .insert_into(p, &data)?
                .ok_or_else(|| StorageError::NoRoom {
                    table: self.table.clone(),
                    page: p,
                    size: data.len(),
                })?,
            None => self.insert(&data)?,
        };
        self.delete(tid)?;
        Ok(new)
    }

    /// Writes every dirty page back and makes the file durable.
    pub fn flush(&self) -> Result<()> {
        self.pool.flush_file(self.file)?;
        self.pool.device().sync(self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{Device, FileDevice};
    use crate::heap::stream::{batches, largest};
    use crate::util::proptest_cases;
    use proptest::prelude::*;
    use std::ops::ControlFlow;

    fn setup(dir: &Path, frames: usize) -> Arc<BufferPool> {
        let dev: Arc<dyn Device> = Arc::new(FileDevice::new(false));
        let _ = dir;
        Arc::new(BufferPool::new(dev, frames * PAGE_SIZE))
    }

    #[test]
    fn writer_fills_pages_by_fill_factor_and_writes_runs() {
        let dir = tempfile::tempdir().unwrap();
        let pool = setup(dir.path(), 16);
        let full =
            Arc::new(HeapFile::create(pool.clone(), &dir.path().join("a"), "a", 64, 1.0).unwrap());
        let quarter =
            Arc::new(HeapFile::create(pool.clone(), &dir.path().join("b"), "b", 64, 0.25).unwrap());
        let t = [7u8; 60];
        for h in [&full, &quarter] {
            let mut w = h.writer();
            for _ in 0..1000 {
                w.append(&t).unwrap();
            }
            w.finish().unwrap();
        }
        let per_full = (PAGE_SIZE - page::HEADER_SIZE) / 64;
        assert_eq!(full.num_pages(), 1000u64.div_ceil(per_full as u64));
        let per_quarter = (PAGE_SIZE / 4 - page::HEADER_SIZE) / 64;
        assert_eq!(quarter.num_pages(), 1000u64.div_ceil(per_quarter as u64));
        let mut n = 0;
        quarter
            .scan(|_, b| {
                assert_eq!(b, &t);
                n += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(n, 1000);
    }

    /// Batched inserts put tuples where single inserts would (the insert page
    /// with its dead slots first, then fresh pages), pinning each page once;
    /// batched deletes and reads agree with the single ones, and a missing or
    /// repeated tid leaves its page untouched.
    #[test]
    fn batched_inserts_deletes_and_reads_match_single_ones() {
        let dir = tempfile::tempdir().unwrap();
        let pool = setup(dir.path(), 64);
        let heap = |name: &str| {
            HeapFile::create(pool.clone(), &dir.path().join(name), name, 64, 0.5).unwrap()
        };
        let (one, many) = (heap("one"), heap("many"));
        let tuples: Vec<Vec<u8>> = (0..700u32)
            .map(|i| vec![i as u8; 1 + (i as usize * 37) % 300])
            .collect();
        let mut rounds = Vec::new();
        for (r, chunk) in tuples.chunks(170).enumerate() {
            let want: Vec<Tid> = chunk.iter().map(|t| one.insert(t).unwrap()).collect();
            let before = pool.counters();
            let got = many
                .insert_many(chunk.iter().map(|t| t.as_slice()))
                .unwrap();
            assert_eq!(got, want, "round {r}");
            let pins = pool.counters() - before;
            let pages: std::collections::BTreeSet<u32> = got.iter().map(|t| t.page).collect();
            // The insert page is looked at even when it takes nothing.
            let pins = pins.hits + pins.misses;
            assert!(pins == pages.len() as u64 || (r > 0 && pins == pages.len() as u64 + 1));
            // Free some slots, some on the page the next round starts on.
            let victims: Vec<Tid> = got.iter().copied().step_by(3).collect();
            for &t in &victims {
                one.delete(t).unwrap();
            }
            many.delete_many(&victims).unwrap();
            rounds.push((got, victims));
        }
        for (got, victims) in &rounds {
            let mut seen = Vec::new();
            many.with_tuples(got, |tid, t| {
                assert_eq!(t.map(<[u8]>::to_vec), one.get(tid).unwrap());
                seen.push(tid);
                Ok(())
            })
            .unwrap();
            assert_eq!(&seen, got);
            // A dead slot among live ones: an error, and the page as it was.
            let page = victims[0].page;
            let on_page: Vec<Tid> = got.iter().copied().filter(|t| t.page == page).collect();
            let image = pool.read(many.file_id(), page as u64).unwrap().to_vec();
            let e = many.delete_many(&on_page).unwrap_err();
            assert!(matches!(e, StorageError::NoSuchTuple { .. }), "{e}");
            let live = on_page.iter().copied().find(|t| !victims.contains(t));
            if let Some(t) = live {
                let e = many.delete_many(&[t, t]).unwrap_err();
                assert!(matches!(e, StorageError::NoSuchTuple { .. }), "{e}");
            }
            assert_eq!(
                pool.read(many.file_id(), page as u64).unwrap().to_vec(),
                image
            );
        }
        assert_eq!(one.num_pages(), many.num_pages());
        let e = many
            .insert_many([b"ok".as_slice(), &[]])
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not fit"), "{e}");
        assert_eq!(one.num_pages(), many.num_pages());
    }

    /// [`rows_per_page`] agrees with where the writer and single inserts really
    /// put fixed-size rows, over row sizes and fill factors (including ones the
    /// heap clamps and a row bigger than the fill limit).
    #[test]
    fn rows_per_page_matches_the_heaps_fit_rule() {
        let dir = tempfile::tempdir().unwrap();
        let pool = setup(dir.path(), 64);
        let mut k = 0;
        for len in [1usize, 40, 60, 300, 1000, 3000, MAX_TUPLE] {
            for fill in [0.01, 0.05, 0.1, 0.25, 0.5, 0.9, 1.0, 2.0] {
                let per = rows_per_page(len, fill);
                assert!(per >= 1, "{len} {fill}");
                let t = vec![3u8; len];
                for single in [false, true] {
                    k += 1;
                    let name = format!("h{k}");
                    let h = Arc::new(
                        HeapFile::create(pool.clone(), &dir.path().join(&name), &name, 64, fill)
                            .unwrap(),
                    );
                    let n = 3 * per + 1;
                    let mut tids = Vec::new();
                    if single {
                        for _ in 0..n {
                            tids.push(h.insert(&t).unwrap());
                        }
                    } else {
                        let mut w = h.writer();
                        for _ in 0..n {
                            tids.push(w.append(&t).unwrap());
                        }
                        w.finish().unwrap();
                    }
                    for (i, tid) in tids.iter().enumerate() {
                        assert_eq!(
                            tid.page as usize,
                            i / per,
                            "row {i}, {len} bytes, fill {fill}, single {single}"
                        );
                    }
                    assert_eq!(h.num_pages(), 4);
                }
            }
        }
        assert_eq!(rows_per_page(40, 1.0), 185);
        assert_eq!(rows_per_page(40, 0.25), 45);
        assert_eq!(rows_per_page(0, 1.0), 0);
        assert_eq!(rows_per_page(MAX_TUPLE + 1, 1.0), 0);
    }

    /// Many batches of runs (the reader thread finishes before the consumer),
    /// uneven last run, early stop, and reads counted as one request per run.
    #[test]
    fn scan_pages_visits_every_page_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let pool = setup(dir.path(), 16);
        let h =
            Arc::new(HeapFile::create(pool.clone(), &dir.path().join("s"), "s", 10, 1.0).unwrap());
        let mut w = h.writer();
        for i in 0..1000u32 {
            w.append(&[i as u8; 2000]).unwrap();
        }
        w.finish().unwrap();
        let pages = h.num_pages();
        assert_eq!(pages, 250);
        for (run, depth) in [(1, 1), (7, 3), (128, 2), (300, 4)] {
            let before = pool.device().stats().snapshot();
            let mut seen = Vec::new();
            h.scan_pages(run, depth, |p, v| {
                assert_eq!(v.page_no(), p);
                seen.push(p);
                Ok(ControlFlow::Continue(()))
            })
            .unwrap();
            assert_eq!(
                seen,
                (0..pages).collect::<Vec<_>>(),
                "run {run} depth {depth}"
            );
            let io = pool.device().stats().snapshot() - before;
            assert_eq!(
                io.read_requests,
                pages.div_ceil(run as u64),
                "run {run} depth {depth}"
            );
            let mut n = 0;
            h.scan_pages(run, depth, |_, _| {
                n += 1;
                Ok(if n == 42 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                })
            })
            .unwrap();
            assert_eq!(n, 42);
        }
    }

    #[test]
    fn batches_hold_at_most_depth_requests_and_the_page_budget() {
        let reqs = vec![
            (0, 128),
            (128, 128),
            (256, 1),
            (300, 1),
            (302, 2),
            (400, 300),
            (900, 1),
        ];
        let b = batches(reqs, 3, 256);
        assert_eq!(
            b,
            vec![
                vec![(0, 128), (128, 128)],
                vec![(256, 1), (300, 1), (302, 2)],
                vec![(400, 300)],
                vec![(900, 1)],
            ]
        );
        assert_eq!(largest(&b), 300);
        assert!(batches(Vec::new(), 16, 256).is_empty());
    }

    /// Runs with holes, through the threaded and the inline stream, in every
    /// batch shape: each run's pages come back whole, in order, once.
    #[test]
    fn streams_of_runs_return_exactly_their_pages() {
        let dir = tempfile::tempdir().unwrap();
        let pool = setup(dir.path(), 64);
        let h = Arc::new(HeapFile::create(pool, &dir.path().join("h"), "h", 64, 1.0).unwrap());
        let mut w = h.writer();
        for i in 0..3000u32 {
            w.append(&i.to_le_bytes().repeat(100)).unwrap();
        }
        w.finish().unwrap();
        let n = h.num_pages();
        let runs: Vec<(u64, usize)> = vec![
            (0, 1),
            (2, 3),
            (9, 40),
            (60, 1),
            (61, 2),
            (70, (n - 70) as usize),
        ];
        let want: Vec<u64> = runs.iter().flat_map(|&(f, k)| f..f + k as u64).collect();
        for (run_pages, depth, budget) in [(1, 1, 1), (4, 3, 8), (128, 16, 256), (32, 2, 5)] {
            for inline in [false, true] {
                let mut s = if inline {
                    h.read_runs_inline(&runs, run_pages, depth, budget).unwrap()
                } else {
                    h.stream_runs(&runs, run_pages, depth, budget).unwrap()
                };
                let mut got = Vec::new();
                while s.next_run().unwrap() {
                    let (first, bytes) = s.run();
                    assert!(bytes.len() / PAGE_SIZE <= run_pages);
                    for (i, page) in bytes.chunks_exact(PAGE_SIZE).enumerate() {
                        let p = first + i as u64;
                        let v = PageView::new(page);
                        let (_, t) = v.tuples().next().expect("every page holds tuples");
                        let want_first = h.get(Tid::new(p as u32, 0)).unwrap().unwrap();
                        assert_eq!(t, &want_first[..], "page {p}");
                        got.push(p);
                    }
                }
                assert_eq!(
                    got, want,
                    "run {run_pages} depth {depth} budget {budget} inline {inline}"
                );
            }
        }
    }

    #[test]
    fn reopen_truncates_uncommitted_pages() {
        let dir = tempfile::tempdir().unwrap();
        let pool = setup(dir.path(), 16);
        let path = dir.path().join("h");
        let h = Arc::new(HeapFile::create(pool.clone(), &path, "h", 4, 1.0).unwrap());
        let mut w = h.writer();
        for i in 0..3000u32 {
            w.append(&i.to_le_bytes()).unwrap();
        }
        w.finish().unwrap();
        h.flush().unwrap();
        let committed = h.num_pages();
        let mut w = h.writer();
        for i in 0..3000u32 {
            w.append(&i.to_le_bytes()).unwrap();
        }
        w.finish().unwrap();
        assert!(h.num_pages() > committed);
        pool.discard_file(h.file_id()).unwrap();
        pool.device().close(h.file_id());
        let h2 =
            Arc::new(HeapFile::open(pool.clone(), &path, "h", 4, 1.0, committed, true).unwrap());
        assert_eq!(h2.num_pages(), committed);
        let mut n = 0;
        h2.scan(|_, _| {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 3000);
        let e = HeapFile::open(pool.clone(), &path, "h", 4, 1.0, committed + 5, true)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("truncated"), "{e}");
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(Vec<u8>),
        Delete(usize),
        Update(usize, Vec<u8>),
        Move(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => proptest::collection::vec(any::<u8>(), 1..600).prop_map(Op::Insert),
            1 => any::<usize>().prop_map(Op::Delete),
            2 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..900)).prop_map(|(i, d)| Op::Update(i, d)),
            1 => any::<usize>().prop_map(Op::Move),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]
        /// The heap against a Vec of (tid, bytes): inserts, deletes, updates and moves
        /// through an 8-frame pool, then a full scan and point reads agree with it.
        #[test]
        fn heap_matches_a_vec(ops in proptest::collection::vec(op(), 1..300), fill in 0.3f64..1.0) {
            let dir = tempfile::tempdir().unwrap();
            let pool = setup(dir.path(), 8);
            let h = Arc::new(HeapFile::create(pool.clone(), &dir.path().join("h"), "h", 8, fill).unwrap());
            let mut model: Vec<(Tid, Vec<u8>)> = Vec::new();
            for o in ops {
                match o {
                    Op::Insert(d) => { let t = h.insert(&d).unwrap(); model.push((t, d)); }
                    Op::Delete(i) if !model.is_empty() => { let (t, _) = model.remove(i % model.len()); h.delete(t).unwrap(); }
                    Op::Update(i, d) if !model.is_empty() => {
                        let i = i % model.len();
                        let t = h.update(model[i].0, &d).unwrap();
                        model[i] = (t, d);
                    }
                    Op::Move(i) if !model.is_empty() => {
                        let i = i % model.len();
                        let t = h.move_tuple(model[i].0, None).unwrap();
                        model[i].0 = t;
                    }
                    _ => {}
                }
            }
            for (t, d) in &model {
                prop_assert_eq!(h.get(*t).unwrap(), Some(d.clone()));
            }
            let mut scanned = Vec::new();
            h.scan(|t, b| { scanned.push((t, b.to_vec())); Ok(()) }).unwrap();
            model.sort();
            prop_assert_eq!(scanned, model);
        }
    }
}
