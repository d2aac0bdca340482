//! A join with a grouped aggregate on its group key hands the aggregate the
//! keys it can meet, before it groups.
//!
//! A correlated subquery such as TPC-H Q17's `l_quantity < (SELECT 0.2 *
//! avg(l_quantity) FROM lineitem WHERE l_partkey = p_partkey)` is decorrelated
//! into an aggregate of all of `lineitem` grouped by `l_partkey` — 200,000
//! groups of 6 million rows — joined with the 204 parts the outer query keeps.
//! Only those 204 groups can ever be joined. When the join's key on the other
//! side comes from a filtered table scan, [`AggregateKeys`] puts a semi join
//! with that scan under the aggregate (`lineitem ⋉ part` on the group key), so
//! it groups the few rows whose key the scan has: the classical "magic set"
//! rewrite in its simplest form, which PostgreSQL lacks and DuckDB does with
//! its own filters passed sideways at run time.
//!
//! Why the answer cannot change: every row of the join's other side has a key
//! the scan produced (inner joins, semi joins, filters and projections on the
//! way only drop or repeat rows), and all rows of a group share its key, so the
//! semi join drops whole groups, each one no row of the other side could join
//! (a NULL key joins nothing under SQL's `=`). Filters over the aggregate
//! (HAVING) see the same groups' same values.
//!
//! It applies when the scan is estimated at most a tenth of the aggregate's
//! input (`crate::rules::join_order::estimate`), so the scan read a second
//! time is small beside what it saves, and not when the two share a table
//! name (their columns would be ambiguous in the semi join's condition).

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, NullEquality, Result};
use datafusion::logical_expr::{
    Aggregate, Expr, Filter, Join, JoinConstraint, JoinType, LogicalPlan, Projection, SubqueryAlias,
};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

use super::join_order::estimate;

/// The optimizer rule (see the module docs).
#[derive(Debug, Default)]
pub struct AggregateKeys;

impl OptimizerRule for AggregateKeys {
    fn name(&self) -> &str {
        "strata_aggregate_keys"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Join(join) = &plan else {
            return Ok(Transformed::no(plan));
        };
        if join.join_type != JoinType::Inner
            || join.null_equality != NullEquality::NullEqualsNothing
        {
            return Ok(Transformed::no(plan));
        }
        for (l, r) in &join.on {
            let (Expr::Column(lc), Expr::Column(rc)) = (l, r) else {
                continue;
            };
            if let Some(keys) = key_source(&join.left, lc)
                && let Some(right) = reduce(&join.right, rc, &keys)?
            {
                return Ok(Transformed::yes(LogicalPlan::Join(Join {
                    right: Arc::new(right),
                    ..join.clone()
                })));
            }
            if let Some(keys) = key_source(&join.right, rc)
                && let Some(left) = reduce(&join.left, lc, &keys)?
            {
                return Ok(Transformed::yes(LogicalPlan::Join(Join {
                    left: Arc::new(left),
                    ..join.clone()
                })));
            }
        }
        Ok(Transformed::no(plan))
    }
}

/// A filtered table scan (with the filter above it, if any) and its column
/// that a join key comes from.
struct Keys {
    plan: LogicalPlan,
    column: Column,
}

/// Where `column` of `plan` comes from, when that is a filtered table scan
/// reached through inner and semi joins, filters, projections and aliases.
fn key_source(plan: &LogicalPlan, column: &Column) -> Option<Keys> {
    let leaf = |plan: &LogicalPlan| {
        Some(Keys {
            plan: plan.clone(),
            column: column.clone(),
        })
    };
    match plan {
        LogicalPlan::TableScan(scan) if !scan.filters.is_empty() => leaf(plan),
        LogicalPlan::Filter(f) if matches!(f.input.as_ref(), LogicalPlan::TableScan(_)) => {
            leaf(plan)
        }
        LogicalPlan::Filter(f) => key_source(&f.input, column),
        LogicalPlan::Projection(p) => key_source(&p.input, &projected_from(p, column)?),
        LogicalPlan::SubqueryAlias(a) => key_source(&a.input, &aliased_from(a, column)?),
        LogicalPlan::Join(j) => match j.join_type {
            JoinType::Inner if j.left.schema().has_column(column) => key_source(&j.left, column),
            JoinType::Inner => key_source(&j.right, column),
            JoinType::LeftSemi | JoinType::LeftAnti => key_source(&j.left, column),
            _ => None,
        },
        _ => None,
    }
}

