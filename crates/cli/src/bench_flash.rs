//! `strata bench flash <figure>`: the flash paper's experiments (the work is in
//! `strata_bench::flash`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use strata_bench::flash::{FIGURES, FlashOptions, prepare, run_figure};
use strata_storage::util::parse_size;

use crate::context::Global;
use crate::context::usage;
use crate::progress::Bars;

#[derive(Args)]
pub struct FlashArgs {
    /// A figure (2 5 6 table2) or `all`.
    pub figure: String,
    /// Small sizes and fewer points (for CI and a first look).
    #[arg(long)]
    pub quick: bool,
    /// Rows of the table the modeled devices run on (default: 20,000 with
    /// --quick, else 1,000,000; the paper used 2,500,000).
    #[arg(long)]
    pub rows: Option<u64>,
    /// Rows of each user's copy on the real device (default: 5,000 with --quick,
    /// else 100,000).
    #[arg(long)]
    pub real_rows: Option<u64>,
    /// Devices, comma-separated: hdd, ssd, real.
    #[arg(long, default_value = "hdd,ssd,real")]
    pub devices: String,
    /// Real-device points per measurement (median reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Requests the sorted index scan keeps in flight (1: the paper's synchronous SIDX).
    #[arg(long, default_value_t = 1)]
    pub sidx_depth: usize,
    /// Sort memory of Fig. 6 (Table 2 sweeps 2-32 MB; Fig. 5 uses 2 MB).
    #[arg(long, default_value = "32MiB")]
    pub sort_memory: String,
    /// Buffer pool per user (N real users share N times it).
    #[arg(long, default_value = "4MiB")]
    pub pool_per_user: String,
    /// Database for the benchmark tables (kept between runs; default: the
    /// global --db when given, else strata-flash.db).
    #[arg(long)]
    pub bench_db: Option<PathBuf>,
    /// Where results go (default: a new ./strata-bench-<time>/flash).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(cli: &Global, a: &FlashArgs) -> Result<()> {
    let (figures, devices) =
        crate::bench_smooth::figures_and_devices(&a.figure, FIGURES, &a.devices)?;
    if devices.is_empty() {
        return Err(usage("--devices names no device (hdd, ssd, real)"));
    }
    if a.sidx_depth == 0 {
        return Err(usage("--sidx-depth must be at least 1"));
    }
    crate::bench_out::label_quick(a.quick);
    let opts = FlashOptions {
        db_dir: crate::bench_out::bench_db(cli, a.bench_db.as_deref(), "strata-flash.db"),
        rows: a.rows.unwrap_or(if a.quick { 20_000 } else { 1_000_000 }),
        real_rows: a.real_rows.unwrap_or(if a.quick { 5_000 } else { 100_000 }),
        devices,
        pool_bytes: parse_size(&a.pool_per_user).map_err(usage)? as usize,
        repeat: a.repeat,
        out: crate::bench_out::results_dir(a.out.as_deref(), "flash")?,
        quick: a.quick,
        sidx_depth: a.sidx_depth,
        sort_memory: parse_size(&a.sort_memory).map_err(usage)? as usize,
        trace_memory: 2 << 20,
    };
    let bars = Bars::new();
    prepare(&opts, &figures, &bars)?;
    bars.finish();
    crate::bench_smooth::run_figures(&figures, &opts.out, |f, log| run_figure(f, &opts, log))
}
