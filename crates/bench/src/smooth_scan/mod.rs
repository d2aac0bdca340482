//! The Smooth Scan paper's experiments (`strata bench smooth-scan <figure>`).
//!
//! Every figure runs the real operators (`strata_access`) over the paper's
//! micro-benchmark table (§7.3; the skewed variant of §7.4 for Fig. 20) on the
//! devices asked for:
//! * `hdd` and `ssd`: strata's modeled devices; the figure of merit is the
//!   deterministic modeled time (the files are read through the OS cache, so
//!   these runs are quick);
//! * `real`: the machine's disk with direct I/O, so every run is cold; the
//!   figure of merit is the median wall time of `repeat` runs, taken
//!   round-robin over the variants of a point so they share the machine's drift.
//!
//! Each run opens the database afresh, so the buffer pool — much smaller than the
//! table — starts empty. A run slower than the timeout is stopped and recorded
//! as censored (its time is a lower bound), and that path is not run at higher
//! selectivities on that device: an index scan over millions of rows on a disk
//! would take hours, as it does in the paper (Fig. 15).
//!
//! Results: `results/smooth-scan/<figure>.csv` (standard columns plus
//! sequential/random reads, heap pages, index entries, mode changes, censored),
//! a plot per device, and `<figure>.md` with the ratios the targets are
//! about.

pub mod columns;
pub mod competitive;
pub mod cost_model;
pub mod model;
pub mod robustness;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use strata_access::report::Mode;
use strata_access::{
    FinalSort, PageCosts, PathChoice, Policy, Predicate, ScanSpec, SmoothOptions, SortOptions,
    Trigger, TupleBatch, open_path,
};
use strata_storage::Database;
use strata_storage::db::DbOptions;
use strata_storage::device::DeviceProfile;

use crate::{Axis, Plot, ResultRow, ResultSet, Samples, Summary};

/// Figures this module reproduces.
pub const FIGURES: &[&str] = &["15a", "15b", "16", "17", "18", "19", "20", "21", "22", "23"];

#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Database holding the benchmark tables (created if missing).
    pub db_dir: PathBuf,
    /// Rows of the micro-benchmark table.
    pub rows: u64,
    /// `hdd`, `ssd`, `real`.
    pub devices: Vec<String>,
    pub pool_bytes: usize,
    /// Runs per point on the real device (median reported).
    pub repeat: usize,
    /// Seconds after which a run is stopped and recorded as censored.
    pub timeout_s: f64,
    pub out: PathBuf,
    /// Fewer selectivities.
    pub quick: bool,
}

/// One path in a figure: a display name and the access path.
struct Variant {
    name: String,
    choice: PathChoice,
    ordered: bool,
}

fn variant(name: &str, choice: PathChoice, ordered: bool) -> Variant {
    Variant {
        name: name.to_string(),
        choice,
        ordered,
    }
}

fn smooth_opts(db: &Path, f: impl FnOnce(&mut SmoothOptions)) -> PathChoice {
    let mut o = SmoothOptions {
        temp_dir: db.join("tmp"),
        ..Default::default()
    };
    f(&mut o);
    PathChoice::Smooth(o)
}

fn sweep(quick: bool) -> Vec<f64> {
    if quick {
        vec![0.001, 0.01, 0.1, 1.0, 10.0, 100.0]
    } else {
        vec![
            0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 50.0, 75.0, 100.0,
        ]
    }
}

/// Database options for a device name (`real`, `hdd`, `ssd`, a profile file:
/// [`DbOptions::device`], the one place that reads device names). A modeled
/// device charges modeled time whatever the files are opened with, so its runs
/// read through the OS cache and finish sooner in wall time.
fn device_options(device: &str, pool: usize) -> Result<DbOptions> {
    let mut opts = DbOptions {
        buffer_pool_bytes: pool,
        read_only: true,
        ..DbOptions::default()
    }
    .device(device)
    .with_context(|| format!("device '{device}' (hdd, ssd, real or a profile file)"))?;
    if opts.profile.is_some() {
        opts.direct_io = false;
    }
    Ok(opts)
}

/// Page costs of a modeled device (the real one uses the defaults).
fn page_costs(device: &str) -> Option<PageCosts> {
    DeviceProfile::builtin(device).map(|p| PageCosts::from_profile(&p))
}

