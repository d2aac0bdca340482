//! What every figure of Skipper §5 shares: the context of a run, a round of
//! clients running their queries at once in one mode (local, pull, Skipper)
//! with every answer checked against the local one, MJoin's per-query
//! reports, the medians of repeated rounds as result rows, and the device
//! and fleet a figure runs on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;
use strata_csd::config::CsdConfig;
use strata_csd::layout::LayoutSpec;
use strata_csd::schedule::{Metrics, Policy};

use super::fleet::{Fleet, FleetSpec, SqlRun, queries_of, run_clients, run_sql};
use super::options::{PAPER_PROCESS_S, PAPER_TRANSFER_S, SkipperOptions, TimeScale, TpchQuery};
use crate::report::results::{ResultRow, ResultSet, median};
use crate::report::summary::{Summary, num};

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
pub(super) enum Mode {
    /// Over local tables (no CSD): the ideal.
    Local,
    /// Over the CSD, the executor pulling objects in its own order
    /// (`strata.skipper = false`); `--cold-cache` of the given bytes.
    Pull { cache: u64 },
    /// Over the CSD through MJoin with an object cache of the given bytes.
    Skipper { cache: u64 },
}

impl Mode {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Mode::Local => "local",
            Mode::Pull { .. } => "pull",
            Mode::Skipper { .. } => "skipper",
        }
    }

    /// The scheduler the CSD runs for this mode: the query-agnostic object
    /// FCFS of §3.2 for the pull baseline, rank (K = 1) for Skipper.
    pub(super) fn policy(&self) -> Policy {
        match self {
            Mode::Skipper { .. } => Policy::Rank { k: 1.0 },
            _ => Policy::ObjectFcfs,
        }
    }
}

/// One client of a round: `reps` runs of `query`, one `strata-sql` process
/// each, back to back, starting `delay` after the round.
#[derive(Clone, Debug)]
pub(super) struct ClientPlan {
    pub(super) db: PathBuf,
    pub(super) query: TpchQuery,
    pub(super) reps: usize,
    pub(super) delay: Duration,
}

/// What one client did in a round.
#[derive(Clone, Debug, Default)]
pub(super) struct ClientResult {
    /// Wall time of its runs, summed (its cumulative time).
    pub(super) seconds: f64,
    pub(super) reports: Vec<MJoinReport>,
    /// Switches the device made while the client ran.
    pub(super) switches_seen: u64,
    /// Requests the device served for the client's queries.
    pub(super) served: u64,
    /// Of those, requests under the bare process tag: reads by the pull path
    /// (for Skipper: what the process read before or beside MJoin).
    pub(super) served_bare: u64,
}

impl ClientResult {
    pub(super) fn sum(&self, f: impl Fn(&MJoinReport) -> f64) -> f64 {
        self.reports.iter().map(f).sum()
    }
}

pub(super) struct RoundResult {
    pub(super) clients: Vec<ClientResult>,
    pub(super) metrics: Option<Metrics>,
}

impl RoundResult {
    pub(super) fn mean(&self, f: impl Fn(&ClientResult) -> f64) -> f64 {
        self.clients.iter().map(f).sum::<f64>() / self.clients.len().max(1) as f64
    }
}

/// What every figure shares: options, the base database, the local answers,
/// the time scale and whether `strata-sql` has MJoin.
pub(super) struct Ctx<'a> {
    pub(super) opts: &'a SkipperOptions,
    pub(super) base: PathBuf,
    pub(super) expected: BTreeMap<u32, String>,
    /// Whether `strata-sql` knows `strata.skipper`.
    pub(super) skipper: bool,
    pub(super) scale: f64,
    /// Strata's Q12 over local tables, alone (median seconds).
    pub(super) q12_local_s: f64,
    /// Strata's Q12 over local tables by the largest client count at once
    /// (the clients' mean, median seconds): what a client's processing is
    /// when C clients share this machine's cores.
    pub(super) q12_local_c_s: f64,
    pub(super) reports: PathBuf,
    pub(super) rounds: usize,
}

pub(super) fn settings(ctx: &Ctx, mode: Mode) -> Result<Vec<String>> {
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
pub(super) fn round(
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
pub(super) struct Point {
    pub(super) rounds: Vec<BTreeMap<&'static str, f64>>,
}

impl Point {
    pub(super) fn add(&mut self, r: &RoundResult) {
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

    pub(super) fn get(&self, key: &str) -> f64 {
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
    pub(super) fn row(&self, figure: &str, mode: Mode, variant: &str, x: f64) -> ResultRow {
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

pub(super) fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{}x", num(a / b))
    } else {
        "n/a".into()
    }
}

pub(super) fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}

/// The device of a figure: 5 groups, the paper's switch and transfer in
/// modeled seconds, real delays × the run's scale.
pub(super) fn device(ctx: &Ctx, layout: LayoutSpec, policy: Policy, switch_s: f64) -> CsdConfig {
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
pub(super) fn tune(fleet: &mut Fleet, mode: Mode, switch_s: f64) -> Result<()> {
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

pub(super) fn make_fleet(
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

pub(super) fn plans(dbs: &[PathBuf], queries: &[TpchQuery], reps: usize) -> Vec<ClientPlan> {
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
pub(super) fn scaling(ctx: &Ctx, s: &mut Summary, objects: usize) {
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

pub(super) fn write(ctx: &Ctx, name: &str, rows: &ResultSet, s: &Summary) -> Result<PathBuf> {
    std::fs::create_dir_all(&ctx.opts.out)?;
    rows.write_csv(ctx.opts.out.join(format!("{name}.csv")))?;
    let md = ctx.opts.out.join(format!("{name}.md"));
    s.write(&md)?;
    Ok(md)
}

pub(super) fn max_clients(ctx: &Ctx) -> usize {
    ctx.opts.clients.iter().copied().max().unwrap_or(1)
}

/// Explicit layout: each `client<c>/` prefix in the group given.
pub(super) fn by_bucket(groups: &[u32]) -> LayoutSpec {
    LayoutSpec::Explicit(
        groups
            .iter()
            .enumerate()
            .map(|(c, g)| (format!("client{c}/"), *g))
            .collect(),
    )
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
}
