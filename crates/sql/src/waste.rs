//! `strata_waste(['table'])`: `strata waste` as a SQL table function, one
//! row per column (its encoding waste) and per heap or index (its unused
//! space), from [`strata_storage::maintenance::waste::analyze`]. The table is read when
//! the statement is planned, as `ANALYZE` reads it.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Builder, StringBuilder, UInt64Builder};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{DataFusionError, Result, ScalarValue, plan_err};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::Expr;
use strata_storage::Database;
use strata_storage::maintenance::waste::{TableWaste, analyze};

/// The table function; registered as `strata_waste`.
pub struct WasteFunction {
    db: Arc<Database>,
}

impl std::fmt::Debug for WasteFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WasteFunction")
    }
}

impl WasteFunction {
    pub fn new(db: Arc<Database>) -> WasteFunction {
        WasteFunction { db }
    }
}

/// The columns of `strata_waste(...)`.
pub fn schema() -> SchemaRef {
    let text = |n: &str, null: bool| Field::new(n, DataType::Utf8, null);
    let count = |n: &str, null: bool| Field::new(n, DataType::UInt64, null);
    Arc::new(Schema::new(vec![
        text("table_name", false),
        // A column's, an index's name, or "heap".
        text("object", false),
        // "column", or the kind of unused space: "heap free", "heap dead",
        // "heap overhead", "index leaf free".
        text("kind", false),
        text("declared_type", true),
        text("tightest_type", true),
        text("encoding", true),
        count("values", true),
        count("nulls", true),
        // A column's bytes as declared; the unused bytes otherwise.
        count("bytes", false),
        count("tight_bytes", true),
        count("wasted_bytes", false),
        Field::new("pct_of_heap", DataType::Float64, false),
        // How a column is stored now (`strata compact`: types as hints) and
        // its values' bytes so.
        text("stored_as", true),
        count("stored_bytes", true),
    ]))
}

impl TableFunctionImpl for WasteFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let names = match args.exprs() {
            [] => self.db.table_names(),
            [Expr::Literal(ScalarValue::Utf8(Some(t)), _)] => vec![t.clone()],
            _ => {
                return plan_err!(
                    "strata_waste takes no argument or one table name as a string literal, e.g. strata_waste('lineitem')"
                );
            }
        };
        let mut reports = Vec::new();
        for name in &names {
            let table = self
                .db
                .table(name)
                .map_err(|e| DataFusionError::Plan(format!("strata_waste: {e}")))?;
            reports.push(analyze(&table).map_err(|e| DataFusionError::External(Box::new(e)))?);
        }
        let batch = rows(&reports)?;
        Ok(Arc::new(MemTable::try_new(schema(), vec![vec![batch]])?))
    }
}

fn rows(reports: &[TableWaste]) -> Result<RecordBatch> {
    let mut table = StringBuilder::new();
    let mut object = StringBuilder::new();
    let mut kind = StringBuilder::new();
    let mut declared = StringBuilder::new();
    let mut tightest = StringBuilder::new();
    let mut encoding = StringBuilder::new();
    let mut values = UInt64Builder::new();
    let mut nulls = UInt64Builder::new();
    let mut bytes = UInt64Builder::new();
    let mut tight = UInt64Builder::new();
    let mut wasted = UInt64Builder::new();
    let mut pct = Float64Builder::new();
    let mut stored_as = StringBuilder::new();
    let mut stored_bytes = UInt64Builder::new();
    for w in reports {
        let heap = w.heap_bytes();
        let share = |b: u64| {
            if heap == 0 {
                0.0
            } else {
                100.0 * b as f64 / heap as f64
            }
        };
        for c in &w.columns {
            table.append_value(&w.table);
            object.append_value(&c.column);
            kind.append_value("column");
            declared.append_value(&c.declared);
            tightest.append_value(&c.tightest_type);
            encoding.append_value(c.suggestion.to_string());
            values.append_value(c.values);
            nulls.append_value(c.nulls);
            bytes.append_value(c.stored_bytes);
            tight.append_value(c.tight_bytes);
            wasted.append_value(c.wasted_bytes());
            pct.append_value(share(c.wasted_bytes()));
            stored_as.append_value(&c.encoding);
            stored_bytes.append_value(c.encoded_bytes);
        }
        let h = &w.heap;
        let unused = [
            ("heap".to_string(), "heap free", h.free_bytes),
            ("heap".to_string(), "heap dead", h.dead_bytes),
            ("heap".to_string(), "heap overhead", h.overhead_bytes),
        ]
        .into_iter()
        .chain(
            w.indexes
                .iter()
                .map(|i| (i.name.clone(), "index leaf free", i.leaf_free_bytes)),
        );
        for (name, what, b) in unused {
            table.append_value(&w.table);
            object.append_value(name);
            kind.append_value(what);
            declared.append_null();
            tightest.append_null();
            encoding.append_null();
            values.append_null();
            nulls.append_null();
            bytes.append_value(b);
            tight.append_null();
            wasted.append_value(b);
            pct.append_value(share(b));
            stored_as.append_null();
            stored_bytes.append_null();
        }
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(table.finish()),
        Arc::new(object.finish()),
        Arc::new(kind.finish()),
        Arc::new(declared.finish()),
        Arc::new(tightest.finish()),
        Arc::new(encoding.finish()),
        Arc::new(values.finish()),
        Arc::new(nulls.finish()),
        Arc::new(bytes.finish()),
        Arc::new(tight.finish()),
        Arc::new(wasted.finish()),
        Arc::new(pct.finish()),
        Arc::new(stored_as.finish()),
        Arc::new(stored_bytes.finish()),
    ];
    Ok(RecordBatch::try_new(schema(), columns)?)
}
