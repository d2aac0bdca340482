//! Skipper §5 (Figs. 7–12, Table 3) on the real CSD service: `strata-sql`
//! clients running TPC-H over their own copies whose tables live on one
//! `strata csd serve`, with out-of-order execution (`strata.skipper = true`:
//! MJoin asks for every object of a query at once and joins them in whatever
//! order the device delivers) against the pull baseline of §3.2
//! (`strata.skipper = false`) and the same queries over local tables.
//!
//! Why it is built this way:
//! - The fleet, the clients and the device are [`fleet`](super::fleet)'s, as
//!   for Figs. 4/5 ([`pull`](super::pull)), so both baselines run the same code
//!   and differ only in the session setting, the scheduler (object FCFS for
//!   the query-agnostic device of the pull baseline, rank for Skipper) and
//!   the layout.
//! - **Scaling.** Modeled time is in the paper's seconds: a switch is 10 s
//!   and an object's transfer 550 s / 57 objects ≈ 9.65 s (Table 3's network
//!   time for Q12's 57 segments; switch / transfer ≈ 1), whatever the object
//!   size, so the device's bandwidth is `object size / 9.65 s`. Real delays
//!   are modeled × `time_scale`; `auto` picks the scale at which the paper's
//!   PostgreSQL processing time for Q12 (407 s, Table 3) is strata's local Q12
//!   time, so switch : transfer : processing keep the paper's proportions and
//!   a figure runs in seconds to minutes.
//! - Every client's answer must equal the same query over the local tables,
//!   or the run fails. MJoin's own account (`STRATA_SKIPPER_REPORT`: objects,
//!   requests, reissues, wait and processing time) is read per client, and the
//!   device's per-query records are summed over a client's queries (MJoin tags
//!   `<tag>#<n>`).
//! - Fig. 9's breakdown: a client's wait is MJoin's `wait_s` (Skipper) or its
//!   time beyond the local run (pull); its switch share is the switches the
//!   device made while the client ran, × the switch time, capped at the wait;
//!   the rest of the wait is transfer, and the rest of the time processing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;
use strata_csd::config::CsdConfig;
use strata_csd::layout::LayoutSpec;
use strata_csd::schedule::{Metrics, Policy};

use crate::report::plot::{Axis, Plot};
use crate::report::results::{ResultRow, ResultSet, median};
use crate::report::summary::{Summary, num};
use crate::skipper::fleet::{
    Fleet, FleetSpec, SqlRun, base_db, cold_keys, fresh_dir, local_copies, queries_of, run_clients,
    run_sql,
};

/// The figures, in the order `all` runs them.
pub const FIGURES: [&str; 7] = ["fig7", "fig9", "fig10", "fig11a", "fig11b", "fig8", "fig12"];

/// The paper's modeled transfer of one segment: Table 3's 550 s of network
/// access for Q12's 57 segments.
pub const PAPER_TRANSFER_S: f64 = 550.0 / 57.0;
/// The paper's processing time of Q12 alone (Table 3, PostgreSQL's query
/// execution): what `--time-scale auto` maps strata's local Q12 time to.
pub const PAPER_PROCESS_S: f64 = 407.0;

/// A TPC-H query the figures run, with the tables it reads (the ones its
/// clients put on the CSD).
#[derive(Clone, Copy, Debug)]
pub struct TpchQuery {
    pub number: u32,
    pub sql: &'static str,
    pub tables: &'static [&'static str],
}

const QUERIES: [TpchQuery; 5] = [
    TpchQuery {
        number: 3,
        sql: include_str!("../../../sql/queries/q03.sql"),
        tables: &["customer", "orders", "lineitem"],
    },
    TpchQuery {
        number: 5,
        sql: include_str!("../../../sql/queries/q05.sql"),
        tables: &[
            "customer", "orders", "lineitem", "supplier", "nation", "region",
        ],
    },
    TpchQuery {
        number: 10,
        sql: include_str!("../../../sql/queries/q10.sql"),
        tables: &["customer", "orders", "lineitem", "nation"],
    },
    TpchQuery {
        number: 12,
        sql: include_str!("../../../sql/queries/q12.sql"),
        tables: &["orders", "lineitem"],
    },
    TpchQuery {
        number: 14,
        sql: include_str!("../../../sql/queries/q14.sql"),
        tables: &["lineitem", "part"],
    },
];

/// The query `number` (3, 5, 10, 12 or 14: the joins the figures use).
pub fn tpch_query(number: u32) -> Result<TpchQuery> {
    QUERIES
        .iter()
        .find(|q| q.number == number)
        .copied()
        .ok_or_else(|| {
            anyhow!(
                "TPC-H Q{number} is not one of the benchmark's queries ({})",
                QUERIES
                    .iter()
                    .map(|q| format!("Q{}", q.number))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// Real delay per modeled second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimeScale {
    /// Strata's local Q12 time / the paper's 407 s.
    Auto,
    Fixed(f64),
}

/// What to run.
#[derive(Clone, Debug)]
pub struct SkipperOptions {
    /// Databases, CSD data and MJoin reports go here.
    pub bench_db: PathBuf,
    pub out: PathBuf,
    pub sf: f64,
    pub object_bytes: u64,
    /// Runs per point; medians reported.
    pub repeat: usize,
    pub time_scale: TimeScale,
    /// The `strata-sql` binary the clients run.
    pub sql_binary: PathBuf,
    /// Each client's buffer pool.
    pub buffer_pool: String,
    /// Fig. 7's client counts; the largest is the client count of Figs. 9,
    /// 10 and 11b.
    pub clients: Vec<usize>,
    /// Modeled switch time, seconds (the paper: 10).
    pub switch_s: f64,
    /// Fig. 10's switch times.
    pub switches_s: Vec<f64>,
    /// Figs. 8 and 12: client i runs query `mixed[i]`.
    pub mixed: Vec<u32>,
    /// Fig. 8: repetitions per client, back to back.
    pub reps: usize,
    /// Fig. 12: repetitions per client.
    pub fig12_reps: usize,
    /// MJoin's eviction policy (`strata.skipper_evict`).
    pub evict: String,
}

/// One MJoin execution's account, a line of `STRATA_SKIPPER_REPORT`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct MJoinReport {
    pub tag: String,
    pub relations: Vec<String>,
    pub objects: u64,
    /// GETs issued, reissues included.
    pub requests: u64,
    pub reissues: u64,
    pub evictions: u64,
    pub subplans: u64,
    pub executed: u64,
    pub pruned: u64,
    pub cycles: u64,
    /// Time blocked waiting for an object.
    pub wait_s: f64,
    /// Time decoding and joining.
    pub process_s: f64,
    pub elapsed_s: f64,
}

/// The reports in `path`, one JSON object a line (blank lines skipped); a
/// line that is not a report is an error naming the file and line.
pub fn read_reports(path: &Path) -> Result<Vec<MJoinReport>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{} line {}: not an MJoin report", path.display(), i + 1))
        })
        .collect()
}

/// How a round's clients run their queries.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Over local tables (no CSD): the ideal.
    Local,
    /// Over the CSD, the executor pulling objects in its own order
    /// (`strata.skipper = false`); `--cold-cache` of the given bytes.
    Pull { cache: u64 },
    /// Over the CSD through MJoin with an object cache of the given bytes.
    Skipper { cache: u64 },
}

impl Mode {
    fn name(&self) -> &'static str {
        match self {
            Mode::Local => "local",
            Mode::Pull { .. } => "pull",
            Mode::Skipper { .. } => "skipper",
        }
    }

    /// The scheduler the CSD runs for this mode: the query-agnostic object
    /// FCFS of §3.2 for the pull baseline, rank (K = 1) for Skipper.
    fn policy(&self) -> Policy {
        match self {
            Mode::Skipper { .. } => Policy::Rank { k: 1.0 },
            _ => Policy::ObjectFcfs,
        }
    }
}

/// One client of a round: `reps` runs of `query`, one `strata-sql` process
/// each, back to back, starting `delay` after the round.
#[derive(Clone, Debug)]
struct ClientPlan {
    db: PathBuf,
    query: TpchQuery,
    reps: usize,
    delay: Duration,
}