/// Makes sure the benchmark tables exist (generated once, reused by later runs).
pub fn prepare(
    opts: &BenchOptions,
    skewed: bool,
    progress: &dyn strata_storage::Progress,
) -> Result<()> {
    let kind = if skewed {
        strata_load::GenKind::Skewed
    } else {
        strata_load::GenKind::Microbench
    };
    crate::bench_db::generate_missing(
        &opts.db_dir,
        vec![kind.default_table()],
        |name| name.to_string(),
        |t, _| t.rows() == opts.rows,
        |db, _| {
            strata_load::generate(db, &strata_load::GenSpec::new(kind, opts.rows), progress)?;
            Ok(())
        },
    )
}

/// The result of one run.
struct Run {
    wall_ms: f64,
    io: strata_storage::device::IoCounters,
    rows: u64,
    report: strata_access::report::ScanReport,
    censored: bool,
}

/// When a run is stopped and recorded as censored.
#[derive(Clone, Copy, Debug)]
struct Limit {
    /// Wall-clock seconds.
    wall_s: f64,
    /// Modeled milliseconds charged by the device during the run (modeled
    /// devices only; `None`: no modeled limit).
    modeled_ms: Option<f64>,
}

impl Limit {
    /// Whether a run that started at `start`, when `dev`'s counters stood at
    /// `before`, has passed the limit.
    fn passed(
        &self,
        dev: &dyn strata_storage::device::Device,
        before: &strata_storage::device::IoCounters,
        start: Instant,
    ) -> bool {
        let over_modeled = self.modeled_ms.is_some_and(|ms| {
            (dev.stats().snapshot().modeled_ns - before.modeled_ns) as f64 / 1e6 > ms
        });
        over_modeled || start.elapsed().as_secs_f64() > self.wall_s
    }
}

impl Run {
    /// The run that started at `start`, when `dev`'s counters stood at
    /// `before`, and ends now.
    fn since(
        start: Instant,
        dev: &dyn strata_storage::device::Device,
        before: &strata_storage::device::IoCounters,
        rows: u64,
        report: strata_access::report::ScanReport,
        censored: bool,
    ) -> Run {
        Run {
            wall_ms: start.elapsed().as_secs_f64() * 1e3,
            io: dev.stats().snapshot() - *before,
            rows,
            report,
            censored,
        }
    }
}

/// Runs one query cold (a fresh database open) with the deadline `--timeout`.
fn run_once(
    opts: &BenchOptions,
    device: &str,
    table: &str,
    pred: &str,
    v: &Variant,
) -> Result<Run> {
    let limit = Limit {
        wall_s: opts.timeout_s,
        modeled_ms: None,
    };
    run_limited(opts, device, table, pred, v, limit)
}

/// Runs one query cold (a fresh database open), stopped (censored) once it
/// passes `limit`: the wall clock, or the modeled time the device charged
/// since the run started. Both are checked after every batch.
fn run_limited(
    opts: &BenchOptions,
    device: &str,
    table: &str,
    pred: &str,
    v: &Variant,
    limit: Limit,
) -> Result<Run> {
    let db = Database::open(&opts.db_dir, device_options(device, opts.pool_bytes)?)?;
    let t = db.table(table)?;
    let predicate = Predicate::parse(t.schema(), pred)?;
    let mut spec = ScanSpec::new(t.clone(), predicate).ordered(v.ordered);
    if spec.index.is_none() {
        spec.index = Some(0);
    }
    let mut choice = v.choice.clone();
    if let PathChoice::Smooth(o) = &mut choice
        && let Some(c) = page_costs(device)
    {
        o.page_costs = c;
        o.modeled_clock = true;
    }
    let dev = db.device().clone();
    dev.stats().forget_position();
    let before = dev.stats().snapshot();
    let start = Instant::now();
    // Paths that need a final sort for ORDER BY get the memory the Result Cache
    // gets, spilling to the same temp directory, so ordered variants are
    // compared at equal memory. The sort is the classical external merge sort
    // (the paper's baselines'): on the disk a partitioned sort's scattered
    // writes cost it 6x (10M rows at 100%), and on flash the two are even.
    let sort = SortOptions {
        final_sort: FinalSort::Merge,
        memory_bytes: SmoothOptions::default().result_cache_bytes,
        temp_dir: opts.db_dir.join("tmp"),
        ..SortOptions::default()
    };
    let mut path = open_path(spec, &choice, &sort)?;
    let mut batch = TupleBatch::new();
    let mut rows = 0u64;
    let mut censored = false;
    while path.next_batch(&mut batch)? {
        rows += batch.len() as u64;
        if limit.passed(dev.as_ref(), &before, start) {
            censored = true;
            break;
        }
    }
    let report = path.report();
    drop(path);
    Ok(Run::since(
        start,
        dev.as_ref(),
        &before,
        rows,
        report,
        censored,
    ))
}

