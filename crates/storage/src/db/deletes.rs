//! A columnar table's delete set: which rows of its column part `DELETE` and
//! `UPDATE` took away.
//!
//! The column part is immutable Parquet files (`strata-columns`), so a row
//! there is not removed in place: its position (its ordinal in the part, the
//! files in catalog order, then the rows of each in order) goes into the
//! table's delete set, and every reader of the part skips the positions the
//! set holds. An `UPDATE` of a column row is its deletion here plus the new
//! row inserted into the delta (the heap).
//!
//! The set is a B+-tree of positions in a file of its own, named in the
//! catalog beside the column files (`ColumnsDef::deleted`). Its pages go
//! through the buffer pool and the log like an index's, so it is a logged
//! delete bitmap without a page format of its own: a change belongs to the
//! write transaction that made it (undone with it, logged and made durable
//! by its commit, redone by recovery), and a read statement sees the set as
//! of the last commit, as it sees the delta's pages, under one snapshot. A
//! B+-tree of the marked positions rather than a dense bitmap: the set is
//! usually a small fraction of the rows, ordered reads come back in position
//! order, and the code that logs, undoes and recovers trees is already there.
//! A merge of the delta (`strata compact --format columns`) writes the live
//! rows into new column files and starts an empty set.

use std::path::Path;
use std::sync::Arc;

use crate::btree::BTree;
use crate::buffer::BufferPool;
use crate::error::{Result, StorageError};
use crate::row::{DataType, Tid, Value, decode_key, encode_key_value};

/// The open delete set of a columnar table.
pub struct DeleteSet {
    /// Its file as the catalog names it (`data/<table>.deleted…`).
    pub(crate) file: String,
    pub(crate) btree: BTree,
    /// The positions as last read for a committed view, with the entry count
    /// they were read at. The set only grows between merges (a mark is never
    /// taken back but by its transaction's abort), so one committed count is
    /// one committed content: a scan that finds the same count reads no page.
    committed: parking_lot::Mutex<Option<(u64, Arc<Vec<u64>>)>>,
    /// The positions the running write transaction marked: its commit merges
    /// them into `committed` (when they are exactly what it added), so that a
    /// mark does not make the next statement read the whole set again; its
    /// abort forgets them.
    unpublished: parking_lot::Mutex<Vec<u64>>,
}

const KEY: DataType = DataType::Int64;

/// The tree key of position `pos`.
fn key(pos: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(9);
    encode_key_value(&KEY, &Value::Int64(pos as i64), &mut out);
    out
}

/// The entry's tid: the position again (page = high bits, slot = low 16),
/// so that every entry is unique and a check can compare it with its key.
fn tid(pos: u64) -> Tid {
    Tid::of_position(pos)
}

fn tree_name(table: &str) -> String {
    format!("{table} (deleted column rows)")
}

impl DeleteSet {
    /// Creates an empty delete set of table `table` in a new file, `file`
    /// under the database directory `dir` (named in the catalog only when
    /// the caller commits it).
    pub(crate) fn create(
        pool: Arc<BufferPool>,
        dir: &Path,
        file: String,
        table: &str,
        segment_pages: u64,
    ) -> Result<DeleteSet> {
        let btree = BTree::create(
            pool,
            &dir.join(&file),
            &tree_name(table),
            vec![KEY],
            segment_pages,
        )?;
        Ok(DeleteSet {
            file,
            btree,
            committed: Default::default(),
            unpublished: Default::default(),
        })
    }

    /// Opens table `table`'s delete set in `file`.
    pub(crate) fn open(
        pool: Arc<BufferPool>,
        dir: &Path,
        file: &str,
        table: &str,
        segment_pages: u64,
    ) -> Result<DeleteSet> {
        let btree = BTree::open(
            pool,
            &dir.join(file),
            &tree_name(table),
            vec![KEY],
            segment_pages,
        )?;
        Ok(DeleteSet {
            file: file.to_string(),
            btree,
            committed: Default::default(),
            unpublished: Default::default(),
        })
    }

    /// Its file as the catalog names it.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Positions marked.
    pub fn len(&self) -> u64 {
        self.btree.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every marked position, ascending.
    pub fn positions(&self) -> Result<Vec<u64>> {
        let mut out = Vec::with_capacity(self.len() as usize);
        let it = self
            .btree
            .range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)?;
        for e in it {
            let (k, t) = e?;
            let (v, _) = decode_key(&[KEY], &k);
            let pos = match v.first() {
                Some(Value::Int64(p)) if *p >= 0 => *p as u64,
                other => {
                    return Err(StorageError::Index {
                        index: self.btree.name().to_string(),
                        reason: format!("an entry's key is {other:?}, not a row position"),
                    });
                }
            };
            if tid(pos) != t {
                return Err(StorageError::Index {
                    index: self.btree.name().to_string(),
                    reason: format!("position {pos} is stored with tid {t:?}"),
                });
            }
            out.push(pos);
        }
        Ok(out)
    }

