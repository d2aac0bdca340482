//! A strata table as a DataFusion [`TableProvider`].
//!
//! Every WHERE conjunct that mentions only this table is taken into the scan
//! ([`crate::scan::pushdown`]): comparisons with literals become strata predicates
//! (index ranges where an index exists), the rest is evaluated on the scan's
//! Arrow output. The scan reads only the columns the query uses. A query an
//! index cache can answer (equality on a full index key, only key and cached
//! columns used) gets the index-cache path instead ([`crate::scan::cached_scan`]).
//!
//! `INSERT`, `UPDATE` and `DELETE` are planned here and run by [`crate::dml`].

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Schema as ArrowSchema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::{DFSchema, DataFusionError, Result, SchemaExt};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use strata_access::PageCosts;
use strata_storage::{Database, Table};

use crate::dml::txn::Writes;
use crate::dml::{DmlExec, InsertSink};
use crate::options::{AccessPathSetting, StrataOptions};
use crate::scan::cached_scan::{self, StrataIndexCacheExec};
use crate::scan::columns::{ColumnScanRequest, StrataColumnScanExec};
use crate::scan::pushdown::unqualified;
use crate::scan::pushdown::{Pushed, classify_for};
use crate::scan::scan_exec::{ScanRequest, StrataScanExec};
use crate::stats::TableStats;
use strata_columns::convert::{arrow_schema, has_string_views, nullable, string_views};
use strata_columns::paths::ColumnPath;

pub struct StrataTable {
    db: Arc<Database>,
    /// Where this session's changes go (its open transaction, if any).
    writes: Arc<Writes>,
    name: String,
    schema: SchemaRef,
    /// The table's `ANALYZE` statistics as last decoded from the catalog,
    /// with the catalog save they were read after: decoded again only when
    /// the catalog was saved since (each scan and each of the planner's
    /// estimates asks, and decoding them is not free).
    decoded: parking_lot::Mutex<Option<(u64, Option<TableStats>)>>,
}

/// The table's Arrow schema as SQL sees it: a semantic id (its value the
/// row's address, `Encoding::Address`) is nullable, so that an INSERT can
/// leave it out; no stored row has it NULL.
///
/// A columnar table's strings are views (`Utf8View`): its column part gives
/// them so (`ColumnPart::with_string_views`), and its delta's scan casts its
/// strings to views.
fn provider_schema(table: &Table) -> SchemaRef {
    let s = arrow_schema(table.schema());
    let s = match table.columns() {
        Some(_) => string_views(&s),
        None => s,
    };
    match table.layout().address_column() {
        None => s,
        Some(c) => {
            let mut fields: Vec<datafusion::arrow::datatypes::Field> =
                s.fields().iter().map(|f| f.as_ref().clone()).collect();
            fields[c] = fields[c].clone().with_nullable(true);
            Arc::new(datafusion::arrow::datatypes::Schema::new(fields))
        }
    }
}

impl StrataTable {
    pub fn new(writes: Arc<Writes>, table: &Table) -> StrataTable {
        StrataTable {
            db: writes.database().clone(),
            writes,
            name: table.name().to_string(),
            schema: provider_schema(table),
            decoded: parking_lot::Mutex::new(None),
        }
    }

    /// Whether the table is on the cold tier (then MJoin reads it, object by
    /// object, when `strata.skipper` is on).
    pub fn is_cold(&self) -> bool {
        self.db.table(&self.name).is_ok_and(|t| t.is_cold())
    }

    /// Whether the table is columnar (`strata-columns`).
    pub fn is_columnar(&self) -> bool {
        self.db
            .table(&self.name)
            .is_ok_and(|t| t.columns().is_some())
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The table's `ANALYZE` statistics, if it has been analyzed.
    fn stats(&self) -> strata_storage::Result<Option<TableStats>> {
        // The save count first: a save after it is seen at the next call.
        let saves = strata_storage::catalog::Catalog::saves();
        if let Some((at, stats)) = &*self.decoded.lock()
            && *at == saves
        {
            return Ok(stats.clone());
        }
        let stats: Option<TableStats> = self
            .db
            .table_stats(&self.name)?
            .and_then(|v| serde_json::from_value(v).ok());
        *self.decoded.lock() = Some((saves, stats.clone()));
        Ok(stats)
    }

    /// The rows a scan of this table keeps with `filters`, by its `ANALYZE`
    /// statistics, and those statistics; `None` when it has none (the join
    /// order is then left as written, `crate::rules::join_order`).
    pub fn estimate(&self, filters: &[Expr]) -> Option<(f64, TableStats)> {
        let table = self.db.table(&self.name).ok()?;
        let stats = self.stats().ok()??;
        let mut rows = stats.rows as f64;
        for f in filters {
            rows *=
                crate::stats::expr_selectivity(Some(&stats), &unqualified(f).ok()?, table.schema());
        }
        Some((rows, stats))
    }

    /// The device's page costs: the modeled profile's, or strata's measured
    /// defaults for the real device.
    fn page_costs(&self) -> (PageCosts, bool) {
        let modeled = PageCosts::modeled(&self.db);
        (modeled.unwrap_or_default(), modeled.is_some())
    }
}

impl std::fmt::Debug for StrataTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StrataTable({})", self.name)
    }
}

