//! Single-table `UPDATE` and `DELETE` planned straight from the syntax tree.
//!
//! DataFusion plans an `UPDATE t SET v = v + 1 WHERE k = 42` as a whole
//! query — a logical plan of a scan, a filter and a projection, the analyzer,
//! a physical plan and the physical optimizer's passes — only to hand the
//! table's provider what the statement already says: the WHERE conjuncts and
//! the SET expressions ([`crate::dml`]). For a statement that changes one row
//! that costs several times the change and its durable commit together. So
//! the plain form — one table named without an alias, columns assigned by
//! name, a WHERE without subqueries — is planned here: each expression is
//! turned into DataFusion's logical expression against the table's schema
//! and type-coerced exactly as the analyzer would, and [`DmlExec`] is built
//! from them and run. It is the same operator with the same inputs as the
//! DataFusion path; only the planning around it is skipped.
//!
//! Anything else — an alias, a qualified or unknown name, a column assigned
//! twice, an expression that does not plan — returns `None`, and DataFusion
//! plans the statement as before, with its own error messages. One
//! difference is deliberate: an unquoted column name in SET is folded to
//! lower case like every other unquoted name (`SET V = 1` sets `v`), which
//! DataFusion 55's UPDATE planner does not do (it answers "No field named
//! V"). `EXPLAIN`
//! always goes through DataFusion. `strata.direct_dml = false` turns this
//! path off (the tests compare both).

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType as ArrowType;
use datafusion::common::DFSchema;
use datafusion::common::tree_node::TreeNode;
use datafusion::execution::SessionState;
use datafusion::logical_expr::utils::split_conjunction_owned;
use datafusion::logical_expr::{Expr, ExprSchemable};
use datafusion::optimizer::analyzer::type_coercion::TypeCoercionRewriter;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    self, AssignmentTarget, ExprWithAlias, FromTable, Ident, ObjectName, ObjectNamePart, Statement,
    TableFactor, TableWithJoins,
};

use crate::dml::DmlExec;
use crate::dml::txn::Writes;

/// The [`DmlExec`] of `stmt` when it is a plain single-table `UPDATE` or
/// `DELETE`; `None` leaves it to DataFusion.
pub fn plan(stmt: &DfStatement, state: &SessionState, writes: &Arc<Writes>) -> Option<DmlExec> {
    let DfStatement::Statement(s) = stmt else {
        return None;
    };
    match s.as_ref() {
        Statement::Update(u) => {
            if u.from.is_some()
                || u.returning.is_some()
                || u.output.is_some()
                || u.or.is_some()
                || !u.order_by.is_empty()
                || u.limit.is_some()
                || !u.optimizer_hints.is_empty()
            {
                return None;
            }
            let name = plain_table(&u.table)?;
            let (schema, table) = schema_of(writes, &name)?;
            let mut assignments: Vec<(String, Expr)> = Vec::new();
            for a in &u.assignments {
                let AssignmentTarget::ColumnName(target) = &a.target else {
                    return None;
                };
                let column = single(target)?;
                if assignments.iter().any(|(c, _)| *c == column)
                    || table.schema().index_of(&column).is_none()
                {
                    return None;
                }
                assignments.push((column, logical(state, &a.value, &schema)?));
            }
            let filters = filters(state, u.selection.as_ref(), &schema)?;
            DmlExec::update(writes.clone(), &name, state, assignments, filters).ok()
        }
        Statement::Delete(d) => {
            if !d.tables.is_empty()
                || d.using.is_some()
                || d.returning.is_some()
                || d.output.is_some()
                || !d.order_by.is_empty()
                || d.limit.is_some()
                || !d.optimizer_hints.is_empty()
            {
                return None;
            }
            let FromTable::WithFromKeyword(from) = &d.from else {
                return None;
            };
            let [table] = &from[..] else {
                return None;
            };
            let name = plain_table(table)?;
            let (schema, _) = schema_of(writes, &name)?;
            let filters = filters(state, d.selection.as_ref(), &schema)?;
            DmlExec::delete(writes.clone(), &name, state, filters).ok()
        }
        _ => None,
    }
}

/// Whether `q` is its body alone: no WITH, ORDER BY, LIMIT, FETCH, locking
/// or other clause around it.
pub(super) fn plain_query(q: &ast::Query) -> bool {
    q.with.is_none()
        && q.order_by.is_none()
        && q.limit_clause.is_none()
        && q.fetch.is_none()
        && q.locks.is_empty()
        && q.for_clause.is_none()
        && q.settings.is_none()
        && q.format_clause.is_none()
        && q.pipe_operators.is_empty()
}

