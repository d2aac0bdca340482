//! Whether an index's leaf cache pays, decided from what its lookups cost.
//!
//! No Bits Left Behind §2.1 counts a cache hit as a heap page not read. That
//! is a large saving when the heap page would come from a device, and next to
//! none when it is in the buffer pool: there a hit (find the item, promote it,
//! decode its values) costs about what the heap tuple it replaces costs, and
//! every miss adds a probe and a fill (Fig. 2c: 20–47% slower at 0% hits, at
//! best 1.13x at 100% hits). Which case holds depends on the pool, the device
//! and how often the workload comes back to a key, and it changes while the
//! database runs. No constant can say it; the lookups' own times can.
//!
//! So each cached index has a governor that answers every lookup one of two
//! ways, the same answer either way:
//! - *cache*: [`Table::lookup_cached`](crate::db::Table::lookup_cached), hits
//!   from the leaves, misses from the heap, filling;
//! - *plain*: the index's entries ([`BTree::lookup`](crate::btree::BTree::lookup))
//!   and each one's heap tuple; the cache is neither read nor filled.
//!
//! The *chosen* way answers most lookups, and one in [`TIME_ONE_IN`] of those
//! is timed. A random share of lookups (the *exploration* rate) takes the
//! other way, every one timed. Once the other way has [`SAMPLES`] timed
//! lookups, the two mean times are compared and a new window starts. The
//! other way is chosen once it was at least [`MARGIN_PCT`]% cheaper in
//! [`SWITCH_AFTER`] windows in a row. Means are used, not medians, because
//! the cost is a mix of fast pool hits and slow device reads. A mean is
//! thrown far off by one lookup whose thread was descheduled, which is why
//! one window does not switch.
//!
//! Exploring has a price: each explored lookup costs what the dearer way
//! costs. The rate is set after every decision so that the price stays near
//! [`BUDGET_PCT`]% of the lookups' time. That gives 1 in 16 when the two ways
//! cost about the same, and down to 1 in 2^16 when the other way is far
//! dearer (a device read against a leaf hit). The rate rises at once. It
//! falls at once too when the other way was dear throughout its window
//! (device reads in most of its samples), but at most [`RATE_FALL`] times
//! when one sample made more than half of its time, so one slow sample does
//! not stop the exploring. A far-dearer way is then measured rarely. A change
//! of workload is still caught, but only after a long window.
//!
//! While plain is chosen, only explored lookups fill the cache, so it warms
//! more slowly. That is the price of not paying for a cache that does not pay
//! for itself.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::btree::cache::state::with_rng;

/// Timed lookups of the other way before the two ways are compared.
pub const SAMPLES: u32 = 64;
/// How much cheaper the other way must have been to be chosen (%).
pub const MARGIN_PCT: u64 = 10;
/// What exploring may cost above the chosen way, as a share of the lookups'
/// time (%).
pub const BUDGET_PCT: u64 = 1;
/// One chosen lookup in this many is timed.
pub const TIME_ONE_IN: u64 = 16;
/// Windows in a row in which the other way must be the cheaper for it to be
/// chosen: one slow sample (the thread descheduled) does not switch.
pub const SWITCH_AFTER: u32 = 2;
/// The most the exploration rate falls in one decision when one sample of
/// the other way made more than half its time (it rises at once): one slow
/// sample does not stop the exploring.
pub const RATE_FALL: u64 = 4;
/// The exploration rate's bounds, in lookups per 2^32.
const MAX_RATE: u64 = (1 << 32) / 16;
const MIN_RATE: u64 = 1 << 16;

/// One of the two ways to answer a cached index's lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Way {
    /// The index's entries and their heap tuples; the cache untouched.
    Plain,
    /// The leaves' caches: hits from the leaf, misses from the heap, filling.
    Cache,
}

impl Way {
    fn at(self) -> usize {
        self as usize
    }
    fn other(self) -> Way {
        match self {
            Way::Cache => Way::Plain,
            Way::Plain => Way::Cache,
        }
    }
}

