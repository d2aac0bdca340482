//! Which WHERE conjuncts a strata scan takes over from DataFusion, and how.
//!
//! A conjunct of the form `column op literal` (either side; `=`, `<>`, `<`,
//! `<=`, `>`, `>=`, and `BETWEEN`, which DataFusion usually hands over already
//! split into two comparisons) becomes a strata [`Comparison`]: the access paths
//! evaluate it on the stored bytes, and those on an indexed column give the key
//! range the index is scanned over. The literal must be exactly representable
//! in the column's type (`l_discount >= 0.055` on a DECIMAL(15,2) column is not),
//! otherwise the comparison would change meaning.
//!
//! Any other deterministic conjunct without a subquery (`l_shipmode IN (...)`,
//! `p_type LIKE '%BRASS'`, `a + b > 3`) is a *residual*: the scan evaluates it
//! on the Arrow batch it produces, with DataFusion's own expression evaluator.
//! Taking residuals into the scan (reporting them `Exact`) keeps a Filter
//! operator out from between a Sort and the scan, so an `ORDER BY` on the index
//! key can be satisfied by the ordered Smooth Scan.

use datafusion::arrow::datatypes::DataType as ArrowType;
use datafusion::common::Column;
use datafusion::common::Result;
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::logical_expr::{Between, BinaryExpr, Cast, Expr, Operator};
use strata_access::predicate::{CmpOp, Comparison};
use strata_storage::row::{DataType, Schema, Value};

/// How the scan handles one conjunct.
#[derive(Debug, Clone, PartialEq)]
pub enum Pushed {
    /// Evaluated by the access path (on stored bytes; may narrow an index range).
    Strata(Vec<Comparison>),
    /// Evaluated by the scan on its Arrow output.
    Residual,
    /// Left to DataFusion (subqueries, volatile functions, other tables' columns).
    No,
}

/// Classifies `expr` for a scan of a table with `schema`.
pub fn classify(expr: &Expr, schema: &Schema) -> Pushed {
    if let Some(c) = comparisons(expr, schema) {
        return Pushed::Strata(c);
    }
    let has_subquery = expr
        .exists(|e| {
            Ok(matches!(
                e,
                Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_)
            ))
        })
        .unwrap_or(true);
    let foreign = expr
        .column_refs()
        .iter()
        .any(|c| schema.index_of(&c.name).is_none());
    if has_subquery || foreign || expr.is_volatile() {
        Pushed::No
    } else {
        Pushed::Residual
    }
}

/// [`classify`] for a scan of `table`: a comparison on a column of its side
/// table (`strata split`) is a residual, evaluated once the scan has read the
/// side row; the access paths compare the table's own rows' bytes only.
pub fn classify_for(expr: &Expr, table: &strata_storage::Table) -> Pushed {
    match classify(expr, table.schema()) {
        Pushed::Strata(c) if c.iter().any(|c| table.side_columns().contains(&c.column)) => {
            Pushed::Residual
        }
        p => p,
    }
}

fn comparisons(expr: &Expr, schema: &Schema) -> Option<Vec<Comparison>> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let op = cmp_op(*op)?;
            let (column, lit, op) = match (left.as_ref(), right.as_ref()) {
                (c, Expr::Literal(v, _)) => (stored_column(c, schema)?, v, op),
                (Expr::Literal(v, _), c) => (stored_column(c, schema)?, v, flip(op)),
                _ => return None,
            };
            let value = literal(lit, &schema.columns[column].ty)?;
            Some(vec![Comparison { column, op, value }])
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) => {
            let column = stored_column(expr, schema)?;
            let ty = &schema.columns[column].ty;
            let (Expr::Literal(lo, _), Expr::Literal(hi, _)) = (low.as_ref(), high.as_ref()) else {
                return None;
            };
            Some(vec![
                Comparison {
                    column,
                    op: CmpOp::Ge,
                    value: literal(lo, ty)?,
                },
                Comparison {
                    column,
                    op: CmpOp::Le,
                    value: literal(hi, ty)?,
                },
            ])
        }
        _ => None,
    }
}

