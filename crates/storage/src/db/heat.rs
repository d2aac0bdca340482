//! Sampled per-tuple access counts (No Bits Left Behind §3.1): which tuples
//! lookups touch, kept cheaply enough to run all the time, so that
//! `strata cluster TABLE --hot` can gather the hot ones (`maintenance/cluster.rs`).
//!
//! Every index lookup of a tuple (an index scan's heap fetch, a point lookup)
//! calls [`AccessCounts::record`]. One call in [`AccessCounts::every`] per
//! thread is counted — a thread-local tick decides, so an uncounted call costs
//! an increment and a compare — in one of [`SHARDS`] maps from tid to count,
//! each behind its own lock. The period is 4 unless `STRATA_ACCESS_SAMPLE`
//! says otherwise when the table opens. Full scans record nothing: they touch every tuple
//! alike and say nothing about which are hot. Nor does a Smooth Scan once it
//! sweeps the heap in page order (it has become a full scan): only the tuples
//! its index entries led to count.
//!
//! Memory is bounded: a shard that outgrows its share of [`MAX_TRACKED`]
//! halves all its counts and forgets the zeros (the tuples seen once since the
//! last halving). Clustering halves every count too ([`AccessCounts::age`]), so
//! a tuple no longer read cools down over a few clusterings and moves back.
//!
//! The counts survive a restart in `<heap file>.heat` beside the heap, written
//! at every checkpoint (a clean close is one) and when a read-only open closes:
//! a header, the entries, and a CRC-32C of it all. The file is advice, not data: a damaged or missing one
//! starts the counts from zero, and [`AccessCounts::load_warning`] says why.

use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use parking_lot::Mutex;

use crate::error::{Result, StorageError};
use crate::row::Tid;

/// Independent maps (and locks) the counts are spread over, by tid.
pub const SHARDS: usize = 16;
/// Tuples tracked at most, over all shards, before counts are halved.
pub const MAX_TRACKED: usize = 4 << 20;
/// One access in this many is counted, by default.
pub const DEFAULT_EVERY: u32 = 4;

const MAGIC: &[u8; 8] = b"STRHEAT1";
/// Bytes of one entry in the file: page u32, slot u16, count u32.
const ENTRY: usize = 10;
/// Bytes of the header: magic, sampling period u32, entries u64.
const HEADER: usize = 8 + 4 + 8;

thread_local! {
    /// Where a thread's ticks start: anywhere, so that a process making a
    /// few lookups (one `strata scan`) is counted with the same chance as a
    /// long one.
    static TICK: Cell<u32> = Cell::new(tick_start());
}

fn tick_start() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    h.finish() as u32
}

/// The sampling period tables open with: `STRATA_ACCESS_SAMPLE` if it is set
/// to a positive number (1 counts every access), else [`DEFAULT_EVERY`].
pub fn default_every() -> u32 {
    std::env::var("STRATA_ACCESS_SAMPLE")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_EVERY)
}

/// The sampled access counts of one table's tuples.
pub struct AccessCounts {
    every: AtomicU32,
    shards: Vec<Mutex<Counts>>,
    /// Changed since the file was last written.
    dirty: AtomicBool,
    load_warning: Option<String>,
}

impl Default for AccessCounts {
    fn default() -> Self {
        AccessCounts::new(default_every())
    }
}

/// A shard's map. Tids are not chosen by an adversary, so a multiplicative
/// hash does (the standard one, SipHash, costs more than the rest of a count).
type Counts = HashMap<Tid, u32, std::hash::BuildHasherDefault<TidHasher>>;

/// Hashes a tid's page and slot with one multiplication.
#[derive(Default)]
struct TidHasher(u64);

impl std::hash::Hasher for TidHasher {
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(26)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(31);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = self.0 << 32 | n as u64;
    }
    fn write_u16(&mut self, n: u16) {
        self.0 = self.0 << 16 | n as u64;
    }
}

