//! The Smooth Scan paper's Fig. 14: which device address each read of TPC-H
//! Q1 asks for, and when, under full scan, index scan and Smooth Scan.
//!
//! Each path runs Q1 once, cold, with the device's trace on (the recorder the
//! flash benchmark's Fig. 5 uses, [`TraceRecorder`]): `fig14-<path>.csv` has
//! one row per request ([`Trace::write_csv`]), `fig14-<path>.svg/.png` plots
//! them, and `fig14.md` sums them up. The time axis is the device's clock:
//! modeled time on a modeled device, wall time on the real one. The address is
//! the page number within the table's heap file; the index file's pages follow
//! the heap's (one axis, as a disk's addresses).
//!
//! Index scan of Q1 (98% of lineitem) is slow at SF 1, so a run stops at the
//! benchmark's timeout and the trace keeps at most `max_events` requests (the
//! rest are counted, [`Trace::dropped`]); the plot draws at most
//! [`MAX_DOTS`] points per file, every k-th request. `fig14.md` says what was
//! cut.
//!
//! [`TraceRecorder`]: strata_storage::device::TraceRecorder

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use strata_bench::{Axis, Plot, Summary};
use strata_sql::{AccessPathSetting, SqlSession};
use strata_storage::Database;
use strata_storage::device::{IoKind, Trace};

use crate::{BenchOptions, FRESH_FILE, install_stats, prepare};

/// The paths of Fig. 14 (the paper's a) is full and sort scan alike).
pub const FIG14_PATHS: [AccessPathSetting; 3] = [
    AccessPathSetting::Full,
    AccessPathSetting::Index,
    AccessPathSetting::Smooth,
];

/// At most this many points per file in a plot.
pub const MAX_DOTS: usize = 20_000;

/// What one traced run of Q1 did.
#[derive(Clone, Debug)]
pub struct TracedRun {
    pub path: AccessPathSetting,
    /// Requests in the CSV (the trace's events).
    pub traced: usize,
    /// Read requests among them.
    pub traced_reads: usize,
    /// Requests made after the cap, not in the CSV.
    pub dropped: u64,
    /// The run hit the timeout.
    pub censored: bool,
    pub wall_ms: f64,
    /// The statement's read requests (from its I/O counters; none when
    /// censored).
    pub read_requests: Option<u64>,
    pub csv: PathBuf,
}

/// Runs Q1 once per path of [`FIG14_PATHS`] with the trace on; writes the
/// CSVs, plots and `fig14.md` into `opts.out`.
pub fn fig14(
    opts: &BenchOptions,
    max_events: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<TracedRun>> {
    prepare(opts, progress)?;
    install_stats(&opts.bench_db, FRESH_FILE, &opts.db_options)?;
    std::fs::create_dir_all(&opts.out)?;
    let sql = strata_sql::tpch::query("q01").expect("Q1 is a TPC-H query");
    let sql = sql.trim().trim_end_matches(';');
    let mut runs = Vec::new();
    for path in FIG14_PATHS {
        let db = Arc::new(Database::open(&opts.bench_db, opts.db_options.clone())?);
        let recorder = db.device().trace().context("the device records no trace")?;
        let session = SqlSession::new(db.clone())?;
        session.set("strata.access_path", path.name())?;
        recorder.start_capped(max_events);
        let r = session.execute_with_timeout(sql, opts.timeout);
        let trace = recorder.take();
        let r = r.with_context(|| format!("Q1 under {}", path.name()))?;
        let csv = opts.out.join(format!("fig14-{}.csv", path.name()));
        trace.write_csv(&csv)?;
        let run = TracedRun {
            path,
            traced: trace.events.len(),
            traced_reads: trace
                .events
                .iter()
                .filter(|e| e.kind == IoKind::Read)
                .count(),
            dropped: trace.dropped,
            censored: r.is_none(),
            wall_ms: r.as_ref().map_or(opts.timeout.as_secs_f64() * 1e3, |r| {
                r.elapsed.as_secs_f64() * 1e3
            }),
            read_requests: r.as_ref().map(|r| r.io.read_requests),
            csv,
        };
        progress(&format!(
            "fig14 Q1 {:>6}: {:.1} ms{}, {} requests traced, {} dropped",
            path.name(),
            run.wall_ms,
            if run.censored { " (timeout)" } else { "" },
            run.traced,
            run.dropped
        ));
        plot(opts, &trace, path)?;
        runs.push(run);
    }
    summary(opts, max_events, &runs)?;
    Ok(runs)
}

/// Whether the device's clock is modeled time (a profile) or the wall.
fn clock(opts: &BenchOptions) -> &'static str {
    if opts.db_options.profile.is_some() {
        "modeled time"
    } else {
        "wall time"
    }
}

