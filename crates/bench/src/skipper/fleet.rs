//! What the experiments on the real CSD service share (Skipper §3.2 and §5):
//! a TPC-H database per scale factor, client copies of it whose chosen tables
//! live on one `strata csd serve` started in this process, and `strata-sql`
//! clients running queries over them at once.
//!
//! Why processes and not threads: each Skipper client is a separate database
//! instance (the paper's one PostgreSQL per VM), with its own buffer pool,
//! cold-tier cache and query tag, and `strata-sql` is the program a user would
//! run; a client whose answer differs from the local one fails the run in the
//! callers. The fleet is parameterized — the device's configuration (layout,
//! policy, switch time, bandwidth, time scale), which tables go cold, the
//! clients' `--set` settings and environment, per-client query text — so the
//! pull baseline ([`pull`](super::pull)) and Skipper's figures
//! ([`figures`](super::figures)) drive the same code.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use strata_cold::device::{ColdConfig, ColdTier};
use strata_cold::manifest::Manifest;
use strata_cold::tier::{TierOptions, to_cold};
use strata_csd::config::CsdConfig;
use strata_csd::schedule::{Metrics, QueryMetrics};
use strata_csd::server::{RunningServer, spawn};
use strata_load::{TpchSpec, generate_tpch};
use strata_storage::Database;
use strata_storage::catalog::Catalog;
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::device::cold_manifest_path;

/// Copies a database directory (recursively).
pub fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for e in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type()?.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)
                .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}

/// Removes `dir` if it exists, then makes it again, empty.
pub fn fresh_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

fn db_options(tier: Option<&ColdTier>) -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 64 << 20,
        direct_io: false,
        cold_tier: tier.map(|t| t.layer()),
        ..DbOptions::default()
    }
}

/// The TPC-H database every client copies, generated once per scale factor
/// under `bench_db`.
pub fn base_db(bench_db: &Path, sf: f64, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let dir = bench_db.join(format!("tpch-sf{sf}"));
    let done = dir.join("generated");
    if !done.exists() {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        progress(&format!("generating TPC-H SF {sf} in {}", dir.display()));
        let db = Database::create(&dir, db_options(None))?;
        generate_tpch(Some(&db), &TpchSpec::new(sf), &NoProgress, |_| {})?;
        drop(db);
        std::fs::write(&done, b"")?;
    }
    Ok(dir)
}

/// Local copies of `base` for `clients` clients under `root` (made afresh):
/// the runs without a CSD.
pub fn local_copies(base: &Path, root: &Path, clients: usize) -> Result<Vec<PathBuf>> {
    fresh_dir(root)?;
    (0..clients)
        .map(|c| {
            let db = root.join(format!("client{c}.db"));
            copy_dir(base, &db)?;
            std::fs::remove_file(db.join("generated")).ok();
            Ok(db)
        })
        .collect()
}

/// One `strata-sql` run: `sql` over `db`, the answer as CSV.
#[derive(Clone, Debug)]
pub struct SqlRun<'a> {
    pub binary: &'a Path,
    pub db: &'a Path,
    pub buffer_pool: &'a str,
    /// `--cold-cache` (the pull path's object cache); None: strata-sql's default.
    pub cold_cache: Option<u64>,
    /// `--set KEY=VALUE` session settings.
    pub settings: &'a [String],
    /// Environment, e.g. `STRATA_CSD_QUERY` (the query tag the CSD sees).
    pub env: Vec<(String, String)>,
    pub sql: &'a str,
}

