//! Inner joins in the order of the rows they make, smallest first.
//!
//! DataFusion joins tables in the order the query's FROM names them (its
//! only choice at run time is which input of each join to build on). In
//! TPC-H Q7 that joins all 1.8 million `lineitem` rows of two years with
//! `orders` and then `customer` — two hash tables of 1.8 million rows —
//! before the `nation` filter, named last, keeps 2 nations of 25; joined
//! first with `supplier`, it keeps 146 thousand `lineitem` rows from the start.
//!
//! [`JoinOrder`] is a logical optimizer rule, the classical greedy one. It
//! takes a tree of inner joins apart into its inputs (anything that is not an
//! inner join: a table scan with its filters, an aggregate, a semi join) and
//! its conditions, estimates each input's rows, and joins them again left
//! deep. From each input in turn it adds, one at a time, the input that makes
//! the smallest result with what is joined so far, among those a condition
//! connects to it; of these orders it keeps the one whose joins make the
//! fewest rows in all (starting from the smallest join alone can lead into a
//! dead end: in Q9, `nation` with `supplier` is smallest, and then only all of
//! `lineitem` connects). Each condition goes on the first join where all its
//! columns are present. The input a join adds goes on its left, the side the
//! hash join builds its table on, when it is estimated smaller than what is
//! joined so far (Q5: the 230 thousand `orders` of a year, not the 1.2
//! million `lineitem` rows of Asia's suppliers; DataFusion swaps the sides of
//! a join only on statistics a join's output does not have). A projection on
//! top gives the columns back in the order the query had them.
//!
//! The estimates are the textbook ones: a table scan's rows are its `ANALYZE`
//! row count times its filters' selectivity (`crate::stats::expr_selectivity`),
//! and an equi-join of `a` and `b` makes `|a|·|b| / max(distinct(a.k),
//! distinct(b.k))` rows, a distinct count being the column's (capped by the
//! input's estimated rows) or, for a computed input, its rows. Of several
//! conditions joining an input, only the most selective counts: they are often
//! one composite key, whose parts are not independent. When an input's
//! rows cannot be estimated (a table never analyzed, a plan shape not known
//! here), the joins stay as written, and `SET strata.join_order = false`
//! keeps them as written always.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchemaRef, NullEquality, Result};
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::utils::{conjunction, split_conjunction_owned};
use datafusion::logical_expr::{
    BinaryExpr, Expr, Join, JoinConstraint, JoinType, LogicalPlan, Operator, Projection, TableScan,
};
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

use crate::scan::provider::StrataTable;
use crate::stats::TableStats;

/// The optimizer rule (see the module docs).
#[derive(Debug, Default)]
pub struct JoinOrder;

impl OptimizerRule for JoinOrder {
    fn name(&self) -> &str {
        "strata_join_order"
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let on = config
            .options()
            .extensions
            .get::<crate::options::StrataOptions>()
            .is_none_or(|o| o.join_order);
        if !on {
            return Ok(Transformed::no(plan));
        }
        plan.transform_down(|node| {
            if !is_inner(&node) {
                return Ok(Transformed::no(node));
            }
            let mut inputs = Vec::new();
            let mut conditions = Vec::new();
            flatten(&node, &mut inputs, &mut conditions);
            // The inputs' own trees are ordered first; the cluster is then
            // left alone by the walk.
            let mut changed = false;
            for input in &mut inputs {
                let t = self.rewrite(input.clone(), config)?;
                changed |= t.transformed;
                *input = t.data;
            }
            match reorder(&node, inputs.clone(), conditions.clone())? {
                Some(plan) => Ok(Transformed::new(plan, true, TreeNodeRecursion::Jump)),
                None if changed => Ok(Transformed::new(
                    rebuild_as_written(&node, &inputs)?,
                    true,
                    TreeNodeRecursion::Jump,
                )),
                None => Ok(Transformed::new(node, false, TreeNodeRecursion::Jump)),
            }
        })
    }
}

fn is_inner(plan: &LogicalPlan) -> bool {
    matches!(plan, LogicalPlan::Join(j) if j.join_type == JoinType::Inner
        && j.null_equality == NullEquality::NullEqualsNothing)
}

/// Whether `p` only passes columns on from an inner join (a projection
/// DataFusion puts between the joins of one tree).
fn passes_columns_over_inner(p: &Projection) -> bool {
    is_inner(&p.input) && p.expr.iter().all(|e| matches!(e, Expr::Column(_)))
}

