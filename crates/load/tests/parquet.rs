//! Parquet import: type mapping, VARCHAR sizing, loading into existing tables,
//! and clear errors for what strata cannot store.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int32Array, Int64Array, ListArray, RecordBatch, StringArray, UInt64Array,
};
use arrow_schema::{DataType as Arrow, Field, Schema as ArrowSchema};
use common::{Recorder, db, rows};
use parquet::arrow::ArrowWriter;
use strata_load::{LoadError, ParquetOptions, RowPosition, load_parquet};
use strata_storage::db::NoProgress;
use strata_storage::row::{DataType, Schema, Value};

fn write(dir: &Path, name: &str, columns: Vec<(&str, ArrayRef, bool)>) -> PathBuf {
    let schema = Arc::new(ArrowSchema::new(
        columns
            .iter()
            .map(|(n, a, nullable)| Field::new(*n, a.data_type().clone(), *nullable))
            .collect::<Vec<_>>(),
    ));
    let batch =
        RecordBatch::try_new(schema.clone(), columns.into_iter().map(|c| c.1).collect()).unwrap();
    let path = dir.join(name);
    let mut w = ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, None).unwrap();
    // Two batches, so the loader crosses a batch boundary.
    w.write(&batch.slice(0, 2)).unwrap();
    w.write(&batch.slice(2, batch.num_rows() - 2)).unwrap();
    w.close().unwrap();
    path
}

fn sample(dir: &Path) -> PathBuf {
    write(
        dir,
        "s.parquet",
        vec![
            (
                "id",
                Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef,
                false,
            ),
            (
                "big",
                Arc::new(Int64Array::from(vec![Some(10), None, Some(-5_000_000_000)])),
                true,
            ),
            (
                "f",
                Arc::new(Float32Array::from(vec![0.5, 1.5, -2.0])),
                false,
            ),
            (
                "g",
                Arc::new(Float64Array::from(vec![1e300, 0.0, -0.25])),
                false,
            ),
            (
                "dec",
                Arc::new(
                    Decimal128Array::from(vec![12345, -1, 0])
                        .with_precision_and_scale(10, 2)
                        .unwrap(),
                ),
                false,
            ),
            (
                "d",
                Arc::new(Date32Array::from(vec![0, 19000, -365])),
                false,
            ),
            (
                "s",
                Arc::new(StringArray::from(vec![
                    Some("a"),
                    None,
                    Some("hello, world"),
                ])),
                true,
            ),
            (
                "b",
                Arc::new(BooleanArray::from(vec![true, false, true])),
                false,
            ),
        ],
    )
}

#[test]
fn creates_a_table_from_the_file_schema_and_loads_it() {
    let (dir, db) = db();
    let f = sample(dir.path());
    let p = Recorder::default();
    let r = load_parquet(&db, "p", &f, &ParquetOptions::default(), &p).unwrap();
    assert!(r.created);
    assert_eq!(r.rows_loaded, 3);
    let t = db.table("p").unwrap();
    assert_eq!(
        t.schema(),
        &Schema::parse(
            "id INT, big BIGINT NULL, f DOUBLE, g DOUBLE, dec DECIMAL(10,2), d DATE, s VARCHAR(12) NULL, b BOOLEAN"
        )
        .unwrap()
    );
    assert_eq!(
        rows(&db, "p"),
        vec![
            vec![
                Value::Int32(1),
                Value::Int64(10),
                Value::Float64(0.5),
                Value::Float64(1e300),
                Value::Decimal(12345),
                Value::Date(0),
                Value::Str("a".into()),
                Value::Bool(true)
            ],
            vec![
                Value::Int32(2),
                Value::Null,
                Value::Float64(1.5),
                Value::Float64(0.0),
                Value::Decimal(-1),
                Value::Date(19000),
                Value::Null,
                Value::Bool(false)
            ],
            vec![
                Value::Int32(3),
                Value::Int64(-5_000_000_000),
                Value::Float64(-2.0),
                Value::Float64(-0.25),
                Value::Decimal(0),
                Value::Date(-365),
                Value::Str("hello, world".into()),
                Value::Bool(true)
            ],
        ]
    );
    let name = f.display();
    assert_eq!(
        p.phase(&format!("scan {name} for string lengths")),
        Some((3, 3))
    );
    assert_eq!(p.phase(&format!("load {name}")), Some((3, 3)));
}

#[test]
fn varchar_len_option_skips_the_sizing_pass() {
    let (dir, db) = db();
    let f = sample(dir.path());
    let p = Recorder::default();
    let o = ParquetOptions {
        varchar_len: Some(40),
        ..Default::default()
    };
    load_parquet(&db, "p", &f, &o, &p).unwrap();
    assert_eq!(
        db.table("p").unwrap().schema().columns[6].ty,
        DataType::Varchar { len: 40 }
    );
    assert_eq!(
        p.phase(&format!("scan {} for string lengths", f.display())),
        None
    );
    // Too short a length: the long value is a located row error.
    let o = ParquetOptions {
        varchar_len: Some(5),
        ..Default::default()
    };
    let e = load_parquet(&db, "q", &f, &o, &NoProgress).unwrap_err();
    assert_eq!(
        e.row_error().unwrap().to_string(),
        format!(
            "{}: row 3: column 7 (s): value of 12 bytes is too long for VARCHAR(5) (at most 5)",
            f.display()
        )
    );
    assert!(db.table("q").is_err());
}

