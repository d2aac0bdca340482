//! `IndexJoinExec`: an index nested-loop join. The outer side is any plan; the
//! inner side is a strata table read through an index on the join key, with
//! the inner scan's own predicate, residual and projection.
//!
//! * **Index inner** (the classical operator): for each batch of outer rows,
//!   the distinct join keys are probed in key order, the tuple ids they find
//!   are sorted by page and the pages read in page order, adjacent ones
//!   coalesced and several requests in flight ([`SortScan::from_tids`]) —
//!   each page once per batch, but again by a later batch that needs it.
//! * **Smooth inner** (Smooth Scan §4.2, the parameterized path): the outer
//!   side is read whole first (as a hash join's build side is), then one
//!   Smooth Scan probes every distinct key with one Page-ID cache
//!   ([`PageOrderScan::for_keys`]): each heap page is read at most once for
//!   the whole join, every tuple on it that any key wants is produced then,
//!   and when the keys' matches cover enough of the table it morphs into a
//!   sweep of the heap.
//!
//! Either way the inner tuples are paired with the outer rows of equal keys
//! (all of the join's equality pairs, compared in Arrow's row format), the
//! join filter is applied, then the hash join's projection, so the operator
//! is a drop-in for the [`HashJoinExec`](datafusion::physical_plan::joins::HashJoinExec)
//! it replaces.
//!
//! A semi or anti join marks, per chunk of outer rows, the rows some pair
//! passed for (a marked row's later pairs are skipped, and the chunk's
//! reading stops once every row with a key is marked); at the chunk's end it
//! returns the marked rows (semi) or the others (anti).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, UInt32Array};
use datafusion::arrow::compute::{
    concat_batches, filter as filter_array, filter_record_batch, take,
};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, JoinSide, JoinType, Result, ScalarValue};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExprRef};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::joins::utils::{JoinFilter, build_join_schema};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
    SendableRecordBatchStream,
};
use futures::StreamExt;
use strata_access::smooth::page_order::{PageOrderScan, PageSet};
use strata_access::sort_scan::SortScan;
use strata_access::{AccessPath, Predicate, ScanSpec, SmoothOptions, TupleBatch};
use strata_storage::row::encode_key_value;

use crate::scan::pushdown::literal;
use crate::scan::scan_exec::{ScanRequest, filter_by, reader_of, thread_stream};
use strata_columns::convert::BatchConverter;

/// How the inner side is read.
#[derive(Clone, Debug)]
pub enum InnerPath {
    /// Index probes per outer batch, each batch's pages read once in page
    /// order.
    Index,
    /// One Smooth Scan over every outer key (the outer side read first).
    Smooth(SmoothOptions),
}

impl InnerPath {
    pub fn name(&self) -> &'static str {
        match self {
            InnerPath::Index => "index",
            InnerPath::Smooth(_) => "smooth",
        }
    }
}

/// What an index join joins: the planner's choices.
#[derive(Clone)]
pub struct IndexJoin {
    /// `Inner`, or a semi / anti join that returns the outer side's rows
    /// (`LeftSemi` / `LeftAnti` with the inner on the right, `RightSemi` /
    /// `RightAnti` with it on the left).
    pub join_type: JoinType,
    /// The inner scan (table, predicate, residual, columns).
    pub inner: Arc<ScanRequest>,
    /// Position of the probed index in the inner table's indexes; its first
    /// key column is the inner side of `on[probe]`.
    pub index: usize,
    /// The equality pairs (outer expression, inner expression over the inner
    /// scan's output), all checked; `on[probe]` is probed in the index.
    pub on: Vec<(PhysicalExprRef, PhysicalExprRef)>,
    pub probe: usize,
    pub filter: Option<JoinFilter>,
    /// Whether the inner table was the hash join's left (build) side: then
    /// the joined columns are inner ++ outer, as the hash join's were, and the
    /// filter's left columns are the inner's.
    pub inner_left: bool,
    /// Columns the join outputs, as the hash join's: of the joined columns
    /// (inner join) or of the outer side's (semi / anti join).
    pub projection: Option<Vec<usize>>,
    pub path: InnerPath,
    /// Why the planner chose it (estimates and costs), for EXPLAIN.
    pub why: String,
}

pub struct IndexJoinExec {
    outer: Arc<dyn ExecutionPlan>,
    join: Arc<IndexJoin>,
    schema: SchemaRef,
    props: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl fmt::Debug for IndexJoinExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IndexJoinExec({})", self.join.inner.table.name())
    }
}

