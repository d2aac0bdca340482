//! The columnar format against a model: conversions keep every row, pruning
//! never drops a row that passes (and does skip), a column file that is not
//! the one committed is named in the error, an uncommitted conversion leaves
//! no trace, and what a columnar table refuses it refuses clearly.

mod deletes;
mod footer;
mod indexes;
mod pages;
mod paths;
mod points;
mod read_ahead;
mod string_views;

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use strata_access::predicate::{CmpOp, Comparison};
use strata_columns::convert::arrow_values;
use strata_columns::{ColumnPart, Format, rewrite};
use strata_storage::db::NoProgress;
use strata_storage::row::{DataType, Schema, Value};
use strata_storage::{Database, DbOptions, IndexSpec, TableOptions};

fn opts() -> DbOptions {
    DbOptions {
        direct_io: false,
        buffer_pool_bytes: 16 << 20,
        ..DbOptions::default()
    }
}

fn schema() -> Schema {
    Schema::parse(
        "k BIGINT, i INT NULL, d DATE, p DECIMAL(12,2), f DOUBLE, b BOOL, flag CHAR(1), \
         v VARCHAR(20) NULL, t TIMESTAMP",
    )
    .unwrap()
}

/// Row `n`: `k` ascending (clustered), `i` random with NULLs, `d` in runs.
fn row(n: i64, rng: &mut rand::rngs::SmallRng) -> Vec<Value> {
    vec![
        Value::Int64(n),
        if n % 11 == 0 {
            Value::Null
        } else {
            Value::Int32(rng.random_range(-1000..1000))
        },
        Value::Date(8000 + (n / 1000) as i32),
        Value::Decimal(rng.random_range(-100_000..100_000)),
        Value::Float64(n as f64 / 7.0),
        Value::Bool(n % 3 == 0),
        Value::Str(["A", "N", "R"][(n % 3) as usize].into()),
        if n % 13 == 0 {
            Value::Null
        } else {
            Value::Str(format!("note {}", n % 500))
        },
        Value::Timestamp(1_600_000_000_000_000 + n * 1_000_000),
    ]
}

fn load(db: &Database, rows: &[Vec<Value>]) {
    let mut l = db
        .begin_create_load("t", schema(), TableOptions::default(), vec![])
        .unwrap();
    for r in rows {
        l.append(r).unwrap();
    }
    l.commit(&NoProgress).unwrap();
}

/// The values of each column of batch `b`, of column types `types`.
fn batch_columns(b: &arrow::record_batch::RecordBatch, types: &[DataType]) -> Vec<Vec<Value>> {
    b.columns()
        .iter()
        .zip(types)
        .map(|(a, ty)| arrow_values(a.as_ref(), ty).unwrap())
        .collect()
}

/// The rows of batch `b`.
fn batch_rows(b: &arrow::record_batch::RecordBatch, types: &[DataType]) -> Vec<Vec<Value>> {
    let cols = batch_columns(b, types);
    (0..b.num_rows())
        .map(|i| cols.iter().map(|c| c[i].clone()).collect())
        .collect()
}

/// Every row of the table: its column part's, then its heap's.
fn contents(db: &Database) -> Vec<Vec<Value>> {
    let t = db.table("t").unwrap();
    let mut out = Vec::new();
    if let Some(part) = ColumnPart::of(db, &t).unwrap() {
        let all: Vec<usize> = (0..t.schema().len()).collect();
        let types = t.schema().types();
        part.read_all(&all, |b| {
            out.extend(batch_rows(&b, &types));
            Ok(true)
        })
        .unwrap();
    }
    t.scan_rows(|_, r| {
        out.push(r);
        Ok(())
    })
    .unwrap();
    out
}

fn sorted(mut v: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    v.sort_by_key(|r| match r[0] {
        Value::Int64(k) => k,
        _ => i64::MIN,
    });
    v
}

