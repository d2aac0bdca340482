//! The delete set of a columnar table against a model: rows of the column
//! part taken away are gone for every reader, come back when their
//! transaction aborts, stay gone across a crash (recovery redoes the set
//! from the log), and a merge writes only the live rows and starts an empty
//! set. Bad positions are errors that change nothing.

use std::collections::BTreeSet;

use super::*;
use strata_storage::StorageError;
use strata_storage::maintenance::check::check_database;

/// The rows of `part` (in position order) whose positions `gone` lacks.
fn live(part: &[Vec<Value>], gone: &BTreeSet<u64>) -> Vec<Vec<Value>> {
    part.iter()
        .enumerate()
        .filter(|(i, _)| !gone.contains(&(*i as u64)))
        .map(|(_, r)| r.clone())
        .collect()
}

/// The file of table t's delete set.
fn set_file(db: &Database) -> String {
    let t = db.table("t").unwrap();
    t.delete_set().expect("a delete set").file().to_string()
}

/// The segment files of the B+-tree (or heap) named `file` in the catalog.
fn first_segment(db: &Database, file: &str) -> std::path::PathBuf {
    db.dir().join(format!("{file}.0000"))
}

#[test]
fn deleted_column_rows_are_gone_for_every_reader_and_an_abort_brings_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(&dir.path().join("db"), opts()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(21);
    let part: Vec<Vec<Value>> = (0..300_000).map(|n| row(n, &mut rng)).collect();
    load(&db, &part);
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    let set = db
        .table("t")
        .unwrap()
        .delete_set()
        .expect("a delete set")
        .clone();
    assert!(set.is_empty());
    assert!(first_segment(&db, set.file()).exists(), "{}", set.file());

    // The first and last rows of each row group (122,880 rows), a run, and
    // 3% at random.
    let mut gone: BTreeSet<u64> = [0, 122_879, 122_880, 245_759, 245_760, 299_999]
        .into_iter()
        .chain(1000..1100)
        .collect();
    while gone.len() < 9_000 {
        gone.insert(rng.random_range(0..300_000));
    }
    let txn = db.begin_write().unwrap();
    let positions: Vec<u64> = gone.iter().rev().copied().collect();
    txn.table("t")
        .unwrap()
        .delete_column_rows(&positions)
        .unwrap();
    txn.commit().unwrap();
    let expect = live(&part, &gone);
    assert_eq!(contents(&db), expect);
    let t = db.table("t").unwrap();
    assert_eq!(t.live_rows(), expect.len() as u64);
    let p = ColumnPart::of(&db, &t).unwrap().unwrap();
    assert_eq!(p.deleted_rows(), gone.len() as u64);
    assert_eq!(p.plan_all().rows(), expect.len() as u64);
    assert_eq!(p.plan_all().rows_total, 300_000);
    // A pruned plan reads the live rows of its page: k < 1000 keeps the
    // first page (8,192 rows) less the deleted among them.
    let lt = Comparison {
        column: 0,
        op: CmpOp::Lt,
        value: Value::Int64(1000),
    };
    let in_page = gone.range(0..8192).count() as u64;
    assert_eq!(
        p.plan(std::slice::from_ref(&lt)).unwrap().rows(),
        8192 - in_page
    );
    // Each unit's positions are the live rows it reads, in order.
    let all: Vec<usize> = (0..t.schema().len()).collect();
    let types = t.schema().types();
    for u in p.plan_all().units.iter().take(2) {
        let positions = u.positions();
        let mut rows = Vec::new();
        p.read(u, &all, |b| {
            rows.extend(batch_rows(&b, &types));
            Ok(true)
        })
        .unwrap();
        assert_eq!(rows.len(), positions.len());
        for (r, &pos) in rows.iter().zip(&positions) {
            assert!(!gone.contains(&pos));
            assert_eq!(r, &part[pos as usize]);
        }
    }
    // A second scan's plan reads no page of the unchanged set (its positions
    // are kept for the committed count); a transaction's own view reads the
    // set anew and sees its marks, which are gone again after its abort.
    let pages = |db: &Database| {
        let c = db.pool().counters();
        c.hits + c.misses
    };
    let before = pages(&db);
    let again = ColumnPart::of(&db, &t).unwrap().unwrap();
    assert_eq!(pages(&db) - before, 0, "the set was read again");
    assert_eq!(again.plan_all().rows(), expect.len() as u64);
    {
        let txn = db.begin_write().unwrap();
        let t = txn.table("t").unwrap();
        t.delete_column_rows(
            &[5000, 5001]
                .into_iter()
                .filter(|p| !gone.contains(p))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let own = strata_storage::buffer::as_writer(|| t.deleted_column_rows().unwrap());
        assert!(own.len() > gone.len() && pages(&db) > before);
        // A reader outside the transaction sees the committed set.
        assert_eq!(t.deleted_column_rows().unwrap().len(), gone.len());
        drop(txn);
    }
    assert_eq!(
        ColumnPart::of(&db, &t).unwrap().unwrap().deleted_rows(),
        gone.len() as u64
    );
    // `strata check` decodes the deleted rows too, and checks the set.
    p.verify().unwrap();
    check_database(&db, &NoProgress).unwrap();

    // An abort brings its rows back.
    {
        let txn = db.begin_write().unwrap();
        let more: Vec<u64> = (2000..2500).filter(|p| !gone.contains(p)).collect();
        txn.table("t").unwrap().delete_column_rows(&more).unwrap();
        drop(txn);
    }
    assert_eq!(contents(&db), expect);
    // Bad positions are errors that change nothing.
    let txn = db.begin_write().unwrap();
    let t = txn.table("t").unwrap();
    for (bad, says) in [
        (vec![7u64, 0], "already deleted"),
        (vec![5, 5], "named twice"),
        (vec![4, 300_000], "the part has 300000 rows"),
    ] {
        let e = t.delete_column_rows(&bad).unwrap_err();
        assert!(e.to_string().contains(says), "{bad:?}: {e}");
    }
    txn.commit().unwrap();
    assert_eq!(contents(&db), expect);
    // Outside a write transaction nothing is deleted.
    let e = db.table("t").unwrap().delete_column_rows(&[1]).unwrap_err();
    assert!(matches!(e, StorageError::NoTransaction { .. }), "{e}");
    assert_eq!(contents(&db), expect);
}

#[test]
fn deletes_are_redone_after_a_crash_and_a_merge_keeps_only_live_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(22);
    let part: Vec<Vec<Value>> = (0..150_000).map(|n| row(n, &mut rng)).collect();
    let mut gone = BTreeSet::new();
    let mut delta = Vec::new();
    {
        let db = Database::create(&path, opts()).unwrap();
        load(&db, &part);
        rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
        for round in 0..3 {
            let txn = db.begin_write().unwrap();
            let t = txn.table("t").unwrap();
            let mut these = BTreeSet::new();
            while these.len() < 700 {
                let p = rng.random_range(0..150_000u64);
                if !gone.contains(&p) {
                    these.insert(p);
                }
            }
            t.delete_column_rows(&these.iter().copied().collect::<Vec<_>>())
                .unwrap();
            for n in 0..100 {
                let r = row(1_000_000 + round * 1000 + n, &mut rng);
                t.insert_row(&r).unwrap();
                delta.push(r);
            }
            txn.commit().unwrap();
            gone.extend(these);
        }
        // No checkpoint, no clean close: the set's pages are in the log only.
        db.crash();
    }
    let mut expect = live(&part, &gone);
    expect.extend(delta.iter().cloned());
    let db = Database::open(&path, opts()).unwrap();
    assert_eq!(contents(&db), expect);
    assert_eq!(db.table("t").unwrap().live_rows(), expect.len() as u64);
    check_database(&db, &NoProgress).unwrap();

    // The merge writes the live rows (and the delta) into a new file and
    // starts an empty set; the old set's file goes.
    let old_set = set_file(&db);
    let r = rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    assert_eq!(r.rows, expect.len() as u64);
    let t = db.table("t").unwrap();
    assert!(t.delete_set().unwrap().is_empty());
    assert_ne!(t.delete_set().unwrap().file(), old_set);
    assert!(!first_segment(&db, &old_set).exists(), "{old_set} removed");
    assert_eq!(t.columns().unwrap().rows(), expect.len() as u64);
    assert_eq!(sorted(contents(&db)), sorted(expect.clone()));
    drop(t);
    drop(db);
    let db = Database::open(&path, opts()).unwrap();
    assert_eq!(sorted(contents(&db)), sorted(expect.clone()));
    // Back to rows: no set at all.
    let set = set_file(&db);
    let txn = db.begin_write().unwrap();
    txn.table("t").unwrap().delete_column_rows(&[0]).unwrap();
    txn.commit().unwrap();
    let first = sorted(expect.clone()).remove(0);
    expect.retain(|r| *r != first);
    rewrite(&db, "t", Format::Rows, &NoProgress).unwrap();
    let t = db.table("t").unwrap();
    assert!(t.delete_set().is_none() && t.columns().is_none());
    assert!(!first_segment(&db, &set).exists(), "{set} removed");
    assert_eq!(t.rows(), expect.len() as u64);
    assert_eq!(sorted(contents(&db)), sorted(expect));
    check_database(&db, &NoProgress).unwrap();
}

