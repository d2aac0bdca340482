//! `StrataScanExec`: a DataFusion leaf operator that runs one of strata's access
//! paths and hands its tuples up as Arrow batches.
//!
//! * The access path runs on its own thread (its I/O is synchronous, direct and
//!   sometimes long), started when the consumer first asks for a batch — so the
//!   build side of a hash join finishes its scan before the probe side's starts,
//!   and each scan's device counters are its own. Batches go through a small
//!   bounded channel: a slow consumer slows the scan rather than filling memory,
//!   and a consumer that stops (LIMIT) stops it.
//! * The path is chosen at planning time ([`PathPlan`]) from the session setting
//!   `strata.access_path` and, for `optimizer`, from the ANALYZE statistics.
//! * An `ORDER BY` on an index's key columns is pushed into the scan
//!   ([`ExecutionPlan::try_pushdown_sort`]): the scan then produces key order
//!   (the ordered Smooth Scan with its Result Cache, the index scan, or a fixed
//!   path followed by strata's own sort) and declares it, so DataFusion drops its
//!   Sort.
//! * EXPLAIN ANALYZE shows the operator's own counters: heap pages, index
//!   entries, I/O requests, pages read, sequential and random reads, modeled I/O
//!   time (on a modeled device only: a real device's I/O is not modeled),
//!   Smooth Scan's mode changes and last region size, Result Cache spills.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::expressions::Column as ColumnExpr;
use datafusion::physical_expr::{
    EquivalenceProperties, LexOrdering, Partitioning, PhysicalExpr, PhysicalSortExpr,
};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::sort_pushdown::SortOrderPushdownResult;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use strata_access::ordered_plan::{SortOptions, open_ordered};
use strata_access::predicate::{CmpOp, Comparison};
use strata_access::smooth::shared_walk::SharedWalk;
use strata_access::{PageCosts, PathChoice, Predicate, ScanSpec, SmoothOptions, TupleBatch};
use strata_storage::Table;
use strata_storage::device::{Device, IoCounters};

use crate::optimizer::{self, Chosen, Estimate};
use crate::options::{AccessPathSetting, StrataOptions};
use crate::scan::coalesced::Coalesced;
use crate::stats::{TableStats, selectivity};
use strata_columns::convert::{BatchConverter, value_text};

/// Everything a scan needs that does not depend on the chosen path.
#[derive(Clone)]
pub struct ScanRequest {
    pub table: Arc<Table>,
    /// Conjuncts the access path evaluates.
    pub conjuncts: Vec<Comparison>,
    /// Conjuncts evaluated on the Arrow batch (over `scan_columns`), as text
    /// for EXPLAIN and compiled.
    pub residual: Option<(String, Arc<dyn PhysicalExpr>)>,
    /// Table columns converted to Arrow, in order.
    pub scan_columns: Vec<usize>,
    /// Positions in `scan_columns` of the output columns.
    pub output: Vec<usize>,
    pub output_schema: SchemaRef,
    pub scan_schema: SchemaRef,
    pub limit: Option<usize>,
    pub settings: StrataOptions,
    pub stats: Option<TableStats>,
    pub page_costs: PageCosts,
    pub modeled_clock: bool,
    pub temp_dir: std::path::PathBuf,
    /// Said by EXPLAIN after the path (why a faster path was not taken).
    pub note: Option<String>,
    /// The estimated fraction of the conjuncts' rows the residual keeps.
    pub residual_selectivity: f64,
    /// DataFusion's `target_partitions` (the cores it plans for): at most
    /// this many parts of a full scan under `strata.scan_partitions = auto`.
    pub target_partitions: usize,
}

/// How a scan is split among threads, a DataFusion partition per part.
#[derive(Clone, Debug)]
pub enum Split {
    /// One part.
    Whole,
    /// A full scan: the first heap page of each part after the first. The
    /// first part has no lower bound and the last no upper one.
    Pages(Vec<u64>),
    /// A page-ordered Smooth Scan: the parts share one index walk and
    /// decision, then each reads its share of the pages decided.
    Walk(Arc<SharedWalk>),
}

