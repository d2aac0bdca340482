//! `strata bench index-cache`: No Bits Left Behind §2.1's index cache, on the
//! leaves of a real B+-tree.
//!
//! **Fig. 2a**: hit rate against cache capacity (the share of the table's
//! items the leaves' free space can hold). A tree of `items` entries (BIGINT
//! keys, 25-byte cached values as in the paper's Wikipedia example) is bulk
//! built at the leaf fill that leaves the wanted capacity free; `lookups`
//! zipf-distributed lookups go through [`BTree::lookup_cached`], each miss
//! filling the cache ([`BTree::fill_cache`]) — the real store, S, buckets,
//! swaps and all. Popularity ranks are shuffled over the keys, so hot items
//! are spread over the leaves as hot tuples are. Each point is the hit rate
//! averaged over all the lookups (the paper's "average hit rate after 100k
//! lookups"). *Swap* is read-only; *Shrink* inserts new keys at a constant
//! rate, spread over the leaves, until half of the free space (so half of the
//! cache's slots) is gone by the end. The *oracle* is the best cache of the
//! same capacity over the same sequence: it knows every item's probability,
//! admits a missed item only if it is more popular than the least popular one
//! it holds (which it evicts), and is not split into leaves; *static oracle*
//! is its warm hit rate (the probability mass of the most popular items that
//! fit), without the first-access misses.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use strata_storage::btree::cache::leaf::{CacheLayout, CacheRng};
use strata_storage::btree::{BTree, Probe};
use strata_storage::buffer::BufferPool;
use strata_storage::device::{Device, FileDevice};
use strata_storage::row::{DataType, Tid, Value, encode_key};

use crate::nblb::cache_reference::{Reference, Rule};
use crate::report::plot::{Axis, Legend, Plot};
use crate::report::results::{ResultRow, ResultSet};
use crate::report::summary::{Summary, num, provenance};

pub const FIGURES: &[&str] = &["2a", "2c", "fill"];

/// Bytes of the cached fields (the paper's 4 fields of `page`, 25 bytes).
pub const VALUE_BYTES: usize = 25;

#[derive(Clone, Debug)]
pub struct Fig2aOptions {
    pub items: u64,
    pub lookups: u64,
    /// Target capacities, in percent of the items.
    pub capacities: Vec<f64>,
    /// Zipf exponents; 0 is the uniform workload.
    pub exponents: Vec<f64>,
    pub out: PathBuf,
    /// Scratch directory for the trees.
    pub tmp: PathBuf,
    pub seed: u64,
}

/// The index key of item `i` (an Int64 key), shared by the 2a/2b/2c figures.
pub(super) fn key(i: u64) -> Vec<u8> {
    let mut k = Vec::new();
    encode_key(&[DataType::Int64], &[Value::Int64(i as i64)], &mut k);
    k
}

