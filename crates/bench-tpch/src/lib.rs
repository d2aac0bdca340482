//! `strata bench tpch` —
//! the Smooth Scan paper's TPC-H experiment (Fig. 13, Table 2): Q1, Q4, Q6, Q7,
//! Q12, Q14 and Q19 under the classical optimizer with fresh and with stale
//! statistics, under Smooth Scan, and under each fixed access path, cold, with
//! wall time and I/O requests per query.
//!
//! # How statistics go stale
//!
//! The benchmark database is loaded the way a warehouse is: its history first,
//! then the recent rows. Every table is loaded with the orders placed before
//! [`STALE_CUTOFF`] (orders by `o_orderdate`, lineitem by `l_shipdate`; the
//! other tables whole), then `ANALYZE` runs, then the remaining orders and
//! lineitems are appended (loads never touch statistics). The statistics of
//! that first `ANALYZE` are the *stale* ones: they describe 1992 only, so a
//! predicate on a later date looks empty to the optimizer — it takes the index
//! for a range that holds a sixth of the table (Q6), which is the §1 / §7.8
//! trap. A second `ANALYZE` at the end gives the *fresh* statistics. Both are
//! kept beside the database (`stats-stale.json`, `stats-fresh.json`) and put
//! into the catalog before the runs that use them.
//!
//! # Runs
//!
//! Every run opens the database anew (an empty buffer pool) on the chosen
//! device — with the default `real` device, direct I/O, so every run is cold
//! without dropping the OS cache — and runs the query to completion. A run
//! that exceeds the timeout is cancelled and recorded as censored (its time is
//! then a lower bound); a censored point is not repeated. The repetitions of a
//! query go round-robin over the configurations, so that a machine that slows
//! down or speeds up half way does so for all of them, in an order rotated
//! each repetition.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use strata_bench::{Axis, Plot, ResultRow, ResultSet, Samples, Summary};
use strata_load::{TpchSpec, TpchTable, append_tpch_rows};
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::types::{Value, days_from_civil};

use strata_sql::{AccessPathSetting, SqlSession};

/// Orders before this date are the history loaded (and analyzed) first.
pub const STALE_CUTOFF: (i32, u32, u32) = (1993, 1, 1);

/// One configuration of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Config {
    /// `optimizer` with the statistics of the whole database.
    OptimizerFresh,
    /// `optimizer` with the statistics of the history only.
    OptimizerStale,
    Path(AccessPathSetting),
}

impl Config {
    pub const DEFAULT: [Config; 7] = [
        Config::OptimizerFresh,
        Config::OptimizerStale,
        Config::Path(AccessPathSetting::Smooth),
        Config::Path(AccessPathSetting::Full),
        Config::Path(AccessPathSetting::Index),
        Config::Path(AccessPathSetting::Sort),
        Config::Path(AccessPathSetting::Switch),
    ];

    pub fn name(self) -> String {
        match self {
            Config::OptimizerFresh => "optimizer-fresh".into(),
            Config::OptimizerStale => "optimizer-stale".into(),
            Config::Path(p) => p.name().into(),
        }
    }

    pub fn parse(s: &str) -> Result<Config, String> {
        match s {
            "optimizer-fresh" => Ok(Config::OptimizerFresh),
            "optimizer-stale" => Ok(Config::OptimizerStale),
            "optimizer" => Err(
                "say optimizer-fresh or optimizer-stale (which statistics the optimizer plans from)"
                    .into(),
            ),
            other => other.parse().map(Config::Path).map_err(|e: String| {
                format!("{e}; or optimizer-fresh, optimizer-stale")
            }),
        }
    }

    fn setting(self) -> AccessPathSetting {
        match self {
            Config::OptimizerFresh | Config::OptimizerStale => AccessPathSetting::Optimizer,
            Config::Path(p) => p,
        }
    }

