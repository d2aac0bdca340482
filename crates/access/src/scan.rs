//! What every access path shares: the [`AccessPath`] interface and the
//! [`ScanSpec`] that says which table, predicate and index a scan runs over.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use strata_storage::Table;
use strata_storage::btree::RangeCursor;
use strata_storage::db::Index;
use strata_storage::row::Tid;

use crate::batch::TupleBatch;
use crate::error::{AccessError, Result};
use crate::predicate::{CompiledPredicate, Predicate};
use crate::report::ScanReport;
use crate::smooth::shared_walk::{SharedWalk, SplitPart};

/// A pipelined access path: each call produces the next batch of qualifying
/// tuples as it finds them.
pub trait AccessPath: Send {
    /// Clears `out` and fills it with up to [`crate::batch::BATCH_ROWS`] tuples;
    /// returns `false` (with `out` empty) when the scan is done.
    fn next_batch(&mut self, out: &mut TupleBatch) -> Result<bool>;
    /// What the operator did so far.
    fn report(&self) -> ScanReport;
}

/// Encoded lower and upper key bounds of a range on an index.
pub type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Which rows a scan produces, and through which index.
#[derive(Clone)]
pub struct ScanSpec {
    pub table: Arc<Table>,
    pub predicate: Predicate,
    /// Position in `table.indexes()` of the index to use; paths other than the
    /// full scan need one.
    pub index: Option<usize>,
    /// Produce rows in (index key, tuple id) order.
    pub ordered: bool,
    /// Bounds on the heap pages a full scan reads, `[from, to)` (`None`: no
    /// bound on that side): one part of a scan split among threads.
    pub within: (Option<u64>, Option<u64>),
    /// One part of a page-ordered Smooth Scan split among threads: the
    /// index walk its parts share, and which part this is.
    pub part: Option<SplitPart>,
    /// `predicate` specialised to the table's row layout.
    compiled: Arc<CompiledPredicate>,
}

impl ScanSpec {
    /// A scan of `table` by `predicate`, through an index on the first column of
    /// the predicate that has one.
    pub fn new(table: Arc<Table>, predicate: Predicate) -> ScanSpec {
        let index = predicate
            .columns()
            .into_iter()
            .find_map(|c| table.indexes().iter().position(|i| i.key_cols[0] == c));
        let compiled = Arc::new(predicate.compile(table.schema(), table.layout()));
        ScanSpec {
            table,
            predicate,
            index,
            ordered: false,
            within: (None, None),
            part: None,
            compiled,
        }
    }

    pub fn ordered(mut self, ordered: bool) -> ScanSpec {
        self.ordered = ordered;
        self
    }

    /// Confines a full scan to the heap pages `[from, to)` of those it would
    /// read (`None`: no bound on that side). The parts of a scan split at the
    /// same page numbers read every page once, whatever the heap's length
    /// when each part starts: the first part has no lower bound, the last no
    /// upper one.
    pub fn within(mut self, from: Option<u64>, to: Option<u64>) -> ScanSpec {
        self.within = (from, to);
        self
    }

    /// Makes this scan part `part` of the page-ordered Smooth Scan whose
    /// parts share `walk` (`smooth::shared_walk`): the parts, one per thread,
    /// read together what one unsplit scan would. Other paths refuse it.
    pub fn part_of(mut self, walk: Arc<SharedWalk>, part: usize) -> ScanSpec {
        self.part = Some(SplitPart { walk, part });
        self
    }

    /// The index, or an error naming the table and the predicate's columns.
    pub fn index(&self) -> Result<&Index> {
        match self.index {
            Some(i) => Ok(&self.table.indexes()[i]),
            None => {
                let cols: Vec<String> = self
                    .predicate
                    .columns()
                    .iter()
                    .map(|&c| self.table.schema().columns[c].name.clone())
                    .collect();
                Err(AccessError::NoIndex {
                    table: self.table.name().to_string(),
                    column: if cols.is_empty() {
                        "(none in the predicate)".into()
                    } else {
                        cols.join(", ")
                    },
                })
            }
        }
    }

    /// A cursor over the index entries the predicate's range on the index's first
    /// column allows.
    pub fn cursor(&self) -> Result<RangeCursor> {
        let (lo, hi) = self.key_range()?;
        Ok(self.index()?.btree.range_cursor(lo, hi))
    }

