//! The index-only path answered from an index cache (No Bits Left Behind
//! §2.1): `StrataIndexCacheExec`.
//!
//! An index may cache columns in its leaves' free space (`CREATE INDEX … WITH
//! (cache = 'c, d')`). A query whose WHERE fixes every key column of such an
//! index to one value or a list of values (`k = 1`, `k IN (1, 2)`, `k = 1 OR
//! k = 2`, and for a composite key one of these per key column) and which
//! needs no column but the index's key and cached columns — in its output and
//! in its other conjuncts — is answered by [`Table::lookup_cached`] for each
//! key: every entry's cached values come from the leaf on a hit, from the heap
//! tuple on a miss, which then fills the leaf. The key columns' values are the
//! key's. Every other query keeps the scan of [`crate::scan::scan_exec`].
//!
//! The other conjuncts (ranges, `LIKE`, a second equality on a key column)
//! are evaluated on the rows, as a residual. Keys are looked up in key order,
//! each once however often the query lists it; at most [`MAX_KEYS`] keys (the
//! product of the lists), beyond which the ordinary scan is planned.
//!
//! Cached values are committed values: the storage layer invalidates a leaf's
//! item when a commit changes its tuple, before the commit becomes visible.
//! A write transaction's uncommitted changes, though, are not in any cache,
//! and an in-place update of a cached column leaves the committed value cached.
//! So inside the session's own transaction (`BEGIN … COMMIT`), once the
//! transaction changed a page of the table or of one of its indexes, the
//! query reads the heap instead (the ordinary scan, whose EXPLAIN says why).
//!
//! A key column of type DOUBLE is not used: SQL finds `-0.0 = 0.0`, but their
//! encoded keys differ.
//!
//! With `strata.index_cache = auto` (the default) each lookup is answered the
//! way the index's governor finds cheaper (`strata_storage::btree::cache::governor`):
//! through the cache, or by the index's entries and their heap tuples when
//! the cache does not pay (every page in the pool, where a hit costs what the
//! heap tuple it replaces does). `on` always uses the cache.
//!
//! EXPLAIN shows `path=index-cache via <index>` and the keys; EXPLAIN ANALYZE
//! adds the keys looked up, the index entries found, the cache's hits, misses
//! (each a heap tuple read), fills and refused fills, the entries the
//! governor answered without the cache, the buffer pool's page accesses and
//! the device's reads and pages during the scan.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DFSchema, DataFusionError, Result, Statistics};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use strata_access::predicate::{CmpOp, Comparison};
use strata_storage::btree::cache::fields::CachedFields;
use strata_storage::db::CachedLookups;
use strata_storage::row::{DataType, Schema, Value, decode_key, encode_key_value};
use strata_storage::{Database, Table};

use crate::dml::txn::Writes;
use crate::options::{IndexCacheSetting, StrataOptions};
use crate::scan::pushdown::literal;
use crate::scan::pushdown::unqualified;
use crate::stats::{TableStats, selectivity};
use strata_columns::convert::{ValueBatchBuilder, value_text};

/// The most keys one scan looks up; a longer list (or product of lists)
/// leaves the query to the ordinary scan.
pub const MAX_KEYS: usize = 10_000;

/// Rows per batch handed up.
const BATCH_ROWS: usize = 8192;

/// Where a column of the scan's rows comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// The `k`th key column (decoded from the key looked up).
    Key(usize),
    /// The `p`th cached column.
    Cached(usize),
}

/// A query the index cache can answer, before the transaction check.
pub struct CachedPlan {
    /// Position of the index in `table.indexes()`.
    index: usize,
    /// The cached columns as planned (the execution checks they still are).
    fields: Arc<CachedFields>,
    /// Encoded full keys, sorted, each once.
    keys: Vec<Vec<u8>>,
    /// Per key column, the values it takes (for EXPLAIN and estimates).
    key_values: Vec<Vec<Value>>,
    /// Filters the keys do not account for.
    residual: Vec<Expr>,
    /// Whether the index's governor may answer without the cache
    /// (`strata.index_cache = auto`).
    governed: bool,
}