/// Takes a tree of inner joins (and of projections that only pass columns on
/// between them) apart into its inputs, left to right, and its conditions.
fn flatten(plan: &LogicalPlan, inputs: &mut Vec<LogicalPlan>, conditions: &mut Vec<Expr>) {
    match plan {
        LogicalPlan::Join(j) if is_inner(plan) => {
            for (l, r) in &j.on {
                conditions.push(Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(l.clone()),
                    Operator::Eq,
                    Box::new(r.clone()),
                )));
            }
            if let Some(f) = &j.filter {
                conditions.extend(split_conjunction_owned(f.clone()));
            }
            flatten(&j.left, inputs, conditions);
            flatten(&j.right, inputs, conditions);
        }
        LogicalPlan::Projection(p) if passes_columns_over_inner(p) => {
            flatten(&p.input, inputs, conditions)
        }
        other => inputs.push(other.clone()),
    }
}

/// `node` with its inputs replaced by `inputs` (in `flatten`'s order).
fn rebuild_as_written(node: &LogicalPlan, inputs: &[LogicalPlan]) -> Result<LogicalPlan> {
    fn go(
        plan: &LogicalPlan,
        inputs: &mut std::slice::Iter<'_, LogicalPlan>,
    ) -> Result<LogicalPlan> {
        match plan {
            LogicalPlan::Join(j) if is_inner(plan) => {
                let left = go(&j.left, inputs)?;
                let right = go(&j.right, inputs)?;
                Ok(LogicalPlan::Join(Join {
                    left: Arc::new(left),
                    right: Arc::new(right),
                    ..j.clone()
                }))
            }
            LogicalPlan::Projection(p) if passes_columns_over_inner(p) => {
                Ok(LogicalPlan::Projection(Projection::try_new_with_schema(
                    p.expr.clone(),
                    Arc::new(go(&p.input, inputs)?),
                    p.schema.clone(),
                )?))
            }
            _ => Ok(inputs.next().expect("one input per leaf").clone()),
        }
    }
    go(node, &mut inputs.iter())
}

/// One input of the cluster: its plan, estimated rows, and statistics when it
/// is a table scan.
struct Input {
    plan: LogicalPlan,
    rows: f64,
    stats: Option<TableStats>,
}

/// A condition and the inputs whose columns it reads (a bit each).
struct Condition {
    expr: Expr,
    inputs: u64,
    /// For `a = b` with `a` and `b` in one input each: the two sides.
    equi: Option<(Expr, Expr)>,
}

