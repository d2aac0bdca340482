//! `strata-bench-writes`: write throughput beside PostgreSQL (`strata bench
//! writes …` runs this binary with the global options). Exit codes as
//! `strata`'s (`strata_storage::exit`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use strata_bench_writes::{Options, PgMode};
use strata_sql::shell::process::Usage;
use strata_storage::db::DbOptions;
use strata_storage::util::parse_size;

#[derive(Parser)]
#[command(
    name = "strata bench writes",
    version,
    about = "Write throughput beside PostgreSQL on this machine, in one run, same rows: \
             single-row UPDATEs by 1 and by N clients (a durable commit each), INSERT ... SELECT, \
             a range DELETE"
)]
struct Cli {
    /// Database directory (unused: the benchmark has its own, --bench-db).
    #[arg(long, default_value = "./strata.db")]
    db: PathBuf,
    /// Buffer pool size, e.g. 256MiB (PostgreSQL's shared_buffers is set to
    /// the same).
    #[arg(long, default_value = "256MiB")]
    buffer_pool: String,
    /// Device: `real` (direct I/O), `buffered`, or a modeled profile.
    #[arg(long, default_value = "real")]
    device: String,
    /// The strata benchmark database: created if missing; its tables acct
    /// and acct2 are dropped and reloaded (a database with other tables is
    /// refused).
    #[arg(long, default_value = "./bench-writes.db")]
    bench_db: PathBuf,
    /// PostgreSQL's work directory (cluster, log, socket); default
    /// <bench-db>.pg. As root the server runs as the `postgres` user, which
    /// must be able to reach it.
    #[arg(long)]
    pg_dir: Option<PathBuf>,
    /// Where writes.csv, writes-runs.csv and writes.md go.
    #[arg(long, default_value = "results/writes")]
    out: PathBuf,
    /// Small sizes for a quick check (20,000 rows, 100 updates per client).
    #[arg(long)]
    quick: bool,
    /// Rows of acct (default 1,000,000; --quick 20,000).
    #[arg(long)]
    rows: Option<u64>,
    /// Update statements per client (default 2,000; --quick 100).
    #[arg(long)]
    updates: Option<usize>,
    /// Clients of the concurrent update workload.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Runs; the medians are reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seed of the updated keys.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// strata only (PostgreSQL is also skipped, with a note, when it is not
    /// installed: scripts/setup_postgres.sh installs it).
    #[arg(long)]
    no_postgres: bool,
    /// How strata stores acct: rows (the heap, the default) or columns (a
    /// columnar table: its rows in Parquet row groups, the index a tree
    /// over them; updated rows go to its delta).
    #[arg(long, value_name = "rows|columns", default_value = "rows")]
    table_format: String,
}

fn main() -> ExitCode {
    strata_sql::shell::process::finish(run(&Cli::parse()))
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    let pool = parse_size(&cli.buffer_pool).map_err(|e| Usage(format!("--buffer-pool: {e}")))?;
    let mut o = Options::new(cli.bench_db.clone(), cli.quick);
    if let Some(d) = &cli.pg_dir {
        o.pg_dir = d.clone();
    }
    o.out = cli.out.clone();
    o.rows = cli.rows.unwrap_or(o.rows);
    o.updates = cli.updates.unwrap_or(o.updates);
    o.clients = cli.clients;
    o.runs = cli.runs;
    o.seed = cli.seed;
    o.db_options = DbOptions {
        buffer_pool_bytes: pool as usize,
        ..DbOptions::default()
    }
    .device(&cli.device)?;
    o.device = cli.device.clone();
    o.shared_buffers = format!("{}MB", (pool >> 20).max(1));
    o.columnar = match cli.table_format.to_ascii_lowercase().as_str() {
        "rows" => false,
        "columns" => true,
        other => {
            return Err(Usage(format!(
                "--table-format {other}: expected 'rows' or 'columns'"
            ))
            .into());
        }
    };
    o.postgres = if cli.no_postgres {
        PgMode::Off
    } else {
        PgMode::IfInstalled
    };
    if o.rows < 10 || o.updates == 0 || o.clients < 2 || o.runs == 0 {
        return Err(Usage(
            "--rows must be at least 10, --updates and --runs positive, --clients at least 2"
                .into(),
        )
        .into());
    }
    let report = strata_bench_writes::run(&o, &mut |l| eprintln!("{l}"))?;
    let md = strata_bench_writes::report::write(&report)?;
    print!("{}", std::fs::read_to_string(&md)?);
    eprintln!("wrote {}", md.display());
    Ok(())
}