    /// The entries of the one key the predicate fixes on a one-column index,
    /// from the index's hot partition (No Bits Left Behind §3.1,
    /// `strata_storage::maintenance::cluster`) when it holds that key — then it holds all of
    /// them, and the full index need not be read. `None` otherwise.
    pub fn hot_tids(&self) -> Result<Option<Vec<Tid>>> {
        let index = self.index()?;
        if index.hot().is_none() || index.key_cols.len() != 1 {
            return Ok(None);
        }
        match self.key_range()? {
            (Bound::Included(lo), Bound::Included(hi)) if lo == hi => Ok(index.hot_entries(&lo)?),
            _ => Ok(None),
        }
    }

    /// The range the predicate allows on the index's first column, as encoded
    /// key bounds.
    pub fn key_range(&self) -> Result<KeyRange> {
        let index = self.index()?;
        let range = self.predicate.range_on(index.key_cols[0]);
        Ok(range.encoded(&index.key_types[0]))
    }

    /// The index entry (encoded key ++ tid) of a stored tuple, into `out`.
    pub fn entry_of(&self, tuple: &[u8], tid: Tid, out: &mut Vec<u8>) -> Result<()> {
        let index = self.index()?;
        index.key_of_tuple(self.table.layout(), tuple, tid, out);
        tid.encode(out);
        Ok(())
    }

    /// Fetches one tuple through the buffer pool (an index scan's heap access)
    /// and appends it to `out` if it qualifies; returns whether it did.
    pub fn fetch(&self, tid: Tid, out: &mut crate::batch::TupleBatch) -> Result<bool> {
        let produced = self.table.heap().with_tuple(tid, |t| {
            let ok = self.qualifies(t, tid);
            if ok {
                out.push(tid, t);
            }
            ok
        })?;
        let produced = produced.unwrap_or(false);
        if produced {
            self.accessed(tid);
        }
        Ok(produced)
    }

    /// Notes that an index-driven path produced tuple `tid`: hot/cold
    /// clustering counts it (`strata_storage::db::heat`). Full scans do not call it,
    /// nor does a Smooth Scan's sweep of the heap in page order.
    #[inline]
    pub fn accessed(&self, tid: Tid) {
        self.table.heat().record(tid);
    }

    /// The heap pages `[from, to)` that can hold a qualifying tuple: all of
    /// them, unless the predicate bounds a semantic id (No Bits Left Behind
    /// §4.2, `Encoding::Address`), whose value is the tuple's address, so
    /// that `id = x` is one page and `id BETWEEN a AND b` a range of pages;
    /// then narrowed to the bounds of [`ScanSpec::within`].
    pub fn heap_pages(&self) -> (u64, u64) {
        let (from, to) = address_pages(&self.table, &self.predicate)
            .unwrap_or((0, self.table.heap().num_pages()));
        let from = self.within.0.map_or(from, |f| f.max(from));
        let to = self.within.1.map_or(to, |t| t.min(to));
        (from, to.max(from))
    }

    #[inline]
    pub fn qualifies(&self, tuple: &[u8], tid: Tid) -> bool {
        self.compiled.eval(tuple, tid)
    }
}

/// The heap pages `[from, to)` a predicate on `table`'s semantic id
/// (`Encoding::Address`) confines qualifying tuples to, when the table has
/// one and the predicate bounds it (see [`ScanSpec::heap_pages`]).
pub fn address_pages(table: &Table, predicate: &Predicate) -> Option<(u64, u64)> {
    let end = table.heap().num_pages();
    let c = table.layout().address_column()?;
    let r = predicate.range_on(c);
    if matches!((&r.lower, &r.upper), (Bound::Unbounded, Bound::Unbounded)) {
        return None;
    }
    let page_of = |x: i64| (x.max(0) >> 16) as u64;
    // The smallest and largest ids allowed (a bound that is no integer
    // narrows nothing).
    let lowest = match &r.lower {
        Bound::Included(v) => v.as_i64(),
        Bound::Excluded(v) => v.as_i64().map(|x| x.saturating_add(1)),
        Bound::Unbounded => None,
    };
    let highest = match &r.upper {
        Bound::Included(v) => v.as_i64(),
        Bound::Excluded(v) => v.as_i64().map(|x| x.saturating_sub(1)),
        Bound::Unbounded => None,
    };
    let from = lowest.map_or(0, page_of);
    let to = match highest {
        Some(x) if x < 0 => 0,
        Some(x) => page_of(x) + 1,
        None => end,
    };
    Some((from.min(end), to.min(end).max(from.min(end))))
}

/// Orders two index entries (key ++ tid): plain byte order.
pub fn entry_cmp(a: &[u8], b: &[u8]) -> Ordering {
    a.cmp(b)
}
