//! Query results as text: an aligned table for people, CSV and JSON for scripts.
//!
//! * `table`: boxed, aligned columns (Arrow's pretty printer).
//! * `csv`: a header row, then one line per row; fields quoted only when they
//!   hold a comma, quote or line break; NULL is an empty field.
//! * `json`: one array of objects; numbers (integers, decimals, doubles) are
//!   JSON numbers written exactly as formatted (a decimal keeps its scale),
//!   NULL is `null`, everything else a string.

use std::fmt::Write as _;
use std::str::FromStr;

use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
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

/// The whole result in `format`, ending with a newline.
pub fn render(
    format: Format,
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<String, ArrowError> {
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
        Format::Json => json(schema, batches),
    }
}

fn options() -> FormatOptions<'static> {
    FormatOptions::default().with_null("")
}

fn csv_field(out: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

fn csv(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<String, ArrowError> {
    let mut out = String::new();
    for (i, f) in schema.fields().iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        csv_field(&mut out, f.name());
    }
    out.push('\n');
    let opts = options();
    for b in batches {
        let fmts = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect::<Result<Vec<_>, _>>()?;
        for row in 0..b.num_rows() {
            for (i, f) in fmts.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                csv_field(&mut out, &f.value(row).to_string());
            }
            out.push('\n');
        }
    }
    Ok(out)
}

fn is_number(t: &DataType) -> bool {
    t.is_numeric()
}

fn json(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<String, ArrowError> {
    let mut out = String::from("[");
    let names: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| serde_json::to_string(f.name()).expect("a string serializes"))
        .collect();
    let opts = options();
    let mut first = true;
    for b in batches {
        let fmts = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect::<Result<Vec<_>, _>>()?;
        for row in 0..b.num_rows() {
            out.push_str(if first { "\n  {" } else { ",\n  {" });
            first = false;
            for (i, f) in fmts.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{}: ", names[i]);
                let col = b.column(i);
                if col.is_null(row) {
                    out.push_str("null");
                    continue;
                }
                let text = f.value(row).to_string();
                let finite = text.parse::<f64>().is_ok_and(f64::is_finite);
                if is_number(col.data_type()) && finite {
                    out.push_str(&text);
                } else {
                    out.push_str(&serde_json::to_string(&text).expect("a string serializes"));
                }
            }
            out.push('}');
        }
    }
    out.push_str(if first { "]\n" } else { "\n]\n" });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Decimal128Array, Int32Array, StringArray};
    use datafusion::arrow::datatypes::{Field, Schema};
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
    }

    #[test]
    fn table_shows_the_header_of_an_empty_result() {
        let (s, _) = batch();
        let t = render(Format::Table, &s, &[]).unwrap();
        assert!(t.contains("| n | s | d |"), "{t}");
    }
}
