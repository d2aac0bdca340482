//! TPC-H generation: row counts, every value against tpchgen's own text rendering
//! of its rows (dbgen's `.tbl` format), the Parquet files against the strata
//! tables, indexes against their heaps, and the errors.

use crate::common;

use std::fs::File;

use arrow_schema::DataType as Arrow;
use common::{Recorder, db, rows};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use strata_load::{
    LoadError, ParquetOptions, TPCH_INDEXES, TpchSpec, TpchTable, generate_tpch, load_parquet,
    parse_scale_factor,
};
use strata_storage::db::{NoProgress, TableOptions};
use strata_storage::maintenance::check::check_database;
use strata_storage::row::{DataType, Value};
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};

/// Rows per table at SF 0.01, as dbgen writes them (TPC-H spec §4.2.5: 5, 25,
/// SF × 10 000, 150 000, 200 000, 800 000, 1 500 000; lineitem is dbgen's count).
const SF001_ROWS: [(&str, u64); 8] = [
    ("region", 5),
    ("nation", 25),
    ("supplier", 100),
    ("customer", 1_500),
    ("part", 2_000),
    ("partsupp", 8_000),
    ("orders", 15_000),
    ("lineitem", 60_175),
];

/// tpchgen's rendering of each row of `t` at `sf`: dbgen's `.tbl` lines, `|`
/// after every field. This goes through no arrow and no strata code.
fn tbl_lines(t: TpchTable, sf: f64) -> Vec<String> {
    fn all<T: std::fmt::Display>(it: impl Iterator<Item = T>) -> Vec<String> {
        it.map(|r| r.to_string()).collect()
    }
    match t {
        TpchTable::Region => all(RegionGenerator::new(sf, 1, 1).iter()),
        TpchTable::Nation => all(NationGenerator::new(sf, 1, 1).iter()),
        TpchTable::Supplier => all(SupplierGenerator::new(sf, 1, 1).iter()),
        TpchTable::Customer => all(CustomerGenerator::new(sf, 1, 1).iter()),
        TpchTable::Part => all(PartGenerator::new(sf, 1, 1).iter()),
        TpchTable::PartSupp => all(PartSuppGenerator::new(sf, 1, 1).iter()),
        TpchTable::Orders => all(OrderGenerator::new(sf, 1, 1).iter()),
        TpchTable::LineItem => all(LineItemGenerator::new(sf, 1, 1).iter()),
    }
}

/// A strata row in the same `.tbl` form. dbgen prints l_quantity as an integer
/// (`17`); strata stores it as DECIMAL(15,2) (`17.00`), as the spec types it.
fn strata_line(t: TpchTable, row: &[Value]) -> String {
    let schema = t.schema();
    let mut out = String::new();
    for (v, c) in row.iter().zip(&schema.columns) {
        let text = v.display(&c.ty);
        if c.name == "l_quantity" {
            out += text.strip_suffix(".00").expect("whole quantities");
        } else {
            out += &text;
        }
        out.push('|');
    }
    out
}

fn options() -> TableOptions {
    TableOptions::default()
}