impl Split {
    pub fn parts(&self) -> usize {
        match self {
            Split::Whole => 1,
            Split::Pages(cuts) => cuts.len() + 1,
            Split::Walk(w) => w.parts(),
        }
    }

    /// Confines `spec` to part `partition` of the split.
    fn confine(&self, spec: ScanSpec, partition: usize) -> ScanSpec {
        match self {
            Split::Whole => spec,
            Split::Pages(cuts) => spec.within(
                partition.checked_sub(1).map(|p| cuts[p]),
                cuts.get(partition).copied(),
            ),
            Split::Walk(w) => spec.part_of(w.clone(), partition),
        }
    }
}

/// Heap pages a part of a full scan reads at least under
/// `strata.scan_partitions = auto` (8 MiB): a smaller part saves less than
/// its thread and its own read-ahead cost.
pub const MIN_PART_PAGES: u64 = 1024;

/// What EXPLAIN says of a cold scan MJoin reads ([`StrataScanExec::read_by_objects`]).
pub const OBJECTS_LABEL: &str =
    "cold objects, each read whole by MJoin (every page, as a full scan)";

/// The access path a scan runs, decided at planning time.
#[derive(Clone, Debug)]
pub struct PathPlan {
    pub choice: PathChoice,
    /// Position of the index in `table.indexes()`, when the path uses one.
    pub index: Option<usize>,
    pub ordered: bool,
    /// What EXPLAIN says about the choice.
    pub label: String,
    pub estimate: Option<Estimate>,
}

impl ScanRequest {
    pub fn column_name(&self, c: usize) -> &str {
        &self.table.schema().columns[c].name
    }

    /// Indexes whose first key column has a conjunct, best first: equality
    /// before ranges, then table order (Smooth Scan and the fixed paths need no
    /// statistics to pick, so they do not use any).
    fn candidate_indexes(&self) -> Vec<usize> {
        let mut c: Vec<(bool, usize)> = self
            .table
            .indexes()
            .iter()
            .enumerate()
            .filter_map(|(i, idx)| {
                let on: Vec<&Comparison> = self
                    .conjuncts
                    .iter()
                    .filter(|c| c.column == idx.key_cols[0] && c.op != CmpOp::Ne)
                    .collect();
                (!on.is_empty()).then(|| (!on.iter().any(|c| c.op == CmpOp::Eq), i))
            })
            .collect();
        c.sort();
        c.into_iter().map(|(_, i)| i).collect()
    }

    /// The optimizer's estimate of this scan through index `index`.
    pub fn estimate(&self, index: Option<usize>) -> Estimate {
        let col = index.map(|i| self.table.indexes()[i].key_cols[0]);
        optimizer::choose(
            &self.table,
            self.stats.as_ref(),
            &self.conjuncts,
            col,
            &self.page_costs,
        )
    }

