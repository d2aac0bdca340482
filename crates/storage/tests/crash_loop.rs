//! The crash loop: a child process runs random transactions (inserts, updates,
//! deletes; some rolled back) on a database and is killed at a random write —
//! of a data page or of the log, whole or torn, by an injected crash or by a
//! real `SIGKILL` — and after each restart every committed transaction is
//! there, none that did not commit is, every index agrees with its heap, and
//! the database keeps working.
//!
//! The child is this test binary run again (`crash_child`), told what to do by
//! environment variables; it reports each commit on stdout once `commit`
//! returned. The parent replays the same random transactions on a model, so it
//! knows the state after every transaction, and checks the reopened database is
//! the state after the last reported commit, or after the one in flight when
//! the child died (its commit may have become durable before the report).
//!
//! `STRATA_CRASH_ITERATIONS` sets the number of crashes (default 120).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use rand::{Rng, SeedableRng};
use strata_storage::db::NoProgress;
use strata_storage::device::FaultInjector;
use strata_storage::maintenance::check::check_database;
use strata_storage::row::{Schema, Tid, Value};
use strata_storage::{Database, DbOptions, IndexSpec, TableOptions};

type Model = BTreeMap<i64, (i32, String)>;
/// One transaction: (key, new value or delete).
type Changes = Vec<(i64, Option<(i32, String)>)>;

fn opts() -> DbOptions {
    DbOptions {
        // Small: committed pages are evicted (and written) between checkpoints.
        buffer_pool_bytes: 48 * 8192,
        direct_io: false,
        // Checkpoints every few transactions, so crashes hit them too.
        checkpoint_log_bytes: 96 << 10,
        ..DbOptions::default()
    }
}

fn create(dir: &Path) {
    let db = Database::create(dir, opts()).unwrap();
    let schema = Schema::parse("k BIGINT NOT NULL, g INT, v VARCHAR(60)").unwrap();
    let topts = TableOptions {
        fill_factor: 1.0,
        segment_pages: 8,
    };
    let mut load = db
        .begin_create_load(
            "kv",
            schema,
            topts,
            vec![
                IndexSpec::new("kv_k", &["k"]),
                IndexSpec::new("kv_g", &["g"]),
            ],
        )
        .unwrap();
    for k in 0..300 {
        load.append(&values(k, (k % 13) as i32, &"a".repeat(10)))
            .unwrap();
    }
    load.commit(&NoProgress).unwrap();
}

fn values(k: i64, g: i32, v: &str) -> Vec<Value> {
    vec![Value::Int64(k), Value::Int32(g), Value::Str(v.to_string())]
}

fn contents(db: &Database) -> Model {
    let t = db.table("kv").unwrap();
    let mut m = Model::new();
    t.scan_rows(|_, r| {
        let (Value::Int64(k), Value::Int32(g), Value::Str(v)) = (&r[0], &r[1], &r[2]) else {
            panic!("unexpected row {r:?}")
        };
        assert!(m.insert(*k, (*g, v.clone())).is_none(), "key {k} twice");
        Ok(())
    })
    .unwrap();
    m
}

/// One transaction's changes, chosen from the model: (key, new value or delete).
fn plan(model: &Model, rng: &mut impl Rng, next_key: &mut i64) -> Changes {
    let keys: Vec<i64> = model.keys().copied().collect();
    let mut out = Vec::new();
    let mut touched = std::collections::BTreeSet::new();
    for _ in 0..rng.random_range(1..12) {
        let what = rng.random_range(0..10);
        let len = rng.random_range(0..60);
        let val = (rng.random_range(0..13), "b".repeat(len));
        if what < 4 || keys.is_empty() {
            out.push((*next_key, Some(val)));
            *next_key += 1;
        } else {
            let k = keys[rng.random_range(0..keys.len())];
            if !touched.insert(k) {
                continue;
            }
            out.push((k, (what < 8).then_some(val)));
        }
    }
    out
}

