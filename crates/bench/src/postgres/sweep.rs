//! The Smooth Scan micro-benchmark in PostgreSQL: Q1 at each selectivity
//! with each scan path forced ([`run_postgres_sweep`]).

use anyhow::{Context, Result, bail};
use strata_storage::Table;
use strata_storage::row::DataType;

use super::cluster::{PgBins, ServerConfig};
use super::load::StrataSource;
use super::options::{PgConfig, PgMethod, PgOptions, quote_ident, timeout_ms, validate_common};
use super::session::Session;
use crate::{ResultRow, ResultSet, Samples};

/// The indexed column Q1 ranges over.
const KEY: &str = "c2";

/// The upper bound X of Q1 for a selectivity in percent: selectivity =
/// X / 100001 (c2 is uniform in [0, 100000]); at least 1. The same rounding
/// as strata's sweep, so both engines answer the same query.
pub fn c2_upper(selectivity_pct: f64) -> i64 {
    ((100_001.0 * selectivity_pct / 100.0).round() as i64).max(1)
}

/// How Q1's result is ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// No ORDER BY (figure 15b).
    Unordered,
    /// `ORDER BY c2` (figure 15a).
    Key,
    /// `ORDER BY c2 + 0`: the same order, but one the index cannot provide.
    /// Used for the Bitmap Heap Scan when `ORDER BY c2` would not get one:
    /// PostgreSQL builds no bitmap path from an index path whose only use
    /// is the ordering (index selectivity 1.0, i.e. a range over every row),
    /// and then falls back to the disabled Index Scan.
    KeyExpression,
}

impl Order {
    pub fn of(ordered: bool) -> Order {
        if ordered {
            Order::Key
        } else {
            Order::Unordered
        }
    }

    /// The ORDER BY clause, with a leading space ("" when unordered).
    pub fn sql(self) -> String {
        match self {
            Order::Unordered => String::new(),
            Order::Key => format!(" ORDER BY {KEY}"),
            Order::KeyExpression => format!(" ORDER BY {KEY} + 0"),
        }
    }

    /// The `order_by` column of the results.
    pub(super) fn label(self) -> String {
        match self {
            Order::Unordered => "none".to_string(),
            _ => self.sql().trim_start_matches(" ORDER BY ").to_string(),
        }
    }
}

/// Q1 over `table` at a selectivity.
pub fn q1_sql(table: &str, selectivity_pct: f64, order: Order) -> String {
    format!(
        "SELECT * FROM {} WHERE {KEY} >= 0 AND {KEY} < {}{}",
        quote_ident(table),
        c2_upper(selectivity_pct),
        order.sql()
    )
}

// The micro-benchmark sweep.

