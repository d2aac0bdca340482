//! Helpers shared by the end-to-end tests: run the real `strata` binary.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Runs strata on `db` with the buffered device and a 16 MiB pool, unless `args`
/// choose their own.
pub fn strata(db: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
    c.arg("--db").arg(db);
    if !args.contains(&"--device") {
        c.args(["--device", "buffered"]);
    }
    if !args.contains(&"--buffer-pool") {
        c.args(["--buffer-pool", "16MiB"]);
    }
    c.args(args).output().expect("run strata")
}

/// Runs strata on `db` (as [`strata`] does) with `input` on its stdin.
pub fn strata_with_stdin(db: &Path, args: &[&str], input: &str) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--db")
        .arg(db)
        .args(["--device", "buffered"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run strata");
    // A process that exits without reading all of it is its own answer.
    let _ = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes());
    child.wait_with_output().expect("wait for strata")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs strata and insists it succeeded.
pub fn ok(db: &Path, args: &[&str]) -> String {
    let o = strata(db, args);
    assert!(
        o.status.success(),
        "strata {args:?} failed: {}{}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// Rows of `table` according to `strata info --json`, or None if it does not exist.
pub fn rows(db: &Path, table: &str) -> Option<u64> {
    let out = ok(db, &["info", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("info --json prints JSON");
    v.as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == table)
        .map(|t| t["rows"].as_u64().unwrap())
}

/// Writes a CSV of `n` rows `i, i % 1000, "row i"` with a header.
pub fn write_csv(path: &Path, n: u64) {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(f, "id,grp,note").unwrap();
    for i in 0..n {
        writeln!(f, "{i},{},row {i}", i % 1000).unwrap();
    }
}

pub const SCHEMA: &str = "id BIGINT, grp INT, note VARCHAR(20)";
