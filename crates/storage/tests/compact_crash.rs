//! A crash in the middle of a widening compaction loses nothing.
//!
//! A table of a few thousand rows is compacted (narrow encodings), then write
//! transactions put values in it that those encodings cannot hold (escaped:
//! ids far outside the frame, INT limits, strings not in the dictionaries,
//! NULLs), and a second compaction widens the encodings in one rewrite. The
//! device fails that compaction's N-th write (then every later one), for
//! N = 1, 2, 3, … until one compaction finishes without the fault firing: the
//! compaction returns the error, the process "dies" (`Database::crash`), and
//! after reopening every row is the model's (by a scan and by both indexes),
//! `check_database` passes, the table is in its old encodings (the swap did
//! not happen) or the new ones, no data file outside the catalog is left, and
//! the table compacts again. The same for a failed fsync.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_storage::db::NoProgress;
use strata_storage::device::FaultInjector;
use strata_storage::device::fault::{FaultKind, FaultOp, FaultPlan};
use strata_storage::maintenance::check::check_database;
use strata_storage::maintenance::compact::CompactOptions;
use strata_storage::row::encoding::{
    ChooseOptions, ColumnSample, Encoding, choose, format_timestamp,
};
use strata_storage::row::{DataType, Schema, Value, days_from_civil, encode_key};
use strata_storage::{Database, DbOptions, IndexSpec, TableOptions};

const ROWS: i64 = 10_000;
const SCHEMA: &str = "id BIGINT, g INT, d DATE, price DECIMAL(12,2), mode CHAR(8), \
                      note VARCHAR(30), tag VARCHAR(40), opt INT NULL, ts CHAR(14)";
const MODES: [&str; 5] = ["AIR", "RAIL", "SHIP", "TRUCK", "MAIL"];

type Model = BTreeMap<i64, Vec<Value>>;

/// 2024-01-01 00:00:00 in seconds since 1970.
fn t0() -> i64 {
    days_from_civil(2024, 1, 1) as i64 * 86_400
}

fn opts() -> DbOptions {
    DbOptions {
        // Small: the rewrite's pages are evicted (written) while it runs.
        buffer_pool_bytes: 40 * 8192,
        direct_io: false,
        ..DbOptions::default()
    }
}

fn narrow_row(i: i64) -> Vec<Value> {
    vec![
        Value::Int64(i),
        Value::Int32((i % 100) as i32),
        Value::Date(18_000 + (i % 365) as i32),
        Value::Decimal(1000 + (i * 13) % 20_000),
        Value::Str(MODES[(i % 5) as usize].to_string()),
        Value::Str(format!("n{}", i % 300)),
        Value::Str(format!("narrow row {i:05}")),
        if i % 7 == 0 {
            Value::Null
        } else {
            Value::Int32((i % 50) as i32)
        },
        Value::Str(format_timestamp(t0() + i % 5000)),
    ]
}

/// A row with values the first compaction's encodings cannot hold.
fn wide_row(rng: &mut SmallRng, id: i64) -> Vec<Value> {
    let note: String = (0..rng.random_range(0..=30))
        .map(|_| ['w', 'é', ' ', 'Z'][rng.random_range(0..4)])
        .collect();
    let mut note = note;
    while note.len() > 30 {
        note.pop();
    }
    vec![
        Value::Int64(id),
        Value::Int32(match rng.random_range(0..4) {
            0 => i32::MAX,
            1 => i32::MIN,
            2 => 255,
            _ => rng.random_range(-100_000..100_000),
        }),
        Value::Date(rng.random_range(-50_000..50_000)),
        Value::Decimal(match rng.random_range(0..3) {
            0 => 999_999_999_999,
            1 => -999_999_999_999,
            _ => rng.random_range(-1_000_000..1_000_000),
        }),
        Value::Str(format!("NEW{}", rng.random_range(0..40))),
        Value::Str(note),
        Value::Str(format!("wide row {id}")),
        match rng.random_range(0..3) {
            0 => Value::Null,
            1 => Value::Int32(i32::MIN),
            _ => Value::Int32(rng.random_range(50..100_000)),
        },
        // Timestamps far from the frame; one not a timestamp at all.
        Value::Str(match rng.random_range(0..40) {
            0 => "2024-13-01".to_string(),
            _ => format_timestamp(t0() + rng.random_range(-1_000_000_000..1_000_000_000)),
        }),
    ]
}