/// Random transactions of deletes and inserts, some aborted, with crashes
/// and merges between them: the table always holds the model's rows.
#[test]
fn random_deletes_inserts_aborts_crashes_and_merges_keep_the_models_rows() {
    for seed in 0..3u64 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let mut rng = rand::rngs::SmallRng::seed_from_u64(100 + seed);
        let mut next = 40_000i64;
        let first: Vec<Vec<Value>> = (0..next).map(|n| row(n, &mut rng)).collect();
        let mut db = Database::create(&path, opts()).unwrap();
        load(&db, &first);
        rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
        // The column part in position order, the positions taken away, and
        // the delta.
        let mut part = first;
        let mut gone: BTreeSet<u64> = BTreeSet::new();
        let mut delta: Vec<Vec<Value>> = Vec::new();
        for step in 0..30 {
            match rng.random_range(0..10) {
                0 => {
                    db.crash();
                    db = Database::open(&path, opts()).unwrap();
                }
                1 => {
                    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
                    let mut want = live(&part, &gone);
                    want.append(&mut delta);
                    let got = contents(&db);
                    assert_eq!(sorted(got.clone()), sorted(want), "seed {seed} step {step}");
                    part = got;
                    gone.clear();
                }
                _ => {
                    let commit = !rng.random_ratio(1, 4);
                    let txn = db.begin_write().unwrap();
                    let t = txn.table("t").unwrap();
                    let mut these = BTreeSet::new();
                    let n = rng.random_range(0..300);
                    let span = rng.random_range(1..=part.len().max(1)) as u64;
                    let from = rng.random_range(0..part.len().max(1) as u64);
                    for _ in 0..n {
                        if part.is_empty() {
                            break;
                        }
                        let p = (from + rng.random_range(0..span)) % part.len() as u64;
                        if !gone.contains(&p) {
                            these.insert(p);
                        }
                    }
                    t.delete_column_rows(&these.iter().copied().collect::<Vec<_>>())
                        .unwrap();
                    let mut added = Vec::new();
                    for _ in 0..rng.random_range(0..50) {
                        let r = row(next, &mut rng);
                        next += 1;
                        t.insert_row(&r).unwrap();
                        added.push(r);
                    }
                    if commit {
                        txn.commit().unwrap();
                        gone.extend(these);
                        delta.extend(added);
                    } else {
                        drop(txn);
                    }
                }
            }
            let mut want = live(&part, &gone);
            want.extend(delta.iter().cloned());
            assert_eq!(
                sorted(contents(&db)),
                sorted(want.clone()),
                "seed {seed} step {step}"
            );
            assert_eq!(db.table("t").unwrap().live_rows(), want.len() as u64);
        }
        check_database(&db, &NoProgress).unwrap();
    }
}

