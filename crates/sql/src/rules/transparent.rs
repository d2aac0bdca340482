//! The one-argument functions the rules wrap an expression in
//! (`strata_positive_zero`, `strata_round_ties_even`, `strata_kept`,
//! `strata_nullable`): each prints as its argument, so names and plans read as
//! before the rule, and has the argument's type; they differ only in their
//! name, whether the result may be NULL, and what they do to a value.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{Array, Float32Array, Float64Array};
use datafusion::arrow::compute::kernels::arity::unary;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

/// Whether a wrapped expression's result may be NULL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Nulls {
    /// As the argument's.
    AsArgument,
    /// Always: the planner must not take the result for NOT NULL.
    Possible,
}

/// A function named `name` that evaluates its one argument with `eval`.
pub(crate) fn udf(
    name: &'static str,
    nulls: Nulls,
    eval: fn(ColumnarValue) -> ColumnarValue,
) -> ScalarUDF {
    ScalarUDF::new_from_impl(Transparent {
        name,
        nulls,
        eval,
        signature: Signature::any(1, Volatility::Immutable),
    })
}

/// Its argument, unchanged.
pub(crate) fn identity(v: ColumnarValue) -> ColumnarValue {
    v
}

/// `v` with `f64s` applied to its DOUBLE values and `f32s` to its REAL ones;
/// values of other types as they are.
pub(crate) fn map_floats(
    v: ColumnarValue,
    f64s: fn(f64) -> f64,
    f32s: fn(f32) -> f32,
) -> ColumnarValue {
    match v {
        ColumnarValue::Scalar(s) => ColumnarValue::Scalar(match s {
            ScalarValue::Float64(v) => ScalarValue::Float64(v.map(f64s)),
            ScalarValue::Float32(v) => ScalarValue::Float32(v.map(f32s)),
            other => other,
        }),
        ColumnarValue::Array(a) => {
            let any = a.as_any();
            let out: Arc<dyn Array> = if let Some(a) = any.downcast_ref::<Float64Array>() {
                Arc::new(unary::<_, _, _>(a, f64s) as Float64Array)
            } else if let Some(a) = any.downcast_ref::<Float32Array>() {
                Arc::new(unary::<_, _, _>(a, f32s) as Float32Array)
            } else {
                a
            };
            ColumnarValue::Array(out)
        }
    }
}

#[derive(Debug)]
struct Transparent {
    name: &'static str,
    nulls: Nulls,
    eval: fn(ColumnarValue) -> ColumnarValue,
    signature: Signature,
}

// One function per name: the name says what `eval` is.
impl PartialEq for Transparent {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Transparent {}

impl Hash for Transparent {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for Transparent {
    fn name(&self) -> &str {
        self.name
    }

    fn display_name(&self, args: &[Expr]) -> Result<String> {
        Ok(args.first().map(|a| a.to_string()).unwrap_or_default())
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        Ok(args
            .first()
            .map(|a| a.schema_name().to_string())
            .unwrap_or_default())
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let f = &args.arg_fields[0];
        let nullable = match self.nulls {
            Nulls::AsArgument => f.is_nullable(),
            Nulls::Possible => true,
        };
        Ok(Arc::new(Field::new(
            self.name,
            f.data_type().clone(),
            nullable,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match <[ColumnarValue; 1]>::try_from(args.args) {
            Ok([v]) => Ok((self.eval)(v)),
            Err(v) => Err(DataFusionError::Internal(format!(
                "{} called with {} arguments",
                self.name,
                v.len()
            ))),
        }
    }
}