#[test]
fn loads_into_an_existing_table_by_name_with_conversions() {
    let (dir, db) = db();
    db.create_table(
        "t",
        Schema::parse("s CHAR(12) NULL, id BIGINT, dec DECIMAL(12,3), d DATE, big DECIMAL(18,0) NULL, b BOOL, f DOUBLE, g DOUBLE")
            .unwrap(),
        Default::default(),
    )
    .unwrap();
    let f = sample(dir.path());
    let r = load_parquet(&db, "t", &f, &ParquetOptions::default(), &NoProgress).unwrap();
    assert!(!r.created);
    let got = rows(&db, "t");
    assert_eq!(got[0][0], Value::Str("a".into()));
    assert_eq!(got[0][1], Value::Int64(1));
    assert_eq!(got[0][2], Value::Decimal(123450));
    assert_eq!(got[2][4], Value::Decimal(-5_000_000_000));
    assert_eq!(got[1][4], Value::Null);

    // Types that do not convert are named before anything is loaded.
    db.create_table("u", Schema::parse("id INT, big INT NULL, f DATE, g DOUBLE, dec DECIMAL(10,2), d DATE, s VARCHAR(20) NULL, b BOOL").unwrap(), Default::default()).unwrap();
    let e = load_parquet(&db, "u", &f, &ParquetOptions::default(), &NoProgress)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "{}: column 3 (f) has type Float32, which cannot be loaded into DATE column 'f' of table 'u'",
            f.display()
        )
    );
    // Values that do not fit their column are row errors.
    db.create_table("v", Schema::parse("id INT, big INT NULL, f DOUBLE, g DOUBLE, dec DECIMAL(10,2), d DATE, s VARCHAR(20) NULL, b BOOL").unwrap(), Default::default()).unwrap();
    let e = load_parquet(&db, "v", &f, &ParquetOptions::default(), &NoProgress).unwrap_err();
    assert_eq!(
        e.row_error().unwrap().to_string(),
        format!(
            "{}: row 3: column 2 (big): -5000000000 is out of range for INT",
            f.display()
        )
    );
    assert_eq!(db.table("v").unwrap().rows(), 0);
    // max_errors skips it.
    let mut o = ParquetOptions::default();
    o.target.max_errors = 1;
    let r = load_parquet(&db, "v", &f, &o, &NoProgress).unwrap();
    assert_eq!(
        (r.rows_loaded, r.skipped[0].position.clone()),
        (2, RowPosition::Row(3))
    );
    // Unknown columns are named.
    db.create_table("w", Schema::parse("id INT").unwrap(), Default::default())
        .unwrap();
    let e = load_parquet(&db, "w", &f, &ParquetOptions::default(), &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown columns 'big', 'f'") && e.contains("table 'w'"),
        "{e}"
    );
}

#[test]
fn nulls_in_not_null_columns_and_unsigned_overflow_are_row_errors() {
    let (dir, db) = db();
    let f = write(
        dir.path(),
        "u.parquet",
        vec![
            (
                "u",
                Arc::new(UInt64Array::from(vec![1, 2, u64::MAX])) as ArrayRef,
                false,
            ),
            (
                "n",
                Arc::new(Int32Array::from(vec![Some(1), Some(2), None])),
                true,
            ),
        ],
    );
    db.create_table(
        "t",
        Schema::parse("u BIGINT NULL, n INT").unwrap(),
        Default::default(),
    )
    .unwrap();
    let mut o = ParquetOptions::default();
    o.target.max_errors = 5;
    let r = load_parquet(&db, "t", &f, &o, &NoProgress).unwrap();
    let msgs: Vec<String> = r.skipped.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        msgs,
        vec![format!(
            "{}: row 3: column 1 (u): 18446744073709551615 is out of range for BIGINT",
            f.display()
        )]
    );
    let f = write(
        dir.path(),
        "n.parquet",
        vec![
            (
                "u",
                Arc::new(UInt64Array::from(vec![1, 2, 3])) as ArrayRef,
                false,
            ),
            (
                "n",
                Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])),
                true,
            ),
        ],
    );
    let e = load_parquet(&db, "t", &f, &ParquetOptions::default(), &NoProgress).unwrap_err();
    assert!(matches!(e, LoadError::Rejected { .. }));
    assert_eq!(
        e.to_string(),
        format!(
            "{}: row 2: column 2 (n): NULL in a NOT NULL column; load rolled back, table 't' is unchanged",
            f.display()
        )
    );
    assert_eq!(db.table("t").unwrap().rows(), 2);
}

