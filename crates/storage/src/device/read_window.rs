//! The read window: how many bytes of bulk reads (scans' runs, batches of
//! pages) a real device is given at once, learned from the device's own
//! latencies.
//!
//! Why: a point read that misses the buffer pool queues behind every bulk
//! request already at the device. On this machine's virtual disk (8 KiB
//! random reads, `O_DIRECT`, beside a sequential reader; medians) a point
//! read took 0.10 ms alone, 0.7–1.0 ms beside 1 MiB of sequential reads in
//! flight, 2.4 ms beside 2 MiB and 5.4 ms beside 4 MiB, with a p99 of 212 ms
//! there. The sequential reader meanwhile got no faster past about 1 MiB in
//! flight (256 KiB requests: 706 MiB/s one at a time, 809 two, about 1,000 four,
//! 900 eight or sixteen). Bytes in flight past the device's knee buy no
//! bandwidth; they only make everyone else's reads wait. Two scans of 2 MiB
//! batches each, TPC-H Q1 on two cores, were at 4 MiB.
//!
//! How: bulk reads are cut into pieces of at most [`PIECE_BYTES`], and a
//! piece is put in flight only if the window has room for it (the bytes in
//! flight are shared by every thread reading through the device). A reader
//! with nothing in flight of its own waits for room; a reader with nothing in
//! flight *anywhere* always gets one piece, so a scan never stalls.
//!
//! The window follows latency, as delay-based congestion control does (TCP
//! Vegas, BBR): it is judged once per *round*, a window's worth of bytes
//! completed. A round whose pieces took on average more than
//! [`QUEUEING_FACTOR`] times the device's unloaded latency shrinks the
//! window by a quarter: the device is queueing. While point reads are being
//! made ([`ReadWindow::point_read`]), the factor is
//! [`QUEUEING_FACTOR_BESIDE_POINT_READS`], smaller. Otherwise, if some reader
//! wanted more than the window allowed during the round, it grows by one
//! piece. The unloaded latency is measured, not assumed: the first rounds and
//! every [`PROBE_EVERY`]th round after run with one piece in flight, and the
//! mean latency of such a probe is the reference until the next probe, so a
//! device that gets slower or faster (a host cache, another tenant) is
//! re-learned. On the disk above, under TPC-H Q1 alone, the window moved
//! between three and nine pieces (0.75–2.25 MiB, against the 4 MiB two
//! unpaced scans keep in flight), and Q1 ran as fast as unpaced.
//!
//! Only bulk reads go through the window ([`super::Device::read_many`]);
//! single-page reads (pool misses, the lookups it protects) and writes do not.
//!
//! Whose point reads: a query that scans and also reads single pages (an
//! index join's probes, TPC-H Q14's and Q22's) would otherwise pace its own
//! scan for its own probes, which gain nothing by it. A thread marks whom it
//! reads for ([`read_for`]: strata-sql's scan threads name their session);
//! a point read for a reader whose bulk reads went through the window in
//! the last [`POINT_MEMORY_ROUNDS`] rounds is that reader's own and does not
//! make the window stricter. Point reads for nobody in particular, or for
//! another reader (another connection's lookups), do.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};

/// Largest piece of a bulk read put in flight. On the disk above, four
/// 256 KiB requests stream faster than one 1 MiB request (about 1,000 vs
/// 700–970 MiB/s) and a point read waits less behind them; smaller pieces
/// than this cost more requests for no more bandwidth.
pub const PIECE_BYTES: usize = 256 << 10;

/// A round is queueing when its pieces took more than this many times the
/// unloaded latency on average. At 3, the disk above keeps about 1,000 MiB/s
/// (four pieces: 0.98 ms against 0.35 ms alone) and stops before six
/// (1.6 ms), which bring no more bandwidth.
pub const QUEUEING_FACTOR: u64 = 3;

