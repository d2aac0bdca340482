//! External merge sort (ES, the flash paper's baseline) with a strict memory
//! budget: run generation, then k-way merge passes, temporary files through the
//! device layer so that their I/O is counted, modeled and traced.
//!
//! # Records and memory
//!
//! A record is `[entry length: u16][tuple length: u16][entry][tuple]`, where the
//! entry is the tuple's index entry (encoded key ++ tuple id, [`ScanSpec::entry_of`]),
//! so sorting records by their entry bytes sorts them by (key, tuple id) — the
//! index's own order, unique even when keys repeat. A record held in memory is
//! charged [`charge`]`(entry, tuple)` = its bytes plus 4 bytes for its slot in the
//! sort's offset array. The budget also pays for every I/O buffer: the sort never
//! holds more than `budget` bytes of records and buffers together, and reports
//! its peak ([`SortReport::peak_bytes`]). (The merge heap's copies of the k
//! current entries, a few bytes each, are not charged.)
//!
//! # Algorithm
//!
//! * Run generation (load-sort-store): records fill an arena of
//!   [`arena_capacity`]`(budget) = budget - block` bytes; a full arena is sorted and
//!   written as one run through a one-block output buffer, in requests of one
//!   block ([`block_pages`]: a third of the budget, 2 to 8 pages, i.e. 64 KiB
//!   from a 192 KiB budget up). Records never straddle blocks (a block's unused
//!   tail is zero, which ends it). Input that fits the arena is sorted in memory
//!   and never written (0 runs, 0 passes).
//! * Merge: fan-in `k = budget / block - 1` (one block buffer per input run, one
//!   for the output), at least 2. While there are more than `k` runs, every group
//!   of `k` consecutive runs is merged into one new run (appended to the same
//!   temporary file): one intermediate pass. The final pass merges the last `k`
//!   or fewer runs straight into the output. With `R` initial runs this is
//!   exactly `ceil(log_k R)` passes (the smallest `p` with `k^p >= R`;
//!   [`theory_passes`]): after `p` balanced passes `ceil(R / k^p)` runs remain.
//!   Every pass reads all the data once; all but the last write it once.
//!
//! The temporary file lives in the caller's temp directory (the database's `tmp/`)
//! and is removed when the sort is dropped, whether it finished or failed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_storage::StorageError;
use strata_storage::device::{AlignedBuf, Device, FileId, ReadRequest, segment_path};
use strata_storage::page::PAGE_SIZE;
use strata_storage::row::Tid;

use crate::batch::TupleBatch;
use crate::error::{AccessError, Result};
use crate::report::{ScanReport, SortReport};
use crate::scan::{AccessPath, ScanSpec};

/// Bytes of a record's header (entry and tuple lengths).
pub const HEADER: usize = 4;
/// Bytes charged per record held in memory for its offset slot.
pub const OFFSET_BYTES: usize = 4;
/// Largest merge/run block, in pages (64 KiB).
pub const MAX_BLOCK_PAGES: usize = 8;
/// Smallest budget an external sort accepts: room for three two-page blocks.
pub const MIN_BUDGET: usize = 6 * PAGE_SIZE;

/// Memory charged for one record held in memory.
pub fn charge(entry_len: usize, tuple_len: usize) -> usize {
    HEADER + entry_len + tuple_len + OFFSET_BYTES
}

/// Pages of one run/merge block for a budget.
pub fn block_pages(budget: usize) -> usize {
    (budget / 3 / PAGE_SIZE).clamp(2, MAX_BLOCK_PAGES)
}

/// Bytes of records the run-generation arena holds (the budget less the output block).
pub fn arena_capacity(budget: usize) -> usize {
    budget.saturating_sub(block_pages(budget) * PAGE_SIZE)
}

/// Runs merged at once: one block per input and one for the output fit the budget.
pub fn fan_in(budget: usize) -> usize {
    (budget / (block_pages(budget) * PAGE_SIZE))
        .saturating_sub(1)
        .max(2)
}

