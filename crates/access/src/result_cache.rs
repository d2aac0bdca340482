//! Smooth Scan's Result Cache (§4.1): qualifying tuples found on probed pages
//! ahead of the index order wait here until the index reaches their entry.
//!
//! * Partitioned by ranges of index entries (key ++ tid) whose boundaries come
//!   from the B+-tree's own separators, so partition sizes follow the data's
//!   distribution without statistics. A partition keeps its tuples back to back
//!   in one buffer and finds one by its tuple id (a hash map with a cheap mix,
//!   not SipHash). A partition is dropped once the index has passed it.
//! * Under memory pressure the in-memory partition with the highest range (needed
//!   last) is *spilled*: its tuples, and every later tuple of it, go to one shared
//!   write buffer (the *arena*, an eighth of the budget) where each spilled
//!   partition's records form a linked list.
//! * When the arena is full it is written out as one *run*: the records grouped by
//!   partition, in partition order, streamed through a staging buffer in large
//!   sequential writes (up to [`MAX_IO_PAGES`] pages) at the end of one temporary
//!   paged file, through the device layer (so the I/O is counted and modeled).
//!   Runs start on a page boundary; only a run's last page is padded.
//! * When the index reaches a spilled partition, its records are pulled from the
//!   arena and from the head of every run. Each run is read front to back by a
//!   cursor with its own read-ahead block, and since runs are sorted by partition
//!   and partitions are reached in order, a cursor only ever moves forward: what
//!   it read for later partitions stays in its block until they are reached.
//!
//! **Why every spilled tuple is written once and read once.** A record enters the
//! arena once (when its partition is spilled or when it arrives for a spilled
//! partition), leaves it in exactly one run, and a run is read exactly once, front
//! to back (records of partitions the index passed without asking are skipped,
//! not re-read). Runs never share a page, so the bytes read equal the bytes
//! written. Nothing is re-spilled: a partition that was reloaded is the current
//! one, which is never chosen to spill. The bytes written are the records (a tuple
//! plus a 3–6 byte varint header of page delta, slot and length — less than the 6
//! bytes of the tuple id it encodes), an 8-byte header per partition per run, and
//! at most one page of padding per run, so they are bounded by the spilled tuples
//! with their ids (`spilled_bytes`) plus a page per run.
//!
//! **The one exception, and why it is needed.** Reading `F` runs at once needs a
//! block per run, and the cursors get a quarter of the budget `M` (two pages per
//! run at least), so one pass works while `F ≤ M / (8 · PAGE)`; with runs of
//! `M/8` that is spilled data up to about `M² / (64 · PAGE)`: 32 MiB at a 4 MiB
//! budget, 512 MiB at 16 MiB, 8 GiB at 64 MiB. This is the one-pass limit of any
//! external sort (the cache *is* a distribution sort of the result into index
//! order): with less memory no scheme can both write in large requests and read
//! each byte once. Beyond it, before reading, the smallest runs are merged
//! (partition order is kept, passed partitions are dropped) until the runs fit:
//! each merge level writes and reads its data once more (`spill_merges` counts
//! merges). Space of merged runs is not reused, so the file holds at most
//! (merge levels + 1) × the spilled bytes — bounded, where the old scheme
//! page-rounded every tiny per-partition run and filled a 60 GB disk.
//!
//! **Memory** counted against the budget, and never exceeded (an insert that
//! cannot be made to fit is an error rather than a silent overrun):
//! * every in-memory partition's buffer (its capacity: taken tuples' bytes
//!   too, until the partition is dropped or compacted — a buffer half of
//!   taken tuples is compacted before it grows, and under memory pressure) and
//!   [`TUPLE_OVERHEAD`] per in-memory tuple;
//! * the arena and the staging buffer, reserved from the start, so that spilling
//!   never needs memory it has not got;
//! * the read-ahead blocks of the runs being read.
//!
//! Not counted: per-partition bookkeeping (a few dozen bytes per partition) and
//! the run list (about 100 bytes per run).
//!
//! **Temporary files** follow `strata_storage::temp`'s scheme
//! (`strata-temp-resultcache-<pid>-<n>`). The file is removed when the cache is
//! dropped (also on error and during a panic's unwinding), and at once when a
//! write fails, so a full disk leaves nothing behind; what a crash leaves is
//! removed by the next process that uses the directory or opens the database.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;
use std::sync::Arc;

