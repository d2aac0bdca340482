//! Vertical partitioning (`split.rs`) against a model.
//!
//! A table with two indexes is split, merged, split again on other columns,
//! compacted, loaded into and changed by random steps — inserts (one at a time
//! and batched), updates (of side columns only, of the table's own columns
//! only, of both; side values that grow so the side row must move), deletes
//! (one at a time and batched), rolled-back transactions — with clean reopens
//! and crashes between them. After every step every row reads back as the
//! model's (a scan, each row by its tid, each id through its index),
//! `check_database` passes (every pointer to a side row, every side row
//! pointed to once) and the side table exists exactly while the table is
//! split, hidden from the table list. Then the refusals: what may not move to
//! a side table, and what may not be done to one directly.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proptest::prelude::*;
use strata_storage::db::NoProgress;
use strata_storage::maintenance::check::check_database;
use strata_storage::maintenance::compact::CompactOptions;
use strata_storage::row::encoding::Encoding;
use strata_storage::row::{DataType, Schema, Tid, Value, encode_key};
use strata_storage::util::proptest_cases;
use strata_storage::{Database, DbOptions, IndexSpec, TableOptions};

const SCHEMA: &str = "id BIGINT, k INT, note VARCHAR(300) NULL, body VARCHAR(100), flag BOOL NULL";
/// The columns that may move to the side table.
const MOVABLE: [&str; 3] = ["note", "body", "flag"];

type Model = BTreeMap<i64, Vec<Value>>;

fn opts() -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 64 * 8192,
        direct_io: false,
        checkpoint_log_bytes: 64 << 10,
        ..DbOptions::default()
    }
}

/// Row `id` with its values drawn from `seed`; `wide` makes the note long.
fn row(id: i64, seed: u64, wide: bool) -> Vec<Value> {
    let note = match seed % 4 {
        0 => Value::Null,
        _ if wide => Value::Str("n".repeat(150 + (seed % 150) as usize)),
        _ => Value::Str(format!("note {seed}")),
    };
    vec![
        Value::Int64(id),
        Value::Int32((seed % 50) as i32),
        note,
        Value::Str(format!("body {}", seed % 7)),
        if seed.is_multiple_of(5) {
            Value::Null
        } else {
            Value::Bool(seed.is_multiple_of(2))
        },
    ]
}

fn id_of(r: &[Value]) -> i64 {
    match r[0] {
        Value::Int64(x) => x,
        _ => unreachable!(),
    }
}

#[derive(Clone, Debug)]
enum Step {
    /// (seeds, batched)
    Insert(Vec<u64>, bool),
    /// (pick, seed, which: 0 side only, 1 own only, 2 both; wide)
    Update(Vec<(usize, u64, u8, bool)>),
    Delete(Vec<usize>, bool),
    /// Changes then a rollback.
    Abort(Vec<u64>, Vec<usize>),
    /// Split on these of MOVABLE (none: merge).
    Split(Vec<bool>),
    Compact,
    Load(Vec<u64>),
    Reopen,
    Crash,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (proptest::collection::vec(any::<u64>(), 1..30), any::<bool>())
            .prop_map(|(s, b)| Step::Insert(s, b)),
        3 => proptest::collection::vec((any::<usize>(), any::<u64>(), 0u8..3, any::<bool>()), 1..20)
            .prop_map(Step::Update),
        2 => (proptest::collection::vec(any::<usize>(), 1..15), any::<bool>())
            .prop_map(|(p, b)| Step::Delete(p, b)),
        1 => (proptest::collection::vec(any::<u64>(), 0..10), proptest::collection::vec(any::<usize>(), 0..10))
            .prop_map(|(i, d)| Step::Abort(i, d)),
        2 => proptest::collection::vec(any::<bool>(), 3).prop_map(Step::Split),
        1 => Just(Step::Compact),
        1 => proptest::collection::vec(any::<u64>(), 1..40).prop_map(Step::Load),
        1 => Just(Step::Reopen),
        1 => Just(Step::Crash),
    ]
}