/// The table column `e` is: the column itself, or an INT column widened to
/// BIGINT, as type coercion makes `int_col = 5` (a BIGINT literal) before
/// DataFusion's optimizer unwraps it again. The widening is exact and keeps
/// order, so comparing the stored INT with the literal as an INT (when it is
/// one; [`literal`] refuses one out of range) is the same comparison.
fn stored_column(e: &Expr, schema: &Schema) -> Option<usize> {
    match e {
        Expr::Column(c) => schema.index_of(&c.name),
        Expr::Cast(Cast { expr, field }) if *field.data_type() == ArrowType::Int64 => {
            let Expr::Column(c) = expr.as_ref() else {
                return None;
            };
            let column = schema.index_of(&c.name)?;
            (schema.columns[column].ty == DataType::Int32).then_some(column)
        }
        _ => None,
    }
}

fn cmp_op(op: Operator) -> Option<CmpOp> {
    Some(match op {
        Operator::Eq => CmpOp::Eq,
        Operator::NotEq => CmpOp::Ne,
        Operator::Lt => CmpOp::Lt,
        Operator::LtEq => CmpOp::Le,
        Operator::Gt => CmpOp::Gt,
        Operator::GtEq => CmpOp::Ge,
        _ => return None,
    })
}

/// `lit op col` is `col flip(op) lit`.
pub(crate) fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        other => other,
    }
}

/// The literal as a value of the column's type, if it is exactly one.
pub fn literal(v: &ScalarValue, ty: &DataType) -> Option<Value> {
    let int = || -> Option<i128> {
        Some(match v {
            ScalarValue::Int8(Some(x)) => *x as i128,
            ScalarValue::Int16(Some(x)) => *x as i128,
            ScalarValue::Int32(Some(x)) => *x as i128,
            ScalarValue::Int64(Some(x)) => *x as i128,
            ScalarValue::UInt8(Some(x)) => *x as i128,
            ScalarValue::UInt16(Some(x)) => *x as i128,
            ScalarValue::UInt32(Some(x)) => *x as i128,
            ScalarValue::UInt64(Some(x)) => *x as i128,
            _ => return None,
        })
    };
    match *ty {
        DataType::Int32 => i32::try_from(int()?).ok().map(Value::Int32),
        DataType::Int64 => i64::try_from(int()?).ok().map(Value::Int64),
        DataType::Float64 => match v {
            ScalarValue::Float64(Some(x)) => Some(Value::Float64(*x)),
            ScalarValue::Float32(Some(x)) => Some(Value::Float64(*x as f64)),
            _ => None,
        },
        DataType::Decimal { precision, scale } => {
            let (unscaled, from_scale) = match v {
                ScalarValue::Decimal128(Some(x), _, s) => (*x, *s as i32),
                _ => (int()?, 0),
            };
            let scaled = rescale(unscaled, from_scale, scale as i32)?;
            let limit = 10i128.pow(precision as u32);
            (scaled.abs() < limit)
                .then(|| i64::try_from(scaled).ok().map(Value::Decimal))
                .flatten()
        }
        DataType::Date => match v {
            ScalarValue::Date32(Some(d)) => Some(Value::Date(*d)),
            _ => None,
        },
        DataType::Timestamp => match v {
            ScalarValue::TimestampMicrosecond(Some(t), None) => Some(Value::Timestamp(*t)),
            _ => None,
        },
        DataType::Char { .. } | DataType::Varchar { .. } => match v {
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)) => {
                // strata compares CHAR without its padding; a literal with
                // trailing spaces would compare differently, so leave it to
                // DataFusion.
                (!s.ends_with(' ')).then(|| Value::Str(s.clone()))
            }
            _ => None,
        },
        DataType::Bool => match v {
            ScalarValue::Boolean(Some(b)) => Some(Value::Bool(*b)),
            _ => None,
        },
    }
}

/// `x · 10^-from` as an integer at scale `to`, if exact.
fn rescale(x: i128, from: i32, to: i32) -> Option<i128> {
    if to >= from {
        x.checked_mul(10i128.checked_pow((to - from) as u32)?)
    } else {
        let d = 10i128.checked_pow((from - to) as u32)?;
        (x % d == 0).then_some(x / d)
    }
}

