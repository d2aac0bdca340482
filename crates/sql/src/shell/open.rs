//! Opening a database the way the programs over the SQL layer do
//! (`strata sql`, `strata serve`): the buffer pool, the device, the cold
//! tier's local cache, and a clear refusal for a directory that is not a
//! strata database.

use std::path::PathBuf;

use strata_storage::Database;
use strata_storage::db::DbOptions;
use strata_storage::util::parse_size;

use super::process::Usage;

/// The command-line options every SQL program takes.
#[derive(Clone, Debug, clap::Args)]
pub struct OpenArgs {
    /// Database directory.
    #[arg(long, global = true, default_value = "./strata.db")]
    pub db: PathBuf,
    /// Buffer pool size, e.g. 256MiB.
    #[arg(long, global = true, default_value = "256MiB")]
    pub buffer_pool: String,
    /// Device: `real` (direct I/O, scans' reads paced by the read window),
    /// `real-unpaced` (direct I/O, not paced), `buffered`, or a modeled profile
    /// (`hdd`, `ssd`, a JSON file).
    #[arg(long, global = true, default_value = "real")]
    pub device: String,
    /// Local cache of the cold tier (tables moved by `strata tier cold`).
    #[arg(long, global = true, default_value = "512MiB")]
    pub cold_cache: String,
}

impl OpenArgs {
    /// The database's options from these arguments.
    pub fn options(&self) -> anyhow::Result<DbOptions> {
        Ok(self.options_and_tier()?.0)
    }

    /// The database's options and the cold tier they read cold tables
    /// through (for a program that also moves tables to it).
    pub fn options_and_tier(&self) -> anyhow::Result<(DbOptions, strata_cold::device::ColdTier)> {
        let pool =
            parse_size(&self.buffer_pool).map_err(|e| Usage(format!("--buffer-pool: {e}")))?;
        let cache_bytes =
            parse_size(&self.cold_cache).map_err(|e| Usage(format!("--cold-cache: {e}")))?;
        let cold = strata_cold::device::ColdTier::new(strata_cold::device::ColdConfig {
            cache_bytes,
            ..strata_cold::device::ColdConfig::from_env()?
        });
        let opts = DbOptions {
            buffer_pool_bytes: pool as usize,
            cold_tier: Some(cold.layer()),
            ..DbOptions::default()
        }
        .device(&self.device)?
        .faults_from_env()?;
        Ok((opts, cold))
    }

    /// Opens the database read-write; with `or_read_only`, read-only when
    /// another process writes it (a write then fails, saying so).
    pub fn open(&self, or_read_only: bool) -> anyhow::Result<Database> {
        let opts = self.options()?;
        self.is_a_database()?;
        match Database::open(&self.db, opts.clone()) {
            Ok(db) => Ok(db),
            Err(_) if or_read_only => Ok(Database::open(
                &self.db,
                DbOptions {
                    read_only: true,
                    ..opts
                },
            )?),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens the database read-only: beside a process that writes it, on a
    /// snapshot of the commits made before (`strata_storage::device::snapshot`).
    pub fn open_read_only(&self) -> anyhow::Result<Database> {
        let opts = self.options()?;
        self.is_a_database()?;
        Ok(Database::open(
            &self.db,
            DbOptions {
                read_only: true,
                ..opts
            },
        )?)
    }

    fn is_a_database(&self) -> anyhow::Result<()> {
        if !self.db.join("catalog.json").exists() {
            return Err(Usage(format!(
                "{} is not a strata database (create one with `strata create`, `strata demo`, `strata gen` or `strata load`)",
                self.db.display()
            ))
            .into());
        }
        Ok(())
    }
}
