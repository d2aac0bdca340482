//! SQL's equality where DataFusion 55 computes another one.
//!
//! Two places in DataFusion compare values with a rule that is not SQL's,
//! and the differential tester (`crates/difftest`, issue 53) found wrong
//! answers in both:
//!
//! * **-0.0 and 0.0.** SQL (PostgreSQL, DuckDB, the IEEE comparison) says
//!   `-0.0 = 0.0`. DataFusion's `=` normalizes float operands before arrow's
//!   kernels, which order floats by IEEE totalOrder and tell the two zeros
//!   apart; but `CASE x WHEN y`, `NULLIF(x, y)`, aggregates with `DISTINCT`
//!   and a window's `PARTITION BY` compare or hash the raw values. So
//!   `NULLIF(-0.0, 0.0)` was -0.0 (and `x / NULLIF(d, 0.0)` an infinity where
//!   SQL gives NULL), `CASE -(c) WHEN c` took the ELSE for c = 0.0,
//!   `count(DISTINCT x)` over {-0.0, 0.0} was 2, and the two zeros made two
//!   window partitions.
//! * **`x IN (x)` inside a correlated subquery.** Its simplifier turns the
//!   one-element list into `x = x` in the same pass that would otherwise turn
//!   `x = x` into `x IS NOT NULL OR NULL`; the decorrelation of the subquery
//!   then drops every conjunct `e = e` as always true, which it is not when
//!   `e` is NULL: `NOT EXISTS (SELECT 1 FROM t b WHERE b.k = a.k AND a.c IN
//!   (a.c))` lost the outer rows whose `c` is NULL.
//!
//! [`SqlEquality`] is an analyzer rule that runs after type coercion (so
//! every operand's type is known) and rewrites the expressions into forms
//! DataFusion evaluates by SQL's rule: a `CASE` with an operand over floats
//! into a searched `CASE` of `=` comparisons; `NULLIF(a, b)` over floats into
//! `CASE WHEN a = b THEN NULL ELSE a END`; a float argument of a `DISTINCT`
//! aggregate, a float `PARTITION BY`, window `ORDER BY` or `ORDER BY` key and
//! the operands of a float `IN`
//! list that holds expressions into [`positive_zero`] of it (the
//! value with -0.0 made 0.0, as `GROUP BY` already groups them); a
//! one-element `x IN (y)` into `x = y` (`x <> y` for NOT IN), which the
//! simplifier then treats as SQL does. Names are kept: the rewritten
//! expressions print as the originals in column names.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::{Case, InList, ScalarFunction, WindowFunction};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{
    BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator, ScalarUDF, SortExpr,
};
use datafusion::optimizer::AnalyzerRule;

use super::transparent::{self, Nulls};

/// The analyzer rule (see the module docs).
#[derive(Debug, Default)]
pub struct SqlEquality;

impl AnalyzerRule for SqlEquality {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| {
            let mut schema = merge_schema(&plan.inputs());
            if let LogicalPlan::TableScan(scan) = &plan {
                schema.merge(scan.projected_schema.as_ref());
            }
            // Sort keys: -0.0 and 0.0 are one value, so a later key orders
            // them (arrow's sort puts -0.0 first, by IEEE totalOrder).
            let (plan, sorted) = match plan {
                LogicalPlan::Sort(mut sort) => {
                    let changed = positive_zero_keys(&mut sort.expr, &schema);
                    (LogicalPlan::Sort(sort), changed)
                }
                plan => (plan, false),
            };
            let names = NamePreserver::new(&plan);
            let t = plan.map_expressions(|e| {
                let name = names.save(&e);
                Ok(sql_equality(e, &schema)?.update_data(|e| name.restore(e)))
            })?;
            if t.transformed {
                t.map_data(|p| p.recompute_schema())
            } else if sorted {
                Ok(Transformed::yes(t.data))
            } else {
                Ok(t)
            }
        })
        .data()
    }

    fn name(&self) -> &str {
        "strata_sql_equality"
    }
}

/// `e` with its comparisons made SQL's (see the module docs); `schema` types
/// its columns. An expression whose type cannot be found is left as it is.
pub fn sql_equality(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    e.transform_up(|e| {
        Ok(match e {
            Expr::Case(case) => searched_case(case, schema),
            Expr::ScalarFunction(f) if f.func.name() == "nullif" && f.args.len() == 2 => {
                nullif_as_case(f, schema)?
            }
            Expr::AggregateFunction(mut f) if f.params.distinct => {
                let changed = positive_zeros(&mut f.params.args, schema);
                Transformed::new_transformed(Expr::AggregateFunction(f), changed)
            }
            Expr::WindowFunction(mut w) => {
                let WindowFunction { params, .. } = w.as_mut();
                let mut changed = positive_zeros(&mut params.partition_by, schema);
                changed |= positive_zero_keys(&mut params.order_by, schema);
                if params.distinct {
                    changed |= positive_zeros(&mut params.args, schema);
                }
                Transformed::new_transformed(Expr::WindowFunction(w), changed)
            }
            Expr::InList(InList {
                expr,
                mut list,
                negated,
            }) if list.len() == 1 => {
                let op = if negated {
                    Operator::NotEq
                } else {
                    Operator::Eq
                };
                let item = list.pop().expect("one item");
                Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(expr, op, Box::new(item))))
            }
            Expr::InList(mut l)
                if is_float(&l.expr, schema)
                    && l.list.iter().any(|i| !matches!(i, Expr::Literal(..))) =>
            {
                // A list of constants is a set DataFusion normalizes; one
                // with expressions is compared item by item, bit for bit.
                let mut changed = positive_zeros(std::slice::from_mut(l.expr.as_mut()), schema);
                changed |= positive_zeros(&mut l.list, schema);
                Transformed::new_transformed(Expr::InList(l), changed)
            }
            other => Transformed::no(other),
        })
    })
}