use strata_storage::device::{AlignedBuf, Device};
use strata_storage::page::PAGE_SIZE;
use strata_storage::row::Tid;

use crate::error::{AccessError, Result};
use crate::report::CacheReport;
use crate::spill_file::{Run, SpillFile, corrupt, decode_header, encode_record};

/// Bytes charged per in-memory tuple beyond its own bytes: its hash slot, an
/// average, not a bound.
///
/// A tuple's bytes live in its partition's buffer (charged by the buffer's
/// capacity); the partition's hash map takes the tuple id to where they are. A
/// slot is two u64s plus a control byte; the table doubles when 7/8 full, so
/// its load lies between 7/16 and 7/8 — about 2/3 on average — and a tuple
/// costs about 1.5 slots.
pub const TUPLE_OVERHEAD: usize = SLOT * 3 / 2;
const SLOT: usize = 2 * std::mem::size_of::<u64>() + 1;

/// Bytes of a tuple id; `spilled_bytes` counts each spilled tuple with its id.
pub const TID_BYTES: usize = 6;

/// Largest spill request (1 MiB): large enough that a request's fixed cost is
/// small beside its transfer on any device, small enough to stream.
pub const MAX_IO_PAGES: usize = 128;

/// Arena record: next record of the partition (u32), page (u32), slot (u16),
/// length (u16), then the tuple.
const ARENA_HDR: usize = 12;
/// Run group header: partition (u32), body bytes (u32).
const GROUP_HDR: usize = 8;
/// No record.
const NONE: u32 = u32::MAX;

/// An in-memory partition: its tuples back to back in arrival order (about
/// page order) in one buffer, found by tuple id through a hash map. One
/// allocation per partition rather than one per tuple: a boxed tuple each cost
/// a fifth of an ordered scan's CPU in malloc and free, and twice the memory.
/// A taken tuple's bytes stay in the buffer until the partition is dropped or
/// compacted (only the current partition has taken tuples).
#[derive(Default)]
struct Part {
    data: Vec<u8>,
    /// Tuple id (`tid_key`) → offset << 16 | length in `data`.
    slots: Slots,
    /// Bytes charged: `data`'s capacity and `TUPLE_OVERHEAD` per slot.
    bytes: usize,
    /// Bytes of `data` whose tuples were taken.
    garbage: usize,
    spilled: bool,
    /// First and last of this partition's records in the arena.
    head: u32,
    tail: u32,
}

impl Part {
    fn new() -> Part {
        Part {
            head: NONE,
            tail: NONE,
            ..Default::default()
        }
    }

    /// The capacity `data` needs for `len` more bytes: its own when they fit,
    /// else half as much again (at least 256 bytes more), so appends copy the
    /// buffer O(1) times per byte.
    fn capacity_for(&self, len: usize) -> usize {
        let (cap, need) = (self.data.capacity(), self.data.len() + len);
        if need <= cap {
            cap
        } else {
            need.max(cap + (cap / 2).max(256))
        }
    }

    /// Appends a tuple; returns the bytes to charge (growth of the buffer and
    /// the slot).
    fn append(&mut self, tid: Tid, tuple: &[u8]) -> usize {
        let cap = self.capacity_for(tuple.len());
        let grown = self.reserve(cap - self.data.len());
        let at = self.data.len() as u64;
        self.data.extend_from_slice(tuple);
        self.slots
            .insert(tid_key(tid), at << 16 | tuple.len() as u64);
        self.bytes += TUPLE_OVERHEAD;
        grown + TUPLE_OVERHEAD
    }

    /// Where a slot's tuple is in `data`.
    fn span(slot: u64) -> std::ops::Range<usize> {
        let at = (slot >> 16) as usize;
        at..at + (slot & 0xffff) as usize
    }

    /// Grows `data`'s capacity to hold `len` more bytes (exactly, if it must
    /// grow at all); returns the bytes to charge.
    fn reserve(&mut self, len: usize) -> usize {
        let before = self.data.capacity();
        self.data.reserve_exact(len);
        let grown = self.data.capacity() - before;
        self.bytes += grown;
        grown
    }