/// Whether the session plans plain writes and point queries itself
/// (`strata.direct_dml`, on unless turned off).
pub fn enabled(state: &SessionState) -> bool {
    state
        .config()
        .options()
        .extensions
        .get::<crate::options::StrataOptions>()
        .is_none_or(|o| o.direct_dml)
}

/// The name of a table given plainly: one name part, no alias, no joins or
/// table modifiers.
pub(super) fn plain_table(t: &TableWithJoins) -> Option<String> {
    if !t.joins.is_empty() {
        return None;
    }
    let TableFactor::Table {
        name,
        alias: None,
        args: None,
        with_hints,
        version: None,
        with_ordinality: false,
        partitions,
        json_path: None,
        sample: None,
        index_hints,
    } = &t.relation
    else {
        return None;
    };
    if !with_hints.is_empty() || !partitions.is_empty() || !index_hints.is_empty() {
        return None;
    }
    single(name)
}

/// A one-part name as DataFusion resolves it: unquoted names in lower case.
pub(super) fn single(name: &ObjectName) -> Option<String> {
    let [ObjectNamePart::Identifier(i)] = &name.0[..] else {
        return None;
    };
    Some(ident_name(i))
}

/// An identifier as DataFusion resolves it: unquoted in lower case.
pub(super) fn ident_name(i: &Ident) -> String {
    match i.quote_style {
        Some(_) => i.value.clone(),
        None => i.value.to_lowercase(),
    }
}

/// The table's rows as DataFusion sees them (qualified by the table's name,
/// so `t.k` resolves as it does in DataFusion's plan), and the table.
fn schema_of(writes: &Writes, name: &str) -> Option<(Arc<DFSchema>, Arc<strata_storage::Table>)> {
    let table = writes.database().table(name).ok()?;
    let schemas = super::table_schemas::of(writes.database(), name, &table)?;
    Some((schemas.qualified, table))
}

/// `e` as a logical expression over `schema`, type-coerced as DataFusion's
/// analyzer coerces a plan's expressions.
pub(super) fn logical(state: &SessionState, e: &ast::Expr, schema: &DFSchema) -> Option<Expr> {
    let e = state
        .create_logical_expr_from_sql_expr(
            ExprWithAlias {
                expr: e.clone(),
                alias: None,
            },
            schema,
        )
        .ok()?;
    // A DATE compared with a number goes to DataFusion's path, whose
    // analyzer refuses it (`crate::rules::date_compare`).
    crate::rules::date_compare::check(&e, schema).ok()?;
    let e = e.rewrite(&mut TypeCoercionRewriter::new(schema)).ok()?.data;
    // Integer arithmetic checked for overflow, as the analyzer's
    // `crate::rules::overflow::CheckedArithmetic` does on the DataFusion path.
    let e = crate::rules::overflow::checked(e, schema).ok()?.data;
    // And SQL's equality, as `crate::rules::equality::SqlEquality` makes it.
    let e = crate::rules::equality::sql_equality(e, schema).ok()?.data;
    // And lossy CASTs kept in comparisons (`crate::rules::lossy_cast::LossyCast`).
    let e = crate::rules::lossy_cast::kept_casts(e, schema).ok()?.data;
    // And DOUBLEs compared as DOUBLEs (`crate::rules::float_compare::FloatCompare`).
    let e = crate::rules::float_compare::float_comparisons(e, schema)
        .ok()?
        .data;
    Some(e)
}

/// The WHERE's conjuncts (none without a WHERE); `None` for a WHERE that is
/// not a condition, which DataFusion refuses with its own message.
pub(super) fn filters(
    state: &SessionState,
    w: Option<&ast::Expr>,
    schema: &DFSchema,
) -> Option<Vec<Expr>> {
    let Some(w) = w else {
        return Some(Vec::new());
    };
    let w = logical(state, w, schema)?;
    match w.get_type(schema).ok()? {
        ArrowType::Boolean => Some(split_conjunction_owned(w)),
        // `WHERE NULL`: a boolean NULL, as the analyzer makes it.
        ArrowType::Null => Some(vec![w.cast_to(&ArrowType::Boolean, schema).ok()?]),
        _ => None,
    }
}
