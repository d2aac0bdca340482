//! CSV type inference: the types each column gets, NULLs and nullability,
//! header names, located errors, and the same files read by DuckDB's
//! `read_csv` for a second opinion on the types.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{db, rows};
use strata_load::{
    CsvDialect, CsvOptions, CsvRowReader, infer_csv_schema, load_csv, sql_column_list,
};
use strata_storage::db::NoProgress;
use strata_storage::row::{DataType, Schema, Value, days_from_civil};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Every type once, a NULL in some columns.
const MIXED: &str = "id,name,price,ratio,day,ok,code,blank\n\
1,apple,12.50,1.5e3,2024-02-29,true,007,\n\
2,,3.125,-0.25,1999-12-31,FALSE,x1,\n\
3,a \"quoted\" pear,-7,2,,true,12,\n";

#[test]
fn each_column_gets_the_narrowest_type_of_all_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "mixed.csv", MIXED);
    let inferred = infer_csv_schema(&f, &CsvDialect::default()).unwrap();
    assert_eq!(inferred.records, 3);
    assert_eq!(
        inferred.schema,
        Schema::parse(
            "id BIGINT, name VARCHAR(15) NULL, price DECIMAL(5,3), ratio DOUBLE, \
             day DATE NULL, ok BOOL, code VARCHAR(3), blank VARCHAR(1) NULL"
        )
        .unwrap()
    );
    assert_eq!(
        sql_column_list(&inferred.schema),
        "id BIGINT NOT NULL, name VARCHAR(15), price DECIMAL(5,3) NOT NULL, \
         ratio DOUBLE NOT NULL, day DATE, ok BOOLEAN NOT NULL, code VARCHAR(3) NOT NULL, \
         blank VARCHAR(1)"
    );
}

#[test]
fn an_inferred_schema_loads_its_file_exactly() {
    let (dir, db) = db();
    let f = write(dir.path(), "mixed.csv", MIXED);
    let inferred = infer_csv_schema(&f, &CsvDialect::default()).unwrap();
    let opts = CsvOptions {
        schema: Some(inferred.schema.clone()),
        ..Default::default()
    };
    let report = load_csv(&db, "m", &f, &opts, &NoProgress).unwrap();
    assert_eq!(report.rows_loaded, 3);
    let got = rows(&db, "m");
    assert_eq!(got[0][2], Value::Decimal(12500));
    assert_eq!(got[1][2], Value::Decimal(3125));
    assert_eq!(got[2][2], Value::Decimal(-7000));
    assert_eq!(got[0][4], Value::Date(days_from_civil(2024, 2, 29)));
    assert_eq!(got[2][4], Value::Null);
    assert_eq!(got[0][6], Value::Str("007".into()));
    assert_eq!(got[2][1], Value::Str("a \"quoted\" pear".into()));
    // The reader of `read_csv` reads the same values.
    let mut reader = CsvRowReader::open(&f, &CsvDialect::default(), inferred.schema).unwrap();
    let mut row = Vec::new();
    let mut read = Vec::new();
    while reader.next_row(&mut row).unwrap() {
        read.push(row.clone());
    }
    assert_eq!(read, got);
}

#[test]
fn no_header_empty_and_repeated_names_and_other_delimiters() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "nohead.csv", "1;x\n2;y\n");
    let d = CsvDialect {
        header: false,
        delimiter: b';',
        ..Default::default()
    };
    let s = infer_csv_schema(&f, &d).unwrap();
    assert_eq!(s.records, 2);
    assert_eq!(
        s.schema,
        Schema::parse("column0 BIGINT, column1 VARCHAR(1)").unwrap()
    );
    let f = write(dir.path(), "names.csv", "a,,A,a\n1,2,3,4\n");
    let s = infer_csv_schema(&f, &CsvDialect::default()).unwrap();
    assert_eq!(s.schema.names(), "a, column1, A_1, a_2");
    // A NULL string other than the empty field.
    let f = write(dir.path(), "nulls.csv", "a,b\n\\N,\n1,\n");
    let d = CsvDialect {
        null_string: "\\N".into(),
        ..Default::default()
    };
    let s = infer_csv_schema(&f, &d).unwrap();
    assert_eq!(s.schema.columns[0].ty, DataType::Int64);
    assert!(s.schema.columns[0].nullable);
    // The empty field is then a value: an empty string.
    assert_eq!(s.schema.columns[1].ty, DataType::Varchar { len: 1 });
    assert!(!s.schema.columns[1].nullable);
}

