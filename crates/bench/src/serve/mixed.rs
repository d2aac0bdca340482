//! `strata bench serve-mixed`: does a running analytical query delay point
//! lookups of another connection? One connection runs TPC-H Q1 over and
//! over; another runs point lookups by primary key (`orders` by
//! `o_orderkey`, a prepared statement), first alone, then beside Q1, then
//! alone again. The target: beside Q1 a lookup takes at most its own
//! time alone plus 10 ms.
//!
//! It runs `strata serve` on an existing TPC-H database (`strata gen tpch`),
//! through a Unix socket; latencies are the client's, per lookup.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use rand::{Rng, SeedableRng};

use super::pgbench::StrataServer;
use crate::report::summary::provenance;

/// What to run.
#[derive(Clone, Debug)]
pub struct MixedOptions {
    /// A TPC-H database (`strata gen tpch`) with `orders_o_orderkey`.
    pub db: PathBuf,
    pub server_bin: PathBuf,
    pub memory: String,
    /// Timed lookups per phase.
    pub lookups: usize,
    /// The socket's directory.
    pub work_dir: PathBuf,
    /// The servers' `--statement-nice` values, one server each, in this
    /// order; the last is the one the target is judged on.
    pub nice: Vec<i32>,
}

/// Latencies of one phase, in ms.
#[derive(Clone, Debug)]
pub struct Phase {
    pub name: &'static str,
    pub median: f64,
    pub p99: f64,
    pub max: f64,
}

fn phase(name: &'static str, mut ms: Vec<f64>) -> Phase {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len()) - 1];
    Phase {
        name,
        median: at(0.5),
        p99: at(0.99),
        max: *ms.last().unwrap_or(&f64::NAN),
    }
}

/// The result of one server: its statement threads' nice value, the
/// phases, and Q1's runs beside the lookups.
pub struct Mixed {
    pub nice: i32,
    pub phases: Vec<Phase>,
    pub q1_runs: usize,
    pub q1_mean_s: f64,
}

/// One server per `opts.nice`, each measured alone, beside Q1 and alone
/// again.
pub fn run(opts: &MixedOptions, progress: &mut dyn FnMut(&str)) -> Result<Vec<Mixed>> {
    opts.nice
        .iter()
        .map(|&nice| {
            progress(&format!("strata serve --statement-nice {nice}"));
            run_one(opts, nice, progress)
        })
        .collect()
}

fn run_one(opts: &MixedOptions, nice: i32, progress: &mut dyn FnMut(&str)) -> Result<Mixed> {
    std::fs::create_dir_all(&opts.work_dir)?;
    let work = std::fs::canonicalize(&opts.work_dir)?;
    let server = Arc::new(StrataServer::start_with(
        &opts.server_bin,
        &opts.db,
        &opts.memory,
        &work,
        &["--statement-nice", &nice.to_string()],
    )?);
    let q1 = include_str!("../../../sql/queries/q01.sql").to_string();
    let mut lookup = server.client()?;
    let stmt = lookup.prepare("SELECT o_totalprice FROM orders WHERE o_orderkey = $1")?;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let mut measure = |n: usize| -> Result<Vec<f64>> {
        let mut ms = Vec::with_capacity(n);
        for _ in 0..n {
            let key: i64 = rng.random_range(1..6_000_000);
            let t = Instant::now();
            lookup.query(&stmt, &[&key])?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        Ok(ms)
    };
    measure(opts.lookups / 4)?; // warm the index's pages
    progress("lookups alone");
    let alone = measure(opts.lookups)?;
    // Q1 on another connection, over and over, until the lookups are done.
    let stop = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicBool::new(false));
    let q1_thread = {
        let (server, stop, runs, started) =
            (server.clone(), stop.clone(), runs.clone(), started.clone());
        std::thread::spawn(move || -> Result<Duration> {
            let mut c = server.client()?;
            let t = Instant::now();
            while !stop.load(Ordering::Acquire) {
                started.store(true, Ordering::Release);
                c.simple_query(&q1)?;
                runs.fetch_add(1, Ordering::AcqRel);
            }
            Ok(t.elapsed())
        })
    };
    while !started.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    // Q1 has been sent; a few ms later it is scanning.
    std::thread::sleep(Duration::from_millis(200));
    progress("lookups beside TPC-H Q1");
    let beside = measure(opts.lookups)?;
    stop.store(true, Ordering::Release);
    let q1_time = q1_thread
        .join()
        .map_err(|_| anyhow::anyhow!("the Q1 thread panicked"))??;
    let q1_runs = runs.load(Ordering::Acquire).max(1);
    progress("lookups alone, again");
    let after = measure(opts.lookups)?;
    Ok(Mixed {
        nice,
        phases: vec![
            phase("alone", alone),
            phase("beside TPC-H Q1", beside),
            phase("alone, after", after),
        ],
        q1_runs,
        q1_mean_s: q1_time.as_secs_f64() / q1_runs as f64,
    })
}

pub fn report(opts: &MixedOptions, runs: &[Mixed]) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Point lookups beside a running TPC-H Q1 (strata serve)\n"
    );
    let _ = writeln!(md, "{}\n", provenance());
    let _ = writeln!(
        md,
        "{} timed lookups per phase (`SELECT o_totalprice FROM orders WHERE o_orderkey = $1`, prepared, random keys) \
         on one connection; TPC-H Q1 over and over on another, database `{}`, buffer pool {}. One server per \
         `--statement-nice` value (the CPU priority of the threads that run DataFusion's plans; the connections' \
         tasks, which answer the lookups, keep the server's), one after the other in this run. Latencies as the \
         client sees them, in ms.\n",
        opts.lookups,
        opts.db.display(),
        opts.memory
    );
    let _ = writeln!(
        md,
        "| --statement-nice | lookups | median ms | p99 ms | max ms | Q1 runs (mean s) |"
    );
    let _ = writeln!(md, "| ---: | --- | ---: | ---: | ---: | ---: |");
    for m in runs {
        for p in &m.phases {
            let _ = writeln!(
                md,
                "| {} | {} | {:.3} | {:.3} | {:.3} | {} |",
                m.nice,
                p.name,
                p.median,
                p.p99,
                p.max,
                if p.name.starts_with("beside") {
                    format!("{} ({:.2})", m.q1_runs, m.q1_mean_s)
                } else {
                    String::new()
                }
            );
        }
    }
    if let Some(m) = runs.last() {
        let alone = &m.phases[0];
        let beside = &m.phases[1];
        let _ = writeln!(
            md,
            "\nTarget: beside Q1 a lookup takes at most its time alone plus 10 ms. With --statement-nice {} \
             the slowest lookup beside Q1 took {:.2} ms, the median lookup alone {:.3} ms: {} (p99 beside {:.2} ms).",
            m.nice,
            beside.max,
            alone.median,
            if beside.max <= alone.median + 10.0 {
                "met"
            } else {
                "not met"
            },
            beside.p99
        );
    }
    md
}
