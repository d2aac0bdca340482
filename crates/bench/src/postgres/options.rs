//! What the PostgreSQL experiments take: the sweep's and the query runner's
//! options, the plan PostgreSQL is held to ([`PgConfig`]), the checks both
//! runners make, and the SQL text helpers the cluster, loader and sessions
//! share.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{Result, bail};

/// How long a plain EXPLAIN (no ANALYZE) may take (its `statement_timeout`).
pub(super) const PLAN_LIMIT: Duration = Duration::from_secs(300);

/// What the micro-benchmark sweep runs. [`PgOptions::new`] gives the
/// defaults.
#[derive(Clone, Debug)]
pub struct PgOptions {
    /// The strata database holding the table to copy.
    pub strata_db: PathBuf,
    /// The table (the micro-benchmark table, `microbench`), which must have
    /// an index on `c2`; PostgreSQL's copy gets the same name and indexes.
    pub table: String,
    /// A directory for the cluster, created if missing (e.g.
    /// `<results>/pgdata`, or `/tmp`): the data directory is
    /// `<work_dir>/strata-pgdata`, the server log
    /// `<work_dir>/strata-postgres.log`, the unix socket lives in `work_dir`.
    /// As root, the `postgres` user is made its owner (unless it is
    /// world-writable like `/tmp`), so it must be reachable by that user.
    /// The loaded table stays there, so re-runs skip the load.
    pub work_dir: PathBuf,
    /// Selectivities of Q1 in percent (run in ascending order).
    pub selectivities_pct: Vec<f64>,
    /// `ORDER BY c2` (figure 15a) or not (15b).
    pub ordered: bool,
    /// Cold runs per point; the median is reported.
    pub repeat: usize,
    /// PostgreSQL's `shared_buffers`, e.g. "64MB": much smaller than the table.
    pub shared_buffers: String,
    /// Per query; a query over it is cancelled (`statement_timeout`) and
    /// recorded as censored. 0 or less: no timeout.
    pub timeout_s: f64,
    /// Drop the OS page cache before every query (writes
    /// `/proc/sys/vm/drop_caches`; root only). Off: the runs are
    /// warm-OS-cache, and the rows and notes say so.
    pub drop_caches: bool,
}

impl PgOptions {
    /// Table `microbench`, the quick sweep (0.001% .. 100%), unordered, 3
    /// runs, 64MB shared buffers, 600 s timeout.
    pub fn new(strata_db: impl Into<PathBuf>, work_dir: impl Into<PathBuf>) -> PgOptions {
        PgOptions {
            strata_db: strata_db.into(),
            table: "microbench".to_string(),
            work_dir: work_dir.into(),
            selectivities_pct: vec![0.001, 0.01, 0.1, 1.0, 10.0, 100.0],
            ordered: false,
            repeat: 3,
            shared_buffers: "64MB".to_string(),
            timeout_s: 600.0,
            drop_caches: false,
        }
    }
}

/// What [`run_postgres_queries`] loads and how it runs the queries.
/// [`PgQueryOptions::new`] gives the defaults.
#[derive(Clone, Debug)]
pub struct PgQueryOptions {
    /// The strata database holding the tables.
    pub strata_db: PathBuf,
    /// The tables the queries read (e.g. TPC-H's eight), copied with their
    /// indexes under the same names. Names are letters, digits and `_`; use
    /// lower case so that the queries' unquoted names find them.
    pub tables: Vec<String>,
    /// The cluster's directory, as [`PgOptions::work_dir`].
    pub work_dir: PathBuf,
    /// Cold runs per (query, config); the median is reported.
    pub repeat: usize,
    /// PostgreSQL's `shared_buffers`, e.g. "256MB".
    pub shared_buffers: String,
    /// Per query run; a run over it is cancelled (`statement_timeout`) and
    /// recorded as censored. 0 or less: no timeout.
    pub timeout_s: f64,
    /// The rows' `figure`.
    pub figure: String,
    /// Drop the OS page cache before every query, as
    /// [`PgOptions::drop_caches`].
    pub drop_caches: bool,
    /// PostgreSQL's binaries ([`PgBins::at`](super::PgBins::at)); none: the
    /// newest installed.
    pub postgres_bin: Option<PathBuf>,
}

