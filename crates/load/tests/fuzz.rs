//! Fuzzing the loaders: whatever bytes a CSV or Parquet file holds, a load
//! either commits rows that read back and pass `strata check`, or fails with an
//! error naming the file, and leaves the database as it was. It never panics.
//!
//! Inputs are random bytes, CSV-shaped records of hostile fields (quotes,
//! embedded newlines, huge numbers, bad dates, invalid UTF-8, NUL, long text),
//! and valid Parquet files with bytes flipped, truncated or spliced. Case
//! counts are bounded for CI (`PROPTEST_CASES` raises them; `scripts/fuzz.sh`
//! runs every fuzz target for longer).

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType as Arrow, Field, Schema as ArrowSchema};
use common::{db, rows};
use parquet::arrow::ArrowWriter;
use proptest::prelude::*;
use strata_load::{CsvOptions, ParquetOptions, load_csv, load_parquet};
use strata_storage::Database;
use strata_storage::db::{IndexSpec, NoProgress};
use strata_storage::maintenance::check::check_database;
use strata_storage::row::Schema;
use strata_storage::util::proptest_cases;

const SCHEMA: &str = "id INT, name VARCHAR(8) NULL, price DECIMAL(6,2), d DATE, ok BOOL, x DOUBLE NULL, c CHAR(3) NULL, big BIGINT";

fn field() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"".to_vec()),
        Just(b"1".to_vec()),
        Just(b"-2147483649".to_vec()),
        Just(b"99999999999999999999999".to_vec()),
        Just(b"1.005".to_vec()),
        Just(b"-9999.99".to_vec()),
        Just(b"1e308".to_vec()),
        Just(b"NaN".to_vec()),
        Just(b"2020-02-29".to_vec()),
        Just(b"2021-02-29".to_vec()),
        Just(b"0000-00-00".to_vec()),
        Just(b"true".to_vec()),
        Just(b"maybe".to_vec()),
        Just(b"abc".to_vec()),
        Just(b"\"q\"\"x\"".to_vec()),
        Just(b"\"multi\nline\"".to_vec()),
        Just(b"\"unterminated".to_vec()),
        Just(vec![0xff, 0xfe, b'a']),
        Just(vec![0]),
        Just("é€😀".as_bytes().to_vec()),
        Just(vec![b'x'; 5000]),
        proptest::collection::vec(any::<u8>(), 0..12),
    ]
}

/// Records of fields joined by commas and newlines (a header sometimes).
fn csv_text() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        proptest::collection::vec(proptest::collection::vec(field(), 0..10), 0..12),
        any::<bool>(),
    )
        .prop_map(|(header, records, crlf)| {
            let mut out = Vec::new();
            if header {
                out.extend_from_slice(b"id,name,price,d,ok,x,c,big\n");
            }
            for r in records {
                out.extend_from_slice(&r.join(&b","[..]));
                out.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
            }
            out
        })
}

fn csv_input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => csv_text(),
        1 => proptest::collection::vec(any::<u8>(), 0..600),
    ]
}

/// After any load: every table reads back and passes `check`.
fn consistent(db: &Database) {
    let checks = check_database(db, &NoProgress).unwrap_or_else(|e| panic!("check: {e}"));
    for c in checks {
        assert_eq!(rows(db, &c.table).len() as u64, c.rows);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(96)))]

    #[test]
    fn any_csv_loads_or_fails_clearly(bytes in csv_input(), max_errors in 0u64..4, index in any::<bool>()) {
        let (dir, db) = db();
        let path = dir.path().join("in.csv");
        std::fs::write(&path, &bytes).unwrap();
        let mut o = CsvOptions {
            schema: Some(Schema::parse(SCHEMA).unwrap()),
            ..Default::default()
        };
        o.target.max_errors = max_errors;
        if index {
            o.target.indexes = vec![IndexSpec::new("t_name", &["name"])];
        }
        match load_csv(&db, "t", &path, &o, &NoProgress) {
            Ok(r) => {
                prop_assert!(r.skipped.len() as u64 <= max_errors);
                prop_assert_eq!(rows(&db, "t").len() as u64, r.rows_loaded);
                for s in &r.skipped {
                    prop_assert!(!s.to_string().is_empty());
                }
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("in.csv"), "{}", msg);
                prop_assert!(db.table_names().is_empty(), "a failed load left a table");
            }
        }
        consistent(&db);
    }
}