/// Merge passes for `runs` initial runs at fan-in `k`: 0 for at most one run, else
/// `ceil(log_k(runs))`, the smallest `p` with `k^p >= runs`.
pub fn theory_passes(runs: u64, k: u64) -> u64 {
    let mut p = 0;
    let mut reach = 1u64;
    while reach < runs {
        reach = reach.saturating_mul(k.max(2));
        p += 1;
    }
    p
}

/// Checks a sort memory budget, naming what is wrong.
pub fn check_budget(budget: usize) -> Result<()> {
    if budget < MIN_BUDGET {
        return Err(AccessError::Config(format!(
            "sort memory of {budget} bytes is too small: an external sort needs at least {MIN_BUDGET} bytes (6 pages of {PAGE_SIZE} bytes)"
        )));
    }
    Ok(())
}

/// A temporary paged file of a sort, appended to page by page through the
/// device; removed on drop. Counts its own I/O.
pub(crate) struct TempFile {
    device: Arc<dyn Device>,
    path: PathBuf,
    file: FileId,
    next_page: u64,
    pub pages_written: u64,
    pub write_requests: u64,
    pub pages_read: u64,
    pub read_requests: u64,
}

impl TempFile {
    pub fn create(device: &Arc<dyn Device>, dir: &Path, what: &str) -> Result<TempFile> {
        std::fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
        strata_storage::temp::remove_stale_once(dir);
        let path = strata_storage::temp::temp_path(dir, what);
        let file = device.create(&path, 1 << 20)?;
        Ok(TempFile {
            device: device.clone(),
            path,
            file,
            next_page: 0,
            pages_written: 0,
            write_requests: 0,
            pages_read: 0,
            read_requests: 0,
        })
    }

    /// Appends whole pages (`buf.len()` a multiple of the page size); returns the first.
    pub fn append(&mut self, buf: &[u8]) -> Result<u64> {
        let first = self.next_page;
        let pages = (buf.len() / PAGE_SIZE) as u64;
        self.device.write(self.file, first, buf)?;
        self.next_page += pages;
        self.pages_written += pages;
        self.write_requests += 1;
        Ok(first)
    }

    pub fn read(&mut self, first: u64, buf: &mut [u8]) -> Result<()> {
        self.device.read(self.file, first, buf)?;
        self.pages_read += (buf.len() / PAGE_SIZE) as u64;
        self.read_requests += 1;
        Ok(())
    }

    /// Reads several runs `(first page, buffer)` with all of them in flight.
    pub fn read_many(&mut self, runs: &mut [(u64, &mut [u8])]) -> Result<()> {
        let file = self.file;
        let mut reqs: Vec<ReadRequest> = runs
            .iter_mut()
            .map(|(first, buf)| ReadRequest {
                file,
                first_page: *first,
                buf,
            })
            .collect();
        self.device.read_many(&mut reqs)?;
        for r in &reqs {
            self.pages_read += (r.buf.len() / PAGE_SIZE) as u64;
            self.read_requests += 1;
        }
        Ok(())
    }

    /// Adds this file's I/O to a report.
    pub fn add_io(&self, r: &mut SortReport) {
        r.pages_written += self.pages_written;
        r.write_requests += self.write_requests;
        r.pages_read += self.pages_read;
        r.read_requests += self.read_requests;
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        self.device.close(self.file);
        for seg in 0.. {
            if std::fs::remove_file(segment_path(&self.path, seg)).is_err() {
                break;
            }
        }
    }
}

/// Appends a record to `out`.
pub(crate) fn encode_record(entry: &[u8], tuple: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let (Ok(e), Ok(t)) = (u16::try_from(entry.len()), u16::try_from(tuple.len())) else {
        return Err(AccessError::Config(format!(
            "sort record too large: index entry of {} bytes, tuple of {} bytes",
            entry.len(),
            tuple.len()
        )));
    };
    out.extend_from_slice(&e.to_le_bytes());
    out.extend_from_slice(&t.to_le_bytes());
    out.extend_from_slice(entry);
    out.extend_from_slice(tuple);
    Ok(())
}