/// Runs `r`; returns the CSV answer and the wall time in seconds. A failure
/// names the database and carries strata-sql's message.
pub fn run_sql(r: &SqlRun) -> Result<(String, f64)> {
    let mut cmd = Command::new(r.binary);
    cmd.arg("--db")
        .arg(r.db)
        .args(["--buffer-pool", r.buffer_pool, "--device", "buffered"]);
    if let Some(c) = r.cold_cache {
        cmd.args(["--cold-cache", &format!("{c}B")]);
    }
    cmd.args(["sql", "--format", "csv"]);
    for s in r.settings {
        cmd.arg(format!("--set={s}"));
    }
    cmd.arg(format!("--execute={}", r.sql));
    cmd.envs(r.env.iter().map(|(k, v)| (k, v)));
    let t = Instant::now();
    let out = cmd
        .output()
        .with_context(|| format!("running {}", r.binary.display()))?;
    let secs = t.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!(
            "strata-sql over {} failed: {}",
            r.db.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok((String::from_utf8_lossy(&out.stdout).into_owned(), secs))
}

/// `f(0)`, …, `f(n − 1)` at once, one thread each (each typically runs
/// `strata-sql` processes); results in client order.
pub fn run_clients<T: Send>(n: usize, f: &(dyn Fn(usize) -> Result<T> + Sync)) -> Vec<Result<T>> {
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..n).map(|i| s.spawn(move || f(i))).collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("client thread panicked")))
            })
            .collect()
    })
}

/// What a fleet is: the device and what its clients put on it.
#[derive(Clone, Debug)]
pub struct FleetSpec {
    /// Directory name under the bench directory (made afresh).
    pub name: String,
    pub config: CsdConfig,
    pub clients: usize,
    /// Tables moved to the CSD, in this order, client `c` in bucket `client<c>`.
    pub tables: Vec<String>,
    pub object_bytes: u64,
}

/// A CSD holding every client's cold tables, each client in its own bucket
/// `client<c>`; the clients' databases are fresh copies of the base with
/// those tables cold.
pub struct Fleet {
    rt: tokio::runtime::Runtime,
    server: Option<RunningServer>,
    addr: SocketAddr,
    data: PathBuf,
    config: CsdConfig,
    dbs: Vec<PathBuf>,
    /// Bytes on the device per table of one client (every client's copy is
    /// the same data).
    table_bytes: BTreeMap<String, u64>,
    /// Objects per table of one client.
    table_objects: BTreeMap<String, usize>,
}