/// The factor while point reads are being made (in this round or one of
/// the [`POINT_MEMORY_ROUNDS`] before): then latency matters more than the scans' last tenth of
/// bandwidth. Beside TPC-H Q1 on the disk above, a point read's median went
/// from 3.0 ms unpaced to 1.6–1.9 ms at factor 3 and 1.1–1.5 ms at 2; but Q1
/// alone ran 15–25% slower at 2 and no slower at 3, so 2 is only for rounds
/// that point reads share.
pub const QUEUEING_FACTOR_BESIDE_POINT_READS: u64 = 2;

/// Rounds after a point read during which the window is judged by
/// [`QUEUEING_FACTOR_BESIDE_POINT_READS`]: lookups come every few rounds, not
/// in every one (a round is about a millisecond on the disk above, so this
/// is some 50 ms).
pub const POINT_MEMORY_ROUNDS: u64 = 64;

/// Every this many rounds, one round runs with a single piece in flight to
/// measure the unloaded latency again. A round is a window's worth of bytes
/// (1 MiB at four pieces), so at 1,000 MiB/s this is about twice a second,
/// costing one piece's worth of concurrency for one round.
pub const PROBE_EVERY: u64 = 512;

/// Pieces a probe measures.
const PROBE_PIECES: u64 = 4;

/// The largest window.
const MAX_WINDOW: u64 = 64 << 20;

const PIECE: u64 = PIECE_BYTES as u64;

/// Readers with bulk reads a window remembers at once (the latest ones).
const BULK_READERS: usize = 8;

thread_local! {
    /// Whom this thread's reads are for (see [`read_for`]); 0: nobody.
    static READER: Cell<u64> = const { Cell::new(0) };
}

/// Marks the current thread's reads as made for reader `id` (not 0; a
/// session, say) until the guard is dropped, when the mark it replaced
/// comes back.
pub fn read_for(id: u64) -> ReaderMark {
    ReaderMark {
        before: READER.replace(id),
    }
}

/// The mark [`read_for`] set, for as long as it lives.
pub struct ReaderMark {
    before: u64,
}

impl Drop for ReaderMark {
    fn drop(&mut self) {
        READER.set(self.before);
    }
}

/// Whom the current thread reads for (0: nobody).
pub fn reader() -> u64 {
    READER.get()
}

/// What the window has learned, for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowCounters {
    /// Bytes of bulk reads allowed in flight now.
    pub window_bytes: u64,
    /// Bytes in flight now.
    pub in_flight: u64,
    /// The last probe's mean latency of a piece alone, in ns (0 before the
    /// first probe has finished).
    pub unloaded_ns: u64,
    /// Rounds that grew the window, and that shrank it.
    pub grown: u64,
    pub shrunk: u64,
    /// Probes finished.
    pub probes: u64,
    /// Times a reader waited for room.
    pub waits: u64,
}

/// The window of one device (see the module documentation).
pub struct ReadWindow {
    state: Mutex<State>,
    room: Condvar,
    /// Point reads started, ever (see [`ReadWindow::point_read`]), but a
    /// bulk reader's own.
    points: AtomicU64,
    /// The latest readers with bulk reads: (reader, the round of its last).
    bulk: [(AtomicU64, AtomicU64); BULK_READERS],
    /// Rounds ended so far, for the point reads to compare with.
    rounds: AtomicU64,
}

impl Default for ReadWindow {
    fn default() -> Self {
        ReadWindow::new()
    }
}

struct State {
    window: u64,
    in_flight: u64,
    /// The window to go back to when the running probe ends.
    probing: Option<u64>,
    unloaded_ns: u64,
    rounds: u64,
    round_bytes: u64,
    round_ns: u64,
    round_samples: u64,
    /// Whole pieces' latencies this round (a probe's samples).
    whole_ns: u64,
    whole_samples: u64,
    /// Some reader was refused room during this round.
    round_limited: bool,
    /// Point reads started before this round, and how many more rounds are
    /// judged by the stricter factor since the last one.
    points_before: u64,
    strict_rounds: u64,
    counters: WindowCounters,
}

