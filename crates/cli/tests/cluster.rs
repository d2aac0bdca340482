//! `strata cluster --hot` end to end: index lookups by separate `strata scan`
//! processes are counted (every one, with `STRATA_ACCESS_SAMPLE=1`) and kept
//! across opens; the clustering gathers exactly the tuples they read, builds
//! the hot partition, and later lookups are answered from it; bad input gets a
//! clear error.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

fn strata_counted(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .env("STRATA_ACCESS_SAMPLE", "1")
        .arg("--db")
        .arg(db)
        .args(["--device", "buffered", "--buffer-pool", "16MiB"])
        .args(args)
        .output()
        .expect("run strata")
}

/// `strata_counted`, insisting it succeeded; its standard output.
fn counted_ok(db: &Path, args: &[&str]) -> String {
    let o = strata_counted(db, args);
    assert!(o.status.success(), "strata {args:?} failed: {}", stderr(&o));
    stdout(&o)
}

#[test]
fn lookups_are_counted_and_cluster_gathers_them_into_a_hot_partition() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&db, &["gen", "revision", "--rows", "20000"]);
    let hot = [17, 900, 4_321, 9_999, 15_000, 19_876];
    for _ in 0..3 {
        for id in hot {
            let o = strata_counted(
                &db,
                &[
                    "scan",
                    "revision",
                    "--where",
                    &format!("rev_id = {id}"),
                    "--path",
                    "index",
                ],
            );
            assert!(o.status.success(), "{}", stderr(&o));
        }
    }
    let out = ok(
        &db,
        &[
            "cluster",
            "revision",
            "--hot",
            "--partition",
            "revision_rev_id",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["hot"], 6, "{out}");
    assert_eq!(v["moved_in"], 6, "{out}");
    assert_eq!(v["hot_pages_after"], 1, "{out}");
    assert_eq!(v["partition"], "revision_rev_id");
    assert_eq!(v["partition_entries"], 6);
    ok(&db, &["check"]);
    let info = ok(&db, &["info", "revision"]);
    assert!(
        info.contains("hot partition: 6 entries in 2 pages"),
        "{info}"
    );
    assert!(
        info.contains("hot region (strata cluster --hot) from heap page 503"),
        "{info}"
    );
    // The lookup now comes from the hot partition, with the same row.
    let text = counted_ok(
        &db,
        &[
            "scan",
            "revision",
            "--where",
            "rev_id = 4321",
            "--path",
            "index",
        ],
    );
    assert!(text.contains("hot partition of revision_rev_id"), "{text}");
    // So does Smooth Scan's (page-ordered, the default policy).
    let smooth = counted_ok(
        &db,
        &[
            "scan",
            "revision",
            "--where",
            "rev_id = 4321",
            "--path",
            "smooth",
        ],
    );
    assert!(
        smooth.contains("hot partition of revision_rev_id"),
        "{smooth}"
    );
    // A key not in it goes to the full index.
    let cold = counted_ok(
        &db,
        &[
            "scan",
            "revision",
            "--where",
            "rev_id = 4322",
            "--path",
            "smooth",
        ],
    );
    assert!(!cold.contains("hot partition"), "{cold}");
    assert!(
        text.contains("1 rows") || text.contains("rows: 1") || text.contains("4321"),
        "{text}"
    );
    // A second clustering: the counts were halved (3 → 1, below 2), so the
    // keys cooled and move back out, but for 4321, read twice more since.
    let out = ok(&db, &["cluster", "revision", "--hot", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["hot"], 1, "{out}");
    assert_eq!(v["already_in_region"], 1, "{out}");
    assert_eq!(v["moved_out"], 5, "{out}");
    assert_eq!(v["partition_entries"], 1, "{out}");
    ok(&db, &["check"]);
}

#[test]
fn cluster_errors_name_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&db, &["gen", "revision", "--rows", "10000"]);
    let o = strata(&db, &["cluster", "nosuch", "--hot"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nosuch"), "{}", stderr(&o));
    let o = strata(&db, &["cluster", "revision"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--hot"), "{}", stderr(&o));
    let o = strata(&db, &["cluster", "revision", "--hot", "--share", "0"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("share 0"), "{}", stderr(&o));
    let o = strata(
        &db,
        &["cluster", "revision", "--hot", "--partition", "nope"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nope"), "{}", stderr(&o));
    // Nothing read yet: nothing is hot, and the report says why.
    let text = ok(&db, &["cluster", "revision", "--hot"]);
    assert!(text.contains("no access counted yet"), "{text}");
}