    /// Chooses the path; `order_index` asks for output in that index's order.
    pub fn plan(&self, order_index: Option<usize>) -> PathPlan {
        let setting = self.settings.access_path;
        let ordered = order_index.is_some();
        let index = order_index.or_else(|| match setting {
            AccessPathSetting::Optimizer => {
                self.candidate_indexes().into_iter().min_by(|&a, &b| {
                    self.estimate(Some(a))
                        .range_rows
                        .total_cmp(&self.estimate(Some(b)).range_rows)
                })
            }
            _ => self.candidate_indexes().first().copied(),
        });
        let smooth = || PathChoice::Smooth(self.smooth_options());
        // A bound on a semantic id (the tuple's address) is a range of heap
        // pages: read those, as a key lookup would, but without an index.
        if !ordered
            && let Some((from, to)) = strata_access::scan::address_pages(
                &self.table,
                &strata_access::Predicate {
                    conjuncts: self.conjuncts.clone(),
                },
            )
        {
            let col = self.table.layout().address_column().unwrap_or(0);
            return PathPlan {
                choice: PathChoice::Full,
                index: None,
                ordered: false,
                label: format!(
                    "tid range: heap pages {from}..{to} of {} by semantic id {}",
                    self.table.heap().num_pages(),
                    self.table.schema().columns[col].name
                ),
                estimate: None,
            };
        }
        let Some(idx) = index else {
            return PathPlan {
                choice: PathChoice::Full,
                index: None,
                ordered: false,
                label: format!("full (strata.access_path={setting}; no index on the predicate)"),
                estimate: None,
            };
        };
        let idx_name = self.table.indexes()[idx].def.name.clone();
        let (choice, label, estimate) = match setting {
            AccessPathSetting::Smooth => (smooth(), "smooth".to_string(), None),
            AccessPathSetting::Full => (PathChoice::Full, "full".into(), None),
            AccessPathSetting::Index => (PathChoice::Index, "index".into(), None),
            AccessPathSetting::Sort => (PathChoice::Sort, "sort".into(), None),
            AccessPathSetting::Switch => {
                let e = self.estimate(Some(idx));
                let estimate = e.range_rows.round() as u64;
                (
                    PathChoice::Switch { estimate },
                    format!("switch (at {estimate} rows, the optimizer's estimate)"),
                    Some(e),
                )
            }
            AccessPathSetting::Optimizer => {
                let e = self.estimate(Some(idx));
                // An ordered result is free from the index, and costs a sort
                // (CPU, not modeled) otherwise: the I/O costs decide.
                let choice = match e.chosen {
                    Chosen::Full => PathChoice::Full,
                    Chosen::Index => PathChoice::Index,
                    Chosen::Sort => PathChoice::Sort,
                };
                let label = format!("optimizer chose {}", e.chosen.name());
                (choice, label, Some(e))
            }
        };
        let uses_index = !matches!(choice, PathChoice::Full) || ordered;
        PathPlan {
            label: if uses_index {
                format!("{label} via {idx_name}")
            } else {
                label
            },
            choice,
            index: Some(idx),
            ordered,
            estimate,
        }
    }

    /// The conjuncts the access path evaluates, as EXPLAIN shows them.
    pub fn predicate_text(&self) -> String {
        let schema = self.table.schema();
        let preds: Vec<String> = self
            .conjuncts
            .iter()
            .map(|c| {
                format!(
                    "{} {} {}",
                    self.column_name(c.column),
                    op_text(c.op),
                    value_text(&c.value, &schema.columns[c.column].ty)
                )
            })
            .collect();
        preds.join(" AND ")
    }

    /// Smooth Scan's options for this scan, from the session's settings.
    pub fn smooth_options(&self) -> SmoothOptions {
        SmoothOptions {
            policy: self.settings.smooth_policy,
            result_cache_bytes: self.settings.result_cache_bytes,
            temp_dir: self.temp_dir.clone(),
            page_costs: self.page_costs,
            modeled_clock: self.modeled_clock,
            ..SmoothOptions::default()
        }
    }

    /// How the scan is split among threads. Only an unordered scan without a
    /// LIMIT of a table on this machine is split (an ordered scan has one
    /// order, a LIMIT wants the first rows, a cold table's objects are
    /// MJoin's), and only a full scan (into stretches of heap pages fixed
    /// here) or a page-ordered Smooth Scan (into shares of the pages its one
    /// index walk decides on). Under `auto` the parts are as many as
    /// DataFusion's `target_partitions`, but no more than the device serves
    /// requests at once (one for a disk head, whose seeks between the parts'
    /// runs would cost more than the CPU saved) and no more than one per
    /// [`MIN_PART_PAGES`] of the heap the scan may read.
    pub fn split(&self, path: &PathPlan) -> Split {
        let splits = match &path.choice {
            PathChoice::Full => true,
            PathChoice::Smooth(opts) => strata_access::smooth::splits(path.ordered, opts),
            _ => false,
        };
        if !splits || path.ordered || self.limit.is_some() || self.table.is_cold() {
            return Split::Whole;
        }
        let heap = self.table.heap();
        let (from, to) = strata_access::scan::address_pages(
            &self.table,
            &Predicate {
                conjuncts: self.conjuncts.clone(),
            },
        )
        .unwrap_or((0, heap.num_pages()));
        let span = to.saturating_sub(from);
        let parts = match self.settings.scan_partitions {
            Some(n) => n as u64,
            None => (self
                .target_partitions
                .min(heap.pool().device().parallelism()) as u64)
                .min(span / MIN_PART_PAGES),
        }
        .min(span)
        .max(1);
        if parts == 1 {
            return Split::Whole;
        }
        match path.choice {
            PathChoice::Full => Split::Pages((1..parts).map(|k| from + span * k / parts).collect()),
            _ => Split::Walk(SharedWalk::new(parts as usize)),
        }
    }

