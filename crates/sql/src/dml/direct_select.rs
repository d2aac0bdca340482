//! A point query planned straight from the syntax tree: `SELECT` of plain
//! columns (or `*`) from one table, under a WHERE that pins the leading key
//! column of an index to one value (of a UNIQUE one when there is one; a
//! key of another that names more than a batch of rows is left to
//! DataFusion when the lookup finds so), with conjuncts strata evaluates on
//! the stored bytes and nothing else (no grouping, ordering, limit, join or
//! subquery).
//!
//! Such a query has one plan whatever the statistics say — a lookup of one
//! key, a few rows at most — yet DataFusion plans it as a whole query (a
//! logical plan, the analyzer, the optimizer's passes, a physical plan),
//! which costs many times the lookup: the point queries of an OLTP client
//! (pgbench's `SELECT abalance FROM pgbench_accounts WHERE aid = 42`) spent
//! most of their time planning. Here the WHERE becomes the comparisons
//! `UPDATE` and `DELETE` evaluate on the stored bytes ([`super::filter`]),
//! its candidates are found through the index by the same finder, checked
//! on their bytes, and only the named columns of the rows that pass become
//! Arrow (no physical expression is built: making one cost more than the
//! lookup).
//!
//! On a columnar table the key must be of an index with a tree over its
//! column rows, and the WHERE bound only that key (an integer, date or
//! timestamp, whose key encoding orders as its values compare): the
//! entries in the range are then exactly the rows to return, read from
//! the column files by position ([`super::column_rows::rows_at`]), with
//! the delta's rows found as a row table's.
//!
//! Anything else returns `None` and DataFusion plans the query, as do
//! `EXPLAIN`, cold tables, and sessions whose `strata.access_path` forces a
//! full or sort scan. `strata.direct_dml = false` turns this path off as
//! well (the tests compare both).

use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::SessionState;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    GroupByExpr, SelectItem, SetExpr, Statement, WildcardAdditionalOptions,
};
use strata_access::batch::BATCH_ROWS;
use strata_access::predicate::{CmpOp, Comparison, Predicate};
use strata_access::{PageCosts, TupleBatch};
use strata_columns::convert::BatchConverter;
use strata_storage::Table;

use super::direct_dml::{filters, ident_name, plain_query, plain_table};
use super::filter::{candidates, key_range, on_bytes};
use super::txn::Writes;
use crate::error::SqlError;
use crate::options::{AccessPathSetting, IndexCacheSetting, StrataOptions};

/// Point queries this process answered by this path (tests assert it was
/// taken).
pub static TAKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A point query, planned.
#[derive(Clone)]
pub struct DirectSelect {
    /// The table's name as the statement resolved it.
    name: String,
    /// The table as planned (the run does not look it up again).
    table: Arc<Table>,
    /// The whole WHERE, evaluated on the stored bytes.
    conjuncts: Vec<Comparison>,
    index: usize,
    /// Whether `index` is unique (else the key may name many rows).
    unique: bool,
    /// The table's columns returned, in order.
    columns: Vec<usize>,
    schema: SchemaRef,
}

/// The plan of `stmt` when it is a point query of the form above; `None`
/// leaves it to DataFusion.
pub fn plan(
    stmt: &DfStatement,
    state: &SessionState,
    writes: &Arc<Writes>,
) -> Option<DirectSelect> {
    let options = state.config().options().extensions.get::<StrataOptions>();
    if options.is_some_and(|o| {
        !o.direct_dml
            || matches!(
                o.access_path,
                AccessPathSetting::Full | AccessPathSetting::Sort
            )
    }) {
        return None;
    }
    let DfStatement::Statement(s) = stmt else {
        return None;
    };
    let Statement::Query(q) = s.as_ref() else {
        return None;
    };
    if !plain_query(q) {
        return None;
    }
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return None;
    };
    let plain_groups =
        matches!(&sel.group_by, GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
    if sel.distinct.is_some()
        || sel.top.is_some()
        || sel.into.is_some()
        || !sel.lateral_views.is_empty()
        || sel.prewhere.is_some()
        || !plain_groups
        || !sel.cluster_by.is_empty()
        || !sel.distribute_by.is_empty()
        || !sel.sort_by.is_empty()
        || sel.having.is_some()
        || !sel.named_window.is_empty()
        || sel.qualify.is_some()
        || sel.value_table_mode.is_some()
        || !sel.connect_by.is_empty()
        || sel.from.len() != 1
    {
        return None;
    }
    let name = plain_table(&sel.from[0])?;
    let table = writes.database().table(&name).ok()?;
    if table.is_cold() {
        return None;
    }
    let columnar = table.columns().is_some();
    let schemas = super::table_schemas::of(writes.database(), &name, &table)?;
    let full = &schemas.arrow;
    let mut columns = Vec::new();
    for item in &sel.projection {
        match item {
            SelectItem::Wildcard(WildcardAdditionalOptions {
                opt_ilike: None,
                opt_exclude: None,
                opt_except: None,
                opt_replace: None,
                opt_rename: None,
                ..
            }) => columns.extend(0..full.fields().len()),
            SelectItem::UnnamedExpr(datafusion::sql::sqlparser::ast::Expr::Identifier(i)) => {
                let c = table.schema().index_of(&ident_name(i))?;
                // DataFusion refuses a column named twice; so it answers.
                if columns.contains(&c) {
                    return None;
                }
                columns.push(c);
            }
            _ => return None,
        }
    }
    let conditions = filters(state, sel.selection.as_ref(), &schemas.qualified)?;
    if conditions.is_empty() {
        return None;
    }
    // Only a WHERE strata answers on the stored bytes: no row becomes
    // Arrow but the ones it returns.
    let conjuncts = on_bytes(&table, &conditions)?;
    // An index whose first key column an equality pins: a unique one on that
    // column alone (at most one row) first, else any (as many rows as the
    // key has; a run looks at most [`BATCH_ROWS`] of them up).
    // An index whose leaves cache columns answers from them through
    // DataFusion's plan (`crate::scan::cached_scan`) unless the session
    // turned index caches off.
    let caches = options.is_none_or(|o| o.index_cache != IndexCacheSetting::Off);
    // On a columnar table, an index whose range is the whole WHERE (its
    // column rows are not checked on their bytes: they are not a heap's).
    let pinned = |i: &strata_storage::db::Index| {
        (i.def.cache.is_empty() || !caches)
            && conjuncts
                .iter()
                .any(|c| c.op == CmpOp::Eq && c.column == i.key_cols[0])
            && (!columnar
                || (i.column_tree().is_some()
                    && crate::scan::columns::range_answers(i, &conjuncts)))
    };
    let indexes = table.indexes();
    let (index, unique) = match indexes
        .iter()
        .position(|i| i.def.unique && i.key_cols.len() == 1 && pinned(i))
    {
        Some(i) => (i, true),
        None => (indexes.iter().position(pinned)?, false),
    };
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|&c| full.field(c).clone())
            .collect::<Vec<_>>(),
    ));
    Some(DirectSelect {
        name,
        table,
        conjuncts,
        index,
        unique,
        columns,
        schema,
    })
}