#[test]
fn sf_001_tables_values_indexes_and_parquet() {
    let (dir, db) = db();
    let pq = dir.path().join("parquet");
    let mut spec = TpchSpec::new(0.01);
    spec.options = options();
    spec.parquet_dir = Some(pq.clone());
    let progress = Recorder::default();
    let mut reported = Vec::new();
    let reports = generate_tpch(Some(&db), &spec, &progress, |r| reported.push(r.table)).unwrap();
    assert_eq!(
        reported,
        TpchTable::ALL.to_vec(),
        "one callback per table, in order"
    );

    for ((name, expected), r) in SF001_ROWS.iter().zip(&reports) {
        let t = r.table;
        assert_eq!(t.name(), *name);
        // Counts: the spec's, tpchgen's formula, the report and the catalog agree.
        assert_eq!(r.rows, *expected, "{name}");
        if let Some(n) = t.rows(0.01) {
            assert_eq!(n, *expected, "{name}: TpchTable::rows");
        }
        let table = db.table(name).unwrap();
        assert_eq!(table.rows(), *expected, "{name}");
        assert_eq!(table.schema(), &t.schema(), "{name}");
        let summary = r.summary.as_ref().unwrap();
        assert_eq!(summary.rows_total, *expected);

        // Every value: strata's rows rendered as .tbl equal tpchgen's lines.
        let got: Vec<String> = rows(&db, name).iter().map(|r| strata_line(t, r)).collect();
        let want = tbl_lines(t, 0.01);
        assert_eq!(got.len(), want.len(), "{name}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{name} row {}", i + 1);
        }

        // Indexes: exactly the documented ones, one entry per row.
        let mut names: Vec<&str> = table
            .indexes()
            .iter()
            .map(|i| i.def.name.as_str())
            .collect();
        names.sort();
        let mut want: Vec<&str> = TPCH_INDEXES
            .iter()
            .filter(|i| i.table == t)
            .map(|i| i.name)
            .collect();
        want.sort();
        assert_eq!(names, want, "{name}");
        for i in table.indexes() {
            assert_eq!(i.def.entries, *expected, "{}", i.def.name);
        }

        // Progress: one generate phase per table that counted every row.
        let (_, done) = progress
            .phase(&format!("generate {name}"))
            .unwrap_or_else(|| panic!("no generate phase for {name}"));
        assert_eq!(done, *expected, "{name} progress");
    }

    // A few spot values anyone can check against dbgen's nation.tbl / region.tbl,
    // and exact DECIMAL and DATE values in lineitem.
    let nation = rows(&db, "nation");
    assert_eq!(
        nation[0],
        vec![
            Value::Int64(0),
            Value::Str("ALGERIA".into()),
            Value::Int64(0),
            Value::Str(" haggle. carefully final deposits detect slyly agai".into()),
        ]
    );
    assert_eq!(nation[24][1], Value::Str("UNITED STATES".into()));
    let region = rows(&db, "region");
    assert_eq!(region[4][1], Value::Str("MIDDLE EAST".into()));
    let lineitem = rows(&db, "lineitem");
    let first = &lineitem[0];
    assert_eq!(first[0], Value::Int64(1)); // l_orderkey
    assert_eq!(first[3], Value::Int32(1)); // l_linenumber
    let DataType::Decimal { scale: 2, .. } = TpchTable::LineItem.schema().columns[5].ty else {
        panic!("l_extendedprice is DECIMAL(15,2)");
    };
    // The first line of the first order: shipped 1996-03-13 (dbgen), and the
    // price is quantity × the part's retail price exactly, in cents.
    assert_eq!(first[10].display(&DataType::Date), "1996-03-13");
    let (Value::Decimal(qty), Value::Decimal(price)) = (&first[4], &first[5]) else {
        panic!("decimals: {first:?}");
    };
    let Value::Int64(partkey) = first[1] else {
        panic!()
    };
    let part = rows(&db, "part");
    let Value::Decimal(retail) = part[(partkey - 1) as usize][7] else {
        panic!()
    };
    assert_eq!(
        *price,
        qty / 100 * retail,
        "l_extendedprice = l_quantity × p_retailprice"
    );

    // The index ↔ heap check of `strata check` passes on every table.
    let checks = check_database(&db, &NoProgress).unwrap();
    assert_eq!(checks.len(), 8);
    let idx: usize = checks.iter().map(|c| c.indexes.len()).sum();
    assert_eq!(idx, TPCH_INDEXES.len());

    // The Parquet files: tpchgen's arrow types, and read back through the Parquet
    // loader (into tables of the same schema) they equal the strata tables.
    let (_dir2, db2) = common::db();
    for r in &reports {
        let t = r.table;
        let (path, bytes) = r.parquet.as_ref().unwrap();
        assert_eq!(path, &pq.join(format!("{}.parquet", t.name())));
        assert_eq!(std::fs::metadata(path).unwrap().len(), *bytes);
        let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
        assert_eq!(b.metadata().file_metadata().num_rows() as u64, r.rows);
        for (f, c) in b.schema().fields().iter().zip(&t.schema().columns) {
            assert_eq!(f.name(), &c.name);
            let want = match c.ty {
                DataType::Int64 => Arrow::Int64,
                DataType::Int32 => Arrow::Int32,
                DataType::Decimal { .. } => Arrow::Decimal128(15, 2),
                DataType::Date => Arrow::Date32,
                DataType::Char { .. } | DataType::Varchar { .. } => Arrow::Utf8View,
                other => panic!("unexpected type {other}"),
            };
            assert_eq!(f.data_type(), &want, "{}.{}", t, c.name);
        }
        db2.create_table(t.name(), t.schema(), options()).unwrap();
        let loaded = load_parquet(
            &db2,
            t.name(),
            path,
            &ParquetOptions::default(),
            &NoProgress,
        )
        .unwrap();
        assert_eq!(loaded.rows_loaded, r.rows);
        assert!(
            rows(&db2, t.name()) == rows(&db, t.name()),
            "{}: Parquet file differs from the strata table",
            t
        );
    }
    assert_eq!(
        std::fs::read_dir(&pq).unwrap().count(),
        8,
        "eight files, no temporary ones"
    );

    // A second run finds the tables and changes nothing.
    let e = generate_tpch(Some(&db), &spec, &NoProgress, |_| {}).unwrap_err();
    assert!(matches!(e, LoadError::Usage(_)), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("tables region, nation, supplier, customer, part, partsupp, orders, lineitem already exist"),
        "{msg}"
    );
    assert_eq!(db.table("lineitem").unwrap().rows(), 60_175);
}

