//! Loads ([`TableLoad`]): rows appended after a table's committed pages, its
//! indexes rebuilt, made durable, then the catalog swapped; and the table and
//! index creation built on them.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use parking_lot::Mutex;

use crate::btree::BTree;
use crate::btree::cache::fields::CachedFields;
use crate::catalog::{ColumnIndexDef, IndexDef, TableDef, sync_dir, validate_name};
use crate::error::{Result, StorageError};
use crate::heap::{HeapFile, HeapWriter};
use crate::progress::{NoProgress, Progress};
use crate::row::{RowLayout, Schema, Tid, Value};

use super::database::{Database, remove_files};
use super::index::{ColumnTree, Index, resolve_columns, side_column_in_index};
use super::keysort::SortedEntries;
use super::options::{IndexSpec, TableOptions};
use super::table::{SidePart, Table, cold_read_only, columnar_refused, side_table_refused};

/// A load in progress: rows appended after the table's committed pages, indexes
/// rebuilt at commit. Dropping it without committing leaves the table as it was.
pub struct TableLoad<'a> {
    pub(super) db: &'a Database,
    /// Loads exclude write transactions, checkpoints and other loads.
    pub(super) _writer: parking_lot::MutexGuard<'a, ()>,
    pub(super) def: TableDef,
    pub(super) heap: Arc<HeapFile>,
    pub(super) writer: Option<HeapWriter>,
    pub(super) layout: RowLayout,
    pub(super) new_table: bool,
    /// The table whose heap this load's new heap replaces (`compact.rs`).
    pub(super) replaces: Option<Arc<Table>>,
    pub(super) new_indexes: Vec<IndexSpec>,
    pub(super) appended: u64,
    pub(super) scratch: Vec<u8>,
    /// The side table's part of the load (vertical partitioning, `split.rs`).
    pub(super) side: Option<SideLoad>,
    /// A side table the commit removes (`strata split --merge`).
    pub(super) retire: Option<Arc<Table>>,
    /// The new, empty delete set of a rewrite into columns (`deletes.rs`),
    /// named in the catalog by the commit.
    pub(super) deletes: Option<Arc<super::deletes::DeleteSet>>,
    /// The entries of the column part's rows for an index (by name), given
    /// by the writer of the part (`strata-columns`): the commit builds the
    /// index's column tree from them.
    pub(super) column_entries: Vec<(String, SortedEntries)>,
}

/// The side table's rows of a load: appended to its heap, committed in the
/// same catalog swap as the table's.
pub(super) struct SideLoad {
    pub(super) def: TableDef,
    pub(super) heap: Arc<HeapFile>,
    pub(super) writer: Option<HeapWriter>,
    pub(super) layout: RowLayout,
    /// The side columns' positions in the table's rows.
    pub(super) cols: Vec<usize>,
    pub(super) appended: u64,
    /// The table the new heap replaces (`compact.rs`, `split.rs`).
    pub(super) replaces: Option<Arc<Table>>,
}

/// What a committed load did.
#[derive(Clone, Debug, Default)]
pub struct LoadSummary {
    pub rows_appended: u64,
    pub rows_total: u64,
    pub pages_total: u64,
    pub indexes_built: usize,
}

