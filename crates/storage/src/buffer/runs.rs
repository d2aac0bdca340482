//! Runs of pages to and from the device: read-ahead into frames, flushing
//! dirty pages in runs, discarding a file's pages, and the scans' run reads
//! that bypass the frames.

use std::sync::atomic::Ordering;

use crate::device::{AlignedBuf, FileId, ReadRequest};
use crate::error::{Result, StorageError};
use crate::page::{self, PAGE_SIZE};

use super::frame::Key;
use super::frame::{FLUSH_RUN_PAGES, Run};
use super::pool::{BufferPool, Fill};

impl BufferPool {
    /// Reads pages `first..first + n` of `file` that are not in the pool in one
    /// request and puts them in frames (read-ahead for a sequential walk, such as
    /// a B+-tree's leaf level). Pages already cached are left as they are.
    /// [`BufferPool::prefetch`] of the pages from the first to the last of
    /// `first..first + n` that the pool does not hold: a run whose first
    /// pages were read by the run before it starts after them (on a disk, a
    /// read that went back would be a seek).
    pub fn prefetch_missing(&self, file: FileId, first: u64, n: usize) -> Result<()> {
        let (lo, hi) = {
            let t = self.table.lock();
            let missing = |p: &u64| !t.map.contains_key(&(file, *p));
            let end = first + n as u64;
            match (first..end).find(missing) {
                Some(lo) => (lo, (lo..end).rev().find(missing).unwrap_or(lo)),
                None => return Ok(()),
            }
        };
        self.prefetch(file, lo, (hi - lo + 1) as usize)
    }

    pub fn prefetch(&self, file: FileId, first: u64, n: usize) -> Result<()> {
        let missing = {
            let t = self.table.lock();
            (first..first + n as u64).any(|p| !t.map.contains_key(&(file, p)))
        };
        if !missing || n == 0 {
            return Ok(());
        }
        // Pages the pool created but has not written yet are not on the device.
        let on_device = self.device.num_pages(file)?;
        if first >= on_device {
            return Ok(());
        }
        let n = n.min((on_device - first) as usize);
        let seen = self.writebacks.load(Ordering::Acquire);
        // Concurrent prefetches each take the kept buffer or make their own;
        // the larger one is kept.
        let mut run = match self.prefetch_buf.lock().take() {
            Some(b) if b.pages() >= n => b,
            _ => AlignedBuf::new(n),
        };
        let result = self
            .device
            .read(file, first, &mut run[..n * PAGE_SIZE])
            .and_then(|()| {
                for i in 0..n {
                    let (idx, guard) =
                        self.pin(file, first + i as u64, Fill::Copy(run.page(i), seen), &[])?;
                    drop(guard);
                    self.frames[idx].pins.fetch_sub(1, Ordering::Release);
                }
                Ok(())
            });
        let mut kept = self.prefetch_buf.lock();
        if kept.as_ref().is_none_or(|k| k.pages() < run.pages()) {
            *kept = Some(run);
        }
        result
    }

    /// Writes back every dirty page of `file` (in page order, coalescing nothing:
    /// the device sees one request a page). Pages stay cached.
    pub fn flush_file(&self, file: FileId) -> Result<()> {
        self.flush_where(|k| k.0 == file)
    }

    /// Writes back every dirty page.
    pub fn flush_all(&self) -> Result<()> {
        self.flush_where(|_| true)
    }

