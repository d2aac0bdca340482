//! PostgreSQL as one engine of a side-by-side run (`strata-bench-tpch
//! --vs-duckdb --with-postgres`): the tables loaded as for every PostgreSQL
//! experiment here, then each query run as a client runs it, cold and warm,
//! timed at the client the way the other engines are.
//!
//! Unlike the paper figures' runs ([`run_postgres_queries`](super::run_postgres_queries)),
//! which hold PostgreSQL to one plan shape (no parallel workers, no JIT) and
//! time EXPLAIN ANALYZE on the server, this runs PostgreSQL as a user would:
//! its defaults for parallel workers and JIT (the caller's [`ServerConfig`]
//! says otherwise only if it sets them), the query itself with its rows
//! fetched by the client.
//!
//! A cold run stops the server, drops the OS page cache (when allowed),
//! starts the server and connects; only then is the clock started. The warm
//! run is the same statement again on that connection. A run longer than the
//! caller's limit is cancelled by `statement_timeout` and marked censored:
//! its time is the limit (a lower bound), and a censored cold run has no
//! warm one. Bytes read are the
//! `read_bytes` of `/proc/PID/io` over the cold run, summed over the
//! postmaster and its live children: a backend and its parallel workers are
//! the postmaster's children, and Linux adds a child's counts to its
//! parent's when the parent reaps it, so the workers that ended during the
//! query are counted too.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use postgres::Client;

use super::cluster::{PgBins, ServerConfig};
use super::explain::is_statement_timeout;
use super::load::StrataSource;
use super::session::Session;

/// One cold and one warm run of a query.
#[derive(Clone, Copy, Debug, Default)]
pub struct PgRun {
    pub cold_s: f64,
    pub warm_s: f64,
    pub read_bytes: u64,
    pub rows: usize,
    /// The cold run was cancelled at the limit: both times are the limit,
    /// `rows` is 0.
    pub cold_censored: bool,
    /// The warm run was cancelled at the limit: `warm_s` is the limit.
    pub warm_censored: bool,
}

/// A started cluster with the tables loaded.
pub struct PgEngine {
    session: Session,
    notes: Vec<String>,
}

impl PgEngine {
    /// Starts the cluster of `bins` in `work_dir` with `config`, and loads
    /// (or reuses) `tables` of the strata database `strata_db`.
    pub fn start(
        strata_db: &Path,
        tables: &[String],
        bins: &PgBins,
        config: &ServerConfig,
        work_dir: &Path,
        drop_caches: bool,
        progress: &mut dyn FnMut(&str),
    ) -> Result<PgEngine> {
        let source = StrataSource::open(strata_db, tables)?;
        let mut notes = Vec::new();
        let mut session = Session::start(source, bins, config, work_dir, progress, &mut notes)?;
        session.cache.allowed = drop_caches;
        Ok(PgEngine { session, notes })
    }

    /// `server_version`.
    pub fn version(&self) -> &str {
        &self.session.server.version
    }

    /// What the start did and which settings the runs use.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Runs `sql` cold, then warm (see the module documentation), each
    /// cancelled after `limit`.
    pub fn run(
        &mut self,
        sql: &str,
        limit: Duration,
        progress: &mut dyn FnMut(&str),
    ) -> Result<PgRun> {
        let cluster = &mut self.session.cluster;
        cluster.stop()?;
        self.session.cache.drop_os_cache(progress);
        cluster.start()?;
        let data = cluster.data.clone();
        let client = cluster.client()?;
        client.batch_execute(&format!("SET statement_timeout = {}", limit.as_millis()))?;
        let before = cluster_read_bytes(&data)?;
        let cold = timed(client, sql)?;
        let read_bytes = cluster_read_bytes(&data)?.saturating_sub(before);
        let limit_s = limit.as_secs_f64();
        let Some((cold_s, rows)) = cold else {
            return Ok(PgRun {
                cold_s: limit_s,
                warm_s: limit_s,
                read_bytes,
                rows: 0,
                cold_censored: true,
                warm_censored: true,
            });
        };
        let warm = timed(client, sql)?;
        Ok(PgRun {
            cold_s,
            warm_s: warm.map_or(limit_s, |(s, _)| s),
            read_bytes,
            rows,
            cold_censored: false,
            warm_censored: warm.is_none(),
        })
    }
}

/// `sql`'s time and rows, or `None` when `statement_timeout` cancelled it.
fn timed(client: &mut Client, sql: &str) -> Result<Option<(f64, usize)>> {
    let t = Instant::now();
    match client.query(sql, &[]) {
        Ok(rows) => Ok(Some((t.elapsed().as_secs_f64(), rows.len()))),
        Err(e) if is_statement_timeout(e.code()) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// `read_bytes` of the postmaster (with its reaped children's) and of its
/// live children.
fn cluster_read_bytes(data_dir: &Path) -> Result<u64> {
    let pid_file = data_dir.join("postmaster.pid");
    let text =
        fs::read_to_string(&pid_file).with_context(|| format!("reading {}", pid_file.display()))?;
    let postmaster: u32 = text
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .with_context(|| format!("{} does not start with a pid", pid_file.display()))?;
    let mut total = process_read_bytes(postmaster)
        .with_context(|| format!("reading /proc/{postmaster}/io (the postmaster)"))?;
    for entry in fs::read_dir("/proc")?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if parent_of(pid) == Some(postmaster) {
            // A child that ended since the directory was listed has nothing
            // to add here: its counts went to the postmaster's.
            total += process_read_bytes(pid).unwrap_or(0);
        }
    }
    Ok(total)
}

/// The parent pid from `/proc/PID/stat` (the field after the command name,
/// which is in parentheses and may hold spaces).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

fn process_read_bytes(pid: u32) -> Result<u64> {
    let io = fs::read_to_string(format!("/proc/{pid}/io"))?;
    io.lines()
        .find_map(|l| l.strip_prefix("read_bytes:"))
        .and_then(|v| v.trim().parse().ok())
        .context("no read_bytes line")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process_and_its_parent() {
        let me = std::process::id();
        assert!(process_read_bytes(me).is_ok());
        let parent = parent_of(me).expect("a parent");
        assert_ne!(parent, me);
        assert_eq!(parent_of(u32::MAX), None);
        // A data directory whose postmaster.pid names this process: its
        // counts plus its children's.
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("postmaster.pid"), format!("{me}\n/data\n")).unwrap();
        assert!(cluster_read_bytes(dir.path()).unwrap() >= process_read_bytes(me).unwrap());
        fs::write(dir.path().join("postmaster.pid"), "not a pid\n").unwrap();
        assert!(cluster_read_bytes(dir.path()).is_err());
    }
}