impl<'a> TableLoad<'a> {
    pub(super) fn new(
        db: &'a Database,
        lock: parking_lot::MutexGuard<'a, ()>,
        def: TableDef,
        heap: Arc<HeapFile>,
        new_table: bool,
        indexes: Vec<IndexSpec>,
    ) -> Result<TableLoad<'a>> {
        let layout = RowLayout::encoded(&def.schema, &def.encodings)?;
        heap.set_tuple_shape(crate::row::shape::TupleShape::of_layout(
            &def.schema,
            &layout,
        ));
        let writer = Some(heap.writer());
        let mut load = TableLoad {
            db,
            _writer: lock,
            def,
            heap,
            writer,
            layout,
            new_table,
            replaces: None,
            new_indexes: vec![],
            appended: 0,
            scratch: Vec::new(),
            side: None,
            retire: None,
            deletes: None,
            column_entries: Vec::new(),
        };
        for s in indexes {
            load.add_index(s)?;
        }
        Ok(load)
    }

    /// A load that writes `def`'s rows into a new heap (`def.heap_file`,
    /// created here) that replaces `old`'s at commit: the rewrite of compact,
    /// split and ALTER TABLE.
    pub(crate) fn replacing(
        db: &'a Database,
        lock: parking_lot::MutexGuard<'a, ()>,
        def: TableDef,
        old: Arc<Table>,
    ) -> Result<TableLoad<'a>> {
        let heap = Arc::new(HeapFile::create(
            db.pool().clone(),
            &db.dir().join(&def.heap_file),
            &def.name,
            def.segment_pages,
            def.fill_factor,
        )?);
        let mut load = TableLoad::new(db, lock, def, heap, false, vec![])?;
        load.replaces = Some(old);
        Ok(load)
    }

    /// The entries (key, `Tid::of_position`) of the column part's rows for
    /// index `index`, sorted: the commit builds the index's tree over the
    /// part from them. The writer of a new part gives them for every index;
    /// a load that keeps the part keeps its trees.
    pub fn set_column_entries(&mut self, index: &str, entries: SortedEntries) {
        self.column_entries
            .retain(|(n, _)| !n.eq_ignore_ascii_case(index));
        self.column_entries.push((index.to_string(), entries));
    }

    /// The column part the table has after this load's commit (set by a
    /// rewrite, [`Database::begin_rewrite`], once its files are durable).
    pub fn set_columns(&mut self, columns: Option<crate::catalog::ColumnsDef>) {
        self.def.columns = columns;
    }

    /// The table this load creates is columnar (`strata-columns`): its rows
    /// go to the heap, the delta, until a conversion moves them to columns.
    /// Its indexes must be ones a columnar table takes
    /// ([`columnar_index_refusal`]).
    pub fn columnar(&mut self) -> Result<()> {
        if !self.new_table {
            return Err(StorageError::Schema(format!(
                "table {} exists; `strata compact --format columns {}` converts it",
                self.def.name, self.def.name
            )));
        }
        if let Some(e) = self
            .new_indexes
            .iter()
            .find_map(|i| columnar_index_refusal(&self.def.name, &i.name, i.unique, &i.cache))
        {
            return Err(e);
        }
        self.def.columns = Some(Default::default());
        Ok(())
    }

    /// The table's side columns go to `heap`, the heap of side table `def`
    /// (appending after its committed pages, or a new heap).
    pub(crate) fn set_side(&mut self, def: TableDef, heap: Arc<HeapFile>) -> Result<()> {
        let layout = RowLayout::encoded(&def.schema, &def.encodings)?;
        heap.set_tuple_shape(crate::row::shape::TupleShape::of_layout(
            &def.schema,
            &layout,
        ));
        let cols = (0..self.def.schema.len())
            .filter(|&c| self.layout.is_side(c))
            .collect();
        self.side = Some(SideLoad {
            writer: Some(heap.writer()),
            def,
            heap,
            layout,
            cols,
            appended: 0,
            replaces: None,
        });
        Ok(())
    }

    /// The side table's new heap replaces `old`'s at commit; without a
    /// side part in this load, `old` goes (the table is no longer split).
    pub(crate) fn side_replaces(&mut self, old: Arc<Table>) {
        match &mut self.side {
            Some(s) => s.replaces = Some(old),
            None => self.retire = Some(old),
        }
    }

    /// Also build this index at commit.
    pub fn add_index(&mut self, spec: IndexSpec) -> Result<()> {
        if self.def.columns.is_some()
            && let Some(e) =
                columnar_index_refusal(&self.def.name, &spec.name, spec.unique, &spec.cache)
        {
            return Err(e);
        }
        validate_name(&spec.name, "index")?;
        if spec.columns.is_empty() {
            return Err(StorageError::Index {
                index: spec.name,
                reason: "needs at least one column".into(),
            });
        }
        if !crate::catalog::LEAF_FILLS.contains(&spec.leaf_fill) {
            return Err(StorageError::Index {
                index: spec.name,
                reason: format!("leaf fill {} is outside 0.1..=1.0", spec.leaf_fill),
            });
        }
        let (key_cols, _) = resolve_columns(&self.def, &spec.columns)?;
        if let Some(&c) = key_cols
            .iter()
            .find(|&&c| self.def.encodings.get(c) == Some(&crate::row::encoding::Encoding::Address))
        {
            return Err(StorageError::Index {
                index: spec.name,
                reason: format!(
                    "column {} is a semantic id (the tuple's address): a lookup by it reads its tuple directly, without an index",
                    self.def.schema.columns[c].name
                ),
            });
        }
        // The cached columns are checked now, before anything is built.
        let fields = CachedFields::new(
            &self.def.name,
            &spec.name,
            &self.def.schema,
            &key_cols,
            &spec.cache,
        )?;
        if let Some(&c) = key_cols
            .iter()
            .chain(&fields.cols)
            .find(|&&c| self.layout.is_side(c))
        {
            return Err(side_column_in_index(
                &spec.name,
                &self.def.schema.columns[c].name,
            ));
        }
        let cat = self.db.catalog.lock();
        let taken = cat
            .tables
            .values()
            .flat_map(|t| &t.indexes)
            .any(|i| i.name.eq_ignore_ascii_case(&spec.name))
            || self
                .def
                .indexes
                .iter()
                .any(|i| i.name.eq_ignore_ascii_case(&spec.name))
            || self
                .new_indexes
                .iter()
                .any(|i| i.name.eq_ignore_ascii_case(&spec.name));
        if taken {
            return Err(StorageError::IndexExists(spec.name));
        }
        self.new_indexes.push(spec);
        Ok(())
    }

    pub fn schema(&self) -> &Schema {
        &self.def.schema
    }

    /// Rows appended so far.
    pub fn appended(&self) -> u64 {
        self.appended
    }

    /// Appends one row (checked against the schema).
    pub fn append(&mut self, row: &[Value]) -> Result<Tid> {
        self.scratch.clear();
        match &mut self.side {
            None => self
                .layout
                .encode(row, &mut self.scratch, &self.def.schema)?,
            Some(side) => {
                if row.len() != self.def.schema.len() {
                    return Err(StorageError::Schema(format!(
                        "row has {} values, table has {} columns",
                        row.len(),
                        self.def.schema.len()
                    )));
                }
                // Both rows are checked before either is written.
                let side_row: Vec<Value> = side.cols.iter().map(|&c| row[c].clone()).collect();
                let mut side_bytes = Vec::new();
                side.layout
                    .encode(&side_row, &mut side_bytes, &side.def.schema)?;
                let main_row = |side_tid: Tid| {
                    let mut out = row.to_vec();
                    for (i, &c) in side.cols.iter().enumerate() {
                        out[c] = if i == 0 {
                            Value::Int64(crate::row::encoding::address_of(side_tid))
                        } else {
                            Value::Null
                        };
                    }
                    out
                };
                self.layout.encode(
                    &main_row(Tid::new(0, 0)),
                    &mut self.scratch,
                    &self.def.schema,
                )?;
                let side_tid = side
                    .writer
                    .as_mut()
                    .expect("writer lives until commit")
                    .append(&side_bytes)?;
                side.appended += 1;
                self.scratch.clear();
                self.layout
                    .encode(&main_row(side_tid), &mut self.scratch, &self.def.schema)?;
            }
        }
        let tid = self
            .writer
            .as_mut()
            .expect("writer lives until commit")
            .append(&self.scratch)?;
        self.appended += 1;
        Ok(tid)
    }

    /// Appends every row of `old` (joined, in heap order) and commits: the
    /// rewrite of a compaction or a split.
    pub(crate) fn rewrite(mut self, old: &Table, progress: &dyn Progress) -> Result<LoadSummary> {
        let rows = old.rows();
        progress.phase(&format!("rewrite {}", old.name()), rows);
        old.scan_rows(|_, row| {
            self.append(&row)?;
            Ok(())
        })?;
        progress.advance(rows);
        self.commit(progress)
    }

    /// Makes the load durable and visible: heap pages fsynced, every index of the
    /// table (re)built into new files and fsynced, then the catalog swapped.
    pub fn commit(mut self, progress: &dyn Progress) -> Result<LoadSummary> {
        let db = self.db;
        self.writer.take().expect("commit once").finish()?;
        self.heap.flush()?;
        if let Some(s) = &mut self.side {
            s.writer.take().expect("commit once").finish()?;
            s.heap.flush()?;
        }

        // Every index of the table is rebuilt over the whole heap into a new file.
        let mut specs: Vec<IndexSpec> = self
            .def
            .indexes
            .iter()
            .map(|i| IndexSpec {
                name: i.name.clone(),
                columns: i.columns.clone(),
                leaf_fill: i.leaf_fill,
                cache: i.cache.clone(),
                unique: i.unique,
            })
            .collect();
        specs.extend(self.new_indexes.iter().cloned());
        let mut new_defs = Vec::new();
        let mut built = Vec::new();
        for spec in &specs {
            let file = db
                .catalog
                .lock()
                .new_file_name(&format!("{}.{}.idx", self.def.name, spec.name));
            let (key_cols, key_types) = resolve_columns(&self.def, &spec.columns)?;
            let entries =
                SortedEntries::collect(&self.heap, &self.layout, &key_cols, &key_types, progress)?;
            if spec.unique {
                entries.check_unique(&key_types, |key| StorageError::Unique {
                    index: spec.name.clone(),
                    table: self.def.name.clone(),
                    columns: spec.columns.join(", "),
                    key,
                    why: "appears in more than one row",
                })?;
            }
            let btree = BTree::create(
                db.pool.clone(),
                &db.dir.join(&file),
                &spec.name,
                key_types,
                self.def.segment_pages,
            )?;
            progress.phase(&format!("build index {}", spec.name), entries.len() as u64);
            btree.bulk_build(entries.iter(), spec.leaf_fill)?;
            progress.advance(entries.len() as u64);
            btree.flush()?;
            new_defs.push(IndexDef {
                name: spec.name.clone(),
                columns: spec.columns.clone(),
                file,
                leaf_fill: spec.leaf_fill,
                entries: entries.len() as u64,
                cache: spec.cache.clone(),
                // A load rebuilds the indexes and drops hot partitions (its rows
                // may repeat a hot key); the next clustering makes them again.
                hot: None,
                unique: spec.unique,
            });
            built.push(btree);
        }
        let column_trees = self.column_trees(&specs, progress)?;
        sync_dir(&db.dir.join("data"))?;

        let old_indexes = std::mem::take(&mut self.def.indexes);
        if let (Some(c), Some(d)) = (self.def.columns.as_mut(), &self.deletes) {
            c.deleted = Some(d.file.clone());
        }
        if let Some(c) = self.def.columns.as_mut() {
            c.indexes = column_trees
                .iter()
                .flatten()
                .map(|(d, _)| d.clone())
                .collect();
        }
        let mut def = self.def.clone();
        def.pages = self.heap.num_pages();
        def.rows += self.appended;
        def.indexes = new_defs;
        let side_def = self.side.as_ref().map(|s| {
            let mut d = s.def.clone();
            d.pages = s.heap.num_pages();
            d.rows += s.appended;
            d
        });
        {
            let mut cat = db.catalog.lock();
            if self.new_table && cat.tables.contains_key(&def.name) {
                return Err(StorageError::TableExists(def.name.clone()));
            }
            let mut next = cat.clone();
            next.tables.insert(def.name.clone(), def.clone());
            // A table that is no longer split loses its side table here
            // (`split.rs`): the same swap.
            if let Some(old) = cat.tables.get(&def.name).and_then(|o| o.side.clone())
                && def.side.as_ref() != Some(&old)
            {
                next.tables.remove(&old);
            }
            if let Some(d) = &side_def {
                next.tables.insert(d.name.clone(), d.clone());
            }
            next.save(&db.dir)?;
            *cat = next;
        }
        // The side table's new handle, which the table's points to.
        let side = match (&self.side, &side_def) {
            (Some(s), Some(d)) => {
                let heat = db
                    .tables
                    .lock()
                    .get(&d.name)
                    .filter(|_| s.replaces.is_none())
                    .map(|t| t.heat.clone())
                    .unwrap_or_else(|| {
                        Arc::new(super::heat::AccessCounts::load(
                            &super::heat::AccessCounts::path_of(&db.dir.join(&d.heap_file)),
                        ))
                    });
                let t = Arc::new(Table {
                    name: d.name.clone(),
                    schema: d.schema.clone(),
                    layout: s.layout.clone(),
                    heap: s.heap.clone(),
                    heap_file: d.heap_file.clone(),
                    indexes: vec![],
                    rows: AtomicU64::new(d.rows),
                    committed: Mutex::new((d.pages, d.rows)),
                    segment_pages: d.segment_pages,
                    owner: db.owner.clone(),
                    cold: false,
                    heat,
                    side: None,
                    columns: None,
                    deleted: None,
                });
                db.tables.lock().insert(d.name.clone(), t.clone());
                Some(SidePart::of(&self.layout, t))
            }
            _ => None,
        };
        // Committed: the open table now uses the new indexes (and the same heap);
        // the old index files go.
        let mut indexes = Vec::new();
        for ((idef, btree), tree) in def.indexes.iter().zip(built).zip(column_trees) {
            let (key_cols, key_types) = resolve_columns(&def, &idef.columns)?;
            let mut ix = Index::new(
                idef.clone(),
                &def.schema,
                &def.name,
                key_cols,
                key_types,
                btree,
            )?;
            ix.column_tree = tree.map(|(_, t)| t);
            indexes.push(ix);
        }
        // The counts go on (a load appends; tids stay where they were), but
        // not over a rewritten heap, whose tids are new.
        let heat = db
            .tables
            .lock()
            .get(&def.name)
            .filter(|_| self.replaces.is_none())
            .map(|t| t.heat.clone())
            .unwrap_or_else(|| {
                Arc::new(super::heat::AccessCounts::load(
                    &super::heat::AccessCounts::path_of(&db.dir.join(&def.heap_file)),
                ))
            });
        // A rewrite into columns starts a new delete set; a load into a
        // columnar table keeps the one it has; a row table has none.
        let kept_deletes = self.deletes.is_none() && self.replaces.is_none();
        let deleted = match &self.deletes {
            Some(d) => Some(d.clone()),
            None if kept_deletes && def.columns.is_some() => db
                .tables
                .lock()
                .get(&def.name)
                .and_then(|t| t.deleted.clone()),
            None => None,
        };
        let table = Arc::new(Table {
            name: def.name.clone(),
            schema: def.schema.clone(),
            layout: self.layout.clone(),
            heap: self.heap.clone(),
            heap_file: def.heap_file.clone(),
            indexes,
            rows: AtomicU64::new(def.rows),
            committed: Mutex::new((def.pages, def.rows)),
            segment_pages: def.segment_pages,
            owner: db.owner.clone(),
            // Loads are refused on cold tables (`begin_load`).
            cold: false,
            heat,
            side,
            columns: def.columns.clone(),
            deleted: deleted.clone(),
        });
        let old_columns = db
            .tables
            .lock()
            .get(&def.name)
            .and_then(|t| t.columns.clone());
        if let Some(old) = db.tables.lock().insert(def.name.clone(), table) {
            for i in old.trees() {
                // A load into a columnar table keeps its delete set, and the
                // column trees of its indexes.
                if matches!(i, super::index::TreeRef::Deleted(_)) && kept_deletes {
                    continue;
                }
                if matches!(i, super::index::TreeRef::Columns(_))
                    && def
                        .columns
                        .iter()
                        .flat_map(|c| &c.indexes)
                        .any(|c| c.file == i.file())
                {
                    continue;
                }
                db.pool.discard_file(i.btree().file_id())?;
                db.device.close(i.btree().file_id());
            }
        }
        let side_replaces = self.side.as_mut().and_then(|s| s.replaces.take());
        if let Some(old) = &self.retire {
            db.tables.lock().remove(old.name());
        }
        for old in self
            .replaces
            .take()
            .into_iter()
            .chain(side_replaces)
            .chain(self.retire.take())
        {
            db.pool.discard_file(old.heap.file_id())?;
            db.device.close(old.heap.file_id());
            let old_heap = db.dir.join(&old.heap_file);
            remove_files(&db.dir, &old.heap_file)?;
            let _ = std::fs::remove_file(super::heat::AccessCounts::path_of(&old_heap));
        }
        // A conversion or a merge of the delta replaced the column files.
        for f in old_columns.iter().flat_map(|c| &c.files) {
            if !def
                .columns
                .iter()
                .flat_map(|c| &c.files)
                .any(|n| n.file == f.file)
            {
                super::database::remove_column_file(&db.dir, &f.file)?;
            }
        }
        if let Some(d) = old_columns.as_ref().and_then(|c| c.deleted.as_ref())
            && !kept_deletes
        {
            remove_files(&db.dir, d)?;
        }
        for t in old_columns.iter().flat_map(|c| &c.indexes) {
            if !def
                .columns
                .iter()
                .flat_map(|c| &c.indexes)
                .any(|n| n.file == t.file)
            {
                remove_files(&db.dir, &t.file)?;
            }
        }
        for i in &old_indexes {
            remove_files(&db.dir, &i.file)?;
            if let Some(h) = &i.hot {
                remove_files(&db.dir, &h.file)?;
            }
        }
        let summary = LoadSummary {
            rows_appended: self.appended,
            rows_total: def.rows,
            pages_total: def.pages,
            indexes_built: def.indexes.len(),
        };
        self.appended = 0;
        self.new_table = false;
        if let Some(s) = &mut self.side {
            s.appended = 0;
        }
        Ok(summary)
    }
}