fn row_of(figure: &str, device: &str, v: &str, x: f64, r: &Run) -> ResultRow {
    let mut row = ResultRow::new(figure, device, v, x);
    row.wall_ms = r.wall_ms;
    row.modeled_ms = r.io.modeled_ms();
    row.pages_read = r.io.pages_read;
    row.io_requests = r.io.read_requests;
    row.rows_out = r.rows;
    row.with("sequential_reads", r.io.sequential_reads)
        .with("random_reads", r.io.random_reads)
        .with("pages_written", r.io.pages_written)
        .with("heap_pages", r.report.heap_pages)
        .with("index_entries", r.report.index_entries)
        .with("mode_changes", r.report.mode_changes.len())
        .with(
            "max_region",
            r.report.regions.iter().map(|r| r.1).max().unwrap_or(0),
        )
        .with(
            "rc_peak_bytes",
            r.report.result_cache.as_ref().map_or(0, |c| c.peak_bytes),
        )
        .with(
            "rc_spilled_partitions",
            r.report
                .result_cache
                .as_ref()
                .map_or(0, |c| c.spilled_partitions),
        )
        .with("censored", if r.censored { "yes" } else { "no" })
}

/// Measures `variants` at each x; `pred(x)` gives the predicate.
fn measure(
    opts: &BenchOptions,
    figure: &str,
    table: &str,
    xs: &[f64],
    pred: impl Fn(f64) -> String,
    variants: &[Variant],
    log: &mut dyn FnMut(&str),
) -> Result<ResultSet> {
    let mut samples = Samples::new();
    for device in &opts.devices {
        let runs = if device == "real" {
            opts.repeat.max(1)
        } else {
            1
        };
        let mut gave_up: Vec<String> = Vec::new();
        for &x in xs {
            // Round-robin over the variants, one run each per round, so the
            // drift of a shared machine falls on all of them alike and the
            // ratios between them stay fair.
            for _ in 0..runs {
                for v in variants {
                    if gave_up.contains(&v.name) {
                        continue;
                    }
                    let r = run_once(opts, device, table, &pred(x), v)?;
                    log(&format!(
                        "fig {figure} {device} {:<34} x={x:<8} rows={:<9} wall {:>9.1} ms modeled {:>10.1} ms{}",
                        v.name,
                        r.rows,
                        r.wall_ms,
                        r.io.modeled_ms(),
                        if r.censored { " (timed out)" } else { "" }
                    ));
                    let censored = r.censored;
                    samples.add(row_of(figure, device, &v.name, x, &r));
                    if censored {
                        gave_up.push(v.name.clone());
                    }
                }
            }
        }
    }
    Ok(samples.finish())
}

/// The time that counts on a device: modeled on modeled devices, wall on real.
fn cost(r: &ResultRow) -> f64 {
    if r.device == "real" {
        r.wall_ms
    } else {
        r.modeled_ms
    }
}

fn q1(hi_pct: f64) -> String {
    let hi = (100_001.0 * hi_pct / 100.0).round() as i64;
    format!("c2 >= 0 AND c2 < {}", hi.max(1))
}

