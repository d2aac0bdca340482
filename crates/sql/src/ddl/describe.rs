//! What a table holds, in SQL's type names: `DESCRIBE t` (and `DESC t`) over
//! a strata table answers from the catalog (`CHAR(10)`, not Arrow's `Utf8`),
//! `DESCRIBE` of anything else (a query, an `information_schema` view)
//! answers DataFusion's schema under the nearest SQL names, and `\d` is the
//! session's text listing. Every strata type's name comes from
//! [`strata_storage::row::DataType::sql_name`].

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{DescribeAlias, Statement};
use strata_storage::{Database, Table};

use crate::ddl::{Name, object_name};
use crate::error::SqlError;

/// The table a `DESCRIBE t` / `DESC t` names, as written; `None` for any
/// other statement (`DESCRIBE SELECT …` included) or a name with a schema.
pub fn described(stmt: &DfStatement) -> Option<Name> {
    match stmt {
        DfStatement::Statement(s) => match &**s {
            Statement::ExplainTable {
                describe_alias: DescribeAlias::Describe | DescribeAlias::Desc,
                table_name,
                ..
            } => object_name(table_name, "table").ok(),
            _ => None,
        },
        _ => None,
    }
}

/// The strata table `name` names: exactly, or an unquoted name ignoring case.
pub fn find(db: &Database, name: &Name) -> Option<String> {
    let names = db.table_names();
    names
        .iter()
        .find(|t| **t == name.text)
        .or_else(|| names.iter().find(|t| name.names(t)))
        .cloned()
}

/// DataFusion's DESCRIBE columns: `column_name`, `data_type`, `is_nullable`.
fn rows(columns: Vec<(String, String, bool)>) -> Result<(SchemaRef, Vec<RecordBatch>), SqlError> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("column_name", ArrowType::Utf8, false),
        Field::new("data_type", ArrowType::Utf8, false),
        Field::new("is_nullable", ArrowType::Utf8, false),
    ]));
    let (mut names, mut types, mut nullable) = (vec![], vec![], vec![]);
    for (n, t, null) in columns {
        names.push(n);
        types.push(t);
        nullable.push(if null { "YES" } else { "NO" });
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(names)),
        Arc::new(StringArray::from(types)),
        Arc::new(StringArray::from(nullable)),
    ];
    let batch = RecordBatch::try_new(schema.clone(), cols)
        .map_err(|e| SqlError::Execution(e.to_string()))?;
    Ok((schema, vec![batch]))
}

/// `DESCRIBE t` of a strata table: its columns with their SQL types.
pub fn table(table: &Table) -> Result<(SchemaRef, Vec<RecordBatch>), SqlError> {
    rows(
        table
            .schema()
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.ty.sql_name(), c.nullable))
            .collect(),
    )
}

/// `DESCRIBE` of anything DataFusion describes (a query, a view): its Arrow
/// schema under SQL names.
pub fn arrow_schema(schema: &Schema) -> Result<(SchemaRef, Vec<RecordBatch>), SqlError> {
    rows(
        schema
            .fields()
            .iter()
            .map(|f| (f.name().clone(), sql_name(f.data_type()), f.is_nullable()))
            .collect(),
    )
}

/// The SQL name of an Arrow type, as DataFusion's SQL spells the type that
/// reads as it; Arrow's own name for a type SQL has no name for.
pub fn sql_name(t: &ArrowType) -> String {
    match t {
        ArrowType::Boolean => "BOOLEAN".into(),
        ArrowType::Int8 => "TINYINT".into(),
        ArrowType::Int16 => "SMALLINT".into(),
        ArrowType::Int32 => "INT".into(),
        ArrowType::Int64 => "BIGINT".into(),
        ArrowType::UInt8 => "TINYINT UNSIGNED".into(),
        ArrowType::UInt16 => "SMALLINT UNSIGNED".into(),
        ArrowType::UInt32 => "INT UNSIGNED".into(),
        ArrowType::UInt64 => "BIGINT UNSIGNED".into(),
        ArrowType::Float32 => "REAL".into(),
        ArrowType::Float64 => "DOUBLE".into(),
        ArrowType::Decimal128(p, s) | ArrowType::Decimal256(p, s) => format!("DECIMAL({p},{s})"),
        ArrowType::Date32 | ArrowType::Date64 => "DATE".into(),
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => "VARCHAR".into(),
        ArrowType::Timestamp(unit, tz) => {
            let precision = match unit {
                TimeUnit::Second => "(0)",
                TimeUnit::Millisecond => "(3)",
                TimeUnit::Microsecond => "",
                TimeUnit::Nanosecond => "(9)",
            };
            match tz {
                Some(_) => format!("TIMESTAMP{precision} WITH TIME ZONE"),
                None => format!("TIMESTAMP{precision}"),
            }
        }
        ArrowType::Null => "NULL".into(),
        other => other.to_string(),
    }
}

/// `\d`: every table with its rows, pages and indexes; or one table's
/// columns (SQL types), indexes and whether it has statistics.
pub fn text(db: &Database, table: Option<&str>) -> Result<String, SqlError> {
    let mut out = String::new();
    match table {
        None => {
            for name in db.table_names() {
                let t = db.table(&name)?;
                let idx: Vec<String> = t.indexes().iter().map(|i| i.def.name.clone()).collect();
                out.push_str(&format!(
                    "{name}: {} rows, {} pages; indexes: {}\n",
                    t.rows(),
                    t.heap().num_pages(),
                    if idx.is_empty() {
                        "none".into()
                    } else {
                        idx.join(", ")
                    }
                ));
            }
            out.push_str(&crate::ddl::view::list(db));
        }
        Some(name) => {
            if let Some(view) = crate::ddl::view::describe(db, name) {
                return Ok(view);
            }
            let t = db.table(name)?;
            for c in &t.schema().columns {
                out.push_str(&format!(
                    "  {} {}{}\n",
                    c.name,
                    c.ty.sql_name(),
                    if c.nullable { "" } else { " NOT NULL" }
                ));
            }
            for i in t.indexes() {
                out.push_str(&format!(
                    "  {}index {} ({}){}\n",
                    if i.def.unique { "unique " } else { "" },
                    i.def.name,
                    i.def.columns.join(", "),
                    if i.def.cache.is_empty() {
                        String::new()
                    } else {
                        format!(" caches ({})", i.def.cache.join(", "))
                    }
                ));
            }
            match db.table_stats(name)? {
                Some(_) => out.push_str("  statistics: analyzed\n"),
                None => out.push_str("  statistics: none (run ANALYZE)\n"),
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrow_types_read_as_their_sql_names() {
        assert_eq!(sql_name(&ArrowType::Int64), "BIGINT");
        assert_eq!(sql_name(&ArrowType::Utf8), "VARCHAR");
        assert_eq!(sql_name(&ArrowType::Decimal128(15, 2)), "DECIMAL(15,2)");
        assert_eq!(sql_name(&ArrowType::Date32), "DATE");
        assert_eq!(
            sql_name(&ArrowType::Timestamp(TimeUnit::Nanosecond, None)),
            "TIMESTAMP(9)"
        );
    }
}
