//! Files read in a query: the table functions `read_csv('x.csv')` and
//! `read_parquet('x.parquet')`, and a file named as a table.
//!
//! `read_csv` infers the column types from the whole file as `strata load`
//! does for a new table (`strata_load::infer_csv_schema`: BOOLEAN, BIGINT,
//! DECIMAL(p,s), DOUBLE, DATE or VARCHAR(n), nullable where a field is
//! empty), then reads the rows with the same parser, so a query reads a
//! file exactly as a load of it would. Options come as strings:
//! `read_csv('x.csv', 'header=false', 'delim=;', 'nullstr=NA')`.
//! `read_parquet` takes the file's own schema and reads it with the
//! `parquet` crate (DataFusion's Parquet support is not built).
//!
//! A file named in FROM as a table, `SELECT * FROM 'x.csv'`, is read the
//! same way, by its extension, when no table has that name ([`FileTables`]).
//!
//! The file is read when the query runs, on a thread of its own, in
//! batches; a query that stops early (`LIMIT`) stops the reading. An error
//! names the function and the file, and for CSV the line and the column.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::catalog::{
    DynamicFileCatalog, TableFunctionArgs, TableFunctionImpl, TableProvider, UrlTableFactory,
};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use strata_load::{CsvDialect, CsvRowReader, infer_csv_schema};
use strata_storage::row::{Schema, Value};

use crate::error::SqlError;
use strata_columns::convert::{ValueBatchBuilder, arrow_schema};

/// Rows per batch a file is read in.
const BATCH_ROWS: usize = 8192;

/// A bad file or argument, as a query error of the function (exit 3 for
/// the file's contents, 2 for a wrong call).
fn data_error(function: &str, msg: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::External(Box::new(SqlError::Data(format!("{function}: {msg}"))))
}

fn usage(function: &str, msg: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Plan(format!("{function}: {msg}"))
}

/// The file a table function names (its first argument, a string).
fn path_arg(function: &str, args: &[Expr]) -> Result<PathBuf> {
    match args.first() {
        Some(Expr::Literal(ScalarValue::Utf8(Some(p)), _))
        | Some(Expr::Literal(ScalarValue::LargeUtf8(Some(p)), _))
        | Some(Expr::Literal(ScalarValue::Utf8View(Some(p)), _)) => Ok(PathBuf::from(p)),
        _ => Err(usage(
            function,
            format!(
                "the first argument is the file's name as a string, e.g. {function}('data.csv')"
            ),
        )),
    }
}

/// An option `'name=value'` (a string: DataFusion plans a table function's
/// arguments before the function sees them, so DuckDB's `name = value`
/// does not reach it).
fn option(function: &str, e: &Expr) -> Result<(String, String)> {
    if let Expr::Literal(ScalarValue::Utf8(Some(s)), _) = e
        && let Some((name, value)) = s.split_once('=')
    {
        return Ok((name.trim().to_ascii_lowercase(), value.to_string()));
    }
    Err(usage(
        function,
        format!("after the file's name come options as strings 'name=value', not {e}"),
    ))
}

/// `read_csv(file [, 'header=…'] [, 'delim=…'] [, 'nullstr=…'])`.
#[derive(Debug, Default)]
pub struct ReadCsv;

impl TableFunctionImpl for ReadCsv {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        const F: &str = "read_csv";
        let args = args.exprs();
        let path = path_arg(F, args)?;
        let mut dialect = CsvDialect::default();
        for a in &args[1..] {
            let (name, value) = option(F, a)?;
            match name.as_str() {
                "header" if value.eq_ignore_ascii_case("true") => dialect.header = true,
                "header" if value.eq_ignore_ascii_case("false") => dialect.header = false,
                "delim" | "delimiter" | "sep" if value.len() == 1 && value.is_ascii() => {
                    dialect.delimiter = value.as_bytes()[0]
                }
                "nullstr" | "null" => dialect.null_string = value,
                _ => {
                    return Err(usage(
                        F,
                        format!(
                            "option '{name}={value}' is not one of 'header=true|false', \
                             'delim=c' (one ASCII character), 'nullstr=text'"
                        ),
                    ));
                }
            }
        }
        csv_table(path, dialect)
    }
}

/// A CSV file as a table, its types inferred.
fn csv_table(path: PathBuf, dialect: CsvDialect) -> Result<Arc<dyn TableProvider>> {
    let inferred = infer_csv_schema(&path, &dialect).map_err(|e| data_error("read_csv", e))?;
    let part = CsvPartition {
        arrow: arrow_schema(&inferred.schema),
        schema: inferred.schema,
        path,
        dialect,
    };
    let arrow = part.arrow.clone();
    let parts: Vec<Arc<dyn PartitionStream>> = vec![Arc::new(part)];
    Ok(Arc::new(StreamingTable::try_new(arrow, parts)?))
}

/// A Parquet file as a table.
fn parquet_table(path: PathBuf) -> Result<Arc<dyn TableProvider>> {
    let schema = parquet_reader(&path)
        .map_err(|e| data_error("read_parquet", e))?
        .schema()
        .clone();
    let part = ParquetPartition { path, schema };
    let schema = part.schema.clone();
    let parts: Vec<Arc<dyn PartitionStream>> = vec![Arc::new(part)];
    Ok(Arc::new(StreamingTable::try_new(schema, parts)?))
}

