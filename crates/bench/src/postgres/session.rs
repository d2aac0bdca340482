//! A started cluster with the tables loaded ([`Session`]), the plans of
//! queries on it, and cold runs: restart, OS page cache dropped, EXPLAIN
//! ANALYZE under `statement_timeout`.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use postgres::Client;

use super::cluster::{Cluster, Owner, PgBins, ServerConfig};
use super::explain::{ExplainStats, explain_sql, is_statement_timeout, parse_explain_json};
use super::load::{StrataSource, load_tables, row_values};
use super::options::{PLAN_LIMIT, PgConfig, trim_sql};
use crate::ResultRow;

/// The server's version and the settings the notes mention.
pub(super) struct ServerInfo {
    pub(super) version: String,
    shared_buffers: String,
    effective_io_concurrency: String,
    work_mem: String,
}

pub(super) struct Session {
    pub(super) cluster: Cluster,
    pub(super) cache: CacheDrop,
    pub(super) server: ServerInfo,
}

/// What one EXPLAIN gave: its statistics, or None when `statement_timeout`
/// cancelled it; and the client's round trip of the EXPLAIN.
struct Explained {
    stats: Option<ExplainStats>,
    elapsed: Duration,
}

/// Runs `sql` under EXPLAIN (with ANALYZE or not) in `config`'s settings
/// and a `statement_timeout` of `timeout_ms` (0: none).
fn run_explain(
    client: &mut Client,
    config: PgConfig,
    sql: &str,
    timeout_ms: u64,
    analyze: bool,
) -> Result<Explained> {
    client
        .batch_execute(&config.session_sql(timeout_ms))
        .with_context(|| format!("setting up the session for {config}"))?;
    let start = Instant::now();
    let result = client.simple_query(&explain_sql(sql, analyze));
    let elapsed = start.elapsed();
    let messages = match result {
        Ok(m) => m,
        Err(e) if is_statement_timeout(e.code()) => {
            return Ok(Explained {
                stats: None,
                elapsed,
            });
        }
        Err(e) => return Err(e).with_context(|| format!("EXPLAIN of {}", trim_sql(sql))),
    };
    let values = row_values(&messages, "EXPLAIN")?;
    let [Some(json)] = &values[..] else {
        bail!("EXPLAIN gave {values:?}, not one JSON document");
    };
    Ok(Explained {
        stats: Some(parse_explain_json(json)?),
        elapsed,
    })
}

impl Session {
    /// Finds PostgreSQL, prepares and starts the cluster, loads the source's
    /// tables (or reuses them) and notes what it did and which server and
    /// settings the runs use.
    pub(super) fn start(
        source: StrataSource,
        bins: &PgBins,
        config: &ServerConfig,
        work_dir: &Path,
        progress: &mut dyn FnMut(&str),
        notes: &mut Vec<String>,
    ) -> Result<Session> {
        let owner = Owner::for_server()?;
        let mut cluster = Cluster::prepare(bins, owner, work_dir, config, progress)?;
        cluster.start()?;
        let sizes = load_tables(&mut cluster, &source, progress, notes)?;
        drop(source);
        let row = cluster.client()?.query_one(
            "SELECT current_setting('server_version'), current_setting('shared_buffers'), \
             current_setting('effective_io_concurrency'), current_setting('work_mem'), \
             current_setting('max_parallel_workers_per_gather'), current_setting('jit')",
            &[],
        )?;
        let server = ServerInfo {
            version: row.get(0),
            shared_buffers: row.get(1),
            effective_io_concurrency: row.get(2),
            work_mem: row.get(3),
        };
        let (parallel, jit): (String, String) = (row.get(4), row.get(5));
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        let tables: Vec<String> = sizes
            .iter()
            .map(|s| {
                format!(
                    "{} ({} rows, {:.1} MiB heap = {} pages, {:.1} MiB indexes)",
                    s.name,
                    s.rows,
                    mib(s.heap_bytes),
                    s.heap_bytes / 8192,
                    mib(s.index_bytes)
                )
            })
            .collect();
        notes.push(format!(
            "PostgreSQL {} ({}): private cluster {}, 127.0.0.1:{} and a unix socket in {}; \
             shared_buffers = {}; tables: {}; \
             max_parallel_workers_per_gather = {parallel}, jit = {jit}, autovacuum = off, \
             wal_level = minimal (for the load), track_io_timing = on; \
             effective_io_concurrency left at its default ({}), work_mem at its default ({})",
            server.version,
            bins.dir.display(),
            cluster.data.display(),
            cluster.port,
            cluster.work_dir.display(),
            server.shared_buffers,
            tables.join("; "),
            server.effective_io_concurrency,
            server.work_mem,
        ));
        Ok(Session {
            cluster,
            cache: CacheDrop::default(),
            server,
        })
    }

