//! strata's maintenance from Python: `con.compact(table)` and
//! `con.tier(table, ...)`, what `strata compact` and `strata tier` do, on the
//! connection's open database. Each returns its report as a dict. They
//! rewrite or move the table's files outside any transaction, so they are
//! refused while the connection has one open; the session registers the
//! table again at its next statement (the catalog changed).

use pyo3::prelude::*;
use pyo3::types::PyDict;

use strata_storage::maintenance::compact::CompactOptions;
use strata_storage::progress::NoProgress;
use strata_storage::util::parse_size;

use crate::errors;
use strata_sql::SqlSession;

/// A storage error as the exception of its SQLSTATE.
fn storage(py: Python<'_>, e: impl Into<strata_sql::SqlError>) -> PyErr {
    errors::sql(py, &e.into())
}

/// Refuses `what` while the session has a transaction open.
fn outside_transaction(py: Python<'_>, session: &SqlSession, what: &str) -> PyResult<()> {
    if session.in_transaction() {
        return Err(errors::raise(
            py,
            "InternalError",
            &format!("{what} cannot run inside a transaction: COMMIT or ROLLBACK first"),
            "25000",
        ));
    }
    Ok(())
}

/// Rewrites `table`: each column in the narrowest encoding its values
/// allow (`strata compact`), as declared again with `plain=True`, or
/// converted to `format="columns"` (Parquet row groups) or `"rows"`.
pub fn compact<'py>(
    py: Python<'py>,
    session: &SqlSession,
    table: &str,
    format: Option<&str>,
    plain: bool,
) -> PyResult<Bound<'py, PyDict>> {
    outside_transaction(py, session, "compact")?;
    let db = session.database().clone();
    let d = PyDict::new(py);
    if let Some(f) = format {
        let format: strata_columns::Format =
            f.parse().map_err(|e: String| errors::argument(py, &e))?;
        let r = py
            .detach(|| strata_columns::rewrite(&db, table, format, &NoProgress))
            .map_err(|e| errors::raise(py, "OperationalError", &e.to_string(), "XX000"))?;
        d.set_item("table", r.table)?;
        d.set_item("format", r.format.to_string())?;
        d.set_item("rows", r.rows)?;
        d.set_item("heap_pages_before", r.heap_pages_before)?;
        d.set_item("heap_pages_after", r.heap_pages_after)?;
        d.set_item("column_bytes_before", r.column_bytes_before)?;
        d.set_item("column_bytes_after", r.column_bytes_after)?;
        return Ok(d);
    }
    let opts = CompactOptions {
        plain,
        ..CompactOptions::default()
    };
    let r = py
        .detach(|| db.compact(table, &opts, &NoProgress))
        .map_err(|e| storage(py, e))?;
    d.set_item("table", r.table)?;
    d.set_item("rows", r.rows)?;
    d.set_item("pages_before", r.pages_before)?;
    d.set_item("pages_after", r.pages_after)?;
    let changed: Vec<(String, String, String)> = r
        .columns
        .iter()
        .filter(|c| c.before != c.after)
        .map(|c| (c.column.clone(), c.before.describe(), c.after.describe()))
        .collect();
    d.set_item("columns_changed", changed)?;
    Ok(d)
}

/// Moves `table` to the cold tier (`to="cold"`: objects on the S3 service
/// at `endpoint`) or back to local files (`to="local"`), as `strata tier`.
#[allow(clippy::too_many_arguments)]
pub fn tier<'py>(
    py: Python<'py>,
    session: &SqlSession,
    cold: &strata_cold::device::ColdTier,
    table: &str,
    to: &str,
    endpoint: Option<&str>,
    bucket: Option<String>,
    object_size: &str,
    delete_objects: bool,
) -> PyResult<Bound<'py, PyDict>> {
    use strata_cold::tier::{self, TierOptions};
    outside_transaction(py, session, "tier")?;
    let db = session.database().clone();
    let cold = cold.clone();
    let report = match to {
            "cold" => {
                let Some(endpoint) = endpoint else {
                    return Err(errors::argument(py, "tier(to='cold') needs endpoint='http://host:port' (a cold storage device: strata csd serve)"));
                };
                let object_bytes = parse_size(object_size)
                    .map_err(|e| errors::argument(py, &format!("object_size: {e}")))?;
                let opts = TierOptions {
                    bucket,
                    object_bytes,
                    ..TierOptions::new(endpoint)
                };
                py.detach(|| tier::to_cold(&db, &cold, table, &opts))
            }
            "local" => {
                let opts = TierOptions {
                    delete_objects,
                    ..TierOptions::new("")
                };
                py.detach(|| tier::to_local(&db, &cold, table, &opts))
            }
            other => {
                return Err(errors::argument(py, &format!("tier(to={other:?}): 'cold' or 'local'")));
            }
        }
        .map_err(|e| errors::raise(py, "OperationalError", &e.to_string(), "58030"))?;
    let d = PyDict::new(py);
    d.set_item("table", report.table)?;
    d.set_item("files", report.files)?;
    d.set_item("objects", report.objects)?;
    d.set_item("bytes", report.bytes)?;
    Ok(d)
}
