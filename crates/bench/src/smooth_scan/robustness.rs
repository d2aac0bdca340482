//! `strata bench smooth-scan robustness`: the default Smooth Scan against the
//! best of full, index and sort scan over a matrix of tables and queries, to
//! find where it is not robust.
//!
//! The matrix: table sizes (`--sizes`, 100K, 1M and 10M rows), heap fill
//! factors (`--fills`, 1 and 0.25), data layouts (`--layouts`: the `strata
//! gen` layouts `uniform`, `correlated`, `periodic`, `clustered`, the
//! adversaries `alternating`, `dense-start`, `dense-tail`, and `skewed`),
//! selectivities (the figures' sweep, 0.001% to 100%, plus for an adversary
//! the selectivity that selects exactly its band of special rows), and devices
//! (`--devices`, modeled `hdd` and `ssd`, and `real`). The predicate is the
//! figures' q1, `c2 >= 0 AND c2 < x`; every layout has the same `c2`
//! histogram, so it selects the same rows' count on each (on `skewed` it
//! selects the `c2 = 0` cluster plus the range). Tables are generated once
//! into the bench database as `rob_<layout>_<rows>_<fill %>` and reused.
//!
//! Each cell (table, selectivity, device) runs, cold, full scan, sort scan,
//! index scan and the default Smooth Scan (`SmoothOptions::default()`,
//! "smooth (default)") round-robin, `--repeat` runs on `real`, so that the
//! machine's drift falls on all alike, in an order rotated each round (none
//! always runs right after the sort scan's burst of reads, and no path's runs
//! come one after another, where a tiny query's pages would still be in the
//! disk's own cache). Index scan is stopped at 3× the best of full and sort
//! scan so far (a stopped index scan is simply not the best; once stopped in a
//! table and device it is not run at higher selectivities); Smooth Scan at 20×
//! the best of the other three (its ratio is then a lower bound, `> X`).
//!
//! On the modeled devices times, limits and ratios are the modeled time the
//! device charges (the limits are checked against its counter as the run
//! goes); on `real` they are wall times, medians of `--repeat` cold runs.
//! `--timeout` caps every run's wall time besides.
//!
//! Output in `--out` (`results/smooth-scan/`): `robustness.csv` (a row per
//! measured point), `robustness.md` (per device and layout the worst ratio of
//! Smooth Scan to the best path and where, the share of cells within 1.2×,
//! whether all are within 1.5×, Smooth Scan over full scan at 100%, and the
//! §6 competitive bounds for each table's page count beside the measured worst
//! case) and a heat map per device, `robustness-<device>.{png,svg}` (layout ×
//! selectivity → the worst ratio over sizes and fills).

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context, Result};
use strata_access::{PathChoice, SmoothOptions};
use strata_load::GenKind;

use super::competitive::{elastic_highest_miss_cr, elastic_worst_cr, greedy_cr, si_peak};
use super::cost_model::IoCosts;
use super::{
    BenchOptions, Limit, Variant, cost, page_costs, q1, row_of, run_limited, smooth_opts, sweep,
    variant,
};
use crate::report::heatmap::Heatmap;
use crate::report::summary::num;
use crate::{ResultRow, ResultSet, Samples, Summary};

/// The figure's name (files `robustness.csv`, `.md`, `-<device>.png`).
pub const FIGURE: &str = "robustness";
/// The Smooth Scan variant's name.
pub const SMOOTH: &str = "smooth (default)";
/// Table sizes without `--sizes`.
pub const SIZES: [u64; 3] = [100_000, 1_000_000, 10_000_000];
/// ... with `--quick`.
pub const QUICK_SIZES: [u64; 1] = [100_000];
/// Heap fill factors without `--fills`.
pub const FILLS: [f64; 2] = [1.0, 0.25];
/// Layouts without `--layouts`, in the order tables and maps show them.
pub const LAYOUTS: [GenKind; 8] = [
    GenKind::Uniform,
    GenKind::Correlated,
    GenKind::Periodic,
    GenKind::Clustered,
    GenKind::Skewed,
    GenKind::Alternating,
    GenKind::DenseStart,
    GenKind::DenseTail,
];
/// Index scan stops at this multiple of the best of full and sort.
pub const INDEX_LIMIT: f64 = 3.0;
/// Smooth Scan stops at this multiple of the best of full, sort and index.
pub const SMOOTH_LIMIT: f64 = 20.0;
/// The seed of the generated tables.
pub const SEED: u64 = 42;

