//! A statement's result: its Arrow batches as the plan produced them, handed
//! out through Arrow's C stream interface (the PyCapsule protocol,
//! `__arrow_c_stream__`) as many times as asked — each stream shares the
//! batches' buffers, so `pyarrow.table(r)`, `r.arrow()`, `r.df()` and
//! `polars.DataFrame(r)` read them in place — and row by row as Python
//! values (`fetchone`, `fetchmany`, `fetchall`) from a cursor position.

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};

use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use strata_sql::QueryResult;

use crate::values;

/// The result of one statement.
#[pyclass(module = "strata._strata", frozen)]
pub struct Result {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    rows: usize,
    /// For INSERT, UPDATE, DELETE and COPY: the rows they wrote (their one
    /// `count` row is not a result set).
    written: Option<u64>,
    elapsed_s: f64,
    io: strata_storage::device::IoCounters,
    /// The next row `fetch*` gives: (batch, row in batch, rows given).
    cursor: Mutex<(usize, usize)>,
}

impl Result {
    /// `r`, the result of statement `sql`.
    pub fn new(sql: &str, r: QueryResult) -> Result {
        let rows = r.rows();
        // A write's one `count` row is a count, not a result set (a query
        // may name a column `count` too: the statement's verb decides).
        let verb = strata_sql::statement::leading_words(sql, 1);
        let written = matches!(
            verb.first().map(String::as_str),
            Some("INSERT" | "UPDATE" | "DELETE" | "TRUNCATE" | "COPY")
        )
        .then(|| r.written())
        .flatten();
        Result {
            schema: r.schema,
            batches: r.batches.into_iter().filter(|b| b.num_rows() > 0).collect(),
            rows,
            written,
            elapsed_s: r.elapsed.as_secs_f64(),
            io: r.io,
            cursor: Mutex::new((0, 0)),
        }
    }

    /// A stream over the batches (sharing their buffers), cast to
    /// `requested` when a consumer asked for a schema.
    fn stream(
        &self,
        requested: Option<Schema>,
    ) -> std::result::Result<FFI_ArrowArrayStream, ArrowError> {
        let Some(want) = requested.filter(|w| w != self.schema.as_ref()) else {
            let reader = RecordBatchIterator::new(
                self.batches.clone().into_iter().map(Ok),
                self.schema.clone(),
            );
            return Ok(FFI_ArrowArrayStream::new(Box::new(reader)));
        };
        let want = Arc::new(want);
        let mut cast = Vec::with_capacity(self.batches.len());
        for b in &self.batches {
            if b.num_columns() != want.fields().len() {
                return Err(ArrowError::SchemaError(format!(
                    "the requested schema has {} columns; the result has {}",
                    want.fields().len(),
                    b.num_columns()
                )));
            }
            let columns = b
                .columns()
                .iter()
                .zip(want.fields())
                .map(|(c, f)| strata_sql::arrow::compute::cast(c, f.data_type()))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            cast.push(RecordBatch::try_new(want.clone(), columns)?);
        }
        let reader = RecordBatchIterator::new(cast.into_iter().map(Ok), want);
        Ok(FFI_ArrowArrayStream::new(Box::new(reader)))
    }

    /// Up to `n` rows from the cursor (all when `None`), moving it.
    fn fetch<'py>(&self, py: Python<'py>, n: Option<usize>) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let mut cursor = self.cursor.lock();
        let mut want = n.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        while want > 0 {
            let (b, r) = *cursor;
            let Some(batch) = self.batches.get(b) else {
                break;
            };
            let take = want.min(batch.num_rows() - r);
            out.extend(values::rows(py, batch, r, r + take)?);
            want -= take;
            *cursor = if r + take == batch.num_rows() {
                (b + 1, 0)
            } else {
                (b, r + take)
            };
        }
        Ok(out)
    }
}

/// The SQL name of an Arrow type as strata shows it.
fn sql_type(t: &arrow_schema::DataType) -> String {
    use arrow_schema::DataType as T;
    match t {
        T::Int8 | T::Int16 | T::Int32 | T::UInt8 | T::UInt16 => "INTEGER".into(),
        T::Int64 | T::UInt32 | T::UInt64 => "BIGINT".into(),
        T::Float16 | T::Float32 | T::Float64 => "DOUBLE".into(),
        T::Decimal128(p, s) => format!("DECIMAL({p},{s})"),
        T::Date32 | T::Date64 => "DATE".into(),
        T::Timestamp(_, _) => "TIMESTAMP".into(),
        T::Utf8 | T::LargeUtf8 | T::Utf8View => "VARCHAR".into(),
        T::Boolean => "BOOLEAN".into(),
        T::Null => "NULL".into(),
        other => other.to_string(),
    }
}

