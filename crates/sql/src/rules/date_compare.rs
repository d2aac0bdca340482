//! A DATE (or TIMESTAMP) compared with a number is a type error.
//!
//! DataFusion 55 coerces `o_orderdate > 19980801` by casting the integer to
//! a DATE — 19,980,801 days after 1970-01-01, a date in the year 56,675 — so
//! the query answered no rows without a word. PostgreSQL refuses it
//! ("operator does not exist: date > integer", SQLSTATE 42883) and so does
//! DuckDB. [`DateCompare`], an analyzer rule that runs *before* type
//! coercion (after it the integer is already a DATE and cannot be told from
//! one), refuses a comparison (`= <> < <= > >=`, `IS [NOT] DISTINCT FROM`),
//! `BETWEEN`, `IN` list, `IN` subquery or join key that sets a DATE or
//! TIMESTAMP against a number, with a hint to write a date literal (for an
//! integer that reads as `yyyymmdd`, that very date). Date arithmetic
//! (`d + 1`) and explicit CASTs are not comparisons and are left alone.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::expr::{Between, InList, InSubquery};
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule (see the module docs). It changes nothing; it refuses.
#[derive(Debug, Default)]
pub struct DateCompare;

impl AnalyzerRule for DateCompare {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.apply_with_subqueries(|node| {
            let mut schema = merge_schema(&node.inputs());
            if let LogicalPlan::TableScan(scan) = node {
                schema.merge(scan.projected_schema.as_ref());
            }
            if let LogicalPlan::Join(join) = node {
                for (l, r) in &join.on {
                    pair(l, Operator::Eq, r, &schema)?;
                }
            }
            node.apply_expressions(|e| {
                check(e, &schema)?;
                Ok(TreeNodeRecursion::Continue)
            })
        })?;
        Ok(plan)
    }

    fn name(&self) -> &str {
        "strata_date_compare"
    }
}

/// Refuses the comparisons of a DATE or TIMESTAMP with a number in `e`.
pub fn check(e: &Expr, schema: &DFSchema) -> Result<()> {
    e.apply(|e| {
        match e {
            Expr::BinaryExpr(BinaryExpr { left, op, right })
                if crate::rules::expr_rule::is_comparison(*op) =>
            {
                pair(left, *op, right, schema)?;
            }
            Expr::Between(Between {
                expr, low, high, ..
            }) => {
                pair(expr, Operator::GtEq, low, schema)?;
                pair(expr, Operator::LtEq, high, schema)?;
            }
            Expr::InList(InList { expr, list, .. }) => {
                for item in list {
                    pair(expr, Operator::Eq, item, schema)?;
                }
            }
            Expr::InSubquery(InSubquery { expr, subquery, .. }) => {
                if let (Ok(left), Some(field)) = (
                    expr.get_type(schema),
                    subquery.subquery.schema().fields().first(),
                ) {
                    refuse(&left, Operator::Eq, field.data_type(), None)?;
                }
            }
            _ => {}
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .map(|_| ())
}

/// Refuses `left op right` when one side is a date or timestamp and the
/// other a number. A side whose type cannot be computed is left to the
/// planner, which reports it.
fn pair(left: &Expr, op: Operator, right: &Expr, schema: &DFSchema) -> Result<()> {
    let (Ok(l), Ok(r)) = (left.get_type(schema), right.get_type(schema)) else {
        return Ok(());
    };
    let number = if is_temporal(&l) { right } else { left };
    refuse(&l, op, &r, Some(number))
}

fn refuse(l: &DataType, op: Operator, r: &DataType, number: Option<&Expr>) -> Result<()> {
    let wrong = (is_temporal(l) && r.is_numeric()) || (l.is_numeric() && is_temporal(r));
    if !wrong {
        return Ok(());
    }
    let temporal = if is_temporal(l) { l } else { r };
    let literal = match temporal {
        DataType::Date32 | DataType::Date64 => format!("DATE '{}'", date_text(number)),
        _ => format!("TIMESTAMP '{} 00:00:00'", date_text(number)),
    };
    // SQL's spelling of `!=`.
    let op = match op {
        Operator::NotEq => "<>".to_string(),
        op => op.to_string(),
    };
    Err(DataFusionError::Plan(format!(
        "operator does not exist: {} {op} {} (SQLSTATE 42883): a {} compares with a {}, \
         not a number; write the value as a literal, e.g. {literal}",
        sql_name(l),
        sql_name(r),
        sql_name(temporal),
        sql_name(temporal),
    )))
}

fn is_temporal(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(..)
    )
}

/// The date an integer literal `yyyymmdd` stands for, else a placeholder.
fn date_text(number: Option<&Expr>) -> String {
    let v = match number {
        Some(Expr::Literal(ScalarValue::Int64(Some(v)), _)) => *v,
        Some(Expr::Literal(ScalarValue::Int32(Some(v)), _)) => *v as i64,
        _ => return "YYYY-MM-DD".into(),
    };
    let (y, m, d) = (v / 10_000, v / 100 % 100, v % 100);
    if (1000..=9999).contains(&y) && (1..=12).contains(&m) && (1..=31).contains(&d) {
        format!("{y:04}-{m:02}-{d:02}")
    } else {
        "YYYY-MM-DD".into()
    }
}

/// A type as SQL names it (PostgreSQL's names, as in its message).
fn sql_name(t: &DataType) -> String {
    match t {
        DataType::Int8 => "tinyint".into(),
        DataType::Int16 => "smallint".into(),
        DataType::Int32 => "integer".into(),
        DataType::Int64 => "bigint".into(),
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            format!("unsigned {}", t.to_string().to_ascii_lowercase())
        }
        DataType::Float16 | DataType::Float32 => "real".into(),
        DataType::Float64 => "double".into(),
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => format!("decimal({p},{s})"),
        DataType::Date32 | DataType::Date64 => "date".into(),
        DataType::Timestamp(..) => "timestamp".into(),
        t => t.to_string().to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_integer_that_reads_as_a_date_is_named_in_the_hint() {
        let lit = Expr::Literal(ScalarValue::Int64(Some(19980801)), None);
        assert_eq!(date_text(Some(&lit)), "1998-08-01");
        let lit = Expr::Literal(ScalarValue::Int64(Some(42)), None);
        assert_eq!(date_text(Some(&lit)), "YYYY-MM-DD");
        let e = refuse(&DataType::Date32, Operator::Gt, &DataType::Int64, None).unwrap_err();
        assert!(
            e.to_string()
                .contains("operator does not exist: date > bigint"),
            "{e}"
        );
        assert!(refuse(&DataType::Date32, Operator::Gt, &DataType::Date32, None).is_ok());
        assert!(refuse(&DataType::Int32, Operator::Eq, &DataType::Int64, None).is_ok());
    }
}
