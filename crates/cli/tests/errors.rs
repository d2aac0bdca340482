//! Bad input through the real binary: each gives a clear message naming what was
//! wrong and a distinct exit code, never a panic, and loses nothing.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;

fn heap_segment(db: &Path, table: &str) -> PathBuf {
    let cat: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(db.join("catalog.json")).unwrap()).unwrap();
    let base = cat["tables"][table]["heap_file"].as_str().unwrap();
    db.join(format!("{base}.0000"))
}

fn no_panic(o: &std::process::Output) {
    let e = stderr(o);
    assert!(!e.contains("panicked"), "strata panicked: {e}");
}

fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let csv = dir.path().join("good.csv");
    write_csv(&csv, 5000);
    ok(
        &db,
        &[
            "load",
            "t",
            csv.to_str().unwrap(),
            "--schema",
            SCHEMA,
            "--index",
            "t_grp:grp",
        ],
    );
    (dir, db)
}

#[test]
fn malformed_csv_rows_name_file_line_and_column_and_change_nothing() {
    let (dir, db) = setup();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "id,grp,note\n1,2,fine\n2,notanumber,x\n").unwrap();
    let o = strata(&db, &["load", "t", bad.to_str().unwrap()]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("bad.csv:3") && e.contains("grp") && e.contains("'notanumber'"),
        "{e}"
    );
    assert_eq!(rows(&db, "t"), Some(5000), "a failed load changes nothing");

    std::fs::write(&bad, "id,grp,note\n1,2\n").unwrap();
    let o = strata(&db, &["load", "t", bad.to_str().unwrap()]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("bad.csv:2"), "{}", stderr(&o));

    // With --max-errors the bad row is skipped and reported; the rest loads.
    std::fs::write(&bad, "id,grp,note\n1,2,a\n2,x,b\n3,4,c\n").unwrap();
    let o = strata(
        &db,
        &["load", "t", bad.to_str().unwrap(), "--max-errors", "1"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("bad.csv:3"), "{}", stderr(&o));
    assert_eq!(rows(&db, "t"), Some(5002));
    ok(&db, &["check"]);
}

#[test]
fn a_flipped_byte_is_reported_with_its_page() {
    let (_dir, db) = setup();
    let seg = heap_segment(&db, "t");
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[3 * 8192 + 4000] ^= 0x10;
    std::fs::write(&seg, bytes).unwrap();
    let o = strata(&db, &["check"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(4));
    let e = stderr(&o);
    assert!(
        e.contains("corrupt page 3") && e.contains("checksum") && e.contains(".0000"),
        "{e}"
    );
}

#[test]
fn a_truncated_file_is_reported() {
    let (_dir, db) = setup();
    let seg = heap_segment(&db, "t");
    let len = std::fs::metadata(&seg).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .set_len(len - 5000)
        .unwrap();
    let o = strata(&db, &["check"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("truncated"), "{}", stderr(&o));
}

#[test]
fn unknown_names_are_usage_errors() {
    let (dir, db) = setup();
    let o = strata(&db, &["info", "nosuch"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown table 'nosuch'"),
        "{}",
        stderr(&o)
    );

    let csv = dir.path().join("x.csv");
    write_csv(&csv, 10);
    let o = strata(
        &db,
        &[
            "load",
            "u",
            csv.to_str().unwrap(),
            "--schema",
            SCHEMA,
            "--index",
            "u_x:nosuchcol",
        ],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown column 'nosuchcol'"),
        "{}",
        stderr(&o)
    );
    assert_eq!(rows(&db, "u"), None);

    let o = strata(&db, &["gen", "nosuchdata"]);
    assert_eq!(o.status.code(), Some(2));
    let o = strata(&db, &["--device", "floppy", "info"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));

    let o = strata(&dir.path().join("nodb"), &["info"]);
    no_panic(&o);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("nodb"), "{}", stderr(&o));
}

#[test]
fn a_statement_nice_out_of_range_is_a_usage_error() {
    let (_dir, db) = setup();
    for args in [
        &["serve", "--statement-nice", "20"][..],
        &["serve", "--statement-nice=-1"][..],
        &["bench", "serve-mixed", "--statement-nice", "0,25"][..],
    ] {
        let o = strata(&db, args);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("statement-nice"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn an_unknown_device_is_a_usage_error_naming_it() {
    let (_dir, db) = setup();
    // The serve benchmark compares the real device paced and unpaced only.
    let o = strata(&db, &["bench", "serve-mixed", "--devices", "real,hdd"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--devices hdd"), "{}", stderr(&o));
    // `real-unpaced` is a device every command takes; a misspelling is refused.
    let o = strata(&db, &["--device", "real-unpaced", "info"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = strata(&db, &["--device", "real-unpacd", "info"]);
    no_panic(&o);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("real-unpacd"), "{}", stderr(&o));
}
