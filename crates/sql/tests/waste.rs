//! `strata waste` on TPC-H: each column's tightest type and value facts,
//! checked against the data by independent SQL aggregates (DataFusion over
//! the same table, not the analyzer's pass), and `strata_waste(...)` in SQL
//! agrees with the library's report.

use std::sync::Arc;

use strata_load::{TpchSpec, generate_tpch};
use strata_sql::SqlSession;
use strata_sql::shell::format::{Format, render};
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::maintenance::waste::{MAX_DICTIONARY, analyze};
use strata_storage::row::{DataType, Value};

/// TPC-H at SF 0.01 in a new database under `dir`.
fn tpch_db(dir: &std::path::Path) -> Arc<Database> {
    let db = Arc::new(
        Database::create(
            &dir.join("db"),
            DbOptions {
                direct_io: false,
                ..DbOptions::default()
            },
        )
        .unwrap(),
    );
    generate_tpch(Some(&db), &TpchSpec::new(0.01), &NoProgress, |_| {}).unwrap();
    db
}

/// The one row of `sql` as strings.
fn row(s: &SqlSession, sql: &str) -> Vec<String> {
    let r = s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let csv = render(Format::Csv, &r.schema, &r.batches).unwrap();
    let line = csv
        .lines()
        .nth(1)
        .unwrap_or_else(|| panic!("{sql}: no row"));
    line.split(',').map(str::to_string).collect()
}

/// The narrowest of INT8..INT64 for [lo, hi], written out again here (not
/// the analyzer's code) from the two's complement ranges.
fn int_type(lo: i64, hi: i64) -> &'static str {
    if lo >= i8::MIN as i64 && hi <= i8::MAX as i64 {
        "INT8"
    } else if lo >= i16::MIN as i64 && hi <= i16::MAX as i64 {
        "INT16"
    } else if lo >= i32::MIN as i64 && hi <= i32::MAX as i64 {
        "INT32"
    } else {
        "INT64"
    }
}

