//! Files written by `COPY … TO` and read by `read_csv`/`read_parquet`,
//! checked by a second implementation: DuckDB (for Python, installed by
//! `.ci/run`) reads the Parquet and CSV files strata wrote and must find
//! the same rows, and strata reads the files DuckDB wrote and must find
//! DuckDB's answers.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use strata_sql::SqlSession;

/// Runs a DuckDB statement (Python's `duckdb.sql(sql)`), each row it answers
/// printed as its values joined by `|`.
fn duckdb(sql: &str) -> Vec<String> {
    let script = r#"
import duckdb, sys
r = duckdb.sql(sys.argv[1])  # None for a statement without rows (COPY)
for row in (r.fetchall() if r is not None else []):
    print("|".join("NULL" if v is None else str(v) for v in row))
"#;
    let out = Command::new("python3")
        .args(["-c", script, sql])
        .output()
        .expect("run python3 (DuckDB for Python is installed by .ci/run)");
    assert!(
        out.status.success(),
        "DuckDB failed on {sql} (install it with python3 -m pip install duckdb==1.4.4): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn strata(s: &SqlSession, sql: &str) -> Vec<String> {
    let r = s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    common::text(&r)
        .into_iter()
        .map(|row| row.join("|"))
        .collect()
}

fn quoted(p: &Path) -> String {
    p.display().to_string().replace('\'', "''")
}

/// 5,000 rows of the types strata stores, NULLs in every nullable column.
fn session() -> (tempfile::TempDir, SqlSession) {
    let (dir, db) = common::empty_db();
    let s = SqlSession::new(Arc::new(db)).unwrap();
    s.execute(
        "CREATE TABLE items (id INT NOT NULL, qty BIGINT, price DECIMAL(12,2), weight DOUBLE, \
         day DATE, flag BOOLEAN, code CHAR(3), note VARCHAR(40))",
    )
    .unwrap();
    s.execute(
        "INSERT INTO items SELECT CAST(value AS INT), \
         CASE WHEN value % 11 = 0 THEN NULL ELSE value * 1000 END, \
         CASE WHEN value % 13 = 0 THEN NULL ELSE CAST(value % 997 AS DECIMAL(12,2)) / 4 END, \
         CASE WHEN value % 17 = 0 THEN NULL ELSE value / 8.0 END, \
         CASE WHEN value % 19 = 0 THEN NULL ELSE CAST(DATE '1995-01-01' + CAST(value % 700 AS INT) AS DATE) END, \
         CASE WHEN value % 23 = 0 THEN NULL ELSE value % 2 = 0 END, \
         concat('c', CAST(value % 7 AS VARCHAR)), \
         CASE WHEN value % 29 = 0 THEN NULL ELSE concat('note, \"', CAST(value AS VARCHAR), '\"') END \
         FROM generate_series(1, 5000) AS g(value)",
    )
    .unwrap();
    (dir, s)
}

/// What both engines compute over the rows, per column: counts of
/// non-NULL values, sums, extremes.
const SUMMARY: &str = "count(*), count(qty), sum(qty), count(price), sum(price), \
    count(weight), round(sum(weight), 3), min(day), max(day), count(flag), \
    sum(CASE WHEN flag THEN 1 ELSE 0 END), min(code), max(note), count(note)";

#[test]
fn files_strata_writes_read_the_same_in_duckdb() {
    let (dir, s) = session();
    let pq = dir.path().join("items.parquet");
    let csv = dir.path().join("items.csv");
    assert_eq!(
        strata(&s, &format!("COPY items TO '{}'", quoted(&pq))),
        ["5000"]
    );
    assert_eq!(
        strata(
            &s,
            &format!(
                "COPY (SELECT * FROM items ORDER BY id) TO '{}'",
                quoted(&csv)
            )
        ),
        ["5000"]
    );
    let ours = strata(&s, &format!("SELECT {SUMMARY} FROM items"));
    for file in [&pq, &csv] {
        let theirs = duckdb(&format!("SELECT {SUMMARY} FROM '{}'", quoted(file)));
        // DuckDB prints its own number formats: compare value by value as
        // numbers where both are numbers.
        assert_eq!(ours.len(), 1);
        assert_eq!(theirs.len(), 1, "{theirs:?}");
        let a: Vec<&str> = ours[0].split('|').collect();
        let b: Vec<&str> = theirs[0].split('|').collect();
        assert_eq!(a.len(), b.len(), "{ours:?} vs {theirs:?}");
        for (x, y) in a.iter().zip(&b) {
            match (x.parse::<f64>(), y.parse::<f64>()) {
                (Ok(x), Ok(y)) => assert!((x - y).abs() < 1e-6, "{file:?}: {ours:?} vs {theirs:?}"),
                _ => assert_eq!(x, y, "{file:?}: {ours:?} vs {theirs:?}"),
            }
        }
    }
    // Row by row: the CSV's first lines as DuckDB reads them.
    let theirs = duckdb(&format!(
        "SELECT id, qty, price, day, flag, code, note FROM read_csv('{}') WHERE id IN (11, 13, 29, 30) ORDER BY id",
        quoted(&csv)
    ));
    let ours = strata(
        &s,
        "SELECT id, qty, price, day, flag, code, note FROM items WHERE id IN (11, 13, 29, 30) ORDER BY id",
    );
    assert_eq!(ours.len(), theirs.len());
    assert_eq!(
        theirs[3], "30|30000|7.5|1995-01-31|True|c2|note, \"30\"",
        "DuckDB's reading of a row"
    );
    assert_eq!(ours[3], "30|30000|7.50|1995-01-31|true|c2|note, \"30\"");
}

#[test]
fn files_duckdb_writes_read_the_same_in_strata() {
    let (dir, s) = session();
    let pq = dir.path().join("duck.parquet");
    let csv = dir.path().join("duck.csv");
    let source = "SELECT i AS id, i * 3 AS qty, CAST(i AS DECIMAL(10,2)) / 8 AS price, \
        DATE '2000-01-01' + CAST(i % 400 AS INTEGER) AS day, i % 3 = 0 AS flag, \
        CASE WHEN i % 5 = 0 THEN NULL ELSE 'n' || CAST(i AS VARCHAR) END AS note \
        FROM range(1, 3001) t(i)";
    duckdb(&format!(
        "COPY ({source}) TO '{}' (FORMAT parquet)",
        quoted(&pq)
    ));
    duckdb(&format!(
        "COPY ({source}) TO '{}' (FORMAT csv, HEADER)",
        quoted(&csv)
    ));
    let summary = "count(*), sum(qty), sum(price), min(day), max(day), \
        sum(CASE WHEN flag THEN 1 ELSE 0 END), count(note), max(note)";
    let theirs = duckdb(&format!("SELECT {summary} FROM ({source})"));
    assert_eq!(theirs.len(), 1);
    for from in [
        format!("read_parquet('{}')", quoted(&pq)),
        format!("read_csv('{}')", quoted(&csv)),
    ] {
        let ours = strata(&s, &format!("SELECT {summary} FROM {from}"));
        let a: Vec<&str> = ours[0].split('|').collect();
        let b: Vec<&str> = theirs[0].split('|').collect();
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            match (x.parse::<f64>(), y.parse::<f64>()) {
                (Ok(x), Ok(y)) => assert!((x - y).abs() < 1e-6, "{from}: {ours:?} vs {theirs:?}"),
                _ => assert_eq!(x, y, "{from}: {ours:?} vs {theirs:?}"),
            }
        }
    }
}
