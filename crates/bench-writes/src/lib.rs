//! `strata bench writes`: write throughput of strata's SQL beside
//! PostgreSQL's on this machine, in one run, on the same rows.
//!
//! # What is measured
//!
//! Both engines start from the same table, `acct (k BIGINT NOT NULL, v
//! BIGINT NOT NULL, pad VARCHAR(40) NOT NULL)` with `rows` rows (keys
//! `0..rows` in order, `v = 0`, a 40-character pad derived from the key)
//! and a B-tree index on `k`: strata's is loaded with the storage API's
//! `TableLoad`, PostgreSQL's with `COPY`, then indexed and `VACUUM
//! ANALYZE`d. Each run then measures, on both engines, the same SQL text:
//!
//! 1. `UPDATE acct SET v = v + 1 WHERE k = <key>` by one client, each
//!    statement its own durable commit (statements/s);
//! 2. the same by `clients` clients at once (statements/s; strata's log
//!    syncs show its group commit). strata's clients are threads of this
//!    process, each with its own `SqlSession` over one shared
//!    `Arc<Database>` (how strata serves several clients); PostgreSQL's are
//!    connections, one per thread;
//! 3. `INSERT INTO acct2 SELECT * FROM acct` into an empty `acct2` with the
//!    same columns and index, created before (rows/s);
//! 4. `DELETE FROM acct WHERE k < rows / 10` (rows/s).
//!
//! Keys are uniform over the table, from a seed, the same for both engines.
//! Every workload starts after a checkpoint on the engine it measures
//! (untimed), so neither pays for the other's or an earlier workload's dirty
//! pages, and with `acct` and its index read into the engine's buffer pool
//! (untimed: `pg_prewarm`, [`strata_storage::Database::prewarm`]), so neither
//! pays for reads the other has cached — PostgreSQL's freshly loaded table also
//! sits in the OS page cache, while strata reads with direct I/O. The engines alternate: strata first in runs 1, 3, ..., PostgreSQL
//! first in runs 2, 4, .... After a run the deleted rows are put back from `acct2` (`INSERT
//! INTO acct SELECT * FROM acct2 WHERE k < cut`: exactly the rows deleted)
//! and PostgreSQL's `acct` is `VACUUM ANALYZE`d (its autovacuum is off).
//!
//! Every statement's row count is checked (one row per update, every row
//! copied, a tenth deleted), and after every run both engines must hold
//! `rows` rows in `acct` whose `v` sum to the updates made so far, and `rows`
//! rows in `acct2`; the run fails otherwise.
//!
//! The results are medians over the runs; the summary gives strata / PostgreSQL
//! per workload and whether the goal (at least PostgreSQL's rate, and at
//! least a million rows/s for the insert) was met.

use std::path::PathBuf;
use std::sync::{Condvar, Mutex};
use std::thread::ScopedJoinHandle;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use strata_bench::{ResultRow, ResultSet, Samples};
use strata_storage::DbOptions;

pub mod pg;
pub mod report;
pub mod strata;
pub mod workload;

use workload::{COPY_TABLE, TABLE, Workload};

/// What one measured statement (or batch of update statements) did.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub secs: f64,
    /// What the rate counts: statements (updates) or rows.
    pub work: u64,
    /// Rows the statements said they changed.
    pub changed: u64,
    /// strata: log syncs over the measurement.
    pub log_syncs: Option<u64>,
}

impl Measured {
    pub fn rate(&self) -> f64 {
        self.work as f64 / self.secs
    }
}