fn apply_model(model: &mut Model, changes: &[(i64, Option<(i32, String)>)]) {
    for (k, v) in changes {
        match v {
            Some(v) => {
                model.insert(*k, v.clone());
            }
            None => {
                model.remove(k);
            }
        }
    }
}

fn tid_of(db: &Database, k: i64) -> Option<Tid> {
    // Inside a transaction: see its own changes.
    strata_storage::buffer::as_writer(|| {
        let t = db.table("kv").unwrap();
        let i = t.index("kv_k").unwrap();
        let tids = i
            .btree
            .lookup(&i.key_of_row(&[Value::Int64(k), Value::Null, Value::Null]))
            .unwrap();
        tids.first().copied()
    })
}

/// The transactions of one child run: (changes, commits?), from `seed` and the
/// state it starts from.
struct Script {
    rng: rand::rngs::SmallRng,
    next_key: i64,
}

impl Script {
    fn new(seed: u64, model: &Model) -> Script {
        Script {
            rng: rand::rngs::SmallRng::seed_from_u64(seed),
            next_key: model.keys().next_back().map_or(0, |k| k + 1),
        }
    }
    fn next(&mut self, model: &Model) -> (Changes, bool) {
        let changes = plan(model, &mut self.rng, &mut self.next_key);
        let commit = self.rng.random_bool(0.85);
        (changes, commit)
    }
}

const TXNS_PER_RUN: usize = 60;

/// The child: runs the script on the database and reports commits.
#[test]
#[ignore = "the crash loop's child process; run by crash_loop"]
fn crash_child() {
    let Ok(dir) = std::env::var("CRASH_DIR") else {
        return;
    };
    let seed: u64 = std::env::var("CRASH_SEED").unwrap().parse().unwrap();
    let plan = std::env::var("CRASH_PLAN").unwrap();
    let faults = FaultInjector::new();
    let db = Database::open(
        Path::new(&dir),
        DbOptions {
            faults: Some(faults.clone()),
            ..opts()
        },
    )
    .unwrap();
    let mut model = contents(&db);
    check_database(&db, &NoProgress).expect("the child opens a consistent database");
    let mut script = Script::new(seed, &model);
    faults.arm(plan.parse().unwrap());
    for n in 0..TXNS_PER_RUN {
        let (changes, commit) = script.next(&model);
        let txn = db.begin_write().unwrap();
        let t = db.table("kv").unwrap();
        for (k, v) in &changes {
            match (tid_of(&db, *k), v) {
                (None, Some((g, s))) => {
                    t.insert_row(&values(*k, *g, s)).unwrap();
                }
                (Some(tid), Some((g, s))) => {
                    t.update_row(tid, &values(*k, *g, s)).unwrap();
                }
                (Some(tid), None) => t.delete_row(tid).unwrap(),
                (None, None) => unreachable!("the model deletes only keys it has"),
            }
        }
        if commit {
            txn.commit().unwrap();
            apply_model(&mut model, &changes);
            println!("committed {n}");
        } else {
            drop(txn);
        }
    }
    println!("done");
    // (printed after the harness's "test crash_child ... " on the first line)
}

/// Runs the child until it dies; returns its stdout and how it ended.
fn run_child(dir: &Path, seed: u64, plan: &str, sigkill: bool) -> (String, String) {
    // The harness names a test by its path below the crate root.
    let (_, module) = module_path!().split_once("::").unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            &format!("{module}::crash_child"),
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("CRASH_DIR", dir)
        .env("CRASH_SEED", seed.to_string())
        .env("CRASH_PLAN", plan)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let how = if sigkill {
        // stop-after-writes: the child stops itself at the chosen write; the
        // parent kills it there.
        let mut status = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
        assert_eq!(r, pid);
        if libc::WIFSTOPPED(status) {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let _ = child.wait();
            "SIGKILL".to_string()
        } else {
            // Already reaped by waitpid; this only tells std so.
            let _ = child.wait();
            "finished".to_string()
        }
    } else {
        let st = child.wait().unwrap();
        format!("{st}")
    };
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        !err.contains("panicked"),
        "the child panicked ({plan}):\n{err}"
    );
    (out, how)
}