    fn is_fixed(self) -> bool {
        matches!(
            self,
            Config::Path(
                AccessPathSetting::Full | AccessPathSetting::Index | AccessPathSetting::Sort
            )
        )
    }
}

#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub sf: f64,
    pub bench_db: PathBuf,
    pub out: PathBuf,
    pub queries: Vec<String>,
    pub configs: Vec<Config>,
    pub repeat: usize,
    pub timeout: Duration,
    pub db_options: DbOptions,
    /// The `--device` name, for the rows.
    pub device: String,
    pub with_postgres: bool,
}

const STALE_FILE: &str = "stats-stale.json";
const FRESH_FILE: &str = "stats-fresh.json";

/// Builds the benchmark database (see the module docs) unless it is there.
pub fn prepare(opts: &BenchOptions, progress: &mut dyn FnMut(&str)) -> Result<()> {
    let dir = &opts.bench_db;
    if dir.join(FRESH_FILE).exists() && dir.join(STALE_FILE).exists() {
        progress(&format!("reusing {}", dir.display()));
        return Ok(());
    }
    if dir.exists() {
        bail!(
            "{} exists but is not a finished TPC-H benchmark database (no {FRESH_FILE}); \
             remove it or choose another --bench-db",
            dir.display()
        );
    }
    let db = Database::create(dir, opts.db_options.clone())?;
    let cutoff = days_from_civil(STALE_CUTOFF.0, STALE_CUTOFF.1, STALE_CUTOFF.2);
    let date_col = |t: TpchTable| match t {
        TpchTable::Orders => Some(t.schema().index_of("o_orderdate").expect("TPC-H column")),
        TpchTable::LineItem => Some(t.schema().index_of("l_shipdate").expect("TPC-H column")),
        _ => None,
    };
    let old = |col: Option<usize>, row: &[Value]| match col {
        Some(c) => matches!(row[c], Value::Date(d) if d < cutoff),
        None => true,
    };
    let spec = TpchSpec::new(opts.sf);
    for t in TpchTable::ALL {
        progress(&format!("loading {t} (history)"));
        let col = date_col(t);
        let mut load =
            db.begin_create_load(t.name(), t.schema(), spec.options.clone(), t.indexes())?;
        append_tpch_rows(&mut load, t, opts.sf, &mut |r| old(col, r), &NoProgress)?;
        load.commit(&NoProgress)?;
    }
    let db = Arc::new(db);
    let session = SqlSession::new(db.clone())?;
    progress("ANALYZE (the statistics that will go stale)");
    session.execute("ANALYZE")?;
    let stale = snapshot(&db)?;
    for t in [TpchTable::Orders, TpchTable::LineItem] {
        progress(&format!("appending {t} (recent)"));
        let col = date_col(t);
        let mut load = db.begin_load(t.name())?;
        append_tpch_rows(&mut load, t, opts.sf, &mut |r| !old(col, r), &NoProgress)?;
        load.commit(&NoProgress)?;
    }
    progress("ANALYZE (fresh statistics)");
    session.execute("ANALYZE")?;
    let fresh = snapshot(&db)?;
    write_json(&dir.join(STALE_FILE), &stale)?;
    write_json(&dir.join(FRESH_FILE), &fresh)?;
    Ok(())
}

fn snapshot(db: &Database) -> Result<serde_json::Value> {
    let mut m = serde_json::Map::new();
    for name in db.table_names() {
        if let Some(s) = db.table_stats(&name)? {
            m.insert(name, s);
        }
    }
    Ok(serde_json::Value::Object(m))
}

fn write_json(path: &Path, v: &serde_json::Value) -> Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(v)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

/// Puts the statistics of `file` into the catalog.
fn install_stats(dir: &Path, file: &str, db_options: &DbOptions) -> Result<()> {
    let text = std::fs::read(dir.join(file)).with_context(|| format!("reading {file}"))?;
    let v: serde_json::Value = serde_json::from_slice(&text)?;
    let db = Database::open(dir, db_options.clone())?;
    for (table, stats) in v.as_object().context("statistics file is not an object")? {
        db.set_table_stats(table, stats.clone())?;
    }
    Ok(())
}