fn uniform01(rng: &mut CacheRng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Zipf probabilities of ranks 1..=n (exponent 0: uniform), normalized.
fn zipf(n: usize, alpha: f64) -> Vec<f64> {
    let w: Vec<f64> = (1..=n).map(|r| (r as f64).powf(-alpha)).collect();
    let total: f64 = w.iter().sum();
    w.into_iter().map(|x| x / total).collect()
}

/// A workload over `n` items: the zipf probabilities of ranks 1..=n, their
/// running sums (to draw a rank), and the item of each rank (ranks shuffled
/// over the keys by Fisher–Yates, so hot items are spread over the leaves).
fn workload(n: usize, alpha: f64, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<u64>) {
    let probs = zipf(n, alpha);
    let mut acc = 0.0;
    let cdf: Vec<f64> = probs
        .iter()
        .map(|p| {
            acc += p;
            acc
        })
        .collect();
    let mut perm: Vec<u64> = (0..n as u64).collect();
    let mut rng = CacheRng::new(seed ^ alpha.to_bits());
    for i in (1..n).rev() {
        perm.swap(i, rng.below(i + 1));
    }
    (probs, cdf, perm)
}

/// One run's measurements.
struct Run {
    capacity_pct: f64,
    leaf_fill: f64,
    hit_rate: f64,
    late_hit_rate: f64,
    slots_start: u64,
    slots_end: u64,
    /// The references' hit rates (`cache_reference.rs`): global oracle and
    /// LFU, and the same split into the leaves.
    oracle: f64,
    lfu: f64,
    leaf_oracle: f64,
    leaf_lfu: f64,
    static_oracle: f64,
    wall_ms: f64,
    splits_inserts: u64,
    /// Leaves of the tree as built.
    leaves: u64,
    /// Fresh CSNs during the run (the layout's, and the predicate log's
    /// overflows).
    invalidations: u64,
    /// Whether the leaves stayed as built (no split), so the per-leaf
    /// references' rooms followed them.
    split_kept: bool,
}

/// The leaf fill that leaves about `cap` (a fraction of the items) of cache
/// slots: per leaf, entries take `f·U/(E+4)` and the free space holds
/// `(1−f)·U/item` items.
fn fill_for(cap: f64) -> f64 {
    let entry = 9.0 + 6.0 + 4.0; // BIGINT key, tid, slot pointer
    let item = (1 + 6 + VALUE_BYTES) as f64;
    (1.0 / (1.0 + cap * item / entry)).clamp(0.1, 1.0)
}

/// What happens besides the lookups of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Nothing (read-only).
    Swap,
    /// Inserts of new keys spread over the leaves take half of the free
    /// space by the end.
    Shrink,
    /// Every [`CHURN_EVERY`] lookups, a random key's entry is deleted and
    /// inserted again with a new tuple id (a row moved or updated out of
    /// place): deletes compact a leaf and log a predicate (§2.1.2).
    Churn,
}