    /// Moves the live tuples to the front of the buffer and frees the rest;
    /// returns the bytes no longer charged.
    fn compact(&mut self) -> usize {
        let live = in_buffer_order(&self.slots);
        let mut to = 0usize;
        for (slot, key) in live {
            let span = Part::span(slot);
            let len = span.len();
            self.data.copy_within(span, to);
            self.slots.insert(key, (to as u64) << 16 | len as u64);
            to += len;
        }
        let before = self.data.capacity();
        self.data.truncate(to);
        self.data.shrink_to_fit();
        self.garbage = 0;
        let freed = before - self.data.capacity();
        self.bytes -= freed;
        freed
    }
}

type Slots = HashMap<u64, u64, BuildHasherDefault<TidHasher>>;

/// The tuples of `slots` as (slot, tid key), in buffer order.
fn in_buffer_order(slots: &Slots) -> Vec<(u64, u64)> {
    let mut live: Vec<(u64, u64)> = slots.iter().map(|(&k, &s)| (s, k)).collect();
    live.sort_unstable();
    live
}

/// A tuple id as a hash key.
fn tid_key(tid: Tid) -> u64 {
    u64::from(tid.page) << 16 | u64::from(tid.slot)
}

fn key_tid(key: u64) -> Tid {
    Tid::new((key >> 16) as u32, key as u16)
}

/// Hashes tuple-id keys with a multiply–xorshift mix (SplitMix64's finalizer).
/// SipHash's defence against chosen keys buys nothing for tuple ids and cost a
/// tenth of an ordered scan's CPU.
#[derive(Default)]
struct TidHasher(u64);

impl Hasher for TidHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x ^= x >> 30;
        x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x ^= x >> 27;
        x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }
}

pub struct ResultCache {
    bounds: Vec<Vec<u8>>,
    parts: Vec<Part>,
    budget: usize,
    used: usize,
    current: usize,
    /// Shared write buffer of spilled partitions' records; never grows past
    /// `arena_cap` (reserved in `used`).
    arena: Vec<u8>,
    arena_cap: usize,
    /// Budget share of the run cursors' read-ahead blocks.
    cursor_share: usize,
    runs: Vec<Run>,
    spill: SpillFile,
    report: CacheReport,
}

impl ResultCache {
    /// A cache whose partitions are split at `bounds` (sorted entries; partition
    /// i holds entries in [bounds[i-1], bounds[i])). Spill files go in `temp_dir`.
    pub fn new(
        bounds: Vec<Vec<u8>>,
        budget: usize,
        device: Arc<dyn Device>,
        temp_dir: &Path,
    ) -> ResultCache {
        strata_storage::temp::remove_stale_once(temp_dir);
        let n = bounds.len() + 1;
        let pages = |bytes: usize| (bytes / PAGE_SIZE).max(1);
        // Below 128 KiB a page-rounded eighth would be a page or more of a
        // budget mostly needed by the partition being read back (a leaf's worth
        // of tuples can be most of it): small runs cost a padded page each,
        // which is cheaper than failing.
        let arena_cap = if budget / 8 >= 2 * PAGE_SIZE {
            budget / 8 / PAGE_SIZE * PAGE_SIZE
        } else {
            (budget / 32).max(1024)
        };
        let stage_pages = pages(budget / 16).min(MAX_IO_PAGES);
        let cursor_share = pages(budget / 4) * PAGE_SIZE;
        let temp_path = strata_storage::temp::temp_path(temp_dir, "resultcache");
        let reserved = arena_cap + stage_pages * PAGE_SIZE;
        ResultCache {
            bounds,
            parts: (0..n).map(|_| Part::new()).collect(),
            budget,
            used: reserved,
            current: 0,
            arena: Vec::new(),
            arena_cap,
            cursor_share,
            runs: Vec::new(),
            spill: SpillFile {
                device,
                path: temp_path,
                file: None,
                next_page: 0,
                stage: None,
                stage_pages,
                staged: 0,
                run_first: 0,
                run_len: 0,
                failed: false,
                written: 0,
                read: 0,
            },
            report: CacheReport {
                budget_bytes: budget,
                peak_bytes: reserved,
                partitions: n,
                ..Default::default()
            },
        }
    }

    /// The spill file's path (its segments are `<path>.0000`, ...).
    pub fn spill_path(&self) -> &Path {
        &self.spill.path
    }

