//! Views: `CREATE [OR REPLACE] VIEW v [(a, b)] AS SELECT ...` and `DROP VIEW
//! [IF EXISTS] v`, kept in the catalog as the query's SQL text
//! ([`strata_storage::catalog::ViewDef`]) so that every later session (every
//! `strata sql` process) has them.
//!
//! A session plans each view's query when it starts and again after every
//! DDL statement it runs (a table the view reads may have gone, come back or
//! changed), and registers the plan as DataFusion's `ViewTable`, inlined into
//! the queries that read the view. A view whose query no longer plans (a
//! table it reads was dropped) stays registered with the columns it had,
//! and a query reading it fails saying which view and why.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, TableReference};
use datafusion::datasource::{TableType, ViewTable};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::sql::sqlparser::ast::CreateView;
use strata_storage::Database;
use strata_storage::catalog::ViewDef;

use crate::ddl::object::{Name, object_name};
use crate::error::SqlError;

fn query(msg: String) -> SqlError {
    SqlError::Query(msg)
}

/// A `CREATE VIEW` statement.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewSpec {
    pub name: String,
    /// The names given to its columns, if any.
    pub columns: Vec<String>,
    pub query: String,
    pub or_replace: bool,
    pub if_not_exists: bool,
}

/// `CREATE VIEW` as a [`ViewSpec`]; an error names what strata does not
/// support.
pub(crate) fn parse_create(v: &CreateView) -> Result<ViewSpec, SqlError> {
    let name = object_name(&v.name, "view")?;
    let refuse = |what: &str| -> Result<ViewSpec, SqlError> {
        Err(query(format!(
            "CREATE VIEW {}: {what} is not supported",
            name.text
        )))
    };
    if v.materialized || v.to.is_some() {
        return refuse("a MATERIALIZED view");
    }
    if v.temporary {
        return refuse("a TEMPORARY view");
    }
    if v.or_alter || v.secure || v.params.is_some() || v.with_no_schema_binding {
        return refuse("OR ALTER, SECURE, WITH NO SCHEMA BINDING or a view parameter");
    }
    if v.columns
        .iter()
        .any(|c| c.data_type.is_some() || c.options.is_some())
    {
        return refuse("a type or option on a view column");
    }
    Ok(ViewSpec {
        name: name.text,
        columns: v.columns.iter().map(|c| Name::of(&c.name).text).collect(),
        query: v.query.to_string(),
        or_replace: v.or_replace,
        if_not_exists: v.if_not_exists,
    })
}

/// The plan of view `v`'s query in `ctx`, with its columns renamed as the
/// view names them.
async fn plan(ctx: &SessionContext, v: &ViewDef) -> Result<LogicalPlan, DataFusionError> {
    let plan = ctx.state().create_logical_plan(&v.query).await?;
    if v.columns.is_empty() {
        return Ok(plan);
    }
    let fields = plan.schema().columns();
    if fields.len() != v.columns.len() {
        return Err(DataFusionError::Plan(format!(
            "view '{}' names {} columns, its query has {}",
            v.name,
            v.columns.len(),
            fields.len()
        )));
    }
    let renamed: Vec<Expr> = fields
        .into_iter()
        .zip(&v.columns)
        .map(|(c, n)| Expr::Column(c).alias(n))
        .collect();
    LogicalPlanBuilder::from(plan).project(renamed)?.build()
}

/// Runs `CREATE VIEW`: the query must plan now.
pub(crate) fn create(
    ctx: &SessionContext,
    runtime: &tokio::runtime::Runtime,
    db: &Database,
    spec: &ViewSpec,
) -> Result<(), SqlError> {
    let ViewSpec {
        name,
        columns,
        query: sql,
        or_replace,
        if_not_exists,
    } = spec;
    let exists = db.views().iter().any(|v| v.name.eq_ignore_ascii_case(name));
    if exists && *if_not_exists && !*or_replace {
        return Ok(());
    }
    let mut def = ViewDef {
        name: name.clone(),
        query: sql.clone(),
        columns: columns.clone(),
        output: vec![],
    };
    // The query must plan now: a view that cannot be read is refused.
    let p = runtime
        .block_on(plan(ctx, &def))
        .map_err(|e| query(format!("CREATE VIEW {name}: {}", SqlError::from(e))))?;
    def.output = p
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    db.create_view(def, *or_replace)
        .map_err(|e| query(format!("CREATE VIEW {name}: {e}")))?;
    Ok(())
}