/// Runs one figure and writes its files. Returns the summary text.
pub fn run_figure(figure: &str, opts: &BenchOptions, log: &mut dyn FnMut(&str)) -> Result<String> {
    let db = opts.db_dir.clone();
    let xs = sweep(opts.quick);
    let baseline = |ordered: bool| {
        vec![
            variant("full", PathChoice::Full, ordered),
            variant("index", PathChoice::Index, ordered),
            variant("sort", PathChoice::Sort, ordered),
        ]
    };
    let policy = |name: &str, policy: Policy, ordered: bool| {
        variant(name, smooth_opts(&db, |o| o.policy = policy), ordered)
    };
    // The adaptive policies Figs. 18 and 20 set beside the classical paths.
    let adaptive = || {
        [
            policy(
                "smooth selectivity-increase",
                Policy::SelectivityIncrease,
                false,
            ),
            policy("smooth elastic", Policy::Elastic, false),
        ]
    };
    let (set, x_title, notes): (ResultSet, &str, Vec<String>) = match figure {
        "15a" | "15b" | "23" => {
            let ordered = figure == "15a";
            let mut v = baseline(ordered);
            v.push(policy("smooth (elastic, eager)", Policy::Elastic, ordered));
            v.push(policy(
                "smooth (cost-aware, eager)",
                Policy::CostAware,
                ordered,
            ));
            // Ordered output takes the cost-aware regions whatever the policy.
            if !ordered {
                v.push(policy(
                    "smooth (page-order, eager; the default)",
                    Policy::PageOrder,
                    ordered,
                ));
            }
            let mut o = opts.clone();
            if figure == "23" {
                o.devices = vec!["ssd".into()];
            }
            by_selectivity(&o, figure, &xs, &v, log)?
        }
        "16" => {
            let v = vec![
                variant("full", PathChoice::Full, false),
                variant("index", PathChoice::Index, false),
                variant(
                    "smooth: entire page probe (mode 1)",
                    smooth_opts(&db, |o| o.max_mode = Mode::PageProbe),
                    false,
                ),
                variant(
                    "smooth: flattening (modes 2/2+)",
                    smooth_opts(&db, |_| {}),
                    false,
                ),
            ];
            by_selectivity(opts, figure, &xs, &v, log)?
        }
        "17" => {
            let caps: Vec<f64> = if opts.quick {
                vec![500.0, 2000.0]
            } else {
                vec![1000.0, 2000.0, 3000.0, 4000.0, 5000.0]
            };
            let set = sweep_parameter(
                opts,
                figure,
                &[1.0, 10.0, 100.0],
                &caps,
                false,
                log,
                |o, cap| o.max_region_pages = cap as u32,
            )?;
            (set, "region cap (pages)", vec![])
        }
        "18" => {
            let mut v = vec![
                variant("full", PathChoice::Full, false),
                policy("smooth greedy", Policy::Greedy, false),
            ];
            v.extend(adaptive());
            by_selectivity(opts, figure, &xs, &v, log)?
        }
        "19" => {
            // The optimizer's estimate is the row count of the smallest point of
            // the sweep (the paper's optimizer underestimates); the SLA bound is
            // twice a full scan on the same device, as in §7.5. Variant names
            // stay the same across devices so each plot has the same series.
            let est = (opts.rows as f64 * xs[0] / 100.0).max(1.0) as u64;
            let mut set = ResultSet::new();
            let mut notes = Vec::new();
            for device in &opts.devices {
                let r = run_once(
                    opts,
                    device,
                    "microbench",
                    &q1(100.0),
                    &variant("full", PathChoice::Full, false),
                )?;
                let full_ms = if device == "real" {
                    r.wall_ms
                } else {
                    r.io.modeled_ms()
                };
                let bound_ms = 2.0 * full_ms;
                notes.push(format!(
                    "{device}: SLA bound = 2 x full scan = {bound_ms:.1} ms"
                ));
                let v = vec![
                    variant("full", PathChoice::Full, false),
                    variant(
                        &format!("switch (estimate {est})"),
                        PathChoice::Switch { estimate: est },
                        false,
                    ),
                    variant("smooth eager", smooth_opts(&db, |_| {}), false),
                    variant(
                        &format!("smooth optimizer-driven (estimate {est})"),
                        smooth_opts(&db, |o| o.trigger = Trigger::Optimizer { estimate: est }),
                        false,
                    ),
                    variant(
                        "smooth SLA-driven (2 x full scan)",
                        smooth_opts(&db, |o| o.trigger = Trigger::Sla { bound_ms }),
                        false,
                    ),
                ];
                let one = BenchOptions {
                    devices: vec![device.clone()],
                    ..opts.clone()
                };
                set.extend(
                    measure(&one, figure, "microbench", &xs, q1, &v, log)?
                        .rows()
                        .iter()
                        .cloned(),
                );
            }
            (set, "selectivity (%)", notes)
        }
        "20" => {
            let mut v = vec![
                variant("full", PathChoice::Full, false),
                variant("index", PathChoice::Index, false),
            ];
            v.extend(adaptive());
            let set = measure(
                opts,
                figure,
                "skewed",
                &[0.0],
                |_| "c2 = 0".to_string(),
                &v,
                log,
            )?;
            (
                set,
                "query c2 = 0",
                vec!["x is not meaningful: one query, c2 = 0 on the skewed table".into()],
            )
        }
        "21" => {
            let v = vec![
                variant("smooth unordered", smooth_opts(&db, |_| {}), false),
                variant(
                    "smooth ordered (result cache)",
                    smooth_opts(&db, |_| {}),
                    true,
                ),
                variant("index (ordered by nature)", PathChoice::Index, true),
            ];
            by_selectivity(opts, figure, &xs, &v, log)?
        }
        "22" => {
            let budgets = [0.25, 1.0, 4.0, 16.0, 64.0];
            let set = sweep_parameter(
                opts,
                figure,
                &[10.0, 100.0],
                &budgets,
                true,
                log,
                |o, mb| o.result_cache_bytes = (mb * 1048576.0) as usize,
            )?;
            (set, "result cache budget (MiB)", vec![])
        }
        other => bail!("unknown figure '{other}' (one of {})", FIGURES.join(", ")),
    };
    write_figure(figure, opts, &set, x_title, &notes)
}

