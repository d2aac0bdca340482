//! The benchmarks of `strata serve` (the work is in `strata_bench::serve`):
//! `strata bench pgbench`, PostgreSQL 15's pgbench against `strata serve` and
//! a private PostgreSQL side by side; `strata bench serve-mixed`, point
//! lookups beside a running TPC-H Q1.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use strata_bench::serve::pgbench::{PgbenchOptions, Workload, report, run};

use crate::context::{Global, usage};

#[derive(Args)]
pub struct PgbenchArgs {
    /// pgbench's scale factor (100,000 accounts each).
    #[arg(long, default_value_t = 1)]
    pub scale: u32,
    /// Client counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
    pub clients: Vec<u32>,
    /// Workloads, comma-separated: select (pgbench -S), tpcb.
    #[arg(long, value_delimiter = ',', default_value = "select,tpcb")]
    pub workloads: Vec<String>,
    /// Seconds per pgbench run.
    #[arg(long, default_value_t = 10)]
    pub seconds: u32,
    /// Runs per point (median reported), each engine in turn.
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// strata's buffer pool and PostgreSQL's shared_buffers.
    #[arg(long, default_value = "256MB")]
    pub memory: String,
    /// Where both databases live (made fresh).
    #[arg(long, default_value = "strata-pgbench")]
    pub work_dir: PathBuf,
    /// Where results go (default: a new ./strata-bench-<time>/pgbench).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A PostgreSQL to run beside strata: the directory of its initdb,
    /// pg_ctl and postgres (any version, built or unpacked). Repeat it for
    /// several, each run in turn; default: the newest under
    /// /usr/lib/postgresql.
    #[arg(long, value_name = "DIR")]
    pub postgres_bin: Vec<PathBuf>,
}

pub fn pgbench(cli: &Global, a: &PgbenchArgs) -> Result<()> {
    let workloads = a
        .workloads
        .iter()
        .map(|w| match w.as_str() {
            "select" => Ok(Workload::SelectOnly),
            "tpcb" => Ok(Workload::TpcB),
            other => Err(usage(format!("unknown workload {other}: select or tpcb"))),
        })
        .collect::<Result<Vec<_>>>()?;
    crate::bench_out::db_not_used(
        cli,
        "bench pgbench",
        "its databases go under --work-dir DIR",
    );
    let out = crate::bench_out::results_dir(a.out.as_deref(), "pgbench")?;
    let opts = PgbenchOptions {
        scale: a.scale,
        clients: a.clients.clone(),
        seconds: a.seconds,
        repeat: a.repeat,
        workloads,
        work_dir: a.work_dir.clone(),
        server_bin: crate::sql_forward::binary("strata-server"),
        memory: a.memory.clone(),
        postgres_bins: a.postgres_bin.clone(),
    };
    let (points, versions) = run(&opts, &mut |m| eprintln!("{m}"))?;
    let md = report(&opts, &points, &versions);
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("pgbench.md"), &md)?;
    print!("{md}");
    Ok(())
}

#[derive(Args)]
pub struct MixedArgs {
    /// A TPC-H database (`strata gen tpch`); default: the global --db.
    #[arg(long)]
    pub tpch_db: Option<PathBuf>,
    /// Timed lookups per phase.
    #[arg(long, default_value_t = 2000)]
    pub lookups: usize,
    /// strata's buffer pool.
    #[arg(long, default_value = "1GiB")]
    pub memory: String,
    /// Where the server's socket goes.
    #[arg(long, default_value = "strata-serve-mixed")]
    pub work_dir: PathBuf,
    /// `strata serve --statement-nice` values (0: analytical statements at
    /// the server's own priority; 19: in the idle class).
    #[arg(long, value_delimiter = ',', default_values_t = [0])]
    pub statement_nice: Vec<i32>,
    /// Server `--device` values: `real` paces scans' reads by the read
    /// window, `real-unpaced` does not. One server per value and
    /// `--statement-nice` value, one after the other.
    #[arg(long, value_delimiter = ',', default_values_t = ["real".to_string(), "real-unpaced".to_string()])]
    pub devices: Vec<String>,
    /// Where results go (default: a new ./strata-bench-<time>/serve-mixed).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn mixed(cli: &Global, a: &MixedArgs) -> Result<()> {
    use strata_bench::serve::mixed;
    let db = a.tpch_db.clone().unwrap_or_else(|| cli.db.clone());
    if !db.join("catalog.json").exists() {
        return Err(usage(format!(
            "{} is not a strata database: make one with `strata --db DIR gen tpch --sf 1` and pass --tpch-db DIR",
            db.display()
        )));
    }
    let out = crate::bench_out::results_dir(a.out.as_deref(), "serve-mixed")?;
    let opts = mixed::MixedOptions {
        db,
        server_bin: crate::sql_forward::binary("strata-server"),
        memory: a.memory.clone(),
        lookups: a.lookups,
        work_dir: a.work_dir.clone(),
        nice: a.statement_nice.clone(),
        devices: a.devices.clone(),
    };
    if let Some(d) = opts
        .devices
        .iter()
        .find(|d| !["real", "real-unpaced"].contains(&d.as_str()))
    {
        return Err(usage(format!(
            "--devices {d}: the servers run on the real device, `real` or `real-unpaced`"
        )));
    }
    if opts.nice.is_empty() || opts.nice.iter().any(|n| !(0..=19).contains(n)) {
        return Err(usage(format!(
            "--statement-nice {:?}: one or more values from 0 to 19",
            opts.nice
        )));
    }
    let m = mixed::run(&opts, &mut |s| eprintln!("{s}"))?;
    let md = mixed::report(&opts, &m);
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("mixed.md"), &md)?;
    print!("{md}");
    Ok(())
}

#[derive(Args)]
pub struct CrashArgs {
    /// SIGKILLs, each into a fresh pgbench run.
    #[arg(long, default_value_t = 50)]
    pub kills: usize,
    /// pgbench clients.
    #[arg(long, default_value_t = 8)]
    pub clients: u32,
    /// pgbench's scale factor.
    #[arg(long, default_value_t = 1)]
    pub scale: u32,
    /// strata's buffer pool.
    #[arg(long, default_value = "256MiB")]
    pub memory: String,
    /// Seed of the kill times (each SIGKILL lands 0.3-2 s into its pgbench run).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where the database lives (made fresh).
    #[arg(long, default_value = "strata-serve-crash")]
    pub work_dir: PathBuf,
    /// Where results go (default: a new ./strata-bench-<time>/serve-crash).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn crash(cli: &Global, a: &CrashArgs) -> Result<()> {
    use strata_bench::serve::crash;
    crate::bench_out::db_not_used(
        cli,
        "bench serve-crash",
        "its database goes under --work-dir DIR",
    );
    let out = crate::bench_out::results_dir(a.out.as_deref(), "serve-crash")?;
    let opts = crash::CrashOptions {
        kills: a.kills,
        clients: a.clients,
        scale: a.scale,
        server_bin: crate::sql_forward::binary("strata-server"),
        work_dir: a.work_dir.clone(),
        memory: a.memory.clone(),
        seed: a.seed,
    };
    let kills = crash::run(&opts, &mut |s| eprintln!("{s}"))?;
    let md = crash::report(&opts, &kills);
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("crash.md"), &md)?;
    print!("{md}");
    Ok(())
}
