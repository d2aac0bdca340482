//! `INSERT`, `UPDATE` and `DELETE … RETURNING <expressions | *>`: the
//! statement answers the rows it changed — the new rows of an INSERT or
//! UPDATE, the old rows of a DELETE — computed by the RETURNING list, as in
//! PostgreSQL and DuckDB.
//!
//! DataFusion 55 does not plan RETURNING, so strata runs such a statement
//! itself: the RETURNING list is taken off the syntax tree and planned over
//! the table's columns (qualified by the table's name or alias, type-coerced
//! and checked as the analyzer checks a query's expressions), the rest is
//! planned as usual (straight from the syntax tree for a plain UPDATE or
//! DELETE, [`crate::dml::direct_dml`], else by DataFusion), and the write runs
//! with a hook ([`crate::dml::Returning`]) that evaluates the list on the
//! rows the statement is about to change, before it changes any. A value
//! that cannot be computed (a division by zero in the list) therefore fails
//! the statement and changes nothing.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Field, Schema as ArrowSchema, SchemaRef};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, Result as DfResult};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::execution::SessionState;
use datafusion::logical_expr::{Expr, ExprSchemable};
use datafusion::optimizer::analyzer::type_coercion::TypeCoercionRewriter;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    self, ExprWithAlias, FromTable, Ident, ObjectName, SelectItem, Statement, TableFactor,
    TableObject, TableWithJoins,
};

use crate::ddl;
use crate::dml::txn::Writes;
use crate::dml::{DmlExec, InsertSink, physical, table_schema};
use crate::error::SqlError;

/// Whether `stmt` is an INSERT, UPDATE or DELETE with RETURNING.
pub fn has_returning(stmt: &DfStatement) -> bool {
    let DfStatement::Statement(s) = stmt else {
        return false;
    };
    match s.as_ref() {
        Statement::Insert(i) => i.returning.is_some(),
        Statement::Update(u) => u.returning.is_some(),
        Statement::Delete(d) => d.returning.is_some(),
        _ => false,
    }
}

/// The statement without its RETURNING list, the list, the table's name as
/// written and the name its columns are qualified by (the alias, if any).
struct Split {
    statement: DfStatement,
    items: Vec<SelectItem>,
    table: ObjectName,
    qualifier: Option<Ident>,
}

fn split(stmt: &DfStatement) -> Result<Split, SqlError> {
    let not = || SqlError::Query("RETURNING: not an INSERT, UPDATE or DELETE".into());
    let DfStatement::Statement(s) = stmt else {
        return Err(not());
    };
    let mut s = s.as_ref().clone();
    let (items, table, qualifier) = match &mut s {
        Statement::Insert(i) => {
            let TableObject::TableName(name) = &i.table else {
                return Err(SqlError::Query(
                    "INSERT … RETURNING: the target must be a table".into(),
                ));
            };
            let name = name.clone();
            let alias = i.table_alias.as_ref().map(|a| a.alias.clone());
            (i.returning.take(), name, alias)
        }
        Statement::Update(u) => {
            let (name, alias) = table_of(&u.table)?;
            (u.returning.take(), name, alias)
        }
        Statement::Delete(d) => {
            let from = match &d.from {
                FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
            };
            let [t] = from.as_slice() else {
                return Err(SqlError::Query("DELETE … RETURNING: one table only".into()));
            };
            let (name, alias) = table_of(t)?;
            (d.returning.take(), name, alias)
        }
        _ => return Err(not()),
    };
    let items = items.ok_or_else(not)?;
    let qualifier = qualifier.or_else(|| match table.0.as_slice() {
        [ast::ObjectNamePart::Identifier(i)] => Some(i.clone()),
        _ => None,
    });
    Ok(Split {
        statement: DfStatement::Statement(Box::new(s)),
        items,
        table,
        qualifier,
    })
}

fn table_of(t: &TableWithJoins) -> Result<(ObjectName, Option<Ident>), SqlError> {
    match &t.relation {
        TableFactor::Table { name, alias, .. } if t.joins.is_empty() => {
            Ok((name.clone(), alias.as_ref().map(|a| a.name.clone())))
        }
        _ => Err(SqlError::Query(
            "RETURNING: the statement must change one plain table".into(),
        )),
    }
}

/// An identifier as DataFusion resolves it: unquoted names in lower case.
fn normalized(i: &Ident) -> String {
    match i.quote_style {
        Some(_) => i.value.clone(),
        None => i.value.to_lowercase(),
    }
}

/// The RETURNING list planned over a table's rows.
pub(crate) struct Projection {
    schema: SchemaRef,
    exprs: Vec<Arc<dyn PhysicalExpr>>,
}

