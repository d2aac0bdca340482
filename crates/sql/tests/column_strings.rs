//! A columnar table's strings are views inside a query (`Utf8View`) and
//! `Utf8` in every result. Second opinion: the same rows in a row table,
//! whose strings were never views. Short strings (held in the view), long
//! ones (pointing into the page), NULLs, CHAR's padding, non-ASCII, rows in
//! the column part and in the delta; filters, grouping, joins with the row
//! table, set operations, writes that read the strings back (INSERT …
//! SELECT, UPDATE, CTAS), prepared statements' result types and COPY.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_sql::SqlSession;
use strata_storage::db::NoProgress;
use strata_storage::row::Value;

use crate::common;

const ROWS: i64 = 30_000;

/// Row `n`: a key, a CHAR(4) flag (padded when stored), a short name, a
/// comment longer than a view holds, sometimes NULL, sometimes not ASCII.
fn row(n: i64, rng: &mut SmallRng) -> Vec<Value> {
    let flag = ["A", "NO", "R ", "ZZZZ"][rng.random_range(0..4)];
    let name = format!("n{}", rng.random_range(0..500));
    let comment = match rng.random_range(0..10) {
        0 => Value::Null,
        1 => Value::Str(format!("déjà vu, ünïcode number {n} in a long comment")),
        _ => Value::Str(format!(
            "a comment longer than twelve bytes {}",
            rng.random_range(0..2000)
        )),
    };
    vec![
        Value::Int64(n),
        Value::Str(flag.into()),
        Value::Str(name),
        comment,
    ]
}

/// The same rows as a compacted columnar table `c` (with rows in its
/// delta too) and a row table `r`.
fn twins() -> (tempfile::TempDir, SqlSession) {
    let mut rng = SmallRng::seed_from_u64(83);
    let (dir, db) = common::empty_db();
    let schema = "k BIGINT, f CHAR(4) NULL, name VARCHAR(8), note TEXT NULL";
    let data: Vec<Vec<Value>> = (0..ROWS).map(|n| row(n, &mut rng)).collect();
    common::load(&db, "c", schema, vec![], data.iter().cloned());
    common::load(&db, "r", schema, vec![], data.iter().cloned());
    strata_columns::rewrite(&db, "c", strata_columns::Format::Columns, &NoProgress).unwrap();
    let s = SqlSession::new(Arc::new(db)).unwrap();
    // Rows in the delta of `c`, as in `r`.
    for t in ["c", "r"] {
        common::run(
            &s,
            &format!(
                "INSERT INTO {t} VALUES (-1, 'A', 'delta', 'a delta row longer than twelve'), \
                 (-2, NULL, 'δ', NULL), (-3, 'R', '', 'short')"
            ),
        );
    }
    (dir, s)
}

/// `q` over `c` and over `r` (`{t}`, `{u}` the other table) answer alike;
/// the answer.
fn same(s: &SqlSession, q: &str) -> Vec<Vec<String>> {
    let a = common::query(s, &q.replace("{t}", "c").replace("{u}", "r"));
    let b = common::query(s, &q.replace("{t}", "r").replace("{u}", "c"));
    assert_eq!(a, b, "{q}");
    a
}

#[test]
fn a_columnar_tables_strings_are_views_inside_and_utf8_outside() {
    let (_dir, s) = twins();
    // Inside the query, views (the column part's and the delta's alike).
    let inside = common::query(
        &s,
        "SELECT DISTINCT arrow_typeof(note), arrow_typeof(f) FROM c WHERE k IN (-1, 5)",
    );
    assert_eq!(
        inside,
        vec![vec!["Utf8View".to_string(), "Utf8View".into()]]
    );
    let row_inside = common::query(&s, "SELECT DISTINCT arrow_typeof(note) FROM r");
    assert_eq!(row_inside, vec![vec!["Utf8".to_string()]]);
    // Outside, Utf8: the result's schema and every batch.
    let r = s
        .execute("SELECT k, f, name, note FROM c ORDER BY k")
        .unwrap();
    for f in &r.schema.fields()[1..] {
        assert_eq!(f.data_type(), &DataType::Utf8, "{f}");
    }
    assert!(!r.batches.is_empty());
    for b in &r.batches {
        for c in &b.columns()[1..] {
            assert_eq!(c.data_type(), &DataType::Utf8);
        }
    }
    assert_eq!(common::text(&r).len(), ROWS as usize + 3);
    // A prepared statement describes its result as Utf8 too.
    let d = s
        .describe_statement("SELECT name, note FROM c WHERE k = $1")
        .unwrap();
    let cols = d.columns.expect("a query returns rows");
    assert!(
        cols.fields()
            .iter()
            .all(|f| f.data_type() == &DataType::Utf8)
    );
}