#[test]
fn every_tpch_column_gets_the_tightest_type_its_data_allows() {
    let dir = tempfile::tempdir().unwrap();
    let db = tpch_db(dir.path());
    let s = SqlSession::new(db.clone()).unwrap();
    let mut checked = 0;
    for name in db.table_names() {
        let t = db.table(&name).unwrap();
        let w = analyze(&t).unwrap();
        assert_eq!(w.rows, t.rows(), "{name}");
        for (col, c) in t.schema().columns.iter().zip(&w.columns) {
            let what = format!("{name}.{}", col.name);
            let text = matches!(col.ty, DataType::Char { .. } | DataType::Varchar { .. });
            let v = if text {
                format!("rtrim({})", col.name)
            } else {
                col.name.clone()
            };
            let r = row(
                &s,
                &format!("SELECT count(*) - count({v}), count(DISTINCT {v}) FROM {name}",),
            );
            assert_eq!(r[0].parse::<u64>().unwrap(), c.nulls, "{what}");
            let distinct: u64 = r[1].parse().unwrap();
            if distinct <= MAX_DICTIONARY as u64 {
                assert_eq!(c.facts.distinct, Some(distinct), "{what}");
            } else {
                assert_eq!(c.facts.distinct, None, "{what}");
            }
            let want = match col.ty {
                DataType::Int32 | DataType::Int64 => {
                    let r = row(&s, &format!("SELECT min({v}), max({v}) FROM {name}"));
                    let (lo, hi) = (r[0].parse().unwrap(), r[1].parse().unwrap());
                    assert_eq!(c.facts.int_range, Some((lo, hi)), "{what}");
                    int_type(lo, hi).to_string()
                }
                DataType::Decimal { scale, .. } => {
                    // The largest magnitude's digits, scale included.
                    let r = row(&s, &format!("SELECT max(abs({v})) FROM {name}"));
                    let digits = r[0]
                        .replace('.', "")
                        .trim_start_matches('0')
                        .len()
                        .max(scale as usize + 1);
                    format!("DECIMAL({digits},{scale})")
                }
                DataType::Date => "DATE".to_string(),
                _ if text => {
                    let r = row(
                        &s,
                        &format!(
                            "SELECT min(length({v})), max(length({v})), \
                             sum(CASE WHEN {v} ~ '^-?[0-9]+$' THEN 1 ELSE 0 END) FROM {name}"
                        ),
                    );
                    let (short, long): (u32, u32) = (r[0].parse().unwrap(), r[1].parse().unwrap());
                    // No TPC-H text column is all integers.
                    assert_ne!(r[2].parse::<u64>().unwrap(), t.rows(), "{what}");
                    assert_eq!(c.facts.max_len, Some(long), "{what}");
                    if short == long {
                        format!("CHAR({long})")
                    } else {
                        format!("VARCHAR({long})")
                    }
                }
                other => panic!("{what}: no TPC-H column is {other}"),
            };
            assert_eq!(c.tightest_type, want, "{what}");
            assert!(c.tight_bytes <= c.stored_bytes, "{what}");
            checked += 1;
        }
        // The SQL table function reports the same per column.
        let r = s
            .execute(&format!(
                "SELECT object, tightest_type, bytes, wasted_bytes FROM strata_waste('{name}') \
                 WHERE kind = 'column' ORDER BY object"
            ))
            .unwrap();
        let csv = render(Format::Csv, &r.schema, &r.batches).unwrap();
        let mut want: Vec<String> = w
            .columns
            .iter()
            .map(|c| {
                // CSV quotes a type with a comma in it.
                let ty = if c.tightest_type.contains(',') {
                    format!("\"{}\"", c.tightest_type)
                } else {
                    c.tightest_type.clone()
                };
                format!(
                    "{},{},{},{}",
                    c.column,
                    ty,
                    c.stored_bytes,
                    c.wasted_bytes()
                )
            })
            .collect();
        want.sort();
        let got: Vec<&str> = csv.lines().skip(1).collect();
        assert_eq!(got, want, "{name}");
    }
    // The 61 columns of the 8 tables.
    assert_eq!(checked, 61);
}

