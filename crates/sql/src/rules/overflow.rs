//! Integer arithmetic that raises an out-of-range error instead of wrapping.
//!
//! DataFusion 55 evaluates `+`, `-`, `*` and unary minus on integers with
//! wrapping kernels: its `BinaryExpr` checks overflow only when
//! `fail_on_overflow` is set, which exists on the physical expression alone
//! and which its planner never sets. So `9223372036854775807 + 1` gave
//! `-9223372036854775808`, and `UPDATE t SET b = b * 9223372036854775807`
//! stored what the wrap left. SQL says otherwise: PostgreSQL, DuckDB and
//! SQLite raise "bigint out of range" (SQLSTATE 22003), and so does strata.
//!
//! [`CheckedArithmetic`] is an analyzer rule that runs after DataFusion's
//! type coercion, when every operand's type is known: it replaces each `+`,
//! `-`, `*` whose operands are integers of one type, and each negation of a
//! signed integer, by a checked function of the same type. The functions
//! print as the operator they stand for, so column names and plans' logical
//! text do not change; constant expressions are still folded while planning
//! (and an overflowing one fails there). Division and remainder already
//! fail on overflow and on zero in DataFusion. Decimals, floats, dates and
//! intervals keep DataFusion's arithmetic. `sum` over integers is the other
//! place that wrapped; [`crate::rules::wide_sum`] sums them as DECIMAL(38,0).
//!
//! The error is [`SqlError::Data`] (exit code 3, like a value strata's own
//! row check refuses), naming the type and the operation.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use super::operator_fn::{Arith, Operand, all_scalar, operator_text, replace_arith};
use crate::error::SqlError;

/// The analyzer rule (see the module docs).
#[derive(Debug, Default)]
pub struct CheckedArithmetic;

impl AnalyzerRule for CheckedArithmetic {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::rules::expr_rule::rewrite_expressions(plan, checked)
    }

    fn name(&self) -> &str {
        "strata_checked_arithmetic"
    }
}

/// `e` with its integer `+ - *` and negations checked; `schema` types its
/// columns. An operand whose type cannot be found is left as it is (the
/// planner reports that itself).
pub fn checked(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    replace_arith(
        e,
        |op, l, r| same_integer(l, r, schema).then(|| Op::Bin(op).udf()),
        |e| match e {
            Expr::Negative(inner) if signed_integer(&inner, schema) => Transformed::yes(
                Expr::ScalarFunction(ScalarFunction::new_udf(Op::Neg.udf(), vec![*inner])),
            ),
            other => Transformed::no(other),
        },
    )
}

fn same_integer(l: &Expr, r: &Expr, schema: &DFSchema) -> bool {
    match (type_of(l, schema), type_of(r, schema)) {
        (Ok(a), Ok(b)) => a == b && a.is_integer(),
        _ => false,
    }
}

fn signed_integer(e: &Expr, schema: &DFSchema) -> bool {
    type_of(e, schema).is_ok_and(|t| t.is_signed_integer())
}

/// The type of `e`: a checked operation's type is its first operand's, so
/// the walk goes down first operands to the first expression that is not
/// one. DataFusion's `get_type` of a function call builds the call's name
/// at every level below it; asked of each node of a rewritten chain of `n`
/// additions it took time cubic in `n` (two thousand terms: a quarter of an
/// hour).
fn type_of(mut e: &Expr, schema: &DFSchema) -> Result<DataType> {
    while let Expr::ScalarFunction(f) = e {
        let udf: &dyn std::any::Any = f.func.inner().as_ref();
        match (udf.is::<CheckedOp>(), f.args.first()) {
            (true, Some(first)) => e = first,
            _ => break,
        }
    }
    e.get_type(schema)
}

/// A checked integer operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Bin(Arith),
    Neg,
}

