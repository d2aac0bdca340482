//! A CAST that can change a value keeps its place in a comparison.
//!
//! DataFusion 55's simplifier rewrites `CAST(c AS t) < literal` into
//! `c < CAST(literal AS type of c)` when the literal fits `c`'s type
//! (`unwrap_cast_in_comparison`). That is sound only when the CAST keeps
//! every value of `c` as it is. For a CAST that rounds or overflows it is
//! not: with `c` a DECIMAL(10,3) holding -0.040, `CAST(c AS DECIMAL(15,1))`
//! is 0.0 and `< 0` is false, but the rewritten `c < 0.000` is true, so a
//! row that is not in the answer came into it (found by the differential
//! tester, crates/difftest); `CAST(k AS DECIMAL(9,3)) <> 264` for an INT `k`
//! past 999999 answered where the CAST must fail, as in PostgreSQL and DuckDB.
//!
//! [`LossyCast`] is an analyzer rule that puts such a CAST (between integers
//! and decimals, to a type with fewer integer digits or a smaller scale)
//! inside [`kept`], a function that returns its argument and prints as it:
//! the simplifier does not see a CAST there to unwrap, and the comparison
//! computes the CAST row by row. Its value counts as nullable, so `IS NULL`
//! of it is computed too (DataFusion answered `CAST(c AS DECIMAL(8,6)) IS
//! NULL` of a NOT NULL `c` with false, where the CAST fails for 49999.9999). Widening CASTs (INT to BIGINT, a DECIMAL to
//! one with room for every value), which the rewrite serves well, are left
//! as they are.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, ScalarUDF};
use datafusion::optimizer::AnalyzerRule;

use super::transparent::{self, Nulls};

/// The analyzer rule (see the module docs).
#[derive(Debug, Default)]
pub struct LossyCast;

impl AnalyzerRule for LossyCast {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::rules::expr_rule::rewrite_expressions(plan, kept_casts)
    }

    fn name(&self) -> &str {
        "strata_lossy_cast"
    }
}

/// `e` with each lossy CAST inside [`kept`].
pub fn kept_casts(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    e.transform_up(|e| match e {
        Expr::Cast(c)
            if c.expr
                .get_type(schema)
                .is_ok_and(|from| lossy(&from, c.field.data_type())) =>
        {
            Ok(Transformed::yes(Expr::ScalarFunction(
                ScalarFunction::new_udf(kept(), vec![Expr::Cast(c)]),
            )))
        }
        e => Ok(Transformed::no(e)),
    })
}

/// Integer digits and scale of an integer or decimal type.
fn digits(t: &DataType) -> Option<(i32, i32)> {
    Some(match t {
        DataType::Int8 => (3, 0),
        DataType::Int16 => (5, 0),
        DataType::Int32 => (10, 0),
        DataType::Int64 => (19, 0),
        DataType::Decimal128(p, s) => (*p as i32 - *s as i32, *s as i32),
        _ => return None,
    })
}

/// Whether a CAST from `from` to `to` (both integers or decimals) can
/// change a value: fewer integer digits (an overflow; for an integer
/// target, any target that is not wider), or a smaller scale (rounding).
fn lossy(from: &DataType, to: &DataType) -> bool {
    let (Some((fi, fs)), Some((ti, ts))) = (digits(from), digits(to)) else {
        return false;
    };
    let integer_target = !matches!(to, DataType::Decimal128(..));
    // An integer type holds fewer values than its digits say (INT's 10
    // digits stop at 2147483647), so only a wider integer holds them all.
    let room = if integer_target { ti > fi } else { ti >= fi };
    !(room && ts >= fs)
}

const NAME: &str = "strata_kept";

// Nullable: otherwise `kept(CAST(c AS …)) IS NULL` of a NOT NULL `c` is
// simplified to false without the CAST, which may fail.
static KEPT: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| {
    Arc::new(transparent::udf(
        NAME,
        Nulls::Possible,
        transparent::identity,
    ))
});

/// The function that returns its argument as it is, and prints as it.
pub fn kept() -> Arc<ScalarUDF> {
    KEPT.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widening_casts_are_not_lossy_and_the_rest_are() {
        use DataType::*;
        assert!(!lossy(&Int32, &Int64));
        assert!(!lossy(&Int32, &Decimal128(10, 0)));
        assert!(!lossy(&Int32, &Decimal128(12, 2)));
        assert!(!lossy(&Decimal128(10, 3), &Decimal128(12, 3)));
        assert!(!lossy(&Decimal128(9, 0), &Int32));
        assert!(lossy(&Int64, &Int32));
        assert!(lossy(&Int32, &Decimal128(9, 3)));
        assert!(lossy(&Decimal128(10, 3), &Decimal128(15, 1)));
        assert!(lossy(&Decimal128(10, 0), &Int32));
        assert!(lossy(&Decimal128(5, 2), &Int64));
        assert!(!lossy(&Float64, &Int32), "not a CAST the rewrite takes");
    }
}
