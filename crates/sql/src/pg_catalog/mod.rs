//! `pg_catalog`: PostgreSQL's system catalog over strata's, so that clients
//! written for PostgreSQL can see what a database holds — psql's `\d`,
//! `\dt`, `\di`, `\l`, drivers' and tools' metadata queries.
//!
//! - [`relations`]: the database's tables, views and indexes with stable
//!   oids and PostgreSQL's type ids;
//! - [`tables`]: the catalog tables (`pg_class`, `pg_attribute`, `pg_index`,
//!   `pg_namespace`, `pg_type`, ... and the views `pg_tables`,
//!   `pg_indexes`, `pg_views`), built for each statement that reads them;
//! - [`functions`]: the catalog functions (`pg_table_is_visible`,
//!   `format_type`, `pg_get_indexdef`, `pg_size_pretty`, ...);
//! - [`rewrite`]: PostgreSQL's spellings in such queries
//!   (`OPERATOR(pg_catalog.~)`, `::regclass`, `COLLATE pg_catalog.default`)
//!   made into what DataFusion plans.
//!
//! The schema is read-only: an INSERT into one of its tables is refused
//! ([`CatalogTable`]); DDL changes what it shows.

pub mod functions;
pub mod relations;
pub mod rewrite;
pub mod tables;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::DataType as ArrowType;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use strata_storage::Database;

use relations::Relations;

/// Registers `pg_catalog`'s tables and functions in `ctx` over `db`.
pub fn register(ctx: &SessionContext, db: &Arc<Database>) -> Result<()> {
    let options = ctx.state().config().options().catalog.clone();
    let catalog = ctx.catalog(&options.default_catalog).ok_or_else(|| {
        DataFusionError::Internal(format!("no catalog {}", options.default_catalog))
    })?;
    let public = catalog.schema(&options.default_schema).ok_or_else(|| {
        DataFusionError::Internal(format!("no schema {}", options.default_schema))
    })?;
    catalog.register_schema(
        "pg_catalog",
        Arc::new(PgCatalog {
            db: db.clone(),
            public,
        }),
    )?;
    functions::register(ctx, db);
    Ok(())
}

/// The `pg_catalog` schema of a session.
struct PgCatalog {
    db: Arc<Database>,
    /// The session's own schema, for the columns of views (a view stores
    /// its query; its columns are what the session plans for it).
    public: Arc<dyn SchemaProvider>,
}

impl std::fmt::Debug for PgCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("pg_catalog")
    }
}

#[async_trait]
impl SchemaProvider for PgCatalog {
    fn table_names(&self) -> Vec<String> {
        tables::names().map(String::from).collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if !self.table_exist(name) {
            return Ok(None);
        }
        let mut views: HashMap<String, Vec<(String, ArrowType)>> = HashMap::new();
        if matches!(name, "pg_class" | "pg_attribute") {
            for v in self.db.views() {
                if let Ok(Some(t)) = self.public.table(&v.name).await {
                    let columns = t
                        .schema()
                        .fields()
                        .iter()
                        .map(|f| (f.name().clone(), f.data_type().clone()))
                        .collect();
                    views.insert(v.name, columns);
                }
            }
        }
        let rel = Relations::read(&self.db, &|v| views.get(v).cloned().unwrap_or_default());
        let Some(batch) = tables::build(name, &rel) else {
            return Ok(None);
        };
        let batch = batch?;
        Ok(Some(Arc::new(CatalogTable {
            name: name.to_string(),
            rows: MemTable::try_new(batch.schema(), vec![vec![batch]])?,
        })))
    }

    fn table_exist(&self, name: &str) -> bool {
        tables::names().any(|n| n == name)
    }
}

/// A table of `pg_catalog` as of one statement: its rows, read-only.
#[derive(Debug)]
struct CatalogTable {
    name: String,
    rows: MemTable,
}

#[async_trait]
impl TableProvider for CatalogTable {
    fn schema(&self) -> datafusion::arrow::datatypes::SchemaRef {
        self.rows.schema()
    }

    fn table_type(&self) -> datafusion::datasource::TableType {
        datafusion::datasource::TableType::View
    }

    async fn scan(
        &self,
        state: &dyn datafusion::catalog::Session,
        projection: Option<&Vec<usize>>,
        filters: &[datafusion::logical_expr::Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        self.rows.scan(state, projection, filters, limit).await
    }

    async fn insert_into(
        &self,
        _state: &dyn datafusion::catalog::Session,
        _input: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
        _op: datafusion::logical_expr::dml::InsertOp,
    ) -> Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        Err(DataFusionError::Plan(format!(
            "pg_catalog.{} is read-only: it shows the database's catalog, which CREATE, ALTER and DROP change",
            self.name
        )))
    }
}