/// The input column `column` of `p` passes on unchanged, if it does.
fn projected_from(p: &Projection, column: &Column) -> Option<Column> {
    let at = p.schema.index_of_column(column).ok()?;
    match p.expr[at].clone().unalias() {
        Expr::Column(c) => Some(c),
        _ => None,
    }
}

/// The input column that `column` of `a` renames.
fn aliased_from(a: &SubqueryAlias, column: &Column) -> Option<Column> {
    let at = a.schema.index_of_column(column).ok()?;
    let (q, f) = a.input.schema().qualified_field(at);
    Some(Column::new(q.cloned(), f.name()))
}

/// `plan` with the semi join by `keys` under the aggregate whose group key
/// `column` is, or `None` when `column` is not an aggregate's plain group
/// key below projections, aliases and filters (or the rewrite would not pay,
/// or is there already).
fn reduce(plan: &LogicalPlan, column: &Column, keys: &Keys) -> Result<Option<LogicalPlan>> {
    match plan {
        LogicalPlan::SubqueryAlias(a) => {
            let Some(inner) = aliased_from(a, column) else {
                return Ok(None);
            };
            Ok(match reduce(&a.input, &inner, keys)? {
                Some(input) => Some(LogicalPlan::SubqueryAlias(SubqueryAlias::try_new(
                    Arc::new(input),
                    a.alias.clone(),
                )?)),
                None => None,
            })
        }
        LogicalPlan::Projection(p) => {
            let Some(inner) = projected_from(p, column) else {
                return Ok(None);
            };
            Ok(match reduce(&p.input, &inner, keys)? {
                Some(input) => Some(LogicalPlan::Projection(Projection::try_new_with_schema(
                    p.expr.clone(),
                    Arc::new(input),
                    p.schema.clone(),
                )?)),
                None => None,
            })
        }
        LogicalPlan::Filter(f) => Ok(match reduce(&f.input, column, keys)? {
            Some(input) => Some(LogicalPlan::Filter(Filter::try_new(
                f.predicate.clone(),
                Arc::new(input),
            )?)),
            None => None,
        }),
        LogicalPlan::Aggregate(agg) => {
            let Ok(at) = agg.schema.index_of_column(column) else {
                return Ok(None);
            };
            if at >= agg.group_expr.len() {
                return Ok(None);
            }
            let Expr::Column(group) = agg.group_expr[at].clone().unalias() else {
                return Ok(None);
            };
            if already(&agg.input, &group, keys) || !pays(&agg.input, keys) {
                return Ok(None);
            }
            let semi = Join::try_new(
                agg.input.clone(),
                Arc::new(keys.plan.clone()),
                vec![(Expr::Column(group), Expr::Column(keys.column.clone()))],
                None,
                JoinType::LeftSemi,
                JoinConstraint::On,
                NullEquality::NullEqualsNothing,
                false,
            )?;
            Ok(Some(LogicalPlan::Aggregate(Aggregate::try_new(
                Arc::new(LogicalPlan::Join(semi)),
                agg.group_expr.clone(),
                agg.aggr_expr.clone(),
            )?)))
        }
        _ => Ok(None),
    }
}

/// Whether `input` already has the semi join of `group` by `keys` (the rule
/// ran in an earlier pass; other rules may have moved it down since, and
/// pruned the keys' scan to fewer columns).
fn already(input: &LogicalPlan, group: &Column, keys: &Keys) -> bool {
    let wanted = (
        Expr::Column(group.clone()),
        Expr::Column(keys.column.clone()),
    );
    input
        .exists(|p| {
            Ok(
                matches!(p, LogicalPlan::Join(j) if j.join_type == JoinType::LeftSemi
                && j.on.len() == 1 && j.on[0] == wanted),
            )
        })
        .unwrap_or(true)
}

/// Whether the keys' scan is at most a tenth of the aggregate's input, by the
/// estimates, and shares no qualified column with it.
fn pays(input: &LogicalPlan, keys: &Keys) -> bool {
    let clash = keys.plan.schema().iter().any(|(q, f)| {
        input
            .schema()
            .has_column(&Column::new(q.cloned(), f.name()))
    });
    if clash {
        return false;
    }
    match (estimate(&keys.plan), estimate(input)) {
        (Some((k, _)), Some((i, _))) => k * 10.0 <= i,
        _ => false,
    }
}
