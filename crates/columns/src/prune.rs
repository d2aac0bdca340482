//! Which row groups and pages of a column file can hold a row a scan keeps.
//!
//! A scan's comparisons (`column op literal`, all of which a row must pass)
//! are tested against each row group's min/max and then, in the row groups
//! left, against each page's min/max from the page index: a page whose range
//! cannot satisfy a comparison holds no row the scan keeps. Each comparison
//! gives the rows of the pages of its own column (pages of different columns
//! end at different rows); the scan reads the intersection. Statistics are
//! bounds — a writer may shorten a long string's min and max, never past
//! the values — so pruning never drops a row that passes; the scan still
//! tests every row it reads. FLOAT64 and BOOL columns are not pruned
//! (NaN orders above every number in strata, not in Parquet's statistics).

use arrow::array::{Array, ArrayRef, BooleanArray, Scalar};
use arrow::compute::kernels::cmp;
use arrow::datatypes::SchemaRef;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use parquet::file::metadata::{ParquetColumnIndex, ParquetMetaData};
use strata_access::predicate::{CmpOp, Comparison};
use strata_storage::row::{DataType, Schema};

use crate::convert::ValueBatchBuilder;

/// A comparison prepared for statistics: its column's name and the literal
/// as a one-value Arrow array of the column's type.
pub struct Test {
    column: String,
    op: CmpOp,
    literal: ArrayRef,
}

/// The comparisons of `conjuncts` that statistics can decide, prepared.
pub fn tests(schema: &Schema, arrow: &SchemaRef, conjuncts: &[Comparison]) -> Vec<Test> {
    conjuncts
        .iter()
        .filter_map(|c| {
            let col = &schema.columns[c.column];
            if matches!(col.ty, DataType::Float64 | DataType::Bool) || c.value.is_null() {
                return None;
            }
            let field = arrow.field_with_name(&col.name).ok()?;
            let one = std::sync::Arc::new(arrow::datatypes::Schema::new(vec![field.clone()]));
            let mut b = ValueBatchBuilder::new(&[col.ty], one);
            b.push_row([&c.value]).ok()?;
            let literal = b.finish().ok()?.column(0).clone();
            Some(Test {
                column: col.name.clone(),
                op: c.op,
                literal,
            })
        })
        .collect()
}

/// Of each (min, max) pair, whether a value `op literal` can lie between
/// them; unknown statistics (NULL) can hold anything.
fn may_hold(op: CmpOp, mins: &ArrayRef, maxes: &ArrayRef, literal: &ArrayRef) -> Vec<bool> {
    let v = Scalar::new(literal.clone());
    let both =
        |a: arrow::error::Result<BooleanArray>, b: arrow::error::Result<BooleanArray>| match (a, b)
        {
            (Ok(a), Ok(b)) => (0..a.len())
                .map(|i| {
                    let x = !a.is_valid(i) || a.value(i);
                    let y = !b.is_valid(i) || b.value(i);
                    x && y
                })
                .collect(),
            _ => vec![true; mins.len()],
        };
    let one = |a: arrow::error::Result<BooleanArray>| match a {
        Ok(a) => (0..a.len()).map(|i| !a.is_valid(i) || a.value(i)).collect(),
        Err(_) => vec![true; mins.len()],
    };
    match op {
        CmpOp::Eq => both(cmp::lt_eq(mins, &v), cmp::gt_eq(maxes, &v)),
        CmpOp::Lt => one(cmp::lt(mins, &v)),
        CmpOp::Le => one(cmp::lt_eq(mins, &v)),
        CmpOp::Gt => one(cmp::gt(maxes, &v)),
        CmpOp::Ge => one(cmp::gt_eq(maxes, &v)),
        // Only a range of one value, the literal, holds no other value.
        CmpOp::Ne => match (cmp::eq(mins, &v), cmp::eq(maxes, &v)) {
            (Ok(a), Ok(b)) => (0..a.len())
                .map(|i| !(a.is_valid(i) && a.value(i) && b.is_valid(i) && b.value(i)))
                .collect(),
            _ => vec![true; mins.len()],
        },
    }
}

/// The row groups of a file any row of which can pass every test.
pub fn row_groups(meta: &ParquetMetaData, arrow: &SchemaRef, tests: &[Test]) -> Vec<usize> {
    let groups = meta.row_groups();
    let mut keep = vec![true; groups.len()];
    for t in tests {
        let Ok(conv) =
            StatisticsConverter::try_new(&t.column, arrow, meta.file_metadata().schema_descr())
        else {
            continue;
        };
        let (Ok(mins), Ok(maxes)) = (conv.row_group_mins(groups), conv.row_group_maxes(groups))
        else {
            continue;
        };
        for (k, m) in keep
            .iter_mut()
            .zip(may_hold(t.op, &mins, &maxes, &t.literal))
        {
            *k &= m;
        }
    }
    (0..groups.len()).filter(|&g| keep[g]).collect()
}

/// The rows of row group `group` on pages that can pass every test, or
/// `None` when that is every row (or the file has no page index:
/// `column_index`, each page's min and max, [`crate::footer::Footer::page_stats`]).
pub fn pages(
    meta: &ParquetMetaData,
    column_index: Option<&ParquetColumnIndex>,
    arrow: &SchemaRef,
    tests: &[Test],
    group: usize,
) -> Option<RowSelection> {
    let (Some(index), Some(offsets)) = (column_index, meta.offset_index()) else {
        return None;
    };
    let total = meta.row_group(group).num_rows() as usize;
    let mut selection: Option<RowSelection> = None;
    for t in tests {
        let Ok(conv) =
            StatisticsConverter::try_new(&t.column, arrow, meta.file_metadata().schema_descr())
        else {
            continue;
        };
        let g = [group];
        let (Ok(mins), Ok(maxes), Ok(Some(counts))) = (
            conv.data_page_mins(index, offsets, &g),
            conv.data_page_maxes(index, offsets, &g),
            conv.data_page_row_counts(offsets, meta.row_groups(), &g),
        ) else {
            continue;
        };
        if mins.len() != counts.len() {
            continue;
        }
        let hold = may_hold(t.op, &mins, &maxes, &t.literal);
        let mut selectors = Vec::with_capacity(hold.len());
        for (i, h) in hold.iter().enumerate() {
            let n = counts.value(i) as usize;
            selectors.push(if *h {
                RowSelector::select(n)
            } else {
                RowSelector::skip(n)
            });
        }
        let this = RowSelection::from(selectors);
        selection = Some(match selection {
            None => this,
            Some(s) => s.intersection(&this),
        });
    }
    selection.filter(|s| s.row_count() < total)
}