#[derive(Clone, Debug)]
pub struct RobustnessOptions {
    /// Database, devices, pool, repeat, timeout, output, quick (its `rows` is
    /// not used: the sizes are).
    pub bench: BenchOptions,
    pub sizes: Vec<u64>,
    pub fills: Vec<f64>,
    pub layouts: Vec<GenKind>,
    /// Run the matrix on columnar tables (`--table-format columns`): the
    /// tables converted to column files, the paths of
    /// `strata_columns::paths` ([`super::columns`]).
    pub columns: bool,
}

impl RobustnessOptions {
    /// The whole matrix (100K rows only with `quick`).
    pub fn new(bench: BenchOptions) -> RobustnessOptions {
        let sizes = if bench.quick {
            QUICK_SIZES.to_vec()
        } else {
            SIZES.to_vec()
        };
        RobustnessOptions {
            bench,
            sizes,
            fills: FILLS.to_vec(),
            layouts: LAYOUTS.to_vec(),
            columns: false,
        }
    }
}

/// Parses `--layouts`: comma-separated names of [`LAYOUTS`].
pub fn parse_layouts(s: &str) -> Result<Vec<GenKind>> {
    let mut out = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let k: GenKind = name.parse().map_err(anyhow::Error::from)?;
        if !LAYOUTS.contains(&k) {
            anyhow::bail!(
                "'{name}' is not a layout of the robustness matrix (one of {})",
                LAYOUTS.map(|k| k.name()).join(", ")
            );
        }
        if !out.contains(&k) {
            out.push(k);
        }
    }
    if out.is_empty() {
        anyhow::bail!("no layouts given");
    }
    Ok(out)
}

/// The bench database's table of `layout` with `rows` rows at `fill`:
/// `rob_<layout>_<rows>_<fill %>`, e.g. `rob_dense_start_1000000_25`.
pub fn table_name(layout: GenKind, rows: u64, fill: f64) -> String {
    format!(
        "rob_{}_{rows}_{}",
        layout.default_table(),
        (fill * 100.0).round() as u32
    )
}

/// The matrix's table for `o`: [`table_name`], with `_columns` after it
/// for the columnar matrix.
fn matrix_table(o: &RobustnessOptions, layout: GenKind, rows: u64, fill: f64) -> String {
    let name = table_name(layout, rows, fill);
    if o.columns {
        format!("{name}_columns")
    } else {
        name
    }
}

/// Generates the tables of the matrix that the bench database lacks (or has
/// with another row count or fill factor).
pub fn prepare(
    o: &RobustnessOptions,
    progress: &dyn strata_storage::Progress,
    log: &mut dyn FnMut(&str),
) -> Result<()> {
    let mut wanted = Vec::new();
    for &rows in &o.sizes {
        for &fill in &o.fills {
            for &layout in &o.layouts {
                wanted.push((layout, rows, fill));
            }
        }
    }
    crate::bench_db::generate_missing(
        &o.bench.db_dir,
        wanted,
        |&(layout, rows, fill)| matrix_table(o, layout, rows, fill),
        |t, &(_, rows, fill)| {
            t.rows() == rows
                && (t.heap().fill_factor() - fill).abs() < 1e-9
                && t.columns().is_some() == o.columns
        },
        |db, (layout, rows, fill)| {
            let name = matrix_table(o, layout, rows, fill);
            let mut spec = strata_load::GenSpec::new(layout, rows);
            spec.seed = SEED;
            spec.table = Some(name.clone());
            spec.options.fill_factor = fill;
            let start = Instant::now();
            let r = strata_load::generate(db, &spec, progress)
                .with_context(|| format!("generating {name}"))?;
            if o.columns {
                super::columns::convert(db, &name, progress)?;
            }
            log(&format!(
                "generated {name}: {} rows, {} pages in {:.1} s{}",
                r.rows,
                r.summary.pages_total,
                start.elapsed().as_secs_f64(),
                if o.columns {
                    ", converted to columns"
                } else {
                    ""
                }
            ));
            Ok(())
        },
    )
}

