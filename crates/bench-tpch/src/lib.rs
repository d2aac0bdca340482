//! `strata bench tpch` —
//! the Smooth Scan paper's TPC-H experiment (§7.2: Fig. 1, Fig. 13, Tables 2
//! and 3, Fig. 14): Q1, Q4, Q6, Q7, Q12, Q14 and Q19 (or any of the 22) under
//! the classical optimizer with fresh and with stale statistics, under Smooth
//! Scan (with fresh and with stale statistics), and under each fixed access
//! path, cold, with wall time, I/O requests, bytes read and the sizes of the
//! read requests per query. [`analysis`] makes Tables 2 and 3 and Fig. 1 of
//! the results; [`trace`] traces Q1's reads for Fig. 14.
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

pub mod analysis;
pub mod encoding;
pub mod engines;
pub mod lookups;
pub mod trace;

/// Converts the eight TPC-H tables of `db` to columns (each index kept as
/// a column tree), as `strata gen tpch --table-format columns` does.
pub fn tpch_to_columns(db: &Database) -> Result<()> {
    for t in TpchTable::ALL {
        strata_columns::rewrite(db, t.name(), strata_columns::Format::Columns, &NoProgress)?;
    }
    Ok(())
}

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use strata_bench::{Axis, Plot, ResultRow, ResultSet, Samples, Summary};
use strata_load::{TpchSpec, TpchTable, load_tpch_history_then_recent};
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::device::READ_SIZE_BUCKETS;
use strata_storage::row::days_from_civil;

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
    /// Smooth Scan with the statistics of the history only: they matter to it
    /// only through the plan around the scans (e.g. whether a join is an
    /// index nested-loop join into a Smooth Scan).
    SmoothStale,
    Path(AccessPathSetting),
}

impl Config {
    pub const DEFAULT: [Config; 8] = [
        Config::OptimizerFresh,
        Config::OptimizerStale,
        Config::Path(AccessPathSetting::Smooth),
        Config::SmoothStale,
        Config::Path(AccessPathSetting::Full),
        Config::Path(AccessPathSetting::Index),
        Config::Path(AccessPathSetting::Sort),
        Config::Path(AccessPathSetting::Switch),
    ];

    pub fn name(self) -> String {
        match self {
            Config::OptimizerFresh => "optimizer-fresh".into(),
            Config::OptimizerStale => "optimizer-stale".into(),
            Config::SmoothStale => "smooth-stale".into(),
            Config::Path(p) => p.name().into(),
        }
    }

    pub fn parse(s: &str) -> Result<Config, String> {
        match s {
            "optimizer-fresh" => Ok(Config::OptimizerFresh),
            "optimizer-stale" => Ok(Config::OptimizerStale),
            "smooth-stale" => Ok(Config::SmoothStale),
            "optimizer" => Err(
                "say optimizer-fresh or optimizer-stale (which statistics the optimizer plans from)"
                    .into(),
            ),
            other => other.parse().map(Config::Path).map_err(|e: String| {
                format!("{e}; or optimizer-fresh, optimizer-stale, smooth-stale")
            }),
        }
    }

    fn setting(self) -> AccessPathSetting {
        match self {
            Config::OptimizerFresh | Config::OptimizerStale => AccessPathSetting::Optimizer,
            Config::SmoothStale => AccessPathSetting::Smooth,
            Config::Path(p) => p,
        }
    }

    /// Whether the configuration plans with the stale statistics.
    fn stale(self) -> bool {
        matches!(self, Config::OptimizerStale | Config::SmoothStale)
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
    /// With `with_postgres`: drop the OS page cache before every PostgreSQL
    /// query (root only). Off by default: a benchmark does not change the
    /// machine unless asked to.
    pub drop_caches: bool,
    /// With `with_postgres`: PostgreSQL's binaries from this directory
    /// instead of the newest installed.
    pub postgres_bin: Option<PathBuf>,
}

const STALE_FILE: &str = "stats-stale.json";
pub(crate) const FRESH_FILE: &str = "stats-fresh.json";

/// The queries named by `--queries`: `all` is the 22, anything else a list
/// of names (`1`, `q6`, `Q06`), each as `qNN` with its SQL.
pub fn resolve_queries(names: &[String]) -> Result<Vec<(String, &'static str)>> {
    let all: Vec<String>;
    let names = if names.iter().any(|n| n.eq_ignore_ascii_case("all")) {
        all = strata_sql::tpch::QUERIES
            .iter()
            .map(|(q, _)| q.to_string())
            .collect();
        &all[..]
    } else {
        names
    };
    names
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
                .with_context(|| format!("unknown TPC-H query '{q}' (q1 .. q22, or all)"))
        })
        .collect()
}

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
    let db = Arc::new(Database::create(dir, opts.db_options.clone())?);
    let cutoff = days_from_civil(STALE_CUTOFF.0, STALE_CUTOFF.1, STALE_CUTOFF.2);
    let mut stale = serde_json::Value::Null;
    let mut note = |s: &str| progress(s);
    load_tpch_history_then_recent::<anyhow::Error>(
        &db,
        &TpchSpec::new(opts.sf),
        cutoff,
        &mut || {
            // A session made now sees the tables the history created.
            SqlSession::new(db.clone())?.execute("ANALYZE")?;
            stale = snapshot(&db)?;
            Ok(())
        },
        &mut note,
        &NoProgress,
    )?;
    progress("ANALYZE (fresh statistics)");
    SqlSession::new(db.clone())?.execute("ANALYZE")?;
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
pub(crate) fn install_stats(dir: &Path, file: &str, db_options: &DbOptions) -> Result<()> {
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
    read_sizes: [u64; READ_SIZE_BUCKETS],
    modeled_ms: f64,
    censored: bool,
}

