//! [`Index`]: an open B+-tree index of a table, with its cached fields, its
//! pending cache changes and its hot partition.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::btree::BTree;
use crate::btree::cache::fields::CachedFields;
use crate::btree::cache::governor::CacheGovernor;
use crate::catalog::{HotDef, IndexDef, TableDef};
use crate::error::{Result, StorageError};
use crate::row::{DataType, RowLayout, Schema, Tid, Value, encode_key};

/// A hot partition's index, open.
pub struct HotPartition {
    pub def: HotDef,
    pub btree: BTree,
}

/// What [`Table::lookup_cached`] did, summed over calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CachedLookups {
    /// Entries answered from a leaf's cache (no heap page read).
    pub hits: u64,
    /// Entries whose heap tuple was read.
    pub misses: u64,
    /// Misses whose values were cached.
    pub fills: u64,
    /// Misses whose fill was refused (stale, leaf busy, entry moved, no room).
    pub refused: u64,
    /// Entries read from the heap by the plain path, the cache untouched,
    /// because the index's governor found that the cache does not pay
    /// ([`Table::lookup_cached_auto`], `btree/cache/governor.rs`).
    pub plain: u64,
}

/// An open B+-tree index over some columns of a table.
pub struct Index {
    pub def: IndexDef,
    /// Positions of the key columns in the table.
    pub key_cols: Vec<usize>,
    pub key_types: Vec<DataType>,
    pub btree: BTree,
    /// The columns cached in the leaves' free space (None: no cache).
    pub(super) cached: parking_lot::RwLock<Option<Arc<CachedFields>>>,
    /// Tids whose cached fields the running write transaction changed, or
    /// whose rows it deleted: its commit appends predicates on them to the
    /// tree's log (No Bits Left Behind §2.1.2) around the publish.
    pub(super) pending: Mutex<Vec<Tid>>,
    /// The hot partition's index (`maintenance/cluster.rs`), if there is one.
    pub(super) hot: parking_lot::RwLock<Option<Arc<super::index::HotPartition>>>,
    /// Whether lookups through [`Table::lookup_cached_auto`] use the cache.
    pub governor: CacheGovernor,
    /// On a columnar table with rows in columns: the index's tree over the
    /// column part (`ColumnsDef::indexes`), entries (key, `Tid::of_position`),
    /// immutable until the part is rewritten. `btree` then holds the delta's
    /// entries only.
    pub(super) column_tree: Option<Arc<ColumnTree>>,
}

/// An index's tree over a column part, open.
pub struct ColumnTree {
    /// Its file as the catalog names it.
    pub file: String,
    pub btree: BTree,
}

/// The name of index `index`'s tree over a column part (in errors).
pub(crate) fn column_tree_name(index: &str) -> String {
    format!("{index} (column rows)")
}

impl Index {
    pub(super) fn new(
        def: IndexDef,
        schema: &Schema,
        table: &str,
        key_cols: Vec<usize>,
        key_types: Vec<DataType>,
        btree: BTree,
    ) -> Result<Index> {
        let ix = Index {
            key_cols,
            key_types,
            btree,
            cached: parking_lot::RwLock::new(None),
            pending: Mutex::new(Vec::new()),
            hot: parking_lot::RwLock::new(None),
            governor: CacheGovernor::default(),
            column_tree: None,
            def,
        };
        let fields = CachedFields::new(table, &ix.def.name, schema, &ix.key_cols, &ix.def.cache)?;
        ix.set_cached(fields);
        Ok(ix)
    }

    /// The index's tree over a columnar table's column part, if the table
    /// has one: its entries' tids are positions (`Tid::position`), the
    /// deleted rows' among them (the delete set says which).
    pub fn column_tree(&self) -> Option<&BTree> {
        self.column_tree.as_ref().map(|t| &t.btree)
    }

    /// The hot partition's index, if `strata cluster --hot` made one.
    pub fn hot(&self) -> Option<Arc<super::index::HotPartition>> {
        self.hot.read().clone()
    }

    /// Attaches (or detaches) the hot partition; returns the one it replaces.
    pub(crate) fn set_hot(
        &self,
        h: Option<Arc<super::index::HotPartition>>,
    ) -> Option<Arc<super::index::HotPartition>> {
        std::mem::replace(&mut *self.hot.write(), h)
    }

    /// The columns this index caches, if any.
    pub fn cached_fields(&self) -> Option<Arc<CachedFields>> {
        self.cached.read().clone()
    }

    /// Sets the cached columns in memory and the tree's cache layout from
    /// them (which invalidates everything cached).
    pub(super) fn set_cached(&self, fields: CachedFields) {
        let mut c = self.cached.write();
        self.btree.set_cache_layout(fields.layout());
        *c = (!fields.cols.is_empty()).then(|| Arc::new(fields));
    }