/// One engine as the runner drives it.
pub trait Engine {
    /// `strata` or `postgres`: the result rows' variant.
    fn label(&self) -> &'static str;
    /// Makes everything written so far durable in the data files.
    fn checkpoint(&mut self) -> Result<()>;
    /// Reads `acct` and its index into the engine's buffer pool (untimed),
    /// so that neither engine's rates include reading pages the other has
    /// cached: PostgreSQL's data also sits in the OS page cache, strata's
    /// direct I/O has only its pool.
    fn prewarm(&mut self) -> Result<()>;
    /// Runs a write; the rows it changed.
    fn changed(&mut self, sql: &str) -> Result<u64>;
    /// Runs a query answering one integer (NULL reads as 0).
    fn scalar(&mut self, sql: &str) -> Result<i128>;
    /// The single-row updates of `keys`, one client per list, all at once.
    fn updates(&mut self, keys: &[Vec<i64>]) -> Result<Measured>;
    /// One write, timed; `work` is the rows it changed.
    fn timed(&mut self, sql: &str) -> Result<Measured>;
    /// Drops `acct2` and creates it empty, with its index.
    fn recreate_copy_table(&mut self) -> Result<()>;
    /// Maintenance between runs (untimed).
    fn after_round(&mut self) -> Result<()>;
}

/// Client threads wait here until all are ready, then start together.
#[derive(Default)]
pub(crate) struct StartLine {
    state: Mutex<Line>,
    cv: Condvar,
}

#[derive(Default)]
struct Line {
    ready: usize,
    /// Some(true): go; Some(false): called off.
    go: Option<bool>,
}

impl StartLine {
    /// A client says it is ready and waits for the start; false when the
    /// run was called off.
    pub(crate) fn ready_and_wait(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.ready += 1;
        self.cv.notify_all();
        while s.go.is_none() {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.go == Some(true)
    }

    fn release(&self, go: bool) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).go = Some(go);
        self.cv.notify_all();
    }

    /// Takes the clients as they are spawned; when all are ready, starts
    /// them and returns their handles and the start time. A client that
    /// could not be spawned calls the others off.
    pub(crate) fn start<'scope, T>(
        &self,
        spawned: impl Iterator<Item = std::io::Result<ScopedJoinHandle<'scope, T>>>,
        what: &str,
    ) -> Result<(Vec<ScopedJoinHandle<'scope, T>>, Instant)> {
        let mut threads = Vec::new();
        for t in spawned {
            match t {
                Ok(t) => threads.push(t),
                Err(e) => {
                    self.release(false);
                    return Err(e).with_context(|| format!("starting a {what} thread"));
                }
            }
        }
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while s.ready < threads.len() {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        drop(s);
        let start = Instant::now();
        self.release(true);
        Ok((threads, start))
    }
}

/// Joins every client; the rows they changed, or the first client's error.
pub(crate) fn join_clients(threads: Vec<ScopedJoinHandle<'_, Result<u64>>>) -> Result<u64> {
    let mut changed = 0;
    let mut first_error = None;
    for t in threads {
        match t.join() {
            Ok(Ok(n)) => changed += n,
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(p) => std::panic::resume_unwind(p),
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(changed),
    }
}

/// The disk's durable-write latency now: the median µs of `n` small
/// overwrites of a preallocated file in `dir`, each followed by
/// `fdatasync` — what a commit's log sync costs at best on this file system
/// at this moment (on a shared machine it changes from minute to minute).
pub fn sync_latency_us(dir: &std::path::Path, n: usize) -> Result<f64> {
    use std::os::unix::fs::FileExt;
    let path = dir.join(format!(
        "strata-bench-writes-sync-probe-{}",
        std::process::id()
    ));
    let probe = || -> Result<f64> {
        let f = std::fs::File::create(&path)?;
        f.write_all_at(&vec![0u8; 1 << 20], 0)?;
        f.sync_all()?;
        let mut t = Vec::with_capacity(n);
        for i in 0..n {
            f.write_all_at(&[i as u8; 300], (i as u64 * 512) % (1 << 20))?;
            let start = Instant::now();
            f.sync_data()?;
            t.push(start.elapsed().as_secs_f64() * 1e6);
        }
        strata_bench::median(&t).context("no samples")
    };
    let r = probe().with_context(|| format!("timing fdatasync on {}", path.display()));
    let _ = std::fs::remove_file(&path);
    r
}

/// Whether and how PostgreSQL runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PgMode {
    /// When its binaries are installed; skipped with a note when not.
    IfInstalled,
    /// Not at all.
    Off,
}

