//! `MJoinExec`: MJoin's state manager (Skipper §4.1, Algorithm 1) as a
//! DataFusion operator.
//!
//! On first poll it starts a thread that
//! 1. runs the pinned inputs (local tables, subqueries) whole;
//! 2. lists the objects of every cold input from its table's manifest and
//!    makes the subplans (one per combination of objects, [`Subplans`]);
//! 3. asks the cold storage device for every object at once through the
//!    client proxy, tagged with the query (`strata_cold::proxy`);
//! 4. as each object arrives — in whatever order the device chooses — counts
//!    it as the statement's I/O (one read request of its pages in the
//!    database device's counters, as the cold tier counts its own fetches),
//!    decodes it as the query's scan of its table would ([`object_scan`]),
//!    drops it and prunes its subplans when no row of it survives the scan's
//!    predicate, makes room in the cache by the eviction policy, and joins
//!    it with the held objects of the other inputs for the subplans it
//!    completes ([`Joiner`]), sending the rows up;
//! 5. once every request of a cycle is answered, asks again for the objects
//!    of subplans still pending that are no longer held (reissues), until
//!    none is pending.
//!
//! The scans of the inputs read object by object are labelled so in EXPLAIN
//! (`StrataScanExec::read_by_objects`): the path planned for them does not
//! run. Inputs may project no column (`count(*)`): rows are then counted,
//! not carried, in batches without columns.
//!
//! A cycle that runs and prunes nothing fails rather than loop (it cannot
//! happen with a cache that holds one object of each input, which is
//! checked first). A failing object request fails the query naming the
//! object, after the proxy's retries.

use std::fmt;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, PlanProperties,
    SendableRecordBatchStream, collect,
};
use strata_cold::device::{ColdTier, count_fetch};
use strata_cold::manifest::Manifest;
use strata_cold::proxy::{ClientProxy, ObjectRef};
use strata_storage::Database;
use strata_storage::device::{FileId, cold_manifest_path};

use super::column_objects::{ColumnObject, ColumnarInput, columnar_input, leaves};
use super::join::{Edge, Joiner};
use super::object_scan;
use super::rewrite::describe;
use super::subplans::{Cache, Obj, Subplans, interleave};
use crate::options::StrataOptions;
use crate::scan::scan_exec::{ScanRequest, StrataScanExec, reader_of, thread_stream};

/// The environment variable naming a file each MJoin appends its report to
/// (one JSON object per line).
pub const REPORT_ENV: &str = "STRATA_SKIPPER_REPORT";

/// MJoins started by this process (the `#n` of their query tags).
static QUERIES: AtomicU64 = AtomicU64::new(0);

/// What an MJoin joins, shared by the operator and its state manager.
struct Spec {
    schema: SchemaRef,
    keys: Vec<Vec<Vec<Arc<dyn PhysicalExpr>>>>,
    edges: Vec<Edge>,
    tables: Vec<Option<String>>,
    db: Arc<Database>,
    settings: StrataOptions,
}

/// The physical MJoin (see the module docs).
pub struct MJoinExec {
    spec: Arc<Spec>,
    children: Vec<Arc<dyn ExecutionPlan>>,
    props: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl fmt::Debug for MJoinExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MJoinExec")
            .field("tables", &self.spec.tables)
            .finish_non_exhaustive()
    }
}