impl PgQueryOptions {
    /// Figure `tpch`, 3 runs, 256MB shared buffers, 600 s timeout.
    pub fn new(
        strata_db: impl Into<PathBuf>,
        tables: &[&str],
        work_dir: impl Into<PathBuf>,
    ) -> PgQueryOptions {
        PgQueryOptions {
            strata_db: strata_db.into(),
            tables: tables.iter().map(|t| t.to_string()).collect(),
            work_dir: work_dir.into(),
            repeat: 3,
            shared_buffers: "256MB".to_string(),
            timeout_s: 600.0,
            figure: "tpch".to_string(),
            // Only behind `--drop-caches`: a benchmark does not change the machine.
            drop_caches: false,
            postgres_bin: None,
        }
    }
}

/// One of PostgreSQL's scan methods, forced with the `enable_*` settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PgMethod {
    SeqScan,
    IndexScan,
    BitmapHeapScan,
}

impl PgMethod {
    pub const ALL: [PgMethod; 3] = [
        PgMethod::SeqScan,
        PgMethod::IndexScan,
        PgMethod::BitmapHeapScan,
    ];

    /// The plan node that scans the table when this path is used, as EXPLAIN
    /// names it.
    pub fn node_type(self) -> &'static str {
        match self {
            PgMethod::SeqScan => "Seq Scan",
            PgMethod::IndexScan => "Index Scan",
            PgMethod::BitmapHeapScan => "Bitmap Heap Scan",
        }
    }

    /// The micro-benchmark rows' `variant`, e.g. "PostgreSQL Index Scan".
    pub fn variant(self) -> String {
        format!("PostgreSQL {}", self.node_type())
    }

    /// The planner settings that leave only this path: every other scan
    /// method off (index-only scans always). A table without an index is
    /// still read by a Seq Scan: `enable_seqscan = off` only makes it look
    /// expensive.
    pub fn settings(self) -> [(&'static str, bool); 4] {
        [
            ("enable_seqscan", self == PgMethod::SeqScan),
            ("enable_indexscan", self == PgMethod::IndexScan),
            ("enable_bitmapscan", self == PgMethod::BitmapHeapScan),
            ("enable_indexonlyscan", false),
        ]
    }
}

/// How PostgreSQL plans a query: its own choice, or one scan method forced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PgConfig {
    /// PostgreSQL's planner as configured: no setting changed.
    Optimizer,
    /// Only this scan method enabled ([`PgMethod::settings`]).
    Forced(PgMethod),
}

impl PgConfig {
    pub const ALL: [PgConfig; 4] = [
        PgConfig::Optimizer,
        PgConfig::Forced(PgMethod::SeqScan),
        PgConfig::Forced(PgMethod::IndexScan),
        PgConfig::Forced(PgMethod::BitmapHeapScan),
    ];

    /// `optimizer`, `seq`, `index` or `bitmap` (what [`FromStr`] reads).
    pub fn name(self) -> &'static str {
        match self {
            PgConfig::Optimizer => "optimizer",
            PgConfig::Forced(PgMethod::SeqScan) => "seq",
            PgConfig::Forced(PgMethod::IndexScan) => "index",
            PgConfig::Forced(PgMethod::BitmapHeapScan) => "bitmap",
        }
    }

    /// The SET statements of the settings, one per line ("" for the
    /// optimizer: the server's settings).
    pub fn set_statements(self) -> String {
        match self {
            PgConfig::Optimizer => String::new(),
            PgConfig::Forced(m) => m
                .settings()
                .iter()
                .map(|(name, on)| format!("SET {name} = {};\n", if *on { "on" } else { "off" }))
                .collect(),
        }
    }

    /// What a session runs before a query under this configuration: every
    /// setting back to the server's (an earlier query on the same
    /// connection may have changed them), the timeout in ms (0: none), then
    /// [`set_statements`](PgConfig::set_statements).
    pub fn session_sql(self, timeout_ms: u64) -> String {
        format!(
            "RESET ALL;\nSET statement_timeout = {timeout_ms};\n{}",
            self.set_statements()
        )
    }
}

impl fmt::Display for PgConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PgConfig {
    type Err = String;

    fn from_str(s: &str) -> Result<PgConfig, String> {
        PgConfig::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown PostgreSQL configuration {s:?}: expected one of {}",
                    PgConfig::ALL.map(PgConfig::name).join(", ")
                )
            })
    }
}

/// `sql` without surrounding white space and trailing semicolons.
pub(super) fn trim_sql(sql: &str) -> &str {
    sql.trim()
        .trim_end_matches(|c: char| c == ';' || c.is_whitespace())
}