/// What one client did in a round.
#[derive(Clone, Debug, Default)]
struct ClientResult {
    /// Wall time of its runs, summed (its cumulative time).
    seconds: f64,
    reports: Vec<MJoinReport>,
    /// Switches the device made while the client ran.
    switches_seen: u64,
    /// Requests the device served for the client's queries.
    served: u64,
    /// Of those, requests under the bare process tag: reads by the pull path
    /// (for Skipper: what the process read before or beside MJoin).
    served_bare: u64,
}

impl ClientResult {
    fn sum(&self, f: impl Fn(&MJoinReport) -> f64) -> f64 {
        self.reports.iter().map(f).sum()
    }
}

struct RoundResult {
    clients: Vec<ClientResult>,
    metrics: Option<Metrics>,
}

impl RoundResult {
    fn mean(&self, f: impl Fn(&ClientResult) -> f64) -> f64 {
        self.clients.iter().map(f).sum::<f64>() / self.clients.len().max(1) as f64
    }
}

/// What every figure shares: options, the base database, the local answers,
/// the time scale and whether `strata-sql` has MJoin.
struct Ctx<'a> {
    opts: &'a SkipperOptions,
    base: PathBuf,
    expected: BTreeMap<u32, String>,
    /// Whether `strata-sql` knows `strata.skipper`.
    skipper: bool,
    scale: f64,
    /// Strata's Q12 over local tables, alone (median seconds).
    q12_local_s: f64,
    /// Strata's Q12 over local tables by the largest client count at once
    /// (the clients' mean, median seconds): what a client's processing is
    /// when C clients share this machine's cores.
    q12_local_c_s: f64,
    reports: PathBuf,
    rounds: usize,
}

fn settings(ctx: &Ctx, mode: Mode) -> Result<Vec<String>> {
    Ok(match mode {
        Mode::Local => vec![],
        Mode::Pull { .. } if ctx.skipper => vec!["strata.skipper=false".into()],
        Mode::Pull { .. } => vec![],
        Mode::Skipper { cache } => {
            if !ctx.skipper {
                bail!(
                    "{} has no setting strata.skipper: Skipper's out-of-order execution (MJoin) \
                     is not built into it, so only the pull baseline can run",
                    ctx.opts.sql_binary.display()
                );
            }
            vec![
                "strata.skipper=true".into(),
                format!("strata.skipper_cache={cache}B"),
                format!("strata.skipper_evict={}", ctx.opts.evict),
            ]
        }
    })
}

/// Runs every plan at once (over `fleet`'s device unless `mode` is local);
/// each answer must equal the query's local one.
fn round(
    ctx: &mut Ctx,
    fleet: Option<&Fleet>,
    plans: &[ClientPlan],
    mode: Mode,
) -> Result<RoundResult> {
    ctx.rounds += 1;
    let label = format!("r{}-{}", ctx.rounds, mode.name());
    if let Some(f) = fleet {
        f.reset()?;
    }
    let disp = fleet.map(|f| f.server().dispatcher().clone());
    let set = settings(ctx, mode)?;
    let cold_cache = match mode {
        Mode::Pull { cache } => Some(cache),
        _ => None,
    };
    let ctx = &*ctx;
    let results = run_clients(plans.len(), &|i| {
        let plan = &plans[i];
        std::thread::sleep(plan.delay);
        let expected = ctx
            .expected
            .get(&plan.query.number)
            .ok_or_else(|| anyhow!("no local answer of Q{}", plan.query.number))?;
        let s0 = disp.as_ref().map_or(0, |d| d.state().switches);
        let mut r = ClientResult::default();
        let mut tags = Vec::new();
        for k in 0..plan.reps {
            let tag = format!("{label}-c{i}-{k}");
            let report = ctx.reports.join(format!("{tag}.jsonl"));
            let (answer, secs) = run_sql(&SqlRun {
                binary: &ctx.opts.sql_binary,
                db: &plan.db,
                buffer_pool: &ctx.opts.buffer_pool,
                cold_cache,
                settings: &set,
                env: vec![
                    ("STRATA_CSD_QUERY".into(), tag.clone()),
                    (
                        "STRATA_SKIPPER_REPORT".into(),
                        report.to_string_lossy().into_owned(),
                    ),
                ],
                sql: plan.query.sql,
            })
            .with_context(|| format!("client {i} ({}), Q{}", mode.name(), plan.query.number))?;
            if &answer != expected {
                bail!(
                    "client {i}'s Q{} answer ({}) differs from the local one:\n{answer}\nvs\n{expected}",
                    plan.query.number,
                    mode.name()
                );
            }
            r.seconds += secs;
            if let Mode::Skipper { .. } = mode {
                if !report.exists() {
                    bail!(
                        "client {i}'s Q{} ran with strata.skipper=true but wrote no MJoin report \
                         to {}: it did not run through MJoin",
                        plan.query.number,
                        report.display()
                    );
                }
                let reports = read_reports(&report)?;
                if reports.is_empty() {
                    bail!("{} holds no MJoin report", report.display());
                }
                r.reports.extend(reports);
            }
            tags.push(tag);
        }
        let s1 = disp.as_ref().map_or(0, |d| d.state().switches);
        r.switches_seen = s1.checked_sub(s0).ok_or_else(|| {
            anyhow!("the CSD's switch count went from {s0} to {s1} during client {i}'s run")
        })?;
        Ok((r, tags))
    });
    let metrics = fleet.map(|f| f.metrics()).transpose()?;
    let mut clients = Vec::new();
    for r in results {
        let (mut c, tags) = r?;
        if let Some(m) = &metrics {
            for q in tags.iter().flat_map(|t| queries_of(m, t)) {
                c.served += q.served;
                if tags.contains(&q.query.0) {
                    c.served_bare += q.served;
                }
            }
        }
        clients.push(c);
    }
    Ok(RoundResult { clients, metrics })
}

/// Medians over repeated rounds of per-round numbers.
#[derive(Default)]
struct Point {
    rounds: Vec<BTreeMap<&'static str, f64>>,
}

impl Point {
    fn add(&mut self, r: &RoundResult) {
        let mut m = BTreeMap::new();
        m.insert("mean_s", r.mean(|c| c.seconds));
        m.insert(
            "max_s",
            r.clients.iter().map(|c| c.seconds).fold(0.0, f64::max),
        );
        m.insert("served", r.mean(|c| c.served as f64));
        m.insert("pull_reads", r.mean(|c| c.served_bare as f64));
        m.insert("requests", r.mean(|c| c.sum(|x| x.requests as f64)));
        m.insert("reissues", r.mean(|c| c.sum(|x| x.reissues as f64)));
        m.insert("evictions", r.mean(|c| c.sum(|x| x.evictions as f64)));
        m.insert("subplans", r.mean(|c| c.sum(|x| x.subplans as f64)));
        m.insert("cycles", r.mean(|c| c.sum(|x| x.cycles as f64)));
        m.insert("wait_s", r.mean(|c| c.sum(|x| x.wait_s)));
        m.insert("process_s", r.mean(|c| c.sum(|x| x.process_s)));
        m.insert(
            "switches",
            r.metrics.as_ref().map_or(0.0, |m| m.switches as f64),
        );
        m.insert(
            "l2_stretch_all",
            r.metrics.as_ref().map_or(0.0, |m| m.stretch.l2_norm),
        );
        m.insert(
            "max_stretch_all",
            r.metrics.as_ref().map_or(0.0, |m| m.stretch.max),
        );
        // Over MJoin's queries (tags `<tag>#<n>`) alone: the single-object
        // reads a process makes outside MJoin are queries of their own to
        // the device, with an ideal of one transfer.
        let stretches: Vec<f64> = r.metrics.as_ref().map_or(vec![], |m| {
            m.queries
                .iter()
                .filter(|q| q.query.0.contains('#'))
                .filter_map(|q| q.stretch)
                .collect()
        });
        m.insert(
            "l2_stretch",
            stretches.iter().map(|s| s * s).sum::<f64>().sqrt(),
        );
        m.insert("max_stretch", stretches.iter().copied().fold(0.0, f64::max));
        m.insert("cumulative_s", r.clients.iter().map(|c| c.seconds).sum());
        self.rounds.push(m);
    }

