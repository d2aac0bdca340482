//! The result files: `writes-runs.csv` (every run), `writes.csv` (the
//! medians) and `writes.md` (strata beside PostgreSQL with the ratio and
//! whether the goal was met, every run, where strata's time goes, the
//! configuration, and the command and commit that made it).

use std::path::PathBuf;

use anyhow::{Context, Result};
use strata_bench::report::summary::num;
use strata_bench::{ResultRow, ResultSet, Summary};

use crate::workload::Workload;
use crate::{Report, pg};

/// The bulk insert's absolute goal, rows/s.
pub const INSERT_GOAL_ROWS_PER_S: f64 = 1_000_000.0;

/// The medians with `rate` recomputed from the median time (the other
/// columns are the median run's).
pub fn with_median_rates(medians: ResultSet) -> ResultSet {
    medians
        .rows()
        .iter()
        .cloned()
        .map(|mut r| {
            if let Some(work) = r.extra_f64("work") {
                r.set("rate", format!("{:.1}", work / (r.wall_ms / 1e3)));
            }
            r
        })
        .collect()
}

fn find<'a>(
    rows: &'a ResultSet,
    engine: &str,
    w: Workload,
    run: Option<usize>,
) -> Option<&'a ResultRow> {
    rows.rows().iter().find(|r| {
        r.variant == engine
            && r.get("workload") == w.name()
            && run.is_none_or(|n| r.extra_f64("run") == Some((n + 1) as f64))
    })
}

fn rate(r: Option<&ResultRow>) -> Option<f64> {
    r?.extra_f64("rate")
}

fn show(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| num(v.round()))
}

fn ratio(s: Option<f64>, p: Option<f64>) -> Option<f64> {
    match (s, p) {
        (Some(s), Some(p)) if p > 0.0 => Some(s / p),
        _ => None,
    }
}

fn show_ratio(r: Option<f64>) -> String {
    r.map_or("—".into(), |r| format!("{:.2}", r))
}

/// The workload as the table names it.
fn title(w: Workload, clients: usize) -> String {
    match w {
        Workload::UpdateOne => "single-row UPDATE, 1 client".into(),
        Workload::UpdateMany => format!("single-row UPDATE, {clients} clients"),
        Workload::InsertSelect => "INSERT INTO acct2 SELECT * FROM acct".into(),
        Workload::DeleteRange => "DELETE FROM acct WHERE k < rows/10".into(),
    }
}