    /// The estimated rows of the scan, for DataFusion's join planning.
    fn estimated_rows(&self) -> usize {
        let names: Vec<String> = self
            .table
            .schema()
            .columns
            .iter()
            .map(|c| c.name.clone())
            .collect();
        let rows = self.table.rows() as f64;
        (rows
            * selectivity(self.stats.as_ref(), &self.conjuncts, &names)
            * self.residual_selectivity)
            .ceil() as usize
    }
}

/// The leaf operator.
pub struct StrataScanExec {
    req: Arc<ScanRequest>,
    path: PathPlan,
    /// How the scan is split among threads ([`ScanRequest::split`]); a
    /// partition per part.
    split: Split,
    /// The device I/O of the parts, counted once for all of them.
    io: Arc<IoPeriod>,
    props: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl fmt::Debug for StrataScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StrataScanExec({})", self.req.table.name())
    }
}

impl StrataScanExec {
    pub fn new(req: ScanRequest, order_index: Option<usize>) -> StrataScanExec {
        let path = req.plan(order_index);
        Self::with_path(Arc::new(req), path)
    }

    fn with_path(req: Arc<ScanRequest>, path: PathPlan) -> StrataScanExec {
        let schema = req.output_schema.clone();
        let mut eq = EquivalenceProperties::new(schema.clone());
        if path.ordered
            && let Some(idx) = path.index
        {
            // The key columns, as far as the output has them, in key order.
            let sort: Vec<PhysicalSortExpr> = req.table.indexes()[idx]
                .key_cols
                .iter()
                .map_while(|&c| {
                    let name = req.column_name(c);
                    let pos = schema.index_of(name).ok()?;
                    Some(PhysicalSortExpr::new_default(Arc::new(ColumnExpr::new(
                        name, pos,
                    ))))
                })
                .collect();
            if let Some(ordering) = LexOrdering::new(sort) {
                eq = EquivalenceProperties::new_with_orderings(schema.clone(), [ordering]);
            }
        }
        let split = req.split(&path);
        let props = PlanProperties::new(
            eq,
            Partitioning::UnknownPartitioning(split.parts()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        StrataScanExec {
            req,
            path,
            split,
            io: Arc::default(),
            props: Arc::new(props),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// What the scan reads and produces (MJoin decodes cold objects by it).
    pub fn request(&self) -> &Arc<ScanRequest> {
        &self.req
    }

    pub fn path(&self) -> &PathPlan {
        &self.path
    }

    /// This scan as MJoin runs it over a cold table: object by object, every
    /// page of each object looked at (`skipper::object_scan`), whatever path
    /// was planned for it — so EXPLAIN says that, not the planned path.
    pub fn read_by_objects(&self) -> StrataScanExec {
        Self::with_path(
            self.req.clone(),
            PathPlan {
                choice: PathChoice::Full,
                index: None,
                ordered: false,
                label: OBJECTS_LABEL.into(),
                estimate: None,
            },
        )
    }

    pub fn table(&self) -> &Arc<Table> {
        &self.req.table
    }

    /// The index whose key order satisfies `order` (ascending, on non-NULL
    /// columns, a prefix of the key), if any.
    fn index_for_order(&self, order: &[PhysicalSortExpr]) -> Option<usize> {
        let schema = self.req.table.schema();
        let mut cols = Vec::new();
        for s in order {
            if s.options.descending {
                return None;
            }
            let c = s.expr.downcast_ref::<ColumnExpr>()?;
            let col = schema.index_of(c.name())?;
            if schema.columns[col].nullable {
                return None;
            }
            cols.push(col);
        }
        let candidates = self.req.candidate_indexes();
        let fits = |i: &usize| {
            let key = &self.req.table.indexes()[*i].key_cols;
            key.len() >= cols.len() && key[..cols.len()] == cols[..]
        };
        // Prefer an index the predicate also narrows.
        candidates
            .iter()
            .copied()
            .find(fits)
            .or_else(|| (0..self.req.table.indexes().len()).find(fits))
    }
}

impl DisplayAs for StrataScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.req;
        write!(
            f,
            "StrataScanExec: table={}, path={}",
            r.table.name(),
            self.path.label
        )?;
        if self.path.ordered {
            match (r.settings.ordered_plan, &self.path.choice) {
                (Some(p), _) => write!(f, ", ordered by {}", p.label())?,
                (None, PathChoice::Index | PathChoice::Smooth(_)) => write!(f, ", ordered")?,
                (None, _) => write!(f, ", ordered by partitioned sort")?,
            }
        }
        if !r.conjuncts.is_empty() {
            write!(f, ", predicate=[{}]", r.predicate_text())?;
        }
        if let Some((text, _)) = &r.residual {
            write!(f, ", residual=[{text}]")?;
        }
        if let Some(e) = &self.path.estimate {
            write!(f, ", {}", e.describe())?;
        }
        if let Some(l) = r.limit {
            write!(f, ", limit={l}")?;
        }
        match &self.split {
            Split::Whole => {}
            Split::Pages(cuts) => write!(
                f,
                ", {} parts split at heap pages {cuts:?}",
                self.split.parts()
            )?,
            Split::Walk(w) => write!(
                f,
                ", {} parts sharing one index walk, each reading a share of its pages",
                w.parts()
            )?,
        }
        if let Some(n) = &r.note {
            write!(f, ", {n}")?;
        }
        Ok(())
    }
}

fn op_text(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "=",
        CmpOp::Ne => "<>",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    }
}

impl ExecutionPlan for StrataScanExec {
    fn name(&self) -> &str {
        "StrataScanExec"
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
        match &self.req.residual {
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
                "StrataScanExec is a leaf and takes no children".into(),
            ))
        }
    }

    fn partition_statistics(&self, _partition: Option<usize>) -> Result<Arc<Statistics>> {
        Ok(Arc::new(crate::stats::scan_statistics(
            self.req.stats.as_ref(),
            &self.req.output_schema,
            self.req.estimated_rows(),
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn try_pushdown_sort(
        &self,
        order: &[PhysicalSortExpr],
    ) -> Result<SortOrderPushdownResult<Arc<dyn ExecutionPlan>>> {
        Ok(match self.index_for_order(order) {
            Some(idx) => {
                let path = self.req.plan(Some(idx));
                SortOrderPushdownResult::Exact {
                    inner: Arc::new(StrataScanExec::with_path(self.req.clone(), path)),
                }
            }
            None => SortOrderPushdownResult::Unsupported,
        })
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let parts = self.split.parts();
        if partition >= parts {
            return Err(DataFusionError::Internal(format!(
                "StrataScanExec has {parts} partition(s), asked for {partition}"
            )));
        }
        let split = self.split.clone();
        let counters = Counters::new(&self.metrics, partition, self.req.modeled_clock);
        let req = self.req.clone();
        let path = self.path.clone();
        let io = self.io.clone();
        let name = if parts > 1 {
            format!("scan {} {partition}/{parts}", req.table.name())
        } else {
            format!("scan {}", req.table.name())
        };
        Ok(thread_stream(
            name,
            self.req.output_schema.clone(),
            reader_of(&context),
            move |tx| run(&req, &path, (&split, partition), tx, &counters, &io),
        ))
    }
}

/// A stream of the batches `work` sends from a thread of its own, started at
/// the first poll (so the build side of a hash join finishes before the probe
/// side starts); an error `work` returns ends the stream. The channel is
/// small: a slow consumer slows `work`, and a consumer that stops makes its
/// sends fail.
/// The thread reads for `reader` ([`reader_of`] the statement's session:
/// the device's read window then tells the query's own page reads from
/// other sessions' lookups).
pub(crate) fn thread_stream(
    name: String,
    schema: SchemaRef,
    reader: u64,
    work: impl FnOnce(&tokio::sync::mpsc::Sender<Result<RecordBatch>>) -> Result<()> + Send + 'static,
) -> SendableRecordBatchStream {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(4);
    let what = name.clone();
    let mut start = Some(move || {
        std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                let _mark = strata_storage::device::read_window::read_for(reader);
                if let Err(e) = work(&tx) {
                    let _ = tx.blocking_send(Err(e));
                }
            })
            .map(|_| ())
    });
    let stream = futures::stream::unfold(rx, move |mut rx| {
        let started = start.take().map(|s| s());
        let what = what.clone();
        async move {
            if let Some(Err(e)) = started {
                return Some((
                    Err(DataFusionError::Execution(format!(
                        "cannot start the thread of {what}: {e}"
                    ))),
                    rx,
                ));
            }
            rx.recv().await.map(|b| (b, rx))
        }
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, stream))
}

/// Whom a statement's reads are for, as the device's read window knows
/// readers: its session (never 0).
pub(crate) fn reader_of(context: &TaskContext) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    context.session_id().hash(&mut h);
    h.finish() | 1
}

