//! PostgreSQL side by side with strata (`strata bench smooth-scan postgres`).
//!
//! The Smooth Scan paper compares its operator with PostgreSQL's own access
//! paths. This module runs that comparison on this machine with the real
//! PostgreSQL: it finds the Debian packages' binaries (installing the
//! `postgresql` package when missing and running as root), starts a private
//! cluster reachable only on 127.0.0.1 and a unix socket in the work
//! directory, loads exactly the rows of a strata table (streamed from
//! [`Table::scan_rows`](strata_storage::Table::scan_rows) into `COPY ... FROM
//! STDIN`), and runs the micro-benchmark query Q1
//! (`SELECT * FROM t WHERE c2 >= 0 AND c2 < X`, optionally `ORDER BY c2`) at
//! each selectivity with each of PostgreSQL's three paths forced by the
//! `enable_*` settings: Seq Scan, Index Scan, Bitmap Heap Scan.
//!
//! Every run is cold: the server is stopped, the OS page cache is dropped
//! (where permitted; the notes say when it was not, and the rows say
//! `os_cache = warm`), and the server is started again before the query runs
//! as `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON)`. Its "Execution
//! Time" is the row's `wall_ms` (server side: planning excluded, rows not sent
//! to a client, as strata's paths count rows without sending them); the plan
//! node that really scanned the table is recorded and checked against the
//! forced one. A run over the timeout is cancelled by `statement_timeout` and
//! recorded as censored (`wall_ms` = the timeout), and that path is not run at
//! higher selectivities. With `ORDER BY c2` at a selectivity covering every
//! row PostgreSQL plans no bitmap scan at all (see [`Order::KeyExpression`]);
//! that point then runs with `ORDER BY c2 + 0`, said in the notes and the
//! `order_by` column.
//!
//! Besides the standard columns, rows carry `plan_node` (the scan node that
//! ran), `plan` (every node), `order_by`, `censored`, `os_cache` (`dropped`
//! or `warm`), `io_requests_known` (`no`), `shared_hit_blocks`,
//! `shared_read_blocks`, `temp_read_blocks`, `temp_written_blocks`,
//! `io_read_ms`, `planning_ms`, `client_ms` (psql's whole run), a bitmap
//! scan's `exact_heap_blocks`/`lossy_heap_blocks`, `c2_upper` (X),
//! `pg_version` and `runs`.
//!
//! The cluster outlives an interrupted run (pg_ctl detaches the server from
//! our session); the next run finds it, stops it and goes on.
//!
//! PostgreSQL refuses to run as root: as root, the server, `initdb`, `pg_ctl`
//! and `psql` run as the unprivileged `postgres` user (created if missing),
//! which is given the work directory; clients authenticate by peer (the OS
//! user) on the socket, and TCP needs a password nobody has.

use std::fs;
use std::io::{self, BufWriter, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value as Json;
use strata_storage::types::{DataType, Schema, Value, format_date, format_decimal};
use strata_storage::{Database, DbOptions, StorageError};

use crate::{ResultRow, ResultSet, Samples};

/// The first port tried for the private cluster on 127.0.0.1 (when it is
/// taken, the first free one of the next 19).
pub const DEFAULT_PORT: u16 = 54329;
const PORT_TRIES: u16 = 20;
/// Where the Debian packages put each major version's binaries.
const PG_LIB: &str = "/usr/lib/postgresql";
/// The unprivileged OS user the server runs as when we are root.
const PG_OS_USER: &str = "postgres";
/// The indexed column Q1 ranges over.
const KEY: &str = "c2";
/// How long `pg_ctl` waits for a start or a stop.
const PG_CTL_WAIT_S: u32 = 300;

/// What to run. [`PgOptions::new`] gives the defaults.
#[derive(Clone, Debug)]
pub struct PgOptions {
    /// The strata database holding the table to copy.
    pub strata_db: PathBuf,
    /// The table (the micro-benchmark table, `microbench`); PostgreSQL's copy
    /// gets the same name and an index `<table>_c2`.
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
        }
    }
}