impl ReadWindow {
    /// A window that starts with a probe (one piece in flight).
    pub fn new() -> ReadWindow {
        ReadWindow {
            state: Mutex::new(State {
                window: PIECE,
                in_flight: 0,
                probing: Some(PIECE),
                unloaded_ns: 0,
                rounds: 0,
                round_bytes: 0,
                round_ns: 0,
                round_samples: 0,
                whole_ns: 0,
                whole_samples: 0,
                round_limited: false,
                points_before: 0,
                strict_rounds: 0,
                counters: WindowCounters::default(),
            }),
            room: Condvar::new(),
            points: AtomicU64::new(0),
            bulk: Default::default(),
            rounds: AtomicU64::new(0),
        }
    }

    /// A point read (one page: a pool miss) is starting. It is not paced;
    /// it makes the window stricter for a while, unless it is for a reader
    /// whose own bulk reads are going through the window.
    pub fn point_read(&self) {
        let r = reader();
        if r != 0 && self.reads_in_bulk(r) {
            return;
        }
        self.points.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether reader `r` had bulk reads in the last
    /// [`POINT_MEMORY_ROUNDS`] rounds.
    fn reads_in_bulk(&self, r: u64) -> bool {
        let now = self.rounds.load(Ordering::Relaxed);
        self.bulk.iter().any(|(id, round)| {
            id.load(Ordering::Relaxed) == r
                && now.saturating_sub(round.load(Ordering::Relaxed)) <= POINT_MEMORY_ROUNDS
        })
    }

    /// Notes a bulk read for the current thread's reader: its slot, or the
    /// slot of the reader whose last bulk read is the oldest. (Two threads
    /// may race for a slot; the loser is remembered at its next read.)
    fn note_bulk(&self) {
        let r = reader();
        if r == 0 {
            return;
        }
        let now = self.rounds.load(Ordering::Relaxed);
        let slot = self
            .bulk
            .iter()
            .find(|(id, _)| id.load(Ordering::Relaxed) == r)
            .or_else(|| {
                self.bulk
                    .iter()
                    .min_by_key(|(_, round)| round.load(Ordering::Relaxed))
            })
            .expect("slots");
        slot.0.store(r, Ordering::Relaxed);
        slot.1.store(now, Ordering::Relaxed);
    }

    /// Takes room for `bytes` if the window has it (or nothing at all is in
    /// flight); `false` if the caller must first wait for one of its own
    /// reads to finish.
    pub fn try_take(&self, bytes: u64) -> bool {
        self.note_bulk();
        self.state.lock().admit(bytes)
    }

    /// Takes room for `bytes`, waiting for other readers' reads to finish.
    /// For a caller with nothing in flight of its own (else it could wait for
    /// itself).
    pub fn take(&self, bytes: u64) {
        self.note_bulk();
        let mut s = self.state.lock();
        if s.admit(bytes) {
            return;
        }
        s.counters.waits += 1;
        while !s.admit(bytes) {
            self.room.wait(&mut s);
        }
    }

    /// A read of `bytes` taken from the window finished, after `latency_ns`
    /// if it succeeded in full (a failed or short read is not a sample).
    pub fn done(&self, bytes: u64, latency_ns: Option<u64>) {
        let points = self.points.load(Ordering::Relaxed);
        let rounds = {
            let mut s = self.state.lock();
            s.done(bytes, latency_ns, points);
            s.rounds
        };
        self.rounds.store(rounds, Ordering::Relaxed);
        self.room.notify_all();
    }

    pub fn counters(&self) -> WindowCounters {
        let s = self.state.lock();
        WindowCounters {
            window_bytes: s.window,
            in_flight: s.in_flight,
            unloaded_ns: s.unloaded_ns,
            ..s.counters
        }
    }
}

impl State {
    fn admit(&mut self, bytes: u64) -> bool {
        if self.in_flight == 0 || self.in_flight + bytes <= self.window {
            self.in_flight += bytes;
            true
        } else {
            self.round_limited = true;
            false
        }
    }

