//! Skipper §3.2, Figs. 4 and 5: the pull-based baseline — strata on a cold
//! storage device, its executor fetching segments on demand in its own order,
//! as PostgreSQL over the paper's FUSE file system did.
//!
//! Each client is a separate `strata-sql` process over its own copy of a TPC-H
//! database whose `lineitem` and `orders` live on one `strata csd serve`
//! (started in this process) in the client's own bucket. With the
//! one-group-per-client layout and the query-agnostic object-FCFS scheduler, two
//! consecutive requests of one client are separated by a switch to every other
//! client's group and back: a query of D objects takes about C × S × D with C
//! clients and switch time S — the paper's collapse. The all-in-one layout (every
//! client's data in one group: no switches) is the paper's "HDD" capacity tier
//! beside it; local runs (no CSD) give the compute time.
//!
//! Switches are real delays scaled by `time_scale` (10 s × 0.01 = 100 ms), so
//! the figures run in minutes; the model is computed in the same scaled units.
//! A client's D is the number of objects it fetched, read from the server's
//! per-query metrics; a client whose answer differs from the local one fails the
//! run.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use strata_csd::config::CsdConfig;
use strata_csd::layout::LayoutSpec;
use strata_csd::schedule::Policy;

use crate::report::plot::{Axis, Plot};
use crate::report::results::{ResultRow, ResultSet, median};
use crate::report::summary::{Comparison, Summary, num};
use crate::skipper::fleet::{
    Fleet, FleetSpec, SqlRun, base_db, local_copies, query_requests, run_clients, run_sql,
};

/// TPC-H Q12 (the paper's query for Figs. 4, 5, 10 and 12): a join of the two
/// largest tables, `orders` and `lineitem`.
pub const Q12: &str = include_str!("../../../sql/queries/q12.sql");
/// The tables Q12 reads: the ones shipped to the CSD.
pub const COLD_TABLES: [&str; 2] = ["orders", "lineitem"];

/// What to run.
#[derive(Clone, Debug)]
pub struct PullOptions {
    /// Databases and CSD data directories live here (built on first use).
    pub bench_db: PathBuf,
    pub out: PathBuf,
    pub sf: f64,
    /// Fig. 4: client counts.
    pub clients: Vec<usize>,
    /// Fig. 4: the switch time, in the paper's (modeled) seconds.
    pub fig4_switch_s: f64,
    /// Fig. 5: switch times, modeled seconds.
    pub switch_s: Vec<f64>,
    /// Fig. 5: clients.
    pub fig5_clients: usize,
    /// Real delay = modeled delay × this.
    pub time_scale: f64,
    /// Bytes per object (the paper: 1 GiB segments of a 50 GB database).
    pub object_bytes: u64,
    /// Runs per point; medians reported.
    pub repeat: usize,
    /// The `strata-sql` binary the clients run.
    pub sql_binary: PathBuf,
    /// Each client's buffer pool.
    pub buffer_pool: String,
}

/// One client's run.
struct ClientRun {
    seconds: f64,
    objects: u64,
}

/// One run of C clients at once.
struct Round {
    mean_s: f64,
    max_s: f64,
    objects: f64,
    switches: u64,
}

/// Runs Q12 by `strata-sql` over `db` tagged `tag`; its CSV answer and wall
/// time. `strata.skipper=false`: the executor pulls objects in its own order
/// (out-of-order execution through MJoin is strata-sql's default).
fn run_q12(opts: &PullOptions, db: &Path, tag: &str) -> Result<(String, f64)> {
    run_sql(&SqlRun {
        binary: &opts.sql_binary,
        db,
        buffer_pool: &opts.buffer_pool,
        cold_cache: None,
        settings: &["strata.skipper=false".to_string()],
        env: vec![("STRATA_CSD_QUERY".into(), tag.into())],
        sql: Q12,
    })
}

