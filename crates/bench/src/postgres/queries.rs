//! Any SQL queries over any strata tables in PostgreSQL, cold, under each
//! configuration ([`run_postgres_queries`]).

use anyhow::{Context, Result, bail};

use super::cluster::{PgBins, ServerConfig};
use super::load::StrataSource;
use super::options::{PgConfig, PgQueryOptions, timeout_ms, trim_sql, validate_common};
use super::session::Session;
use crate::{ResultRow, ResultSet, Samples};

/// Loads `opts.tables` (see the module documentation) and runs every query
/// under every configuration, `opts.repeat` times each, cold. `queries` are
/// (name, SQL) pairs — PostgreSQL's SQL, one statement, e.g. ("Q6", "SELECT
/// sum(l_extendedprice * l_discount) ..."). Every query is planned under
/// every configuration (a plain EXPLAIN) before the first cold run, so a
/// query PostgreSQL cannot run fails at once.
///
/// Returns one row per (query, config), in that order: the median of its
/// runs (see the module documentation for the columns), and notes for the
/// summary (the server, its settings, what was loaded or reused, whether the
/// runs were really cold, censored points).
pub fn run_postgres_queries(
    opts: &PgQueryOptions,
    queries: &[(String, String)],
    configs: &[PgConfig],
    progress: &mut dyn FnMut(&str),
) -> Result<(ResultSet, Vec<String>)> {
    validate_queries(opts, queries, configs)?;
    let mut notes = Vec::new();
    let source = StrataSource::open(&opts.strata_db, &opts.tables)?;
    let mut session = Session::start(
        source,
        &PgBins::resolve(opts.postgres_bin.as_deref())?,
        &ServerConfig::reads(&opts.shared_buffers),
        &opts.work_dir,
        progress,
        &mut notes,
    )?;
    session.cache.allowed = opts.drop_caches;
    notes.push(
        "PostgreSQL wall_ms is EXPLAIN ANALYZE's Execution Time (TIMING OFF): server side, \
         planning excluded (planning_ms), rows not sent to a client; pages_read = shared hit \
         + read blocks of the execution (buffer accesses; shared_read_blocks alone are the \
         pages read from the OS, temp_* blocks those of spilling sorts and hashes); \
         io_requests is not known (io_requests_known = no); forced configurations turn the \
         other scan methods off with enable_*, which cannot stop a Seq Scan of a table \
         without a usable index (scan_nodes shows what ran)"
            .to_string(),
    );
    for (name, sql) in queries {
        for &config in configs {
            session
                .explain(config, sql)
                .with_context(|| format!("planning query {name} under {config}"))?;
        }
    }

    let timeout_ms = timeout_ms(opts.timeout_s);
    let mut results = ResultSet::new();
    for (qi, (name, sql)) in queries.iter().enumerate() {
        for &config in configs {
            let variant = format!("postgres-{config}");
            let base = ResultRow::new(&opts.figure, "real", &variant, (qi + 1) as f64)
                .with("query", name)
                .with("config", config)
                .with("io_requests_known", "no")
                .with("pg_version", &session.server.version);
            let mut samples = Samples::new();
            for run in 0..opts.repeat {
                progress(&format!(
                    "PostgreSQL {name} ({config}): cold run {}/{}",
                    run + 1,
                    opts.repeat
                ));
                let (row, _) = session
                    .cold_run(config, sql, timeout_ms, base.clone(), progress)
                    .with_context(|| format!("query {name} under {config}"))?;
                let censored = row.extra["censored"] == "yes";
                samples.add(row);
                if censored {
                    notes.push(format!(
                        "PostgreSQL {name} ({config}) timed out ({} s): recorded as censored \
                         after {} of {} runs",
                        opts.timeout_s,
                        run + 1,
                        opts.repeat
                    ));
                    break;
                }
            }
            results.extend(samples.finish().rows().iter().cloned());
        }
    }
    session.cluster.stop()?;
    notes.extend(session.cache.note());
    Ok((results, notes))
}

