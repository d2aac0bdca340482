//! The command line: global options and one subcommand, as clap parses them.

use clap::{Parser, Subcommand};

use crate::context::Global;

#[derive(Parser)]
#[command(
    name = "strata",
    bin_name = "strata",
    version,
    about = "A storage-aware relational engine"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
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
        /// Cold runs of each access path, round-robin; the times shown are
        /// their medians
        #[arg(long, default_value_t = 1)]
        repeat: usize,
    },
    /// Create an empty database.
    Create,
    /// Load a CSV or Parquet file into a table (created if it does not exist).
    Load(crate::load::LoadArgs),
    /// Generate one of the papers' data sets (microbench, skewed, flash) or the
    /// TPC-H tables (tpch --sf N).
    Gen(crate::generate::GenArgs),
    /// Tables, sizes, pages, fill, index heights and fill.
    Info {
        /// Only this table.
        table: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Unused space and encoding waste (No Bits Left Behind §2, §4): free
    /// bytes of heap pages and index leaves, and for every column the
    /// tightest type that holds its values and the bytes its declared type
    /// wastes.
    Waste {
        /// Only this table.
        table: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Also draw each table's bytes per column, declared against
        /// tightest, to PLOT.svg and PLOT.png.
        #[arg(long, value_name = "PLOT")]
        plot: Option<std::path::PathBuf>,
    },
    /// Hot/cold clustering (No Bits Left Behind §3.1): gather the tuples
    /// index lookups read most at the end of the heap (`--hot`), optionally
    /// with a small index of their own that lookups try first
    /// (`--partition INDEX`).
    Cluster(crate::cluster::ClusterArgs),
    /// Types as hints (No Bits Left Behind §4.1): rewrite a table with each
    /// column in the narrowest encoding its values allow (frame of
    /// reference, dictionary, unpadded text); declared types, answers and
    /// indexes stay as they were.
    Compact(crate::compact::CompactArgs),
    /// Vertical partitioning (No Bits Left Behind §3.2): store some columns
    /// in a side table of their own, joined back by tuple id when a query
    /// needs them (`--columns a,b`; `--merge` puts them back).
    Split(crate::split::SplitArgs),
    /// Verify every checksum and index ↔ heap consistency.
    Check,
    /// Index settings.
    Index {
        #[command(subcommand)]
        which: IndexCommand,
    },
    /// Run one query through one access path and report what it did.
    Scan(crate::scan::ScanArgs),
    /// Move a table to the cold storage device and back (`cold TABLE
    /// --endpoint URL`, `local TABLE`).
    Tier {
        #[command(subcommand)]
        which: crate::tier::TierCommand,
    },
    /// The Smooth Scan cost model: the paper's analytical figures (9-12) and its
    /// predictions beside a measured sweep (Fig. 24).
    Model(crate::model_cmd::ModelArgs),
    /// SQL over the database (runs the `strata-sql` binary): an interactive
    /// session, or `-e "..."` / `-f file.sql` with `--format table|csv|json`.
    #[command(disable_help_flag = true)]
    Sql {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Serve the database to PostgreSQL clients (psql, drivers, pgbench) over
    /// the PostgreSQL wire protocol (runs the `strata-server` binary):
    /// `--listen 127.0.0.1:5433`, `--max-connections 100`.
    #[command(disable_help_flag = true)]
    Serve {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The cold storage device (Skipper): `serve` (the S3 endpoint), `metrics`,
    /// `cost` (tier costs, Table 1, Fig. 2, Fig. 3).
    Csd {
        #[command(subcommand)]
        which: CsdCommand,
    },
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        which: BenchCommand,
    },
}

#[derive(Subcommand)]
pub enum IndexCommand {
    /// Declare the columns an index caches in its leaves' free space (No Bits
    /// Left Behind §2.1): `--columns c,d`, or `--none` to drop the cache.
    /// Kept in the catalog; `strata info` shows them.
    Cache {
        table: String,
        index: String,
        /// Columns to cache, comma-separated (not key columns of the index;
        /// a VARCHAR(n) takes n bytes in every item).
        #[arg(
            long,
            value_delimiter = ',',
            required_unless_present = "none",
            conflicts_with = "none"
        )]
        columns: Vec<String>,
        /// Cache no column.
        #[arg(long)]
        none: bool,
    },
}

#[derive(Subcommand)]
pub enum CsdCommand {
    /// Storage cost per tier mix and the saving of a CSD replacing the
    /// capacity and archival tiers (Skipper §2–3.1: Table 1, Fig. 2, Fig. 3).
    Cost(crate::csd_cost::CostArgs),
    /// Serve the CSD as an S3-compatible endpoint (MAID disk groups, switch
    /// latency, group scheduling) until SIGINT/SIGTERM.
    Serve(crate::csd_serve::ServeArgs),
    /// Print a running server's metrics as JSON (--reset zeroes them after).
    Metrics(crate::csd_serve::MetricsArgs),
}

#[derive(Subcommand)]
pub enum BenchCommand {
    /// The Smooth Scan paper's figures: 15a 15b 16 17 18 19 20 21 22 23, or all.
    SmoothScan(crate::bench_smooth::SmoothArgs),
    /// The flash paper's figures: 2 5 6 table2, or all.
    Flash(crate::bench_flash::FlashArgs),
    /// No Bits Left Behind's index caches on a real B+-tree: 2a (hit rate vs
    /// cache capacity, Swap and Shrink, zipf exponents, an oracle beside).
    IndexCache(crate::bench_index_cache::IndexCacheArgs),
    /// Skipper's CSD, simulated: pull-model (Fig. 4/5's pull baseline vs
    /// C × S × D), schedulers (Fig. 12 and random mixes), or all.
    Csd(crate::bench_csd::BenchCsdArgs),
    /// Skipper's out-of-order execution on the real CSD service (§5):
    /// fig7 fig8 fig9 fig10 fig11a fig11b fig12, or all.
    Skipper(crate::bench_skipper::BenchSkipperArgs),
    /// No Bits Left Behind §3–4: fig3 (lookup cost with 0%, 54%, 100% of the
    /// hot tuples clustered and with a hot partition).
    Waste(crate::bench_waste::WasteArgs),
    /// pgbench (PostgreSQL 15's) against `strata serve` and PostgreSQL side by
    /// side: select-only and TPC-B-like at 1, 8 and 32 clients.
    Pgbench(crate::bench_serve::PgbenchArgs),
    /// Point lookups on one connection of `strata serve` beside TPC-H Q1
    /// running on another: are readers delayed?
    ServeMixed(crate::bench_serve::MixedArgs),
    /// `strata serve` SIGKILLed again and again under pgbench (8 clients):
    /// after every restart TPC-B's invariant holds and no acknowledged
    /// transaction is lost.
    ServeCrash(crate::bench_serve::CrashArgs),
    /// Sequential and random read throughput of a table's heap through the device,
    /// next to fio on the same file.
    Io(crate::bench_io::IoArgs),
    /// TPC-H through SQL under each access path (runs the `strata-bench-tpch` binary).
    #[command(disable_help_flag = true)]
    Tpch {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The Python package beside DuckDB's Python API (a full-table `.arrow()`
    /// and an aggregate, cold and warm) and the memory of `.arrow()` (runs
    /// crates/python/bench/python_bench.py with $STRATA_PYTHON or python3).
    #[command(disable_help_flag = true)]
    Python {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Write throughput beside PostgreSQL: single-row UPDATEs by 1 and 8 clients,
    /// INSERT ... SELECT, range DELETE (runs the `strata-bench-writes` binary).
    #[command(disable_help_flag = true)]
    Writes {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}
