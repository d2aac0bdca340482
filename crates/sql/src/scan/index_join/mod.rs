//! Index nested-loop joins (Smooth Scan §4.2, §7.2).
//!
//! DataFusion plans every equi-join as a hash join. [`IndexJoinRule`], a
//! physical optimizer rule that runs after DataFusion's own, turns an inner
//! hash join into an [`IndexJoinExec`] when one side (usually the probe side)
//! is a strata scan of a table with an index whose first column is one of the
//! join's keys: the other side becomes the outer input, and instead of
//! scanning the inner table the join probes its index with the outer keys.
//!
//! Semi and anti joins (`EXISTS`, `NOT EXISTS` and `IN` subqueries after
//! DataFusion decorrelates them; TPC-H Q4, Q21) become index semi / anti
//! joins the same way, with one constraint: the inner is the side whose rows
//! are only tested, and the outer the side the join returns. An outer row is
//! returned once if some inner row of its keys passes the join filter (semi),
//! or if none does (anti; a NULL key matches nothing, so `NOT EXISTS` keeps
//! it). A null-aware anti join (`NOT IN`, where one NULL changes the answer)
//! stays a hash join. The cost is that of the inner join of the same keys:
//! the probes still read every matching tuple, since the inner scan's
//! predicate and the join filter decide whether a key matches. Under `auto`
//! a semi / anti join is taken only when its outer side is a scan (through
//! filters and projections), whose estimate comes from `ANALYZE`: over a
//! join, DataFusion's estimate multiplies selectivities as if independent,
//! and at TPC-H SF 1 it puts the 75.9 K rows under Q21's `EXISTS` at 1 —
//! taken on that estimate, both of Q21's subqueries became index joins and
//! the query ran 2.1x slower under `smooth` (5.06 s against 2.39 s, the
//! inner Smooth Scans morphing into sweeps, on one thread where the hash
//! joins' scans ran on two) and 1.7x under `optimizer`. `on` still forces
//! them.
//!
//! When (`strata.index_join`):
//! * `auto` (the default), under `strata.access_path = optimizer` or `smooth`:
//!   where the classical estimate says it is cheaper. The outer side's rows
//!   come from DataFusion's statistics (the scans' estimates from `ANALYZE`);
//!   each matches `rows / distinct` inner rows of the key column; the probes'
//!   tuples are read sorted by page, so their cost is that of a sort scan of
//!   as many entries (`random + (Cardenas(P, k) − 1) · parallel random`),
//!   against the inner scan's own chosen cost for the hash join. With stale
//!   statistics an outer side estimated at a handful of rows makes the index
//!   join look nearly free — the paper's Q12 / Q19 trap (Fig. 1).
//! * `on`: wherever possible, whatever the estimates; `off`: never.
//!
//! Under `smooth` the planner keeps the join the optimizer's rule picks, and
//! the inner side is a Smooth Scan parameterized by the outer keys; under the
//! other settings it is the classical index probe.

pub mod exec;

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{JoinType, NullEquality, Result};
use datafusion::physical_expr::Partitioning;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
use strata_storage::row::DataType;

pub use exec::{IndexJoin, IndexJoinExec, InnerPath};

use crate::optimizer::cardenas;
use crate::options::{AccessPathSetting, IndexJoinSetting, StrataOptions};
use crate::scan::scan_exec::StrataScanExec;

/// The physical optimizer rule; see the module docs.
#[derive(Debug, Default)]
pub struct IndexJoinRule;