/// One run's measurements.
struct Run {
    wall_ms: f64,
    rows: u64,
    io_requests: u64,
    pages_read: u64,
    modeled_ms: f64,
    censored: bool,
}

/// The access paths the scans of `sql` take, from EXPLAIN: one entry per
/// strata scan, `table: path`.
fn plan_of(session: &SqlSession, sql: &str) -> Result<String> {
    let r = session.execute(&format!("EXPLAIN {sql}"))?;
    let text = strata_sql::format::render(strata_sql::Format::Csv, &r.schema, &r.batches)?;
    let mut scans: Vec<String> = text
        .split("StrataScanExec: ")
        .skip(1)
        .filter_map(|s| {
            // one plan line: stop at its end (the CSV quotes multi-line plans)
            let s = s.split(['\n', '"']).next()?;
            let table = s.strip_prefix("table=")?.split(',').next()?;
            let path = s.split(", path=").nth(1)?.split(", ").next()?;
            Some(format!("{table}: {path}"))
        })
        .collect();
    scans.sort();
    scans.dedup();
    Ok(scans.join("; "))
}

fn run_once(opts: &BenchOptions, config: Config, sql: &str) -> Result<(Run, String)> {
    let sql = sql.trim().trim_end_matches(';');
    let db = Arc::new(Database::open(&opts.bench_db, opts.db_options.clone())?);
    let session = SqlSession::new(db)?;
    session.set("strata.access_path", config.setting().name())?;
    let plan = plan_of(&session, sql)?;
    let r = session.execute_with_timeout(sql, opts.timeout)?;
    Ok((
        Run {
            wall_ms: r.as_ref().map_or(opts.timeout.as_secs_f64() * 1e3, |r| {
                r.elapsed.as_secs_f64() * 1e3
            }),
            rows: r.as_ref().map_or(0, |r| r.rows() as u64),
            io_requests: r.as_ref().map_or(0, |r| r.io.read_requests),
            pages_read: r.as_ref().map_or(0, |r| r.io.pages_read),
            modeled_ms: r.as_ref().map_or(0.0, |r| r.io.modeled_ms()),
            censored: r.is_none(),
        },
        plan,
    ))
}

