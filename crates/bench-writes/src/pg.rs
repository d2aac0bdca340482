//! The PostgreSQL side: a private cluster (strata-bench's [`PgServer`])
//! with durable commits (`synchronous_commit = on`, `fsync = on`,
//! `full_page_writes = on`, the default `wal_level`), `acct` loaded with
//! COPY from the same generator as strata's, then indexed and `VACUUM
//! ANALYZE`d. Statements are sent as the same SQL text as strata's, each
//! with the simple query protocol (parsed and planned by the server every
//! time, as strata's are; one round trip), autocommitted. Several clients
//! are several connections, one per thread.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use postgres::{Client, SimpleQueryMessage};
use strata_bench::postgres::{PgServer, ServerConfig};

use crate::workload::{self, COPY_TABLE, TABLE};
use crate::{Engine, Measured, StartLine};

/// The settings the benchmark writes into the cluster's configuration (the
/// values are PostgreSQL's defaults, written out so that no earlier
/// configuration can change them); `wal_level` is left at its default.
pub const DURABILITY: [(&str, &str); 3] = [
    ("synchronous_commit", "on"),
    ("fsync", "on"),
    ("full_page_writes", "on"),
];

/// The settings the notes report, read back from the running server.
const REPORTED: [&str; 11] = [
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_level",
    "wal_sync_method",
    "commit_delay",
    "shared_buffers",
    "max_wal_size",
    "checkpoint_timeout",
    "autovacuum",
    "wal_buffers",
];

pub struct PgSide {
    server: PgServer,
}

/// The row count of a statement's `CommandComplete`.
fn command_count(messages: &[SimpleQueryMessage]) -> Option<u64> {
    messages.iter().find_map(|m| match m {
        SimpleQueryMessage::CommandComplete(n) => Some(*n),
        _ => None,
    })
}

/// Runs `sql` with the simple query protocol; the rows it changed.
fn changed_on(client: &mut Client, sql: &str) -> Result<u64> {
    let messages = client
        .simple_query(sql)
        .with_context(|| format!("PostgreSQL: {sql}"))?;
    command_count(&messages).with_context(|| format!("PostgreSQL: {sql}: no command tag"))
}

impl PgSide {
    /// Starts the cluster in `work_dir` with `shared_buffers` and loads
    /// `acct` (dropping what an earlier run left).
    pub fn start(
        work_dir: &Path,
        shared_buffers: &str,
        rows: u64,
        progress: &mut dyn FnMut(&str),
    ) -> Result<PgSide> {
        let config = ServerConfig {
            shared_buffers: shared_buffers.to_string(),
            wal_minimal: false,
            extra: DURABILITY
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        };
        let server = PgServer::start(work_dir, &config, progress)?;
        let mut side = PgSide { server };
        side.load(rows, progress)?;
        Ok(side)
    }

    /// `PgServer::binaries`' answer: where PostgreSQL is, or why it cannot
    /// run.
    pub fn installed() -> Result<std::path::PathBuf> {
        PgServer::binaries()
    }

    fn client(&mut self) -> Result<&mut Client> {
        self.server.client()
    }

    fn load(&mut self, rows: u64, progress: &mut dyn FnMut(&str)) -> Result<()> {
        progress(&format!(
            "PostgreSQL: loading {rows} rows into {TABLE} (COPY)"
        ));
        let start = Instant::now();
        let client = self.client()?;
        client.batch_execute(&format!("DROP TABLE IF EXISTS {COPY_TABLE}, {TABLE}"))?;
        let mut tx = client.transaction()?;
        tx.batch_execute(&workload::create_table_sql(TABLE))?;
        let mut w = BufWriter::with_capacity(
            1 << 20,
            tx.copy_in(&format!("COPY {TABLE} FROM STDIN WITH (FREEZE)"))?,
        );
        for k in 0..rows {
            let (k, v, pad) = workload::row(k);
            writeln!(w, "{k}\t{v}\t{pad}").context("COPY into PostgreSQL")?;
        }
        let copied = w
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|w| w.finish().map_err(std::io::Error::other))
            .context("COPY into PostgreSQL")?;
        tx.commit()?;
        if copied != rows {
            bail!("PostgreSQL's COPY took {copied} rows, {rows} were sent");
        }
        client.batch_execute(&workload::create_index_sql(TABLE))?;
        client.batch_execute(&format!("VACUUM ANALYZE {TABLE}"))?;
        client.batch_execute("CHECKPOINT")?;
        client
            .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            .context("PostgreSQL: the pg_prewarm extension (contrib)")?;
        progress(&format!(
            "PostgreSQL: loaded, indexed and vacuumed in {:.1} s",
            start.elapsed().as_secs_f64()
        ));
        Ok(())
    }

    /// `PostgreSQL <version>` and the settings that matter for writes, as
    /// the server reports them.
    pub fn describe(&mut self) -> Result<String> {
        let mut settings = Vec::new();
        for name in REPORTED {
            settings.push(format!("{name} = {}", self.server.setting(name)?));
        }
        Ok(format!(
            "PostgreSQL {} ({}), private cluster {}: {}",
            self.server.version(),
            self.server.bin_dir().display(),
            self.server.data_dir().display(),
            settings.join(", ")
        ))
    }

    /// PostgreSQL's plan for `sql` (`EXPLAIN (COSTS OFF)`), its lines joined.
    pub fn plan(&mut self, sql: &str) -> Result<String> {
        let messages = self
            .client()?
            .simple_query(&format!("EXPLAIN (COSTS OFF) {sql}"))
            .with_context(|| format!("PostgreSQL: EXPLAIN {sql}"))?;
        let lines: Vec<String> = messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => r.get(0).map(|l| l.trim().to_string()),
                _ => None,
            })
            .collect();
        Ok(lines.join("; "))
    }

    /// Median round trip in µs of `SELECT 1` over `n` runs.
    pub fn select1_us(&mut self, n: usize) -> Result<f64> {
        let client = self.client()?;
        let mut t = Vec::with_capacity(n);
        for _ in 0..n {
            let s = Instant::now();
            client.simple_query("SELECT 1")?;
            t.push(s.elapsed().as_secs_f64() * 1e6);
        }
        strata_bench::median(&t).context("no samples")
    }
}

