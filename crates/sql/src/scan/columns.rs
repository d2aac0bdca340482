//! `StrataColumnScanExec`: the scan of a columnar table's column part
//! (`strata_columns`), a DataFusion leaf beside the heap's scan of its delta.
//!
//! It reads only the columns the query uses (its output and the columns its
//! WHERE conjuncts name), and of those only the row groups and pages the
//! conjuncts that compare a column with a literal can be true on; every row
//! read is then tested with all the conjuncts. The row groups left are split
//! into parts of about equal rows, one partition (and thread) each.
//! EXPLAIN shows the row groups and rows kept; EXPLAIN ANALYZE the bytes and
//! read requests the scan took and the rows it read.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use strata_access::predicate::Comparison;
use strata_columns::read::{Plan, Unit, split};
use strata_columns::{ColumnPart, ColumnsError};
use strata_storage::Table;

use crate::scan::coalesced::Coalesced;
use crate::scan::scan_exec::{reader_of, thread_stream};

/// A scan of a columnar table's column part.
pub struct StrataColumnScanExec {
    table: Arc<Table>,
    part: Arc<ColumnPart>,
    /// The units of each partition.
    parts: Vec<Vec<Unit>>,
    plan: Plan,
    /// The index lookup that chose the rows, if one was tried.
    probe: Option<strata_columns::index::Probe>,
    /// Table columns read, in table order (the order the reader gives).
    read_columns: Vec<usize>,
    /// Positions in `read_columns` of the output columns, in output order.
    output: Vec<usize>,
    /// Every conjunct, over the read columns' schema, as text and compiled.
    filter: Option<(String, Arc<dyn PhysicalExpr>)>,
    conjuncts: Vec<Comparison>,
    output_schema: SchemaRef,
    limit: Option<usize>,
    /// For DataFusion's join planning: the estimated rows and the columns'
    /// distinct counts.
    statistics: Statistics,
    metrics: ExecutionPlanMetricsSet,
    props: Arc<PlanProperties>,
}

/// What the column scan is asked for.
pub struct ColumnScanRequest {
    pub table: Arc<Table>,
    pub part: ColumnPart,
    /// Table columns the scan reads: the output's and the filter's.
    pub scan_columns: Vec<usize>,
    /// Table columns of the output, in output order.
    pub output_cols: Vec<usize>,
    /// Comparisons with literals the pruning tests.
    pub conjuncts: Vec<Comparison>,
    /// Every conjunct compiled over `read_schema` (the scan columns in table
    /// order), with its text.
    pub filter: Option<(String, Arc<dyn PhysicalExpr>)>,
    pub output_schema: SchemaRef,
    pub limit: Option<usize>,
    pub partitions: usize,
    /// The fraction of the rows the filter keeps, estimated.
    pub selectivity: f64,
    /// The access path (`strata.access_path`: Smooth Scan for `smooth`,
    /// `optimizer` and `switch`).
    pub path: strata_columns::paths::ColumnPath,
    /// Whether `filter` says no more than `conjuncts` (every conjunct of the
    /// WHERE is a comparison of a column with a literal).
    pub filter_is_conjuncts: bool,
    /// The table's `ANALYZE` statistics, if it has them.
    pub stats: Option<crate::stats::TableStats>,
}