/// The rows of `rb` for which the boolean `expr` is true.
pub(crate) fn filter_by(rb: RecordBatch, expr: &Arc<dyn PhysicalExpr>) -> Result<RecordBatch> {
    crate::scan::conjuncts::filter(rb, expr)
}

/// The counters EXPLAIN ANALYZE shows.
struct Counters {
    output_rows: datafusion::physical_plan::metrics::Count,
    heap_pages: datafusion::physical_plan::metrics::Count,
    reread_pages: datafusion::physical_plan::metrics::Count,
    index_entries: datafusion::physical_plan::metrics::Count,
    io_requests: datafusion::physical_plan::metrics::Count,
    pages_read: datafusion::physical_plan::metrics::Count,
    sequential_reads: datafusion::physical_plan::metrics::Count,
    random_reads: datafusion::physical_plan::metrics::Count,
    pages_written: datafusion::physical_plan::metrics::Count,
    /// On a modeled device only (`--device hdd|ssd|profile`): a real
    /// device's modeled time is always zero.
    modeled_io: Option<datafusion::physical_plan::metrics::Time>,
    mode_changes: datafusion::physical_plan::metrics::Count,
    region_pages: datafusion::physical_plan::metrics::Gauge,
    spilled_bytes: datafusion::physical_plan::metrics::Count,
}

