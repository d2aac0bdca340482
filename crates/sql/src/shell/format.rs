//! Query results as text: an aligned table for people, CSV and JSON for scripts,
//! all three by Arrow's own writers.
//!
//! * `table`: boxed, aligned columns (Arrow's pretty printer).
//! * `csv`: a header row, then one line per row; fields quoted only when they
//!   hold a comma, quote or line break; NULL is an empty field.
//! * `json`: one array of objects; numbers (integers, decimals, doubles) are
//!   JSON numbers (a decimal keeps its scale), NULL is `null`, dates and
//!   strings are strings.

use std::str::FromStr;

use datafusion::arrow::csv::WriterBuilder;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::json;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Table,
    Csv,
    Json,
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "table" => Ok(Format::Table),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            _ => Err(format!(
                "unknown format '{s}' (expected table, csv or json)"
            )),
        }
    }
}

/// The whole result in `format`, ending with a newline; nothing for a
/// statement that answers no columns (DDL, `BEGIN`, `SET`).
pub fn render(
    format: Format,
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<String, ArrowError> {
    if schema.fields().is_empty() {
        return Ok(String::new());
    }
    match format {
        Format::Table => {
            if batches.iter().all(|b| b.num_rows() == 0) {
                // The pretty printer prints nothing for no batches; show the header.
                let empty = RecordBatch::new_empty(schema.clone());
                return Ok(format!("{}\n", pretty_format_batches(&[empty])?));
            }
            Ok(format!("{}\n", pretty_format_batches(batches)?))
        }
        Format::Csv => csv(schema, batches),
        Format::Json => json(batches),
    }
}

fn csv(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<String, ArrowError> {
    let mut out = Vec::new();
    let mut w = WriterBuilder::new().with_header(true).build(&mut out);
    // The header is written with the first batch: an empty one first, so an
    // empty result still has its header.
    w.write(&RecordBatch::new_empty(schema.clone()))?;
    for b in batches {
        w.write(b)?;
    }
    drop(w);
    String::from_utf8(out).map_err(|e| ArrowError::CsvError(e.to_string()))
}

fn json(batches: &[RecordBatch]) -> Result<String, ArrowError> {
    let mut out = Vec::new();
    let mut w = json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, json::writer::JsonArray>(&mut out);
    w.write_batches(&batches.iter().collect::<Vec<_>>())?;
    w.finish()?;
    drop(w);
    out.push(b'\n');
    String::from_utf8(out).map_err(|e| ArrowError::JsonError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Decimal128Array, Int32Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    fn batch() -> (SchemaRef, RecordBatch) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("d", DataType::Decimal128(15, 2), true),
        ]));
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int32Array::from(vec![Some(1), None])),
                Arc::new(StringArray::from(vec![Some("a,\"b\""), Some("plain")])),
                Arc::new(
                    Decimal128Array::from(vec![Some(1050), Some(-5)])
                        .with_precision_and_scale(15, 2)
                        .unwrap(),
                ),
            ],
        )
        .unwrap();
        (schema, b)
    }

    #[test]
    fn csv_has_a_header_and_quotes_only_when_needed() {
        let (s, b) = batch();
        assert_eq!(
            render(Format::Csv, &s, &[b]).unwrap(),
            "n,s,d\n1,\"a,\"\"b\"\"\",10.50\n,plain,-0.05\n"
        );
    }

    #[test]
    fn json_keeps_numbers_numeric_and_nulls_null() {
        let (s, b) = batch();
        let text = render(Format::Json, &s, &[b]).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v[0]["n"], 1);
        assert_eq!(v[0]["s"], "a,\"b\"");
        assert_eq!(v[0]["d"].as_f64(), Some(10.5));
        assert!(v[1]["n"].is_null());
        assert!(text.contains("-0.05"));
        assert_eq!(render(Format::Json, &s, &[]).unwrap(), "[]\n");
        assert_eq!(
            render(Format::Csv, &s, &[]).unwrap(),
            "n,s,d\n",
            "an empty result keeps its header"
        );
    }

    #[test]
    fn table_shows_the_header_of_an_empty_result() {
        let (s, _) = batch();
        let t = render(Format::Table, &s, &[]).unwrap();
        assert!(t.contains("| n | s | d |"), "{t}");
    }
}
