//! Columnar tables from the command line: `strata load --table-format
//! columns`, `strata compact --format columns|rows`, what `strata info` and
//! `EXPLAIN ANALYZE` say, the delta, UPDATE and DELETE of column rows, an
//! index over column rows, and what a columnar table refuses.

use crate::common::{ok, stderr, stdout, strata};

#[test]
fn a_table_goes_to_columns_and_back_with_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let csv = dir.path().join("t.csv");
    let mut text = String::from("id,grp,price,note\n");
    for i in 0..50_000 {
        text += &format!(
            "{i},{},{}.{:02},note {}\n",
            i % 7,
            i % 1000,
            i % 100,
            i % 300
        );
    }
    std::fs::write(&csv, text).unwrap();
    ok(
        &db,
        &[
            "load",
            "t",
            csv.to_str().unwrap(),
            "--table-format",
            "columns",
        ],
    );
    let q = "SELECT grp, count(*), sum(price), min(note) FROM t WHERE id >= 1000 GROUP BY grp ORDER BY grp";
    let sql = |sql: &str| ok(&db, &["sql", "--format", "csv", "-e", sql]);
    let columns = sql(q);
    let info: serde_json::Value =
        serde_json::from_str(&ok(&db, &["info", "t", "--json"])).expect("JSON");
    assert_eq!(info[0]["format"], "columns", "{info}");
    assert_eq!(info[0]["rows"], 50_000);
    assert_eq!(info[0]["column_files"][0]["rows"], 50_000);
    let check = ok(&db, &["check"]);
    assert!(
        check.contains(
            "ok: table t: column files: 50000 rows in 1 file(s) (0 deleted), every column decoded"
        ),
        "{check}"
    );
    // The scan reads the columns the query uses, and of the key range only
    // the pages that can hold it.
    let plan = sql("EXPLAIN ANALYZE SELECT sum(price) FROM t WHERE id < 100");
    assert!(
        plan.contains("StrataColumnScanExec: table=t, columns [id, price], row groups 1 of 1, rows 8192 of 50000"),
        "{plan}"
    );
    // Inserts go to the delta; the answer has them.
    sql("INSERT INTO t VALUES (50000, 1, 5.00, 'new')");
    assert!(sql("SELECT count(*) FROM t").contains("50001"));
    // UPDATE and DELETE reach the column rows: a deleted row's position goes
    // into the delete set, an updated row's new version into the delta.
    assert!(sql("DELETE FROM t WHERE id = 3").ends_with("\n1\n"));
    assert!(sql("UPDATE t SET price = price + 1 WHERE id = 4").ends_with("\n1\n"));
    assert!(sql("SELECT count(*) FROM t").ends_with("\n50000\n"));
    assert!(sql("SELECT count(*) FROM t WHERE id = 3").ends_with("\n0\n"));
    assert!(sql("SELECT price FROM t WHERE id = 4").ends_with("\n5.04\n"));
    let info: serde_json::Value =
        serde_json::from_str(&ok(&db, &["info", "t", "--json"])).expect("JSON");
    assert_eq!(info[0]["rows"], 50_000);
    assert_eq!(info[0]["deleted_column_rows"], 2);
    assert_eq!(info[0]["delta_rows"], 2);
    let check = ok(&db, &["check"]);
    assert!(
        check.contains(
            "ok: table t: column files: 50000 rows in 1 file(s) (2 deleted), every column decoded"
        ),
        "{check}"
    );
    // The merge of the delta writes the live rows; then a delete of a merged
    // row, and back to rows: the same answers.
    let merged = ok(&db, &["compact", "--format", "columns", "t"]);
    assert!(merged.contains("50000 rows now in columns"), "{merged}");
    assert!(sql("DELETE FROM t WHERE id = 50000").ends_with("\n1\n"));
    ok(&db, &["compact", "--format", "rows", "t"]);
    assert_eq!(sql(q), columns);
    let info: serde_json::Value =
        serde_json::from_str(&ok(&db, &["info", "t", "--json"])).expect("JSON");
    assert_eq!(info[0]["format"], "rows");
    assert_eq!(info[0]["rows"], 49_999);
    ok(&db, &["check"]);
    // An unknown format is a usage error naming the choices.
    let o = strata(&db, &["compact", "--format", "parquet", "t"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("expected 'rows' or 'columns'"),
        "{}",
        stderr(&o)
    );
    let _ = stdout(&o);
}

/// `strata load --table-format columns --index`: the index gets a tree over
/// the column rows, which a point query and a point DELETE look up, and
/// `strata check` compares with the column files.
#[test]
fn an_index_of_a_columnar_table_finds_column_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let csv = dir.path().join("u.csv");
    // id: a permutation of 0..65,536 in no order (xor-shifts and odd
    // multiplications are bijections of 16-bit values), so min/max prune
    // nothing and the column does not compress; note: text of every row,
    // so a scan of the table reads megabytes where a lookup reads a page.
    let id = |i: u32| {
        let mut x = i & 0xffff;
        x ^= x >> 7;
        x = x.wrapping_mul(0x2f6b) & 0xffff;
        x ^= x >> 9;
        x = x.wrapping_mul(0x5c3d) & 0xffff;
        x ^= x >> 8;
        x
    };
    let mut text = String::from("id,val,note\n");
    for i in 0..65_536u32 {
        text += &format!(
            "{},{i},row {i} of the table with a note of some length\n",
            id(i)
        );
    }
    std::fs::write(&csv, text).unwrap();
    ok(
        &db,
        &[
            "load",
            "u",
            csv.to_str().unwrap(),
            "--table-format",
            "columns",
            "--index",
            "u_id:id",
        ],
    );
    let sql = |sql: &str| ok(&db, &["sql", "--format", "csv", "-e", sql]);
    let want = (0..65_536u32).find(|&i| id(i) == 123).unwrap();
    assert!(sql("SELECT val FROM u WHERE id = 123").ends_with(&format!("\n{want}\n")));
    // The index's range is the whole WHERE: the key column is not read.
    let plan = sql("EXPLAIN ANALYZE SELECT val, note FROM u WHERE id = 123");
    assert!(
        plan.contains(
            "StrataColumnScanExec: table=u, columns [val, note], row groups 1 of 1, rows 1 of 65536"
        ) && plan.contains("index u_id: 1 row(s) from 1 entry"),
        "{plan}"
    );
    let check = ok(&db, &["check"]);
    assert!(
        check.contains(
            "ok: table u: index u_id: 65536 entries of live column rows match the column files"
        ),
        "{check}"
    );
    assert!(sql("DELETE FROM u WHERE id = 123").ends_with("\n1\n"));
    assert!(sql("SELECT count(*) FROM u WHERE id = 123").ends_with("\n0\n"));
    assert!(sql("SELECT count(*) FROM u").ends_with("\n65535\n"));
    let check = ok(&db, &["check"]);
    assert!(check.contains("index u_id: 65535 entries"), "{check}");
}