/// How one lookup is answered, and whether its time is to be recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    pub way: Way,
    pub timed: bool,
}

/// What a governor has decided so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GovernorState {
    /// The way that answers most lookups now.
    pub chosen: Way,
    /// Exploration rate: one lookup in this many takes the other way.
    pub explore_one_in: u64,
    /// Decisions that changed the chosen way.
    pub switches: u64,
    /// Windows closed (decisions taken).
    pub decisions: u64,
    /// Mean ns per lookup of each way, plain then cache, in the last
    /// window (0 before the first decision).
    pub last_ns: [u64; 2],
}

#[derive(Default)]
struct Window {
    sum: [u64; 2],
    n: [u32; 2],
    /// Each way's dearest sample.
    max: [u64; 2],
    /// Windows in a row, up to this one, in which the other way was the
    /// cheaper by the margin (kept across windows).
    favoured: u32,
}

/// A cached index's choice between its cache and the plain path, from
/// timed samples of both (see the module docs).
pub struct CacheGovernor {
    use_cache: AtomicBool,
    /// Lookups per 2^32 that take the other way.
    rate: AtomicU32,
    switches: AtomicU64,
    decisions: AtomicU64,
    last_ns: [AtomicU64; 2],
    window: Mutex<Window>,
}

impl Default for CacheGovernor {
    /// The cache chosen (the user declared it), both ways explored at the
    /// highest rate until the first decision.
    fn default() -> CacheGovernor {
        CacheGovernor {
            use_cache: AtomicBool::new(true),
            rate: AtomicU32::new(MAX_RATE as u32),
            switches: AtomicU64::new(0),
            decisions: AtomicU64::new(0),
            last_ns: [AtomicU64::new(0), AtomicU64::new(0)],
            window: Mutex::new(Window::default()),
        }
    }
}

impl CacheGovernor {
    /// How the next lookup is answered (a draw from this thread's generator).
    pub fn choose(&self) -> Choice {
        self.choose_with(with_rng(|rng| rng.next_u64()))
    }

    /// How a lookup is answered for the random number `r`: the low 32 bits
    /// decide exploration, the high 32 the timing of a chosen lookup.
    pub fn choose_with(&self, r: u64) -> Choice {
        let explore = (r as u32) < self.rate.load(Ordering::Relaxed);
        Choice {
            way: if explore {
                self.chosen().other()
            } else {
                self.chosen()
            },
            timed: explore || (r >> 32).is_multiple_of(TIME_ONE_IN),
        }
    }

    /// Records a timed lookup of `way` that took `ns`; closes the window and
    /// decides when the way not chosen has [`SAMPLES`] of them.
    pub fn record(&self, way: Way, ns: u64) {
        let mut w = self.window.lock();
        w.sum[way.at()] = w.sum[way.at()].saturating_add(ns);
        w.n[way.at()] += 1;
        w.max[way.at()] = w.max[way.at()].max(ns);
        let chosen = self.chosen();
        let other = chosen.other();
        if w.n[other.at()] < SAMPLES || w.n[chosen.at()] < SAMPLES {
            return;
        }
        let mean = |x: Way| w.sum[x.at()] / u64::from(w.n[x.at()]).max(1);
        let (mut m_chosen, mut m_other) = (mean(chosen), mean(other));
        for x in [Way::Plain, Way::Cache] {
            self.last_ns[x.at()].store(mean(x), Ordering::Relaxed);
        }
        let mut favoured = 0;
        let mut explored = other;
        if m_other.saturating_mul(100) < m_chosen.saturating_mul(100 - MARGIN_PCT) {
            favoured = w.favoured + 1;
            if favoured >= SWITCH_AFTER {
                self.use_cache.store(other == Way::Cache, Ordering::Relaxed);
                self.switches.fetch_add(1, Ordering::Relaxed);
                std::mem::swap(&mut m_chosen, &mut m_other);
                explored = chosen;
                favoured = 0;
            }
        }
        let was = u64::from(self.rate.load(Ordering::Relaxed));
        let mut rate = explore_rate(m_chosen, m_other);
        // One sample more than half the way's time: it may be a thread
        // descheduled, not the way's cost.
        if w.max[explored.at()] > w.sum[explored.at()] / 2 {
            rate = rate.max(was / RATE_FALL);
        }
        self.rate.store(rate as u32, Ordering::Relaxed);
        self.decisions.fetch_add(1, Ordering::Relaxed);
        *w = Window {
            favoured,
            ..Window::default()
        };
    }

