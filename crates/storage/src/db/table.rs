//! [`Table`]: an open table, its rows read, changed and looked up (the point
//! lookup through an index's hot partition, the cached lookups of the index
//! cache), and its side table.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::btree::cache::fields::CachedFields;
use crate::btree::cache::governor::Way;
use crate::buffer::as_writer;
use crate::error::{Result, StorageError};
use crate::heap::HeapFile;
use crate::row::{RowLayout, Schema, Tid, Value};

use super::deletes::DeleteSet;
use super::index::{CachedLookups, Index, TreeRef};

thread_local! {
    /// A cache miss's encoded fields on their way into the leaf, kept per
    /// thread so a fill allocates nothing.
    static CACHE_VALUE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Whether rows may change now: while a write transaction runs. The
/// transaction is not tied to the thread that began it (a SQL session keeps
/// one open across statements that run on other threads); there is one at a
/// time, so every row change while it runs belongs to it.
#[derive(Default)]
pub(crate) struct TxnOwner(pub(super) std::sync::atomic::AtomicBool);

impl TxnOwner {
    pub(super) fn check(&self, table: &str) -> Result<()> {
        if self.0.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(StorageError::NoTransaction {
                table: table.to_string(),
            })
        }
    }
}

/// The error of a change to a table on the cold tier.
pub fn cold_read_only(table: &str) -> StorageError {
    StorageError::ColdTier {
        table: table.to_string(),
        message: format!(
            "table {table} is on the cold tier (read-only); strata tier local {table} brings it back"
        ),
    }
}

/// The error of a change asked of a side table directly (`split.rs`).
pub(crate) fn side_table_refused(table: &str, owner: &str) -> StorageError {
    StorageError::Schema(format!(
        "{table} holds side columns of table {owner} (vertical partitioning) and changes only through it; strata split {owner} --merge puts them back"
    ))
}

/// What a columnar table refuses in this version: `what` (an index, a
/// vertical split, a move to the cold tier) needs the row heap.
pub(crate) fn columnar_refused(table: &str, what: &str) -> StorageError {
    StorageError::Columnar {
        table: table.to_string(),
        message: format!(
            "table {table} is columnar and {what} needs a row table (SQLSTATE 0A000); \
             `strata compact --format rows {table}` converts it back"
        ),
    }
}

/// An open table: heap, row layout and indexes.
pub struct Table {
    pub(super) name: String,
    pub(super) schema: Schema,
    pub(super) layout: RowLayout,
    pub(super) heap: Arc<HeapFile>,
    /// The heap's path as the catalog names it (log records name files so).
    pub(super) heap_file: String,
    pub(super) indexes: Vec<Index>,
    pub(super) rows: AtomicU64,
    /// Heap pages and rows as of the last commit (an abort goes back to them).
    pub(super) committed: Mutex<(u64, u64)>,
    pub(super) segment_pages: u64,
    pub(super) owner: Arc<TxnOwner>,
    /// Whether a file of the table is on the cold tier (read-only).
    pub(super) cold: bool,
    /// Sampled access counts of its tuples (`heat.rs`), shared by the table's
    /// successive handles (a load makes a new one).
    pub(super) heat: Arc<super::heat::AccessCounts>,
    /// The side table holding its side columns (vertical partitioning,
    /// `split.rs`), and where those columns are in this table's rows.
    pub(super) side: Option<SidePart>,
    /// A columnar table's column part (`strata-columns` reads it); its heap
    /// is then the delta of rows inserted since.
    pub(super) columns: Option<crate::catalog::ColumnsDef>,
    /// A columnar table's delete set (`deletes.rs`), shared by the table's
    /// successive handles until a rewrite starts a new one.
    pub(super) deleted: Option<Arc<DeleteSet>>,
}

/// Rows a joined scan of a split table decodes before it reads their side
/// rows: enough that the side rows of a batch take a few long reads.
pub(super) const JOIN_BATCH_ROWS: usize = 4096;

/// A table's side table, open, with the places of its columns.
#[derive(Clone)]
pub(crate) struct SidePart {
    pub(crate) table: Arc<Table>,
    /// The side columns' positions in the main table, in order (the side
    /// table's columns).
    pub(crate) cols: Vec<usize>,
}

impl SidePart {
    pub(super) fn of(layout: &RowLayout, table: Arc<Table>) -> SidePart {
        let cols = (0..layout.types().len())
            .filter(|&c| layout.is_side(c))
            .collect();
        SidePart { table, cols }
    }
}

