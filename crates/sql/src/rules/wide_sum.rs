//! `sum` over integers that cannot wrap: the sum is a DECIMAL(38,0).
//!
//! DataFusion 55's `sum` of BIGINT (and of the smaller integers, which it
//! widens to BIGINT) is a BIGINT accumulated with wrapping adds, so a sum
//! past 2^63 came out negative without a word. PostgreSQL's `sum(bigint)` is
//! a NUMERIC and DuckDB's a HUGEINT: both are exact. strata's is a
//! DECIMAL(38,0): its input values are cast to DECIMAL(38,0) and DataFusion's
//! own decimal sum runs on them (every accumulator: plain, grouped, sliding
//! window, DISTINCT). A sum of BIGINTs would need 10^19 rows to leave 38
//! digits. Every other input type (DECIMAL, DOUBLE, intervals) is
//! DataFusion's `sum` unchanged.
//!
//! The function is registered under the name `sum`, replacing the built-in
//! one in a strata session (`crate::session`).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{Result, ScalarValue};
use datafusion::functions_aggregate::sum::Sum;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, EmitTo, GroupsAccumulator,
    ReversedUDAF, SetMonotonicity, Signature,
};

/// The type integer sums are computed and returned in.
pub const INTEGER_SUM: DataType = DataType::Decimal128(38, 0);

/// `sum` (see the module docs).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct WideSum {
    inner: Sum,
}

impl WideSum {
    /// The function, ready to register.
    pub fn udaf() -> AggregateUDF {
        AggregateUDF::new_from_impl(WideSum { inner: Sum::new() })
    }
}

/// Whether `sum` over `input` is an integer sum (after DataFusion's coercion
/// of the argument, which widens to Int64 / UInt64).
fn integer(input: &DataType) -> bool {
    input.is_integer()
}

/// Whether the accumulator's input is an integer (its first argument).
fn integer_input(args: &AccumulatorArgs) -> bool {
    args.expr_fields
        .first()
        .is_some_and(|f| integer(f.data_type()))
}

impl AggregateUDFImpl for WideSum {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(t) if integer(t) => Ok(INTEGER_SUM),
            _ => self.inner.return_type(arg_types),
        }
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let wide = integer_input(&args);
        let inner = self.inner.accumulator(args)?;
        Ok(if wide {
            Box::new(Widening(inner))
        } else {
            inner
        })
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        let wide = integer_input(&args);
        let inner = self.inner.create_groups_accumulator(args)?;
        Ok(if wide {
            Box::new(WideningGroups(inner))
        } else {
            inner
        })
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let wide = integer_input(&args);
        let inner = self.inner.create_sliding_accumulator(args)?;
        Ok(if wide {
            Box::new(Widening(inner))
        } else {
            inner
        })
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn set_monotonicity(&self, data_type: &DataType) -> SetMonotonicity {
        self.inner.set_monotonicity(data_type)
    }
}

/// The input values as the decimal sum takes them. An integer always fits
/// DECIMAL(38,0).
fn widen(values: &[ArrayRef]) -> Result<Vec<ArrayRef>> {
    values.iter().map(|v| Ok(cast(v, &INTEGER_SUM)?)).collect()
}

/// A decimal sum's accumulator fed integers.
#[derive(Debug)]
struct Widening(Box<dyn Accumulator>);

impl Accumulator for Widening {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.0.update_batch(&widen(values)?)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.0.evaluate()
    }

    fn size(&self) -> usize {
        self.0.size()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.0.state()
    }

    // States are the decimal sum's own: they pass as they are.
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.0.merge_batch(states)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.0.retract_batch(&widen(values)?)
    }

    fn supports_retract_batch(&self) -> bool {
        self.0.supports_retract_batch()
    }
}

/// A decimal sum's grouped accumulator fed integers.
struct WideningGroups(Box<dyn GroupsAccumulator>);

impl GroupsAccumulator for WideningGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.0
            .update_batch(&widen(values)?, group_indices, opt_filter, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        self.0.evaluate(emit_to)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.0.state(emit_to)
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.0.merge_batch(values, group_indices, total_num_groups)
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        self.0.convert_to_state(&widen(values)?, opt_filter)
    }

    fn size(&self) -> usize {
        self.0.size()
    }
}

/// The registered function, shared.
pub fn sum() -> Arc<AggregateUDF> {
    Arc::new(WideSum::udaf())
}