/// A selectivity of the matrix: percent, and whether it is the adversary's
/// band (`"band"`) or a point of the sweep (`"sweep"`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub pct: f64,
    pub band: bool,
}

/// The selectivities of a table, ascending: the sweep, and for an adversary
/// the largest q1 bound that selects only (and, below 100001 rows, exactly)
/// its special rows ([`strata_load::layout::key_bound_for`]).
pub fn points(quick: bool, layout: GenKind, rows: u64, fill: f64) -> Vec<Point> {
    let mut v: Vec<Point> = sweep(quick)
        .into_iter()
        .map(|pct| Point { pct, band: false })
        .collect();
    if let Some(b) = layout.band(rows, fill) {
        let x = strata_load::layout::key_bound_for(b.rows(), rows);
        if x >= 1 {
            v.push(Point {
                pct: x as f64 * 100.0 / strata_load::layout::KEY_VALUES as f64,
                band: true,
            });
        }
    }
    v.sort_by(|a, b| a.pct.total_cmp(&b.pct));
    v
}

/// Heap pages of a matrix table.
fn table_pages(layout: GenKind, rows: u64, fill: f64) -> u64 {
    strata_load::layout::pages(rows, layout.rows_per_page(fill))
}

/// Runs the matrix and writes its files. Returns the summary text.
pub fn run(o: &RobustnessOptions, log: &mut dyn FnMut(&str)) -> Result<String> {
    let start = Instant::now();
    let mut set = ResultSet::new();
    for &rows in &o.sizes {
        for &fill in &o.fills {
            for &layout in &o.layouts {
                let table = matrix_table(o, layout, rows, fill);
                for device in &o.bench.devices {
                    let mut index_gave_up = false;
                    for p in points(o.bench.quick, layout, rows, fill) {
                        let cell = Cell {
                            table: &table,
                            layout,
                            rows,
                            fill,
                            device,
                            point: p,
                        };
                        set.extend(measure_cell(o, &cell, &mut index_gave_up, log)?);
                    }
                }
            }
        }
    }
    let took = start.elapsed().as_secs_f64();
    write(o, &set, took)
}

/// One cell of the matrix.
struct Cell<'a> {
    table: &'a str,
    layout: GenKind,
    rows: u64,
    fill: f64,
    device: &'a str,
    point: Point,
}

/// One row for a point's runs: their medians, or the censored run if one was
/// stopped (its time is a lower bound and stands for the point); `runs` says
/// how many there were.
fn summarize(mut rows: Vec<ResultRow>) -> ResultRow {
    let n = rows.len();
    let mut row = match rows.iter().position(|r| r.get("censored") == "yes") {
        Some(i) => rows.swap_remove(i),
        None => {
            let mut s = Samples::new();
            rows.into_iter().for_each(|r| s.add(r));
            s.finish().rows()[0].clone()
        }
    };
    row.set("runs", n);
    row
}

