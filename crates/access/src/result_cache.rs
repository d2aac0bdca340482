//! Smooth Scan's Result Cache (§4.1): qualifying tuples found on probed pages
//! ahead of the index order wait here until the index reaches their entry.
//!
//! * Partitioned by ranges of index entries (key ++ tid) whose boundaries come
//!   from the B+-tree's own separators — the root's, or a lower level's when the
//!   root's are too coarse for the memory budget — so partition sizes follow the
//!   data's distribution without statistics.
//! * A tuple is found by its tuple id within its partition (a hash map).
//! * Under memory pressure the partition with the highest range (needed last) is
//!   spilled to a temporary paged file through the device layer, in runs of
//!   [`RUN_BYTES`] (so its I/O is
//!   counted and modeled); later tuples of a spilled partition are appended to its
//!   file. When the index reaches a spilled partition it is read back whole.
//! * A partition is dropped once the index has passed its range.
//!
//! Memory counted against the budget: every cached tuple's bytes plus
//! [`TUPLE_OVERHEAD`], and the one-page write buffers of spilled partitions. The
//! peak is reported and never exceeds the budget: an insert that cannot be made
//! to fit is an error rather than a silent overrun.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use strata_storage::device::{AlignedBuf, Device, FileId};
use strata_storage::page::PAGE_SIZE;
use strata_storage::types::Tid;

use crate::error::{AccessError, Result};
use crate::report::CacheReport;

/// Bytes charged per cached tuple beyond its own (hash entry, vector header).
pub const TUPLE_OVERHEAD: usize = 64;

/// Spilled records go to the file in runs of this many bytes (one request each);
/// a partition spilled whole is written as consecutive runs, which a disk sees as
/// one sequential write.
const RUN_BYTES: usize = 64 << 10;

#[derive(Default)]
struct Part {
    map: HashMap<Tid, Vec<u8>>,
    /// Bytes charged for `map`.
    bytes: usize,
    spilled: bool,
    /// Runs of spill file pages holding this partition's records, in order: the
    /// first page and the bytes the run holds (records straddle pages); then the
    /// records not yet written (less than a run).
    pages: Vec<(u64, usize)>,
    pending: Vec<u8>,
}

pub struct ResultCache {
    bounds: Vec<Vec<u8>>,
    parts: Vec<Part>,
    budget: usize,
    used: usize,
    current: usize,
    device: Arc<dyn Device>,
    temp_path: PathBuf,
    spill: Option<FileId>,
    spill_pages: u64,
    report: CacheReport,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl ResultCache {
    /// A cache whose partitions are split at `bounds` (sorted entries; partition
    /// i holds entries in [bounds[i-1], bounds[i])). Spill files go in `temp_dir`.
    pub fn new(
        bounds: Vec<Vec<u8>>,
        budget: usize,
        device: Arc<dyn Device>,
        temp_dir: &Path,
    ) -> ResultCache {
        let n = bounds.len() + 1;
        let temp_path = temp_dir.join(format!(
            "resultcache-{}-{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        ResultCache {
            bounds,
            parts: (0..n).map(|_| Part::default()).collect(),
            budget,
            used: 0,
            current: 0,
            device,
            temp_path,
            spill: None,
            spill_pages: 0,
            report: CacheReport {
                budget_bytes: budget,
                partitions: n,
                ..Default::default()
            },
        }
    }

    fn part_of(&self, entry: &[u8]) -> usize {
        self.bounds.partition_point(|b| b.as_slice() <= entry)
    }

    pub fn report(&self) -> CacheReport {
        self.report.clone()
    }

    fn charge(&mut self, n: usize) {
        self.used += n;
        self.report.peak_bytes = self.report.peak_bytes.max(self.used);
    }

    /// Caches a qualifying tuple whose index entry is `entry`.
    pub fn insert(&mut self, entry: &[u8], tid: Tid, tuple: &[u8]) -> Result<()> {
        let k = self.part_of(entry);
        let cost = tuple.len() + TUPLE_OVERHEAD;
        if !self.parts[k].spilled {
            // Room for the tuple; this may spill partition k itself.
            self.make_room(cost)?;
        }
        if self.parts[k].spilled {
            let part = &mut self.parts[k];
            let before = part.pending.len();
            part.pending.extend_from_slice(&tid.page.to_le_bytes());
            part.pending.extend_from_slice(&tid.slot.to_le_bytes());
            part.pending
                .extend_from_slice(&(tuple.len() as u16).to_le_bytes());
            part.pending.extend_from_slice(tuple);
            let added = part.pending.len() - before;
            self.report.spilled_tuples += 1;
            // Records go out in runs; the pending bytes count meanwhile.
            self.make_room(added)?;
            self.charge(added);
            self.write_full_pages(k)?;
            return Ok(());
        }
        self.charge(cost);
        let part = &mut self.parts[k];
        part.bytes += cost;
        part.map.insert(tid, tuple.to_vec());
        Ok(())
    }

    /// Spills partitions needed later than the current one (highest range first)
    /// until `extra` more bytes fit in the budget.
    fn make_room(&mut self, extra: usize) -> Result<()> {
        while self.used + extra > self.budget {
            let victim = (self.current + 1..self.parts.len())
                .rev()
                .find(|&i| !self.parts[i].map.is_empty() || !self.parts[i].pending.is_empty());
            match victim {
                Some(v) => self.spill_part(v)?,
                None => {
                    return Err(AccessError::ResultCache(format!(
                        "{} bytes of tuples due next do not fit the budget of {} bytes; give the result cache more memory",
                        self.used + extra,
                        self.budget
                    )));
                }
            }
        }
        Ok(())
    }

    fn spill_file(&mut self) -> Result<FileId> {
        if let Some(f) = self.spill {
            return Ok(f);
        }
        if let Some(dir) = self.temp_path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| strata_storage::StorageError::io(dir, e))?;
        }
        let f = self.device.create(&self.temp_path, 1 << 20)?;
        self.spill = Some(f);
        Ok(f)
    }