static ADD: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| Op::Bin(Arith::Add).make());
static SUB: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| Op::Bin(Arith::Sub).make());
static MUL: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| Op::Bin(Arith::Mul).make());
static NEG: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| Op::Neg.make());

impl Op {
    fn udf(self) -> Arc<ScalarUDF> {
        match self {
            Op::Bin(Arith::Add) => ADD.clone(),
            Op::Bin(Arith::Sub) => SUB.clone(),
            Op::Bin(Arith::Mul) => MUL.clone(),
            Op::Neg => NEG.clone(),
        }
    }

    fn make(self) -> Arc<ScalarUDF> {
        let arity = if self == Op::Neg { 1 } else { 2 };
        Arc::new(ScalarUDF::new_from_impl(CheckedOp {
            op: self,
            signature: Signature::any(arity, Volatility::Immutable),
        }))
    }

    fn name(self) -> &'static str {
        match self {
            Op::Bin(Arith::Add) => "checked_add",
            Op::Bin(Arith::Sub) => "checked_sub",
            Op::Bin(Arith::Mul) => "checked_mul",
            Op::Neg => "checked_neg",
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Op::Bin(Arith::Add) => "+",
            Op::Bin(Arith::Sub) | Op::Neg => "-",
            Op::Bin(Arith::Mul) => "*",
        }
    }
}

/// One checked operation as a DataFusion scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedOp {
    op: Op,
    signature: Signature,
}

impl CheckedOp {
    /// How the expression prints: as the operator it replaces.
    fn text(&self, args: &[Expr], show: impl Fn(&Expr) -> String) -> String {
        operator_text(self.op.symbol(), self.op.name(), args, show)
    }
}

impl ScalarUDFImpl for CheckedOp {
    fn name(&self) -> &str {
        self.op.name()
    }

    fn display_name(&self, args: &[Expr]) -> Result<String> {
        Ok(self.text(args, |e| e.to_string()))
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        Ok(self.text(args, |e| e.schema_name().to_string()))
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let ty = args.arg_fields[0].data_type().clone();
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        Ok(Arc::new(Field::new(self.name(), ty, nullable)))
    }

    /// A NULL operand makes the result NULL without computing the other:
    /// the operators are strict, and PostgreSQL and DuckDB fold
    /// `NULL * (k * k)` to NULL while planning, so `k * k` never overflows
    /// there (DataFusion's simplifier does this for its own operators, and
    /// does not see through these functions).
    ///
    /// An operand that is NULL whatever the row counts too: a `CASE` none
    /// of whose arms can be taken (each condition a NULL or FALSE constant,
    /// no ELSE or a NULL one), which PostgreSQL also folds to NULL while
    /// planning; DataFusion's simplifier drops `WHEN FALSE` arms but keeps
    /// `WHEN NULL` ones (what `CAST(NULL AS DOUBLE) < x` becomes).
    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        if !args.iter().any(always_null) {
            return Ok(ExprSimplifyResult::Original(args));
        }
        // The operation's type: its operands', one of which may be an
        // untyped NULL.
        let mut ty = DataType::Null;
        for a in &args {
            ty = info.get_data_type(a)?;
            if ty != DataType::Null {
                break;
            }
        }
        let null = ScalarValue::try_from(&ty)?;
        Ok(ExprSimplifyResult::Simplified(Expr::Literal(null, None)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = all_scalar(&args.args);
        let operands = args
            .args
            .iter()
            .map(Operand::of)
            .collect::<Result<Vec<_>>>()?;
        let out = match (self.op, &operands[..]) {
            (Op::Neg, [a]) => numeric::neg(a.array()),
            (Op::Bin(op), [a, b]) => op.checked(a, b),
            _ => {
                return Err(DataFusionError::Internal(format!(
                    "{} called with {} arguments",
                    self.op.name(),
                    operands.len()
                )));
            }
        }
        .map_err(|e| out_of_range(self.op, args.return_field.data_type(), e))?;
        if scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        } else {
            Ok(ColumnarValue::Array(out))
        }
    }
}