/// A valid Parquet file of a few hundred rows over three types.
fn parquet_file(dir: &std::path::Path) -> PathBuf {
    let n = 300;
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("a", Arrow::Int32, false),
        Field::new("b", Arrow::Int64, true),
        Field::new("s", Arrow::Utf8, true),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from_iter_values(0..n)),
        Arc::new(Int64Array::from_iter(
            (0..n).map(|i| (i % 7 != 0).then_some(i as i64 * 1000)),
        )),
        Arc::new(StringArray::from_iter(
            (0..n).map(|i| (i % 5 != 0).then(|| format!("s{i}"))),
        )),
    ];
    let batch = RecordBatch::try_new(schema.clone(), cols).unwrap();
    let path = dir.join("good.parquet");
    let mut w = ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, None).unwrap();
    w.write(&batch.slice(0, 100)).unwrap();
    w.write(&batch.slice(100, 200)).unwrap();
    w.close().unwrap();
    path
}

#[derive(Clone, Debug)]
enum Damage {
    /// XOR a byte at a position (a fraction of the file length).
    Flip(f64, u8),
    /// Keep only a prefix.
    Truncate(f64),
    /// Overwrite a span with random bytes.
    Splice(f64, Vec<u8>),
}

fn damage() -> impl Strategy<Value = Vec<Damage>> {
    proptest::collection::vec(
        prop_oneof![
            4 => (0.0..1.0f64, 1u8..=255).prop_map(|(p, x)| Damage::Flip(p, x)),
            1 => (0.0..1.0f64).prop_map(Damage::Truncate),
            2 => (0.0..1.0f64, proptest::collection::vec(any::<u8>(), 1..32))
                .prop_map(|(p, b)| Damage::Splice(p, b)),
        ],
        1..4,
    )
}

fn apply(mut bytes: Vec<u8>, damage: &[Damage]) -> Vec<u8> {
    for d in damage {
        let at = |p: f64, len: usize| ((p * len as f64) as usize).min(len.saturating_sub(1));
        match d {
            Damage::Flip(p, x) if !bytes.is_empty() => {
                let i = at(*p, bytes.len());
                bytes[i] ^= x;
            }
            Damage::Truncate(p) => {
                let keep = (p * bytes.len() as f64) as usize;
                bytes.truncate(keep);
            }
            Damage::Splice(p, b) if !bytes.is_empty() => {
                let i = at(*p, bytes.len());
                let end = (i + b.len()).min(bytes.len());
                bytes[i..end].copy_from_slice(&b[..end - i]);
            }
            _ => {}
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(96)))]

    #[test]
    fn damaged_parquet_loads_or_fails_clearly(damage in damage(), max_errors in 0u64..3) {
        let (dir, db) = db();
        let good = std::fs::read(parquet_file(dir.path())).unwrap();
        let path = dir.path().join("bad.parquet");
        std::fs::write(&path, apply(good, &damage)).unwrap();
        let mut o = ParquetOptions::default();
        o.target.max_errors = max_errors;
        match load_parquet(&db, "t", &path, &o, &NoProgress) {
            Ok(r) => prop_assert_eq!(rows(&db, "t").len() as u64, r.rows_loaded),
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("bad.parquet"), "{}", msg);
                prop_assert!(db.table_names().is_empty(), "a failed load left a table");
            }
        }
        consistent(&db);
    }
}