/// The goal and whether it was met.
fn goal(w: Workload, strata: Option<f64>, pg: Option<f64>) -> (String, String) {
    let vs_pg = ratio(strata, pg).map(|r| r >= 1.0);
    match w {
        Workload::InsertSelect => {
            let fast = strata.map(|s| s >= INSERT_GOAL_ROWS_PER_S);
            let met = match (vs_pg, fast) {
                (Some(a), Some(b)) => yes_no(a && b),
                (None, Some(b)) => format!("{} (1M rows/s only; no PostgreSQL)", yes_no(b)),
                _ => "—".into(),
            };
            ("≥ PostgreSQL and ≥ 1M rows/s".into(), met)
        }
        _ => (
            "≥ PostgreSQL".into(),
            vs_pg.map_or("— (no PostgreSQL)".into(), yes_no),
        ),
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes".into() } else { "no".into() }
}

/// Writes the three files into `report.options.out`; returns the markdown's
/// path.
pub fn write(report: &Report) -> Result<PathBuf> {
    let o = &report.options;
    std::fs::create_dir_all(&o.out).with_context(|| format!("creating {}", o.out.display()))?;
    report.runs.write_csv(o.out.join("writes-runs.csv"))?;
    report.medians.write_csv(o.out.join("writes.csv"))?;
    let md = o.out.join("writes.md");
    summary(report)
        .write(&md)
        .with_context(|| format!("writing {}", md.display()))?;
    Ok(md)
}

/// The markdown summary.
pub fn summary(report: &Report) -> Summary {
    let o = &report.options;
    let m = &report.medians;
    let mut s = Summary::new("Write throughput: strata beside PostgreSQL");
    s.paragraph(&format!(
        "`acct (k BIGINT NOT NULL, v BIGINT NOT NULL, pad VARCHAR(40) NOT NULL)`, {} rows, \
         B-tree index on `k`, the same rows in both engines. Medians of {} runs; in each run \
         every workload runs on both engines, one after the other (strata first in odd runs, \
         PostgreSQL first in even ones), each after a checkpoint. Updates: {} statements per \
         client, keys uniform over the table, every statement its own durable commit. \
         Higher is better; strata / PostgreSQL above 1 means strata is faster.",
        o.rows, o.runs, o.updates
    ));
    let mut rows = Vec::new();
    for w in Workload::ALL {
        let (sr, pr) = (find(m, "strata", w, None), find(m, "postgres", w, None));
        let (s_rate, p_rate) = (rate(sr), rate(pr));
        let (g, met) = goal(w, s_rate, p_rate);
        let secs =
            |r: Option<&ResultRow>| r.map_or("—".into(), |r| format!("{:.3}", r.wall_ms / 1e3));
        rows.push(vec![
            title(w, o.clients),
            w.unit().to_string(),
            show(s_rate),
            show(p_rate),
            show_ratio(ratio(s_rate, p_rate)),
            secs(sr),
            secs(pr),
            g,
            met,
        ]);
    }
    s.table(
        &[
            "workload",
            "unit",
            "strata",
            "PostgreSQL",
            "strata / PostgreSQL",
            "strata s",
            "PostgreSQL s",
            "goal",
            "goal met?",
        ],
        rows,
    );

    if let Some(r) = find(m, "strata", Workload::UpdateMany, None)
        && let Some(syncs) = r.extra_f64("log_syncs")
    {
        let statements = r.extra_f64("work").unwrap_or(0.0);
        let one =
            find(m, "strata", Workload::UpdateOne, None).and_then(|r| r.extra_f64("log_syncs"));
        s.heading("Group commit");
        s.paragraph(&format!(
            "strata's log syncs (`Wal::syncs`) in the median run: {} for {} statements from \
             {} clients, {:.2} commits per sync{}.",
            num(syncs),
            num(statements),
            o.clients,
            if syncs > 0.0 { statements / syncs } else { 0.0 },
            one.map_or(String::new(), |one| format!(
                " (one client: {} syncs for {} statements)",
                num(one),
                o.updates
            ))
        ));
    }

    s.heading("Every run");
    s.paragraph("The disk's sync latency before each run, and each workload's rate.");
    let mut per_run = Vec::new();
    for run in 0..o.runs {
        for w in Workload::ALL {
            let (sr, pr) = (
                rate(find(&report.runs, "strata", w, Some(run))),
                rate(find(&report.runs, "postgres", w, Some(run))),
            );
            let sync = find(&report.runs, "strata", w, Some(run))
                .map(|r| r.get("fdatasync_us_before_run"))
                .unwrap_or_default();
            per_run.push(vec![
                (run + 1).to_string(),
                sync,
                w.name().to_string(),
                show(sr),
                show(pr),
                show_ratio(ratio(sr, pr)),
            ]);
        }
    }
    s.table(
        &[
            "run",
            "fdatasync µs",
            "workload",
            "strata",
            "PostgreSQL",
            "strata / PostgreSQL",
        ],
        per_run,
    );
    s.paragraph(
        "fdatasync µs: the median time of `fdatasync` after a small overwrite of a \
         preallocated file beside the strata database, measured just before the run — the \
         floor of a durable commit on this disk at that moment. On this shared machine it \
         moves between about 0.1 and 4 ms from minute to minute; a single-row update with a \
         commit each is bound by it when it is high and by the statement's CPU when it is low.",
    );

    s.heading("Where a statement's time goes");
    let mut diag: Vec<Vec<String>> = Vec::new();
    for (engine, name) in [("strata", "strata"), ("postgres", "PostgreSQL")] {
        if let Some(r) = rate(find(m, engine, Workload::UpdateOne, None)) {
            diag.push(vec![
                format!("{name}: single-row UPDATE with its durable commit, 1 client (1 / rate)"),
                format!("{:.0}", 1e6 / r),
            ]);
        }
    }
    diag.extend(
        report
            .diagnostics
            .iter()
            .map(|(what, us)| vec![what.clone(), format!("{us:.0}")]),
    );
    s.table(&["median latency of", "µs"], diag);
    s.paragraph(
        "The first two rows are the workloads' medians. The rest were measured after the \
         runs, one key at a time, each statement and step in turn (so that a busy moment of \
         the shared disk or CPUs affects all of them alike): the storage-level change and \
         its commit are what the SQL update does below SQL; the rest of the SQL update's \
         time is parsing, planning (`strata_sql::dml::direct_dml`: from the syntax tree, not as \
         a DataFusion query) and running the statement, handing it to the session's \
         statement thread, and reading the row's heap page and index leaf, which the \
         storage-level change, on the same key right after, finds in the pool. \
         SELECT 1 and the point SELECT are planned by DataFusion as queries.",
    );

    s.heading("Configuration");
    let mut notes = vec![
        format!(
            "strata: database {}, device {}, buffer pool {} MiB; every statement through \
             `SqlSession::execute` as SQL text, autocommitted (its own write transaction and \
             durable commit: log append, then `fdatasync` of the log segment, group commit). \
             Several clients are threads of one process, each with its own `SqlSession` over \
             one shared `Arc<Database>` — how strata serves several clients.",
            o.bench_db.display(),
            o.device,
            o.db_options.buffer_pool_bytes >> 20
        ),
        format!(
            "PostgreSQL: the same SQL text with the simple query protocol (parsed and planned \
             every time, one round trip), autocommitted, over the unix socket; {} clients = {} \
             connections on {} threads. Configuration written by the benchmark: {}; wal_level \
             left at its default; shared_buffers = {} (strata's buffer pool); autovacuum = off, \
             so acct is VACUUM ANALYZEd between runs (untimed).",
            o.clients,
            o.clients,
            o.clients,
            pg::DURABILITY
                .iter()
                .map(|(n, v)| format!("{n} = {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            o.shared_buffers
        ),
        "Before each workload, untimed, each engine checkpoints and reads acct and its index \
         into its buffer pool (strata: `Database::prewarm`; PostgreSQL: `pg_prewarm`), so no \
         rate includes reading pages the other engine has cached (PostgreSQL's data also sits \
         in the OS page cache; strata reads with direct I/O)."
            .into(),
        "Between runs the deleted rows are put back with `INSERT INTO acct SELECT * FROM acct2 \
         WHERE k < rows/10` (untimed); acct2 is dropped and created empty before each INSERT \
         ... SELECT. After every run both engines held all rows, `sum(v)` equal to the updates \
         made, and a full acct2, or the run would have failed."
            .to_string(),
        format!(
            "Machine: {} CPUs available to this process; both engines on the same file system \
             (strata {}, PostgreSQL {}).",
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            o.bench_db.display(),
            o.pg_dir.display()
        ),
    ];
    notes.extend(report.notes.iter().cloned());
    s.bullets(notes);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goals() {
        assert_eq!(goal(Workload::UpdateOne, Some(2.0), Some(1.0)).1, "yes");
        assert_eq!(goal(Workload::UpdateOne, Some(0.5), Some(1.0)).1, "no");
        assert!(
            goal(Workload::UpdateOne, Some(0.5), None)
                .1
                .contains("no PostgreSQL")
        );
        assert_eq!(goal(Workload::InsertSelect, Some(2e6), Some(1e6)).1, "yes");
        assert_eq!(goal(Workload::InsertSelect, Some(9e5), Some(1e5)).1, "no");
        assert!(
            goal(Workload::InsertSelect, Some(2e6), None)
                .1
                .starts_with("yes (1M")
        );
        assert_eq!(show_ratio(ratio(Some(3.0), Some(2.0))), "1.50");
        assert_eq!(show_ratio(ratio(Some(3.0), None)), "—");
    }
}