/// Runs `v` once, one result row. `budget_ms`: where the run is stopped, in
/// the device's cost (modeled time on a modeled device, wall time on `real`);
/// `--timeout` stops it anyway.
fn measure_variant(
    o: &RobustnessOptions,
    c: &Cell,
    v: &Variant,
    budget_ms: Option<f64>,
    log: &mut dyn FnMut(&str),
) -> Result<ResultRow> {
    let cap = o.bench.timeout_s;
    let limit = match budget_ms {
        Some(ms) if c.device == "real" => Limit {
            wall_s: (ms / 1e3).min(cap),
            modeled_ms: None,
        },
        Some(ms) => Limit {
            wall_s: cap,
            modeled_ms: Some(ms),
        },
        None => Limit {
            wall_s: cap,
            modeled_ms: None,
        },
    };
    let r = if o.columns {
        let path = super::columns::path_of(&v.name);
        super::columns::run_limited(&o.bench, c.device, c.table, &q1(c.point.pct), path, limit)?
    } else {
        run_limited(&o.bench, c.device, c.table, &q1(c.point.pct), v, limit)?
    };
    log(&format!(
        "{} {:<5} {:<26} x={:<9} rows={:<9} wall {:>9.1} ms modeled {:>10.1} ms{}",
        c.table,
        c.device,
        v.name,
        format!(
            "{}{}",
            num(c.point.pct),
            if c.point.band { "*" } else { "" }
        ),
        r.rows,
        r.wall_ms,
        r.io.modeled_ms(),
        if r.censored { " (stopped)" } else { "" }
    ));
    let mut row = row_of(FIGURE, c.device, &v.name, c.point.pct, &r);
    row.set("table_rows", c.rows);
    row.set("fill", c.fill);
    row.set("layout", c.layout.name());
    row.set("point", if c.point.band { "band" } else { "sweep" });
    row.set("table_pages", table_pages(c.layout, c.rows, c.fill));
    if let Some(ms) = budget_ms {
        row.set("limit_ms", ms);
    }
    Ok(row)
}

