//! Skipper §5, Fig. 11: how the data's layout on the device (11a: four
//! layouts, the incremental one among them) and MJoin's cache size (11b/c)
//! change a query's time.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;
use strata_csd::config::CsdConfig;
use strata_csd::layout::LayoutSpec;
use strata_csd::schedule::Policy;

use super::fleet::cold_keys;
use super::options::tpch_query;
use super::round::{
    Ctx, Mode, Point, by_bucket, device, make_fleet, max_clients, plans, ratio, round, scaling,
    tune, write,
};
use crate::report::plot::{Axis, Plot};
use crate::report::results::ResultSet;
use crate::report::summary::{Summary, num};

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
pub(super) fn fig11a(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
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
pub(super) fn fig11b(ctx: &mut Ctx, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
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