    fn done(&mut self, bytes: u64, latency_ns: Option<u64>, points: u64) {
        self.in_flight = self.in_flight.saturating_sub(bytes);
        self.round_bytes += bytes;
        // Every read is a sample of the queue; a smaller read than a piece
        // takes less, so counting it can only make a round look less queued.
        // Only whole pieces measure the unloaded latency of a piece.
        if let Some(ns) = latency_ns {
            self.round_ns += ns;
            self.round_samples += 1;
            if bytes == PIECE {
                self.whole_ns += ns;
                self.whole_samples += 1;
            }
        }
        let round_len = if self.probing.is_some() {
            PROBE_PIECES * PIECE
        } else {
            self.window
        };
        if self.round_bytes >= round_len {
            self.end_round(points);
        }
    }

    fn end_round(&mut self, points: u64) {
        let mean = self.round_ns.checked_div(self.round_samples);
        self.rounds += 1;
        // Point reads in this round or one of the POINT_MEMORY_ROUNDS before.
        if points != self.points_before {
            self.strict_rounds = POINT_MEMORY_ROUNDS;
        }
        self.points_before = points;
        let factor = if self.strict_rounds > 0 {
            self.strict_rounds -= 1;
            QUEUEING_FACTOR_BESIDE_POINT_READS
        } else {
            QUEUEING_FACTOR
        };
        if let Some(back) = self.probing {
            // A probe that saw no whole piece (only smaller reads) keeps the
            // last reference.
            if let Some(mean) = self.whole_ns.checked_div(self.whole_samples) {
                self.unloaded_ns = mean.max(1);
                self.counters.probes += 1;
            }
            self.probing = None;
            self.window = back;
        } else if let Some(mean) = mean
            && self.unloaded_ns > 0
            && mean > factor * self.unloaded_ns
        {
            self.window = (self.window * 3 / 4 / PIECE * PIECE).max(PIECE);
            self.counters.shrunk += 1;
        } else if self.round_limited {
            self.window = (self.window + PIECE).min(MAX_WINDOW);
            self.counters.grown += 1;
        }
        if self.probing.is_none() && self.rounds.is_multiple_of(PROBE_EVERY) {
            self.probing = Some(self.window);
            self.window = PIECE;
        }
        self.round_bytes = 0;
        self.round_ns = 0;
        self.round_samples = 0;
        self.whole_ns = 0;
        self.whole_samples = 0;
        self.round_limited = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a window as a reader that always wants `want` pieces in flight
    /// would, on a device where a piece takes `latency(pieces in flight)`
    /// ns; returns the window after `rounds` rounds' worth of pieces.
    fn drive(w: &ReadWindow, want: u64, pieces: u64, latency: impl Fn(u64) -> u64) {
        for _ in 0..pieces {
            let mut taken = 0;
            while taken < want && w.try_take(PIECE) {
                taken += 1;
            }
            let depth = w.counters().in_flight / PIECE;
            for _ in 0..taken {
                w.done(PIECE, Some(latency(depth)));
            }
        }
    }

    /// A device whose latency does not grow with depth up to `knee` pieces
    /// and grows in proportion past it (a queue).
    fn knee(knee: u64) -> impl Fn(u64) -> u64 {
        move |depth| 300_000 * depth.max(knee) / knee
    }

    #[test]
    fn a_window_grows_to_the_devices_knee_and_no_further() {
        for k in [1, 2, 4, 8] {
            let w = ReadWindow::new();
            drive(&w, 32, 4_000, knee(k));
            let c = w.counters();
            assert_eq!(c.unloaded_ns, 300_000, "knee {k}: {c:?}");
            // Latency stays within the factor up to 3 × knee pieces.
            let pieces = c.window_bytes / PIECE;
            assert!(
                pieces >= k && pieces <= QUEUEING_FACTOR * k + 1,
                "knee {k}: window of {pieces} pieces ({c:?})"
            );
            assert!(c.shrunk > 0 && c.grown > 0, "{c:?}");
            assert!(
                c.probes > 1,
                "the unloaded latency is measured again: {c:?}"
            );
        }
    }

    #[test]
    fn point_reads_make_the_window_stricter() {
        // Knee at 8 pieces: alone the window stays within 18..=25 pieces
        // (shrinking by a quarter past 3 × 8), beside point reads within
        // 12..=17 (past 2 × 8).
        let w = ReadWindow::new();
        drive(&w, 64, 4_000, knee(8));
        let alone = w.counters().window_bytes / PIECE;
        assert!((18..=25).contains(&alone), "{alone} pieces alone");
        // The same device, with a point read every few pieces.
        for _ in 0..400 {
            w.point_read();
            drive(&w, 64, 10, knee(8));
        }
        let beside = w.counters().window_bytes / PIECE;
        assert!(
            (8..=17).contains(&beside),
            "{beside} pieces beside point reads, {alone} alone"
        );
        // And back once they stop.
        drive(&w, 64, 4_000, knee(8));
        let after = w.counters().window_bytes / PIECE;
        assert!((18..=25).contains(&after), "{after} pieces after");
    }

    /// A query's own point reads (its index join's probes beside its scan)
    /// leave its window as loose as it is alone; another reader's point
    /// reads, or a reader's whose bulk reads ended long ago, do not.
    #[test]
    fn a_readers_own_point_reads_leave_its_window_alone() {
        let w = ReadWindow::new();
        let _mark = read_for(7);
        drive(&w, 64, 4_000, knee(8));
        for _ in 0..400 {
            w.point_read();
            drive(&w, 64, 10, knee(8));
        }
        let own = w.counters().window_bytes / PIECE;
        assert!(
            (18..=25).contains(&own),
            "{own} pieces beside its own point reads"
        );
        // Another reader's lookups beside the same scan.
        for _ in 0..400 {
            {
                let _other = read_for(8);
                w.point_read();
            }
            drive(&w, 64, 10, knee(8));
        }
        let beside = w.counters().window_bytes / PIECE;
        assert!(
            (8..=17).contains(&beside),
            "{beside} pieces beside another's"
        );
        // Reader 7's scan long over: its point reads are lookups like any.
        drive(&w, 64, 4_000, knee(8));
        let points = w.points.load(Ordering::Relaxed);
        {
            let _other = read_for(9);
            drive(&w, 64, 8 * POINT_MEMORY_ROUNDS * 25, knee(8));
        }
        w.point_read();
        assert_eq!(w.points.load(Ordering::Relaxed), points + 1);
        drop(_mark);
        assert_eq!(reader(), 0, "the mark is taken back");
    }

    #[test]
    fn a_reader_alone_never_waits_and_a_window_nobody_fills_does_not_grow() {
        let w = ReadWindow::new();
        // One piece at a time: never limited by the window.
        drive(&w, 1, 1_000, knee(4));
        let c = w.counters();
        assert_eq!(c.window_bytes, PIECE, "{c:?}");
        assert_eq!(c.grown, 0);
        // Nothing in flight: a read bigger than the window still goes.
        assert!(w.try_take(10 * PIECE));
        assert!(!w.try_take(PIECE));
        w.done(10 * PIECE, None);
        assert_eq!(w.counters().in_flight, 0);
    }

    #[test]
    fn a_device_that_slows_down_is_learned_again() {
        let w = ReadWindow::new();
        drive(&w, 32, 4_000, knee(8));
        let before = w.counters();
        // Every piece now takes ten times as long, whatever the depth: the
        // probes see it, and the window is not pinned to one piece.
        drive(&w, 32, 8_000, |d| 10 * knee(8)(d));
        let after = w.counters();
        assert_eq!(after.unloaded_ns, 3_000_000, "{after:?}");
        assert!(after.window_bytes >= 8 * PIECE, "{before:?} then {after:?}");
    }

    #[test]
    fn a_reader_waits_for_room_that_another_frees() {
        let w = std::sync::Arc::new(ReadWindow::new());
        assert!(w.try_take(PIECE));
        let (tx, rx) = std::sync::mpsc::channel();
        let t = {
            let w = w.clone();
            std::thread::spawn(move || {
                w.take(PIECE);
                tx.send(()).unwrap();
                w.done(PIECE, None);
            })
        };
        // The other reader cannot get room until this piece is done.
        while w.counters().waits == 0 {
            std::thread::yield_now();
        }
        assert!(rx.try_recv().is_err());
        w.done(PIECE, None);
        rx.recv().unwrap();
        t.join().unwrap();
        assert_eq!(w.counters().in_flight, 0);
    }
}
