//! DECIMAL `+ - *` without a 128-bit overflow check where none can happen.
//!
//! DataFusion computes on two `Decimal128` values with arrow's checked
//! kernels: a product is an `i128` multiplication that tests for overflow
//! (`overflowing_mul`, a call to the compiler's 128-bit multiply-with-
//! overflow routine), and a sum or difference of two scales first brings
//! each operand to the larger scale with such a multiplication by a power of
//! ten. TPC-H's revenue, `l_extendedprice * (1 - l_discount)` (and Q1's
//! `* (1 + l_tax)` on top of it), spent about a quarter of Q1's warm CPU
//! there. Yet values that fit in 64 bits, times powers of ten up to 10^18,
//! cannot overflow 128 bits (|a·b| < 2^126, |a·10^k ± b·10^j| < 2^124), and
//! a stored DECIMAL (at most 18 digits in strata) always fits in 64 bits;
//! most products of money and rates do too.
//!
//! [`DecimalArith`] is an analyzer rule that runs after type coercion: it
//! replaces each `+`, `-` and `*` of two `Decimal128` operands by a function
//! whose name for a column is the operator's (`a * b`: result columns are
//! named as before; EXPLAIN shows `decimal_mul(a, b)`, `decimal_add`,
//! `decimal_sub`, as it shows `checked_add` for integers) and whose type is
//! DataFusion's own for the operator. Over a batch whose values all fit in 64
//! bits it computes without the check; any other batch goes to arrow's
//! checked kernel as before, with its error on overflow. Same values and
//! types either way (arrow's: Hive's rules for precision and scale).

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array};
use datafusion::arrow::compute::kernels::arity::{binary, unary};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Field, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::type_coercion::binary::BinaryTypeCoercer;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use super::operator_fn::{Arith as Op, Operand, all_scalar, operator_text, replace_arith};

/// The analyzer rule (see the module docs).
#[derive(Debug, Default)]
pub struct DecimalArith;

impl AnalyzerRule for DecimalArith {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::rules::expr_rule::rewrite_expressions(plan, rewrite)
    }

    fn name(&self) -> &str {
        "strata_decimal_arith"
    }
}

/// `e` with each `+ - *` of two `Decimal128` operands replaced by its
/// function.
pub fn rewrite(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    replace_arith(
        e,
        |op, l, r| (is_decimal128(l, schema) && is_decimal128(r, schema)).then(|| udf(op)),
        Transformed::no,
    )
}

/// Whether `e` is a `Decimal128`. An operation the rule made already is:
/// the walk is bottom-up, and asking DataFusion the type of a function call
/// names every call below it, so a chain of them would cost time quadratic
/// in its length.
fn is_decimal128(e: &Expr, schema: &DFSchema) -> bool {
    if let Expr::ScalarFunction(f) = e {
        let udf: &dyn std::any::Any = f.func.inner().as_ref();
        if udf.is::<DecimalOp>() {
            return true;
        }
    }
    matches!(e.get_type(schema), Ok(DataType::Decimal128(..)))
}

static ADD: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| make(Op::Add));
static SUB: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| make(Op::Sub));
static MUL: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| make(Op::Mul));

fn udf(op: Op) -> Arc<ScalarUDF> {
    match op {
        Op::Add => ADD.clone(),
        Op::Sub => SUB.clone(),
        Op::Mul => MUL.clone(),
    }
}

fn make(op: Op) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(DecimalOp {
        op,
        signature: Signature::any(2, Volatility::Immutable),
    }))
}

fn name(op: Op) -> &'static str {
    match op {
        Op::Add => "decimal_add",
        Op::Sub => "decimal_sub",
        Op::Mul => "decimal_mul",
    }
}

/// Arrow's precision and scale of the result, and the powers of ten each
/// operand is multiplied by first (a sum's or difference's operands are
/// brought to one scale; a product's are not); `None` when a scale is out
/// of range or a power would pass 10^18 (arrow's kernel decides then).
fn shape(op: Op, (p1, s1): (u8, i8), (p2, s2): (u8, i8)) -> Option<(u8, i8, i128, i128)> {
    match op {
        Op::Mul => {
            let s = s1.checked_add(s2)?;
            (s <= 38).then_some(((p1 + p2 + 1).min(38), s, 1, 1))
        }
        Op::Add | Op::Sub => {
            let s = s1.max(s2);
            let whole = (p1 as i8).wrapping_sub(s1).max((p2 as i8).wrapping_sub(s2));
            let p = (s.saturating_add(whole) as u8).saturating_add(1).min(38);
            let (k1, k2) = (s.checked_sub(s1)?, s.checked_sub(s2)?);
            if !(0..=18).contains(&k1) || !(0..=18).contains(&k2) {
                return None;
            }
            Some((p, s, 10i128.pow(k1 as u32), 10i128.pow(k2 as u32)))
        }
    }
}

