//! Partitioned sort (PS, §4.1 of the flash paper): an index-based sort that
//! writes and reads the data exactly once, whatever the sort memory.
//!
//! 1. **Boundaries** come from the index entries (key ++ tuple id) of the scanned
//!    range, in order: walking them and adding up each record's memory charge
//!    ([`external_sort::charge`] with the table's tuple size, below) gives the
//!    partitions' lower bounds so that each partition's records fit the sort
//!    memory. After a sorted index scan the entries are the ones the scan reads
//!    anyway (it hands them over while it collects its tuple ids, so the index is
//!    read once); after a full scan PS reads the range's leaf entries itself.
//! 2. **Partitioning phase**: every record from the scan goes to its partition's
//!    one-page buffer; a full page joins a gather buffer of `io` pages, which is
//!    written as one request at the end of the temporary file. The writes are
//!    sequential; a partition's pages end up spread over the file (Fig. 5a).
//! 3. **Sorting phase**: partitions in key order: each one's pages are read
//!    (adjacent pages coalesced, up to `io` pages in flight), its records sorted in
//!    memory and produced. Partitions are ranges of entries, so their outputs
//!    concatenate into the order with no merge.
//!
//! # Memory
//!
//! With budget `M` and `io = clamp(M / 16, 1 page, 16 pages)`: the partitioning
//! phase holds `P` page buffers and the gather buffer, `(P + io) * 8 KiB <= M`; the
//! sorting phase holds the read buffer and one partition, sorted by an
//! [`ExternalSorter`] with budget `M - io`, whose arena (`arena_capacity(M - io)`)
//! is the partition capacity the boundaries are computed for. The peak is
//! reported and never exceeds `M`.
//!
//! # Duplicates, wrong estimates, too little memory
//!
//! Boundaries are whole entries, which are unique, so a run of equal keys longer
//! than memory is split between partitions by tuple id and the order stays
//! (key, tuple id); such boundaries are counted in `partitions_split`. Tuple sizes
//! are estimated (exact for fixed-width rows: `min(max row size, heap bytes /
//! rows)`); if a partition turns out larger than memory anyway, its sorter spills
//! and merges it — an external sort of that partition, counted in `fallbacks`. If
//! the data needs more partitions than the memory has page buffers for, the whole
//! input is sorted by an external merge sort (one fallback, and a note).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use strata_storage::device::{AlignedBuf, Device};
use strata_storage::page::PAGE_SIZE;
use strata_storage::row::Tid;

use crate::batch::TupleBatch;
use crate::error::{AccessError, Result};
use crate::external_sort::{
    ExternalSorter, MIN_BUDGET, SortedStream, TempFile, arena_capacity, charge, decode_record,
    encode_record,
};
use crate::report::{ScanReport, SortReport};
use crate::scan::{AccessPath, ScanSpec};

/// Smallest budget PS accepts: one I/O page plus an external sorter's minimum.
pub const MIN_PS_BUDGET: usize = MIN_BUDGET + PAGE_SIZE;
/// Largest write-gather / read batch, in pages (128 KiB).
pub const MAX_IO_PAGES: usize = 16;

/// Pages of the gather (write) and read buffers for a budget.
pub fn io_pages(budget: usize) -> usize {
    (budget / 16 / PAGE_SIZE).clamp(1, MAX_IO_PAGES)
}

/// Bytes of charged records one partition may hold for a budget.
pub fn partition_capacity(budget: usize) -> usize {
    arena_capacity(budget - io_pages(budget) * PAGE_SIZE)
}

/// A tuple size estimate for the boundaries: exact for fixed-width rows.
pub fn tuple_estimate(spec: &ScanSpec) -> usize {
    let t = &spec.table;
    let max = t.schema().max_row_size();
    let rows = t.rows();
    if rows == 0 {
        return max;
    }
    let avg = (t.heap().num_pages() as usize * PAGE_SIZE).div_ceil(rows as usize);
    max.min(avg).max(1)
}