/// One of PostgreSQL's access paths for Q1, forced with the `enable_*`
/// settings.
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

    /// The result rows' `variant`, e.g. "PostgreSQL Index Scan".
    pub fn variant(self) -> String {
        format!("PostgreSQL {}", self.node_type())
    }

    /// The planner settings that leave only this path: every other scan
    /// method off (index-only scans always, though `SELECT *` cannot use one).
    pub fn settings(self) -> [(&'static str, bool); 4] {
        [
            ("enable_seqscan", self == PgMethod::SeqScan),
            ("enable_indexscan", self == PgMethod::IndexScan),
            ("enable_bitmapscan", self == PgMethod::BitmapHeapScan),
            ("enable_indexonlyscan", false),
        ]
    }

    /// [`PgMethod::settings`] as SET statements, one per line.
    pub fn set_statements(self) -> String {
        self.settings()
            .iter()
            .map(|(name, on)| format!("SET {name} = {};\n", if *on { "on" } else { "off" }))
            .collect()
    }
}

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
    fn label(self) -> String {
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

/// The psql script of one run: the timeout, the path's settings, then Q1
/// under `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON)` (or a plain
/// `EXPLAIN (FORMAT JSON)` when `analyze` is false: the plan a censored run
/// would have used). psql sends each statement on its own, so the timeout
/// applies to the EXPLAIN.
pub fn query_script(
    method: PgMethod,
    table: &str,
    selectivity_pct: f64,
    order: Order,
    timeout_ms: u64,
    analyze: bool,
) -> String {
    let explain = if analyze {
        "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON)"
    } else {
        "EXPLAIN (FORMAT JSON)"
    };
    format!(
        "SET statement_timeout = {timeout_ms};\n{}{explain} {};\n",
        method.set_statements(),
        q1_sql(table, selectivity_pct, order)
    )
}

/// A double-quoted SQL identifier.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A single-quoted SQL (or postgresql.conf) string literal.
fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The PostgreSQL type of a strata column type.
pub fn pg_type(ty: &DataType) -> String {
    match ty {
        DataType::Int32 => "integer".into(),
        DataType::Int64 => "bigint".into(),
        DataType::Float64 => "double precision".into(),
        DataType::Decimal { precision, scale } => format!("numeric({precision},{scale})"),
        DataType::Date => "date".into(),
        DataType::Char { len } => format!("char({len})"),
        DataType::Varchar { len } => format!("varchar({len})"),
        DataType::Bool => "boolean".into(),
    }
}

/// `CREATE TABLE` for a strata schema: the micro-benchmark table becomes
/// `(c1 integer NOT NULL, ..., c10 integer NOT NULL)`.
pub fn create_table_sql(table: &str, schema: &Schema) -> String {
    let cols: Vec<String> = schema
        .columns
        .iter()
        .map(|c| {
            format!(
                "{} {}{}",
                quote_ident(&c.name),
                pg_type(&c.ty),
                if c.nullable { "" } else { " NOT NULL" }
            )
        })
        .collect();
    format!("CREATE TABLE {} ({})", quote_ident(table), cols.join(", "))
}

/// Appends one row in `COPY ... FROM STDIN` text format: tab-separated,
/// `\N` for NULL, backslash escapes for backslash, tab, newline and carriage
/// return, a newline at the end. `types` gives each column's type (a
/// DECIMAL's scale).
pub fn copy_text_line(row: &[Value], types: &[DataType], out: &mut Vec<u8>) {
    use std::fmt::Write as _;
    let mut field = String::new();
    for (i, v) in row.iter().enumerate() {
        if i > 0 {
            out.push(b'\t');
        }
        field.clear();
        match v {
            Value::Null => field.push_str("\\N"),
            Value::Int32(x) => write!(field, "{x}").expect("write to String"),
            Value::Int64(x) => write!(field, "{x}").expect("write to String"),
            Value::Float64(x) if x.is_nan() => field.push_str("NaN"),
            Value::Float64(x) if x.is_infinite() => {
                field.push_str(if *x > 0.0 { "Infinity" } else { "-Infinity" })
            }
            // Display prints the shortest text that reads back as the same
            // double, without an exponent.
            Value::Float64(x) => write!(field, "{x}").expect("write to String"),
            Value::Decimal(x) => {
                let scale = match types.get(i) {
                    Some(DataType::Decimal { scale, .. }) => *scale,
                    _ => 0,
                };
                field.push_str(&format_decimal(*x, scale));
            }
            Value::Date(d) => field.push_str(&format_date(*d)),
            Value::Bool(b) => field.push(if *b { 't' } else { 'f' }),
            Value::Str(s) => {
                for ch in s.chars() {
                    match ch {
                        '\\' => field.push_str("\\\\"),
                        '\t' => field.push_str("\\t"),
                        '\n' => field.push_str("\\n"),
                        '\r' => field.push_str("\\r"),
                        c => field.push(c),
                    }
                }
            }
        }
        out.extend_from_slice(field.as_bytes());
    }
    out.push(b'\n');
}

/// What one `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` reports.
#[derive(Clone, Debug, PartialEq)]
pub struct ExplainStats {
    /// "Execution Time" (None for a plain EXPLAIN).
    pub execution_ms: Option<f64>,
    pub planning_ms: Option<f64>,
    /// The node that scanned the table ("Seq Scan", "Index Scan", ...).
    pub scan_node: String,
    /// Every node, top down in pre-order, joined by " > ", e.g.
    /// "Sort > Bitmap Heap Scan > Bitmap Index Scan".
    pub plan: String,
    /// The top node's "Actual Rows" (0 for a plain EXPLAIN).
    pub rows_out: u64,
    /// Buffers of the execution (the top node counts its children's;
    /// planning's are not included).
    pub shared_hit_blocks: u64,
    pub shared_read_blocks: u64,
    pub temp_read_blocks: u64,
    pub temp_written_blocks: u64,
    /// "I/O Read Time" (with `track_io_timing`).
    pub io_read_ms: Option<f64>,
    /// A Bitmap Heap Scan's "Exact Heap Blocks" and "Lossy Heap Blocks".
    pub exact_heap_blocks: Option<u64>,
    pub lossy_heap_blocks: Option<u64>,
}

/// Parses EXPLAIN's JSON output (anything before the opening `[`, e.g. psql
/// command tags, is skipped). `table` names the relation whose scan node is
/// reported.
pub fn parse_explain_json(text: &str, table: &str) -> Result<ExplainStats> {
    let start = text
        .find('[')
        .with_context(|| format!("no EXPLAIN JSON in psql's output: {text:?}"))?;
    let doc: Json = serde_json::from_str(text[start..].trim())
        .with_context(|| format!("EXPLAIN output is not JSON: {text:?}"))?;
    let top = doc
        .get(0)
        .context("EXPLAIN JSON is not a one-element array")?;
    let plan = top.get("Plan").context("EXPLAIN JSON has no \"Plan\"")?;
    let num = |node: &Json, key: &str| node.get(key).and_then(Json::as_f64);
    let count = |node: &Json, key: &str| num(node, key).map(|v| v.round() as u64);

    let mut nodes = Vec::new();
    let mut scan_node = None;
    let mut lossy = (None, None);
    let mut stack = vec![plan];
    while let Some(node) = stack.pop() {
        let ty = node
            .get("Node Type")
            .and_then(Json::as_str)
            .context("a plan node without \"Node Type\"")?;
        nodes.push(ty.to_string());
        if scan_node.is_none() && node.get("Relation Name").and_then(Json::as_str) == Some(table) {
            scan_node = Some(ty.to_string());
            if ty == "Bitmap Heap Scan" {
                lossy = (
                    count(node, "Exact Heap Blocks"),
                    count(node, "Lossy Heap Blocks"),
                );
            }
        }
        if let Some(children) = node.get("Plans").and_then(Json::as_array) {
            stack.extend(children.iter().rev());
        }
    }
    let scan_node = scan_node.with_context(|| {
        format!(
            "the plan scans no relation named {table:?}: {}",
            nodes.join(" > ")
        )
    })?;
    Ok(ExplainStats {
        execution_ms: num(top, "Execution Time"),
        planning_ms: num(top, "Planning Time"),
        scan_node,
        plan: nodes.join(" > "),
        rows_out: count(plan, "Actual Rows").unwrap_or(0),
        shared_hit_blocks: count(plan, "Shared Hit Blocks").unwrap_or(0),
        shared_read_blocks: count(plan, "Shared Read Blocks").unwrap_or(0),
        temp_read_blocks: count(plan, "Temp Read Blocks").unwrap_or(0),
        temp_written_blocks: count(plan, "Temp Written Blocks").unwrap_or(0),
        io_read_ms: num(plan, "I/O Read Time"),
        exact_heap_blocks: lossy.0,
        lossy_heap_blocks: lossy.1,
    })
}

/// Whether psql's error output says the statement was cancelled by
/// `statement_timeout` (SQLSTATE 57014 with VERBOSITY verbose).
pub fn is_statement_timeout(stderr: &str) -> bool {
    stderr.contains("statement timeout") || stderr.contains("57014")
}

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
    // installing or server work.
    let source = StrataSource::open(&opts.strata_db, &opts.table)?;
    let bins = find_or_install(progress, &mut notes)?;
    let owner = server_owner(progress, &mut notes)?;
    let mut cluster = Cluster::prepare(&bins, owner, opts, progress)?;
    cluster.start()?;
    let info = ensure_loaded(&cluster, &source, opts, progress, &mut notes)?;
    drop(source);
    notes.push(format!(
        "PostgreSQL {} ({}): private cluster {}, 127.0.0.1:{} and a unix socket in {}; \
         shared_buffers = {} against a {:.1} MiB heap ({} pages) and a {:.1} MiB index; \
         max_parallel_workers_per_gather = 0, jit = off, autovacuum = off, \
         wal_level = minimal (for the load), track_io_timing = on; \
         effective_io_concurrency left at its default ({}), work_mem at its default ({})",
        info.version,
        bins.dir.display(),
        cluster.data.display(),
        cluster.port,
        cluster.work_dir.display(),
        info.shared_buffers,
        info.heap_bytes as f64 / (1 << 20) as f64,
        info.heap_bytes / 8192,
        info.index_bytes as f64 / (1 << 20) as f64,
        info.effective_io_concurrency,
        info.work_mem,
    ));
    notes.push(
        "PostgreSQL wall_ms is EXPLAIN ANALYZE's Execution Time (TIMING OFF): server side, \
         planning excluded, rows not sent to a client; pages_read = shared hit + read blocks \
         of the execution (buffer accesses: an Index Scan counts a heap page again for \
         every row on it; shared_read_blocks alone are the pages read from the OS); \
         io_requests is not known (io_requests_known = no)"
            .to_string(),
    );

    let timeout_ms = if opts.timeout_s > 0.0 {
        ((opts.timeout_s * 1000.0).round() as u64).max(1)
    } else {
        0
    };
    let mut sels = opts.selectivities_pct.clone();
    sels.sort_by(f64::total_cmp);
    sels.dedup();
    let figure = if opts.ordered { "15a" } else { "15b" };
    let mut cache = CacheDrop::default();
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
                .with("pg_version", &info.version);
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
            let order = choose_order(&cluster, method, opts, pct, &mut notes)?;
            let base = base.with("order_by", order.label());
            let point = Point {
                method,
                pct,
                order,
                timeout_ms,
            };
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
                let row = cold_run(
                    &mut cluster,
                    &mut cache,
                    &opts.table,
                    point,
                    base.clone(),
                    progress,
                )?;
                if row.extra["censored"] == "no" {
                    completed += 1;
                    if row.extra["plan_node"] != method.node_type() {
                        mismatches.push(format!(
                            "{} at {pct}% ran as {}",
                            method.variant(),
                            row.extra["plan"]
                        ));
                    }
                }
                progress(&format!(
                    "  {:.1} ms, {} rows, {} pages{}",
                    row.wall_ms,
                    row.rows_out,
                    row.pages_read,
                    if row.extra["censored"] == "yes" {
                        " (censored)"
                    } else {
                        ""
                    }
                ));
                censored = row.extra["censored"] == "yes";
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
    cluster.stop()?;
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
    match &cache.failure {
        None if cache.dropped > 0 => notes.push(
            "cold runs: PostgreSQL restarted and the OS page cache dropped before every query"
                .to_string(),
        ),
        None => {}
        Some(e) => notes.push(format!(
            "could not drop the OS page cache ({e}): the PostgreSQL runs restarted the server \
             (cold shared_buffers) but are warm-OS-cache, not cold (os_cache = warm)"
        )),
    }
    Ok((results, notes))
}

