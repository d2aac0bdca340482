//! Deep SQL: a statement at the nesting limit plans and runs and gives the
//! right answer; one past it, or 5,000 levels deep, is refused with an error
//! naming the limit (exit code 2), in the library and through the binary,
//! where it used to overflow the stack and abort (exit 134).

use crate::common;

use std::sync::Arc;

use strata_sql::rules::depth::MAX_EXPR_DEPTH;
use strata_sql::{SqlError, SqlSession};
use strata_storage::Database;
use strata_storage::row::Value;

fn setup() -> (tempfile::TempDir, Arc<Database>) {
    let (dir, db) = common::empty_db();
    common::load(
        &db,
        "t",
        "a INT64",
        vec![],
        (1..=10).map(|a| vec![Value::Int64(a)]),
    );
    (dir, Arc::new(db))
}

/// `a+a+...+a`, `terms` of them: `terms` levels deep.
fn chain(terms: usize) -> String {
    vec!["a"; terms].join("+")
}

fn sums(s: &SqlSession, sql: &str) -> Vec<i64> {
    use datafusion::arrow::array::{Array, Int64Array};
    let r = s.execute(sql).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    for b in &r.batches {
        let c = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        out.extend((0..c.len()).map(|i| c.value(i)));
    }
    out.sort();
    out
}

#[test]
fn a_statement_at_the_limit_runs_and_one_past_it_is_refused() {
    let (_dir, db) = setup();
    let s = SqlSession::new(db).unwrap();
    let n = MAX_EXPR_DEPTH;
    let want: Vec<i64> = (1..=10).map(|a| a * n as i64).collect();
    assert_eq!(sums(&s, &format!("select {} from t", chain(n))), want);

    // A WHERE clause of ORs at the limit too: `a = 1 OR a = 2 OR ...`, each
    // comparison two levels under its OR.
    let ors: Vec<String> = (0..n - 2).map(|k| format!("a = {}", k % 5)).collect();
    let got = sums(&s, &format!("select a from t where {}", ors.join(" or ")));
    assert_eq!(got, vec![1, 2, 3, 4]);

    for terms in [n + 1, 5_000, 50_000] {
        match s.execute(&format!("select {} from t", chain(terms))) {
            Err(e @ SqlError::Query(_)) => {
                assert!(e.to_string().contains(&n.to_string()), "{e}");
                assert_eq!(e.exit_code(), 2);
            }
            Err(e) => panic!("{terms} terms: {e:?}"),
            Ok(r) => panic!("{terms} terms: accepted, {} rows", r.rows()),
        }
    }
    // The session keeps working.
    assert_eq!(sums(&s, "select a from t where a < 3"), vec![1, 2]);
}

#[test]
fn deep_parentheses_stop_at_the_parser_limit() {
    let (_dir, db) = setup();
    let s = SqlSession::new(db).unwrap();
    let deep = format!(
        "select {}a{} from t",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    let Err(e) = s.execute(&deep) else {
        panic!("10,000 parentheses were accepted")
    };
    assert!(matches!(e, SqlError::Query(_)), "{e:?}");
    assert!(e.to_string().to_lowercase().contains("recursion"), "{e}");
}

#[test]
fn the_binary_reports_a_deep_statement_and_exits_2() {
    let (dir, db) = setup();
    drop(db);
    let file = dir.path().join("deep.sql");
    std::fs::write(&file, format!("select {} from t;", chain(5_000))).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata-sql"))
        .arg("sql")
        .arg("--db")
        .arg(dir.path().join("db"))
        .arg("--device")
        .arg("buffered")
        .arg("-f")
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("levels deep"), "{err}");
}
