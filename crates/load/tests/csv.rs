//! CSV import: typed values, header mapping, located errors, max_errors and
//! atomicity.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Recorder, db, rows};
use strata_load::{CsvOptions, LoadError, RowPosition, load_csv};
use strata_storage::StorageError;
use strata_storage::db::{IndexSpec, NoProgress};
use strata_storage::row::{Schema, Value, days_from_civil};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn opts(schema: &str) -> CsvOptions {
    CsvOptions {
        schema: Some(Schema::parse(schema).unwrap()),
        ..Default::default()
    }
}

const SCHEMA: &str =
    "id INT, name VARCHAR(20) NULL, price DECIMAL(12,2), d DATE, ok BOOL, x DOUBLE NULL";

#[test]
fn loads_typed_rows_and_reads_them_back() {
    let (dir, db) = db();
    let f = write(
        dir.path(),
        "good.csv",
        b"id,name,price,d,ok,x\n1,apple,1.50,2020-01-31,true,0.5\n2,,-3,1999-12-31,f,\n3,\"multi\nline\",12.345,2000-02-29,1,-1e3\n",
    );
    let mut o = opts(SCHEMA);
    o.target.indexes = vec![IndexSpec::new("t_price", &["price"])];
    let p = Recorder::default();
    let r = load_csv(&db, "t", &f, &o, &p).unwrap();
    assert!(r.created);
    assert_eq!(r.rows_loaded, 3);
    assert!(r.skipped.is_empty());
    assert_eq!(r.bytes, std::fs::metadata(&f).unwrap().len());
    assert_eq!(r.summary.rows_total, 3);
    assert_eq!(r.summary.indexes_built, 1);
    assert_eq!(
        rows(&db, "t"),
        vec![
            vec![
                Value::Int32(1),
                Value::Str("apple".into()),
                Value::Decimal(150),
                Value::Date(days_from_civil(2020, 1, 31)),
                Value::Bool(true),
                Value::Float64(0.5)
            ],
            vec![
                Value::Int32(2),
                Value::Null,
                Value::Decimal(-300),
                Value::Date(days_from_civil(1999, 12, 31)),
                Value::Bool(false),
                Value::Null
            ],
            vec![
                Value::Int32(3),
                Value::Str("multi\nline".into()),
                Value::Decimal(1235),
                Value::Date(days_from_civil(2000, 2, 29)),
                Value::Bool(true),
                Value::Float64(-1000.0)
            ],
        ]
    );
    assert_eq!(
        db.table("t").unwrap().index("t_price").unwrap().btree.len(),
        3
    );
    // Progress: the whole file, in bytes.
    let size = r.bytes;
    assert_eq!(
        p.phase(&format!("load {}", f.display())),
        Some((size, size))
    );
}

#[test]
fn maps_header_names_to_an_existing_table() {
    let (dir, db) = db();
    let f1 = write(dir.path(), "a.csv", b"1|x|2.00\n2|y|3.00\n");
    let o = CsvOptions {
        header: false,
        delimiter: b'|',
        ..opts("a INT, b CHAR(3), c DECIMAL(5,2)")
    };
    load_csv(&db, "t", &f1, &o, &NoProgress).unwrap();

    // Columns in another order, names in another case; no schema needed now.
    let f2 = write(dir.path(), "b.csv", b"C,a,B\n9.5,3,zz\n");
    let r = load_csv(&db, "t", &f2, &CsvOptions::default(), &NoProgress).unwrap();
    assert!(!r.created);
    assert_eq!(r.summary.rows_total, 3);
    assert_eq!(
        rows(&db, "t")[2],
        vec![
            Value::Int32(3),
            Value::Str("zz".into()),
            Value::Decimal(950)
        ]
    );

    let f3 = write(dir.path(), "c.csv", b"a,b,c,d,e\n1,x,1,2,3\n");
    let e = load_csv(&db, "t", &f3, &CsvOptions::default(), &NoProgress)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "{}:1: header names unknown columns 'd', 'e' (table 't' has a, b, c)",
            f3.display()
        )
    );
    let f4 = write(dir.path(), "d.csv", b"a,c\n1,1\n");
    let e = load_csv(&db, "t", &f4, &CsvOptions::default(), &NoProgress)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "{}:1: header lacks column 'b' of table 't' (every column must be present)",
            f4.display()
        )
    );
    // Without a header, positions: the field count must match.
    let f5 = write(dir.path(), "e.csv", b"1,x\n");
    let o = CsvOptions {
        header: false,
        ..Default::default()
    };
    let e = load_csv(&db, "t", &f5, &o, &NoProgress).unwrap_err();
    assert_eq!(
        e.row_error().unwrap().to_string(),
        format!("{}:1: expected 3 fields, found 2", f5.display())
    );
    // A schema that differs from the existing table's is refused.
    let e = load_csv(&db, "t", &f2, &opts("a INT, b CHAR(3), c INT"), &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(e.contains("already exists") && e.contains("differ"), "{e}");
    assert_eq!(db.table("t").unwrap().rows(), 3);
}

