//! `strata_info(['table'])` and `strata_check()`: `strata info` and `strata
//! check` as SQL table functions, over the reports of `strata_inspect`.
//!
//! They let a client of `strata serve` (psql, a driver) ask what the
//! database holds and whether it is sound, and they are how the `strata`
//! CLI asks a running server for `strata info` and `strata check`, which
//! the server's `LOCK` would otherwise refuse. Like `strata_waste`, they do
//! their work when the statement is planned, under the statement's read
//! snapshot: no commit lands half-way through a check.
//!
//! - `strata_info()`: one row per table: `table_name`, `format` (rows or
//!   columns), `rows`, `pages`, `bytes` and `info`, the JSON object `strata
//!   info --json` prints for it.
//! - `strata_check()`: one row per `line` of `strata check`'s report; a
//!   problem found is the statement's error, naming where it is.
//! - `strata_describe(['table'])`: one row per `line` of what `\d` shows in
//!   `strata sql` (the tables, or one table's columns and indexes), for the
//!   interactive `strata sql` beside a server.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{DataFusionError, Result, ScalarValue, plan_err};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::Expr;
use strata_storage::Database;
use strata_storage::progress::NoProgress;

use crate::dml::txn::Writes;

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// `strata_info(['table'])`.
pub struct InfoFunction {
    db: Arc<Database>,
}

/// `strata_describe(['table'])`.
pub struct DescribeFunction {
    db: Arc<Database>,
}

impl std::fmt::Debug for DescribeFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DescribeFunction")
    }
}

impl DescribeFunction {
    pub fn new(db: Arc<Database>) -> DescribeFunction {
        DescribeFunction { db }
    }
}

/// `strata_check()`.
pub struct CheckFunction {
    writes: Arc<Writes>,
}

impl std::fmt::Debug for InfoFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InfoFunction")
    }
}

impl std::fmt::Debug for CheckFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CheckFunction")
    }
}

impl InfoFunction {
    pub fn new(db: Arc<Database>) -> InfoFunction {
        InfoFunction { db }
    }
}

impl CheckFunction {
    pub fn new(writes: Arc<Writes>) -> CheckFunction {
        CheckFunction { writes }
    }
}

/// The columns of `strata_info(...)`.
pub fn info_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("table_name", DataType::Utf8, false),
        Field::new("format", DataType::Utf8, false),
        Field::new("rows", DataType::UInt64, false),
        Field::new("pages", DataType::UInt64, false),
        Field::new("bytes", DataType::UInt64, false),
        Field::new("info", DataType::Utf8, false),
    ]))
}

/// The column of `strata_check()` and `strata_describe()`.
pub fn lines_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("line", DataType::Utf8, false)]))
}

fn failed(e: Failure) -> DataFusionError {
    DataFusionError::External(e)
}

/// A table of one text column, `line`.
fn lines(lines: Vec<String>) -> Result<Arc<dyn TableProvider>> {
    let batch = RecordBatch::try_new(lines_schema(), vec![Arc::new(StringArray::from(lines))])?;
    Ok(Arc::new(MemTable::try_new(
        lines_schema(),
        vec![vec![batch]],
    )?))
}

/// The one optional argument of `function`: a table name.
fn table_argument<'a>(function: &str, args: &'a TableFunctionArgs) -> Result<Option<&'a str>> {
    match args.exprs() {
        [] => Ok(None),
        [Expr::Literal(ScalarValue::Utf8(Some(t)), _)] => Ok(Some(t.as_str())),
        _ => plan_err!(
            "{function} takes no argument or one table name as a string literal, e.g. {function}('lineitem')"
        ),
    }
}

impl TableFunctionImpl for InfoFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let only = table_argument("strata_info", &args)?;
        let tables = strata_inspect::info::tables::<Failure>(&self.db, only).map_err(failed)?;
        let text = |key: &str| -> ArrayRef {
            Arc::new(StringArray::from(
                tables
                    .iter()
                    .map(|t| t[key].as_str().unwrap_or("").to_string())
                    .collect::<Vec<_>>(),
            ))
        };
        let count = |key: &str| -> ArrayRef {
            Arc::new(
                tables
                    .iter()
                    .map(|t| t[key].as_u64().unwrap_or(0))
                    .collect::<UInt64Array>(),
            )
        };
        let info: ArrayRef = Arc::new(StringArray::from(
            tables.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
        ));
        let batch = RecordBatch::try_new(
            info_schema(),
            vec![
                text("table"),
                text("format"),
                count("rows"),
                count("pages"),
                count("bytes"),
                info,
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(
            info_schema(),
            vec![vec![batch]],
        )?))
    }
}

impl TableFunctionImpl for CheckFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        if !args.exprs().is_empty() {
            return plan_err!("strata_check takes no argument: it checks every table");
        }
        // A block that has written reads its own uncommitted pages through
        // the buffer pool while the heap is read from the device: the two
        // halves of a check would disagree.
        if self.writes.writing() {
            return plan_err!(
                "strata_check() checks the committed database and cannot run inside a transaction block that has written: COMMIT or ROLLBACK first (SQLSTATE 25001)"
            );
        }
        lines(
            strata_inspect::check::database::<Failure>(self.writes.database(), &NoProgress)
                .map_err(failed)?,
        )
    }
}

impl TableFunctionImpl for DescribeFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let table = table_argument("strata_describe", &args)?;
        let text = crate::ddl::describe::text(&self.db, table)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        lines(text.lines().map(str::to_string).collect())
    }
}