#[test]
fn unsupported_types_are_named() {
    let (dir, db) = db();
    let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1)]),
        Some(vec![]),
        Some(vec![Some(2), None]),
    ]);
    let f = write(
        dir.path(),
        "l.parquet",
        vec![
            (
                "id",
                Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef,
                false,
            ),
            ("xs", Arc::new(list), true),
        ],
    );
    let e = load_parquet(&db, "l", &f, &ParquetOptions::default(), &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("{}: column 2 (xs) has type List(", f.display())),
        "{e}"
    );
    assert!(e.contains("which strata does not support"), "{e}");
    assert!(db.table("l").is_err());

    let wide = Decimal128Array::from(vec![1, 2, 3])
        .with_precision_and_scale(30, 2)
        .unwrap();
    assert_eq!(wide.data_type(), &Arrow::Decimal128(30, 2));
    let f = write(
        dir.path(),
        "w.parquet",
        vec![("w", Arc::new(wide) as ArrayRef, false)],
    );
    let e = load_parquet(&db, "w", &f, &ParquetOptions::default(), &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("column 1 (w) has type Decimal128(30, 2)") && e.contains("at most 18 digits"),
        "{e}"
    );
}

#[test]
fn a_given_schema_is_the_new_tables_schema_and_its_not_null_is_checked() {
    let (dir, db) = db();
    let f = write(
        dir.path(),
        "n.parquet",
        vec![
            (
                "a",
                Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])) as ArrayRef,
                true,
            ),
            (
                "b",
                Arc::new(StringArray::from(vec!["x", "y", "z"])) as ArrayRef,
                false,
            ),
        ],
    );
    // The file's `a` is nullable and holds a NULL: NOT NULL in the given
    // schema refuses that row, naming file, row and column, and creates nothing.
    let o = ParquetOptions {
        schema: Some(Schema::parse("a INT, b VARCHAR(4)").unwrap()),
        ..Default::default()
    };
    let e = load_parquet(&db, "t", &f, &o, &NoProgress).unwrap_err();
    assert_eq!(
        e.row_error().unwrap().to_string(),
        format!(
            "{}: row 2: column 1 (a): NULL in a NOT NULL column",
            f.display()
        )
    );
    assert!(db.table("t").is_err(), "a failed load creates no table");

    // With a nullable `a` the given types are the table's: INT, not the
    // file's BIGINT, and VARCHAR(4) without a sizing pass.
    let o = ParquetOptions {
        schema: Some(Schema::parse("a INT NULL, b VARCHAR(4)").unwrap()),
        ..Default::default()
    };
    load_parquet(&db, "t", &f, &o, &NoProgress).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(
        t.schema(),
        &Schema::parse("a INT NULL, b VARCHAR(4)").unwrap()
    );
    assert_eq!(rows(&db, "t").len(), 3);

    // Loading again with a different schema is refused; the table keeps its rows.
    let o = ParquetOptions {
        schema: Some(Schema::parse("a BIGINT NULL, b VARCHAR(4)").unwrap()),
        ..Default::default()
    };
    let e = load_parquet(&db, "t", &f, &o, &NoProgress).unwrap_err();
    assert!(
        e.to_string().contains("differ from the given schema"),
        "{e}"
    );
    assert_eq!(rows(&db, "t").len(), 3);
}

/// Timestamps without a time zone load as TIMESTAMP (microseconds, from any
/// unit); a nanosecond value that is not whole microseconds is refused, and
/// a timestamp with a time zone is not a strata type.
#[test]
fn timestamps_load_from_every_unit() {
    use arrow_array::{TimestampMillisecondArray, TimestampNanosecondArray};
    let (dir, db) = db();
    let ms: ArrayRef = Arc::new(TimestampMillisecondArray::from(vec![
        Some(1_000),
        None,
        Some(-1),
    ]));
    let ns: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![
        2_000_000_000i64,
        3_000,
        -1_000,
    ]));
    let f = write(
        dir.path(),
        "ts.parquet",
        vec![("ms", ms, true), ("ns", ns, false)],
    );
    load_parquet(&db, "t", &f, &ParquetOptions::default(), &NoProgress).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(
        t.schema().types(),
        vec![DataType::Timestamp, DataType::Timestamp]
    );
    assert_eq!(
        rows(&db, "t"),
        vec![
            vec![Value::Timestamp(1_000_000), Value::Timestamp(2_000_000)],
            vec![Value::Null, Value::Timestamp(3)],
            vec![Value::Timestamp(-1_000), Value::Timestamp(-1)],
        ]
    );
    let bad: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![1i64, 2, 3]));
    let f = write(dir.path(), "ns.parquet", vec![("at", bad, false)]);
    let e = load_parquet(&db, "u", &f, &ParquetOptions::default(), &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(e.contains("whole microseconds"), "{e}");
    let tz: ArrayRef =
        Arc::new(TimestampMillisecondArray::from(vec![1i64, 2, 3]).with_timezone("UTC"));
    let f = write(dir.path(), "tz.parquet", vec![("at", tz, false)]);
    let e = load_parquet(&db, "v", &f, &ParquetOptions::default(), &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no time zone"), "{e}");
}