fn validate(opts: &PgOptions) -> Result<()> {
    if opts.table.is_empty()
        || !opts
            .table
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        bail!(
            "table name {:?}: only letters, digits and _ are supported",
            opts.table
        );
    }
    if opts.repeat == 0 {
        bail!("repeat must be at least 1");
    }
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
    let sb = opts.shared_buffers.trim();
    if sb.is_empty() || !sb.chars().all(|c| c.is_ascii_alphanumeric()) {
        bail!(
            "shared_buffers {:?}: expected a size such as 64MB",
            opts.shared_buffers
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// One cold run.

/// Dropping the OS page cache: how often it worked, and the first failure.
#[derive(Default)]
struct CacheDrop {
    dropped: usize,
    failure: Option<String>,
}

impl CacheDrop {
    /// Tries once per run until it has failed once; returns "dropped" or
    /// "warm".
    fn drop_os_cache(&mut self, progress: &mut dyn FnMut(&str)) -> &'static str {
        if self.failure.is_some() {
            return "warm";
        }
        // SAFETY: sync(2) takes no arguments and cannot fail.
        unsafe { libc::sync() };
        match fs::write("/proc/sys/vm/drop_caches", "3\n") {
            Ok(()) => {
                self.dropped += 1;
                "dropped"
            }
            Err(e) => {
                let msg = format!("writing /proc/sys/vm/drop_caches: {e}");
                progress(&format!(
                    "could not drop the OS page cache ({msg}); runs are warm-OS-cache"
                ));
                self.failure = Some(msg);
                "warm"
            }
        }
    }
}

/// One point of the sweep.
#[derive(Clone, Copy, Debug)]
struct Point {
    method: PgMethod,
    pct: f64,
    order: Order,
    timeout_ms: u64,
}

/// `ORDER BY c2`, or for a Bitmap Heap Scan whose plan with it is not one,
/// [`Order::KeyExpression`] if that gets one (said in the notes); a plain
/// EXPLAIN on the running server decides.
fn choose_order(
    cluster: &Cluster,
    method: PgMethod,
    opts: &PgOptions,
    pct: f64,
    notes: &mut Vec<String>,
) -> Result<Order> {
    let order = Order::of(opts.ordered);
    if order == Order::Unordered || method != PgMethod::BitmapHeapScan {
        return Ok(order);
    }
    let plan = |order| -> Result<ExplainStats> {
        let p = cluster.psql_script(
            &query_script(method, &opts.table, pct, order, 0, false),
            Some(Duration::from_secs(300)),
        )?;
        if !p.status.success() {
            bail!("EXPLAIN failed ({}): {}", p.status, p.stderr.trim());
        }
        parse_explain_json(&p.stdout, &opts.table)
    };
    let planned = plan(order)?;
    if planned.scan_node == method.node_type() {
        return Ok(order);
    }
    let alt = Order::KeyExpression;
    if plan(alt)?.scan_node != method.node_type() {
        return Ok(order);
    }
    notes.push(format!(
        "{} at {pct}%: with ORDER BY {KEY} PostgreSQL planned {} (it builds no bitmap path \
         from an index whose only use is the ordering, as when the range covers every row), \
         so this point ran with{} (the same order; order_by column)",
        method.variant(),
        planned.plan,
        alt.sql()
    ));
    Ok(alt)
}

/// Stops the server, drops the OS page cache (if it can), starts the server
/// and runs Q1 once with the point's path forced; fills in `row`.
fn cold_run(
    cluster: &mut Cluster,
    cache: &mut CacheDrop,
    table: &str,
    point: Point,
    mut row: ResultRow,
    progress: &mut dyn FnMut(&str),
) -> Result<ResultRow> {
    let Point {
        method,
        pct,
        order,
        timeout_ms,
    } = point;
    cluster.stop()?;
    let os_cache = cache.drop_os_cache(progress);
    cluster.start()?;
    let script = query_script(method, table, pct, order, timeout_ms, true);
    // statement_timeout cancels a slow query; the process limit only guards
    // against a psql that never returns.
    let limit =
        (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms) + Duration::from_secs(300));
    let out = cluster.psql_script(&script, limit)?;
    row.set("os_cache", os_cache);
    row.set(
        "client_ms",
        format!("{:.3}", out.elapsed.as_secs_f64() * 1e3),
    );
    if out.status.success() {
        let s = parse_explain_json(&out.stdout, table)?;
        row.wall_ms = s
            .execution_ms
            .context("EXPLAIN ANALYZE without Execution Time")?;
        row.pages_read = s.shared_hit_blocks + s.shared_read_blocks;
        row.rows_out = s.rows_out;
        row.set("censored", "no");
        row.set("plan_node", &s.scan_node);
        row.set("plan", &s.plan);
        row.set("shared_hit_blocks", s.shared_hit_blocks);
        row.set("shared_read_blocks", s.shared_read_blocks);
        row.set("temp_read_blocks", s.temp_read_blocks);
        row.set("temp_written_blocks", s.temp_written_blocks);
        if let Some(ms) = s.planning_ms {
            row.set("planning_ms", ms);
        }
        if let Some(ms) = s.io_read_ms {
            row.set("io_read_ms", ms);
        }
        if let Some(b) = s.exact_heap_blocks {
            row.set("exact_heap_blocks", b);
        }
        if let Some(b) = s.lossy_heap_blocks {
            row.set("lossy_heap_blocks", b);
        }
        Ok(row)
    } else if out.timed_out || is_statement_timeout(&out.stderr) {
        row.wall_ms = timeout_ms as f64;
        row.set("censored", "yes");
        // The plan it was running: a plain EXPLAIN with the same settings.
        let script = query_script(method, table, pct, order, 0, false);
        let plan = cluster.psql_script(&script, Some(Duration::from_secs(300)))?;
        if plan.status.success() {
            let s = parse_explain_json(&plan.stdout, table)?;
            row.set("plan_node", &s.scan_node);
            row.set("plan", &s.plan);
        }
        Ok(row)
    } else {
        bail!(
            "psql failed ({}) running {}: {}",
            out.status,
            q1_sql(table, pct, order),
            out.stderr.trim()
        )
    }
}

