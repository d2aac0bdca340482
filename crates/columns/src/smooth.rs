//! Smooth Scan over a columnar table's column part: the page-ordered policy
//! (`strata_access::smooth::page_order`, strata's default Smooth Scan for
//! unordered output) with a row range across the projected columns as its
//! unit instead of a heap page.
//!
//! A heap page holds whole rows, so a row heap's Smooth Scan reasons about
//! pages. A column file holds each column of a row group apart, in pages of
//! up to [`PAGE_ROWS`] rows; the unit a column scan reads is a *block*: a
//! row group's [`PAGE_ROWS`] rows from a multiple of [`PAGE_ROWS`], of every
//! projected column (one page of each narrow column, give or take a page
//! boundary; a wide column's pages end sooner, at [`crate::file::PAGE_BYTES`],
//! so a row of a block reads only its own of them).
//! Reading a block costs a request per projected column, unless the
//! columns' pages lie close together, so one row of a columnar table costs
//! more than one row of a heap: one read per projected column.
//!
//! The scan walks the index's tree over the column rows in the range the
//! query allows and collects the positions the entries name (the Page-ID
//! cache of §4.1 becomes the set of blocks wanted; the rows of a block are
//! known exactly, so no block is probed whole). Then:
//!
//! * **Flattening**: the rows are read in position order, as a Parquet row
//!   selection; the byte ranges that selection needs are merged into one
//!   request wherever the gap between them costs less to read than another
//!   request costs on the device ([`ColumnPart::gap`]: about 72 KiB on local
//!   flash, a megabyte on a disk). So dense stretches of wanted blocks are
//!   read as runs, sparse ones block by block.
//! * **The morph into a full scan**, decided as in the page-ordered policy:
//!   at checks while the tree is read (before its first leaf, after 16, 32,
//!   64, … entries, then every half table's worth of blocks, 1,024 entries
//!   or an eighth of the entries read, whichever is most)
//!   a lower bound on finishing this way — the exact cost of reading the
//!   rows found so far, plus the fewest new blocks the entries left can
//!   fill, read in sequence, plus the rest of the index (its leaves in
//!   sequence, or on a real device the entries left at the cheapest rate per
//!   entry seen, whichever is more) — is compared with the cost of reading
//!   what min/max pruning keeps (the column scan's full scan). Once the
//!   bound reaches it, the scan stops reading the tree and runs the full
//!   scan; at the end of the range it compares the exact cost of the rows
//!   found with the full scan's (at equal cost the rows found win: the same
//!   reads, fewer rows decoded). The costs are the device's
//!   ([`ColumnPart::cost_ms`]): a request's fixed cost and its pages.
//!
//! The unit makes a difference the heap does not have: a block is 8,192
//! rows where a heap page is 50–200, so a few hundred entries spread over a
//! table already want every block, and the morph comes after a few leaves.

use std::ops::Bound;
use std::time::Instant;

use strata_storage::btree::BTree;

use crate::error::Result;
use crate::file::PAGE_ROWS;
use crate::read::{ColumnPart, Plan};

/// What the walk decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Walk {
    /// Entries and leaves of the tree read.
    pub entries: u64,
    pub leaves: u64,
    /// The live positions in the range, ascending; `None`: the scan morphed
    /// into the full scan of what min/max pruning keeps.
    pub positions: Option<Vec<u64>>,
    /// Blocks the positions found fall on, and blocks the full scan reads.
    pub wanted_blocks: u64,
    pub full_blocks: u64,
    /// What reading the rows found costs (exact, with nothing cached), the
    /// bound at the last check, and what the full scan costs, in the
    /// device's (modeled) milliseconds.
    pub wanted_ms: f64,
    pub bound_ms: f64,
    pub full_ms: f64,
}

impl Walk {
    /// One line for EXPLAIN and the bench's log.
    pub fn describe(&self) -> String {
        match &self.positions {
            Some(p) => format!(
                "{} row(s) on {} block(s), {:.2} ms against {:.2} ms for the full scan",
                p.len(),
                self.wanted_blocks,
                self.wanted_ms,
                self.full_ms
            ),
            None => format!(
                "morphed into the full scan after {} entries: finishing through the index costs at least {:.2} ms, the full scan {:.2} ms",
                self.entries, self.bound_ms, self.full_ms
            ),
        }
    }
}

/// Entries between checks once the doubling checks are past: half the full
/// scan's blocks, at least 1,024, and at least an eighth of the entries
/// read so far. A check costs a pass over the positions found, so checks
/// of a long walk come at most every eighth of it (a walk of n entries
/// makes O(log n) of them past the first 8,192, where one every 1,024
/// would cost a quadratic number of steps: 0.35 s of CPU at 100,000
/// entries), delaying a morph by at most an eighth of the entries read.
fn check_interval(blocks: u64, entries: u64) -> u64 {
    (blocks / 2).max(1024).max(entries / 8)
}