/// `expr` with table qualifiers removed: a residual as the scan evaluates
/// it (the scan's schema is unqualified).
pub(crate) fn unqualified(expr: &Expr) -> Result<Expr> {
    expr.clone()
        .transform(|e| {
            Ok(match e {
                Expr::Column(c) if c.relation.is_some() => {
                    Transformed::yes(Expr::Column(Column::new_unqualified(c.name)))
                }
                e => Transformed::no(e),
            })
        })
        .map(|t| t.data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{cast, col, lit};

    fn schema() -> Schema {
        Schema::parse("a INT, d DECIMAL(15,2), s CHAR(10), t DATE, f DOUBLE NULL").unwrap()
    }

    #[test]
    fn comparisons_on_columns_become_strata_conjuncts() {
        let s = schema();
        assert_eq!(
            classify(&col("a").gt_eq(lit(5i64)), &s),
            Pushed::Strata(vec![Comparison {
                column: 0,
                op: CmpOp::Ge,
                value: Value::Int32(5)
            }])
        );
        // literal on the left flips the operator
        assert_eq!(
            classify(&lit(5i32).lt(col("a")), &s),
            Pushed::Strata(vec![Comparison {
                column: 0,
                op: CmpOp::Gt,
                value: Value::Int32(5)
            }])
        );
        let between = col("d").between(
            lit(ScalarValue::Decimal128(Some(5), 3, 2)),
            lit(ScalarValue::Decimal128(Some(70), 4, 3)),
        );
        assert_eq!(
            classify(&between, &s),
            Pushed::Strata(vec![
                Comparison {
                    column: 1,
                    op: CmpOp::Ge,
                    value: Value::Decimal(5)
                },
                Comparison {
                    column: 1,
                    op: CmpOp::Le,
                    value: Value::Decimal(7)
                }
            ])
        );
        assert_eq!(
            classify(&col("t").lt(lit(ScalarValue::Date32(Some(9000)))), &s),
            Pushed::Strata(vec![Comparison {
                column: 3,
                op: CmpOp::Lt,
                value: Value::Date(9000)
            }])
        );
        // an INT column widened to BIGINT by type coercion
        let widened = || cast(col("a"), ArrowType::Int64);
        assert_eq!(
            classify(&widened().eq(lit(7i64)), &s),
            Pushed::Strata(vec![Comparison {
                column: 0,
                op: CmpOp::Eq,
                value: Value::Int32(7)
            }])
        );
        assert_eq!(
            classify(&lit(7i64).lt_eq(widened()), &s),
            Pushed::Strata(vec![Comparison {
                column: 0,
                op: CmpOp::Ge,
                value: Value::Int32(7)
            }])
        );
        // a literal no INT is stays a residual, and so does a narrowing cast
        assert_eq!(
            classify(&widened().eq(lit(1i64 << 40)), &s),
            Pushed::Residual
        );
        assert_eq!(
            classify(&cast(col("a"), ArrowType::Int16).eq(lit(7i16)), &s),
            Pushed::Residual
        );
    }

    #[test]
    fn inexact_literals_and_other_expressions_are_residuals() {
        let s = schema();
        // 0.055 is not a DECIMAL(15,2) value
        let e = col("d").gt(lit(ScalarValue::Decimal128(Some(55), 4, 3)));
        assert_eq!(classify(&e, &s), Pushed::Residual);
        // out of INT32's range
        assert_eq!(
            classify(&col("a").lt(lit(1i64 << 40)), &s),
            Pushed::Residual
        );
        assert_eq!(classify(&col("s").like(lit("%x")), &s), Pushed::Residual);
        assert_eq!(
            classify(&col("s").eq(lit("padded  ")), &s),
            Pushed::Residual
        );
        assert_eq!(
            classify(&(col("a") + lit(1)).gt(lit(3)), &s),
            Pushed::Residual
        );
        assert_eq!(
            classify(&col("a").not_between(lit(1), lit(3)), &s),
            Pushed::Residual
        );
        // a column of another table
        assert_eq!(classify(&col("zz").eq(lit(1)), &s), Pushed::No);
    }
}