/// The access paths the scans of `sql` take and its index nested-loop
/// joins, from EXPLAIN ([`plan_in`]).
fn plan_of(session: &SqlSession, sql: &str) -> Result<String> {
    let r = session.execute(&format!("EXPLAIN {sql}"))?;
    let text = strata_sql::shell::format::render(strata_sql::Format::Csv, &r.schema, &r.batches)?;
    Ok(plan_in(&text))
}

/// The plan in an EXPLAIN text, in short: one entry per strata scan, `table:
/// path` (sorted), then one per index nested-loop join (`IndexJoinExec`), `join: INLJ into
/// <table> via <index> (<inner path>)`, joined by `; `.
pub fn plan_in(explain: &str) -> String {
    // One plan line after `marker`: up to its end (the CSV quotes multi-line
    // plans).
    let lines = |marker: &str| -> Vec<String> {
        explain
            .split(marker)
            .skip(1)
            .filter_map(|s| s.split(['\n', '"']).next())
            .map(str::to_string)
            .collect()
    };
    // The value of `key=` in a line: up to the next `, ` outside parentheses
    // (a path's label has commas in its parentheses).
    let field = |line: &str, key: &str| -> Option<String> {
        let at = if line.starts_with(key) {
            0
        } else {
            line.find(&format!(", {key}"))? + 2
        };
        let rest = &line[at + key.len()..];
        let mut depth = 0i32;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 && rest[i..].starts_with(", ") => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        Some(rest[..end].to_string())
    };
    let mut scans: Vec<String> = lines("StrataScanExec: ")
        .iter()
        .filter_map(|l| Some(format!("{}: {}", field(l, "table=")?, field(l, "path=")?)))
        .collect();
    scans.sort();
    scans.dedup();
    let join_lines = lines("IndexJoinExec: ");
    let mut joins: Vec<String> = join_lines
        .iter()
        .filter_map(|l| {
            Some(format!(
                "join: INLJ into {} ({})",
                field(l, "inner=")?,
                field(l, "inner_path=")?
            ))
        })
        .collect();
    joins.sort();
    joins.dedup();
    scans.extend(joins);
    scans.join("; ")
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
            read_sizes: r
                .as_ref()
                .map_or([0; READ_SIZE_BUCKETS], |r| r.io.read_sizes),
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
    let queries = resolve_queries(&opts.queries)?;
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
                let stats = if config.stale() {
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
                analysis::add_io_columns(&mut row, run.pages_read, &run.read_sizes);
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
        o.drop_caches = opts.drop_caches;
        o.postgres_bin = opts.postgres_bin.clone();
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

use analysis::wall;

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
         per query, as the Smooth Scan paper's Fig. 13. \
         `smooth/best` is Smooth Scan against the best fixed path (full, index, sort); \
         `stale/smooth` is the optimizer with stale statistics against Smooth Scan; \
         `smooth-stale/best` is Smooth Scan with stale statistics against the fastest \
         configuration of the query that finished (any path, any join; strata's only).",
    );
    let mut header = vec!["query".to_string()];
    header.extend(variants.iter().cloned());
    header.push("smooth/best".into());
    header.push("stale/smooth".into());
    header.push("smooth-stale/best".into());
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
        row.push(
            match (wall(results, q, "smooth-stale"), analysis::best(results, q)) {
                (Some((w, censored)), Some(b)) => analysis::ratio_text(Some((w / b, censored))),
                _ => "-".into(),
            },
        );
        rows.push(row);
    }
    s.table(&header, &rows);
    s.heading("Table 2: read requests and bytes read");
    s.paragraph(
        "Read requests and bytes read (pages read × 8 KiB; MB = 10^6 bytes) per query and \
         configuration (the counters of the median run); the paper's Table 2 (SF 10: PostgreSQL's own plan \
         vs Smooth Scan) in the last two rows. `(timeout)`: a censored run, whose counters \
         are lost.",
    );
    let (h2, r2) = analysis::table2(results, &queries, &variants);
    s.table(&h2, &r2);
    s.heading("Table 3: read request sizes");
    s.paragraph(
        "Read requests by size (8KiB = 1 page, 16KiB = 2, 32KiB = 3–4, …, 1MiB = 65–128 \
         pages, >1MiB more) per query and configuration that finished; the paper's \
         Table 3 (Q1 under Smooth Scan, SF 10, largest class 128 KB) in the last row. \
         Columns `reads_<size>` of tpch.csv.",
    );
    let (h3, r3) = analysis::table3(results, &queries, &variants);
    s.table(&h3, &r3);
    if let Some((fig1, h1, r1)) = analysis::fig1(
        results,
        &queries,
        format!(
            "Fig. 1: stale statistics, TPC-H SF {} on {}",
            opts.sf, opts.device
        ),
    ) {
        fig1.write(opts.out.join("fig1"))?;
        s.heading("Fig. 1: what stale statistics cost");
        s.paragraph(
            "Wall time of the plan made with stale statistics over the optimizer's plan \
             with fresh ones: the classical optimizer (`optimizer-stale`) and Smooth Scan \
             (`smooth-stale`). ≥ (and * in the figure): the stale run was censored, the \
             ratio is a lower bound; `-`: a run is missing or `optimizer-fresh` was censored. \
             The paper's Fig. 1 is DBMS-X at SF 10, where Q12 and Q19 degrade by 400x and \
             20x through an index nested-loop join.",
        );
        s.table(&h1, &r1);
        s.image("Fig. 1", "fig1.png");
    }
    s.heading("Plans");
    let plans: Vec<String> = results
        .rows()
        .iter()
        .filter(|r| r.variant.starts_with("optimizer") || r.variant.starts_with("smooth"))
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
