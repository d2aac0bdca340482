//! One object of a cold table, read as the query's scan of that table would
//! read it: every page's shape checked (the whole object's checksum was, on
//! arrival), the scan's pushed predicate and residual filter applied, its
//! columns projected — the rows MJoin holds for that object.
//!
//! The scan's access path is not used: an object is a run of heap pages
//! already in memory, so every tuple in it is looked at, as a full scan
//! would; the pushed predicate is exact, so the rows are the same whatever
//! path the plan chose.

use std::path::Path;

use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{DataFusionError, Result};
use strata_access::{Predicate, TupleBatch};
use strata_storage::page::{PAGE_SIZE, PageView, verify_shape};
use strata_storage::row::Tid;

use crate::scan::scan_exec::{ScanRequest, filter_by};
use strata_columns::convert::BatchConverter;

/// The rows of the pages in `bytes` (pages `first_page..`, the object
/// `name`) that `req` produces, as one batch of its output schema.
pub fn decode(req: &ScanRequest, bytes: &[u8], first_page: u64, name: &str) -> Result<RecordBatch> {
    if !bytes.len().is_multiple_of(PAGE_SIZE) {
        return Err(DataFusionError::Execution(format!(
            "object {name}: {} bytes is not a whole number of {PAGE_SIZE}-byte pages",
            bytes.len()
        )));
    }
    let table = &req.table;
    let predicate = Predicate {
        conjuncts: req.conjuncts.clone(),
    }
    .compile(table.schema(), table.layout());
    let converter = BatchConverter::new(table, req.scan_columns.clone(), req.scan_schema.clone());
    let mut out = Vec::new();
    let mut tuples = TupleBatch::new();
    let flush = |tuples: &mut TupleBatch, out: &mut Vec<RecordBatch>| -> Result<()> {
        if tuples.is_empty() {
            return Ok(());
        }
        let mut rb = converter.convert(tuples)?;
        tuples.clear();
        if let Some((_, expr)) = &req.residual {
            rb = filter_by(rb, expr)?;
        }
        let rb = rb.project(&req.output)?;
        if rb.num_rows() > 0 {
            out.push(rb);
        }
        Ok(())
    };
    for (i, page) in bytes.chunks_exact(PAGE_SIZE).enumerate() {
        let page_no = first_page + i as u64;
        // The object's CRC32C was checked against its manifest on arrival.
        verify_shape(page, page_no, Path::new(name))
            .map_err(|e| DataFusionError::Execution(e.to_string()))?;
        let view = PageView::new(page);
        for s in 0..view.n_slots() {
            let tid = Tid::new(page_no as u32, s);
            if let Some(t) = view.get(s)
                && predicate.eval(t, tid)
            {
                tuples.push(tid, t);
                if tuples.is_full() {
                    flush(&mut tuples, &mut out)?;
                }
            }
        }
    }
    flush(&mut tuples, &mut out)?;
    Ok(concat_batches(&req.output_schema, &out)?)
}