/// Where each file starts on the plot's address axis: heap files first, then
/// indexes, each after the previous one's highest page; and a name per file.
fn layout(trace: &Trace) -> Vec<(strata_storage::device::FileId, u64, String)> {
    let mut files: Vec<(strata_storage::device::FileId, u64)> = Vec::new();
    for e in &trace.events {
        match files.iter_mut().find(|f| f.0 == e.file) {
            Some(f) => f.1 = f.1.max(e.first_page + e.pages),
            None => files.push((e.file, e.first_page + e.pages)),
        }
    }
    files.sort_by_key(|(f, _)| !trace.file_name(*f).contains(".heap"));
    let mut at = 0;
    files
        .into_iter()
        .map(|(f, size)| {
            // `lineitem.heap.14` → `lineitem.heap`
            let name = trace.file_name(f);
            let name = name
                .rsplit_once('.')
                .filter(|(_, n)| n.parse::<u64>().is_ok())
                .map_or(name.clone(), |(s, _)| s.to_string());
            let base = at;
            at += size;
            (f, base, name)
        })
        .collect()
}

fn plot(opts: &BenchOptions, trace: &Trace, path: AccessPathSetting) -> Result<()> {
    let files = layout(trace);
    let mut plot = Plot::points(
        format!(
            "Fig. 14: Q1 under {}, TPC-H SF {} on {}",
            path.name(),
            opts.sf,
            opts.device
        ),
        Axis::linear(format!("{} (ms)", clock(opts))),
        Axis::linear("device address (pages: heap, then index)"),
    );
    for (file, base, name) in &files {
        let reads: Vec<(f64, f64)> = trace
            .events
            .iter()
            .filter(|e| e.file == *file && e.kind == IoKind::Read)
            .map(|e| (e.start_ns as f64 / 1e6, (base + e.first_page) as f64))
            .collect();
        let every = reads.len().div_ceil(MAX_DOTS).max(1);
        plot = plot.series(format!("{name} reads"), reads.into_iter().step_by(every));
    }
    let stem = opts.out.join(format!("fig14-{}", path.name()));
    plot.write(&stem)
        .with_context(|| format!("writing {}", stem.display()))
}

fn summary(opts: &BenchOptions, max_events: usize, runs: &[TracedRun]) -> Result<()> {
    let mut s = Summary::new(&format!(
        "Fig. 14: the I/O of TPC-H Q1 (SF {}, device `{}`)",
        opts.sf, opts.device
    ));
    s.paragraph(&format!(
        "Each path runs Q1 once, cold, with the device's trace on. Y: the page asked for \
         (heap pages, then the index's); X: {} since the trace started. Runs stop at the \
         timeout ({} s); a trace keeps the first {max_events} requests and counts the rest; \
         a plot draws at most {MAX_DOTS} points per file (every k-th). The paper (Fig. 14): \
         full and sort scan read every page once, in order; index scan comes back to pages \
         over and over; Smooth Scan reads fewer pages, mostly in large sequential runs, with \
         single-page reads where index probes land on pages around regions already read.",
        clock(opts),
        opts.timeout.as_secs_f64()
    ));
    let header = [
        "path",
        "wall ms",
        "read requests",
        "requests traced",
        "not traced (cap)",
        "trace",
    ];
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                r.path.name().to_string(),
                format!("{}{:.0}", if r.censored { "≥ " } else { "" }, r.wall_ms),
                r.read_requests
                    .map_or("(timeout)".into(), |n| n.to_string()),
                r.traced.to_string(),
                r.dropped.to_string(),
                format!(
                    "`{}`",
                    r.csv.file_name().unwrap_or_default().to_string_lossy()
                ),
            ]
        })
        .collect();
    s.table(&header, &rows);
    let cut: Vec<String> = runs
        .iter()
        .filter(|r| r.censored || r.dropped > 0)
        .map(|r| {
            format!(
                "{}: {}{}",
                r.path.name(),
                if r.censored {
                    format!("stopped at the timeout after {:.0} ms", r.wall_ms)
                } else {
                    "ran to completion".into()
                },
                if r.dropped > 0 {
                    format!(
                        "; only its first {} requests are traced ({} more were made)",
                        r.traced, r.dropped
                    )
                } else {
                    String::new()
                }
            )
        })
        .collect();
    if !cut.is_empty() {
        s.heading("What was cut");
        s.bullets(cut);
    }
    for r in runs {
        s.image(
            &format!("Q1 under {}", r.path.name()),
            &format!("fig14-{}.png", r.path.name()),
        );
    }
    s.write(opts.out.join("fig14.md"))?;
    Ok(())
}