/// A figure over the selectivity sweep `xs` on the micro-benchmark table (q1):
/// its results, x title and (no) notes.
fn by_selectivity(
    opts: &BenchOptions,
    figure: &str,
    xs: &[f64],
    variants: &[Variant],
    log: &mut dyn FnMut(&str),
) -> Result<(ResultSet, &'static str, Vec<String>)> {
    let set = measure(opts, figure, "microbench", xs, q1, variants, log)?;
    Ok((set, "selectivity (%)", Vec::new()))
}

/// Smooth Scan at fixed selectivities while one option takes `values`: the
/// option's value becomes x and each selectivity a series (Figs. 17 and 22).
fn sweep_parameter(
    opts: &BenchOptions,
    figure: &str,
    selectivities: &[f64],
    values: &[f64],
    ordered: bool,
    log: &mut dyn FnMut(&str),
    set_option: impl Fn(&mut SmoothOptions, f64),
) -> Result<ResultSet> {
    let mut set = ResultSet::new();
    for &sel in selectivities {
        let v: Vec<Variant> = values
            .iter()
            .map(|&x| {
                variant(
                    &format!("{x}"),
                    smooth_opts(&opts.db_dir, |o| set_option(o, x)),
                    ordered,
                )
            })
            .collect();
        for mut r in measure(opts, figure, "microbench", &[sel], q1, &v, log)?
            .rows()
            .iter()
            .cloned()
        {
            r.x = r.variant.parse().unwrap_or(0.0);
            r.variant = format!("selectivity {sel}%");
            set.push(r);
        }
    }
    Ok(set)
}