impl PhysicalOptimizerRule for IndexJoinRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let settings = config
            .extensions
            .get::<StrataOptions>()
            .cloned()
            .unwrap_or_default();
        if settings.index_join == IndexJoinSetting::Off {
            return Ok(plan);
        }
        plan.transform_up(|node| {
            let Some(hj) = node.downcast_ref::<HashJoinExec>() else {
                return Ok(Transformed::no(node));
            };
            Ok(match index_join(hj, &settings)? {
                Some(p) => Transformed::yes(p),
                None => Transformed::no(node),
            })
        })
        .data()
    }

    fn name(&self) -> &str {
        "strata_index_join"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The strata scan under `plan`, through the operators that only move its
/// batches between partitions or yield to the scheduler, and, when
/// `through_filters`, filters and projections too (the plans whose row
/// estimate is the scan's, from `ANALYZE`, not a join's).
fn scan_below(plan: &Arc<dyn ExecutionPlan>, through_filters: bool) -> Option<&StrataScanExec> {
    if let Some(s) = plan.downcast_ref::<StrataScanExec>() {
        return Some(s);
    }
    let input = if let Some(r) = plan.downcast_ref::<RepartitionExec>() {
        r.input()
    } else if let Some(c) = plan.downcast_ref::<CooperativeExec>() {
        c.input()
    } else if !through_filters {
        return None;
    } else if let Some(f) = plan.downcast_ref::<FilterExec>() {
        f.input()
    } else if let Some(p) = plan.downcast_ref::<ProjectionExec>() {
        p.input()
    } else if let Some(c) = plan.downcast_ref::<CoalescePartitionsExec>() {
        c.input()
    } else {
        return None;
    };
    scan_below(input, through_filters)
}

/// The index join replacing `hj`, if one is possible and chosen: with the
/// right side's table as the inner (the usual shape: DataFusion builds on the
/// side it estimates smaller), or else the left's.
fn index_join(
    hj: &HashJoinExec,
    settings: &StrataOptions,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if hj.null_equality() != NullEquality::NullEqualsNothing || hj.null_aware {
        return Ok(None);
    }
    // Which sides may be the inner: either for an inner join; for a semi or
    // anti join the side whose rows are only tested (EXISTS / NOT EXISTS /
    // IN), never the side it returns.
    let sides: &[bool] = match hj.join_type() {
        JoinType::Inner => &[false, true],
        JoinType::LeftSemi | JoinType::LeftAnti => &[false],
        JoinType::RightSemi | JoinType::RightAnti => &[true],
        _ => return Ok(None),
    };
    let candidates = sides
        .iter()
        .map(|&inner_left| candidate(hj, settings, inner_left))
        .collect::<Result<Vec<_>>>()?;
    let Some(best) = candidates
        .into_iter()
        .flatten()
        .min_by(|a, b| a.cost.total_cmp(&b.cost))
    else {
        return Ok(None);
    };
    let outer = if best.join.inner_left {
        hj.right().clone()
    } else {
        hj.left().clone()
    };
    let exec: Arc<dyn ExecutionPlan> = Arc::new(IndexJoinExec::new(outer, best.join, hj.schema()));
    // Keep the hash join's partitioning, which the operators above were
    // planned for.
    let parts = hj.properties().output_partitioning();
    Ok(Some(match parts.clone() {
        Partitioning::UnknownPartitioning(1) => exec,
        Partitioning::UnknownPartitioning(n) => Arc::new(RepartitionExec::try_new(
            exec,
            Partitioning::RoundRobinBatch(n),
        )?),
        p if p.partition_count() > 1 => Arc::new(RepartitionExec::try_new(exec, p)?),
        _ => exec,
    }))
}

/// A possible index join and its estimated cost (0 when forced).
struct Candidate {
    join: IndexJoin,
    cost: f64,
}

/// The index join with the table under the left (`inner_left`) or right side
/// of `hj` as its inner, if that side is a strata scan with an index on a
/// join key and, under `auto`, the estimates make it cheaper.
fn candidate(
    hj: &HashJoinExec,
    settings: &StrataOptions,
    inner_left: bool,
) -> Result<Option<Candidate>> {
    let (outer_plan, inner_plan) = if inner_left {
        (hj.right(), hj.left())
    } else {
        (hj.left(), hj.right())
    };
    let Some(scan) = scan_below(inner_plan, false) else {
        return Ok(None);
    };
    let req = scan.request();
    // A columnar table's heap scan reads its delta only (the column rows
    // are the union's other side), and its index's own tree holds the
    // delta's entries only.
    if scan.path().ordered
        || req.limit.is_some()
        || req.table.is_cold()
        || req.table.columns().is_some()
    {
        return Ok(None);
    }
    // (outer, inner) expression pairs.
    let on: Vec<_> = hj
        .on()
        .iter()
        .map(|(l, r)| {
            if inner_left {
                (r.clone(), l.clone())
            } else {
                (l.clone(), r.clone())
            }
        })
        .collect();
    // The first join key whose inner column leads an index.
    let table = &req.table;
    let found = on.iter().enumerate().find_map(|(j, (_, r))| {
        let c = r.downcast_ref::<Column>()?;
        let pos = req.output_schema.index_of(c.name()).ok()?;
        let col = req.scan_columns[req.output[pos]];
        // SQL has -0.0 = 0.0 but their encoded keys differ.
        if matches!(table.schema().columns[col].ty, DataType::Float64) {
            return None;
        }
        let idx = table.indexes().iter().position(|i| i.key_cols[0] == col)?;
        Some((j, idx, col))
    });
    let Some((probe, index, col)) = found else {
        return Ok(None);
    };
    let smooth = settings.access_path == AccessPathSetting::Smooth;
    let (why, cost) = match settings.index_join {
        IndexJoinSetting::Off => return Ok(None),
        IndexJoinSetting::On => ("strata.index_join=on".to_string(), 0.0),
        IndexJoinSetting::Auto => {
            if !matches!(
                settings.access_path,
                AccessPathSetting::Optimizer | AccessPathSetting::Smooth
            ) {
                return Ok(None);
            }
            // A semi / anti join only where the outer side's estimate comes
            // from a scan's statistics (see the module docs).
            if *hj.join_type() != JoinType::Inner && scan_below(outer_plan, true).is_none() {
                return Ok(None);
            }
            let outer =
                StatisticsContext::new().compute(outer_plan.as_ref(), &StatisticsArgs::new())?;
            let Some(&outer_rows) = outer.num_rows.get_value() else {
                return Ok(None);
            };
            let stats = req.stats.as_ref();
            let (rows, pages) = match stats {
                Some(s) => (s.rows as f64, s.pages as f64),
                None => (table.rows() as f64, table.heap().num_pages() as f64),
            };
            let name = &table.schema().columns[col].name;
            let distinct = stats
                .and_then(|s| s.column(name))
                .map_or(rows, |c| c.distinct)
                .max(1.0);
            let per_key = (rows / distinct).max(1.0);
            let entries = (outer_rows as f64).max(1.0) * per_key;
            let costs = &req.page_costs;
            let parallel = costs.parallel_random_ms.max(costs.sequential_ms);
            let cost_join = costs.random_ms + (cardenas(pages, entries) - 1.0).max(0.0) * parallel;
            let cost_scan = scan
                .path()
                .estimate
                .clone()
                .unwrap_or_else(|| req.estimate(scan.path().index))
                .chosen_cost();
            if cost_join >= cost_scan {
                return Ok(None);
            }
            (
                format!(
                    "est_outer_rows={outer_rows} est_entries={entries:.0}, cost index join={cost_join:.1} < inner scan={cost_scan:.1}"
                ),
                cost_join - cost_scan,
            )
        }
    };
    Ok(Some(Candidate {
        join: IndexJoin {
            join_type: *hj.join_type(),
            inner: req.clone(),
            index,
            on,
            probe,
            filter: hj.filter().cloned(),
            inner_left,
            projection: hj.projection.as_ref().map(|p| p.to_vec()),
            path: if smooth {
                InnerPath::Smooth(req.smooth_options())
            } else {
                InnerPath::Index
            },
            why,
        },
        cost,
    }))
}