impl Fleet {
    pub fn new(
        bench_db: &Path,
        base: &Path,
        spec: &FleetSpec,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Fleet> {
        let root = bench_db.join(&spec.name);
        fresh_dir(&root)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let data = root.join("csd");
        let server = rt.block_on(spawn(spec.config.clone(), &data, "127.0.0.1:0".parse()?))?;
        let addr = server.addr();
        let tier = ColdTier::new(ColdConfig::default());
        let mut dbs = Vec::new();
        let mut table_bytes = BTreeMap::new();
        let mut table_objects = BTreeMap::new();
        for c in 0..spec.clients {
            let db = root.join(format!("client{c}.db"));
            copy_dir(base, &db)?;
            std::fs::remove_file(db.join("generated")).ok();
            progress(&format!("{}: client {c}: tables to the CSD", spec.name));
            let d = Database::open(&db, db_options(Some(&tier)))?;
            for t in &spec.tables {
                let mut to = TierOptions::new(&server.endpoint());
                to.bucket = Some(format!("client{c}"));
                to.object_bytes = spec.object_bytes;
                let r = to_cold(&d, &tier, t, &to)
                    .with_context(|| format!("moving client {c}'s {t} to the CSD"))?;
                table_bytes.insert(t.clone(), r.bytes);
                table_objects.insert(t.clone(), r.objects);
            }
            drop(d);
            dbs.push(db);
        }
        Ok(Fleet {
            rt,
            server: Some(server),
            addr,
            data,
            config: spec.config.clone(),
            dbs,
            table_bytes,
            table_objects,
        })
    }

    /// Restarts the server with another configuration (switch time, policy,
    /// bandwidth; same directory and address: its object → group placement
    /// persists, so a layout change here places nothing anew).
    pub fn restart(&mut self, config: CsdConfig) -> Result<()> {
        if let Some(s) = self.server.take() {
            self.rt.block_on(s.shutdown());
        }
        self.config = config;
        let s = self
            .rt
            .block_on(spawn(self.config.clone(), &self.data, self.addr))?;
        self.server = Some(s);
        Ok(())
    }

    pub fn config(&self) -> &CsdConfig {
        &self.config
    }

    pub fn dbs(&self) -> &[PathBuf] {
        &self.dbs
    }

    /// Bytes of `tables` of one client on the device.
    pub fn bytes_of(&self, tables: &[&str]) -> u64 {
        tables
            .iter()
            .map(|t| self.table_bytes.get(*t).copied().unwrap_or(0))
            .sum()
    }

    /// Objects of `tables` of one client on the device.
    pub fn objects_of(&self, tables: &[&str]) -> usize {
        tables
            .iter()
            .map(|t| self.table_objects.get(*t).copied().unwrap_or(0))
            .sum()
    }

    pub fn server(&self) -> &RunningServer {
        self.server.as_ref().expect("running")
    }

    /// Switches the device made since the last reset (a cheap read of the
    /// dispatcher's published state).
    pub fn switches_now(&self) -> u64 {
        self.server().dispatcher().state().switches
    }

    /// Zeroes the device's metrics (it must be idle), and waits until its
    /// published state shows it, so that [`Fleet::switches_now`] read after
    /// this counts from zero.
    pub fn reset(&self) -> Result<()> {
        let disp = self.server().dispatcher().clone();
        self.rt
            .block_on(disp.reset())
            .map_err(|_| anyhow!("the CSD stopped"))?
            .map_err(|e| anyhow!("resetting the CSD's metrics: {e}"))?;
        self.rt
            .block_on(disp.wait_state(|s| s.switches == 0 && s.submitted == 0))
            .map_err(|_| anyhow!("the CSD stopped"))?;
        Ok(())
    }

    /// The scheduler's metrics since the last reset.
    pub fn metrics(&self) -> Result<Metrics> {
        let disp = self.server().dispatcher().clone();
        let json = self
            .rt
            .block_on(disp.metrics())
            .map_err(|_| anyhow!("the CSD stopped"))?;
        serde_json::from_value(json["scheduler"].clone()).context("reading the CSD's metrics")
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            self.rt.block_on(s.shutdown());
        }
    }
}

/// Whether the server's query `q` belongs to process tag `tag`: MJoin tags a
/// process's executions `<tag>#1`, `<tag>#2`, …, the pull path `<tag>`.
pub fn is_query_of(q: &QueryMetrics, tag: &str) -> bool {
    let name = q.query.0.as_str();
    name == tag
        || name
            .strip_prefix(tag)
            .is_some_and(|rest| rest.starts_with('#'))
}

/// The server's records of every query of process tag `tag`.
pub fn queries_of<'m>(metrics: &'m Metrics, tag: &str) -> Vec<&'m QueryMetrics> {
    metrics
        .queries
        .iter()
        .filter(|q| is_query_of(q, tag))
        .collect()
}

/// Requests the server served for process tag `tag` (all its queries).
pub fn query_requests(metrics: &Metrics, tag: &str) -> u64 {
    queries_of(metrics, tag).iter().map(|q| q.served).sum()
}

/// The object keys of `tables` in `db` as their manifests list them (file by
/// file, in upload order): what a layout that splits a client's data must
/// name.
pub fn cold_keys(db: &Path, tables: &[String]) -> Result<Vec<String>> {
    let catalog: Catalog = serde_json::from_slice(
        &std::fs::read(db.join("catalog.json"))
            .with_context(|| format!("reading {}'s catalog", db.display()))?,
    )
    .with_context(|| format!("parsing {}'s catalog", db.display()))?;
    let mut keys = Vec::new();
    for t in tables {
        let def = catalog
            .tables
            .get(t)
            .ok_or_else(|| anyhow!("table {t} is not in {}'s catalog", db.display()))?;
        let files = std::iter::once(&def.heap_file).chain(def.indexes.iter().map(|i| &i.file));
        for f in files {
            let m = Manifest::load(&cold_manifest_path(&db.join(f)))?;
            keys.extend(m.objects.into_iter().map(|o| o.key));
        }
    }
    Ok(keys)
}
