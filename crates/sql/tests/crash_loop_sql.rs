//! The crash loop through SQL: the real `strata-sql` binary runs a random
//! script of `INSERT ... VALUES`, `INSERT ... SELECT`, `UPDATE` and `DELETE`
//! statements — autocommitted, or grouped in `BEGIN ... COMMIT` and
//! `BEGIN ... ROLLBACK` — with an occasional `CREATE INDEX` / `DROP INDEX`,
//! and dies at a write chosen by count (`STRATA_FAULT`): an injected crash
//! right after the write, the write's last page torn, or the process stopped
//! there and sent a real `SIGKILL`. After every death the database is opened
//! again (recovery) and must hold exactly the rows of the last unit of work
//! the binary acknowledged, or of the one after it (committed, but killed
//! before it could say so) — never part of a unit, never a rolled-back one;
//! every index must agree with its heap (`strata check`'s check), and the
//! next iteration's statements run on it.
//!
//! A unit is acknowledged by a `SELECT 'unit N'` the script runs after it:
//! the binary prints each result as it ends (stdout is line-buffered), so a
//! printed marker means every statement before it returned.
//!
//! The same loop runs on a columnar table (no index DDL; a columnar table has
//! none): its statements delete column rows through the table's delete set
//! and put updated rows in the delta, and between runs the parent merges the
//! delta into new column files now and then, so that there are always rows in
//! columns to delete.
//!
//! `STRATA_SQL_CRASH_ITERATIONS` sets the number of deaths (default 200 on
//! the row table, half that on the columnar one).

use crate::common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_storage::Database;
use strata_storage::db::{IndexSpec, NoProgress};
use strata_storage::maintenance::check::check_database;
use strata_storage::row::Value;

/// k → (g, v) of `t (k BIGINT NOT NULL, g INT NOT NULL, v VARCHAR(24) NOT NULL)`.
type Model = BTreeMap<i64, (i32, String)>;

/// One statement, as SQL text and as its effect on the model.
#[derive(Debug)]
enum Op {
    Insert(Vec<(i64, i32, String)>),
    UpdateKey {
        k: i64,
        v: String,
    },
    UpdateRange {
        lo: i64,
        hi: i64,
        v: String,
    },
    DeleteRange {
        lo: i64,
        hi: i64,
    },
    DeleteGroup {
        g: i32,
    },
    /// `INSERT INTO t SELECT k + shift, g, v FROM t WHERE k in [lo, hi)`.
    Copy {
        lo: i64,
        hi: i64,
        shift: i64,
    },
}

impl Op {
    fn sql(&self) -> String {
        match self {
            Op::Insert(rows) => {
                let rows: Vec<String> = rows
                    .iter()
                    .map(|(k, g, v)| format!("({k}, {g}, '{v}')"))
                    .collect();
                format!("INSERT INTO t VALUES {}", rows.join(", "))
            }
            Op::UpdateKey { k, v } => format!("UPDATE t SET g = g + 1, v = '{v}' WHERE k = {k}"),
            Op::UpdateRange { lo, hi, v } => {
                format!("UPDATE t SET v = '{v}' WHERE k >= {lo} AND k < {hi}")
            }
            Op::DeleteRange { lo, hi } => format!("DELETE FROM t WHERE k >= {lo} AND k < {hi}"),
            Op::DeleteGroup { g } => format!("DELETE FROM t WHERE g = {g}"),
            Op::Copy { lo, hi, shift } => {
                format!(
                    "INSERT INTO t SELECT k + {shift}, g, v FROM t WHERE k >= {lo} AND k < {hi}"
                )
            }
        }
    }

    fn apply(&self, m: &mut Model) {
        match self {
            Op::Insert(rows) => {
                for (k, g, v) in rows {
                    m.insert(*k, (*g, v.clone()));
                }
            }
            Op::UpdateKey { k, v } => {
                if let Some(r) = m.get_mut(k) {
                    *r = (r.0 + 1, v.clone());
                }
            }
            Op::UpdateRange { lo, hi, v } => {
                for (_, r) in m.range_mut(lo..hi) {
                    r.1 = v.clone();
                }
            }
            Op::DeleteRange { lo, hi } => {
                let gone: Vec<i64> = m.range(lo..hi).map(|(k, _)| *k).collect();
                for k in gone {
                    m.remove(&k);
                }
            }
            Op::DeleteGroup { g } => m.retain(|_, r| r.0 != *g),
            Op::Copy { lo, hi, shift } => {
                let copies: Vec<(i64, (i32, String))> = m
                    .range(lo..hi)
                    .map(|(k, r)| (k + shift, r.clone()))
                    .collect();
                m.extend(copies);
            }
        }
    }
}