    fn part_of(&self, entry: &[u8]) -> usize {
        self.bounds.partition_point(|b| b.as_slice() <= entry)
    }

    pub fn report(&self) -> CacheReport {
        let mut r = self.report.clone();
        r.spill_bytes_written = self.spill.written;
        r.spill_bytes_read = self.spill.read;
        r
    }

    fn charge(&mut self, n: usize) {
        self.used += n;
        self.report.peak_bytes = self.report.peak_bytes.max(self.used);
    }

    /// Caches a qualifying tuple whose index entry is `entry`.
    pub fn insert(&mut self, entry: &[u8], tid: Tid, tuple: &[u8]) -> Result<()> {
        self.spill.usable()?;
        let k = self.part_of(entry);
        if !self.parts[k].spilled {
            // Room for the tuple; this may spill partition k itself.
            self.room_for(k, tuple.len())?;
        }
        if self.parts[k].spilled {
            return self.push_arena(k, tid, tuple);
        }
        self.store(k, tid, tuple);
        Ok(())
    }

    /// Appends a tuple to in-memory partition `k` (room made by the caller).
    fn store(&mut self, k: usize, tid: Tid, tuple: &[u8]) {
        let charged = self.parts[k].append(tid, tuple);
        self.charge(charged);
    }

    /// Makes room for a tuple of `len` bytes in partition `k` (unless that
    /// spills `k`). A buffer that is half taken tuples is compacted rather
    /// than grown.
    fn room_for(&mut self, k: usize, len: usize) -> Result<()> {
        loop {
            let p = &mut self.parts[k];
            if p.spilled {
                return Ok(());
            }
            let cap = p.capacity_for(len);
            if cap > p.data.capacity() && p.garbage * 2 >= p.data.len() && p.garbage > 0 {
                self.used -= p.compact();
                self.report.compactions += 1;
                continue;
            }
            let extra = cap - p.data.capacity() + TUPLE_OVERHEAD;
            if self.used + extra <= self.budget {
                return Ok(());
            }
            self.free_some(extra)?;
        }
    }

    /// Spills in-memory partitions needed later than the current one (highest
    /// range first) until `extra` more bytes fit in the budget.
    fn make_room(&mut self, extra: usize) -> Result<()> {
        while self.used + extra > self.budget {
            self.free_some(extra)?;
        }
        Ok(())
    }

    /// Frees memory toward `extra` more bytes: spills the in-memory partition
    /// needed last, or else compacts the current one's taken tuples away, or
    /// else fails.
    fn free_some(&mut self, extra: usize) -> Result<()> {
        let victim = (self.current + 1..self.parts.len())
            .rev()
            .find(|&i| !self.parts[i].slots.is_empty());
        match victim {
            Some(v) => self.spill_part(v),
            None if self.parts[self.current].garbage > 0 => {
                self.used -= self.parts[self.current].compact();
                self.report.compactions += 1;
                Ok(())
            }
            None => {
                let buffers = self.arena_cap + self.spill.stage_pages * PAGE_SIZE;
                let current = self.parts[self.current].bytes;
                Err(AccessError::ResultCache(format!(
                    "{} bytes needed now do not fit the budget of {} bytes ({buffers} of \
                     spill buffers, {current} of tuples due next, {} of read-ahead); give \
                     the result cache more memory",
                    self.used + extra,
                    self.budget,
                    self.used - buffers - current,
                )))
            }
        }
    }

    /// Moves a partition's in-memory tuples to the arena; later ones follow.
    fn spill_part(&mut self, k: usize) -> Result<()> {
        let part = &mut self.parts[k];
        if !part.spilled {
            part.spilled = true;
            self.report.spilled_partitions += 1;
        }
        let data = std::mem::take(&mut part.data);
        let slots = std::mem::take(&mut part.slots);
        part.garbage = 0;
        self.used -= std::mem::take(&mut part.bytes);
        // In buffer order, which is about page order: small page deltas in the
        // spill records.
        for (slot, key) in in_buffer_order(&slots) {
            self.push_arena(k, key_tid(key), &data[Part::span(slot)])?;
        }
        Ok(())
    }