impl Engine for PgSide {
    fn label(&self) -> &'static str {
        "postgres"
    }

    fn checkpoint(&mut self) -> Result<()> {
        Ok(self.client()?.batch_execute("CHECKPOINT")?)
    }

    fn changed(&mut self, sql: &str) -> Result<u64> {
        changed_on(self.client()?, sql)
    }

    fn scalar(&mut self, sql: &str) -> Result<i128> {
        let messages = self
            .client()?
            .simple_query(sql)
            .with_context(|| format!("PostgreSQL: {sql}"))?;
        let values: Vec<Option<&str>> = messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(r.get(0)),
                _ => None,
            })
            .collect();
        match values[..] {
            [None] => Ok(0),
            [Some(v)] => v
                .parse()
                .with_context(|| format!("PostgreSQL: {sql}: {v:?} is not an integer")),
            _ => bail!("PostgreSQL: {sql}: expected one value, got {values:?}"),
        }
    }

    fn updates(&mut self, keys: &[Vec<i64>]) -> Result<Measured> {
        let statements: usize = keys.iter().map(Vec::len).sum();
        let (secs, changed) = if let [only] = keys {
            let client = self.client()?;
            let start = Instant::now();
            let mut changed = 0;
            for &k in only {
                changed += changed_on(client, &workload::update_sql(k))?;
            }
            (start.elapsed().as_secs_f64(), changed)
        } else {
            let clients: Vec<Client> = keys
                .iter()
                .map(|_| self.server.connect())
                .collect::<Result<_>>()?;
            let line = StartLine::default();
            std::thread::scope(|s| -> Result<(f64, u64)> {
                let spawned =
                    clients
                        .into_iter()
                        .zip(keys)
                        .enumerate()
                        .map(|(c, (mut client, keys))| {
                            let line = &line;
                            std::thread::Builder::new()
                                .name(format!("pg-client-{c}"))
                                .spawn_scoped(s, move || -> Result<u64> {
                                    if !line.ready_and_wait() {
                                        return Ok(0);
                                    }
                                    let mut changed = 0;
                                    for &k in keys {
                                        changed +=
                                            changed_on(&mut client, &workload::update_sql(k))
                                                .with_context(|| format!("client {c}"))?;
                                    }
                                    Ok(changed)
                                })
                        });
                let (threads, start) = line.start(spawned, "PostgreSQL client")?;
                let changed = crate::join_clients(threads)?;
                Ok((start.elapsed().as_secs_f64(), changed))
            })?
        };
        Ok(Measured {
            secs,
            work: statements as u64,
            changed,
            log_syncs: None,
        })
    }

    fn timed(&mut self, sql: &str) -> Result<Measured> {
        let client = self.client()?;
        let start = Instant::now();
        let changed = changed_on(client, sql)?;
        Ok(Measured {
            secs: start.elapsed().as_secs_f64(),
            work: changed,
            changed,
            log_syncs: None,
        })
    }

    fn recreate_copy_table(&mut self) -> Result<()> {
        let client = self.client()?;
        client.batch_execute(&format!("DROP TABLE IF EXISTS {COPY_TABLE}"))?;
        client.batch_execute(&workload::create_table_sql(COPY_TABLE))?;
        client.batch_execute(&workload::create_index_sql(COPY_TABLE))?;
        Ok(())
    }

    /// `VACUUM ANALYZE acct`: autovacuum is off in the private cluster, so
    /// the dead rows of a run's updates and delete are cleaned here, between
    /// runs, untimed.
    fn prewarm(&mut self) -> Result<()> {
        let sql = format!(
            "SELECT pg_prewarm('{TABLE}'), pg_prewarm('{}')",
            workload::index_name(TABLE)
        );
        self.client()?
            .batch_execute(&sql)
            .with_context(|| format!("PostgreSQL: {sql}"))
    }

    fn after_round(&mut self) -> Result<()> {
        Ok(self
            .client()?
            .batch_execute(&format!("VACUUM ANALYZE {TABLE}"))?)
    }
}