/// Lookups per delete-and-insert of a churn run.
const CHURN_EVERY: u64 = 100;

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Swap => "swap",
            Mode::Shrink => "shrink",
            Mode::Churn => "churn",
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run_one(
    dir: &Path,
    items: u64,
    lookups: u64,
    leaf_fill: f64,
    probs: &[f64],
    cdf: &[f64],
    perm: &[u64],
    mode: Mode,
    seed: u64,
) -> Result<Run> {
    let path = dir.join(format!("fig2a-{}", seed));
    let _ = std::fs::remove_file(strata_storage::device::segment_path(&path, 0));
    let pool = Arc::new(BufferPool::new(
        Arc::new(FileDevice::new(false)) as Arc<dyn Device>,
        // Every page resident: Fig. 2a is about the cache, not the pool.
        ((items as usize * 40) / 4 + (64 << 20)).min(1 << 30),
    ));
    let tree = BTree::create(pool, &path, "fig2a", vec![DataType::Int64], 1 << 16)?;
    // Keys 2i; Shrink inserts odd keys between them.
    tree.bulk_build(
        (0..items).map(|i| (key(2 * i), Tid::new(i as u32, 0))),
        leaf_fill,
    )?;
    tree.set_cache_layout(Some(
        CacheLayout::new(VALUE_BYTES, 4).map_err(anyhow::Error::msg)?,
    ));
    let slots_start = tree.cache_stats()?.slots;
    // Inserts that take half of the free bytes: each takes about E+4 bytes.
    let free_bytes = slots_start as f64 * (1 + 6 + VALUE_BYTES) as f64;
    let inserts = match mode {
        Mode::Shrink => (free_bytes / 2.0 / 19.0) as u64,
        Mode::Churn => lookups / CHURN_EVERY,
        Mode::Swap => 0,
    };
    let leaves = tree.cache_stats()?.leaves;
    // Churn: each item's tuple id now (a moved row gets a new one).
    let mut tids: Vec<u32> = (0..items as u32).collect();
    let every = lookups.checked_div(inserts).unwrap_or(u64::MAX).max(1);
    let mut rng = CacheRng::new(seed ^ 0xF1A2);
    let value = [0x5Au8; VALUE_BYTES];
    let (mut hits, mut late_hits, mut done_inserts) = (0u64, 0u64, 0u64);
    // The references (`cache_reference.rs`): global, and split as the
    // leaves are built (item i is key 2i, the leaves hold consecutive keys).
    let cap = slots_start as usize;
    let per_leaf: Vec<(usize, usize)> = tree
        .leaf_capacities()?
        .iter()
        .map(|l| (l.entries, l.slots))
        .collect();
    let mut refs = [
        Reference::global(Rule::Oracle, items as usize, cap),
        Reference::global(Rule::Lfu, items as usize, cap),
        Reference::split(Rule::Oracle, &per_leaf),
        Reference::split(Rule::Lfu, &per_leaf),
    ];
    // Under Shrink the references lose slots as the leaves do: their rooms
    // follow the leaves' capacities, read every `resize_every` lookups.
    let resize_every = (lookups / 1000).max(1);
    let mut split_kept = true;
    let start = Instant::now();
    for n in 0..lookups {
        let u = uniform01(&mut rng);
        let rank = cdf.partition_point(|&c| c < u).min(cdf.len() - 1);
        let item = perm[rank];
        let mut hit = false;
        for e in tree.lookup_cached(&key(2 * item))? {
            match e.probe {
                Probe::Hit(_) => hit = true,
                Probe::Miss(ticket) => {
                    tree.fill_cache(&ticket, &value)?;
                }
            }
        }
        hits += hit as u64;
        if n >= lookups / 2 {
            late_hits += hit as u64;
        }
        for r in &mut refs {
            r.access(item as usize, rank);
        }
        if mode != Mode::Swap && (n + 1) % every == 0 && done_inserts < inserts {
            let j = rng.below(items as usize) as u64;
            let fresh = (items + done_inserts) as u32;
            if mode == Mode::Shrink {
                tree.insert(&key(2 * j + 1), Tid::new(fresh, 1))?;
            } else {
                let old = std::mem::replace(&mut tids[j as usize], fresh);
                tree.delete(&key(2 * j), Tid::new(old, 0))?;
                tree.insert(&key(2 * j), Tid::new(fresh, 0))?;
            }
            done_inserts += 1;
        }
        if mode == Mode::Shrink && (n + 1) % resize_every == 0 {
            let now = tree.leaf_capacities()?;
            let total = now.iter().map(|l| l.slots).sum::<usize>();
            refs[0].set_caps(&[total]);
            refs[1].set_caps(&[total]);
            // A split would move items between leaves: the split references
            // then keep the rooms they had (and the run says so).
            if now.len() == per_leaf.len() {
                let caps: Vec<usize> = now.iter().map(|l| l.slots).collect();
                refs[2].set_caps(&caps);
                refs[3].set_caps(&caps);
            } else {
                split_kept = false;
            }
        }
    }
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let slots_end = tree.cache_stats()?.slots;
    let tree_invalidations = tree.cache_counters().invalidations;
    let static_oracle: f64 = probs.iter().take(cap).sum();
    tree.close()?;
    let _ = std::fs::remove_file(strata_storage::device::segment_path(&path, 0));
    Ok(Run {
        capacity_pct: 100.0 * slots_start as f64 / items as f64,
        leaf_fill,
        hit_rate: hits as f64 / lookups as f64,
        late_hit_rate: late_hits as f64 / (lookups - lookups / 2) as f64,
        slots_start,
        slots_end,
        oracle: refs[0].hit_rate(),
        lfu: refs[1].hit_rate(),
        leaf_oracle: refs[2].hit_rate(),
        leaf_lfu: refs[3].hit_rate(),
        static_oracle,
        wall_ms,
        splits_inserts: done_inserts,
        leaves,
        invalidations: tree_invalidations,
        split_kept,
    })
}

fn workload_name(alpha: f64) -> String {
    if alpha == 0.0 {
        "uniform".into()
    } else {
        format!("zipf {alpha}")
    }
}

