//! `strata sql` and `strata bench tpch` run the `strata-sql` binary, which
//! links DataFusion; `strata` itself does not, so the demo builds in a couple
//! of minutes instead of the better part of an hour.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Result, anyhow};

use crate::context::Global;

/// `strata-sql` next to this executable (how cargo builds them), else on PATH.
fn binary() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("strata-sql")))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("strata-sql"))
}

/// Replaces this process with `strata-sql <global flags> <sub...> <args...>`.
pub fn run(cli: &Global, sub: &[&str], args: &[String]) -> Result<()> {
    let bin = binary();
    let err = Command::new(&bin)
        .arg("--db")
        .arg(&cli.db)
        .args(["--buffer-pool", &cli.buffer_pool, "--device", &cli.device])
        .args(sub)
        .args(args)
        .exec();
    Err(anyhow!(
        "cannot run {} ({err}); it holds the SQL layer and is built separately: \
         `cargo build --release -p strata-sql`, or run `cargo run --release -p strata-sql -- {}`",
        bin.display(),
        sub.join(" ")
    ))
}