/// A double-quoted SQL identifier.
pub(super) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A single-quoted SQL (or postgresql.conf) string literal.
pub(super) fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Whether `name` is letters, digits and `_` (what the runners accept as a
/// table name).
pub(super) fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `statement_timeout` in ms for a timeout in seconds (0: none).
pub(super) fn timeout_ms(timeout_s: f64) -> u64 {
    if timeout_s > 0.0 {
        ((timeout_s * 1000.0).round() as u64).max(1)
    } else {
        0
    }
}

/// What both runners need: plain, distinct table names, a repeat count and
/// a size for shared_buffers (written into a configuration file).
pub(super) fn validate_common(
    tables: &[String],
    repeat: usize,
    shared_buffers: &str,
) -> Result<()> {
    if tables.is_empty() {
        bail!("no tables to load into PostgreSQL");
    }
    for (i, t) in tables.iter().enumerate() {
        if !is_plain_name(t) {
            bail!("table name {t:?}: only letters, digits and _ are supported");
        }
        if tables[..i].contains(t) {
            bail!("table {t} is named twice");
        }
    }
    if repeat == 0 {
        bail!("repeat must be at least 1");
    }
    let sb = shared_buffers.trim();
    if sb.is_empty() || !sb.chars().all(|c| c.is_ascii_alphanumeric()) {
        bail!("shared_buffers {shared_buffers:?}: expected a size such as 64MB");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_set_statements_and_session_sql() {
        assert_eq!(
            PgConfig::Forced(PgMethod::IndexScan).set_statements(),
            "SET enable_seqscan = off;\nSET enable_indexscan = on;\n\
             SET enable_bitmapscan = off;\nSET enable_indexonlyscan = off;\n"
        );
        assert_eq!(PgConfig::Optimizer.set_statements(), "");
        for m in PgMethod::ALL {
            let on: Vec<&str> = m
                .settings()
                .iter()
                .filter(|(_, on)| *on)
                .map(|(n, _)| *n)
                .collect();
            assert_eq!(on.len(), 1, "{m:?}");
        }
        assert_eq!(PgMethod::SeqScan.settings()[0], ("enable_seqscan", true));
        assert_eq!(
            PgMethod::BitmapHeapScan.variant(),
            "PostgreSQL Bitmap Heap Scan"
        );
        // Names round-trip; anything else is an error listing them.
        for c in PgConfig::ALL {
            assert_eq!(c.name().parse::<PgConfig>(), Ok(c));
            assert_eq!(c.to_string(), c.name());
        }
        assert_eq!(
            " Bitmap ".parse::<PgConfig>(),
            Ok(PgConfig::Forced(PgMethod::BitmapHeapScan))
        );
        let e = "hash".parse::<PgConfig>().unwrap_err();
        assert!(e.contains("optimizer, seq, index, bitmap"), "{e}");

        // What a run sends before its EXPLAIN (explain_sql): the timeout and
        // the settings, after a reset of whatever an earlier query set.
        assert_eq!(
            PgConfig::Forced(PgMethod::SeqScan).session_sql(5000),
            "RESET ALL;\nSET statement_timeout = 5000;\nSET enable_seqscan = on;\n\
             SET enable_indexscan = off;\nSET enable_bitmapscan = off;\n\
             SET enable_indexonlyscan = off;\n"
        );
        assert_eq!(
            PgConfig::Optimizer.session_sql(0),
            "RESET ALL;\nSET statement_timeout = 0;\n"
        );
        assert_eq!(trim_sql("  SELECT 1 ;; \n"), "SELECT 1");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_literal("/tmp/it's"), "'/tmp/it''s'");
    }

    #[test]
    fn timeouts_in_ms_and_common_checks() {
        assert_eq!(timeout_ms(0.0), 0);
        assert_eq!(timeout_ms(-1.0), 0);
        assert_eq!(timeout_ms(0.0001), 1);
        assert_eq!(timeout_ms(2.5), 2500);
        let ok = |t: &[&str]| {
            let t: Vec<String> = t.iter().map(|s| s.to_string()).collect();
            validate_common(&t, 1, "64MB")
        };
        assert!(ok(&["a", "b_2"]).is_ok());
        assert!(ok(&[]).is_err());
        assert!(ok(&["a", "a"]).is_err());
        assert!(ok(&["t; DROP"]).is_err());
        assert!(validate_common(&["a".into()], 0, "64MB").is_err());
        assert!(validate_common(&["a".into()], 1, "64MB'\nfsync=off").is_err());
    }
}