#[test]
fn a_new_table_needs_a_schema() {
    let (dir, db) = db();
    let f = write(dir.path(), "a.csv", b"x,y\n1,2\n");
    let e = load_csv(&db, "t", &f, &CsvOptions::default(), &NoProgress).unwrap_err();
    assert!(matches!(e, LoadError::Mismatch(_)));
    let e = e.to_string();
    assert!(
        e.contains("table 't' does not exist") && e.contains("schema") && e.contains("(x, y)"),
        "{e}"
    );
    assert!(db.table_names().is_empty());
}

/// Loads `body` (after a header and a two-line first record) into a new table
/// and returns the located row error, checking that the table was not created.
fn bad_row(schema: &str, header: &str, body: &[u8]) -> (String, String) {
    let (dir, db) = db();
    let mut bytes = format!("{header}\n").into_bytes();
    bytes.extend_from_slice(body);
    let f = write(dir.path(), "bad.csv", &bytes);
    let e = load_csv(&db, "t", &f, &opts(schema), &NoProgress).unwrap_err();
    let full = e.to_string();
    assert!(
        full.ends_with("; load rolled back, table 't' was not created"),
        "{full}"
    );
    assert!(matches!(db.table("t"), Err(StorageError::UnknownTable(_))));
    assert!(db.table_names().is_empty());
    let located = e.row_error().expect("a row error").to_string();
    let prefix = format!("{}:", f.display());
    (
        located
            .strip_prefix(&prefix)
            .expect("starts with the file")
            .to_string(),
        full,
    )
}

#[test]
fn bad_values_are_located_exactly() {
    let s = "a INT, b DATE, c DECIMAL(5,2), s VARCHAR(10) NULL";
    let h = "a,b,c,s";
    // The first record spans lines 2-3, so the bad one starts on line 4.
    let first = "1,2020-01-01,1.00,\"two\nlines\"\n";
    let case = |bad: &[u8]| {
        let mut body = first.as_bytes().to_vec();
        body.extend_from_slice(bad);
        body.extend_from_slice(b"\n5,2020-01-01,1.00,ok\n");
        bad_row(s, h, &body).0
    };
    assert_eq!(
        case(b"abc,2020-01-01,1,x"),
        "4: column 1 (a): 'abc' is not a 32-bit integer"
    );
    assert_eq!(case(b"1,2020-01-01"), "4: expected 4 fields, found 2");
    assert_eq!(case(b"1,2020-01-01,1,x,9"), "4: expected 4 fields, found 5");
    assert_eq!(
        case(b",2020-01-01,1,x"),
        "4: column 1 (a): empty field in a NOT NULL column"
    );
    assert_eq!(
        case(b"1,2021-02-29,1,x"),
        "4: column 2 (b): '2021-02-29' is not a valid date"
    );
    assert_eq!(
        case(b"1,yesterday,1,x"),
        "4: column 2 (b): 'yesterday' is not a date (expected YYYY-MM-DD)"
    );
    assert_eq!(
        case(b"1,2020-01-01,1234.5,x"),
        "4: column 3 (c): '1234.5' is out of range for DECIMAL(5,2)"
    );
    assert_eq!(
        case(b"1,2020-01-01,1,a\xffb"),
        "4: column 4 (s): not valid UTF-8 (at byte 2 of the field)"
    );
    assert_eq!(
        case(b"1,2020-01-01,1,abcdefghijk"),
        "4: column 4 (s): value of 11 bytes is too long for VARCHAR(10) (at most 10)"
    );
    // With a header, the column number is the field's position in the file.
    let (e, _) = bad_row(s, "s,c,b,a", b"x,1,2020-01-01,1\nx,1,2020-01-01,z\n");
    assert_eq!(e, "3: column 4 (a): 'z' is not a 32-bit integer");
}