impl TableLoad<'_> {
    /// Each index's tree over the column part the table has after this
    /// load (parallel to `specs`; `None` for a row table or an empty part):
    /// built from the entries the part's writer gave, or kept from the
    /// table as it is when this load keeps its part. Built trees are
    /// flushed; the catalog names them at the swap.
    #[allow(clippy::type_complexity)]
    fn column_trees(
        &mut self,
        specs: &[IndexSpec],
        progress: &dyn Progress,
    ) -> Result<Vec<Option<(ColumnIndexDef, Arc<ColumnTree>)>>> {
        let db = self.db;
        let Some(part) = self.def.columns.clone() else {
            return Ok(specs.iter().map(|_| None).collect());
        };
        let old = db.tables.lock().get(&self.def.name).cloned();
        let part_kept = self.replaces.is_none();
        let mut out = Vec::with_capacity(specs.len());
        for spec in specs {
            let given = self
                .column_entries
                .iter()
                .position(|(n, _)| n.eq_ignore_ascii_case(&spec.name))
                .map(|at| self.column_entries.swap_remove(at).1);
            if let Some(entries) = given {
                let file = db
                    .catalog
                    .lock()
                    .new_file_name(&format!("{}.{}.cidx", self.def.name, spec.name));
                let (_, key_types) = resolve_columns(&self.def, &spec.columns)?;
                let btree = BTree::create(
                    db.pool.clone(),
                    &db.dir.join(&file),
                    &super::index::column_tree_name(&spec.name),
                    key_types,
                    self.def.segment_pages,
                )?;
                progress.phase(
                    &format!("build index {} over the column rows", spec.name),
                    entries.len() as u64,
                );
                btree.bulk_build(entries.iter(), spec.leaf_fill)?;
                progress.advance(entries.len() as u64);
                btree.flush()?;
                let def = ColumnIndexDef {
                    index: spec.name.clone(),
                    file: file.clone(),
                    entries: entries.len() as u64,
                };
                out.push(Some((def, Arc::new(ColumnTree { file, btree }))));
                continue;
            }
            let kept = part_kept
                .then(|| {
                    let old = old.as_ref()?;
                    let tree = old
                        .indexes
                        .iter()
                        .find(|i| i.def.name.eq_ignore_ascii_case(&spec.name))?
                        .column_tree
                        .clone()?;
                    let def = old.columns.as_ref()?.index_tree(&spec.name)?.clone();
                    Some((def, tree))
                })
                .flatten();
            match kept {
                Some(k) => out.push(Some(k)),
                None if part.rows() == 0 => out.push(None),
                None => {
                    return Err(StorageError::Index {
                        index: spec.name.clone(),
                        reason: format!(
                            "table {} is columnar and the entries of its {} column rows were not given; \
                             an index of a columnar table is built by strata-columns (`CREATE INDEX`, \
                             `strata index create`)",
                            self.def.name,
                            part.rows()
                        ),
                    });
                }
            }
        }
        Ok(out)
    }
}