/// Computes partition boundaries from index entries in order.
#[derive(Debug)]
pub struct BoundaryBuilder {
    capacity: usize,
    tuple_estimate: usize,
    acc: usize,
    bounds: Vec<Vec<u8>>,
    prev: Vec<u8>,
    splits: u64,
}

fn key_of(entry: &[u8]) -> &[u8] {
    &entry[..entry.len().saturating_sub(Tid::ENCODED_LEN)]
}

impl BoundaryBuilder {
    /// Partitions of at most `capacity` charged bytes of records whose tuples are
    /// `tuple_estimate` bytes.
    pub fn new(capacity: usize, tuple_estimate: usize) -> BoundaryBuilder {
        BoundaryBuilder {
            capacity,
            tuple_estimate,
            acc: 0,
            bounds: Vec::new(),
            prev: Vec::new(),
            splits: 0,
        }
    }

    /// The next index entry of the range (entries must come in order).
    pub fn add(&mut self, entry: &[u8]) {
        let c = charge(entry.len(), self.tuple_estimate);
        if self.acc > 0 && self.acc + c > self.capacity {
            if key_of(&self.prev) == key_of(entry) {
                self.splits += 1;
            }
            self.bounds.push(entry.to_vec());
            self.acc = 0;
        }
        self.acc += c;
        self.prev.clear();
        self.prev.extend_from_slice(entry);
    }

    /// Lower bounds of partitions 1.. (partition i holds entries in
    /// `[bounds[i-1], bounds[i])`), and how many fell inside a run of one key.
    pub fn finish(self) -> (Vec<Vec<u8>>, u64) {
        (self.bounds, self.splits)
    }
}

/// Where PS gets its boundaries.
pub enum BoundarySource {
    /// Handed over by the input (a sorted index scan with an entry observer)
    /// by the time it produces its first batch.
    Observed(Arc<Mutex<Option<BoundaryBuilder>>>),
    /// Read from the index range by PS itself (after a full scan).
    Index,
}

struct Part {
    /// Pages of the temporary file holding this partition, in order.
    pages: Vec<u64>,
    /// The partition's current page (records never straddle pages).
    buf: Vec<u8>,
}

enum Phase {
    Partition,
    Sort {
        parts: Vec<Part>,
        next: usize,
        current: Option<SortedStream>,
        temp: TempFile,
    },
    Fallback(SortedStream),
    Done,
}

pub struct PartitionedSort {
    spec: ScanSpec,
    input: Option<Box<dyn AccessPath>>,
    source: BoundarySource,
    budget: usize,
    io: usize,
    device: Arc<dyn Device>,
    temp_dir: PathBuf,
    tuple_estimate: usize,
    phase: Phase,
    input_report: ScanReport,
    report: SortReport,
    notes: Vec<String>,
}

impl PartitionedSort {
    /// PS of `input`'s tuples within `budget` bytes; `tuple_estimate` overrides
    /// the table's estimate (for tests of wrong estimates).
    pub fn new(
        spec: ScanSpec,
        input: Box<dyn AccessPath>,
        source: BoundarySource,
        budget: usize,
        temp_dir: &Path,
        tuple_estimate: Option<usize>,
    ) -> Result<PartitionedSort> {
        spec.index()?;
        if budget < MIN_PS_BUDGET {
            return Err(AccessError::Config(format!(
                "sort memory of {budget} bytes is too small: a partitioned sort needs at least {MIN_PS_BUDGET} bytes (7 pages of {PAGE_SIZE} bytes)"
            )));
        }
        let tuple_estimate = tuple_estimate.unwrap_or_else(|| self::tuple_estimate(&spec));
        let device = spec.table.heap().pool().device().clone();
        Ok(PartitionedSort {
            spec,
            input: Some(input),
            source,
            budget,
            io: io_pages(budget),
            device,
            temp_dir: temp_dir.to_path_buf(),
            tuple_estimate,
            phase: Phase::Partition,
            input_report: ScanReport::default(),
            report: SortReport {
                algorithm: "partitioned sort".into(),
                budget_bytes: budget,
                ..Default::default()
            },
            notes: Vec::new(),
        })
    }

