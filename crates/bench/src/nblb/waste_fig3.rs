//! `strata bench waste fig3`: No Bits Left Behind §3.1, **Fig. 3** — the cost
//! of a lookup in Wikipedia's `revision` table with 0%, 54% and 100% of the hot
//! tuples clustered, and with a hot partition.
//!
//! The table is `strata gen revision` (`strata_load::gen`): revisions in time
//! order, each page's latest revision — about 5% of the rows — scattered
//! across the heap; an index on `rev_id`. The hot tuples are what the data
//! shows, not what the generator says: a scan finds each page's latest
//! revision (the largest `rev_id` of its `rev_page`).
//!
//! **Workload.** A lookup of one `rev_id` (the index, then the heap tuple,
//! decoded whole) takes a latest revision with probability `hot_pct` (99%),
//! drawn by a zipf law (exponent `alpha`) over the latest revisions in a
//! random order, else any revision, uniformly.
//!
//! **States** (each a copy of the generated database):
//! - `0%`: as generated;
//! - `54%` and `100%`: a *training* run of the workload (another seed) with
//!   the table's sampled access counts on (one access in 4 counted, the
//!   default), then `Database::cluster_hot` with `share` 0.54 or 1 — what
//!   `strata cluster revision --hot [--share 0.54]` does: the tuples counted at
//!   least twice, most counted first, deleted and appended at the end;
//! - `partition`: the same with `--partition revision_rev_id`, so lookups
//!   try the hot tuples' own small index first;
//! - `id 0%`, `id 54%`, `id 100%` (`--ids semantic`): rev_id a semantic id
//!   (§4.2: the index dropped, the id the tuple's address), then the same
//!   training and clustering. A move gives the tuple a new id, so the
//!   workload looks each revision up by its id now (found through
//!   `rev_text_id`, the first rev_id), as updated pointers to it would.
//!
//! **Measure.** Per round, per device, per state: the state's database opened
//! read-only with an empty pool of `pool_pct` of the full index's pages
//! (the paper's setting: smaller than the full index, larger than the hot
//! partition with its tuples' heap pages — about 54% of the full index here,
//! so the defaults are 60, 75 and 90%; a row below that range says so), `warmup` lookups to
//! reach the steady state, then `lookups` timed ones. Real: direct I/O, wall
//! time. Modeled (hdd, ssd): wall time plus the profile's modeled device time.
//! Cost per lookup is the median over rounds; the ratios are of medians
//! measured in the same rounds. Every lookup's answer is checked (one row,
//! its `rev_id` the key).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Result, ensure};
use strata_storage::btree::cache::leaf::CacheRng;
use strata_storage::maintenance::cluster::ClusterReport;
use strata_storage::page::PAGE_SIZE;

use super::waste_states::{
    Finder, ID_STATES, INDEX, STATES, TABLE, Truth, Workload, addresses, key, lookup, make_state,
    open, open_on, prepare, state_dir, truth,
};
use crate::report::plot::{Axis, Legend, Plot};
use crate::report::results::{ResultRow, ResultSet, median};
use crate::report::summary::{Comparison, Summary, num, provenance};

#[derive(Clone, Debug)]
pub struct Fig3Options {
    /// Table sizes (rows).
    pub rows: Vec<u64>,
    /// `real` (direct I/O), `hdd`, `ssd` (modeled).
    pub devices: Vec<String>,
    /// Timed lookups per point, and lookups before them.
    pub lookups: u64,
    pub warmup: u64,
    /// Training lookups per hot tuple (the access counts clustering reads).
    pub train_per_hot: u64,
    /// Zipf exponent over the latest revisions.
    pub alpha: f64,
    /// Share of lookups that take a latest revision (%).
    pub hot_pct: f64,
    /// Pool sizes, in % of the full index's pages.
    pub pool_pcts: Vec<f64>,
    pub rounds: usize,
    /// How a lookup finds a revision: `stored` (rev_id stored, the index on
    /// it), `semantic` (rev_id a semantic id, the tuple's address, which a
    /// move changes).
    pub ids: Vec<String>,
    /// Where the generated table and the states' copies live.
    pub work_dir: PathBuf,
    pub out: PathBuf,
    pub seed: u64,
}