/// Writes a script of `units` units of work against `start`; returns it and
/// the model after each unit (`states[0]` = `start`).
struct Script {
    text: String,
    states: Vec<Model>,
    next_key: i64,
}

fn script(
    rng: &mut SmallRng,
    start: &Model,
    mut next_key: i64,
    units: usize,
    has_index_v: bool,
    index_ddl: bool,
) -> Script {
    let mut text = String::new();
    let mut states = vec![start.clone()];
    let mut state = start.clone();
    let mut has_index_v = has_index_v;
    for unit in 1..=units {
        let kind = rng.random_range(if index_ddl { 0 } else { 1 }..10);
        if kind == 0 {
            // DDL commits on its own (and checkpoints first).
            if has_index_v {
                text.push_str("DROP INDEX t_v;\n");
            } else {
                text.push_str("CREATE INDEX t_v ON t (v);\n");
            }
            has_index_v = !has_index_v;
        } else {
            // 1..=5: autocommit; 6..=8: BEGIN ... COMMIT; 9: BEGIN ... ROLLBACK.
            let statements = if kind <= 5 {
                1
            } else {
                rng.random_range(2..=4)
            };
            let mut after = state.clone();
            let mut body = String::new();
            for _ in 0..statements {
                let op = random_op(rng, &after, &mut next_key);
                op.apply(&mut after);
                body.push_str(&op.sql());
                body.push_str(";\n");
            }
            match kind {
                1..=5 => text.push_str(&body),
                6..=8 => text.push_str(&format!("BEGIN;\n{body}COMMIT;\n")),
                _ => text.push_str(&format!("BEGIN;\n{body}ROLLBACK;\n")),
            }
            if kind <= 8 {
                state = after;
            }
        }
        states.push(state.clone());
        text.push_str(&format!("SELECT 'unit {unit}' AS marker;\n"));
    }
    Script {
        text,
        states,
        next_key,
    }
}

fn word(rng: &mut SmallRng) -> String {
    let n = rng.random_range(1..=20);
    (0..n)
        .map(|_| char::from(b'a' + rng.random_range(0..26u8)))
        .collect()
}

/// A random statement against `m`; keys it inserts are fresh (`next_key`).
fn random_op(rng: &mut SmallRng, m: &Model, next_key: &mut i64) -> Op {
    let some_key = |rng: &mut SmallRng| -> i64 {
        if m.is_empty() {
            return *next_key;
        }
        let i = rng.random_range(0..m.len());
        *m.keys().nth(i).unwrap()
    };
    // Keep the table between a few hundred and a thousand rows or so.
    let grow = match m.len() {
        0..=200 => 0.8,
        201..=700 => 0.5,
        _ => 0.2,
    };
    if rng.random_bool(grow) {
        if rng.random_bool(0.7) {
            let n = rng.random_range(1..=6);
            let rows = (0..n)
                .map(|_| {
                    let k = *next_key;
                    *next_key += 1;
                    (k, rng.random_range(0..60), word(rng))
                })
                .collect();
            Op::Insert(rows)
        } else {
            let lo = some_key(rng);
            let hi = lo + rng.random_range(1..=40);
            let shift = *next_key - lo;
            *next_key += hi - lo;
            Op::Copy { lo, hi, shift }
        }
    } else {
        match rng.random_range(0..4) {
            0 => Op::UpdateKey {
                k: some_key(rng),
                v: word(rng),
            },
            1 => {
                let lo = some_key(rng);
                Op::UpdateRange {
                    lo,
                    hi: lo + rng.random_range(1..=30),
                    v: word(rng),
                }
            }
            2 => {
                let lo = some_key(rng);
                Op::DeleteRange {
                    lo,
                    hi: lo + rng.random_range(1..=25),
                }
            }
            _ => Op::DeleteGroup {
                g: rng.random_range(0..70),
            },
        }
    }
}

