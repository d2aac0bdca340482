//! `strata waste` end to end: the report of a loaded table in JSON and text,
//! its plot, and a clear usage error for a table that is not there.

use crate::common;

use common::*;

#[test]
fn waste_reports_each_column_and_the_unused_space() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let csv = dir.path().join("t.csv");
    write_csv(&csv, 5000);
    ok(
        &db,
        &[
            "load",
            "t",
            csv.to_str().unwrap(),
            "--schema",
            "id BIGINT, grp INT, note CHAR(30)",
            "--index",
            "t_grp:grp",
        ],
    );
    let v: serde_json::Value =
        serde_json::from_str(&ok(&db, &["waste", "t", "--json"])).expect("JSON");
    let t = &v[0];
    assert_eq!(t["table"], "t");
    assert_eq!(t["rows"], 5000);
    let col = |name: &str| {
        t["columns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["column"] == name)
            .unwrap()
            .clone()
    };
    // id 0..4999, grp 0..999, note "row 0".."row 4999" (at most 8 bytes).
    assert_eq!(col("id")["tightest_type"], "INT16");
    assert_eq!(col("id")["stored_bytes"], 8 * 5000);
    assert_eq!(col("grp")["tightest_type"], "INT16");
    assert_eq!(col("grp")["facts"]["distinct"], 1000);
    assert_eq!(col("note")["tightest_type"], "VARCHAR(8)");
    assert_eq!(col("note")["stored_bytes"], 30 * 5000);
    assert_eq!(t["indexes"][0]["name"], "t_grp");
    let heap = &t["heap"];
    let pages = heap["pages"].as_u64().unwrap();
    let parts: u64 = ["tuple_bytes", "overhead_bytes", "free_bytes", "dead_bytes"]
        .iter()
        .map(|k| heap[*k].as_u64().unwrap())
        .sum();
    assert_eq!(parts, pages * 8192);

    let text = ok(&db, &["waste"]);
    assert!(text.contains("table t: 5000 rows"), "{text}");
    assert!(text.contains("encoding waste"), "{text}");
    assert!(text.contains("index t_grp"), "{text}");

    let plot = dir.path().join("w");
    ok(&db, &["waste", "t", "--plot", plot.to_str().unwrap()]);
    assert!(dir.path().join("w.svg").exists() && dir.path().join("w.png").exists());
}

#[test]
fn waste_of_an_unknown_table_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&db, &["create"]);
    let o = strata(&db, &["waste", "nosuch"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unknown table 'nosuch'"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("panicked"));
}

/// `strata split` end to end: the side table's pages in the report, the rows
/// the same through `strata scan` and `strata sql`, `check` passing, the
/// waste report naming where each column is, and the usage errors.
#[test]
fn split_moves_columns_to_a_side_table_and_merge_puts_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let csv = dir.path().join("t.csv");
    write_csv(&csv, 5000);
    ok(
        &db,
        &[
            "load",
            "t",
            csv.to_str().unwrap(),
            "--schema",
            "id BIGINT, grp INT, note CHAR(30)",
            "--index",
            "t_grp:grp",
        ],
    );
    let before = ok(
        &db,
        &[
            "sql",
            "-e",
            "SELECT * FROM t ORDER BY id",
            "--format",
            "csv",
        ],
    );
    let v: serde_json::Value =
        serde_json::from_str(&ok(&db, &["split", "t", "--columns", "note", "--json"]))
            .expect("JSON");
    assert_eq!(v["rows"], 5000);
    assert_eq!(v["side_columns"][0], "note");
    assert!(v["pages_after"].as_u64().unwrap() < v["pages_before"].as_u64().unwrap());
    assert!(v["side_pages_after"].as_u64().unwrap() > 0);
    let after = ok(
        &db,
        &[
            "sql",
            "-e",
            "SELECT * FROM t ORDER BY id",
            "--format",
            "csv",
        ],
    );
    assert_eq!(before, after);
    ok(&db, &["check"]);
    let info = ok(&db, &["info", "t"]);
    assert!(
        info.contains("side table (strata split): note in"),
        "{info}"
    );
    // `strata scan` shows the joined rows; a predicate on a side column is
    // the SQL layer's.
    let scanned = ok(
        &db,
        &[
            "scan", "t", "--where", "grp = 7", "--path", "full", "--show", "1",
        ],
    );
    assert!(scanned.contains("row "), "{scanned}");
    let e = strata(
        &db,
        &["scan", "t", "--where", "note = 'x'", "--path", "full"],
    );
    assert!(!e.status.success());
    assert!(stderr(&e).contains("side table"), "{}", stderr(&e));
    let waste = ok(&db, &["waste", "t"]);
    assert!(waste.contains("side table"), "{waste}");
    // The index's column may not move; nor may nothing be asked.
    let e = strata(&db, &["split", "t", "--columns", "grp"]);
    assert!(stderr(&e).contains("t_grp"), "{}", stderr(&e));
    let e = strata(&db, &["split", "t"]);
    assert!(stderr(&e).contains("--columns"), "{}", stderr(&e));
    // Merged back: one heap, the same rows.
    let text = ok(&db, &["split", "t", "--merge"]);
    assert!(text.contains("no side table"), "{text}");
    let merged = ok(
        &db,
        &[
            "sql",
            "-e",
            "SELECT * FROM t ORDER BY id",
            "--format",
            "csv",
        ],
    );
    assert_eq!(before, merged);
    ok(&db, &["check"]);
}