impl IndexJoinExec {
    /// The join of `outer` with the inner table; `schema` is the output
    /// schema of the hash join it replaces.
    pub fn new(outer: Arc<dyn ExecutionPlan>, join: IndexJoin, schema: SchemaRef) -> Self {
        let outer: Arc<dyn ExecutionPlan> = if outer.output_partitioning().partition_count() > 1 {
            Arc::new(CoalescePartitionsExec::new(outer))
        } else {
            outer
        };
        let props = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        IndexJoinExec {
            outer,
            join: Arc::new(join),
            schema,
            props: Arc::new(props),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    pub fn join(&self) -> &IndexJoin {
        &self.join
    }
}

impl DisplayAs for IndexJoinExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let j = &self.join;
        let table = &j.inner.table;
        let on: Vec<String> = j.on.iter().map(|(l, r)| format!("({l}, {r})")).collect();
        write!(
            f,
            "IndexJoinExec: inner={} via {}, inner_path={}, on=[{}]",
            table.name(),
            table.indexes()[j.index].def.name,
            j.path.name(),
            on.join(", ")
        )?;
        if j.join_type != JoinType::Inner {
            write!(f, ", join_type={}", j.join_type)?;
        }
        if !j.inner.conjuncts.is_empty() {
            write!(f, ", inner_predicate=[{}]", j.inner.predicate_text())?;
        }
        if let Some((text, _)) = &j.inner.residual {
            write!(f, ", inner_residual=[{text}]")?;
        }
        if let Some(filter) = &j.filter {
            write!(f, ", filter={filter}")?;
        }
        write!(f, ", {}", j.why)
    }
}

impl ExecutionPlan for IndexJoinExec {
    fn name(&self) -> &str {
        "IndexJoinExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.outer]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&PhysicalExprRef) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for (l, r) in &self.join.on {
            if f(l)? == TreeNodeRecursion::Stop || f(r)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        if let Some(filter) = &self.join.filter
            && f(filter.expression())? == TreeNodeRecursion::Stop
        {
            return Ok(TreeNodeRecursion::Stop);
        }
        match &self.join.inner.residual {
            Some((_, e)) => f(e),
            None => Ok(TreeNodeRecursion::Continue),
        }
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(
                "IndexJoinExec takes one child (its outer side)".into(),
            ));
        }
        Ok(Arc::new(IndexJoinExec::new(
            children.remove(0),
            (*self.join).clone(),
            self.schema.clone(),
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "IndexJoinExec has one partition, asked for {partition}"
            )));
        }
        let batch_rows = context.session_config().batch_size().max(1);
        let reader = reader_of(&context);
        let outer = self.outer.execute(0, context)?;
        let handle = tokio::runtime::Handle::current();
        let counters = Counters::new(&self.metrics, self.join.inner.modeled_clock);
        let join = self.join.clone();
        let schema = self.schema.clone();
        let outer_schema = self.outer.schema();
        Ok(thread_stream(
            format!("index join {}", join.inner.table.name()),
            self.schema.clone(),
            reader,
            move |tx| {
                let mut run = Run::new(&join, outer_schema, schema, &counters, batch_rows)?;
                run.run(outer, &handle, tx)
            },
        ))
    }
}

/// EXPLAIN ANALYZE's counters.
struct Counters {
    output_rows: Count,
    outer_rows: Count,
    probes: Count,
    index_entries: Count,
    heap_pages: Count,
    reread_pages: Count,
    io_requests: Count,
    pages_read: Count,
    /// On a modeled device only (a real device's I/O is not modeled).
    modeled_io: Option<Time>,
    mode_changes: Count,
}

impl Counters {
    fn new(m: &ExecutionPlanMetricsSet, modeled: bool) -> Counters {
        let c = |name: &'static str| MetricBuilder::new(m).counter(name, 0);
        Counters {
            output_rows: MetricBuilder::new(m).output_rows(0),
            outer_rows: c("outer_rows"),
            probes: c("probes"),
            index_entries: c("index_entries"),
            heap_pages: c("heap_pages"),
            reread_pages: c("heap_pages_read_twice"),
            io_requests: c("inner_io_requests"),
            pages_read: c("inner_pages_read"),
            modeled_io: modeled
                .then(|| MetricBuilder::new(m).subset_time("inner_modeled_io_time", 0)),
            mode_changes: c("mode_changes"),
        }
    }
}