impl CachedPlan {
    pub fn index_name<'a>(&self, table: &'a Table) -> &'a str {
        &table.indexes()[self.index].def.name
    }
}

/// The values `expr` lets one column take, when it is `col = literal`, `col
/// IN (literals)` or an OR of those on the same column, every literal exactly
/// a value of the column's type.
fn equality_values(expr: &Expr, schema: &Schema) -> Option<(usize, Vec<Value>)> {
    let column_of = |e: &Expr| match e {
        Expr::Column(c) => schema.index_of(&c.name),
        _ => None,
    };
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Eq,
            right,
        }) => {
            let (col, lit) = match (left.as_ref(), right.as_ref()) {
                (c @ Expr::Column(_), Expr::Literal(v, _)) => (column_of(c)?, v),
                (Expr::Literal(v, _), c @ Expr::Column(_)) => (column_of(c)?, v),
                _ => return None,
            };
            Some((col, vec![literal(lit, &schema.columns[col].ty)?]))
        }
        Expr::InList(list) if !list.negated => {
            let col = column_of(&list.expr)?;
            let ty = &schema.columns[col].ty;
            let values = list
                .list
                .iter()
                .map(|e| match e {
                    Expr::Literal(v, _) => literal(v, ty),
                    _ => None,
                })
                .collect::<Option<Vec<Value>>>()?;
            Some((col, values))
        }
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => {
            let (a, mut va) = equality_values(left, schema)?;
            let (b, vb) = equality_values(right, schema)?;
            (a == b).then(|| {
                va.extend(vb);
                (a, va)
            })
        }
        _ => None,
    }
}