/// Why a columnar table cannot take index `index` (unique, or caching
/// `cache`), if it cannot: a unique index would have to check the column
/// part's rows on every insert into the delta, and an index cache (No Bits
/// Left Behind §2.1) lives in heap-tid leaves.
pub(crate) fn columnar_index_refusal(
    table: &str,
    index: &str,
    unique: bool,
    cache: &[String],
) -> Option<StorageError> {
    if unique {
        Some(columnar_refused(
            table,
            &format!("a unique index ({index}, or a PRIMARY KEY or UNIQUE constraint)"),
        ))
    } else if !cache.is_empty() {
        Some(columnar_refused(
            table,
            &format!("an index cache (index {index})"),
        ))
    } else {
        None
    }
}

impl Drop for TableLoad<'_> {
    /// An uncommitted load gives its pages back (a new table's files are removed
    /// at the next read-write open if this process dies first).
    fn drop(&mut self) {
        let dev = self.db.device();
        if self.writer.is_some() || self.appended > 0 {
            let committed = self.def.pages;
            self.db.pool.discard_from(self.heap.file_id(), committed);
            let _ = dev.truncate(self.heap.file_id(), committed);
            self.heap.reset_pages(committed);
        }
        if let Some(s) = &self.side
            && (s.writer.is_some() || s.appended > 0)
        {
            let committed = s.def.pages;
            self.db.pool.discard_from(s.heap.file_id(), committed);
            let _ = dev.truncate(s.heap.file_id(), committed);
            s.heap.reset_pages(committed);
        }
    }
}

