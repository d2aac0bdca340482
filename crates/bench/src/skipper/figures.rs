//! Skipper §5 (Figs. 7–12, Table 3) on the real CSD service: `strata-sql`
//! clients running TPC-H over their own copies whose tables live on one
//! `strata csd serve`, with out-of-order execution (`strata.skipper = true`:
//! MJoin asks for every object of a query at once and joins them in whatever
//! order the device delivers) against the pull baseline of §3.2
//! (`strata.skipper = false`) and the same queries over local tables.
//!
//! Why it is built this way:
//! - The fleet, the clients and the device are [`fleet`](super::fleet)'s, as
//!   for Figs. 4/5 ([`pull`](super::pull)), so both baselines run the same code
//!   and differ only in the session setting, the scheduler (object FCFS for
//!   the query-agnostic device of the pull baseline, rank for Skipper) and
//!   the layout.
//! - **Scaling.** Modeled time is in the paper's seconds: a switch is 10 s
//!   and an object's transfer 550 s / 57 objects ≈ 9.65 s (Table 3's network
//!   time for Q12's 57 segments; switch / transfer ≈ 1), whatever the object
//!   size, so the device's bandwidth is `object size / 9.65 s`. Real delays
//!   are modeled × `time_scale`; `auto` picks the scale at which the paper's
//!   PostgreSQL processing time for Q12 (407 s, Table 3) is strata's local Q12
//!   time, so switch : transfer : processing keep the paper's proportions and
//!   a figure runs in seconds to minutes.
//! - Every client's answer must equal the same query over the local tables,
//!   or the run fails. MJoin's own account (`STRATA_SKIPPER_REPORT`: objects,
//!   requests, reissues, wait and processing time) is read per client, and the
//!   device's per-query records are summed over a client's queries (MJoin tags
//!   `<tag>#<n>`).
//! - Fig. 9's breakdown: a client's wait is MJoin's `wait_s` (Skipper) or its
//!   time beyond the local run (pull); its switch share is the switches the
//!   device made while the client ran, × the switch time, capped at the wait;
//!   the rest of the wait is transfer, and the rest of the time processing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::fig_clients::{fig7, fig9, fig10};
use super::fig_layouts::{fig11a, fig11b};
use super::fig_mixed::{fig8, fig12};
use super::fleet::{SqlRun, base_db, fresh_dir, local_copies, run_sql};
use super::options::{PAPER_PROCESS_S, SkipperOptions, TimeScale, tpch_query};
use super::round::{Ctx, Mode, max_clients, plans, round};
use crate::report::results::median;

/// The figures, in the order `all` runs them.
pub const FIGURES: [&str; 7] = ["fig7", "fig9", "fig10", "fig11a", "fig11b", "fig8", "fig12"];

/// Whether `binary` knows `strata.skipper` (MJoin is built in).
fn has_skipper(binary: &Path, db: &Path, buffer_pool: &str) -> Result<bool> {
    match run_sql(&SqlRun {
        binary,
        db,
        buffer_pool,
        cold_cache: None,
        settings: &["strata.skipper=false".to_string()],
        env: vec![],
        sql: "SELECT 1",
    }) {
        Ok(_) => Ok(true),
        Err(e) if format!("{e:#}").contains("unknown setting") => Ok(false),
        Err(e) => Err(e),
    }
}

/// Runs `figures` (names from [`FIGURES`]); returns the markdown files
/// written, one per figure, in `opts.out`.
pub fn run_skipper(
    opts: &SkipperOptions,
    figures: &[&str],
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<PathBuf>> {
    if opts.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    if let TimeScale::Fixed(s) = opts.time_scale
        && !(s.is_finite() && s > 0.0)
    {
        bail!("--time-scale must be positive (or auto)");
    }
    if opts.clients.is_empty() || opts.mixed.is_empty() || opts.reps == 0 || opts.fig12_reps == 0 {
        bail!("--clients, --queries, --reps and --fig12-reps must not be empty or zero");
    }
    for f in figures {
        if !FIGURES.contains(f) {
            bail!("unknown figure {f}: {}", FIGURES.join(", "));
        }
    }
    let base = base_db(&opts.bench_db, opts.sf, progress)?;
    let skipper = has_skipper(&opts.sql_binary, &base, &opts.buffer_pool)?;
    if !skipper {
        progress(
            "strata-sql has no strata.skipper (MJoin not built in): the Skipper runs will fail",
        );
    }
    let reports = opts.bench_db.join("skipper-reports");
    fresh_dir(&reports)?;
    let mut ctx = Ctx {
        opts,
        base,
        expected: BTreeMap::new(),
        skipper,
        scale: 0.0,
        q12_local_s: 0.0,
        q12_local_c_s: 0.0,
        reports,
        rounds: 0,
    };
    // The local answers, and Q12's local time alone.
    let mut numbers: Vec<u32> = vec![12, 5];
    numbers.extend(&opts.mixed);
    for n in numbers {
        if ctx.expected.contains_key(&n) {
            continue;
        }
        let q = tpch_query(n)?;
        progress(&format!("Q{n} over local tables"));
        let mut times = Vec::new();
        let mut answer = String::new();
        for _ in 0..(if n == 12 { opts.repeat } else { 1 }) {
            let (a, t) = run_sql(&SqlRun {
                binary: &opts.sql_binary,
                db: &ctx.base,
                buffer_pool: &opts.buffer_pool,
                cold_cache: None,
                settings: &[],
                env: vec![],
                sql: q.sql,
            })?;
            answer = a;
            times.push(t);
        }
        if n == 12 {
            ctx.q12_local_s = median(&times).unwrap_or(0.0);
        }
        ctx.expected.insert(n, answer);
    }
    // The paper gave each client its own server; here C clients share the
    // machine's cores, so a client's processing is Q12's time with C of them
    // running at once, and that is what the paper's 407 s maps to.
    let max_c = max_clients(&ctx);
    let local = local_copies(&ctx.base, &opts.bench_db.join("skipper-local"), max_c)?;
    let q12 = tpch_query(12)?;
    let mut means = Vec::new();
    for run in 0..opts.repeat {
        progress(&format!(
            "Q12 over local tables, {max_c} clients at once, run {}",
            run + 1
        ));
        let r = round(
            &mut ctx,
            None,
            &plans(&local, &vec![q12; max_c], 1),
            Mode::Local,
        )?;
        means.push(r.mean(|c| c.seconds));
    }
    ctx.q12_local_c_s = median(&means).unwrap_or(0.0);
    ctx.scale = match opts.time_scale {
        TimeScale::Fixed(s) => s,
        TimeScale::Auto => ctx.q12_local_c_s / PAPER_PROCESS_S,
    };
    let mut written = Vec::new();
    for f in figures {
        let md = match *f {
            "fig7" => fig7(&mut ctx, progress)?,
            "fig8" => fig8(&mut ctx, progress)?,
            "fig9" => fig9(&mut ctx, progress)?,
            "fig10" => fig10(&mut ctx, progress)?,
            "fig11a" => fig11a(&mut ctx, progress)?,
            "fig11b" => fig11b(&mut ctx, progress)?,
            _ => fig12(&mut ctx, progress)?,
        };
        written.push(md);
    }
    Ok(written)
}
