//! `strata bench serve-crash`: `strata serve` SIGKILLed again and again
//! under pgbench's TPC-B-like load with 8 clients. After every restart:
//! pgbench's invariant holds (the sums of the accounts', tellers' and
//! branches' balances equal the sum of the history's deltas) and every
//! transaction pgbench saw committed is in `pgbench_history` — the history
//! grew by at least the transactions pgbench logged as done, and by at most
//! those plus one in flight per client (committed, the answer lost with the
//! kill).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rand::{Rng, SeedableRng};

use super::pgbench::{INIT_SQL, StrataServer};
use crate::report::summary::provenance;

#[derive(Clone, Debug)]
pub struct CrashOptions {
    pub kills: usize,
    pub clients: u32,
    pub scale: u32,
    pub server_bin: PathBuf,
    pub work_dir: PathBuf,
    pub memory: String,
    pub seed: u64,
}

/// One kill.
#[derive(Clone, Debug)]
pub struct Kill {
    pub after_ms: u64,
    /// Transactions pgbench logged as done before the kill.
    pub acknowledged: u64,
    /// Rows the history gained.
    pub history_gained: u64,
}

fn history_and_sums(server: &StrataServer) -> Result<(u64, Vec<Option<String>>)> {
    let mut c = server.client()?;
    let n: i64 = c
        .query_one("SELECT count(*) FROM pgbench_history", &[])?
        .get(0);
    // An empty history sums to NULL; the invariant counts it as 0.
    let sum =
        |t: &str, col: &str| format!("(SELECT CAST(coalesce(sum({col}), 0) AS VARCHAR) FROM {t})");
    let row = c.query_one(
        &format!(
            "SELECT {}, {}, {}, {}",
            sum("pgbench_accounts", "abalance"),
            sum("pgbench_tellers", "tbalance"),
            sum("pgbench_branches", "bbalance"),
            sum("pgbench_history", "delta")
        ),
        &[],
    )?;
    Ok((n as u64, (0..4).map(|i| row.get(i)).collect()))
}

/// Transactions in pgbench's per-transaction logs under `dir`.
fn logged(dir: &Path) -> Result<u64> {
    let mut n = 0;
    for e in std::fs::read_dir(dir)? {
        n += std::fs::read_to_string(e?.path())?.lines().count() as u64;
    }
    Ok(n)
}

pub fn run(opts: &CrashOptions, progress: &mut dyn FnMut(&str)) -> Result<Vec<Kill>> {
    let _ = std::fs::remove_dir_all(&opts.work_dir);
    std::fs::create_dir_all(&opts.work_dir)?;
    let work = std::fs::canonicalize(&opts.work_dir)?;
    let db = work.join("strata-db");
    drop(strata_storage::Database::create(
        &db,
        strata_storage::DbOptions::default(),
    )?);
    {
        let s = StrataServer::start(&opts.server_bin, &db, &opts.memory, &work)?;
        s.client()?
            .batch_execute(&INIT_SQL.replace(":scale", &opts.scale.to_string()))?;
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(opts.seed);
    let mut kills = Vec::new();
    for i in 0..opts.kills {
        let server = StrataServer::start(&opts.server_bin, &db, &opts.memory, &work)?;
        let (before, sums) = history_and_sums(&server)?;
        if sums.iter().any(|s| *s != sums[0]) {
            bail!("after restart {i}: the invariant is broken: {sums:?}");
        }
        let logs = work.join("pgbench-log");
        let _ = std::fs::remove_dir_all(&logs);
        std::fs::create_dir_all(&logs)?;
        let mut pgbench = Command::new("pgbench")
            .arg("-h")
            .arg(server.socket_dir())
            .args(["-p", &server.port().to_string(), "-U", "strata", "-n"])
            .args([
                "-c",
                &opts.clients.to_string(),
                "-j",
                "2",
                "-T",
                "60",
                "-l",
                "--log-prefix",
            ])
            .arg(logs.join("tx"))
            .arg("strata")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("running pgbench")?;
        let after_ms = rng.random_range(300..2000);
        std::thread::sleep(Duration::from_millis(after_ms));
        server.kill();
        let _ = pgbench.wait();
        drop(server);
        let acknowledged = logged(&logs)?;
        let server = StrataServer::start(&opts.server_bin, &db, &opts.memory, &work)?;
        let (after, sums) = history_and_sums(&server)?;
        let gained = after.saturating_sub(before);
        if sums.iter().any(|s| *s != sums[0]) {
            bail!(
                "kill {}: the invariant is broken after restart: {sums:?}",
                i + 1
            );
        }
        if gained < acknowledged || gained > acknowledged + opts.clients as u64 {
            bail!(
                "kill {}: pgbench saw {acknowledged} transactions committed, the history gained {gained}",
                i + 1
            );
        }
        progress(&format!(
            "kill {} after {after_ms} ms: {acknowledged} acknowledged, history +{gained}, invariant holds",
            i + 1
        ));
        kills.push(Kill {
            after_ms,
            acknowledged,
            history_gained: gained,
        });
    }
    Ok(kills)
}

pub fn report(opts: &CrashOptions, kills: &[Kill]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# strata serve SIGKILLed under pgbench\n");
    let _ = writeln!(md, "{}\n", provenance());
    let acked: u64 = kills.iter().map(|k| k.acknowledged).sum();
    let gained: u64 = kills.iter().map(|k| k.history_gained).sum();
    let _ = writeln!(
        md,
        "{} kills (SIGKILL 0.3–2 s into a pgbench TPC-B-like run with {} clients, scale {}). After every restart \
         the invariant held (accounts = tellers = branches = history's deltas) and the history held every \
         transaction pgbench saw committed: {acked} acknowledged in all, {gained} history rows gained \
         ({} committed whose answer the kill lost).\n",
        kills.len(),
        opts.clients,
        opts.scale,
        gained - acked
    );
    let _ = writeln!(md, "| kill | after ms | acknowledged | history gained |");
    let _ = writeln!(md, "| ---: | ---: | ---: | ---: |");
    for (i, k) in kills.iter().enumerate() {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            i + 1,
            k.after_ms,
            k.acknowledged,
            k.history_gained
        );
    }
    md
}
