//! `strata bench index-cache 2c`: No Bits Left Behind §2.1, **Fig. 2c** — what
//! a lookup costs with the index cache at 0% and 100% hits against none, all
//! in memory, and where the time of a hit and of a miss goes (see
//! [`run_fig2c`]).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use strata_storage::btree::Found;
use strata_storage::btree::cache::leaf::CacheRng;
use strata_storage::row::Value;

use super::index_cache::key;

use crate::report::plot::{Axis, Plot};
use crate::report::results::{ResultRow, ResultSet};
use crate::report::summary::{Summary, num, provenance};

/// Fig. 2c's options: a table of `items` rows in a pool that holds all of it
/// (100% buffer-pool hits), `lookups` random lookups per pass, `passes`
/// passes per variant (median reported).
#[derive(Clone, Debug)]
pub struct Fig2cOptions {
    pub items: u64,
    pub lookups: u64,
    pub passes: usize,
    pub out: PathBuf,
    pub tmp: PathBuf,
    pub seed: u64,
}

/// **Fig. 2c**: the cost of a lookup that projects the key and cached
/// columns, with a 100% buffer-pool hit rate: without a cache (the index
/// lookup, then the heap tuple), with a cache that never hits (every lookup
/// misses, reads the heap and fills), and with one that always hits (the
/// leaf answers). From these: the overhead at 0% hits, the break-even hit
/// rate `(miss − none)/(miss − hit)`, the speedup at 100% hits, and the
/// bound strata's costs allow (no-cache cost over the index lookup alone,
/// and over the index lookup plus the answer a hit returns). Three more
/// variants split a hit and a miss into their parts.
pub fn run_fig2c(o: &Fig2cOptions, log: &mut dyn FnMut(&str)) -> Result<String> {
    use strata_storage::db::CachedLookups;
    use strata_storage::row::Schema;
    use strata_storage::{Database, DbOptions, IndexSpec, TableOptions};
    std::fs::create_dir_all(&o.out)?;
    let dir = o.tmp.join("fig2c.db");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let db = Database::create(
        &dir,
        DbOptions {
            buffer_pool_bytes: 1 << 30,
            direct_io: false,
            ..DbOptions::default()
        },
    )?;
    // The paper's Wikipedia example: 4 fields, ~25 bytes.
    let schema = Schema::parse("id BIGINT, ns INT, len INT, touched INT, title VARCHAR(11)")?;
    let mut spec = IndexSpec::new("t_id", &["id"]).cache(&["ns", "len", "touched", "title"]);
    // Leaves with room for every item: 100% hits are possible.
    spec.leaf_fill = 0.35;
    let mut load = db.begin_create_load(
        "t",
        schema,
        TableOptions {
            fill_factor: 1.0,
            segment_pages: 1 << 16,
        },
        vec![spec],
    )?;
    for i in 0..o.items as i64 {
        load.append(&[
            Value::Int64(i),
            Value::Int32((i % 16) as i32),
            Value::Int32((i * 7 % 100_000) as i32),
            Value::Int32(i as i32),
            Value::Str(format!("t{:09}", i)),
        ])?;
    }
    load.commit(&strata_storage::db::NoProgress)?;
    db.prewarm("t")?;
    let t = db.table("t")?;
    let ix = t.index("t_id")?;
    let fields = ix.cached_fields().expect("declared above");
    let keys: Vec<Vec<u8>> = (0..o.items).map(key).collect();
    let mut rng = CacheRng::new(o.seed);
    let mut order: Vec<usize> = (0..o.items as usize).collect();
    let shuffle = |rng: &mut CacheRng, order: &mut Vec<usize>| {
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
    };
    let heap_values = |tid| t.cached_columns(&fields, tid);
    // The variants, in the order of a round. Every round runs each once on
    // its own shuffle of the keys (machines are shared: variants measured in
    // turn see the same background, and the medians compare like with like).
    // The 0%-hit pass invalidates and fills every key once, which leaves the
    // cache holding every item for the 100%-hit pass right after it.
    // The last three split a hit's and a miss's cost into their parts: a
    // hit's item found (and promoted) without decoding it, then misses on
    // leaves whose caches are valid (one key in SEED_EVERY filled first, so
    // every leaf has its directory), without and with the fill.
    // The last two are the governed lookup SQL uses by default
    // (`Table::lookup_cached_auto`): at 100% hits right after the split-miss
    // variants filled every item again, then at 0% hits.
    const VARIANTS: [&str; 11] = [
        "index descent only",
        "no cache (BTree::lookup)",
        "no cache (cache's descent, stale)",
        "cache, 0% hits",
        "cache, 100% hits",
        "hit, item found but not decoded",
        "miss on a valid cache, heap, no fill",
        "miss on a valid cache, heap, fill",
        "auto, 100% hits",
        "auto, 0% hits",
        "no cache (Table::lookup_plain)",
    ];
    const SEED_EVERY: usize = 64;
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS.len()];
    let mut counts = [CachedLookups::default(); VARIANTS.len()];
    for round in 0..o.passes.max(1) {
        for (v, name) in VARIANTS.iter().enumerate() {
            shuffle(&mut rng, &mut order);
            // The 0%-hit passes look each key up once, however few lookups
            // the other passes make: the 100%-hit pass needs every item.
            let ks: Vec<usize> = match v {
                3 | 9 => order.clone(),
                6 | 7 => order
                    .iter()
                    .copied()
                    .filter(|k| k % SEED_EVERY != 0)
                    .collect(),
                _ => order
                    .iter()
                    .cycle()
                    .take(o.lookups as usize)
                    .copied()
                    .collect(),
            };
            let mut c = CachedLookups::default();
            if matches!(v, 0 | 2 | 3 | 6 | 7 | 9) {
                ix.btree.invalidate_cache();
            }
            if matches!(v, 6 | 7) {
                let mut seeded = CachedLookups::default();
                for k in (0..o.items as usize).step_by(SEED_EVERY) {
                    t.lookup_cached(ix, &keys[k], &mut seeded)?;
                }
            }
            let start = Instant::now();
            for &k in &ks {
                match v {
                    // The index alone, through the cache's descent with the
                    // cache stale: the cost no hit can go below.
                    0 => {
                        std::hint::black_box(ix.btree.lookup_cached(&keys[k])?);
                    }
                    1 => {
                        for tid in ix.btree.lookup(&keys[k])? {
                            std::hint::black_box(heap_values(tid)?);
                        }
                    }
                    // The same descent as the cache's lookups, with the cache
                    // stale (no slot is read, nothing filled), then the heap
                    // tuple: strata's lookup without a cache, through the
                    // code the cache uses.
                    2 | 6 => {
                        for e in ix.btree.lookup_cached(&keys[k])? {
                            std::hint::black_box(heap_values(e.tid)?);
                        }
                    }
                    5 => {
                        ix.btree.lookup_cached_with(&keys[k], |tid, found| {
                            std::hint::black_box((tid, matches!(found, Found::Hit(_))));
                        })?;
                    }
                    10 => {
                        std::hint::black_box(t.lookup_plain(ix, &keys[k], &mut c)?);
                    }
                    8 | 9 => {
                        std::hint::black_box(t.lookup_cached_auto(ix, &keys[k], &mut c)?);
                    }
                    _ => {
                        std::hint::black_box(t.lookup_cached(ix, &keys[k], &mut c)?);
                    }
                }
            }
            ns[v].push(start.elapsed().as_nanos() as f64 / ks.len() as f64);
            counts[v] = c;
            log(&format!(
                "2c round {round} {name}: {:.0} ns/lookup ({c:?})",
                ns[v].last().unwrap()
            ));
        }
    }
    let med = |v: usize| crate::report::results::median(&ns[v]).unwrap_or(f64::NAN);
    let (index_only, none_lookup, off, miss, hit) = (med(0), med(1), med(2), med(3), med(4));
    let (hit_found, valid_miss, valid_fill) = (med(5), med(6), med(7));
    let (auto_hit, auto_miss, plain_api) = (med(8), med(9), med(10));
    let (miss_counts, hit_counts) = (counts[3], counts[4]);
    if hit_counts.misses > 0
        || counts[8].misses > 0
        || miss_counts.hits > 0
        || counts[7].hits > 0
        || counts[9].hits > 0
    {
        anyhow::bail!(
            "2c: the 100% passes missed {} and {} times and the 0% passes hit {}, {} and {} times (the cache could not hold every item)",
            hit_counts.misses,
            counts[8].misses,
            miss_counts.hits,
            counts[7].hits,
            counts[9].hits
        );
    }
    let governor = ix.governor.state();
    // The baseline: the cheaper of the two ways strata looks up without a
    // cache.
    let none = none_lookup.min(off);
    let overhead = miss / none - 1.0;
    let break_even = (miss - none) / (miss - hit);
    let speedup = none / hit;
    let bound = none / index_only;
    // A hit still returns the values: the bound once that is paid too.
    let answer = hit - hit_found;
    let bound_answered = none / (index_only + answer);
    let auto_overhead = auto_miss / none - 1.0;
    let governor_overhead = auto_miss / plain_api - 1.0;
    let auto_speedup = none / auto_hit;
    // The same overheads paired within each round (variants a few seconds
    // apart see the same background; the machine drifts by more than the
    // governor's cost between rounds), then the median of the rounds'.
    let paired = |v: usize, base: &dyn Fn(usize) -> f64| {
        let r: Vec<f64> = (0..ns[v].len()).map(|i| ns[v][i] / base(i) - 1.0).collect();
        crate::report::results::median(&r).unwrap_or(f64::NAN)
    };
    let none_in = |i: usize| ns[1][i].min(ns[2][i]);
    let overhead_paired = paired(3, &none_in);
    let auto_overhead_paired = paired(9, &none_in);
    let governor_overhead_paired = paired(9, &|i| ns[10][i]);
    let mut set = ResultSet::new();
    for (i, (name, ns, c)) in [
        ("index descent only", index_only, CachedLookups::default()),
        (
            "no cache (BTree::lookup)",
            none_lookup,
            CachedLookups::default(),
        ),
        (
            "no cache (cache's descent, stale)",
            off,
            CachedLookups::default(),
        ),
        ("cache, 0% hits", miss, miss_counts),
        ("cache, 100% hits", hit, hit_counts),
        (VARIANTS[5], hit_found, CachedLookups::default()),
        (VARIANTS[6], valid_miss, CachedLookups::default()),
        (VARIANTS[7], valid_fill, counts[7]),
        (VARIANTS[8], auto_hit, counts[8]),
        (VARIANTS[9], auto_miss, counts[9]),
        (VARIANTS[10], plain_api, counts[10]),
    ]
    .into_iter()
    .enumerate()
    {
        set.push(
            ResultRow {
                rows_out: o.lookups,
                ..ResultRow::new("2c", "memory", name, i as f64)
            }
            .with("ns_per_lookup", format!("{ns:.1}"))
            .with("cache_hits", c.hits)
            .with("cache_misses", c.misses)
            .with("cache_fills", c.fills)
            .with("entries_without_cache", c.plain),
        );
    }
    set.write_csv(o.out.join("2c.csv"))?;
    Plot::bars(
        "Fig. 2c: lookup cost with a 100% buffer-pool hit rate",
        "",
        [
            "index descent only",
            "no cache (lookup)",
            "no cache (descent)",
            "cache 0% hits",
            "cache 100% hits",
            "auto 0% hits",
            "auto 100% hits",
        ],
        Axis::linear("ns per lookup"),
    )
    .bar_series(
        "strata",
        [index_only, none_lookup, off, miss, hit, auto_miss, auto_hit],
    )
    .write(o.out.join("2c"))?;
    let mut s = Summary::new("Index caches: Fig. 2c (No Bits Left Behind §2.1)");
    s.paragraph(&provenance());
    s.paragraph(&format!(
        "{} rows `(id BIGINT, ns INT, len INT, touched INT, title VARCHAR(11))`, index on id caching the 4 other columns (25-byte values: 3 INTs and the VARCHAR at its declared maximum with its 2-byte length), leaves built 35% full so every item fits, the whole table and index in the pool (100% buffer-pool hits). {} random lookups per pass, median of {} rounds, each running every variant once in turn (the 0%-hit pass fills every item, so the 100%-hit pass follows it), one thread. *No cache*: `BTree::lookup` (a range over one key) then the heap tuple, decoding the 4 columns; and the cache's own descent (`lookup_cached` on a stale cache: no slot read, no fill) then the heap tuple — the cheaper of the two is the baseline. *0% hits*: `Table::lookup_cached` after an invalidation, each key once (every lookup misses, reads the heap and fills). *100% hits*: the same after every item was filled. *Index descent only*: `lookup_cached` on a stale cache without the heap, the cost a hit cannot go below.",
        o.items, o.lookups, o.passes
    ));
    s.image("Fig. 2c", "2c.svg");
    s.table(
        &["variant", "ns / lookup"],
        [
            vec!["index descent only (no heap)".to_string(), num(index_only)],
            vec![
                "no cache (BTree::lookup + heap)".to_string(),
                num(none_lookup),
            ],
            vec![
                "no cache (the cache's descent, stale, + heap)".to_string(),
                num(off),
            ],
            vec!["cache, 0% hits".to_string(), num(miss)],
            vec!["cache, 100% hits".to_string(), num(hit)],
            vec![VARIANTS[5].to_string(), num(hit_found)],
            vec![VARIANTS[6].to_string(), num(valid_miss)],
            vec![VARIANTS[7].to_string(), num(valid_fill)],
            vec![VARIANTS[8].to_string(), num(auto_hit)],
            vec![VARIANTS[9].to_string(), num(auto_miss)],
            vec![VARIANTS[10].to_string(), num(plain_api)],
        ],
    );
    let share =
        |c: &CachedLookups| 100.0 * c.plain as f64 / (c.hits + c.misses + c.plain).max(1) as f64;
    s.paragraph(&format!(
        "*Auto* is the lookup SQL makes by default (`strata.index_cache = auto`, `Table::lookup_cached_auto`): each index's governor (`cache_governor.rs`) answers a lookup through the cache, or by `BTree::lookup` and the heap tuple, whichever its timed samples of both found cheaper, exploring the other way at a rate that keeps the exploring's price near 1% of the lookups' time. In the last round it answered {:.1}% of the 100%-hit pass's entries and {:.1}% of the 0%-hit pass's without the cache; at the end it had chosen the {} way after {} decisions and {} switches (last window: {} ns per lookup without the cache, {} through it).",
        share(&counts[8]),
        share(&counts[9]),
        match governor.chosen {
            strata_storage::btree::cache::governor::Way::Cache => "cache",
            strata_storage::btree::cache::governor::Way::Plain => "plain",
        },
        governor.decisions,
        governor.switches,
        governor.last_ns[0],
        governor.last_ns[1],
    ));
    s.paragraph(
        "`Table::lookup_plain` is auto's way around the cache on its own: the same answer as `Table::lookup_cached` (a vector of each entry's values) from `BTree::lookup` and the heap. Against it, auto's overhead at 0% hits is the governor's (a random draw per lookup, clock reads and a lock for one in 16) and its exploring; against `BTree::lookup + heap`, which only decodes each tuple's values, it is also the answer's vectors and the read lock on the index's cached columns.",
    );
    s.paragraph(&format!(
        "Where the time goes, from the medians above (differences of two variants; each part is what one step adds to a lookup). The last two variants fill one key in {SEED_EVERY} first, so the leaves' caches are valid and have their directories, then look up each other key once: the cost of a miss's probe and of its fill apart from the first fill's reset of a leaf."
    ));
    s.table(
        &["part", "ns / lookup", "from"],
        [
            vec![
                "the descent to the leaf entry".to_string(),
                num(index_only),
                "index descent only".to_string(),
            ],
            vec![
                "no cache: the heap tuple, decoded".to_string(),
                num(off - index_only),
                "no cache (descent, stale) − descent".to_string(),
            ],
            vec![
                "hit: the item found and promoted".to_string(),
                num(hit_found - index_only),
                "hit not decoded − descent".to_string(),
            ],
            vec![
                "hit: the values returned (decoded, the row's vectors)".to_string(),
                num(answer),
                "100% hits − hit not decoded".to_string(),
            ],
            vec![
                "miss: the probe of a valid cache".to_string(),
                num(valid_miss - off),
                "miss, no fill − no cache (descent, stale)".to_string(),
            ],
            vec![
                "miss: the fill (encode, second latch, write)".to_string(),
                num(valid_fill - valid_miss),
                "miss, fill − miss, no fill".to_string(),
            ],
        ],
    );
    s.comparisons(&[
        crate::report::summary::Comparison::new(
            "overhead at 0% hits (µs)",
            (miss - none) / 1000.0,
            0.3,
        )
        .note("paper: 0.3 µs"),
        crate::report::summary::Comparison::new("overhead at 0% hits (%)", 100.0 * overhead, 5.0)
            .note("the issue's target: ≤ 5%"),
        crate::report::summary::Comparison::new(
            "break-even hit rate (%)",
            100.0 * break_even,
            35.0,
        )
        .note("paper: 35%"),
        crate::report::summary::Comparison::new("speedup at 100% hits", speedup, 2.7)
            .note("paper: 2.7x, simulated with arrays"),
        crate::report::summary::Comparison::new("bound: no cache / index descent only", bound, 2.7)
            .note("the most a hit can save with strata's costs"),
        crate::report::summary::Comparison::new(
            "bound: no cache / (descent + values returned)",
            bound_answered,
            2.7,
        )
        .note("the same, paying for the answer a hit still returns"),
        crate::report::summary::Comparison::new(
            "auto: overhead at 0% hits (%)",
            100.0 * auto_overhead,
            5.0,
        )
        .note("the issue's target: ≤ 5%"),
        crate::report::summary::Comparison::new(
            "auto: overhead at 0% hits over Table::lookup_plain (%)",
            100.0 * governor_overhead,
            5.0,
        )
        .note("the governor and its exploring, over the same answer without a cache"),
        crate::report::summary::Comparison::new("auto: speedup at 100% hits", auto_speedup, 2.7)
            .note("the governor takes the cache only where it pays"),
        crate::report::summary::Comparison::new(
            "overhead at 0% hits, paired by round (%)",
            100.0 * overhead_paired,
            5.0,
        )
        .note("the median of each round's own overhead; the issue's target: ≤ 5%"),
        crate::report::summary::Comparison::new(
            "auto: overhead at 0% hits, paired by round (%)",
            100.0 * auto_overhead_paired,
            5.0,
        )
        .note("the median of each round's own overhead; the issue's target: ≤ 5%"),
        crate::report::summary::Comparison::new(
            "auto: overhead over Table::lookup_plain, paired by round (%)",
            100.0 * governor_overhead_paired,
            5.0,
        )
        .note("the median of each round's own overhead"),
    ]);
    let text = s.as_str().to_string();
    s.write(o.out.join("2c.md"))?;
    drop(t);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::{Fig2cOptions, run_fig2c};

    /// The 0%-hit pass fills every item even when the other passes make
    /// fewer lookups than there are items, so the 100%-hit pass that follows
    /// hits every time (the run fails if it misses once).
    #[test]
    fn fig2c_with_fewer_lookups_than_items_still_fills_every_item() {
        let dir = tempfile::tempdir().unwrap();
        let o = Fig2cOptions {
            items: 3000,
            lookups: 200,
            passes: 1,
            out: dir.path().join("out"),
            tmp: dir.path().join("tmp"),
            seed: 7,
        };
        let text = run_fig2c(&o, &mut |_| {}).unwrap();
        assert!(text.contains("| cache, 100% hits |"), "{text}");
        assert!(o.out.join("2c.csv").exists());
    }
}
