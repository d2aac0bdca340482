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
    /// The servers' `--statement-nice` values.
    pub nice: Vec<i32>,
    /// The servers' `--device` values (`real`: scans' reads paced by the
    /// read window; `real-unpaced`). One server per pair of a nice value
    /// and a device, in this order.
    pub devices: Vec<String>,
}

/// Latencies of one phase, in ms: all lookups, and apart those that found
/// their row (which read a heap page, perhaps from the device) and those
/// that did not (three keys in four: TPC-H's order keys are sparse; they
/// read index pages only).
#[derive(Clone, Debug)]
pub struct Phase {
    pub name: &'static str,
    pub all: Spread,
    pub found: Spread,
    pub absent: Spread,
}

/// Median, p99 and max of some latencies, in ms, and how many there were.
#[derive(Clone, Copy, Debug)]
pub struct Spread {
    pub n: usize,
    pub median: f64,
    pub p99: f64,
    pub max: f64,
}

fn spread(mut ms: Vec<f64>) -> Spread {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| {
        if ms.is_empty() {
            f64::NAN
        } else {
            ms[((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len()) - 1]
        }
    };
    Spread {
        n: ms.len(),
        median: at(0.5),
        p99: at(0.99),
        max: ms.last().copied().unwrap_or(f64::NAN),
    }
}

fn phase(name: &'static str, lookups: Vec<(f64, bool)>) -> Phase {
    let pick = |want: Option<bool>| {
        spread(
            lookups
                .iter()
                .filter(|(_, found)| want.is_none_or(|w| w == *found))
                .map(|(ms, _)| *ms)
                .collect(),
        )
    };
    Phase {
        name,
        all: pick(None),
        found: pick(Some(true)),
        absent: pick(Some(false)),
    }
}

/// The result of one server: its statement threads' nice value, its
/// device, the phases, and Q1's runs beside the lookups.
pub struct Mixed {
    pub nice: i32,
    pub device: String,
    pub phases: Vec<Phase>,
    pub q1_runs: usize,
    pub q1_mean_s: f64,
}

/// One server per nice value and device, each measured alone, beside Q1 and
/// alone again.
pub fn run(opts: &MixedOptions, progress: &mut dyn FnMut(&str)) -> Result<Vec<Mixed>> {
    let mut out = Vec::new();
    for &nice in &opts.nice {
        for device in &opts.devices {
            progress(&format!(
                "strata --device {device} serve --statement-nice {nice}"
            ));
            out.push(run_one(opts, nice, device, progress)?);
        }
    }
    Ok(out)
}

fn run_one(
    opts: &MixedOptions,
    nice: i32,
    device: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<Mixed> {
    std::fs::create_dir_all(&opts.work_dir)?;
    let work = std::fs::canonicalize(&opts.work_dir)?;
    let server = Arc::new(StrataServer::start_with(
        &opts.server_bin,
        &opts.db,
        &opts.memory,
        &work,
        &["--statement-nice", &nice.to_string(), "--device", device],
    )?);
    let q1 = include_str!("../../../sql/queries/q01.sql").to_string();
    let mut lookup = server.client()?;
    let stmt = lookup.prepare("SELECT o_totalprice FROM orders WHERE o_orderkey = $1")?;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let mut measure = |n: usize| -> Result<Vec<(f64, bool)>> {
        let mut ms = Vec::with_capacity(n);
        for _ in 0..n {
            let key: i64 = rng.random_range(1..6_000_000);
            let t = Instant::now();
            let rows = lookup.query(&stmt, &[&key])?;
            ms.push((t.elapsed().as_secs_f64() * 1e3, !rows.is_empty()));
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
        device: device.to_string(),
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
         `--device` (`real`: scans' reads paced by the read window; `real-unpaced`: every scan's reads put in \
         flight as it issues them) and `--statement-nice` value (the CPU priority of the threads that run \
         DataFusion's plans; the connections' tasks, which answer the lookups, keep the server's), one after \
         the other in this run. Latencies as the client sees them, in ms. A lookup whose key is found reads a \
         heap page of `orders`, from the device unless the pool has it; a key that is absent (three in four: \
         TPC-H's order keys are sparse) reads index pages only.\n",
        opts.lookups,
        opts.db.display(),
        opts.memory
    );
    let _ = writeln!(
        md,
        "| --device | --statement-nice | lookups | median ms | p99 ms | max ms | key found: n, p99 / max ms | \
         key absent: n, p99 / max ms | Q1 runs (mean s) |"
    );
    let _ = writeln!(
        md,
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for m in runs {
        for p in &m.phases {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {}, {:.3} / {:.3} | {}, {:.3} / {:.3} | {} |",
                m.device,
                m.nice,
                p.name,
                p.all.median,
                p.all.p99,
                p.all.max,
                p.found.n,
                p.found.p99,
                p.found.max,
                p.absent.n,
                p.absent.p99,
                p.absent.max,
                if p.name.starts_with("beside") {
                    format!("{} ({:.2})", m.q1_runs, m.q1_mean_s)
                } else {
                    String::new()
                }
            );
        }
    }
    let _ = writeln!(
        md,
        "\nTarget: beside Q1 a lookup takes at most its median time alone plus 10 ms.\n"
    );
    for m in runs {
        let alone = &m.phases[0];
        let beside = &m.phases[1];
        let _ = writeln!(
            md,
            "- `--device {}`, `--statement-nice {}`: the slowest lookup beside Q1 took {:.2} ms, the median \
             lookup alone {:.3} ms: **{}** (p99 beside {:.2} ms; the slowest lookup alone {:.2} ms).",
            m.device,
            m.nice,
            beside.all.max,
            alone.all.median,
            if beside.all.max <= alone.all.median + 10.0 {
                "met"
            } else {
                "not met"
            },
            beside.all.p99,
            alone.all.max.max(m.phases[2].all.max),
        );
    }
    md
}
