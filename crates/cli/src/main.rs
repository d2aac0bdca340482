//! `strata`: create a database, load or generate data, inspect and check it, and
//! run the experiments.
//!
//! Exit codes: 0 success; 1 an operational failure (I/O, a full disk); 2 bad usage
//! or an unknown name (table, column, index, device profile); 3 bad input data
//! (a malformed CSV row, a Parquet type strata cannot store); 4 corruption found
//! (a checksum, a truncated file, an index that disagrees with its heap).

mod bench_flash;
mod bench_io;
mod bench_smooth;
mod commands;
mod model_cmd;
mod progress;
mod scan;
mod sql_forward;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use strata_storage::StorageError;

#[derive(Parser)]
#[command(name = "strata", version, about = "A storage-aware relational engine")]
pub struct Cli {
    /// Database directory.
    #[arg(long, global = true, default_value = "./strata.db")]
    pub db: PathBuf,
    /// Buffer pool size, e.g. 256MiB.
    #[arg(long, global = true, default_value = "256MiB")]
    pub buffer_pool: String,
    /// Device: `real` (direct I/O), `buffered` (through the OS page cache), or a
    /// modeled profile over the real files: `hdd`, `ssd`, or a JSON profile file.
    #[arg(long, global = true, default_value = "real")]
    pub device: String,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Build a demo database (1M-row microbenchmark table), check it, and run one
    /// range query by a full scan and by the index, cold, with their I/O counters.
    Demo {
        #[arg(long, default_value_t = 1_000_000)]
        rows: u64,
    },
    /// Create an empty database.
    Create,
    /// Load a CSV or Parquet file into a table (created if it does not exist).
    Load(commands::LoadArgs),
    /// Generate one of the papers' data sets (microbench, skewed, flash) or the
    /// TPC-H tables (tpch --sf N).
    Gen(commands::GenArgs),
    /// Tables, sizes, pages, fill, index heights and fill.
    Info {
        /// Only this table.
        table: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Verify every checksum and index ↔ heap consistency.
    Check,
    /// Run one query through one access path and report what it did.
    Scan(scan::ScanArgs),
    /// The Smooth Scan cost model: the paper's analytical figures (9-12) and its
    /// predictions beside a measured sweep (Fig. 24).
    Model(model_cmd::ModelArgs),
    /// SQL over the database (runs the `strata-sql` binary): an interactive
    /// session, or `-e "..."` / `-f file.sql` with `--format table|csv|json`.
    #[command(disable_help_flag = true)]
    Sql {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        which: BenchCommand,
    },
}

#[derive(Subcommand)]
pub enum BenchCommand {
    /// The Smooth Scan paper's figures: 15a 15b 16 17 18 19 20 21 22 23, or all.
    SmoothScan(bench_smooth::SmoothArgs),
    /// The flash paper's figures: 2 5 6 table2, or all.
    Flash(bench_flash::FlashArgs),
    /// Sequential and random read throughput of a table's heap through the device,
    /// next to fio on the same file.
    Io(bench_io::IoArgs),
    /// TPC-H through SQL under each access path (runs the `strata-sql` binary).
    #[command(disable_help_flag = true)]
    Tpch {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match commands::run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(exit_code(&e))
        }
    }
}

/// The process exit code of a failed command (one mapping for both binaries:
/// `strata_storage::exit`).
fn exit_code(e: &anyhow::Error) -> u8 {
    fn usage(e: &(dyn std::error::Error + 'static)) -> Option<u8> {
        e.is::<commands::UsageError>()
            .then_some(strata_storage::exit::USAGE)
    }
    strata_storage::exit::code_of(
        e.as_ref(),
        &[
            strata_load::LoadError::classify,
            strata_access::AccessError::classify,
            usage,
        ],
    )
}