/// Q12 by one `strata-sql` process per database, all at once; client `i`
/// tags its requests `tag(i)`.
fn q12_clients(
    opts: &PullOptions,
    dbs: &[PathBuf],
    tag: &(dyn Fn(usize) -> String + Sync),
) -> Vec<Result<(String, f64)>> {
    run_clients(dbs.len(), &|i| run_q12(opts, &dbs[i], &tag(i)))
}

/// A CSD with `layout` holding every client's `orders` and `lineitem` under
/// object FCFS (the query-agnostic device), fig. 4's switch time.
fn pull_fleet(
    opts: &PullOptions,
    base: &Path,
    layout: (&str, LayoutSpec),
    clients: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Fleet> {
    let spec = FleetSpec {
        name: format!("pull-{}", layout.0),
        config: CsdConfig {
            groups: 5,
            switch_ms: opts.fig4_switch_s * 1000.0,
            time_scale: opts.time_scale,
            layout: layout.1,
            policy: Policy::ObjectFcfs,
            initial_group: None,
            ..CsdConfig::default()
        },
        clients,
        tables: COLD_TABLES.iter().map(|t| t.to_string()).collect(),
        object_bytes: opts.object_bytes,
    };
    Fleet::new(&opts.bench_db, base, &spec, progress)
}

/// C clients run Q12 at once; every answer must equal `expected`.
fn round(fleet: &Fleet, opts: &PullOptions, c: usize, run: usize, expected: &str) -> Result<Round> {
    fleet.reset()?;
    let results = q12_clients(opts, &fleet.dbs()[..c], &|i| format!("client{i}-run{run}"));
    let metrics = fleet.metrics()?;
    let mut runs = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        let (answer, seconds) = r?;
        if answer != expected {
            bail!(
                "client {i}'s Q12 answer over the CSD differs from the local one:\n{answer}\nvs\n{expected}"
            );
        }
        let objects = query_requests(&metrics, &format!("client{i}-run{run}"));
        runs.push(ClientRun { seconds, objects });
    }
    let secs: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
    Ok(Round {
        mean_s: secs.iter().sum::<f64>() / secs.len() as f64,
        max_s: secs.iter().cloned().fold(0.0, f64::max),
        objects: runs.iter().map(|r| r.objects as f64).sum::<f64>() / runs.len() as f64,
        switches: metrics.switches,
    })
}

/// The median round of `repeat` at each point.
fn median_round(rounds: &[Round]) -> Round {
    let m = |f: &dyn Fn(&Round) -> f64| {
        median(&rounds.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0)
    };
    Round {
        mean_s: m(&|r| r.mean_s),
        max_s: m(&|r| r.max_s),
        objects: m(&|r| r.objects),
        switches: m(&|r| r.switches as f64) as u64,
    }
}

/// The model of §3.2 in real (scaled) seconds: with C ≥ 2 clients, one group
/// each and a query-agnostic scheduler, each of a query's D requests waits
/// for C switches; one client never switches.
pub fn pull_model_s(clients: usize, switch_s: f64, objects: f64, time_scale: f64) -> f64 {
    if clients < 2 {
        0.0
    } else {
        clients as f64 * switch_s * time_scale * objects
    }
}

