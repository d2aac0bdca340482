//! Hot/cold clustering against a model, by property: random sequences of
//! lookups, inserts (often repeating a key, hot or not), updates that change
//! keys or move rows, deletes, aborted transactions, clusterings with and
//! without a hot partition, clean reopens and crashes. After every step each
//! key's lookup (`Table::lookup`: the hot partition first) returns exactly
//! the model's rows for it, and `check_database` (which checks the partition's
//! invariant) passes.

use std::collections::BTreeMap;

use proptest::prelude::*;
use strata_storage::db::NoProgress;
use strata_storage::maintenance::check::check_database;
use strata_storage::maintenance::cluster::ClusterOptions;
use strata_storage::row::{DataType, Schema, Tid, Value, encode_key};
use strata_storage::util::proptest_cases;
use strata_storage::{Database, DbOptions, IndexSpec, Table, TableOptions};

/// Keys are drawn from 0..KEYS, so they repeat.
const KEYS: i64 = 60;

type Model = BTreeMap<Tid, (i64, usize)>;

fn opts() -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 64 * 8192,
        direct_io: false,
        checkpoint_log_bytes: 256 << 10,
        ..DbOptions::default()
    }
}

fn row(k: i64, len: usize) -> Vec<Value> {
    vec![Value::Int64(k), Value::Str("v".repeat(len))]
}

fn key(k: i64) -> Vec<u8> {
    let mut out = Vec::new();
    encode_key(&[DataType::Int64], &[Value::Int64(k)], &mut out);
    out
}

#[derive(Clone, Debug)]
enum Step {
    /// Look these keys up, each `times` times (counted accesses).
    Read(Vec<i64>, u8),
    Insert(Vec<(i64, usize)>),
    /// Rows picked by position among the live ones: new key and length.
    Update(Vec<(usize, i64, usize)>),
    Delete(Vec<usize>),
    /// A transaction of inserts and deletes, rolled back.
    Abort(Vec<(i64, usize)>, Vec<usize>),
    Cluster {
        partition: bool,
        share: f64,
        min_count: u32,
    },
    Reopen,
    Crash,
}

fn step() -> impl Strategy<Value = Step> {
    let len = 1usize..300;
    prop_oneof![
        4 => (proptest::collection::vec(0..KEYS, 1..12), 1u8..5).prop_map(|(k, t)| Step::Read(k, t)),
        3 => proptest::collection::vec((0..KEYS, len.clone()), 1..20).prop_map(Step::Insert),
        2 => proptest::collection::vec((any::<usize>(), 0..KEYS, len.clone()), 1..8).prop_map(Step::Update),
        2 => proptest::collection::vec(any::<usize>(), 1..10).prop_map(Step::Delete),
        1 => (
            proptest::collection::vec((0..KEYS, len), 0..6),
            proptest::collection::vec(any::<usize>(), 0..6)
        ).prop_map(|(i, d)| Step::Abort(i, d)),
        3 => (any::<bool>(), prop_oneof![Just(1.0), Just(0.5), Just(0.2)], 1u32..4)
            .prop_map(|(partition, share, min_count)| Step::Cluster { partition, share, min_count }),
        1 => Just(Step::Reopen),
        1 => Just(Step::Crash),
    ]
}

fn create(dir: &std::path::Path, model: &mut Model) -> Database {
    let db = Database::create(dir, opts()).unwrap();
    let mut load = db
        .begin_create_load(
            "t",
            Schema::parse("k BIGINT NOT NULL, v VARCHAR(300)").unwrap(),
            TableOptions {
                fill_factor: 1.0,
                segment_pages: 16,
            },
            vec![IndexSpec::new("t_k", &["k"])],
        )
        .unwrap();
    for i in 0..400 {
        let (k, len) = (i % KEYS, 20 + (i as usize * 7) % 200);
        let tid = load.append(&row(k, len)).unwrap();
        model.insert(tid, (k, len));
    }
    load.commit(&NoProgress).unwrap();
    db
}

fn pick(model: &Model, i: usize) -> Option<Tid> {
    (!model.is_empty()).then(|| *model.keys().nth(i % model.len()).unwrap())
}

