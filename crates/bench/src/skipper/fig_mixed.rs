//! Skipper §5, Figs. 8 and 12: mixed workloads, each client its own query —
//! cumulative time per client (8) and the four schedulers on a skewed layout
//! with queries arriving at different times (12).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use strata_csd::config::CsdConfig;
use strata_csd::layout::LayoutSpec;
use strata_csd::schedule::Policy;

use super::options::{PAPER_TRANSFER_S, TpchQuery, tpch_query};
use super::round::{
    Ctx, Mode, Point, by_bucket, device, make_fleet, plans, ratio, round, scaling, tune, write,
};
use crate::report::plot::{Axis, Plot};
use crate::report::results::{ResultRow, ResultSet, median};
use crate::report::summary::{Summary, num};

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
pub(super) fn fig8(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
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
pub(super) fn fig12(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
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