    /// Writes back every dirty page as [`BufferPool::flush_all`] does, but
    /// neighbouring pages of a file together, up to [`FLUSH_RUN_PAGES`] in one
    /// request: a checkpoint after a bulk insert writes thousands of new pages,
    /// and one request per page made it many times slower than the log write
    /// that preceded it. Pages are copied into the run under their frame's
    /// lock and marked clean once the run is on the device, so the caller
    /// must keep every page from changing meanwhile — the database's
    /// checkpoint holds the writer lock, and no write transaction is open.
    /// With one open (pages captured), this is [`BufferPool::flush_all`].
    pub fn flush_all_in_runs(&self) -> Result<()> {
        if self.capturing.load(Ordering::Acquire) {
            return self.flush_all();
        }
        let mut pages: Vec<(Key, usize)> = {
            let t = self.table.lock();
            t.resident().collect()
        };
        pages.sort();
        let mut run = Run {
            buf: AlignedBuf::new(FLUSH_RUN_PAGES),
            first: None,
            frames: Vec::with_capacity(FLUSH_RUN_PAGES),
            lsn: 0,
        };
        for (key, idx) in pages {
            let frame = &self.frames[idx];
            if !frame.dirty.load(Ordering::Acquire) {
                continue;
            }
            let r = frame.data.read();
            if r.tag != Some(key) {
                continue;
            }
            let n = run.frames.len();
            let next = run.first.map(|(f, p)| (f, p + n as u64));
            if next != Some(key) || n == FLUSH_RUN_PAGES {
                drop(r);
                self.write_run(&mut run)?;
                run.first = Some(key);
                let r = frame.data.read();
                if r.tag != Some(key) || !frame.dirty.load(Ordering::Acquire) {
                    run.first = None;
                    continue;
                }
                run.add(idx, &r.buf);
            } else {
                run.add(idx, &r.buf);
            }
        }
        self.write_run(&mut run)
    }

    /// Writes `run` (after the log is durable up to its newest change) and
    /// marks its frames clean if they still hold its pages; empties it.
    pub(super) fn write_run(&self, run: &mut Run) -> Result<()> {
        let n = run.frames.len();
        let Some((file, first)) = run.first else {
            return Ok(());
        };
        if n == 0 {
            return Ok(());
        }
        if run.lsn != 0
            && let Some(log) = self.log.get()
        {
            log.flush_to(run.lsn + 1)?;
        }
        self.device.write(file, first, &run.buf[..n * PAGE_SIZE])?;
        self.writebacks.fetch_add(n as u64, Ordering::Relaxed);
        for (i, &idx) in run.frames.iter().enumerate() {
            let frame = &self.frames[idx];
            let r = frame.data.read();
            if r.tag == Some((file, first + i as u64)) {
                frame.dirty.store(false, Ordering::Release);
            }
        }
        run.frames.clear();
        run.first = None;
        run.lsn = 0;
        Ok(())
    }

    /// Writes back the dirty pages `want` picks. A page a running write
    /// transaction changed goes to the device as it was committed (its image
    /// from before the transaction; a page the transaction created, empty), so
    /// no uncommitted change reaches the device and the device still has every
    /// page a scan may read (scans overlay the changed pages from the pool).
    pub(super) fn flush_where(&self, want: impl Fn(&Key) -> bool) -> Result<()> {
        let mut pages: Vec<(Key, usize)> = {
            let t = self.table.lock();
            t.resident().filter(|(k, _)| want(k)).collect()
        };
        pages.sort();
        for (key, idx) in pages {
            let frame = &self.frames[idx];
            if !frame.dirty.load(Ordering::Acquire) {
                continue;
            }
            let mut w = frame.write_data();
            if w.tag != Some(key) {
                continue;
            }
            // Under the frame's lock: a transaction captures a page under it
            // before changing it, so this cannot miss one.
            // Whether the running transaction changed the page (and whether it
            // created it), without copying its image yet.
            let held = self
                .capture
                .lock()
                .as_ref()
                .and_then(|c| c.get(&key).map(|b| b.is_some()));
            if let Some(existed) = held {
                if self.written_before.lock().insert(key) {
                    let before = existed.then(|| self.before_image(key.0, key.1)).flatten();
                    let mut image = match before {
                        Some(b) => b.to_vec(),
                        None => {
                            let kind = page::PageView::new(&w.buf)
                                .kind()
                                .unwrap_or(page::PageKind::Heap);
                            let mut b = vec![0u8; PAGE_SIZE];
                            page::PageMut::init(&mut b, kind, key.1);
                            b
                        }
                    };
                    self.write_back(key, &mut image)?;
                }
                continue;
            }
            // Clean only once written: another flush that finds the page dirty
            // waits for this one on the frame's lock instead of skipping it and
            // reading the device before the page is there.
            if frame.dirty.load(Ordering::Acquire) {
                if page::cache_stamp(&w.buf) != 0 {
                    // The page stays: its cache stays too, the device gets a
                    // copy without it.
                    self.write_back(key, &mut w.buf.to_vec())?;
                } else {
                    self.write_back(key, &mut w.buf)?;
                }
                frame.dirty.store(false, Ordering::Release);
            }
        }
        Ok(())
    }

