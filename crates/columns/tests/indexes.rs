//! Indexes of a columnar table against a model: a lookup through an
//! index's tree over the column rows finds exactly the live rows the
//! comparisons keep (deleted rows left out, inserted ones in the delta's
//! tree), reads only the pages holding them, gives up where min/max
//! pruning reads less, and the trees follow the part through merges,
//! conversions, crashes and reopens. What a columnar index refuses, it
//! refuses clearly.

use std::collections::BTreeSet;

use super::*;
use strata_columns::index::{self, create_index};
use strata_storage::maintenance::check::check_database;

/// Row `n` with `u` (column 1, INT) a key in no order: a permutation of
/// 0..rows/3, each value three times, so that min/max pruning on it keeps
/// every page.
fn shuffled(rows: usize, rng: &mut rand::rngs::SmallRng) -> Vec<Vec<Value>> {
    let mut out: Vec<Vec<Value>> = (0..rows as i64).map(|n| row(n, rng)).collect();
    let mut keys: Vec<i32> = (0..rows as i32).map(|n| n / 3).collect();
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.random_range(0..=i));
    }
    for (r, k) in out.iter_mut().zip(keys) {
        r[1] = Value::Int32(k);
    }
    out
}

fn eq(column: usize, v: Value) -> Comparison {
    Comparison {
        column,
        op: CmpOp::Eq,
        value: v,
    }
}

/// The rows (all columns) a plan through the index reads that pass
/// `conjuncts`, and the probe.
fn lookup(db: &Database, conjuncts: &[Comparison]) -> (Vec<Vec<Value>>, Option<index::Probe>, u64) {
    let t = db.table("t").unwrap();
    let part = ColumnPart::of(db, &t).unwrap().unwrap();
    let all: Vec<usize> = (0..t.schema().len()).collect();
    let types = t.schema().types();
    let (plan, probe) = index::plan(&part, &t, conjuncts, &all).unwrap();
    let before = part.counters().bytes();
    let mut rows = Vec::new();
    for u in &plan.units {
        part.read(u, &all, |b| {
            rows.extend(batch_rows(&b, &types).into_iter().filter(|r| {
                conjuncts
                    .iter()
                    .all(|c| passes(&r[c.column], c.op, &c.value))
            }));
            Ok(true)
        })
        .unwrap();
    }
    (rows, probe, part.counters().bytes() - before)
}