/// Runs the benchmark; returns one row per (query, config), medians of the
/// repeats, and notes for the summary.
pub fn run(
    opts: &BenchOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<(ResultSet, Vec<String>)> {
    if opts.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let queries: Vec<(String, &str)> = opts
        .queries
        .iter()
        .map(|q| {
            strata_sql::tpch::query(q)
                .map(|sql| {
                    (
                        format!(
                            "q{:02}",
                            q.trim_start_matches(['q', 'Q']).parse::<u32>().unwrap_or(0)
                        ),
                        sql,
                    )
                })
                .with_context(|| format!("unknown TPC-H query '{q}' (q1 .. q22)"))
        })
        .collect::<Result<_>>()?;
    prepare(opts, progress)?;
    let mut samples = Samples::new();
    let mut notes = vec![format!(
        "TPC-H SF {} in {}: history before {}-{:02}-{:02} loaded and analyzed first (stale statistics), \
         the rest appended, analyzed again (fresh); cold runs on device `{}`, timeout {} s",
        opts.sf,
        opts.bench_db.display(),
        STALE_CUTOFF.0,
        STALE_CUTOFF.1,
        STALE_CUTOFF.2,
        opts.device,
        opts.timeout.as_secs_f64()
    )];
    // Round-robin: each repetition runs every configuration once, so that
    // the machine's drift falls on all of them alike, in an order rotated
    // each repetition so that none always runs right after the same one.
    let mut installed = None;
    for (qi, (name, sql)) in queries.iter().enumerate() {
        let mut censored = vec![false; opts.configs.len()];
        for rep in 0..opts.repeat {
            for k in 0..opts.configs.len() {
                let ci = (rep + k) % opts.configs.len();
                let config = opts.configs[ci];
                if censored[ci] {
                    continue;
                }
                let stats = if config == Config::OptimizerStale {
                    STALE_FILE
                } else {
                    FRESH_FILE
                };
                if installed != Some(stats) {
                    install_stats(&opts.bench_db, stats, &opts.db_options)?;
                    installed = Some(stats);
                }
                let (run, plan) = run_once(opts, config, sql)
                    .with_context(|| format!("{name} under {}", config.name()))?;
                progress(&format!(
                    "{name} {:>16} run {}: {:>10.1} ms{} {:>8} requests  [{plan}]",
                    config.name(),
                    rep + 1,
                    run.wall_ms,
                    if run.censored { " (timeout)" } else { "" },
                    run.io_requests
                ));
                let mut row = ResultRow::new("tpch", &opts.device, config.name(), (qi + 1) as f64)
                    .with("query", name)
                    .with("plan", &plan)
                    .with("censored", if run.censored { "yes" } else { "no" });
                row.wall_ms = run.wall_ms;
                row.modeled_ms = run.modeled_ms;
                row.io_requests = run.io_requests;
                row.pages_read = run.pages_read;
                row.rows_out = run.rows;
                samples.add(row);
                censored[ci] = run.censored;
            }
        }
    }
    install_stats(&opts.bench_db, FRESH_FILE, &opts.db_options)?;
    let mut results = samples.finish();
    if opts.with_postgres {
        use strata_bench::postgres::{PgConfig, PgQueryOptions, run_postgres_queries};
        let tables: Vec<&str> = TpchTable::ALL.iter().map(|t| t.name()).collect();
        let mut o =
            PgQueryOptions::new(&opts.bench_db, &tables, opts.bench_db.with_extension("pg"));
        o.repeat = opts.repeat;
        o.timeout_s = opts.timeout.as_secs_f64();
        let pg_queries: Vec<(String, String)> = queries
            .iter()
            .map(|(n, s)| (n.clone(), s.to_string()))
            .collect();
        let (pg, pg_notes) =
            run_postgres_queries(&o, &pg_queries, &[PgConfig::Optimizer], progress)?;
        for r in pg.rows() {
            results.push(r.clone());
        }
        notes.extend(pg_notes);
    }
    Ok((results, notes))
}

/// Median wall time of `config` on query `q`, and whether it was censored.
fn wall(results: &ResultSet, q: &str, config: &str) -> Option<(f64, bool)> {
    results
        .rows()
        .iter()
        .find(|r| r.get("query") == q && r.variant == config)
        .map(|r| (r.wall_ms, r.get("censored") == "yes"))
}

fn ms(v: Option<(f64, bool)>) -> String {
    match v {
        Some((w, true)) => format!("≥ {:.0}", w),
        Some((w, false)) => format!("{w:.0}"),
        None => "-".into(),
    }
}

/// Writes `tpch.csv`, the plots and `tpch.md` into `out`.
pub fn write(opts: &BenchOptions, results: &ResultSet, notes: &[String]) -> Result<PathBuf> {
    std::fs::create_dir_all(&opts.out)?;
    results.write_csv(opts.out.join("tpch.csv"))?;
    let mut queries: Vec<String> = Vec::new();
    let mut variants: Vec<String> = Vec::new();
    for r in results.rows() {
        let q = r.get("query");
        if !queries.contains(&q) {
            queries.push(q);
        }
        if !variants.contains(&r.variant) {
            variants.push(r.variant.clone());
        }
    }
    let mut plot = Plot::bars(
        format!(
            "TPC-H SF {} on {}: cold wall time per query",
            opts.sf, opts.device
        ),
        "query",
        queries.iter().map(|q| q.to_uppercase()),
        Axis::log10("wall time (ms)"),
    );
    let mut io_plot = Plot::bars(
        format!("TPC-H SF {}: I/O requests per query", opts.sf),
        "query",
        queries.iter().map(|q| q.to_uppercase()),
        Axis::log10("read requests"),
    );
    for v in &variants {
        let row = |q: &String| {
            results
                .rows()
                .iter()
                .find(|r| &r.get("query") == q && &r.variant == v)
        };
        plot = plot.bar_series(v, queries.iter().map(|q| row(q).map_or(0.0, |r| r.wall_ms)));
        io_plot = io_plot.bar_series(
            v,
            queries
                .iter()
                .map(|q| row(q).map_or(0.0, |r| r.io_requests.max(1) as f64)),
        );
    }
    plot.write(opts.out.join("tpch"))?;
    io_plot.write(opts.out.join("tpch-io"))?;

    let mut s = Summary::new(&format!("TPC-H SF {} — access paths under SQL", opts.sf));
    s.paragraph(
        "Cold wall time in ms (median of the runs; ≥ marks a run cancelled at the timeout) \
         and read requests per query, as the Smooth Scan paper's Fig. 13 and Table 2. \
         `smooth/best` is Smooth Scan against the best fixed path (full, index, sort); \
         `stale/smooth` is the optimizer with stale statistics against Smooth Scan.",
    );
    let mut header = vec!["query".to_string()];
    header.extend(variants.iter().cloned());
    header.push("smooth/best".into());
    header.push("stale/smooth".into());
    let mut rows = Vec::new();
    for q in &queries {
        let mut row = vec![q.to_uppercase()];
        for v in &variants {
            row.push(ms(wall(results, q, v)));
        }
        let smooth = wall(results, q, "smooth");
        let best = variants
            .iter()
            .filter(|v| Config::parse(v).is_ok_and(Config::is_fixed))
            .filter_map(|v| wall(results, q, v))
            .filter(|(_, c)| !c)
            .map(|(w, _)| w)
            .fold(f64::INFINITY, f64::min);
        row.push(match smooth {
            Some((w, false)) if best.is_finite() => format!("{:.2}", w / best),
            _ => "-".into(),
        });
        row.push(match (wall(results, q, "optimizer-stale"), smooth) {
            (Some((st, censored)), Some((sm, false))) => {
                format!("{}{:.1}", if censored { "≥ " } else { "" }, st / sm)
            }
            _ => "-".into(),
        });
        rows.push(row);
    }
    s.table(&header, &rows);
    let mut io_rows = Vec::new();
    for q in &queries {
        let mut row = vec![q.to_uppercase()];
        for v in &variants {
            let r = results
                .rows()
                .iter()
                .find(|r| &r.get("query") == q && &r.variant == v);
            row.push(r.map_or("-".into(), |r| {
                if r.get("censored") == "yes" {
                    "(timeout)".into()
                } else if r.get("io_requests_known") == "no" {
                    // PostgreSQL reports buffer accesses, not requests.
                    format!("n/a ({} pages)", r.pages_read)
                } else {
                    r.io_requests.to_string()
                }
            }));
        }
        io_rows.push(row);
    }
    s.heading("Read requests");
    s.table(&header[..header.len() - 2], &io_rows);
    s.heading("Plans");
    let plans: Vec<String> = results
        .rows()
        .iter()
        .filter(|r| r.variant.starts_with("optimizer"))
        .map(|r| {
            format!(
                "{} {}: {}",
                r.get("query").to_uppercase(),
                r.variant,
                r.get("plan")
            )
        })
        .collect();
    s.bullets(plans);
    s.image("wall time", "tpch.png");
    s.image("I/O requests", "tpch-io.png");
    s.heading("Notes");
    s.bullets(notes);
    let path = opts.out.join("tpch.md");
    s.write(&path)?;
    Ok(path)
}
