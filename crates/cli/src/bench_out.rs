//! Where a benchmark writes (issue 54: safe defaults for a first run).
//!
//! * Results go to `--out DIR` when it is given, else to a fresh directory
//!   made for the run, `./strata-bench-<UTC date>-<time>/<bench>/`, printed
//!   before the run starts: a first run never writes over the checkout's
//!   committed `results/` (scripts and docs that regenerate those pass
//!   `--out results/...`).
//! * The benchmark's database is `--bench-db` when given, else the global
//!   `--db` when given (the benchmark generates its tables there and reuses
//!   them), else the benchmark's own default directory.
//! * Plots drawn by a `--quick` run say "quick run" in their titles.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use crate::context::Global;

/// The results directory of one benchmark: `out`, or `<fresh>/<bench>`
/// (one fresh directory per process); says where, on stdout.
pub fn results_dir(out: Option<&Path>, bench: &str) -> Result<PathBuf> {
    let dir = match out {
        Some(dir) => dir.to_path_buf(),
        None => fresh_root()?.join(bench),
    };
    println!(
        "results go to {}{}",
        dir.display(),
        if out.is_some() {
            ""
        } else {
            " (a new directory; --out DIR chooses another)"
        }
    );
    Ok(dir)
}

/// `./strata-bench-<YYYYMMDD-HHMMSS>` (UTC), created now; `-2`, `-3`, ...
/// after the name when a run in the same second made it first.
fn fresh_root() -> Result<PathBuf> {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    if let Some(r) = ROOT.get() {
        return Ok(r.clone());
    }
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let stem = format!("strata-bench-{}", timestamp(secs));
    for n in 1.. {
        let name = if n == 1 {
            stem.clone()
        } else {
            format!("{stem}-{n}")
        };
        let dir = PathBuf::from(".").join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(ROOT.get_or_init(|| dir).clone()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "creating {} for the results (--out DIR puts them elsewhere)",
                        dir.display()
                    )
                });
            }
        }
    }
    unreachable!("an unbounded range ends only by returning")
}

/// `YYYYMMDD-HHMMSS` of `secs` since the epoch, in UTC.
fn timestamp(secs: u64) -> String {
    let days = (secs / 86_400) as i32;
    let (y, m, d) = strata_storage::row::civil_from_days(days);
    let t = secs % 86_400;
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

/// The database a benchmark generates its tables in: `--bench-db`, else
/// the global `--db` when the command line gave it, else `default`.
pub fn bench_db(cli: &Global, given: Option<&Path>, default: &str) -> PathBuf {
    let db = match given {
        Some(d) => d.to_path_buf(),
        None if cli.db_given => cli.db.clone(),
        None => PathBuf::from(default),
    };
    println!("bench database: {}", db.display());
    db
}

/// Says that `--db` is not what this benchmark uses, when it was given.
pub fn db_not_used(cli: &Global, bench: &str, instead: &str) {
    if cli.db_given {
        eprintln!("note: {bench} does not use --db: {instead}");
    }
}

/// Titles the plots this process draws as a quick run's when `quick`.
pub fn label_quick(quick: bool) {
    if quick {
        strata_bench::report::plot::label_quick_run();
    }
}

#[cfg(test)]
mod tests {
    use super::timestamp;

    #[test]
    fn timestamps_are_utc_dates_and_times() {
        assert_eq!(timestamp(0), "19700101-000000");
        // 2026-12-02 09:05:07 UTC.
        assert_eq!(timestamp(1_796_202_307), "20261202-090507");
    }
}