fn validate_queries(
    opts: &PgQueryOptions,
    queries: &[(String, String)],
    configs: &[PgConfig],
) -> Result<()> {
    validate_common(&opts.tables, opts.repeat, &opts.shared_buffers)?;
    if queries.is_empty() {
        bail!("no queries to run in PostgreSQL");
    }
    for (i, (name, sql)) in queries.iter().enumerate() {
        if name.trim().is_empty() {
            bail!("query {} has no name", i + 1);
        }
        if queries[..i].iter().any(|(n, _)| n == name) {
            bail!("query {name} is given twice");
        }
        if trim_sql(sql).is_empty() {
            bail!("query {name} has no SQL");
        }
    }
    if configs.is_empty() {
        bail!("no PostgreSQL configurations to run (optimizer, seq, index, bitmap)");
    }
    for (i, c) in configs.iter().enumerate() {
        if configs[..i].contains(c) {
            bail!("PostgreSQL configuration {c} is given twice");
        }
    }
    if opts.figure.trim().is_empty() {
        bail!("no figure name for the PostgreSQL rows");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::postgres::options::PgMethod;
    use strata_storage::row::Value;
    use strata_storage::{Database, DbOptions};

    #[test]
    fn query_options_are_checked() {
        let ok = PgQueryOptions::new("/db", &["a", "b"], "/tmp/pg");
        assert_eq!((ok.figure.as_str(), ok.repeat), ("tpch", 3));
        let q = |name: &str, sql: &str| (name.to_string(), sql.to_string());
        let queries = vec![q("Q1", "SELECT 1"), q("Q6", "SELECT 2;")];
        let configs = [PgConfig::Optimizer, PgConfig::Forced(PgMethod::SeqScan)];
        assert!(validate_queries(&ok, &queries, &configs).is_ok());
        let err = |opts: &PgQueryOptions, queries: &[(String, String)], configs: &[PgConfig]| {
            validate_queries(opts, queries, configs)
                .unwrap_err()
                .to_string()
        };
        assert!(err(&ok, &[], &configs).contains("no queries"));
        assert!(err(&ok, &queries, &[]).contains("no PostgreSQL configurations"));
        assert!(
            err(&ok, &queries, &[PgConfig::Optimizer, PgConfig::Optimizer])
                .contains("optimizer is given twice")
        );
        assert!(err(&ok, &[q("Q1", "x"), q("Q1", "y")], &configs).contains("Q1 is given twice"));
        assert!(err(&ok, &[q("Q1", " ; ")], &configs).contains("Q1 has no SQL"));
        assert!(err(&ok, &[q(" ", "SELECT 1")], &configs).contains("query 1 has no name"));
        let with = |f: fn(&mut PgQueryOptions)| {
            let mut o = ok.clone();
            f(&mut o);
            err(&o, &queries, &configs)
        };
        assert!(with(|o| o.tables.clear()).contains("no tables"));
        assert!(with(|o| o.tables.push("a".into())).contains("table a is named twice"));
        assert!(with(|o| o.tables.push("x y".into())).contains("only letters"));
        assert!(with(|o| o.repeat = 0).contains("repeat"));
        assert!(with(|o| o.shared_buffers = "1GB;".into()).contains("shared_buffers"));
        assert!(with(|o| o.figure = String::new()).contains("figure"));
    }

    /// Two tables and a join against a real PostgreSQL:
    /// `cargo test -p strata-bench queries_against -- --ignored --nocapture`.
    /// Needs PostgreSQL (scripts/setup_postgres.sh); starts a private cluster
    /// on 127.0.0.1 in a temporary directory under /tmp, stops it at the end.
    #[test]
    #[ignore = "needs PostgreSQL (scripts/setup_postgres.sh); ~1 minute"]
    fn queries_against_real_postgres() {
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
        for (table, seed) in [("a", 42), ("b", 7)] {
            let mut spec = strata_load::GenSpec::new(strata_load::GenKind::Microbench, 20_000);
            spec.table = Some(table.into());
            spec.seed = seed;
            strata_load::generate(&db, &spec, &strata_storage::db::NoProgress).unwrap();
        }
        // What PostgreSQL must count: b's rows with c2 < 500.
        let mut expect = 0u64;
        db.table("b")
            .unwrap()
            .scan_rows(|_, r| {
                expect += u64::from(matches!(r[1], Value::Int32(v) if v < 500));
                Ok(())
            })
            .unwrap();
        drop(db);
        let mut opts = PgQueryOptions::new(&db_dir, &["a", "b"], root.path().join("pg"));
        opts.repeat = 2;
        opts.timeout_s = 60.0;
        let queries = vec![
            (
                "join".to_string(),
                "SELECT a.c1, b.c3 FROM a JOIN b ON a.c1 = b.c1 WHERE b.c2 < 500".to_string(),
            ),
            (
                "agg".to_string(),
                "SELECT count(*) FROM a WHERE c2 >= 0 AND c2 < 100;".to_string(),
            ),
        ];
        let configs = [PgConfig::Optimizer, PgConfig::Forced(PgMethod::SeqScan)];
        let run = |opts: &PgQueryOptions| {
            let (rows, notes) =
                run_postgres_queries(opts, &queries, &configs, &mut |m| eprintln!("{m}")).unwrap();
            println!("{}", rows.to_csv());
            for n in &notes {
                println!("note: {n}");
            }
            (rows, notes)
        };
        let (rows, notes) = run(&opts);
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("loaded into PostgreSQL")),
            "{notes:?}"
        );
        let got: Vec<(f64, &str, &str)> = rows
            .rows()
            .iter()
            .map(|r| (r.x, r.extra["query"].as_str(), r.variant.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (1.0, "join", "postgres-optimizer"),
                (1.0, "join", "postgres-seq"),
                (2.0, "agg", "postgres-optimizer"),
                (2.0, "agg", "postgres-seq"),
            ]
        );
        for r in rows.rows() {
            assert_eq!((r.figure.as_str(), r.device.as_str()), ("tpch", "real"));
            assert_eq!(r.extra["censored"], "no");
            assert_eq!(r.extra["runs"], "2");
            assert!(r.wall_ms > 0.0 && r.pages_read > 0, "{r:?}");
        }
        for r in &rows.rows()[..2] {
            assert_eq!(r.rows_out, expect, "{r:?}");
        }
        assert_eq!(rows.rows()[2].rows_out, 1);
        assert_eq!(
            rows.rows()[1].extra["scan_nodes"],
            "a: Seq Scan; b: Seq Scan"
        );
        assert_eq!(rows.rows()[3].extra["scan_nodes"], "a: Seq Scan");
        assert_eq!(rows.rows()[1].extra["config"], "seq");

        // Again: both tables are reused; a 1 ms timeout censors the join
        // after its first run, with the plan it was running.
        opts.timeout_s = 0.001;
        let (rows, notes) = run(&opts);
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("reused the PostgreSQL copies of a, b")),
            "{notes:?}"
        );
        let join = &rows.rows()[1];
        assert_eq!(join.extra["censored"], "yes", "{join:?}");
        assert_eq!(join.extra["runs"], "1");
        assert_eq!(join.wall_ms, 1.0);
        assert_eq!(join.extra["scan_nodes"], "a: Seq Scan; b: Seq Scan");
    }
}