    fn get(&self, key: &str) -> f64 {
        median(
            &self
                .rounds
                .iter()
                .filter_map(|m| m.get(key).copied())
                .collect::<Vec<_>>(),
        )
        .unwrap_or(0.0)
    }

    /// A result row with the medians as columns.
    fn row(&self, figure: &str, mode: Mode, variant: &str, x: f64) -> ResultRow {
        let device = if mode == Mode::Local { "local" } else { "csd" };
        let mut row = ResultRow::new(figure, device, variant, x);
        row.wall_ms = self.get("mean_s") * 1e3;
        row.io_requests = self.get("served").round() as u64;
        let keys: Vec<&str> = self
            .rounds
            .first()
            .map_or(vec![], |m| m.keys().copied().collect());
        for k in keys {
            row.set(k, num(self.get(k)));
        }
        row.with("runs", self.rounds.len())
    }
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{}x", num(a / b))
    } else {
        "n/a".into()
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}

/// The device of a figure: 5 groups, the paper's switch and transfer in
/// modeled seconds, real delays × the run's scale.
fn device(ctx: &Ctx, layout: LayoutSpec, policy: Policy, switch_s: f64) -> CsdConfig {
    CsdConfig {
        groups: 5,
        switch_ms: switch_s * 1000.0,
        bandwidth_mib_s: ctx.opts.object_bytes as f64 / (1u64 << 20) as f64 / PAPER_TRANSFER_S,
        time_scale: ctx.scale,
        layout,
        policy,
        initial_group: None,
    }
}

/// Restarts `fleet` if its scheduler or switch time is not `mode`'s and
/// `switch_s`.
fn tune(fleet: &mut Fleet, mode: Mode, switch_s: f64) -> Result<()> {
    let want = CsdConfig {
        policy: mode.policy(),
        switch_ms: switch_s * 1000.0,
        ..fleet.config().clone()
    };
    if &want != fleet.config() {
        fleet.restart(want)?;
    }
    Ok(())
}

fn make_fleet(
    ctx: &Ctx,
    name: &str,
    config: CsdConfig,
    clients: usize,
    tables: &[&str],
    progress: &mut dyn FnMut(&str),
) -> Result<Fleet> {
    let spec = FleetSpec {
        name: format!("skipper-{name}"),
        config,
        clients,
        tables: tables.iter().map(|t| t.to_string()).collect(),
        object_bytes: ctx.opts.object_bytes,
    };
    Fleet::new(&ctx.opts.bench_db, &ctx.base, &spec, progress)
}

fn plans(dbs: &[PathBuf], queries: &[TpchQuery], reps: usize) -> Vec<ClientPlan> {
    dbs.iter()
        .zip(queries)
        .map(|(db, q)| ClientPlan {
            db: db.clone(),
            query: *q,
            reps,
            delay: Duration::ZERO,
        })
        .collect()
}

/// The scaling paragraph every results file starts with.
fn scaling(ctx: &Ctx, s: &mut Summary, objects: usize) {
    let transfer_real = PAPER_TRANSFER_S * ctx.scale;
    s.paragraph(&format!(
        "Scaling: the paper ran TPC-H SF 50 in 1 GB segments with 10 s group switches and an \
         effective transfer of ≈ {} s per segment (Table 3: 550 s of network for Q12's 57 \
         segments), i.e. switch / transfer ≈ 1, and 407 s of processing. Here: TPC-H SF {} in \
         {} objects (`orders` and `lineitem`, Q12's tables, are {objects} objects per client, \
         heaps and indexes), a modeled {} s switch and {} s \
         per object (bandwidth = object size / {} s, so switch / transfer is the paper's), and \
         real delay = modeled × {} ({}; strata's local Q12 takes {} s alone and {} s per client \
         with {} clients at once on this machine's shared cores, the paper's 407 s × the scale \
         is {} s): a switch waits {} s and an object {} s for real. Medians of {} runs; every \
         client's answer was checked against the local one.",
        num(PAPER_TRANSFER_S),
        ctx.opts.sf,
        strata_storage::util::format_bytes(ctx.opts.object_bytes),
        num(ctx.opts.switch_s),
        num(PAPER_TRANSFER_S),
        num(PAPER_TRANSFER_S),
        num(ctx.scale),
        match ctx.opts.time_scale {
            TimeScale::Auto => {
                "--time-scale auto: strata's local Q12 time per client with the most clients \
                 at once / 407 s, as the paper's clients each had their own server"
            }
            TimeScale::Fixed(_) => "--time-scale as given",
        },
        num(ctx.q12_local_s),
        num(ctx.q12_local_c_s),
        max_clients(ctx),
        num(PAPER_PROCESS_S * ctx.scale),
        num(ctx.opts.switch_s * ctx.scale),
        num(transfer_real),
        ctx.opts.repeat,
    ));
}

fn write(ctx: &Ctx, name: &str, rows: &ResultSet, s: &Summary) -> Result<PathBuf> {
    std::fs::create_dir_all(&ctx.opts.out)?;
    rows.write_csv(ctx.opts.out.join(format!("{name}.csv")))?;
    let md = ctx.opts.out.join(format!("{name}.md"));
    s.write(&md)?;
    Ok(md)
}

fn max_clients(ctx: &Ctx) -> usize {
    ctx.opts.clients.iter().copied().max().unwrap_or(1)
}