impl Database {
    /// Table `name` for a load or a rewrite: the writer lock taken, the log
    /// checkpointed (the catalog then holds every table's size as of the
    /// log's end, which the load's catalog swap keeps), the open table and
    /// its definition; a cold table and a side table are refused.
    fn table_to_load(
        &self,
        name: &str,
    ) -> Result<(parking_lot::MutexGuard<'_, ()>, Arc<Table>, TableDef)> {
        self.writable()?;
        let writer = self.writer.lock();
        self.checkpoint_locked()?;
        let table = self.table(name)?;
        if table.is_cold() {
            return Err(cold_read_only(name));
        }
        let def = self.catalog.lock().table(name)?.clone();
        if let Some(owner) = &def.side_of {
            return Err(side_table_refused(name, owner));
        }
        Ok((writer, table, def))
    }

    /// Starts the rewrite of table `name` into a new, empty heap — the
    /// catalog swap of a conversion (`strata-columns`): to a columnar table
    /// (`columnar`), whose new column files the caller writes (durably) and
    /// names with [`TableLoad::set_columns`], or to a row table, whose rows
    /// the caller appends. The old heap and the old column files not kept go
    /// at commit; until then the table reads as before.
    pub fn begin_rewrite(&self, name: &str, columnar: bool) -> Result<(TableLoad<'_>, Arc<Table>)> {
        let (writer, table, mut def) = self.table_to_load(name)?;
        if columnar {
            if let Some(e) = def
                .indexes
                .iter()
                .find_map(|i| columnar_index_refusal(name, &i.name, i.unique, &i.cache))
            {
                return Err(e);
            }
            if def.side.is_some() {
                return Err(columnar_refused(name, "its side table (`strata split`)"));
            }
        }
        def.heap_file = self.catalog.lock().new_file_name(&format!("{name}.heap"));
        def.pages = 0;
        def.rows = 0;
        def.hot_region = None;
        def.columns = columnar.then(Default::default);
        let segment_pages = def.segment_pages;
        let mut load = TableLoad::replacing(self, writer, def, table.clone())?;
        if columnar {
            // An orphan until the commit names it (the next open removes it).
            let file = self
                .catalog
                .lock()
                .new_file_name(&format!("{name}.deleted"));
            load.deletes = Some(Arc::new(super::deletes::DeleteSet::create(
                self.pool.clone(),
                &self.dir,
                file,
                name,
                segment_pages,
            )?));
        }
        Ok((load, table))
    }

