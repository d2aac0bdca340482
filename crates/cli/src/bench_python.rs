//! `strata bench python`: the Python package beside DuckDB's Python API, and
//! the memory of an Arrow result. The benchmark is a Python program
//! (`crates/python/bench/python_bench.py`: it measures from inside Python,
//! where users call strata); this runs it with the interpreter that has the
//! `strata` package installed (`$STRATA_PYTHON`, else `python3` on PATH).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Result, anyhow};

/// The benchmark program in the checkout this binary was built from.
fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../python/bench/python_bench.py")
}

/// Replaces this process with the benchmark, given `args`.
pub fn run(args: &[String]) -> Result<()> {
    let script = script();
    if !script.is_file() {
        return Err(anyhow!(
            "{}: not found (strata bench python runs the benchmark of the checkout strata was built from)",
            script.display()
        ));
    }
    let python = std::env::var("STRATA_PYTHON").unwrap_or_else(|_| "python3".into());
    let err = Command::new(&python)
        .arg(&script)
        .args(args)
        // How the results file names the command that made it.
        .env("STRATA_BENCH_COMMAND", "strata bench python")
        .exec();
    Err(anyhow!(
        "cannot run {python} ({err}); set STRATA_PYTHON to the Python that has the strata package \
         (pip install ./crates/python), pyarrow and duckdb"
    ))
}