fn normalized(row: Vec<Value>) -> Vec<Value> {
    // mode is a CHAR: it reads back without trailing spaces.
    row.into_iter()
        .enumerate()
        .map(|(c, v)| match (c, v) {
            (4 | 8, Value::Str(s)) => Value::Str(s.trim_end_matches(' ').to_string()),
            (_, v) => v,
        })
        .collect()
}

fn id_key(id: i64) -> Vec<u8> {
    let mut k = Vec::new();
    encode_key(&[DataType::Int64], &[Value::Int64(id)], &mut k);
    k
}

fn g_key(g: i32) -> Vec<u8> {
    let mut k = Vec::new();
    encode_key(&[DataType::Int32], &[Value::Int32(g)], &mut k);
    k
}

/// One change of the widening transactions.
enum Change {
    Insert(Vec<Value>),
    Update(i64, Vec<Value>),
    Delete(i64),
}

/// The transactions run before the widening compaction: (changes, commit?).
fn widening_txns(model: &Model) -> Vec<(Vec<Change>, bool)> {
    let mut rng = SmallRng::seed_from_u64(42);
    let mut ids: Vec<i64> = model.keys().copied().collect();
    let mut next_id = 10_000_000_000i64;
    let mut out = Vec::new();
    for n in 0..40 {
        let mut changes = Vec::new();
        let mut touched = BTreeSet::new();
        for _ in 0..12 {
            match rng.random_range(0..10) {
                0..5 => {
                    changes.push(Change::Insert(wide_row(&mut rng, next_id)));
                    next_id += rng.random_range(1..1_000_000);
                }
                5..8 => {
                    let id = ids[rng.random_range(0..ids.len())];
                    if touched.insert(id) {
                        changes.push(Change::Update(id, wide_row(&mut rng, id)));
                    }
                }
                _ => {
                    let i = rng.random_range(0..ids.len());
                    let id = ids[i];
                    if touched.insert(id) {
                        changes.push(Change::Delete(id));
                        ids.swap_remove(i);
                    }
                }
            }
        }
        // One rolled back.
        out.push((changes, n % 9 != 5));
    }
    out
}

fn apply(model: &mut Model, changes: &[Change]) {
    for c in changes {
        match c {
            Change::Insert(r) => {
                let Value::Int64(id) = r[0] else { panic!() };
                model.insert(id, normalized(r.clone()));
            }
            Change::Update(id, r) => {
                model.insert(*id, normalized(r.clone()));
            }
            Change::Delete(id) => {
                model.remove(id);
            }
        }
    }
}

fn run_txns(db: &Database, txns: &[(Vec<Change>, bool)]) {
    for (changes, commit) in txns {
        let txn = db.begin_write().unwrap();
        let t = txn.table("t").unwrap();
        let ix = t.index("t_id").unwrap();
        for c in changes {
            let tid_of = |id: i64| {
                // Inside the transaction: see its own changes.
                let tids =
                    strata_storage::buffer::as_writer(|| ix.btree.lookup(&id_key(id))).unwrap();
                assert_eq!(tids.len(), 1, "id {id}");
                tids[0]
            };
            match c {
                Change::Insert(r) => {
                    t.insert_row(r).unwrap();
                }
                Change::Update(id, r) => {
                    t.update_row(tid_of(*id), r).unwrap();
                }
                Change::Delete(id) => t.delete_row(tid_of(*id)).unwrap(),
            }
        }
        drop(t);
        if *commit {
            txn.commit().unwrap();
        } else {
            drop(txn);
        }
    }
}