#[test]
fn bad_files_are_reported_with_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let e = infer_csv_schema(&dir.path().join("missing.csv"), &CsvDialect::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.csv"), "{e}");
    let f = write(dir.path(), "empty.csv", "");
    let e = infer_csv_schema(&f, &CsvDialect::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("empty.csv: the file is empty"), "{e}");
    let f = write(dir.path(), "ragged.csv", "a,b\n1,2\n3\n");
    let e = infer_csv_schema(&f, &CsvDialect::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ragged.csv: line 3: expected 2 fields, found 1"),
        "{e}"
    );
    let f = write(
        dir.path(),
        "long.csv",
        &format!("a\n{}\n", "x".repeat(4001)),
    );
    let e = infer_csv_schema(&f, &CsvDialect::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("long.csv: line 2: column 1 (a): a value of 4001 bytes"),
        "{e}"
    );
    let f = write(dir.path(), "utf8.csv", "a\nok\n");
    std::fs::write(&f, b"a\nok\n\xff\n").unwrap();
    let e = infer_csv_schema(&f, &CsvDialect::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 3: column 1 (a): not valid UTF-8"), "{e}");
    // The row reader names the line and column of a value that does not
    // fit the schema it was given.
    let f = write(dir.path(), "typed.csv", "a,b\n1,2\n3,x\n");
    let schema = Schema::parse("a BIGINT, b BIGINT").unwrap();
    let mut r = CsvRowReader::open(&f, &CsvDialect::default(), schema).unwrap();
    let mut row = Vec::new();
    assert!(r.next_row(&mut row).unwrap());
    let e = r.next_row(&mut row).unwrap_err().to_string();
    assert!(
        e.contains("typed.csv: line 3: column 2 (b): 'x' is not a 64-bit integer"),
        "{e}"
    );
}

/// DuckDB's `read_csv` types of `file`'s columns: (name, type).
fn duckdb_types(file: &Path) -> Vec<(String, String)> {
    let script = r#"
import duckdb, sys
p = sys.argv[1].replace("'", "''")
for row in duckdb.sql(f"DESCRIBE SELECT * FROM read_csv('{p}', header = true)").fetchall():
    print(f"{row[0]}\t{row[1]}")
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(file)
        .output()
        .expect("run python3 (DuckDB for Python is installed by .ci/run)");
    assert!(
        out.status.success(),
        "DuckDB failed (install it with python3 -m pip install duckdb==1.4.4): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (n, t) = l.split_once('\t').unwrap();
            (n.to_string(), t.to_string())
        })
        .collect()
}

/// The DuckDB type strata's inferred type corresponds to: DuckDB makes every
/// fractional number a DOUBLE where strata keeps a plain one exact as a
/// DECIMAL, and has no VARCHAR length.
fn duckdb_name(t: &DataType) -> &'static str {
    match t {
        DataType::Int64 => "BIGINT",
        DataType::Decimal { .. } | DataType::Float64 => "DOUBLE",
        DataType::Date => "DATE",
        DataType::Bool => "BOOLEAN",
        DataType::Varchar { .. } => "VARCHAR",
        _ => "other",
    }
}

#[test]
fn inferred_types_agree_with_duckdb_read_csv() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "orders.csv",
            "o_id,o_cust,o_total,o_date,o_prio,o_shipped\n\
             1,370,172799.49,1996-01-02,5-LOW,true\n\
             2,781,38426.09,1996-12-01,1-URGENT,false\n\
             3,1234,205654.30,1993-10-14,5-LOW,\n\
             4,1369,56000.91,1995-10-11,,true\n",
        ),
        (
            "measures.csv",
            "sensor,reading,scaled,label\n\
             10,0.5,1e-3,a\n\
             -20,-1.25,2.5E+4,17\n\
             ,,,\n\
             30,3,7,b\n",
        ),
        ("strings.csv", "a,b\nx,1\ny,2024-13-01\nz,\n"),
    ];
    for (name, text) in files {
        let f = write(dir.path(), name, text);
        let ours = infer_csv_schema(&f, &CsvDialect::default()).unwrap().schema;
        let theirs = duckdb_types(&f);
        let ours: Vec<(String, String)> = ours
            .columns
            .iter()
            .map(|c| (c.name.clone(), duckdb_name(&c.ty).to_string()))
            .collect();
        assert_eq!(ours, theirs, "{name}");
    }
}
