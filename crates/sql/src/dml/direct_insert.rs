//! A one-row `INSERT … VALUES` planned straight from the syntax tree.
//!
//! DataFusion plans `INSERT INTO h (a, b, t) VALUES (1, 2, CURRENT_TIMESTAMP)`
//! as a whole query — a VALUES plan, a projection casting each value to its
//! column's type, the analyzer, the optimizer, a physical plan with a sink —
//! to produce one row. For an OLTP client's insert (pgbench's history row)
//! that planning cost more than the rest of the transaction together. Here
//! each value becomes DataFusion's logical expression, type-coerced and
//! rewritten by strata's rules as on the planned path
//! ([`super::direct_dml`]), cast to its column's type (a number cast to an
//! integer rounded, as [`crate::rules::integer_cast`] makes every such
//! cast), and computed once; the row then goes through the same
//! [`super::insert`] as the planned path's sink, with its checks (NOT NULL,
//! lengths, unique keys) and their messages.
//!
//! Anything else returns `None` and DataFusion plans the statement: more
//! than one row (VALUES rows are unified to one type per column first), a
//! NULL for a NOT NULL column (refused with DataFusion's error, reworded), a
//! value that refers to anything but constants, a value that fails to
//! compute or cast (DataFusion's error is the one users see), a target list
//! naming an unknown or repeated column, an alias, `RETURNING`, `ON
//! CONFLICT` and the other dialects' clauses.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::execution::SessionState;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr, ExprSchemable};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{SetExpr, Statement, TableObject};

use super::direct_dml::{logical, plain_query, single};
use super::literal_sites::{logical_sites, logical_with, paired_sites, paired_with};
use super::txn::Writes;
use crate::error::SqlError;

/// One-row INSERTs this process ran by this path (tests assert it was
/// taken).
pub static TAKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A one-row INSERT, its values computed.
#[derive(Clone)]
pub struct DirectInsert {
    table: String,
    row: RecordBatch,
    /// How `row` was computed, which a kept plan computes again with other
    /// literals ([`super::write_plans`]).
    recipe: Recipe,
}

/// How an INSERT's row is computed.
#[derive(Clone)]
struct Recipe {
    /// The table's columns as DataFusion's plan has them.
    schema: SchemaRef,
    /// Each named column's position and value.
    values: Vec<(usize, Computed)>,
}

/// How a named column's value is computed.
#[derive(Clone)]
enum Computed {
    /// An expression that runs unsimplified
    /// ([`super::filter::runs_unsimplified`]), planned once.
    Planned(Expr, Arc<dyn PhysicalExpr>),
    /// One that is simplified first, each time: stable functions (`now()`)
    /// become the statement's constants there.
    Simplified(Expr),
}

/// The plan of `stmt` when it is a one-row `INSERT … VALUES` of constants;
/// `None` leaves it to DataFusion.
pub fn plan(
    stmt: &DfStatement,
    state: &SessionState,
    writes: &Arc<Writes>,
) -> Option<DirectInsert> {
    let DfStatement::Statement(s) = stmt else {
        return None;
    };
    let Statement::Insert(i) = s.as_ref() else {
        return None;
    };
    if i.or.is_some()
        || i.ignore
        || !i.into
        || i.table_alias.is_some()
        || i.overwrite
        || !i.assignments.is_empty()
        || i.partitioned.is_some()
        || !i.after_columns.is_empty()
        || i.has_table_keyword
        || i.on.is_some()
        || i.returning.is_some()
        || i.output.is_some()
        || i.replace_into
        || i.priority.is_some()
        || i.insert_alias.is_some()
        || i.settings.is_some()
        || i.format_clause.is_some()
        || i.multi_table_insert_type.is_some()
        || !i.multi_table_into_clauses.is_empty()
        || !i.multi_table_when_clauses.is_empty()
        || i.multi_table_else_clause.is_some()
        || !i.optimizer_hints.is_empty()
    {
        return None;
    }
    let TableObject::TableName(name) = &i.table else {
        return None;
    };
    let name = single(name)?;
    let q = i.source.as_ref()?;
    if !plain_query(q) {
        return None;
    }
    let SetExpr::Values(values) = q.body.as_ref() else {
        return None;
    };
    if values.explicit_row || values.value_keyword {
        return None;
    }
    let [row] = &values.rows[..] else {
        return None;
    };
    let table = writes.database().table(&name).ok()?;
    // A columnar table takes the row into its delta, through the same
    // `super::insert` as here; a cold one takes no writes, and the planned
    // path says so.
    if table.is_cold() {
        return None;
    }
    let schema = super::table_schemas::of(writes.database(), &name, &table)?.arrow;
    // The target columns: those named (each once), or all in order.
    let targets: Vec<usize> = if i.columns.is_empty() {
        (0..schema.fields().len()).collect()
    } else {
        let mut t = Vec::new();
        for c in &i.columns {
            let c = table.schema().index_of(&single(c)?)?;
            if t.contains(&c) {
                return None;
            }
            t.push(c);
        }
        t
    };
    if targets.len() != row.content.len() {
        return None;
    }
    let none = DFSchema::empty();
    let mut computed = Vec::with_capacity(targets.len());
    for (&c, value) in targets.iter().zip(&row.content) {
        let want = schema.field(c).data_type();
        let e = logical(state, value, &none)?;
        let e = cast(e, want, &none)?;
        computed.push((
            c,
            if super::filter::runs_unsimplified(&e) {
                let p = state.create_physical_expr(e.clone(), &none).ok()?;
                Computed::Planned(e, p)
            } else {
                Computed::Simplified(e)
            },
        ));
    }
    let recipe = Recipe {
        schema,
        values: computed,
    };
    recipe.row(state, &table).map(|row| DirectInsert {
        table: name,
        row,
        recipe,
    })
}