#[test]
fn lookups_through_a_column_tree_find_the_live_rows_and_read_only_their_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(31);
    let model = shuffled(200_000, &mut rng);
    let db = Database::create(&path, opts()).unwrap();
    load(&db, &model);
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    create_index(&db, "t", IndexSpec::new("t_u", &["i"]), &NoProgress).unwrap();
    let t = db.table("t").unwrap();
    let ix = t.index("t_u").unwrap();
    assert_eq!(ix.column_tree().unwrap().len(), 200_000);
    assert_eq!(ix.btree.len(), 0, "the delta's tree is empty");

    // Point lookups: three rows each, against the model; the pruned scan
    // of the same comparison reads every page of the column.
    let t_all: Vec<usize> = (0..t.schema().len()).collect();
    let part = ColumnPart::of(&db, &t).unwrap().unwrap();
    let pruned_bytes = part.plan_bytes(&part.plan(&[eq(1, Value::Int32(5))]).unwrap(), &t_all);
    for _ in 0..40 {
        let k = rng.random_range(0..66_666);
        let c = [eq(1, Value::Int32(k))];
        let (mut got, probe, bytes) = lookup(&db, &c);
        let mut want: Vec<Vec<Value>> = model
            .iter()
            .filter(|r| r[1] == Value::Int32(k))
            .cloned()
            .collect();
        got.sort_by_key(|r| format!("{r:?}"));
        want.sort_by_key(|r| format!("{r:?}"));
        assert_eq!(got, want, "key {k}");
        let probe = probe.expect("the index was tried");
        assert_eq!(probe.positions.as_ref().map(Vec::len), Some(3), "{probe}");
        // One page of each column per row (and a dictionary page of the
        // columns that have one; reads closer than 64 KiB are one, so in a
        // file this small some gaps between them too), where the pruned
        // scan reads them all.
        assert!(
            bytes * 2 < pruned_bytes,
            "key {k}: {bytes} bytes read through the index, {pruned_bytes} by the pruned scan"
        );
    }
    // A range of 10 keys (30 rows): the index. 1% of the keys: 2,000 rows
    // spread over every page, so the pruned scan (no index tried).
    let range = |lo: i32, hi: i32| {
        [
            Comparison {
                column: 1,
                op: CmpOp::Ge,
                value: Value::Int32(lo),
            },
            Comparison {
                column: 1,
                op: CmpOp::Lt,
                value: Value::Int32(hi),
            },
        ]
    };
    let (got, probe, _) = lookup(&db, &range(1000, 1010));
    assert_eq!(got.len(), 30);
    let probe = probe.unwrap();
    assert_eq!(
        probe.positions.as_ref().map(|p| p.len()),
        Some(30),
        "{probe}"
    );
    // 1% of the keys and half of them: rows on every page, so the lookup
    // gives up within its first leaves and the pruned scan runs.
    let half = [Comparison {
        column: 1,
        op: CmpOp::Lt,
        value: Value::Int32(33_333),
    }];
    for (c, rows) in [(&range(1000, 1666)[..], 666 * 3), (&half[..], 33_333 * 3)] {
        let (got, probe, _) = lookup(&db, c);
        assert_eq!(got.len(), rows);
        let probe = probe.unwrap();
        assert!(probe.positions.is_none() && probe.leaves <= 2, "{probe}");
        assert!(probe.to_string().contains("given up"), "{probe}");
    }

    // Deleted rows are left out; rows inserted after go to the delta's
    // tree (the heap), not the column tree.
    let k = model[10][1].clone();
    let gone: Vec<u64> = model
        .iter()
        .enumerate()
        .filter(|(_, r)| r[1] == k)
        .map(|(i, _)| i as u64)
        .take(2)
        .collect();
    let txn = db.begin_write().unwrap();
    let tt = txn.table("t").unwrap();
    tt.delete_column_rows(&gone).unwrap();
    let mut extra = row(900_000, &mut rng);
    extra[1] = k.clone();
    tt.insert_row(&extra).unwrap();
    txn.commit().unwrap();
    let (got, probe, _) = lookup(&db, &[eq(1, k.clone())]);
    assert_eq!(got.len(), 1, "one column row left of three");
    assert_eq!(probe.unwrap().positions.unwrap().len(), 1);
    let t = db.table("t").unwrap();
    let ix = t.index("t_u").unwrap();
    assert_eq!(ix.btree.len(), 1, "the inserted row's entry is the delta's");
    assert_eq!(ix.column_tree().unwrap().len(), 200_000, "never changed");
    let lines = index::verify(&ColumnPart::of(&db, &t).unwrap().unwrap(), &t, &NoProgress).unwrap();
    assert_eq!(lines, vec![("t_u".to_string(), 199_998)]);
    check_database(&db, &NoProgress).unwrap();
}

