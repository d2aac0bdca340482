//! `strata-bench-tpch`: the Smooth Scan paper's TPC-H experiment (`strata
//! bench tpch …` runs this binary with the global options). Exit codes as
//! `strata`'s (`strata_storage::exit`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use strata_sql::shell::process::Usage;
use strata_storage::db::DbOptions;
use strata_storage::util::parse_size;

#[derive(Parser)]
#[command(
    name = "strata bench tpch",
    version,
    about = "TPC-H Q1, Q4, Q6, Q7, Q12, Q14, Q19 under the optimizer (fresh and stale statistics), Smooth Scan (fresh and stale) and each fixed path; cold wall time and I/O (the Smooth Scan paper's Fig. 1, Fig. 13, Tables 2 and 3; Fig. 14 with --fig14)"
)]
struct Cli {
    /// Database directory (unused: the benchmark has its own, --bench-db).
    #[arg(long, default_value = "./strata.db")]
    db: PathBuf,
    /// Buffer pool size, e.g. 256MiB.
    #[arg(long, default_value = "256MiB")]
    buffer_pool: String,
    /// Device: `real` (direct I/O), `buffered`, or a modeled profile (`hdd`,
    /// `ssd`, a JSON file).
    #[arg(long, default_value = "real")]
    device: String,
    #[command(flatten)]
    args: TpchArgs,
}

#[derive(clap::Args)]
struct TpchArgs {
    /// Scale factor.
    #[arg(long, default_value = "1")]
    sf: String,
    /// The benchmark database (built on first use; see `strata_bench_tpch`).
    #[arg(long)]
    bench_db: Option<PathBuf>,
    /// Where tpch.csv, tpch.md and the plots go.
    #[arg(long, default_value = "results/tpch")]
    out: PathBuf,
    /// Queries, e.g. 1,6,14, or `all` (the 22; default: the paper's seven).
    #[arg(long, value_delimiter = ',')]
    queries: Vec<String>,
    /// Configurations: optimizer-fresh, optimizer-stale, smooth, smooth-stale,
    /// full, index, sort, switch (default: all).
    #[arg(long, value_delimiter = ',')]
    configs: Vec<String>,
    /// Runs per point (median reported).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Seconds before a run is cancelled and recorded as censored (with
    /// --vs-duckdb: PostgreSQL's runs only).
    #[arg(long, default_value_t = 120.0)]
    timeout: f64,
    /// Also run the queries in PostgreSQL (set up by scripts/setup_postgres.sh), loaded from the same tables, cold where permitted.
    /// With --vs-duckdb: PostgreSQL as a fourth engine, at its own defaults
    /// (parallel workers, JIT), timed at the client like the others.
    #[arg(long)]
    with_postgres: bool,
    /// With --with-postgres: PostgreSQL's initdb, pg_ctl and postgres from
    /// DIR (any version, built or unpacked) instead of the newest under
    /// /usr/lib/postgresql.
    #[arg(long, value_name = "DIR")]
    postgres_bin: Option<PathBuf>,
    /// With --with-postgres: drop the OS page cache before every PostgreSQL
    /// query (writes /proc/sys/vm/drop_caches; root only). Without it,
    /// PostgreSQL's runs after the first read through the page cache and the
    /// results file says so.
    /// With --vs-duckdb: the same, before every run of every engine.
    #[arg(long)]
    drop_caches: bool,
    /// Instead of the runs: Fig. 14, Q1 once under full, index and smooth with
    /// the device's trace on (fig14-<path>.csv, .png, fig14.md); each run stops
    /// at --timeout.
    #[arg(long)]
    fig14: bool,
    /// Instead of the runs: types as hints (No Bits Left Behind §4.1) — the
    /// database's tables compacted with and without dictionaries (copies next
    /// to --bench-db), bytes per column, and cold Q1 and Q6 full scans on
    /// each (encoding.md in --out, default results/waste/encoding).
    #[arg(long)]
    encoding: bool,
    /// Instead of the runs: the 22 queries (or --queries) on strata's row
    /// tables, on its columnar tables and in DuckDB, interleaved, medians of
    /// --repeat, cold and warm, with bytes read (engines.md in --out,
    /// default target/bench/tpch-engines; the databases under --bench-db,
    /// default tpch-sf<SF>-engines). DuckDB for Python: the one `bash
    /// scripts/test` installs. With --drop-caches (root) DuckDB's first runs
    /// are cold too.
    #[arg(long)]
    vs_duckdb: bool,
    /// --vs-duckdb: leave out strata's row tables, the largest database
    /// (1.7 GB at SF 1, about 17 GB at SF 10); the Parquet files are
    /// generated on their own. Not with --with-postgres, which loads from
    /// the row database.
    #[arg(long)]
    without_rows: bool,
    /// Instead of the runs: point lookups through an index on a columnar
    /// `lineitem` (by l_partkey) beside the row heap's, 3 columns and all 16,
    /// cold (the database opened anew, O_DIRECT) and warm, --repeat rounds
    /// (lookups.md in --out, default target/bench/tpch-lookups; the two
    /// databases under --bench-db, default tpch-sf<SF>-lookups).
    #[arg(long)]
    lookups: bool,
    /// --encoding: devices, comma-separated (real, hdd, ssd).
    #[arg(long, value_delimiter = ',', default_value = "real,ssd,hdd")]
    devices: Vec<String>,
    /// --encoding: rows of the paper-like tables (revision, page).
    #[arg(long, default_value_t = 1_000_000)]
    paper_rows: u64,
    /// --encoding: `strata.access_path` of the runs (full: the cold full
    /// scans; smooth: the SQL default, Smooth Scan through the predicate's
    /// index).
    #[arg(long, default_value_t = strata_sql::AccessPathSetting::Full)]
    access_path: strata_sql::AccessPathSetting,
    /// Fig. 14: keep at most this many requests per trace (the rest are counted).
    #[arg(long, default_value_t = 2_000_000)]
    trace_max_events: usize,
}