impl Recipe {
    /// The row, computed in `state` (whose start time is the statement's):
    /// `None` when a value fails to compute or cast, or is a NULL for a NOT
    /// NULL column (DataFusion's path then gives its error).
    fn row(&self, state: &SessionState, table: &strata_storage::Table) -> Option<RecordBatch> {
        let none = DFSchema::empty();
        let one_row = RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            vec![],
            &RecordBatchOptions::new().with_row_count(Some(1)),
        )
        .ok()?;
        // Columns not named are NULL (strata has no column defaults).
        let mut columns: Vec<ArrayRef> = self
            .schema
            .fields()
            .iter()
            .map(|f| ScalarValue::try_from(f.data_type()).and_then(|v| v.to_array_of_size(1)))
            .collect::<Result<_, _>>()
            .ok()?;
        let mut context = None;
        for (c, value) in &self.values {
            let p = match value {
                Computed::Planned(_, p) => p.clone(),
                Computed::Simplified(e) => {
                    // Stable functions (`now()`) become the statement's
                    // constants here, as DataFusion's optimizer makes them;
                    // they cannot run otherwise.
                    let info = context.get_or_insert_with(|| {
                        SimplifyContext::builder()
                            .with_schema(Arc::new(none.clone()))
                            .with_config_options(state.config_options().clone())
                            .with_query_execution_start_time(
                                state.execution_props().query_execution_start_time,
                            )
                            .build()
                    });
                    let e = match super::filter::functions_only(e, info) {
                        Some(e) => e,
                        None => ExprSimplifier::new(info.clone()).simplify(e.clone()).ok()?,
                    };
                    state.create_physical_expr(e, &none).ok()?
                }
            };
            let computed = p.evaluate(&one_row).and_then(|v| v.into_array(1)).ok()?;
            if computed.data_type() != self.schema.field(*c).data_type() {
                return None;
            }
            columns[*c] = computed;
        }
        // A NULL for a NOT NULL column: DataFusion's VALUES refuses it first,
        // and its error is said as strata's (`crate::statement::values_null`).
        let declared = strata_columns::convert::arrow_schema(table.schema());
        if columns
            .iter()
            .zip(declared.fields())
            .any(|(a, f)| !f.is_nullable() && a.null_count() > 0)
        {
            return None;
        }
        RecordBatch::try_new(self.schema.clone(), columns).ok()
    }
}

/// `e` cast to `want` as the INSERT's projection casts it: a number cast to
/// an integer rounded (`crate::rules::integer_cast`).
fn cast(e: Expr, want: &DataType, schema: &DFSchema) -> Option<Expr> {
    if e.get_type(schema).ok()? == *want {
        return Some(e);
    }
    let e = e.cast_to(want, schema).ok()?;
    crate::rules::integer_cast::rounded_casts(e, schema)
        .ok()
        .map(|t| t.data)
}

impl DirectInsert {
    /// The table it inserts into.
    pub fn table_name(&self) -> &str {
        &self.table
    }

    /// Inserts the row: the count of rows inserted (one).
    pub fn run(&self, writes: &Writes) -> Result<u64, SqlError> {
        TAKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        super::insert(writes, &self.table, std::slice::from_ref(&self.row), None).map(|(n, _)| n)
    }

    /// The literal nodes of its values, in the VALUES' order, when each
    /// value planned once has the same ones as the expression it was
    /// planned from ([`super::literal_sites`]).
    pub(crate) fn literal_sites(&self) -> Option<Vec<ScalarValue>> {
        let mut sites = Vec::new();
        for (_, value) in &self.recipe.values {
            match value {
                Computed::Planned(e, p) => paired_sites(std::slice::from_ref(e), p, &mut sites)?,
                Computed::Simplified(e) => logical_sites(e, &mut sites),
            }
        }
        Some(sites)
    }

    /// The same INSERT with `values` at its literals' sites (in the order
    /// [`DirectInsert::literal_sites`] gives them), computed in `state`;
    /// `None` where [`plan`] would give none.
    pub(crate) fn with_literals(
        &self,
        values: &[ScalarValue],
        state: &SessionState,
        table: &strata_storage::Table,
    ) -> Option<DirectInsert> {
        if table.is_cold() {
            return None;
        }
        let mut at = values;
        let mut computed = Vec::with_capacity(self.recipe.values.len());
        for (c, value) in &self.recipe.values {
            computed.push((
                *c,
                match value {
                    Computed::Planned(e, p) => {
                        let (mut e, p) = paired_with(std::slice::from_ref(e), p, &mut at)?;
                        Computed::Planned(e.pop()?, p)
                    }
                    Computed::Simplified(e) => Computed::Simplified(logical_with(e, &mut at)?),
                },
            ));
        }
        if !at.is_empty() {
            return None;
        }
        let recipe = Recipe {
            schema: self.recipe.schema.clone(),
            values: computed,
        };
        recipe.row(state, table).map(|row| DirectInsert {
            table: self.table.clone(),
            row,
            recipe,
        })
    }
}