    /// [`DeleteSet::positions`] for a reader that sees only committed
    /// changes (not the running transaction's): kept from the last such read
    /// while the committed count is the same.
    pub(crate) fn committed_positions(&self) -> Result<Arc<Vec<u64>>> {
        let len = self.len();
        if let Some((n, p)) = &*self.committed.lock()
            && *n == len
        {
            return Ok(p.clone());
        }
        let p = Arc::new(self.positions()?);
        if p.len() as u64 == len {
            *self.committed.lock() = Some((len, p.clone()));
        }
        Ok(p)
    }

    /// Marks `positions` of the column part (of `part_rows` rows) of table
    /// `table`. A position past the part, named twice or marked already is
    /// an error, and then nothing has changed.
    pub(crate) fn mark(&self, table: &str, part_rows: u64, positions: &[u64]) -> Result<()> {
        let mut sorted = positions.to_vec();
        sorted.sort_unstable();
        let bad = |pos: u64, why: &str| StorageError::Columnar {
            table: table.to_string(),
            message: format!("row {pos} of the column part of table {table}: {why}"),
        };
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(bad(w[0], "named twice"));
        }
        if let Some(&last) = sorted.last()
            && last >= part_rows
        {
            return Err(bad(last, &format!("the part has {part_rows} rows")));
        }
        // The marks already in the positions' span, read once in order and
        // merged with them (not a descent per position).
        if let (Some(&first), Some(&last)) = (sorted.first(), sorted.last()) {
            let marked = self.btree.range(
                std::ops::Bound::Included(key(first)),
                std::ops::Bound::Included(key(last)),
            )?;
            let mut at = 0;
            for e in marked {
                let (k, _) = e?;
                let Some(Value::Int64(m)) = decode_key(&[KEY], &k).0.first().cloned() else {
                    continue;
                };
                let m = m as u64;
                at += sorted[at..].partition_point(|&p| p < m);
                if sorted.get(at) == Some(&m) {
                    return Err(bad(m, "already deleted"));
                }
            }
        }
        let entries: Vec<(Vec<u8>, Tid)> = sorted.iter().map(|&p| (key(p), tid(p))).collect();
        crate::buffer::as_writer(|| self.btree.insert_sorted(&entries))?;
        self.unpublished.lock().extend(sorted);
        Ok(())
    }

    /// The positions as the running write transaction sees them: the kept
    /// committed ones with its own marks (the set changes only by marks),
    /// read anew only when nothing is kept that they add up with.
    pub(crate) fn own_positions(&self) -> Result<Arc<Vec<u64>>> {
        let marks = self.unpublished.lock().clone();
        if marks.is_empty() {
            // Nothing of its own yet: its view is the committed one.
            return self.committed_positions();
        }
        if let Some((n, p)) = &*self.committed.lock()
            && n + marks.len() as u64 == self.len()
            && let Some(all) = merged(p, marks)
        {
            return Ok(Arc::new(all));
        }
        Ok(Arc::new(self.positions()?))
    }

    /// The running transaction committed: its marks join the kept committed
    /// positions, if those plus the marks are the set's committed count
    /// (else the next committed reader reads the set again).
    pub(crate) fn publish_marks(&self) {
        let marks = std::mem::take(&mut *self.unpublished.lock());
        if marks.is_empty() {
            return;
        }
        let mut kept = self.committed.lock();
        let len = self.len();
        *kept = match &*kept {
            Some((n, p)) if n + marks.len() as u64 == len => {
                merged(p, marks).map(|all| (len, Arc::new(all)))
            }
            _ => None,
        };
    }

    /// The running transaction aborted: its marks are gone.
    pub(crate) fn forget_marks(&self) {
        self.unpublished.lock().clear();
    }
}

/// `kept` (ascending) and `marks` merged, ascending; `None` if a position
/// repeats (then the marks are not what was added to `kept`). The runs of
/// `kept` between marks are copied whole: the marks are few, `kept` may be
/// 10^5 positions, and this runs once per statement of a transaction that
/// marked rows.
fn merged(kept: &[u64], mut marks: Vec<u64>) -> Option<Vec<u64>> {
    marks.sort_unstable();
    if marks.windows(2).any(|w| w[0] == w[1]) {
        return None;
    }
    let mut out = Vec::with_capacity(kept.len() + marks.len());
    let mut from = 0;
    for m in marks {
        let at = from + kept[from..].partition_point(|&p| p < m);
        if kept.get(at) == Some(&m) {
            return None;
        }
        out.extend_from_slice(&kept[from..at]);
        out.push(m);
        from = at;
    }
    out.extend_from_slice(&kept[from..]);
    Some(out)
}
