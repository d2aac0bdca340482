//! `strata sql` runs the `strata-sql` binary, `strata bench tpch` the
//! `strata-bench-tpch` one and `strata bench writes` `strata-bench-writes`;
//! all link DataFusion; `strata` itself does not, so the demo builds in a couple
//! of minutes instead of the better part of an hour.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Result, anyhow};

use crate::context::Global;

/// A binary next to this executable (how cargo builds them), else on PATH.
pub fn binary(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(name)))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Replaces this process with `<package> <global flags> <sub...> <args...>`,
/// where `package` is the name of both the binary and its cargo package.
pub fn run(cli: &Global, package: &str, sub: &[&str], args: &[String]) -> Result<()> {
    let bin = binary(package);
    let err = Command::new(&bin)
        .arg("--db")
        .arg(&cli.db)
        .args(["--buffer-pool", &cli.buffer_pool, "--device", &cli.device])
        .args(match package {
            "strata-sql" | "strata-server" => vec!["--cold-cache", cli.cold_cache.as_str()],
            _ => vec![],
        })
        .args(sub)
        .args(args)
        .exec();
    Err(anyhow!(
        "cannot run {} ({err}); it links DataFusion and is built separately: \
         `cargo build --release -p {package}`, or run `cargo run --release -p {package} -- {}`",
        bin.display(),
        sub.join(" ")
    ))
}
