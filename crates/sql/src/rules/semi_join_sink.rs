//! A semi or anti join sinks to the input that holds its keys.
//!
//! DataFusion turns `x IN (SELECT …)`, `EXISTS` and `NOT EXISTS` into a left
//! semi or anti join and leaves it above the whole join tree of the outer
//! query. But such a join is a filter on its left side's rows that reads only
//! its own keys' columns (and those its condition names), so it may as well
//! run where those columns first appear. In TPC-H Q18 the `IN` keeps 57
//! orders of 1.5 million: above the tree it built a hash table of all 6
//! million joined `lineitem` rows to probe those 57; sunk to `orders`, the
//! joins above it carry 57 orders and the tree's big hash table is gone.
//!
//! [`SemiJoinSink`] is a logical optimizer rule. It moves a semi or anti join
//! from above an inner join into the join's input that holds every column the
//! semi join reads from its left, through projections that pass those columns
//! on, as deep as that holds. It moves it only past an inner join whose *other*
//! input reads base tables unfiltered (table scans, projections, aliases and
//! inner equi-joins of them): such a join cannot make fewer rows from the
//! sinking side than there are — on keys it keeps every row or multiplies it —
//! so after the move the semi join probes no more rows than before. Past a
//! filtered input (TPC-H Q21's `nation = 'SAUDI ARABIA'`), the join above may
//! shrink the rows twenty-five-fold, and the semi join stays where it is.
//!
//! Anti joins move too, NOT IN's null-aware ones among them: whether a row
//! is kept depends on its own keys and on the subquery's rows only, wherever
//! the row is tested.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, Result};
use datafusion::logical_expr::{Expr, Join, JoinType, LogicalPlan, Projection};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// The optimizer rule (see the module docs).
#[derive(Debug, Default)]
pub struct SemiJoinSink;

impl OptimizerRule for SemiJoinSink {
    fn name(&self) -> &str {
        "strata_semi_join_sink"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Join(semi) = &plan else {
            return Ok(Transformed::no(plan));
        };
        if !matches!(semi.join_type, JoinType::LeftSemi | JoinType::LeftAnti) {
            return Ok(Transformed::no(plan));
        }
        let reads = left_columns(semi);
        match sink(&semi.left, &reads, semi)? {
            Some(sunk) => Ok(Transformed::yes(sunk)),
            None => Ok(Transformed::no(plan)),
        }
    }
}

/// The columns of its left input that `semi` reads: its left keys', and those
/// of its condition that are the left's.
fn left_columns(semi: &Join) -> HashSet<Column> {
    let mut reads = HashSet::new();
    for (left, _) in &semi.on {
        reads.extend(left.column_refs().into_iter().cloned());
    }
    if let Some(filter) = &semi.filter {
        let left = semi.left.schema();
        reads.extend(
            filter
                .column_refs()
                .into_iter()
                .filter(|c| left.has_column(c))
                .cloned(),
        );
    }
    reads
}

/// `plan` with `semi` moved below its top, or `None` when it cannot move (then
/// it stays above `plan`).
fn sink(plan: &LogicalPlan, reads: &HashSet<Column>, semi: &Join) -> Result<Option<LogicalPlan>> {
    match plan {
        LogicalPlan::Projection(p) if passes_on(p, reads) => {
            Ok(match sink(&p.input, reads, semi)? {
                Some(input) => Some(LogicalPlan::Projection(Projection::try_new(
                    p.expr.clone(),
                    Arc::new(input),
                )?)),
                None => None,
            })
        }
        LogicalPlan::Join(join) if join.join_type == JoinType::Inner => {
            let holds = |side: &LogicalPlan| reads.iter().all(|c| side.schema().has_column(c));
            let (left, right) = if holds(&join.left) && unfiltered(&join.right) {
                (
                    Arc::new(below(&join.left, reads, semi)?),
                    join.right.clone(),
                )
            } else if holds(&join.right) && unfiltered(&join.left) {
                (
                    join.left.clone(),
                    Arc::new(below(&join.right, reads, semi)?),
                )
            } else {
                return Ok(None);
            };
            // The inner join's schema is its inputs', which a semi join keeps.
            Ok(Some(LogicalPlan::Join(Join {
                left,
                right,
                ..join.clone()
            })))
        }
        _ => Ok(None),
    }
}

/// `semi` applied to `input`, as deep inside it as it sinks.
fn below(input: &Arc<LogicalPlan>, reads: &HashSet<Column>, semi: &Join) -> Result<LogicalPlan> {
    if let Some(sunk) = sink(input, reads, semi)? {
        return Ok(sunk);
    }
    Ok(LogicalPlan::Join(Join::try_new(
        input.clone(),
        semi.right.clone(),
        semi.on.clone(),
        semi.filter.clone(),
        semi.join_type,
        semi.join_constraint,
        semi.null_equality,
        semi.null_aware,
    )?))
}

/// Whether every column in `reads` leaves `p` as itself.
fn passes_on(p: &Projection, reads: &HashSet<Column>) -> bool {
    reads.iter().all(|c| {
        p.expr
            .iter()
            .any(|e| matches!(e, Expr::Column(col) if col == c))
    })
}

/// Whether `plan` reads base tables with no filter, joined on keys only.
fn unfiltered(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::TableScan(scan) => scan.filters.is_empty() && scan.fetch.is_none(),
        LogicalPlan::Projection(p) => unfiltered(&p.input),
        LogicalPlan::SubqueryAlias(a) => unfiltered(&a.input),
        LogicalPlan::Join(j) => {
            j.join_type == JoinType::Inner
                && j.filter.is_none()
                && unfiltered(&j.left)
                && unfiltered(&j.right)
        }
        _ => false,
    }
}
