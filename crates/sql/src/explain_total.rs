//! EXPLAIN ANALYZE's last line: the statement's total time. DataFusion's
//! output gives each operator's own times (`elapsed_compute`, strata's
//! counters) but not the whole statement's — parsing, planning and running,
//! as the user waited for it.

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::sql::parser::Statement as DfStatement;

/// The `plan_type` of the row added.
pub const TOTAL_TIME: &str = "Total time";

/// Whether `stmt` is an `EXPLAIN ANALYZE`.
pub fn is_explain_analyze(stmt: &DfStatement) -> bool {
    matches!(stmt, DfStatement::Explain(e) if e.options.analyze)
}

/// `batches` (an EXPLAIN ANALYZE's `plan_type`, `plan` rows) with a last row
/// `Total time | <ms> ms`; unchanged when the schema is not two text columns.
pub fn with_total_time(
    schema: &SchemaRef,
    mut batches: Vec<RecordBatch>,
    elapsed: Duration,
) -> Vec<RecordBatch> {
    let text = schema.fields().len() == 2
        && schema
            .fields()
            .iter()
            .all(|f| f.data_type() == &DataType::Utf8);
    if !text {
        return batches;
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![TOTAL_TIME])),
        Arc::new(StringArray::from(vec![format!(
            "{:.3} ms (parsing, planning and running the statement)",
            elapsed.as_secs_f64() * 1e3
        )])),
    ];
    if let Ok(row) = RecordBatch::try_new(schema.clone(), columns) {
        batches.push(row);
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::{Field, Schema};

    #[test]
    fn the_total_time_is_a_last_row_of_two_text_columns() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("plan_type", DataType::Utf8, false),
            Field::new("plan", DataType::Utf8, false),
        ]));
        let out = with_total_time(&schema, vec![], Duration::from_micros(12_345));
        assert_eq!(out.len(), 1);
        let plan = out[0].column(1).as_string::<i32>();
        assert!(plan.value(0).starts_with("12.345 ms"), "{}", plan.value(0));
        let other = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        assert!(with_total_time(&other, vec![], Duration::ZERO).is_empty());
    }
}