/// Runs Fig. 4 (`fig4`), Fig. 5 (`fig5`) or both; writes
/// `<out>/pull.csv`, `pull.md` and the plots.
pub fn run_pull(
    opts: &PullOptions,
    figures: &[&str],
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf> {
    if opts.repeat == 0 || !opts.time_scale.is_finite() || opts.time_scale <= 0.0 {
        bail!("--repeat and --time-scale must be positive");
    }
    let max_c = figures
        .iter()
        .map(|f| match *f {
            "fig4" => opts.clients.iter().copied().max().unwrap_or(1),
            _ => opts.fig5_clients,
        })
        .max()
        .unwrap_or(1);
    let base = base_db(&opts.bench_db, opts.sf, progress)?;
    let (expected, _) = run_q12(opts, &base, "local")?;
    let mut results = ResultSet::new();
    let mut s = Summary::new("Skipper Figs. 4 and 5: strata pulling from a cold storage device");
    s.paragraph(&format!(
        "TPC-H SF {} (`orders` and `lineitem` on the CSD in {} objects), Q12 by each of C \
         `strata-sql` processes at once over its own copy; object-FCFS scheduling (a \
         query-agnostic CSD); switch delays scaled by {} (a 10 s switch waits {} s). \
         Times are real seconds, medians of {} runs of the clients' mean; the model is \
         C × S × D in the same scaled seconds, D being the objects a query fetched.",
        opts.sf,
        strata_storage::util::format_bytes(opts.object_bytes),
        opts.time_scale,
        num(10.0 * opts.time_scale),
        opts.repeat
    ));
    // Compute alone: C clients over local tables.
    let local_dbs = local_copies(&base, &opts.bench_db.join("pull-local"), max_c)?;
    let local_round = |c: usize| -> Result<f64> {
        let mut means = Vec::new();
        for run in 0..opts.repeat {
            let r = q12_clients(opts, &local_dbs[..c], &|i| format!("local{i}-run{run}"));
            let mut sum = 0.0;
            for x in r {
                sum += x?.1;
            }
            means.push(sum / c as f64);
        }
        Ok(median(&means).unwrap_or(0.0))
    };

    let layouts = [
        ("1perG", LayoutSpec::OnePerClient),
        ("allin1", LayoutSpec::AllInOne),
    ];
    let mut comparisons = Vec::new();
    if figures.contains(&"fig4") {
        s.heading(&format!(
            "Fig. 4: clients {:?}, {} s switches",
            opts.clients, opts.fig4_switch_s
        ));
        let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        let mut model_pts = Vec::new();
        let mut local_pts = Vec::new();
        for c in &opts.clients {
            let t = local_round(*c)?;
            local_pts.push((*c as f64, t));
            results.push(
                ResultRow {
                    wall_ms: t * 1e3,
                    ..ResultRow::new("fig4", "local", "local", *c as f64)
                }
                .with("clients", c)
                .with("switch_s", 0),
            );
        }
        for layout in &layouts {
            let fleet = pull_fleet(opts, &base, (layout.0, layout.1.clone()), max_c, progress)?;
            let mut pts = Vec::new();
            for &c in &opts.clients {
                progress(&format!("fig4 {}: {c} clients", layout.0));
                let rounds = (0..opts.repeat)
                    .map(|run| round(&fleet, opts, c, run, &expected))
                    .collect::<Result<Vec<_>>>()?;
                let r = median_round(&rounds);
                pts.push((c as f64, r.mean_s));
                results.push(
                    ResultRow {
                        wall_ms: r.mean_s * 1e3,
                        ..ResultRow::new("fig4", "csd", format!("csd-{}", layout.0), c as f64)
                    }
                    .with("clients", c)
                    .with("switch_s", opts.fig4_switch_s)
                    .with("max_s", r.max_s)
                    .with("objects", r.objects)
                    .with("switches", r.switches),
                );
                if layout.0 == "1perG" {
                    let model = pull_model_s(c, opts.fig4_switch_s, r.objects, opts.time_scale);
                    model_pts.push((c as f64, model));
                    if c >= 2 {
                        comparisons.push(
                            Comparison::new(format!("Fig. 4, {c} clients"), r.mean_s, model)
                                .unit("s")
                                .note(num(r.objects)),
                        );
                    }
                }
            }
            series.push((format!("CSD ({})", layout.0), pts));
        }
        let at_max = |name: &str| {
            series
                .iter()
                .find(|(n, _)| n.contains(name))
                .and_then(|(_, p)| p.last().copied())
        };
        if let (Some(one), Some(all)) = (at_max("1perG"), at_max("allin1")) {
            s.paragraph(&format!(
                "With {} clients, one group each, the mean query takes {}x as long as with every \
                 client's data in one group (no switches: the paper's HDD capacity tier), and {}x \
                 its one-client time: it grows with the clients, as in the paper's Fig. 4.",
                one.0,
                num(one.1 / all.1),
                num(one.1 / series[0].1.first().map_or(one.1, |p| p.1)),
            ));
        }
        series.push(("model C·S·D".into(), model_pts));
        series.push(("local".into(), local_pts));
        let plot = Plot::lines(
            "Fig. 4: Q12's mean time as clients grow (10 s switch)",
            Axis::linear("clients"),
            Axis::linear("mean query time (s, scaled)"),
        );
        let plot = series
            .into_iter()
            .fold(plot, |p, (n, pts)| p.series(n, pts));
        plot.write(opts.out.join("fig4"))?;
        s.image("Fig. 4", "fig4.svg");
    }
    if figures.contains(&"fig5") {
        let c = opts.fig5_clients;
        let mut fleet = pull_fleet(
            opts,
            &base,
            ("1perG", LayoutSpec::OnePerClient),
            c,
            progress,
        )?;
        let (mut pts, mut model_pts) = (Vec::new(), Vec::new());
        for &sw in &opts.switch_s {
            progress(&format!("fig5: {sw} s switches"));
            let config = CsdConfig {
                switch_ms: sw * 1000.0,
                ..fleet.config().clone()
            };
            fleet.restart(config)?;
            let rounds = (0..opts.repeat)
                .map(|run| round(&fleet, opts, c, run, &expected))
                .collect::<Result<Vec<_>>>()?;
            let r = median_round(&rounds);
            let model = pull_model_s(c, sw, r.objects, opts.time_scale);
            pts.push((sw, r.mean_s));
            model_pts.push((sw, model));
            results.push(
                ResultRow {
                    wall_ms: r.mean_s * 1e3,
                    ..ResultRow::new("fig5", "csd", "csd-1perG", sw)
                }
                .with("clients", c)
                .with("switch_s", sw)
                .with("max_s", r.max_s)
                .with("objects", r.objects)
                .with("switches", r.switches),
            );
            if sw > 0.0 {
                comparisons.push(
                    Comparison::new(format!("Fig. 5, {sw} s switches"), r.mean_s, model)
                        .unit("s")
                        .note(num(r.objects)),
                );
            }
        }
        let first = pts.first().map_or(0.0, |p| p.1);
        let last = pts.last().map_or(0.0, |p| p.1);
        s.heading(&format!("Fig. 5: {c} clients, switch time swept"));
        s.paragraph(&format!(
            "From {} s to {} s switches the mean query time grows {}x (the paper: 6x from 0 to \
             20 s). The growth is (t0 + C·S·D) / t0 with t0 the time without switches ({} s \
             here): it says how long a query computes between its fetches, not how the CSD \
             behaves — the paper's SF-50 PostgreSQL computed far longer per segment than strata \
             at SF {}.",
            num(opts.switch_s.first().copied().unwrap_or(0.0)),
            num(opts.switch_s.last().copied().unwrap_or(0.0)),
            num(last / first.max(1e-9)),
            num(first),
            opts.sf
        ));
        Plot::lines(
            "Fig. 5: Q12's mean time as the switch time grows (5 clients)",
            Axis::linear("group switch time (s, modeled)"),
            Axis::linear("mean query time (s, scaled)"),
        )
        .series("CSD (1perG)", pts)
        .series("model C·S·D", model_pts)
        .write(opts.out.join("fig5"))?;
        s.image("Fig. 5", "fig5.svg");
    }
    s.heading("Measured against the model C × S × D");
    s.table(
        &[
            "point",
            "measured (s)",
            "model C·S·D (s)",
            "measured / model",
            "D",
        ],
        comparisons.iter().map(|c| {
            vec![
                c.what.clone(),
                num(c.ours),
                num(c.paper),
                format!("{}x", num(c.ours / c.paper)),
                c.note.clone(),
            ]
        }),
    );
    std::fs::create_dir_all(&opts.out)?;
    results.write_csv(opts.out.join("pull.csv"))?;
    let md = opts.out.join("pull.md");
    s.write(&md)?;
    Ok(md)
}