// ---------------------------------------------------------------------------
// Processes.

/// A finished process.
struct Proc {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    /// Killed at the time limit.
    timed_out: bool,
}

/// Runs `cmd` with `input` on its stdin, collecting its output; kills it
/// after `limit`.
fn run_proc(cmd: &mut Command, input: Option<&[u8]>, limit: Option<Duration>) -> Result<Proc> {
    let what = format!("{:?}", cmd.get_program());
    let start = Instant::now();
    let mut child = cmd
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {what}"))?;
    let out = collect(child.stdout.take());
    let err = collect(child.stderr.take());
    if let (Some(data), Some(mut stdin)) = (input, child.stdin.take()) {
        // A process that exits early closes the pipe; its stderr says why.
        match stdin.write_all(data) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
            r => r.with_context(|| format!("writing to {what}"))?,
        }
    }
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if limit.is_some_and(|l| start.elapsed() > l) {
            let _ = child.kill();
            timed_out = true;
            break child.wait()?;
        }
        thread::sleep(Duration::from_millis(5));
    };
    Ok(Proc {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        elapsed: start.elapsed(),
        timed_out,
    })
}

/// Reads a pipe to its end on a thread.
fn collect(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Runs `cmd` to completion and fails with its output unless it succeeds.
fn run_ok(cmd: &mut Command, what: &str) -> Result<Proc> {
    let p = run_proc(cmd, None, None)?;
    if !p.status.success() {
        bail!(
            "{what} failed ({}): {}{}",
            p.status,
            p.stderr.trim(),
            p.stdout.trim()
        );
    }
    Ok(p)
}

// ---------------------------------------------------------------------------
// Finding or installing PostgreSQL, and the user it runs as.

struct PgBins {
    /// e.g. /usr/lib/postgresql/15/bin
    dir: PathBuf,
}

/// The newest `/usr/lib/postgresql/<major>/bin` with initdb, pg_ctl,
/// postgres and psql.
fn find_binaries() -> Option<PgBins> {
    let mut found: Vec<(Vec<u32>, PathBuf)> = fs::read_dir(PG_LIB)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let version: Vec<u32> = e
                .file_name()
                .to_str()?
                .split('.')
                .map(|p| p.parse().ok())
                .collect::<Option<_>>()?;
            let bin = e.path().join("bin");
            ["initdb", "pg_ctl", "postgres", "psql"]
                .iter()
                .all(|b| bin.join(b).is_file())
                .then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, dir)| PgBins { dir })
}

fn is_root() -> bool {
    // SAFETY: geteuid(2) takes no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn find_or_install(progress: &mut dyn FnMut(&str), notes: &mut Vec<String>) -> Result<PgBins> {
    if let Some(b) = find_binaries() {
        return Ok(b);
    }
    if !is_root() {
        bail!(
            "PostgreSQL is not installed (no {PG_LIB}/*/bin/postgres) and installing it needs \
             root: install the Debian package `postgresql` (sudo apt-get install postgresql), \
             or run this as root"
        );
    }
    progress("PostgreSQL not found: apt-get install -y -q postgresql");
    let install = || {
        let mut c = Command::new("apt-get");
        c.args(["install", "-y", "-q", "postgresql"])
            .env("DEBIAN_FRONTEND", "noninteractive");
        run_ok(&mut c, "apt-get install postgresql")
    };
    if let Err(first) = install() {
        progress(&format!(
            "apt-get install failed ({first}); apt-get update and retry"
        ));
        let mut c = Command::new("apt-get");
        c.args(["update", "-q"])
            .env("DEBIAN_FRONTEND", "noninteractive");
        run_ok(&mut c, "apt-get update")?;
        install()?;
    }
    let b = find_binaries().with_context(|| {
        format!("installed the postgresql package but found no binaries under {PG_LIB}")
    })?;
    notes.push(format!(
        "installed PostgreSQL from the Debian package postgresql ({})",
        b.dir.display()
    ));
    Ok(b)
}

/// The OS user the server runs as when we are root.
#[derive(Clone, Debug)]
struct Owner {
    uid: u32,
    gid: u32,
}

fn lookup_user(name: &str) -> Option<Owner> {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, name]).output().ok()?;
        if !out.status.success() {
            return None;
        }
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    Some(Owner {
        uid: id("-u")?,
        gid: id("-g")?,
    })
}

/// None when we are not root (everything runs as ourselves); as root, the
/// `postgres` user, created if missing.
fn server_owner(progress: &mut dyn FnMut(&str), notes: &mut Vec<String>) -> Result<Option<Owner>> {
    if !is_root() {
        return Ok(None);
    }
    if let Some(o) = lookup_user(PG_OS_USER) {
        return Ok(Some(o));
    }
    progress(&format!(
        "creating the OS user {PG_OS_USER} to run PostgreSQL"
    ));
    let mut c = Command::new("useradd");
    c.args([
        "--system",
        "--user-group",
        "--no-create-home",
        "--home-dir",
        "/nonexistent",
        "--shell",
        "/usr/sbin/nologin",
        PG_OS_USER,
    ]);
    run_ok(&mut c, "useradd postgres")?;
    notes.push(format!(
        "created the OS user {PG_OS_USER} to run PostgreSQL"
    ));
    lookup_user(PG_OS_USER)
        .map(Some)
        .with_context(|| format!("created {PG_OS_USER} but cannot look it up"))
}