impl Projection {
    /// Plans `items` over the rows of `table`, whose columns are qualified by
    /// `qualifier`.
    fn plan(
        state: &SessionState,
        table: &strata_storage::Table,
        qualifier: &str,
        items: &[SelectItem],
    ) -> Result<Projection, SqlError> {
        let rows = table_schema(table);
        let schema = DFSchema::try_from_qualified_schema(
            datafusion::common::TableReference::bare(qualifier),
            rows.as_ref(),
        )?;
        let mut fields = Vec::new();
        let mut exprs = Vec::new();
        let all = |fields: &mut Vec<Field>, exprs: &mut Vec<Arc<dyn PhysicalExpr>>| {
            for (i, f) in rows.fields().iter().enumerate() {
                fields.push(f.as_ref().clone());
                exprs.push(
                    Arc::new(datafusion::physical_expr::expressions::Column::new(
                        f.name(),
                        i,
                    )) as Arc<dyn PhysicalExpr>,
                );
            }
        };
        for item in items {
            let (e, name) = match item {
                SelectItem::Wildcard(_) => {
                    all(&mut fields, &mut exprs);
                    continue;
                }
                SelectItem::QualifiedWildcard(
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) if matches!(n.0.as_slice(), [ast::ObjectNamePart::Identifier(i)]
                        if normalized(i) == qualifier) =>
                {
                    all(&mut fields, &mut exprs);
                    continue;
                }
                SelectItem::UnnamedExpr(e) => (e, output_name(e)),
                SelectItem::ExprWithAlias { expr, alias } => (expr, normalized(alias)),
                other => {
                    return Err(SqlError::Query(format!(
                        "RETURNING {other}: not supported (name columns of the table, \
                         expressions over them, or *)"
                    )));
                }
            };
            let planned = logical(state, e, &schema).and_then(|l| {
                if l.exists(|x| {
                    Ok(matches!(
                        x,
                        Expr::AggregateFunction(_) | Expr::WindowFunction(_)
                    ))
                })? {
                    return Err(datafusion::common::DataFusionError::Plan(
                        "aggregate and window functions are not allowed in RETURNING".into(),
                    ));
                }
                let ty = l.get_type(&schema)?;
                Ok((ty, physical(state, l, &schema)?))
            });
            let (ty, expr) = planned.map_err(|err| {
                SqlError::Query(format!("RETURNING {e}: {}", SqlError::from(err)))
            })?;
            fields.push(Field::new(name, ty, true));
            exprs.push(expr);
        }
        Ok(Projection {
            schema: Arc::new(ArrowSchema::new(fields)),
            exprs,
        })
    }

    /// The list's values on `rows` (batches of the table's columns).
    fn apply(&self, rows: &[RecordBatch]) -> Result<Vec<RecordBatch>, SqlError> {
        let mut out = Vec::with_capacity(rows.len());
        for b in rows {
            let columns = self
                .exprs
                .iter()
                .map(|e| e.evaluate(b).and_then(|v| v.into_array(b.num_rows())))
                .collect::<DfResult<Vec<_>>>()
                .map_err(|e| match SqlError::from(e) {
                    SqlError::Data(m) => SqlError::Data(format!("RETURNING: {m}")),
                    e => e,
                })?;
            out.push(
                RecordBatch::try_new(self.schema.clone(), columns)
                    .map_err(|e| SqlError::Execution(format!("RETURNING: {e}")))?,
            );
        }
        Ok(out)
    }
}

/// The name of an unaliased RETURNING expression: a column's own name, else
/// the expression as written.
fn output_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) => normalized(i),
        ast::Expr::CompoundIdentifier(parts) if !parts.is_empty() => {
            normalized(&parts[parts.len() - 1])
        }
        e => e.to_string(),
    }
}

/// `e` as a logical expression over `schema`, type-coerced and checked as
/// strata's analyzer rules coerce and check a query's (see
/// `crate::dml::direct_dml`, which does the same for SET and WHERE).
fn logical(state: &SessionState, e: &ast::Expr, schema: &DFSchema) -> DfResult<Expr> {
    let e = state.create_logical_expr_from_sql_expr(
        ExprWithAlias {
            expr: e.clone(),
            alias: None,
        },
        schema,
    )?;
    crate::rules::date_compare::check(&e, schema)?;
    let e = e.rewrite(&mut TypeCoercionRewriter::new(schema))?.data;
    let e = crate::rules::overflow::checked(e, schema)?.data;
    let e = crate::rules::equality::sql_equality(e, schema)?.data;
    let e = crate::rules::lossy_cast::kept_casts(e, schema)?.data;
    let e = crate::rules::float_compare::float_comparisons(e, schema)?.data;
    let e = crate::rules::integer_cast::rounded_casts(e, schema)?.data;
    Ok(e)
}