#[test]
fn one_existing_table_stops_generation_before_anything_is_written() {
    let (dir, db) = db();
    db.create_table("orders", TpchTable::Orders.schema(), options())
        .unwrap();
    let mut spec = TpchSpec::new(0.001);
    spec.parquet_dir = Some(dir.path().join("pq"));
    let e = generate_tpch(Some(&db), &spec, &NoProgress, |_| {
        panic!("nothing generated")
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("table orders already exists in"), "{e}");
    assert!(e.contains("fresh --db"), "{e}");
    assert_eq!(db.table_names(), vec!["orders".to_string()]);
    assert!(!dir.path().join("pq").exists());
}

#[test]
fn parquet_only_writes_files_and_no_tables() {
    let dir = tempfile::tempdir().unwrap();
    let pq = dir.path().join("out");
    let mut spec = TpchSpec::new(0.001);
    spec.parquet_dir = Some(pq.clone());
    spec.batch_rows = 1000; // several batches per table
    let progress = Recorder::default();
    let reports = generate_tpch(None, &spec, &progress, |_| {}).unwrap();
    for r in &reports {
        assert!(r.summary.is_none());
        let (path, _) = r.parquet.as_ref().unwrap();
        let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
        let n = b.metadata().file_metadata().num_rows() as u64;
        assert_eq!(n, r.rows, "{}", r.table);
        if let Some(want) = r.table.rows(0.001) {
            assert_eq!(n, want, "{}", r.table);
        }
        // Progress comes from the writer when nothing is loaded.
        assert_eq!(
            progress.phase(&format!("generate {}", r.table)).unwrap().1,
            n
        );
    }
    // Lineitem at SF 0.001: 1 500 orders, 1 to 7 lines each.
    let li = reports.last().unwrap();
    assert_eq!(li.table, TpchTable::LineItem);
    assert!((1_500..=10_500).contains(&li.rows), "{}", li.rows);
    assert_eq!(tbl_lines(TpchTable::LineItem, 0.001).len() as u64, li.rows);
    let mut names: Vec<String> = std::fs::read_dir(&pq)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut want: Vec<String> = TpchTable::ALL
        .iter()
        .map(|t| format!("{t}.parquet"))
        .collect();
    want.sort();
    assert_eq!(names, want);

    // Neither a database nor a directory: nothing to do.
    let e = generate_tpch(None, &TpchSpec::new(0.01), &NoProgress, |_| {}).unwrap_err();
    assert!(matches!(e, LoadError::Usage(_)), "{e:?}");
}

#[test]
fn a_parquet_directory_that_cannot_be_created_fails_before_any_table() {
    let (dir, db) = db();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let mut spec = TpchSpec::new(0.001);
    spec.parquet_dir = Some(file.join("sub"));
    let e = generate_tpch(Some(&db), &spec, &NoProgress, |_| {}).unwrap_err();
    assert!(
        e.storage().is_some(),
        "an I/O failure, not bad input: {e:?}"
    );
    assert!(e.to_string().contains("not-a-dir"), "{e}");
    assert!(db.table_names().is_empty());
}

#[test]
fn scale_factors_are_checked() {
    for ok in ["0.01", "1", " 10 ", "0.5", "1e-4", "100000"] {
        assert!(parse_scale_factor(ok).is_ok(), "{ok}");
    }
    assert_eq!(parse_scale_factor("0.01").unwrap(), 0.01);
    for (bad, why) in [
        ("-1", "is too small"),
        ("0", "is too small"),
        ("0.00001", "is too small"),
        ("abc", "is not a number"),
        ("", "is not a number"),
        ("NaN", "is not a number"),
        ("inf", "is not a number"),
        ("1e6", "is too large"),
    ] {
        let e = parse_scale_factor(bad).unwrap_err();
        assert!(matches!(e, LoadError::Usage(_)), "{bad}: {e:?}");
        let msg = e.to_string();
        assert!(msg.contains(why), "{bad}: {msg}");
        assert!(msg.contains("e.g. 0.01, 1 or 10"), "{msg}");
    }
    // The library checks a spec built by hand too.
    let (_dir, db) = db();
    let e = generate_tpch(Some(&db), &TpchSpec::new(-1.0), &NoProgress, |_| {}).unwrap_err();
    assert!(matches!(e, LoadError::Usage(_)), "{e:?}");
    assert!(db.table_names().is_empty());
}

#[test]
fn types_follow_the_spec() {
    let ty = |t: TpchTable, c: &str| {
        let s = t.schema();
        s.columns[s.index_of(c).unwrap()].ty
    };
    assert_eq!(ty(TpchTable::LineItem, "l_orderkey"), DataType::Int64);
    assert_eq!(ty(TpchTable::LineItem, "l_linenumber"), DataType::Int32);
    for c in ["l_quantity", "l_extendedprice", "l_discount", "l_tax"] {
        assert_eq!(
            ty(TpchTable::LineItem, c),
            DataType::Decimal {
                precision: 15,
                scale: 2
            }
        );
    }
    assert_eq!(ty(TpchTable::LineItem, "l_shipdate"), DataType::Date);
    assert_eq!(
        ty(TpchTable::LineItem, "l_shipmode"),
        DataType::Char { len: 10 }
    );
    assert_eq!(
        ty(TpchTable::LineItem, "l_comment"),
        DataType::Varchar { len: 44 }
    );
    assert_eq!(
        ty(TpchTable::PartSupp, "ps_comment"),
        DataType::Varchar { len: 199 }
    );
    assert_eq!(
        ty(TpchTable::Customer, "c_phone"),
        DataType::Char { len: 15 }
    );
    for t in TpchTable::ALL {
        // Same columns, in the same order, as the generated batches.
        let names: Vec<String> = t
            .arrow_schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let cols: Vec<String> = t.schema().columns.iter().map(|c| c.name.clone()).collect();
        assert_eq!(names, cols, "{t}");
        assert!(t.schema().columns.iter().all(|c| !c.nullable), "{t}");
    }
    // Every documented index names a column of its table.
    for i in TPCH_INDEXES {
        assert!(i.table.schema().index_of(i.column).is_some(), "{}", i.name);
        assert!(!i.why.is_empty() && i.queries.starts_with('Q'));
    }
}