/// Fig. 7: mean Q12 time for 1..C clients, one group each, cache half the
/// data a query reads: Skipper, pull, local.
fn fig7(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let q12 = tpch_query(12)?;
    let max_c = max_clients(ctx);
    let sw = ctx.opts.switch_s;
    let mut fleet = make_fleet(
        ctx,
        "fig7",
        device(ctx, LayoutSpec::OnePerClient, Policy::ObjectFcfs, sw),
        max_c,
        q12.tables,
        progress,
    )?;
    // The paper's "Ideal" (PostgreSQL on HDD): the pull baseline with every
    // client's data in one group — the transfers, no switches.
    let hdd = make_fleet(
        ctx,
        "fig7-allin1",
        device(ctx, LayoutSpec::AllInOne, Policy::ObjectFcfs, sw),
        max_c,
        q12.tables,
        progress,
    )?;
    let cache = fleet.bytes_of(q12.tables) / 2;
    let local = local_copies(&ctx.base, &ctx.opts.bench_db.join("skipper-local"), max_c)?;
    // (variant, mode, on the all-in-one device)
    let variants = [
        ("local", Mode::Local, false),
        ("hdd", Mode::Pull { cache }, true),
        ("pull", Mode::Pull { cache }, false),
        ("skipper", Mode::Skipper { cache }, false),
    ];
    let n = variants.len();
    let mut rows = ResultSet::new();
    let mut table = Vec::new();
    let mut series: Vec<Vec<(f64, f64)>> = vec![Vec::new(); n];
    let mut last = vec![0.0; n];
    let mut bare = 0.0;
    let mut skipper_requests = 0.0;
    for &c in &ctx.opts.clients {
        let mut points: Vec<Point> = (0..n).map(|_| Point::default()).collect();
        for run in 0..ctx.opts.repeat {
            for (m, (name, mode, allin1)) in variants.iter().enumerate() {
                progress(&format!("fig7: {c} clients, {name}, run {}", run + 1));
                let qs = vec![q12; c];
                let r = if *mode == Mode::Local {
                    round(ctx, None, &plans(&local[..c], &qs, 1), *mode)?
                } else if *allin1 {
                    round(ctx, Some(&hdd), &plans(&hdd.dbs()[..c], &qs, 1), *mode)?
                } else {
                    tune(&mut fleet, *mode, sw)?;
                    round(ctx, Some(&fleet), &plans(&fleet.dbs()[..c], &qs, 1), *mode)?
                };
                points[m].add(&r);
            }
        }
        for (m, (name, mode, _)) in variants.iter().enumerate() {
            rows.push(
                points[m]
                    .row("fig7", *mode, name, c as f64)
                    .with("clients", c)
                    .with("cache_bytes", cache),
            );
            series[m].push((c as f64, points[m].get("mean_s")));
            last[m] = points[m].get("mean_s");
        }
        let t = |m: usize| points[m].get("mean_s");
        bare = points[3].get("pull_reads");
        skipper_requests = points[3].get("requests");
        table.push(vec![
            c.to_string(),
            num(t(0)),
            num(t(1)),
            num(t(2)),
            num(t(3)),
            ratio(t(2), t(3)),
            ratio(t(3), t(0)),
            ratio(t(3), t(1)),
            num(points[2].get("switches")),
            num(points[3].get("switches")),
            format!(
                "{} + {}",
                num(points[3].get("requests")),
                num(points[3].get("pull_reads"))
            ),
        ]);
    }
    let mut s = Summary::new("Skipper Fig. 7: Q12 as clients grow — Skipper, pull, ideal");
    scaling(ctx, &mut s, fleet.objects_of(q12.tables));
    s.paragraph(&format!(
        "Each of C clients runs Q12 at once over its own copy; `orders` and `lineitem` are on \
         the CSD, one group per client. Pull: `strata.skipper=false`, object-FCFS scheduler (the \
         query-agnostic device of Fig. 4). Skipper: `strata.skipper=true`, rank scheduler. Both \
         caches hold half the data Q12 reads ({}). Local: the same query over local tables (no \
         CSD: the ideal the targets name). HDD: the pull baseline with every client's data in \
         one group (the transfers without switches: the paper's \"Ideal\", PostgreSQL on an HDD \
         capacity tier, Fig. 4's HDD). Times are the clients' mean, real seconds. Requests per \
         Skipper client: MJoin's GETs + the objects the process pulled under its bare tag \
         (reads outside MJoin, one at a time).",
        strata_storage::util::format_bytes(cache)
    ));
    s.table(
        &[
            "clients",
            "local (s)",
            "HDD (s)",
            "pull (s)",
            "Skipper (s)",
            "pull / Skipper",
            "Skipper / local",
            "Skipper / HDD",
            "switches (pull)",
            "switches (Skipper)",
            "Skipper requests (MJoin + pulled)",
        ],
        table,
    );
    let speedup = last[2] / last[3];
    let vs_ideal = last[3] / last[0];
    let vs_hdd = last[3] / last[1];
    s.bullets([
        format!(
            "At {max_c} clients Skipper is {}x faster than pull (target ≥ 3x, the paper's 3x): {}.",
            num(speedup),
            verdict(speedup >= 3.0)
        ),
        format!(
            "At {max_c} clients Skipper takes {}x the local time (target ≤ 1.2x): {}; and {}x \
             the HDD time (the paper: 1.35x of its HDD ideal).",
            num(vs_ideal),
            verdict(vs_ideal <= 1.2),
            num(vs_hdd)
        ),
        {
            let d = skipper_requests;
            let t = PAPER_TRANSFER_S * ctx.scale;
            let bound = (max_c as f64 + 1.0) / 2.0 * d * t;
            format!(
                "Why the local target is out of reach at the paper's proportions: the device \
                 streams one object at a time, {} s each, and a Skipper client needs {} of them, \
                 so with {max_c} clients served one after another the mean client cannot finish \
                 before ({max_c} + 1) / 2 × {} × {} = {} s, {}x the local time, even with no \
                 switch and no processing. The paper's ideal (HDD) pays the same transfers.",
                num(t),
                num(d),
                num(d),
                num(t),
                num(bound),
                num(bound / last[0].max(1e-12))
            )
        },
    ]);
    if bare > 0.0 {
        s.bullets([format!(
            "Each Skipper process also pulled {} objects one at a time under its bare tag \
             (reads outside MJoin); with C clients on C groups each such read can cost a \
             switch, which is where Skipper's switches beyond one per client come from.",
            num(bare)
        )]);
    }
    let names = [
        "local (no CSD)",
        "HDD (pull, one group)",
        "pull (strata.skipper=false)",
        "Skipper",
    ];
    let plot = Plot::lines(
        "Fig. 7: Q12's mean time as clients grow",
        Axis::linear("clients"),
        Axis::linear("mean query time (s)"),
    );
    names
        .iter()
        .zip(series)
        .fold(plot, |p, (n, pts)| p.series(*n, pts))
        .write(ctx.opts.out.join("fig7"))?;
    s.image("Fig. 7", "fig7.svg");
    write(ctx, "fig7", &rows, &s)
}