#[test]
fn crash_loop() {
    let iterations: usize = std::env::var("STRATA_CRASH_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let dir = tempfile::tempdir().unwrap();
    create(dir.path());
    let mut model = contents(&Database::open(dir.path(), opts()).unwrap());
    let mut rng = rand::rngs::SmallRng::seed_from_u64(2026);
    let (mut kills, mut torn, mut sigkills, mut finished, mut in_flight) = (0, 0, 0, 0, 0);
    let mut committed_total = 0;
    for it in 0..iterations {
        let seed = rng.random::<u64>();
        let nth = rng.random_range(1..160);
        let sigkill = it % 3 == 2;
        let plan = if sigkill {
            format!("stop-after-writes:{nth}")
        } else if rng.random_bool(0.5) {
            format!("crash-after-writes:{nth},torn")
        } else {
            format!("crash-after-writes:{nth}")
        };
        eprintln!("iteration {it}: {plan}");
        let (out, how) = run_child(dir.path(), seed, &plan, sigkill);
        eprintln!("  {how}, {} lines", out.lines().count());
        let reported: Vec<usize> = out
            .lines()
            // The first report shares a line with the test harness's own.
            .filter_map(|l| l.split_once("committed ").map(|(_, n)| n))
            .map(|n| n.trim().parse().unwrap())
            .collect();
        let done = out.lines().any(|l| l.ends_with("done"));
        // The states the database may be in: after the last reported commit,
        // or after the next transaction that commits (in flight at the crash).
        let mut script = Script::new(seed, &model);
        let mut state = model.clone();
        let mut allowed = Vec::new();
        let last = reported.last().copied();
        for n in 0..TXNS_PER_RUN {
            let (changes, commit) = script.next(&state);
            if commit {
                let mut after = state.clone();
                apply_model(&mut after, &changes);
                if last.is_none_or(|l| n > l) {
                    allowed.push(state.clone());
                    allowed.push(after);
                    break;
                }
                state = after;
            }
        }
        if allowed.is_empty() {
            allowed.push(state.clone());
        }
        let db = Database::open(dir.path(), opts())
            .unwrap_or_else(|e| panic!("iteration {it} ({plan}, {how}): reopen failed: {e}"));
        let got = contents(&db);
        let which = allowed.iter().position(|s| *s == got).unwrap_or_else(|| {
            let diffs: Vec<String> = allowed
                .iter()
                .map(|s| {
                    let d: Vec<_> = s
                        .iter()
                        .filter(|(k, v)| got.get(k) != Some(v))
                        .map(|(k, v)| format!("{k}: want {v:?} got {:?}", got.get(k)))
                        .chain(
                            got.keys()
                                .filter(|k| !s.contains_key(k))
                                .map(|k| format!("{k}: extra")),
                        )
                        .take(8)
                        .collect();
                    format!("{} rows, differences {d:?}", s.len())
                })
                .collect();
            panic!(
                "iteration {it} ({plan}, {how}): after {} reported commits the database \
                 holds {} rows, matching no committed state: {diffs:#?}\nchild said:\n{out}",
                reported.len(),
                got.len()
            )
        });
        if which == 1 {
            in_flight += 1;
        }
        let report = check_database(&db, &NoProgress)
            .unwrap_or_else(|e| panic!("iteration {it} ({plan}): check failed: {e}"));
        assert_eq!(report[0].rows, got.len() as u64);
        drop(db);
        committed_total += reported.len();
        model = got;
        if done {
            finished += 1;
        } else if sigkill {
            sigkills += 1;
        } else {
            kills += 1;
            if plan.ends_with("torn") {
                torn += 1;
            }
        }
    }
    eprintln!(
        "crash loop: {iterations} iterations, {committed_total} commits reported; \
         {kills} injected crashes ({torn} torn), {sigkills} SIGKILLs, {finished} runs \
         that finished first; {in_flight} times the in-flight commit was durable"
    );
    assert!(
        kills + sigkills >= iterations / 2,
        "most runs must be killed"
    );
}