    /// A builder for the boundaries of a sort with this budget, to be fed by the
    /// input's entry observer.
    pub fn builder(
        spec: &ScanSpec,
        budget: usize,
        tuple_estimate: Option<usize>,
    ) -> BoundaryBuilder {
        BoundaryBuilder::new(
            partition_capacity(budget.max(MIN_PS_BUDGET)),
            tuple_estimate.unwrap_or_else(|| self::tuple_estimate(spec)),
        )
    }

    fn note_peak(&mut self, bytes: usize) {
        self.report.peak_bytes = self.report.peak_bytes.max(bytes);
    }

    fn boundaries(&mut self) -> Result<(Vec<Vec<u8>>, u64)> {
        match &self.source {
            BoundarySource::Observed(b) => b.lock().take().map(|b| b.finish()).ok_or_else(|| {
                AccessError::Config(
                    "partitioned sort: the input did not hand over the index entries".into(),
                )
            }),
            BoundarySource::Index => {
                let mut b =
                    BoundaryBuilder::new(partition_capacity(self.budget), self.tuple_estimate);
                let index = self.spec.index()?;
                let mut cursor = self.spec.cursor()?;
                while let Some(e) = cursor.next_entry(&index.btree) {
                    b.add(e?.0);
                }
                Ok(b.finish())
            }
        }
    }

    /// The partitioning phase: drains the input into partitions (or, if they
    /// cannot all have a page buffer, into an external sort).
    fn partition(&mut self) -> Result<()> {
        let mut input = self.input.take().expect("input until partitioned");
        let mut batch = TupleBatch::new();
        let mut more = input.next_batch(&mut batch)?;
        let (bounds, splits) = self.boundaries()?;
        let p = bounds.len() + 1;
        self.report.partitions = p as u64;
        self.report.partitions_split = splits;
        let mut entry = Vec::new();
        let too_many = (p + self.io) * PAGE_SIZE > self.budget;
        if too_many || p == 1 {
            if too_many {
                self.report.fallbacks += 1;
                self.notes.push(format!(
                    "partitioned sort: {p} partitions need {} bytes of page buffers, more than the sort memory of {} bytes; sorted by an external merge sort instead",
                    (p + self.io) * PAGE_SIZE,
                    self.budget
                ));
            } else {
                self.notes.push(
                    "partitioned sort: the range fits the sort memory (one partition); sorted in memory without temporary I/O".into(),
                );
            }
            let mut sorter = ExternalSorter::new(self.budget, self.device.clone(), &self.temp_dir)?;
            while more {
                for (tid, t) in batch.iter() {
                    entry.clear();
                    self.spec.entry_of(t, tid, &mut entry)?;
                    sorter.push(&entry, t)?;
                }
                more = input.next_batch(&mut batch)?;
            }
            self.input_report = input.report();
            self.phase = Phase::Fallback(sorter.finish()?);
            return Ok(());
        }
        self.note_peak((p + self.io) * PAGE_SIZE);
        let mut temp = TempFile::create(&self.device, &self.temp_dir, "ps")?;
        let mut parts: Vec<Part> = (0..p)
            .map(|_| Part {
                pages: Vec::new(),
                buf: Vec::with_capacity(PAGE_SIZE),
            })
            .collect();
        let mut gather = Gather {
            buf: AlignedBuf::new(self.io),
            owners: Vec::with_capacity(self.io),
        };
        let mut rec = Vec::new();
        while more {
            for (tid, t) in batch.iter() {
                entry.clear();
                self.spec.entry_of(t, tid, &mut entry)?;
                rec.clear();
                encode_record(&entry, t, &mut rec)?;
                if rec.len() > PAGE_SIZE {
                    return Err(AccessError::Config(format!(
                        "partitioned sort: a record of {} bytes (index entry {} + tuple {}) does not fit a {PAGE_SIZE}-byte partition page; use an external merge sort",
                        rec.len(),
                        entry.len(),
                        t.len()
                    )));
                }
                let k = bounds.partition_point(|b| b.as_slice() <= entry.as_slice());
                if parts[k].buf.len() + rec.len() > PAGE_SIZE {
                    gather.add(&mut parts, k, &mut temp)?;
                }
                parts[k].buf.extend_from_slice(&rec);
                self.report.records += 1;
                self.report.record_bytes += rec.len() as u64;
                self.report.record_bytes_written += rec.len() as u64;
            }
            more = input.next_batch(&mut batch)?;
        }
        self.input_report = input.report();
        for k in 0..p {
            if !parts[k].buf.is_empty() {
                gather.add(&mut parts, k, &mut temp)?;
            }
        }
        gather.write(&mut parts, &mut temp)?;
        self.phase = Phase::Sort {
            parts,
            next: 0,
            current: None,
            temp,
        };
        Ok(())
    }

