//! `strata scan` end to end: every path reports the same rows, EXPLAIN-style
//! counters are printed, and bad flags are clear usage errors.

use crate::common;

use common::*;

fn rows_of(out: &str) -> u64 {
    let at = out.find("(rows=").expect("a rows= line");
    out[at + 6..].split(')').next().unwrap().parse().unwrap()
}

#[test]
fn all_paths_agree_and_report_counters() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&db, &["gen", "microbench", "--rows", "30000"]);
    let pred = "c2 >= 100 AND c2 < 5000 AND c3 < 50000";
    let mut counts = Vec::new();
    for path in [
        vec!["--path", "full"],
        vec!["--path", "index"],
        vec!["--path", "sort"],
        vec!["--path", "switch", "--estimate", "10"],
        vec!["--path", "smooth"],
        vec![
            "--path",
            "smooth",
            "--policy",
            "greedy",
            "--order-by",
            "c2",
            "--result-cache",
            "128KiB",
        ],
        vec![
            "--path",
            "smooth",
            "--trigger",
            "optimizer",
            "--estimate",
            "20",
        ],
        vec!["--path", "smooth", "--trigger", "sla", "--sla-ms", "1"],
    ] {
        let mut args = vec!["scan", "microbench", "--where", pred];
        args.extend(path.iter().copied());
        let out = ok(&db, &args);
        assert!(
            out.contains("read requests") && out.contains("heap pages examined"),
            "{out}"
        );
        counts.push(rows_of(&out));
        if path.contains(&"--order-by") {
            assert!(out.contains("result cache: budget 128.0 KiB"), "{out}");
        }
    }
    assert!(
        counts.windows(2).all(|w| w[0] == w[1]) && counts[0] > 0,
        "{counts:?}"
    );
    let out = ok(
        &db,
        &["--device", "hdd", "scan", "microbench", "--where", pred],
    );
    assert!(
        out.contains("modeled time:") && out.contains("mode changes"),
        "{out}"
    );
}

#[test]
fn bad_scans_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&db, &["gen", "microbench", "--rows", "1000"]);
    for (args, msg) in [
        (
            vec!["scan", "microbench", "--where", "c2 >> 1"],
            "unknown operator '>>'",
        ),
        (
            vec!["scan", "microbench", "--where", "c99 = 1"],
            "unknown column 'c99'",
        ),
        (
            vec![
                "scan",
                "microbench",
                "--where",
                "c2 < 5",
                "--path",
                "teleport",
            ],
            "unknown access path 'teleport'",
        ),
        (
            vec!["scan", "microbench", "--where", "c3 < 5", "--path", "index"],
            "needs an index",
        ),
        (
            vec![
                "scan",
                "microbench",
                "--where",
                "c2 < 5",
                "--policy",
                "lazy",
            ],
            "unknown policy 'lazy'",
        ),
        (
            vec![
                "scan",
                "microbench",
                "--where",
                "c2 < 5",
                "--trigger",
                "sla",
            ],
            "needs --sla-ms",
        ),
        (
            vec![
                "scan",
                "microbench",
                "--where",
                "c2 < 5",
                "--order-by",
                "c3",
            ],
            "no index on c3",
        ),
    ] {
        let o = strata(&db, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(msg), "{args:?}: {}", stderr(&o));
    }
}
