//! Operators replaced by functions: what the rules that compute `+ - *`
//! their own way share ([`crate::rules::overflow`] for integers,
//! [`crate::rules::decimal_arith`] for decimals). Which operators; the
//! bottom-up rewrite of `l op r` into a function of `(l, r)`; how such a
//! function prints (as the operator, so result columns keep their names);
//! and an argument in the form arrow's kernels take.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, Datum, Scalar};
use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::error::ArrowError;
use datafusion::common::Result;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{ColumnarValue, Expr, Operator, ScalarUDF};

/// `+`, `-` or `*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arith {
    Add,
    Sub,
    Mul,
}

impl Arith {
    pub fn of(op: Operator) -> Option<Arith> {
        match op {
            Operator::Plus => Some(Arith::Add),
            Operator::Minus => Some(Arith::Sub),
            Operator::Multiply => Some(Arith::Mul),
            _ => None,
        }
    }

    pub fn operator(self) -> Operator {
        match self {
            Arith::Add => Operator::Plus,
            Arith::Sub => Operator::Minus,
            Arith::Mul => Operator::Multiply,
        }
    }

    /// Arrow's checked kernel for it (an error on overflow), as
    /// DataFusion's operator runs it.
    pub fn checked(self, a: &Operand, b: &Operand) -> Result<ArrayRef, ArrowError> {
        match self {
            Arith::Add => numeric::add(a.datum(), b.datum()),
            Arith::Sub => numeric::sub(a.datum(), b.datum()),
            Arith::Mul => numeric::mul(a.datum(), b.datum()),
        }
    }
}

/// `e` rewritten bottom-up: each `l op r` with `op` one of [`Arith`]
/// becomes the function `replace(op, &l, &r)` names, of `(l, r)`; every
/// other node (and an operation `replace` declines) goes to `other`.
pub fn replace_arith(
    e: Expr,
    replace: impl Fn(Arith, &Expr, &Expr) -> Option<Arc<ScalarUDF>>,
    other: impl Fn(Expr) -> Transformed<Expr>,
) -> Result<Transformed<Expr>> {
    e.transform_up(|e| {
        Ok(match e {
            Expr::BinaryExpr(b) => {
                match Arith::of(b.op).and_then(|op| replace(op, &b.left, &b.right)) {
                    Some(udf) => Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(
                        udf,
                        vec![*b.left, *b.right],
                    ))),
                    None => other(Expr::BinaryExpr(b)),
                }
            }
            e => other(e),
        })
    })
}

/// How a function standing for an operator prints: `a + b` for two
/// arguments, `(- a)` for one (with `symbol` "-"), its `name` otherwise.
pub fn operator_text(
    symbol: &str,
    name: &str,
    args: &[Expr],
    show: impl Fn(&Expr) -> String,
) -> String {
    match args {
        [a] => format!("({symbol} {})", show(a)),
        [a, b] => format!("{} {symbol} {}", show(a), show(b)),
        _ => name.to_string(),
    }
}

/// Whether an operator's function computes a constant: all its arguments
/// are.
pub fn all_scalar(args: &[ColumnarValue]) -> bool {
    args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)))
}

/// An argument as arrow's kernels take it: an array, or a scalar.
pub enum Operand {
    Array(ArrayRef),
    Scalar(Scalar<ArrayRef>),
}

impl Operand {
    pub fn of(v: &ColumnarValue) -> Result<Operand> {
        Ok(match v {
            ColumnarValue::Array(a) => Operand::Array(a.clone()),
            ColumnarValue::Scalar(s) => Operand::Scalar(s.to_scalar()?),
        })
    }

    pub fn datum(&self) -> &dyn Datum {
        match self {
            Operand::Array(a) => a,
            Operand::Scalar(s) => s,
        }
    }

    pub fn array(&self) -> &dyn Array {
        match self {
            Operand::Array(a) => a.as_ref(),
            Operand::Scalar(s) => s.get().0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::{col, lit};

    #[test]
    fn operators_their_text_and_operands() {
        for op in [Arith::Add, Arith::Sub, Arith::Mul] {
            assert_eq!(Arith::of(op.operator()), Some(op));
        }
        assert_eq!(Arith::of(Operator::Divide), None);
        let show = |e: &Expr| e.to_string();
        assert_eq!(
            operator_text("*", "f", &[col("a"), lit(2)], show),
            "a * Int32(2)"
        );
        assert_eq!(operator_text("-", "f", &[col("a")], show), "(- a)");
        assert_eq!(operator_text("-", "f", &[], show), "f");
        let s = ColumnarValue::Scalar(ScalarValue::Int64(Some(7)));
        let a = ColumnarValue::Array(Arc::new(datafusion::arrow::array::Int64Array::from(vec![
            1, 2,
        ])));
        assert!(all_scalar(std::slice::from_ref(&s)));
        assert!(!all_scalar(&[s.clone(), a.clone()]));
        let (s, a) = (Operand::of(&s).unwrap(), Operand::of(&a).unwrap());
        assert_eq!(s.array().len(), 1);
        assert_eq!(a.array().len(), 2);
        let sum = Arith::Add.checked(&a, &s).unwrap();
        assert_eq!(
            sum.as_ref(),
            &datafusion::arrow::array::Int64Array::from(vec![8, 9])
        );
        let max = ColumnarValue::Scalar(ScalarValue::Int64(Some(i64::MAX)));
        assert!(Arith::Mul.checked(&a, &Operand::of(&max).unwrap()).is_err());
    }
}