#[test]
fn conversions_keep_every_row_and_a_merge_takes_the_delta() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let mut model: Vec<Vec<Value>> = (0..300_000).map(|n| row(n, &mut rng)).collect();
    {
        let db = Database::create(&path, opts()).unwrap();
        load(&db, &model);
        let r = rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
        assert_eq!(r.rows, model.len() as u64);
        assert_eq!(r.heap_pages_after, 0, "the delta starts empty");
        assert!(r.column_bytes_after > 0);
        let t = db.table("t").unwrap();
        assert_eq!(t.live_rows(), model.len() as u64);
        // 300,000 rows are three row groups.
        let part = ColumnPart::of(&db, &t).unwrap().unwrap();
        assert_eq!(part.plan_all().row_groups_total, 3);
    }
    // Reopened: the same rows, in the column part.
    let db = Database::open(&path, opts()).unwrap();
    assert_eq!(contents(&db), model);
    // Inserts go to the delta.
    let txn = db.begin_write().unwrap();
    let t = txn.table("t").unwrap();
    for n in 300_000..300_500 {
        let r = row(n, &mut rng);
        t.insert_row(&r).unwrap();
        model.push(r);
    }
    txn.commit().unwrap();
    assert_eq!(db.table("t").unwrap().rows(), 500, "the delta's rows");
    assert_eq!(sorted(contents(&db)), sorted(model.clone()));
    // Columns again: the delta merged into one new file; the old one gone.
    let old_file = db.table("t").unwrap().columns().unwrap().files[0]
        .file
        .clone();
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(t.rows(), 0);
    assert_eq!(t.columns().unwrap().rows(), model.len() as u64);
    assert!(
        !db.dir().join(&old_file).exists(),
        "{old_file} was replaced"
    );
    assert_eq!(sorted(contents(&db)), sorted(model.clone()));
    // And back to rows.
    rewrite(&db, "t", Format::Rows, &NoProgress).unwrap();
    let t = db.table("t").unwrap();
    assert!(t.columns().is_none());
    assert_eq!(t.rows(), model.len() as u64);
    assert_eq!(sorted(contents(&db)), sorted(model));
}

/// Whether `v op lit` holds for a non-NULL `v` (NULL passes no comparison).
fn passes(v: &Value, op: CmpOp, lit: &Value) -> bool {
    let Some(ord) = strata_access::predicate::compare(v, lit) else {
        return false;
    };
    match op {
        CmpOp::Eq => ord.is_eq(),
        CmpOp::Ne => ord.is_ne(),
        CmpOp::Lt => ord.is_lt(),
        CmpOp::Le => ord.is_le(),
        CmpOp::Gt => ord.is_gt(),
        CmpOp::Ge => ord.is_ge(),
    }
}

