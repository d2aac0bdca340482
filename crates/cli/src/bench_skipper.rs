//! `strata bench skipper <figure>`: Skipper's out-of-order execution on the
//! real CSD service (§5: Figs. 7–12 and Table 3) — `strata-sql` clients over
//! TPC-H tables on a CSD started here, through MJoin (`strata.skipper=true`)
//! against the pull baseline and local tables (`strata_bench::skipper::figures`).
//! Results go to `<--out>/<figure>.md`, `.csv` and plots (by default a new
//! `./strata-bench-<time>/skipper/`), with the command and commit that made
//! them.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use strata_bench::skipper::figures::{FIGURES, run_skipper};
use strata_bench::skipper::options::{SkipperOptions, TimeScale};

use crate::context::usage;

#[derive(Args)]
pub struct BenchSkipperArgs {
    /// fig7, fig8, fig9 (with Table 3), fig10, fig11a, fig11b, fig12, or all.
    pub figure: String,
    /// TPC-H scale factor.
    #[arg(long, default_value = "0.1")]
    pub sf: String,
    /// Real delay = modeled delay × this, or `auto`: strata's local Q12 time
    /// / the paper's 407 s of processing (switch : transfer : processing as
    /// in the paper).
    #[arg(long, default_value = "auto")]
    pub time_scale: String,
    /// Bytes per object on the CSD (the paper: 1 GiB segments of 50 GB).
    #[arg(long, default_value = "2MiB")]
    pub object_size: String,
    /// Runs per point (medians).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Where the databases, the CSD's data and MJoin's reports go.
    #[arg(long, default_value = "bench-skipper")]
    pub bench_db: PathBuf,
    /// Where results go (default: a new ./strata-bench-<time>/skipper).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Fig. 7's client counts; the largest is Figs. 9, 10 and 11b's.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5")]
    pub clients: Vec<usize>,
    /// Modeled group switch time, seconds.
    #[arg(long, default_value_t = 10.0)]
    pub switch_s: f64,
    /// Fig. 10's modeled switch times, seconds.
    #[arg(long, value_delimiter = ',', default_value = "10,20,30,40")]
    pub switches_s: Vec<f64>,
    /// Figs. 8 and 12: client i runs TPC-H query i of this list.
    #[arg(long, value_delimiter = ',', default_value = "12,3,5,10,14")]
    pub queries: Vec<u32>,
    /// Fig. 8: repetitions per client.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Fig. 12: repetitions per client.
    #[arg(long, default_value_t = 3)]
    pub fig12_reps: usize,
    /// MJoin's eviction policy: max-progress or max-pending.
    #[arg(long, default_value = "max-progress")]
    pub evict: String,
}

pub fn run(cli: &crate::context::Global, a: &BenchSkipperArgs) -> Result<()> {
    let figures: Vec<&str> = match a.figure.as_str() {
        "all" => FIGURES.to_vec(),
        f if FIGURES.contains(&f) => vec![f],
        f => {
            return Err(usage(format!(
                "unknown figure {f}: bench skipper has {} (or all)",
                FIGURES.join(", ")
            )));
        }
    };
    let sf = strata_load::parse_scale_factor(&a.sf).map_err(|e| usage(e.to_string()))?;
    let object_bytes = strata_storage::util::parse_size(&a.object_size)
        .map_err(|e| usage(format!("--object-size: {e}")))?;
    let time_scale = match a.time_scale.as_str() {
        "auto" => TimeScale::Auto,
        t => match t.parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 => TimeScale::Fixed(s),
            _ => {
                return Err(usage(format!("--time-scale {t}: a factor > 0 or auto")));
            }
        },
    };
    if a.clients.is_empty() || a.clients.iter().any(|&c| c == 0 || c > 8) {
        return Err(usage(
            "--clients: counts from 1 to 8 (each is a strata-sql process)",
        ));
    }
    if a.queries.is_empty() || a.queries.len() > 5 {
        return Err(usage(
            "--queries: 1 to 5 TPC-H queries (one per client, on 5 groups)",
        ));
    }
    for q in &a.queries {
        strata_bench::skipper::options::tpch_query(*q).map_err(|e| usage(e.to_string()))?;
    }
    let seconds_ok = |v: f64| v.is_finite() && v >= 0.0;
    if !seconds_ok(a.switch_s)
        || a.switches_s.is_empty()
        || a.switches_s.iter().any(|&s| !seconds_ok(s))
    {
        return Err(usage("--switch-s, --switches-s: seconds ≥ 0"));
    }
    if a.repeat == 0 || a.reps == 0 || a.fig12_reps == 0 {
        return Err(usage(
            "--repeat, --reps and --fig12-reps must be at least 1",
        ));
    }
    if !["max-progress", "max-pending"].contains(&a.evict.as_str()) {
        return Err(usage(format!(
            "--evict {}: max-progress or max-pending",
            a.evict
        )));
    }
    crate::bench_out::db_not_used(
        cli,
        "bench skipper",
        "its databases and the CSD's data go under --bench-db DIR",
    );
    let out = crate::bench_out::results_dir(a.out.as_deref(), "skipper")?;
    let opts = SkipperOptions {
        bench_db: a.bench_db.clone(),
        out: out.clone(),
        sf,
        object_bytes,
        repeat: a.repeat,
        time_scale,
        sql_binary: crate::sql_forward::binary("strata-sql"),
        buffer_pool: "64MiB".into(),
        clients: a.clients.clone(),
        switch_s: a.switch_s,
        switches_s: a.switches_s.clone(),
        mixed: a.queries.clone(),
        reps: a.reps,
        fig12_reps: a.fig12_reps,
        evict: a.evict.clone(),
    };
    let written = run_skipper(&opts, &figures, &mut |m| eprintln!("{m}"))?;
    for md in written {
        println!("{}", std::fs::read_to_string(&md)?);
    }
    println!("results in {}", out.display());
    Ok(())
}