/// The encodings a compaction of the model's rows chooses.
fn chosen(schema: &Schema, model: &Model) -> Vec<Encoding> {
    let mut samples: Vec<ColumnSample> = schema
        .columns
        .iter()
        .map(|c| ColumnSample::new(c.ty))
        .collect();
    for r in model.values() {
        for (s, v) in samples.iter_mut().zip(r) {
            s.add(v);
        }
    }
    choose(schema, &samples, &ChooseOptions::default())
}

/// Every row is the model's, by a scan and by both indexes; the database
/// checks.
fn verify(db: &Database, model: &Model, what: &str) {
    let t = db.table("t").unwrap();
    let mut seen = BTreeMap::new();
    t.scan_rows(|tid, r| {
        let Value::Int64(id) = r[0] else { panic!() };
        assert!(seen.insert(id, (tid, r)).is_none(), "{what}: id {id} twice");
        Ok(())
    })
    .unwrap();
    let got: Model = seen.iter().map(|(k, (_, r))| (*k, r.clone())).collect();
    if &got != model {
        let diffs: Vec<String> = model
            .iter()
            .filter(|(k, v)| got.get(k) != Some(v))
            .map(|(k, v)| format!("id {k}: want {v:?}, got {:?}", got.get(k)))
            .chain(
                got.keys()
                    .filter(|k| !model.contains_key(k))
                    .map(|k| format!("id {k}: extra")),
            )
            .take(6)
            .collect();
        panic!(
            "{what}: {} rows, the model has {}: {diffs:#?}",
            got.len(),
            model.len()
        );
    }
    let ix = t.index("t_id").unwrap();
    for (&id, (tid, _)) in &seen {
        assert_eq!(
            t.lookup(ix, &id_key(id)).unwrap(),
            vec![*tid],
            "{what}: lookup of id {id}"
        );
    }
    let ig = t.index("t_g").unwrap();
    let mut by_g: BTreeMap<i32, BTreeSet<_>> = BTreeMap::new();
    for (tid, r) in seen.values() {
        let Value::Int32(g) = r[1] else { panic!() };
        by_g.entry(g).or_default().insert(*tid);
    }
    for (&g, want) in &by_g {
        let got: BTreeSet<_> = t.lookup(ig, &g_key(g)).unwrap().into_iter().collect();
        assert_eq!(&got, want, "{what}: lookup of g {g}");
    }
    let report =
        check_database(db, &NoProgress).unwrap_or_else(|e| panic!("{what}: check failed: {e}"));
    assert_eq!(report[0].rows, model.len() as u64, "{what}");
}