#[test]
fn custom_null_string() {
    let (dir, db) = db();
    let f = write(dir.path(), "n.csv", b"a,b\n1,\\N\n2,\n");
    let o = CsvOptions {
        null_string: "\\N".into(),
        ..opts("a INT, b VARCHAR(5) NULL")
    };
    load_csv(&db, "t", &f, &o, &NoProgress).unwrap();
    assert_eq!(
        rows(&db, "t"),
        vec![
            vec![Value::Int32(1), Value::Null],
            vec![Value::Int32(2), Value::Str("".into())]
        ]
    );
    let f = write(dir.path(), "m.csv", b"a,b\n\\N,x\n");
    let e = load_csv(&db, "t", &f, &o, &NoProgress).unwrap_err();
    assert_eq!(
        e.row_error().unwrap().to_string(),
        format!(
            "{}:2: column 1 (a): '\\N' (the NULL string) in a NOT NULL column",
            f.display()
        )
    );
}

#[test]
fn max_errors_skips_and_reports_bad_rows() {
    let (dir, db) = db();
    let f = write(dir.path(), "s.csv", b"a,b\n1,x\n2\nq,y\n4,z\n");
    let mut o = opts("a INT, b CHAR(1)");
    o.target.max_errors = 2;
    let r = load_csv(&db, "t", &f, &o, &NoProgress).unwrap();
    assert_eq!(r.rows_loaded, 2);
    assert_eq!(r.rows_skipped(), 2);
    let msgs: Vec<String> = r.skipped.iter().map(|e| e.to_string()).collect();
    let name = f.display();
    assert_eq!(
        msgs,
        vec![
            format!("{name}:3: expected 2 fields, found 1"),
            format!("{name}:4: column 1 (a): 'q' is not a 32-bit integer")
        ]
    );
    assert_eq!(r.skipped[1].position, RowPosition::Line(4));
    assert_eq!(r.skipped[1].column, Some((1, "a".to_string())));
    assert_eq!(
        rows(&db, "t")
            .iter()
            .map(|r| r[0].clone())
            .collect::<Vec<_>>(),
        vec![Value::Int32(1), Value::Int32(4)]
    );
}

