//! `strata model`: the Smooth Scan paper's analytical figures (Fig. 9–12) from
//! the cost model, and the model's predictions beside a measured sweep (the
//! paper's Fig. 24). The work is in `strata_bench::smooth_scan::model`; this file parses the
//! flags, finds the table's size and prints.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use strata_bench::report::summary::num;
use strata_bench::smooth_scan::model::{
    self, BENCH_DB, DEFAULT_OUT_DIR, MEASURED_HINT, SmoothModelChoice, TableShape,
};
use strata_bench::{Comparison, ResultSet};
use strata_storage::Database;
use strata_storage::db::DbOptions;
use strata_storage::device::DeviceProfile;
use strata_storage::util::parse_size;

use crate::context::Global;
use crate::context::usage;

#[derive(Args, Clone)]
pub struct ModelArgs {
    /// Where the CSVs, plots and markdown go (default: a new
    /// ./strata-bench-<time>/smooth-scan; `--out results/smooth-scan`
    /// regenerates the committed ones).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A measured sweep (e.g. results/smooth-scan/15b.csv from `strata bench
    /// smooth-scan 15b`) to set the model beside (Fig. 24). Without it, the
    /// analytical figures are written and --out (default: results/smooth-scan,
    /// read only) is searched for a sweep. The
    /// global --device picks the modeled device (hdd, ssd or a JSON profile;
    /// the default, real, models every hdd/ssd row).
    #[arg(long)]
    pub measured: Option<PathBuf>,
    /// The measured table, looked up in --db (then ./strata-bench.db) for its
    /// rows and pages.
    #[arg(long, default_value = "microbench")]
    pub table: String,
    /// Rows of the measured table (instead of the database's).
    #[arg(long)]
    pub rows: Option<u64>,
    /// Heap pages of the measured table (instead of the database's).
    #[arg(long)]
    pub pages: Option<u64>,
    /// Smooth Scan model: paper (Eq. 14-27, Eager) or simulated (the variant's
    /// policy).
    #[arg(long, default_value = "paper")]
    pub smooth_model: String,
}

pub fn run(cli: &Global, a: &ModelArgs) -> Result<()> {
    let smooth: SmoothModelChoice = a.smooth_model.parse().map_err(usage)?;
    match &a.measured {
        Some(path) => {
            if !path.is_file() {
                return Err(usage(format!(
                    "measured sweep {} not found.\n{MEASURED_HINT}",
                    path.display()
                )));
            }
            let out = crate::bench_out::results_dir(a.out.as_deref(), "smooth-scan")?;
            fig24(cli, a, path, &out, smooth)
        }
        None => {
            let out = crate::bench_out::results_dir(a.out.as_deref(), "smooth-scan")?;
            analytical(&out)?;
            println!();
            let search = a
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from(DEFAULT_OUT_DIR));
            match model::find_measured(&search) {
                Some(path) => {
                    println!(
                        "Fig. 24: model vs the measured sweep {} (name another with --measured FILE)",
                        path.display()
                    );
                    if let Err(e) = fig24(cli, a, &path, &out, smooth) {
                        println!("  not compared: {e:#}");
                    }
                }
                None => {
                    println!(
                        "Fig. 24 (model vs measured): no measured sweep given (--measured FILE) \
                         or found in {}.",
                        search.display()
                    );
                    println!("{MEASURED_HINT}");
                }
            }
            Ok(())
        }
    }
}

fn analytical(out: &Path) -> Result<()> {
    let written = model::write_analytical(out)?;
    println!("Smooth Scan competitive analysis (§6), from the cost model's equations as printed");
    for fig in &written.figures {
        println!();
        println!("{}: {}", fig.id, fig.title);
        let (header, rows) = model::figure_table(fig);
        print!("{}", model::text_table(&header, &rows));
    }
    println!();
    println!("Beside the paper's numbers:");
    print!("{}", comparison_table(&model::paper_comparisons()));
    println!(
        "  (*) not reproduced by the formulas as printed; see {} for why",
        out.join("model.md").display()
    );
    println!();
    println!(
        "wrote {} files to {}: model-fig9..12.csv/.svg/.png, model.md",
        written.files.len(),
        out.display()
    );
    Ok(())
}