impl Counters {
    fn new(m: &ExecutionPlanMetricsSet, partition: usize, modeled: bool) -> Counters {
        let c = |name: &'static str| MetricBuilder::new(m).counter(name, partition);
        Counters {
            output_rows: MetricBuilder::new(m).output_rows(partition),
            heap_pages: c("heap_pages"),
            reread_pages: c("heap_pages_read_twice"),
            index_entries: c("index_entries"),
            io_requests: c("io_requests"),
            pages_read: c("pages_read"),
            sequential_reads: c("sequential_reads"),
            random_reads: c("random_reads"),
            pages_written: c("pages_written"),
            modeled_io: modeled
                .then(|| MetricBuilder::new(m).subset_time("modeled_io_time", partition)),
            mode_changes: c("mode_changes"),
            region_pages: MetricBuilder::new(m).gauge("last_region_pages", partition),
            spilled_bytes: c("result_cache_spilled_bytes"),
        }
    }
}

/// The device I/O of a scan's parts, counted once: the device counts the
/// requests of every part running at once together, so the counters are
/// read when the first part starts and again when the last running one
/// ends ([`IoPeriod::enter`]).
#[derive(Default)]
struct IoPeriod(std::sync::Mutex<(usize, Option<IoCounters>)>);

/// A part inside its [`IoPeriod`]; its drop, the last of the parts running,
/// adds the period's I/O to that part's counters.
struct InPeriod<'a> {
    period: &'a IoPeriod,
    device: &'a dyn Device,
    counters: &'a Counters,
}

impl IoPeriod {
    fn enter<'a>(&'a self, device: &'a dyn Device, counters: &'a Counters) -> InPeriod<'a> {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if g.0 == 0 {
            g.1 = Some(device.stats().snapshot());
        }
        g.0 += 1;
        InPeriod {
            period: self,
            device,
            counters,
        }
    }
}