fn create(path: &Path, rows: usize) -> (Database, Model) {
    let db = Database::create(path, opts()).unwrap();
    let mut load = db
        .begin_create_load(
            "t",
            Schema::parse(SCHEMA).unwrap(),
            TableOptions {
                fill_factor: 1.0,
                segment_pages: 16,
            },
            vec![
                IndexSpec::new("t_id", &["id"]),
                IndexSpec::new("t_k", &["k"]),
            ],
        )
        .unwrap();
    let mut model = Model::new();
    for i in 0..rows {
        let r = row(i as i64, i as u64 * 7919, i % 3 == 0);
        load.append(&r).unwrap();
        model.insert(i as i64, r);
    }
    load.commit(&NoProgress).unwrap();
    (db, model)
}

/// Every way of reading the table agrees with the model; returns each id's tid.
fn verify(db: &Database, model: &Model, split: &[&str], step: usize) -> BTreeMap<i64, Tid> {
    let t = db.table("t").unwrap();
    let mut tids = BTreeMap::new();
    let mut seen = Model::new();
    t.scan_rows(|tid, r| {
        tids.insert(id_of(&r), tid);
        seen.insert(id_of(&r), r);
        Ok(())
    })
    .unwrap();
    assert_eq!(&seen, model, "step {step}: scan");
    let ix = t.index("t_id").unwrap();
    for (id, want) in model {
        assert_eq!(
            t.get_row(tids[id]).unwrap().as_ref(),
            Some(want),
            "step {step}: row {id}"
        );
        let mut key = Vec::new();
        encode_key(&[DataType::Int64], &[Value::Int64(*id)], &mut key);
        assert_eq!(
            ix.btree.lookup(&key).unwrap(),
            vec![tids[id]],
            "step {step}: id {id}"
        );
    }
    check_database(db, &NoProgress).unwrap_or_else(|e| panic!("step {step}: {e}"));
    // The side table exists while, and only while, the table is split.
    let side: Vec<String> = t
        .side_columns()
        .iter()
        .map(|&c| t.schema().columns[c].name.clone())
        .collect();
    assert_eq!(side, split, "step {step}: side columns");
    let cat = db.catalog();
    assert_eq!(
        cat.tables.contains_key("t.side"),
        !split.is_empty(),
        "step {step}"
    );
    assert_eq!(db.table_names(), vec!["t".to_string()], "step {step}");
    if let Some(s) = t.side_table() {
        assert_eq!(s.rows(), model.len() as u64, "step {step}: side rows");
    }
    tids
}

fn pick(model: &Model, i: usize) -> Option<i64> {
    (!model.is_empty()).then(|| *model.keys().nth(i % model.len()).unwrap())
}