#[test]
fn column_trees_follow_the_part_through_merges_conversions_crashes_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(32);
    let model = shuffled(60_000, &mut rng);
    let tree_file = |db: &Database| {
        db.table("t").unwrap().columns().unwrap().indexes[0]
            .file
            .clone()
    };
    let exists = |db: &Database, f: &str| db.dir().join(format!("{f}.0000")).exists();
    // A row table with an index converts to columns with it.
    let first = {
        let db = Database::create(&path, opts()).unwrap();
        load(&db, &model);
        db.create_index("t", IndexSpec::new("t_u", &["i"]), &NoProgress)
            .unwrap();
        rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
        let f = tree_file(&db);
        assert!(exists(&db, &f));
        let txn = db.begin_write().unwrap();
        txn.table("t")
            .unwrap()
            .delete_column_rows(&[0, 1, 2])
            .unwrap();
        txn.commit().unwrap();
        db.crash();
        f
    };
    // Reopened after a crash: the same tree, the deletes redone.
    let db = Database::open(&path, opts()).unwrap();
    assert_eq!(tree_file(&db), first);
    let k = model[1][1].clone();
    let want = model[3..].iter().filter(|r| r[1] == k).count();
    assert_eq!(lookup(&db, &[eq(1, k.clone())]).0.len(), want);
    // An append load keeps the tree; the delta's tree takes its rows.
    let mut l = db.begin_load("t").unwrap();
    let mut added = row(500_000, &mut rng);
    added[1] = k.clone();
    l.append(&added).unwrap();
    l.commit(&NoProgress).unwrap();
    assert_eq!(tree_file(&db), first);
    assert_eq!(db.table("t").unwrap().index("t_u").unwrap().btree.len(), 1);
    // A merge builds a new tree over the new file; the old tree's file goes.
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    let second = tree_file(&db);
    assert_ne!(second, first);
    assert!(!exists(&db, &first), "{first} removed");
    assert!(exists(&db, &second));
    let t = db.table("t").unwrap();
    let ix = t.index("t_u").unwrap();
    assert_eq!(ix.column_tree().unwrap().len(), 60_000 - 3 + 1);
    assert_eq!(ix.btree.len(), 0);
    let (got, probe, _) = lookup(&db, &[eq(1, k.clone())]);
    assert_eq!(got.len(), want + 1);
    assert!(probe.unwrap().positions.is_some());
    check_database(&db, &NoProgress).unwrap();
    let _ = ix;
    drop(t);
    // Back to rows: one tree again, the column tree's file gone; the index
    // answers as before.
    rewrite(&db, "t", Format::Rows, &NoProgress).unwrap();
    assert!(!exists(&db, &second), "{second} removed");
    let t = db.table("t").unwrap();
    assert!(t.index("t_u").unwrap().column_tree().is_none());
    assert_eq!(t.index("t_u").unwrap().btree.len(), 60_000 - 3 + 1);
    check_database(&db, &NoProgress).unwrap();
    drop(t);
    // Dropping the index of a columnar table removes both trees.
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    let third = tree_file(&db);
    db.drop_index("t", "t_u").unwrap();
    assert!(!exists(&db, &third), "{third} removed");
    assert!(db.table("t").unwrap().columns().unwrap().indexes.is_empty());
    drop(db);
    let db = Database::open(&path, opts()).unwrap();
    assert_eq!(db.table("t").unwrap().live_rows(), 60_000 - 3 + 1);
}

#[test]
fn random_lookups_deletes_and_inserts_match_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(&dir.path().join("db"), opts()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(33);
    let part = shuffled(50_000, &mut rng);
    load(&db, &part);
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    create_index(&db, "t", IndexSpec::new("t_u", &["i"]), &NoProgress).unwrap();
    create_index(&db, "t", IndexSpec::new("t_dk", &["d", "k"]), &NoProgress).unwrap();
    let mut gone: BTreeSet<u64> = BTreeSet::new();
    let mut delta: Vec<Vec<Value>> = Vec::new();
    let ops = [CmpOp::Eq, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge];
    let mut few_checked = 0;
    for step in 0..60 {
        if step % 3 == 0 {
            let txn = db.begin_write().unwrap();
            let t = txn.table("t").unwrap();
            let these: BTreeSet<u64> = (0..rng.random_range(1..200))
                .map(|_| rng.random_range(0..part.len() as u64))
                .filter(|p| !gone.contains(p))
                .collect();
            t.delete_column_rows(&these.iter().copied().collect::<Vec<_>>())
                .unwrap();
            gone.extend(these);
            for _ in 0..rng.random_range(0..20) {
                let mut r = row(1_000_000 + step as i64 * 100 + delta.len() as i64, &mut rng);
                r[1] = Value::Int32(rng.random_range(0..16_666));
                t.insert_row(&r).unwrap();
                delta.push(r);
            }
            txn.commit().unwrap();
        }
        let (column, from) = if rng.random_bool(0.5) {
            (1, Value::Int32(rng.random_range(0..16_700)))
        } else {
            (2, part[rng.random_range(0..part.len())][2].clone())
        };
        let mut conjuncts = vec![Comparison {
            column,
            op: ops[rng.random_range(0..ops.len())],
            value: from,
        }];
        if rng.random_bool(0.3) {
            conjuncts.push(Comparison {
                column: 0,
                op: CmpOp::Lt,
                value: Value::Int64(rng.random_range(0..60_000)),
            });
        }
        let passes_all = |r: &Vec<Value>| {
            conjuncts
                .iter()
                .all(|c| passes(&r[c.column], c.op, &c.value))
        };
        let want = part
            .iter()
            .enumerate()
            .filter(|(i, r)| !gone.contains(&(*i as u64)) && passes_all(r))
            .count();
        let (got, _, _) = lookup(&db, &conjuncts);
        assert_eq!(got.len(), want, "step {step}: {conjuncts:?}");
        assert!(got.iter().all(passes_all));
        // A change's candidates straight from the tree
        // (`index::few_positions`, `ColumnPart::plan_positions`): live
        // positions, and among their rows exactly the ones found above.
        let tw = db.table("t").unwrap();
        let now = ColumnPart::of(&db, &tw).unwrap().unwrap();
        if let Some(positions) = index::few_positions(&now, &tw, &conjuncts, 1024).unwrap() {
            assert!(positions.windows(2).all(|w| w[0] < w[1]));
            assert!(positions.iter().all(|p| !gone.contains(p)), "step {step}");
            let all: Vec<usize> = (0..tw.schema().len()).collect();
            let types = tw.schema().types();
            let mut few = Vec::new();
            let plan = now.plan_positions(&positions);
            assert_eq!(
                plan.units.iter().map(|u| u.rows).sum::<u64>(),
                positions.len() as u64
            );
            for u in &plan.units {
                now.read(u, &all, |b| {
                    few.extend(batch_rows(&b, &types));
                    Ok(true)
                })
                .unwrap();
            }
            assert_eq!(few.len(), positions.len(), "step {step}");
            let kept: Vec<Vec<Value>> = few.into_iter().filter(|r| passes_all(r)).collect();
            assert_eq!(
                sorted(kept),
                sorted(got.clone()),
                "step {step}: {conjuncts:?}"
            );
            few_checked += 1;
        }
        // The delta's rows, through the heap as a row table finds them.
        let t = db.table("t").unwrap();
        let mut in_delta = 0;
        t.scan_rows(|_, r| {
            in_delta += usize::from(passes_all(&r));
            Ok(())
        })
        .unwrap();
        assert_eq!(in_delta, delta.iter().filter(|r| passes_all(r)).count());
    }
    // Equalities on `i` name three rows at most: the path was taken.
    assert!(few_checked > 5, "{few_checked} lookups named few rows");
    let t = db.table("t").unwrap();
    let checked =
        index::verify(&ColumnPart::of(&db, &t).unwrap().unwrap(), &t, &NoProgress).unwrap();
    assert_eq!(checked.len(), 2);
    assert!(
        checked
            .iter()
            .all(|(_, n)| *n == (part.len() - gone.len()) as u64)
    );
    check_database(&db, &NoProgress).unwrap();
}

