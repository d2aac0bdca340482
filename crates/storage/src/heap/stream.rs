//! Reading a heap in runs: scans of every page or tuple, and [`PageStream`],
//! the read-ahead stream with several runs in flight.

use std::ops::ControlFlow;
use std::sync::Arc;

use crate::device::{AlignedBuf, ReadRequest};
use crate::error::{Result, StorageError};
use crate::page::{PAGE_SIZE, PageView};
use crate::row::Tid;

use super::file::{HeapFile, WRITE_RUN_PAGES};

impl HeapFile {
    /// Visits every page in order, reading runs of `run_pages` pages with up to
    /// `depth` runs in flight (see [`PageStream`]). `f` returns `Break` to stop
    /// early.
    pub fn scan_pages(
        self: &Arc<Self>,
        run_pages: usize,
        depth: usize,
        mut f: impl FnMut(u64, PageView<'_>) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        let mut stream = self.stream(0, self.num_pages(), run_pages, depth)?;
        while stream.next_run()? {
            let (first, bytes) = stream.run();
            for (i, page) in bytes.chunks_exact(PAGE_SIZE).enumerate() {
                if f(first + i as u64, PageView::new(page))?.is_break() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Visits every page through the buffer pool, in order: a cached page
    /// costs no I/O and a page read stays cached. For a heap of a few pages
    /// (one request's worth), where [`HeapFile::scan_pages`]'s reader thread,
    /// its write-back of the file's changed pages and its device read cost
    /// many times the pages themselves — a one-row UPDATE of a one-page table
    /// paid all three.
    pub fn scan_cached(
        &self,
        mut f: impl FnMut(u64, PageView<'_>) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        for page in 0..self.num_pages() {
            let g = self.heap_page(page)?;
            if f(page, PageView::new(&g))?.is_break() {
                break;
            }
        }
        Ok(())
    }

    /// A read-ahead stream over pages `from..to` in runs of `run_pages`, with
    /// `depth` runs in flight per batch. Pages changed through the pool are written
    /// back first so the device has them.
    pub fn stream(
        self: &Arc<Self>,
        from: u64,
        to: u64,
        run_pages: usize,
        depth: usize,
    ) -> Result<PageStream> {
        let to = to.min(self.num_pages());
        let span = to.saturating_sub(from) as usize;
        let runs: &[(u64, usize)] = if span == 0 { &[] } else { &[(from, span)] };
        self.stream_runs(runs, run_pages, depth, run_pages * depth)
    }

    /// A read-ahead stream over the given runs of pages (first page, pages), in
    /// the order given, each split into requests of at most `run_pages`, in
    /// batches of at most `depth` requests and `batch_pages` pages put in
    /// flight together. For a scan that reads a set of page ranges (a Smooth
    /// Scan region with holes) and wants its CPU work to overlap the I/O as a
    /// full scan's does. The page budget lets one stream read long runs as a
    /// few large requests and scattered pages as many small ones, with the
    /// same memory.
    pub fn stream_runs(
        self: &Arc<Self>,
        runs: &[(u64, usize)],
        run_pages: usize,
        depth: usize,
        batch_pages: usize,
    ) -> Result<PageStream> {
        self.pool.flush_file(self.file)?;
        PageStream::start(
            self.clone(),
            batches(self.requests(runs, run_pages), depth, batch_pages),
        )
    }

    /// The same pages as [`HeapFile::stream_runs`], read by the consumer's own
    /// thread a batch at a time when it asks for the next run: no reader
    /// thread to start and hand batches over, which is what a scan of a few
    /// pages pays most for on a busy machine, at the price of not overlapping
    /// its work with the reads.
    pub fn read_runs_inline(
        self: &Arc<Self>,
        runs: &[(u64, usize)],
        run_pages: usize,
        depth: usize,
        batch_pages: usize,
    ) -> Result<PageStream> {
        self.pool.flush_file(self.file)?;
        Ok(PageStream::inline(
            self.clone(),
            batches(self.requests(runs, run_pages), depth, batch_pages),
        ))
    }

    /// Runs cut into requests of at most `run_pages` pages, within the heap.
    pub(super) fn requests(&self, runs: &[(u64, usize)], run_pages: usize) -> Vec<(u64, usize)> {
        let end = self.num_pages();
        let step = run_pages.max(1) as u64;
        let mut requests = Vec::new();
        for &(first, n) in runs {
            let to = (first + n as u64).min(end);
            let mut next = first;
            while next < to {
                let len = step.min(to - next);
                requests.push((next, len as usize));
                next += len;
            }
        }
        requests
    }

    /// Visits every live tuple in heap order.
    pub fn scan(self: &Arc<Self>, mut f: impl FnMut(Tid, &[u8]) -> Result<()>) -> Result<()> {
        self.scan_pages(WRITE_RUN_PAGES, 2, |p, v| {
            for (slot, t) in v.tuples() {
                f(Tid::new(p as u32, slot), t)?;
            }
            Ok(ControlFlow::Continue(()))
        })
    }
}

/// Requests grouped into the batches a stream puts in flight together: at
/// most `depth` requests and `batch_pages` pages each (a longer request is a
/// batch of its own).
pub(super) fn batches(
    requests: Vec<(u64, usize)>,
    depth: usize,
    batch_pages: usize,
) -> Vec<Vec<(u64, usize)>> {
    let (depth, budget) = (depth.max(1), batch_pages.max(1));
    let mut out = Vec::new();
    let mut cur: Vec<(u64, usize)> = Vec::new();
    let mut pages = 0;
    for r in requests {
        if !cur.is_empty() && (cur.len() >= depth || pages + r.1 > budget) {
            out.push(std::mem::take(&mut cur));
            pages = 0;
        }
        pages += r.1;
        cur.push(r);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Reads a batch's requests into consecutive pages of `buf`, all in flight
/// together.
pub(super) fn read_batch(
    heap: &HeapFile,
    runs: &[(u64, usize)],
    buf: &mut AlignedBuf,
) -> Result<()> {
    let mut rest: &mut [u8] = &mut buf[..];
    let mut reqs = Vec::with_capacity(runs.len());
    for &(first, n) in runs {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(n * PAGE_SIZE);
        reqs.push(ReadRequest {
            file: heap.file,
            first_page: first,
            buf: head,
        });
        rest = tail;
    }
    heap.pool.device().read_many(&mut reqs)
}

/// A batch of runs, read into consecutive pages of one buffer.
pub(super) struct Batch {
    pub(super) runs: Vec<(u64, usize)>,
    pub(super) buf: AlignedBuf,
}

/// Sequential read-ahead over a range of heap pages.
///
/// A reader thread keeps the next batch of runs in flight while the consumer
/// verifies the previous batch and works on its pages (double buffering), so
/// checksums and predicate evaluation overlap the I/O instead of adding to it.
/// Dropping the stream stops the reader and waits for it, so the device's
/// counters are final once the stream is gone.
pub struct PageStream {
    pub(super) heap: Arc<HeapFile>,
    pub(super) full_rx: Option<std::sync::mpsc::Receiver<Result<Batch>>>,
    pub(super) free_tx: Option<std::sync::mpsc::Sender<AlignedBuf>>,
    pub(super) reader: Option<std::thread::JoinHandle<()>>,
    pub(super) current: Option<Batch>,
    /// Index of the current run in `current`, and its first page in the
    /// batch's buffer.
    pub(super) run_idx: usize,
    pub(super) run_off: usize,
    /// Without a reader thread: the batches left, read one at a time by
    /// `next_run`, and the buffer they go to.
    pub(super) inline: Option<Inline>,
}

pub(super) struct Inline {
    pub(super) batches: std::vec::IntoIter<Vec<(u64, usize)>>,
    pub(super) buf: Option<AlignedBuf>,
    pub(super) buf_pages: usize,
}

/// Pages of the largest batch: what each of a stream's buffers holds.
pub(super) fn largest(batches: &[Vec<(u64, usize)>]) -> usize {
    batches
        .iter()
        .map(|b| b.iter().map(|r| r.1).sum::<usize>())
        .max()
        .unwrap_or(1)
        .max(1)
}

impl PageStream {
    pub(super) fn start(
        heap: Arc<HeapFile>,
        batches: Vec<Vec<(u64, usize)>>,
    ) -> Result<PageStream> {
        let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Result<Batch>>(1);
        let (free_tx, free_rx) = std::sync::mpsc::channel::<AlignedBuf>();
        let buf_pages = largest(&batches);
        for _ in 0..batches.len().clamp(1, 2) {
            free_tx
                .send(AlignedBuf::new(buf_pages))
                .expect("receiver is alive");
        }
        let reader_heap = heap.clone();
        let reader = std::thread::Builder::new()
            .name("strata-read-ahead".into())
            .spawn(move || {
                let heap = reader_heap;
                for runs in batches {
                    let Ok(mut buf) = free_rx.recv() else { return };
                    let result = read_batch(&heap, &runs, &mut buf);
                    let failed = result.is_err();
                    if full_tx.send(result.map(|()| Batch { runs, buf })).is_err() || failed {
                        return;
                    }
                }
            })
            .map_err(|e| StorageError::io("read-ahead thread", e))?;
        Ok(PageStream {
            heap,
            full_rx: Some(full_rx),
            free_tx: Some(free_tx),
            reader: Some(reader),
            current: None,
            run_idx: 0,
            run_off: 0,
            inline: None,
        })
    }

    pub(super) fn inline(heap: Arc<HeapFile>, batches: Vec<Vec<(u64, usize)>>) -> PageStream {
        let buf_pages = largest(&batches);
        PageStream {
            heap,
            full_rx: None,
            free_tx: None,
            reader: None,
            current: None,
            run_idx: 0,
            run_off: 0,
            inline: Some(Inline {
                batches: batches.into_iter(),
                buf: None,
                buf_pages,
            }),
        }
    }

    /// Reads the next batch of an inline stream into `current`; `false` when
    /// no batch is left.
    pub(super) fn read_inline(&mut self) -> Result<bool> {
        let Some(inline) = &mut self.inline else {
            return Ok(false);
        };
        if let Some(done) = self.current.take() {
            inline.buf = Some(done.buf);
        }
        let Some(runs) = inline.batches.next() else {
            return Ok(false);
        };
        let mut buf = inline
            .buf
            .take()
            .unwrap_or_else(|| AlignedBuf::new(inline.buf_pages));
        read_batch(&self.heap, &runs, &mut buf)?;
        self.start_batch(Batch { runs, buf })?;
        Ok(true)
    }

    /// Makes `batch` current at its first run, verified.
    pub(super) fn start_batch(&mut self, mut batch: Batch) -> Result<()> {
        let (first, n) = batch.runs[0];
        self.heap
            .finish_run(first, &mut batch.buf[..n * PAGE_SIZE])?;
        self.current = Some(batch);
        self.run_idx = 0;
        self.run_off = 0;
        Ok(())
    }

    /// Moves to the next run and verifies it; `false` at the end.
    pub fn next_run(&mut self) -> Result<bool> {
        if let Some(batch) = &mut self.current {
            if self.run_idx + 1 < batch.runs.len() {
                self.run_off += batch.runs[self.run_idx].1;
                self.run_idx += 1;
                let (first, n) = batch.runs[self.run_idx];
                let at = self.run_off * PAGE_SIZE;
                self.heap
                    .finish_run(first, &mut batch.buf[at..at + n * PAGE_SIZE])?;
                return Ok(true);
            }
            if self.inline.is_some() {
                return self.read_inline();
            }
            let done = self.current.take().expect("checked above");
            if let Some(tx) = &self.free_tx {
                // The reader may be finished already; then nobody needs it.
                let _ = tx.send(done.buf);
            }
        }
        if self.inline.is_some() {
            return self.read_inline();
        }
        let Some(rx) = &self.full_rx else {
            return Ok(false);
        };
        let Ok(batch) = rx.recv() else {
            self.full_rx = None;
            return Ok(false);
        };
        self.start_batch(batch?)?;
        Ok(true)
    }

    /// The current run: its first page number and its verified pages.
    pub fn run(&self) -> (u64, &[u8]) {
        let b = self.current.as_ref().expect("next_run returned true");
        let (first, n) = b.runs[self.run_idx];
        let at = self.run_off * PAGE_SIZE;
        (first, &b.buf[at..at + n * PAGE_SIZE])
    }
}

impl Drop for PageStream {
    fn drop(&mut self) {
        self.full_rx.take();
        self.free_tx.take();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}