#[derive(Clone, Debug)]
pub struct Options {
    /// The strata benchmark database (created; its tables are the
    /// benchmark's only).
    pub bench_db: PathBuf,
    /// PostgreSQL's work directory (cluster, log, socket).
    pub pg_dir: PathBuf,
    /// Where writes.csv, writes-runs.csv and writes.md go.
    pub out: PathBuf,
    pub rows: u64,
    /// Update statements per client.
    pub updates: usize,
    /// Clients of the concurrent update workload.
    pub clients: usize,
    pub runs: usize,
    pub seed: u64,
    pub db_options: DbOptions,
    /// The `--device` given (the result rows' device).
    pub device: String,
    /// PostgreSQL's `shared_buffers` (e.g. "256MB": strata's buffer pool).
    pub shared_buffers: String,
    pub postgres: PgMode,
    /// strata's acct is a columnar table (converted after the load).
    pub columnar: bool,
    /// Samples of each latency in the diagnostics.
    pub diagnostic_samples: usize,
}

impl Options {
    /// The table size, updates per client and samples of the full run (1M
    /// rows, 2,000 updates per client, 8 clients, 3 runs) or of `--quick`
    /// (20,000 rows, 100 updates per client).
    pub fn new(bench_db: PathBuf, quick: bool) -> Options {
        Options {
            pg_dir: bench_db.with_extension("pg"),
            bench_db,
            out: PathBuf::from("results/writes"),
            rows: if quick { 20_000 } else { 1_000_000 },
            updates: if quick { 100 } else { 2_000 },
            clients: 8,
            runs: 3,
            seed: 42,
            db_options: DbOptions::default(),
            device: "real".into(),
            shared_buffers: "256MB".into(),
            postgres: PgMode::IfInstalled,
            columnar: false,
            diagnostic_samples: if quick { 50 } else { 500 },
        }
    }

    fn validate(&self) -> Result<()> {
        if self.rows < 10 {
            bail!("--rows must be at least 10 (the delete removes a tenth)");
        }
        if self.updates == 0 || self.clients < 2 || self.runs == 0 {
            bail!("--updates and --runs must be positive and --clients at least 2");
        }
        if self.diagnostic_samples == 0 {
            bail!("the diagnostics need at least one sample");
        }
        Ok(())
    }
}

/// An engine's table contents after the last run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contents {
    /// Rows in `acct`.
    pub rows: i128,
    /// `sum(v)` over `acct`.
    pub sum_v: i128,
    /// Rows in `acct2`.
    pub copy_rows: i128,
}

/// What a run of the benchmark produced.
pub struct Report {
    pub options: Options,
    /// One row per engine, workload and run.
    pub runs: ResultSet,
    /// The medians over the runs.
    pub medians: ResultSet,
    /// Median latencies in µs of what explains a rate (SQL without a
    /// write, a write below SQL).
    pub diagnostics: Vec<(String, f64)>,
    pub notes: Vec<String>,
    pub strata: Contents,
    pub postgres: Option<Contents>,
    /// The `sum(v)` the updates made (SQL and diagnostic ones).
    pub expected_sum_v: i128,
    pub postgres_ran: bool,
}

/// The checks after a run: the row counts and the sum of the updates.
fn check_contents(e: &mut dyn Engine, rows: u64, sum_v: i128) -> Result<Contents> {
    let c = Contents {
        rows: e.scalar(&format!("SELECT count(*) FROM {TABLE}"))?,
        sum_v: e.scalar(&format!("SELECT sum(v) FROM {TABLE}"))?,
        copy_rows: e.scalar(&format!("SELECT count(*) FROM {COPY_TABLE}"))?,
    };
    let want = Contents {
        rows: rows as i128,
        sum_v,
        copy_rows: rows as i128,
    };
    if c != want {
        bail!(
            "{}: after the run the tables hold {c:?}, expected {want:?}",
            e.label()
        );
    }
    Ok(c)
}