fn shard_of(tid: Tid) -> usize {
    // Neighbouring tuples on one page go to different shards.
    let h = (tid.page as u64) << 16 | tid.slot as u64;
    (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize % SHARDS
}

impl AccessCounts {
    /// Empty counts, counting one access in `every` (at least 1).
    pub fn new(every: u32) -> AccessCounts {
        AccessCounts {
            every: AtomicU32::new(every.max(1)),
            shards: (0..SHARDS).map(|_| Mutex::new(Counts::default())).collect(),
            dirty: AtomicBool::new(false),
            load_warning: None,
        }
    }

    /// One access in how many is counted.
    pub fn every(&self) -> u32 {
        self.every.load(Ordering::Relaxed)
    }

    /// Counts one access in `every` from now on (1: all of them).
    pub fn set_every(&self, every: u32) {
        self.every.store(every.max(1), Ordering::Relaxed);
    }

    /// Notes one access of `tid` (counted if this thread's turn comes).
    #[inline]
    pub fn record(&self, tid: Tid) {
        let every = self.every.load(Ordering::Relaxed);
        let take = TICK.with(|t| {
            let n = t.get().wrapping_add(1);
            t.set(n);
            n.is_multiple_of(every)
        });
        if take {
            self.count(tid, 1);
        }
    }

    /// Adds `n` to `tid`'s count.
    pub fn count(&self, tid: Tid, n: u32) {
        let mut s = self.shards[shard_of(tid)].lock();
        let c = s.entry(tid).or_insert(0);
        *c = c.saturating_add(n);
        if s.len() > MAX_TRACKED / SHARDS {
            halve(&mut s);
        }
        drop(s);
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// `tid`'s count (0 if untracked).
    pub fn get(&self, tid: Tid) -> u32 {
        self.shards[shard_of(tid)]
            .lock()
            .get(&tid)
            .copied()
            .unwrap_or(0)
    }

    /// Every tracked tuple and its count, in tid order.
    pub fn snapshot(&self) -> Vec<(Tid, u32)> {
        let mut out: Vec<(Tid, u32)> = self
            .shards
            .iter()
            .flat_map(|s| s.lock().iter().map(|(&t, &c)| (t, c)).collect::<Vec<_>>())
            .collect();
        out.sort_unstable();
        out
    }

    /// Sampled accesses counted in all (saturating).
    pub fn total(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.lock().values().map(|&c| c as u64).sum::<u64>())
            .sum()
    }

    /// Tuples tracked.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A tuple moved from `from` to `to`: its count goes with it.
    pub fn moved(&self, from: Tid, to: Tid) {
        let c = self.shards[shard_of(from)].lock().remove(&from);
        if let Some(c) = c {
            self.shards[shard_of(to)].lock().insert(to, c);
        }
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// A tuple is gone (its slot may be reused by another).
    pub fn forget(&self, tid: Tid) {
        if self.shards[shard_of(tid)].lock().remove(&tid).is_some() {
            self.dirty.store(true, Ordering::Relaxed);
        }
    }

    /// Halves every count and forgets the zeros: what was read long ago
    /// weighs less than what is read now.
    pub fn age(&self) {
        for s in &self.shards {
            halve(&mut s.lock());
        }
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// Forgets everything.
    pub fn clear(&self) {
        for s in &self.shards {
            s.lock().clear();
        }
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// Why the counts file could not be read when the table opened, if so.
    pub fn load_warning(&self) -> Option<&str> {
        self.load_warning.as_deref()
    }

    /// The counts file of the heap file at `heap` (its base path).
    pub fn path_of(heap: &Path) -> PathBuf {
        let mut s = heap.as_os_str().to_owned();
        s.push(".heat");
        PathBuf::from(s)
    }

    /// The counts from `path`; none if it does not exist; none and a warning
    /// naming the file and what is wrong if it cannot be read.
    pub fn load(path: &Path) -> AccessCounts {
        let why = match std::fs::read(path) {
            Ok(b) => match decode(&b) {
                Ok(c) => return c,
                Err(why) => why,
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return AccessCounts::default(),
            Err(e) => e.to_string(),
        };
        AccessCounts {
            load_warning: Some(format!(
                "{}: {why}; access counts start from zero",
                path.display()
            )),
            ..AccessCounts::default()
        }
    }

    /// Writes the counts to `path` if they changed since the last time,
    /// atomically (a temporary file renamed over it).
    pub fn save(&self, path: &Path) -> Result<()> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let entries = self.snapshot();
        let mut out = Vec::with_capacity(HEADER + entries.len() * ENTRY + 4);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.every().to_le_bytes());
        out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        for (t, c) in entries {
            out.extend_from_slice(&t.page.to_le_bytes());
            out.extend_from_slice(&t.slot.to_le_bytes());
            out.extend_from_slice(&c.to_le_bytes());
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let written = std::fs::write(&tmp, &out).and_then(|_| std::fs::rename(&tmp, path));
        if let Err(e) = written {
            // On a full disk, a half-written file would keep the room it took.
            let _ = std::fs::remove_file(&tmp);
            self.dirty.store(true, Ordering::Release);
            return Err(StorageError::io(path, e));
        }
        Ok(())
    }
}

fn halve(m: &mut Counts) {
    m.retain(|_, c| {
        *c /= 2;
        *c > 0
    });
}

fn decode(b: &[u8]) -> std::result::Result<AccessCounts, String> {
    if b.len() < HEADER + 4 {
        return Err(format!("{} bytes is shorter than the header", b.len()));
    }
    if &b[..8] != MAGIC {
        return Err("not an access counts file (bad magic)".into());
    }
    let (body, tail) = b.split_at(b.len() - 4);
    let want = u32::from_le_bytes(tail.try_into().expect("4 bytes"));
    if crc32c::crc32c(body) != want {
        return Err("checksum mismatch".into());
    }
    let every = u32::from_le_bytes(body[8..12].try_into().expect("4 bytes"));
    let n = u64::from_le_bytes(body[12..20].try_into().expect("8 bytes"));
    let rest = &body[HEADER..];
    if n.checked_mul(ENTRY as u64) != Some(rest.len() as u64) {
        return Err(format!(
            "the header says {n} entries but {} bytes follow it",
            rest.len()
        ));
    }
    let _ = every;
    let c = AccessCounts::default();
    for e in rest.chunks_exact(ENTRY) {
        let page = u32::from_le_bytes(e[0..4].try_into().expect("4 bytes"));
        let slot = u16::from_le_bytes(e[4..6].try_into().expect("2 bytes"));
        let n = u32::from_le_bytes(e[6..10].try_into().expect("4 bytes"));
        c.shards[shard_of(Tid::new(page, slot))]
            .lock()
            .insert(Tid::new(page, slot), n);
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_one_in_every() {
        let c = AccessCounts::new(4);
        // Wherever the thread's ticks start, 400 calls count 100.
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..400 {
                    c.record(Tid::new(3, 1));
                }
            });
        });
        assert_eq!(c.get(Tid::new(3, 1)), 100);
        c.set_every(1);
        c.record(Tid::new(3, 2));
        assert_eq!(c.get(Tid::new(3, 2)), 1);
    }

    #[test]
    fn ages_moves_and_forgets() {
        let c = AccessCounts::new(1);
        c.count(Tid::new(1, 0), 5);
        c.count(Tid::new(1, 1), 1);
        c.age();
        assert_eq!(c.snapshot(), vec![(Tid::new(1, 0), 2)]);
        c.moved(Tid::new(1, 0), Tid::new(9, 4));
        assert_eq!(c.get(Tid::new(1, 0)), 0);
        assert_eq!(c.get(Tid::new(9, 4)), 2);
        c.forget(Tid::new(9, 4));
        assert!(c.is_empty());
    }

    #[test]
    fn bounded_memory_halves_a_full_shard() {
        let c = AccessCounts::new(1);
        // Every tuple seen once: a full shard halves to nothing.
        for p in 0..(MAX_TRACKED as u32 / SHARDS as u32 * 3) {
            c.count(Tid::new(p, 0), 1);
        }
        assert!(c.len() <= MAX_TRACKED);
        // A tuple counted often survives the halvings.
        let c = AccessCounts::new(1);
        c.count(Tid::new(7, 7), 1 << 20);
        for p in 0..(MAX_TRACKED as u32 / SHARDS as u32 * 3) {
            c.count(Tid::new(p + 100, 1), 1);
        }
        assert!(c.get(Tid::new(7, 7)) > 0);
    }

    #[test]
    fn file_round_trips_and_damage_is_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.heap.heat");
        let c = AccessCounts::new(2);
        c.count(Tid::new(1, 2), 3);
        c.count(Tid::new(70_000, 9), 1);
        c.save(&path).unwrap();
        let back = AccessCounts::load(&path);
        assert!(back.load_warning().is_none());
        assert_eq!(back.snapshot(), c.snapshot());
        // Nothing changed: nothing written.
        std::fs::remove_file(&path).unwrap();
        c.save(&path).unwrap();
        assert!(!path.exists());

        c.count(Tid::new(1, 2), 1);
        c.save(&path).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        bytes[n - 6] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let bad = AccessCounts::load(&path);
        assert!(bad.is_empty());
        let w = bad.load_warning().unwrap();
        assert!(w.contains("t.heap.heat") && w.contains("checksum"), "{w}");

        std::fs::write(&path, b"short").unwrap();
        let w = AccessCounts::load(&path)
            .load_warning()
            .unwrap()
            .to_string();
        assert!(w.contains("shorter than the header"), "{w}");
        assert!(
            AccessCounts::load(&dir.path().join("none"))
                .load_warning()
                .is_none()
        );
    }
}