    /// Records that the running transaction changed the cached fields of
    /// `tids` (or deleted them).
    pub(super) fn changed_cached(&self, tids: &[Tid]) {
        if self.cached.read().is_some() {
            self.pending.lock().extend_from_slice(tids);
        }
    }

    /// The encoded key of a row.
    pub fn key_of_row(&self, row: &[Value]) -> Vec<u8> {
        let vals: Vec<Value> = self.key_cols.iter().map(|&c| row[c].clone()).collect();
        let mut k = Vec::new();
        encode_key(&self.key_types, &vals, &mut k);
        k
    }

    /// The encoded key of the stored tuple at `tid`.
    pub fn key_of_tuple(&self, layout: &RowLayout, tuple: &[u8], tid: Tid, out: &mut Vec<u8>) {
        out.clear();
        for (ty, &c) in self.key_types.iter().zip(&self.key_cols) {
            crate::row::encode_key_value(ty, &layout.decode_column(tuple, c, tid), out);
        }
    }
}

pub(super) fn resolve_columns(
    def: &TableDef,
    cols: &[String],
) -> Result<(Vec<usize>, Vec<DataType>)> {
    let mut idx = Vec::new();
    for c in cols {
        let i = def
            .schema
            .index_of(c)
            .ok_or_else(|| StorageError::UnknownColumn {
                table: def.name.clone(),
                column: c.clone(),
            })?;
        idx.push(i);
    }
    let types = idx.iter().map(|&i| def.schema.columns[i].ty).collect();
    Ok((idx, types))
}

/// The error of an index over, or caching, a side column (`split.rs`).
pub(super) fn side_column_in_index(index: &str, column: &str) -> StorageError {
    StorageError::Index {
        index: index.to_string(),
        reason: format!(
            "column {column} is in the side table (strata split): an index entry is built from the table's row; strata split --merge puts it back"
        ),
    }
}

/// One B+-tree of a table: an index, or the index of its hot partition.
pub(crate) enum TreeRef<'a> {
    Index(&'a Index),
    Hot(Arc<super::index::HotPartition>),
    /// A columnar table's delete set (`deletes.rs`).
    Deleted(&'a super::deletes::DeleteSet),
    /// An index's tree over a columnar table's column part.
    Columns(&'a ColumnTree),
}

impl TreeRef<'_> {
    pub(crate) fn btree(&self) -> &BTree {
        match self {
            TreeRef::Index(i) => &i.btree,
            TreeRef::Hot(h) => &h.btree,
            TreeRef::Deleted(d) => &d.btree,
            TreeRef::Columns(t) => &t.btree,
        }
    }

    /// Its file as the catalog names it.
    pub(crate) fn file(&self) -> &str {
        match self {
            TreeRef::Index(i) => &i.def.file,
            TreeRef::Hot(h) => &h.def.file,
            TreeRef::Deleted(d) => &d.file,
            TreeRef::Columns(t) => &t.file,
        }
    }
}

impl Index {
    /// Inserts the entry into the hot partition too if its key is hot there.
    pub(crate) fn hot_insert(&self, key: &[u8], tid: Tid) -> Result<()> {
        if let Some(h) = self.hot()
            && !h.btree.lookup(key)?.is_empty()
        {
            h.btree.insert(key, tid)?;
        }
        Ok(())
    }

    /// The entry `(old_key, old)` became `(new_key, new)` in the full index
    /// (an update, or a move): the hot partition follows. A tuple that was hot
    /// stays hot when its key stays; a new key is hot only if it already was.
    pub(crate) fn hot_replace(
        &self,
        old_key: &[u8],
        old: Tid,
        new_key: &[u8],
        new: Tid,
    ) -> Result<()> {
        if let Some(h) = self.hot() {
            let was = h.btree.delete(old_key, old)?;
            if (was && old_key == new_key) || !h.btree.lookup(new_key)?.is_empty() {
                h.btree.insert(new_key, new)?;
            }
        }
        Ok(())
    }

    /// The entries of `key` (a full encoded key) from the hot partition, when
    /// it holds the key — then it holds all of them. `None` otherwise.
    pub fn hot_entries(&self, key: &[u8]) -> Result<Option<Vec<Tid>>> {
        let Some(h) = self.hot() else {
            return Ok(None);
        };
        let tids = h.btree.lookup(key)?;
        Ok((!tids.is_empty()).then_some(tids))
    }

    /// Deletes the entry from the hot partition if it is there.
    pub(crate) fn hot_delete(&self, key: &[u8], tid: Tid) -> Result<()> {
        if let Some(h) = self.hot() {
            h.btree.delete(key, tid)?;
        }
        Ok(())
    }
}