/// Checks a measured statement's row count.
fn expect(e: &dyn Engine, w: Workload, m: &Measured, want: u64) -> Result<()> {
    if m.changed != want {
        bail!(
            "{}: {} changed {} rows, expected {want}",
            e.label(),
            w.name(),
            m.changed
        );
    }
    Ok(())
}

/// Measures workload `w` of run `run` on `e`.
fn measure(
    e: &mut dyn Engine,
    w: Workload,
    o: &Options,
    keys_one: &[Vec<i64>],
    keys_many: &[Vec<i64>],
) -> Result<Measured> {
    let m = match w {
        Workload::UpdateOne | Workload::UpdateMany => {
            let keys = if w == Workload::UpdateOne {
                keys_one
            } else {
                keys_many
            };
            e.checkpoint()?;
            e.prewarm()?;
            let m = e.updates(keys)?;
            let statements = keys.iter().map(Vec::len).sum::<usize>() as u64;
            expect(e, w, &m, statements)?;
            m
        }
        Workload::InsertSelect => {
            e.recreate_copy_table()?;
            e.checkpoint()?;
            e.prewarm()?;
            let m = e.timed(&workload::insert_select_sql())?;
            expect(e, w, &m, o.rows)?;
            m
        }
        Workload::DeleteRange => {
            e.checkpoint()?;
            e.prewarm()?;
            let m = e.timed(&workload::delete_sql(o.rows))?;
            expect(e, w, &m, workload::delete_cut(o.rows) as u64)?;
            m
        }
    };
    Ok(m)
}

/// The result row of one measurement.
fn result_row(o: &Options, engine: &str, w: Workload, run: usize, m: &Measured) -> ResultRow {
    let clients = if w == Workload::UpdateMany {
        o.clients
    } else {
        1
    };
    let mut r = ResultRow::new("writes", &o.device, engine, w.x())
        .with("workload", w.name())
        .with("run", run + 1)
        .with("clients", clients)
        .with("work", m.work)
        .with("unit", w.unit())
        .with("rate", format!("{:.1}", m.rate()))
        .with("rows_total", o.rows);
    r.wall_ms = m.secs * 1e3;
    r.rows_out = m.changed;
    if let Some(s) = m.log_syncs {
        r.set("log_syncs", s);
    }
    r
}

