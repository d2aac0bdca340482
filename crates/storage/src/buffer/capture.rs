//! What a write transaction changed in the pool: the log a commit goes
//! through, the pages captured since the transaction began, and their
//! release or restore.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::device::FileId;

use super::frame::Key;
use super::pool::{BufferPool, Changed, LogGate};

impl BufferPool {
    /// Connects the write-ahead log (once).
    pub fn set_log(&self, log: Arc<dyn LogGate>) {
        let _ = self.log.set(log);
    }

    /// Starts recording the pages changed from now on (a write transaction).
    pub fn begin_capture(&self) {
        self.written_before.lock().clear();
        *self.capture.lock() = Some(HashMap::new());
        self.capturing.store(true, Ordering::Release);
    }

    /// Stops recording and returns the changed pages in (file, page) order. They
    /// stay pinned until [`BufferPool::release`].
    pub fn end_capture(&self) -> Vec<Changed> {
        let taken = {
            let mut c = self.capture.lock();
            self.capturing.store(false, Ordering::Release);
            c.take()
        };
        let mut v: Vec<Changed> = taken
            .unwrap_or_default()
            .into_iter()
            .map(|((file, page), before)| Changed { file, page, before })
            .collect();
        v.sort_by_key(|c| (c.file, c.page));
        v
    }

    /// The pages the running transaction changed so far, in order.
    pub fn captured_keys(&self) -> Vec<(FileId, u64)> {
        let mut v: Vec<Key> = self
            .capture
            .lock()
            .as_ref()
            .map(|c| c.keys().copied().collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// The files the running transaction changed so far.
    pub fn captured_files(&self) -> std::collections::BTreeSet<FileId> {
        self.capture
            .lock()
            .as_ref()
            .map(|c| c.keys().map(|k| k.0).collect())
            .unwrap_or_default()
    }

    /// Drops the pin a transaction held on a page it changed.
    pub fn release(&self, file: FileId, page: u64) {
        let t = self.table.lock();
        if let Some(idx) = t.map.get(&(file, page)) {
            self.frames[idx].pins.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Drops the transaction's pin on a page it created and the page, without
    /// writing it back (the transaction aborted).
    pub fn forget_changed(&self, file: FileId, page: u64) {
        let mut t = self.table.lock();
        if let Some(idx) = t.map.get(&(file, page)) {
            let frame = &self.frames[idx];
            if frame.pins.fetch_sub(1, Ordering::AcqRel) == 1 {
                let mut w = frame.write_data();
                w.tag = None;
                frame.dirty.store(false, Ordering::Release);
                t.map.remove(&(file, page));
                t.owner[idx] = None;
                t.free.push(idx);
            }
        }
    }
}