/// The record at `pos` of `buf` as (entry, tuple, record length), or `None` at
/// the end of the valid bytes or at a zero header (the unused tail of a block).
pub(crate) fn decode_record(buf: &[u8], pos: usize) -> Option<Record<'_>> {
    if pos + HEADER > buf.len() {
        return None;
    }
    let e = u16::from_le_bytes([buf[pos], buf[pos + 1]]) as usize;
    let t = u16::from_le_bytes([buf[pos + 2], buf[pos + 3]]) as usize;
    if e == 0 || pos + HEADER + e + t > buf.len() {
        return None;
    }
    let entry = &buf[pos + HEADER..pos + HEADER + e];
    let tuple = &buf[pos + HEADER + e..pos + HEADER + e + t];
    Some((entry, tuple, HEADER + e + t))
}

/// A decoded record: (entry, tuple, record length).
pub(crate) type Record<'a> = (&'a [u8], &'a [u8], usize);

/// The tuple id at the end of an index entry.
pub(crate) fn tid_of(entry: &[u8]) -> Tid {
    Tid::decode(&entry[entry.len() - Tid::ENCODED_LEN..])
}

/// A run in the temporary file: its first page and length in pages.
#[derive(Clone, Copy, Debug)]
struct RunLoc {
    first: u64,
    pages: u64,
}

/// Writes records into blocks of a run (records never straddle blocks).
struct RunWriter {
    buf: AlignedBuf,
    pos: usize,
    first: Option<u64>,
    pages: u64,
}

impl RunWriter {
    fn new(block_pages: usize) -> RunWriter {
        RunWriter {
            buf: AlignedBuf::new(block_pages),
            pos: 0,
            first: None,
            pages: 0,
        }
    }

    fn push(&mut self, temp: &mut TempFile, record: &[u8]) -> Result<()> {
        if self.pos + record.len() > self.buf.len() {
            self.flush(temp, false)?;
        }
        self.buf[self.pos..self.pos + record.len()].copy_from_slice(record);
        self.pos += record.len();
        Ok(())
    }

    /// Writes the block: whole (so readers' blocks line up) unless it is the last.
    fn flush(&mut self, temp: &mut TempFile, last: bool) -> Result<()> {
        if self.pos == 0 {
            return Ok(());
        }
        self.buf[self.pos..].fill(0);
        let pages = if last {
            self.pos.div_ceil(PAGE_SIZE)
        } else {
            self.buf.pages()
        };
        let first = temp.append(&self.buf[..pages * PAGE_SIZE])?;
        self.first.get_or_insert(first);
        self.pages += pages as u64;
        self.pos = 0;
        Ok(())
    }

    fn finish(mut self, temp: &mut TempFile) -> Result<RunLoc> {
        self.flush(temp, true)?;
        Ok(RunLoc {
            first: self.first.unwrap_or(0),
            pages: self.pages,
        })
    }
}

/// Reads a run block by block.
struct RunReader {
    next: u64,
    end: u64,
    buf: AlignedBuf,
    len: usize,
    pos: usize,
}

impl RunReader {
    fn new(run: RunLoc, block_pages: usize) -> RunReader {
        RunReader {
            next: run.first,
            end: run.first + run.pages,
            buf: AlignedBuf::new(block_pages),
            len: 0,
            pos: 0,
        }
    }

    /// The current record, reading the next block when this one is used up.
    fn current(&mut self, temp: &mut TempFile) -> Result<Option<Record<'_>>> {
        loop {
            if decode_record(&self.buf[..self.len], self.pos).is_some() {
                return Ok(decode_record(&self.buf[..self.len], self.pos));
            }
            if self.next >= self.end {
                return Ok(None);
            }
            let pages = (self.end - self.next).min(self.buf.pages() as u64) as usize;
            temp.read(self.next, &mut self.buf[..pages * PAGE_SIZE])?;
            self.next += pages as u64;
            self.len = pages * PAGE_SIZE;
            self.pos = 0;
        }
    }
}

/// Sorts records within a memory budget; see the module docs.
pub struct ExternalSorter {
    budget: usize,
    block_pages: usize,
    device: Arc<dyn Device>,
    temp_dir: PathBuf,
    temp: Option<TempFile>,
    arena: Vec<u8>,
    offsets: Vec<u32>,
    runs: Vec<RunLoc>,
    report: SortReport,
}