impl MJoinExec {
    /// The MJoin of `children`; the scans of the cold inputs it reads object
    /// by object are labelled so (their planned paths do not run).
    pub fn new(
        schema: SchemaRef,
        children: Vec<Arc<dyn ExecutionPlan>>,
        keys: Vec<Vec<Vec<Arc<dyn PhysicalExpr>>>>,
        edges: Vec<Edge>,
        tables: Vec<Option<String>>,
        db: Arc<Database>,
        settings: StrataOptions,
    ) -> Result<MJoinExec> {
        let children = children
            .into_iter()
            .zip(&tables)
            .map(|(c, t)| match t {
                Some(t) if cold_scan(&c, t)?.is_some() => Ok(c
                    .transform_up(|p| match p.downcast_ref::<StrataScanExec>() {
                        Some(s) => Ok(Transformed::yes(
                            Arc::new(s.read_by_objects()) as Arc<dyn ExecutionPlan>
                        )),
                        None => Ok(Transformed::no(p)),
                    })?
                    .data),
                _ => Ok(c),
            })
            .collect::<Result<Vec<_>>>()?;
        let props = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(MJoinExec {
            spec: Arc::new(Spec {
                schema,
                keys,
                edges,
                tables,
                db,
                settings,
            }),
            children,
            props: Arc::new(props),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

impl DisplayAs for MJoinExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MJoinExec: relations=[{}], edges={}, cache={}, evict={}",
            describe(&self.spec.tables),
            self.spec.edges.len(),
            strata_storage::util::format_bytes(self.spec.settings.skipper_cache_bytes),
            self.spec.settings.skipper_evict.name()
        )
    }
}

impl ExecutionPlan for MJoinExec {
    fn name(&self) -> &str {
        "MJoinExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.children.iter().collect()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for k in self.spec.keys.iter().flatten().flatten() {
            if f(k)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::SinglePartition; self.children.len()]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false; self.children.len()]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != self.children.len() {
            return Err(DataFusionError::Internal(format!(
                "MJoinExec has {} inputs, given {}",
                self.children.len(),
                children.len()
            )));
        }
        Ok(Arc::new(MJoinExec {
            spec: self.spec.clone(),
            children,
            props: self.props.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
        }))
    }

    fn partition_statistics(&self, _partition: Option<usize>) -> Result<Arc<Statistics>> {
        Ok(Arc::new(Statistics::new_unknown(&self.spec.schema)))
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
                "MJoinExec has one partition, asked for {partition}"
            )));
        }
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|e| DataFusionError::Execution(format!("MJoin needs a tokio runtime: {e}")))?;
        let state = Manager {
            spec: self.spec.clone(),
            inputs: self
                .children
                .iter()
                .zip(&self.spec.tables)
                .map(|(c, t)| input_of(c, t.as_deref(), &self.spec.db))
                .collect::<Result<_>>()?,
            counters: Counters::new(&self.metrics),
            handle,
            context,
        };
        let reader = reader_of(&state.context);
        Ok(thread_stream(
            "mjoin".into(),
            self.spec.schema.clone(),
            reader,
            move |tx| state.run(tx),
        ))
    }
}

/// One input of MJoin, as execution sees it.
enum Input {
    /// Read object by object: the input's plan, the cold scan in it and the
    /// objects of its table.
    Cold {
        plan: Arc<dyn ExecutionPlan>,
        scan: Arc<ScanRequest>,
        direct: bool,
        objects: Vec<(ObjectRef, u64)>,
        /// The table's heap file, whose I/O its objects count as.
        file: FileId,
    },
    /// A columnar table read by objects: its row groups' column chunks
    /// and its delta's heap objects.
    Columns(ColumnarInput),
    /// Run once, whole.
    Pinned(Arc<dyn ExecutionPlan>),
}

impl Input {
    fn plan(&self) -> &Arc<dyn ExecutionPlan> {
        match self {
            Input::Cold { plan, .. } | Input::Pinned(plan) => plan,
            Input::Columns(c) => &c.plan,
        }
    }

    /// The sizes of its objects (none for a pinned input).
    fn object_sizes(&self) -> Vec<u64> {
        match self {
            Input::Cold { objects, .. } => objects.iter().map(|(o, _)| o.bytes).collect(),
            Input::Columns(c) => c.objects.iter().map(ColumnObject::bytes).collect(),
            Input::Pinned(_) => Vec::new(),
        }
    }

    /// Asks `proxy` for its object `i`, to arrive as `id`.
    fn request(&self, proxy: &mut ClientProxy, id: usize, i: usize) -> Result<()> {
        match self {
            Input::Cold { objects, .. } => proxy.request(id, &objects[i].0),
            Input::Columns(c) => match &c.objects[i] {
                ColumnObject::Unit { object, ranges, .. } => {
                    proxy.request_ranges(id, object, ranges.clone())
                }
                ColumnObject::Pages { object, .. } => proxy.request(id, object),
            },
            Input::Pinned(_) => return Ok(()),
        }
        .map_err(external)
    }
}

