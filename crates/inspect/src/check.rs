//! `strata check`: every page of every table and index read and
//! cross-checked (`strata_storage::maintenance::check`), and every column of
//! every row group of a columnar table decoded; the report is the lines the
//! CLI prints, the last one saying that the check passed. The first problem
//! found is the error, naming where it is.

use strata_columns::{ColumnPart, ColumnsError};
use strata_storage::db::Progress;
use strata_storage::maintenance::check::check_database;
use strata_storage::{Database, StorageError};

/// Checks the whole database; the lines of its report.
///
/// Run it where no commit lands half-way: the CLI on a database it opened
/// itself, SQL under its statement's read snapshot.
pub fn database<E>(db: &Database, progress: &dyn Progress) -> Result<Vec<String>, E>
where
    E: From<StorageError> + From<ColumnsError>,
{
    let report = check_database(db, progress)?;
    let mut lines = Vec::new();
    for t in &report {
        let idx: Vec<String> = t
            .indexes
            .iter()
            .map(|(n, e)| format!("{n} ({e} entries)"))
            .collect();
        lines.push(format!(
            "ok: table {}: {} pages, {} rows; indexes: {}",
            t.table,
            t.pages,
            t.rows,
            if idx.is_empty() {
                "none".to_string()
            } else {
                idx.join(", ")
            }
        ));
    }
    // A columnar table's column files: every column of every row group
    // decoded.
    for name in db.table_names() {
        let t = db.table(&name)?;
        if let Some(part) = ColumnPart::of(db, &t)? {
            let rows = part.verify()?;
            lines.push(format!(
                "ok: table {name}: column files: {rows} rows in {} file(s) ({} deleted), every column decoded",
                t.columns().map_or(0, |c| c.files.len()),
                part.deleted_rows()
            ));
            for (index, live) in
                strata_columns::index::verify(&part, &t, &strata_storage::db::NoProgress)?
            {
                lines.push(format!(
                    "ok: table {name}: index {index}: {live} entries of live column rows match the column files"
                ));
            }
        }
    }
    lines.push(format!(
        "check passed: {} table(s), every page verified",
        report.len()
    ));
    Ok(lines)
}