impl ExternalSorter {
    /// A sorter of at most `budget` bytes whose runs go to a temporary file in
    /// `temp_dir` on `device` (created only if the input does not fit).
    pub fn new(budget: usize, device: Arc<dyn Device>, temp_dir: &Path) -> Result<ExternalSorter> {
        check_budget(budget)?;
        Ok(ExternalSorter {
            budget,
            block_pages: block_pages(budget),
            device,
            temp_dir: temp_dir.to_path_buf(),
            temp: None,
            arena: Vec::new(),
            offsets: Vec::new(),
            runs: Vec::new(),
            report: SortReport {
                algorithm: "external merge sort".into(),
                budget_bytes: budget,
                fan_in: fan_in(budget) as u64,
                ..Default::default()
            },
        })
    }

    fn held(&self) -> usize {
        self.arena.len() + self.offsets.len() * OFFSET_BYTES
    }

    fn note_peak(&mut self, bytes: usize) {
        self.report.peak_bytes = self.report.peak_bytes.max(bytes);
    }

    /// Whether the sorter has written runs (its input did not fit in memory).
    pub fn spilled(&self) -> bool {
        !self.runs.is_empty()
    }

    /// Adds a record.
    pub fn push(&mut self, entry: &[u8], tuple: &[u8]) -> Result<()> {
        let c = charge(entry.len(), tuple.len());
        let cap = arena_capacity(self.budget);
        if c > cap || HEADER + entry.len() + tuple.len() > self.block_pages * PAGE_SIZE {
            return Err(AccessError::Config(format!(
                "a sort record of {c} bytes (index entry {} + tuple {}) does not fit the sort memory of {} bytes",
                entry.len(),
                tuple.len(),
                self.budget
            )));
        }
        if self.held() + c > cap {
            self.spill_run()?;
        }
        self.offsets.push(self.arena.len() as u32);
        encode_record(entry, tuple, &mut self.arena)?;
        self.report.records += 1;
        self.report.record_bytes += (c - OFFSET_BYTES) as u64;
        let held = self.held();
        self.note_peak(held);
        Ok(())
    }

    fn sort_offsets(arena: &[u8], offsets: &mut [u32]) {
        offsets.sort_unstable_by(|&a, &b| {
            let ea = decode_record(arena, a as usize).expect("record").0;
            let eb = decode_record(arena, b as usize).expect("record").0;
            ea.cmp(eb)
        });
    }

    fn temp(&mut self) -> Result<&mut TempFile> {
        if self.temp.is_none() {
            self.temp = Some(TempFile::create(&self.device, &self.temp_dir, "es")?);
        }
        Ok(self.temp.as_mut().expect("just created"))
    }

    /// Sorts the arena and writes it as a run.
    fn spill_run(&mut self) -> Result<()> {
        if self.offsets.is_empty() {
            return Ok(());
        }
        let mut offsets = std::mem::take(&mut self.offsets);
        let arena = std::mem::take(&mut self.arena);
        Self::sort_offsets(&arena, &mut offsets);
        let held = arena.len() + offsets.len() * OFFSET_BYTES + self.block_pages * PAGE_SIZE;
        self.note_peak(held);
        let mut w = RunWriter::new(self.block_pages);
        let temp = self.temp()?;
        for &o in &offsets {
            let (_, _, n) = decode_record(&arena, o as usize).expect("record");
            w.push(temp, &arena[o as usize..o as usize + n])?;
        }
        let run = w.finish(temp)?;
        self.report.record_bytes_written += arena.len() as u64;
        self.runs.push(run);
        // Reuse the allocations for the next run.
        self.arena = arena;
        self.arena.clear();
        self.offsets = offsets;
        self.offsets.clear();
        Ok(())
    }

