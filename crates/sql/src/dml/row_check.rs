//! Whether a row can be written to its table, before it is: every value
//! fits its column (NOT NULL, lengths, decimal ranges), the encoded row fits
//! a page, and every index key fits an index entry; and values and rows as
//! an error message shows them.

use strata_storage::Table;
use strata_storage::btree::MAX_KEY;
use strata_storage::page::MAX_TUPLE;
use strata_storage::row::{Column, DataType, Schema, Value};

/// A value as it appears in an error message (long strings cut short).
pub(crate) fn shown(v: &Value, ty: &DataType) -> String {
    match v {
        Value::Str(s) if s.chars().count() > 40 => {
            format!("'{}…'", s.chars().take(40).collect::<String>())
        }
        Value::Str(s) => format!("'{s}'"),
        v => v.display(ty),
    }
}

/// Why `v` cannot be stored in column `c`, naming the column and the value.
pub(crate) fn check_value(c: &Column, v: &Value) -> Result<(), String> {
    let col = || {
        format!(
            "column '{}' ({}{})",
            c.name,
            c.ty,
            if c.nullable { "" } else { " NOT NULL" }
        )
    };
    if v.is_null() {
        return if c.nullable {
            Ok(())
        } else {
            Err(format!("{}: NULL in a NOT NULL column", col()))
        };
    }
    if c.ty.check(v).is_ok() {
        return Ok(());
    }
    Err(match (&c.ty, v) {
        (DataType::Char { len } | DataType::Varchar { len }, Value::Str(s)) => format!(
            "{}: {} is {} bytes, longer than {len}",
            col(),
            shown(v, &c.ty),
            s.len()
        ),
        (DataType::Decimal { scale, .. }, Value::Decimal(d)) => format!(
            "{}: {} is out of range",
            col(),
            strata_storage::row::format_decimal(*d, *scale)
        ),
        _ => format!(
            "{}: a {} value {} does not fit",
            col(),
            v.type_name(),
            shown(v, &c.ty)
        ),
    })
}

/// Checks that `row` can be stored in `table`: every value fits its column,
/// the row fits a page and every index key fits an index entry. `scratch`
/// receives the encoded row.
pub(crate) fn check_row(table: &Table, row: &[Value], scratch: &mut Vec<u8>) -> Result<(), String> {
    let schema = table.schema();
    for (i, (c, v)) in schema.columns.iter().zip(row).enumerate() {
        if !table.layout().is_address(i) {
            check_value(c, v)?;
        }
    }
    let size = table
        .encode_checked(row, scratch)
        .map_err(|e| e.to_string())?;
    if size > MAX_TUPLE {
        // Name the longest string: a TEXT value is as long as a page allows.
        let widest = schema
            .columns
            .iter()
            .zip(row)
            .filter_map(|(c, v)| match v {
                Value::Str(s) => Some((c, s.len())),
                _ => None,
            })
            .max_by_key(|(_, n)| *n)
            .map(|(c, n)| format!("; column '{}' ({}) holds {n} of them", c.name, c.ty))
            .unwrap_or_default();
        return Err(format!(
            "the row takes {size} bytes, more than a page holds ({MAX_TUPLE}){widest}"
        ));
    }
    for i in table.indexes() {
        let key = i.key_of_row(row).len();
        if key > MAX_KEY {
            return Err(format!(
                "index '{}' cannot hold its key of {key} bytes (at most {MAX_KEY})",
                i.def.name
            ));
        }
    }
    Ok(())
}

/// A row for an error message: its first values.
pub(crate) fn row_text(row: &[Value], schema: &Schema) -> String {
    let mut parts: Vec<String> = row
        .iter()
        .zip(&schema.columns)
        .take(6)
        .map(|(v, c)| shown(v, &c.ty))
        .collect();
    if row.len() > 6 {
        parts.push("…".into());
    }
    format!("({})", parts.join(", "))
}