/// Runs Fig. 2a, writes `2a.csv`, one plot per workload and `2a.md`; returns
/// the summary's text.
pub fn run_fig2a(o: &Fig2aOptions, log: &mut dyn FnMut(&str)) -> Result<String> {
    std::fs::create_dir_all(&o.out)?;
    std::fs::create_dir_all(&o.tmp)?;
    let n = o.items as usize;
    let mut set = ResultSet::new();
    let mut seed = o.seed;
    for &alpha in &o.exponents {
        let (probs, cdf, perm) = workload(n, alpha, o.seed);
        for &cap in &o.capacities {
            let fill = fill_for(cap / 100.0);
            for m in [Mode::Swap, Mode::Shrink] {
                seed += 1;
                let r = run_one(
                    &o.tmp, o.items, o.lookups, fill, &probs, &cdf, &perm, m, seed,
                )?;
                let mode = m.name();
                log(&format!(
                    "2a {} {mode}: capacity {:.1}% (leaf fill {:.3}): hit rate {:.1}% (oracle {:.1}%, static {:.1}%), slots {} -> {}",
                    workload_name(alpha),
                    r.capacity_pct,
                    r.leaf_fill,
                    100.0 * r.hit_rate,
                    100.0 * r.oracle,
                    100.0 * r.static_oracle,
                    r.slots_start,
                    r.slots_end
                ));
                let row = ResultRow {
                    wall_ms: r.wall_ms,
                    rows_out: o.lookups,
                    ..ResultRow::new(
                        "2a",
                        "memory",
                        format!("{mode} {}", workload_name(alpha)),
                        r.capacity_pct,
                    )
                }
                .with("workload", workload_name(alpha))
                .with("mode", mode)
                .with("alpha", alpha)
                .with("target_capacity_pct", cap)
                .with("leaf_fill", format!("{:.4}", r.leaf_fill))
                .with("hit_rate_pct", format!("{:.3}", 100.0 * r.hit_rate))
                .with(
                    "late_hit_rate_pct",
                    format!("{:.3}", 100.0 * r.late_hit_rate),
                )
                .with("oracle_pct", format!("{:.3}", 100.0 * r.oracle))
                .with("lfu_pct", format!("{:.3}", 100.0 * r.lfu))
                .with("leaf_oracle_pct", format!("{:.3}", 100.0 * r.leaf_oracle))
                .with("leaf_lfu_pct", format!("{:.3}", 100.0 * r.leaf_lfu))
                .with(
                    "static_oracle_pct",
                    format!("{:.3}", 100.0 * r.static_oracle),
                )
                .with("slots_start", r.slots_start)
                .with("slots_end", r.slots_end)
                .with("inserts", r.splits_inserts)
                .with("leaves_as_built", r.split_kept);
                set.push(row);
            }
        }
    }
    set.write_csv(o.out.join("2a.csv"))?;
    let get = |r: &ResultRow, c: &str| r.extra_f64(c).unwrap_or(f64::NAN);
    let mut summary = Summary::new("Index caches: Fig. 2a (No Bits Left Behind §2.1)");
    summary.paragraph(&provenance());
    summary.paragraph(&format!(
        "A real B+-tree of {} BIGINT keys, 25-byte cached values (32-byte items), every page in the pool; {} lookups per point, hit rate averaged over all of them (first-access misses included). Capacity = the leaves' cache slots at the start as a percentage of the items, set by the bulk build's leaf fill. Swap: read-only. Shrink: inserts spread over the leaves take half of the free space by the end (the items in their way move to free slots while there are any, then are lost). Oracle: a global cache of the same capacity that knows the probabilities (admits a miss only over a less popular item), same sequence; static oracle: its warm hit rate. The second table of each workload adds an LFU cache (the most looked-up items so far) and both split into the leaves (`crates/bench/src/cache_reference.rs`).",
        o.items, o.lookups
    ));
    for &alpha in &o.exponents {
        let w = workload_name(alpha);
        let rows: Vec<&ResultRow> = set
            .rows()
            .iter()
            .filter(|r| r.get("workload") == w)
            .collect();
        let series = |mode: &str, col: &str| -> Vec<(f64, f64)> {
            let mut p: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.get("mode") == mode)
                .map(|r| (r.x, get(r, col)))
                .collect();
            p.sort_by(|a, b| a.0.total_cmp(&b.0));
            p
        };
        let stem = format!("2a-{}", w.replace(' ', "-"));
        Plot::lines(
            format!("Fig. 2a: hit rate vs cache capacity, {w}"),
            Axis::linear("cache capacity (% of items)"),
            Axis::linear("hit rate (%)"),
        )
        .series("Swap", series("swap", "hit_rate_pct"))
        .series("Shrink", series("shrink", "hit_rate_pct"))
        .series("Oracle (same capacity)", series("swap", "oracle_pct"))
        .series("Static oracle (warm)", series("swap", "static_oracle_pct"))
        .legend(Legend::Right)
        .write(o.out.join(&stem))?;
        summary.heading(&w);
        summary.image(&format!("Fig. 2a, {w}"), &format!("{stem}.svg"));
        let mut table = Vec::new();
        let swap = series("swap", "hit_rate_pct");
        // Another column of the Swap rows, in the same (capacity) order.
        let swap_col =
            |col: &str| -> Vec<f64> { series("swap", col).into_iter().map(|p| p.1).collect() };
        let (oracle, stat) = (swap_col("oracle_pct"), swap_col("static_oracle_pct"));
        for (i, (s, sh)) in swap
            .iter()
            .zip(series("shrink", "hit_rate_pct"))
            .enumerate()
        {
            let (or, st) = (oracle[i], stat[i]);
            // Shrink's capacity falls to about half by the end: Swap's hit
            // rate at its mean capacity is what the lost slots alone leave.
            let mean_cap = rows
                .iter()
                .find(|r| r.get("mode") == "shrink" && r.x == sh.0)
                .map_or(f64::NAN, |r| {
                    100.0 * (get(r, "slots_start") + get(r, "slots_end")) / 2.0 / o.items as f64
                });
            let swap_at_mean = interpolate(&swap, mean_cap);
            table.push(vec![
                format!("{:.1}", s.0),
                num(s.1),
                format!("{} (at {:.1}%)", num(sh.1), sh.0),
                format!("{:+.1}", sh.1 - s.1),
                format!("{} (at {:.1}%)", num(swap_at_mean), mean_cap),
                num(or),
                num(st),
            ]);
        }
        summary.table(
            &[
                "capacity %",
                "Swap %",
                "Shrink %",
                "Shrink − Swap (target ≥ −5)",
                "Swap at Shrink's mean capacity %",
                "oracle %",
                "static oracle %",
            ],
            &table,
        );
        // Swap's distance to the oracle, split (cache_reference.rs).
        let (lfu, leaf_oracle, leaf_lfu) = (
            swap_col("lfu_pct"),
            swap_col("leaf_oracle_pct"),
            swap_col("leaf_lfu_pct"),
        );
        let parts: Vec<Vec<String>> = swap
            .iter()
            .enumerate()
            .map(|(i, &(x, sw))| {
                let (or, lfu, lor, llfu) = (oracle[i], lfu[i], leaf_oracle[i], leaf_lfu[i]);
                vec![
                    format!("{x:.1}"),
                    num(or),
                    num(lfu),
                    num(lor),
                    num(llfu),
                    num(sw),
                    format!("{:+.1}", sw - or),
                    format!("{:+.1}", sw - llfu),
                ]
            })
            .collect();
        summary.paragraph(&format!(
            "Where Swap's distance to the oracle goes ({w}): the references of the same capacity on the same lookups, global and split into the leaves as built (each leaf's items compete for its own slots only); LFU knows only the lookups so far, the oracle the probabilities."
        ));
        summary.table(
            &[
                "capacity %",
                "oracle %",
                "LFU %",
                "per-leaf oracle %",
                "per-leaf LFU %",
                "Swap %",
                "Swap − oracle",
                "Swap − per-leaf LFU",
            ],
            &parts,
        );
        // Shrink's distance to Swap, against what the same lost slots cost
        // the references (their rooms followed the leaves').
        let shrink_col =
            |col: &str| -> Vec<f64> { series("shrink", col).into_iter().map(|p| p.1).collect() };
        let (sh, sh_or, sh_llfu) = (
            shrink_col("hit_rate_pct"),
            shrink_col("oracle_pct"),
            shrink_col("leaf_lfu_pct"),
        );
        let split_moved = rows
            .iter()
            .any(|r| r.get("mode") == "shrink" && r.get("leaves_as_built") == "false");
        let shrink_parts: Vec<Vec<String>> = swap
            .iter()
            .enumerate()
            .map(|(i, &(x, sw))| {
                vec![
                    format!("{x:.1}"),
                    num(sh[i]),
                    num(sh_or[i]),
                    num(sh_llfu[i]),
                    format!("{:+.1}", sh[i] - sw),
                    format!("{:+.1}", sh_or[i] - oracle[i]),
                    format!("{:+.1}", sh_llfu[i] - leaf_lfu[i]),
                    format!("{:+.1}", sh[i] - sh_llfu[i]),
                ]
            })
            .collect();
        summary.paragraph(&format!(
            "Where Shrink's distance to Swap goes ({w}): the references run again on Shrink's lookups with their rooms following the leaves' shrinking capacities (read every {} lookups); each drops its worst items when its room shrinks. What the lost slots cost even the oracle is out of reach of any cache on these leaves.{}",
            (o.lookups / 1000).max(1),
            if split_moved {
                " (A split moved items between leaves in some Shrink run: its per-leaf references kept the rooms they had from then on.)"
            } else {
                ""
            }
        ));
        summary.table(
            &[
                "capacity %",
                "Shrink %",
                "oracle, Shrink's slots %",
                "per-leaf LFU, Shrink's slots %",
                "Shrink − Swap",
                "oracle: shrinking − not",
                "per-leaf LFU: shrinking − not",
                "Shrink − per-leaf LFU (shrinking)",
            ],
            &shrink_parts,
        );
    }
    summary.paragraph("The paper (simulation, zipf α = .5): Swap > 90% at 25% capacity; Shrink about 5 points below Swap.");
    let text = summary.as_str().to_string();
    summary.write(o.out.join("2a.md"))?;
    Ok(text)
}

