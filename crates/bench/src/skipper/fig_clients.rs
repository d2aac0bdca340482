//! Skipper §5, Figs. 7, 9 and 10: clients one group each — the mean Q12
//! time as clients are added (Skipper, pull, local), where a client's time
//! goes (switches, transfers, processing), and the switch time swept.

use std::path::PathBuf;

use anyhow::Result;
use strata_csd::layout::LayoutSpec;
use strata_csd::schedule::Policy;

use super::fleet::local_copies;
use super::options::{PAPER_TRANSFER_S, tpch_query};
use super::round::{
    Ctx, Mode, Point, device, make_fleet, max_clients, plans, ratio, round, scaling, tune, verdict,
    write,
};
use crate::report::plot::{Axis, Plot};
use crate::report::results::{ResultRow, ResultSet};
use crate::report::summary::{Summary, num};

/// Fig. 7: mean Q12 time for 1..C clients, one group each, cache half the
/// data a query reads: Skipper, pull, local.
pub(super) fn fig7(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
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
pub(super) fn fig9(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
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
pub(super) fn fig10(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
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