/// The table's rows (a columnar table's live column rows and its delta),
/// and whether index `t_v` exists.
fn contents(db: &Database) -> (Model, bool) {
    let t = db.table("t").unwrap();
    let mut m = Model::new();
    let mut add = |r: &[Value]| {
        let (Value::Int64(k), Value::Int32(g), Value::Str(v)) = (&r[0], &r[1], &r[2]) else {
            panic!("unexpected row {r:?}")
        };
        assert!(m.insert(*k, (*g, v.clone())).is_none(), "key {k} twice");
    };
    if let Some(part) = strata_columns::ColumnPart::of(db, &t).unwrap() {
        let types = t.schema().types();
        part.read_all(&[0, 1, 2], |b| {
            let cols: Vec<Vec<Value>> = b
                .columns()
                .iter()
                .zip(&types)
                .map(|(a, ty)| strata_columns::convert::arrow_values(a.as_ref(), ty).unwrap())
                .collect();
            for r in
                (0..b.num_rows()).map(|i| cols.iter().map(|c| c[i].clone()).collect::<Vec<_>>())
            {
                add(&r);
            }
            Ok(true)
        })
        .unwrap();
    }
    t.scan_rows(|_, r| {
        add(&r);
        Ok(())
    })
    .unwrap();
    let has_index_v = t.indexes().iter().any(|i| i.def.name == "t_v");
    (m, has_index_v)
}

/// How a child ended.
#[derive(Debug, PartialEq)]
enum End {
    Crashed,
    Killed,
    Finished,
    /// Any other wait status: an error or a crash of its own.
    Other(i32),
}

/// Runs `strata-sql` on `script` with the fault `plan`; its stdout and how it
/// ended.
fn run_child(dir: &Path, script: &Path, plan: &str) -> (String, End) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata-sql"))
        .arg("--db")
        .arg(dir)
        .args(["--device", "buffered", "--buffer-pool", "1MiB", "sql"])
        .args(["--format", "csv", "-f"])
        .arg(script)
        .env("STRATA_FAULT", plan)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: waiting for our own child; WUNTRACED also returns when it stops
    // itself at the chosen write (`stop-after-writes`).
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
    assert_eq!(r, pid);
    let end = if libc::WIFSTOPPED(status) {
        // SAFETY: signalling our own stopped child, then reaping it.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, &mut status, 0);
        }
        End::Killed
    } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        End::Finished
    } else if libc::WIFEXITED(status)
        && libc::WEXITSTATUS(status) == strata_storage::device::fault::CRASH_EXIT_CODE
    {
        End::Crashed
    } else {
        End::Other(status)
    };
    let (mut out, mut err) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    // Already reaped; this only tells std so.
    let _ = child.wait();
    assert!(
        !matches!(end, End::Other(_)),
        "strata-sql ended by itself ({plan}, {end:?}):\n{err}"
    );
    assert!(
        !err.contains("panicked"),
        "strata-sql panicked ({plan}):\n{err}"
    );
    (out, end)
}

#[test]
fn sql_statements_survive_crashes_at_any_write() {
    crash_loop(false);
}

#[test]
fn sql_statements_on_a_columnar_table_survive_crashes_at_any_write() {
    crash_loop(true);
}

