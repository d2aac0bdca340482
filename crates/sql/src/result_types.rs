//! The types a result leaves the engine with. Inside a query, a columnar
//! table's strings are views (`Utf8View`, `strata_columns::convert::
//! string_views`); every result a session hands out (rows to the shell, the
//! server, Python, COPY) has them as `Utf8` again, the type a row table's
//! strings have, so what a client sees does not depend on the table's
//! format. A result is small next to what the query read, so the cast costs
//! little; a `COPY` of a whole table casts each batch once.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};

/// `schema` with its string views as `Utf8` (the same `Arc` when it has none).
pub fn plain_schema(schema: &SchemaRef) -> SchemaRef {
    if !strata_columns::convert::has_string_views(schema) {
        return schema.clone();
    }
    strata_columns::convert::retyped(schema, &DataType::Utf8View, &DataType::Utf8)
}

/// `batch` with its string views as `Utf8` (its own schema's fields
/// otherwise: a batch may differ from its plan's schema in ways the
/// plan's consumers already accept, a nullability, a coerced type).
pub fn plain_batch(batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
    let plain = plain_schema(batch.schema_ref());
    if Arc::ptr_eq(&plain, batch.schema_ref()) {
        return Ok(batch);
    }
    let rows = batch.num_rows();
    let arrays = strata_columns::convert::as_schema_types(batch.columns().to_vec(), &plain)?;
    RecordBatch::try_new_with_options(
        plain,
        arrays,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
}

/// The result of a plan of `schema`: its plain schema and each batch
/// made plain.
pub fn plain(
    schema: &SchemaRef,
    batches: Vec<RecordBatch>,
) -> Result<(SchemaRef, Vec<RecordBatch>), ArrowError> {
    let batches = batches
        .into_iter()
        .map(plain_batch)
        .collect::<Result<_, _>>()?;
    Ok((plain_schema(schema), batches))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray, Int32Array, StringViewArray};
    use datafusion::arrow::datatypes::{Field, Schema};

    #[test]
    fn views_leave_as_utf8_and_other_columns_as_they_are() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int32, false),
            Field::new("s", DataType::Utf8View, true),
        ]));
        let long = "a string longer than twelve bytes";
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int32Array::from(vec![1, 2, 3])),
                Arc::new(StringViewArray::from(vec![Some("ab"), None, Some(long)])),
            ],
        )
        .unwrap();
        let (plain, out) = plain(&schema, vec![batch]).unwrap();
        assert_eq!(plain.field(1).data_type(), &DataType::Utf8);
        assert_eq!(plain.field(0).data_type(), &DataType::Int32);
        let s = out[0].column(1).as_string::<i32>();
        assert_eq!(s.value(0), "ab");
        assert!(s.is_null(1));
        assert_eq!(s.value(2), long);
        // A schema without views is the same schema.
        let none = Arc::new(Schema::new(vec![Field::new("n", DataType::Int32, false)]));
        assert!(Arc::ptr_eq(&plain_schema(&none), &none));
    }
}