impl Fig3Options {
    pub fn new(work_dir: PathBuf, out: PathBuf) -> Fig3Options {
        Fig3Options {
            rows: vec![1_000_000],
            devices: vec!["real".into(), "ssd".into(), "hdd".into()],
            lookups: 20_000,
            warmup: 40_000,
            train_per_hot: 64,
            alpha: 0.5,
            hot_pct: 99.0,
            pool_pcts: vec![60.0, 75.0, 90.0],
            rounds: 3,
            ids: vec!["stored".into(), "semantic".into()],
            work_dir,
            out,
            seed: 3,
        }
    }

    pub fn check(&self) -> Result<()> {
        ensure!(!self.rows.is_empty(), "fig3: no table size");
        for &r in &self.rows {
            ensure!(
                (10_000..=i32::MAX as u64).contains(&r),
                "fig3: --rows must be from 10000 to 2^31 − 1 (got {r})"
            );
        }
        ensure!(!self.devices.is_empty(), "fig3: no device");
        for d in &self.devices {
            ensure!(
                ["real", "hdd", "ssd"].contains(&d.as_str()),
                "fig3: unknown device '{d}' (real, hdd, ssd)"
            );
        }
        ensure!(!self.ids.is_empty(), "fig3: no --ids");
        for i in &self.ids {
            ensure!(
                ["stored", "semantic"].contains(&i.as_str()),
                "fig3: unknown --ids '{i}' (stored, semantic)"
            );
        }
        ensure!(
            self.lookups > 0 && self.rounds > 0 && self.train_per_hot > 0,
            "fig3: --lookups, --rounds and --train-per-hot must be positive"
        );
        ensure!(
            (0.0..=100.0).contains(&self.hot_pct) && (0.0..=4.0).contains(&self.alpha),
            "fig3: --hot-pct is a percentage and --alpha in 0..=4"
        );
        ensure!(
            !self.pool_pcts.is_empty() && self.pool_pcts.iter().all(|p| *p > 0.0 && *p <= 1000.0),
            "fig3: --pool-pct values must be in (0, 1000]"
        );
        Ok(())
    }
}

/// States whose reads [`pool_bound`] works out: a lookup reads one leaf of
/// the full index and one heap page (the partition state also reads its own
/// small index first).
const BOUND_STATES: [&str; 3] = ["0%", "54%", "100%"];

/// The fewest device reads per lookup that any buffer pool of each of
/// `frames` pages can expect in the stored state `dir` under the workload,
/// by not knowing the future: with independent lookups a page is wanted
/// with a fixed probability (the sum of its keys' lookup probabilities),
/// and the best a pool can do is hold the most wanted pages (A0, optimal
/// under the independent reference model). The index's inner pages, wanted
/// by far more lookups than any leaf, take their frames first; every lookup
/// wants one leaf and one heap page, so the reads are 2 less the held
/// pages' probabilities. No replacement policy (or clustering of a share)
/// gains more than this on these pages, so it bounds what the paper's
/// speedups can reach where the reads dominate the cost.
fn pool_bound(dir: &Path, wl: &Workload, frames: &[u64]) -> Result<Vec<f64>> {
    let db = open(dir, 32 << 20, true)?;
    let t = db.table(TABLE)?;
    let tree = &t.index(INDEX)?.btree;
    let share = wl.hot_pct / 100.0;
    let mut hot = std::collections::HashMap::with_capacity(wl.perm.len());
    let mut below = 0.0;
    for (rank, &id) in wl.perm.iter().enumerate() {
        hot.insert(key(id), share * (wl.cdf[rank] - below));
        below = wl.cdf[rank];
    }
    let cold = (1.0 - share) / wl.rows as f64;
    let mut wanted = Vec::new();
    let mut heap: std::collections::HashMap<u32, f64> = std::collections::HashMap::new();
    for leaf in tree.leaves()? {
        let (_, entries) = leaf?;
        let mut p_leaf = 0.0;
        for (k, tid) in entries {
            let p = cold + hot.get(&k).copied().unwrap_or(0.0);
            p_leaf += p;
            *heap.entry(tid.page).or_default() += p;
        }
        wanted.push(p_leaf);
    }
    let inner = tree.num_pages().saturating_sub(wanted.len() as u64);
    wanted.extend(heap.into_values());
    wanted.sort_by(|a, b| b.total_cmp(a));
    let total: f64 = wanted.iter().sum();
    ensure!(
        (total - 2.0).abs() < 1e-6,
        "fig3: the lookups of {} want {total} pages each, not 2 (an entry missing or there twice)",
        dir.display()
    );
    Ok(frames
        .iter()
        .map(|&f| {
            total
                - wanted
                    .iter()
                    .take(f.saturating_sub(inner) as usize)
                    .sum::<f64>()
        })
        .collect())
}