#[test]
fn what_a_columnar_index_refuses_it_refuses_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(&dir.path().join("db"), opts()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(34);
    load(
        &db,
        &(0..5000).map(|n| row(n, &mut rng)).collect::<Vec<_>>(),
    );
    db.create_index("t", IndexSpec::new("t_k", &["k"]).unique(), &NoProgress)
        .unwrap();
    // A unique index: refused for the conversion, naming it.
    let e = rewrite(&db, "t", Format::Columns, &NoProgress).unwrap_err();
    assert!(
        e.to_string().contains("unique index (t_k") && e.to_string().contains("0A000"),
        "{e}"
    );
    db.drop_index("t", "t_k").unwrap();
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    for (e, says) in [
        (
            create_index(
                &db,
                "t",
                IndexSpec::new("t_k", &["k"]).unique(),
                &NoProgress,
            )
            .unwrap_err()
            .to_string(),
            "a unique index",
        ),
        (
            create_index(
                &db,
                "t",
                IndexSpec::new("t_k", &["k"]).cache(&["d"]),
                &NoProgress,
            )
            .unwrap_err()
            .to_string(),
            "an index cache",
        ),
        (
            // Storage alone cannot read the column files: it says who can.
            db.create_index("t", IndexSpec::new("t_k", &["k"]), &NoProgress)
                .unwrap_err()
                .to_string(),
            "built by strata-columns",
        ),
        (
            db.set_index_cache("t", "t_x", &["d"])
                .unwrap_err()
                .to_string(),
            "t_x",
        ),
    ] {
        assert!(e.contains(says), "{e}");
    }
    // Nothing was left behind by the refusals: a plain index builds.
    create_index(&db, "t", IndexSpec::new("t_k", &["k"]), &NoProgress).unwrap();
    let e = db
        .set_index_cache("t", "t_k", &["d"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("an index cache") && e.contains("0A000"), "{e}");
    check_database(&db, &NoProgress).unwrap();
}
