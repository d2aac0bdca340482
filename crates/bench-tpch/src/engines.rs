//! `strata bench tpch --vs-duckdb`: the 22 TPC-H queries on strata's row
//! tables, on its columnar tables and in DuckDB, side by side in one run.
//!
//! One data set: `strata gen tpch` makes the row database (the spec's key
//! indexes, then `ANALYZE`) and the Parquet files; the columnar database is
//! the same generator's rows converted to columns (`strata compact --format
//! columns`, then `ANALYZE`); DuckDB loads the Parquet files into its own
//! file (`CREATE TABLE … AS SELECT * FROM read_parquet(…)`). The databases
//! are built once under `--bench-db` and reused.
//!
//! Each repetition runs every query on each engine in turn (interleaved), each
//! run in a fresh database: strata's opened anew in this process with
//! `O_DIRECT` (a cold read of every page and column chunk), DuckDB in a new
//! Python process. DuckDB reads through the OS page cache, so its first run
//! is cold only when `--drop-caches` drops the cache before it (root only;
//! the results say which). Each engine then runs the query a second time in
//! the same session: the warm time. Bytes read are the process's
//! `/proc/self/io` `read_bytes` over the cold run, for both engines.
//! Reported: medians of `--repeat` runs, and the geometric mean over the
//! queries of each engine's time over DuckDB's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use strata_bench::postgres::{CacheDrop, PgBins, PgEngine, ServerConfig};
use strata_bench::report::summary::{Summary, provenance};
use strata_load::{TpchSpec, TpchTable, generate_tpch};
use strata_sql::SqlSession;
use strata_sql::tpch::QUERIES;
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};

/// What to run.
pub struct EnginesOptions {
    pub sf: f64,
    /// Where the three databases and the Parquet files are (built once).
    pub work: PathBuf,
    pub out: PathBuf,
    /// Query names (`q01` … `q22`).
    pub queries: Vec<String>,
    pub repeat: usize,
    pub drop_caches: bool,
    pub buffer_pool_bytes: usize,
    /// PostgreSQL as a fourth engine (its binaries' directory, or the newest
    /// installed), loaded from the row database's tables; none: three.
    pub postgres: Option<Option<PathBuf>>,
    /// A PostgreSQL run longer than this is cancelled (`statement_timeout`)
    /// and counted at this time, marked as a lower bound.
    pub timeout: std::time::Duration,
    /// Run strata's row tables too (their database is the largest of the
    /// four: 1.7 GB at SF 1). Without them the Parquet files are generated
    /// alone, and PostgreSQL, loaded from the row database, cannot run.
    pub rows: bool,
}

const ENGINES: [&str; 4] = ["strata rows", "strata columns", "DuckDB", "PostgreSQL"];
/// The engine every ratio is over.
const DUCKDB: usize = 2;
const POSTGRES: usize = 3;

/// One run of one query on one engine.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    cold: f64,
    warm: f64,
    read_bytes: u64,
    rows: usize,
    /// Cancelled at the timeout (PostgreSQL only): the time is the timeout.
    cold_censored: bool,
    warm_censored: bool,
}

fn read_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("read_bytes:").map(|v| v.trim().parse().ok()))
                .flatten()
        })
        .unwrap_or(0)
}

/// The Python with DuckDB: the test tools' (scripts/test installs it,
/// pinned) or the system's.
fn python() -> PathBuf {
    let venv = Path::new(".test-tools/venv/bin/python3");
    if venv.exists() {
        venv.to_path_buf()
    } else {
        PathBuf::from("python3")
    }
}

fn duckdb_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/tpch_duckdb.py")
}