    /// The plan of `sql` under `config` on the running server (a plain
    /// EXPLAIN, not run).
    pub(super) fn explain(&mut self, config: PgConfig, sql: &str) -> Result<ExplainStats> {
        let limit = PLAN_LIMIT.as_millis() as u64;
        run_explain(self.cluster.client()?, config, sql, limit, false)?
            .stats
            .with_context(|| format!("EXPLAIN of {} took over {PLAN_LIMIT:?}", trim_sql(sql)))
    }

    /// Stops the server, drops the OS page cache (if it can), starts the
    /// server and runs `sql` once under `config` as EXPLAIN ANALYZE; fills in
    /// `row` (see the module documentation) and returns it with the plan (a
    /// censored run's from a plain EXPLAIN).
    pub(super) fn cold_run(
        &mut self,
        config: PgConfig,
        sql: &str,
        timeout_ms: u64,
        mut row: ResultRow,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(ResultRow, ExplainStats)> {
        self.cluster.stop()?;
        let os_cache = self.cache.drop_os_cache(progress);
        self.cluster.start()?;
        let run = run_explain(self.cluster.client()?, config, sql, timeout_ms, true)?;
        row.set("os_cache", os_cache);
        row.set(
            "client_ms",
            format!("{:.3}", run.elapsed.as_secs_f64() * 1e3),
        );
        let stats = if let Some(s) = run.stats {
            row.wall_ms = s
                .execution_ms
                .context("EXPLAIN ANALYZE without Execution Time")?;
            row.pages_read = s.shared_hit_blocks + s.shared_read_blocks;
            row.rows_out = s.rows_out;
            row.set("censored", "no");
            row.set("shared_hit_blocks", s.shared_hit_blocks);
            row.set("shared_read_blocks", s.shared_read_blocks);
            row.set("temp_read_blocks", s.temp_read_blocks);
            row.set("temp_written_blocks", s.temp_written_blocks);
            let optional = [
                ("planning_ms", s.planning_ms),
                ("io_read_ms", s.io_read_ms),
                ("exact_heap_blocks", s.exact_heap_blocks.map(|b| b as f64)),
                ("lossy_heap_blocks", s.lossy_heap_blocks.map(|b| b as f64)),
            ];
            for (column, value) in optional {
                if let Some(v) = value {
                    row.set(column, v);
                }
            }
            s
        } else {
            row.wall_ms = timeout_ms as f64;
            row.set("censored", "yes");
            // The plan it was running: a plain EXPLAIN with the same settings.
            self.explain(config, sql)?
        };
        row.set("plan", &stats.plan);
        row.set("scan_nodes", stats.scans_by_table());
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
        Ok((row, stats))
    }
}

/// Dropping the OS page cache: whether it is asked for (it writes
/// `/proc/sys/vm/drop_caches`, so only when the caller says so), how often
/// it worked, and the first failure.
#[derive(Default)]
pub struct CacheDrop {
    pub allowed: bool,
    dropped: usize,
    failure: Option<String>,
}

impl CacheDrop {
    /// Tries once per run until it has failed once; returns "dropped" or
    /// "warm".
    pub fn drop_os_cache(&mut self, progress: &mut dyn FnMut(&str)) -> &'static str {
        if !self.allowed || self.failure.is_some() {
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

    /// What the notes say about it.
    pub(super) fn note(&self) -> Option<String> {
        if !self.allowed {
            return Some(
                "warm-cache runs: PostgreSQL restarted before every query (cold shared_buffers) \
                 but the OS page cache was not dropped (os_cache = warm); dropping it before \
                 every query (root only) is asked for with --drop-caches"
                    .to_string(),
            );
        }
        match &self.failure {
            None if self.dropped > 0 => Some(
                "cold runs: PostgreSQL restarted and the OS page cache dropped before every query"
                    .to_string(),
            ),
            None => None,
            Some(e) => Some(format!(
                "could not drop the OS page cache ({e}): the PostgreSQL runs restarted the server \
                 (cold shared_buffers) but are warm-OS-cache, not cold (os_cache = warm)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_drop_notes() {
        // Not asked for: nothing is written, and the notes say the runs are warm.
        let mut c = CacheDrop::default();
        let mut said = Vec::new();
        assert_eq!(c.drop_os_cache(&mut |m| said.push(m.to_string())), "warm");
        assert!(said.is_empty() && c.dropped == 0);
        assert!(c.note().unwrap().starts_with("warm-cache runs"));
        let mut c = CacheDrop {
            allowed: true,
            ..CacheDrop::default()
        };
        assert_eq!(c.note(), None);
        c.dropped = 2;
        assert!(c.note().unwrap().starts_with("cold runs"));
        c.failure = Some("writing /proc/sys/vm/drop_caches: denied".into());
        let mut said = Vec::new();
        assert_eq!(
            c.drop_os_cache(&mut |m| said.push(m.to_string())),
            "warm",
            "no second try"
        );
        assert!(said.is_empty());
        assert!(c.note().unwrap().contains("os_cache = warm"));
    }
}