    /// Appends a record of spilled partition `k` to the arena (writing the
    /// arena out as a run first if it is full).
    fn push_arena(&mut self, k: usize, tid: Tid, tuple: &[u8]) -> Result<()> {
        let rec = ARENA_HDR + tuple.len();
        if self.arena.len() + rec > self.arena_cap {
            self.flush()?;
        }
        if self.arena.capacity() == 0 {
            // Reserved in `used` from the start.
            self.arena.reserve_exact(self.arena_cap.max(rec));
        }
        let off = self.arena.len() as u32;
        self.arena.extend_from_slice(&NONE.to_le_bytes());
        self.arena.extend_from_slice(&tid.page.to_le_bytes());
        self.arena.extend_from_slice(&tid.slot.to_le_bytes());
        self.arena
            .extend_from_slice(&(tuple.len() as u16).to_le_bytes());
        self.arena.extend_from_slice(tuple);
        let part = &mut self.parts[k];
        if part.tail == NONE {
            part.head = off;
        } else {
            let t = part.tail as usize;
            self.arena[t..t + 4].copy_from_slice(&off.to_le_bytes());
        }
        part.tail = off;
        self.report.spilled_tuples += 1;
        self.report.spilled_bytes += (TID_BYTES + tuple.len()) as u64;
        Ok(())
    }

    /// Writes the arena out as one run: each partition's records as a group, in
    /// partition order.
    fn flush(&mut self) -> Result<()> {
        let mut group = Vec::new();
        for k in 0..self.parts.len() {
            let head = std::mem::replace(&mut self.parts[k].head, NONE);
            self.parts[k].tail = NONE;
            if head == NONE {
                continue;
            }
            group.clear();
            group.extend_from_slice(&[0; GROUP_HDR]);
            let mut prev = 0u32;
            let mut at = head;
            while at != NONE {
                let (next, tid, tuple) = arena_record(&self.arena, at as usize);
                encode_record(&mut group, &mut prev, tid, tuple);
                at = next;
            }
            let body = (group.len() - GROUP_HDR) as u32;
            group[..4].copy_from_slice(&(k as u32).to_le_bytes());
            group[4..8].copy_from_slice(&body.to_le_bytes());
            self.spill.put(&group)?;
        }
        self.arena.clear();
        if let Some(run) = self.spill.finish_run()? {
            self.runs.push(run);
            self.report.spill_runs += 1;
        }
        Ok(())
    }

    /// Removes and returns the tuple whose entry is `entry` (the index has reached
    /// it), reading its partition back first if it was spilled. Partitions the
    /// index has passed are dropped.
    pub fn take(&mut self, entry: &[u8], tid: Tid) -> Result<Option<&[u8]>> {
        // After a failed spill some tuples are lost: answering would be wrong.
        self.spill.usable()?;
        let k = self.part_of(entry);
        if k > self.current {
            for i in self.current..k {
                let p = std::mem::replace(&mut self.parts[i], Part::new());
                self.used -= p.bytes;
            }
            self.current = k;
        }
        if self.parts[k].spilled {
            self.reload(k)?;
        }
        let part = &mut self.parts[k];
        let Some(slot) = part.slots.remove(&tid_key(tid)) else {
            return Ok(None);
        };
        part.bytes -= TUPLE_OVERHEAD;
        self.used -= TUPLE_OVERHEAD;
        let span = Part::span(slot);
        part.garbage += span.len();
        Ok(Some(&self.parts[k].data[span]))
    }

    /// Reads spilled partition `k` (the current one) back: from the arena, then
    /// from the head of every run.
    fn reload(&mut self, k: usize) -> Result<()> {
        // From the arena: room first (which may write the arena out, records of k
        // included — they are then read from that run below).
        let (mut bytes, mut tuples) = (0, 0);
        let mut at = self.parts[k].head;
        while at != NONE {
            let (next, _, t) = arena_record(&self.arena, at as usize);
            bytes += t.len();
            tuples += 1;
            at = next;
        }
        // k was spilled: its buffer is empty.
        self.make_room(bytes + tuples * TUPLE_OVERHEAD)?;
        let grown = self.parts[k].reserve(bytes);
        self.charge(grown);
        let mut at = std::mem::replace(&mut self.parts[k].head, NONE);
        self.parts[k].tail = NONE;
        // Partition k is current from here on: never spilled again, never written
        // to a run by the flushes that making room below may cause.
        self.parts[k].spilled = false;
        while at != NONE {
            let (next, tid, t) = arena_record(&self.arena, at as usize);
            let charged = self.parts[k].append(tid, t);
            self.charge(charged);
            at = next;
        }
        // The arena's copies are garbage now; they go when it is next cleared.
        self.merge_if_needed()?;
        let n = self.runs.len();
        for i in 0..n {
            let mut run = std::mem::take(&mut self.runs[i]);
            let r = self.load_from_run(k, &mut run, n);
            self.runs[i] = run;
            r?;
        }
        self.drop_exhausted_runs();
        Ok(())
    }