/// The scan of cold table `table` in input `plan`, when MJoin reads the
/// input object by object: its only leaf is a strata scan of that cold table
/// without a limit.
fn cold_scan(plan: &Arc<dyn ExecutionPlan>, table: &str) -> Result<Option<Arc<ScanRequest>>> {
    Ok(match leaves(plan)?.as_slice() {
        [leaf] => leaf
            .downcast_ref::<StrataScanExec>()
            .map(|s| s.request().clone())
            .filter(|r| r.limit.is_none() && r.table.name() == table && r.table.is_cold()),
        _ => None,
    })
}

/// How input `plan` (reading cold table `table`, if the rewrite said so) is
/// read: object by object when [`cold_scan`] finds its scan, else pinned.
fn input_of(plan: &Arc<dyn ExecutionPlan>, table: Option<&str>, db: &Database) -> Result<Input> {
    let Some(table) = table else {
        return Ok(Input::Pinned(plan.clone()));
    };
    let Some(scan) = cold_scan(plan, table)? else {
        return Ok(match columnar_input(plan, table, db)? {
            Some(c) => Input::Columns(c),
            None => Input::Pinned(plan.clone()),
        });
    };
    let def = db.catalog().table(table).cloned().map_err(external)?;
    let path = cold_manifest_path(&db.dir().join(&def.heap_file));
    let m = Manifest::load(&path).map_err(|e| DataFusionError::External(Box::new(e)))?;
    let objects = m
        .objects
        .iter()
        .map(|o| {
            (
                ObjectRef {
                    endpoint: m.endpoint.clone(),
                    bucket: m.bucket.clone(),
                    key: o.key.clone(),
                    bytes: o.bytes(),
                    crc32c: o.crc32c,
                },
                o.first_page,
            )
        })
        .collect();
    Ok(Input::Cold {
        direct: plan.is::<StrataScanExec>(),
        plan: plan.clone(),
        file: scan.table.heap().file_id(),
        scan,
        objects,
    })
}

/// What EXPLAIN ANALYZE shows of an MJoin.
struct Counters {
    output_rows: Count,
    objects: Count,
    requests: Count,
    /// Objects delivered, and their pages: the I/O MJoin asked of the cold
    /// storage device (also in the statement's I/O).
    io_requests: Count,
    pages_read: Count,
    reissues: Count,
    hits: Count,
    evictions: Count,
    subplans: Count,
    executed: Count,
    pruned: Count,
    cycles: Count,
    wait: Time,
    process: Time,
}

impl Counters {
    fn new(m: &ExecutionPlanMetricsSet) -> Counters {
        let c = |name: &'static str| MetricBuilder::new(m).counter(name, 0);
        Counters {
            output_rows: MetricBuilder::new(m).output_rows(0),
            objects: c("objects"),
            requests: c("object_requests"),
            io_requests: c("io_requests"),
            pages_read: c("pages_read"),
            reissues: c("reissues"),
            hits: c("cache_hits"),
            evictions: c("evictions"),
            subplans: c("subplans"),
            executed: c("subplans_run"),
            pruned: c("subplans_pruned"),
            cycles: c("cycles"),
            wait: MetricBuilder::new(m).subset_time("object_wait_time", 0),
            process: MetricBuilder::new(m).subset_time("process_time", 0),
        }
    }
}

/// The state manager's thread (see the module docs).
struct Manager {
    spec: Arc<Spec>,
    inputs: Vec<Input>,
    counters: Counters,
    handle: tokio::runtime::Handle,
    context: Arc<TaskContext>,
}

/// The report appended to `STRATA_SKIPPER_REPORT`.
#[derive(Default, serde::Serialize)]
struct Report {
    tag: String,
    relations: Vec<String>,
    objects: u64,
    requests: u64,
    reissues: u64,
    /// Objects of pending subplans still held when a cycle began: requests
    /// the cache saved.
    cache_hits: u64,
    evictions: u64,
    subplans: u64,
    executed: u64,
    pruned: u64,
    cycles: u64,
    rows: u64,
    /// Every subplan ran or was pruned (false: the query stopped early or
    /// failed).
    complete: bool,
    cache_bytes: u64,
    wait_s: f64,
    process_s: f64,
    elapsed_s: f64,
}

fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

impl Manager {
    fn run(self, tx: &tokio::sync::mpsc::Sender<Result<RecordBatch>>) -> Result<()> {
        let started = Instant::now();
        let mut report = Report {
            relations: self
                .spec
                .tables
                .iter()
                .map(|t| t.clone().unwrap_or_else(|| "pinned".into()))
                .collect(),
            cache_bytes: self.spec.settings.skipper_cache_bytes,
            ..Report::default()
        };
        let mut wait = Duration::ZERO;
        let result = self.execute(tx, &mut report, &mut wait);
        let elapsed = started.elapsed();
        report.wait_s = wait.as_secs_f64();
        report.elapsed_s = elapsed.as_secs_f64();
        report.process_s = (elapsed - wait.min(elapsed)).as_secs_f64();
        self.counters.wait.add_duration(wait);
        self.counters
            .process
            .add_duration(elapsed - wait.min(elapsed));
        if let Ok(path) = std::env::var(REPORT_ENV)
            && !path.is_empty()
            && let Ok(line) = serde_json::to_string(&report)
        {
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| writeln!(f, "{line}"));
            if let Err(e) = written {
                eprintln!("warning: cannot append the MJoin report to {path}: {e}");
            }
        }
        result
    }

    fn execute(
        &self,
        tx: &tokio::sync::mpsc::Sender<Result<RecordBatch>>,
        report: &mut Report,
        wait: &mut Duration,
    ) -> Result<()> {
        let n = self.inputs.len();
        let columns = self
            .inputs
            .iter()
            .map(|i| i.plan().schema().fields().len())
            .collect();
        let mut joiner = Joiner::new(
            self.spec.schema.clone(),
            self.spec.keys.clone(),
            columns,
            self.spec.edges.clone(),
        );
        // Set when the consumer went away (a LIMIT was met): stop.
        let gone = std::cell::Cell::new(false);
        let send = |b: RecordBatch, report: &mut Report| {
            if b.num_rows() == 0 || gone.get() {
                return;
            }
            report.rows += b.num_rows() as u64;
            self.counters.output_rows.add(b.num_rows());
            if tx.blocking_send(Ok(b)).is_err() {
                gone.set(true);
            }
        };
        // Pinned inputs, whole.
        let mut counts = Vec::with_capacity(n);
        let mut sizes = Vec::with_capacity(n);
        let mut pinned_empty = false;
        for (r, input) in self.inputs.iter().enumerate() {
            match input {
                Input::Pinned(plan) => {
                    let batches = self
                        .handle
                        .block_on(collect(plan.clone(), self.context.clone()))?;
                    let batch = concat_batches(&plan.schema(), &batches)?;
                    pinned_empty |= batch.num_rows() == 0;
                    joiner.add(r, 0, batch)?;
                    counts.push(1);
                    sizes.push(vec![0]);
                }
                Input::Cold { .. } | Input::Columns(_) => {
                    let s = input.object_sizes();
                    counts.push(s.len());
                    sizes.push(s);
                }
            }
        }
        if pinned_empty || counts.contains(&0) {
            report.complete = true;
            return Ok(()); // an input without rows: the join is empty
        }
        let mut plans = Subplans::new(&counts).map_err(DataFusionError::Execution)?;
        let pinned: Vec<bool> = self
            .inputs
            .iter()
            .map(|i| matches!(i, Input::Pinned(_)))
            .collect();
        let mut cache = Cache::new(
            self.spec.settings.skipper_cache_bytes,
            sizes,
            pinned.clone(),
        );
        if cache.capacity() < cache.minimum() {
            return Err(DataFusionError::Execution(format!(
                "strata.skipper_cache = {} cannot hold one object of each cold input of the join ({}): \
                 it needs at least {} bytes ({})",
                strata_storage::util::format_bytes(cache.capacity()),
                describe(&self.spec.tables),
                cache.minimum(),
                strata_storage::util::format_bytes(cache.minimum())
            )));
        }
        for (r, p) in pinned.iter().enumerate() {
            if *p {
                cache.insert((r, 0));
            }
        }
        if pinned.iter().all(|p| *p) {
            // No input is read by objects (a cold table caught half way
            // between tiers is read whole): the one subplan runs now.
            joiner.join(0, 0, &|c| plans.is_pending(c), &mut |b| {
                send(b, report);
                Ok(())
            })?;
            plans.finish(&vec![0; n]);
            report.subplans = 1;
            report.executed = 1;
            report.complete = true;
            return Ok(());
        }
        report.subplans = plans.total();
        self.counters.subplans.add(plans.total() as usize);
        let tier = self
            .spec
            .db
            .cold_tier()
            .and_then(|l| l.as_any().downcast_ref::<ColdTier>())
            .cloned()
            .ok_or_else(|| {
                DataFusionError::Execution(
                    "MJoin: the database was opened without a cold tier".into(),
                )
            })?;
        let tag = format!(
            "{}#{}",
            tier.config().query_tag,
            QUERIES.fetch_add(1, Ordering::Relaxed) + 1
        );
        report.tag = tag.clone();
        let mut proxy = ClientProxy::new(&tier, &tag).map_err(external)?;
        // Object ids: a running number over the cold inputs' objects.
        let mut ids: Vec<Obj> = Vec::new();
        let mut first_id = vec![0usize; n];
        for (r, input) in self.inputs.iter().enumerate() {
            first_id[r] = ids.len();
            ids.extend((0..input.object_sizes().len()).map(|i| (r, i)));
        }
        report.objects = ids.len() as u64;
        self.counters.objects.add(ids.len());
        let mut per_rel: Vec<Vec<Obj>> = (0..n)
            .filter(|&r| !pinned[r])
            .map(|r| (0..counts[r]).map(|i| (r, i)).collect())
            .collect();
        let mut queue = interleave(&mut per_rel);
        let mut keep = std::collections::BTreeSet::new();
        let mut target_objs: Vec<Obj> = Vec::new();
        while plans.pending() > 0 && !gone.get() {
            if queue.is_empty() {
                let hits = plans.held_needed(&cache);
                report.cache_hits += hits;
                self.counters.hits.add(hits as usize);
                queue = plans.needed(&cache);
                if queue.is_empty() {
                    return Err(DataFusionError::Internal(format!(
                        "MJoin: {} subplans pending but every object they need is held",
                        plans.pending()
                    )));
                }
            }
            report.cycles += 1;
            self.counters.cycles.add(1);
            let done_before = plans.pending();
            // From the second cycle on, one pending subplan is the cycle's
            // target: its held objects are kept until it has run, so every
            // cycle runs at least one subplan (its objects fit, as the cache
            // holds the largest object of every input). Without it, a small
            // cache can evict, cycle after cycle, what each arrival needed.
            keep.clear();
            if report.cycles > 1
                && let Some(target) = plans.first_pending()
            {
                target_objs = target.iter().copied().enumerate().collect();
                keep.extend(target_objs.iter().filter(|o| cache.holds(**o)));
            } else {
                target_objs.clear();
            }
            for o in queue.drain(..) {
                if pinned[o.0] {
                    continue;
                }
                self.inputs[o.0].request(&mut proxy, first_id[o.0] + o.1, o.1)?;
                report.requests += 1;
                self.counters.requests.add(1);
                if report.cycles > 1 {
                    report.reissues += 1;
                    self.counters.reissues.add(1);
                }
            }
            loop {
                let t = Instant::now();
                let arrival = proxy.next_arrival();
                *wait += t.elapsed();
                let Some(arrival) = arrival else { break };
                let o = ids[arrival.id];
                let bytes = arrival.result.map_err(external)?;
                self.count_io(o, bytes.len() as u64);
                if plans.pending_with(o) == 0 {
                    continue;
                }
                let batch = self.decode(o, bytes.clone())?;
                drop(bytes);
                if batch.num_rows() == 0 {
                    let p = plans.prune(o);
                    report.pruned += p;
                    self.counters.pruned.add(p as usize);
                    continue;
                }
                while !cache.fits(o) {
                    let Some(v) = cache.victim(o, &plans, self.spec.settings.skipper_evict, &keep)
                    else {
                        break;
                    };
                    cache.remove(v);
                    joiner.remove(v.0, v.1);
                    report.evictions += 1;
                    self.counters.evictions.add(1);
                }
                if !cache.fits(o) {
                    // Only the target's objects are held: this one waits
                    // for a later cycle.
                    continue;
                }
                if target_objs.contains(&o) {
                    keep.insert(o);
                }
                cache.insert(o);
                joiner.add(o.0, o.1, batch)?;
                let runnable = cache.runnable_with(o, &plans);
                if runnable.is_empty() {
                    continue;
                }
                joiner.join(o.0, o.1, &|c| plans.is_pending(c), &mut |b| {
                    send(b, report);
                    Ok(())
                })?;
                for c in &runnable {
                    plans.finish(c);
                }
                report.executed += runnable.len() as u64;
                self.counters.executed.add(runnable.len());
                if plans.pending() == 0 || gone.get() {
                    break;
                }
            }
            report.complete = plans.pending() == 0;
            // The first cycle has no target and may run nothing with a
            // small cache; a later one always runs its target.
            if !gone.get()
                && report.cycles > 1
                && plans.pending() > 0
                && plans.pending() == done_before
            {
                return Err(DataFusionError::Execution(format!(
                    "MJoin made no progress in cycle {} ({} subplans pending, cache {}): \
                     raise strata.skipper_cache",
                    report.cycles,
                    plans.pending(),
                    strata_storage::util::format_bytes(cache.capacity())
                )));
            }
        }
        Ok(())
    }

    /// Counts object `o`, `bytes` long and fetched, as the statement's I/O
    /// (the cold tier's own counters have its GET already).
    fn count_io(&self, o: Obj, bytes: u64) {
        if bytes == 0 {
            // A column object the column-chunk cache held: nothing fetched.
            return;
        }
        let (file, first_page) = match &self.inputs[o.0] {
            Input::Cold { objects, file, .. } => (*file, objects[o.1].1),
            Input::Columns(c) => match &c.objects[o.1] {
                ColumnObject::Unit { file, ranges, .. } => (
                    *file,
                    ranges.first().map_or(0, |r| r.0) / strata_storage::device::PAGE_SIZE as u64,
                ),
                ColumnObject::Pages { first_page, .. } => (c.delta_file, *first_page),
            },
            Input::Pinned(_) => return,
        };
        count_fetch(self.spec.db.device().as_ref(), file, first_page, bytes);
        self.counters.io_requests.add(1);
        self.counters
            .pages_read
            .add(bytes.div_ceil(strata_storage::device::PAGE_SIZE as u64) as usize);
    }

    /// The rows object `o` gives its input.
    fn decode(&self, o: Obj, bytes: bytes::Bytes) -> Result<RecordBatch> {
        if let Input::Columns(c) = &self.inputs[o.0] {
            return c.decode(o.1, bytes, &self.handle, &self.context);
        }
        let Input::Cold {
            plan,
            scan,
            direct,
            objects,
            ..
        } = &self.inputs[o.0]
        else {
            return Err(DataFusionError::Internal(
                "MJoin: a pinned input has no objects".into(),
            ));
        };
        let (obj, first_page) = &objects[o.1];
        let rows = object_scan::decode(scan, &bytes, *first_page, &obj.name())?;
        if *direct {
            return Ok(rows);
        }
        // Filters and projections above the scan, run over this object's rows.
        let source = datafusion::datasource::memory::MemorySourceConfig::try_new_exec(
            &[vec![rows]],
            scan.output_schema.clone(),
            None,
        )?;
        let replaced = plan
            .clone()
            .transform_up(|p| {
                if p.is::<StrataScanExec>() {
                    Ok(Transformed::yes(source.clone() as Arc<dyn ExecutionPlan>))
                } else {
                    Ok(Transformed::no(p))
                }
            })?
            .data;
        let batches = self
            .handle
            .block_on(collect(replaced, self.context.clone()))?;
        Ok(concat_batches(&plan.schema(), &batches)?)
    }
}