    /// Drops every cached page of `file` without writing it back (the file is being
    /// deleted or truncated). Fails if a page of it is pinned.
    pub fn discard_file(&self, file: FileId) -> Result<()> {
        let mut t = self.table.lock();
        let keys: Vec<(Key, usize)> = t.resident().filter(|(k, _)| k.0 == file).collect();
        for (key, idx) in keys {
            let frame = &self.frames[idx];
            if frame.pins.load(Ordering::Acquire) != 0 {
                return Err(StorageError::PagePinned {
                    path: self.device.path(file),
                    page: key.1,
                });
            }
            let mut w = frame.write_data();
            w.tag = None;
            frame.dirty.store(false, Ordering::Release);
            t.map.remove(&key);
            t.owner[idx] = None;
            t.free.push(idx);
        }
        t.map.forget_file(file);
        Ok(())
    }

    /// Drops pages `from..` of `file` from the pool (after the file was truncated).
    pub fn discard_from(&self, file: FileId, from: u64) {
        let mut t = self.table.lock();
        let keys: Vec<(Key, usize)> = t
            .resident()
            .filter(|(k, _)| k.0 == file && k.1 >= from)
            .collect();
        for (key, idx) in keys {
            let frame = &self.frames[idx];
            if frame.pins.load(Ordering::Acquire) == 0 {
                let mut w = frame.write_data();
                w.tag = None;
                frame.dirty.store(false, Ordering::Release);
                t.map.remove(&key);
                t.owner[idx] = None;
                t.free.push(idx);
            }
        }
    }

    /// Reads `buf.pages()` contiguous pages of `file` starting at `first` in one
    /// device request into `buf`, bypassing the frames: pages that are dirty in the
    /// pool are copied over what the device returned. Every page read from the
    /// device is verified.
    pub fn read_run(&self, file: FileId, first: u64, buf: &mut AlignedBuf) -> Result<()> {
        self.device.read(file, first, buf)?;
        self.finish_run(file, first, buf)
    }

    /// Like [`BufferPool::read_run`] for several runs at once, all in flight
    /// together where the device can (sort scans, SIDX).
    pub fn read_runs(&self, file: FileId, runs: &mut [(u64, &mut AlignedBuf)]) -> Result<()> {
        {
            let mut reqs: Vec<ReadRequest<'_>> = runs
                .iter_mut()
                .map(|(first, buf)| ReadRequest {
                    file,
                    first_page: *first,
                    buf: &mut buf[..],
                })
                .collect();
            self.device.read_many(&mut reqs)?;
        }
        for (first, buf) in runs.iter_mut() {
            self.finish_run(file, *first, buf)?;
        }
        Ok(())
    }

    /// Completes a run read straight from the device into `buf` (whole pages,
    /// starting at page `first`): pages in the pool replace what the device
    /// returned (a dirty one is newer; a clean one may have been written back
    /// while the run was in flight, after the device returned the older copy),
    /// every other page is verified. A page a running write transaction
    /// changed comes as it was committed, unless this thread is the
    /// transaction's. Scans that read ahead on another thread call this on the
    /// consuming side, so verification overlaps I/O.
    pub fn finish_run(&self, file: FileId, first: u64, buf: &mut [u8]) -> Result<()> {
        let n = (buf.len() / PAGE_SIZE) as u64;
        let dirty: Vec<(u64, usize)> = {
            let t = self.table.lock();
            (first..first + n)
                .filter_map(|p| t.map.get(&(file, p)).map(|i| (p, i)))
                .collect()
        };
        for (i, page) in buf.chunks_exact_mut(PAGE_SIZE).enumerate() {
            let page_no = first + i as u64;
            if let Some(&(_, idx)) = dirty.iter().find(|(p, _)| *p == page_no) {
                let g = self.frames[idx].data.read();
                if g.tag == Some((file, page_no)) {
                    match self.committed_image(file, page_no) {
                        Some(before) => page.copy_from_slice(&before),
                        None => page.copy_from_slice(&g.buf),
                    }
                    continue;
                }
            }
            self.verify(file, page_no, page)?;
        }
        Ok(())
    }
}