/// The cluster joined in the greedy order, under a projection giving `node`'s
/// columns; `None` when that order is the written one or cannot be estimated.
fn reorder(
    node: &LogicalPlan,
    plans: Vec<LogicalPlan>,
    exprs: Vec<Expr>,
) -> Result<Option<LogicalPlan>> {
    let n = plans.len();
    if !(3..=64).contains(&n) {
        return Ok(None);
    }
    let mut inputs = Vec::with_capacity(n);
    for plan in plans {
        let Some((rows, stats)) = estimate(&plan) else {
            return Ok(None);
        };
        inputs.push(Input {
            plan,
            rows: rows.max(1.0),
            stats,
        });
    }
    let mut conditions = Vec::with_capacity(exprs.len());
    for expr in exprs {
        let Some(set) = inputs_of(&expr, &inputs) else {
            return Ok(None);
        };
        let equi = match &expr {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Eq,
                right,
            }) => match (inputs_of(left, &inputs), inputs_of(right, &inputs)) {
                (Some(a), Some(b)) if a.count_ones() == 1 && b.count_ones() == 1 && a != b => {
                    Some((left.as_ref().clone(), right.as_ref().clone()))
                }
                _ => None,
            },
            _ => None,
        };
        conditions.push(Condition {
            expr,
            inputs: set,
            equi,
        });
    }
    let (order, rows) = greedy(&inputs, &conditions);
    // Each join builds its hash table on the smaller of its two sides: the
    // input it adds, when that is smaller than what is joined so far.
    let new_on_left: Vec<bool> = order[1..]
        .iter()
        .zip(&rows)
        .map(|(&next, &so_far)| inputs[next].rows < so_far)
        .collect();
    if order.iter().copied().eq(0..n) && !new_on_left.contains(&true) {
        return Ok(None);
    }
    let mut used = vec![false; conditions.len()];
    let mut joined: u64 = 1 << order[0];
    let mut plan = inputs[order[0]].plan.clone();
    for (&next, &left) in order[1..].iter().zip(&new_on_left) {
        let bit = 1u64 << next;
        let mut on = Vec::new();
        let mut filter = Vec::new();
        for (i, c) in conditions.iter().enumerate() {
            if used[i] || c.inputs & !(joined | bit) != 0 || c.inputs & bit == 0 {
                continue;
            }
            used[i] = true;
            match &c.equi {
                Some((l, r)) => {
                    let l_in_new = inputs_of(l, &inputs) == Some(bit);
                    let r_in_new = inputs_of(r, &inputs) == Some(bit);
                    match (l_in_new, r_in_new) {
                        (false, true) => on.push((l.clone(), r.clone())),
                        (true, false) => on.push((r.clone(), l.clone())),
                        _ => filter.push(c.expr.clone()),
                    }
                }
                None => filter.push(c.expr.clone()),
            }
        }
        let adding = inputs[next].plan.clone();
        let (l, r) = if left {
            on = on.into_iter().map(|(a, b)| (b, a)).collect();
            (adding, plan)
        } else {
            (plan, adding)
        };
        plan = LogicalPlan::Join(Join::try_new(
            Arc::new(l),
            Arc::new(r),
            on,
            conjunction(filter),
            JoinType::Inner,
            JoinConstraint::On,
            NullEquality::NullEqualsNothing,
            false,
        )?);
        joined |= bit;
    }
    // Conditions on one input only (none after DataFusion's own rules) and
    // any left over go on top.
    let rest: Vec<Expr> = conditions
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(c, _)| c.expr.clone())
        .collect();
    if let Some(predicate) = conjunction(rest) {
        plan = LogicalPlan::Filter(datafusion::logical_expr::Filter::try_new(
            predicate,
            Arc::new(plan),
        )?);
    }
    // The optimizer runs its rules again over their own output: a tree this
    // rule made (its inputs then flattened in another order) is left as it is.
    if plan == *node {
        return Ok(None);
    }
    Ok(Some(restore_columns(node.schema(), plan)?))
}

/// A projection over `plan` giving the columns of `schema`, in its order.
fn restore_columns(schema: &DFSchemaRef, plan: LogicalPlan) -> Result<LogicalPlan> {
    let exprs: Vec<Expr> = schema
        .iter()
        .map(|(q, f)| Expr::Column(Column::new(q.cloned(), f.name())))
        .collect();
    Ok(LogicalPlan::Projection(Projection::try_new_with_schema(
        exprs,
        Arc::new(plan),
        schema.clone(),
    )?))
}

/// The inputs (a bit each) whose columns `expr` reads; `None` when a column
/// is found in no input or in more than one.
fn inputs_of(expr: &Expr, inputs: &[Input]) -> Option<u64> {
    let mut set = 0u64;
    for c in expr.column_refs() {
        let mut found = inputs
            .iter()
            .enumerate()
            .filter(|(_, i)| i.plan.schema().has_column(c));
        let (at, _) = found.next()?;
        if found.next().is_some() {
            return None;
        }
        set |= 1 << at;
    }
    Some(set)
}