/// Fig. 9 / Table 3: per-client breakdown at C clients, and the overhead of
/// out-of-order execution with no switches.
fn fig9(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let q12 = tpch_query(12)?;
    let c = max_clients(ctx);
    let sw = ctx.opts.switch_s;
    let switch_real = sw * ctx.scale;
    let mut fleet = make_fleet(
        ctx,
        "fig9",
        device(ctx, LayoutSpec::OnePerClient, Policy::ObjectFcfs, sw),
        c,
        q12.tables,
        progress,
    )?;
    let cache = fleet.bytes_of(q12.tables) / 2;
    let mut rows = ResultSet::new();
    // (mode, client) -> [elapsed, switch, transfer, processing] summed over runs
    let modes = [Mode::Pull { cache }, Mode::Skipper { cache }];
    let mut acc = vec![vec![[0.0f64; 4]; c]; 2];
    for run in 0..ctx.opts.repeat {
        for (m, mode) in modes.iter().enumerate() {
            progress(&format!(
                "fig9: {c} clients, {}, run {}",
                mode.name(),
                run + 1
            ));
            tune(&mut fleet, *mode, sw)?;
            let r = round(
                ctx,
                Some(&fleet),
                &plans(&fleet.dbs()[..c], &vec![q12; c], 1),
                *mode,
            )?;
            for (i, cr) in r.clients.iter().enumerate() {
                let wait = match mode {
                    Mode::Skipper { .. } => cr.sum(|x| x.wait_s),
                    _ => (cr.seconds - ctx.q12_local_s).max(0.0),
                }
                .min(cr.seconds);
                let switch = (cr.switches_seen as f64 * switch_real).min(wait);
                let b = [cr.seconds, switch, wait - switch, cr.seconds - wait];
                for k in 0..4 {
                    acc[m][i][k] += b[k] / ctx.opts.repeat as f64;
                }
            }
        }
    }
    let mut s = Summary::new("Skipper Fig. 9 and Table 3: where the time goes");
    scaling(ctx, &mut s, fleet.objects_of(q12.tables));
    s.heading(&format!(
        "Fig. 9: per-client breakdown, {c} clients, Q12, one group each"
    ));
    s.paragraph(&format!(
        "A client's wait is MJoin's reported `wait_s` (Skipper) or its time beyond Q12's local \
         time alone, {} s (pull: the executor waits for each object it pulls). Switch = the \
         switches the device made while the client ran × {} s (real), capped at the wait; \
         transfer = the rest of the wait; processing = the rest of the time. Means over {} runs.",
        num(ctx.q12_local_s),
        num(switch_real),
        ctx.opts.repeat
    ));
    let mut table = Vec::new();
    let mut cats = Vec::new();
    let mut bars = vec![Vec::new(); 3];
    let mut shares = [[0.0f64; 4]; 2];
    for (m, mode) in modes.iter().enumerate() {
        for (i, b) in acc[m].iter().enumerate() {
            table.push(vec![
                mode.name().to_string(),
                i.to_string(),
                num(b[0]),
                num(b[1]),
                num(b[2]),
                num(b[3]),
            ]);
            rows.push(
                ResultRow {
                    wall_ms: b[0] * 1e3,
                    ..ResultRow::new("fig9", "csd", mode.name(), i as f64)
                }
                .with("client", i)
                .with("switch_s", num(b[1]))
                .with("transfer_s", num(b[2]))
                .with("processing_s", num(b[3])),
            );
            cats.push(format!("{} c{i}", mode.name()));
            for k in 0..3 {
                bars[k].push(b[k + 1]);
            }
            for k in 0..4 {
                shares[m][k] += b[k];
            }
        }
    }
    s.table(
        &[
            "variant",
            "client",
            "time (s)",
            "switch (s)",
            "transfer (s)",
            "processing (s)",
        ],
        table,
    );
    let pct = |m: usize, k: usize| num(100.0 * shares[m][k] / shares[m][0].max(1e-12));
    s.bullets([
        format!(
            "Pull: {}% switch, {}% transfer, {}% processing (the paper: 98% waiting, 65% of it \
             switching).",
            pct(0, 1),
            pct(0, 2),
            pct(0, 3)
        ),
        format!(
            "Skipper: {}% switch, {}% transfer, {}% processing (the paper: 2% switch, 41% \
             processing, the rest transfer).",
            pct(1, 1),
            pct(1, 2),
            pct(1, 3)
        ),
    ]);
    Plot::bars(
        "Fig. 9: time per client, 5 clients",
        "variant and client",
        cats,
        Axis::linear("seconds"),
    )
    .bar_series("switch", bars[0].clone())
    .bar_series("transfer", bars[1].clone())
    .bar_series("processing", bars[2].clone())
    .write(ctx.opts.out.join("fig9"))?;
    s.image("Fig. 9", "fig9.svg");
    drop(fleet);

    // Table 3: one client, all data in one group (no switches).
    let fleet = make_fleet(
        ctx,
        "fig9-allin1",
        device(ctx, LayoutSpec::AllInOne, Policy::ObjectFcfs, sw),
        1,
        q12.tables,
        progress,
    )?;
    let mut fleet = fleet;
    let local = local_copies(&ctx.base, &ctx.opts.bench_db.join("skipper-local"), 1)?;
    let mut pts: Vec<Point> = (0..3).map(|_| Point::default()).collect();
    let modes = [Mode::Local, Mode::Pull { cache }, Mode::Skipper { cache }];
    for run in 0..ctx.opts.repeat {
        for (m, mode) in modes.iter().enumerate() {
            progress(&format!("table 3: {}, run {}", mode.name(), run + 1));
            let r = if *mode == Mode::Local {
                round(ctx, None, &plans(&local, &[q12], 1), *mode)?
            } else {
                tune(&mut fleet, *mode, sw)?;
                round(ctx, Some(&fleet), &plans(fleet.dbs(), &[q12], 1), *mode)?
            };
            pts[m].add(&r);
        }
    }
    for (m, mode) in modes.iter().enumerate() {
        rows.push(pts[m].row("table3", *mode, mode.name(), 1.0));
    }
    let (local_s, pull_s, sk_s) = (
        pts[0].get("mean_s"),
        pts[1].get("mean_s"),
        pts[2].get("mean_s"),
    );
    let overhead = sk_s / pull_s - 1.0;
    s.heading("Table 3: one client, all data in one group (no switches)");
    s.table(
        &[
            "component",
            "pull (s)",
            "Skipper (s)",
            "paper PostgreSQL",
            "paper Skipper",
        ],
        [
            vec![
                "query execution".to_string(),
                format!("{} (local run)", num(local_s)),
                format!("{} (MJoin process_s)", num(pts[2].get("process_s"))),
                "407 s (41.9%)".into(),
                "433 s (43%)".into(),
            ],
            vec![
                "network / waiting".to_string(),
                format!("{} (pull − local)", num(pull_s - local_s)),
                format!("{} (MJoin wait_s)", num(pts[2].get("wait_s"))),
                "550 s (56.5%)".into(),
                "574 s (57%)".into(),
            ],
            vec![
                "total".to_string(),
                num(pull_s),
                num(sk_s),
                "973 s".into(),
                "1007 s".into(),
            ],
        ],
    );
    s.bullets([
        format!(
            "Out-of-order overhead without switches: Skipper / pull − 1 = {}% (target ≤ 6%, the \
             paper's 6%): {}.",
            num(100.0 * overhead),
            verdict(overhead <= 0.06)
        ),
        format!(
            "The CSD's share without switches: pull takes {}x the local run (the paper: storing \
             the data remotely doubles the time).",
            num(pull_s / local_s)
        ),
    ]);
    write(ctx, "fig9", &rows, &s)
}

/// Fig. 10: C clients, switch time swept, Skipper vs pull.
fn fig10(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let q12 = tpch_query(12)?;
    let c = max_clients(ctx);
    let mut fleet = make_fleet(
        ctx,
        "fig10",
        device(
            ctx,
            LayoutSpec::OnePerClient,
            Policy::ObjectFcfs,
            ctx.opts.switch_s,
        ),
        c,
        q12.tables,
        progress,
    )?;
    let cache = fleet.bytes_of(q12.tables) / 2;
    let modes = [Mode::Pull { cache }, Mode::Skipper { cache }];
    let mut rows = ResultSet::new();
    let mut series = vec![Vec::new(); 2];
    let mut table = Vec::new();
    for &sw in &ctx.opts.switches_s {
        let mut pts: Vec<Point> = (0..2).map(|_| Point::default()).collect();
        for run in 0..ctx.opts.repeat {
            for (m, mode) in modes.iter().enumerate() {
                progress(&format!(
                    "fig10: {sw} s switches, {}, run {}",
                    mode.name(),
                    run + 1
                ));
                tune(&mut fleet, *mode, sw)?;
                let r = round(
                    ctx,
                    Some(&fleet),
                    &plans(&fleet.dbs()[..c], &vec![q12; c], 1),
                    *mode,
                )?;
                pts[m].add(&r);
            }
        }
        for (m, mode) in modes.iter().enumerate() {
            rows.push(
                pts[m]
                    .row("fig10", *mode, mode.name(), sw)
                    .with("switch_s", sw),
            );
            series[m].push((sw, pts[m].get("mean_s")));
        }
        table.push(vec![
            num(sw),
            num(pts[0].get("mean_s")),
            num(pts[1].get("mean_s")),
            ratio(pts[0].get("mean_s"), pts[1].get("mean_s")),
            num(pts[0].get("switches")),
            num(pts[1].get("switches")),
        ]);
    }
    let growth = |m: usize| {
        let p = &series[m];
        match (p.first(), p.last()) {
            (Some(a), Some(b)) if a.1 > 0.0 => b.1 / a.1,
            _ => 0.0,
        }
    };
    let mut s = Summary::new("Skipper Fig. 10: sensitivity to the switch time");
    scaling(ctx, &mut s, fleet.objects_of(q12.tables));
    s.paragraph(&format!(
        "{c} clients, Q12, one group each, caches half of Q12's data; the modeled switch time \
         is swept (the transfer per object stays {} s).",
        num(PAPER_TRANSFER_S)
    ));
    s.table(
        &[
            "switch (s, modeled)",
            "pull (s)",
            "Skipper (s)",
            "pull / Skipper",
            "switches (pull)",
            "switches (Skipper)",
        ],
        table,
    );
    s.bullets([format!(
        "From the first to the last switch time pull grows {}x and Skipper {}x (the paper: \
         Skipper is tolerant of the switch time; its 5 switches against pull's one per segment).",
        num(growth(0)),
        num(growth(1))
    )]);
    let [pull, sk]: [Vec<(f64, f64)>; 2] = series.try_into().expect("two series");
    Plot::lines(
        "Fig. 10: Q12's mean time as the switch time grows",
        Axis::linear("group switch time (s, modeled)"),
        Axis::linear("mean query time (s)"),
    )
    .series("pull", pull)
    .series("Skipper", sk)
    .write(ctx.opts.out.join("fig10"))?;
    s.image("Fig. 10", "fig10.svg");
    write(ctx, "fig10", &rows, &s)
}

/// Explicit layout: each `client<c>/` prefix in the group given.
fn by_bucket(groups: &[u32]) -> LayoutSpec {
    LayoutSpec::Explicit(
        groups
            .iter()
            .enumerate()
            .map(|(c, g)| (format!("client{c}/"), *g))
            .collect(),
    )
}

