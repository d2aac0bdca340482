//! [`SharedResultExec`]: one reader of a result computed once
//! ([`Shared`]): the first reader of a partition runs the input's partition
//! to its end and keeps its batches; every reader then streams them.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
    displayable,
};
use futures::{StreamExt, TryStreamExt};
use parking_lot::Mutex;
use tokio::sync::OnceCell;

/// A result computed once: its input's physical plan and, per partition,
/// its batches once a reader has computed them.
pub struct Shared {
    id: usize,
    readers: usize,
    input: Arc<dyn ExecutionPlan>,
    partitions: Vec<OnceCell<Arc<Vec<RecordBatch>>>>,
    /// The memory the kept batches take, from the pool of the statement
    /// that computed them.
    reservations: Mutex<Vec<MemoryReservation>>,
}

impl Shared {
    pub fn new(id: usize, readers: usize, input: Arc<dyn ExecutionPlan>) -> Shared {
        let n = input.properties().partitioning.partition_count();
        Shared {
            id,
            readers,
            input,
            partitions: (0..n).map(|_| OnceCell::new()).collect(),
            reservations: Mutex::new(Vec::new()),
        }
    }

    /// Partition `partition`'s batches, computed by the first caller.
    async fn batches(
        self: Arc<Self>,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<Arc<Vec<RecordBatch>>> {
        let cell = &self.partitions[partition];
        cell.get_or_try_init(|| async {
            let reservation =
                MemoryConsumer::new(format!("SharedResultExec[{}/{partition}]", self.id))
                    .register(context.memory_pool());
            let mut stream = self.input.execute(partition, context.clone())?;
            let mut batches = Vec::new();
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                reservation.try_grow(batch.get_array_memory_size())?;
                batches.push(batch);
            }
            self.reservations.lock().push(reservation);
            Ok::<_, DataFusionError>(Arc::new(batches))
        })
        .await
        .cloned()
    }
}

/// One occurrence of a shared result in a plan. It shows as a leaf: the
/// input is optimized and run once, not by each occurrence.
pub struct SharedResultExec {
    shared: Arc<Shared>,
    props: Arc<PlanProperties>,
}

impl SharedResultExec {
    pub fn new(shared: Arc<Shared>) -> SharedResultExec {
        let props = Arc::new(shared.input.properties().as_ref().clone());
        SharedResultExec { shared, props }
    }

    /// The plan the result comes from.
    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.shared.input
    }
}

impl fmt::Debug for SharedResultExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedResultExec({})", self.shared.id)
    }
}

/// The one-line descriptions of `plan`'s leaves (its scans).
fn leaves(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<String>) {
    if plan.children().is_empty() {
        out.push(
            displayable(plan.as_ref())
                .one_line()
                .to_string()
                .trim()
                .to_string(),
        );
    }
    for c in plan.children() {
        leaves(c, out);
    }
}

impl DisplayAs for SharedResultExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut scans = Vec::new();
        leaves(&self.shared.input, &mut scans);
        write!(
            f,
            "SharedResultExec: id={}, computed once for {} readers: {} over {}",
            self.shared.id,
            self.shared.readers,
            displayable(self.shared.input.as_ref())
                .one_line()
                .to_string()
                .trim(),
            scans.join(", ")
        )
    }
}

impl ExecutionPlan for SharedResultExec {
    fn name(&self) -> &str {
        "SharedResultExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !children.is_empty() {
            return Err(DataFusionError::Internal(
                "SharedResultExec takes no children".into(),
            ));
        }
        Ok(self)
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn partition_statistics(&self, _partition: Option<usize>) -> Result<Arc<Statistics>> {
        Ok(Arc::new(Statistics::new_unknown(
            &self.shared.input.schema(),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition >= self.shared.partitions.len() {
            return Err(DataFusionError::Internal(format!(
                "SharedResultExec has {} partitions, asked for {partition}",
                self.shared.partitions.len()
            )));
        }
        let schema: SchemaRef = self.shared.input.schema();
        let shared = self.shared.clone();
        let batches = futures::stream::once(shared.batches(partition, context))
            .map_ok(|batches| {
                futures::stream::iter((0..batches.len()).map(move |i| Ok(batches[i].clone())))
            })
            .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, batches)))
    }
}