/// The join order: from each input in turn, add the connected input that
/// keeps the result smallest (an input no condition connects comes last,
/// smallest first); of these orders, the one whose joins make the fewest rows
/// in all. Ties keep the written order. With it, the estimated rows joined
/// before each input after the first is added.
fn greedy(inputs: &[Input], conditions: &[Condition]) -> (Vec<usize>, Vec<f64>) {
    let n = inputs.len();
    let rows_of = |set: u64, rows: f64, next: usize| -> (f64, bool) {
        let mut r = rows * inputs[next].rows;
        let mut connected = false;
        // The most selective condition only: two conditions between the same
        // tables are often one composite key (`partsupp` with `lineitem` on
        // part and supplier), and multiplying their selectivities would take
        // 6 million rows for a few thousand.
        let mut key: f64 = 1.0;
        for c in conditions {
            let Some((a, b)) = &c.equi else { continue };
            let bit = 1u64 << next;
            if c.inputs & bit == 0 || c.inputs & !(set | bit) != 0 || c.inputs & set == 0 {
                continue;
            }
            connected = true;
            key = key.max(distinct(a, inputs).max(distinct(b, inputs)));
        }
        r /= key.max(1.0);
        (r.max(1.0), connected)
    };
    let mut best: Option<(f64, Vec<usize>, Vec<f64>)> = None;
    for first in 0..n {
        let mut order = vec![first];
        let mut set: u64 = 1 << first;
        let mut rows = inputs[first].rows;
        let mut before = Vec::with_capacity(n - 1);
        let mut cost = 0.0;
        while order.len() < n {
            let mut pick: Option<(f64, bool, usize)> = None;
            for next in (0..n).filter(|k| set & (1 << k) == 0) {
                let (r, connected) = rows_of(set, rows, next);
                let better = match pick {
                    None => true,
                    Some((br, bc, _)) => (connected && !bc) || (connected == bc && r < br),
                };
                if better {
                    pick = Some((r, connected, next));
                }
            }
            let (r, _, next) = pick.expect("an input is left");
            before.push(rows);
            order.push(next);
            set |= 1 << next;
            rows = r;
            cost += r;
        }
        // The smaller of the first two goes first: the left, which the hash
        // join builds on unless the statistics say otherwise.
        if inputs[order[1]].rows < inputs[order[0]].rows {
            order.swap(0, 1);
            before[0] = inputs[order[0]].rows;
        }
        if best.as_ref().is_none_or(|(b, _, _)| cost < *b) {
            best = Some((cost, order, before));
        }
    }
    best.map_or_else(
        || ((0..n).collect(), vec![0.0; n - 1]),
        |(_, order, before)| (order, before),
    )
}

/// The distinct values of `expr` in its input: the column's `ANALYZE` count
/// (at most the input's estimated rows), or the input's rows.
fn distinct(expr: &Expr, inputs: &[Input]) -> f64 {
    let Some(set) = inputs_of(expr, inputs) else {
        return 1.0;
    };
    let input = &inputs[set.trailing_zeros() as usize];
    let column = match expr {
        Expr::Column(c) => input.stats.as_ref().and_then(|s| s.column(&c.name)),
        _ => None,
    };
    match column {
        Some(c) => c.distinct.min(input.rows),
        None => input.rows,
    }
}

/// An input's estimated rows, and its statistics when it is a table scan.
pub(crate) fn estimate(plan: &LogicalPlan) -> Option<(f64, Option<TableStats>)> {
    match plan {
        LogicalPlan::TableScan(scan) => scan_estimate(scan, vec![]),
        LogicalPlan::Filter(f) => match f.input.as_ref() {
            LogicalPlan::TableScan(scan) => {
                scan_estimate(scan, split_conjunction_owned(f.predicate.clone()))
            }
            input => estimate(input).map(|(rows, stats)| (rows * DEFAULT_FILTER, stats)),
        },
        LogicalPlan::Projection(p) => estimate(&p.input),
        LogicalPlan::SubqueryAlias(a) => estimate(&a.input).map(|(rows, _)| (rows, None)),
        LogicalPlan::Aggregate(a) if a.group_expr.is_empty() => Some((1.0, None)),
        LogicalPlan::Aggregate(a) => {
            estimate(&a.input).map(|(rows, _)| (rows * DEFAULT_GROUPS, None))
        }
        LogicalPlan::Join(j) => match j.join_type {
            JoinType::LeftSemi | JoinType::LeftAnti => {
                estimate(&j.left).map(|(rows, stats)| (rows * DEFAULT_FILTER, stats))
            }
            _ => {
                let (l, _) = estimate(&j.left)?;
                let (r, _) = estimate(&j.right)?;
                Some((l.max(r), None))
            }
        },
        LogicalPlan::EmptyRelation(_) | LogicalPlan::Values(_) => Some((1.0, None)),
        _ => None,
    }
}

/// A strata table's scan with its filters and `more`.
fn scan_estimate(scan: &TableScan, more: Vec<Expr>) -> Option<(f64, Option<TableStats>)> {
    let provider = source_as_provider(&scan.source).ok()?;
    let table = provider.downcast_ref::<StrataTable>()?;
    let mut filters = scan.filters.clone();
    filters.extend(more);
    let (rows, stats) = table.estimate(&filters)?;
    let rows = match scan.fetch {
        Some(f) => rows.min(f as f64),
        None => rows,
    };
    Some((rows, Some(stats)))
}

/// The share of rows a filter keeps when nothing better is known
/// (PostgreSQL's `DEFAULT_INEQ_SEL`).
const DEFAULT_FILTER: f64 = 1.0 / 3.0;

/// The share of an aggregate's input rows that are groups, when nothing better
/// is known.
const DEFAULT_GROUPS: f64 = 0.1;