/// `values` in key order, each once, with their encodings.
fn distinct_sorted(ty: &DataType, values: Vec<Value>) -> Vec<(Vec<u8>, Value)> {
    let mut v: Vec<(Vec<u8>, Value)> = values
        .into_iter()
        .map(|x| {
            let mut k = Vec::new();
            encode_key_value(ty, &x, &mut k);
            (k, x)
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v.dedup_by(|a, b| a.0 == b.0);
    v
}

/// The index-cache plan of a scan of `table` with `filters` (all of them
/// this table's) whose rows must have the table columns `needed`, if one
/// index can answer it: the one needing the fewest keys, then the first.
pub fn plan(
    table: &Table,
    filters: &[Expr],
    needed: &[usize],
    settings: &StrataOptions,
) -> Option<CachedPlan> {
    if settings.index_cache == IndexCacheSetting::Off {
        return None;
    }
    let schema = table.schema();
    let eq: Vec<Option<(usize, Vec<Value>)>> =
        filters.iter().map(|f| equality_values(f, schema)).collect();
    let mut best: Option<CachedPlan> = None;
    for (i, ix) in table.indexes().iter().enumerate() {
        let Some(fields) = ix.cached_fields() else {
            continue;
        };
        if ix.key_types.iter().any(|t| matches!(t, DataType::Float64)) {
            continue;
        }
        let covered = |c: &usize| ix.key_cols.contains(c) || fields.cols.contains(c);
        let filter_cols_covered = filters.iter().all(|f| {
            f.column_refs()
                .iter()
                .all(|c| schema.index_of(&c.name).is_some_and(|c| covered(&c)))
        });
        if !needed.iter().all(covered) || !filter_cols_covered {
            continue;
        }
        // The first equality filter on each key column gives its values.
        let mut used = vec![false; filters.len()];
        let mut per_col: Vec<Vec<(Vec<u8>, Value)>> = Vec::new();
        for (&col, ty) in ix.key_cols.iter().zip(&ix.key_types) {
            let Some(f) = eq
                .iter()
                .enumerate()
                .position(|(j, e)| !used[j] && e.as_ref().is_some_and(|(c, _)| *c == col))
            else {
                break;
            };
            used[f] = true;
            let values = eq[f].as_ref().map(|(_, v)| v.clone()).unwrap_or_default();
            per_col.push(distinct_sorted(ty, values));
        }
        if per_col.len() < ix.key_cols.len() {
            continue;
        }
        let Some(n) = per_col
            .iter()
            .try_fold(1usize, |n, v| n.checked_mul(v.len()))
            .filter(|&n| n <= MAX_KEYS)
        else {
            continue;
        };
        if best.as_ref().is_some_and(|b| b.keys.len() <= n) {
            continue;
        }
        // Every combination, in key order (the lists are sorted by their
        // encodings, and a key is their concatenation).
        let mut keys: Vec<Vec<u8>> = vec![Vec::new()];
        for vals in &per_col {
            keys = keys
                .iter()
                .flat_map(|k| {
                    vals.iter().map(move |(enc, _)| {
                        let mut k = k.clone();
                        k.extend_from_slice(enc);
                        k
                    })
                })
                .collect();
        }
        if per_col.iter().any(|v| v.is_empty()) {
            keys.clear();
        }
        best = Some(CachedPlan {
            index: i,
            fields,
            keys,
            key_values: per_col
                .into_iter()
                .map(|v| v.into_iter().map(|(_, x)| x).collect())
                .collect(),
            residual: filters
                .iter()
                .zip(&used)
                .filter(|(_, u)| !**u)
                .map(|(f, _)| f.clone())
                .collect(),
            governed: settings.index_cache == IndexCacheSetting::Auto,
        });
    }
    best
}

/// Why the session's open transaction keeps `table`'s scans off its index
/// caches, if it does: it changed a page of the table or of one of its
/// indexes, and its own reads must see those changes, which no cache holds.
pub fn own_writes_block(writes: &Writes, db: &Database, table: &Table) -> Option<String> {
    if !writes.writing() {
        return None;
    }
    let files = db.pool().captured_files();
    let changed = files.contains(&table.heap().file_id())
        || table
            .indexes()
            .iter()
            .any(|i| files.contains(&i.btree.file_id()));
    changed.then(|| {
        format!(
            "index cache not used: this transaction changed {} (its reads see its own changes, which no cache holds)",
            table.name()
        )
    })
}

/// Everything the operator needs.
struct Scan {
    table: Arc<Table>,
    plan: CachedPlan,
    /// Sources of the scan's columns: the output's, then the residual's.
    sources: Vec<Source>,
    /// Types of the scan's columns.
    types: Vec<DataType>,
    scan_schema: SchemaRef,
    output_schema: SchemaRef,
    /// Positions in the scan's columns of the output columns.
    output: Vec<usize>,
    residual: Option<(String, Arc<dyn PhysicalExpr>)>,
    limit: Option<usize>,
    /// Estimated rows (for DataFusion's join planning).
    estimate: usize,
}

/// The leaf operator of the index-cache path.
pub struct StrataIndexCacheExec {
    scan: Arc<Scan>,
    props: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl fmt::Debug for StrataIndexCacheExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StrataIndexCacheExec({})", self.scan.table.name())
    }
}

impl StrataIndexCacheExec {
    /// The operator for `plan`, producing the table columns `output_cols`
    /// (positions in `table_schema`, the table's Arrow schema).
    pub fn new(
        state: &dyn Session,
        table: Arc<Table>,
        plan: CachedPlan,
        table_schema: &SchemaRef,
        output_cols: &[usize],
        limit: Option<usize>,
        stats: Option<&TableStats>,
    ) -> Result<StrataIndexCacheExec> {
        let schema = table.schema();
        let ix = &table.indexes()[plan.index];
        let residual: Vec<Expr> = plan
            .residual
            .iter()
            .map(unqualified)
            .collect::<Result<_>>()?;
        let mut columns: Vec<usize> = output_cols.to_vec();
        for e in &residual {
            for c in e.column_refs() {
                let i = table_schema.index_of(&c.name)?;
                if !columns.contains(&i) {
                    columns.push(i);
                }
            }
        }
        let sources = columns
            .iter()
            .map(|&c| {
                if let Some(k) = ix.key_cols.iter().position(|&k| k == c) {
                    Ok(Source::Key(k))
                } else if let Some(p) = plan.fields.cols.iter().position(|&p| p == c) {
                    Ok(Source::Cached(p))
                } else {
                    Err(DataFusionError::Internal(format!(
                        "column {} is neither a key nor a cached column of {}",
                        schema.columns[c].name, ix.def.name
                    )))
                }
            })
            .collect::<Result<Vec<Source>>>()?;
        let types = columns.iter().map(|&c| schema.columns[c].ty).collect();
        let scan_schema = Arc::new(table_schema.project(&columns)?);
        let output_schema = Arc::new(table_schema.project(output_cols)?);
        let residual = match conjunction(residual) {
            Some(e) => {
                let df_schema = DFSchema::try_from(scan_schema.as_ref().clone())?;
                let physical = state.create_physical_expr(e.clone(), &df_schema)?;
                Some((e.to_string(), physical))
            }
            None => None,
        };
        // Rows per key from the statistics' distinct counts, when there are
        // any (1/distinct per key column, as for any equality).
        let names: Vec<String> = schema.columns.iter().map(|c| c.name.clone()).collect();
        let one_key: Vec<Comparison> = ix
            .key_cols
            .iter()
            .zip(&plan.key_values)
            .filter_map(|(&column, v)| {
                Some(Comparison {
                    column,
                    op: CmpOp::Eq,
                    value: v.first()?.clone(),
                })
            })
            .collect();
        let per_key = match stats {
            Some(_) => table.rows() as f64 * selectivity(stats, &one_key, &names),
            None => 1.0,
        };
        let estimate = (per_key * plan.keys.len() as f64).ceil() as usize;
        let props = PlanProperties::new(
            EquivalenceProperties::new(output_schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(StrataIndexCacheExec {
            scan: Arc::new(Scan {
                table,
                plan,
                sources,
                types,
                scan_schema,
                output_schema,
                output: (0..output_cols.len()).collect(),
                residual,
                limit,
                estimate,
            }),
            props: Arc::new(props),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    pub fn table(&self) -> &Arc<Table> {
        &self.scan.table
    }

    /// The encoded keys it looks up.
    pub fn keys(&self) -> &[Vec<u8>] {
        &self.scan.plan.keys
    }
}

/// At most this many values of a key column are shown by EXPLAIN.
const SHOWN_VALUES: usize = 10;

impl DisplayAs for StrataIndexCacheExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.scan;
        let schema = s.table.schema();
        let ix = &s.table.indexes()[s.plan.index];
        write!(
            f,
            "StrataIndexCacheExec: table={}, path=index-cache via {} (caches {})",
            s.table.name(),
            ix.def.name,
            s.plan.fields.names.join(", ")
        )?;
        let keys: Vec<String> = ix
            .key_cols
            .iter()
            .zip(&s.plan.key_values)
            .map(|(&c, values)| {
                let col = &schema.columns[c];
                let text = |v: &Value| value_text(v, &col.ty);
                match values.as_slice() {
                    [v] => format!("{} = {}", col.name, text(v)),
                    vs => {
                        let mut shown: Vec<String> =
                            vs.iter().take(SHOWN_VALUES).map(text).collect();
                        if vs.len() > SHOWN_VALUES {
                            shown.push(format!("… {} values", vs.len()));
                        }
                        format!("{} IN ({})", col.name, shown.join(", "))
                    }
                }
            })
            .collect();
        write!(f, ", keys={} [{}]", s.plan.keys.len(), keys.join(" AND "))?;
        if let Some((text, _)) = &s.residual {
            write!(f, ", residual=[{text}]")?;
        }
        if let Some(l) = s.limit {
            write!(f, ", limit={l}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for StrataIndexCacheExec {
    fn name(&self) -> &str {
        "StrataIndexCacheExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        match &self.scan.residual {
            Some((_, e)) => f(e),
            None => Ok(TreeNodeRecursion::Continue),
        }
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "StrataIndexCacheExec is a leaf and takes no children".into(),
            ))
        }
    }

    fn partition_statistics(&self, _partition: Option<usize>) -> Result<Arc<Statistics>> {
        let mut s = Statistics::new_unknown(&self.scan.output_schema);
        s.num_rows = datafusion::common::stats::Precision::Inexact(self.scan.estimate);
        Ok(Arc::new(s))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "StrataIndexCacheExec has one partition, asked for {partition}"
            )));
        }
        let counters = Counters::new(&self.metrics);
        let scan = self.scan.clone();
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(4);
        // The lookups read pages synchronously: a blocking task, started when
        // the consumer first asks for a batch.
        let mut start = Some(move || {
            tokio::task::spawn_blocking(move || {
                if let Err(e) = run(&scan, &tx, &counters) {
                    let _ = tx.blocking_send(Err(e));
                }
            })
        });
        let stream = futures::stream::unfold(rx, move |mut rx| {
            if let Some(s) = start.take() {
                drop(s());
            }
            async move { rx.recv().await.map(|b| (b, rx)) }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.scan.output_schema.clone(),
            stream,
        )))
    }
}

