//! The `strata-sql` binary as a script sees it (issue 53, items 4 and 7):
//! a value that does not fit its type exits 3 whether DataFusion's kernels
//! or strata's row check found it, and statements piped in leave stdout
//! holding their results alone (the timing line belongs on stderr).

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use strata_storage::Database;

fn db() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(Database::create(&path, common::options()).unwrap());
    (dir, path)
}

fn command(db: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata-sql"));
    c.args(["sql", "--device", "buffered", "--format", "csv", "--db"])
        .arg(db);
    c
}

fn run(db: &Path, sql: &str) -> Output {
    command(db).args(["-e", sql]).output().unwrap()
}

/// Runs `strata-sql sql` with `input` on its standard input (a pipe).
fn piped(db: &Path, extra: &[&str], input: &str) -> Output {
    let mut c = command(db);
    c.args(extra);
    common::with_stdin(c, input)
}

use common::lossy as text;

#[test]
fn value_errors_exit_3_whichever_layer_finds_them() {
    let (_dir, db) = db();
    let setup = run(&db, "CREATE TABLE t (a INT NOT NULL, d DATE)");
    assert!(setup.status.success(), "{}", text(&setup.stderr));
    assert!(run(&db, "INSERT INTO t VALUES (1, NULL)").status.success());
    for sql in [
        // DataFusion's kernels (casts, arithmetic) and its constant folding.
        "SELECT CAST('abc' AS INT)",
        "INSERT INTO t VALUES (CAST('abc' AS INT), NULL)",
        "SELECT CAST(3000000000 AS INT)",
        "SELECT CAST('2024-13-45' AS DATE)",
        "SELECT a / 0 FROM t",
        "SELECT 1 / 0",
        "SELECT 9223372036854775807 + 1",
        "UPDATE t SET a = a * 2147483647 * 2",
        // strata's own row check, for comparison.
        "INSERT INTO t VALUES (NULL, NULL)",
        "INSERT INTO t VALUES (3000000000, NULL)",
    ] {
        let o = run(&db, sql);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{sql}: {err}");
        assert!(
            err.starts_with("error: ") && !err.contains("panicked"),
            "{sql}: {err}"
        );
    }
    // Bad SQL and unknown names stay usage errors (2).
    for sql in ["SELEC 1", "SELECT nope FROM t", "SELECT * FROM nowhere"] {
        assert_eq!(run(&db, sql).status.code(), Some(2), "{sql}");
    }
    let o = run(&db, "SELECT a FROM t");
    assert_eq!(text(&o.stdout), "a\n1\n", "nothing failed was stored");
}

#[test]
fn piped_statements_write_only_results_to_stdout() {
    let (_dir, db) = db();
    let o = piped(
        &db,
        &[],
        "CREATE TABLE t (a INT);\nINSERT INTO t VALUES (1), (2);\nSELECT a FROM t ORDER BY a;\n",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    // The INSERT's count, then the SELECT's rows: no timing line.
    assert_eq!(text(&o.stdout), "count\n2\na\n1\n2\n");
    assert!(!text(&o.stderr).contains("row"), "{}", text(&o.stderr));

    // --timing asks for the timing line: on stderr, never in the CSV.
    let o = piped(&db, &["--timing"], "SELECT count(*) AS n FROM t;\n");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "n\n2\n");
    assert!(text(&o.stderr).contains("(1 row, "), "{}", text(&o.stderr));

    // A failed statement is reported, the others run, and the exit code
    // says it failed (here: bad input, 3).
    let o = piped(
        &db,
        &[],
        "INSERT INTO t VALUES (CAST('x' AS INT));\nSELECT count(*) AS n FROM t;\n",
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "n\n2\n");
    assert!(
        text(&o.stderr).contains("1 statement(s) failed"),
        "{}",
        text(&o.stderr)
    );
}