    /// Ends the input: sorts in memory if everything fit, else writes the last
    /// run and merges until at most `fan_in` runs are left for the final pass.
    pub fn finish(mut self) -> Result<SortedStream> {
        if self.runs.is_empty() {
            let mut offsets = std::mem::take(&mut self.offsets);
            Self::sort_offsets(&self.arena, &mut offsets);
            return Ok(SortedStream {
                kind: StreamKind::Memory {
                    arena: std::mem::take(&mut self.arena),
                    offsets,
                    pos: 0,
                },
                temp: None,
                report: self.report,
            });
        }
        self.spill_run()?;
        let k = fan_in(self.budget);
        self.report.runs = self.runs.len() as u64;
        self.report.theory_passes = theory_passes(self.report.runs, k as u64);
        let block = self.block_pages * PAGE_SIZE;
        while self.runs.len() > k {
            let runs = std::mem::take(&mut self.runs);
            for group in runs.chunks(k) {
                self.note_peak((group.len() + 1) * block);
                let mut temp = self.temp.take().expect("runs live in the temp file");
                let merged = self.merge_group(group, &mut temp);
                self.temp = Some(temp);
                self.runs.push(merged?);
            }
            self.report.merge_passes += 1;
        }
        self.report.merge_passes += 1;
        self.note_peak(self.runs.len() * block);
        let mut temp = self.temp.take().expect("runs live in the temp file");
        let merge = Merge::new(&self.runs, self.block_pages, &mut temp)?;
        Ok(SortedStream {
            kind: StreamKind::Merge(merge),
            temp: Some(temp),
            report: self.report,
        })
    }

    /// Merges runs into one new run appended to the file.
    fn merge_group(&mut self, group: &[RunLoc], temp: &mut TempFile) -> Result<RunLoc> {
        let mut merge = Merge::new(group, self.block_pages, temp)?;
        let mut w = RunWriter::new(self.block_pages);
        let mut rec = Vec::new();
        while let Some(i) = merge.pop() {
            rec.clear();
            {
                let (e, t, _) = merge.readers[i].current(temp)?.expect("a queued reader");
                encode_record(e, t, &mut rec)?;
            }
            self.report.record_bytes_read += rec.len() as u64;
            self.report.record_bytes_written += rec.len() as u64;
            w.push(temp, &rec)?;
            merge.advance(i, temp)?;
        }
        w.finish(temp)
    }
}

/// A k-way merge of runs: a heap of each reader's current entry.
struct Merge {
    readers: Vec<RunReader>,
    heap: BinaryHeap<Reverse<(Vec<u8>, usize)>>,
}

impl Merge {
    fn new(runs: &[RunLoc], block_pages: usize, temp: &mut TempFile) -> Result<Merge> {
        let mut m = Merge {
            readers: runs
                .iter()
                .map(|&r| RunReader::new(r, block_pages))
                .collect(),
            heap: BinaryHeap::with_capacity(runs.len()),
        };
        for i in 0..m.readers.len() {
            m.queue(i, temp)?;
        }
        Ok(m)
    }

    fn queue(&mut self, i: usize, temp: &mut TempFile) -> Result<()> {
        if let Some((e, _, _)) = self.readers[i].current(temp)? {
            self.heap.push(Reverse((e.to_vec(), i)));
        }
        Ok(())
    }

    /// The reader holding the smallest current record.
    fn pop(&mut self) -> Option<usize> {
        self.heap.pop().map(|Reverse((_, i))| i)
    }

    /// Moves reader `i` past its current record and queues its next one.
    fn advance(&mut self, i: usize, temp: &mut TempFile) -> Result<()> {
        let r = &mut self.readers[i];
        if let Some((_, _, n)) = decode_record(&r.buf[..r.len], r.pos) {
            r.pos += n;
        }
        self.queue(i, temp)
    }
}

enum StreamKind {
    Memory {
        arena: Vec<u8>,
        offsets: Vec<u32>,
        pos: usize,
    },
    Merge(Merge),
}

/// The sorted output of an [`ExternalSorter`].
pub struct SortedStream {
    kind: StreamKind,
    temp: Option<TempFile>,
    report: SortReport,
}

impl SortedStream {
    /// Appends records to `out` until it is full or the stream ends; returns
    /// whether records remain.
    pub fn fill(&mut self, out: &mut TupleBatch) -> Result<bool> {
        match &mut self.kind {
            StreamKind::Memory {
                arena,
                offsets,
                pos,
            } => {
                while *pos < offsets.len() && !out.is_full() {
                    let (e, t, _) = decode_record(arena, offsets[*pos] as usize).expect("record");
                    out.push(tid_of(e), t);
                    *pos += 1;
                }
                Ok(*pos < offsets.len())
            }
            StreamKind::Merge(merge) => {
                let temp = self.temp.as_mut().expect("a merge reads its temp file");
                while !out.is_full() {
                    let Some(i) = merge.pop() else {
                        return Ok(false);
                    };
                    let (e, t, n) = merge.readers[i].current(temp)?.expect("a queued reader");
                    out.push(tid_of(e), t);
                    self.report.record_bytes_read += n as u64;
                    merge.advance(i, temp)?;
                }
                Ok(!merge.heap.is_empty())
            }
        }
    }

