//! `strata sql`, `strata info` and `strata check` beside a running `strata
//! serve`: the server owns the database (its LOCK), so they go through it
//! (the address from `<db>/SERVER`) and answer what a local run answers;
//! errors keep their exit codes and name the SQLSTATE; a session reading
//! stdin (or a terminal) runs through it with its backslash commands. Checked against the same commands
//! run locally once the server is gone.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{ok, stderr, stdout, strata, strata_with_stdin};

/// `strata serve` on `db` at a port the system picks, waited for until its
/// `SERVER` record names it.
fn serve(db: &Path) -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--db")
        .arg(db)
        .args(["--device", "buffered", "serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run strata serve");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !db.join("SERVER").exists() {
        assert!(
            Instant::now() < deadline,
            "strata serve wrote no SERVER record"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn strata_sql_goes_through_the_server_and_answers_as_a_local_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&db, &["create"]);
    let mut server = serve(&db);

    let wrote = ok(
        &db,
        &[
            "sql",
            "-e",
            "CREATE TABLE t (k INT NOT NULL, name VARCHAR(10), x DECIMAL(10,2), d DATE, b BOOLEAN, big BIGINT, f DOUBLE, at TIMESTAMP); \
             INSERT INTO t VALUES (1, 'one', 1.50, DATE '2026-01-01', true, 9000000000, 0.25, TIMESTAMP '2026-01-01 10:00:00'), \
             (2, NULL, -3.00, NULL, false, NULL, NULL, NULL)",
        ],
    );
    assert!(wrote.contains('2'), "the INSERT's count: {wrote}");
    let query = "SELECT * FROM t ORDER BY k";
    let mut through = Vec::new();
    for format in ["csv", "json", "table"] {
        through.push(ok(&db, &["sql", "--format", format, "-e", query]));
    }
    assert_eq!(
        through[0],
        "k,name,x,d,b,big,f,at\n1,one,1.50,2026-01-01,true,9000000000,0.25,2026-01-01T10:00:00\n2,,-3.00,,false,,,\n",
        "{}",
        through[0]
    );

    // Errors keep their exit codes and say what the server said.
    let bad = strata(&db, &["sql", "-e", "SELECT * FROM nosuch"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("42P01"), "{}", stderr(&bad));
    let out_of_range = strata(&db, &["sql", "-e", "SELECT CAST(9000000000 AS INT)"]);
    assert_eq!(
        out_of_range.status.code(),
        Some(3),
        "{}",
        stderr(&out_of_range)
    );

    // A session reading statements (and backslash commands) from stdin goes
    // through too; a failed statement sets its exit code.
    let session = |input: &str| strata_with_stdin(&db, &["sql", "--format", "csv"], input);
    let piped = session("SELECT k, name FROM t\n  ORDER BY k;\n\\d t\n");
    assert!(piped.status.success(), "{}", stderr(&piped));
    let said = stdout(&piped);
    assert!(said.starts_with("k,name\n1,one\n2,\n"), "{said}");
    assert!(
        said.contains("k INT NOT NULL"),
        "\\d t through the server: {said}"
    );
    let failed = session("SELECT 1;\nSELECT * FROM nosuch;\nSELECT 2;\n");
    assert_eq!(failed.status.code(), Some(2), "{}", stderr(&failed));
    assert_eq!(stdout(&failed), "Int64(1)\n1\nInt64(2)\n2\n");
    assert!(stderr(&failed).contains("42P01"), "{}", stderr(&failed));
    let piped_d = piped;

    // The second opinion: the same query once the server is gone, run here.
    server.kill().unwrap();
    server.wait().unwrap();
    let local_d = ok(&db, &["sql", "-e", "DESCRIBE t"]);
    assert!(!local_d.is_empty());
    let local_piped = session("SELECT k, name FROM t\n  ORDER BY k;\n\\d t\n");
    assert_eq!(
        stdout(&local_piped),
        stdout(&piped_d),
        "a piped session: local and through the server differ"
    );
    for (format, remote) in ["csv", "json", "table"].iter().zip(&through) {
        let local = strata(&db, &["sql", "--format", format, "-e", query]);
        assert!(local.status.success(), "{}", stderr(&local));
        assert_eq!(
            &stdout(&local),
            remote,
            "{format}: local and through the server differ"
        );
    }
}

#[test]
fn sigterm_stops_the_server_cleanly_and_the_database_opens_here_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&db, &["create"]);
    for signal in ["TERM", "INT"] {
        let mut server = serve(&db);
        ok(
            &db,
            &["sql", "-e", &format!("CREATE TABLE t_{signal} (k INT)")],
        );
        let killed = Command::new("kill")
            .args([&format!("-{signal}"), &server.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = server.wait().unwrap();
        assert!(status.success(), "SIG{signal}: {status}");
        assert!(!db.join("SERVER").exists(), "SIG{signal}: SERVER is left");
        // The database is this process's again, with what went through.
        let tables = ok(
            &db,
            &[
                "sql",
                "--format",
                "csv",
                "-e",
                "SELECT count(*) AS n FROM pg_tables",
            ],
        );
        let want = if signal == "TERM" { "n\n1\n" } else { "n\n2\n" };
        assert_eq!(tables, want, "after SIG{signal}");
    }
}

#[test]
fn info_and_check_go_through_the_server_and_answer_as_a_local_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&db, &["create"]);
    let mut server = serve(&db);
    ok(
        &db,
        &[
            "sql",
            "-e",
            "CREATE TABLE t (k INT NOT NULL, v VARCHAR(8)); \
             INSERT INTO t SELECT v, 'x' || CAST(v AS VARCHAR) FROM generate_series(1, 500) AS g(v); \
             CREATE INDEX t_k ON t (k); CREATE TABLE u (a BIGINT)",
        ],
    );
    let info = ok(&db, &["info"]);
    assert!(info.contains("table t: 500 rows"), "{info}");
    assert!(info.contains("index t_k on (k)"), "{info}");
    assert!(info.contains("table u: 0 rows"), "{info}");
    let one = ok(&db, &["info", "t", "--json"]);
    let parsed: serde_json::Value = serde_json::from_str(&one).unwrap();
    assert_eq!(parsed.as_array().map(Vec::len), Some(1), "{one}");
    assert_eq!(parsed[0]["rows"], 500, "{one}");
    let check = ok(&db, &["check"]);
    assert!(
        check.contains("ok: table t: ") && check.contains("t_k (500 entries)"),
        "{check}"
    );
    assert!(check.contains("check passed: 2 table(s)"), "{check}");
    // An unknown table: the local run's exit code, the server's SQLSTATE.
    let bad = strata(&db, &["info", "nosuch"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("SQLSTATE 42P01, through strata serve at 127.0.0.1:"),
        "{}",
        stderr(&bad)
    );

    // The second opinion: the same commands once the server is gone.
    server.kill().unwrap();
    server.wait().unwrap();
    assert_eq!(
        ok(&db, &["info"]),
        info,
        "info: local and through the server differ"
    );
    assert_eq!(ok(&db, &["info", "t", "--json"]), one);
    assert_eq!(ok(&db, &["check"]), check);
    let local_bad = strata(&db, &["info", "nosuch"]);
    assert_eq!(local_bad.status.code(), bad.status.code());
}