/// Whether `f` is one of the checked operations here, whose simplification
/// ([`CheckedOp::simplify`]) acts only on an operand that is always NULL.
pub(crate) fn is_checked(f: &datafusion::logical_expr::ScalarUDF) -> bool {
    f.inner().is::<CheckedOp>()
}

/// Whether `e` is NULL for every row: a NULL constant, or a `CASE` none of
/// whose arms can be taken.
fn always_null(e: &Expr) -> bool {
    match e {
        Expr::Literal(v, _) => v.is_null(),
        Expr::Case(c) => {
            c.when_then_expr.iter().all(|(when, _)| {
                matches!(
                    when.as_ref(),
                    Expr::Literal(
                        ScalarValue::Boolean(None | Some(false)) | ScalarValue::Null,
                        _
                    )
                )
            }) && c.else_expr.as_deref().is_none_or(always_null)
        }
        Expr::Cast(c) => always_null(&c.expr),
        _ => false,
    }
}

/// The error of an overflowing operation: the SQL type and, from arrow's
/// message, the operands.
fn out_of_range(op: Op, ty: &DataType, e: datafusion::arrow::error::ArrowError) -> DataFusionError {
    let sql = match ty {
        DataType::Int8 => "TINYINT",
        DataType::Int16 => "SMALLINT",
        DataType::Int32 => "INT",
        DataType::Int64 => "BIGINT",
        DataType::UInt8 => "UTINYINT",
        DataType::UInt16 => "USMALLINT",
        DataType::UInt32 => "UINTEGER",
        _ => "UBIGINT",
    };
    let text = e.to_string();
    let what = match text.split_once("Overflow happened on: ") {
        Some((_, operands)) => operands.trim().to_string(),
        None => format!("{} ({text})", op.name()),
    };
    DataFusionError::External(Box::new(SqlError::Data(format!(
        "{sql} out of range: {what}"
    ))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, Int64Array};

    fn run(op: Op, args: Vec<ColumnarValue>) -> Result<ColumnarValue> {
        let fields = args
            .iter()
            .map(|a| Arc::new(Field::new("x", a.data_type(), true)))
            .collect();
        op.udf().invoke_with_args(ScalarFunctionArgs {
            number_rows: 2,
            arg_fields: fields,
            return_field: Arc::new(Field::new("r", DataType::Int64, true)),
            config_options: Arc::new(ConfigOptions::default()),
            args,
        })
    }

    #[test]
    fn overflow_is_an_error_and_the_rest_computes() {
        let col = ColumnarValue::Array(Arc::new(Int64Array::from(vec![Some(i64::MAX), None])));
        let one = ColumnarValue::Scalar(ScalarValue::Int64(Some(1)));
        let e = run(Op::Bin(Arith::Add), vec![col.clone(), one.clone()]).unwrap_err();
        assert!(
            e.to_string()
                .contains("BIGINT out of range: 9223372036854775807 + 1"),
            "{e}"
        );
        let min = ColumnarValue::Scalar(ScalarValue::Int64(Some(i64::MIN)));
        assert!(run(Op::Neg, vec![min]).is_err());
        let ok = run(Op::Bin(Arith::Sub), vec![col, one]).unwrap();
        let ColumnarValue::Array(a) = ok else {
            panic!("an array in, an array out")
        };
        let a = a.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(a.value(0), i64::MAX - 1);
        assert!(a.is_null(1));
        let two = ColumnarValue::Scalar(ScalarValue::Int64(Some(2)));
        let three = ColumnarValue::Scalar(ScalarValue::Int64(Some(3)));
        match run(Op::Bin(Arith::Mul), vec![two, three]).unwrap() {
            ColumnarValue::Scalar(s) => assert_eq!(s, ScalarValue::Int64(Some(6))),
            other => panic!("scalars in, a scalar out: {other:?}"),
        }
    }
}