fn comparison_table(items: &[Comparison]) -> String {
    let header: Vec<String> = ["", "ours", "paper", "ours / paper"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|c| {
            let flag = if c.note.contains("NOT reproduced") {
                " (*)"
            } else {
                ""
            };
            vec![
                format!("{}{flag}", c.what),
                num(c.ours),
                num(c.paper),
                c.ratio().map_or("n/a".into(), |r| format!("{}x", num(r))),
            ]
        })
        .collect();
    model::text_table(&header, &rows)
}

/// The profiles to model the measured rows with: the global --device when it
/// names one, else the built-in hdd and ssd.
fn profiles(cli: &Global) -> Result<Vec<DeviceProfile>> {
    Ok(match cli.device.as_str() {
        "real" | "buffered" => ["hdd", "ssd"]
            .iter()
            .filter_map(|n| DeviceProfile::builtin(n))
            .collect(),
        spec => vec![DeviceProfile::parse(spec)?],
    })
}

/// The table's rows and heap pages from the first of --db and the benchmark's
/// database that has it (opened read-only, without a modeled device).
fn db_shape(cli: &Global, table: &str) -> Result<Option<TableShape>> {
    let pool = parse_size(&cli.buffer_pool).map_err(usage)? as usize;
    let mut dirs = vec![cli.db.clone()];
    if cli.db != Path::new(BENCH_DB) {
        dirs.push(PathBuf::from(BENCH_DB));
    }
    for dir in dirs {
        if !dir.is_dir() {
            continue;
        }
        let opts = DbOptions {
            buffer_pool_bytes: pool,
            direct_io: false,
            profile: None,
            read_only: true,
            ..DbOptions::default()
        };
        let Ok(db) = Database::open(&dir, opts) else {
            continue;
        };
        if let Ok(t) = db.table(table) {
            return Ok(Some(TableShape {
                rows: t.rows(),
                pages: t.heap().num_pages(),
                key_size: 4,
                source: format!("database {}, table {table}", dir.display()),
            }));
        }
    }
    Ok(None)
}

fn fig24(
    cli: &Global,
    a: &ModelArgs,
    path: &Path,
    out: &Path,
    smooth: SmoothModelChoice,
) -> Result<()> {
    let measured = ResultSet::read_csv(path)
        .map_err(|e| usage(format!("{}: {e}\n{MEASURED_HINT}", path.display())))?;
    let (table, notes) = model::choose_table_shape(
        (a.rows, a.pages),
        db_shape(cli, &a.table)?,
        model::infer_table_shape(&measured),
    )
    .map_err(usage)?;
    let source = path.display().to_string();
    let f = model::predicted_vs_measured(&measured, &table, &profiles(cli)?, smooth, &source)
        .map_err(|e| usage(format!("{}: {e}", path.display())))?;
    let files = model::write_fig24(out, &f)?;

    for n in &notes {
        println!("  note: {n}");
    }
    println!(
        "  table: {} rows in {} pages ({}); Smooth Scan model: {smooth}",
        table.rows, table.pages, table.source
    );
    for (d, p) in &f.devices {
        println!(
            "  {d}: random page {} ms, sequential page {} ms, CPU {} ms/tuple; {} tuples/page, \
             B+-tree fanout {}, height {}",
            num(p.rand_cost),
            num(p.seq_cost),
            num(p.cpu_cost),
            p.tuples_per_page(),
            p.fanout(),
            p.height()
        );
    }
    println!();
    println!("Model / measured per path (over the measured selectivities):");
    let header: Vec<String> = [
        "device", "path", "compared", "points", "median", "max", "at x (%)", "min",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows = model::ratio_rows(&f);
    print!("{}", model::text_table(&header, &rows));
    for s in &f.skipped {
        println!("  not compared: {s}");
    }
    println!();
    println!(
        "wrote {}",
        files
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}
