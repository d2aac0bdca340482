//! A number cast to an integer is rounded, not truncated.
//!
//! DataFusion 55 casts a DECIMAL or a DOUBLE to an integer by dropping the
//! fraction: `CAST(2.5 AS INT)` was 2, `CAST(-2.7 AS INT)` -2, and
//! `UPDATE t SET v = v + 1.5` stored 21 for v = 20 (found by the `.slt`
//! tests of issue 55). PostgreSQL (and DuckDB) round: a numeric half away
//! from zero (3, -3, 22), a float to the nearest even on a tie (`rint`:
//! 2.5 is 2, 2.7 is 3). [`RoundedIntegerCast`], an analyzer rule after type
//! coercion, makes every CAST of a decimal to an integer a CAST of its
//! `round` (DataFusion's decimal `round` is half away from zero), and every
//! CAST of a float to an integer a CAST of [`round_ties_even`] of it. The
//! CAST still refuses a value past the integer's range.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, Decimal128Array, Float32Array, Float64Array};
use datafusion::arrow::compute::kernels::arity::unary;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr::{Cast, ScalarFunction};
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, ScalarUDF};
use datafusion::optimizer::AnalyzerRule;

use super::transparent::{self, Nulls};

/// The analyzer rule (see the module docs).
#[derive(Debug, Default)]
pub struct RoundedIntegerCast;

impl AnalyzerRule for RoundedIntegerCast {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::rules::expr_rule::rewrite_expressions(plan, rounded_casts)
    }

    fn name(&self) -> &str {
        "strata_rounded_integer_cast"
    }
}

/// `e` with its CASTs of decimals and floats to integers rounding first.
pub fn rounded_casts(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    e.transform_up(|e| {
        let Expr::Cast(Cast { expr, field }) = e else {
            return Ok(Transformed::no(e));
        };
        if !field.data_type().is_integer() {
            return Ok(Transformed::no(Expr::Cast(Cast { expr, field })));
        }
        let rounded = match expr.get_type(schema) {
            Ok(DataType::Decimal128(_, s)) if s > 0 => {
                datafusion::functions::math::expr_fn::round(vec![*expr])
            }
            Ok(DataType::Float64 | DataType::Float32) => Expr::ScalarFunction(
                ScalarFunction::new_udf(ROUND_TIES_EVEN.clone(), vec![*expr]),
            ),
            _ => return Ok(Transformed::no(Expr::Cast(Cast { expr, field }))),
        };
        Ok(Transformed::yes(Expr::Cast(Cast {
            expr: Box::new(rounded),
            field,
        })))
    })
}

const NAME: &str = "strata_round_ties_even";

static ROUND_TIES_EVEN: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| {
    Arc::new(transparent::udf(NAME, Nulls::AsArgument, |v| {
        transparent::map_floats(v, f64::round_ties_even, f32::round_ties_even)
    }))
});

/// The function that rounds a float to the nearest integer, a tie to the
/// even one (PostgreSQL's `rint`); it prints as its argument.
pub fn round_ties_even() -> Arc<ScalarUDF> {
    ROUND_TIES_EVEN.clone()
}

/// `value` rounded as a CAST to the integer type `want` rounds it (see the
/// module docs), for the writers that cast arrays themselves (an UPDATE's
/// new values); any other value or target is returned as it is.
pub fn rounded_for(value: ArrayRef, want: &DataType) -> ArrayRef {
    if !want.is_integer() {
        return value;
    }
    let any = value.as_any();
    if let Some(a) = any.downcast_ref::<Decimal128Array>() {
        let (p, s) = (a.precision(), a.scale());
        if s <= 0 {
            return value;
        }
        let unit = 10i128.pow(s as u32);
        let rounded: Decimal128Array = unary(a, |v: i128| {
            let (q, r) = (v / unit, v % unit);
            // Half away from zero, as PostgreSQL rounds a numeric.
            if r.abs() * 2 >= unit {
                q + v.signum()
            } else {
                q
            }
        });
        match rounded.with_precision_and_scale(p, 0) {
            Ok(r) => Arc::new(r),
            Err(_) => value,
        }
    } else if let Some(a) = any.downcast_ref::<Float64Array>() {
        Arc::new(unary::<_, _, _>(a, f64::round_ties_even) as Float64Array)
    } else if let Some(a) = any.downcast_ref::<Float32Array>() {
        Arc::new(unary::<_, _, _>(a, f32::round_ties_even) as Float32Array)
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int32Array;
    use datafusion::arrow::compute::cast;

    #[test]
    fn decimals_round_half_away_and_floats_to_even() {
        let d: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(25), Some(-25), Some(24), Some(-26), None])
                .with_precision_and_scale(5, 1)
                .unwrap(),
        );
        let r = cast(&rounded_for(d, &DataType::Int32), &DataType::Int32).unwrap();
        let r = r.as_any().downcast_ref::<Int32Array>().unwrap();
        assert_eq!(
            r.iter().collect::<Vec<_>>(),
            [Some(3), Some(-3), Some(2), Some(-3), None]
        );
        let f: ArrayRef = Arc::new(Float64Array::from(vec![2.5, 3.5, 2.7, -2.5]));
        let r = cast(&rounded_for(f, &DataType::Int64), &DataType::Int32).unwrap();
        let r = r.as_any().downcast_ref::<Int32Array>().unwrap();
        assert_eq!(r.values().to_vec(), [2, 4, 3, -2]);
        // Not to an integer: as it is.
        let f: ArrayRef = Arc::new(Float64Array::from(vec![2.5]));
        assert_eq!(
            rounded_for(f.clone(), &DataType::Float32).as_ref(),
            f.as_ref()
        );
    }
}