fn run(initial: usize, steps: &[Step]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let (mut db, mut model) = create(&path, initial);
    let mut split: Vec<&str> = vec!["note"];
    db.split("t", &["note".to_string()], &NoProgress).unwrap();
    let mut tids = verify(&db, &model, &split, 0);
    let mut next_id = 1 << 30;
    for (n, s) in steps.iter().enumerate() {
        let n = n + 1;
        match s {
            Step::Insert(seeds, batched) => {
                let txn = db.begin_write().unwrap();
                let t = txn.table("t").unwrap();
                let rows: Vec<Vec<Value>> = seeds
                    .iter()
                    .map(|&s| {
                        next_id += 1;
                        row(next_id, s, s % 3 == 0)
                    })
                    .collect();
                if *batched {
                    t.insert_rows(&rows).unwrap();
                } else {
                    for r in &rows {
                        t.insert_row(r).unwrap();
                    }
                }
                txn.commit().unwrap();
                for r in rows {
                    model.insert(id_of(&r), r);
                }
            }
            Step::Update(changes) => {
                let txn = db.begin_write().unwrap();
                let t = txn.table("t").unwrap();
                let mut touched = BTreeSet::new();
                for &(i, seed, which, wide) in changes {
                    let Some(id) = pick(&model, i) else { break };
                    if !touched.insert(id) {
                        continue;
                    }
                    let old = model[&id].clone();
                    let fresh = row(id, seed, wide);
                    let mut r = old.clone();
                    for c in 1..5 {
                        let side = split
                            .contains(&Schema::parse(SCHEMA).unwrap().columns[c].name.as_str());
                        if which == 2 || (which == 0) == side {
                            r[c] = fresh[c].clone();
                        }
                    }
                    let tid = t.update_row(tids[&id], &r).unwrap();
                    tids.insert(id, tid);
                    model.insert(id, r);
                }
                txn.commit().unwrap();
            }
            Step::Delete(picks, batched) => {
                let txn = db.begin_write().unwrap();
                let t = txn.table("t").unwrap();
                let gone: BTreeSet<i64> = picks.iter().filter_map(|&i| pick(&model, i)).collect();
                if *batched {
                    let ts: Vec<Tid> = gone.iter().map(|id| tids[id]).collect();
                    t.delete_rows(&ts).unwrap();
                } else {
                    for id in &gone {
                        t.delete_row(tids[id]).unwrap();
                    }
                }
                txn.commit().unwrap();
                for id in gone {
                    model.remove(&id);
                }
            }
            Step::Abort(ins, del) => {
                let txn = db.begin_write().unwrap();
                let t = txn.table("t").unwrap();
                let gone: BTreeSet<i64> = del.iter().filter_map(|&i| pick(&model, i)).collect();
                for id in &gone {
                    t.delete_row(tids[id]).unwrap();
                }
                for &s in ins {
                    next_id += 1;
                    t.insert_row(&row(next_id, s, true)).unwrap();
                }
                drop(t);
                drop(txn);
            }
            Step::Split(which) => {
                split = MOVABLE
                    .iter()
                    .zip(which)
                    .filter(|(_, w)| **w)
                    .map(|(c, _)| *c)
                    .collect();
                let cols: Vec<String> = split.iter().map(|c| c.to_string()).collect();
                let rep = db.split("t", &cols, &NoProgress).unwrap();
                assert_eq!(rep.rows, model.len() as u64, "step {n}");
                assert_eq!(rep.side_columns, cols, "step {n}");
            }
            Step::Compact => {
                db.compact("t", &CompactOptions::default(), &NoProgress)
                    .unwrap();
                let t = db.table("t").unwrap();
                for &c in t.side_columns() {
                    assert_eq!(t.encodings()[c], Encoding::Side, "step {n}");
                }
            }
            Step::Load(seeds) => {
                let mut load = db.begin_load("t").unwrap();
                for &s in seeds {
                    next_id += 1;
                    let r = row(next_id, s, s.is_multiple_of(2));
                    load.append(&r).unwrap();
                    model.insert(next_id, r);
                }
                load.commit(&NoProgress).unwrap();
            }
            Step::Reopen => {
                drop(db);
                db = Database::open(&path, opts()).unwrap();
            }
            Step::Crash => {
                db.crash();
                db = Database::open(&path, opts()).unwrap();
            }
        }
        tids = verify(&db, &model, &split, n);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(24)))]

    #[test]
    fn rows_match_the_model_through_splits_changes_and_crashes(
        initial in prop_oneof![0usize..30, 300usize..600],
        steps in proptest::collection::vec(step(), 1..16),
    ) {
        run(initial, &steps);
    }
}

#[test]
fn a_split_reads_fewer_pages_for_the_columns_it_keeps_and_merges_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let (db, model) = create(&path, 3000);
    let before = db.table("t").unwrap().heap().num_pages();
    let rep = db
        .split("t", &["note".into(), "body".into()], &NoProgress)
        .unwrap();
    assert_eq!(rep.pages_before, before);
    let t = db.table("t").unwrap();
    let side = t.side_table().unwrap().clone();
    // The table's rows keep id, k, flag and a 6-byte pointer.
    assert!(
        rep.pages_after * 3 < before,
        "{} pages of {before}",
        rep.pages_after
    );
    assert_eq!(rep.side_pages_after, side.heap().num_pages());
    assert_eq!(side.schema().names(), "note, body");
    verify(&db, &model, &["note", "body"], 0);
    let side_file = db.catalog().tables["t.side"].heap_file.clone();
    assert!(path.join(format!("{side_file}.0000")).exists());
    // Merged back: one heap again, the side table's files gone.
    let rep = db.split("t", &[], &NoProgress).unwrap();
    assert_eq!(rep.side_pages_after, 0);
    assert!(rep.pages_after >= before - 1, "{rep:?}");
    verify(&db, &model, &[], 1);
    assert!(!path.join(format!("{side_file}.0000")).exists());
    // Dropping a split table drops its side table.
    db.split("t", &["body".into()], &NoProgress).unwrap();
    let side_file = db.catalog().tables["t.side"].heap_file.clone();
    db.drop_table("t").unwrap();
    assert!(db.catalog().tables.is_empty());
    assert!(!path.join(format!("{side_file}.0000")).exists());
}

