//! `strata bench io`: how close strata's device layer gets to the disk.
//!
//! Measures, on one table's heap and in one run:
//! * a full sequential read of the heap through the buffer pool's run reads (1 MiB
//!   requests, checksums verified), cold by direct I/O;
//! * single-page (8 KiB) random reads per second at depth 1 and, with io_uring, at
//!   depth 32;
//! * fio on the same file with the same request sizes and depths, as the disk's own
//!   figures (when fio is missing it is not run, and the output says how to
//!   get it; `--install-fio` installs it from Debian's packages, as root).
//!
//! Each strata figure is the median of `--repeat` runs. Results go to
//! `<--out>/io.csv` and `io.md` (by default a new `./strata-bench-<time>/storage/`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

use strata_storage::device::{AlignedBuf, Device, FileId, ReadRequest, segment_path};
use strata_storage::heap::HeapFile;
use strata_storage::page::PAGE_SIZE;

use crate::context::Global;
use crate::context::open_db;

#[derive(Args)]
pub struct IoArgs {
    /// Table whose heap is read.
    #[arg(long, default_value = "microbench")]
    pub table: String,
    /// Pages per sequential request.
    #[arg(long, default_value_t = 128)]
    pub run_pages: usize,
    /// Sequential requests in flight.
    #[arg(long, default_value_t = 2)]
    pub seq_depth: usize,
    /// Random single-page reads per measurement.
    #[arg(long, default_value_t = 20_000)]
    pub random_reads: usize,
    /// Random reads in flight for the deep measurement.
    #[arg(long, default_value_t = 32)]
    pub depth: usize,
    /// Runs per strata measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Seconds per fio random-read job.
    #[arg(long, default_value_t = 3)]
    pub fio_seconds: u64,
    /// Do not run fio.
    #[arg(long)]
    pub no_fio: bool,
    /// Install fio with apt-get when it is missing (as root); without it a
    /// missing fio is only reported.
    #[arg(long, conflicts_with = "no_fio")]
    pub install_fio: bool,
    /// Where results go (default: a new ./strata-bench-<time>/storage).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

struct Row {
    /// Repetition the sample belongs to.
    rep: usize,
    variant: String,
    wall_ms: f64,
    pages: u64,
    requests: u64,
    mib_s: f64,
    iops: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub fn run(cli: &Global, a: &IoArgs) -> Result<()> {
    if cli.device != "real" {
        bail!("bench io measures the real device; run it with --device real (the default)");
    }
    let db = open_db(cli, true)?;
    let table = db.table(&a.table)?;
    let heap = table.heap();
    let pages = heap.num_pages();
    if pages == 0 {
        bail!("table {} is empty", a.table);
    }
    let dev = db.device().clone();
    println!(
        "device: {}; table {}: {} pages ({:.1} MiB)",
        dev.describe(),
        a.table,
        pages,
        (pages * PAGE_SIZE as u64) as f64 / 1048576.0
    );
    let out = crate::bench_out::results_dir(a.out.as_deref(), "storage")?;
    let fio_file = if a.no_fio {
        None
    } else {
        match ensure_fio(a.install_fio) {
            Ok(()) => Some(segment_path(
                &db.dir().join(&db.catalog().table(&a.table)?.heap_file),
                0,
            )),
            Err(e) => {
                println!("fio not run: {e:#}");
                None
            }
        }
    };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let targets: Vec<u64> = (0..a.random_reads)
        .map(|_| rng.random_range(0..pages))
        .collect();

    // strata and fio alternate within each repetition, so that both see the same
    // machine; each figure is the median over the repetitions.
    let mut samples: Vec<Row> = Vec::new();
    for rep in 0..a.repeat.max(1) {
        println!("repetition {} of {}", rep + 1, a.repeat.max(1));
        let first = samples.len();
        samples.push(strata_sequential(heap, a)?);
        if let Some(f) = &fio_file {
            let size = std::fs::metadata(f)
                .with_context(|| format!("{}", f.display()))?
                .len();
            let bs = a.run_pages * PAGE_SIZE;
            samples.push(fio(
                f,
                format!("fio sequential read ({} KiB, psync, depth 1)", bs / 1024),
                fio_args("read", bs, "psync", 1, None, size),
            )?);
            samples.push(fio(
                f,
                format!(
                    "fio sequential read ({} KiB, io_uring, depth {})",
                    bs / 1024,
                    a.seq_depth
                ),
                fio_args("read", bs, "io_uring", a.seq_depth, None, size),
            )?);
        }
        for depth in [1usize, a.depth.max(1)] {
            samples.push(strata_random(&dev, heap.file_id(), &targets, depth)?);
            if let Some(f) = &fio_file {
                let size = std::fs::metadata(f)?.len();
                let engine = if depth == 1 { "psync" } else { "io_uring" };
                samples.push(fio(
                    f,
                    format!("fio random 8 KiB reads, depth {depth}"),
                    fio_args(
                        "randread",
                        PAGE_SIZE,
                        engine,
                        depth,
                        Some(a.fio_seconds),
                        size,
                    ),
                )?);
            }
        }
        for s in &mut samples[first..] {
            s.rep = rep;
        }
    }
    let a_repeat = a.repeat.max(1);
    let mut rows: Vec<Row> = Vec::new();
    for s in &samples {
        if rows.iter().any(|r| r.variant == s.variant) {
            continue;
        }
        let same: Vec<&Row> = samples.iter().filter(|r| r.variant == s.variant).collect();
        rows.push(Row {
            rep: 0,
            variant: s.variant.clone(),
            wall_ms: median(same.iter().map(|r| r.wall_ms).collect()),
            pages: s.pages,
            requests: s.requests,
            mib_s: median(same.iter().map(|r| r.mib_s).collect()),
            iops: median(same.iter().map(|r| r.iops).collect()),
        });
    }

    println!(
        "\n{:<58} {:>10} {:>10} {:>10}",
        "measurement", "MiB/s", "IOPS", "wall ms"
    );
    for r in &rows {
        println!(
            "{:<58} {:>10.1} {:>10.0} {:>10.1}",
            r.variant, r.mib_s, r.iops, r.wall_ms
        );
    }
    // Ratios are paired within a repetition (strata against the best fio variant
    // run right next to it), then the median is taken: drift of a shared disk
    // cancels out.
    let ratio = |a: &str, b: &str| -> Option<f64> {
        let per_rep: Vec<f64> = (0..a_repeat)
            .filter_map(|rep| {
                let in_rep = || samples.iter().filter(move |r| r.rep == rep);
                let x = in_rep().find(|r| r.variant.starts_with(a))?.mib_s;
                let y = in_rep()
                    .filter(|r| r.variant.starts_with(b))
                    .map(|r| r.mib_s)
                    .fold(f64::NAN, f64::max);
                (y > 0.0).then_some(x / y)
            })
            .collect();
        (!per_rep.is_empty()).then(|| median(per_rep))
    };
    let mut summary = String::from("# Storage I/O: strata's device layer next to fio\n\n");
    summary += &format!(
        "Table `{}`: {pages} pages. Command: `strata bench io --table {}`.\n\n",
        a.table, a.table
    );
    summary += "| measurement | MiB/s | IOPS | wall ms |\n|---|---:|---:|---:|\n";
    for r in &rows {
        summary += &format!(
            "| {} | {:.1} | {:.0} | {:.1} |\n",
            r.variant, r.mib_s, r.iops, r.wall_ms
        );
    }
    if let Some(r) = ratio("strata sequential", "fio sequential") {
        let line = format!(
            "\nSequential scan: strata reaches {:.0}% of fio's best sequential bandwidth (target >= 85%).\n",
            r * 100.0
        );
        print!("{line}");
        summary += &line;
    }
    for d in [1, a.depth] {
        if let Some(r) = ratio(
            &format!("strata random 8 KiB reads, depth {d}"),
            &format!("fio random 8 KiB reads, depth {d}"),
        ) {
            let line = format!(
                "Random reads at depth {d}: strata reaches {:.0}% of fio's IOPS.\n",
                r * 100.0
            );
            print!("{line}");
            summary += &line;
        }
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut csv = String::from(
        "figure,device,variant,x,wall_ms,modeled_ms,pages_read,io_requests,rows_out,mib_s,iops\n",
    );
    for r in &rows {
        csv += &format!(
            "io,real,\"{}\",{},{:.3},0,{},{},0,{:.2},{:.1}\n",
            r.variant, pages, r.wall_ms, r.pages, r.requests, r.mib_s, r.iops
        );
    }
    std::fs::write(out.join("io.csv"), csv)?;
    std::fs::write(out.join("io.md"), summary)?;
    println!("wrote {}/io.csv and io.md", out.display());
    Ok(())
}

/// The heap scan every access path uses: runs of `run_pages` pages, `seq_depth`
/// runs in flight, checksums verified.
fn strata_sequential(heap: &Arc<HeapFile>, a: &IoArgs) -> Result<Row> {
    let dev = heap.pool().device();
    let before = dev.stats().snapshot();
    let start = Instant::now();
    let mut n = 0u64;
    heap.scan_pages(a.run_pages, a.seq_depth, |_, _| {
        n += 1;
        Ok(std::ops::ControlFlow::Continue(()))
    })?;
    let t = start.elapsed().as_secs_f64();
    let io = dev.stats().snapshot() - before;
    Ok(Row {
        rep: 0,
        variant: format!(
            "strata sequential scan ({} KiB requests, depth {})",
            a.run_pages * 8,
            a.seq_depth
        ),
        wall_ms: t * 1e3,
        pages: n,
        requests: io.read_requests,
        mib_s: io.bytes_read() as f64 / 1048576.0 / t,
        iops: io.read_requests as f64 / t,
    })
}

/// Single-page reads of `targets`, `depth` at a time (io_uring when > 1).
fn strata_random(
    dev: &Arc<dyn Device>,
    file: FileId,
    targets: &[u64],
    depth: usize,
) -> Result<Row> {
    let mut bufs: Vec<AlignedBuf> = (0..depth).map(|_| AlignedBuf::new(1)).collect();
    let start = Instant::now();
    for chunk in targets.chunks(depth) {
        if depth == 1 {
            dev.read(file, chunk[0], &mut bufs[0])?;
        } else {
            let mut reqs: Vec<ReadRequest<'_>> = chunk
                .iter()
                .zip(bufs.iter_mut())
                .map(|(&p, b)| ReadRequest {
                    file,
                    first_page: p,
                    buf: &mut b[..],
                })
                .collect();
            dev.read_many(&mut reqs)?;
        }
    }
    let t = start.elapsed().as_secs_f64();
    let n = targets.len() as f64;
    Ok(Row {
        rep: 0,
        variant: format!("strata random 8 KiB reads, depth {depth}"),
        wall_ms: t * 1e3,
        pages: targets.len() as u64,
        requests: targets.len() as u64,
        mib_s: n * PAGE_SIZE as f64 / 1048576.0 / t,
        iops: n / t,
    })
}

fn fio(file: &Path, variant: String, args: Vec<String>) -> Result<Row> {
    let (bw, iops, ms) = run_fio(file, &args)?;
    Ok(Row {
        rep: 0,
        variant,
        wall_ms: ms,
        pages: 0,
        requests: 0,
        mib_s: bw / 1048576.0,
        iops,
    })
}

fn fio_args(
    rw: &str,
    bs: usize,
    engine: &str,
    depth: usize,
    seconds: Option<u64>,
    size: u64,
) -> Vec<String> {
    let mut v = vec![
        "--name=strata".to_string(),
        "--readonly".into(),
        format!("--rw={rw}"),
        format!("--bs={bs}"),
        "--direct=1".into(),
        format!("--ioengine={engine}"),
        format!("--iodepth={depth}"),
        format!("--size={}", size / bs as u64 * bs as u64),
        "--output-format=json".into(),
    ];
    if let Some(s) = seconds {
        v.push(format!("--runtime={s}"));
        v.push("--time_based".into());
    }
    v
}

/// Runs fio; returns (bytes/s, IOPS, runtime ms).
fn run_fio(file: &Path, args: &[String]) -> Result<(f64, f64, f64)> {
    let out = Command::new("fio")
        .arg(format!("--filename={}", file.display()))
        .args(args)
        .output()
        .context("running fio")?;
    if !out.status.success() {
        bail!("fio failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let start = text.find('{').context("fio printed no JSON")?;
    let v: serde_json::Value =
        serde_json::from_str(&text[start..]).context("parsing fio's JSON")?;
    let read = &v["jobs"][0]["read"];
    Ok((
        read["bw_bytes"].as_f64().unwrap_or(0.0),
        read["iops"].as_f64().unwrap_or(0.0),
        read["runtime"].as_f64().unwrap_or(0.0),
    ))
}

/// Whether fio can run; `install`: install it with apt-get when missing
/// (`--install-fio`). Nothing is installed unless asked.
fn ensure_fio(install: bool) -> Result<()> {
    if Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Ok(());
    }
    if !install {
        bail!(
            "fio is not installed, so the disk's own figures are missing; install it \
             (`apt-get install fio`, `dnf install fio`, `brew install fio`) or rerun with \
             --install-fio (apt-get, as root)"
        );
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("--install-fio: installing fio with apt-get needs root (sudo apt-get install fio)");
    }
    println!("installing fio from Debian's packages...");
    let ok = Command::new("apt-get")
        .args(["install", "-y", "-q", "fio"])
        .status()
        .is_ok_and(|s| s.success())
        || (Command::new("apt-get")
            .args(["update", "-q"])
            .status()
            .is_ok_and(|s| s.success())
            && Command::new("apt-get")
                .args(["install", "-y", "-q", "fio"])
                .status()
                .is_ok_and(|s| s.success()));
    if !ok {
        bail!("could not install fio with apt-get");
    }
    Ok(())
}