/// No file in `data/` that the catalog does not name (the naming of
/// `Database::remove_orphans`: `<base>.NNNN` segments, `<base>.heat` counts).
fn assert_no_orphans(db: &Database, what: &str) {
    let cat = db.catalog();
    let mut live = BTreeSet::new();
    for t in cat.tables.values() {
        live.insert(t.heap_file.clone());
        for i in &t.indexes {
            live.insert(i.file.clone());
            if let Some(h) = &i.hot {
                live.insert(h.file.clone());
            }
        }
    }
    let data = db.dir().join("data");
    let mut files = Vec::new();
    for e in std::fs::read_dir(&data).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let base = match name.rsplit_once('.') {
            Some((b, seg)) if seg.len() == 4 && seg.bytes().all(|c| c.is_ascii_digit()) => {
                b.to_string()
            }
            _ => name.strip_suffix(".heat").unwrap_or(&name).to_string(),
        };
        assert!(
            live.contains(&format!("data/{base}")),
            "{what}: orphan file data/{name} (the catalog names {live:?})"
        );
        files.push(name);
    }
    for f in &live {
        let base = f.strip_prefix("data/").unwrap();
        assert!(
            files.iter().any(|n| n.starts_with(&format!("{base}."))),
            "{what}: the catalog names {f} but data/ has {files:?}"
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// The database the crash loop starts each time from: loaded narrow and
/// compacted once, closed cleanly. Returns its model and encodings.
fn template(dir: &Path) -> (Model, Vec<Encoding>) {
    let db = Database::create(dir, opts()).unwrap();
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
                IndexSpec::new("t_g", &["g"]),
            ],
        )
        .unwrap();
    let mut model = Model::new();
    for i in 0..ROWS {
        load.append(&narrow_row(i)).unwrap();
        model.insert(i, narrow_row(i));
    }
    load.commit(&NoProgress).unwrap();
    db.compact("t", &CompactOptions::default(), &NoProgress)
        .unwrap();
    let t = db.table("t").unwrap();
    let old = t.encodings().to_vec();
    assert_eq!(old, chosen(t.schema(), &model));
    // Narrow: every integer column in a frame, the text in dictionaries.
    assert!(
        matches!(old[0], Encoding::Offset { width: 2, .. })
            && matches!(old[1], Encoding::Offset { width: 1, .. })
            && matches!(old[4], Encoding::Dict { width: 1, .. })
            && matches!(old[5], Encoding::Dict { .. })
            && old[6] == Encoding::Short
            && matches!(old[8], Encoding::Timestamp { width: 2, .. }),
        "{old:?}"
    );
    eprintln!("template: {} heap pages", t.heap().num_pages());
    verify(&db, &model, "template");
    (model, old)
}

struct Setup {
    template: tempfile::TempDir,
    /// Before the widening transactions, and after them.
    model: Model,
    old: Vec<Encoding>,
    new: Vec<Encoding>,
    txns: Vec<(Vec<Change>, bool)>,
}

fn setup() -> Setup {
    let template = tempfile::tempdir().unwrap();
    let (before, old) = self::template(template.path());
    let txns = widening_txns(&before);
    let mut model = before;
    for (changes, commit) in &txns {
        if *commit {
            apply(&mut model, changes);
        }
    }
    let schema = Schema::parse(SCHEMA).unwrap();
    let new = chosen(&schema, &model);
    // The widening: the id frame grows past 2 bytes, g no longer fits a
    // frame, ts holds text that is not a timestamp.
    assert!(
        matches!(new[0], Encoding::Offset { width, .. } if width > 2),
        "{new:?}"
    );
    assert_eq!(new[1], Encoding::Plain, "{new:?}");
    assert!(!matches!(new[8], Encoding::Timestamp { .. }), "{new:?}");
    assert_ne!(new, old);
    Setup {
        template,
        model,
        old,
        new,
        txns,
    }
}

/// Opens a copy of the template with `faults`, runs the widening
/// transactions and returns it.
fn prepare(s: &Setup, dir: &Path, faults: &Arc<FaultInjector>) -> Database {
    copy_dir(s.template.path(), dir);
    let db = Database::open(
        dir,
        DbOptions {
            faults: Some(faults.clone()),
            ..opts()
        },
    )
    .unwrap();
    run_txns(&db, &s.txns);
    // Before the compaction: the old encodings, many values escaped.
    assert_eq!(db.table("t").unwrap().encodings(), &s.old[..]);
    db
}

/// Requests of `op` that a widening compaction makes, with no fault.
fn count(s: &Setup, op: FaultOp) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let faults = FaultInjector::new();
    let db = prepare(s, dir.path(), &faults);
    faults.arm(FaultPlan {
        kind: FaultKind::Eio,
        op,
        nth: u64::MAX,
    });
    db.compact("t", &CompactOptions::default(), &NoProgress)
        .unwrap();
    let (_, writes, syncs) = faults.counts();
    faults.disarm();
    assert_eq!(db.table("t").unwrap().encodings(), &s.new[..]);
    verify(&db, &s.model, "compacted without a fault");
    match op {
        FaultOp::Write => writes,
        FaultOp::Sync => syncs,
        FaultOp::Read => unreachable!(),
    }
}

