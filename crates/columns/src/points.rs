//! Point reads of a columnar table: a slice of a page decoded once, kept,
//! and the rows taken from its values.
//!
//! An index lookup reads a few rows spread over many pages. Parquet's
//! reader reaches a row by decompressing its page and decoding, or
//! skipping, the values before it: for a delta-encoded key up to a page of
//! values decoded for one value, and again at every lookup of that page. A
//! heap page, once in the pool, is read in place. So a point read
//! ([`Unit::is_point`]: a unit whose rows are under an eighth of the blocks they
//! lie in) decodes, of each page it needs, the slice of [`SLICE_ROWS`]
//! rows holding its row, keeps the slice's values in the cache beside the
//! page's bytes ([`ChunkCache::put_values`]), and gathers its rows from
//! the values: the next lookup in that slice decodes nothing.
//!
//! A slice, not the page: the first lookup of a page then costs what it
//! did (reaching the row, plus decoding a slice where it decoded one
//! value) and memory holds the slices lookups use. A unit that reads more
//! of its pages (a scan, a range of a clustered key) is decoded as before,
//! in one pass with its row selection: its values would fill the cache for
//! one use.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection};

use crate::chunk_cache::{ChunkCache, Key};
use crate::error::{ColumnsError, Result};
#[cfg(test)]
use crate::file::PAGE_ROWS;
use crate::read::{BATCH_ROWS, ColumnPart, Fetched, OpenFile, Unit};

/// Rows of a page a point read decodes and keeps together, from the page's
/// first row: DuckDB's vector, what a point fetch there decodes at most.
pub const SLICE_ROWS: usize = 2_048;

/// A slice of a page a point read needs.
struct Slice {
    /// The page's range in the file (`None`: the file has no page index,
    /// and the chunk is one page, not kept).
    page: Option<Key>,
    /// Which slice of the page.
    slice: u32,
    /// Its rows in the row group: the first, and how many.
    from: usize,
    rows: usize,
}

/// The slices of column `c` holding `rows` (offsets in `unit`'s row group,
/// ascending), in order, and for each row its slice (an index into them)
/// and its offset in it.
fn slices(
    of: &OpenFile,
    unit: &Unit,
    c: usize,
    rows: &[usize],
) -> (Vec<Slice>, Vec<(usize, usize)>) {
    let group_rows = unit.group_rows as usize;
    let pages = of
        .meta
        .metadata()
        .offset_index()
        .and_then(|oi| oi.get(unit.row_group)?.get(c))
        .map(|o| o.page_locations().as_slice())
        .unwrap_or_default();
    let mut out: Vec<Slice> = Vec::new();
    let mut picks = Vec::with_capacity(rows.len());
    for &r in rows {
        let p = pages
            .partition_point(|l| l.first_row_index as usize <= r)
            .saturating_sub(1);
        let (page_from, page_to) = match pages.get(p) {
            Some(l) => (
                l.first_row_index as usize,
                pages
                    .get(p + 1)
                    .map_or(group_rows, |n| n.first_row_index as usize),
            ),
            None => (0, group_rows),
        };
        let slice = (r - page_from) / SLICE_ROWS;
        let from = page_from + slice * SLICE_ROWS;
        let fresh = out.last().is_none_or(|s: &Slice| s.from != from);
        if fresh {
            out.push(Slice {
                page: pages.get(p).map(|l| Key {
                    file: of.name.clone(),
                    start: l.offset as u64,
                    len: l.compressed_page_size as u64,
                }),
                slice: slice as u32,
                from,
                rows: SLICE_ROWS.min(page_to - from),
            });
        }
        picks.push((out.len() - 1, r - from));
    }
    (out, picks)
}

/// The selected rows of `unit`, as offsets in its row group.
fn selected_rows(unit: &Unit) -> Vec<usize> {
    unit.positions()
        .into_iter()
        .map(|p| (p - unit.first) as usize)
        .collect()
}