/// The incremental layout of Fig. 11a: client c's first half of objects
/// (in upload order) on group c, the second half on group c + 1 (mod the
/// clients), as if its data had arrived in two increments.
fn incremental(
    ctx: &Ctx,
    clients: usize,
    tables: &[&str],
    progress: &mut dyn FnMut(&str),
) -> Result<LayoutSpec> {
    // Learn the object keys by moving one copy to a scratch device.
    let scratch = make_fleet(
        ctx,
        "keys",
        CsdConfig {
            time_scale: 0.0,
            layout: LayoutSpec::AllInOne,
            ..device(ctx, LayoutSpec::AllInOne, Policy::ObjectFcfs, 0.0)
        },
        1,
        tables,
        progress,
    )?;
    let keys = cold_keys(
        &scratch.dbs()[0],
        &tables.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
    )?;
    drop(scratch);
    let half = keys.len().div_ceil(2);
    let mut map = BTreeMap::new();
    for c in 0..clients {
        for (k, key) in keys.iter().enumerate() {
            let g = if k < half { c } else { (c + 1) % clients };
            map.insert(format!("client{c}/{key}"), g as u32);
        }
    }
    Ok(LayoutSpec::Explicit(map))
}

/// Fig. 11a: 4 clients under four layouts.
fn fig11a(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let q12 = tpch_query(12)?;
    let c = 4;
    let sw = ctx.opts.switch_s;
    let layouts = [
        ("allin1", LayoutSpec::AllInOne),
        ("2perG", by_bucket(&[0, 0, 1, 1])),
        ("1perG", by_bucket(&[0, 1, 2, 3])),
        ("incremental", incremental(ctx, c, q12.tables, progress)?),
    ];
    let mut rows = ResultSet::new();
    let mut table = Vec::new();
    let mut bars = vec![Vec::new(); 2];
    let mut objects = 0;
    for (li, (name, layout)) in layouts.iter().enumerate() {
        let mut fleet = make_fleet(
            ctx,
            &format!("fig11a-{name}"),
            device(ctx, layout.clone(), Policy::ObjectFcfs, sw),
            c,
            q12.tables,
            progress,
        )?;
        objects = fleet.objects_of(q12.tables);
        let cache = fleet.bytes_of(q12.tables) / 2;
        let modes = [Mode::Pull { cache }, Mode::Skipper { cache }];
        let mut pts: Vec<Point> = (0..2).map(|_| Point::default()).collect();
        for run in 0..ctx.opts.repeat {
            for (m, mode) in modes.iter().enumerate() {
                progress(&format!("fig11a: {name}, {}, run {}", mode.name(), run + 1));
                tune(&mut fleet, *mode, sw)?;
                let r = round(
                    ctx,
                    Some(&fleet),
                    &plans(fleet.dbs(), &vec![q12; c], 1),
                    *mode,
                )?;
                pts[m].add(&r);
            }
        }
        for (m, mode) in modes.iter().enumerate() {
            rows.push(
                pts[m]
                    .row("fig11a", *mode, mode.name(), li as f64)
                    .with("x_label", name),
            );
            bars[m].push(pts[m].get("mean_s"));
        }
        table.push(vec![
            name.to_string(),
            num(pts[0].get("mean_s")),
            num(pts[1].get("mean_s")),
            ratio(pts[0].get("mean_s"), pts[1].get("mean_s")),
            num(pts[0].get("switches")),
            num(pts[1].get("switches")),
        ]);
    }
    let mut s = Summary::new("Skipper Fig. 11a: sensitivity to the layout");
    scaling(ctx, &mut s, objects);
    s.paragraph(
        "4 clients, Q12, caches half of Q12's data. allin1: every client in group 0; 2perG: \
         clients 0–1 in group 0, 2–3 in group 1; 1perG: one group each; incremental: client c's \
         first half of objects on group c and the second half on group c + 1 (mod 4), the \
         paper's C1.1 + C4.2 on G1, C1.2 + C2.1 on G2, ….",
    );
    s.table(
        &[
            "layout",
            "pull (s)",
            "Skipper (s)",
            "pull / Skipper",
            "switches (pull)",
            "switches (Skipper)",
        ],
        table,
    );
    s.paragraph(
        "The paper: both alike under allin1 (no switches), Skipper 2–3x faster under the others, \
         pull growing as the data fans out while Skipper stays flat from 2perG to 1perG.",
    );
    let [pull, sk]: [Vec<f64>; 2] = bars.try_into().expect("two series");
    Plot::bars(
        "Fig. 11a: Q12's mean time by layout, 4 clients",
        "layout",
        layouts.iter().map(|(n, _)| *n),
        Axis::linear("mean query time (s)"),
    )
    .bar_series("pull", pull)
    .bar_series("Skipper", sk)
    .write(ctx.opts.out.join("fig11a"))?;
    s.image("Fig. 11a", "fig11a.svg");
    write(ctx, "fig11a", &rows, &s)
}

/// Fig. 11b/c: Q5 at C clients, MJoin's cache from one subplan's inputs to
/// ~40% of the data.
fn fig11b(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let q5 = tpch_query(5)?;
    let c = max_clients(ctx);
    let sw = ctx.opts.switch_s;
    let mut fleet = make_fleet(
        ctx,
        "fig11b",
        device(ctx, LayoutSpec::OnePerClient, Policy::ObjectFcfs, sw),
        c,
        q5.tables,
        progress,
    )?;
    let data = fleet.bytes_of(q5.tables);
    let smallest = q5.tables.len() as u64 * ctx.opts.object_bytes;
    let largest = (data * 2 / 5).max(smallest);
    let steps = 5u64;
    let mut caches: Vec<u64> = (0..steps)
        .map(|k| smallest + (largest - smallest) * k / (steps - 1))
        .collect();
    caches.dedup();
    let mut rows = ResultSet::new();
    let mut pull = Point::default();
    for run in 0..ctx.opts.repeat {
        progress(&format!("fig11b: pull, run {}", run + 1));
        let mode = Mode::Pull { cache: largest };
        tune(&mut fleet, mode, sw)?;
        let r = round(
            ctx,
            Some(&fleet),
            &plans(&fleet.dbs()[..c], &vec![q5; c], 1),
            mode,
        )?;
        pull.add(&r);
    }
    rows.push(
        pull.row(
            "fig11b",
            Mode::Pull { cache: largest },
            "pull",
            largest as f64,
        )
        .with("cache_bytes", largest),
    );
    let mut table = Vec::new();
    let (mut times, mut reqs, mut reissues) = (Vec::new(), Vec::new(), Vec::new());
    for &cache in &caches {
        let mode = Mode::Skipper { cache };
        let mut p = Point::default();
        for run in 0..ctx.opts.repeat {
            progress(&format!(
                "fig11b: cache {}, run {}",
                strata_storage::util::format_bytes(cache),
                run + 1
            ));
            tune(&mut fleet, mode, sw)?;
            let r = round(
                ctx,
                Some(&fleet),
                &plans(&fleet.dbs()[..c], &vec![q5; c], 1),
                mode,
            )?;
            p.add(&r);
        }
        let mib = cache as f64 / (1u64 << 20) as f64;
        rows.push(
            p.row("fig11b", mode, "skipper", mib)
                .with("cache_bytes", cache)
                .with("cache_pct", num(100.0 * cache as f64 / data as f64)),
        );
        times.push((mib, p.get("mean_s")));
        reqs.push((mib, p.get("requests")));
        reissues.push((mib, p.get("reissues")));
        table.push(vec![
            strata_storage::util::format_bytes(cache),
            format!("{}%", num(100.0 * cache as f64 / data as f64)),
            num(p.get("mean_s")),
            num(p.get("requests")),
            num(p.get("reissues")),
            num(p.get("evictions")),
            num(p.get("cycles")),
            num(p.get("subplans")),
        ]);
    }
    let mut s = Summary::new("Skipper Fig. 11b/c: sensitivity to MJoin's cache (Q5)");
    scaling(ctx, &mut s, fleet.objects_of(&["orders", "lineitem"]));
    s.paragraph(&format!(
        "{c} clients, TPC-H Q5 (a six-table join) over its {} objects ({}) per client, one \
         group each, rank scheduler. MJoin's cache from {} (one object per relation: the \
         smallest that holds one subplan's inputs) to {} (40% of the data). Requests, reissues \
         and evictions are MJoin's own counts (per client, mean). Pull with a {} cache took {} s.",
        fleet.objects_of(q5.tables),
        strata_storage::util::format_bytes(data),
        strata_storage::util::format_bytes(smallest),
        strata_storage::util::format_bytes(largest),
        strata_storage::util::format_bytes(largest),
        num(pull.get("mean_s"))
    ));
    s.table(
        &[
            "cache",
            "of the data",
            "Skipper (s)",
            "requests",
            "reissues",
            "evictions",
            "cycles",
            "subplans",
        ],
        table,
    );
    if let (Some(a), Some(b)) = (times.first(), times.last()) {
        s.bullets([format!(
            "From the largest cache to the smallest, Skipper's time grows {}x and its requests \
             from {} to {} (the paper, SF 50: 3.6x from 40% to 14%, requests 64 → 388; it matched \
             PostgreSQL at 20%). Pull: {} s.",
            num(a.1 / b.1.max(1e-12)),
            num(reqs.last().map_or(0.0, |r| r.1)),
            num(reqs.first().map_or(0.0, |r| r.1)),
            num(pull.get("mean_s"))
        )]);
    }
    Plot::lines(
        "Fig. 11b: Q5's mean time by MJoin cache size",
        Axis::linear("MJoin cache (MiB)"),
        Axis::linear("mean query time (s)"),
    )
    .series("Skipper", times)
    .hline("pull", pull.get("mean_s"))
    .write(ctx.opts.out.join("fig11b"))?;
    Plot::lines(
        "Fig. 11b: MJoin's requests by cache size",
        Axis::linear("MJoin cache (MiB)"),
        Axis::linear("objects per query"),
    )
    .series("requests", reqs)
    .series("reissues", reissues)
    .write(ctx.opts.out.join("fig11b-requests"))?;
    s.image("Fig. 11b", "fig11b.svg");
    s.image("Fig. 11b requests", "fig11b-requests.svg");
    write(ctx, "fig11b", &rows, &s)
}

