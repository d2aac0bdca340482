//! `strata bench pgbench`: PostgreSQL's own pgbench against `strata serve`
//! and against a private PostgreSQL server, on the same machine, scale and
//! client counts, interleaved run by run (PostgreSQL first in odd runs,
//! strata first in even ones), medians of `repeat` runs.
//!
//! Both are reached the same way, through a Unix socket, pgbench's simple
//! query protocol, `-n` (no VACUUM), `synchronous_commit = on` on
//! PostgreSQL (its default) and strata's log synced at every commit. The
//! workloads are pgbench's built-in `select-only` (`-S`: one point lookup
//! per transaction) and `tpcb-like` (five statements in BEGIN … END). The
//! PostgreSQL tables come from `pgbench -i`; strata's from
//! `scripts/pgbench_init.sql` (`pgbench -i` needs `fillfactor`, `VACUUM`
//! and `ALTER TABLE … ADD PRIMARY KEY`, which strata lacks).
//!
//! Each run's latencies come from pgbench's per-transaction log (`-l`); the
//! p99 is over all of a run's transactions. After the TPC-B runs the
//! invariant of the benchmark is checked on strata: the sums of the
//! accounts', tellers' and branches' balances equal the sum of the
//! history's deltas.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::postgres::{PgBins, PgServer, ServerConfig, major_of_version};
use crate::report::summary::provenance;

/// strata's pgbench tables (`:scale` is the scale factor).
pub const INIT_SQL: &str = include_str!("../../../../scripts/pgbench_init.sql");