/// Loads both engines, runs every workload `runs` times on each, checks
/// the tables, and measures the diagnostics.
pub fn run(o: &Options, progress: &mut dyn FnMut(&str)) -> Result<Report> {
    o.validate()?;
    let mut notes = Vec::new();
    let mut strata = strata::StrataSide::open(
        &o.bench_db,
        o.db_options.clone(),
        o.rows,
        o.columnar,
        progress,
    )?;
    if o.columnar {
        notes.push(
            "strata's acct is a columnar table (--table-format columns): its rows in a Parquet \
             file, its index a tree over them; an UPDATE marks a column row deleted and writes \
             the new row to the delta."
                .to_string(),
        );
    }
    let mut pg = match o.postgres {
        PgMode::Off => {
            notes.push("PostgreSQL was not run (--no-postgres).".to_string());
            None
        }
        PgMode::IfInstalled => match pg::PgSide::installed() {
            Err(e) => {
                progress(&format!("skipping PostgreSQL: {e:#}"));
                notes.push(format!("PostgreSQL was not run: {e:#}."));
                None
            }
            Ok(_) => Some(pg::PgSide::start(
                &o.pg_dir,
                &o.shared_buffers,
                o.rows,
                progress,
            )?),
        },
    };
    if let Some(p) = pg.as_mut() {
        notes.push(p.describe()?);
    }
    // How each engine finds the rows of the update and the delete.
    let probe_key = workload::update_keys(o.seed, usize::MAX, 1, 1, o.rows)[0][0];
    for sql in [
        workload::update_sql(probe_key),
        workload::delete_sql(o.rows),
    ] {
        notes.push(format!("strata's plan of `{sql}`: {}", strata.plan(&sql)?));
        if let Some(p) = pg.as_mut() {
            notes.push(format!("PostgreSQL's plan: {}", p.plan(&sql)?));
        }
    }
    let mut runs = ResultSet::new();
    let mut samples = Samples::new();
    let mut sum_v: i128 = 0;
    let mut pg_contents = None;
    // Beside the database, on its file system.
    let db_dir = std::fs::canonicalize(&o.bench_db)?;
    let probe_dir = db_dir.parent().unwrap_or(&db_dir);
    for run in 0..o.runs {
        let sync_us = sync_latency_us(probe_dir, 50)?;
        progress(&format!(
            "run {}: fdatasync of a small overwrite takes {sync_us:.0} µs now",
            run + 1
        ));
        let keys_one = workload::update_keys(o.seed, run, 1, o.updates, o.rows);
        let keys_many = workload::update_keys(o.seed, run, o.clients, o.updates, o.rows);
        for w in Workload::ALL {
            let mut engines: Vec<&mut dyn Engine> = vec![&mut strata];
            if let Some(p) = pg.as_mut() {
                engines.push(p);
            }
            if run % 2 == 1 {
                engines.reverse();
            }
            for e in engines {
                let m = measure(e, w, o, &keys_one, &keys_many)
                    .with_context(|| format!("{} in run {}", w.name(), run + 1))?;
                progress(&format!(
                    "run {} {:<17} {:<8} {:>12.0} {} ({:.3} s{})",
                    run + 1,
                    w.name(),
                    e.label(),
                    m.rate(),
                    w.unit(),
                    m.secs,
                    m.log_syncs
                        .map(|s| format!(", {s} log syncs"))
                        .unwrap_or_default()
                ));
                let row = result_row(o, e.label(), w, run, &m)
                    .with("fdatasync_us_before_run", format!("{sync_us:.0}"));
                runs.push(row.clone());
                samples.add(row);
            }
        }
        sum_v += (o.updates * (1 + o.clients)) as i128;
        let mut engines: Vec<&mut dyn Engine> = vec![&mut strata];
        if let Some(p) = pg.as_mut() {
            engines.push(p);
        }
        for e in engines {
            let restored = e.changed(&workload::restore_sql(o.rows))?;
            if restored != workload::delete_cut(o.rows) as u64 {
                bail!(
                    "{}: putting the deleted rows back inserted {restored}",
                    e.label()
                );
            }
            e.after_round()?;
            let c = check_contents(e, o.rows, sum_v)?;
            if e.label() == "postgres" {
                pg_contents = Some(c);
            }
        }
    }

    progress("diagnostics: latencies of SQL without a write and of a write without SQL");
    let keys = workload::update_keys(o.seed ^ 0xD1A6, 0, 1, o.diagnostic_samples, o.rows)
        .pop()
        .unwrap_or_default();
    let mut diagnostics = strata.diagnostics(&keys)?;
    sum_v += 2 * keys.len() as i128;
    let strata_final = check_contents(&mut strata, o.rows, sum_v)?;
    if let Some(p) = pg.as_mut() {
        diagnostics.push((
            "PostgreSQL: SELECT 1 (simple query round trip)".into(),
            p.select1_us(o.diagnostic_samples)?,
        ));
    }
    drop(pg);
    let medians = report::with_median_rates(samples.finish());
    Ok(Report {
        options: o.clone(),
        runs,
        medians,
        diagnostics,
        notes,
        strata: strata_final,
        expected_sum_v: sum_v,
        postgres_ran: pg_contents.is_some(),
        postgres: pg_contents,
    })
}