#[test]
fn exceeding_max_errors_leaves_the_table_unchanged() {
    let (dir, db) = db();
    let good = write(dir.path(), "g.csv", b"a\n1\n2\n3\n");
    let mut o = opts("a INT");
    o.target.indexes = vec![IndexSpec::new("t_a", &["a"])];
    load_csv(&db, "t", &good, &o, &NoProgress).unwrap();
    let before = rows(&db, "t");

    // Many good rows (several heap pages) with three bad ones among them.
    let mut body = String::from("a\n");
    for i in 0..50_000 {
        body.push_str(&match i {
            100 | 20_000 | 40_000 => "x\n".to_string(),
            _ => format!("{i}\n"),
        });
    }
    let bad = write(dir.path(), "b.csv", body.as_bytes());
    let mut o = CsvOptions::default();
    o.target.max_errors = 2;
    let e = load_csv(&db, "t", &bad, &o, &NoProgress).unwrap_err();
    match &e {
        LoadError::Rejected {
            error,
            skipped,
            max_errors,
            new_table,
            ..
        } => {
            assert_eq!(error.position, RowPosition::Line(40_002));
            assert_eq!(skipped.len(), 2);
            assert_eq!(*max_errors, 2);
            assert!(!new_table);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        e.to_string(),
        format!(
            "{}:40002: column 1 (a): 'x' is not a 32-bit integer; more than 2 bad rows, load rolled back, table 't' is unchanged",
            bad.display()
        )
    );
    let t = db.table("t").unwrap();
    assert_eq!(t.rows(), 3);
    assert_eq!(rows(&db, "t"), before);
    assert_eq!(t.index("t_a").unwrap().btree.len(), 3);

    // The table still takes a later good load.
    let r = load_csv(&db, "t", &good, &CsvOptions::default(), &NoProgress).unwrap();
    assert_eq!(r.summary.rows_total, 6);
    assert_eq!(rows(&db, "t").len(), 6);
}

#[test]
fn a_failed_load_of_a_new_table_creates_nothing() {
    let (dir, db) = db();
    let bad = write(dir.path(), "b.csv", b"a\n1\nx\n");
    let e = load_csv(&db, "t", &bad, &opts("a INT"), &NoProgress).unwrap_err();
    assert!(e.to_string().ends_with("table 't' was not created"), "{e}");
    assert!(db.table("t").is_err());
    // The name is free for the next attempt.
    let good = write(dir.path(), "g.csv", b"a\n1\n");
    load_csv(&db, "t", &good, &opts("a INT"), &NoProgress).unwrap();
    assert_eq!(rows(&db, "t"), vec![vec![Value::Int32(1)]]);
}

#[test]
fn missing_file_is_named() {
    let (dir, db) = db();
    let p = dir.path().join("nope.csv");
    let e = load_csv(&db, "t", &p, &opts("a INT"), &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with(&format!("{}: ", p.display())), "{e}");
}

/// TIMESTAMP columns: `YYYY-MM-DD HH:MM:SS[.ffffff]`, with a space or `T`,
/// or a date alone (midnight), as microseconds; a bad value is located by
/// file, line and column.
#[test]
fn timestamps_load_as_microseconds_and_bad_ones_are_located() {
    let (dir, db) = db();
    let f = write(
        dir.path(),
        "ts.csv",
        b"id,at\n1,2024-01-03 10:00:00\n2,2024-01-03T10:00:00.25\n3,1969-12-31 23:59:59.999999\n4,2024-02-29\n",
    );
    load_csv(&db, "t", &f, &opts("id INT, at TIMESTAMP"), &NoProgress).unwrap();
    let day = days_from_civil(2024, 1, 3) as i64 * 86_400_000_000;
    let at = |r: &Vec<Value>| r[1].clone();
    let got: Vec<Value> = rows(&db, "t").iter().map(at).collect();
    assert_eq!(
        got,
        vec![
            Value::Timestamp(day + 10 * 3_600_000_000),
            Value::Timestamp(day + 10 * 3_600_000_000 + 250_000),
            Value::Timestamp(-1),
            Value::Timestamp(days_from_civil(2024, 2, 29) as i64 * 86_400_000_000),
        ]
    );
    let s = "a INT, t TIMESTAMP";
    let (e, _) = bad_row(s, "a,t", b"1,2024-01-03 10:00:00\n2,2024-01-03 25:00:00\n");
    assert_eq!(
        e,
        "3: column 2 (t): '2024-01-03 25:00:00' is not a valid timestamp (25 is out of range)"
    );
    let (e, _) = bad_row(s, "a,t", b"1,2023-02-29 10:00:00\n");
    assert_eq!(
        e,
        "2: column 2 (t): '2023-02-29 10:00:00' is not a valid timestamp (no date 2023-02-29)"
    );
    let (e, _) = bad_row(s, "a,t", b"1,10:00 2024-01-03\n");
    assert_eq!(
        e,
        "2: column 2 (t): '10:00 2024-01-03' is not a timestamp (expected YYYY-MM-DD HH:MM:SS[.ffffff])"
    );
    let (e, _) = bad_row(s, "a,t", b"1,2024-01-03 10:00:00.1234567\n");
    assert!(e.contains("is not a timestamp"), "{e}");
}