/// The counters EXPLAIN ANALYZE shows.
struct Counters {
    output_rows: Count,
    keys: Count,
    index_entries: Count,
    hits: Count,
    misses: Count,
    fills: Count,
    refused: Count,
    plain: Count,
    pool_accesses: Count,
    io_requests: Count,
    pages_read: Count,
}

impl Counters {
    fn new(m: &ExecutionPlanMetricsSet) -> Counters {
        let c = |name: &'static str| MetricBuilder::new(m).counter(name, 0);
        Counters {
            output_rows: MetricBuilder::new(m).output_rows(0),
            keys: c("index_keys"),
            index_entries: c("index_entries"),
            hits: c("cache_hits"),
            misses: c("cache_misses"),
            fills: c("cache_fills"),
            refused: c("cache_fills_refused"),
            plain: c("entries_without_cache"),
            pool_accesses: c("pool_page_accesses"),
            io_requests: c("io_requests"),
            pages_read: c("pages_read"),
        }
    }
}

fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The blocking task: looks the keys up, builds, filters, projects, sends.
fn run(
    s: &Scan,
    tx: &tokio::sync::mpsc::Sender<Result<RecordBatch>>,
    counters: &Counters,
) -> Result<()> {
    let table = &s.table;
    let ix = &table.indexes()[s.plan.index];
    // Another session may have changed the index's cached columns since
    // this plan was made (DDL does not wait for plans).
    let fields = ix.cached_fields();
    if fields
        .as_deref()
        .is_none_or(|f| f.cols != s.plan.fields.cols)
    {
        return Err(DataFusionError::Execution(format!(
            "the cached columns of index {} changed since the query was planned; run it again",
            ix.def.name
        )));
    }
    let pool = table.heap().pool();
    let device = pool.device().clone();
    let (pool0, dev0) = (pool.counters(), device.stats().snapshot());
    let mut counts = CachedLookups::default();
    let mut builder = ValueBatchBuilder::new(&s.types, s.scan_schema.clone());
    let mut produced = 0usize;
    let mut done = false;
    let send = |builder: &mut ValueBatchBuilder, produced: &mut usize| -> Result<bool> {
        let mut rb = builder.finish()?;
        if let Some((_, expr)) = &s.residual {
            rb = crate::scan::scan_exec::filter_by(rb, expr)?;
        }
        let mut rb = rb.project(&s.output)?;
        if let Some(limit) = s.limit
            && *produced + rb.num_rows() >= limit
        {
            rb = rb.slice(0, limit - *produced);
        }
        if rb.num_rows() == 0 {
            return Ok(s.limit.is_some_and(|l| *produced >= l));
        }
        *produced += rb.num_rows();
        counters.output_rows.add(rb.num_rows());
        // A consumer that went away (LIMIT above) ends the scan.
        Ok(tx.blocking_send(Ok(rb)).is_err() || s.limit.is_some_and(|l| *produced >= l))
    };
    for key in &s.plan.keys {
        counters.keys.add(1);
        let (key_vals, _) = decode_key(&ix.key_types, key);
        let entries = if s.plan.governed {
            table.lookup_cached_auto(ix, key, &mut counts)
        } else {
            table.lookup_cached(ix, key, &mut counts)
        }
        .map_err(external)?;
        counters.index_entries.add(entries.len());
        for (_, cached) in &entries {
            builder.push_row(s.sources.iter().map(|src| match *src {
                Source::Key(k) => &key_vals[k],
                Source::Cached(p) => &cached[p],
            }))?;
        }
        if builder.len() >= BATCH_ROWS && send(&mut builder, &mut produced)? {
            done = true;
            break;
        }
    }
    if !done && !builder.is_empty() {
        send(&mut builder, &mut produced)?;
    }
    let io = device.stats().snapshot() - dev0;
    let p = pool.counters() - pool0;
    counters.hits.add(counts.hits as usize);
    counters.misses.add(counts.misses as usize);
    counters.fills.add(counts.fills as usize);
    counters.refused.add(counts.refused as usize);
    counters.plain.add(counts.plain as usize);
    counters.pool_accesses.add((p.hits + p.misses) as usize);
    counters.io_requests.add(io.read_requests as usize);
    counters.pages_read.add(io.pages_read as usize);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{col, lit};

    fn schema() -> Schema {
        Schema::parse("a INT, b VARCHAR(8), f DOUBLE").unwrap()
    }

    #[test]
    fn equalities_in_lists_and_ors_of_them_give_a_columns_values() {
        let s = schema();
        assert_eq!(
            equality_values(&col("a").eq(lit(3i64)), &s),
            Some((0, vec![Value::Int32(3)]))
        );
        assert_eq!(
            equality_values(&lit("x").eq(col("b")), &s),
            Some((1, vec![Value::Str("x".into())]))
        );
        assert_eq!(
            equality_values(&col("a").in_list(vec![lit(1), lit(2)], false), &s),
            Some((0, vec![Value::Int32(1), Value::Int32(2)]))
        );
        assert_eq!(
            equality_values(&col("a").eq(lit(1)).or(col("a").eq(lit(5))), &s),
            Some((0, vec![Value::Int32(1), Value::Int32(5)]))
        );
        // Not one column's equality: NOT IN, ranges, two columns, a value
        // outside the column's type, an expression.
        for e in [
            col("a").in_list(vec![lit(1)], true),
            col("a").gt(lit(1)),
            col("a").eq(lit(1)).or(col("b").eq(lit("x"))),
            col("a").eq(lit(1i64 << 40)),
            col("a").in_list(vec![lit(1), col("a") + lit(1)], false),
            (col("a") + lit(1)).eq(lit(2)),
        ] {
            assert_eq!(equality_values(&e, &s), None, "{e}");
        }
    }

    #[test]
    fn distinct_values_come_in_key_order_once() {
        let v = distinct_sorted(
            &DataType::Int32,
            vec![
                Value::Int32(5),
                Value::Int32(-1),
                Value::Int32(5),
                Value::Int32(0),
            ],
        );
        let got: Vec<Value> = v.into_iter().map(|(_, x)| x).collect();
        assert_eq!(
            got,
            vec![Value::Int32(-1), Value::Int32(0), Value::Int32(5)]
        );
    }
}
