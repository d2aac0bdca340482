//! `strata bench smooth-scan <figure>`: the Smooth Scan paper's experiments
//! (the work is in `strata_bench::smooth_scan`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use strata_bench::smooth_scan::{BenchOptions, FIGURES, postgres_figure, prepare, run_figure};
use strata_storage::util::parse_size;

use crate::context::Global;
use crate::context::usage;
use crate::progress::Bars;

#[derive(Args)]
pub struct SmoothArgs {
    /// A figure (15a 15b 16 17 18 19 20 21 22 23), `all`, or `postgres` /
    /// `postgres-ordered` (the same sweep in PostgreSQL beside strata's real-device
    /// points; PostgreSQL is installed by scripts/setup_postgres.sh).
    pub figure: String,
    /// Small sizes and fewer points (for CI and a first look).
    #[arg(long)]
    pub quick: bool,
    /// Rows of the micro-benchmark table (default: 200,000 with --quick, else 10,000,000).
    #[arg(long)]
    pub rows: Option<u64>,
    /// Devices, comma-separated: hdd, ssd, real.
    #[arg(long, default_value = "hdd,ssd,real")]
    pub devices: String,
    /// Cold runs per point on the real device.
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Stop a run after this many seconds and record it as censored.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    /// Database for the benchmark tables (kept between runs).
    #[arg(long, default_value = "strata-bench.db")]
    pub bench_db: PathBuf,
    /// Where results go.
    #[arg(long, default_value = "results/smooth-scan")]
    pub out: PathBuf,
}

fn options(cli: &Global, a: &SmoothArgs, devices: Vec<String>) -> Result<BenchOptions> {
    Ok(BenchOptions {
        db_dir: a.bench_db.clone(),
        rows: a.rows.unwrap_or(if a.quick { 200_000 } else { 10_000_000 }),
        devices,
        pool_bytes: parse_size(&cli.buffer_pool).map_err(usage)? as usize,
        repeat: a.repeat,
        timeout_s: a.timeout,
        out: a.out.clone(),
        quick: a.quick,
    })
}

pub fn run(cli: &Global, a: &SmoothArgs) -> Result<()> {
    if a.figure == "postgres" || a.figure == "postgres-ordered" {
        let opts = options(cli, a, vec!["real".into()])?;
        let bars = Bars::new();
        prepare(&opts, false, &bars)?;
        bars.finish();
        let summary = postgres_figure(&opts, a.figure == "postgres-ordered", &mut |line| {
            eprintln!("{line}")
        })?;
        println!("{summary}");
        return Ok(());
    }
    let (figures, devices) = figures_and_devices(&a.figure, FIGURES, &a.devices)?;
    let opts = options(cli, a, devices)?;
    let bars = Bars::new();
    prepare(&opts, figures.iter().any(|f| f == "20"), &bars)?;
    if figures.iter().any(|f| f != "20") && figures.iter().any(|f| f == "20") {
        prepare(&opts, false, &bars)?;
    }
    bars.finish();
    for f in &figures {
        let summary = run_figure(f, &opts, &mut |line| eprintln!("{line}"))?;
        println!("{summary}");
    }
    println!("results in {}", opts.out.display());
    Ok(())
}

/// The figures (`all` or one of `known`) and devices (`hdd`, `ssd`, `real`,
/// comma-separated) a benchmark command's flags name.
pub fn figures_and_devices(
    figure: &str,
    known: &[&str],
    devices: &str,
) -> Result<(Vec<String>, Vec<String>)> {
    let figures: Vec<String> = if figure == "all" {
        known.iter().map(|s| s.to_string()).collect()
    } else if known.contains(&figure) {
        vec![figure.to_string()]
    } else {
        return Err(usage(format!(
            "unknown figure '{figure}' (one of {}, or all)",
            known.join(", ")
        )));
    };
    let devices: Vec<String> = devices
        .split(',')
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .collect();
    for d in &devices {
        if !["hdd", "ssd", "real"].contains(&d.as_str()) {
            return Err(usage(format!("unknown device '{d}' (hdd, ssd, real)")));
        }
    }
    Ok((figures, devices))
}