fn mixed_queries(ctx: &Ctx) -> Result<Vec<TpchQuery>> {
    ctx.opts.mixed.iter().map(|&n| tpch_query(n)).collect()
}

fn union_tables(queries: &[TpchQuery]) -> Vec<&'static str> {
    let mut t: Vec<&str> = Vec::new();
    for q in queries {
        for x in q.tables {
            if !t.contains(x) {
                t.push(x);
            }
        }
    }
    t
}

/// Fig. 8: a mixed workload, each client its own query `reps` times back to
/// back; cumulative time per client.
fn fig8(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let queries = mixed_queries(ctx)?;
    let c = queries.len();
    let sw = ctx.opts.switch_s;
    let tables = union_tables(&queries);
    let mut fleet = make_fleet(
        ctx,
        "fig8",
        device(ctx, LayoutSpec::OnePerClient, Policy::ObjectFcfs, sw),
        c,
        &tables,
        progress,
    )?;
    // One cache for all: half the data of the largest query.
    let cache = queries
        .iter()
        .map(|q| fleet.bytes_of(q.tables) / 2)
        .max()
        .unwrap_or(0);
    let modes = [Mode::Pull { cache }, Mode::Skipper { cache }];
    let mut per = vec![vec![Vec::new(); c]; 2];
    let mut rows = ResultSet::new();
    for run in 0..ctx.opts.repeat {
        for (m, mode) in modes.iter().enumerate() {
            progress(&format!("fig8: {}, run {}", mode.name(), run + 1));
            tune(&mut fleet, *mode, sw)?;
            let r = round(
                ctx,
                Some(&fleet),
                &plans(fleet.dbs(), &queries, ctx.opts.reps),
                *mode,
            )?;
            for (i, cr) in r.clients.iter().enumerate() {
                per[m][i].push(cr.seconds);
            }
        }
    }
    let med = |v: &Vec<f64>| median(v).unwrap_or(0.0);
    let mut table = Vec::new();
    for (i, q) in queries.iter().enumerate() {
        let (p, k) = (med(&per[0][i]), med(&per[1][i]));
        for (m, mode) in modes.iter().enumerate() {
            rows.push(
                ResultRow {
                    wall_ms: med(&per[m][i]) * 1e3,
                    ..ResultRow::new("fig8", "csd", mode.name(), i as f64)
                }
                .with("client", i)
                .with("query", format!("Q{}", q.number))
                .with("reps", ctx.opts.reps),
            );
        }
        table.push(vec![
            i.to_string(),
            format!("Q{}", q.number),
            num(p),
            num(k),
            ratio(p, k),
        ]);
    }
    let mut s = Summary::new("Skipper Fig. 8: a mixed workload");
    scaling(ctx, &mut s, fleet.objects_of(&["orders", "lineitem"]));
    s.paragraph(&format!(
        "{c} clients, one group each, client i running its own TPC-H query {} times back to back \
         (one strata-sql process each); cumulative time per client, real seconds. Caches: {}. \
         The paper's mix was Q12, an analytics JoinTask, SSB Q1 and an NREF join, and Skipper \
         gave a 2–3x reduction for every client.",
        ctx.opts.reps,
        strata_storage::util::format_bytes(cache)
    ));
    s.table(
        &[
            "client",
            "query",
            "pull (s)",
            "Skipper (s)",
            "pull / Skipper",
        ],
        table,
    );
    let cats: Vec<String> = queries
        .iter()
        .enumerate()
        .map(|(i, q)| format!("c{i} Q{}", q.number))
        .collect();
    Plot::bars(
        "Fig. 8: cumulative time per client, mixed workload",
        "client and query",
        cats,
        Axis::linear("cumulative time (s)"),
    )
    .bar_series("pull", per[0].iter().map(med))
    .bar_series("Skipper", per[1].iter().map(med))
    .write(ctx.opts.out.join("fig8"))?;
    s.image("Fig. 8", "fig8.svg");
    write(ctx, "fig8", &rows, &s)
}

/// Fig. 12: Skipper clients with mixed queries arriving at different times
/// on a skewed layout (2, 2 and 1 clients per group), under the four
/// schedulers.
fn fig12(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let queries = mixed_queries(ctx)?;
    let c = queries.len();
    let sw = ctx.opts.switch_s;
    let tables = union_tables(&queries);
    let groups: Vec<u32> = (0..c as u32).map(|i| (i / 2).min(4)).collect();
    let mut fleet = make_fleet(
        ctx,
        "fig12",
        device(ctx, by_bucket(&groups), Policy::ObjectFcfs, sw),
        c,
        &tables,
        progress,
    )?;
    let cache = queries
        .iter()
        .map(|q| fleet.bytes_of(q.tables) / 2)
        .max()
        .unwrap_or(0);
    // Client i arrives i × four object transfers after the first.
    let stagger = Duration::from_secs_f64(4.0 * PAPER_TRANSFER_S * ctx.scale);
    let mut rows = ResultSet::new();
    let mut table = Vec::new();
    let mut l2 = Vec::new();
    let mut mx = Vec::new();
    let mut cum = Vec::new();
    let mut names = Vec::new();
    for (pi, policy) in Policy::ALL.iter().enumerate() {
        let mode = Mode::Skipper { cache };
        let mut p = Point::default();
        for run in 0..ctx.opts.repeat {
            progress(&format!("fig12: {policy}, run {}", run + 1));
            let want = CsdConfig {
                policy: *policy,
                ..fleet.config().clone()
            };
            if &want != fleet.config() {
                fleet.restart(want)?;
            }
            let mut pl = plans(fleet.dbs(), &queries, ctx.opts.fig12_reps);
            for (i, x) in pl.iter_mut().enumerate() {
                x.delay = stagger * i as u32;
            }
            let r = round(ctx, Some(&fleet), &pl, mode)?;
            p.add(&r);
        }
        rows.push(
            p.row("fig12", mode, &policy.to_string(), pi as f64)
                .with("policy", policy),
        );
        names.push(policy.to_string());
        l2.push(p.get("l2_stretch"));
        mx.push(p.get("max_stretch"));
        cum.push(p.get("cumulative_s"));
        table.push(vec![
            policy.to_string(),
            num(p.get("switches")),
            num(p.get("l2_stretch")),
            num(p.get("max_stretch")),
            format!(
                "{} / {}",
                num(p.get("l2_stretch_all")),
                num(p.get("max_stretch_all"))
            ),
            num(p.get("cumulative_s")),
        ]);
    }
    let mut s = Summary::new("Skipper Fig. 12: fairness against efficiency of the schedulers");
    scaling(ctx, &mut s, fleet.objects_of(&["orders", "lineitem"]));
    s.paragraph(&format!(
        "{c} Skipper clients on a skewed layout (groups {:?} by client), client i running {} \
         {} times back to back, arriving {} s (real) after client i − 1. Switches and stretch are \
         the device's (stretch = a query's time on the device / its time alone); L2-norm and \
         max are over MJoin's queries, and beside them over every query the device saw (the \
         objects a process reads outside MJoin, one at a time, are queries of their own); \
         cumulative = the clients' times summed.",
        groups,
        queries
            .iter()
            .map(|q| format!("Q{}", q.number))
            .collect::<Vec<_>>()
            .join(", "),
        ctx.opts.fig12_reps,
        num(stagger.as_secs_f64()),
    ));
    s.table(
        &[
            "policy",
            "switches",
            "L2 stretch",
            "max stretch",
            "L2 / max, all device queries",
            "cumulative (s)",
        ],
        table,
    );
    s.paragraph(
        "The paper: Max-Queries the lowest time and the highest max stretch (the lone client \
         starves), FCFS the fairest and slowest, rank between.",
    );
    Plot::bars(
        "Fig. 12a: stretch by scheduler",
        "scheduler",
        names.clone(),
        Axis::linear("stretch"),
    )
    .bar_series("L2-norm", l2)
    .bar_series("max", mx)
    .write(ctx.opts.out.join("fig12a"))?;
    Plot::bars(
        "Fig. 12b: cumulative time by scheduler",
        "scheduler",
        names,
        Axis::linear("cumulative time (s)"),
    )
    .bar_series("cumulative", cum)
    .write(ctx.opts.out.join("fig12b"))?;
    s.image("Fig. 12a", "fig12a.svg");
    s.image("Fig. 12b", "fig12b.svg");
    write(ctx, "fig12", &rows, &s)
}