#[test]
fn pruning_never_drops_a_row_that_passes_and_skips_what_cannot() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(&dir.path().join("db"), opts()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
    let model: Vec<Vec<Value>> = (0..200_000).map(|n| row(n, &mut rng)).collect();
    load(&db, &model);
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    let t = db.table("t").unwrap();
    let part = ColumnPart::of(&db, &t).unwrap().unwrap();
    let types = t.schema().types();
    let ops = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];
    let mut skipped_some = false;
    for case in 0..120 {
        // One or two comparisons on k, i, d, p, flag, v or t, with literals
        // from the data (and just outside it).
        let mut conjuncts = Vec::new();
        for _ in 0..rng.random_range(1..=2) {
            let column = [0usize, 1, 2, 3, 6, 7, 8][rng.random_range(0..7)];
            let from = &model[rng.random_range(0..model.len())][column];
            let value = match (from, rng.random_range(0..4)) {
                (Value::Int64(k), 0) => Value::Int64(k + 200_000),
                (Value::Null, _) => Value::Str("note 7".into()),
                (v, _) => v.clone(),
            };
            let value = match (&types[column], value) {
                (DataType::Varchar { .. }, v @ Value::Str(_)) => v,
                (DataType::Varchar { .. }, _) => Value::Str("note 1".into()),
                (DataType::Int32, Value::Str(_)) => Value::Int32(5),
                (_, v) => v,
            };
            conjuncts.push(Comparison {
                column,
                op: ops[rng.random_range(0..ops.len())],
                value,
            });
        }
        let want: Vec<&Vec<Value>> = model
            .iter()
            .filter(|r| {
                conjuncts
                    .iter()
                    .all(|c| passes(&r[c.column], c.op, &c.value))
            })
            .collect();
        let plan = part.plan(&conjuncts).unwrap();
        if plan.rows() < plan.rows_total {
            skipped_some = true;
        }
        // The rows read, tested as the scan tests them.
        let mut got = 0usize;
        let all: Vec<usize> = (0..types.len()).collect();
        for u in &plan.units {
            part.read(u, &all, |b| {
                let cols = batch_columns(&b, &types);
                got += (0..b.num_rows())
                    .filter(|&i| {
                        conjuncts
                            .iter()
                            .all(|c| passes(&cols[c.column][i], c.op, &c.value))
                    })
                    .count();
                Ok(true)
            })
            .unwrap();
        }
        assert_eq!(got, want.len(), "case {case}: {conjuncts:?}");
    }
    assert!(skipped_some, "no case skipped a row group or a page");
    // A key range of 1,000 of the 200,000 rows reads one page of each
    // projected column: 8,192 rows.
    let narrow = [
        Comparison {
            column: 0,
            op: CmpOp::Ge,
            value: Value::Int64(50_000),
        },
        Comparison {
            column: 0,
            op: CmpOp::Lt,
            value: Value::Int64(51_000),
        },
    ];
    let plan = part.plan(&narrow).unwrap();
    assert_eq!(plan.units.len(), 1);
    assert!(plan.rows() <= 2 * 8_192, "{} rows read", plan.rows());
}

#[test]
fn a_column_file_that_is_not_the_committed_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    let file = {
        let db = Database::create(&path, opts()).unwrap();
        load(
            &db,
            &(0..10_000).map(|n| row(n, &mut rng)).collect::<Vec<_>>(),
        );
        rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
        db.table("t").unwrap().columns().unwrap().files[0]
            .file
            .clone()
    };
    let p = path.join(&file);
    let len = std::fs::metadata(&p).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(len - 100)
        .unwrap();
    let db = Database::open(&path, opts()).unwrap();
    let t = db.table("t").unwrap();
    let e = ColumnPart::of(&db, &t).err().expect("a truncated file");
    let text = e.to_string();
    assert!(text.contains(&file) && text.contains("truncated"), "{text}");
    assert_eq!(e.exit_code(), strata_storage::exit::CORRUPT);
}

#[test]
fn an_uncommitted_conversion_leaves_the_table_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
    let model: Vec<Vec<Value>> = (0..20_000).map(|n| row(n, &mut rng)).collect();
    let written = {
        let db = Database::create(&path, opts()).unwrap();
        load(&db, &model);
        // The conversion's file written, then no commit (as a crash before
        // the catalog swap leaves it).
        let (load, old) = db.begin_rewrite("t", true).unwrap();
        let file = format!("{}.parquet", db.new_column_file_name("t"));
        let w = strata_columns::file::FileWriter::create(
            db.dir(),
            file.clone(),
            strata_columns::convert::arrow_schema(old.schema()),
        )
        .unwrap();
        w.finish().unwrap();
        drop(load);
        assert!(db.dir().join(&file).exists());
        file
    };
    let db = Database::open(&path, opts()).unwrap();
    assert!(
        !db.dir().join(&written).exists(),
        "the orphan file is removed"
    );
    assert!(db.table("t").unwrap().columns().is_none());
    assert_eq!(contents(&db), model);
}

