//! The cold tier as a user meets it (issue 53, item 8): `strata scan` of a
//! cold table says what ran — a full scan of objects pulled from the cold
//! tier, not an index it did not use — and counts the GETs as its I/O; and
//! `strata tier cold` against an endpoint nobody listens on fails in
//! seconds, exit code 1, naming the endpoint and the retry budget spent,
//! without a presigned URL, leaving the table local.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

use common::*;

/// The `N` of `text`'s first `<label> N`.
fn number_after(text: &str, label: &str) -> u64 {
    let at = text
        .find(label)
        .unwrap_or_else(|| panic!("no {label:?} in\n{text}"));
    text[at + label.len()..]
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {label:?} in\n{text}"))
}

#[test]
fn a_cold_full_scan_says_what_ran_and_counts_its_gets() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("csd.json");
    std::fs::write(&cfg, r#"{"groups": 2, "time_scale": 0}"#).unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["csd", "serve", "--listen", "127.0.0.1:0"])
        .arg("--data")
        .arg(dir.path().join("csd"))
        .arg("--config")
        .arg(&cfg)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let first = lines.next().expect("a line").unwrap();
    // The server writes on: its stdout stays read until it stops.
    let drain = std::thread::spawn(move || lines.map_while(Result::ok).count());
    let endpoint = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();

    let db = dir.path().join("db");
    ok(&db, &["gen", "microbench", "--rows", "5000"]);
    ok(
        &db,
        &[
            "tier",
            "cold",
            "microbench",
            "--endpoint",
            &endpoint,
            "--object-size",
            "64KiB",
        ],
    );
    let out = ok(
        &db,
        &[
            "scan",
            "microbench",
            "--where",
            "c2 < 500",
            "--path",
            "full",
        ],
    );
    let head = out.lines().next().unwrap();
    assert!(
        head.starts_with("full scan on microbench from the cold tier"),
        "{out}"
    );
    assert!(!head.contains("using"), "{out}");
    // The I/O is the tier's GETs, whole objects.
    let gets = number_after(&out, "cold tier:");
    let requests = number_after(&out, "I/O:");
    assert!(gets > 0 && requests == gets, "{out}");
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    server.wait().unwrap();
    drain.join().unwrap();
}

#[test]
fn tier_cold_to_an_endpoint_nobody_listens_on_fails_in_seconds() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&db, &["gen", "microbench", "--rows", "2000"]);
    let started = Instant::now();
    let o = strata(
        &db,
        &["tier", "cold", "microbench", "--endpoint", &endpoint],
    );
    let took = started.elapsed();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    // 5 s of retry budget and connects, and the process's own start.
    assert!(took < Duration::from_secs(7), "took {took:?}: {err}");
    assert!(
        err.contains(&endpoint) && err.contains("does not answer (connection refused)"),
        "{err}"
    );
    assert!(
        err.contains(" tries in ") && err.contains("retry budget"),
        "{err}"
    );
    assert!(
        !err.contains("X-Amz") && !err.contains("Signature"),
        "{err}"
    );
    let info = ok(&db, &["info", "microbench"]);
    assert!(info.contains("tier: local"), "{info}");
    assert_eq!(rows(&db, "microbench"), Some(2000));
    ok(&db, &["check"]);
}