impl TpchArgs {
    /// A mode's databases: --bench-db, or `tpch-sf<SF>-<mode>`.
    fn work_dir(&self, mode: &str) -> PathBuf {
        self.bench_db
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("tpch-sf{}-{mode}", self.sf)))
    }

    /// A mode's report directory: --out, or `target/bench/tpch-<mode>` when
    /// --out is left at the paper runs' default.
    fn out_dir(&self, mode: &str) -> PathBuf {
        if self.out == std::path::Path::new("results/tpch") {
            PathBuf::from(format!("target/bench/tpch-{mode}"))
        } else {
            self.out.clone()
        }
    }
}

fn main() -> ExitCode {
    strata_sql::shell::process::finish(run(&Cli::parse()))
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    let a = &cli.args;
    bench(cli, a)
}

fn bench(cli: &Cli, a: &TpchArgs) -> anyhow::Result<()> {
    use strata_bench_tpch::{BenchOptions, Config};
    use strata_sql::tpch::PAPER_QUERIES;
    let sf = strata_load::parse_scale_factor(&a.sf).map_err(|e| Usage(e.to_string()))?;
    if a.repeat == 0 || !a.timeout.is_finite() || a.timeout <= 0.0 {
        return Err(Usage("--repeat and --timeout must be positive".into()).into());
    }
    let configs = if a.configs.is_empty() {
        Config::DEFAULT.to_vec()
    } else {
        a.configs
            .iter()
            .map(|c| Config::parse(c).map_err(Usage))
            .collect::<Result<_, _>>()?
    };
    if a.fig14 && (!a.queries.is_empty() || !a.configs.is_empty() || a.with_postgres) {
        return Err(Usage(
            "--fig14 traces Q1 under full, index and smooth; it takes no --queries, --configs or --with-postgres"
                .into(),
        )
        .into());
    }
    let queries = if a.queries.is_empty() {
        PAPER_QUERIES.iter().map(|q| q.to_string()).collect()
    } else {
        a.queries.clone()
    };
    if a.postgres_bin.is_some() && !a.with_postgres {
        return Err(Usage("--postgres-bin is for --with-postgres".into()).into());
    }
    if a.drop_caches && !a.with_postgres && !a.vs_duckdb {
        return Err(Usage("--drop-caches is for --with-postgres or --vs-duckdb".into()).into());
    }
    let pool = parse_size(&cli.buffer_pool).map_err(|e| Usage(format!("--buffer-pool: {e}")))?;
    let opts = BenchOptions {
        sf,
        bench_db: a
            .bench_db
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("tpch-sf{}.db", a.sf))),
        out: a.out.clone(),
        queries,
        configs,
        repeat: a.repeat,
        timeout: std::time::Duration::from_secs_f64(a.timeout),
        db_options: DbOptions {
            buffer_pool_bytes: pool as usize,
            ..DbOptions::default()
        }
        .device(&cli.device)?,
        device: cli.device.clone(),
        with_postgres: a.with_postgres,
        drop_caches: a.drop_caches,
        postgres_bin: a.postgres_bin.clone(),
    };
    if a.fig14 {
        strata_bench_tpch::trace::fig14(&opts, a.trace_max_events, &mut |l| eprintln!("{l}"))?;
        let md = opts.out.join("fig14.md");
        print!("{}", std::fs::read_to_string(&md)?);
        eprintln!("wrote {}", md.display());
        return Ok(());
    }
    if a.without_rows && (!a.vs_duckdb || a.with_postgres) {
        return Err(Usage(
            "--without-rows is for --vs-duckdb without --with-postgres (PostgreSQL is loaded from the row database)".into(),
        )
        .into());
    }
    if a.lookups {
        if a.vs_duckdb
            || a.fig14
            || a.encoding
            || a.with_postgres
            || !a.queries.is_empty()
            || !a.configs.is_empty()
        {
            return Err(Usage(
                "--lookups runs lineitem's point lookups by l_partkey on a columnar and a row database; it takes no --vs-duckdb, --fig14, --encoding, --with-postgres, --queries or --configs".into(),
            )
            .into());
        }
        let o = strata_bench_tpch::lookups::LookupOptions {
            sf,
            work: a.work_dir("lookups"),
            out: a.out_dir("lookups"),
            rounds: a.repeat,
            db_options: opts.db_options.clone(),
        };
        let md = strata_bench_tpch::lookups::run(&o, &mut |l| eprintln!("{l}"))?;
        print!("{}", std::fs::read_to_string(&md)?);
        eprintln!("wrote {}", md.display());
        return Ok(());
    }
    if a.vs_duckdb {
        if !a.configs.is_empty() || a.fig14 || a.encoding {
            return Err(Usage(
                "--vs-duckdb runs the queries on strata's row and columnar tables and in DuckDB (and PostgreSQL with --with-postgres); it takes no --configs, --fig14 or --encoding".into(),
            )
            .into());
        }
        let o = strata_bench_tpch::engines::EnginesOptions {
            sf,
            work: a.work_dir("engines"),
            out: a.out_dir("engines"),
            queries: a
                .queries
                .iter()
                .map(|q| match q.parse::<u32>() {
                    Ok(n) => format!("q{n:02}"),
                    Err(_) => q.clone(),
                })
                .collect(),
            repeat: a.repeat,
            drop_caches: a.drop_caches,
            buffer_pool_bytes: pool as usize,
            postgres: a.with_postgres.then(|| a.postgres_bin.clone()),
            timeout: std::time::Duration::from_secs_f64(a.timeout),
            rows: !a.without_rows,
        };
        let md = strata_bench_tpch::engines::run(&o, &mut |l| eprintln!("{l}"))?;
        print!("{}", std::fs::read_to_string(&md)?);
        eprintln!("wrote {}", md.display());
        return Ok(());
    }
    if a.encoding {
        if !a.queries.is_empty() || !a.configs.is_empty() || a.with_postgres || a.fig14 {
            return Err(Usage(
                "--encoding runs Q1 and Q6 (under --access-path); it takes no --queries, --configs, --with-postgres or --fig14"
                    .into(),
            )
            .into());
        }
        let mut opts = opts;
        if a.out == std::path::Path::new("results/tpch") {
            opts.out = PathBuf::from("results/waste/encoding");
        }
        let o = strata_bench_tpch::encoding::EncodingOptions {
            bench: opts,
            devices: a.devices.clone(),
            paper_rows: a.paper_rows,
            access_path: a.access_path,
        };
        let summary = strata_bench_tpch::encoding::run(&o, &mut |l| eprintln!("{l}"))?;
        print!("{summary}");
        return Ok(());
    }
    let (results, notes) = strata_bench_tpch::run(&opts, &mut |l| eprintln!("{l}"))?;
    let md = strata_bench_tpch::write(&opts, &results, &notes)?;
    print!("{}", std::fs::read_to_string(&md)?);
    eprintln!("wrote {}", md.display());
    Ok(())
}