/// Runs the sweep; see the module documentation. Returns one row per
/// (selectivity, path) — figure "15a" (ordered) or "15b", device "real" —
/// and notes for the summary: the PostgreSQL version and settings, whether the
/// runs were really cold, plans that were not the forced one, censored points.
pub fn run_postgres_sweep(
    opts: &PgOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<(ResultSet, Vec<String>)> {
    validate(opts)?;
    let mut notes = Vec::new();
    // The strata side first: a wrong database or table fails before any
    // server work.
    let source = StrataSource::open(&opts.strata_db, std::slice::from_ref(&opts.table))?;
    check_q1_table(&source.tables[0])?;
    let mut session = Session::start(
        source,
        &PgBins::find()?,
        &ServerConfig::reads(&opts.shared_buffers),
        &opts.work_dir,
        progress,
        &mut notes,
    )?;
    session.cache.allowed = opts.drop_caches;
    notes.push(
        "PostgreSQL wall_ms is EXPLAIN ANALYZE's Execution Time (TIMING OFF): server side, \
         planning excluded, rows not sent to a client; pages_read = shared hit + read blocks \
         of the execution (buffer accesses: an Index Scan counts a heap page again for \
         every row on it; shared_read_blocks alone are the pages read from the OS); \
         io_requests is not known (io_requests_known = no)"
            .to_string(),
    );

    let timeout_ms = timeout_ms(opts.timeout_s);
    let mut sels = opts.selectivities_pct.clone();
    sels.sort_by(f64::total_cmp);
    sels.dedup();
    let figure = if opts.ordered { "15a" } else { "15b" };
    let mut censored_at: [Option<f64>; 3] = [None; 3];
    let mut results = ResultSet::new();
    let mut mismatches = Vec::new();
    let mut completed = 0usize;
    for &pct in &sels {
        for (mi, &method) in PgMethod::ALL.iter().enumerate() {
            let base = ResultRow::new(figure, "real", method.variant(), pct)
                .with("io_requests_known", "no")
                .with("c2_upper", c2_upper(pct))
                .with("order_by", Order::of(opts.ordered).label())
                .with("pg_version", &session.server.version);
            if let Some(at) = censored_at[mi] {
                progress(&format!(
                    "{}: {pct}% skipped (timed out at {at}%)",
                    method.variant()
                ));
                let mut row = base.with("censored", "yes").with("runs", 0);
                row.wall_ms = timeout_ms as f64;
                row.set("plan_node", "not run");
                results.push(row);
                continue;
            }
            let order = choose_order(&mut session, method, opts, pct, &mut notes)?;
            let base = base.with("order_by", order.label());
            let sql = q1_sql(&opts.table, pct, order);
            let mut samples = Samples::new();
            let mut censored = false;
            for run in 0..opts.repeat {
                progress(&format!(
                    "{} at {pct}%{}: cold run {}/{}",
                    method.variant(),
                    if opts.ordered { " ordered" } else { "" },
                    run + 1,
                    opts.repeat
                ));
                let config = PgConfig::Forced(method);
                let (mut row, stats) =
                    session.cold_run(config, &sql, timeout_ms, base.clone(), progress)?;
                let node = stats.scan_node(&opts.table).with_context(|| {
                    format!(
                        "the plan of {sql} does not read {}: {}",
                        opts.table, stats.plan
                    )
                })?;
                row.set("plan_node", node);
                censored = row.extra["censored"] == "yes";
                if !censored {
                    completed += 1;
                    if node != method.node_type() {
                        mismatches.push(format!(
                            "{} at {pct}% ran as {}",
                            method.variant(),
                            stats.plan
                        ));
                    }
                }
                samples.add(row);
                if censored {
                    break;
                }
            }
            results.extend(samples.finish().rows().iter().cloned());
            if censored {
                censored_at[mi] = Some(pct);
                notes.push(format!(
                    "{} timed out ({} s) at {pct}%: recorded as censored, not run at higher \
                     selectivities",
                    method.variant(),
                    opts.timeout_s
                ));
            }
        }
    }
    session.cluster.stop()?;
    if mismatches.is_empty() {
        if completed > 0 {
            notes.push(format!(
                "all {completed} completed PostgreSQL runs used the forced scan node"
            ));
        }
    } else {
        notes.push(format!(
            "PostgreSQL did not use the forced path: {}",
            mismatches.join("; ")
        ));
    }
    notes.extend(session.cache.note());
    Ok((results, notes))
}

fn validate(opts: &PgOptions) -> Result<()> {
    validate_common(
        std::slice::from_ref(&opts.table),
        opts.repeat,
        &opts.shared_buffers,
    )?;
    if opts.selectivities_pct.is_empty() {
        bail!("no selectivities to run");
    }
    if let Some(s) = opts
        .selectivities_pct
        .iter()
        .find(|s| !(s.is_finite() && **s > 0.0 && **s <= 100.0))
    {
        bail!("selectivity {s}% is not in (0, 100]");
    }
    Ok(())
}

/// Q1 needs an integer c2 with an index on it.
pub(super) fn check_q1_table(t: &Table) -> Result<()> {
    let key = t
        .schema()
        .columns
        .iter()
        .find(|c| c.name == KEY)
        .with_context(|| {
            format!(
                "table {} has no column {KEY} for Q1 to range over",
                t.name()
            )
        })?;
    if !matches!(key.ty, DataType::Int32 | DataType::Int64) {
        bail!("column {KEY} of {} is {}, not an integer", t.name(), key.ty);
    }
    if t.index_on(KEY).is_none() {
        bail!(
            "table {} has no index on {KEY}: PostgreSQL gets the strata table's indexes, and \
             Q1's Index and Bitmap Heap Scans need one",
            t.name()
        );
    }
    Ok(())
}

/// `ORDER BY c2`, or for a Bitmap Heap Scan whose plan with it is not one,
/// [`Order::KeyExpression`] if that gets one (said in the notes); a plain
/// EXPLAIN on the running server decides.
fn choose_order(
    session: &mut Session,
    method: PgMethod,
    opts: &PgOptions,
    pct: f64,
    notes: &mut Vec<String>,
) -> Result<Order> {
    let order = Order::of(opts.ordered);
    if order == Order::Unordered || method != PgMethod::BitmapHeapScan {
        return Ok(order);
    }
    let mut node = |order| -> Result<Option<String>> {
        let plan = session.explain(PgConfig::Forced(method), &q1_sql(&opts.table, pct, order))?;
        Ok(plan.scan_node(&opts.table).map(str::to_string))
    };
    let planned = node(order)?;
    if planned.as_deref() == Some(method.node_type()) {
        return Ok(order);
    }
    let alt = Order::KeyExpression;
    if node(alt)?.as_deref() != Some(method.node_type()) {
        return Ok(order);
    }
    notes.push(format!(
        "{} at {pct}%: with ORDER BY {KEY} PostgreSQL planned {} (it builds no bitmap path \
         from an index whose only use is the ordering, as when the range covers every row), \
         so this point ran with{} (the same order; order_by column)",
        method.variant(),
        planned.as_deref().unwrap_or("no scan of the table"),
        alt.sql()
    ));
    Ok(alt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_storage::{Database, DbOptions};

    #[test]
    fn q1_bounds_match_strata() {
        assert_eq!(c2_upper(100.0), 100_001);
        assert_eq!(c2_upper(1.0), 1000);
        assert_eq!(c2_upper(0.001), 1);
        assert_eq!(c2_upper(0.0001), 1);
        assert_eq!(c2_upper(50.0), 50_001);
    }

    #[test]
    fn q1_and_its_order() {
        let sql = q1_sql("microbench", 1.0, Order::Key);
        assert_eq!(
            sql,
            "SELECT * FROM \"microbench\" WHERE c2 >= 0 AND c2 < 1000 ORDER BY c2"
        );
        assert!(q1_sql("t", 100.0, Order::KeyExpression).ends_with("c2 < 100001 ORDER BY c2 + 0"));
        assert_eq!(Order::KeyExpression.label(), "c2 + 0");
        assert_eq!(Order::of(true).label(), "c2");
        assert_eq!(Order::of(false).label(), "none");
    }

    #[test]
    fn sweep_options_are_checked() {
        let ok = PgOptions::new("/db", "/tmp/pg");
        assert!(validate(&ok).is_ok());
        let bad = |f: fn(&mut PgOptions)| {
            let mut o = ok.clone();
            f(&mut o);
            validate(&o).is_err()
        };
        assert!(bad(|o| o.table = "t; DROP".into()));
        assert!(bad(|o| o.repeat = 0));
        assert!(bad(|o| o.selectivities_pct = vec![0.0]));
        assert!(bad(|o| o.selectivities_pct = vec![101.0]));
        assert!(bad(|o| o.shared_buffers = "64MB'\nfsync=off".into()));
    }

    /// The whole sweep against a real PostgreSQL on a 50k-row table:
    /// `cargo test -p strata-bench postgres -- --ignored --nocapture`.
    /// Needs PostgreSQL (scripts/setup_postgres.sh); starts a private cluster
    /// on 127.0.0.1 in a temporary directory under /tmp, stops it at the end.
    #[test]
    #[ignore = "needs PostgreSQL (scripts/setup_postgres.sh); ~1 minute"]
    fn sweep_against_real_postgres() {
        let root = tempfile::Builder::new()
            .prefix("strata-pg-test")
            .tempdir_in("/tmp")
            .unwrap();
        let db_dir = root.path().join("strata.db");
        let db = Database::create(
            &db_dir,
            DbOptions {
                direct_io: false,
                ..DbOptions::default()
            },
        )
        .unwrap();
        let spec = strata_load::GenSpec::new(strata_load::GenKind::Microbench, 50_000);
        strata_load::generate(&db, &spec, &strata_storage::db::NoProgress).unwrap();
        drop(db);
        let mut opts = PgOptions::new(&db_dir, root.path().join("pg"));
        // 100% ordered: the Bitmap Heap Scan needs ORDER BY c2 + 0.
        opts.selectivities_pct = vec![0.1, 1.0, 100.0];
        opts.repeat = 1;
        opts.timeout_s = 60.0;
        for ordered in [false, true] {
            opts.ordered = ordered;
            let (rows, notes) = run_postgres_sweep(&opts, &mut |m| eprintln!("{m}")).unwrap();
            println!("{}", rows.to_csv());
            for n in &notes {
                println!("note: {n}");
            }
            assert_eq!(rows.len(), 9);
            for r in rows.rows() {
                assert_eq!(r.figure, if ordered { "15a" } else { "15b" });
                assert_eq!(r.extra["censored"], "no");
                assert_eq!(
                    r.extra["plan_node"],
                    r.variant.trim_start_matches("PostgreSQL ")
                );
                assert!(r.wall_ms > 0.0 && r.pages_read > 0);
            }
            // Every path returns the same rows at a selectivity, about
            // 50k * selectivity of them.
            for x in [0.1, 1.0, 100.0] {
                let n: Vec<u64> = rows
                    .rows()
                    .iter()
                    .filter(|r| r.x == x)
                    .map(|r| r.rows_out)
                    .collect();
                assert!(n.iter().all(|&v| v == n[0]), "{x}: {n:?}");
                let expect = 50_000.0 * x / 100.0;
                assert!(
                    (n[0] as f64 - expect).abs() < expect * 0.3 + 10.0,
                    "{x}: {n:?}"
                );
            }
            let order_by = |v: &str, x: f64| {
                let r = rows.rows().iter().find(|r| r.variant == v && r.x == x);
                r.unwrap().extra["order_by"].clone()
            };
            if ordered {
                // The second pass reuses the loaded table.
                assert!(notes.iter().any(|n| n.starts_with("reused")), "{notes:?}");
                assert_eq!(order_by("PostgreSQL Bitmap Heap Scan", 100.0), "c2 + 0");
                assert_eq!(order_by("PostgreSQL Bitmap Heap Scan", 1.0), "c2");
                assert_eq!(order_by("PostgreSQL Index Scan", 100.0), "c2");
            } else {
                assert_eq!(order_by("PostgreSQL Bitmap Heap Scan", 100.0), "none");
            }
        }
        // A timeout of 1 ms censors the slow points; a censored path is not
        // run at higher selectivities.
        opts.timeout_s = 0.001;
        opts.ordered = false;
        let (rows, notes) = run_postgres_sweep(&opts, &mut |m| eprintln!("{m}")).unwrap();
        println!("{}", rows.to_csv());
        for n in &notes {
            println!("note: {n}");
        }
        assert_eq!(rows.len(), 9);
        let censored: Vec<&ResultRow> = rows
            .rows()
            .iter()
            .filter(|r| r.extra["censored"] == "yes")
            .collect();
        assert!(!censored.is_empty(), "nothing took over 1 ms");
        for r in &censored {
            assert_eq!(r.wall_ms, 1.0);
            let later = rows
                .rows()
                .iter()
                .filter(|o| o.variant == r.variant && o.x > r.x);
            for o in later {
                assert_eq!(o.extra["censored"], "yes");
                assert_eq!(o.extra["runs"], "0");
            }
        }
        let ran = censored.iter().find(|r| r.extra["runs"] != "0").unwrap();
        assert_eq!(
            ran.extra["plan_node"],
            ran.variant.trim_start_matches("PostgreSQL "),
            "the plan a censored run was using"
        );
        assert!(notes.iter().any(|n| n.contains("timed out")), "{notes:?}");
    }
}