    /// Reads partition `k` and sorts it.
    fn load(&mut self, parts: &[Part], k: usize, temp: &mut TempFile) -> Result<SortedStream> {
        let sort_budget = self.budget - self.io * PAGE_SIZE;
        let mut sorter = ExternalSorter::new(sort_budget, self.device.clone(), &self.temp_dir)?;
        let mut buf = AlignedBuf::new(self.io);
        for chunk in parts[k].pages.chunks(self.io) {
            // Coalesce adjacent pages into runs read together.
            let mut runs: Vec<(u64, usize)> = Vec::new();
            for &pg in chunk {
                match runs.last_mut() {
                    Some((first, n)) if *first + *n as u64 == pg => *n += 1,
                    _ => runs.push((pg, 1)),
                }
            }
            {
                let mut rest: &mut [u8] = &mut buf[..chunk.len() * PAGE_SIZE];
                let mut reqs: Vec<(u64, &mut [u8])> = Vec::with_capacity(runs.len());
                for &(first, n) in &runs {
                    let (head, tail) = rest.split_at_mut(n * PAGE_SIZE);
                    reqs.push((first, head));
                    rest = tail;
                }
                temp.read_many(&mut reqs)?;
            }
            for i in 0..chunk.len() {
                let page = &buf[i * PAGE_SIZE..(i + 1) * PAGE_SIZE];
                let mut pos = 0;
                while let Some((e, t, n)) = decode_record(page, pos) {
                    sorter.push(e, t)?;
                    self.report.record_bytes_read += n as u64;
                    pos += n;
                }
            }
        }
        if sorter.spilled() {
            self.report.fallbacks += 1;
        }
        let stream = sorter.finish()?;
        let peak = self.io * PAGE_SIZE + stream.report().peak_bytes;
        self.note_peak(peak);
        Ok(stream)
    }

    /// Adds a finished partition sorter's own temporary I/O (a fallback's) to the report.
    fn absorb(&mut self, s: &SortedStream) {
        let r = s.report();
        self.report.pages_written += r.pages_written;
        self.report.write_requests += r.write_requests;
        self.report.pages_read += r.pages_read;
        self.report.read_requests += r.read_requests;
    }
}

/// The gather buffer of full partition pages waiting to be written together.
struct Gather {
    buf: AlignedBuf,
    /// The partition of each gathered page.
    owners: Vec<usize>,
}

impl Gather {
    /// Moves partition `k`'s page into the gather buffer, writing it when full.
    fn add(&mut self, parts: &mut [Part], k: usize, temp: &mut TempFile) -> Result<()> {
        let slot = self.owners.len();
        let page = &mut self.buf[slot * PAGE_SIZE..(slot + 1) * PAGE_SIZE];
        let n = parts[k].buf.len();
        page[..n].copy_from_slice(&parts[k].buf);
        page[n..].fill(0);
        parts[k].buf.clear();
        self.owners.push(k);
        if self.owners.len() == self.buf.pages() {
            self.write(parts, temp)?;
        }
        Ok(())
    }