    /// Moves partition `k`'s groups at the head of `run` into memory, skipping
    /// groups of partitions already passed.
    fn load_from_run(&mut self, k: usize, run: &mut Run, readers: usize) -> Result<()> {
        while let Some((p, len)) = self.peek_group(run, readers)? {
            if p > k {
                break;
            }
            run.peeked = None;
            if p < k {
                self.skip(run, len)?;
                continue;
            }
            let mut left = len;
            let mut prev = 0u32;
            let mut hdr = Vec::with_capacity(16);
            let mut t = Vec::new();
            while left > 0 {
                // Header: three varints.
                hdr.clear();
                let mut varints = 0;
                while varints < 3 {
                    let b = self.next_byte(run)?;
                    hdr.push(b);
                    if b & 0x80 == 0 {
                        varints += 1;
                    }
                }
                let (tid, tlen) = decode_header(&hdr, &mut prev).ok_or_else(corrupt)?;
                let rec = hdr.len() + tlen;
                if rec > left {
                    return Err(corrupt());
                }
                left -= rec;
                t.resize(tlen, 0);
                self.read_into(run, &mut t)?;
                self.room_for(k, tlen)?;
                self.store(k, tid, &t);
            }
        }
        Ok(())
    }

    /// While there are more runs than the cursors' share of the budget can read
    /// with two pages each, merges the smallest of them into one.
    fn merge_if_needed(&mut self) -> Result<()> {
        // Two pages per cursor: reading 2 pages at a time halves the requests of
        // the 1-page minimum for a little less fan-in.
        let max_runs = (self.cursor_share / (2 * PAGE_SIZE)).max(1);
        let fan_in = max_runs.max(2);
        while self.runs.len() > max_runs {
            let mut order: Vec<usize> = (0..self.runs.len()).collect();
            order.sort_by_key(|&i| self.runs[i].len - self.runs[i].read);
            let mut chosen: Vec<usize> = order[..fan_in.min(order.len())].to_vec();
            chosen.sort_unstable_by(|a, b| b.cmp(a));
            let mut group: Vec<Run> = chosen.iter().map(|&i| self.runs.remove(i)).collect();
            self.report.spill_merges += 1;
            let r = self.merge(&mut group);
            for run in &mut group {
                self.close_cursor(run);
            }
            r?;
        }
        Ok(())
    }

    /// Merges `group` into one new run, group by group in partition order.
    fn merge(&mut self, group: &mut [Run]) -> Result<()> {
        let readers = group.len();
        loop {
            let mut min: Option<usize> = None;
            for run in group.iter_mut() {
                if let Some((p, _)) = self.peek_group(run, readers)? {
                    min = Some(min.map_or(p, |m| m.min(p)));
                }
            }
            let Some(p) = min else { break };
            for run in group.iter_mut() {
                while let Some((q, len)) = self.peek_group(run, readers)?
                    && q == p
                {
                    run.peeked = None;
                    if p < self.current {
                        self.skip(run, len)?;
                        continue;
                    }
                    let mut hdr = [0u8; GROUP_HDR];
                    hdr[..4].copy_from_slice(&(p as u32).to_le_bytes());
                    hdr[4..].copy_from_slice(&(len as u32).to_le_bytes());
                    self.spill.put(&hdr)?;
                    let mut left = len;
                    while left > 0 {
                        if run.pos == run.filled {
                            self.refill(run)?;
                        }
                        let n = left.min(run.filled - run.pos);
                        let blk = run.blk.as_ref().ok_or_else(corrupt)?;
                        self.spill.put(&blk[run.pos..run.pos + n])?;
                        run.pos += n;
                        left -= n;
                    }
                }
            }
        }
        if let Some(run) = self.spill.finish_run()? {
            self.runs.push(run);
            self.report.spill_runs += 1;
        }
        Ok(())
    }