/// One measured run.
#[derive(Clone, Debug)]
pub struct Point {
    pub rows: u64,
    /// The pool, % of the full index's pages.
    pub pool_pct: f64,
    pub device: String,
    pub state: String,
    pub round: usize,
    pub lookups: u64,
    pub wall_s: f64,
    pub modeled_s: f64,
    pub device_reads: u64,
    pub pool_misses: u64,
}

impl Point {
    pub fn seconds(&self) -> f64 {
        self.wall_s + self.modeled_s
    }
    /// Cost per lookup, µs.
    pub fn cost_us(&self) -> f64 {
        self.seconds() * 1e6 / self.lookups as f64
    }
    pub fn reads_per_lookup(&self) -> f64 {
        self.device_reads as f64 / self.lookups as f64
    }
}

/// One point: the copy `dir` opened read-only with an empty pool of
/// `frames`, the warm-up lookups, then the timed ones (`at`: the copy's
/// semantic ids, else lookups take the index).
fn measure(
    dir: &Path,
    device: &str,
    frames: u64,
    keys: &(Vec<i64>, Vec<i64>),
    at: Option<&[i64]>,
) -> Result<(f64, f64, u64, u64)> {
    let db = open_on(dir, frames, device)?;
    let t = db.table(TABLE)?;
    let finder = Finder::of(&t, at)?;
    for &id in &keys.0 {
        finder.find(&t, id)?;
    }
    let (pool0, dev0) = (db.pool().counters(), db.device().stats().snapshot());
    let start = Instant::now();
    for &id in &keys.1 {
        finder.find(&t, id)?;
    }
    let wall = start.elapsed().as_secs_f64();
    let (pool1, dev1) = (db.pool().counters(), db.device().stats().snapshot());
    let dev = dev1 - dev0;
    Ok((
        wall,
        dev.modeled_ns as f64 / 1e9,
        dev.pages_read,
        pool1.misses - pool0.misses,
    ))
}