/// Writes the CSV, a plot per device, and the summary.
fn write_figure(
    figure: &str,
    opts: &BenchOptions,
    set: &ResultSet,
    x_title: &str,
    notes: &[String],
) -> Result<String> {
    std::fs::create_dir_all(&opts.out)?;
    set.write_csv(opts.out.join(format!("{figure}.csv")))?;
    let log_x = x_title.starts_with("selectivity");
    let mut summary = Summary::new(&format!("Smooth Scan, figure {figure}"));
    summary.paragraph(&format!(
        "Command: `strata bench smooth-scan {figure} --rows {} --devices {}{}`. Table: {} rows; buffer pool {} MiB; real-device points are medians of {} cold runs (direct I/O); modeled points are the deterministic modeled time.",
        opts.rows,
        opts.devices.join(","),
        if opts.quick { " --quick" } else { "" },
        opts.rows,
        opts.pool_bytes >> 20,
        opts.repeat
    ));
    for n in notes {
        summary.paragraph(n);
    }
    let mut devices: Vec<String> = Vec::new();
    for r in set.rows() {
        if !devices.contains(&r.device) {
            devices.push(r.device.clone());
        }
    }
    for device in &devices {
        let series = set.series(|r| &r.device == device, cost);
        let x_axis = if log_x {
            Axis::log10(x_title)
        } else {
            Axis::linear(x_title)
        };
        let what = if device == "real" {
            "wall time, cold (ms)"
        } else {
            "modeled time (ms)"
        };
        let plot = Plot::lines(
            format!("Fig. {figure} ({device})"),
            x_axis,
            Axis::log10(what),
        )
        .extend_series(series);
        let stem = opts.out.join(format!("{figure}-{device}"));
        plot.write(&stem)
            .with_context(|| format!("writing {}", stem.display()))?;
        summary.image(
            &format!("figure {figure} on {device}"),
            &format!("{figure}-{device}.png"),
        );
        // Ratios: Smooth Scan against the best classical path at each x.
        let rows: Vec<&ResultRow> = set.rows().iter().filter(|r| &r.device == device).collect();
        let mut xs: Vec<f64> = rows.iter().map(|r| r.x).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        let classical = |r: &&ResultRow| ["full", "index", "sort"].contains(&r.variant.as_str());
        let mut table = Vec::new();
        for x in &xs {
            let at: Vec<&&ResultRow> = rows.iter().filter(|r| r.x == *x).collect();
            let best = at
                .iter()
                .filter(|r| classical(r))
                .map(|r| cost(r))
                .fold(f64::INFINITY, f64::min);
            let mut cells = vec![format!("{x}")];
            for r in &at {
                let c = cost(r);
                let censored = r.get("censored") == "yes";
                cells.push(format!(
                    "{}: {}{}",
                    r.variant,
                    crate::report::summary::num(c),
                    if censored {
                        " (>, timed out)".to_string()
                    } else if best.is_finite() && !classical(r) {
                        format!(" ({:.2}x best)", c / best)
                    } else {
                        String::new()
                    }
                ));
            }
            table.push(cells);
        }
        summary.heading(&format!(
            "{device}: time (ms) per point, and Smooth Scan against the best of full/index/sort"
        ));
        summary.table(
            &["x", "variants"],
            table.iter().map(|c| vec![c[0].clone(), c[1..].join("; ")]),
        );
    }
    summary.write(opts.out.join(format!("{figure}.md")))?;
    Ok(summary.as_str().to_string())
}

/// Every figure, in order.
pub fn run_all(opts: &BenchOptions, log: &mut dyn FnMut(&str)) -> Result<()> {
    for f in FIGURES {
        run_figure(f, opts, log)?;
    }
    Ok(())
}

/// The sweep in PostgreSQL (forced Seq Scan, Index Scan, Bitmap Heap Scan on the
/// same rows, cold where permitted) beside strata's own real-device points of the
/// same figure (`15b`, or `15a` with `ordered`), in one CSV, plot and summary:
/// `postgres.csv` / `postgres-ordered.csv`.
pub fn postgres_figure(
    opts: &BenchOptions,
    ordered: bool,
    drop_caches: bool,
    log: &mut dyn FnMut(&str),
) -> Result<String> {
    let mut pg = crate::postgres::PgOptions::new(
        std::path::absolute(&opts.db_dir)?,
        std::path::absolute(opts.db_dir.with_extension("pg"))?,
    );
    pg.selectivities_pct = sweep(opts.quick);
    pg.ordered = ordered;
    pg.repeat = opts.repeat.max(1);
    pg.shared_buffers = format!("{}MB", (opts.pool_bytes >> 20).max(1));
    pg.timeout_s = opts.timeout_s;
    pg.drop_caches = drop_caches;
    let (pg_rows, notes) = crate::postgres::run_postgres_sweep(&pg, &mut |l| log(l))?;
    let strata_fig = if ordered { "15a" } else { "15b" };
    let mut set = ResultSet::new();
    match ResultSet::read_csv(opts.out.join(format!("{strata_fig}.csv"))) {
        Ok(ours) => set.extend(
            ours.rows()
                .iter()
                .filter(|r| r.device == "real")
                .cloned()
                .map(|mut r| {
                    r.variant = format!("strata {}", r.variant);
                    r
                }),
        ),
        Err(_) => log(&format!(
            "no strata results for figure {strata_fig} in {}: run `strata bench smooth-scan {strata_fig} --devices real` with the same --out first to see both side by side",
            opts.out.display()
        )),
    }
    set.extend(pg_rows.rows().iter().cloned());
    let name = if ordered {
        "postgres-ordered"
    } else {
        "postgres"
    };
    let mut notes = notes;
    notes.push(format!(
        "PostgreSQL rows: shared_buffers {} MiB, the same rows copied from the strata table, each run after a server restart; `pages_read` for PostgreSQL counts buffer accesses (hit + read), see the `shared_read_blocks` column for blocks read from the OS.",
        opts.pool_bytes >> 20
    ));
    write_figure(name, opts, &set, "selectivity (%)", &notes)
}
