//! `strata bench smooth-scan <figure>`: the Smooth Scan paper's experiments
//! (the work is in `strata_bench::smooth_scan`).

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use strata_bench::smooth_scan::robustness::{self, RobustnessOptions};
use strata_bench::smooth_scan::{BenchOptions, FIGURES, postgres_figure, prepare, run_figure};
use strata_storage::util::parse_size;

use crate::bench_out;
use crate::context::Global;
use crate::context::usage;
use crate::progress::Bars;

#[derive(Args)]
pub struct SmoothArgs {
    /// A figure (15a 15b 16 17 18 19 20 21 22 23), `all`, `postgres` /
    /// `postgres-ordered` (the same sweep in PostgreSQL beside strata's real-device
    /// points; PostgreSQL is installed by scripts/setup_postgres.sh), or
    /// `robustness` (the default Smooth Scan against the best of full, index and
    /// sort over sizes, fill factors, data layouts, selectivities and devices).
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
    /// Database for the benchmark tables (kept between runs; default: the
    /// global --db when given, else strata-bench.db).
    #[arg(long)]
    pub bench_db: Option<PathBuf>,
    /// Where results go (default: a new ./strata-bench-<time>/smooth-scan).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// postgres: drop the OS page cache before every PostgreSQL query
    /// (writes /proc/sys/vm/drop_caches; root only). Without it the
    /// PostgreSQL runs are warm-OS-cache, and their rows say so.
    #[arg(long)]
    pub drop_caches: bool,
    /// robustness: table sizes in rows, comma-separated (default
    /// 100000,1000000,10000000; 100000 with --quick).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Option<Vec<u64>>,
    /// robustness: heap fill factors, comma-separated (default 1,0.25).
    #[arg(long, value_delimiter = ',')]
    pub fills: Option<Vec<f64>>,
    /// robustness: data layouts, comma-separated (default uniform, correlated,
    /// periodic, clustered, skewed, alternating, dense-start, dense-tail).
    #[arg(long)]
    pub layouts: Option<String>,
    /// robustness: `rows` (the heap) or `columns` (the tables converted to
    /// column files, run by the column access paths).
    #[arg(long, default_value = "rows")]
    pub table_format: String,
}

fn options(cli: &Global, a: &SmoothArgs, devices: Vec<String>) -> Result<BenchOptions> {
    bench_out::label_quick(a.quick);
    Ok(BenchOptions {
        db_dir: bench_out::bench_db(cli, a.bench_db.as_deref(), "strata-bench.db"),
        rows: a.rows.unwrap_or(if a.quick { 200_000 } else { 10_000_000 }),
        devices,
        pool_bytes: parse_size(&cli.buffer_pool).map_err(usage)? as usize,
        repeat: a.repeat,
        timeout_s: a.timeout,
        out: bench_out::results_dir(a.out.as_deref(), "smooth-scan")?,
        quick: a.quick,
    })
}

pub fn run(cli: &Global, a: &SmoothArgs) -> Result<()> {
    if a.drop_caches && !a.figure.starts_with("postgres") {
        return Err(usage(
            "--drop-caches is for the postgres figures only".to_string(),
        ));
    }
    if a.figure == robustness::FIGURE {
        return run_robustness(cli, a);
    }
    for (given, flag) in [
        (a.sizes.is_some(), "--sizes"),
        (a.fills.is_some(), "--fills"),
        (a.layouts.is_some(), "--layouts"),
        (a.table_format != "rows", "--table-format"),
    ] {
        if given {
            return Err(usage(format!("{flag} is for the robustness figure only")));
        }
    }
    if a.figure == "postgres" || a.figure == "postgres-ordered" {
        let opts = options(cli, a, vec!["real".into()])?;
        if a.drop_caches {
            println!("PostgreSQL runs: the OS page cache is dropped before every query");
        } else {
            println!(
                "PostgreSQL runs are warm-cache: the server restarts before every query, \
                 but the OS page cache is not dropped (rows say os_cache = warm; \
                 --drop-caches drops it, as root)"
            );
        }
        let bars = Bars::new();
        prepare(&opts, false, &bars)?;
        bars.finish();
        let summary = postgres_figure(
            &opts,
            a.figure == "postgres-ordered",
            a.drop_caches,
            &mut |line| eprintln!("{line}"),
        )?;
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
    run_figures(&figures, &opts.out, |f, log| run_figure(f, &opts, log))
}

/// Runs each of `figures` with `run(figure, log)`, its log lines to stderr,
/// printing the summary each returns, then where the results are (`out`).
pub fn run_figures(
    figures: &[String],
    out: &Path,
    mut run: impl FnMut(&str, &mut dyn FnMut(&str)) -> Result<String>,
) -> Result<()> {
    for f in figures {
        let summary = run(f, &mut |line| eprintln!("{line}"))?;
        println!("{summary}");
    }
    println!("results in {}", out.display());
    Ok(())
}

/// `strata bench smooth-scan robustness`: generates the matrix's tables that
/// the bench database lacks, runs the matrix, prints the summary.
fn run_robustness(cli: &Global, a: &SmoothArgs) -> Result<()> {
    if a.rows.is_some() {
        return Err(usage(
            "--rows is not for robustness: its table sizes are --sizes".to_string(),
        ));
    }
    let devices = parse_devices(&a.devices)?;
    let mut o = RobustnessOptions::new(options(cli, a, devices)?);
    if let Some(sizes) = &a.sizes {
        if sizes.is_empty() || sizes.iter().any(|&n| n == 0 || n > i32::MAX as u64) {
            return Err(usage(format!("--sizes: row counts from 1 to {}", i32::MAX)));
        }
        o.sizes = sizes.clone();
    }
    if let Some(fills) = &a.fills {
        if fills.is_empty() || fills.iter().any(|f| !(0.05..=1.0).contains(f)) {
            return Err(usage("--fills: fill factors in 0.05..=1.0".to_string()));
        }
        o.fills = fills.clone();
    }
    if let Some(l) = &a.layouts {
        o.layouts = robustness::parse_layouts(l).map_err(|e| usage(e.to_string()))?;
    }
    o.columns = match a.table_format.as_str() {
        "rows" => false,
        "columns" => true,
        other => {
            return Err(usage(format!(
                "--table-format: '{other}' is not rows or columns"
            )));
        }
    };
    let bars = Bars::new();
    robustness::prepare(&o, &bars, &mut |line| {
        bars.finish();
        eprintln!("{line}")
    })?;
    bars.finish();
    let summary = robustness::run(&o, &mut |line| eprintln!("{line}"))?;
    println!("{summary}");
    println!("results in {}", o.bench.out.display());
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
    Ok((figures, parse_devices(devices)?))
}

/// The devices (`hdd`, `ssd`, `real`, comma-separated) of `--devices`.
pub fn parse_devices(devices: &str) -> Result<Vec<String>> {
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
    Ok(devices)
}