/// Builds what is missing of the row database, the columnar one, the Parquet
/// files and DuckDB's file.
fn prepare(o: &EnginesOptions, progress: &mut dyn FnMut(&str)) -> Result<[PathBuf; 3]> {
    std::fs::create_dir_all(&o.work)?;
    let parquet = o.work.join("parquet");
    let rows = o.work.join("rows.db");
    let cols = o.work.join("columns.db");
    let duck = o.work.join("tpch.duckdb");
    let analyze = |db: Database| -> Result<()> {
        SqlSession::new(Arc::new(db))?.execute("ANALYZE")?;
        Ok(())
    };
    if !o.rows && !parquet.join("lineitem.parquet").exists() {
        progress(&format!(
            "generating TPC-H SF {} as Parquet into {}",
            o.sf,
            parquet.display()
        ));
        let spec = TpchSpec {
            parquet_dir: Some(parquet.clone()),
            ..TpchSpec::new(o.sf)
        };
        generate_tpch(None, &spec, &NoProgress, |_| {})?;
    }
    if o.rows && !rows.join("catalog.json").exists() {
        progress(&format!(
            "generating TPC-H SF {} into {}",
            o.sf,
            rows.display()
        ));
        let db = Database::create(&rows, DbOptions::default())?;
        let spec = TpchSpec {
            parquet_dir: Some(parquet.clone()),
            ..TpchSpec::new(o.sf)
        };
        generate_tpch(Some(&db), &spec, &NoProgress, |_| {})?;
        analyze(db)?;
    }
    if !cols.join("catalog.json").exists() {
        progress(&format!(
            "generating TPC-H SF {} as columns into {}",
            o.sf,
            cols.display()
        ));
        let db = Database::create(&cols, DbOptions::default())?;
        let spec = TpchSpec {
            indexes: false,
            ..TpchSpec::new(o.sf)
        };
        generate_tpch(Some(&db), &spec, &NoProgress, |_| {})?;
        crate::tpch_to_columns(&db)?;
        analyze(db)?;
    }
    if !duck.exists() {
        progress(&format!("loading DuckDB's {}", duck.display()));
        let out = Command::new(python())
            .arg(duckdb_script())
            .arg("load")
            .arg(&duck)
            .arg(&parquet)
            .output()
            .context("running python3 for DuckDB")?;
        if !out.status.success() {
            bail!(
                "loading DuckDB failed (DuckDB for Python is installed by `bash scripts/test`, \
                 pinned, into .test-tools/): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
    }
    Ok([rows, cols, duck])
}

fn strata_run(dir: &Path, pool: usize, sql: &str) -> Result<Sample> {
    let db = Database::open(
        dir,
        DbOptions {
            buffer_pool_bytes: pool,
            read_only: true,
            ..DbOptions::default()
        },
    )?;
    let s = SqlSession::new(Arc::new(db))?;
    let before = read_bytes();
    let t = Instant::now();
    let r = s.execute(sql)?;
    let cold = t.elapsed().as_secs_f64();
    let read = read_bytes() - before;
    let t = Instant::now();
    s.execute(sql)?;
    Ok(Sample {
        cold,
        warm: t.elapsed().as_secs_f64(),
        read_bytes: read,
        rows: r.batches.iter().map(|b| b.num_rows()).sum(),
        ..Sample::default()
    })
}

fn duckdb_run(db: &Path, query_file: &Path) -> Result<Sample> {
    let out = Command::new(python())
        .arg(duckdb_script())
        .arg("run")
        .arg(db)
        .arg(query_file)
        .output()
        .context("running python3 for DuckDB")?;
    if !out.status.success() {
        bail!("DuckDB: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    Ok(Sample {
        cold: v["cold_s"].as_f64().unwrap_or(f64::NAN),
        warm: v["warm_s"].as_f64().unwrap_or(f64::NAN),
        read_bytes: v["read_bytes"].as_u64().unwrap_or(0),
        rows: v["rows"].as_u64().unwrap_or(0) as usize,
        ..Sample::default()
    })
}

/// PostgreSQL's cluster under `--bench-db` (`postgres-<major>`), the TPC-H
/// tables copied from the row database: at its own defaults for parallel
/// workers and JIT, with strata's buffer pool size as `shared_buffers`.
fn start_postgres(
    o: &EnginesOptions,
    rows_db: &Path,
    bin: Option<&Path>,
    progress: &mut dyn FnMut(&str),
) -> Result<PgEngine> {
    let bins = PgBins::resolve(bin)?;
    let config = ServerConfig {
        shared_buffers: format!("{}MB", (o.buffer_pool_bytes >> 20).max(1)),
        wal_minimal: true,
        extra: vec![
            ("max_parallel_workers_per_gather".into(), "2".into()),
            ("jit".into(), "on".into()),
        ],
    };
    let tables: Vec<String> = TpchTable::ALL
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    let work = o.work.join(format!("postgres-{}", bins.major()));
    PgEngine::start(
        rows_db,
        &tables,
        &bins,
        &config,
        &work,
        o.drop_caches,
        progress,
    )
}

fn postgres_run(
    pg: &mut PgEngine,
    sql: &str,
    limit: std::time::Duration,
    progress: &mut dyn FnMut(&str),
) -> Result<Sample> {
    let r = pg.run(sql, limit, progress)?;
    Ok(Sample {
        cold: r.cold_s,
        warm: r.warm_s,
        read_bytes: r.read_bytes,
        rows: r.rows,
        cold_censored: r.cold_censored,
        warm_censored: r.warm_censored,
    })
}

/// A figure, or a dash for an engine that did not run (NaN).
fn not_run(v: f64, decimals: usize) -> String {
    if v.is_nan() {
        "—".to_string()
    } else {
        format!("{v:.decimals$}")
    }
}

/// The median; NaN for an engine that did not run.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Runs the comparison and writes `engines.md` and `engines.csv` in `--out`.
pub fn run(o: &EnginesOptions, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let dbs = prepare(o, progress)?;
    let qdir = o.work.join("queries");
    std::fs::create_dir_all(&qdir)?;
    let queries: Vec<(&str, &str)> = QUERIES
        .iter()
        .filter(|(n, _)| o.queries.is_empty() || o.queries.iter().any(|q| q == n))
        .copied()
        .collect();
    for (n, sql) in &queries {
        std::fs::write(qdir.join(format!("{n}.sql")), sql)?;
    }
    if o.postgres.is_some() && !o.rows {
        bail!(
            "PostgreSQL is loaded from strata's row database, which a run without the row tables does not build"
        );
    }
    let mut postgres = match &o.postgres {
        None => None,
        Some(bin) => Some(start_postgres(o, &dbs[0], bin.as_deref(), progress)?),
    };
    let engines = if postgres.is_some() { 4 } else { 3 };
    let mut drops = CacheDrop::default();
    drops.allowed = o.drop_caches;
    let mut os_cache = "warm";
    // samples[query][engine] = runs
    let mut samples = vec![vec![Vec::<Sample>::new(); engines]; queries.len()];
    for rep in 0..o.repeat {
        for (qi, (name, sql)) in queries.iter().enumerate() {
            for (e, engine) in ENGINES.iter().enumerate().take(engines) {
                if e == 0 && !o.rows {
                    continue;
                }
                let sql = sql.trim().trim_end_matches(';');
                let s = match e {
                    0 | 1 => {
                        os_cache = drops.drop_os_cache(progress);
                        strata_run(&dbs[e], o.buffer_pool_bytes, sql)
                    }
                    DUCKDB => {
                        os_cache = drops.drop_os_cache(progress);
                        duckdb_run(&dbs[2], &qdir.join(format!("{name}.sql")))
                    }
                    // It restarts its server, then drops the cache itself.
                    _ => postgres_run(
                        postgres.as_mut().expect("started"),
                        sql,
                        o.timeout,
                        progress,
                    ),
                }
                .with_context(|| format!("{name} on {engine}"))?;
                progress(&format!(
                    "run {}/{} {name} {engine}: cold {:.3} s, warm {:.3} s, {} MiB read, {} rows{}",
                    rep + 1,
                    o.repeat,
                    s.cold,
                    s.warm,
                    s.read_bytes >> 20,
                    s.rows,
                    if s.cold_censored || s.warm_censored {
                        " (cancelled at the timeout)"
                    } else {
                        ""
                    }
                ));
                samples[qi][e].push(s);
            }
            let rows: Vec<usize> = samples[qi]
                .iter()
                .filter_map(|r| r.get(rep))
                .filter(|s| !s.cold_censored)
                .map(|s| s.rows)
                .collect();
            if rows.iter().any(|&r| r != samples[qi][DUCKDB][rep].rows) {
                bail!("{name}: the engines return different row counts {rows:?}");
            }
        }
    }
    let pg = postgres
        .as_ref()
        .map(|p| (p.version().to_string(), p.notes().to_vec()));
    write(o, &queries, &samples, os_cache, pg)
}

fn write(
    o: &EnginesOptions,
    queries: &[(&str, &str)],
    samples: &[Vec<Vec<Sample>>],
    os_cache: &str,
    postgres: Option<(String, Vec<String>)>,
) -> Result<PathBuf> {
    std::fs::create_dir_all(&o.out)?;
    let engines = samples.first().map_or(3, |per| per.len());
    let med = |runs: &[Sample], f: fn(&Sample) -> f64| median(runs.iter().map(f).collect());
    let mut csv = String::from("query,engine,cold_s,warm_s,read_mib\n");
    let mut table = Vec::new();
    // Per engine: each query's cold and warm time over DuckDB's.
    let mut cold_ratio = vec![Vec::new(); engines];
    let mut warm_ratio = vec![Vec::new(); engines];
    let mut over_postgres = Vec::new();
    let mut sums = vec![0.0f64; engines];
    let mut bytes_ratio = vec![Vec::new(); engines];
    // PostgreSQL's queries whose median run was cancelled at the timeout.
    let mut censored = Vec::new();
    // A median that is a cancelled run's: most runs were.
    let most = |runs: &[Sample], f: fn(&Sample) -> bool| {
        runs.iter().filter(|s| f(s)).count() * 2 > runs.len()
    };
    let at_least = |v: f64, lower_bound: bool| {
        if lower_bound {
            format!("≥ {v:.3}")
        } else {
            format!("{v:.3}")
        }
    };
    for ((name, _), per) in queries.iter().zip(samples) {
        let cold: Vec<f64> = per.iter().map(|r| med(r, |s| s.cold)).collect();
        let warm: Vec<f64> = per.iter().map(|r| med(r, |s| s.warm)).collect();
        let mib: Vec<f64> = per
            .iter()
            .map(|r| med(r, |s| s.read_bytes as f64) / 1048576.0)
            .collect();
        for e in 0..engines {
            if per[e].is_empty() {
                continue;
            }
            sums[e] += cold[e];
            csv += &format!(
                "{name},{},{:.4},{:.4},{:.1}\n",
                ENGINES[e], cold[e], warm[e], mib[e]
            );
            cold_ratio[e].push(cold[e] / cold[DUCKDB]);
            warm_ratio[e].push(warm[e] / warm[DUCKDB]);
            if mib[DUCKDB] > 0.0 {
                bytes_ratio[e].push(mib[e] / mib[DUCKDB]);
            }
        }
        let mut row = vec![
            name.to_string(),
            not_run(cold[0], 3),
            format!("{:.3}", cold[1]),
            format!("{:.3}", cold[DUCKDB]),
            format!("{:.2}", cold[1] / cold[DUCKDB]),
            format!("{:.3}", warm[1]),
            format!("{:.3}", warm[DUCKDB]),
            not_run(mib[0], 1),
            format!("{:.1}", mib[1]),
            format!("{:.1}", mib[DUCKDB]),
        ];
        if engines > POSTGRES {
            over_postgres.push(cold[POSTGRES] / cold[1]);
            let pg = &per[POSTGRES];
            let (cold_cut, warm_cut) =
                (most(pg, |s| s.cold_censored), most(pg, |s| s.warm_censored));
            if cold_cut || warm_cut {
                censored.push(format!(
                    "{name} ({})",
                    if cold_cut { "cold and warm" } else { "warm" }
                ));
            }
            row.extend([
                at_least(cold[POSTGRES], cold_cut),
                at_least(warm[POSTGRES], warm_cut),
                format!("{:.1}", mib[POSTGRES]),
            ]);
        }
        table.push(row);
    }
    let title = match (engines > POSTGRES, o.rows) {
        (true, _) => "TPC-H: strata's row and columnar tables beside DuckDB and PostgreSQL",
        (false, true) => "TPC-H: strata's row and columnar tables beside DuckDB",
        (false, false) => "TPC-H: strata's columnar tables beside DuckDB",
    };
    let mut s = Summary::new(title);
    s.paragraph(&provenance());
    s.paragraph(&format!(
        "Scale factor {}, {} queries, medians of {} runs, engines interleaved{}. strata reads with \
         O_DIRECT (cold); DuckDB's first run is {} (OS page cache {} before each run). Bytes \
         read: /proc/self/io read_bytes over the cold run.",
        o.sf,
        queries.len(),
        o.repeat,
        if o.rows {
            ""
        } else {
            " (strata's row tables not run: --without-rows)"
        },
        if os_cache == "dropped" {
            "cold"
        } else {
            "warm-OS-cache"
        },
        if os_cache == "dropped" {
            "dropped"
        } else {
            "not dropped: --drop-caches (root) drops it"
        },
    ));
    if let Some((version, notes)) = &postgres {
        s.paragraph(&format!(
            "PostgreSQL {version}: restarted before each cold run (its cache and the OS's dropped \
             as for the others), the query timed at the client with its rows fetched, then run \
             again on the same connection (warm); bytes read: /proc/PID/io read_bytes of the \
             postmaster and its children over the cold run. Settings and load: {}",
            notes.join("; ")
        ));
    }
    let mut summary = Vec::new();
    for e in 0..engines {
        if cold_ratio[e].is_empty() {
            continue;
        }
        summary.push(vec![
            ENGINES[e].to_string(),
            format!("{:.2}", sums[e]),
            format!("{:.2}x", geomean(&cold_ratio[e])),
            if e == 0 {
                String::new()
            } else {
                format!("{:.2}x", geomean(&warm_ratio[e]))
            },
            if bytes_ratio[e].is_empty() {
                String::new()
            } else {
                format!("{:.2}x", geomean(&bytes_ratio[e]))
            },
        ]);
    }
    s.table(
        &[
            "",
            "sum of cold medians (s)",
            "geomean cold vs DuckDB",
            "geomean warm vs DuckDB",
            "geomean bytes read vs DuckDB",
        ],
        summary,
    );
    if let Some(b) = bytes_ratio.get(1).filter(|b| !b.is_empty()) {
        s.paragraph(&format!(
            "Bytes read, strata columns over DuckDB: geomean {:.2}x over the {} queries where DuckDB read from storage.",
            geomean(b),
            b.len()
        ));
    }
    if !over_postgres.is_empty() {
        s.paragraph(&format!(
            "PostgreSQL over strata columns, cold: geomean {}{:.2}x (strata columns is that many times faster).",
            if censored.is_empty() { "" } else { "at least " },
            geomean(&over_postgres)
        ));
    }
    if !censored.is_empty() {
        s.paragraph(&format!(
            "PostgreSQL runs cancelled at the timeout ({:.0} s, statement_timeout) in most of their \
             repetitions: {}. They count as the timeout (marked ≥), so PostgreSQL's sums and \
             ratios are lower bounds.",
            o.timeout.as_secs_f64(),
            censored.join(", ")
        ));
    }
    let mut header = vec![
        "query",
        "rows cold s",
        "columns cold s",
        "DuckDB cold s",
        "columns / DuckDB",
        "columns warm s",
        "DuckDB warm s",
        "rows MiB",
        "columns MiB",
        "DuckDB MiB",
    ];
    if engines > POSTGRES {
        header.extend(["PostgreSQL cold s", "PostgreSQL warm s", "PostgreSQL MiB"]);
    }
    s.table(&header, table);
    std::fs::write(o.out.join("engines.csv"), csv)?;
    let md = o.out.join("engines.md");
    s.write(&md)?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(cold: f64, read_bytes: u64) -> Sample {
        Sample {
            cold,
            warm: cold / 2.0,
            read_bytes,
            rows: 4,
            ..Sample::default()
        }
    }

    #[test]
    fn a_run_without_the_row_tables_reports_columns_against_duckdb_and_dashes_for_rows() {
        let dir = std::env::temp_dir().join(format!("engines-without-rows-{}", std::process::id()));
        let o = EnginesOptions {
            sf: 10.0,
            work: dir.clone(),
            out: dir.clone(),
            queries: Vec::new(),
            repeat: 3,
            drop_caches: false,
            buffer_pool_bytes: 1 << 20,
            postgres: None,
            timeout: std::time::Duration::from_secs(1),
            rows: false,
        };
        let queries = [("q01", ""), ("q06", "")];
        // Columns at 2x and 0.5x DuckDB's time: geomean 1.00x; bytes 0.25x.
        let samples = vec![
            vec![
                Vec::new(),
                vec![sample(2.0, 1 << 20); 3],
                vec![sample(1.0, 4 << 20); 3],
            ],
            vec![
                Vec::new(),
                vec![sample(0.5, 1 << 20); 3],
                vec![sample(1.0, 4 << 20); 3],
            ],
        ];
        let md = write(&o, &queries, &samples, "dropped", None).unwrap();
        let text = std::fs::read_to_string(&md).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert!(text.contains("--without-rows"), "{text}");
        assert!(
            text.starts_with("# TPC-H: strata's columnar tables beside DuckDB"),
            "{text}"
        );
        assert!(!text.contains("| strata rows |"), "{text}");
        assert!(!text.contains("NaN"), "{text}");
        assert!(
            text.contains("| strata columns | 2.50 | 1.00x | 1.00x | 0.25x |"),
            "{text}"
        );
        assert!(
            text.contains("| q01 | — | 2.000 | 1.000 | 2.00 |"),
            "{text}"
        );
    }
}