/// Whether `binary` knows `strata.skipper` (MJoin is built in).
fn has_skipper(binary: &Path, db: &Path, buffer_pool: &str) -> Result<bool> {
    match run_sql(&SqlRun {
        binary,
        db,
        buffer_pool,
        cold_cache: None,
        settings: &["strata.skipper=false".to_string()],
        env: vec![],
        sql: "SELECT 1",
    }) {
        Ok(_) => Ok(true),
        Err(e) if format!("{e:#}").contains("unknown setting") => Ok(false),
        Err(e) => Err(e),
    }
}

/// Runs `figures` (names from [`FIGURES`]); returns the markdown files
/// written, one per figure, in `opts.out`.
pub fn run_skipper(
    opts: &SkipperOptions,
    figures: &[&str],
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<PathBuf>> {
    if opts.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    if let TimeScale::Fixed(s) = opts.time_scale
        && !(s.is_finite() && s > 0.0)
    {
        bail!("--time-scale must be positive (or auto)");
    }
    if opts.clients.is_empty() || opts.mixed.is_empty() || opts.reps == 0 || opts.fig12_reps == 0 {
        bail!("--clients, --queries, --reps and --fig12-reps must not be empty or zero");
    }
    for f in figures {
        if !FIGURES.contains(f) {
            bail!("unknown figure {f}: {}", FIGURES.join(", "));
        }
    }
    let base = base_db(&opts.bench_db, opts.sf, progress)?;
    let skipper = has_skipper(&opts.sql_binary, &base, &opts.buffer_pool)?;
    if !skipper {
        progress(
            "strata-sql has no strata.skipper (MJoin not built in): the Skipper runs will fail",
        );
    }
    let reports = opts.bench_db.join("skipper-reports");
    fresh_dir(&reports)?;
    let mut ctx = Ctx {
        opts,
        base,
        expected: BTreeMap::new(),
        skipper,
        scale: 0.0,
        q12_local_s: 0.0,
        q12_local_c_s: 0.0,
        reports,
        rounds: 0,
    };
    // The local answers, and Q12's local time alone.
    let mut numbers: Vec<u32> = vec![12, 5];
    numbers.extend(&opts.mixed);
    for n in numbers {
        if ctx.expected.contains_key(&n) {
            continue;
        }
        let q = tpch_query(n)?;
        progress(&format!("Q{n} over local tables"));
        let mut times = Vec::new();
        let mut answer = String::new();
        for _ in 0..(if n == 12 { opts.repeat } else { 1 }) {
            let (a, t) = run_sql(&SqlRun {
                binary: &opts.sql_binary,
                db: &ctx.base,
                buffer_pool: &opts.buffer_pool,
                cold_cache: None,
                settings: &[],
                env: vec![],
                sql: q.sql,
            })?;
            answer = a;
            times.push(t);
        }
        if n == 12 {
            ctx.q12_local_s = median(&times).unwrap_or(0.0);
        }
        ctx.expected.insert(n, answer);
    }
    // The paper gave each client its own server; here C clients share the
    // machine's cores, so a client's processing is Q12's time with C of them
    // running at once, and that is what the paper's 407 s maps to.
    let max_c = max_clients(&ctx);
    let local = local_copies(&ctx.base, &opts.bench_db.join("skipper-local"), max_c)?;
    let q12 = tpch_query(12)?;
    let mut means = Vec::new();
    for run in 0..opts.repeat {
        progress(&format!(
            "Q12 over local tables, {max_c} clients at once, run {}",
            run + 1
        ));
        let r = round(
            &mut ctx,
            None,
            &plans(&local, &vec![q12; max_c], 1),
            Mode::Local,
        )?;
        means.push(r.mean(|c| c.seconds));
    }
    ctx.q12_local_c_s = median(&means).unwrap_or(0.0);
    ctx.scale = match opts.time_scale {
        TimeScale::Fixed(s) => s,
        TimeScale::Auto => ctx.q12_local_c_s / PAPER_PROCESS_S,
    };
    let mut written = Vec::new();
    for f in figures {
        let md = match *f {
            "fig7" => fig7(&mut ctx, progress)?,
            "fig8" => fig8(&mut ctx, progress)?,
            "fig9" => fig9(&mut ctx, progress)?,
            "fig10" => fig10(&mut ctx, progress)?,
            "fig11a" => fig11a(&mut ctx, progress)?,
            "fig11b" => fig11b(&mut ctx, progress)?,
            _ => fig12(&mut ctx, progress)?,
        };
        written.push(md);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_parse_line_by_line_and_name_a_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.jsonl");
        std::fs::write(
            &p,
            concat!(
                r#"{"tag": "c0#1", "relations": ["orders","lineitem"], "objects": 60, "requests": 62, "reissues": 2, "evictions": 3, "subplans": 675, "executed": 675, "pruned": 0, "cycles": 2, "wait_s": 1.2, "process_s": 0.4, "elapsed_s": 1.7}"#,
                "\n\n",
                r#"{"tag": "c0#2", "relations": ["orders"], "objects": 1, "requests": 1, "reissues": 0, "evictions": 0, "subplans": 1, "executed": 1, "pruned": 0, "cycles": 1, "wait_s": 0.0, "process_s": 0.1, "elapsed_s": 0.1, "later_field": true}"#,
                "\n"
            ),
        )
        .unwrap();
        let r = read_reports(&p).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].reissues, 2);
        assert_eq!(r[0].relations, ["orders", "lineitem"]);
        assert_eq!(r[1].tag, "c0#2");
        std::fs::write(&p, "{\"tag\": 1}\n").unwrap();
        let e = format!("{:#}", read_reports(&p).unwrap_err());
        assert!(e.contains("line 1: not an MJoin report"), "{e}");
    }

    #[test]
    fn the_queries_name_their_tables() {
        for q in QUERIES {
            for t in q.tables {
                assert!(q.sql.contains(t), "Q{} does not read {t}", q.number);
            }
        }
        assert!(tpch_query(7).is_err());
    }
}