#[async_trait]
impl TableProvider for StrataTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        let table = self.db.table(&self.name).map_err(external)?;
        Ok(filters
            .iter()
            .map(|f| match classify_for(f, &table) {
                Pushed::Strata(_) | Pushed::Residual => TableProviderFilterPushDown::Exact,
                Pushed::No => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let table = self.db.table(&self.name).map_err(external)?;
        let settings = session_settings(state);
        let mut conjuncts = Vec::new();
        let mut residual = Vec::new();
        for f in filters {
            match classify_for(f, &table) {
                Pushed::Strata(c) => conjuncts.extend(c),
                Pushed::Residual => residual.push(unqualified(f)?),
                Pushed::No => {
                    return Err(DataFusionError::Internal(format!(
                        "filter {f} was not accepted by the strata scan"
                    )));
                }
            }
        }
        let output_cols: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let stats = self.stats().map_err(external)?;
        let mut note = None;
        if let Some(plan) = cached_scan::plan(&table, filters, &output_cols, &settings) {
            match cached_scan::own_writes_block(&self.writes, &self.db, &table) {
                None => {
                    return Ok(Arc::new(StrataIndexCacheExec::new(
                        state,
                        table,
                        plan,
                        &self.schema,
                        &output_cols,
                        limit,
                        stats.as_ref(),
                    )?));
                }
                Some(why) => note = Some(format!("{why}; index {}", plan.index_name(&table))),
            }
        }
        if table.columns().is_some() {
            return self.scan_columnar(
                state,
                &table,
                filters,
                conjuncts,
                &output_cols,
                limit,
                stats,
            );
        }
        let target = state.config().target_partitions();
        let scan = self.heap_scan(
            state,
            HeapScan {
                table,
                conjuncts,
                residual,
                output_cols: &output_cols,
                limit,
                settings,
                stats,
                note,
                target_partitions: target,
            },
        )?;
        Ok(Arc::new(scan))
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if insert_op != InsertOp::Append {
            return Err(DataFusionError::NotImplemented(format!(
                "{insert_op} is not supported for strata tables (INSERT INTO appends)"
            )));
        }
        self.schema
            .logically_equivalent_names_and_types(&input.schema())?;
        let sink = InsertSink::new(self.writes.clone(), &self.name, &nullable(&self.schema));
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }

    async fn delete_from(
        &self,
        state: &dyn Session,
        filters: Vec<Expr>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(DmlExec::delete(
            self.writes.clone(),
            &self.name,
            state,
            filters,
        )?))
    }

    async fn truncate(&self, state: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(DmlExec::delete(
            self.writes.clone(),
            &self.name,
            state,
            vec![],
        )?))
    }

    async fn update(
        &self,
        state: &dyn Session,
        assignments: Vec<(String, Expr)>,
        filters: Vec<Expr>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(DmlExec::update(
            self.writes.clone(),
            &self.name,
            state,
            assignments,
            filters,
        )?))
    }
}