impl StrataColumnScanExec {
    pub fn new(r: ColumnScanRequest) -> strata_columns::Result<StrataColumnScanExec> {
        let mut read_columns = r.scan_columns.clone();
        read_columns.sort_unstable();
        read_columns.dedup();
        let (plan, probe) =
            strata_columns::paths::plan(&r.part, &r.table, &r.conjuncts, &read_columns, r.path)?;
        // Rows an index's range named exactly pass the WHERE already: the
        // filter, and the columns only it read, are not needed (a lookup
        // by key reads one page fewer per row).
        let mut filter = r.filter;
        if r.filter_is_conjuncts
            && probe
                .as_ref()
                .is_some_and(|p| index_answers(&r.table, p, &r.conjuncts))
        {
            filter = None;
            read_columns = r.output_cols.clone();
            read_columns.sort_unstable();
            read_columns.dedup();
        }
        let output = r
            .output_cols
            .iter()
            .map(|c| {
                read_columns
                    .iter()
                    .position(|x| x == c)
                    .expect("output is read")
            })
            .collect();
        let parts = split(&plan.units, r.partitions);
        let estimated_rows = (plan.rows() as f64 * r.selectivity).ceil() as usize;
        let statistics =
            crate::stats::scan_statistics(r.stats.as_ref(), &r.output_schema, estimated_rows);
        let props = PlanProperties::new(
            EquivalenceProperties::new(r.output_schema.clone()),
            Partitioning::UnknownPartitioning(parts.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(StrataColumnScanExec {
            table: r.table,
            part: Arc::new(r.part),
            parts,
            plan,
            probe,
            read_columns,
            output,
            filter,
            conjuncts: r.conjuncts,
            output_schema: r.output_schema,
            limit: r.limit,
            statistics,
            metrics: ExecutionPlanMetricsSet::new(),
            props: Arc::new(props),
        })
    }
}

/// Whether `probe`'s positions are exactly the rows that pass `conjuncts`:
/// it read its index's whole range (it did not give up), and every
/// conjunct bounds the index's first key column, of a type whose key
/// encoding orders as its values compare (integers, dates, timestamps), by
/// an operator a range expresses (not `<>`). The rows deleted are left out
/// of the positions already.
fn index_answers(
    table: &Table,
    probe: &strata_columns::index::Probe,
    conjuncts: &[Comparison],
) -> bool {
    probe.positions.is_some()
        && table
            .indexes()
            .iter()
            .find(|i| i.def.name == probe.index)
            .is_some_and(|index| range_answers(index, conjuncts))
}

/// Whether the entries of `index` in the range `conjuncts` bound on its
/// first key column are exactly the rows that pass them: there are
/// conjuncts, each bounds that column by an operator a range expresses (not
/// `<>`), and the column's key encoding orders as its values compare
/// (integers, dates, timestamps).
pub(crate) fn range_answers(index: &strata_storage::db::Index, conjuncts: &[Comparison]) -> bool {
    use strata_access::predicate::CmpOp;
    use strata_storage::row::DataType;
    let exact_type = matches!(
        index.key_types[0],
        DataType::Int32 | DataType::Int64 | DataType::Date | DataType::Timestamp
    );
    exact_type
        && !conjuncts.is_empty()
        && conjuncts
            .iter()
            .all(|c| c.column == index.key_cols[0] && c.op != CmpOp::Ne)
}

impl StrataColumnScanExec {
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    pub fn part(&self) -> &Arc<ColumnPart> {
        &self.part
    }

    /// The units it reads (every partition's), in position order.
    pub fn units(&self) -> &[Unit] {
        &self.plan.units
    }

    /// Table columns it reads, in table order.
    pub fn read_columns(&self) -> &[usize] {
        &self.read_columns
    }

    /// Whether it stops early (a LIMIT pushed into it).
    pub fn has_limit(&self) -> bool {
        self.limit.is_some()
    }

    /// The rows it gives of `unit`, filtered and projected as its scan
    /// would, from `ranges` of the unit's file fetched already (MJoin's
    /// column objects, `skipper::column_objects`).
    pub fn rows_of(&self, unit: &Unit, ranges: Vec<(u64, bytes::Bytes)>) -> Result<RecordBatch> {
        let filter = self.filter.as_ref().map(|(_, e)| e);
        let mut out = Vec::new();
        let table = self.table.name();
        self.part
            .read_fetched(unit, &self.read_columns, ranges, |batch| {
                let kept =
                    keep(&batch, filter, &self.output, &self.output_schema).map_err(|e| {
                        ColumnsError::Convert {
                            table: table.to_string(),
                            reason: e.to_string(),
                        }
                    })?;
                if kept.num_rows() > 0 {
                    out.push(kept);
                }
                Ok(true)
            })
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(datafusion::arrow::compute::concat_batches(
            &self.output_schema,
            &out,
        )?)
    }
}

impl fmt::Debug for StrataColumnScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StrataColumnScanExec({})", self.table.name())
    }
}