impl ColumnPart {
    /// Whether reading `unit`'s `columns` decodes nothing: a point read
    /// whose slices' values the cache holds.
    pub fn is_decoded(&self, unit: &Unit, columns: &[usize]) -> bool {
        let Some(cache) = self.point_cache(unit) else {
            return false;
        };
        let of = &self.files[unit.file];
        let rows = selected_rows(unit);
        columns.iter().all(|&c| {
            slices(of, unit, c, &rows).0.iter().all(|s| {
                s.page
                    .as_ref()
                    .is_some_and(|k| cache.contains_values(k, s.slice))
            })
        })
    }

    /// [`ColumnPart::decode`] of a point read: for each column, the values
    /// of each slice holding a selected row, from `cache` or decoded from
    /// `fetched` (fetched here, once, if `None` and some slice is not
    /// kept) and kept, and the rows gathered from them. The batches are
    /// those the one-pass decoding gives: table columns in file order, rows
    /// in order.
    pub(crate) fn decode_points(
        &self,
        cache: &ChunkCache,
        unit: &Unit,
        columns: &[usize],
        fetched: Option<Fetched>,
        f: impl FnMut(RecordBatch) -> Result<bool>,
    ) -> Result<()> {
        let values = self.point_values(cache, unit, columns, fetched)?;
        self.gather_points(unit, values, f)
    }

    /// The first half of [`ColumnPart::decode_points`]: the values of the
    /// slices holding `unit`'s rows, decoded (and kept) where `cache` does
    /// not hold them. A read ahead's fetch threads run it beside their
    /// fetches, so that decoding overlaps the other units' reads.
    pub(crate) fn point_values(
        &self,
        cache: &ChunkCache,
        unit: &Unit,
        columns: &[usize],
        mut fetched: Option<Fetched>,
    ) -> Result<PointValues> {
        let of = &self.files[unit.file];
        let mut cols = columns.to_vec();
        cols.sort_unstable();
        cols.dedup();
        let rows = selected_rows(unit);
        let group_rows = unit.group_rows as usize;
        let corrupt = |reason: String| ColumnsError::Corrupt {
            file: of.path.clone(),
            reason,
        };
        let mut per_column = Vec::with_capacity(cols.len());
        for &c in &cols {
            let (needed, picks) = slices(of, unit, c, &rows);
            let mut values: Vec<ArrayRef> = Vec::with_capacity(needed.len());
            for s in &needed {
                if let Some(v) = s.page.as_ref().and_then(|k| cache.get_values(k, s.slice)) {
                    values.push(v);
                    continue;
                }
                let sel = RowSelection::from_consecutive_ranges(
                    std::iter::once(s.from..s.from + s.rows),
                    group_rows,
                );
                let bytes = match &fetched {
                    Some(b) => b.clone(),
                    None => {
                        let b = self.fetch(unit, columns)?;
                        fetched = Some(b.clone());
                        b
                    }
                };
                let reader =
                    ParquetRecordBatchReaderBuilder::new_with_metadata(bytes, of.meta.clone())
                        .with_projection(ProjectionMask::roots(of.meta.parquet_schema(), [c]))
                        .with_row_groups(vec![unit.row_group])
                        .with_row_selection(sel)
                        .with_batch_size(s.rows.max(1))
                        .build()
                        .map_err(|e| ColumnsError::parquet(&of.path, e))?;
                let mut parts: Vec<ArrayRef> = Vec::with_capacity(1);
                for batch in reader {
                    let batch = batch.map_err(|e| corrupt(e.to_string()))?;
                    parts.push(batch.column(0).clone());
                }
                let v = match parts.len() {
                    1 => parts.pop().expect("one"),
                    _ => {
                        let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
                        arrow::compute::concat(&refs).map_err(|e| corrupt(e.to_string()))?
                    }
                };
                if v.len() != s.rows {
                    return Err(corrupt(format!(
                        "rows {}..{} of column {c} in row group {} decoded {} values",
                        s.from,
                        s.from + s.rows,
                        unit.row_group,
                        v.len()
                    )));
                }
                if let Some(k) = &s.page {
                    cache.put_values(k.clone(), s.slice, v.clone());
                }
                values.push(v);
            }
            per_column.push((values, picks));
        }
        Ok(PointValues {
            cols,
            rows: rows.len(),
            per_column,
        })
    }