/// The crash loop over the compaction's requests of `op`; returns how many
/// compactions failed. `retry`: after a failure, the fault gone, the same
/// process compacts again before it dies (that may be refused, or must be
/// right).
fn crash_loop(op: FaultOp, kind: FaultKind, retry: bool) -> usize {
    let s = setup();
    let total = count(&s, op);
    assert!(total > 0);
    eprintln!(
        "{op:?}: a widening compaction of {} rows makes {total} requests",
        s.model.len()
    );
    // Every request up to 60, then geometric steps, the last ones, and one
    // past the end (the compaction that finishes).
    let mut ns: BTreeSet<u64> = (1..=total.min(60)).collect();
    let mut n = 60f64;
    while (n as u64) < total {
        ns.insert(n as u64);
        n *= 1.12;
    }
    ns.extend([total.saturating_sub(1).max(1), total, total + 1]);
    let mut failed = 0;
    let mut finished = false;
    for &nth in &ns {
        let what = format!("{kind:?} at {op:?} {nth} of {total}");
        let dir = tempfile::tempdir().unwrap();
        let faults = FaultInjector::new();
        let db = prepare(&s, dir.path(), &faults);
        faults.arm(FaultPlan { kind, op, nth });
        let r = db.compact("t", &CompactOptions::default(), &NoProgress);
        let fired = faults.fired();
        faults.disarm();
        match &r {
            Ok(_) => assert_eq!(
                fired, 0,
                "{what}: the compaction succeeded though {fired} requests failed"
            ),
            Err(e) => {
                assert!(fired > 0, "{what}: the compaction failed by itself: {e}");
                failed += 1;
            }
        }
        let mut done = r.is_ok();
        if retry && !done {
            match db.compact("t", &CompactOptions::default(), &NoProgress) {
                Ok(_) => {
                    assert_eq!(db.table("t").unwrap().encodings(), &s.new[..], "{what}");
                    verify(&db, &s.model, &format!("{what}, retried"));
                    done = true;
                }
                Err(e) => eprintln!("{what}: the retry is refused: {e}"),
            }
        }
        db.crash();
        let db = Database::open(dir.path(), opts())
            .unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
        verify(&db, &s.model, &format!("{what}, after the crash"));
        assert_no_orphans(&db, &what);
        let enc = db.table("t").unwrap().encodings().to_vec();
        if done {
            assert_eq!(enc, s.new, "{what}: finished, so in the new encodings");
        } else {
            // The catalog swap is the commit point and the last step: a
            // failed compaction never reached it.
            assert_eq!(enc, s.old, "{what}: failed, so in the old encodings");
        }
        // And it compacts again.
        db.compact("t", &CompactOptions::default(), &NoProgress)
            .unwrap_or_else(|e| panic!("{what}: compacting again: {e}"));
        assert_eq!(db.table("t").unwrap().encodings(), &s.new[..], "{what}");
        verify(&db, &s.model, &format!("{what}, compacted again"));
        assert_no_orphans(&db, &format!("{what}, compacted again"));
        drop(db);
        if r.is_ok() {
            finished = true;
            break;
        }
    }
    assert!(finished, "no compaction finished");
    failed
}

#[test]
fn a_failed_write_in_a_widening_compaction_loses_nothing() {
    let failed = crash_loop(FaultOp::Write, FaultKind::Eio, false);
    assert!(failed >= 30, "{failed}");
}

#[test]
fn a_failed_sync_in_a_widening_compaction_loses_nothing() {
    let failed = crash_loop(FaultOp::Sync, FaultKind::Eio, false);
    assert!(failed >= 2, "{failed}");
}

#[test]
fn a_compaction_retried_after_a_full_disk_is_right() {
    let failed = crash_loop(FaultOp::Write, FaultKind::Enospc, true);
    assert!(failed >= 30, "{failed}");
}