/// A DOUBLE or REAL (strata has no half floats).
fn is_float(e: &Expr, schema: &DFSchema) -> bool {
    e.get_type(schema)
        .is_ok_and(|t| matches!(t, DataType::Float64 | DataType::Float32))
}

/// `CASE x WHEN a THEN … END` over floats as `CASE WHEN x = a THEN … END`
/// (a volatile operand stays as it is: it must be computed once).
fn searched_case(case: Case, schema: &DFSchema) -> Transformed<Expr> {
    let rewrite = case
        .expr
        .as_deref()
        .is_some_and(|x| is_float(x, schema) && !x.is_volatile());
    if !rewrite {
        return Transformed::no(Expr::Case(case));
    }
    let Case {
        expr,
        when_then_expr,
        else_expr,
    } = case;
    let operand = expr.expect("checked above");
    let when_then_expr = when_then_expr
        .into_iter()
        .map(|(when, then)| {
            let eq = Expr::BinaryExpr(BinaryExpr::new(operand.clone(), Operator::Eq, when));
            (Box::new(eq), then)
        })
        .collect();
    Transformed::yes(Expr::Case(Case {
        expr: None,
        when_then_expr,
        else_expr,
    }))
}

/// `NULLIF(a, b)` over floats as `CASE WHEN a = b THEN NULL ELSE a END`.
fn nullif_as_case(f: ScalarFunction, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let [a, b] = &f.args[..] else {
        return Ok(Transformed::no(Expr::ScalarFunction(f)));
    };
    if !is_float(a, schema) || a.is_volatile() {
        return Ok(Transformed::no(Expr::ScalarFunction(f)));
    }
    let null = ScalarValue::try_from(&a.get_type(schema)?)?;
    let eq = Expr::BinaryExpr(BinaryExpr::new(
        Box::new(a.clone()),
        Operator::Eq,
        Box::new(b.clone()),
    ));
    Ok(Transformed::yes(Expr::Case(Case {
        expr: None,
        when_then_expr: vec![(Box::new(eq), Box::new(Expr::Literal(null, None)))],
        else_expr: Some(Box::new(a.clone())),
    })))
}

/// Each float expression of `exprs` wrapped in [`positive_zero`]; whether
/// any was.
fn positive_zeros(exprs: &mut [Expr], schema: &DFSchema) -> bool {
    let mut changed = false;
    for e in exprs.iter_mut() {
        if is_float(e, schema) && !is_positive_zero(e) {
            let inner = std::mem::replace(e, Expr::Literal(ScalarValue::Null, None));
            *e = Expr::ScalarFunction(ScalarFunction::new_udf(POSITIVE_ZERO.clone(), vec![inner]));
            changed = true;
        }
    }
    changed
}

/// [`positive_zeros`] of sort keys.
fn positive_zero_keys(keys: &mut [SortExpr], schema: &DFSchema) -> bool {
    let mut changed = false;
    for k in keys.iter_mut() {
        changed |= positive_zeros(std::slice::from_mut(&mut k.expr), schema);
    }
    changed
}

fn is_positive_zero(e: &Expr) -> bool {
    matches!(e, Expr::ScalarFunction(f) if f.func.name() == NAME)
}

const NAME: &str = "strata_positive_zero";

static POSITIVE_ZERO: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| {
    // Adding +0.0 turns -0.0 into 0.0 (IEEE round to nearest) and keeps
    // every other value, NaN and the infinities included.
    Arc::new(transparent::udf(NAME, Nulls::AsArgument, |v| {
        transparent::map_floats(v, |v| v + 0.0, |v| v + 0.0)
    }))
});

/// The function that makes -0.0 into 0.0 and keeps every other value; it
/// prints as its argument, so names do not change.
pub fn positive_zero() -> Arc<ScalarUDF> {
    POSITIVE_ZERO.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, Float64Array};
    use datafusion::arrow::datatypes::Field;
    use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs};

    #[test]
    fn negative_zero_becomes_zero_and_the_rest_stays() {
        let a: Arc<dyn Array> = Arc::new(Float64Array::from(vec![
            Some(-0.0),
            Some(0.0),
            Some(-1.5),
            Some(f64::NAN),
            None,
        ]));
        let out = positive_zero()
            .invoke_with_args(ScalarFunctionArgs {
                number_rows: 5,
                arg_fields: vec![Arc::new(Field::new("x", DataType::Float64, true))],
                return_field: Arc::new(Field::new("r", DataType::Float64, true)),
                config_options: Arc::new(ConfigOptions::default()),
                args: vec![ColumnarValue::Array(a)],
            })
            .unwrap();
        let ColumnarValue::Array(out) = out else {
            panic!("an array in, an array out")
        };
        let out = out.as_any().downcast_ref::<Float64Array>().unwrap();
        assert!(out.value(0).is_sign_positive() && out.value(0) == 0.0);
        assert!(out.value(1).is_sign_positive());
        assert_eq!(out.value(2), -1.5);
        assert!(out.value(3).is_nan());
        assert!(out.is_null(4));
    }
}