/// A file named as a table, `SELECT * FROM 'x.csv'`: read as `read_csv` or
/// `read_parquet` read it, by its extension, when no table has that name.
#[derive(Debug, Default)]
pub struct FileTables;

#[async_trait]
impl UrlTableFactory for FileTables {
    async fn try_new(&self, url: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let path = PathBuf::from(url);
        match crate::files::copy::FileFormat::of_path(&path) {
            Some(crate::files::copy::FileFormat::Csv) => {
                let tsv = path
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("tsv"));
                let dialect = CsvDialect {
                    delimiter: if tsv { b'\t' } else { b',' },
                    ..CsvDialect::default()
                };
                csv_table(path, dialect).map(Some)
            }
            Some(crate::files::copy::FileFormat::Parquet) => parquet_table(path).map(Some),
            None => Ok(None),
        }
    }
}

/// `ctx` with files readable by name in FROM ([`FileTables`]).
pub fn with_file_tables(ctx: SessionContext) -> SessionContext {
    let tables = Arc::new(DynamicFileCatalog::new(
        Arc::clone(ctx.state().catalog_list()),
        Arc::new(FileTables),
    ));
    ctx.into_state_builder()
        .with_catalog_list(tables)
        .build()
        .into()
}

/// `read_parquet(file)`.
#[derive(Debug, Default)]
pub struct ReadParquet;

impl TableFunctionImpl for ReadParquet {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        const F: &str = "read_parquet";
        let args = args.exprs();
        let path = path_arg(F, args)?;
        if let Some(a) = args.get(1) {
            return Err(usage(F, format!("takes only the file's name, not {a}")));
        }
        parquet_table(path)
    }
}

fn parquet_reader(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs `produce` on a thread of its own, handing its batches to the
/// returned stream; `produce` stops when its `send` answers false (the
/// stream was dropped).
fn spawn_reader(
    schema: SchemaRef,
    produce: impl FnOnce(&dyn Fn(Result<RecordBatch>) -> bool) + Send + 'static,
) -> SendableRecordBatchStream {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(2);
    let job = move || {
        let send = |b: Result<RecordBatch>| tx.blocking_send(b).is_ok();
        produce(&send);
    };
    match tokio::runtime::Handle::try_current() {
        Ok(h) => {
            h.spawn_blocking(job);
        }
        Err(_) => {
            std::thread::spawn(job);
        }
    }
    let stream =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
    Box::pin(RecordBatchStreamAdapter::new(schema, stream))
}

/// A CSV file's rows as one partition.
#[derive(Debug, Clone)]
struct CsvPartition {
    path: PathBuf,
    dialect: CsvDialect,
    schema: Schema,
    arrow: SchemaRef,
}

impl CsvPartition {
    fn produce(&self, send: &dyn Fn(Result<RecordBatch>) -> bool) {
        const F: &str = "read_csv";
        let fail = |e: String| {
            send(Err(data_error(F, e)));
        };
        let mut reader = match CsvRowReader::open(&self.path, &self.dialect, self.schema.clone()) {
            Ok(r) => r,
            Err(e) => return fail(e.to_string()),
        };
        let mut batch = ValueBatchBuilder::new(&self.schema.types(), self.arrow.clone());
        let mut row: Vec<Value> = Vec::with_capacity(self.schema.len());
        loop {
            match reader.next_row(&mut row) {
                Ok(true) => {
                    if let Err(e) = batch.push_row(&row) {
                        return fail(e.to_string());
                    }
                    if batch.len() >= BATCH_ROWS {
                        let b = batch.finish().map_err(DataFusionError::from);
                        if !send(b) {
                            return;
                        }
                    }
                }
                Ok(false) => break,
                Err(e) => return fail(e.to_string()),
            }
        }
        if !batch.is_empty() {
            send(batch.finish().map_err(DataFusionError::from));
        }
    }
}

impl PartitionStream for CsvPartition {
    fn schema(&self) -> &SchemaRef {
        &self.arrow
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let me = self.clone();
        spawn_reader(self.arrow.clone(), move |send| me.produce(send))
    }
}

/// A Parquet file's rows as one partition.
#[derive(Debug, Clone)]
struct ParquetPartition {
    path: PathBuf,
    schema: SchemaRef,
}

impl ParquetPartition {
    fn produce(&self, send: &dyn Fn(Result<RecordBatch>) -> bool) {
        const F: &str = "read_parquet";
        let reader = match parquet_reader(&self.path).and_then(|b| {
            b.with_batch_size(BATCH_ROWS)
                .build()
                .map_err(|e| e.to_string())
        }) {
            Ok(r) => r,
            Err(e) => {
                send(Err(data_error(F, e)));
                return;
            }
        };
        let path = self.path.display().to_string();
        for b in reader {
            let b = b.map_err(|e| data_error(F, format!("{path}: {e}")));
            let failed = b.is_err();
            if !send(b) || failed {
                return;
            }
        }
    }
}

impl PartitionStream for ParquetPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let me = self.clone();
        spawn_reader(self.schema.clone(), move |send| me.produce(send))
    }
}