/// Every key's lookup answers the model's rows, and the database checks.
fn verify(t: &Table, db: &Database, model: &Model) {
    // Every access counted, so a case replays the same clusterings.
    t.heat().set_every(1);
    let ix = t.index("t_k").unwrap();
    let mut want: BTreeMap<i64, Vec<(Tid, usize)>> = BTreeMap::new();
    for (&tid, &(k, len)) in model {
        want.entry(k).or_default().push((tid, len));
    }
    for k in 0..KEYS {
        let mut got: Vec<(Tid, usize)> = t
            .lookup(ix, &key(k))
            .unwrap()
            .into_iter()
            .map(|tid| {
                let r = t.get_row(tid).unwrap().expect("a looked-up tuple exists");
                assert_eq!(r[0], Value::Int64(k), "lookup of {k} gave {tid:?}");
                let Value::Str(v) = &r[1] else { panic!() };
                (tid, v.len())
            })
            .collect();
        got.sort_unstable();
        let w = want.get(&k).cloned().unwrap_or_default();
        assert_eq!(got, w, "key {k}");
    }
    check_database(db, &NoProgress).unwrap();
}

fn run(steps: &[Step]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut model = Model::new();
    let mut db = create(&path, &mut model);
    for s in steps {
        let t = db.table("t").unwrap();
        t.heat().set_every(1);
        match s {
            Step::Read(keys, times) => {
                let ix = t.index("t_k").unwrap();
                for _ in 0..*times {
                    for &k in keys {
                        t.lookup(ix, &key(k)).unwrap();
                    }
                }
            }
            Step::Insert(rows) => {
                let txn = db.begin_write().unwrap();
                let vals: Vec<Vec<Value>> = rows.iter().map(|&(k, l)| row(k, l)).collect();
                let tids = t.insert_rows(&vals).unwrap();
                txn.commit().unwrap();
                for (tid, &(k, l)) in tids.into_iter().zip(rows) {
                    model.insert(tid, (k, l));
                }
            }
            Step::Update(changes) => {
                let txn = db.begin_write().unwrap();
                for &(i, k, l) in changes {
                    let Some(tid) = pick(&model, i) else { break };
                    let new = t.update_row(tid, &row(k, l)).unwrap();
                    model.remove(&tid);
                    model.insert(new, (k, l));
                }
                txn.commit().unwrap();
            }
            Step::Delete(picks) => {
                let txn = db.begin_write().unwrap();
                for &i in picks {
                    let Some(tid) = pick(&model, i) else { break };
                    t.delete_row(tid).unwrap();
                    model.remove(&tid);
                }
                txn.commit().unwrap();
            }
            Step::Abort(ins, dels) => {
                let txn = db.begin_write().unwrap();
                let mut gone = std::collections::BTreeSet::new();
                for &i in dels {
                    if let Some(tid) = pick(&model, i)
                        && gone.insert(tid)
                    {
                        t.delete_row(tid).unwrap();
                    }
                }
                for &(k, l) in ins {
                    t.insert_row(&row(k, l)).unwrap();
                }
                drop(txn);
            }
            Step::Cluster {
                partition,
                share,
                min_count,
            } => {
                let before: Vec<(i64, usize)> = model.values().copied().collect();
                let mut moved: BTreeMap<(i64, usize), usize> = BTreeMap::new();
                for v in &before {
                    *moved.entry(*v).or_default() += 1;
                }
                db.cluster_hot(
                    "t",
                    &ClusterOptions {
                        partition: partition.then(|| "t_k".to_string()),
                        share: *share,
                        min_count: *min_count,
                        batch: Some(7),
                        ..ClusterOptions::default()
                    },
                )
                .unwrap();
                // Tuples moved: the model follows the heap (same rows).
                let mut now = Model::new();
                t.scan_rows(|tid, r| {
                    let (Value::Int64(k), Value::Str(v)) = (&r[0], &r[1]) else {
                        panic!()
                    };
                    now.insert(tid, (*k, v.len()));
                    Ok(())
                })
                .unwrap();
                let mut after: BTreeMap<(i64, usize), usize> = BTreeMap::new();
                for v in now.values() {
                    *after.entry(*v).or_default() += 1;
                }
                assert_eq!(after, moved, "clustering changed the rows");
                model = now;
            }
            Step::Reopen => {
                drop(t);
                drop(db);
                db = Database::open(&path, opts()).unwrap();
            }
            Step::Crash => {
                drop(t);
                db.crash();
                db = Database::open(&path, opts()).unwrap();
            }
        }
        let t = db.table("t").unwrap();
        verify(&t, &db, &model);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(24)))]

    #[test]
    fn lookups_match_the_model_through_clusterings_changes_and_crashes(
        steps in proptest::collection::vec(step(), 1..25)
    ) {
        run(&steps);
    }
}