#[test]
fn queries_over_columnar_strings_answer_as_over_row_strings() {
    let (_dir, s) = twins();
    let all = same(&s, "SELECT k, f, name, note FROM {t} ORDER BY k");
    assert_eq!(all.len(), ROWS as usize + 3);
    // CHAR's padding is not data, in either format.
    assert!(all.iter().any(|r| r[1] == "R"));
    assert!(all.iter().all(|r| !r[1].ends_with(' ')));
    for q in [
        "SELECT k FROM {t} WHERE f = 'NO' ORDER BY k",
        "SELECT k FROM {t} WHERE f = 'R' ORDER BY k",
        "SELECT k, note FROM {t} WHERE note LIKE '%ünïcode number 1_ %' ORDER BY k",
        "SELECT k FROM {t} WHERE name IN ('n1', 'n499', 'δ', '') ORDER BY k",
        "SELECT k FROM {t} WHERE name > 'n45' AND name < 'n47' ORDER BY k",
        "SELECT k FROM {t} WHERE note IS NULL ORDER BY k",
        "SELECT f, count(*), count(note), min(note), max(name) FROM {t} GROUP BY f ORDER BY f",
        "SELECT name, count(*) FROM {t} GROUP BY name HAVING count(*) > 70 ORDER BY name",
        "SELECT upper(name) || '/' || f, length(note), substr(note, 3, 20) FROM {t} \
         WHERE k % 997 = 0 ORDER BY k",
        "SELECT count(*) FROM {t} JOIN {u} ON {t}.note = {u}.note AND {t}.k = {u}.k",
        "SELECT {t}.k, {u}.k FROM {t} JOIN {u} ON {t}.name = {u}.name \
         WHERE {t}.k < 40 AND {u}.k < 40 ORDER BY 1, 2",
        "SELECT name FROM {t} WHERE k < 100 UNION SELECT name FROM {u} WHERE k > 29950 ORDER BY 1",
        "SELECT note FROM {t} WHERE k < 50 EXCEPT SELECT note FROM {u} WHERE k < 25 ORDER BY 1",
        "SELECT k, note FROM {t} ORDER BY note DESC NULLS LAST, k LIMIT 20",
        "SELECT CASE WHEN f = 'A' THEN name ELSE note END FROM {t} WHERE k % 1000 = 1 ORDER BY k",
    ] {
        let a = same(&s, q);
        assert!(!a.is_empty(), "{q} answered nothing");
    }
}

#[test]
fn writes_that_read_columnar_strings_store_them_as_row_strings() {
    let (_dir, s) = twins();
    for t in ["c", "r"] {
        common::run(
            &s,
            &format!("INSERT INTO {t} SELECT k + 100000, f, name, note FROM {t} WHERE k % 100 = 7"),
        );
        common::run(
            &s,
            &format!("UPDATE {t} SET note = note || '!', name = upper(name) WHERE k % 250 = 3"),
        );
        common::run(
            &s,
            &format!("CREATE TABLE {t}2 AS SELECT k, f, note FROM {t} WHERE k % 3 = 0"),
        );
    }
    same(&s, "SELECT k, f, name, note FROM {t} ORDER BY k");
    let a = common::query(&s, "SELECT k, f, note FROM c2 ORDER BY k");
    let b = common::query(&s, "SELECT k, f, note FROM r2 ORDER BY k");
    assert_eq!(a, b);
    // CTAS made VARCHAR columns of the views.
    let types = common::query(
        &s,
        "SELECT data_type FROM information_schema.columns WHERE table_name = 'c2' ORDER BY ordinal_position",
    );
    assert_eq!(
        types,
        common::query(
            &s,
            "SELECT data_type FROM information_schema.columns WHERE table_name = 'r2' ORDER BY ordinal_position",
        )
    );
    // The updated strings read back through the views.
    let bang = common::query(&s, "SELECT count(*) FROM c WHERE note LIKE '%!'");
    assert_ne!(bang, vec![vec!["0".to_string()]]);
}

#[test]
fn copy_of_columnar_strings_writes_the_row_tables_file() {
    let (dir, s) = twins();
    let out = |t: &str| dir.path().join(format!("{t}.csv"));
    for t in ["c", "r"] {
        common::run(
            &s,
            &format!(
                "COPY (SELECT k, f, name, note FROM {t} ORDER BY k) TO '{}'",
                out(t).display()
            ),
        );
    }
    let a = std::fs::read(out("c")).unwrap();
    let b = std::fs::read(out("r")).unwrap();
    assert!(a.len() > 1_000_000);
    assert!(a == b, "the two CSV files differ");
}