/// Types as hints: after `compact`, every TPC-H column's stored bytes are
/// what its encoding must take, worked out here from SQL aggregates over the
/// compacted table (not from the chooser): a frame of reference of the
/// fewest bytes whose codes below the all-ones escape cover max - min, a
/// 1- or 2-byte dictionary code when codes plus the distinct strings take
/// less, or a 1-byte length plus the unpadded text; and the table's rows read
/// back as before.
#[test]
fn compacted_columns_take_the_bytes_their_data_needs() {
    let dir = tempfile::tempdir().unwrap();
    let db = tpch_db(dir.path());
    let s = SqlSession::new(db.clone()).unwrap();
    let digest = |s: &SqlSession, name: &str| {
        let r = s
            .execute(&format!("SELECT * FROM {name}"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut lines: Vec<String> = render(Format::Csv, &r.schema, &r.batches)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        lines.sort();
        lines
    };
    let before: Vec<Vec<String>> = db.table_names().iter().map(|t| digest(&s, t)).collect();
    drop(s);
    for name in db.table_names() {
        db.compact(&name, &Default::default(), &NoProgress).unwrap();
    }
    let s = SqlSession::new(db.clone()).unwrap();
    let mut narrowed = 0;
    for (name, rows_before) in db.table_names().iter().zip(before) {
        assert_eq!(digest(&s, name), rows_before, "{name}: rows changed");
        let t = db.table(name).unwrap();
        let w = analyze(&t).unwrap();
        for (col, c) in t.schema().columns.iter().zip(&w.columns) {
            let what = format!("{name}.{} ({})", col.name, c.encoding);
            let n = t.rows();
            let v = &col.name;
            let want = match col.ty {
                DataType::Int32 | DataType::Int64 | DataType::Date | DataType::Decimal { .. } => {
                    // Days or scaled integers: the span in the column's units.
                    let expr = match col.ty {
                        DataType::Date => format!("CAST({v} AS INT)"),
                        DataType::Decimal { scale, .. } => {
                            format!("CAST({v} * {} AS BIGINT)", 10i64.pow(scale as u32))
                        }
                        _ => v.clone(),
                    };
                    let r = row(&s, &format!("SELECT max({expr}) - min({expr}) FROM {name}"));
                    let span: u128 = r[0].parse().unwrap();
                    let plain = col.ty.fixed_width().unwrap() as u64;
                    let width = (1..plain)
                        .find(|&b| span < (1u128 << (8 * b)) - 1)
                        .unwrap_or(plain);
                    n * width
                }
                DataType::Char { len } | DataType::Varchar { len } => {
                    let trimmed = if matches!(col.ty, DataType::Char { .. }) {
                        format!("rtrim({v})")
                    } else {
                        v.clone()
                    };
                    let r = row(&s, &format!("SELECT count(DISTINCT {trimmed}) FROM {name}"));
                    let distinct: u64 = r[0].parse().unwrap();
                    // Bytes of the values as stored: SQL shows VARCHARs
                    // without trailing spaces, so they are summed from the
                    // rows themselves.
                    let i = t.schema().index_of(v).unwrap();
                    let char = matches!(col.ty, DataType::Char { .. });
                    let mut bytes = 0u64;
                    let mut values = std::collections::HashSet::new();
                    t.scan_rows(|_, r| {
                        if let Value::Str(x) = &r[i] {
                            let x = if char { x.trim_end_matches(' ') } else { x };
                            bytes += x.len() as u64;
                            values.insert(x.to_string());
                        }
                        Ok(())
                    })
                    .unwrap();
                    if char {
                        assert_eq!(values.len() as u64, distinct, "{what}");
                    }
                    let distinct = values.len() as u64;
                    let dict_bytes: u64 = values.iter().map(|x| x.len() as u64).sum();
                    let declared = match col.ty {
                        DataType::Char { len } => n * len as u64,
                        _ => 2 * n + bytes,
                    };
                    // The cheapest of plain, 1-byte length + text, and a
                    // dictionary (its strings counted once, in the catalog).
                    let short = if len <= 255 { n + bytes } else { u64::MAX };
                    // Codes of 1 byte below 255 values, else 2 (the
                    // all-ones code is the escape).
                    let code = if distinct < 255 { 1 } else { 2 };
                    let dict = if distinct < 65_535 {
                        n * code
                    } else {
                        u64::MAX
                    };
                    // What a dictionary weighs: codes plus its strings.
                    let dict_total = if distinct < 65_535 {
                        n * code + dict_bytes
                    } else {
                        u64::MAX
                    };
                    if dict_total < short.min(declared) {
                        dict
                    } else {
                        short.min(declared)
                    }
                }
                _ => c.stored_bytes,
            };
            assert_eq!(c.encoded_bytes, want, "{what}");
            if c.encoded_bytes < c.stored_bytes {
                narrowed += 1;
            }
        }
    }
    assert!(narrowed >= 40, "only {narrowed} columns narrowed");
}

#[test]
fn strata_waste_rejects_what_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::create(&dir.path().join("db"), DbOptions::default()).unwrap());
    let s = SqlSession::new(db).unwrap();
    let e = s
        .execute("SELECT * FROM strata_waste('nope')")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("unknown table 'nope'"), "{e}");
    let e = s
        .execute("SELECT * FROM strata_waste(42)")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("one table name as a string literal"), "{e}");
    // No tables: no rows.
    assert_eq!(s.execute("SELECT * FROM strata_waste()").unwrap().rows(), 0);
}
