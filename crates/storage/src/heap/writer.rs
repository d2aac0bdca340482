//! [`HeapWriter`]: a load's tuples appended on fresh pages after a heap's end,
//! written to the device in runs.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::device::AlignedBuf;
use crate::error::{Result, StorageError};
use crate::page::{self, PAGE_SIZE, PageKind, PageMut, PageView};
use crate::row::Tid;

use super::file::{HeapFile, WRITE_RUN_PAGES};

impl HeapFile {
    /// A writer that appends tuples on fresh pages after the current end.
    pub fn writer(self: &Arc<Self>) -> HeapWriter {
        HeapWriter::new(self.clone())
    }
}

/// Appends tuples on fresh pages after the end of a heap, writing full runs of
/// pages straight to the device. Call [`HeapWriter::finish`] to write the rest; the
/// pages only count as committed when the catalog says so.
pub struct HeapWriter {
    pub(super) heap: Arc<HeapFile>,
    pub(super) buf: AlignedBuf,
    /// Page number of the first page in `buf`.
    pub(super) first: u64,
    /// Pages of `buf` in use (the last one is being filled).
    pub(super) used: usize,
}

impl HeapWriter {
    pub(super) fn new(heap: Arc<HeapFile>) -> Self {
        let first = heap.num_pages();
        let mut w = HeapWriter {
            heap,
            buf: AlignedBuf::new(WRITE_RUN_PAGES),
            first,
            used: 0,
        };
        w.start_page();
        w
    }

    pub(super) fn start_page(&mut self) {
        let page_no = self.first + self.used as u64;
        PageMut::init(self.buf.page_mut(self.used), PageKind::Heap, page_no);
        self.used += 1;
    }

    /// Appends a tuple and returns where it will live.
    pub fn append(&mut self, data: &[u8]) -> Result<Tid> {
        HeapFile::check_size(data.len())?;
        let cur = self.used - 1;
        if !self
            .heap
            .accepts(&PageView::new(self.buf.page(cur)), data.len())
        {
            if self.used == self.buf.pages() {
                self.write_out(self.used)?;
            }
            self.start_page();
        }
        let cur = self.used - 1;
        let page_no = self.first + cur as u64;
        if page_no > u32::MAX as u64 {
            return Err(StorageError::Database {
                path: self.heap.pool.device().path(self.heap.file),
                reason: "table exceeds 2^32 pages".into(),
            });
        }
        let slot = PageMut::new(self.buf.page_mut(cur))
            .push(data)
            .expect("accepts() checked the space");
        Ok(Tid::new(page_no as u32, slot))
    }

    /// Writes the first `n` pages of the buffer and starts a new run after them.
    pub(super) fn write_out(&mut self, n: usize) -> Result<()> {
        for i in 0..n {
            page::seal(self.buf.page_mut(i));
        }
        let dev = self.heap.pool.device();
        dev.write(self.heap.file, self.first, &self.buf[..n * PAGE_SIZE])?;
        self.first += n as u64;
        self.heap.pages.store(self.first, Ordering::Release);
        self.heap.committed.store(self.first, Ordering::Release);
        self.used = 0;
        Ok(())
    }

    /// Writes the partly filled last run. The heap's page count now includes every
    /// appended page; nothing is durable until [`HeapFile::flush`].
    pub fn finish(mut self) -> Result<()> {
        if self.used == 0 {
            return Ok(());
        }
        let last_empty = PageView::new(self.buf.page(self.used - 1)).n_slots() == 0;
        let n = if last_empty { self.used - 1 } else { self.used };
        if n > 0 {
            self.write_out(n)?;
        }
        Ok(())
    }
}