/// A commit adds its marks to the positions kept for committed readers, so
/// the next scan reads no page of the set (a set of 10^5 marks is MiBs: a
/// point UPDATE would read it all again); an abort adds nothing.
#[test]
fn a_commit_adds_its_marks_to_the_kept_positions_and_an_abort_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(&dir.path().join("db"), opts()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(23);
    let part: Vec<Vec<Value>> = (0..100_000).map(|n| row(n, &mut rng)).collect();
    load(&db, &part);
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    let delete = |positions: &[u64], commit: bool| {
        let txn = db.begin_write().unwrap();
        txn.table("t")
            .unwrap()
            .delete_column_rows(positions)
            .unwrap();
        if commit {
            txn.commit().unwrap();
        }
    };
    let pages = || {
        let c = db.pool().counters();
        c.hits + c.misses
    };
    let t = db.table("t").unwrap();
    delete(&[3, 1, 2], true);
    assert_eq!(*t.deleted_column_rows().unwrap(), vec![1, 2, 3]);
    let mut gone: BTreeSet<u64> = [1, 2, 3].into();
    for (marks, commit) in [
        (vec![5000u64, 10], true),
        (vec![7], false),
        (vec![99_999, 0, 4], true),
        (vec![8, 9], false),
    ] {
        delete(&marks, commit);
        if commit {
            gone.extend(&marks);
        }
        let before = pages();
        let kept = t.deleted_column_rows().unwrap();
        assert_eq!(pages(), before, "the set was read again after {marks:?}");
        assert_eq!(*kept, gone.iter().copied().collect::<Vec<_>>());
        // What the set holds, read anew, is the same.
        assert_eq!(t.delete_set().unwrap().positions().unwrap(), *kept);
    }
    // A transaction's own view is the kept positions with its marks: read
    // from no page of the set either.
    let txn = db.begin_write().unwrap();
    let tt = txn.table("t").unwrap();
    tt.delete_column_rows(&[11]).unwrap();
    let before = pages();
    let own = strata_storage::buffer::as_writer(|| tt.deleted_column_rows().unwrap());
    assert_eq!(pages(), before, "the own view read the set");
    let mut with_own = gone.clone();
    with_own.insert(11);
    assert_eq!(*own, with_own.iter().copied().collect::<Vec<_>>());
    assert_eq!(
        *t.deleted_column_rows().unwrap(),
        gone.iter().copied().collect::<Vec<_>>(),
        "a reader beside it sees the committed set"
    );
    txn.commit().unwrap();
    assert_eq!(contents(&db), live(&part, &with_own));
}