    /// Moves a partition's tuples to its spill stream.
    fn spill_part(&mut self, k: usize) -> Result<()> {
        let part = &mut self.parts[k];
        if !part.spilled {
            part.spilled = true;
            self.report.spilled_partitions += 1;
        }
        let map = std::mem::take(&mut part.map);
        let freed = std::mem::take(&mut part.bytes);
        self.used -= freed;
        for (tid, t) in map {
            let part = &mut self.parts[k];
            let before = part.pending.len();
            part.pending.extend_from_slice(&tid.page.to_le_bytes());
            part.pending.extend_from_slice(&tid.slot.to_le_bytes());
            part.pending
                .extend_from_slice(&(t.len() as u16).to_le_bytes());
            part.pending.extend_from_slice(&t);
            let added = part.pending.len() - before;
            // Fits: the tuple's own, larger, charge was just released.
            self.charge(added);
            self.report.spilled_tuples += 1;
            self.write_full_pages(k)?;
        }
        // Whatever is left pending is written too, so the partition holds no memory.
        self.flush_pending(k)
    }

    /// Writes out the pending records of partition `k` in runs of
    /// [`RUN_BYTES`] while it has that much.
    fn write_full_pages(&mut self, k: usize) -> Result<()> {
        while self.parts[k].pending.len() >= RUN_BYTES {
            self.write_run(k, RUN_BYTES)?;
        }
        Ok(())
    }

    fn flush_pending(&mut self, k: usize) -> Result<()> {
        self.write_full_pages(k)?;
        let n = self.parts[k].pending.len();
        if n > 0 {
            self.write_run(k, n)?;
        }
        Ok(())
    }

    /// Writes the first `n` pending bytes of partition `k` as one request of
    /// whole pages appended to the spill file.
    fn write_run(&mut self, k: usize, n: usize) -> Result<()> {
        let file = self.spill_file()?;
        let pages = n.div_ceil(PAGE_SIZE);
        let mut run = AlignedBuf::new(pages);
        run[..n].copy_from_slice(&self.parts[k].pending[..n]);
        let p = self.spill_pages;
        self.device.write(file, p, &run)?;
        self.spill_pages += pages as u64;
        self.report.spill_bytes_written += (pages * PAGE_SIZE) as u64;
        let part = &mut self.parts[k];
        part.pending.drain(..n);
        part.pages.push((p, n));
        self.used -= n;
        Ok(())
    }

    /// Removes and returns the tuple whose entry is `entry` (the index has reached
    /// it), reading its partition back first if it was spilled. Partitions the
    /// index has passed are dropped.
    pub fn take(&mut self, entry: &[u8], tid: Tid) -> Result<Option<Vec<u8>>> {
        let k = self.part_of(entry);
        if k > self.current {
            for i in self.current..k {
                let p = std::mem::take(&mut self.parts[i]);
                self.used -= p.bytes + p.pending.len();
            }
            self.current = k;
        }
        if self.parts[k].spilled {
            self.reload(k)?;
        }
        let part = &mut self.parts[k];
        let t = part.map.remove(&tid);
        if let Some(t) = &t {
            let cost = t.len() + TUPLE_OVERHEAD;
            part.bytes -= cost;
            self.used -= cost;
        }
        Ok(t)
    }

    /// Reads a spilled partition back, a run at a time, into memory.
    fn reload(&mut self, k: usize) -> Result<()> {
        let pages = std::mem::take(&mut self.parts[k].pages);
        let pending = std::mem::take(&mut self.parts[k].pending);
        self.used -= pending.len();
        self.parts[k].spilled = false;
        let mut carry: Vec<u8> = Vec::new();
        let mut buf = AlignedBuf::new(RUN_BYTES / PAGE_SIZE);
        for (p, n) in pages {
            let file = self.spill.expect("a partition with runs has a spill file");
            let bytes = n.div_ceil(PAGE_SIZE) * PAGE_SIZE;
            self.device.read(file, p, &mut buf[..bytes])?;
            carry.extend_from_slice(&buf[..n]);
            self.take_records(k, &mut carry)?;
        }
        carry.extend_from_slice(&pending);
        self.take_records(k, &mut carry)
    }

    /// Moves the complete records at the front of `stream` into partition `k`.
    fn take_records(&mut self, k: usize, stream: &mut Vec<u8>) -> Result<()> {
        let mut pos = 0;
        while pos + 8 <= stream.len() {
            let len = u16::from_le_bytes(stream[pos + 6..pos + 8].try_into().unwrap()) as usize;
            if pos + 8 + len > stream.len() {
                break;
            }
            let page = u32::from_le_bytes(stream[pos..pos + 4].try_into().unwrap());
            let slot = u16::from_le_bytes(stream[pos + 4..pos + 6].try_into().unwrap());
            let t = stream[pos + 8..pos + 8 + len].to_vec();
            pos += 8 + len;
            let cost = t.len() + TUPLE_OVERHEAD;
            self.make_room(cost)?;
            self.charge(cost);
            let part = &mut self.parts[k];
            part.bytes += cost;
            part.map.insert(Tid::new(page, slot), t);
        }
        stream.drain(..pos);
        Ok(())
    }
}

impl Drop for ResultCache {
    fn drop(&mut self) {
        if let Some(f) = self.spill.take() {
            self.device.close(f);
            for seg in 0.. {
                if std::fs::remove_file(strata_storage::device::segment_path(&self.temp_path, seg))
                    .is_err()
                {
                    break;
                }
            }
        }
    }
}