    fn chosen(&self) -> Way {
        if self.use_cache.load(Ordering::Relaxed) {
            Way::Cache
        } else {
            Way::Plain
        }
    }

    pub fn state(&self) -> GovernorState {
        let rate = u64::from(self.rate.load(Ordering::Relaxed)).max(1);
        GovernorState {
            chosen: self.chosen(),
            explore_one_in: ((1u64 << 32) + rate / 2) / rate,
            switches: self.switches.load(Ordering::Relaxed),
            decisions: self.decisions.load(Ordering::Relaxed),
            last_ns: [
                self.last_ns[0].load(Ordering::Relaxed),
                self.last_ns[1].load(Ordering::Relaxed),
            ],
        }
    }
}

/// Lookups per 2^32 to explore the way costing `other` ns while the chosen
/// one costs `chosen`: what exploring adds, rate × (other − chosen), held
/// at [`BUDGET_PCT`]% of `chosen`, within [1/2^16, 1/16].
fn explore_rate(chosen: u64, other: u64) -> u64 {
    let extra = other.saturating_sub(chosen);
    if extra == 0 {
        return MAX_RATE;
    }
    let rate =
        ((u128::from(chosen.max(1)) * u128::from(BUDGET_PCT)) << 32) / (100 * u128::from(extra));
    (rate.min(u128::from(MAX_RATE)) as u64).max(MIN_RATE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::cache::leaf::CacheRng;

    /// Feeds timed lookups as `choose_with` would route them: for each of
    /// `n` draws, the way it picks costs `cost(way)`.
    fn run(g: &CacheGovernor, n: u64, seed: u64, cost: impl Fn(Way) -> u64) -> [u64; 2] {
        let mut rng = CacheRng::new(seed);
        let mut taken = [0u64; 2];
        for _ in 0..n {
            let c = g.choose_with(rng.next_u64());
            taken[c.way.at()] += 1;
            if c.timed {
                g.record(c.way, cost(c.way));
            }
        }
        taken
    }

    #[test]
    fn a_cache_that_costs_more_is_set_aside_and_explored_at_most_one_in_16() {
        let g = CacheGovernor::default();
        // In-memory heap: a lookup through the cache costs 30% more.
        let taken = run(&g, 200_000, 1, |w| match w {
            Way::Cache => 1300,
            Way::Plain => 1000,
        });
        let s = g.state();
        assert_eq!(s.chosen, Way::Plain, "{s:?}");
        assert_eq!(s.switches, 1, "{s:?}");
        assert_eq!(s.last_ns, [1000, 1300]);
        // 0.3 extra per explored lookup against a 1% budget: 1 in 30.
        assert_eq!(s.explore_one_in, 30, "{s:?}");
        let share = taken[Way::Cache.at()] as f64 / 200_000.0;
        assert!(share < 0.05, "{share} {taken:?}");
    }

    #[test]
    fn a_cache_that_saves_device_reads_stays_and_the_plain_path_is_explored_rarely() {
        let g = CacheGovernor::default();
        // Heap on a device: the plain path costs 50x.
        let taken = run(&g, 2_000_000, 2, |w| match w {
            Way::Cache => 2_000,
            Way::Plain => 100_000,
        });
        let s = g.state();
        assert_eq!(s.chosen, Way::Cache, "{s:?}");
        assert_eq!(s.switches, 0, "{s:?}");
        // 49 extra per explored lookup against a 1% budget: 1 in 4900.
        assert_eq!(s.explore_one_in, 4900, "{s:?}");
        let price = taken[Way::Plain.at()] as f64 * 98_000.0 / (2_000_000.0 * 2_000.0);
        // The first window explores at 1 in 16 until it decides.
        assert!(
            price < 0.03,
            "exploring cost {price} of the lookups' time ({taken:?})"
        );
    }

    #[test]
    fn a_change_of_workload_turns_the_cache_back_on() {
        let g = CacheGovernor::default();
        run(&g, 100_000, 3, |w| match w {
            Way::Cache => 1300,
            Way::Plain => 1000,
        });
        assert_eq!(g.state().chosen, Way::Plain);
        // The heap leaves memory: now the cache saves device reads.
        run(&g, 100_000, 4, |w| match w {
            Way::Cache => 3_000,
            Way::Plain => 20_000,
        });
        let s = g.state();
        assert_eq!(s.chosen, Way::Cache, "{s:?}");
        assert_eq!(s.switches, 2, "{s:?}");
    }

    #[test]
    fn ways_within_the_margin_keep_the_choice() {
        let g = CacheGovernor::default();
        run(&g, 100_000, 5, |w| match w {
            Way::Cache => 1000,
            Way::Plain => 950,
        });
        let s = g.state();
        assert_eq!((s.chosen, s.switches), (Way::Cache, 0), "{s:?}");
        assert!(s.decisions > 10, "{s:?}");
        assert_eq!(s.explore_one_in, 16, "{s:?}");
    }

    #[test]
    fn one_descheduled_lookup_neither_switches_nor_stops_exploring() {
        for slow in [Way::Plain, Way::Cache] {
            let g = CacheGovernor::default();
            let normal = |w| match w {
                Way::Cache => 1000,
                Way::Plain => 1300,
            };
            run(&g, 50_000, 6, normal);
            assert_eq!(g.state().explore_one_in, 30);
            // One timed lookup of `slow` takes 20 ms.
            let hit = std::cell::Cell::new(false);
            run(&g, 50_000, 7, |w| {
                if w == slow && !hit.replace(true) {
                    20_000_000
                } else {
                    normal(w)
                }
            });
            assert!(hit.get());
            let s = g.state();
            assert_eq!((s.chosen, s.switches), (Way::Cache, 0), "{slow:?} {s:?}");
            // Back to the rate the normal samples give.
            assert_eq!(s.explore_one_in, 30, "{slow:?} {s:?}");
        }
    }

    #[test]
    fn a_way_dear_in_every_sample_is_explored_at_the_budget_rate_after_one_window() {
        let g = CacheGovernor::default();
        // The first window: 64 plain samples at 1 in 16.
        let mut rng = CacheRng::new(8);
        while g.state().decisions == 0 {
            let c = g.choose_with(rng.next_u64());
            if c.timed {
                g.record(
                    c.way,
                    match c.way {
                        Way::Cache => 2_000,
                        Way::Plain => 100_000,
                    },
                );
            }
        }
        assert_eq!(g.state().explore_one_in, 4900, "{:?}", g.state());
    }

    #[test]
    fn the_rate_stays_within_its_bounds() {
        assert_eq!(explore_rate(1000, 1000), MAX_RATE);
        assert_eq!(explore_rate(1000, 900), MAX_RATE);
        assert_eq!(explore_rate(1000, 1001), MAX_RATE);
        assert_eq!(explore_rate(1, u64::MAX), MIN_RATE);
        assert_eq!(explore_rate(u64::MAX, u64::MAX), MAX_RATE);
        // Twice the cost: one in 100 keeps the price at 1%, without overflow.
        assert_eq!(explore_rate(u64::MAX / 2, u64::MAX - 1), (1 << 32) / 100);
        assert_eq!(explore_rate(1000, 2000), (1 << 32) / 100);
    }
}
