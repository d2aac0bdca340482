//! Indexes of a columnar table: B+-trees whose entries point at column rows.
//!
//! A row of the column part is named by its position (the files in catalog
//! order, the rows of each in order), as a tid ([`Tid::of_position`]). Each
//! index of a columnar table has two trees: its own file, over the delta's
//! rows (heap tids, kept by every insert, update and delete as in a row
//! table), and a tree over the column part ([`Index::column_tree`]), built
//! here when the part is written or the index created, and never changed
//! after: the part's files are immutable, and a deleted row's entry stays —
//! every reader subtracts the delete set, which it reads anyway.
//!
//! A lookup ([`probe`]) reads the tree's entries in the range the query's
//! comparisons allow and hands their live positions to the scan, which
//! reads only the pages holding them ([`ColumnPart::plan_at`]). It gives up
//! (and the scan of what min/max pruning kept runs) as soon as what it read
//! and the pages its rows fall on cost as much as that scan ([`probe`]):
//! decided from the entries as they come, not from an estimate, so a point
//! lookup always takes the index and a wide range leaves it after a few
//! leaves.

use std::ops::Bound;

use arrow::record_batch::RecordBatch;
use strata_access::Predicate;
use strata_access::predicate::Comparison;
use strata_storage::db::Index;
use strata_storage::db::keysort::SortedEntries;
use strata_storage::row::{DataType, Tid, encode_key_value};
use strata_storage::{Database, IndexSpec, Progress, Table};

use crate::convert::arrow_values;
use crate::error::{ColumnsError, Result};
use crate::read::{ColumnPart, Plan};

/// Creates index `spec` on table `table`: on a columnar table, its tree
/// over the column part from the part's key columns and its tree over the
/// delta from the heap, in one commit; on a row table, as
/// [`Database::create_index`] does.
pub fn create_index(
    db: &Database,
    table: &str,
    spec: IndexSpec,
    progress: &dyn Progress,
) -> Result<()> {
    let t = db.table(table)?;
    let Some(part) = ColumnPart::of(db, &t)? else {
        return Ok(db.create_index(table, spec, progress)?);
    };
    let mut load = db.begin_load(table)?;
    let name = spec.name.clone();
    let columns = spec.columns.clone();
    load.add_index(spec)?;
    let key_cols = columns
        .iter()
        .map(|c| {
            t.schema()
                .index_of(c)
                .ok_or_else(|| strata_storage::StorageError::UnknownColumn {
                    table: table.to_string(),
                    column: c.clone(),
                })
        })
        .collect::<std::result::Result<Vec<usize>, _>>()?;
    let entries = part_entries(&part, table, &key_cols, progress)?;
    load.set_column_entries(&name, entries);
    load.commit(progress)?;
    Ok(())
}

/// The entries (key, position) of every live row of `part` for an index on
/// `key_cols`, sorted.
pub fn part_entries(
    part: &ColumnPart,
    table: &str,
    key_cols: &[usize],
    progress: &dyn Progress,
) -> Result<SortedEntries> {
    let mut read: Vec<usize> = key_cols.to_vec();
    read.sort_unstable();
    read.dedup();
    let mut keys = KeyEncoder::new(part, table, key_cols, &read);
    let plan = part.plan_all();
    progress.phase(
        &format!("read index keys of {table}'s column rows"),
        plan.rows(),
    );
    let mut out = SortedEntries::new();
    for u in &plan.units {
        let positions = u.positions();
        let mut at = 0usize;
        part.read(u, &read, |b| {
            keys.each(&b, |r, key| {
                out.push(key, Tid::of_position(positions[at + r]))?;
                Ok(())
            })?;
            at += b.num_rows();
            progress.advance(b.num_rows() as u64);
            Ok(true)
        })?;
    }
    out.sort();
    Ok(out)
}

/// Encodes index keys from Arrow batches of a table's columns.
pub struct KeyEncoder {
    table: String,
    /// For each key column: where it is in the batches, and its type.
    cols: Vec<(usize, DataType)>,
    key: Vec<u8>,
}

impl KeyEncoder {
    /// Keys on table columns `key_cols` from batches of table columns
    /// `read` (in table order).
    pub fn new(part: &ColumnPart, table: &str, key_cols: &[usize], read: &[usize]) -> KeyEncoder {
        KeyEncoder::of_schema(part.schema(), table, key_cols, read)
    }

