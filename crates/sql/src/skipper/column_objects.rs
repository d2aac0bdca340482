//! MJoin's objects of a columnar table on the cold tier.
//!
//! A columnar table's input is the union of two scans: its column part's
//! (`StrataColumnScanExec`) and its delta's (`StrataScanExec` of the heap).
//! MJoin reads both out of order, as objects:
//!
//! * **a column object** is one row group the column scan kept (its pruning
//!   by min/max, its access path, the delete set applied): the ranged GETs
//!   of just the chunks (or pages) of the columns the query reads, widened to
//!   the file manifest's checked blocks. It arrives whole, is checked block
//!   by block against the manifest's CRC32Cs, and decodes to the rows the
//!   column scan would give of that row group;
//! * **a page object** is one object of the delta's heap, as for a row table
//!   (`object_scan`).
//!
//! So the subplans are over objects as for row tables, and what a column
//! object costs is the bytes of the columns the query needs: a row group of
//! `lineitem` is about 6 MiB with every column, a few hundred KiB with one.

use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::{ExecutionPlan, collect};
use strata_cold::byte_manifest::ByteManifest;
use strata_cold::manifest::Manifest;
use strata_cold::proxy::ObjectRef;
use strata_storage::Database;
use strata_storage::device::{FileId, cold_manifest_path};

use crate::scan::columns::StrataColumnScanExec;
use crate::scan::scan_exec::{ScanRequest, StrataScanExec};
use strata_columns::read::Unit;

/// One object of a columnar input (see the module docs).
pub(super) enum ColumnObject {
    /// One row group: the column scan's units of it (indexes into its
    /// units: one, or one per row an index lookup found there), and the
    /// byte ranges (offset, length) of its file to GET for them.
    Unit {
        units: Vec<usize>,
        object: ObjectRef,
        ranges: Vec<(u64, u64)>,
        manifest: Arc<ByteManifest>,
        /// The column file's id in the device's counters.
        file: FileId,
    },
    /// An object of the delta's heap pages, from page `first_page`.
    Pages { object: ObjectRef, first_page: u64 },
}

impl ColumnObject {
    /// Bytes it brings.
    pub(super) fn bytes(&self) -> u64 {
        match self {
            ColumnObject::Unit { ranges, .. } => ranges.iter().map(|r| r.1).sum(),
            ColumnObject::Pages { object, .. } => object.bytes,
        }
    }
}

/// A columnar table's input, read by objects.
pub(super) struct ColumnarInput {
    pub(super) plan: Arc<dyn ExecutionPlan>,
    columns: Arc<dyn ExecutionPlan>,
    /// The delta's scan (absent from the plan when the delta is empty).
    delta: Option<Arc<ScanRequest>>,
    /// The delta heap's id, whose I/O its objects count as.
    pub(super) delta_file: FileId,
    pub(super) objects: Vec<ColumnObject>,
}

fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The leaves of `plan`.
pub(super) fn leaves(plan: &Arc<dyn ExecutionPlan>) -> Result<Vec<Arc<dyn ExecutionPlan>>> {
    let mut out = Vec::new();
    plan.apply(|p| {
        if p.children().is_empty() {
            out.push(p.clone());
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(out)
}

/// `ranges` (offset, length) widened to whole blocks of `m`, those that
/// touch or overlap merged.
fn widen(m: &ByteManifest, ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut spans: Vec<(u64, u64)> = ranges
        .iter()
        .map(|&(s, l)| {
            let (_, _, from, to) = m.blocks_of(s, l);
            (from, to)
        })
        .collect();
    spans.sort_unstable();
    for (from, to) in spans {
        match out.last_mut() {
            Some((s, l)) if from <= *s + *l => *l = (*l).max(to - *s),
            _ => out.push((from, to - from)),
        }
    }
    out
}

/// Input `plan` of cold columnar table `table`, when it is the union of the
/// table's column scan and delta scan (under filters and projections), every
/// file of it on the cold tier and neither scan limited; else `None` (MJoin
/// then runs the input whole).
pub(super) fn columnar_input(
    plan: &Arc<dyn ExecutionPlan>,
    table: &str,
    db: &Database,
) -> Result<Option<ColumnarInput>> {
    let leaves = leaves(plan)?;
    let (mut columns, mut delta) = (None, None);
    for l in &leaves {
        if let Some(c) = l.downcast_ref::<StrataColumnScanExec>()
            && c.table().name() == table
            && !c.has_limit()
        {
            columns = Some(l.clone());
        } else if let Some(s) = l.downcast_ref::<StrataScanExec>()
            && s.request().table.name() == table
            && s.request().limit.is_none()
        {
            delta = Some(s.request().clone());
        }
    }
    // The delta's scan is left out of the plan when the delta is empty.
    let want = 1 + usize::from(delta.is_some());
    let (Some(columns), true) = (columns, leaves.len() == want) else {
        return Ok(None);
    };
    let scan = columns
        .downcast_ref::<StrataColumnScanExec>()
        .expect("found as one");
    let def = db.catalog().table(table).cloned().map_err(external)?;
    let heap = cold_manifest_path(&db.dir().join(&def.heap_file));
    if delta.is_some() && !heap.exists() {
        return Ok(None);
    }
    let part = scan.part();
    let mut manifests: Vec<Option<Arc<ByteManifest>>> = Vec::new();
    // The units by row group, in order of first appearance.
    let mut groups: Vec<((usize, usize), Vec<usize>)> = Vec::new();
    let mut at = std::collections::HashMap::new();
    for (i, u) in scan.units().iter().enumerate() {
        let g = *at.entry((u.file, u.row_group)).or_insert_with(|| {
            groups.push(((u.file, u.row_group), Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(i);
    }
    let mut objects = Vec::new();
    for ((file, _), units) in groups {
        let u = &scan.units()[units[0]];
        while manifests.len() <= u.file {
            let name = part.file_name(manifests.len());
            let p = cold_manifest_path(&db.dir().join(name));
            manifests.push(if p.exists() {
                Some(Arc::new(ByteManifest::load(&p).map_err(external)?))
            } else {
                None
            });
        }
        let Some(m) = manifests[file].clone() else {
            // A column file still local (a move that did not finish).
            return Ok(None);
        };
        // What an earlier read of the part (another scan of the table in
        // this query) left in the column-chunk cache is not asked again:
        // a row group whose every unit is cached is an object of no bytes.
        let cached = units
            .iter()
            .all(|&i| part.is_cached(&scan.units()[i], scan.read_columns()));
        let wanted: Vec<(u64, u64)> = if cached {
            Vec::new()
        } else {
            units
                .iter()
                .flat_map(|&i| part.requests(&scan.units()[i], scan.read_columns()))
                .collect()
        };
        let ranges = widen(&m, &wanted);
        objects.push(ColumnObject::Unit {
            units,
            object: ObjectRef {
                endpoint: m.endpoint.clone(),
                bucket: m.bucket.clone(),
                key: m.key.clone(),
                bytes: ranges.iter().map(|r| r.1).sum(),
                crc32c: 0,
            },
            ranges,
            file: FileId::external(&m.file),
            manifest: m,
        });
    }
    if delta.is_some() {
        let m = Manifest::load(&heap).map_err(external)?;
        for o in &m.objects {
            objects.push(ColumnObject::Pages {
                object: ObjectRef {
                    endpoint: m.endpoint.clone(),
                    bucket: m.bucket.clone(),
                    key: o.key.clone(),
                    bytes: o.bytes(),
                    crc32c: o.crc32c,
                },
                first_page: o.first_page,
            });
        }
    }
    Ok(Some(ColumnarInput {
        plan: plan.clone(),
        delta_file: scan.table().heap().file_id(),
        columns,
        delta,
        objects,
    }))
}

/// One unit reading the rows of all of `units` (of one row group): an
/// index path's row-by-row units decoded in one pass, in position order
/// (MJoin's order within an object does not matter).
fn merged<'a>(mut units: impl Iterator<Item = &'a Unit>) -> Unit {
    let mut out = units
        .next()
        .expect("a row group's object has a unit")
        .clone();
    for u in units {
        out.selection = match (&out.selection, &u.selection) {
            (Some(a), Some(b)) => Some(a.union(b)),
            _ => None,
        };
    }
    out.rows = match &out.selection {
        Some(s) => s.row_count() as u64,
        None => out.group_rows,
    };
    out
}

impl ColumnarInput {
    /// The rows object `i` gives the input (after the filters and
    /// projections above its scan), from the `bytes` that arrived.
    pub(super) fn decode(
        &self,
        i: usize,
        bytes: Bytes,
        handle: &tokio::runtime::Handle,
        context: &Arc<TaskContext>,
    ) -> Result<RecordBatch> {
        let (rows, from_columns) = match &self.objects[i] {
            ColumnObject::Unit {
                units,
                ranges,
                manifest,
                object,
                ..
            } => {
                let mut at = 0usize;
                let mut pieces = Vec::with_capacity(ranges.len());
                for &(start, len) in ranges {
                    let b = bytes.slice(at..at + len as usize);
                    at += len as usize;
                    let first = (start / manifest.block_bytes) as usize;
                    if let Some(bad) = manifest.check(first, &b) {
                        return Err(external(strata_storage::StorageError::ColdObject {
                            object: format!("object {}", object.name()),
                            endpoint: object.endpoint.clone(),
                            reason: format!(
                                "block {bad} does not match its CRC32C in the manifest ({}): the object is corrupt",
                                manifest.file
                            ),
                            corrupt: true,
                        }));
                    }
                    pieces.push((start, b));
                }
                let scan = self
                    .columns
                    .downcast_ref::<StrataColumnScanExec>()
                    .expect("a column scan");
                let unit = merged(units.iter().map(|&u| &scan.units()[u]));
                (scan.rows_of(&unit, pieces)?, true)
            }
            ColumnObject::Pages { object, first_page } => {
                let delta = self.delta.as_ref().ok_or_else(|| {
                    DataFusionError::Internal("MJoin: a page object without a delta scan".into())
                })?;
                (
                    super::object_scan::decode(delta, &bytes, *first_page, &object.name())?,
                    false,
                )
            }
        };
        // The union above gives the rows of the scan the object is of; the
        // other scan gives none.
        let source = |rows: RecordBatch| {
            datafusion::datasource::memory::MemorySourceConfig::try_new_exec(
                &[vec![rows.clone()]],
                rows.schema(),
                None,
            )
        };
        let empty = |schema| RecordBatch::new_empty(schema);
        let replaced = self
            .plan
            .clone()
            .transform_up(|p| {
                let is_columns = p.is::<StrataColumnScanExec>();
                if !is_columns && !p.is::<StrataScanExec>() {
                    return Ok(Transformed::no(p));
                }
                let batch = if is_columns == from_columns {
                    rows.clone()
                } else {
                    empty(p.schema())
                };
                Ok(Transformed::yes(source(batch)? as Arc<dyn ExecutionPlan>))
            })?
            .data;
        let batches = handle.block_on(collect(replaced, context.clone()))?;
        Ok(concat_batches(&self.plan.schema(), &batches)?)
    }
}
