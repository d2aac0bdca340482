//! `strata csd serve` and `strata csd metrics` as a user runs them: the server
//! prints the address it picked, answers its metrics, refuses a configuration
//! that contradicts its data directory, and stops cleanly on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn strata() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata"))
}

#[test]
fn serve_prints_its_address_answers_metrics_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("csd");
    let cfg = dir.path().join("csd.json");
    std::fs::write(
        &cfg,
        r#"{"groups": 3, "switch_ms": 500, "time_scale": 0, "policy": "query-fcfs"}"#,
    )
    .unwrap();
    let mut child = strata()
        .args([
            "csd",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--policy",
            "rank:0.5",
            "--layout",
            "striped",
        ])
        .arg("--data")
        .arg(&data)
        .arg("--config")
        .arg(&cfg)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().expect("a line").unwrap();
    assert!(
        first.starts_with("strata csd: listening on http://127.0.0.1:"),
        "{first}"
    );
    // Flags override the file; the rest comes from it.
    assert!(
        first.contains("3 groups, policy rank:0.5, layout striped, switch 500 ms"),
        "{first}"
    );
    let endpoint = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_string();

    let out = strata()
        .args(["csd", "metrics", "--endpoint", &endpoint])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metrics: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(metrics["groups"], 3);
    assert_eq!(metrics["policy"], "rank:0.5");
    assert_eq!(metrics["state"]["served"], 0);
    let out = strata()
        .args(["csd", "metrics", "--reset", "--endpoint", &endpoint])
        .output()
        .unwrap();
    assert!(out.status.success());

    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l == "strata csd: stopped"), "{rest:?}");
    assert!(data.join("csd-meta.json").exists());

    // The data directory remembers 3 groups: asking for 2 is refused, naming why.
    let out = strata()
        .args(["csd", "serve", "--listen", "127.0.0.1:0", "--groups", "2"])
        .arg("--data")
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("csd-meta.json") && err.contains("3 groups"),
        "{err}"
    );

    // A server that is not there is a clear error too.
    let out = strata()
        .args(["csd", "metrics", "--endpoint", "http://127.0.0.1:1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("http://127.0.0.1:1"));
    let out = strata()
        .args(["csd", "metrics", "--endpoint", "localhost:9000"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected http://HOST:PORT"));
}
