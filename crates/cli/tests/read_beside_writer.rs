//! `strata sql`, `strata info` and `strata check` beside another process
//! that writes the database, without a server (issue 57, item 2): they open
//! read-only on the commits made so far (here the writer is this test's own
//! handle, which holds `LOCK`), a write through them is refused naming the
//! writer, and a second writer is refused saying how to share the database.

use strata_storage::row::Value;
use strata_storage::{Database, DbOptions};

use crate::common::{ok, stderr, strata};

#[test]
fn readers_open_beside_a_writer_and_see_its_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&db, &["create"]);
    ok(
        &db,
        &[
            "sql",
            "-e",
            "CREATE TABLE t (k BIGINT NOT NULL, v VARCHAR(10)); \
             INSERT INTO t VALUES (1, 'one'), (2, 'two')",
        ],
    );
    let writer = Database::open(
        &db,
        DbOptions {
            direct_io: false,
            ..DbOptions::default()
        },
    )
    .unwrap();
    let commit = |k: i64| {
        let txn = writer.begin_write().unwrap();
        txn.table("t")
            .unwrap()
            .insert_row(&[Value::Int64(k), Value::Str(format!("w{k}"))])
            .unwrap();
        txn.commit().unwrap();
    };
    // A commit in the writer's log, not yet in the data files.
    commit(3);
    let count = |extra: &[&str]| {
        let mut args = vec!["sql", "--format", "csv"];
        args.extend_from_slice(extra);
        args.extend(["-e", "SELECT count(*), max(k) FROM t"]);
        ok(&db, &args)
    };
    assert_eq!(count(&["--read-only"]), "count(*),max(t.k)\n3,3\n");
    // Without --read-only the session finds the writer and reads beside it.
    assert_eq!(count(&[]), "count(*),max(t.k)\n3,3\n");
    // Written back by a checkpoint, then one more commit.
    writer.checkpoint().unwrap();
    commit(4);
    assert_eq!(count(&["--read-only"]), "count(*),max(t.k)\n4,4\n");
    let info: serde_json::Value =
        serde_json::from_str(&ok(&db, &["info", "t", "--json"])).expect("JSON");
    assert_eq!(info[0]["rows"], 4);
    let check = ok(&db, &["check"]);
    assert!(check.contains("check passed"), "{check}");
    // A write through a reader is refused, naming the writer.
    let o = strata(
        &db,
        &["sql", "--read-only", "-e", "INSERT INTO t VALUES (9, 'x')"],
    );
    assert!(!o.status.success());
    let pid = format!("pid {}", std::process::id());
    assert!(
        stderr(&o).contains("read-only")
            && stderr(&o).contains("holds it for writing")
            && stderr(&o).contains(&pid),
        "{}",
        stderr(&o)
    );
    // A second writer is refused, told how to share.
    let o = strata(&db, &["compact", "t"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(&pid)
            && stderr(&o).contains("strata sql --read-only")
            && stderr(&o).contains("strata serve"),
        "{}",
        stderr(&o)
    );
    drop(writer);
    // The writer gone, a session writes again.
    ok(&db, &["sql", "-e", "INSERT INTO t VALUES (5, 'five')"]);
    assert_eq!(count(&[]), "count(*),max(t.k)\n5,5\n");
}