    pub fn of_schema(
        schema: &strata_storage::row::Schema,
        table: &str,
        key_cols: &[usize],
        read: &[usize],
    ) -> KeyEncoder {
        let cols = key_cols
            .iter()
            .map(|c| {
                let at = read.iter().position(|r| r == c).expect("key column read");
                (at, schema.columns[*c].ty)
            })
            .collect();
        KeyEncoder {
            table: table.to_string(),
            cols,
            key: Vec::new(),
        }
    }

    /// Hands `f` each row of `b` (its index) with its encoded key.
    pub fn each(
        &mut self,
        b: &RecordBatch,
        mut f: impl FnMut(usize, &[u8]) -> strata_storage::Result<()>,
    ) -> Result<()> {
        let values = self
            .cols
            .iter()
            .map(|(at, ty)| {
                arrow_values(b.column(*at).as_ref(), ty).map_err(|reason| ColumnsError::Convert {
                    table: self.table.clone(),
                    reason,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        for r in 0..b.num_rows() {
            self.key.clear();
            for ((_, ty), v) in self.cols.iter().zip(&values) {
                encode_key_value(ty, &v[r], &mut self.key);
            }
            f(r, &self.key)?;
        }
        Ok(())
    }
}

/// What a lookup through an index's column tree found.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    /// The index.
    pub index: String,
    /// Entries and leaves read.
    pub entries: u64,
    pub leaves: u64,
    /// The live positions in the range, ascending; `None`: the lookup gave
    /// up (finishing through the index would cost more on the device than
    /// the pruned scan).
    pub positions: Option<Vec<u64>>,
    /// What the walk found, costs included ([`crate::smooth::Walk::describe`]).
    pub note: String,
}

/// The plan of a read of `part` (of `table`) for rows passing `conjuncts`,
/// of table columns `columns`: through the index whose column tree narrows
/// the rows most, when one does and a lookup in it pays (see the module
/// docs), else what min/max pruning keeps. The probe says what the lookup
/// did, if one was tried.
pub fn plan(
    part: &ColumnPart,
    table: &Table,
    conjuncts: &[Comparison],
    columns: &[usize],
) -> Result<(Plan, Option<Probe>)> {
    let pruned = part.plan(conjuncts)?;
    if pruned.units.is_empty() {
        return Ok((pruned, None));
    }
    let Some((index, lo, hi)) = best_index(table, conjuncts)? else {
        return Ok((pruned, None));
    };
    let probe = probe(part, index, lo, hi, &pruned, columns)?;
    let plan = match &probe.positions {
        Some(p) => ColumnPart::plan_at(pruned, p),
        None => pruned,
    };
    Ok((plan, Some(probe)))
}

/// The index of `table` with a column tree whose first key column the
/// conjuncts bound, with the fewest entries in the bound range (the tree's
/// estimate), and the range's encoded bounds.
#[allow(clippy::type_complexity)]
pub(crate) fn best_index<'t>(
    table: &'t Table,
    conjuncts: &[Comparison],
) -> Result<Option<(&'t Index, Bound<Vec<u8>>, Bound<Vec<u8>>)>> {
    let pred = Predicate {
        conjuncts: conjuncts.to_vec(),
    };
    let mut best: Option<(f64, &Index, Bound<Vec<u8>>, Bound<Vec<u8>>)> = None;
    for ix in table.indexes() {
        let Some(tree) = ix.column_tree() else {
            continue;
        };
        let range = pred.range_on(ix.key_cols[0]);
        if matches!(
            (&range.lower, &range.upper),
            (Bound::Unbounded, Bound::Unbounded)
        ) {
            continue;
        }
        let (lo, hi) = range.encoded(&ix.key_types[0]);
        let est = tree.estimate_range(&lo, &hi)?;
        if best.as_ref().is_none_or(|b| est < b.0) {
            best = Some((est, ix, lo, hi));
        }
    }
    Ok(best.map(|(_, ix, lo, hi)| (ix, lo, hi)))
}

/// Walks `index`'s tree over `part` in [`lo`, `hi`] as the column Smooth
/// Scan does ([`crate::smooth::walk`]): the rows it names while reading
/// them costs less on the device than `pruned` (the plan min/max pruning
/// made), reading table columns `columns`; else it gives up, as soon as a
/// lower bound on finishing through the index reaches the pruned scan's
/// cost.
pub fn probe(
    part: &ColumnPart,
    index: &Index,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    pruned: &Plan,
    columns: &[usize],
) -> Result<Probe> {
    let tree = index.column_tree().expect("an index with a column tree");
    let walk = crate::smooth::walk(part, tree, lo, hi, pruned, columns)?;
    Ok(Probe {
        index: index.def.name.clone(),
        entries: walk.entries,
        leaves: walk.leaves,
        note: walk.describe(),
        positions: walk.positions,
    })
}

/// The live positions, ascending, of the rows of `part` (of `table`) that
/// the index [`best_index`] picks for `conjuncts` names, when it names at
/// most `limit`: the candidates of a change to a few rows, read without
/// pruning or costing a scan (a few pages cost less than any scan of the
/// part). `None` when no index's column tree bounds the conjuncts or the
/// range names more rows: then [`plan`] decides.
pub fn few_positions(
    part: &ColumnPart,
    table: &Table,
    conjuncts: &[Comparison],
    limit: usize,
) -> Result<Option<Vec<u64>>> {
    match best_index(table, conjuncts)? {
        Some((index, lo, hi)) => positions_in(part, index, lo, hi, limit),
        None => Ok(None),
    }
}

/// The live positions of `index`'s entries over `part` in [`lo`, `hi`],
/// ascending; `None` as soon as more than `limit` are found (a lookup that
/// names more rows is a scan's to plan, with its costs).
pub fn positions_in(
    part: &ColumnPart,
    index: &Index,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    limit: usize,
) -> Result<Option<Vec<u64>>> {
    let tree = index.column_tree().expect("an index with a column tree");
    let deleted = part.deleted();
    let mut out = Vec::new();
    for entry in tree.range(lo, hi)? {
        let pos = entry?.1.position();
        if deleted.binary_search(&pos).is_ok() {
            continue;
        }
        if out.len() == limit {
            return Ok(None);
        }
        out.push(pos);
    }
    out.sort_unstable();
    Ok(Some(out))
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.positions {
            Some(p) => write!(
                f,
                "index {}: {} row(s) from {} entr{} in {} leaf page(s)",
                self.index,
                p.len(),
                self.entries,
                if self.entries == 1 { "y" } else { "ies" },
                self.leaves
            ),
            None => write!(
                f,
                "index {} given up after {} leaf page(s) ({} entries): {}",
                self.index, self.leaves, self.entries, self.note
            ),
        }
    }
}

/// Checks each index's tree over `table`'s column part against the part:
/// every live row has its entry, with its key as the column files hold it,
/// and no entry names a live row it does not hold (a deleted row's entry
/// may stay). Returns (index, entries of live rows) per index checked.
pub fn verify(
    part: &ColumnPart,
    table: &Table,
    progress: &dyn Progress,
) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    for ix in table.indexes() {
        let Some(tree) = ix.column_tree() else {
            continue;
        };
        let want = part_entries(part, table.name(), &ix.key_cols, progress)?;
        let deleted = part.deleted();
        let mut want = want.iter();
        let mut live = 0u64;
        let bad = |reason: String| {
            ColumnsError::Storage(strata_storage::StorageError::Index {
                index: ix.def.name.clone(),
                reason: format!("its tree over {}'s column rows: {reason}", table.name()),
            })
        };
        for leaf in tree.leaves()? {
            let (page, got) = leaf?;
            for (key, tid) in got {
                let pos = tid.position();
                if deleted.binary_search(&pos).is_ok() {
                    continue;
                }
                live += 1;
                match want.next() {
                    Some((k, t)) if k == key && t == tid => {}
                    Some((_, t)) => {
                        return Err(bad(format!(
                            "leaf page {page}: the entry for row {pos} does not match the column files \
                             (expected one for row {})",
                            t.position()
                        )));
                    }
                    None => {
                        return Err(bad(format!(
                            "leaf page {page}: an entry for row {pos}, which the column files do not hold"
                        )));
                    }
                }
            }
        }
        if let Some((_, t)) = want.next() {
            return Err(bad(format!("row {} has no entry", t.position())));
        }
        out.push((ix.def.name.clone(), live));
    }
    Ok(out)
}