/// `a` and `b` (each ascending) merged, ascending.
fn merge_sorted(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Maps positions to blocks: the row groups' first positions and the
/// number of the first block of each.
struct Blocks {
    firsts: Vec<u64>,
    first_block: Vec<u64>,
}

impl Blocks {
    fn new(part: &ColumnPart) -> Blocks {
        let mut firsts = Vec::new();
        let mut first_block = Vec::new();
        let mut b = 0u64;
        for (_, _, first, rows) in part.row_groups() {
            firsts.push(first);
            first_block.push(b);
            b += rows.div_ceil(PAGE_ROWS as u64);
        }
        Blocks {
            firsts,
            first_block,
        }
    }

    fn of(&self, pos: u64) -> u64 {
        let g = self.firsts.partition_point(|&f| f <= pos).saturating_sub(1);
        self.first_block[g] + (pos - self.firsts[g]) / PAGE_ROWS as u64
    }
}

/// Blocks a plan reads: those its units' selected rows fall on.
fn plan_blocks(plan: &Plan) -> u64 {
    let page = PAGE_ROWS as u64;
    plan.units
        .iter()
        .map(|u| match &u.selection {
            None => u.group_rows.div_ceil(page),
            Some(sel) => {
                let mut blocks = std::collections::BTreeSet::new();
                let mut at = 0u64;
                for s in sel.iter() {
                    if !s.skip && s.row_count > 0 {
                        let end = at + s.row_count as u64;
                        blocks.extend(at / page..end.div_ceil(page));
                    }
                    at += s.row_count as u64;
                }
                blocks.len() as u64
            }
        })
        .sum()
}

/// Walks `tree` (an index's tree over `part`'s rows) in [`lo`, `hi`] and
/// decides between the rows it names and `full` (the plan min/max pruning
/// made for the query), reading table columns `columns` (see the module
/// docs).
pub fn walk(
    part: &ColumnPart,
    tree: &BTree,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    full: &Plan,
    columns: &[usize],
) -> Result<Walk> {
    let costs = *part.costs();
    let full_ms = part.cost_ms(&full.units, columns);
    let full_blocks = plan_blocks(full).max(1);
    // A new block read for a row in it: a page of each projected column, of
    // its average size, in sequence. A narrow column's page is the block's
    // rows of it; a wide column's holds fewer (`crate::file::PAGE_BYTES`).
    let block_ms = columns
        .iter()
        .map(|&c| part.average_page_bytes(full, c))
        .sum::<f64>()
        / strata_storage::page::PAGE_SIZE as f64
        * costs.sequential_ms;
    let estimate = tree.estimate_range(&lo, &hi)?;
    let per_leaf = (tree.len() as f64 / tree.num_pages().max(1) as f64).max(1.0);
    let blocks = Blocks::new(part);
    let deleted = part.deleted();
    let mut wanted = std::collections::HashSet::new();
    // The positions found, ascending, and those found since the last
    // check: a check sorts only the new ones and merges them in.
    let mut positions: Vec<u64> = Vec::new();
    let mut found: Vec<u64> = Vec::new();
    let mut cursor = tree.range_cursor(lo, hi);
    let mut entries = 0u64;
    let mut next_check = 0u64;
    let mut ended = false;
    // The cheapest wall-clock cost per entry over stretches of 1,024
    // entries (a real device only: a modeled one charges no CPU).
    let mut clock: Option<(Instant, u64)> = None;
    let mut entry_ms = f64::INFINITY;
    let mut walk = Walk {
        entries: 0,
        leaves: 0,
        positions: None,
        wanted_blocks: 0,
        full_blocks,
        wanted_ms: 0.0,
        bound_ms: 0.0,
        full_ms,
    };
    loop {
        if ended || entries >= next_check {
            if !part.modeled() && entries > 0 {
                let now = Instant::now();
                match clock {
                    None => clock = Some((now, entries)),
                    Some((at, from)) if entries - from >= 1024 => {
                        let ms =
                            now.duration_since(at).as_secs_f64() * 1e3 / (entries - from) as f64;
                        entry_ms = entry_ms.min(ms);
                        clock = Some((now, entries));
                    }
                    Some(_) => {}
                }
            }
            found.sort_unstable();
            positions = merge_sorted(&positions, &found);
            found.clear();
            let wanted_ms = part.cost_ms(
                &ColumnPart::plan_at(full.clone(), &positions).units,
                columns,
            );
            let left = if ended {
                0.0
            } else {
                (estimate - entries as f64).max(0.0)
            };
            let page = PAGE_ROWS as f64;
            let room = (wanted.len() as f64 * page - entries as f64).max(0.0);
            let new_blocks = ((left - room).max(0.0) / page)
                .min(full_blocks.saturating_sub(wanted.len() as u64) as f64);
            let rate = if entry_ms.is_finite() { entry_ms } else { 0.0 };
            let index_ms = (left / per_leaf * costs.sequential_ms).max(left * rate);
            let bound = wanted_ms + new_blocks * block_ms + index_ms;
            walk.wanted_ms = wanted_ms;
            walk.bound_ms = bound;
            walk.wanted_blocks = wanted.len() as u64;
            // At equal cost the rows found win: the same reads, fewer rows
            // decoded.
            if bound > full_ms || (ended && wanted_ms > full_ms) {
                break;
            }
            if ended {
                walk.positions = Some(std::mem::take(&mut positions));
                break;
            }
            let interval = check_interval(full_blocks, entries);
            next_check = if entries < interval {
                (entries * 2).max(16)
            } else {
                entries + interval
            };
        }
        match cursor.next_entry(tree) {
            Some(e) => {
                let (_, tid) = e?;
                entries += 1;
                let pos = tid.position();
                if deleted.binary_search(&pos).is_err() {
                    found.push(pos);
                    wanted.insert(blocks.of(pos));
                }
            }
            None => ended = true,
        }
    }
    walk.entries = entries;
    walk.leaves = cursor.leaves_read();
    Ok(walk)
}
