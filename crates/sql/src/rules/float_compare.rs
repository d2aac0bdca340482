//! A DOUBLE compared with a DECIMAL is compared as a DOUBLE.
//!
//! DataFusion 55 coerces both sides of `f > 0.7` (f a DOUBLE, 0.7 a decimal
//! literal, as strata parses it) to DECIMAL(30,15): the DOUBLE is cast to a
//! decimal with 15 integer digits, so every comparison of a DOUBLE column
//! with a literal failed on a value of 10^15 or more ("Cannot cast to
//! Decimal128(30, 15). Overflowing on 1e300"; found by the `.slt` tests of
//! issue 55), rounded the DOUBLE to 15 decimals, and kept the comparison from
//! reaching the scan as a pushed predicate. PostgreSQL compares float8 with
//! numeric as float8, and so does strata: [`FloatCompare`], an analyzer rule
//! after type coercion, takes the coercion's CAST of a DOUBLE (REAL) to
//! DECIMAL(30,15) (DECIMAL(14,7)) off a comparison, `IN` list or `BETWEEN`
//! and casts the decimal side to the float type instead (a literal folds).

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr::{Between, Cast, InList};
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule (see the module docs).
#[derive(Debug, Default)]
pub struct FloatCompare;

impl AnalyzerRule for FloatCompare {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::rules::expr_rule::rewrite_expressions(plan, float_comparisons)
    }

    fn name(&self) -> &str {
        "strata_float_compare"
    }
}

/// `e` with its float-to-decimal comparisons made float comparisons.
pub fn float_comparisons(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    e.transform_up(|e| {
        Ok(match e {
            Expr::BinaryExpr(b) if crate::rules::expr_rule::is_comparison(b.op) => {
                let BinaryExpr { left, op, right } = b;
                match (uncoerced(&left, schema), uncoerced(&right, schema)) {
                    (Some((f, ty)), None) if is_decimal(&right, schema) => {
                        Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                            Box::new(f),
                            op,
                            Box::new(right.cast_to(&ty, schema)?),
                        )))
                    }
                    (None, Some((f, ty))) if is_decimal(&left, schema) => {
                        Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                            Box::new(left.cast_to(&ty, schema)?),
                            op,
                            Box::new(f),
                        )))
                    }
                    _ => Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right })),
                }
            }
            Expr::InList(l) => match uncoerced(&l.expr, schema) {
                Some((f, ty)) if l.list.iter().all(|i| is_decimal(i, schema)) => {
                    let list = l
                        .list
                        .into_iter()
                        .map(|i| i.cast_to(&ty, schema))
                        .collect::<Result<Vec<_>>>()?;
                    Transformed::yes(Expr::InList(InList::new(Box::new(f), list, l.negated)))
                }
                _ => Transformed::no(Expr::InList(l)),
            },
            Expr::Between(b) => match uncoerced(&b.expr, schema) {
                Some((f, ty)) if is_decimal(&b.low, schema) && is_decimal(&b.high, schema) => {
                    Transformed::yes(Expr::Between(Between::new(
                        Box::new(f),
                        b.negated,
                        Box::new(b.low.cast_to(&ty, schema)?),
                        Box::new(b.high.cast_to(&ty, schema)?),
                    )))
                }
                _ => Transformed::no(Expr::Between(b)),
            },
            e => Transformed::no(e),
        })
    })
}

fn is_decimal(e: &Expr, schema: &DFSchema) -> bool {
    matches!(e.get_type(schema), Ok(DataType::Decimal128(..)))
}

/// The float expression under the type coercion's CAST of it to a decimal,
/// and the float type: DOUBLE to DECIMAL(30,15), REAL to DECIMAL(14,7).
fn uncoerced(e: &Expr, schema: &DFSchema) -> Option<(Expr, DataType)> {
    let Expr::Cast(Cast { expr, field }) = e else {
        return None;
    };
    let ty = match field.data_type() {
        DataType::Decimal128(30, 15) => DataType::Float64,
        DataType::Decimal128(14, 7) => DataType::Float32,
        _ => return None,
    };
    (expr.get_type(schema).ok()? == ty).then(|| (expr.as_ref().clone(), ty))
}
