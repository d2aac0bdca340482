//! What every subcommand shares: the global options (database, buffer pool,
//! device), opening the database with them, and usage errors. Subcommand
//! modules depend on this one and never on `main` or on each other's dispatch.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use strata_storage::Database;
use strata_storage::db::{DbOptions, TableOptions};
use strata_storage::util::parse_size;

/// Options every subcommand takes.
#[derive(Args, Clone, Debug)]
pub struct Global {
    /// Database directory.
    #[arg(long, global = true, default_value = "./strata.db")]
    pub db: PathBuf,
    /// Buffer pool size, e.g. 256MiB.
    #[arg(long, global = true, default_value = "256MiB")]
    pub buffer_pool: String,
    /// Device: `real` (direct I/O; scans' reads paced by a window learned from
    /// the device's latencies, so point reads do not queue behind them),
    /// `real-unpaced` (direct I/O, not paced), `buffered` (through the OS page
    /// cache), or a modeled profile over the real files: `hdd`, `ssd`, or a
    /// JSON profile file.
    #[arg(long, global = true, default_value = "real")]
    pub device: String,
    /// Local cache of the cold tier (tables moved by `strata tier cold`): at
    /// most this many bytes of whole objects, least recently used out first.
    #[arg(long, global = true, default_value = "512MiB")]
    pub cold_cache: String,
    /// Whether the command line gave `--db` (not its default): benchmarks
    /// then generate their tables there ([`crate::bench_out::bench_db`]).
    #[arg(skip)]
    pub db_given: bool,
}

/// A mistake in the command line that clap cannot see (exit code 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for UsageError {}

pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// Database options from the global flags.
/// A fault plan in `STRATA_FAULT` (see `strata_storage::device::fault`) is
/// armed on the database's device: the crash and I/O-error tests drive the real
/// binary with it.
pub fn db_options(cli: &Global, read_only: bool) -> Result<DbOptions> {
    let pool = parse_size(&cli.buffer_pool).map_err(usage)? as usize;
    Ok(DbOptions {
        buffer_pool_bytes: pool,
        read_only,
        cold_tier: Some(cold_tier(cli)?.layer()),
        ..DbOptions::default()
    }
    .device(&cli.device)?
    .faults_from_env()?)
}

/// The process's cold tier (one per process, so that its counters cover
/// every database handle the command opens): every database the `strata`
/// binary opens reads tables on the cold tier through it.
pub fn cold_tier(cli: &Global) -> Result<strata_cold::device::ColdTier> {
    static TIER: std::sync::OnceLock<strata_cold::device::ColdTier> = std::sync::OnceLock::new();
    if let Some(t) = TIER.get() {
        return Ok(t.clone());
    }
    let cache_bytes =
        parse_size(&cli.cold_cache).map_err(|e| usage(format!("--cold-cache: {e}")))?;
    let config = strata_cold::device::ColdConfig {
        cache_bytes,
        ..strata_cold::device::ColdConfig::from_env()?
    };
    Ok(TIER
        .get_or_init(|| strata_cold::device::ColdTier::new(config))
        .clone())
}

pub fn open_db(cli: &Global, read_only: bool) -> Result<Database> {
    Ok(Database::open(&cli.db, db_options(cli, read_only)?)?)
}

/// The table a command names (checked to exist), or every table.
pub fn chosen_tables(db: &Database, only: Option<&str>) -> Result<Vec<String>> {
    Ok(match only {
        Some(t) => {
            db.table(t)?;
            vec![t.to_string()]
        }
        None => db.table_names(),
    })
}

/// Heap options of a table a command creates.
pub fn table_options(fill: f64, segment: &str) -> Result<TableOptions> {
    let bytes = parse_size(segment).map_err(usage)?;
    let page = strata_storage::page::PAGE_SIZE as u64;
    if bytes < page || bytes % page != 0 {
        return Err(usage(format!(
            "segment size {segment} must be a whole number of 8 KiB pages"
        )));
    }
    Ok(TableOptions {
        fill_factor: fill,
        segment_pages: bytes / page,
    })
}
