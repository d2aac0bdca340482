//! `EXCEPT ALL` and `INTERSECT ALL` as the multiset operations SQL defines.
//!
//! DataFusion 55 plans `a EXCEPT ALL b` as a left anti join of `a` and `b` on
//! every column (NULL equal to NULL) and `a INTERSECT ALL b` as a left semi
//! join: a row of `a` goes or stays as a whole value, whatever the number of
//! its copies on either side. So `{1, 2, 2} EXCEPT ALL {2}` was `{1}` (SQL,
//! PostgreSQL and DuckDB: `{1, 2}`) and `{2, 2, 3} INTERSECT ALL {2}` was
//! `{2, 2}` (SQL: `{2}`). Found by the `.slt` tests of issue 55.
//!
//! [`SetAll`] is an analyzer rule that numbers the copies of each row on both
//! sides (`row_number()` over a partition by every column) and joins on the
//! value and its copy number: the m copies of a value in `a` and n in `b`
//! pair up one to one, so the anti join keeps m − n of them and the semi join
//! min(m, n). The copy numbers are projected away; the output is the join's.
//!
//! The plain `EXCEPT` and `INTERSECT` are planned with a `DISTINCT` left
//! input, which is right as it is and not rewritten: the rule takes a semi or
//! anti join on every column with NULL equal to NULL, no filter, and a left
//! input that is not a `DISTINCT`, which is how DataFusion's SQL planner
//! writes the `ALL` forms (a correlated subquery is still a subquery
//! expression when analyzer rules run).

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::common::{Column, NullEquality, Result};
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{
    Expr, ExprFunctionExt, JoinType, LogicalPlan, LogicalPlanBuilder,
    logical_plan::{Distinct, Join},
};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule (see the module docs).
#[derive(Debug, Default)]
pub struct SetAll;

impl AnalyzerRule for SetAll {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| match plan {
            LogicalPlan::Join(join) if is_set_all(&join) => multiset(join).map(Transformed::yes),
            plan => Ok(Transformed::no(plan)),
        })
        .data()
    }

    fn name(&self) -> &str {
        "strata_set_all"
    }
}

/// Whether `join` is DataFusion's plan of an `EXCEPT ALL` or `INTERSECT ALL`.
fn is_set_all(join: &Join) -> bool {
    let left = join.left.schema().columns();
    let right = join.right.schema().columns();
    matches!(join.join_type, JoinType::LeftAnti | JoinType::LeftSemi)
        && join.null_equality == NullEquality::NullEqualsNull
        && join.filter.is_none()
        && !join.null_aware
        && !matches!(join.left.as_ref(), LogicalPlan::Distinct(Distinct::All(_)))
        && left.len() == right.len()
        && join.on.len() == left.len()
        && join
            .on
            .iter()
            .zip(left.iter().zip(&right))
            .all(|((l, r), (lc, rc))| {
                matches!(l, Expr::Column(c) if c == lc) && matches!(r, Expr::Column(c) if c == rc)
            })
}

const LEFT_COPY: &str = "__strata_left_copy";
const RIGHT_COPY: &str = "__strata_right_copy";

/// `join` on every column and the copy number of each row's value.
fn multiset(join: Join) -> Result<LogicalPlan> {
    let left_cols = join.left.schema().columns();
    let right_cols = join.right.schema().columns();
    let left = numbered(join.left.as_ref().clone(), LEFT_COPY)?;
    let right = numbered(join.right.as_ref().clone(), RIGHT_COPY)?;
    let mut left_keys = left_cols.clone();
    left_keys.push(Column::from_name(LEFT_COPY));
    let mut right_keys = right_cols;
    right_keys.push(Column::from_name(RIGHT_COPY));
    LogicalPlanBuilder::from(left)
        .join_detailed(
            right,
            join.join_type,
            (left_keys, right_keys),
            None,
            NullEquality::NullEqualsNull,
        )?
        .project(left_cols.into_iter().map(Expr::Column))?
        .build()
}

/// `plan` with a column `name`: each row's copy number among the rows of
/// its value (1, 2, … in no particular order).
fn numbered(plan: LogicalPlan, name: &str) -> Result<LogicalPlan> {
    let every: Vec<Expr> = plan
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    let copy = row_number().partition_by(every).build()?.alias(name);
    LogicalPlanBuilder::from(plan).window(vec![copy])?.build()
}
