//! `strata load TABLE x.csv` without `--schema` for a new table: the column
//! types are inferred from the data, said on stderr as a SQL column list,
//! and the rows loaded; a file that cannot be inferred creates nothing.

use crate::common;

use common::*;

fn schema_of(db: &std::path::Path, table: &str) -> Option<String> {
    let out = ok(db, &["info", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("info --json prints JSON");
    v.as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == table)
        .map(|t| t["schema"].as_str().unwrap().to_string())
}

#[test]
fn a_new_table_gets_the_types_of_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let csv = dir.path().join("sales.csv");
    std::fs::write(
        &csv,
        "id,region,amount,day,paid,ratio\n\
         1,north,12.50,2024-01-05,true,0.5\n\
         2,,3.125,2024-02-29,false,1e-3\n\
         3,south-east,-7,,true,2\n",
    )
    .unwrap();
    let o = strata(&db, &["load", "sales", csv.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "sales.csv (3 rows): CREATE TABLE sales (id BIGINT NOT NULL, region VARCHAR(10), \
             amount DECIMAL(5,3) NOT NULL, day DATE, paid BOOLEAN NOT NULL, ratio DOUBLE NOT NULL)"
        ),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).contains("loaded 3 rows into sales"),
        "{}",
        stdout(&o)
    );
    assert_eq!(rows(&db, "sales"), Some(3));
    assert_eq!(
        schema_of(&db, "sales").unwrap(),
        "id BIGINT NOT NULL, region VARCHAR(10), amount DECIMAL(5,3) NOT NULL, day DATE, \
         paid BOOLEAN NOT NULL, ratio DOUBLE NOT NULL"
    );
    // Loading again appends to the table as it is: nothing is inferred.
    let o = strata(&db, &["load", "sales", csv.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("inferred"), "{}", stderr(&o));
    assert_eq!(rows(&db, "sales"), Some(6));
    // --no-header and --delimiter apply to the inference.
    let semi = dir.path().join("semi.txt");
    std::fs::write(&semi, "1;x\n2;yy\n").unwrap();
    let o = strata(
        &db,
        &[
            "load",
            "plain",
            semi.to_str().unwrap(),
            "--format",
            "csv",
            "--no-header",
            "--delimiter",
            ";",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        schema_of(&db, "plain").unwrap(),
        "column0 BIGINT NOT NULL, column1 VARCHAR(2) NOT NULL"
    );
}

#[test]
fn a_file_that_cannot_be_inferred_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let csv = dir.path().join("ragged.csv");
    std::fs::write(&csv, "a,b\n1,2\n3\n").unwrap();
    let o = strata(&db, &["load", "r", csv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ragged.csv: line 3: expected 2 fields, found 1"),
        "{}",
        stderr(&o)
    );
    assert_eq!(rows(&db, "r"), None);
}