// ---------------------------------------------------------------------------
// The private cluster.

/// A private PostgreSQL cluster; stopped when dropped if it is running.
struct Cluster {
    bin: PathBuf,
    work_dir: PathBuf,
    data: PathBuf,
    log: PathBuf,
    port: u16,
    owner: Option<Owner>,
    running: bool,
}

impl Cluster {
    /// Creates the work directory, gives it to the owner, initializes the
    /// cluster unless it exists, stops a server left running in it, and
    /// writes our settings (`strata.conf`, included from postgresql.conf).
    fn prepare(
        bins: &PgBins,
        owner: Option<Owner>,
        opts: &PgOptions,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Cluster> {
        fs::create_dir_all(&opts.work_dir)
            .with_context(|| format!("creating {}", opts.work_dir.display()))?;
        let work_dir = fs::canonicalize(&opts.work_dir)?;
        let mut cluster = Cluster {
            bin: bins.dir.clone(),
            data: work_dir.join("strata-pgdata"),
            log: work_dir.join("strata-postgres.log"),
            work_dir,
            port: DEFAULT_PORT,
            owner,
            running: false,
        };
        cluster.give_work_dir()?;
        let version_file = cluster.data.join("PG_VERSION");
        let major = bins
            .dir
            .parent()
            .and_then(Path::file_name)
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if version_file.is_file() {
            let v = fs::read_to_string(&version_file)?;
            if v.trim() != major {
                bail!(
                    "{} holds a PostgreSQL {} cluster but the binaries are version {major}: \
                     delete it or choose another work directory",
                    cluster.data.display(),
                    v.trim()
                );
            }
            if cluster.is_running() {
                progress("stopping a PostgreSQL server left running in the work directory");
                cluster.running = true;
                cluster.stop()?;
            }
        } else {
            if cluster.data.exists() {
                // An initdb that did not finish.
                fs::remove_dir_all(&cluster.data)?;
            }
            progress(&format!(
                "initdb {} (PostgreSQL {major})",
                cluster.data.display()
            ));
            let mut c = cluster.command("initdb");
            c.arg("-D").arg(&cluster.data).args([
                "--auth-local=peer",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
            ]);
            run_ok(&mut c, "initdb")?;
            let conf = cluster.data.join("postgresql.conf");
            let mut text = fs::read_to_string(&conf)?;
            text.push_str("\n# strata bench: our settings\ninclude 'strata.conf'\n");
            fs::write(&conf, text)?;
        }
        cluster.port = free_port()?;
        let conf = cluster.data.join("strata.conf");
        fs::write(&conf, cluster.settings(&opts.shared_buffers))?;
        if let Some(o) = &cluster.owner {
            std::os::unix::fs::chown(&conf, Some(o.uid), Some(o.gid))?;
        }
        Ok(cluster)
    }

    /// The settings file.
    fn settings(&self, shared_buffers: &str) -> String {
        format!(
            "# written by strata bench (crates/bench/src/postgres.rs) on every run\n\
             listen_addresses = '127.0.0.1'\n\
             port = {}\n\
             unix_socket_directories = {}\n\
             shared_buffers = {}\n\
             max_parallel_workers_per_gather = 0\n\
             jit = off\n\
             autovacuum = off\n\
             wal_level = minimal\n\
             max_wal_senders = 0\n\
             track_io_timing = on\n",
            self.port,
            quote_literal(&self.work_dir.to_string_lossy()),
            quote_literal(shared_buffers.trim()),
        )
    }

    /// As root: makes the owner own the work directory (unless it is
    /// world-writable, like /tmp) and checks that it can write there.
    fn give_work_dir(&self) -> Result<()> {
        let Some(o) = &self.owner else { return Ok(()) };
        let meta = fs::metadata(&self.work_dir)?;
        if meta.mode() & 0o002 == 0 && meta.uid() != o.uid {
            chown_tree(&self.work_dir, o)?;
        }
        let mut c = Command::new("test");
        c.arg("-w").arg(&self.work_dir).current_dir("/");
        c.uid(o.uid).gid(o.gid);
        if !c.status().is_ok_and(|s| s.success()) {
            bail!(
                "the {PG_OS_USER} user cannot write {}: a parent directory is probably not \
                 searchable by others; choose a work directory under /tmp",
                self.work_dir.display()
            );
        }
        Ok(())
    }

    /// A command for one of the binaries, as the owner, in the work directory,
    /// with no PG* variables from our environment.
    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(self.bin.join(program));
        c.current_dir(&self.work_dir)
            .env("HOME", &self.work_dir)
            .env("LC_ALL", "C")
            .env("LANG", "C");
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("PG") || k == "PSQLRC" {
                c.env_remove(k);
            }
        }
        if let Some(o) = &self.owner {
            c.uid(o.uid).gid(o.gid);
        }
        c
    }

    fn is_running(&self) -> bool {
        let mut c = self.command("pg_ctl");
        c.arg("status").arg("-D").arg(&self.data);
        run_proc(&mut c, None, None).is_ok_and(|p| p.status.success())
    }

    fn start(&mut self) -> Result<()> {
        let mut c = self.command("pg_ctl");
        c.arg("start")
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(&self.log)
            .args(["-w", "-s", "-t", &PG_CTL_WAIT_S.to_string()]);
        let p = run_proc(&mut c, None, None)?;
        if !p.status.success() {
            bail!(
                "starting PostgreSQL failed ({}): {}\nlast lines of {}:\n{}",
                p.status,
                p.stderr.trim(),
                self.log.display(),
                log_tail(&self.log, 15)
            );
        }
        self.running = true;
        Ok(())
    }

    fn stop(&mut self) -> Result<()> {
        if !self.running {
            return Ok(());
        }
        let mut c = self.command("pg_ctl");
        c.arg("stop").arg("-D").arg(&self.data).args([
            "-m",
            "fast",
            "-w",
            "-s",
            "-t",
            &PG_CTL_WAIT_S.to_string(),
        ]);
        run_ok(&mut c, "pg_ctl stop")?;
        self.running = false;
        Ok(())
    }

    /// psql connected to database `postgres` through the socket, quiet,
    /// unaligned, tuples only, stopping at the first error.
    fn psql_command(&self) -> Command {
        let mut c = self.command("psql");
        c.args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-v",
            "VERBOSITY=verbose",
        ])
        .arg("-h")
        .arg(&self.work_dir)
        .args(["-p", &self.port.to_string(), "-d", "postgres"]);
        c
    }

    /// Runs SQL (one statement per `-c`) and returns the output.
    fn psql(&self, statements: &[&str]) -> Result<String> {
        let mut c = self.psql_command();
        for s in statements {
            c.arg("-c").arg(s);
        }
        let p = run_proc(&mut c, None, None)?;
        if !p.status.success() {
            bail!(
                "psql failed ({}) on {statements:?}: {}",
                p.status,
                p.stderr.trim()
            );
        }
        Ok(p.stdout)
    }

    /// Runs a script given on stdin; the caller looks at the status.
    fn psql_script(&self, script: &str, limit: Option<Duration>) -> Result<Proc> {
        let mut c = self.psql_command();
        c.args(["-f", "-"]);
        run_proc(&mut c, Some(script.as_bytes()), limit)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn chown_tree(path: &Path, o: &Owner) -> Result<()> {
    std::os::unix::fs::lchown(path, Some(o.uid), Some(o.gid))
        .with_context(|| format!("chown {}", path.display()))?;
    if fs::symlink_metadata(path)?.is_dir() {
        for e in fs::read_dir(path)? {
            chown_tree(&e?.path(), o)?;
        }
    }
    Ok(())
}

/// The first port from [`DEFAULT_PORT`] free on 127.0.0.1.
fn free_port() -> Result<u16> {
    (DEFAULT_PORT..DEFAULT_PORT + PORT_TRIES)
        .find(|&p| TcpListener::bind(("127.0.0.1", p)).is_ok())
        .with_context(|| {
            format!(
                "no free port in {DEFAULT_PORT}..{} on 127.0.0.1",
                DEFAULT_PORT + PORT_TRIES
            )
        })
}

fn log_tail(path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

// ---------------------------------------------------------------------------
// Loading the strata rows.

/// The strata table to copy.
struct StrataSource {
    db: Database,
    table: String,
    schema: Schema,
    rows: u64,
}

impl StrataSource {
    fn open(dir: &Path, table: &str) -> Result<StrataSource> {
        let db = Database::open(
            dir,
            DbOptions {
                read_only: true,
                direct_io: false,
                ..DbOptions::default()
            },
        )
        .with_context(|| format!("opening the strata database {}", dir.display()))?;
        let t = db.table(table)?;
        let schema = t.schema().clone();
        let key = schema
            .columns
            .iter()
            .find(|c| c.name == KEY)
            .with_context(|| format!("table {table} has no column {KEY} for Q1 to range over"))?;
        if !matches!(key.ty, DataType::Int32 | DataType::Int64) {
            bail!("column {KEY} of {table} is {}, not an integer", key.ty);
        }
        let rows = t.rows();
        drop(t);
        Ok(StrataSource {
            db,
            table: table.to_string(),
            schema,
            rows,
        })
    }

    /// (rows, sum of c2): what a PostgreSQL copy must match to be reused.
    fn fingerprint(&self) -> Result<(u64, i128)> {
        let t = self.db.table(&self.table)?;
        let key = t.column(KEY)?;
        let (mut n, mut sum) = (0u64, 0i128);
        t.scan_rows(|_, row| {
            n += 1;
            sum += match row[key] {
                Value::Int32(v) => v as i128,
                Value::Int64(v) => v as i128,
                _ => 0,
            };
            Ok(())
        })?;
        Ok((n, sum))
    }

    /// Streams every row, in heap order, as COPY text into `w`.
    fn copy_into(&self, w: &mut dyn Write, progress: &mut dyn FnMut(&str)) -> Result<(u64, i128)> {
        let t = self.db.table(&self.table)?;
        let key = t.column(KEY)?;
        let types: Vec<DataType> = self.schema.columns.iter().map(|c| c.ty).collect();
        let mut line = Vec::with_capacity(256);
        let (mut n, mut sum) = (0u64, 0i128);
        let step = (self.rows / 10).max(1_000_000);
        t.scan_rows(|_, row| {
            line.clear();
            copy_text_line(&row, &types, &mut line);
            w.write_all(&line)
                .map_err(|e| StorageError::io("psql's stdin (COPY)", e))?;
            sum += match row[key] {
                Value::Int32(v) => v as i128,
                Value::Int64(v) => v as i128,
                _ => 0,
            };
            n += 1;
            if n.is_multiple_of(step) {
                progress(&format!("  copied {n} / {} rows", self.rows));
            }
            Ok(())
        })?;
        Ok((n, sum))
    }
}

/// What the sweep's notes say about the loaded table and server.
struct TableInfo {
    version: String,
    heap_bytes: u64,
    index_bytes: u64,
    shared_buffers: String,
    effective_io_concurrency: String,
    work_mem: String,
}

/// PostgreSQL's (rows, sum of c2) of the table, or None if it does not exist.
fn pg_fingerprint(cluster: &Cluster, table: &str) -> Result<Option<(u64, i128)>> {
    let exists = cluster.psql(&[&format!(
        "SELECT to_regclass({}) IS NOT NULL",
        quote_literal(&quote_ident(table))
    )])?;
    if exists.trim() != "t" {
        return Ok(None);
    }
    let out = cluster.psql(&[&format!(
        "SELECT count(*), coalesce(sum({KEY}::numeric), 0) FROM {}",
        quote_ident(table)
    )])?;
    let parse = || -> Option<(u64, i128)> {
        let (n, s) = out.trim().split_once('|')?;
        Some((n.parse().ok()?, s.parse().ok()?))
    };
    Ok(Some(parse().with_context(|| {
        format!("unexpected psql output {out:?}")
    })?))
}

/// Loads the strata rows unless PostgreSQL has the same rows already (same
/// count and sum of c2), makes sure of the index, and reads the sizes and
/// settings for the notes.
fn ensure_loaded(
    cluster: &Cluster,
    source: &StrataSource,
    opts: &PgOptions,
    progress: &mut dyn FnMut(&str),
    notes: &mut Vec<String>,
) -> Result<TableInfo> {
    let table = &opts.table;
    let qt = quote_ident(table);
    let index = format!("{table}_{KEY}");
    let existing = pg_fingerprint(cluster, table)?;
    let mut need_vacuum = false;
    let reuse = match existing {
        Some((n, _)) if n != source.rows => false,
        Some(fp) => {
            progress(&format!(
                "PostgreSQL has {table} with {} rows: comparing with strata's",
                fp.0
            ));
            source.fingerprint()? == fp
        }
        None => false,
    };
    if reuse {
        notes.push(format!(
            "reused the PostgreSQL copy of {table} from an earlier run (same rows and sum of \
             {KEY}); delete {} to reload",
            cluster.data.display()
        ));
    } else {
        progress(&format!(
            "loading {} rows of {table} into PostgreSQL (COPY from strata's heap)",
            source.rows
        ));
        let start = Instant::now();
        cluster.psql(&[&format!("DROP TABLE IF EXISTS {qt}")])?;
        // One transaction: with wal_level = minimal the COPY into a table
        // created in it skips the WAL, and FREEZE writes the rows frozen.
        let mut c = cluster.psql_command();
        c.arg("-1")
            .arg("-c")
            .arg(create_table_sql(table, &source.schema))
            .arg("-c")
            .arg(format!("COPY {qt} FROM STDIN WITH (FREEZE)"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().context("running psql for COPY")?;
        let out = collect(child.stdout.take());
        let err = collect(child.stderr.take());
        let stdin = child.stdin.take().context("psql's stdin")?;
        let mut w = BufWriter::with_capacity(1 << 20, stdin);
        let copied = source.copy_into(&mut w, progress);
        if copied.is_err() {
            // Abort the transaction rather than commit a partial table.
            let _ = child.kill();
        }
        let flushed = w.into_inner().map(drop);
        let status = child.wait()?;
        let (_, stderr) = (
            out.join().unwrap_or_default(),
            err.join().unwrap_or_default(),
        );
        if !status.success() {
            bail!("COPY into PostgreSQL failed ({status}): {}", stderr.trim());
        }
        let copied = copied?;
        flushed.map_err(|e| anyhow::anyhow!("writing to psql: {}", e.error()))?;
        let loaded = pg_fingerprint(cluster, table)?;
        if loaded != Some(copied) || copied.0 != source.rows {
            bail!(
                "PostgreSQL holds {loaded:?} (rows, sum of {KEY}) after COPY, strata sent \
                 {copied:?} of {} rows",
                source.rows
            );
        }
        progress(&format!(
            "  copied {} rows in {:.1} s",
            copied.0,
            start.elapsed().as_secs_f64()
        ));
        need_vacuum = true;
    }
    let has_index = cluster.psql(&[&format!(
        "SELECT to_regclass({}) IS NOT NULL",
        quote_literal(&quote_ident(&index))
    )])?;
    if has_index.trim() != "t" {
        progress(&format!("CREATE INDEX {index} ON {table}({KEY})"));
        cluster.psql(&[&format!(
            "CREATE INDEX {} ON {qt} ({KEY})",
            quote_ident(&index)
        )])?;
        need_vacuum = true;
    }
    if need_vacuum {
        progress("VACUUM ANALYZE; CHECKPOINT");
        cluster.psql(&[&format!("VACUUM ANALYZE {qt}"), "CHECKPOINT"])?;
    }
    let out = cluster.psql(&[&format!(
        "SELECT current_setting('server_version'), pg_relation_size({}), \
         pg_relation_size({}), current_setting('shared_buffers'), \
         current_setting('effective_io_concurrency'), current_setting('work_mem')",
        quote_literal(&qt),
        quote_literal(&quote_ident(&index))
    )])?;
    let f: Vec<&str> = out.trim().split('|').collect();
    if f.len() != 6 {
        bail!("unexpected psql output {out:?}");
    }
    Ok(TableInfo {
        version: f[0].to_string(),
        heap_bytes: f[1].parse().unwrap_or(0),
        index_bytes: f[2].parse().unwrap_or(0),
        shared_buffers: f[3].to_string(),
        effective_io_concurrency: f[4].to_string(),
        work_mem: f[5].to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_storage::types::Column;

    /// Captured from PostgreSQL 15.18 (Debian): psql's output of
    /// `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON)` of Q1 at 1% with
    /// ORDER BY c2 and the bitmap scan forced, cold, track_io_timing on.
    const SAMPLE: &str = r#"[
  {
    "Plan": {
      "Node Type": "Sort",
      "Parallel Aware": false,
      "Async Capable": false,
      "Startup Cost": 481.21,
      "Total Cost": 482.44,
      "Plan Rows": 495,
      "Plan Width": 40,
      "Actual Rows": 500,
      "Actual Loops": 1,
      "Sort Key": ["c2"],
      "Sort Method": "quicksort",
      "Sort Space Used": 64,
      "Sort Space Type": "Memory",
      "Shared Hit Blocks": 5,
      "Shared Read Blocks": 290,
      "Shared Dirtied Blocks": 0,
      "Shared Written Blocks": 0,
      "Local Hit Blocks": 0,
      "Local Read Blocks": 0,
      "Local Dirtied Blocks": 0,
      "Local Written Blocks": 0,
      "Temp Read Blocks": 0,
      "Temp Written Blocks": 0,
      "I/O Read Time": 6.936,
      "I/O Write Time": 0.000,
      "Temp I/O Read Time": 0.000,
      "Temp I/O Write Time": 0.000,
      "Plans": [
        {
          "Node Type": "Bitmap Heap Scan",
          "Parent Relationship": "Outer",
          "Parallel Aware": false,
          "Async Capable": false,
          "Relation Name": "microbench",
          "Alias": "microbench",
          "Startup Cost": 13.36,
          "Total Cost": 459.05,
          "Plan Rows": 495,
          "Plan Width": 40,
          "Actual Rows": 500,
          "Actual Loops": 1,
          "Recheck Cond": "((c2 >= 0) AND (c2 < 1000))",
          "Rows Removed by Index Recheck": 0,
          "Exact Heap Blocks": 289,
          "Lossy Heap Blocks": 0,
          "Shared Hit Blocks": 2,
          "Shared Read Blocks": 290,
          "Shared Dirtied Blocks": 0,
          "Shared Written Blocks": 0,
          "Local Hit Blocks": 0,
          "Local Read Blocks": 0,
          "Local Dirtied Blocks": 0,
          "Local Written Blocks": 0,
          "Temp Read Blocks": 0,
          "Temp Written Blocks": 0,
          "I/O Read Time": 6.936,
          "I/O Write Time": 0.000,
          "Temp I/O Read Time": 0.000,
          "Temp I/O Write Time": 0.000,
          "Plans": [
            {
              "Node Type": "Bitmap Index Scan",
              "Parent Relationship": "Outer",
              "Parallel Aware": false,
              "Async Capable": false,
              "Index Name": "microbench_c2",
              "Startup Cost": 0.00,
              "Total Cost": 13.24,
              "Plan Rows": 495,
              "Plan Width": 0,
              "Actual Rows": 500,
              "Actual Loops": 1,
              "Index Cond": "((c2 >= 0) AND (c2 < 1000))",
              "Shared Hit Blocks": 2,
              "Shared Read Blocks": 1,
              "Shared Dirtied Blocks": 0,
              "Shared Written Blocks": 0,
              "Local Hit Blocks": 0,
              "Local Read Blocks": 0,
              "Local Dirtied Blocks": 0,
              "Local Written Blocks": 0,
              "Temp Read Blocks": 0,
              "Temp Written Blocks": 0,
              "I/O Read Time": 0.011,
              "I/O Write Time": 0.000,
              "Temp I/O Read Time": 0.000,
              "Temp I/O Write Time": 0.000
            }
          ]
        }
      ]
    },
    "Planning": {
      "Shared Hit Blocks": 72,
      "Shared Read Blocks": 20,
      "Shared Dirtied Blocks": 2,
      "Shared Written Blocks": 0,
      "Local Hit Blocks": 0,
      "Local Read Blocks": 0,
      "Local Dirtied Blocks": 0,
      "Local Written Blocks": 0,
      "Temp Read Blocks": 0,
      "Temp Written Blocks": 0,
      "I/O Read Time": 0.222,
      "I/O Write Time": 0.000,
      "Temp I/O Read Time": 0.000,
      "Temp I/O Write Time": 0.000
    },
    "Planning Time": 0.523,
    "Triggers": [
    ],
    "Execution Time": 7.812
  }
]
"#;

    #[test]
    fn parses_explain_json() {
        let s = parse_explain_json(SAMPLE, "microbench").unwrap();
        assert_eq!(
            s,
            ExplainStats {
                execution_ms: Some(7.812),
                planning_ms: Some(0.523),
                scan_node: "Bitmap Heap Scan".into(),
                plan: "Sort > Bitmap Heap Scan > Bitmap Index Scan".into(),
                rows_out: 500,
                // The Sort's counts (its children's included), not planning's.
                shared_hit_blocks: 5,
                shared_read_blocks: 290,
                temp_read_blocks: 0,
                temp_written_blocks: 0,
                io_read_ms: Some(6.936),
                exact_heap_blocks: Some(289),
                lossy_heap_blocks: Some(0),
            }
        );
    }

    #[test]
    fn parses_a_hand_made_plan_and_skips_command_tags() {
        let text = r#"SET
[
  {
    "Plan": {
      "Node Type": "Sort",
      "Actual Rows": 12,
      "Actual Loops": 1,
      "Shared Hit Blocks": 3,
      "Shared Read Blocks": 40,
      "Temp Read Blocks": 5,
      "Temp Written Blocks": 6,
      "I/O Read Time": 1.25,
      "Plans": [
        {
          "Node Type": "Seq Scan",
          "Relation Name": "microbench",
          "Actual Rows": 12,
          "Shared Hit Blocks": 3,
          "Shared Read Blocks": 40
        }
      ]
    },
    "Planning": { "Shared Hit Blocks": 99 },
    "Planning Time": 0.5,
    "Triggers": [],
    "Execution Time": 17.75
  }
]
"#;
        let s = parse_explain_json(text, "microbench").unwrap();
        assert_eq!(
            s,
            ExplainStats {
                execution_ms: Some(17.75),
                planning_ms: Some(0.5),
                scan_node: "Seq Scan".into(),
                plan: "Sort > Seq Scan".into(),
                rows_out: 12,
                shared_hit_blocks: 3,
                shared_read_blocks: 40,
                temp_read_blocks: 5,
                temp_written_blocks: 6,
                io_read_ms: Some(1.25),
                exact_heap_blocks: None,
                lossy_heap_blocks: None,
            }
        );
        assert!(parse_explain_json(text, "other").is_err());
        assert!(parse_explain_json("ERROR: x", "microbench").is_err());
        assert!(parse_explain_json("[{}]", "microbench").is_err());
    }

    #[test]
    fn set_statements_leave_one_path() {
        assert_eq!(
            PgMethod::IndexScan.set_statements(),
            "SET enable_seqscan = off;\nSET enable_indexscan = on;\n\
             SET enable_bitmapscan = off;\nSET enable_indexonlyscan = off;\n"
        );
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
        let script = query_script(PgMethod::SeqScan, "microbench", 1.0, Order::Key, 5000, true);
        assert_eq!(
            script,
            "SET statement_timeout = 5000;\nSET enable_seqscan = on;\nSET enable_indexscan = off;\n\
             SET enable_bitmapscan = off;\nSET enable_indexonlyscan = off;\n\
             EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) SELECT * FROM \"microbench\" \
             WHERE c2 >= 0 AND c2 < 1000 ORDER BY c2;\n"
        );
        assert!(q1_sql("t", 100.0, Order::KeyExpression).ends_with("c2 < 100001 ORDER BY c2 + 0"));
        assert_eq!(Order::KeyExpression.label(), "c2 + 0");
        assert_eq!(Order::of(true).label(), "c2");
        assert_eq!(Order::of(false).label(), "none");
        let plain = query_script(PgMethod::IndexScan, "t", 100.0, Order::Unordered, 0, false);
        assert!(
            plain.ends_with(
                "EXPLAIN (FORMAT JSON) SELECT * FROM \"t\" WHERE c2 >= 0 AND c2 < 100001;\n"
            ),
            "{plain}"
        );
    }

    #[test]
    fn q1_bounds_match_strata() {
        assert_eq!(c2_upper(100.0), 100_001);
        assert_eq!(c2_upper(1.0), 1000);
        assert_eq!(c2_upper(0.001), 1);
        assert_eq!(c2_upper(0.0001), 1);
        assert_eq!(c2_upper(50.0), 50_001);
    }

    #[test]
    fn copy_text_format() {
        let types = vec![
            DataType::Int32,
            DataType::Int64,
            DataType::Float64,
            DataType::Decimal {
                precision: 12,
                scale: 2,
            },
            DataType::Date,
            DataType::Varchar { len: 20 },
            DataType::Bool,
            DataType::Int32,
        ];
        let row = vec![
            Value::Int32(-7),
            Value::Int64(1 << 40),
            Value::Float64(0.1),
            Value::Decimal(-12345),
            Value::Date(0),
            Value::Str("a\tb\\c\nd\re".into()),
            Value::Bool(true),
            Value::Null,
        ];
        let mut out = Vec::new();
        copy_text_line(&row, &types, &mut out);
        copy_text_line(&[Value::Float64(f64::NEG_INFINITY)], &types[2..3], &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "-7\t1099511627776\t0.1\t-123.45\t1970-01-01\ta\\tb\\\\c\\nd\\re\tt\t\\N\n-Infinity\n"
        );
        let mb: Vec<Value> = (1..=10).map(Value::Int32).collect();
        let mut out = Vec::new();
        copy_text_line(&mb, &[DataType::Int32; 10], &mut out);
        assert_eq!(out, b"1\t2\t3\t4\t5\t6\t7\t8\t9\t10\n");
    }

    #[test]
    fn ddl_from_the_strata_schema() {
        let schema = Schema::new(vec![
            Column::new("c1", DataType::Int32, false),
            Column::new("note", DataType::Varchar { len: 40 }, true),
        ])
        .unwrap();
        assert_eq!(
            create_table_sql("microbench", &schema),
            "CREATE TABLE \"microbench\" (\"c1\" integer NOT NULL, \"note\" varchar(40))"
        );
        assert_eq!(
            create_table_sql("t", &strata_load::microbench_schema()),
            format!(
                "CREATE TABLE \"t\" ({})",
                (1..=10)
                    .map(|i| format!("\"c{i}\" integer NOT NULL"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
    }

    #[test]
    fn timeouts_and_options() {
        assert!(is_statement_timeout(
            "psql:<stdin>:6: ERROR:  57014: canceling statement due to statement timeout"
        ));
        assert!(!is_statement_timeout(
            "ERROR:  42P01: relation does not exist"
        ));
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
    /// Installs PostgreSQL if missing (as root), starts a private cluster on
    /// 127.0.0.1 in a temporary directory under /tmp, stops it at the end.
    #[test]
    #[ignore = "needs PostgreSQL (installed when missing and root); ~1 minute"]
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