#[test]
fn a_columnar_table_refuses_what_needs_the_row_heap_saying_how_to_convert() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::create(&dir.path().join("db"), opts()).unwrap());
    let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
    load(
        &db,
        &(0..1000).map(|n| row(n, &mut rng)).collect::<Vec<_>>(),
    );
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    let e = db
        .compact("t", &Default::default(), &NoProgress)
        .map(|_| ())
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("columnar")
            && text.contains("0A000")
            && text.contains("strata compact --format rows t"),
        "{text}"
    );
    assert_eq!(e.exit_code(), strata_storage::exit::USAGE);
}

/// With `O_DIRECT` (aligned reads around every range the Parquet reader
/// asks for), the same rows as through the page cache.
#[test]
fn direct_reads_give_the_rows_buffered_reads_give() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(13);
    let model: Vec<Vec<Value>> = (0..150_000).map(|n| row(n, &mut rng)).collect();
    {
        let db = Database::create(&path, opts()).unwrap();
        load(&db, &model);
        rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    }
    let db = Database::open(
        &path,
        DbOptions {
            direct_io: true,
            ..opts()
        },
    )
    .unwrap();
    assert!(db.direct_io());
    // The first part opened reads its file's footer (then kept by the
    // database: a second opening reads none).
    let first = ColumnPart::of(&db, &db.table("t").unwrap())
        .unwrap()
        .unwrap();
    assert!(first.counters().bytes() > 0, "the footer was read");
    let again = ColumnPart::of(&db, &db.table("t").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(again.counters().bytes(), 0, "the footer was read again");
    assert_eq!(contents(&db), model);
    // A pruned read through the page index, too.
    let t = db.table("t").unwrap();
    let part = ColumnPart::of(&db, &t).unwrap().unwrap();
    let plan = part
        .plan(&[Comparison {
            column: 0,
            op: CmpOp::Ge,
            value: Value::Int64(149_000),
        }])
        .unwrap();
    let mut keys = Vec::new();
    for u in &plan.units {
        part.read(u, &[0], |b| {
            keys.extend(arrow_values(b.column(0).as_ref(), &DataType::Int64).unwrap());
            Ok(true)
        })
        .unwrap();
    }
    let want: Vec<Value> = (plan.rows_total - plan.rows()..plan.rows_total)
        .map(|k| Value::Int64(k as i64))
        .collect();
    assert_eq!(keys, want);
}

/// A second scan of the same columns in the same database reads them from
/// the cache of column-file bytes: only the files' footers again.
#[test]
fn a_second_scan_reads_from_the_chunk_cache() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(&dir.path().join("db"), opts()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(17);
    let model: Vec<Vec<Value>> = (0..150_000).map(|n| row(n, &mut rng)).collect();
    load(&db, &model);
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    let t = db.table("t").unwrap();
    let scan = || {
        let part = ColumnPart::of(&db, &t).unwrap().unwrap();
        let before = part.counters().bytes();
        let mut sum = 0i64;
        part.read_all(&[0, 3], |b| {
            for v in arrow_values(b.column(0).as_ref(), &DataType::Int64).unwrap() {
                if let Value::Int64(k) = v {
                    sum += k;
                }
            }
            Ok(true)
        })
        .unwrap();
        (part.counters().bytes() - before, sum)
    };
    let (first, a) = scan();
    let (second, b) = scan();
    let cache = db.extension(|| strata_columns::chunk_cache::ChunkCache::new(0));
    let (hits, misses) = cache.hits_misses();
    assert!(
        hits > 0 && misses > 0 && hits == misses,
        "{hits} hits, {misses} misses"
    );
    assert_eq!(a, b);
    assert_eq!(a, (0..150_000i64).sum::<i64>());
    assert!(first > 100_000, "{first} bytes read by the first scan");
    assert_eq!(second, 0, "the second scan read {second} bytes");
}