/// A pgbench workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    SelectOnly,
    TpcB,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::SelectOnly => "select-only (-S)",
            Workload::TpcB => "tpcb-like",
        }
    }

    fn flag(self) -> Option<&'static str> {
        match self {
            Workload::SelectOnly => Some("-S"),
            Workload::TpcB => None,
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct PgbenchOptions {
    pub scale: u32,
    pub clients: Vec<u32>,
    pub seconds: u32,
    pub repeat: usize,
    pub workloads: Vec<Workload>,
    /// Where both databases live (made fresh).
    pub work_dir: PathBuf,
    /// The `strata-server` binary.
    pub server_bin: PathBuf,
    /// strata's buffer pool, and PostgreSQL's shared_buffers.
    pub memory: String,
    /// The PostgreSQL servers beside strata, by their binaries' directories
    /// ([`PgBins::at`]); empty: the newest installed.
    pub postgres_bins: Vec<PathBuf>,
}

/// One engine's run of one workload at one client count.
#[derive(Clone, Debug)]
pub struct Run {
    pub tps: f64,
    pub p99_ms: f64,
    pub failed: u64,
}

/// The medians of one point.
#[derive(Clone, Debug)]
pub struct Point {
    pub workload: Workload,
    pub clients: u32,
    pub strata: Vec<Run>,
    /// Per PostgreSQL server, in the order of [`PgbenchOptions::postgres_bins`].
    pub postgres: Vec<Vec<Run>>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

impl Point {
    fn tps(runs: &[Run]) -> f64 {
        median(runs.iter().map(|r| r.tps).collect())
    }
    fn p99(runs: &[Run]) -> f64 {
        median(runs.iter().map(|r| r.p99_ms).collect())
    }
}

/// `strata serve` as a child process, killed when dropped.
pub struct StrataServer {
    child: Child,
    socket_dir: PathBuf,
    port: u16,
}

impl Drop for StrataServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl StrataServer {
    /// Starts `bin serve` on `db`, listening in `socket_dir` too.
    pub fn start(bin: &Path, db: &Path, memory: &str, socket_dir: &Path) -> Result<StrataServer> {
        StrataServer::start_with(bin, db, memory, socket_dir, &[])
    }

    /// [`StrataServer::start`] with more of `strata serve`'s options.
    pub fn start_with(
        bin: &Path,
        db: &Path,
        memory: &str,
        socket_dir: &Path,
        serve_args: &[&str],
    ) -> Result<StrataServer> {
        let port = free_port()?;
        // A server SIGKILLed on this port left its socket file; until the new
        // one replaces it, connecting there is refused.
        let socket = socket_dir.join(format!(".s.PGSQL.{port}"));
        let _ = std::fs::remove_file(&socket);
        let log = std::fs::File::create(socket_dir.join("strata-serve.log"))?;
        let child = Command::new(bin)
            .arg("--db")
            .arg(db)
            .args([
                "--buffer-pool",
                memory,
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .arg("--socket-dir")
            .arg(socket_dir)
            .args(["--max-connections", "200"])
            .args(serve_args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let server = StrataServer {
            child,
            socket_dir: socket_dir.to_path_buf(),
            port,
        };
        let started = Instant::now();
        while !socket.exists() {
            if started.elapsed() > Duration::from_secs(60) {
                bail!(
                    "strata serve did not start: see {}",
                    socket_dir.join("strata-serve.log").display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    /// Ends the server with SIGKILL (no shutdown of any kind).
    pub fn kill(&self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGKILL);
        }
    }

    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection through the Unix socket.
    pub fn client(&self) -> Result<postgres::Client> {
        Ok(postgres::Config::new()
            .host_path(&self.socket_dir)
            .port(self.port)
            .user("strata")
            .dbname("strata")
            .connect(postgres::NoTls)?)
    }
}

/// How pgbench reaches an engine.
struct Target {
    socket_dir: PathBuf,
    port: u16,
    user: String,
    dbname: String,
}

/// Runs pgbench once; its throughput, p99 latency and failures.
fn pgbench(t: &Target, w: Workload, clients: u32, seconds: u32, log_dir: &Path) -> Result<Run> {
    let _ = std::fs::remove_dir_all(log_dir);
    std::fs::create_dir_all(log_dir)?;
    let prefix = log_dir.join("tx");
    let mut cmd = Command::new("pgbench");
    cmd.arg("-h")
        .arg(&t.socket_dir)
        .args(["-p", &t.port.to_string(), "-U", &t.user, "-n"])
        .args([
            "-c",
            &clients.to_string(),
            "-j",
            &clients.min(2).to_string(),
        ])
        .args(["-T", &seconds.to_string(), "-l", "--log-prefix"])
        .arg(&prefix);
    if let Some(f) = w.flag() {
        cmd.arg(f);
    }
    let out = cmd.arg(&t.dbname).output().context("running pgbench")?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        bail!(
            "pgbench failed:\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let number = |key: &str| -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        line[key.len()..]
            .split_whitespace()
            .next()?
            .trim_end_matches(['(', '%'])
            .parse()
            .ok()
    };
    let tps = number("tps = ").context("no tps in pgbench's output")?;
    let failed = number("number of failed transactions: ").unwrap_or(0.0) as u64;
    let mut latencies = Vec::new();
    for entry in std::fs::read_dir(log_dir)? {
        let body = std::fs::read_to_string(entry?.path())?;
        // client transaction latency_us script epoch_s epoch_us
        latencies.extend(
            body.lines()
                .filter_map(|l| l.split_whitespace().nth(2)?.parse::<f64>().ok()),
        );
    }
    latencies.sort_by(f64::total_cmp);
    let p99 = latencies
        .get(((latencies.len() as f64 * 0.99).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(f64::NAN)
        / 1000.0;
    Ok(Run {
        tps,
        p99_ms: p99,
        failed,
    })
}

/// Runs the benchmark; `progress` hears what it does. The points, and each
/// PostgreSQL server's version.
pub fn run(
    opts: &PgbenchOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<Point>, Vec<String>)> {
    if opts.repeat == 0 || opts.clients.is_empty() || opts.workloads.is_empty() {
        bail!("nothing to run: --repeat, --clients and --workloads must not be empty");
    }
    let bins = if opts.postgres_bins.is_empty() {
        vec![PgBins::find()?]
    } else {
        opts.postgres_bins
            .iter()
            .map(|d| PgBins::at(d))
            .collect::<Result<Vec<_>>>()?
    };
    let work = &opts.work_dir;
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work)?;
    let work = std::fs::canonicalize(work)?;
    // PostgreSQL, with pgbench's own tables.
    let config = ServerConfig {
        shared_buffers: opts.memory.replace("iB", "B"),
        wal_minimal: false,
        extra: vec![("max_connections".into(), "200".into())],
    };
    let mut servers = Vec::new();
    for (i, b) in bins.iter().enumerate() {
        let dir = work.join(format!("postgres-{}-{i}", b.major()));
        let pg = PgServer::start_with(b, &dir, &config, progress)?;
        let target = Target {
            socket_dir: pg.socket_dir().to_path_buf(),
            port: pg.port(),
            user: pg.user().to_string(),
            dbname: "postgres".into(),
        };
        progress(&format!(
            "pgbench -i -s {} on PostgreSQL {}",
            opts.scale,
            pg.version()
        ));
        let init = Command::new("pgbench")
            .arg("-h")
            .arg(&target.socket_dir)
            .args([
                "-p",
                &target.port.to_string(),
                "-U",
                &target.user,
                "-i",
                "-q",
            ])
            .args(["-s", &opts.scale.to_string(), "postgres"])
            .output()?;
        if !init.status.success() {
            bail!("pgbench -i: {}", String::from_utf8_lossy(&init.stderr));
        }
        servers.push((pg, target));
    }
    // strata, with the same tables from its own script.
    let db = work.join("strata-db");
    drop(strata_storage::Database::create(
        &db,
        strata_storage::DbOptions::default(),
    )?);
    let strata = StrataServer::start(&opts.server_bin, &db, &opts.memory, &work)?;
    progress(&format!(
        "strata: {} at scale {}",
        INIT_SQL
            .lines()
            .find(|l| l.starts_with("CREATE"))
            .unwrap_or(""),
        opts.scale
    ));
    strata
        .client()?
        .batch_execute(&INIT_SQL.replace(":scale", &opts.scale.to_string()))?;
    let strata_target = Target {
        socket_dir: strata.socket_dir.clone(),
        port: strata.port,
        user: "strata".into(),
        dbname: "strata".into(),
    };
    let names: Vec<String> = std::iter::once("strata".to_string())
        .chain(
            servers
                .iter()
                .map(|(pg, _)| format!("PostgreSQL {}", pg.version())),
        )
        .collect();
    let mut points = Vec::new();
    for &w in &opts.workloads {
        for &c in &opts.clients {
            // runs[0] strata's, runs[1 + i] the i-th server's.
            let mut runs: Vec<Vec<Run>> = vec![Vec::new(); names.len()];
            for r in 0..opts.repeat {
                // Each engine goes first in turn.
                for k in 0..names.len() {
                    let e = (k + r) % names.len();
                    let t = if e == 0 {
                        &strata_target
                    } else {
                        &servers[e - 1].1
                    };
                    let run = pgbench(t, w, c, opts.seconds, &work.join("pgbench-log"))?;
                    progress(&format!(
                        "{} {} clients, run {}: {} {:.0} tps, p99 {:.2} ms",
                        w.name(),
                        c,
                        r + 1,
                        names[e],
                        run.tps,
                        run.p99_ms
                    ));
                    runs[e].push(run);
                }
            }
            let mut runs = runs.into_iter();
            points.push(Point {
                workload: w,
                clients: c,
                strata: runs.next().unwrap_or_default(),
                postgres: runs.collect(),
            });
        }
        if w == Workload::TpcB {
            check_invariant(&strata)?;
        }
    }
    let versions = servers
        .iter()
        .map(|(pg, _)| pg.version().to_string())
        .collect();
    Ok((points, versions))
}

/// TPC-B's invariant on strata: every balance change committed whole.
fn check_invariant(strata: &StrataServer) -> Result<()> {
    let sum = |t: &str, c: &str| format!("(SELECT CAST(sum({c}) AS VARCHAR) FROM {t})");
    let row = strata.client()?.query_one(
        &format!(
            "SELECT {}, {}, {}, {}",
            sum("pgbench_accounts", "abalance"),
            sum("pgbench_tellers", "tbalance"),
            sum("pgbench_branches", "bbalance"),
            sum("pgbench_history", "delta")
        ),
        &[],
    )?;
    let sums: Vec<Option<String>> = (0..4).map(|i| row.get(i)).collect();
    if sums.iter().any(|s| *s != sums[0]) {
        bail!(
            "TPC-B invariant broken on strata: accounts, tellers, branches, history sum to {sums:?}"
        );
    }
    Ok(())
}

/// The markdown report.
pub fn report(opts: &PgbenchOptions, points: &[Point], pg_versions: &[String]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# pgbench: strata serve beside PostgreSQL\n");
    let _ = writeln!(md, "{}\n", provenance());
    let servers: Vec<String> = pg_versions
        .iter()
        .map(|v| format!("PostgreSQL {v}"))
        .collect();
    let _ = writeln!(
        md,
        "pgbench (PostgreSQL 15's) at scale {} ({} accounts), {} s per run, medians of {} runs interleaved; \
         {} with `synchronous_commit = on`, shared_buffers {}; strata with a {} buffer pool. \
         All through a Unix socket, simple query protocol, `-n`.\n",
        opts.scale,
        opts.scale as u64 * 100_000,
        opts.seconds,
        opts.repeat,
        servers.join(" and "),
        opts.memory,
        opts.memory
    );
    let mut head = vec![
        "workload".to_string(),
        "clients".into(),
        "strata tps".into(),
    ];
    for v in pg_versions {
        let m = major_of_version(v).unwrap_or_else(|| v.clone());
        head.push(format!("PG {m} tps"));
        head.push(format!("strata / PG {m}"));
    }
    head.push("strata p99 ms".into());
    for v in pg_versions {
        let m = major_of_version(v).unwrap_or_else(|| v.clone());
        head.push(format!("PG {m} p99 ms"));
    }
    head.push("failed (strata, PG)".into());
    let _ = writeln!(md, "| {} |", head.join(" | "));
    let align: Vec<&str> = (0..head.len())
        .map(|i| {
            if i == 0 || i + 1 == head.len() {
                "---"
            } else {
                "---:"
            }
        })
        .collect();
    let _ = writeln!(md, "| {} |", align.join(" | "));
    let fails = |r: &[Run]| r.iter().map(|x| x.failed).sum::<u64>();
    for p in points {
        let s = Point::tps(&p.strata);
        let mut cells = vec![
            p.workload.name().to_string(),
            p.clients.to_string(),
            format!("{s:.0}"),
        ];
        for runs in &p.postgres {
            let g = Point::tps(runs);
            cells.push(format!("{g:.0}"));
            cells.push(format!("{:.2}", s / g));
        }
        cells.push(format!("{:.2}", Point::p99(&p.strata)));
        for runs in &p.postgres {
            cells.push(format!("{:.2}", Point::p99(runs)));
        }
        let pg_fails: Vec<String> = p.postgres.iter().map(|r| fails(r).to_string()).collect();
        cells.push(format!("{}, {}", fails(&p.strata), pg_fails.join(", ")));
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }
    md
}