/// One DECIMAL operation as a DataFusion scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
struct DecimalOp {
    op: Op,
    signature: Signature,
}

impl DecimalOp {
    /// How the expression prints: as the operator it replaces.
    fn text(&self, args: &[Expr], show: impl Fn(&Expr) -> String) -> String {
        operator_text(&self.op.operator().to_string(), name(self.op), args, show)
    }
}

impl ScalarUDFImpl for DecimalOp {
    fn name(&self) -> &str {
        name(self.op)
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

    /// DataFusion's type for the operator on these operands.
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [a, b] => BinaryTypeCoercer::new(a, &self.op.operator(), b).get_result_type(),
            _ => Err(DataFusionError::Internal(format!(
                "{} takes 2 arguments, not {}",
                name(self.op),
                arg_types.len()
            ))),
        }
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        Ok(Arc::new(Field::new(
            self.name(),
            self.return_type(&types)?,
            nullable,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [a, b] = &args.args[..] else {
            return Err(DataFusionError::Internal(format!(
                "{} called with {} arguments",
                name(self.op),
                args.args.len()
            )));
        };
        if let Some(out) = self.unchecked(a, b)? {
            return Ok(ColumnarValue::Array(out));
        }
        // Arrow's checked kernel, as DataFusion's operator runs it.
        let out = self.op.checked(&Operand::of(a)?, &Operand::of(b)?)?;
        if all_scalar(&args.args) {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        } else {
            Ok(ColumnarValue::Array(out))
        }
    }
}

/// One operand of the unchecked path: an array, or a non-NULL constant.
enum Side<'a> {
    Array(&'a Decimal128Array),
    Const(i128),
}

impl DecimalOp {
    /// The result computed without overflow checks, when every value of
    /// both operands fits in 64 bits (a NULL's slot too) and the shape
    /// allows; `None` otherwise.
    fn unchecked(&self, a: &ColumnarValue, b: &ColumnarValue) -> Result<Option<ArrayRef>> {
        let (DataType::Decimal128(p1, s1), DataType::Decimal128(p2, s2)) =
            (a.data_type(), b.data_type())
        else {
            return Ok(None);
        };
        let Some((p, s, m1, m2)) = shape(self.op, (p1, s1), (p2, s2)) else {
            return Ok(None);
        };
        let (Some(x), Some(y)) = (side(a)?, side(b)?) else {
            return Ok(None);
        };
        let fits = |v: &Side| match v {
            Side::Array(x) => x.values().iter().all(|&v| v as i64 as i128 == v),
            Side::Const(k) => *k as i64 as i128 == *k,
        };
        if !fits(&x) || !fits(&y) {
            return Ok(None);
        }
        // No overflow is possible: each value is below 2^63 in magnitude and
        // each power of ten below 2^60.
        let f = |l: i128, r: i128| -> i128 {
            match self.op {
                Op::Mul => l.wrapping_mul(r),
                Op::Add => l.wrapping_mul(m1).wrapping_add(r.wrapping_mul(m2)),
                Op::Sub => l.wrapping_mul(m1).wrapping_sub(r.wrapping_mul(m2)),
            }
        };
        let out: Decimal128Array = match (x, y) {
            (Side::Array(x), Side::Array(y)) => binary(x, y, f)?,
            (Side::Array(x), Side::Const(k)) => unary(x, |l| f(l, k)),
            (Side::Const(k), Side::Array(y)) => unary(y, |r| f(k, r)),
            (Side::Const(_), Side::Const(_)) => return Ok(None),
        };
        // A shape arrow would refuse is arrow's to refuse.
        Ok(out
            .with_precision_and_scale(p, s)
            .ok()
            .map(|o| Arc::new(o) as ArrayRef))
    }
}

/// `v` as a side of the unchecked path; `None` for a NULL constant (arrow's
/// kernel makes the result NULL).
fn side(v: &ColumnarValue) -> Result<Option<Side<'_>>> {
    Ok(match v {
        ColumnarValue::Array(a) => Some(Side::Array(
            a.as_primitive_opt::<Decimal128Type>().ok_or_else(|| {
                DataFusionError::Internal(format!("a decimal operation on {}", a.data_type()))
            })?,
        )),
        ColumnarValue::Scalar(ScalarValue::Decimal128(Some(k), ..)) => Some(Side::Const(*k)),
        ColumnarValue::Scalar(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Field;

    fn dec(values: Vec<Option<i128>>, p: u8, s: i8) -> ArrayRef {
        Arc::new(
            Decimal128Array::from(values)
                .with_precision_and_scale(p, s)
                .unwrap(),
        )
    }

    fn call(op: Op, a: ColumnarValue, b: ColumnarValue, rows: usize) -> Result<ArrayRef> {
        let types = [a.data_type(), b.data_type()];
        let udf = udf(op);
        let ty = udf.inner().return_type(&types).unwrap();
        let fields = types
            .iter()
            .map(|t| Arc::new(Field::new("x", t.clone(), true)))
            .collect();
        let out = udf.invoke_with_args(ScalarFunctionArgs {
            args: vec![a, b],
            arg_fields: fields,
            number_rows: rows,
            return_field: Arc::new(Field::new("r", ty, true)),
            config_options: Arc::new(ConfigOptions::default()),
        })?;
        Ok(match out {
            ColumnarValue::Array(a) => a,
            ColumnarValue::Scalar(s) => s.to_array().unwrap(),
        })
    }

    /// Arrow's checked kernel on the same operands.
    fn arrow(op: Op, a: &ColumnarValue, b: &ColumnarValue) -> ArrayRef {
        op.checked(&Operand::of(a).unwrap(), &Operand::of(b).unwrap())
            .unwrap()
    }

    #[test]
    fn results_equal_arrows_checked_kernels_on_both_paths_and_overflow_is_an_error() {
        // 64-bit values (the unchecked path) of two scales, a NULL among
        // them; values past 64 bits (arrow's kernel); constants either side.
        let small = dec(
            vec![Some(123_456), None, Some(-99_999_999_999), Some(0)],
            15,
            2,
        );
        let rate = dec(vec![Some(95), Some(7), Some(-104), Some(-1)], 12, 0);
        let wide = dec(
            vec![Some(1i128 << 70), Some(3), None, Some(-(1i128 << 66))],
            38,
            2,
        );
        let k = ScalarValue::Decimal128(Some(25), 2, 1);
        let cases = [
            (
                ColumnarValue::Array(small.clone()),
                ColumnarValue::Array(rate.clone()),
            ),
            (
                ColumnarValue::Array(rate.clone()),
                ColumnarValue::Array(small.clone()),
            ),
            (
                ColumnarValue::Array(small.clone()),
                ColumnarValue::Scalar(k.clone()),
            ),
            (
                ColumnarValue::Scalar(k.clone()),
                ColumnarValue::Array(small.clone()),
            ),
            (
                ColumnarValue::Array(wide.clone()),
                ColumnarValue::Array(rate.clone()),
            ),
            (
                ColumnarValue::Array(small.clone()),
                ColumnarValue::Scalar(ScalarValue::Decimal128(None, 2, 1)),
            ),
        ];
        for op in [Op::Add, Op::Sub, Op::Mul] {
            for (a, b) in &cases {
                let got = call(op, a.clone(), b.clone(), 4).unwrap();
                let want = arrow(op, a, b);
                assert_eq!(got.as_ref(), want.as_ref(), "{op:?}");
                assert_eq!(got.data_type(), want.data_type(), "{op:?}");
            }
        }
        // The unchecked path is the one taken on 64-bit values.
        let f = |op: Op| DecimalOp {
            op,
            signature: Signature::any(2, Volatility::Immutable),
        };
        let (a, b) = (&cases[0].0, &cases[0].1);
        assert!(f(Op::Mul).unchecked(a, b).unwrap().is_some());
        assert!(f(Op::Sub).unchecked(a, b).unwrap().is_some());
        assert!(
            f(Op::Add)
                .unchecked(&cases[4].0, &cases[4].1)
                .unwrap()
                .is_none()
        );
        // An overflow is arrow's error, not a wrapped value.
        let huge = ColumnarValue::Array(dec(vec![Some(1i128 << 100)], 38, 0));
        let err = call(Op::Mul, huge.clone(), huge.clone(), 1).unwrap_err();
        assert!(err.to_string().contains("Overflow"), "{err}");
        let max = ColumnarValue::Array(dec(vec![Some(i128::MAX / 2 + 1)], 38, 0));
        let err = call(Op::Add, max.clone(), max, 1).unwrap_err();
        assert!(err.to_string().contains("Overflow"), "{err}");
        // Two constants: a constant, by arrow's kernel.
        let two = call(
            Op::Mul,
            ColumnarValue::Scalar(k.clone()),
            ColumnarValue::Scalar(k),
            1,
        )
        .unwrap();
        assert_eq!(two.as_primitive::<Decimal128Type>().value(0), 625);
    }
}