    /// The partition and body length of the next group of `run` (its header is
    /// read and kept in `peeked` until the group is taken), opening the run's
    /// cursor — a read-ahead block of the cursors' share divided among `readers`
    /// — if needed; `None` at the end of the run.
    fn peek_group(&mut self, run: &mut Run, readers: usize) -> Result<Option<(usize, usize)>> {
        if run.peeked.is_some() {
            return Ok(run.peeked);
        }
        if run.exhausted() {
            self.close_cursor(run);
            return Ok(None);
        }
        if run.blk.is_none() {
            let per = self.cursor_share / (2 * readers.max(1)) / PAGE_SIZE;
            let pages = per
                .clamp(1, MAX_IO_PAGES)
                .min(run.len.div_ceil(PAGE_SIZE as u64) as usize);
            // Short of memory (a large current partition), a page will do.
            let pages = if pages > 1 && self.make_room(pages * PAGE_SIZE).is_err() {
                1
            } else {
                pages
            };
            self.make_room(pages * PAGE_SIZE)?;
            self.charge(pages * PAGE_SIZE);
            run.blk = Some(AlignedBuf::new(pages));
        }
        let mut hdr = [0u8; GROUP_HDR];
        self.read_into(run, &mut hdr)?;
        let p = u32::from_le_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]) as usize;
        let len = u32::from_le_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]) as usize;
        run.peeked = Some((p, len));
        Ok(run.peeked)
    }

    fn next_byte(&mut self, run: &mut Run) -> Result<u8> {
        let mut b = [0u8];
        self.read_into(run, &mut b)?;
        Ok(b[0])
    }

    /// Fills `out` from `run`, reading blocks as needed.
    fn read_into(&mut self, run: &mut Run, out: &mut [u8]) -> Result<()> {
        let mut at = 0;
        while at < out.len() {
            if run.pos == run.filled {
                self.refill(run)?;
            }
            let n = (out.len() - at).min(run.filled - run.pos);
            let blk = run.blk.as_ref().ok_or_else(corrupt)?;
            out[at..at + n].copy_from_slice(&blk[run.pos..run.pos + n]);
            run.pos += n;
            at += n;
        }
        Ok(())
    }

    fn skip(&mut self, run: &mut Run, mut n: usize) -> Result<()> {
        while n > 0 {
            if run.pos == run.filled {
                self.refill(run)?;
            }
            let k = n.min(run.filled - run.pos);
            run.pos += k;
            n -= k;
        }
        Ok(())
    }

    /// Reads the run's next block (the block is empty: everything consumed).
    fn refill(&mut self, run: &mut Run) -> Result<()> {
        let left = run.len - run.read;
        let Some(blk) = run.blk.as_mut() else {
            return Err(corrupt());
        };
        if left == 0 {
            return Err(corrupt());
        }
        let pages = blk.pages().min(left.div_ceil(PAGE_SIZE as u64) as usize);
        let page = run.first_page + run.read / PAGE_SIZE as u64;
        self.spill.read(page, &mut blk[..pages * PAGE_SIZE])?;
        let n = (pages * PAGE_SIZE).min(left as usize);
        run.read += n as u64;
        run.pos = 0;
        run.filled = n;
        Ok(())
    }

    fn close_cursor(&mut self, run: &mut Run) {
        if let Some(b) = run.blk.take() {
            self.used -= b.len();
        }
    }

    fn drop_exhausted_runs(&mut self) {
        let mut i = 0;
        while i < self.runs.len() {
            if self.runs[i].exhausted() {
                let mut r = self.runs.remove(i);
                self.close_cursor(&mut r);
            } else {
                i += 1;
            }
        }
    }
}

/// The arena record at `at`: next record, tuple id, tuple.
fn arena_record(arena: &[u8], at: usize) -> (u32, Tid, &[u8]) {
    let h = &arena[at..at + ARENA_HDR];
    let next = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    let page = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
    let slot = u16::from_le_bytes([h[8], h[9]]);
    let len = u16::from_le_bytes([h[10], h[11]]) as usize;
    (
        next,
        Tid::new(page, slot),
        &arena[at + ARENA_HDR..at + ARENA_HDR + len],
    )
}