impl Drop for InPeriod<'_> {
    fn drop(&mut self) {
        let mut g = self.period.0.lock().unwrap_or_else(|p| p.into_inner());
        g.0 -= 1;
        if g.0 > 0 {
            return;
        }
        let Some(before) = g.1.take() else { return };
        let io = self.device.stats().snapshot() - before;
        let c = self.counters;
        c.io_requests.add(io.read_requests as usize);
        c.pages_read.add(io.pages_read as usize);
        c.sequential_reads.add(io.sequential_reads as usize);
        c.random_reads.add(io.random_reads as usize);
        c.pages_written.add(io.pages_written as usize);
        if let Some(t) = &c.modeled_io {
            t.add_duration(Duration::from_nanos(io.modeled_ns));
        }
    }
}

fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// Opens the path; a scan that must produce key order and whose path does not
/// (full, sort, switch) gets a partitioned sort on the index, or the plan
/// `strata.ordered_plan` names.
fn open(
    spec: ScanSpec,
    path: &PathPlan,
    req: &ScanRequest,
) -> strata_access::Result<Box<dyn strata_access::AccessPath>> {
    let sort = SortOptions {
        memory_bytes: req.settings.sort_memory_bytes,
        temp_dir: req.temp_dir.clone(),
        ..SortOptions::default()
    };
    match req.settings.ordered_plan {
        Some(plan) if path.ordered => open_ordered(spec, plan, &sort),
        _ => strata_access::open_path(spec, &path.choice, &sort),
    }
}

/// The scan thread of one part: runs the path, converts, filters,
/// projects, sends.
fn run(
    req: &ScanRequest,
    path: &PathPlan,
    part: (&Split, usize),
    tx: &tokio::sync::mpsc::Sender<Result<RecordBatch>>,
    counters: &Counters,
    io: &IoPeriod,
) -> Result<()> {
    let predicate = Predicate {
        conjuncts: req.conjuncts.clone(),
    };
    let (split, partition) = part;
    let mut spec = split.confine(
        ScanSpec::new(req.table.clone(), predicate).ordered(path.ordered),
        partition,
    );
    if path.index.is_some() {
        spec.index = path.index;
    }
    let device = req.table.heap().pool().device().clone();
    let _period = io.enter(device.as_ref(), counters);
    let mut access = open(spec, path, req).map_err(external)?;
    let converter = BatchConverter::new(
        &req.table,
        req.scan_columns.clone(),
        req.scan_schema.clone(),
    );
    let mut batch = TupleBatch::new();
    let mut produced = 0usize;
    let finish = |access: &dyn strata_access::AccessPath| {
        let report = access.report();
        counters.heap_pages.add(report.heap_pages as usize);
        counters.reread_pages.add(report.reread_pages as usize);
        counters.index_entries.add(report.index_entries as usize);
        counters.mode_changes.add(report.mode_changes.len());
        if let Some(&(_, pages)) = report.regions.last() {
            counters.region_pages.set(pages as usize);
        }
        if let Some(rc) = &report.result_cache {
            counters.spilled_bytes.add(rc.spill_bytes_written as usize);
        }
    };
    let mut out = Coalesced::new(req.output_schema.clone());
    let mut sent = true;
    while access.next_batch(&mut batch).map_err(external)? {
        let mut rb = converter.convert(&batch)?;
        if let Some((_, expr)) = &req.residual {
            rb = filter_by(rb, expr)?;
        }
        let mut rb = rb.project(&req.output)?;
        if let Some(limit) = req.limit
            && produced + rb.num_rows() >= limit
        {
            rb = rb.slice(0, limit - produced);
        }
        if rb.num_rows() == 0 {
            continue;
        }
        produced += rb.num_rows();
        counters.output_rows.add(rb.num_rows());
        sent = out.push(rb, tx)?;
        if !sent {
            break; // the consumer is gone
        }
        if req.limit.is_some_and(|l| produced >= l) {
            break;
        }
    }
    if sent {
        out.finish(tx)?;
    }
    finish(access.as_ref());
    Ok(())
}