    /// The second half of [`ColumnPart::decode_points`]: `unit`'s rows
    /// gathered from `values`, handed to `f` in batches.
    pub(crate) fn gather_points(
        &self,
        unit: &Unit,
        values: PointValues,
        mut f: impl FnMut(RecordBatch) -> Result<bool>,
    ) -> Result<()> {
        let of = &self.files[unit.file];
        let corrupt = |reason: String| ColumnsError::Corrupt {
            file: of.path.clone(),
            reason,
        };
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(values.cols.len());
        for (slices, picks) in &values.per_column {
            let refs: Vec<&dyn Array> = slices.iter().map(|a| a.as_ref()).collect();
            arrays.push(
                arrow::compute::interleave(&refs, picks).map_err(|e| corrupt(e.to_string()))?,
            );
        }
        // Kept as `Utf8`, given as the part gives strings.
        let schema = Arc::new(
            of.read_meta()
                .schema()
                .project(&values.cols)
                .map_err(|e| corrupt(e.to_string()))?,
        );
        let arrays =
            crate::convert::as_schema_types(arrays, &schema).map_err(|e| corrupt(e.to_string()))?;
        let options =
            arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(values.rows));
        let batch = RecordBatch::try_new_with_options(schema, arrays, &options)
            .map_err(|e| corrupt(e.to_string()))?;
        let mut from = 0;
        while from < batch.num_rows() {
            let n = BATCH_ROWS.min(batch.num_rows() - from);
            if !f(batch.slice(from, n))? {
                break;
            }
            from += n;
        }
        Ok(())
    }
}

/// A point read's values ([`ColumnPart::point_values`]): for each of its
/// columns (ascending), the slices holding its rows and, per row, which
/// slice and where in it.
pub(crate) struct PointValues {
    cols: Vec<usize>,
    rows: usize,
    per_column: Vec<ColumnPoints>,
}

/// One column of [`PointValues`]: the slices' values, and for each row its
/// slice and its offset in it.
type ColumnPoints = (Vec<ArrayRef>, Vec<(usize, usize)>);

#[cfg(test)]
mod tests {
    use super::*;

    /// A unit of a row group of `group_rows` rows selecting rows
    /// `[from, to)` of each pair.
    fn unit(ranges: &[(usize, usize)], group_rows: usize) -> Unit {
        let sel =
            RowSelection::from_consecutive_ranges(ranges.iter().map(|&(a, b)| a..b), group_rows);
        Unit {
            file: 0,
            row_group: 0,
            rows: sel.row_count() as u64,
            selection: Some(sel),
            first: 0,
            group_rows: group_rows as u64,
        }
    }

    #[test]
    fn a_unit_is_a_point_read_when_its_rows_are_few_for_their_blocks() {
        let g = 122_880;
        // One row, rows in three blocks: points.
        assert!(unit(&[(5000, 5001)], g).is_point());
        let three = [(5, 6), (9000, 9003), (100_000, 100_001)];
        assert!(unit(&three, g).is_point());
        // An eighth of a block is the edge.
        assert!(unit(&[(0, PAGE_ROWS / 8)], g).is_point());
        assert!(!unit(&[(0, PAGE_ROWS / 8 + 1)], g).is_point());
        // A range of a clustered key, a pruned scan's pages, every row:
        // one pass.
        assert!(!unit(&[(8192, 20_000)], g).is_point());
        assert!(!unit(&[(0, g)], g).is_point());
        let mut all = unit(&[(0, 1)], g);
        all.selection = None;
        assert!(!all.is_point());
        // Two rows of one block count the block once.
        assert!(unit(&[(10, 11), (8000, 8001)], g).is_point());
    }
}