impl DirectSelect {
    /// The table as planned.
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// The table's name as the statement resolved it.
    pub fn table_name(&self) -> &str {
        &self.name
    }

    /// The WHERE, as comparisons on the stored bytes.
    pub fn conjuncts(&self) -> &[Comparison] {
        &self.conjuncts
    }

    /// The same query with the comparisons' values replaced: `conjuncts`
    /// compare the same columns by the same operators, in the same order
    /// (so the same index answers it).
    pub fn with_conjuncts(&self, conjuncts: Vec<Comparison>) -> DirectSelect {
        debug_assert!(
            conjuncts
                .iter()
                .zip(&self.conjuncts)
                .all(|(a, b)| a.column == b.column && a.op == b.op)
        );
        DirectSelect {
            name: self.name.clone(),
            table: self.table.clone(),
            conjuncts,
            index: self.index,
            unique: self.unique,
            columns: self.columns.clone(),
            schema: self.schema.clone(),
        }
    }

    /// Runs the lookup (the caller holds the statement's read guard): the
    /// rows' schema and batches; `None`, with nothing done, when the index
    /// is not unique and its key names more than [`BATCH_ROWS`] entries:
    /// such a query is DataFusion's to plan (its scans choose their path
    /// from the rows as they come, and run in parallel).
    pub fn run(&self, writes: &Writes) -> Result<Option<(SchemaRef, Vec<RecordBatch>)>, SqlError> {
        let table = &self.table;
        if !self.unique && !few_entries(&table.indexes()[self.index], &self.conjuncts)? {
            return Ok(None);
        }
        // A columnar table's column rows, by its index's tree over them;
        // its delta's rows below, as a row table's.
        let mut batches = Vec::new();
        if table.columns().is_some() {
            let index = &table.indexes()[self.index];
            let range = Predicate {
                conjuncts: self.conjuncts.clone(),
            }
            .range_on(index.key_cols[0])
            .encoded(&index.key_types[0]);
            match super::column_rows::rows_at(
                writes.database(),
                table,
                index,
                range,
                &self.columns,
                &self.schema,
                BATCH_ROWS,
            )? {
                Some(rows) => batches = rows,
                None => return Ok(None),
            }
        }
        TAKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let costs = PageCosts::modeled(writes.database()).unwrap_or_default();
        let check = Predicate {
            conjuncts: self.conjuncts.clone(),
        }
        .compile(table.schema(), table.layout());
        // Only the named columns of the rows that pass become Arrow.
        let converter = BatchConverter::new(table, self.columns.clone(), self.schema.clone());
        let mut passing = TupleBatch::new();
        let mut produced = Vec::new();
        let by_index = candidates(
            table,
            &self.conjuncts,
            Some(self.index),
            &costs,
            &mut |batch| {
                passing.clear();
                for (tid, t) in batch.iter() {
                    if check.eval(t, tid) {
                        passing.push(tid, t);
                        produced.push(tid);
                    }
                }
                if !passing.is_empty() {
                    batches.push(
                        converter
                            .convert(&passing)
                            .map_err(|e| SqlError::Execution(e.to_string()))?,
                    );
                }
                Ok(())
            },
        )?;
        // Each row the index found is an access, as an index-driven scan's
        // and `Table::lookup`'s are (hot/cold clustering learns from them);
        // rows a read of the whole heap found are not.
        if by_index {
            for tid in produced {
                table.heat().record(tid);
            }
        }
        Ok(Some((self.schema.clone(), batches)))
    }
}

/// Whether `index`'s range for `conjuncts` holds at most [`BATCH_ROWS`]
/// entries (read that far, no further).
fn few_entries(
    index: &strata_storage::db::Index,
    conjuncts: &[Comparison],
) -> Result<bool, SqlError> {
    let (lo, hi) = key_range(index, conjuncts);
    let mut n = 0;
    for entry in index.btree.range(lo, hi)? {
        entry?;
        n += 1;
        if n > BATCH_ROWS {
            return Ok(false);
        }
    }
    Ok(true)
}
