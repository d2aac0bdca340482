//! Expanded display (`\x`), as psql draws it: each row a record, one
//! `column | value` line per field, records headed `-[ RECORD n ]---`.

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

/// The result as records; nothing for a statement that answers no columns,
/// `(0 rows)` for an empty result.
pub fn render(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<String, ArrowError> {
    if schema.fields().is_empty() {
        return Ok(String::new());
    }
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let opts = FormatOptions::default();
    let mut records: Vec<Vec<String>> = Vec::new();
    for b in batches {
        let columns = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect::<Result<Vec<_>, _>>()?;
        for row in 0..b.num_rows() {
            records.push(columns.iter().map(|f| f.value(row).to_string()).collect());
        }
    }
    if records.is_empty() {
        return Ok("(0 rows)\n".into());
    }
    let name_width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let value_width = records
        .iter()
        .flatten()
        .flat_map(|v| v.lines())
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (i, record) in records.iter().enumerate() {
        let head = format!("-[ RECORD {} ]", i + 1);
        let fill = (name_width + 3 + value_width).saturating_sub(head.chars().count());
        out.push_str(&head);
        out.push_str(&"-".repeat(fill));
        out.push('\n');
        for (name, value) in names.iter().zip(record) {
            let mut lines = value.lines();
            let first = lines.next().unwrap_or("");
            out.push_str(format!("{name:<name_width$} | {first}").trim_end());
            out.push('\n');
            // A value of several lines continues under its first line.
            for more in lines {
                out.push_str(format!("{:<name_width$} | {more}", "").trim_end());
                out.push('\n');
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    #[test]
    fn each_row_is_a_record_of_column_value_lines() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, true),
            Field::new("owner", DataType::Utf8, true),
        ]));
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int32Array::from(vec![Some(1), None])),
                Arc::new(StringArray::from(vec![Some("ada"), Some("a\nb")])),
            ],
        )
        .unwrap();
        assert_eq!(
            render(&schema, &[b]).unwrap(),
            "-[ RECORD 1 ]\n\
             id    | 1\n\
             owner | ada\n\
             -[ RECORD 2 ]\n\
             id    |\n\
             owner | a\n      | b\n"
        );
        assert_eq!(render(&schema, &[]).unwrap(), "(0 rows)\n");
        assert_eq!(render(&Arc::new(Schema::empty()), &[]).unwrap(), "");
    }
}