impl StrataTable {
    /// The scan of a columnar table: its column part's scan, and beside it
    /// (a union) the heap's scan of its delta, when the delta has rows.
    #[allow(clippy::too_many_arguments)]
    fn scan_columnar(
        &self,
        state: &dyn Session,
        table: &Arc<Table>,
        filters: &[Expr],
        conjuncts: Vec<strata_access::predicate::Comparison>,
        output_cols: &[usize],
        limit: Option<usize>,
        stats: Option<TableStats>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let part = strata_columns::ColumnPart::of(&self.db, table)
            .map_err(|e| DataFusionError::External(Box::new(e)))?
            .expect("a columnar table has a column part");
        // Strings as this provider's schema has them (it was made when the
        // table was registered).
        let part = if has_string_views(&self.schema) {
            part.with_string_views()
                .map_err(|e| DataFusionError::External(Box::new(e)))?
        } else {
            part
        };
        let filter_is_conjuncts = filters
            .iter()
            .all(|f| matches!(classify_for(f, table), Pushed::Strata(_)));
        let filters: Vec<Expr> = filters.iter().map(unqualified).collect::<Result<_>>()?;
        let mut read: Vec<usize> = output_cols.to_vec();
        for e in &filters {
            for c in e.column_refs() {
                read.push(self.schema.index_of(&c.name)?);
            }
        }
        read.sort_unstable();
        read.dedup();
        let read_schema = Arc::new(self.schema.project(&read)?);
        let selectivity = filters
            .iter()
            .map(|e| crate::stats::expr_selectivity(stats.as_ref(), e, table.schema()))
            .product();
        let filter = match conjunction(filters.clone()) {
            Some(e) => {
                let df_schema = DFSchema::try_from(read_schema.as_ref().clone())?;
                let physical = crate::dml::physical(state, e.clone(), &df_schema)?;
                Some((e.to_string(), physical))
            }
            None => None,
        };
        let output_schema: SchemaRef = Arc::new(ArrowSchema::new(
            output_cols
                .iter()
                .map(|&i| self.schema.field(i).clone())
                .collect::<Vec<_>>(),
        ));
        let columns: Arc<dyn ExecutionPlan> = Arc::new(
            StrataColumnScanExec::new(ColumnScanRequest {
                table: table.clone(),
                part,
                scan_columns: read,
                output_cols: output_cols.to_vec(),
                conjuncts: conjuncts.clone(),
                filter,
                output_schema: output_schema.clone(),
                limit,
                partitions: state.config().target_partitions(),
                selectivity,
                stats: stats.clone(),
                path: match session_settings(state).access_path {
                    AccessPathSetting::Full => ColumnPath::Full,
                    AccessPathSetting::Index => ColumnPath::Index,
                    AccessPathSetting::Sort => ColumnPath::Sort,
                    AccessPathSetting::Smooth
                    | AccessPathSetting::Optimizer
                    | AccessPathSetting::Switch => ColumnPath::Smooth,
                },
                filter_is_conjuncts,
            })
            .map_err(|e| DataFusionError::External(Box::new(e)))?,
        );
        if table.rows() == 0 && table.heap().num_pages() == 0 {
            return Ok(columns);
        }
        // The delta: the heap's scan, as for a row table.
        let mut residual = Vec::new();
        let mut strata = Vec::new();
        for f in &filters {
            match classify_for(f, table) {
                Pushed::Strata(c) => strata.extend(c),
                _ => residual.push(f.clone()),
            }
        }
        let settings = session_settings(state);
        let delta = self.heap_scan(
            state,
            HeapScan {
                table: table.clone(),
                conjuncts: strata,
                residual,
                output_cols,
                limit,
                settings,
                stats,
                note: Some("the delta of a columnar table".into()),
                target_partitions: 1,
            },
        )?;
        let delta: Arc<dyn ExecutionPlan> = Arc::new(delta);
        datafusion::physical_plan::union::UnionExec::try_new(vec![columns, delta])
    }
}

/// A heap scan to plan: the table's rows (a row table's, or a columnar
/// table's delta) through strata's access paths.
struct HeapScan<'a> {
    table: Arc<Table>,
    /// Conjuncts the access path evaluates.
    conjuncts: Vec<strata_access::predicate::Comparison>,
    /// The rest, evaluated on the scan's Arrow output (unqualified).
    residual: Vec<Expr>,
    output_cols: &'a [usize],
    limit: Option<usize>,
    settings: StrataOptions,
    stats: Option<TableStats>,
    note: Option<String>,
    target_partitions: usize,
}

impl StrataTable {
    /// The scan operator of `h`.
    fn heap_scan(&self, state: &dyn Session, h: HeapScan<'_>) -> Result<StrataScanExec> {
        let mut scan_columns = h.output_cols.to_vec();
        for e in &h.residual {
            for c in e.column_refs() {
                let i = self.schema.index_of(&c.name)?;
                if !scan_columns.contains(&i) {
                    scan_columns.push(i);
                }
            }
        }
        let scan_schema = Arc::new(self.schema.project(&scan_columns)?);
        let output_schema: SchemaRef = Arc::new(ArrowSchema::new(
            h.output_cols
                .iter()
                .map(|&i| self.schema.field(i).clone())
                .collect::<Vec<_>>(),
        ));
        let residual_selectivity = h
            .residual
            .iter()
            .map(|e| crate::stats::expr_selectivity(h.stats.as_ref(), e, h.table.schema()))
            .product();
        let residual = match conjunction(h.residual) {
            Some(e) => {
                let df_schema = DFSchema::try_from(scan_schema.as_ref().clone())?;
                // Simplified first: an UPDATE or DELETE planned from its
                // syntax tree hands its WHERE here unsimplified.
                let physical = crate::dml::physical(state, e.clone(), &df_schema)?;
                Some((e.to_string(), physical))
            }
            None => None,
        };
        let (page_costs, modeled_clock) = self.page_costs();
        let req = ScanRequest {
            table: h.table,
            conjuncts: h.conjuncts,
            residual,
            output: (0..h.output_cols.len()).collect(),
            scan_columns,
            output_schema,
            scan_schema,
            limit: h.limit,
            settings: h.settings,
            stats: h.stats,
            page_costs,
            modeled_clock,
            temp_dir: temp_dir(&self.db),
            note: h.note,
            residual_selectivity,
            target_partitions: h.target_partitions,
        };
        Ok(StrataScanExec::new(req, None))
    }
}

/// The session's `strata.*` settings.
fn session_settings(state: &dyn Session) -> StrataOptions {
    state
        .config_options()
        .extensions
        .get::<StrataOptions>()
        .cloned()
        .unwrap_or_default()
}

fn temp_dir(db: &Database) -> PathBuf {
    db.dir().join("tmp")
}

fn external(e: strata_storage::StorageError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}