/// One execution of the join.
struct Run<'a> {
    join: &'a IndexJoin,
    counters: &'a Counters,
    spec: ScanSpec,
    converter: BatchConverter,
    keys: RowConverter,
    /// Schema of outer ++ inner columns, and the output schema.
    joined: SchemaRef,
    schema: SchemaRef,
    /// Heap pages read so far (the index path counts pages read again).
    seen: PageSet,
    /// Outer rows per chunk of the index path.
    batch_rows: usize,
}

impl<'a> Run<'a> {
    fn new(
        join: &'a IndexJoin,
        outer_schema: SchemaRef,
        schema: SchemaRef,
        counters: &'a Counters,
        batch_rows: usize,
    ) -> Result<Run<'a>> {
        let req = &join.inner;
        let mut spec = ScanSpec::new(
            req.table.clone(),
            Predicate {
                conjuncts: req.conjuncts.clone(),
            },
        );
        spec.index = Some(join.index);
        let converter = BatchConverter::new(
            &req.table,
            req.scan_columns.clone(),
            req.scan_schema.clone(),
        );
        let fields = join
            .on
            .iter()
            .map(|(l, _)| Ok(SortField::new(l.data_type(&outer_schema)?)))
            .collect::<Result<Vec<_>>>()?;
        let keys = RowConverter::new(fields)?;
        let (joined, _) = if join.inner_left {
            build_join_schema(&req.output_schema, &outer_schema, &JoinType::Inner)
        } else {
            build_join_schema(&outer_schema, &req.output_schema, &JoinType::Inner)
        };
        Ok(Run {
            join,
            counters,
            spec,
            converter,
            keys,
            joined: Arc::new(joined),
            schema,
            seen: PageSet::new(req.table.heap().num_pages()),
            batch_rows,
        })
    }

    fn run(
        &mut self,
        mut outer: SendableRecordBatchStream,
        handle: &tokio::runtime::Handle,
        tx: &tokio::sync::mpsc::Sender<Result<RecordBatch>>,
    ) -> Result<()> {
        let mut next = || handle.block_on(outer.next()).transpose();
        match self.join.path {
            InnerPath::Index => {
                // Chunks of at least the session's batch size, so that each
                // chunk's probes share as many pages as a batch can.
                let mut pending: Vec<RecordBatch> = Vec::new();
                let mut rows = 0;
                loop {
                    let batch = next()?;
                    let end = batch.is_none();
                    if let Some(b) = batch {
                        rows += b.num_rows();
                        pending.push(b);
                    }
                    if (end || rows >= self.batch_rows) && rows > 0 {
                        let chunk = concat_batches(&pending[0].schema(), &pending)?;
                        pending.clear();
                        rows = 0;
                        if !self.chunk(chunk, tx)? {
                            break;
                        }
                    }
                    if end {
                        break;
                    }
                }
            }
            InnerPath::Smooth(_) => {
                let mut all = Vec::new();
                while let Some(batch) = next()? {
                    all.push(batch);
                }
                let outer_schema = match all.first() {
                    Some(b) => b.schema(),
                    None => return Ok(()),
                };
                let batch = concat_batches(&outer_schema, &all)?;
                drop(all);
                self.chunk(batch, tx)?;
            }
        }
        Ok(())
    }

    /// Joins one chunk of outer rows (a batch, or the whole outer side);
    /// returns false when the consumer went away.
    fn chunk(
        &mut self,
        outer: RecordBatch,
        tx: &tokio::sync::mpsc::Sender<Result<RecordBatch>>,
    ) -> Result<bool> {
        let n = outer.num_rows();
        self.counters.outer_rows.add(n);
        let join = self.join;
        let outer_keys: Vec<ArrayRef> = join
            .on
            .iter()
            .map(|(l, _)| l.evaluate(&outer)?.into_array(n))
            .collect::<Result<_>>()?;
        let rows = self.keys.convert_columns(&outer_keys)?;
        let index = &join.inner.table.indexes()[join.index];
        let key_type = &index.key_types[0];
        // Outer rows by key, and the probe column's distinct encoded keys.
        let mut by_key: HashMap<&[u8], Vec<u32>> = HashMap::new();
        let mut probe_keys = Vec::new();
        let mut key = Vec::new();
        for i in 0..n {
            if outer_keys.iter().any(|a| a.is_null(i)) {
                continue; // NULL equals nothing
            }
            let entry = by_key.entry(rows.row(i).data()).or_default();
            if entry.is_empty() {
                let v = ScalarValue::try_from_array(&outer_keys[join.probe], i)?;
                // A value the inner column cannot hold exactly matches none
                // of its tuples.
                if let Some(v) = literal(&v, key_type) {
                    key.clear();
                    encode_key_value(key_type, &v, &mut key);
                    probe_keys.push(key.clone());
                }
            }
            entry.push(i as u32);
        }
        probe_keys.sort_unstable();
        probe_keys.dedup();
        self.counters.probes.add(probe_keys.len());
        // Semi / anti join: which outer rows some inner row matched, and how
        // many of those with a key are still unmatched.
        let mut matched = (join.join_type != JoinType::Inner).then(|| vec![false; n]);
        let mut unmatched: usize = by_key.values().map(Vec::len).sum();
        if probe_keys.is_empty() {
            return self.emit_tested(&outer, matched.as_deref(), tx);
        }
        let device = join.inner.table.heap().pool().device().clone();
        let before = device.stats().snapshot();
        let mut access: Box<dyn AccessPath> = match &join.path {
            InnerPath::Index => {
                let mut tids = Vec::new();
                for k in &probe_keys {
                    let mut c = index.btree.range_cursor(
                        std::ops::Bound::Included(k.clone()),
                        std::ops::Bound::Included(k.clone()),
                    );
                    while let Some(e) = c.next_entry(&index.btree) {
                        tids.push(e.map_err(external)?.1);
                    }
                }
                // In page order (the order the sort scan reads them in), so
                // each page read is counted once.
                tids.sort_unstable();
                let mut again = 0;
                let mut last = None;
                for t in &tids {
                    if last != Some(t.page) {
                        last = Some(t.page);
                        again += !self.seen.insert(t.page as u64) as usize;
                    }
                }
                self.counters.reread_pages.add(again);
                Box::new(SortScan::from_tids(self.spec.clone(), tids))
            }
            InnerPath::Smooth(opts) => Box::new(
                PageOrderScan::for_keys(self.spec.clone(), probe_keys, opts).map_err(external)?,
            ),
        };
        let mut tuples = TupleBatch::new();
        let mut open = true;
        while access.next_batch(&mut tuples).map_err(external)? {
            let inner = self.inner_batch(&tuples)?;
            let (rows, out) = self.pair(&outer, &by_key, &inner, matched.as_deref())?;
            if let Some(m) = matched.as_mut() {
                for &i in rows.values() {
                    if !std::mem::replace(&mut m[i as usize], true) {
                        unmatched -= 1;
                    }
                }
                if unmatched == 0 {
                    break; // every outer row with a key is decided
                }
                continue;
            }
            let Some(out) = out.filter(|o| o.num_rows() > 0) else {
                continue;
            };
            self.counters.output_rows.add(out.num_rows());
            if tx.blocking_send(Ok(out)).is_err() {
                open = false; // the consumer is gone
                break;
            }
        }
        let report = access.report();
        let io = device.stats().snapshot() - before;
        self.counters
            .index_entries
            .add(report.index_entries as usize);
        self.counters.heap_pages.add(report.heap_pages as usize);
        self.counters.reread_pages.add(report.reread_pages as usize);
        self.counters.mode_changes.add(report.mode_changes.len());
        self.counters.io_requests.add(io.read_requests as usize);
        self.counters.pages_read.add(io.pages_read as usize);
        if let Some(t) = &self.counters.modeled_io {
            t.add_duration(Duration::from_nanos(io.modeled_ns));
        }
        if open && matched.is_some() {
            return self.emit_tested(&outer, matched.as_deref(), tx);
        }
        Ok(open)
    }

    /// A semi join's matched outer rows, or an anti join's unmatched ones
    /// (NULL keys included), projected as the join's output, in batches of
    /// the session's size; nothing for an inner join. False when the consumer
    /// went away.
    fn emit_tested(
        &self,
        outer: &RecordBatch,
        matched: Option<&[bool]>,
        tx: &tokio::sync::mpsc::Sender<Result<RecordBatch>>,
    ) -> Result<bool> {
        let Some(matched) = matched else {
            return Ok(true);
        };
        let want = matches!(
            self.join.join_type,
            JoinType::LeftSemi | JoinType::RightSemi
        );
        let keep: BooleanArray = matched.iter().map(|&m| Some(m == want)).collect();
        let rows = filter_record_batch(outer, &keep)?;
        let rows = match &self.join.projection {
            Some(p) => rows.project(p)?,
            None => rows,
        };
        let rows = with_rows(&self.schema, rows.columns().to_vec(), rows.num_rows())?;
        let mut at = 0;
        while at < rows.num_rows() {
            let len = self.batch_rows.min(rows.num_rows() - at);
            self.counters.output_rows.add(len);
            if tx.blocking_send(Ok(rows.slice(at, len))).is_err() {
                return Ok(false);
            }
            at += len;
        }
        Ok(true)
    }

    /// Inner tuples as the inner scan's output: converted, its residual
    /// applied, projected.
    fn inner_batch(&self, tuples: &TupleBatch) -> Result<RecordBatch> {
        let req = &self.join.inner;
        let mut rb = self.converter.convert(tuples)?;
        if let Some((_, expr)) = &req.residual {
            rb = filter_by(rb, expr)?;
        }
        Ok(rb.project(&req.output)?)
    }

    /// The pairs of an outer chunk's rows and a batch of inner rows with
    /// equal keys that pass the join filter: the outer row of each, and for
    /// an inner join the joined rows, projected as the join's output. A semi
    /// or anti join skips the outer rows it has `matched` already.
    fn pair(
        &self,
        outer: &RecordBatch,
        by_key: &HashMap<&[u8], Vec<u32>>,
        inner: &RecordBatch,
        matched: Option<&[bool]>,
    ) -> Result<(UInt32Array, Option<RecordBatch>)> {
        let m = inner.num_rows();
        let inner_keys: Vec<ArrayRef> = self
            .join
            .on
            .iter()
            .map(|(_, r)| r.evaluate(inner)?.into_array(m))
            .collect::<Result<_>>()?;
        let rows = self.keys.convert_columns(&inner_keys)?;
        let (mut li, mut ri) = (Vec::new(), Vec::new());
        for j in 0..m {
            if inner_keys.iter().any(|a| a.is_null(j)) {
                continue;
            }
            if let Some(outer_rows) = by_key.get(rows.row(j).data()) {
                for &i in outer_rows {
                    if matched.is_some_and(|m| m[i as usize]) {
                        continue;
                    }
                    li.push(i);
                    ri.push(j as u32);
                }
            }
        }
        let (mut li, mut ri) = (UInt32Array::from(li), UInt32Array::from(ri));
        // The join filter on its own columns, then the pairs it keeps.
        if let Some(filter) = &self.join.filter {
            let [left, right] = self.sides(outer, &li, inner, &ri);
            let columns = filter
                .column_indices()
                .iter()
                .map(|ci| {
                    let (batch, rows) = if ci.side == JoinSide::Left {
                        left
                    } else {
                        right
                    };
                    take(batch.column(ci.index), rows, None)
                })
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let intermediate = with_rows(filter.schema(), columns, li.len())?;
            let keep = filter
                .expression()
                .evaluate(&intermediate)?
                .into_array(intermediate.num_rows())?;
            let keep = keep
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(|| DataFusionError::Internal("join filter is not boolean".into()))?;
            let kept = |rows: &UInt32Array| -> Result<UInt32Array> {
                Ok(filter_array(rows, keep)?
                    .as_any()
                    .downcast_ref::<UInt32Array>()
                    .ok_or_else(|| DataFusionError::Internal("filtered row numbers".into()))?
                    .clone())
            };
            (li, ri) = (kept(&li)?, kept(&ri)?);
        }
        if matched.is_some() {
            return Ok((li, None));
        }
        let columns = self
            .sides(outer, &li, inner, &ri)
            .into_iter()
            .flat_map(|(batch, rows)| batch.columns().iter().map(move |c| take(c, rows, None)))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let joined = with_rows(&self.joined, columns, li.len())?;
        let joined = match &self.join.projection {
            Some(p) => joined.project(p)?,
            None => joined,
        };
        let out = with_rows(&self.schema, joined.columns().to_vec(), joined.num_rows())?;
        Ok((li, Some(out)))
    }

    /// The hash join's left and right sides, each with the row of every pair
    /// in it.
    fn sides<'b>(
        &self,
        outer: &'b RecordBatch,
        outer_rows: &'b UInt32Array,
        inner: &'b RecordBatch,
        inner_rows: &'b UInt32Array,
    ) -> [(&'b RecordBatch, &'b UInt32Array); 2] {
        if self.join.inner_left {
            [(inner, inner_rows), (outer, outer_rows)]
        } else {
            [(outer, outer_rows), (inner, inner_rows)]
        }
    }
}

/// A batch of `rows` rows: also when it has no columns (a `count(*)` above
/// the join needs none of them).
fn with_rows(schema: &SchemaRef, columns: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch> {
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}

fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}
