//! The writes planned from the syntax tree, whichever planner took them:
//! an UPDATE or DELETE ([`super::direct_dml`]) or a one-row INSERT … VALUES
//! ([`super::direct_insert`]). The statement thread and the inline path
//! ([`crate::session::inline`]) plan and run them alike.

use std::sync::Arc;

use datafusion::common::ScalarValue;
use datafusion::execution::SessionState;
use datafusion::sql::parser::Statement as DfStatement;

use super::txn::Writes;
use super::{DmlExec, direct_dml, direct_insert};
use crate::error::SqlError;

/// A write planned from the syntax tree: an UPDATE or DELETE
/// ([`direct_dml::plan`]) or a one-row INSERT … VALUES ([`direct_insert::plan`]).
#[derive(Clone)]
pub enum DirectWrite {
    Rows(DmlExec),
    Row(direct_insert::DirectInsert),
}

/// [`direct_dml::plan`], else [`direct_insert::plan`]; `None` leaves the
/// statement to DataFusion.
pub fn plan(stmt: &DfStatement, state: &SessionState, writes: &Arc<Writes>) -> Option<DirectWrite> {
    direct_dml::plan(stmt, state, writes)
        .map(DirectWrite::Rows)
        .or_else(|| direct_insert::plan(stmt, state, writes).map(DirectWrite::Row))
}

impl DirectWrite {
    /// The table it writes.
    pub fn table_name(&self) -> &str {
        match self {
            DirectWrite::Rows(exec) => exec.table_name(),
            DirectWrite::Row(row) => row.table_name(),
        }
    }

    /// Its literals' sites ([`super::literal_sites`]), when each literal is
    /// one.
    pub(crate) fn literal_sites(&self) -> Option<Vec<ScalarValue>> {
        match self {
            DirectWrite::Rows(exec) => exec.literal_sites(),
            DirectWrite::Row(row) => row.literal_sites(),
        }
    }

    /// The same write with `values` at its literals' sites, planned in
    /// `state` against `table` (the one its name opens now); `None` when
    /// they do not fit it.
    pub(crate) fn with_literals(
        &self,
        values: &[ScalarValue],
        state: &SessionState,
        table: &strata_storage::Table,
    ) -> Option<DirectWrite> {
        match self {
            DirectWrite::Rows(exec) => exec.with_literals(values, table).map(DirectWrite::Rows),
            DirectWrite::Row(row) => row
                .with_literals(values, state, table)
                .map(DirectWrite::Row),
        }
    }

    /// Applies it (the caller holds the read guard its session needs): the
    /// rows changed. A NULL refused by a NOT NULL column is worded with the
    /// statement's VALUES, as on DataFusion's path.
    pub fn run(
        &self,
        stmt: &DfStatement,
        db: &strata_storage::Database,
        writes: &Writes,
    ) -> Result<u64, SqlError> {
        match self {
            DirectWrite::Rows(exec) => exec
                .run()
                .map_err(|e| crate::statement::values_null(stmt, db, &e).unwrap_or(e)),
            DirectWrite::Row(row) => row.run(writes),
        }
    }
}