/// The index's cached columns, read under its lock rather than cloned out
/// of it (a lookup takes no reference count, and they cannot change under
/// it); an index without them is an error.
pub(super) fn cached_fields_of(
    ix: &Index,
) -> Result<parking_lot::MappedRwLockReadGuard<'_, CachedFields>> {
    parking_lot::RwLockReadGuard::try_map(ix.cached.read(), |c| c.as_deref()).map_err(|_| {
        StorageError::Index {
            index: ix.def.name.clone(),
            reason: "caches no columns".into(),
        }
    })
}

impl Table {
    /// The sampled access counts of its tuples (`heat.rs`).
    pub fn heat(&self) -> &super::heat::AccessCounts {
        &self.heat
    }

    /// Every B+-tree of the table: its indexes' and their hot partitions'.
    pub(crate) fn trees(&self) -> Vec<TreeRef<'_>> {
        let mut out = Vec::new();
        for i in &self.indexes {
            out.push(TreeRef::Index(i));
            if let Some(h) = i.hot() {
                out.push(TreeRef::Hot(h));
            }
            if let Some(t) = &i.column_tree {
                out.push(TreeRef::Columns(t));
            }
        }
        if let Some(d) = &self.deleted {
            out.push(TreeRef::Deleted(d));
        }
        out
    }

    /// Whether a file of the table is on the cold tier: then it is read-only.
    pub fn is_cold(&self) -> bool {
        self.cold
    }

    /// Row changes need a write transaction and a table on the local tier.
    pub(super) fn check_change(&self) -> Result<()> {
        if self.cold {
            return Err(cold_read_only(&self.name));
        }
        if let Some(s) = &self.side {
            s.table.check_change()?;
        }
        self.owner.check(&self.name)
    }

    /// The side table holding the columns whose encoding is
    /// [`crate::row::encoding::Encoding::Side`] (vertical partitioning,
    /// `split.rs`), if the table has one. Its rows are the side columns in
    /// table order; [`RowLayout::side_tid`] of a main tuple finds its row.
    pub fn side_table(&self) -> Option<&Arc<Table>> {
        self.side.as_ref().map(|s| &s.table)
    }

    /// Positions of the side columns in this table's rows (empty: none).
    pub fn side_columns(&self) -> &[usize] {
        self.side.as_ref().map_or(&[], |s| &s.cols)
    }

    /// A full row's side columns: the side table's row.
    pub(super) fn side_values(&self, row: &[Value]) -> Result<Vec<Value>> {
        let s = self.side.as_ref().expect("only for a split table");
        if row.len() != self.schema.len() {
            return Err(StorageError::Schema(format!(
                "row has {} values, table has {} columns",
                row.len(),
                self.schema.len()
            )));
        }
        Ok(s.cols.iter().map(|&c| row[c].clone()).collect())
    }

    /// A full row as the main heap stores it: the side row's address in the
    /// pointer's place (the first side column), NULL in the other side
    /// columns (encoded as nothing).
    pub(super) fn main_values(&self, row: &[Value], side_tid: Tid) -> Vec<Value> {
        let s = self.side.as_ref().expect("only for a split table");
        let mut out = row.to_vec();
        if out.len() != self.schema.len() {
            // The encoding says what is wrong.
            return out;
        }
        for (i, &c) in s.cols.iter().enumerate() {
            out[c] = if i == 0 {
                Value::Int64(crate::row::encoding::address_of(side_tid))
            } else {
                Value::Null
            };
        }
        out
    }

    /// Fills `row`'s side columns (a main tuple's decoding, NULL there) from
    /// the side row the main tuple `bytes` points to. An error names the
    /// main tuple when its side row is missing (a damaged table).
    pub fn join_side(&self, bytes: &[u8], tid: Tid, row: &mut [Value]) -> Result<()> {
        let Some(s) = &self.side else {
            return Ok(());
        };
        let side_tid = self.layout.side_tid(bytes).expect("a split table's layout");
        let values = s
            .table
            .get_row(side_tid)?
            .ok_or_else(|| self.lost_side(tid, side_tid))?;
        for (&c, v) in s.cols.iter().zip(values) {
            row[c] = v;
        }
        Ok(())
    }

    pub(super) fn lost_side(&self, tid: Tid, side_tid: Tid) -> StorageError {
        StorageError::LostSideRow {
            table: self.name.clone(),
            page: tid.page,
            slot: tid.slot,
            side_page: side_tid.page,
            side_slot: side_tid.slot,
        }
    }

    /// Decodes the main tuple `bytes` at `tid` into a full row (joining its
    /// side row when the table has one).
    pub(super) fn decode_row(&self, bytes: &[u8], tid: Tid) -> Result<Vec<Value>> {
        let mut row = self.layout.decode(bytes, tid);
        self.join_side(bytes, tid, &mut row)?;
        Ok(row)
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn schema(&self) -> &Schema {
        &self.schema
    }
    /// Each column's physical encoding; empty when every column is stored
    /// as declared.
    pub fn encodings(&self) -> &[crate::row::encoding::Encoding] {
        self.layout.encodings()
    }

    pub fn layout(&self) -> &RowLayout {
        &self.layout
    }
    pub fn heap(&self) -> &Arc<HeapFile> {
        &self.heap
    }
    pub fn indexes(&self) -> &[Index] {
        &self.indexes
    }
    /// A columnar table's column part: Parquet files of the rows as of its
    /// last conversion (the heap holds the rows inserted since); `None` for
    /// a row table.
    pub fn columns(&self) -> Option<&crate::catalog::ColumnsDef> {
        self.columns.as_ref()
    }

    /// The open table's paged files by the catalog's names, with their ids
    /// on the database's device: the heap, each index and its tree over a
    /// column part, the delete set (those of `TableDef::paged_files`).
    pub fn paged_files(&self) -> Vec<(String, crate::device::FileId)> {
        let mut out = vec![(self.heap_file.clone(), self.heap.file_id())];
        for i in &self.indexes {
            out.push((i.def.file.clone(), i.btree.file_id()));
            if let Some(t) = &i.column_tree {
                out.push((t.file.clone(), t.btree.file_id()));
            }
        }
        if let Some(d) = &self.deleted {
            out.push((d.file.clone(), d.btree.file_id()));
        }
        out
    }

    /// A columnar table's delete set (`deletes.rs`; `None`: a row table, or
    /// a column part converted before delete sets existed, which takes no
    /// deletes).
    pub fn delete_set(&self) -> Option<&Arc<DeleteSet>> {
        self.deleted.as_ref()
    }

    /// Positions of the column part's rows taken away, ascending (empty for
    /// a row table) — for a reader while a write transaction runs, as of the
    /// last commit.
    pub fn deleted_column_rows(&self) -> Result<Arc<Vec<u64>>> {
        match &self.deleted {
            // The running transaction's own view: the committed positions
            // and its own marks.
            Some(d) if self.heap.pool().sees_uncommitted() => d.own_positions(),
            Some(d) => d.committed_positions(),
            None => Ok(Arc::default()),
        }
    }

    /// Takes the column part's rows at `positions` away, in the running write
    /// transaction. A position past the part's rows, named twice or taken
    /// away already is an error, and then nothing has changed.
    pub fn delete_column_rows(&self, positions: &[u64]) -> Result<()> {
        self.check_change()?;
        if positions.is_empty() {
            return Ok(());
        }
        let Some(set) = &self.deleted else {
            return Err(columnar_refused(
                &self.name,
                "deleting a row of its column part (converted before delete sets existed; \
                 `strata compact --format columns` once gives it one)",
            ));
        };
        let rows = self.columns.as_ref().map_or(0, |c| c.rows());
        set.mark(&self.name, rows, positions)
    }

    /// Live rows of the table, its column part (less the rows its delete
    /// set took away) and its heap.
    pub fn live_rows(&self) -> u64 {
        let deleted = self.deleted.as_ref().map_or(0, |d| d.len());
        self.rows()
            + self
                .columns
                .as_ref()
                .map_or(0, |c| c.rows())
                .saturating_sub(deleted)
    }

    /// Live rows of the heap (of a columnar table: the delta) — for a reader
    /// while a write transaction runs, as of the last commit.
    pub fn rows(&self) -> u64 {
        if self.heap.pool().reads_committed() {
            self.committed.lock().1
        } else {
            self.rows.load(Ordering::Acquire)
        }
    }
    pub fn segment_pages(&self) -> u64 {
        self.segment_pages
    }
    pub fn index(&self, name: &str) -> Result<&Index> {
        self.indexes
            .iter()
            .find(|i| i.def.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| StorageError::UnknownIndex(name.into()))
    }
    /// An index whose first key column is `column`.
    pub fn index_on(&self, column: &str) -> Option<&Index> {
        let c = self.schema.index_of(column)?;
        self.indexes.iter().find(|i| i.key_cols[0] == c)
    }
    /// Position of a column, or an error naming the table and column.
    pub fn column(&self, name: &str) -> Result<usize> {
        self.schema
            .index_of(name)
            .ok_or_else(|| StorageError::UnknownColumn {
                table: self.name.clone(),
                column: name.into(),
            })
    }

    pub fn get_row(&self, tid: Tid) -> Result<Option<Vec<Value>>> {
        if self.side.is_none() {
            return self.heap.with_tuple(tid, |b| self.layout.decode(b, tid));
        }
        self.heap
            .with_tuple(tid, |b| self.decode_row(b, tid))?
            .transpose()
    }

    /// The tuple id of the side row of the row at `tid` (`None`: no such
    /// row, or the table is not split).
    pub(super) fn side_tid_of(&self, tid: Tid) -> Result<Option<Tid>> {
        Ok(self
            .heap
            .with_tuple(tid, |b| self.layout.side_tid(b))?
            .flatten())
    }

    /// Encodes `row` into `out` as an insert would store it, checking every
    /// value, without storing it; returns the largest stored tuple's size
    /// (a split table stores two: its row, with a pointer, and the side row).
    pub fn encode_checked(&self, row: &[Value], out: &mut Vec<u8>) -> Result<usize> {
        out.clear();
        match &self.side {
            None => {
                self.layout.encode(row, out, &self.schema)?;
                Ok(out.len())
            }
            Some(s) => {
                self.layout
                    .encode(&self.main_values(row, Tid::new(0, 0)), out, &self.schema)?;
                let mut side = Vec::new();
                s.table
                    .layout
                    .encode(&self.side_values(row)?, &mut side, &s.table.schema)?;
                Ok(out.len().max(side.len()))
            }
        }
    }

    pub(super) fn encode(&self, row: &[Value]) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.layout.encode(row, &mut buf, &self.schema)?;
        Ok(buf)
    }

    /// Inserts a row and its index entries (in the thread's write transaction).
    pub fn insert_row(&self, row: &[Value]) -> Result<Tid> {
        self.check_change()?;
        as_writer(|| {
            let tid = match &self.side {
                None => self.heap.insert(&self.encode(row)?)?,
                Some(s) => {
                    // The main row is checked before the side row is written.
                    self.encode(&self.main_values(row, Tid::new(0, 0)))?;
                    let side_tid = s.table.insert_row(&self.side_values(row)?)?;
                    self.heap
                        .insert(&self.encode(&self.main_values(row, side_tid))?)?
                }
            };
            for i in &self.indexes {
                let k = i.key_of_row(row);
                i.btree.insert(&k, tid)?;
                i.hot_insert(&k, tid)?;
            }
            self.rows.fetch_add(1, Ordering::AcqRel);
            Ok(tid)
        })
    }

    /// The row at `tid`, or an error naming the table and tuple.
    pub(super) fn existing_row(&self, tid: Tid) -> Result<Vec<Value>> {
        self.get_row(tid)?.ok_or_else(|| self.missing_tuple(tid))
    }

    pub(super) fn missing_tuple(&self, tid: Tid) -> StorageError {
        StorageError::NoSuchTuple {
            table: self.name.clone(),
            page: tid.page,
            slot: tid.slot,
        }
    }

    /// Deletes a row and its index entries.
    pub fn delete_row(&self, tid: Tid) -> Result<()> {
        self.check_change()?;
        as_writer(|| {
            let row = self.existing_row(tid)?;
            for i in &self.indexes {
                let k = i.key_of_row(&row);
                i.btree.delete(&k, tid)?;
                i.hot_delete(&k, tid)?;
                i.changed_cached(&[tid]);
            }
            if let Some(s) = &self.side
                && let Some(side_tid) = self.side_tid_of(tid)?
            {
                s.table.delete_row(side_tid)?;
            }
            self.heap.delete(tid)?;
            self.heat.forget(tid);
            self.rows.fetch_sub(1, Ordering::AcqRel);
            Ok(())
        })
    }

    /// Inserts `rows` and their index entries (in the thread's write
    /// transaction), with the same result as [`Table::insert_row`] of each in
    /// turn — the same tids, returned in the order of `rows` — but batched: the
    /// heap takes the tuples pinning each page once ([`HeapFile::insert_many`]),
    /// and each index takes its entries sorted, visiting each leaf they land on
    /// once ([`BTree::insert_sorted`]). Every row is checked against the schema
    /// and every index key's size before anything changes.
    pub fn insert_rows(&self, rows: &[Vec<Value>]) -> Result<Vec<Tid>> {
        self.check_change()?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        as_writer(|| {
            let mut tuples = Vec::new();
            let mut ends = Vec::with_capacity(rows.len());
            for row in rows {
                match &self.side {
                    None => self.layout.encode(row, &mut tuples, &self.schema)?,
                    // Checked with a stand-in pointer; encoded again below.
                    Some(_) => self.layout.encode(
                        &self.main_values(row, Tid::new(0, 0)),
                        &mut tuples,
                        &self.schema,
                    )?,
                }
                ends.push(tuples.len());
            }
            if let Some(s) = &self.side {
                // Every row was checked above; now the side rows go first,
                // and the main rows point to them.
                let side_rows = rows
                    .iter()
                    .map(|r| self.side_values(r))
                    .collect::<Result<Vec<_>>>()?;
                let side_tids = s.table.insert_rows(&side_rows)?;
                tuples.clear();
                ends.clear();
                for (row, side_tid) in rows.iter().zip(side_tids) {
                    self.layout.encode(
                        &self.main_values(row, side_tid),
                        &mut tuples,
                        &self.schema,
                    )?;
                    ends.push(tuples.len());
                }
            }
            let mut keys: Vec<Vec<Vec<u8>>> = Vec::with_capacity(self.indexes.len());
            for i in &self.indexes {
                let mut ks = Vec::with_capacity(rows.len());
                for row in rows {
                    let mut k = Vec::new();
                    for (ty, &c) in i.key_types.iter().zip(&i.key_cols) {
                        crate::row::encode_key_value(ty, &row[c], &mut k);
                    }
                    i.btree.check_key(&k)?;
                    ks.push(k);
                }
                keys.push(ks);
            }
            let starts = std::iter::once(0).chain(ends.iter().copied());
            let tids = self
                .heap
                .insert_many(starts.zip(ends.iter().copied()).map(|(a, b)| &tuples[a..b]))?;
            for (i, ks) in self.indexes.iter().zip(keys) {
                let mut entries: Vec<(Vec<u8>, Tid)> =
                    ks.into_iter().zip(tids.iter().copied()).collect();
                // Encoded keys are prefix-free, so (key, tid) order is entry order.
                entries.sort_unstable();
                i.btree.insert_sorted(&entries)?;
                if i.hot().is_some() {
                    for (k, tid) in &entries {
                        i.hot_insert(k, *tid)?;
                    }
                }
            }
            self.rows.fetch_add(rows.len() as u64, Ordering::AcqRel);
            Ok(tids)
        })
    }

    /// Deletes the rows at `tids` and their index entries, with the same result
    /// as [`Table::delete_row`] of each, batched: each heap page is read once
    /// for the index keys of its rows ([`HeapFile::with_tuples`]), each index
    /// deletes its entries sorted, reading and writing each leaf they are on
    /// once ([`BTree::delete_sorted`]), and each heap page is written once
    /// ([`HeapFile::delete_many`]). Every tid is checked first: one without a
    /// row (or named twice) is the error `delete_row` gives for it, and then
    /// nothing has changed.
    pub fn delete_rows(&self, tids: &[Tid]) -> Result<()> {
        self.check_change()?;
        if tids.is_empty() {
            return Ok(());
        }
        as_writer(|| {
            let mut sorted = tids.to_vec();
            sorted.sort_unstable();
            let missing = |tid: Tid| StorageError::NoSuchTuple {
                table: self.name.clone(),
                page: tid.page,
                slot: tid.slot,
            };
            if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                return Err(missing(w[1]));
            }
            let mut entries: Vec<Vec<(Vec<u8>, Tid)>> = self
                .indexes
                .iter()
                .map(|_| Vec::with_capacity(sorted.len()))
                .collect();
            let mut side_tids = Vec::new();
            self.heap.with_tuples(&sorted, |tid, tuple| {
                let tuple = tuple.ok_or_else(|| missing(tid))?;
                for (i, out) in self.indexes.iter().zip(entries.iter_mut()) {
                    let mut k = Vec::new();
                    i.key_of_tuple(&self.layout, tuple, tid, &mut k);
                    out.push((k, tid));
                }
                side_tids.extend(self.layout.side_tid(tuple));
                Ok(())
            })?;
            if let Some(s) = &self.side {
                s.table.delete_rows(&side_tids)?;
            }
            for (i, mut es) in self.indexes.iter().zip(entries) {
                es.sort_unstable();
                i.btree.delete_sorted(&es)?;
                for (k, tid) in &es {
                    i.hot_delete(k, *tid)?;
                }
                i.changed_cached(&sorted);
            }
            for &tid in &sorted {
                self.heat.forget(tid);
            }
            self.heap.delete_many(&sorted)?;
            self.rows.fetch_sub(sorted.len() as u64, Ordering::AcqRel);
            Ok(())
        })
    }

    /// Replaces a row; returns its tid, which changes when the row had to move.
    pub fn update_row(&self, tid: Tid, row: &[Value]) -> Result<Tid> {
        self.check_change()?;
        as_writer(|| {
            let old = self.existing_row(tid)?;
            let new_tid = match &self.side {
                None => self.heap.update(tid, &self.encode(row)?)?,
                Some(s) => {
                    self.encode(&self.main_values(row, Tid::new(0, 0)))?;
                    let side_tid = self
                        .side_tid_of(tid)?
                        .ok_or_else(|| self.missing_tuple(tid))?;
                    let side_row = self.side_values(row)?;
                    // A side row that did not change is not written.
                    let new_side = if side_row != self.side_values(&old)? {
                        s.table.update_row(side_tid, &side_row)?
                    } else {
                        side_tid
                    };
                    let main = self.main_values(row, new_side);
                    if new_side == side_tid && main == self.main_values(&old, side_tid) {
                        // Only side columns changed, in place: the row is as
                        // it was, and its page is not written (what splitting
                        // often updated columns off is for).
                        tid
                    } else {
                        self.heap.update(tid, &self.encode(&main)?)?
                    }
                }
            };
            for i in &self.indexes {
                let (ok, nk) = (i.key_of_row(&old), i.key_of_row(row));
                if ok != nk || new_tid != tid {
                    i.btree.delete(&ok, tid)?;
                    i.btree.insert(&nk, new_tid)?;
                    i.hot_replace(&ok, tid, &nk, new_tid)?;
                    i.changed_cached(&[tid]);
                } else if i.cached_fields().is_some_and(|f| f.changed(&old, row)) {
                    // Same entry, new cached fields: a predicate on the tid.
                    // An update of no cached column and no key changes no
                    // cache.
                    i.changed_cached(&[tid]);
                }
            }
            if new_tid != tid {
                self.heat.moved(tid, new_tid);
            }
            Ok(new_tid)
        })
    }

    /// Moves a row to another heap page (`None`: the page inserts fill), keeping
    /// its indexes pointing at it. Hot/cold partitioning is built on this.
    pub fn move_row(&self, tid: Tid, target_page: Option<u64>) -> Result<Tid> {
        self.check_change()?;
        as_writer(|| {
            let row = self.existing_row(tid)?;
            let new_tid = self.heap.move_tuple(tid, target_page)?;
            self.moved_entries(&row, tid, new_tid)?;
            Ok(new_tid)
        })
    }

    /// Moves a row into heap page `page` if it has room there (`None` if it
    /// has not, and nothing changed), keeping its indexes pointing at it.
    pub fn move_row_into(&self, tid: Tid, page: u64) -> Result<Option<Tid>> {
        self.check_change()?;
        as_writer(|| {
            let row = self.existing_row(tid)?;
            let stored = match &self.side {
                Some(_) => {
                    let side_tid = self
                        .side_tid_of(tid)?
                        .ok_or_else(|| self.missing_tuple(tid))?;
                    self.main_values(&row, side_tid)
                }
                None => row.clone(),
            };
            let Some(new_tid) = self.heap.insert_into(page, &self.encode(&stored)?)? else {
                return Ok(None);
            };
            self.heap.delete(tid)?;
            self.moved_entries(&row, tid, new_tid)?;
            Ok(Some(new_tid))
        })
    }

    /// Index entries follow a row from `tid` to `new_tid`.
    pub(super) fn moved_entries(&self, row: &[Value], tid: Tid, new_tid: Tid) -> Result<()> {
        for i in &self.indexes {
            let k = i.key_of_row(row);
            i.btree.delete(&k, tid)?;
            i.btree.insert(&k, new_tid)?;
            i.hot_replace(&k, tid, &k, new_tid)?;
            i.changed_cached(&[tid]);
        }
        self.heat.moved(tid, new_tid);
        Ok(())
    }

    /// The values of `fields`' columns (an index's cached columns, in their
    /// declared order) in the heap tuple `tid`, decoding only those; `None`
    /// when the tuple is gone. What a cache miss reads, and what a lookup
    /// without the cache reads for the same answer.
    pub fn cached_columns(&self, fields: &CachedFields, tid: Tid) -> Result<Option<Vec<Value>>> {
        self.heap.with_tuple(tid, |b| {
            fields
                .cols
                .iter()
                .map(|&c| self.layout.decode_column(b, c, tid))
                .collect()
        })
    }

    /// Every entry of `key` (a full encoded key of `ix`) with the values of
    /// the index's cached columns (in their declared order): from the leaf on
    /// a cache hit, from the heap on a miss, which then fills the cache (No
    /// Bits Left Behind §2.1). Counts go to `counts`. An index without cached
    /// columns is an error.
    pub fn lookup_cached(
        &self,
        ix: &Index,
        key: &[u8],
        counts: &mut CachedLookups,
    ) -> Result<Vec<(Tid, Vec<Value>)>> {
        let fields = &*cached_fields_of(ix)?;
        let mut out: Vec<(Tid, Vec<Value>)> = Vec::new();
        // The misses' places in `out` and tickets, filled after the leaves'
        // latches are given up (nothing allocated when every entry hits).
        let mut misses = Vec::new();
        ix.btree.lookup_cached_with(key, |tid, found| match found {
            crate::btree::Found::Hit(v) => {
                counts.hits += 1;
                out.push((tid, fields.decode(v)));
            }
            crate::btree::Found::Miss(ticket) => {
                counts.misses += 1;
                misses.push((out.len(), ticket));
                out.push((tid, Vec::new()));
            }
        })?;
        if misses.is_empty() {
            return Ok(out);
        }
        let mut gone = Vec::new();
        CACHE_VALUE.with_borrow_mut(|buf| -> Result<()> {
            for (i, ticket) in misses {
                let Some(values) = self.cached_columns(fields, out[i].0)? else {
                    // Deleted since the lookup read the leaf.
                    gone.push(i);
                    continue;
                };
                buf.clear();
                fields.encode_values(&values, buf);
                match ix.btree.fill_cache(&ticket, buf)? {
                    crate::btree::Filled::Cached(_) => counts.fills += 1,
                    _ => counts.refused += 1,
                }
                out[i].1 = values;
            }
            Ok(())
        })?;
        for i in gone.into_iter().rev() {
            out.remove(i);
        }
        Ok(out)
    }

    /// What [`lookup_cached`](Self::lookup_cached) gives, answered the way the
    /// index's governor finds cheaper (`btree/cache/governor.rs`): through the cache,
    /// or by the plain path (the index's entries, then each one's heap tuple;
    /// the cache neither read nor filled, counted in `counts.plain`). The
    /// answer is the same either way.
    pub fn lookup_cached_auto(
        &self,
        ix: &Index,
        key: &[u8],
        counts: &mut CachedLookups,
    ) -> Result<Vec<(Tid, Vec<Value>)>> {
        let choice = ix.governor.choose();
        // Wall time, plus the modeled device time no one waited for (zero on
        // the real device): what the lookup cost on this device.
        let start = choice.timed.then(|| {
            (
                std::time::Instant::now(),
                crate::device::thread_unwaited_ns(),
            )
        });
        let out = match choice.way {
            Way::Cache => self.lookup_cached(ix, key, counts)?,
            Way::Plain => self.lookup_plain(ix, key, counts)?,
        };
        if let Some((start, unwaited)) = start {
            let wall = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let modeled = crate::device::thread_unwaited_ns().saturating_sub(unwaited);
            ix.governor.record(choice.way, wall.saturating_add(modeled));
        }
        Ok(out)
    }

    /// The plain path of [`lookup_cached_auto`](Self::lookup_cached_auto):
    /// what [`lookup_cached`](Self::lookup_cached) gives, from the index's
    /// entries and their heap tuples, the cache neither read nor filled.
    pub fn lookup_plain(
        &self,
        ix: &Index,
        key: &[u8],
        counts: &mut CachedLookups,
    ) -> Result<Vec<(Tid, Vec<Value>)>> {
        let fields = &*cached_fields_of(ix)?;
        let mut out = Vec::new();
        for tid in ix.btree.lookup(key)? {
            counts.plain += 1;
            // None: deleted since the lookup read the leaf.
            if let Some(values) = self.cached_columns(fields, tid)? {
                out.push((tid, values));
            }
        }
        Ok(out)
    }

    /// Visits every row in heap order.
    pub fn scan_rows(&self, mut f: impl FnMut(Tid, Vec<Value>) -> Result<()>) -> Result<()> {
        let Some(side) = &self.side else {
            return self.heap.scan(|tid, b| f(tid, self.layout.decode(b, tid)));
        };
        // Rows a batch at a time, their side rows read in side-heap order
        // (each side page once, neighbours in one request).
        let mut rows: Vec<(Tid, Vec<Value>)> = Vec::new();
        let mut wanted: Vec<(Tid, usize)> = Vec::new();
        let mut join = |rows: &mut Vec<(Tid, Vec<Value>)>, wanted: &mut Vec<(Tid, usize)>| {
            wanted.sort_unstable();
            let side_tids: Vec<Tid> = wanted.iter().map(|w| w.0).collect();
            let mut k = 0;
            side.table.heap.with_tuples_prefetched(
                &side_tids,
                crate::heap::WRITE_RUN_PAGES,
                |side_tid, b| {
                    let (_, i) = wanted[k];
                    k += 1;
                    let b = b.ok_or_else(|| self.lost_side(rows[i].0, side_tid))?;
                    let values = side.table.layout.decode(b, side_tid);
                    for (&c, v) in side.cols.iter().zip(values) {
                        rows[i].1[c] = v;
                    }
                    Ok(())
                },
            )?;
            wanted.clear();
            for (tid, row) in rows.drain(..) {
                f(tid, row)?;
            }
            Ok(())
        };
        self.heap
            .scan_pages(crate::heap::WRITE_RUN_PAGES, 2, |p, v| {
                for (slot, t) in v.tuples() {
                    let tid = Tid::new(p as u32, slot);
                    let side_tid = self.layout.side_tid(t).expect("a split table's layout");
                    wanted.push((side_tid, rows.len()));
                    rows.push((tid, self.layout.decode(t, tid)));
                }
                if rows.len() >= JOIN_BATCH_ROWS {
                    join(&mut rows, &mut wanted)?;
                }
                Ok(std::ops::ControlFlow::Continue(()))
            })?;
        join(&mut rows, &mut wanted)
    }

    /// The tids of `key` (a full encoded key of `ix`): from the hot partition
    /// when it holds the key, else from the full index. Each is an access.
    pub fn lookup(&self, ix: &Index, key: &[u8]) -> Result<Vec<Tid>> {
        let tids = match ix.hot_entries(key)? {
            Some(tids) => tids,
            None => ix.btree.lookup(key)?,
        };
        for &t in &tids {
            self.heat().record(t);
        }
        Ok(tids)
    }

    /// The live row whose semantic id (No Bits Left Behind §4.2,
    /// [`crate::row::encoding::Encoding::Address`]) is `id`, and its tuple id: the
    /// one page the id names, no index. An access, as for [`Table::lookup`],
    /// so clustering learns from lookups by id; moving the row gives it a new
    /// id. `None` when no live row has that id; an error when the table has
    /// no semantic id.
    pub fn lookup_address(&self, id: i64) -> Result<Option<(Tid, Vec<crate::row::Value>)>> {
        if self.layout().address_column().is_none() {
            return Err(StorageError::Schema(format!(
                "table {} has no semantic id (strata compact {} --semantic-id COL makes one)",
                self.name(),
                self.name()
            )));
        }
        let Some(tid) = crate::row::encoding::tid_of_address(id)
            .filter(|t| (t.page as u64) < self.heap().num_pages())
        else {
            return Ok(None);
        };
        let Some(row) = self.get_row(tid)? else {
            return Ok(None);
        };
        self.heat().record(tid);
        Ok(Some((tid, row)))
    }
}
