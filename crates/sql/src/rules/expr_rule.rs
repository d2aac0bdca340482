//! The walk the expression-rewriting analyzer rules share: every plan node,
//! subqueries included, bottom-up, with each node's expressions rewritten
//! over the schema of its inputs (a scan's own columns added), their names
//! kept, and the node's schema recomputed when anything changed.

use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{Expr, LogicalPlan, Operator};

/// `plan` with `rewrite` applied to every expression of every node.
pub fn rewrite_expressions(
    plan: LogicalPlan,
    rewrite: impl Fn(Expr, &DFSchema) -> Result<Transformed<Expr>>,
) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|plan| {
        let mut schema = merge_schema(&plan.inputs());
        if let LogicalPlan::TableScan(scan) = &plan {
            schema.merge(scan.projected_schema.as_ref());
        }
        let names = NamePreserver::new(&plan);
        let t = plan.map_expressions(|e| {
            let name = names.save(&e);
            Ok(rewrite(e, &schema)?.update_data(|e| name.restore(e)))
        })?;
        if t.transformed {
            t.map_data(|p| p.recompute_schema())
        } else {
            Ok(t)
        }
    })
    .data()
}

/// Whether `op` compares its operands (=, <>, <, <=, >, >=, IS [NOT] DISTINCT
/// FROM): the operators the comparison rules check the types of.
pub(crate) fn is_comparison(op: Operator) -> bool {
    matches!(
        op,
        Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq
            | Operator::IsDistinctFrom
            | Operator::IsNotDistinctFrom
    )
}