/// Full, sort, index (unless it gave up on this table and device) and Smooth
/// Scan round-robin, each stopped at its limit from the best so far.
fn measure_cell(
    o: &RobustnessOptions,
    c: &Cell,
    index_gave_up: &mut bool,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<ResultRow>> {
    let real = c.device == "real";
    let runs = if real { o.bench.repeat.max(1) } else { 1 };
    let best_of = |rows: &[ResultRow]| {
        let ok = rows
            .iter()
            .filter(|r| r.get("censored") != "yes")
            .map(cost)
            .fold(f64::INFINITY, f64::min);
        if ok.is_finite() {
            ok
        } else {
            rows.iter().map(cost).fold(f64::INFINITY, f64::min)
        }
    };

    // All paths round-robin over the repeats, so that they share the drift
    // of the machine, in orders that change each round so that none always
    // follows the same one (see `round_order`): a disk that is throttled
    // after a burst would otherwise charge the sort scan's reads to whatever
    // comes next, and a path whose runs all came one after another would
    // find the pages of a tiny query in the disk's own cache. Round 0 runs
    // full and sort scan first, so every limit has a base. Index scan is
    // stopped at 3x the best of full and sort scan so far, Smooth Scan at 20x
    // the best of the three; a stopped path is not run again in the cell.
    let mut variants = vec![
        variant("full", PathChoice::Full, false),
        variant("sort", PathChoice::Sort, false),
    ];
    let index = (!*index_gave_up).then(|| {
        variants.push(variant("index", PathChoice::Index, false));
        variants.len() - 1
    });
    variants.push(variant(SMOOTH, smooth_opts(&o.bench.db_dir, |_| {}), false));
    let smooth = variants.len() - 1;
    let mut by_variant: Vec<Vec<ResultRow>> = vec![Vec::new(); variants.len()];
    let mut stopped = vec![false; variants.len()];
    for round in 0..runs {
        for i in round_order(round, variants.len()) {
            if stopped[i] {
                continue;
            }
            let (base, factor) = if i == smooth {
                (by_variant[..smooth].concat(), Some(SMOOTH_LIMIT))
            } else if Some(i) == index {
                (by_variant[..2].concat(), Some(INDEX_LIMIT))
            } else {
                (Vec::new(), None)
            };
            let budget = factor
                .filter(|_| !base.is_empty())
                .map(|f| f * best_of(&base));
            let r = measure_variant(o, c, &variants[i], budget, log)?;
            stopped[i] = r.get("censored") == "yes";
            by_variant[i].push(r);
        }
    }
    let mut out: Vec<ResultRow> = by_variant.into_iter().map(summarize).collect();
    out[smooth].set("limit_factor", SMOOTH_LIMIT);
    if let Some(i) = index {
        out[i].set("limit_factor", INDEX_LIMIT);
        *index_gave_up = stopped[i];
    }
    let best = best_of(&out[..smooth]);

    let best_variant = out
        .iter()
        .filter(|r| r.variant != SMOOTH && r.get("censored") != "yes")
        .min_by(|a, b| cost(a).total_cmp(&cost(b)))
        .map(|r| r.variant.clone())
        .unwrap_or_default();
    for r in &mut out {
        r.set("best_ms", best);
        r.set("best_variant", &best_variant);
        r.set("ratio_to_best", cost(r) / best);
    }
    if let Some(s) = out.iter().find(|r| r.variant == SMOOTH) {
        log(&format!(
            "{} {} x={}{}: smooth / best ({best_variant}) = {}{:.2}",
            c.table,
            c.device,
            num(c.point.pct),
            if c.point.band { " (band)" } else { "" },
            if s.get("censored") == "yes" { "> " } else { "" },
            cost(s) / best
        ));
    }
    Ok(out)
}

/// The order of `n` paths in round `round`: rotated by one every two rounds,
/// and reversed in odd rounds. Rotation alone keeps the cyclic order, so each
/// path would always follow the same one (Smooth Scan the sort scan);
/// reversing every other round makes each path follow each of its two
/// neighbours in that cycle equally often. Round 0 is `0, 1, ..., n-1`.
fn round_order(round: usize, n: usize) -> Vec<usize> {
    let k = round / 2;
    let mut order: Vec<usize> = (0..n).map(|j| (k + j) % n).collect();
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

/// One Smooth Scan point of a result set, as the summary reads it.
#[derive(Clone, Debug)]
struct SmoothPoint {
    device: String,
    layout: String,
    rows: u64,
    fill: f64,
    pct: f64,
    band: bool,
    pages: u64,
    ratio: f64,
    censored: bool,
    /// Smooth Scan over full scan.
    vs_full: Option<f64>,
}

impl SmoothPoint {
    fn ratio_text(&self) -> String {
        format!(
            "{}{}x",
            if self.censored { "> " } else { "" },
            num(self.ratio)
        )
    }
    fn at(&self) -> String {
        format!(
            "{} rows, fill {}, {}{}",
            self.rows,
            self.fill,
            num(self.pct),
            if self.band { "% (band)" } else { "%" }
        )
    }
}

fn smooth_points(set: &ResultSet) -> Vec<SmoothPoint> {
    let key = |r: &ResultRow| {
        (
            r.device.clone(),
            r.get("layout"),
            r.get("table_rows"),
            r.get("fill"),
            r.x.to_bits(),
        )
    };
    let full: BTreeMap<_, f64> = set
        .rows()
        .iter()
        .filter(|r| r.variant == "full")
        .map(|r| (key(r), cost(r)))
        .collect();
    set.rows()
        .iter()
        .filter(|r| r.variant == SMOOTH)
        .filter_map(|r| {
            Some(SmoothPoint {
                device: r.device.clone(),
                layout: r.get("layout"),
                rows: r.extra_f64("table_rows")? as u64,
                fill: r.extra_f64("fill")?,
                pct: r.x,
                band: r.get("point") == "band",
                pages: r.extra_f64("table_pages").unwrap_or(0.0) as u64,
                ratio: r.extra_f64("ratio_to_best")?,
                censored: r.get("censored") == "yes",
                vs_full: full.get(&key(r)).map(|f| cost(r) / f),
            })
        })
        .collect()
}

/// The §6 cost units of a device: its random and sequential page costs (the
/// real device: `PageCosts::default()`, a local NVMe-class device).
fn io_costs(device: &str) -> IoCosts {
    let p = page_costs(device).unwrap_or_default();
    IoCosts {
        rand: p.random_ms,
        seq: p.sequential_ms,
    }
}

/// Writes the CSV, the heat maps and the summary of a matrix's results
/// (`took_s`: how long the matrix ran). Returns the summary text.
pub fn write(o: &RobustnessOptions, set: &ResultSet, took_s: f64) -> Result<String> {
    let out = &o.bench.out;
    std::fs::create_dir_all(out)?;
    set.write_csv(out.join(format!("{FIGURE}.csv")))?;
    let points = smooth_points(set);
    let default = SmoothOptions::default();
    let mut s = Summary::new(if o.columns {
        "Smooth Scan robustness on columnar tables: the column Smooth Scan against the best of full, index and sort scan over the column files"
    } else {
        "Smooth Scan robustness: the default Smooth Scan against the best of full, index and sort scan"
    });
    if o.columns {
        s.paragraph("The tables are the row matrix's, converted to column files (`strata compact --format columns`) with the index on c2 kept as a tree over the column rows; the paths are `strata_columns::paths`: full reads what min/max pruning keeps, index reads each entry's row on its own (its page of each column), sort reads the rows in position order, and Smooth Scan walks the tree and morphs into the full scan once a lower bound on finishing through the index reaches the full scan's cost (`crates/columns/src/smooth.rs`). Column reads are charged to the device like heap pages. The Smooth Scan options below are the row tables'; the column Smooth Scan has no options. Fill factors do not apply to column files.");
    }
    s.paragraph(&format!(
        "Command: `strata bench smooth-scan {FIGURE} --sizes {} --fills {} --layouts {} --devices {} --repeat {} --timeout {}{}{}`; it ran {}. Buffer pool {} MiB. Smooth Scan is `SmoothOptions::default()` (policy {:?}, trigger {:?}, regions up to {} pages).",
        o.sizes.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
        o.fills.iter().map(f64::to_string).collect::<Vec<_>>().join(","),
        o.layouts.iter().map(|l| l.name()).collect::<Vec<_>>().join(","),
        o.bench.devices.join(","),
        o.bench.repeat,
        o.bench.timeout_s,
        if o.bench.quick { " --quick" } else { "" },
        if o.columns {
            " --table-format columns"
        } else {
            ""
        },
        if took_s < 120.0 {
            format!("{took_s:.1} s")
        } else {
            format!("{:.1} min", took_s / 60.0)
        },
        o.bench.pool_bytes >> 20,
        default.policy,
        default.trigger,
        default.max_region_pages,
    ));
    s.paragraph(&format!(
        "Each cell (table, selectivity, device) runs full scan, sort scan, index scan and Smooth Scan round-robin, in an order rotated each round, so that no path's runs come one after another (index scan stopped at {INDEX_LIMIT}x the best of full and sort scan so far: a stopped index scan is not the best, and is not run at higher selectivities of that table and device; Smooth Scan stopped at {SMOOTH_LIMIT}x the best of the other three: its ratio is then a lower bound, `> X`). The ratio is Smooth Scan's time over the best classical path's; on hdd and ssd the times are modeled (and so are the limits, checked against the device's counter), on real they are wall times, medians of {} cold runs. The predicate is `c2 >= 0 AND c2 < x` with x = 100001·s/100; every layout has the same c2 histogram, so it selects the same number of rows on each (on skewed, the c2 = 0 cluster plus the range). `band`: the selectivity selecting just an adversary's special rows (one row on every second page for alternating; the dense run and the isolated rows for dense-start and dense-tail).",
        o.bench.repeat
    ));
    let mut devices: Vec<String> = Vec::new();
    for p in &points {
        if !devices.contains(&p.device) {
            devices.push(p.device.clone());
        }
    }
    let layouts: Vec<String> = o.layouts.iter().map(|l| l.name().to_string()).collect();
    let sweep_x = sweep(o.bench.quick);
    let worst_of = |it: &mut dyn Iterator<Item = &SmoothPoint>| -> Option<SmoothPoint> {
        it.max_by(|a, b| a.ratio.total_cmp(&b.ratio)).cloned()
    };
    for device in &devices {
        let on: Vec<&SmoothPoint> = points.iter().filter(|p| &p.device == device).collect();
        s.heading(device);
        // The heat map.
        let mut values = Vec::new();
        let mut texts = Vec::new();
        for l in &layouts {
            let mut vrow = Vec::new();
            let mut trow = Vec::new();
            for col in 0..=sweep_x.len() {
                let w = worst_of(&mut on.iter().copied().filter(|p| {
                    &p.layout == l
                        && if col < sweep_x.len() {
                            !p.band && p.pct == sweep_x[col]
                        } else {
                            p.band
                        }
                }));
                vrow.push(w.as_ref().map(|w| w.ratio));
                trow.push(match &w {
                    Some(w) if w.censored => format!(">{}", crate::report::heatmap::label(w.ratio)),
                    _ => String::new(),
                });
            }
            values.push(vrow);
            texts.push(trow);
        }
        let worst = worst_of(&mut on.iter().copied());
        let mut columns: Vec<String> = sweep_x.iter().map(|x| num(*x)).collect();
        columns.push("band".into());
        let what = if device == "real" {
            "wall time, medians"
        } else {
            "modeled time"
        };
        let map = Heatmap {
            title: format!("Smooth Scan (default) / best of full, index, sort: {device}"),
            row_labels: layouts.clone(),
            column_labels: columns,
            values,
            cell_text: texts,
            column_title: "selectivity (%)".into(),
            notes: vec![
                format!(
                    "Worst over sizes {} and fills {} ({what}); band: the adversary's special rows.",
                    o.sizes
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    o.fills
                        .iter()
                        .map(f64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                match &worst {
                    Some(w) => format!("Worst cell: {} {}: {}", w.layout, w.at(), w.ratio_text()),
                    None => "No Smooth Scan points.".into(),
                },
            ],
        };
        let stem = out.join(format!("{FIGURE}-{device}"));
        map.write(&stem)
            .with_context(|| format!("writing {}", stem.display()))?;
        s.image(
            &format!("robustness on {device}"),
            &format!("{FIGURE}-{device}.png"),
        );

        // Per layout.
        let mut table = Vec::new();
        for l in &layouts {
            let cells: Vec<&SmoothPoint> = on.iter().copied().filter(|p| &p.layout == l).collect();
            if cells.is_empty() {
                continue;
            }
            let w = worst_of(&mut cells.iter().copied()).expect("not empty");
            let within = cells
                .iter()
                .filter(|p| !p.censored && p.ratio <= 1.2)
                .count();
            let all_15 = cells.iter().all(|p| !p.censored && p.ratio <= 1.5);
            table.push(vec![
                l.clone(),
                w.ratio_text(),
                w.at(),
                format!(
                    "{}/{} ({:.0}%)",
                    within,
                    cells.len(),
                    100.0 * within as f64 / cells.len() as f64
                ),
                if all_15 { "yes" } else { "no" }.to_string(),
            ]);
        }
        s.paragraph(&format!(
            "Per layout, over sizes, fills and selectivities ({what}):"
        ));
        s.table(
            &[
                "layout",
                "worst smooth / best",
                "at",
                "cells ≤ 1.2x",
                "all ≤ 1.5x",
            ],
            table,
        );

        // Smooth over full at 100%.
        let mut tables: Vec<(u64, f64)> = on.iter().map(|p| (p.rows, p.fill)).collect();
        tables.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        tables.dedup();
        let mut header = vec!["layout".to_string()];
        header.extend(tables.iter().map(|(r, f)| format!("{r} rows, fill {f}")));
        let rows100 = layouts.iter().filter_map(|l| {
            let mut row = vec![l.clone()];
            let mut any = false;
            for (r, f) in &tables {
                let p = on.iter().find(|p| {
                    &p.layout == l && p.rows == *r && p.fill == *f && !p.band && p.pct == 100.0
                });
                row.push(match p.and_then(|p| p.vs_full.map(|v| (v, p.censored))) {
                    Some((v, c)) => {
                        any = true;
                        format!("{}{}x", if c { "> " } else { "" }, num(v))
                    }
                    None => String::new(),
                });
            }
            any.then_some(row)
        });
        s.paragraph("Smooth Scan / full scan at 100%:");
        s.table(&header, rows100);

        // The competitive bounds beside the measured worst case.
        let c = io_costs(device);
        let mut bounds = Vec::new();
        for (r, f) in &tables {
            let here: Vec<&SmoothPoint> = on
                .iter()
                .copied()
                .filter(|p| p.rows == *r && p.fill == *f)
                .collect();
            let Some(w) = worst_of(&mut here.iter().copied()) else {
                continue;
            };
            let pages = here.iter().map(|p| p.pages).max().unwrap_or(0) as f64;
            bounds.push(vec![
                format!("{r} rows, fill {f}"),
                format!("{pages}"),
                format!("{} ({}, {}%)", w.ratio_text(), w.layout, num(w.pct)),
                format!("{}x", num(greedy_cr(pages, c))),
                format!("{}x", num(si_peak(pages, c).1)),
                format!("{}x", num(elastic_highest_miss_cr(pages, c))),
                format!("{}x", num(elastic_worst_cr(c))),
            ]);
        }
        s.paragraph(&format!(
            "The §6 competitive ratios for each table's page count #P, with this device's page costs (random {} ms, sequential {} ms a page, {}:1), beside the measured worst case. The bounds are the paper's policies' (Greedy Eq. 31, Selectivity Increase's peak over x Eq. 36, Elastic's highest page-miss case Fig. 9 and its worst case, every second page a result, Eq. 42) against the Oracle, which reads only the result pages; the measured ratio is the default policy's ({:?}) against the best classical path, which costs at least the Oracle.",
            num(c.rand),
            num(c.seq),
            num(c.rand / c.seq),
            default.policy
        ));
        s.table(
            &[
                "table",
                "#P",
                "measured worst",
                "Greedy CR",
                "SI CR (peak)",
                "Elastic CR (highest miss)",
                "Elastic CR (worst)",
            ],
            bounds,
        );
    }
    s.write(out.join(format!("{FIGURE}.md")))?;
    Ok(s.as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_start_with_the_baselines_and_balance_who_follows_whom() {
        assert_eq!(round_order(0, 3), vec![0, 1, 2]);
        for n in [3, 4] {
            // Over 2n rounds every path runs once a round, and each follows
            // each of its two neighbours in the cycle equally often.
            let mut follows = std::collections::BTreeMap::new();
            for r in 0..2 * n {
                let o = round_order(r, n);
                let mut sorted = o.clone();
                sorted.sort();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>());
                for w in o.windows(2) {
                    *follows.entry((w[0], w[1])).or_insert(0) += 1;
                }
            }
            for v in 0..n {
                let before: Vec<usize> = (0..n)
                    .filter_map(|u| follows.get(&(u, v)).copied())
                    .collect();
                assert_eq!(before.len(), 2, "{n} paths: {v} follows {before:?}");
                assert_eq!(before[0], before[1], "{n} paths: {v} follows {follows:?}");
            }
        }
    }

    #[test]
    fn names_points_and_layouts() {
        assert_eq!(
            table_name(GenKind::DenseStart, 1_000_000, 0.25),
            "rob_dense_start_1000000_25"
        );
        assert_eq!(
            table_name(GenKind::Uniform, 100_000, 1.0),
            "rob_uniform_100000_100"
        );
        let p = points(true, GenKind::Uniform, 100_000, 1.0);
        assert_eq!(p.len(), sweep(true).len());
        // alternating on 100K rows at fill 1: 541 pages, 271 special rows.
        let p = points(true, GenKind::Alternating, 100_000, 1.0);
        let band: Vec<&Point> = p.iter().filter(|p| p.band).collect();
        assert_eq!(band.len(), 1);
        let x = (100_001.0 * band[0].pct / 100.0).round() as i64;
        assert_eq!(strata_load::layout::rows_below(x, 100_000), 271);
        assert!(p.windows(2).all(|w| w[0].pct <= w[1].pct));
        assert_eq!(
            parse_layouts("periodic, dense-start,periodic").unwrap(),
            vec![GenKind::Periodic, GenKind::DenseStart]
        );
        assert!(parse_layouts("flash").is_err());
        assert!(parse_layouts("nosuch").is_err());
    }
}
