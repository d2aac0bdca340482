//! `strata bench waste <figure>`: No Bits Left Behind §3–4 (the work is in
//! `strata_bench::nblb::waste_fig3`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use strata_bench::nblb::waste_fig3::{Fig3Options, run_counting, run_fig3};

use crate::context::{Global, usage};

#[derive(Args)]
pub struct WasteArgs {
    /// `fig3`: the cost of a lookup in a Wikipedia-like revision table with
    /// 0%, 54% and 100% of the hot tuples clustered and with a hot partition;
    /// `counting`: what counting accesses costs a lookup, all in memory;
    /// `ids`: semantic ids (§4.2) — bytes, lookups by id and full scans with
    /// rev_id stored and indexed, and with the tuple's address standing in;
    /// `split`: vertical partitioning (§3.2) — bytes, lookups and full scans
    /// with the wide, rarely read columns in the rows and in a side table.
    pub figure: String,
    /// Table sizes (rows).
    #[arg(long, value_delimiter = ',', default_value = "1000000")]
    pub rows: Vec<u64>,
    /// Devices, comma-separated: real (direct I/O), hdd, ssd (modeled).
    #[arg(long, value_delimiter = ',', default_value = "real,ssd,hdd")]
    pub devices: Vec<String>,
    /// Timed lookups per point.
    #[arg(long, default_value_t = 20_000)]
    pub lookups: u64,
    /// Lookups before the timed ones (to the pool's steady state).
    #[arg(long, default_value_t = 40_000)]
    pub warmup: u64,
    /// Training lookups per latest revision before clustering.
    #[arg(long, default_value_t = 64)]
    pub train_per_hot: u64,
    /// Zipf exponent over the latest revisions.
    #[arg(long, default_value_t = 0.5)]
    pub alpha: f64,
    /// Share of lookups that take a latest revision (%).
    #[arg(long, default_value_t = 99.0)]
    pub hot_pct: f64,
    /// Buffer pool sizes, in % of the full index's pages (`ids`, `split`:
    /// of the stored / whole copy's heap pages). The defaults lie in Fig. 3's
    /// range: above the hot partition (≈ 54%), below the full index.
    #[arg(long, value_delimiter = ',', default_value = "60,75,90")]
    pub pool_pct: Vec<f64>,
    /// `fig3`: how lookups find a revision, comma-separated: stored (rev_id
    /// stored, its index), semantic (rev_id a semantic id, the tuple's
    /// address, which a move changes).
    #[arg(long, value_delimiter = ',', default_value = "stored,semantic")]
    pub ids: Vec<String>,
    /// Rounds (median reported); each runs every device and state in turn.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    #[arg(long, default_value_t = 3)]
    pub seed: u64,
    /// Where the generated tables and their clustered copies live (kept).
    #[arg(long, default_value = "strata-waste-bench")]
    pub work_dir: PathBuf,
    /// Where results go (default: a new ./strata-bench-<time>/waste).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(cli: &Global, a: &WasteArgs) -> Result<()> {
    if !["fig3", "counting", "ids", "split"].contains(&a.figure.as_str()) {
        return Err(usage(format!(
            "unknown figure {}: waste has fig3, counting, ids and split",
            a.figure
        )));
    }
    let mut o = Fig3Options {
        rows: a.rows.clone(),
        devices: a.devices.clone(),
        lookups: a.lookups,
        warmup: a.warmup,
        train_per_hot: a.train_per_hot,
        alpha: a.alpha,
        hot_pct: a.hot_pct,
        pool_pcts: a.pool_pct.clone(),
        rounds: a.rounds,
        ids: a.ids.clone(),
        work_dir: a.work_dir.clone(),
        out: PathBuf::new(),
        seed: a.seed,
    };
    o.check().map_err(|e| usage(e.to_string()))?;
    crate::bench_out::db_not_used(
        cli,
        "bench waste",
        "its tables and their clustered copies go under --work-dir DIR",
    );
    o.out = crate::bench_out::results_dir(a.out.as_deref(), "waste")?.join(&a.figure);
    let summary = if a.figure == "fig3" {
        run_fig3(&o, &mut |m| eprintln!("{m}"))?
    } else if a.figure == "ids" {
        strata_bench::nblb::waste_ids::run_ids(&o, &mut |m| eprintln!("{m}"))?
    } else if a.figure == "split" {
        strata_bench::nblb::waste_split::run_split(&o, &mut |m| eprintln!("{m}"))?
    } else {
        run_counting(&o, &mut |m| eprintln!("{m}"))?
    };
    print!("{summary}");
    Ok(())
}