    fn write(&mut self, parts: &mut [Part], temp: &mut TempFile) -> Result<()> {
        let n = self.owners.len();
        if n == 0 {
            return Ok(());
        }
        let first = temp.append(&self.buf[..n * PAGE_SIZE])?;
        for (j, &k) in self.owners.iter().enumerate() {
            parts[k].pages.push(first + j as u64);
        }
        self.owners.clear();
        Ok(())
    }
}

impl AccessPath for PartitionedSort {
    fn next_batch(&mut self, out: &mut TupleBatch) -> Result<bool> {
        if matches!(self.phase, Phase::Partition) {
            self.partition()?;
        }
        out.clear();
        loop {
            match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Partition | Phase::Done => return Ok(!out.is_empty()),
                Phase::Fallback(mut s) => {
                    let more = s.fill(out)?;
                    if more {
                        self.phase = Phase::Fallback(s);
                    } else {
                        let r = s.report();
                        let partitions = self.report.partitions;
                        let split = self.report.partitions_split;
                        let fallbacks = self.report.fallbacks;
                        self.report = SortReport {
                            algorithm: if fallbacks > 0 {
                                "partitioned sort (fell back to external merge sort)"
                            } else {
                                "partitioned sort (one partition, in memory)"
                            }
                            .into(),
                            partitions,
                            partitions_split: split,
                            fallbacks,
                            ..r
                        };
                    }
                    if out.is_full() || !more {
                        return Ok(!out.is_empty());
                    }
                }
                Phase::Sort {
                    parts,
                    mut next,
                    mut current,
                    mut temp,
                } => {
                    if current.is_none() {
                        if next == parts.len() {
                            temp.add_io(&mut self.report);
                            return Ok(!out.is_empty());
                        }
                        current = Some(self.load(&parts, next, &mut temp)?);
                        next += 1;
                    }
                    let s = current.as_mut().expect("a partition stream");
                    if !s.fill(out)? {
                        self.absorb(s);
                        current = None;
                    }
                    let full = out.is_full();
                    self.phase = Phase::Sort {
                        parts,
                        next,
                        current,
                        temp,
                    };
                    if full {
                        return Ok(true);
                    }
                }
            }
        }
    }

    fn report(&self) -> ScanReport {
        let mut r = self.input_report.clone();
        r.path = format!("{} + partitioned sort", r.path);
        let mut s = self.report.clone();
        if let Phase::Sort { temp, .. } = &self.phase {
            temp.add_io(&mut s);
        }
        if let Phase::Fallback(f) = &self.phase {
            let fr = f.report();
            s.pages_written += fr.pages_written;
            s.pages_read += fr.pages_read;
            s.write_requests += fr.write_requests;
            s.read_requests += fr.read_requests;
        }
        r.sort = Some(s);
        r.notes.extend(self.notes.iter().cloned());
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: u32, tid: u32) -> Vec<u8> {
        let mut e = key.to_be_bytes().to_vec();
        Tid::new(tid, 0).encode(&mut e);
        e
    }

    #[test]
    fn boundaries_fill_partitions_and_split_duplicates_by_tid() {
        // Each record charges 4 + 10 + 86 + 4 = 104 bytes; 1000 bytes hold 9.
        let mut b = BoundaryBuilder::new(1000, 86);
        for i in 0..30 {
            b.add(&entry(i / 20, i));
        }
        let (bounds, splits) = b.finish();
        // 30 records, 9 per partition: bounds at records 9, 18, 27.
        assert_eq!(bounds, vec![entry(0, 9), entry(0, 18), entry(1, 27)]);
        // 9 and 18 fall inside key 0's run; 27 inside key 1's.
        assert_eq!(splits, 3);
        assert_eq!(io_pages(2 << 20), 16);
        assert_eq!(io_pages(MIN_PS_BUDGET), 1);
        assert_eq!(
            partition_capacity(2 << 20),
            arena_capacity((2 << 20) - 16 * PAGE_SIZE)
        );
    }
}