impl DisplayAs for StrataColumnScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self
            .read_columns
            .iter()
            .map(|&c| self.table.schema().columns[c].name.as_str())
            .collect();
        write!(
            f,
            "StrataColumnScanExec: table={}, columns [{}], row groups {} of {}, rows {} of {}",
            self.table.name(),
            names.join(", "),
            self.plan.units.len(),
            self.plan.row_groups_total,
            self.plan.rows(),
            self.plan.rows_total,
        )?;
        if let Some((text, _)) = &self.filter {
            write!(f, ", filter=[{text}]")?;
        }
        match &self.probe {
            Some(p) if p.positions.is_some() => write!(f, ", {p}")?,
            _ => {
                if !self.conjuncts.is_empty() {
                    write!(
                        f,
                        ", {} comparison(s) tested on min/max of row groups and pages",
                        self.conjuncts.len()
                    )?;
                }
                if let Some(p) = &self.probe {
                    write!(f, ", {p}")?;
                }
            }
        }
        if let Some(l) = self.limit {
            write!(f, ", limit={l}")?;
        }
        if self.parts.len() > 1 {
            write!(f, ", {} parts", self.parts.len())?;
        }
        Ok(())
    }
}

impl ExecutionPlan for StrataColumnScanExec {
    fn name(&self) -> &str {
        "StrataColumnScanExec"
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
        match &self.filter {
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
                "StrataColumnScanExec is a leaf and takes no children".into(),
            ))
        }
    }

    fn partition_statistics(&self, _partition: Option<usize>) -> Result<Arc<Statistics>> {
        Ok(Arc::new(self.statistics.clone()))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let Some(units) = self.parts.get(partition).cloned() else {
            return Err(DataFusionError::Internal(format!(
                "StrataColumnScanExec has {} partition(s), asked for {partition}",
                self.parts.len()
            )));
        };
        let m = |name: &'static str| MetricBuilder::new(&self.metrics).counter(name, partition);
        let (bytes, requests, rows_read) = (m("bytes_read"), m("read_requests"), m("rows_read"));
        let part = self.part.clone();
        let read_columns = self.read_columns.clone();
        let output = self.output.clone();
        let filter = self.filter.clone().map(|(_, e)| e);
        let schema = self.output_schema.clone();
        let mut left = self.limit;
        let name = format!("columns {} {partition}", self.table.name());
        let table = self.table.name().to_string();
        let reader = reader_of(&context);
        Ok(thread_stream(
            name,
            self.output_schema.clone(),
            reader,
            move |tx| {
                let (b0, r0) = (part.counters().bytes(), part.counters().requests());
                let mut out = Coalesced::new(schema.clone());
                let mut run = || -> Result<()> {
                    let mut sent = true;
                    part.read_units(&units, &read_columns, |batch| {
                        rows_read.add(batch.num_rows());
                        let convert = |e: DataFusionError| ColumnsError::Convert {
                            table: table.clone(),
                            reason: e.to_string(),
                        };
                        let mut kept =
                            keep(&batch, filter.as_ref(), &output, &schema).map_err(convert)?;
                        let mut go = true;
                        if let Some(l) = left.as_mut() {
                            if kept.num_rows() >= *l {
                                kept = kept.slice(0, *l);
                                go = false;
                            }
                            *l -= kept.num_rows();
                        }
                        sent = out.push(kept, tx).map_err(convert)?;
                        Ok(go && sent)
                    })
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
                    if sent {
                        out.finish(tx)?;
                    }
                    Ok(())
                };
                let r = run();
                // Shared counters: a part's share is approximate when parts
                // run at once; their sum is the scan's.
                bytes.add((part.counters().bytes() - b0) as usize);
                requests.add((part.counters().requests() - r0) as usize);
                r
            },
        ))
    }
}

/// The rows of `batch` (the read columns) the filter keeps, projected to the
/// output columns.
fn keep(
    batch: &RecordBatch,
    filter: Option<&Arc<dyn PhysicalExpr>>,
    output: &[usize],
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let batch = match filter {
        None => batch.clone(),
        Some(f) => crate::scan::conjuncts::filter(batch.clone(), f)?,
    };
    let columns = output.iter().map(|&i| batch.column(i).clone()).collect();
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &datafusion::arrow::record_batch::RecordBatchOptions::new()
            .with_row_count(Some(batch.num_rows())),
    )?)
}