/// An update of side columns only writes the side row's page, not the
/// table's: the write density the paper splits often updated columns off
/// for. Counted by the pages each commit logs.
#[test]
fn an_update_of_side_columns_only_writes_side_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let (db, mut model) = create(&path, 2000);
    db.split("t", &["note".into(), "flag".into()], &NoProgress)
        .unwrap();
    let tids = verify(&db, &model, &["note", "flag"], 0);
    let update = |id: i64, r: &[Value]| {
        let txn = db.begin_write().unwrap();
        let t = txn.table("t").unwrap();
        assert_eq!(t.update_row(tids[&id], r).unwrap(), tids[&id]);
        drop(t);
        txn.commit().unwrap().pages
    };
    // Side columns only, the same sizes: one page, the side row's.
    let upper = |v: &Value| match v {
        Value::Str(x) => Value::Str(x.to_uppercase()),
        v => panic!("{v:?}"),
    };
    let mut r = model[&5].clone();
    r[2] = upper(&r[2]);
    r[4] = Value::Bool(true);
    assert_eq!(update(5, &r), 1);
    model.insert(5, r);
    // The table's own column: its page (and no side page).
    let mut r = model[&6].clone();
    r[3] = upper(&r[3]);
    assert_eq!(update(6, &r), 1);
    model.insert(6, r);
    // Both: two pages.
    let mut r = model[&7].clone();
    r[2] = Value::Null;
    r[3] = upper(&r[3]);
    assert_eq!(update(7, &r), 2);
    model.insert(7, r);
    verify(&db, &model, &["note", "flag"], 1);
}

#[test]
fn what_cannot_go_to_a_side_table_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let (db, model) = create(&path, 50);
    let e = |r: strata_storage::Result<_>| match r {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    };
    let msg = e(db.split("t", &["k".into()], &NoProgress).map(|_| ()));
    assert!(
        msg.contains("t_k") && msg.contains("key or cached column"),
        "{msg}"
    );
    let msg = e(db.split("t", &["nope".into()], &NoProgress).map(|_| ()));
    assert!(msg.contains("unknown column 'nope'"), "{msg}");
    let msg = e(db
        .split("t", &["note".into(), "note".into()], &NoProgress)
        .map(|_| ()));
    assert!(msg.contains("named twice"), "{msg}");
    db.split("t", &["note".into()], &NoProgress).unwrap();
    // No index over a side column, nor caching one.
    let msg = e(db.create_index("t", IndexSpec::new("t_note", &["note"]), &NoProgress));
    assert!(msg.contains("side table"), "{msg}");
    let msg = e(db.set_index_cache("t", "t_id", &["note"]));
    assert!(msg.contains("side table"), "{msg}");
    // The side table changes only through its table.
    let msg = e(db.begin_load("t.side").map(|_| ()));
    assert!(msg.contains("changes only through it"), "{msg}");
    let msg = e(db.drop_table("t.side"));
    assert!(msg.contains("changes only through it"), "{msg}");
    // Nor are its rows rewritten or moved on their own (the pointers would
    // dangle).
    let msg = e(db
        .compact("t.side", &CompactOptions::default(), &NoProgress)
        .map(|_| ()));
    assert!(msg.contains("changes only through it"), "{msg}");
    let msg = e(db
        .compact(
            "t",
            &CompactOptions {
                semantic_id: Some("note".into()),
                ..CompactOptions::default()
            },
            &NoProgress,
        )
        .map(|_| ()));
    assert!(msg.contains("side table"), "{msg}");
    // A row whose side part is bad changes nothing.
    let txn = db.begin_write().unwrap();
    let t = txn.table("t").unwrap();
    let mut bad = row(1 << 40, 1, false);
    bad[2] = Value::Str("x".repeat(301));
    let msg = e(t.insert_row(&bad).map(|_| ()));
    assert!(msg.contains("note"), "{msg}");
    drop(t);
    txn.commit().unwrap();
    verify(&db, &model, &["note"], 0);
}