/// Runs `stmt`, an INSERT, UPDATE or DELETE with RETURNING, and answers
/// the RETURNING list's rows. `state` plans it (for UPDATE and DELETE
/// without logical optimizer rules, as the session plans them); `direct`:
/// a plain UPDATE or DELETE may be planned from the syntax tree.
pub(crate) fn run(
    stmt: &DfStatement,
    state: SessionState,
    writes: &Arc<Writes>,
    runtime: &tokio::runtime::Runtime,
    direct: bool,
) -> Result<(SchemaRef, Vec<RecordBatch>), SqlError> {
    let Split {
        statement,
        items,
        table,
        qualifier,
    } = split(stmt)?;
    let db = writes.database();
    let name = ddl::object_name(&table, "table")?;
    let stored = ddl::find_table(db, &name)
        .ok_or_else(|| SqlError::Query(format!("table '{}' does not exist", name.text)))?;
    let t = db.table(&stored)?;
    let qualifier = qualifier.map_or_else(|| stored.clone(), |q| normalized(&q));
    let projection = Projection::plan(&state, &t, &qualifier, &items)?;
    let hook: crate::dml::Returning<'_> = &|rows| projection.apply(rows);
    let is_insert = matches!(&statement, DfStatement::Statement(s) if matches!(s.as_ref(), Statement::Insert(_)));
    let batches = if is_insert {
        let plan = runtime.block_on(async {
            let logical = state.statement_to_plan(statement).await?;
            state.create_physical_plan(&logical).await
        })?;
        let sink = find_plan(&plan, |p| p.is::<DataSinkExec>()).ok_or_else(|| {
            SqlError::Execution("INSERT … RETURNING: the plan has no insert".into())
        })?;
        let sink = sink
            .downcast_ref::<DataSinkExec>()
            .expect("found as a DataSinkExec");
        let into = (sink.sink() as &dyn std::any::Any)
            .downcast_ref::<InsertSink>()
            .ok_or_else(|| {
                SqlError::Query(format!(
                    "INSERT … RETURNING: '{stored}' is not a strata table"
                ))
            })?;
        let input = sink.input().clone();
        let task = state.task_ctx();
        let rows = runtime.block_on(datafusion::physical_plan::collect(input, task))?;
        // The rows as the table's columns, nullable (strata's row check
        // reports a NULL in a NOT NULL column).
        let schema = table_schema(&t);
        let rows = rows
            .into_iter()
            .map(|b| {
                let columns =
                    strata_columns::convert::as_schema_types(b.columns().to_vec(), &schema)?;
                RecordBatch::try_new(schema.clone(), columns)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| SqlError::Execution(format!("INSERT … RETURNING: {e}")))?;
        crate::dml::insert(writes, into.table(), &rows, Some(hook))?.1
    } else {
        let exec = match direct
            .then(|| crate::dml::direct_dml::plan(&statement, &state, writes))
            .flatten()
        {
            Some(exec) => exec,
            None => {
                let plan = runtime.block_on(async {
                    let logical = state.statement_to_plan(statement).await?;
                    state.create_physical_plan(&logical).await
                })?;
                let exec = find_plan(&plan, |p| p.is::<DmlExec>()).ok_or_else(|| {
                    SqlError::Execution("RETURNING: the plan has no UPDATE or DELETE".into())
                })?;
                exec.downcast_ref::<DmlExec>()
                    .expect("found as a DmlExec")
                    .clone()
            }
        };
        exec.run_returning(hook)?.1
    };
    Ok((projection.schema.clone(), batches))
}

/// The first node of `plan` (itself included) that `is` picks.
fn find_plan(
    plan: &Arc<dyn ExecutionPlan>,
    is: impl Fn(&Arc<dyn ExecutionPlan>) -> bool,
) -> Option<Arc<dyn ExecutionPlan>> {
    let mut found = None;
    let _ = plan.apply(|p| {
        if is(p) {
            found = Some(p.clone());
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_keeps_its_name_and_an_expression_is_named_as_written() {
        let e = ast::Expr::Identifier(Ident::new("V"));
        assert_eq!(output_name(&e), "v");
        let q = ast::Expr::CompoundIdentifier(vec![Ident::new("t"), Ident::with_quote('"', "K")]);
        assert_eq!(output_name(&q), "K");
    }
}