fn crash_loop(columnar: bool) {
    let iterations: usize = std::env::var("STRATA_SQL_CRASH_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if columnar { 100 } else { 200 });
    let (tmp, db) = common::empty_db();
    let mut rng = SmallRng::seed_from_u64(1515);
    let mut next_key = 0i64;
    let start: Vec<Vec<Value>> = (0..400)
        .map(|_| {
            let k = next_key;
            next_key += 1;
            vec![
                Value::Int64(k),
                Value::Int32(rng.random_range(0..60)),
                Value::Str(word(&mut rng)),
            ]
        })
        .collect();
    let indexes = if columnar {
        vec![]
    } else {
        vec![IndexSpec::new("t_k", &["k"]), IndexSpec::new("t_g", &["g"])]
    };
    common::load(&db, "t", "k BIGINT, g INT, v VARCHAR(24)", indexes, start);
    if columnar {
        strata_columns::rewrite(&db, "t", strata_columns::Format::Columns, &NoProgress).unwrap();
    }
    drop(db);
    let dir = tmp.path().join("db");
    let script_path = tmp.path().join("script.sql");
    let (mut model, mut has_index_v) = contents(&common::reopen(&dir));

    let (mut crashed, mut torn, mut killed, mut finished) = (0, 0, 0, 0);
    let mut died_in_unit = std::collections::BTreeSet::new();
    let (mut acknowledged, mut unacknowledged_durable, mut ddl_crossed) = (0, 0, 0);
    let mut largest = 0;
    // Column rows the runs deleted (counted at each merge and at the end).
    let mut marked = 0;
    for it in 0..iterations {
        if columnar && it % 10 == 9 {
            let db = common::reopen(&dir);
            marked += db.table("t").unwrap().delete_set().unwrap().len();
            strata_columns::rewrite(&db, "t", strata_columns::Format::Columns, &NoProgress)
                .unwrap();
            assert_eq!(
                contents(&db).0,
                model,
                "iteration {it}: the merge kept the rows"
            );
        }
        let s = script(&mut rng, &model, next_key, 30, has_index_v, !columnar);
        next_key = s.next_key;
        std::fs::write(&script_path, &s.text).unwrap();
        // A script of 30 units makes some 150-200 writes (log appends, pages
        // evicted from the 1 MiB pool, checkpoints of DDL): most runs die in it.
        // Without indexes (the columnar table) a script makes about a third
        // of those writes.
        let nth = rng.random_range(1..=if columnar { 60 } else { 170 });
        let plan = match it % 3 {
            0 => format!("crash-after-writes:{nth}"),
            1 => format!("crash-after-writes:{nth},torn"),
            _ => format!("stop-after-writes:{nth}"),
        };
        let (out, end) = run_child(&dir, &script_path, &plan);
        let reported = out
            .lines()
            .filter_map(|l| l.strip_prefix("unit "))
            .map(|n| n.trim().parse::<usize>().unwrap())
            .collect::<Vec<_>>();
        // Markers come in order, one per unit.
        for (i, n) in reported.iter().enumerate() {
            assert_eq!(
                *n,
                i + 1,
                "iteration {it}: markers out of order: {reported:?}"
            );
        }
        let r = reported.len();
        if end == End::Finished {
            assert_eq!(
                r,
                s.states.len() - 1,
                "iteration {it}: finished without every marker"
            );
        }

        let db = Database::open(&dir, common::options())
            .unwrap_or_else(|e| panic!("iteration {it} ({plan}, {end:?}): reopen failed: {e}"));
        let (got, index_v) = contents(&db);
        let allowed: Vec<usize> = [r, r + 1]
            .into_iter()
            .filter(|&j| j < s.states.len())
            .collect();
        let Some(&j) = allowed.iter().find(|&&j| s.states[j] == got) else {
            let want = &s.states[r];
            let diff: Vec<String> = want
                .iter()
                .filter(|(k, v)| got.get(k) != Some(v))
                .map(|(k, v)| format!("{k}: want {v:?} got {:?}", got.get(k)))
                .chain(
                    got.keys()
                        .filter(|k| !want.contains_key(k))
                        .map(|k| format!("{k}: extra")),
                )
                .take(10)
                .collect();
            panic!(
                "iteration {it} ({plan}, {end:?}): after {r} acknowledged units the database \
                 holds {} rows, the state after neither unit {r} nor {}: {diff:#?}\nscript:\n{}",
                got.len(),
                r + 1,
                s.text
            );
        };
        check_database(&db, &NoProgress)
            .unwrap_or_else(|e| panic!("iteration {it} ({plan}): check failed: {e}"));
        drop(db);
        if j > r {
            unacknowledged_durable += 1;
        }
        if s.text.contains("INDEX t_v") {
            ddl_crossed += 1;
        }
        acknowledged += r;
        if end != End::Finished {
            died_in_unit.insert(r + 1);
        }
        largest = largest.max(got.len());
        model = got;
        has_index_v = index_v;
        match end {
            End::Finished => finished += 1,
            End::Killed => killed += 1,
            End::Crashed => {
                crashed += 1;
                if plan.ends_with("torn") {
                    torn += 1;
                }
            }
            End::Other(_) => unreachable!("refused in run_child"),
        }
    }
    eprintln!(
        "SQL crash loop: {iterations} iterations, {acknowledged} units acknowledged; \
         {crashed} injected crashes ({torn} torn), {killed} SIGKILLs, {finished} runs that \
         finished first; {unacknowledged_durable} times the unacknowledged unit was durable; \
         {ddl_crossed} scripts with CREATE/DROP INDEX; at most {largest} rows; \
         deaths in {} of the 31 places (30 units and the close)",
        died_in_unit.len()
    );
    assert!(
        crashed + killed >= iterations * 2 / 3,
        "most runs must die before their end ({finished} of {iterations} finished)"
    );
    if columnar {
        marked += common::reopen(&dir)
            .table("t")
            .unwrap()
            .delete_set()
            .unwrap()
            .len();
        eprintln!("columnar: {marked} column rows deleted through the delete set");
        assert!(marked > 0, "the runs deleted column rows");
    }
    // The database keeps working after the last death: a session writes and reads.
    let db = std::sync::Arc::new(common::reopen(&dir));
    let session = strata_sql::SqlSession::new(db).unwrap();
    session
        .execute(&format!("INSERT INTO t VALUES ({next_key}, 1, 'last')"))
        .unwrap();
    let n = common::query(&session, "SELECT count(*) FROM t");
    assert_eq!(n[0][0], (model.len() + 1).to_string());
}