/// `points`' y at `x` by linear interpolation (sorted by x; clamped to the
/// ends; NaN when empty).
fn interpolate(points: &[(f64, f64)], x: f64) -> f64 {
    let i = points.partition_point(|p| p.0 < x);
    match (i.checked_sub(1).and_then(|j| points.get(j)), points.get(i)) {
        (Some(a), Some(b)) if b.0 > a.0 => a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0),
        (_, Some(b)) => b.1,
        (Some(a), None) => a.1,
        (None, None) => f64::NAN,
    }
}

/// The leaf-fill study's options: the same tree and workloads as Fig. 2a,
/// built at each of `fills`.
#[derive(Clone, Debug)]
pub struct FillOptions {
    pub items: u64,
    pub lookups: u64,
    pub fills: Vec<f64>,
    /// Zipf exponents; 0 is the uniform workload.
    pub exponents: Vec<f64>,
    pub out: PathBuf,
    pub tmp: PathBuf,
    pub seed: u64,
}

/// Which leaf fill an index with cached columns should be built at (§2.1's
/// trap: "the 90% default leaf fill shrinks the cache"): for each fill, the
/// leaves (what a range scan reads), the cache's capacity, and the hit rate
/// read-only (*Swap*) and under churn (a delete and an insert of the same
/// key with a new tuple id every 100 lookups: each delete compacts its leaf
/// and logs a predicate). Writes `fill.csv`, `fill.svg`, `fill.md`.
pub fn run_fill(o: &FillOptions, log: &mut dyn FnMut(&str)) -> Result<String> {
    std::fs::create_dir_all(&o.out)?;
    std::fs::create_dir_all(&o.tmp)?;
    let n = o.items as usize;
    let mut set = ResultSet::new();
    let mut seed = o.seed;
    for &alpha in &o.exponents {
        let (probs, cdf, perm) = workload(n, alpha, o.seed);
        for &fill in &o.fills {
            for m in [Mode::Swap, Mode::Churn] {
                seed += 1;
                let r = run_one(
                    &o.tmp, o.items, o.lookups, fill, &probs, &cdf, &perm, m, seed,
                )?;
                log(&format!(
                    "fill {} {}: leaf fill {fill}: {} leaves, capacity {:.1}%, hit rate {:.1}% (oracle {:.1}%), {} invalidations",
                    workload_name(alpha),
                    m.name(),
                    r.leaves,
                    r.capacity_pct,
                    100.0 * r.hit_rate,
                    100.0 * r.oracle,
                    r.invalidations
                ));
                set.push(
                    ResultRow {
                        wall_ms: r.wall_ms,
                        rows_out: o.lookups,
                        ..ResultRow::new(
                            "fill",
                            "memory",
                            format!("{} {}", m.name(), workload_name(alpha)),
                            fill,
                        )
                    }
                    .with("workload", workload_name(alpha))
                    .with("mode", m.name())
                    .with("alpha", alpha)
                    .with("leaf_fill", fill)
                    .with("leaves", r.leaves)
                    .with("capacity_pct", format!("{:.3}", r.capacity_pct))
                    .with("hit_rate_pct", format!("{:.3}", 100.0 * r.hit_rate))
                    .with("oracle_pct", format!("{:.3}", 100.0 * r.oracle))
                    .with("slots_end", r.slots_end)
                    .with("churned", r.splits_inserts)
                    .with("invalidations", r.invalidations),
                );
            }
        }
    }
    set.write_csv(o.out.join("fill.csv"))?;
    let get = |r: &ResultRow, c: &str| r.extra_f64(c).unwrap_or(f64::NAN);
    let mut plot = Plot::lines(
        "Index cache: hit rate vs the leaf fill it is built at",
        Axis::linear("leaf fill"),
        Axis::linear("hit rate (%)"),
    );
    let mut summary = Summary::new("Index caches: which leaf fill (No Bits Left Behind §2.1)");
    summary.paragraph(&provenance());
    summary.paragraph(&format!(
        "The tree of Fig. 2a ({} BIGINT keys, 25-byte cached values, every page in the pool) bulk built at each leaf fill; {} lookups per point. *Swap*: read-only. *Churn*: every {CHURN_EVERY} lookups a random key's entry is deleted and inserted again with a new tuple id (the delete compacts its leaf and logs a predicate on the old tuple id; past {} predicates the log is cleared by a fresh CSN, which empties every leaf's cache). Leaves = what a full range scan of the index reads.",
        o.items,
        o.lookups,
        strata_storage::btree::DEFAULT_LOG_THRESHOLD
    ));
    for &alpha in &o.exponents {
        let w = workload_name(alpha);
        let rows: Vec<&ResultRow> = set
            .rows()
            .iter()
            .filter(|r| r.get("workload") == w)
            .collect();
        let pick = |mode: &str, fill: f64| {
            rows.iter()
                .find(|r| r.get("mode") == mode && r.x == fill)
                .copied()
        };
        for mode in ["swap", "churn"] {
            plot = plot.series(
                format!("{mode}, {w}"),
                o.fills
                    .iter()
                    .filter_map(|&f| pick(mode, f).map(|r| (f, get(r, "hit_rate_pct"))))
                    .collect::<Vec<_>>(),
            );
        }
        summary.heading(&w);
        let mut table = Vec::new();
        for &f in &o.fills {
            if let (Some(sw), Some(ch)) = (pick("swap", f), pick("churn", f)) {
                table.push(vec![
                    format!("{f:.2}"),
                    sw.get("leaves").to_string(),
                    num(get(sw, "capacity_pct")),
                    num(get(sw, "hit_rate_pct")),
                    num(get(sw, "oracle_pct")),
                    num(get(ch, "hit_rate_pct")),
                    ch.get("invalidations").to_string(),
                ]);
            }
        }
        summary.table(
            &[
                "leaf fill",
                "leaves",
                "capacity %",
                "Swap hit %",
                "oracle %",
                "Churn hit %",
                "Churn invalidations",
            ],
            &table,
        );
    }
    plot.legend(Legend::Right).write(o.out.join("fill"))?;
    summary.image("hit rate vs leaf fill", "fill.svg");
    let text = summary.as_str().to_string();
    summary.write(o.out.join("fill.md"))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::interpolate;

    #[test]
    fn interpolation_is_linear_between_points_and_clamped_outside() {
        let p = [(10.0, 1.0), (20.0, 3.0), (40.0, 4.0)];
        assert_eq!(interpolate(&p, 15.0), 2.0);
        assert_eq!(interpolate(&p, 30.0), 3.5);
        assert_eq!(interpolate(&p, 20.0), 3.0);
        assert_eq!(interpolate(&p, 5.0), 1.0);
        assert_eq!(interpolate(&p, 50.0), 4.0);
        assert!(interpolate(&[], 1.0).is_nan());
    }
}