    /// What the sort did, its temporary-file I/O included.
    pub fn report(&self) -> SortReport {
        let mut r = self.report.clone();
        if let Some(t) = &self.temp {
            t.add_io(&mut r);
        }
        r
    }
}

/// ES as an operator: drains `input`, sorts its tuples into index (key, tuple id)
/// order within the budget, then produces them.
pub struct ExternalSort {
    spec: ScanSpec,
    input: Option<Box<dyn AccessPath>>,
    sorter: Option<ExternalSorter>,
    output: Option<SortedStream>,
    input_report: ScanReport,
}

impl ExternalSort {
    pub fn new(
        spec: ScanSpec,
        input: Box<dyn AccessPath>,
        budget: usize,
        temp_dir: &Path,
    ) -> Result<ExternalSort> {
        spec.index()?;
        let device = spec.table.heap().pool().device().clone();
        let sorter = ExternalSorter::new(budget, device, temp_dir)?;
        Ok(ExternalSort {
            spec,
            input: Some(input),
            sorter: Some(sorter),
            output: None,
            input_report: ScanReport::default(),
        })
    }
}

impl AccessPath for ExternalSort {
    fn next_batch(&mut self, out: &mut TupleBatch) -> Result<bool> {
        if let Some(mut input) = self.input.take() {
            let mut sorter = self
                .sorter
                .take()
                .expect("sorter until the input is drained");
            let mut b = TupleBatch::new();
            let mut entry = Vec::new();
            while input.next_batch(&mut b)? {
                for (tid, t) in b.iter() {
                    entry.clear();
                    self.spec.entry_of(t, tid, &mut entry)?;
                    sorter.push(&entry, t)?;
                }
            }
            self.input_report = input.report();
            self.output = Some(sorter.finish()?);
        }
        out.clear();
        if let Some(s) = &mut self.output {
            s.fill(out)?;
        }
        Ok(!out.is_empty())
    }

    fn report(&self) -> ScanReport {
        let mut r = self.input_report.clone();
        r.path = format!("{} + external sort", r.path);
        r.sort = self.output.as_ref().map(|s| s.report());
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas() {
        assert_eq!(block_pages(2 << 20), 8);
        assert_eq!(fan_in(2 << 20), 31);
        assert_eq!(fan_in(4 << 20), 63);
        assert_eq!(block_pages(MIN_BUDGET), 2);
        assert_eq!(fan_in(MIN_BUDGET), 2);
        assert_eq!(arena_capacity(2 << 20), (2 << 20) - 65536);
        assert_eq!(theory_passes(0, 31), 0);
        assert_eq!(theory_passes(1, 31), 0);
        assert_eq!(theory_passes(2, 31), 1);
        assert_eq!(theory_passes(31, 31), 1);
        assert_eq!(theory_passes(32, 31), 2);
        assert_eq!(theory_passes(961, 31), 2);
        assert_eq!(theory_passes(962, 31), 3);
        assert_eq!(theory_passes(9, 2), 4);
        assert!(check_budget(MIN_BUDGET - 1).is_err());
    }

    #[test]
    fn records_round_trip_and_zero_ends_a_block() {
        let mut v = Vec::new();
        encode_record(b"key\0\0\0\0\0\x01\0\x02", b"tuple", &mut v).unwrap();
        let (e, t, n) = decode_record(&v, 0).unwrap();
        assert_eq!((e.len(), t, n), (11, &b"tuple"[..], 4 + 11 + 5));
        v.extend_from_slice(&[0; 8]);
        assert!(decode_record(&v, n).is_none());
        assert!(encode_record(&[1; 70000], b"", &mut v).is_err());
    }
}