/// Runs `DROP VIEW`: every name is found before any view is dropped.
pub(crate) fn drop(
    ctx: &SessionContext,
    db: &Database,
    names: &[Name],
    if_exists: bool,
) -> Result<(), SqlError> {
    let views = db.views();
    let mut found = Vec::new();
    for n in names {
        match views.iter().find(|v| n.names(&v.name)) {
            Some(v) => found.push(v.name.clone()),
            None if if_exists => {}
            None => return Err(query(format!("DROP VIEW: unknown view '{}'", n.text))),
        }
    }
    for v in found {
        db.drop_view(&v)?;
        ctx.deregister_table(TableReference::bare(v.as_str()))
            .map_err(SqlError::from)?;
    }
    Ok(())
}

/// Registers every view of `db` in `ctx`, planned against the tables and
/// views registered now (views reading views are planned after them).
pub(crate) fn register_all(
    ctx: &SessionContext,
    runtime: &tokio::runtime::Runtime,
    db: &Database,
) -> Result<(), SqlError> {
    let views = db.views();
    for v in &views {
        ctx.deregister_table(TableReference::bare(v.name.as_str()))
            .map_err(SqlError::from)?;
    }
    let mut pending: Vec<&ViewDef> = views.iter().collect();
    let mut last_errors: Vec<(String, String)> = Vec::new();
    // Each pass registers the views whose queries plan; one that reads a
    // view not registered yet plans in a later pass.
    while !pending.is_empty() {
        let mut left = Vec::new();
        last_errors.clear();
        for v in pending.iter().copied() {
            match runtime.block_on(plan(ctx, v)) {
                Ok(p) => {
                    let table = ViewTable::new(p, Some(v.query.clone()));
                    ctx.register_table(TableReference::bare(v.name.as_str()), Arc::new(table))
                        .map_err(SqlError::from)?;
                }
                Err(e) => {
                    last_errors.push((v.name.clone(), SqlError::from(e).to_string()));
                    left.push(v);
                }
            }
        }
        if left.len() == pending.len() {
            break;
        }
        pending = left;
    }
    for (name, reason) in last_errors {
        let Some(v) = views.iter().find(|v| v.name == name) else {
            continue;
        };
        ctx.register_table(
            TableReference::bare(v.name.as_str()),
            Arc::new(BrokenView::new(v, reason)),
        )
        .map_err(SqlError::from)?;
    }
    Ok(())
}

/// `\d v` of a view: its columns' names and its query; `None` when `name`
/// is not a view.
pub(crate) fn describe(db: &Database, name: &str) -> Option<String> {
    let v = db
        .views()
        .into_iter()
        .find(|v| v.name == name || v.name.eq_ignore_ascii_case(name))?;
    let mut out = format!("  view ({})\n", v.output.join(", "));
    out.push_str(&format!("  AS {}\n", v.query));
    Some(out)
}

/// The `\d` line of each view.
pub(crate) fn list(db: &Database) -> String {
    db.views()
        .iter()
        .map(|v| format!("{}: view ({})\n", v.name, v.output.join(", ")))
        .collect()
}

/// A view whose query does not plan any more: it has the columns the view
/// had, and reading it fails saying why.
#[derive(Debug)]
struct BrokenView {
    name: String,
    reason: String,
    schema: SchemaRef,
}

impl BrokenView {
    fn new(v: &ViewDef, reason: String) -> BrokenView {
        let fields: Vec<Field> = v
            .output
            .iter()
            .map(|n| Field::new(n, ArrowType::Null, true))
            .collect();
        BrokenView {
            name: v.name.clone(),
            reason,
            schema: Arc::new(Schema::new(fields)),
        }
    }
}

#[async_trait]
impl TableProvider for BrokenView {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        Err(DataFusionError::Plan(format!(
            "view '{}' cannot be read: its query no longer plans ({}); \
             CREATE OR REPLACE VIEW or DROP VIEW it",
            self.name, self.reason
        )))
    }
}