#[pymethods]
impl Result {
    /// The result as an Arrow C stream (the PyCapsule interface), sharing
    /// the batches' buffers; callable any number of times.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyCapsule>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let requested = match requested_schema {
            None => None,
            Some(capsule) => {
                let ptr = capsule
                    .pointer_checked(Some(c"arrow_schema"))?
                    .cast::<FFI_ArrowSchema>();
                // SAFETY: a capsule named "arrow_schema" holds an
                // ArrowSchema (the PyCapsule interface), which its owner
                // keeps alive while the capsule lives; it is only read.
                let ffi = unsafe { &*ptr.as_ptr() };
                Some(Schema::try_from(ffi).map_err(to_value_error)?)
            }
        };
        let stream = self.stream(requested).map_err(to_value_error)?;
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    /// The result as a `pyarrow.Table` (its buffers are the result's own).
    fn arrow<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        // Through a RecordBatchReader: `pyarrow.table(obj)` first asks
        // whether obj is a pandas DataFrame, which imports pandas (40 MiB).
        needs(py, "pyarrow", "arrow()")?
            .getattr("RecordBatchReader")?
            .call_method1("from_stream", (slf,))?
            .call_method0("read_all")
    }

    /// The result as a pandas DataFrame (through pyarrow).
    fn df<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        needs(slf.py(), "pandas", "df()")?;
        Self::arrow(slf)?.call_method0("to_pandas")
    }

    /// The result as a polars DataFrame (read from the Arrow stream).
    fn pl<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        needs(slf.py(), "polars", "pl()")?
            .getattr("DataFrame")?
            .call1((slf,))
    }

    /// The column names.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// The columns' SQL types (`INTEGER`, `DECIMAL(15,2)`, `VARCHAR`, ...).
    #[getter]
    fn types(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| sql_type(f.data_type()))
            .collect()
    }

    /// Whether the statement answers rows (a query, RETURNING) rather than
    /// a count of written rows or nothing (DDL, SET, BEGIN).
    #[getter]
    fn returns_rows(&self) -> bool {
        !self.schema.fields().is_empty() && self.written.is_none()
    }

    /// Rows written by INSERT/UPDATE/DELETE/COPY, else rows answered.
    #[getter]
    fn rowcount(&self) -> i64 {
        match self.written {
            Some(n) => i64::try_from(n).unwrap_or(i64::MAX),
            None if self.schema.fields().is_empty() => -1,
            None => i64::try_from(self.rows).unwrap_or(i64::MAX),
        }
    }

    /// Seconds from parsing to the last batch.
    #[getter]
    fn elapsed(&self) -> f64 {
        self.elapsed_s
    }

    /// The storage device's counters over the statement.
    #[getter]
    fn io<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("read_requests", self.io.read_requests)?;
        d.set_item("pages_read", self.io.pages_read)?;
        d.set_item("bytes_read", self.io.bytes_read())?;
        d.set_item("sequential_reads", self.io.sequential_reads)?;
        d.set_item("random_reads", self.io.random_reads)?;
        d.set_item("write_requests", self.io.write_requests)?;
        d.set_item("pages_written", self.io.pages_written)?;
        d.set_item("modeled_ms", self.io.modeled_ms())?;
        Ok(d)
    }

    fn __len__(&self) -> usize {
        self.rows
    }

    /// The next row, or None after the last.
    fn fetchone<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        Ok(self.fetch(py, Some(1))?.into_iter().next())
    }

    /// The next `size` rows (fewer at the end).
    #[pyo3(signature = (size=1))]
    fn fetchmany<'py>(&self, py: Python<'py>, size: usize) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        self.fetch(py, Some(size))
    }

    /// The rows not fetched yet.
    fn fetchall<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        self.fetch(py, None)
    }

    /// The result as text, as `strata sql` prints it (the first 40 rows).
    fn __repr__(&self) -> String {
        const SHOWN: usize = 40;
        let mut shown = Vec::new();
        let mut left = SHOWN;
        for b in &self.batches {
            if left == 0 {
                break;
            }
            let n = left.min(b.num_rows());
            shown.push(b.slice(0, n));
            left -= n;
        }
        let mut text =
            strata_sql::shell::format::render(strata_sql::Format::Table, &self.schema, &shown)
                .unwrap_or_else(|e| format!("<result: {e}>\n"));
        if self.rows > SHOWN {
            text.push_str(&format!("({} rows, {SHOWN} shown)\n", self.rows));
        } else if let Some(n) = self.written {
            text = format!("{n} row(s)\n");
        }
        text
    }
}

/// Imports `module`, or says which package `what` needs.
fn needs<'py>(
    py: Python<'py>,
    module: &str,
    what: &str,
) -> PyResult<Bound<'py, pyo3::types::PyModule>> {
    py.import(module).map_err(|e| {
        pyo3::exceptions::PyImportError::new_err(format!(
            "{what} needs the {module} package (pip install {module}): {e}"
        ))
    })
}

fn to_value_error(e: ArrowError) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(e.to_string())
}