    /// A new file name for a column file of table `table` (`data/…`, to which
    /// the caller adds its extension).
    pub fn new_column_file_name(&self, table: &str) -> String {
        self.catalog.lock().new_file_name(&format!("{table}.cols"))
    }

    /// Creates an empty table and commits it.
    pub fn create_table(&self, name: &str, schema: Schema, opts: TableOptions) -> Result<()> {
        let load = self.begin_create_load(name, schema, opts, vec![])?;
        load.commit(&NoProgress)?;
        Ok(())
    }

    /// Starts a load that creates table `name` with `indexes`; nothing is visible
    /// until [`TableLoad::commit`].
    pub fn begin_create_load(
        &self,
        name: &str,
        schema: Schema,
        opts: TableOptions,
        indexes: Vec<IndexSpec>,
    ) -> Result<TableLoad<'_>> {
        self.writable()?;
        validate_name(name, "table")?;
        let writer = self.writer.lock();
        self.checkpoint_locked()?;
        if !crate::catalog::FILL_FACTORS.contains(&opts.fill_factor) {
            return Err(StorageError::Schema(format!(
                "fill factor {} is outside 0.05..=1.0",
                opts.fill_factor
            )));
        }
        if opts.segment_pages == 0 {
            return Err(StorageError::Schema(
                "segment size must be at least one page".into(),
            ));
        }
        let heap_file = {
            let mut cat = self.catalog.lock();
            if cat.tables.contains_key(name) {
                return Err(StorageError::TableExists(name.to_string()));
            }
            if let Some(v) = cat.views.keys().find(|v| v.eq_ignore_ascii_case(name)) {
                return Err(StorageError::ViewExists(v.clone()));
            }
            cat.new_file_name(&format!("{name}.heap"))
        };
        let def = TableDef {
            name: name.to_string(),
            schema,
            heap_file,
            segment_pages: opts.segment_pages,
            fill_factor: opts.fill_factor,
            pages: 0,
            rows: 0,
            indexes: vec![],
            stats: None,
            hot_region: None,
            encodings: vec![],
            side: None,
            side_of: None,
            columns: None,
        };
        let heap = Arc::new(HeapFile::create(
            self.pool.clone(),
            &self.dir.join(&def.heap_file),
            name,
            def.segment_pages,
            def.fill_factor,
        )?);
        heap.set_tuple_shape(crate::row::shape::TupleShape::new(&def.schema));
        TableLoad::new(self, writer, def, heap, true, indexes)
    }

    /// Starts a load that appends to an existing table.
    pub fn begin_load(&self, name: &str) -> Result<TableLoad<'_>> {
        let (writer, table, def) = self.table_to_load(name)?;
        let mut load = TableLoad::new(self, writer, def, table.heap.clone(), false, vec![])?;
        if let Some(s) = &table.side {
            let side_def = self.catalog.lock().table(s.table.name())?.clone();
            load.set_side(side_def, s.table.heap.clone())?;
        }
        Ok(load)
    }

    /// Builds a new index over an existing table and commits it.
    pub fn create_index(
        &self,
        table: &str,
        spec: IndexSpec,
        progress: &dyn Progress,
    ) -> Result<()> {
        let mut load = self.begin_load(table)?;
        load.add_index(spec)?;
        load.commit(progress)?;
        Ok(())
    }
}
