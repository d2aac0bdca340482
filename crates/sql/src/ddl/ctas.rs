//! `CREATE TABLE t AS SELECT ...`: the query runs (seeing one committed
//! state, as every query), its Arrow schema becomes the table's and its rows
//! are loaded into it in one load, which commits the table and its rows
//! together (a failure leaves no table).
//!
//! Types: 8- to 32-bit integers → INT, 64-bit (and unsigned 32/64-bit) →
//! BIGINT, floats → DOUBLE, DECIMAL(p,s) → DECIMAL(p,s) with p ≤ 18, or
//! DECIMAL(18,s) for a wider one (such as `sum`'s DECIMAL(38,0); a value
//! that does not fit is an error naming the column), DATE, TIMESTAMP (no
//! time zone), strings → TEXT, BOOLEAN, and a column of only NULLs → TEXT.
//! Every column is nullable, as in PostgreSQL. Other types are refused
//! naming the column: CAST it in the query.

use std::sync::Arc;

use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{DataType as ArrowType, Field};
use datafusion::error::DataFusionError;
use datafusion::execution::context::SessionContext;
use strata_storage::Database;
use strata_storage::db::{NoProgress, TableOptions};
use strata_storage::row::{Column, DataType, Schema, TEXT_LEN};

use crate::ddl::object::{Changed, storage};
use crate::error::SqlError;
use strata_columns::convert::{arrow_type, arrow_values};

/// The strata type of a query column; the error says why there is none.
fn column_type(f: &Field) -> Result<DataType, String> {
    Ok(match f.data_type() {
        ArrowType::Int8
        | ArrowType::Int16
        | ArrowType::Int32
        | ArrowType::UInt8
        | ArrowType::UInt16 => DataType::Int32,
        ArrowType::Int64 | ArrowType::UInt32 | ArrowType::UInt64 => DataType::Int64,
        ArrowType::Float16 | ArrowType::Float32 | ArrowType::Float64 => DataType::Float64,
        ArrowType::Decimal32(p, s)
        | ArrowType::Decimal64(p, s)
        | ArrowType::Decimal128(p, s)
        | ArrowType::Decimal256(p, s) => {
            let scale = u8::try_from(*s)
                .ok()
                .filter(|s| *s <= 18)
                .ok_or_else(|| format!("DECIMAL scale {s} (strata has scales 0..=18)"))?;
            DataType::Decimal {
                precision: (*p).clamp(scale.max(1), 18),
                scale,
            }
        }
        ArrowType::Date32 | ArrowType::Date64 => DataType::Date,
        ArrowType::Timestamp(_, None) => DataType::Timestamp,
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View | ArrowType::Null => {
            DataType::Varchar { len: TEXT_LEN }
        }
        ArrowType::Boolean => DataType::Bool,
        ArrowType::Timestamp(_, Some(tz)) => {
            return Err(format!(
                "TIMESTAMP WITH TIME ZONE ({tz}) is not a strata type; CAST it to TIMESTAMP"
            ));
        }
        t => return Err(format!("{t} is not a strata type; CAST it in the query")),
    })
}

/// Runs `CREATE TABLE name AS query`.
pub(crate) fn run(
    ctx: &SessionContext,
    runtime: &tokio::runtime::Runtime,
    db: &Database,
    name: &str,
    query: &str,
    if_not_exists: bool,
) -> Result<Changed, SqlError> {
    let verb = format!("CREATE TABLE {name} AS");
    if let Some(t) = db
        .table_names()
        .into_iter()
        .find(|t| t.eq_ignore_ascii_case(name))
    {
        if if_not_exists {
            return Ok(Changed::default());
        }
        return Err(SqlError::Query(format!(
            "{verb}: table '{t}' already exists"
        )));
    }
    let (schema, batches) = {
        let _snapshot = db.read_snapshot();
        runtime
            .block_on(async {
                let df = ctx.sql(query).await?;
                let schema = Arc::new(df.schema().as_arrow().clone());
                let batches = df.collect().await?;
                Ok::<_, DataFusionError>((schema, batches))
            })
            .map_err(SqlError::from)?
    };
    let mut columns = Vec::new();
    for f in schema.fields() {
        let ty = column_type(f)
            .map_err(|why| SqlError::Query(format!("{verb}: column '{}': {why}", f.name())))?;
        columns.push(Column::new(f.name(), ty, true));
    }
    let strata = Schema::new(columns).map_err(|e| SqlError::Query(format!("{verb}: {e}")))?;
    let mut load = db
        .begin_create_load(name, strata.clone(), TableOptions::default(), vec![])
        .map_err(|e| storage(&verb, e))?;
    let strict = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    let mut row_no = 0u64;
    for b in &batches {
        let mut rows = vec![Vec::with_capacity(strata.len()); b.num_rows()];
        for (array, c) in b.columns().iter().zip(&strata.columns) {
            let data = |e: String| SqlError::Data(format!("{verb}: column '{}': {e}", c.name));
            let want = arrow_type(&c.ty);
            let array = if array.data_type() == &want {
                array.clone()
            } else {
                cast_with_options(array, &want, &strict).map_err(|e| data(e.to_string()))?
            };
            for (row, v) in rows
                .iter_mut()
                .zip(arrow_values(array.as_ref(), &c.ty).map_err(data)?)
            {
                row.push(v);
            }
        }
        for row in rows {
            row_no += 1;
            load.append(&row)
                .map_err(|e| SqlError::Data(format!("{verb}: row {row_no}: {e}")))?;
        }
    }
    load.commit(&NoProgress).map_err(|e| storage(&verb, e))?;
    Ok(Changed {
        created: vec![name.to_string()],
        dropped: vec![],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::TimeUnit;

    #[test]
    fn query_types_become_strata_types() {
        let f = |t: ArrowType| column_type(&Field::new("c", t, true));
        assert_eq!(f(ArrowType::Int16), Ok(DataType::Int32));
        assert_eq!(f(ArrowType::UInt64), Ok(DataType::Int64));
        assert_eq!(
            f(ArrowType::Decimal128(38, 0)),
            Ok(DataType::Decimal {
                precision: 18,
                scale: 0
            })
        );
        assert_eq!(
            f(ArrowType::Utf8View),
            Ok(DataType::Varchar { len: TEXT_LEN })
        );
        assert_eq!(
            f(ArrowType::Timestamp(TimeUnit::Microsecond, None)),
            Ok(DataType::Timestamp)
        );
        assert!(f(ArrowType::Decimal128(38, 20)).is_err());
        assert!(
            f(ArrowType::Interval(
                datafusion::arrow::datatypes::IntervalUnit::DayTime
            ))
            .unwrap_err()
            .contains("CAST")
        );
    }
}