/// One size: the states, then the rounds.
struct SizeRun {
    rows: u64,
    truth: Truth,
    /// The states measured, in order.
    states: Vec<&'static str>,
    reports: BTreeMap<String, ClusterReport>,
    /// Of the latest revisions, those the clustering found hot (in the hot
    /// region of `100%`, and of `id 100%`).
    recall: f64,
    id_recall: f64,
    /// Heap pages with rev_id a semantic id.
    id_heap_pages: u64,
    /// [`pool_bound`] of each of [`BOUND_STATES`] measured, per pool (%).
    bound: BTreeMap<(&'static str, u64), f64>,
    points: Vec<Point>,
}

fn run_size(o: &Fig3Options, rows: u64, log: &mut dyn FnMut(&str)) -> Result<SizeRun> {
    let root = o.work_dir.join(format!("fig3-{rows}"));
    let base = root.join("base");
    prepare(&base, rows, log)?;
    let truth = truth(&base)?;
    log(&format!(
        "fig3 {rows}: heap {} pages, index {} pages, {} latest revisions ({:.2}% of rows) on {} heap pages ({:.1}% of them)",
        truth.heap_pages,
        truth.index_pages,
        truth.latest.len(),
        100.0 * truth.latest.len() as f64 / rows as f64,
        truth.latest_pages,
        100.0 * truth.latest_pages as f64 / truth.heap_pages as f64
    ));
    let wl = Workload::new(&truth, o.alpha, o.hot_pct, o.seed);
    let train = o.train_per_hot * truth.latest.len() as u64;
    let mut states: Vec<&'static str> = Vec::new();
    if o.ids.iter().any(|i| i == "stored") {
        states.extend(STATES);
    }
    if o.ids.iter().any(|i| i == "semantic") {
        states.extend(ID_STATES);
    }
    let mut reports = BTreeMap::new();
    // The semantic ids of each semantic-id state, and the heap's pages
    // without the stored id.
    let mut at: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    let mut id_heap_pages = 0;
    for &state in &states {
        let dir = root.join(state_dir(state));
        let at0 = at.get("id 0%").map(|v| &v[..]);
        if let Some(rep) = make_state(o.seed, &base, &dir, state, &wl, train, at0)? {
            log(&format!(
                "fig3 {rows} {state}: {} hot chosen of {} counted, {} moved in; hot tuples on {} pages, were on {}; partition {} entries in {} pages (full index {} pages)",
                rep.hot,
                rep.tracked,
                rep.moved_in,
                rep.hot_pages_after,
                rep.hot_pages_before,
                rep.partition_entries,
                rep.partition_pages,
                rep.full_index_pages
            ));
            reports.insert(state.to_string(), rep);
        }
        if ID_STATES.contains(&state) {
            let (ids, pages) = addresses(&dir, rows)?;
            at.insert(state, ids);
            if state == "id 0%" {
                id_heap_pages = pages;
            }
        }
    }
    // Recall of the tracker: latest revisions in the hot region of `100%`.
    let recall = match reports.get("100%") {
        None => f64::NAN,
        Some(rep) => {
            let db = open(&root.join(state_dir("100%")), 64 << 20, true)?;
            let t = db.table(TABLE)?;
            let ix = t.index(INDEX)?;
            let mut n = 0u64;
            for &id in &truth.latest {
                if ix
                    .btree
                    .lookup(&key(id))?
                    .iter()
                    .any(|t| t.page as u64 >= rep.region_start)
                {
                    n += 1;
                }
            }
            n as f64 / truth.latest.len() as f64
        }
    };
    let id_recall = match (reports.get("id 100%"), at.get("id 100%")) {
        (Some(rep), Some(at)) => {
            let first = (rep.region_start as i64) << 16;
            let n = truth
                .latest
                .iter()
                .filter(|&&id| at[(id - 1) as usize] >= first)
                .count();
            n as f64 / truth.latest.len() as f64
        }
        _ => f64::NAN,
    };
    let frames: Vec<u64> = o.pool_pcts.iter().map(|&p| frames_of(&truth, p)).collect();
    let mut bound = BTreeMap::new();
    for state in BOUND_STATES.into_iter().filter(|s| states.contains(s)) {
        let reads = pool_bound(&root.join(state_dir(state)), &wl, &frames)?;
        for (&pct, r) in o.pool_pcts.iter().zip(reads) {
            bound.insert((state, pct.to_bits()), r);
        }
    }
    let mut points = Vec::new();
    for round in 0..o.rounds {
        let mut rng = CacheRng::new(o.seed ^ 0xA11 ^ ((round as u64) << 20));
        let keys = (wl.draw(&mut rng, o.warmup), wl.draw(&mut rng, o.lookups));
        for device in &o.devices {
            for &pool_pct in &o.pool_pcts {
                let frames = frames_of(&truth, pool_pct);
                for &state in &states {
                    let dir = root.join(state_dir(state));
                    let (wall_s, modeled_s, device_reads, pool_misses) =
                        measure(&dir, device, frames, &keys, at.get(state).map(|v| &v[..]))?;
                    let p = Point {
                        rows,
                        pool_pct,
                        device: device.clone(),
                        state: state.to_string(),
                        round,
                        lookups: o.lookups,
                        wall_s,
                        modeled_s,
                        device_reads,
                        pool_misses,
                    };
                    log(&format!(
                        "fig3 {rows} round {round} {device} pool {pool_pct}% {state}: {:.1} µs/lookup, {:.3} device reads/lookup",
                        p.cost_us(),
                        p.reads_per_lookup()
                    ));
                    points.push(p);
                }
            }
        }
    }
    Ok(SizeRun {
        rows,
        truth,
        states,
        reports,
        recall,
        id_recall,
        id_heap_pages,
        bound,
        points,
    })
}

/// Pages the hot partition keeps busy: its index and its tuples' heap pages.
fn hot_set(p: &ClusterReport) -> u64 {
    p.partition_pages + p.hot_pages_after
}

/// Pool frames for `pool_pct` % of the full index.
fn frames_of(t: &Truth, pool_pct: f64) -> u64 {
    ((t.index_pages as f64 * pool_pct / 100.0).ceil() as u64).max(64)
}

/// Median cost per lookup (µs) and device reads per lookup of a group.
fn med(points: &[Point], rows: u64, device: &str, pool_pct: f64, state: &str) -> (f64, f64) {
    let g: Vec<&Point> = points
        .iter()
        .filter(|p| {
            p.rows == rows && p.device == device && p.pool_pct == pool_pct && p.state == state
        })
        .collect();
    let c: Vec<f64> = g.iter().map(|p| p.cost_us()).collect();
    let r: Vec<f64> = g.iter().map(|p| p.reads_per_lookup()).collect();
    (
        median(&c).unwrap_or(f64::NAN),
        median(&r).unwrap_or(f64::NAN),
    )
}

/// The paper's speedups over 0%: 54%, 100%, partition.
const PAPER: [(&str, f64); 3] = [("54%", 1.8), ("100%", 2.15), ("partition", 8.4)];

/// Runs Fig. 3, writes `fig3.csv`, a plot per size and `fig3.md`; returns the
/// summary's text.
pub fn run_fig3(o: &Fig3Options, log: &mut dyn FnMut(&str)) -> Result<String> {
    o.check()?;
    std::fs::create_dir_all(&o.out)?;
    let mut runs = Vec::new();
    for &rows in &o.rows {
        runs.push(run_size(o, rows, log)?);
    }
    let mut set = ResultSet::new();
    for r in &runs {
        for p in &r.points {
            let mut row = ResultRow::new("fig3", &p.device, &p.state, p.rows as f64);
            row.wall_ms = p.wall_s * 1e3;
            row.modeled_ms = p.modeled_s * 1e3;
            row.pages_read = p.device_reads;
            row.io_requests = p.device_reads;
            row.rows_out = p.lookups;
            set.push(
                row.with("round", p.round)
                    .with("cost_us", format!("{:.2}", p.cost_us()))
                    .with("pool_misses", p.pool_misses)
                    .with("pool_pct", p.pool_pct)
                    .with("pool_frames", frames_of(&r.truth, p.pool_pct)),
            );
        }
    }
    set.write_csv(o.out.join("fig3.csv"))?;

    let mut s = Summary::new("Hot/cold clustering: Fig. 3 (No Bits Left Behind §3.1)");
    s.paragraph(&provenance());
    s.paragraph(&format!(
        "Table `{TABLE}` from `strata gen revision` (index `{INDEX}` on rev_id). A lookup is `Table::lookup` on rev_id (the hot partition first when there is one) and the heap tuple decoded whole; {}% of lookups take a page's latest revision (zipf exponent {} over them, in a random order), the rest any revision. States: `0%` as generated; `54%`/`100%`: {} training lookups per latest revision with the table's sampled access counts (1 in 4 counted), then `Database::cluster_hot` (`strata cluster {TABLE} --hot --share 0.54` / `--share 1`); `partition`: the same plus `--partition {INDEX}`. Each point opens its state's copy read-only with an empty pool of {:?}% of the full index's pages (the paper: smaller than the full index, larger than the hot partition — its index and its tuples' heap pages), runs {} lookups, then times {}; median of {} rounds, each round running every device, pool and state in turn with the same keys. Real: direct I/O, wall time; hdd/ssd: wall time plus the modeled device time.",
        o.hot_pct, o.alpha, o.train_per_hot, o.pool_pcts, o.warmup, o.lookups, o.rounds
    ));
    if o.ids.iter().any(|i| i == "semantic") {
        s.paragraph("`id` states: rev_id a semantic id (§4.2), which makes moving a tuple an id change, so clustering the hot tuples also clusters what a lookup by id reads: there is no full index left to miss. Not the paper's setting — its 100% clustering gained 2.15x and its partition 8.4x because its index did not fit in memory, as in the stored states — but what strata offers on top of it. `id 0%`: the generated table with its index on rev_id dropped and `strata compact revision --plain --semantic-id rev_id` (rev_id the tuple's address, every other column as declared); a lookup (`Table::lookup_address`) reads the one page the id names. `id 54%`/`id 100%`: the same training (lookups by id are counted the same way), then `cluster_hot`, which gives every moved tuple a new id; the workload looks each revision up by its id now, as the application's pointers to it (Wikipedia's `page.page_latest`) would hold it once updated — the paper notes a move requires that, or forwarding tables; the bench finds the id by `rev_text_id`, which the generator sets to the first rev_id. Same pools (frames) and keys as the stored states.");
    }
    let mut comparisons = Vec::new();
    for r in &runs {
        s.heading(&format!("{} rows", r.rows));
        let t = &r.truth;
        let part = r.reports.get("partition");
        let mut bullets = vec![
            format!(
                "heap {} pages ({:.0} MiB), full index {} pages ({:.1} MiB); pools {}",
                t.heap_pages,
                (t.heap_pages * PAGE_SIZE as u64) as f64 / (1 << 20) as f64,
                t.index_pages,
                (t.index_pages * PAGE_SIZE as u64) as f64 / (1 << 20) as f64,
                o.pool_pcts
                    .iter()
                    .map(|&p| format!("{p}%: {} frames", frames_of(t, p)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "{} latest revisions ({:.2}% of the rows) on {} of the {} heap pages ({:.1}%) as generated",
                t.latest.len(),
                100.0 * t.latest.len() as f64 / t.rows as f64,
                t.latest_pages,
                t.heap_pages,
                100.0 * t.latest_pages as f64 / t.heap_pages as f64
            ),
        ];
        if let Some(rep) = r.reports.get("100%") {
            bullets.push(format!(
                "the access counts found {:.1}% of the latest revisions hot (those in the hot region after the `100%` clustering); `54%` chose {} tuples, `100%` {}",
                100.0 * r.recall,
                r.reports.get("54%").map_or(0, |x| x.hot),
                rep.hot
            ));
        }
        if let Some(p) = part {
            bullets.push(format!(
                "hot partition: {} entries in {} pages, the full index {} pages: **{:.1}x smaller** (target ≥ 15x); the hot tuples on {} heap pages. The paper's pools lie between the hot partition ({} pages with its heap pages, {:.1}% of the full index) and the full index",
                p.partition_entries,
                p.partition_pages,
                p.full_index_pages,
                p.full_index_pages as f64 / p.partition_pages.max(1) as f64,
                p.hot_pages_after,
                hot_set(p),
                100.0 * hot_set(p) as f64 / t.index_pages.max(1) as f64
            ));
        }
        if let Some(rep) = r.reports.get("id 100%") {
            bullets.push(format!(
                "rev_id a semantic id: heap {} pages, no index; the counts found {:.1}% of the latest revisions hot; `id 54%` chose {} tuples, `id 100%` {}, on {} heap pages (the hot region; the paper's pools are larger than it)",
                r.id_heap_pages,
                100.0 * r.id_recall,
                r.reports.get("id 54%").map_or(0, |x| x.hot),
                rep.hot,
                rep.hot_pages_after
            ));
        }
        s.bullets(bullets);
        // The pages the pool must hold for the paper's setting: the hot
        // partition with its heap pages, or the semantic ids' hot region.
        let stored: Vec<&str> = STATES
            .into_iter()
            .filter(|st| r.states.contains(st))
            .collect();
        let ids: Vec<&str> = ID_STATES
            .into_iter()
            .filter(|st| r.states.contains(st))
            .collect();
        for (states, paper, hot, title, stem) in [
            (
                stored,
                &PAPER[..],
                part.map(hot_set),
                "rev_id stored, index on it",
                format!("fig3-{}", r.rows),
            ),
            (
                ids,
                &PAPER[..2],
                r.reports.get("id 100%").map(|p| p.hot_pages_after),
                "rev_id a semantic id",
                format!("fig3-ids-{}", r.rows),
            ),
        ] {
            if states.is_empty() {
                continue;
            }
            let id_prefix = if states[0].starts_with("id ") {
                "id "
            } else {
                ""
            };
            let mut header = vec!["device, pool".to_string()];
            for st in &states {
                header.push(format!("{st}: µs/lookup (reads/lookup)"));
            }
            for (st, paper) in paper {
                header.push(format!("{id_prefix}{st} speedup (paper {paper}x)"));
            }
            let mut rows = Vec::new();
            let mut plot = Plot::bars(
                format!("Fig. 3: cost per lookup, {} rows, {title}", r.rows),
                "clustered share of the hot tuples",
                states.clone(),
                Axis::log10("µs per lookup (median)"),
            )
            .legend(Legend::Right);
            for device in &o.devices {
                for &pool_pct in &o.pool_pcts {
                    // A pool the hot set does not fit is outside the
                    // paper's setting; its row says so.
                    let below = hot.is_some_and(|h| frames_of(t, pool_pct) <= h);
                    let mark = if below {
                        " (below the paper's range)"
                    } else {
                        ""
                    };
                    let mut row = vec![format!("{device}, {pool_pct}%{mark}")];
                    let mut costs = Vec::new();
                    for st in &states {
                        let (c, rd) = med(&r.points, r.rows, device, pool_pct, st);
                        costs.push(c);
                        row.push(format!("{} ({:.3})", num(c), rd));
                    }
                    let base = costs[0];
                    for (st, paper) in paper {
                        let name = format!("{id_prefix}{st}");
                        let i = states.iter().position(|x| *x == name).expect("a state");
                        let speedup = base / costs[i];
                        row.push(format!("{speedup:.2}x"));
                        comparisons.push(
                            Comparison::new(
                                format!(
                                    "{} rows, {title}, {device}, pool {pool_pct}%{mark}: {name} over {id_prefix}0%",
                                    r.rows
                                ),
                                speedup,
                                *paper,
                            )
                            .unit("x"),
                        );
                    }
                    plot = plot.bar_series(format!("{device}, pool {pool_pct}%"), costs);
                    rows.push(row);
                }
            }
            s.paragraph(&format!("**{title}**"));
            s.table(&header, &rows);
            plot.write(o.out.join(&stem))?;
            s.image(
                &format!("Fig. 3, {} rows, {title}", r.rows),
                &format!("{stem}.svg"),
            );
        }
        if BOUND_STATES.iter().all(|st| r.states.contains(st)) {
            bound_table(&mut s, &mut comparisons, o, r);
        }
    }
    s.heading("Against the paper");
    s.comparisons(&comparisons);
    s.write(o.out.join("fig3.md"))?;
    Ok(s.as_str().to_string())
}

/// The reads per lookup measured against [`pool_bound`]'s, per pool, and
/// the speedups in reads each allows against the paper's.
fn bound_table(s: &mut Summary, comparisons: &mut Vec<Comparison>, o: &Fig3Options, r: &SizeRun) {
    // Every device reads the same pages (same keys, same pool).
    let device = &o.devices[0];
    let mut header = vec!["pool".to_string()];
    for st in BOUND_STATES {
        header.push(format!("{st}: reads/lookup measured (best pool)"));
    }
    for (st, paper) in &PAPER[..2] {
        header.push(format!(
            "{st}: fewer reads, measured (best pool; paper's speedup {paper}x)"
        ));
    }
    let mut rows = Vec::new();
    for &pool_pct in &o.pool_pcts {
        let best = |st: &'static str| r.bound[&(st, pool_pct.to_bits())];
        let measured = |st: &str| med(&r.points, r.rows, device, pool_pct, st).1;
        let mut row = vec![format!(
            "{pool_pct}% ({} frames)",
            frames_of(&r.truth, pool_pct)
        )];
        for st in BOUND_STATES {
            row.push(format!("{:.3} ({:.3})", measured(st), best(st)));
        }
        for (st, paper) in &PAPER[..2] {
            let (m, b) = (measured("0%") / measured(st), best("0%") / best(st));
            row.push(format!("{m:.2}x ({b:.2}x)"));
            comparisons.push(
                Comparison::new(
                    format!(
                        "{} rows, the best pool of {pool_pct}%: reads of 0% over {st}'s",
                        r.rows
                    ),
                    b,
                    *paper,
                )
                .unit("x"),
            );
        }
        rows.push(row);
    }
    s.paragraph("**What the best buffer pool could do** (rev_id stored, index on it): the device reads per lookup measured, and in brackets the fewest any pool of those frames can expect without knowing the future — lookups are independent, so each page is wanted with a fixed probability, and the best a pool can do is hold the most wanted ones (the index's inner pages first). Where reads dominate the cost, a clustering's speedup cannot pass the bracketed ratio, whatever the replacement policy.");
    s.table(&header, &rows);
}

/// What counting accesses costs a lookup (§3.1's counts "kept cheaply"): the
/// generated `revision` table of `rows` rows, entirely in the pool, the same
/// lookups with counting off, at the default one access in 4, and at every
/// access, in turn per round; medians of `rounds`.
pub fn run_counting(o: &Fig3Options, log: &mut dyn FnMut(&str)) -> Result<String> {
    o.check()?;
    std::fs::create_dir_all(&o.out)?;
    let mut s = Summary::new("Hot/cold clustering: the cost of counting accesses");
    s.paragraph(&provenance());
    s.paragraph(&format!(
        "The `{TABLE}` table of `strata gen revision`, opened read-only with a pool that holds all of it, every page read once before; the Fig. 3 workload ({}% of lookups on a latest revision, zipf {} over them); a lookup is `Table::lookup` plus the heap tuple decoded whole. Per round, {} lookups with counting off (one access in 2^32), at the default one in 4, and at every access, in turn; medians of {} rounds; one thread.",
        o.hot_pct, o.alpha, o.lookups, o.rounds
    ));
    let variants: [(&str, u32); 3] = [
        ("off", u32::MAX),
        ("1 in 4 (default)", 4),
        ("every access", 1),
    ];
    let mut set = ResultSet::new();
    let mut header = vec!["rows".to_string()];
    for (name, _) in variants {
        header.push(format!("{name}: lookups/s"));
    }
    header.push("overhead of 1 in 4".into());
    header.push("overhead of every access".into());
    let mut rows_out = Vec::new();
    for &rows in &o.rows {
        let base = o.work_dir.join(format!("fig3-{rows}")).join("base");
        prepare(&base, rows, log)?;
        let truth = truth(&base)?;
        let wl = Workload::new(&truth, o.alpha, o.hot_pct, o.seed);
        let pages = truth.heap_pages + truth.index_pages + 1024;
        let db = open(&base, pages as usize * PAGE_SIZE, true)?;
        db.prewarm(TABLE)?;
        let t = db.table(TABLE)?;
        let ix = t.index(INDEX)?;
        let mut rng = CacheRng::new(o.seed ^ 0xC0);
        let keys = wl.draw(&mut rng, o.lookups);
        for &id in &keys {
            lookup(&t, ix, id)?;
        }
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
        for round in 0..o.rounds {
            for (i, (name, every)) in variants.iter().enumerate() {
                t.heat().clear();
                t.heat().set_every(*every);
                let start = Instant::now();
                for &id in &keys {
                    lookup(&t, ix, id)?;
                }
                let secs = start.elapsed().as_secs_f64();
                let per_s = keys.len() as f64 / secs;
                log(&format!(
                    "counting {rows} round {round} {name}: {per_s:.0} lookups/s, {} tuples counted",
                    t.heat().len()
                ));
                times[i].push(per_s);
                let mut r = ResultRow::new("counting", "memory", *name, rows as f64);
                r.wall_ms = secs * 1e3;
                r.rows_out = keys.len() as u64;
                set.push(
                    r.with("round", round)
                        .with("lookups_per_s", format!("{per_s:.0}"))
                        .with("tracked", t.heat().len()),
                );
            }
        }
        t.heat().clear();
        let meds: Vec<f64> = times
            .iter()
            .map(|v| median(v).unwrap_or(f64::NAN))
            .collect();
        let mut row = vec![rows.to_string()];
        row.extend(meds.iter().map(|m| num(*m)));
        row.push(format!("{:+.1}%", 100.0 * (meds[0] / meds[1] - 1.0)));
        row.push(format!("{:+.1}%", 100.0 * (meds[0] / meds[2] - 1.0)));
        rows_out.push(row);
    }
    s.table(&header, &rows_out);
    s.paragraph("Overhead: the time per lookup with counting over the time without, minus one.");
    set.write_csv(o.out.join("counting.csv"))?;
    s.write(o.out.join("counting.md"))?;
    Ok(s.as_str().to_string())
}
