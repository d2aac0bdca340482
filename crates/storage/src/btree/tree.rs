//! [`BTree`]: one index's paged file, its meta page, and creating, opening,
//! flushing and descending the tree (reads are `read.rs`, changes
//! `write.rs` and `batch.rs`, the leaf cache `cache/`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use parking_lot::RwLock;
use serde::Serialize;

use crate::buffer::{BufferPool, PageMutRef, PageRef};
use crate::device::FileId;
use crate::error::{Result, StorageError};
use crate::page::{HEADER_SIZE, PAGE_SIZE, PageKind, PageMut, PageView, SLOT_SIZE};
use crate::row::DataType;

use super::layout::*;

pub(super) const MAGIC: &[u8; 8] = b"STRBTREE";
pub(super) const FORMAT_VERSION: u32 = 1;

/// Largest entry (key + tid). An internal slot (entry + child + directory slot) then
/// takes at most a quarter of a page's usable bytes, so a full page always has at
/// least four entries and a split always leaves both halves non-empty with room for
/// the new entry.
pub const MAX_ENTRY: usize = (PAGE_SIZE - HEADER_SIZE) / 4 - SLOT_SIZE - CHILD_LEN;
/// Largest encoded key.
pub const MAX_KEY: usize = MAX_ENTRY - TID_LEN;

/// The tree's root-level facts; the in-memory copy is authoritative and page 0
/// gets it on flush. Guarded by the tree latch.
#[derive(Clone, Debug)]
pub(crate) struct Meta {
    pub(super) root: u32,
    /// 1 = the root is a leaf.
    pub(super) height: u32,
    pub(super) num_pages: u32,
    pub(super) entries: u64,
    pub(super) first_leaf: u32,
    /// Bumped by every split (not stored). An iterator that remembered a leaf's
    /// next link re-reads it when this changed, because a split of that leaf put a
    /// new page in between.
    pub(super) splits: u64,
}

/// A meta to read by: the live one under the latch, or a committed copy.
pub(super) enum MetaRead<'a> {
    Live(parking_lot::RwLockReadGuard<'a, Meta>),
    Committed(Meta),
}

impl std::ops::Deref for MetaRead<'_> {
    type Target = Meta;
    fn deref(&self) -> &Meta {
        match self {
            MetaRead::Live(g) => g,
            MetaRead::Committed(m) => m,
        }
    }
}

/// Size, shape and fill of a tree ([`BTree::stats`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BTreeStats {
    pub name: String,
    pub height: u32,
    pub entries: u64,
    pub num_pages: u64,
    pub root_page: u32,
    pub leaf_pages: u64,
    pub internal_pages: u64,
    /// Leaves without entries (left behind by deletes; there is no merging).
    pub empty_leaves: u64,
    /// Average used fraction of a leaf page (header, slot directory and entries over
    /// the page size).
    pub leaf_fill: f64,
    /// Same for internal pages (0 when there are none).
    pub internal_fill: f64,
    /// Average bytes of an entry (key + 6-byte tid).
    pub avg_entry_bytes: f64,
}

/// What a page read from the tree must be.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Node {
    Leaf,
    /// An internal page of this level (1 = its children are leaves).
    Internal(u32),
}

/// A B+-tree index over one paged file. See the module docs for the format.
pub struct BTree {
    pub(super) pool: Arc<BufferPool>,
    pub(super) file: FileId,
    pub(super) path: PathBuf,
    pub(super) name: String,
    pub(super) key_types: Vec<DataType>,
    /// The tree latch, guarding the meta too.
    pub(super) latch: RwLock<Meta>,
    /// The meta as of the last commit: what readers descend from while a write
    /// transaction changes the tree (its new root or pages are not theirs).
    pub(super) committed: parking_lot::Mutex<Meta>,
    /// Bytes of a page inserts may use before splitting (the page size; tests use a
    /// small budget to grow tall trees from few entries).
    pub(super) page_budget: usize,
    /// The index cache in the leaves' free space: layout, CSN, counters.
    pub(super) cache: super::cache::state::IndexCache,
    /// The entries and the start of the entry area (`upper`) of a node
    /// last read at each level (0 = the leaves; levels past the end share
    /// the last), packed by `pack_shape`: what the descent guesses of a node
    /// it is about to read, to start loading the slot its search will look
    /// at first and that slot's entry ([`BTree::read_node_for`]).
    pub(super) node_shape: [AtomicU32; GUESSED_LEVELS],
}

/// True for one call in 16 on each thread (the first one included).
pub(super) fn learn_now() -> bool {
    thread_local! {
        static CALLS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }
    CALLS.with(|c| {
        let k = c.get();
        c.set(k.wrapping_add(1));
        k % 16 == 0
    })
}

pub(super) fn pack_shape(n: u16, upper: u16) -> u32 {
    (n as u32) << 16 | upper as u32
}

pub(super) fn unpack_shape(x: u32) -> (u16, u16) {
    ((x >> 16) as u16, x as u16)
}

/// Levels whose node sizes the descent remembers.
pub(super) const GUESSED_LEVELS: usize = 8;

impl std::fmt::Debug for BTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = self.latch.read();
        f.debug_struct("BTree")
            .field("name", &self.name)
            .field("path", &self.path)
            .field("height", &m.height)
            .field("entries", &m.entries)
            .field("pages", &m.num_pages)
            .finish()
    }
}

// ---------------------------------------------------------------------------
// Meta page

pub(super) const META_FIXED: usize = 8 + 4 * 5 + 8 + 8 + 2;

pub(super) fn encode_meta(m: &Meta, types_json: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(META_FIXED + types_json.len());
    b.extend_from_slice(MAGIC);
    for v in [FORMAT_VERSION, m.root, m.height, m.first_leaf, m.num_pages] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&m.entries.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes()); // reserved
    b.extend_from_slice(&(types_json.len() as u16).to_le_bytes());
    b.extend_from_slice(types_json);
    b
}

pub(super) fn decode_meta(b: &[u8]) -> std::result::Result<(Meta, &[u8]), String> {
    if b.len() < META_FIXED || &b[..8] != MAGIC {
        return Err(format!(
            "bad magic: page 0 does not start with {:?}; this is not a strata B-tree file",
            std::str::from_utf8(MAGIC).unwrap_or("")
        ));
    }
    let u32_at = |i: usize| u32::from_le_bytes(b[8 + 4 * i..12 + 4 * i].try_into().unwrap());
    let version = u32_at(0);
    if version != FORMAT_VERSION {
        return Err(format!(
            "unsupported B-tree format version {version} (this build reads version {FORMAT_VERSION})"
        ));
    }
    let entries = u64::from_le_bytes(b[28..36].try_into().unwrap());
    let json_len = u16::from_le_bytes([b[44], b[45]]) as usize;
    let json = b
        .get(META_FIXED..META_FIXED + json_len)
        .ok_or("meta tuple is truncated")?;
    let m = Meta {
        root: u32_at(1),
        height: u32_at(2),
        first_leaf: u32_at(3),
        num_pages: u32_at(4),
        entries,
        splits: 0,
    };
    Ok((m, json))
}

// ---------------------------------------------------------------------------
// The tree

impl BTree {
    /// Creates an empty index in a new paged file at `path` (segments of
    /// `segment_pages` pages): a meta page and an empty root leaf, flushed.
    pub fn create(
        pool: Arc<BufferPool>,
        path: &Path,
        name: &str,
        key_types: Vec<DataType>,
        segment_pages: u64,
    ) -> Result<BTree> {
        let file = pool.device().create(path, segment_pages)?;
        let empty = Meta {
            root: 1,
            height: 1,
            num_pages: 2,
            entries: 0,
            first_leaf: 1,
            splits: 0,
        };
        let tree = BTree::over(pool, file, path, name, key_types, empty);
        tree.init_empty()?;
        tree.flush()?;
        Ok(tree)
    }

    /// Formats page 0 (meta, written properly by `write_meta`) and page 1 (an empty
    /// root leaf).
    pub(super) fn init_empty(&self) -> Result<()> {
        {
            let mut g = self.pool.create(self.file, 0)?;
            PageMut::init(&mut g, PageKind::BTreeMeta, 0);
        }
        let mut g = self.pool.create(self.file, 1)?;
        let mut pm = PageMut::init(&mut g, PageKind::BTreeLeaf, 1);
        set_leaf_siblings(&mut pm, NO_PAGE, NO_PAGE);
        Ok(())
    }

    /// Opens an existing index, validating its meta page: the magic and version, the
    /// key types it was built with (must equal `key_types`) and the page count.
    pub fn open(
        pool: Arc<BufferPool>,
        path: &Path,
        name: &str,
        key_types: Vec<DataType>,
        segment_pages: u64,
    ) -> Result<BTree> {
        let file = pool.device().open(path, segment_pages)?;
        let bad = |reason: String| StorageError::Index {
            index: name.to_string(),
            reason: format!("{}: {reason}", path.display()),
        };
        let meta = (|| -> Result<Meta> {
            let pages = pool.device().num_pages(file)?;
            if pages < 2 {
                return Err(bad(format!(
                    "the file has {pages} pages; a B-tree has at least a meta page and a root"
                )));
            }
            let g = pool.read(file, 0)?;
            let v = PageView::new(&g);
            if v.kind() != Some(PageKind::BTreeMeta) {
                return Err(bad(format!(
                    "page 0 is a {} page, not a B-tree meta page; this is not a strata B-tree file",
                    kind_name(v.kind())
                )));
            }
            let tuple = v
                .get(0)
                .ok_or_else(|| bad("the meta page is empty".into()))?;
            let (meta, json) = decode_meta(tuple).map_err(bad)?;
            let stored: Vec<DataType> = serde_json::from_slice(json)
                .map_err(|e| bad(format!("the meta page's key types are unreadable: {e}")))?;
            if stored != key_types {
                return Err(bad(format!(
                    "the index was built on key types {stored:?}, but {key_types:?} were expected"
                )));
            }
            let np = meta.num_pages as u64;
            if np < 2 || np > pages {
                return Err(bad(format!(
                    "the meta page says the tree has {np} pages but the file has {pages}"
                )));
            }
            if meta.height == 0
                || meta.height >= meta.num_pages
                || meta.root == NO_PAGE
                || meta.root >= meta.num_pages
                || meta.first_leaf == NO_PAGE
                || meta.first_leaf >= meta.num_pages
            {
                return Err(bad(format!(
                    "the meta page is inconsistent (root {}, height {}, first leaf {}, {np} pages)",
                    meta.root, meta.height, meta.first_leaf
                )));
            }
            Ok(meta)
        })();
        let meta = match meta {
            Ok(m) => m,
            Err(e) => {
                let _ = pool.discard_file(file);
                pool.device().close(file);
                return Err(e);
            }
        };
        Ok(BTree::over(pool, file, path, name, key_types, meta))
    }

    /// The tree over the open `file` whose meta is `meta`.
    pub(super) fn over(
        pool: Arc<BufferPool>,
        file: FileId,
        path: &Path,
        name: &str,
        key_types: Vec<DataType>,
        meta: Meta,
    ) -> BTree {
        BTree {
            pool,
            file,
            path: path.to_path_buf(),
            name: name.to_string(),
            key_types,
            committed: parking_lot::Mutex::new(meta.clone()),
            latch: RwLock::new(meta),
            page_budget: PAGE_SIZE,
            // A fresh CSN: nothing cached before this open is valid.
            cache: super::cache::state::IndexCache::new(),
            node_shape: Default::default(),
        }
    }

    /// Flushes the tree, drops its pages from the pool and closes its file.
    pub fn close(self) -> Result<()> {
        self.flush()?;
        self.pool.discard_file(self.file)?;
        self.pool.device().close(self.file);
        Ok(())
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn file_id(&self) -> FileId {
        self.file
    }
    pub fn key_types(&self) -> &[DataType] {
        &self.key_types
    }
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }
    /// Levels of the tree; 1 = the root is a leaf.
    pub fn height(&self) -> usize {
        self.meta().height as usize
    }
    /// Number of entries.
    pub fn len(&self) -> u64 {
        self.meta().entries
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Pages of the file, the meta page included.
    pub fn num_pages(&self) -> u64 {
        self.meta().num_pages as u64
    }
    pub fn root_page(&self) -> u32 {
        self.meta().root
    }

    pub(super) fn err(&self, reason: impl Into<String>) -> StorageError {
        StorageError::Index {
            index: self.name.clone(),
            reason: reason.into(),
        }
    }

    /// An error naming the index when `key` is too long for an entry.
    pub fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.len() > MAX_KEY {
            return Err(self.err(format!(
                "key of {} bytes is too large for an index entry (at most {MAX_KEY} bytes, about a quarter of a page)",
                key.len()
            )));
        }
        Ok(())
    }

    pub(super) fn check_node(&self, b: &[u8], page: u32, want: Node) -> Result<()> {
        let v = PageView::new(b);
        match (want, v.kind()) {
            (Node::Leaf, Some(PageKind::BTreeLeaf)) => Ok(()),
            (Node::Internal(level), Some(PageKind::BTreeInternal)) => {
                let (_, got) = internal_header(&v);
                if got == level {
                    Ok(())
                } else {
                    Err(self.err(format!(
                        "page {page} is an internal page of level {got} where level {level} was expected"
                    )))
                }
            }
            (want, k) => Err(self.err(format!(
                "page {page} is a {} page where a {} page was expected",
                kind_name(k),
                match want {
                    Node::Leaf => "B-tree leaf",
                    Node::Internal(_) => "B-tree internal",
                }
            ))),
        }
    }

    pub(super) fn check_page_no(&self, meta: &Meta, page: u32) -> Result<()> {
        if page == NO_PAGE || page >= meta.num_pages {
            return Err(self.err(format!(
                "a link points to page {page}, outside the tree's pages 1..{}",
                meta.num_pages
            )));
        }
        Ok(())
    }

    /// Pins a tree page for reading, checking that it is what the caller expects.
    pub(super) fn read_node(&self, meta: &Meta, page: u32, want: Node) -> Result<PageRef<'_>> {
        self.read_node_near(meta, page, want, &[])
    }

    /// [`read_node`](Self::read_node), with the page's lines at `near`
    /// loading as it is pinned ([`BufferPool::read_near`]).
    pub(super) fn read_node_near(
        &self,
        meta: &Meta,
        page: u32,
        want: Node,
        near: &[usize],
    ) -> Result<PageRef<'_>> {
        self.check_page_no(meta, page)?;
        let g = self.pool.read_near(self.file, page as u64, near)?;
        self.check_node(&g, page, want)?;
        Ok(g)
    }

    /// [`read_node`](Self::read_node) for a search for `target` between the
    /// bounds `bracket` the parent gave: the slot directory's line where the
    /// search will look first (guessed from the size of the last node read
    /// at this level) starts loading with the page's header, so a resident
    /// node costs the descent one cache miss before its search, not two.
    pub(super) fn read_node_for(
        &self,
        meta: &Meta,
        page: u32,
        want: Node,
        target: &[u8],
        bracket: Option<&Bracket>,
    ) -> Result<PageRef<'_>> {
        let level = match want {
            Node::Leaf => 0,
            Node::Internal(l) => (l as usize).min(GUESSED_LEVELS - 1),
        };
        let (guess, upper) = unpack_shape(self.node_shape[level].load(Ordering::Relaxed));
        // Entries written in key order sit below one another from the page's
        // end, each about (PAGE_SIZE − upper)/n bytes.
        let near = bracket
            .and_then(|b| first_probe(b, target, guess))
            .map(|s| {
                let e = (PAGE_SIZE - upper as usize) / guess.max(1) as usize;
                [
                    HEADER_SIZE + s as usize * SLOT_SIZE,
                    PAGE_SIZE.saturating_sub((s as usize + 1) * e),
                ]
            });
        let g = self.read_node_near(meta, page, want, near.as_ref().map_or(&[], |n| &n[..]))?;
        // Stored only when the guess is off by more than half a line of
        // slots, and then by one such read in 16 of a thread: in a tree whose
        // nodes differ (built by inserts), readers on other cores still keep
        // the line shared.
        let v = PageView::new(&g);
        let n = v.n_slots();
        if (n.abs_diff(guess) > 8 || v.upper().abs_diff(upper) > 256) && learn_now() {
            self.node_shape[level].store(pack_shape(n, v.upper()), Ordering::Relaxed);
        }
        Ok(g)
    }

    /// Pins a tree page for writing (marks it dirty), checking its kind.
    pub(super) fn write_node(&self, meta: &Meta, page: u32, want: Node) -> Result<PageMutRef<'_>> {
        self.check_page_no(meta, page)?;
        let g = self.pool.write(self.file, page as u64)?;
        self.check_node(&g, page, want)?;
        Ok(g)
    }

    pub(super) fn alloc(&self, meta: &mut Meta) -> Result<u32> {
        let p = meta.num_pages;
        if p == u32::MAX {
            return Err(self.err("the index file has reached 2^32 pages"));
        }
        meta.num_pages += 1;
        Ok(p)
    }

    /// Whether an item of `len` bytes (plus its slot) fits on the page within the
    /// page budget. B-tree pages never hold garbage, so used = page - free.
    pub(super) fn fits(&self, v: &PageView<'_>, len: usize) -> bool {
        let free = v.free_space();
        free >= len + SLOT_SIZE && PAGE_SIZE - free + len + SLOT_SIZE <= self.page_budget
    }

    /// Descends from the root to the leaf that holds the first entry for which
    /// `before` is false (`before` must be true on a prefix of the entry order).
    /// With `path`, records each internal page and the index of the child taken
    /// (0 = leftmost, i + 1 = the child of slot i).
    /// Descends to the leaf where `before` (true on a prefix of the
    /// separators) turns false; `target`, the key `before` compares with (or
    /// empty), steers each node's [`search`]. With `bracket`, each node's
    /// search starts from the separators its parent has around it
    /// ([`search_in`]), and the bracket ends holding the leaf's.
    pub(super) fn descend(
        &self,
        meta: &Meta,
        target: &[u8],
        mut before: impl FnMut(&[u8]) -> bool,
        mut path: Option<&mut Vec<(u32, u16)>>,
        mut bracket: Option<&mut Bracket>,
    ) -> Result<u32> {
        let mut page = meta.root;
        for level in (1..meta.height).rev() {
            let g = self.read_node_for(
                meta,
                page,
                Node::Internal(level),
                target,
                bracket.as_deref(),
            )?;
            let v = PageView::new(&g);
            let n = v.n_slots();
            let sep = |s: u16| split_slot(slot_bytes(&v, s)).0;
            let idx = match bracket.as_deref() {
                Some(b) => search_in(n, target, b, sep, |s| before(sep(s))),
                None => search(n, target, sep, |s| before(sep(s))),
            };
            if let Some(b) = bracket.as_deref_mut() {
                // The child's entries lie between the separators around it;
                // at an end of this node, this node's own bound holds.
                if idx > 0 {
                    b.lo.set(sep(idx - 1));
                }
                if idx < n {
                    b.hi.set(sep(idx));
                }
            }
            let child = self.child(meta, &v, page, idx)?;
            if let Some(p) = path.as_deref_mut() {
                p.push((page, idx));
            }
            page = child;
        }
        Ok(page)
    }

    /// Child `idx` of internal `page` (0 = leftmost, i + 1 = the child of slot
    /// i), checked: the slot holds a separator entry and a child, and the child
    /// is a page of the tree. The error names the page and slot.
    pub(super) fn child(&self, meta: &Meta, v: &PageView<'_>, page: u32, idx: u16) -> Result<u32> {
        let child = if idx == 0 {
            internal_header(v).0
        } else {
            let slot = slot_bytes(v, idx - 1);
            if slot.len() < TID_LEN + CHILD_LEN {
                return Err(self.err(format!(
                    "internal page {page} slot {} holds {} bytes, too short for a separator and a child",
                    idx - 1,
                    slot.len()
                )));
            }
            split_slot(slot).1
        };
        self.check_link(meta, page, child)?;
        Ok(child)
    }

    /// A link from `from` to `to` (a child or sibling) must name a page of the
    /// tree other than the meta page.
    pub(super) fn check_link(&self, meta: &Meta, from: u32, to: u32) -> Result<()> {
        if to == NO_PAGE || to >= meta.num_pages {
            return Err(self.err(format!(
                "page {from} links to page {to}, outside the tree's pages 1..{}",
                meta.num_pages
            )));
        }
        Ok(())
    }

    // -----------------------------------------------------------------------
    // Writes

    /// Writes the meta page, writes back the file's dirty pages and syncs the file.
    pub fn flush(&self) -> Result<()> {
        let meta = self.latch.read();
        self.write_meta(&meta)?;
        // Outside write transactions (bulk builds) the tree is committed as is.
        *self.committed.lock() = meta.clone();
        self.pool.flush_file(self.file)?;
        self.pool.device().sync(self.file)
    }

    /// Writes the meta page through the pool (a write transaction logs it with
    /// the pages it changed).
    pub(crate) fn store_meta(&self) -> Result<()> {
        let meta = self.latch.read();
        self.write_meta(&meta)
    }

    /// The meta a reader goes by: the live one, or for a reader while a write
    /// transaction runs, the one of the last commit.
    pub(super) fn meta(&self) -> MetaRead<'_> {
        if self.pool.reads_committed() {
            MetaRead::Committed(self.committed.lock().clone())
        } else {
            MetaRead::Live(self.latch.read())
        }
    }

    /// The tree as it is now becomes the committed one (its transaction commits).
    pub(crate) fn publish_meta(&self) {
        let live = self.latch.read().clone();
        *self.committed.lock() = live;
    }

    /// Reads the meta back from page 0 (after an aborted transaction put the
    /// page back as it was).
    pub(crate) fn reload_meta(&self) -> Result<()> {
        let mut meta = self.latch.write();
        let g = self.pool.read(self.file, 0)?;
        let v = PageView::new(&g);
        let tuple = v.get(0).ok_or_else(|| self.err("the meta page is empty"))?;
        let (m, _) = decode_meta(tuple).map_err(|e| self.err(e))?;
        let splits = meta.splits + 1;
        *meta = Meta { splits, ..m };
        *self.committed.lock() = meta.clone();
        Ok(())
    }

    pub(super) fn write_meta(&self, meta: &Meta) -> Result<()> {
        let json =
            serde_json::to_vec(&self.key_types).map_err(|e| self.err(format!("key types: {e}")))?;
        let tuple = encode_meta(meta, &json);
        let mut g = self.pool.write(self.file, 0)?;
        let mut pm = PageMut::init(&mut g, PageKind::BTreeMeta, 0);
        pm.push(&tuple)
            .ok_or_else(|| self.err("the key types do not fit on the meta page"))?;
        Ok(())
    }

    #[cfg(test)]
    pub(super) fn with_page_budget(mut self, bytes: usize) -> BTree {
        self.page_budget = bytes;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::{LeafIter, RangeIter};
    use crate::device::{Device, FileDevice};
    use crate::row::Tid;
    use crate::row::{Value, encode_key};
    use crate::util::proptest_cases;
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};
    use std::cmp::Ordering;
    use std::collections::BTreeMap;
    use std::ops::Bound;

    type Model = BTreeMap<(Vec<u8>, Tid), ()>;

    fn pool(frames: usize) -> Arc<BufferPool> {
        Arc::new(BufferPool::new(
            Arc::new(FileDevice::new(false)) as Arc<dyn Device>,
            frames * PAGE_SIZE,
        ))
    }

    #[test]
    fn tree_and_iterators_are_shareable() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<BTree>();
        send_sync::<RangeIter<'_>>();
        send_sync::<LeafIter<'_>>();
    }

    fn int_types() -> Vec<DataType> {
        vec![DataType::Int32]
    }
    fn comp_types() -> Vec<DataType> {
        vec![DataType::Int32, DataType::Varchar { len: 300 }]
    }

    fn int_key(v: i32) -> Vec<u8> {
        let mut out = Vec::new();
        encode_key(&int_types(), &[Value::Int32(v)], &mut out);
        out
    }
    fn comp_key(i: i32, s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        encode_key(
            &comp_types(),
            &[Value::Int32(i), Value::Str(s.into())],
            &mut out,
        );
        out
    }

    fn prefix_of(key: &[u8], b: &[u8]) -> Ordering {
        key[..key.len().min(b.len())].cmp(b)
    }

    fn model_range(
        model: &Model,
        lower: &Bound<Vec<u8>>,
        upper: &Bound<Vec<u8>>,
    ) -> Vec<(Vec<u8>, Tid)> {
        model
            .keys()
            .filter(|(k, _)| match lower {
                Bound::Unbounded => true,
                Bound::Included(b) => prefix_of(k, b) != Ordering::Less,
                Bound::Excluded(b) => prefix_of(k, b) == Ordering::Greater,
            })
            .filter(|(k, _)| match upper {
                Bound::Unbounded => true,
                Bound::Included(b) => prefix_of(k, b) != Ordering::Greater,
                Bound::Excluded(b) => prefix_of(k, b) == Ordering::Less,
            })
            .cloned()
            .collect()
    }

    fn tree_range(
        t: &BTree,
        lower: &Bound<Vec<u8>>,
        upper: &Bound<Vec<u8>>,
    ) -> Vec<(Vec<u8>, Tid)> {
        t.range(lower.clone(), upper.clone())
            .unwrap()
            .collect::<Result<Vec<_>>>()
            .unwrap()
    }

    fn all(t: &BTree) -> Vec<(Vec<u8>, Tid)> {
        tree_range(t, &Bound::Unbounded, &Bound::Unbounded)
    }

    fn leaves_concat(t: &BTree) -> Vec<(Vec<u8>, Tid)> {
        let mut out = Vec::new();
        for l in t.leaves().unwrap() {
            out.extend(l.unwrap().1);
        }
        out
    }

    fn model_vec(model: &Model) -> Vec<(Vec<u8>, Tid)> {
        model.keys().cloned().collect()
    }

    /// A key domain: index -> encoded key.
    #[derive(Clone, Copy, Debug)]
    enum Domain {
        Int,
        Composite,
    }

    const STRS: [&str; 10] = ["", "a", "a\0", "a\0b", "ab", "abc", "b", "\u{e4}", "x", "y"];

    impl Domain {
        fn key(self, i: u16) -> Vec<u8> {
            match self {
                Domain::Int => int_key(i as i32 % 60 - 20),
                Domain::Composite => {
                    let s = STRS[(i / 6) as usize % STRS.len()];
                    // Some long strings make big entries and so splits at few entries.
                    let s = if i.is_multiple_of(5) {
                        s.to_string() + &"z".repeat(40 + (i as usize % 7) * 20)
                    } else {
                        s.to_string()
                    };
                    comp_key(i as i32 % 6 - 2, &s)
                }
            }
        }
        /// A bound: a whole key, a shorter prefix of it (first column or some
        /// bytes), by `how`.
        fn bound(self, i: u16, how: u8) -> Vec<u8> {
            let k = self.key(i);
            match (self, how % 4) {
                (_, 0) | (_, 1) => k,
                (Domain::Composite, 2) => {
                    let mut out = Vec::new();
                    encode_key(
                        &[DataType::Int32],
                        &[Value::Int32(i as i32 % 6 - 2)],
                        &mut out,
                    );
                    out
                }
                _ => k[..(1 + how as usize % k.len()).min(k.len())].to_vec(),
            }
        }
        fn types(self) -> Vec<DataType> {
            match self {
                Domain::Int => int_types(),
                Domain::Composite => comp_types(),
            }
        }
        fn budget(self) -> usize {
            match self {
                Domain::Int => 200,
                Domain::Composite => 1024,
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u16, u8, u8),
        Delete(u16, u8, u8),
        DeleteExisting(usize),
        Range((u8, u16, u8), (u8, u16, u8)),
        Lookup(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        let b = || (0u8..3, 0u16..200, any::<u8>());
        prop_oneof![
            8 => (0u16..200, 0u8..4, 0u8..4).prop_map(|(k, p, s)| Op::Insert(k, p, s)),
            1 => (0u16..200, 0u8..4, 0u8..4).prop_map(|(k, p, s)| Op::Delete(k, p, s)),
            2 => any::<usize>().prop_map(Op::DeleteExisting),
            1 => (b(), b()).prop_map(|(l, u)| Op::Range(l, u)),
            1 => (0u16..200).prop_map(Op::Lookup),
        ]
    }

    fn make_bound(d: Domain, (kind, i, how): (u8, u16, u8)) -> Bound<Vec<u8>> {
        match kind {
            0 => Bound::Unbounded,
            1 => Bound::Included(d.bound(i, how)),
            _ => Bound::Excluded(d.bound(i, how)),
        }
    }

    /// Runs `ops` against a tree and the model, comparing as it goes.
    fn run_ops(d: Domain, ops: &[Op]) -> usize {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(64), &dir.path().join("i"), "idx", d.types(), 64)
            .unwrap()
            .with_page_budget(d.budget());
        let mut model = Model::new();
        for op in ops {
            match op {
                Op::Insert(k, p, s) => {
                    let (key, tid) = (d.key(*k), Tid::new(*p as u32, *s as u16));
                    let r = t.insert(&key, tid);
                    if model.insert((key, tid), ()).is_some() {
                        let e = r.unwrap_err().to_string();
                        assert!(e.contains("idx") && e.contains("already exists"), "{e}");
                    } else {
                        r.unwrap();
                    }
                }
                Op::Delete(k, p, s) => {
                    let (key, tid) = (d.key(*k), Tid::new(*p as u32, *s as u16));
                    let was = model.remove(&(key.clone(), tid)).is_some();
                    assert_eq!(t.delete(&key, tid).unwrap(), was);
                }
                Op::DeleteExisting(i) => {
                    if model.is_empty() {
                        continue;
                    }
                    let (key, tid) = model.keys().nth(i % model.len()).unwrap().clone();
                    model.remove(&(key.clone(), tid));
                    assert!(t.delete(&key, tid).unwrap());
                    assert!(!t.delete(&key, tid).unwrap());
                }
                Op::Range(l, u) => {
                    let (l, u) = (make_bound(d, *l), make_bound(d, *u));
                    assert_eq!(
                        tree_range(&t, &l, &u),
                        model_range(&model, &l, &u),
                        "range {l:?} .. {u:?}"
                    );
                }
                Op::Lookup(k) => {
                    let key = d.key(*k);
                    let want: Vec<Tid> = model
                        .keys()
                        .filter(|(mk, _)| *mk == key)
                        .map(|(_, t)| *t)
                        .collect();
                    assert_eq!(t.lookup(&key).unwrap(), want);
                }
            }
        }
        assert_eq!(t.check().unwrap(), model.len() as u64);
        assert_eq!(t.len(), model.len() as u64);
        assert_eq!(all(&t), model_vec(&model));
        assert_eq!(leaves_concat(&t), model_vec(&model));
        t.height()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(proptest_cases(32)))]

        #[test]
        fn matches_model_int_keys(ops in proptest::collection::vec(op(), 1..600)) {
            run_ops(Domain::Int, &ops);
        }

        #[test]
        fn matches_model_composite_keys(ops in proptest::collection::vec(op(), 1..400)) {
            run_ops(Domain::Composite, &ops);
        }
    }

    /// The same random workload, long enough that the tree is at least 3 levels
    /// high (so internal splits and a root split above internal pages happen).
    #[test]
    fn random_workload_grows_tall_trees() {
        for (d, seed) in [(Domain::Int, 1u64), (Domain::Composite, 2)] {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
            let ops: Vec<Op> = (0..3000)
                .map(|_| match rng.random_range(0..20) {
                    0..14 => Op::Insert(
                        rng.random_range(0..200),
                        rng.random_range(0..8),
                        rng.random_range(0..8),
                    ),
                    14..16 => Op::DeleteExisting(rng.random::<u32>() as usize),
                    16 => Op::Delete(
                        rng.random_range(0..200),
                        rng.random_range(0..8),
                        rng.random_range(0..8),
                    ),
                    17 | 18 => Op::Range(
                        (
                            rng.random_range(0..3),
                            rng.random_range(0..200),
                            rng.random(),
                        ),
                        (
                            rng.random_range(0..3),
                            rng.random_range(0..200),
                            rng.random(),
                        ),
                    ),
                    _ => Op::Lookup(rng.random_range(0..200)),
                })
                .collect();
            let h = run_ops(d, &ops);
            assert!(h >= 3, "{d:?}: height {h}");
        }
    }

    /// A point lookup reads a key's entries in place along the leaf chain: a
    /// run of one key over several leaves comes back whole and in tid order,
    /// its neighbours' entries stay out, and a key between two stored keys
    /// (or past the last) finds nothing.
    #[test]
    fn a_lookup_reads_a_run_of_one_key_across_leaves() {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(64), &dir.path().join("i"), "idx", int_types(), 64).unwrap();
        let mut want = Vec::new();
        for i in 0..4000u32 {
            let tid = Tid::new(i / 50, (i % 50) as u16);
            let k = [4, 6, 6, 6, 8][i as usize % 5];
            t.insert(&int_key(k), tid).unwrap();
            if k == 6 {
                want.push(tid);
            }
        }
        assert!(t.stats().unwrap().leaf_pages >= 6, "the run spans leaves");
        assert_eq!(t.lookup(&int_key(6)).unwrap(), want);
        assert_eq!(t.lookup(&int_key(4)).unwrap().len(), 800);
        assert_eq!(t.lookup(&int_key(8)).unwrap().len(), 800);
        for k in [3, 5, 7, 9] {
            assert!(t.lookup(&int_key(k)).unwrap().is_empty(), "{k}");
        }
    }

    /// Full-size pages: random inserts split real 8 KiB pages.
    #[test]
    fn random_inserts_full_pages() {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(64), &dir.path().join("i"), "idx", int_types(), 64).unwrap();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut model = Model::new();
        for i in 0..60_000u32 {
            let key = int_key(rng.random_range(0..5000));
            let tid = Tid::new(i / 100, (i % 100) as u16);
            t.insert(&key, tid).unwrap();
            model.insert((key, tid), ());
        }
        assert!(t.height() >= 2);
        assert_eq!(t.check().unwrap(), 60_000);
        assert_eq!(all(&t), model_vec(&model));
        let s = t.stats().unwrap();
        assert_eq!(s.entries, 60_000);
        assert!(s.leaf_fill > 0.5 && s.leaf_fill <= 1.0, "{s:?}");
        assert_eq!(s.leaf_pages + s.internal_pages + 1, s.num_pages);
        // Ascending appends keep leaves full.
        let dir2 = tempfile::tempdir().unwrap();
        let t2 = BTree::create(pool(64), &dir2.path().join("i"), "asc", int_types(), 64).unwrap();
        for i in 0..20_000 {
            t2.insert(&int_key(i), Tid::new(i as u32, 0)).unwrap();
        }
        assert_eq!(t2.check().unwrap(), 20_000);
        let s2 = t2.stats().unwrap();
        assert!(s2.leaf_fill > 0.95, "{s2:?}");
    }

    fn sorted_entries(n: usize, domain: i32, seed: u64) -> Vec<(Vec<u8>, Tid)> {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let mut v: Vec<(Vec<u8>, Tid)> = (0..n)
            .map(|i| {
                (
                    int_key(rng.random_range(0..domain)),
                    Tid::new((i / 64) as u32, (i % 64) as u16),
                )
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn bulk_build_200k_matches_model() {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(64), &dir.path().join("i"), "bulk", int_types(), 256).unwrap();
        let entries = sorted_entries(200_000, 50_000, 3);
        let model: Model = entries.iter().map(|e| (e.clone(), ())).collect();
        t.bulk_build(entries.iter().cloned(), 0.9).unwrap();
        assert_eq!(t.len(), 200_000);
        assert_eq!(t.check().unwrap(), 200_000);
        // 15-byte entries + 4-byte slots, 90% of 8 KiB: ~388 a leaf, ~516 leaves;
        // internal slots are 23 bytes, so two internal pages under a root.
        assert_eq!(t.height(), 3);
        let s = t.stats().unwrap();
        assert!((s.leaf_fill - 0.9).abs() < 0.01, "{s:?}");
        assert_eq!(s.internal_pages, 3, "{s:?}");
        let root_keys = t.level_keys(0).unwrap();
        assert_eq!(root_keys.len(), 1);
        let l1 = t.level_keys(1).unwrap();
        assert_eq!(l1.len() as u64, s.leaf_pages - 2);
        assert!(l1.windows(2).all(|w| w[0] <= w[1]));
        assert!(t.level_keys(2).unwrap().is_empty());
        assert_eq!(all(&t), entries);
        assert_eq!(leaves_concat(&t), entries);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(4);
        for _ in 0..50 {
            let mut b = || match rng.random_range(0..3) {
                0 => Bound::Unbounded,
                1 => Bound::Included(int_key(rng.random_range(-10..50_010))),
                _ => Bound::Excluded(int_key(rng.random_range(-10..50_010))),
            };
            let (l, u) = (b(), b());
            assert_eq!(tree_range(&t, &l, &u), model_range(&model, &l, &u));
        }
        // Separators within a range: those of the whole level that lie in it,
        // from the nodes over it alone; the level's size, estimated from the
        // fanout of the nodes read, is exact for the whole range.
        let whole = t.level_entries(1).unwrap();
        let (all_seps, subtrees) = t
            .level_entries_in(1, &Bound::Unbounded, &Bound::Unbounded)
            .unwrap();
        assert_eq!(all_seps, whole);
        assert_eq!(subtrees, s.leaf_pages as f64);
        for (lo, hi) in [
            (0, 50_000),
            (100, 200),
            (30_000, 30_001),
            (49_990, 60_000),
            (7, 7),
        ] {
            for (l, u) in [
                (Bound::Included(int_key(lo)), Bound::Excluded(int_key(hi))),
                (Bound::Excluded(int_key(lo)), Bound::Included(int_key(hi))),
            ] {
                let (seps, _) = t.level_entries_in(1, &l, &u).unwrap();
                let want: Vec<Vec<u8>> = whole
                    .iter()
                    .filter(|e| !before_lower(&l, e) && within_upper(&u, e))
                    .cloned()
                    .collect();
                assert_eq!(seps, want, "[{lo}, {hi}]");
            }
        }
        let k = entries[777].0.clone();
        let want: Vec<Tid> = entries
            .iter()
            .filter(|(ek, _)| *ek == k)
            .map(|(_, t)| *t)
            .collect();
        assert_eq!(t.lookup(&k).unwrap(), want);
        // The built tree takes inserts and deletes like any other.
        t.insert(&int_key(-5), Tid::new(9, 9)).unwrap();
        assert!(t.delete(&entries[0].0, entries[0].1).unwrap());
        assert_eq!(t.check().unwrap(), 200_000);
    }

    #[test]
    fn bulk_build_low_fill_is_tall_and_empty_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(32), &dir.path().join("i"), "tall", int_types(), 64).unwrap();
        let entries = sorted_entries(20_000, 1000, 5);
        t.bulk_build(entries.iter().cloned(), 0.05).unwrap();
        assert!(t.height() >= 4, "height {}", t.height());
        assert_eq!(t.check().unwrap(), 20_000);
        assert_eq!(all(&t), entries);
        for level in 0..t.height() - 1 {
            let keys = t.level_keys(level).unwrap();
            assert!(
                !keys.is_empty() && keys.windows(2).all(|w| w[0] <= w[1]),
                "level {level}"
            );
        }
        let t2 = BTree::create(pool(8), &dir.path().join("e"), "empty", int_types(), 64).unwrap();
        t2.bulk_build(std::iter::empty(), 0.9).unwrap();
        assert_eq!((t2.height(), t2.len(), t2.check().unwrap()), (1, 0, 0));
        assert!(t2.level_keys(0).unwrap().is_empty());
        assert!(all(&t2).is_empty());
    }

    #[test]
    fn bulk_build_rejects_unsorted_input() {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(16), &dir.path().join("i"), "ord", int_types(), 64).unwrap();
        let mut entries = sorted_entries(5000, 100, 6);
        entries.swap(3000, 3001);
        entries[3000].0 = int_key(1000); // surely out of order now
        let e = t
            .bulk_build(entries.iter().cloned(), 0.9)
            .unwrap_err()
            .to_string();
        assert!(e.contains("index 'ord'") && e.contains("not sorted"), "{e}");
        // Left empty and usable.
        assert_eq!((t.len(), t.height(), t.check().unwrap()), (0, 1, 0));
        let dup = vec![(int_key(1), Tid::new(1, 1)), (int_key(1), Tid::new(1, 1))];
        let e = t.bulk_build(dup.into_iter(), 0.9).unwrap_err().to_string();
        assert!(e.contains("not sorted"), "{e}");
        let good = sorted_entries(5000, 100, 6);
        t.bulk_build(good.iter().cloned(), 0.9).unwrap();
        assert_eq!(t.check().unwrap(), 5000);
        assert_eq!(all(&t), good);
        let e = t
            .bulk_build(good.iter().cloned(), 0.9)
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty index"), "{e}");
        let e = t
            .insert(&vec![1u8; MAX_KEY + 1], Tid::new(0, 0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("too large"), "{e}");
    }

    #[test]
    fn reopen_after_flush() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i");
        let mut model = Model::new();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(8);
        {
            let t = BTree::create(pool(16), &path, "re", comp_types(), 8).unwrap();
            for i in 0..5000u32 {
                let key = comp_key(
                    rng.random_range(0..100),
                    STRS[rng.random_range(0..STRS.len())],
                );
                let tid = Tid::new(i, 0);
                t.insert(&key, tid).unwrap();
                model.insert((key, tid), ());
            }
            t.flush().unwrap();
        }
        let (height, pages) = {
            let t = BTree::open(pool(16), &path, "re", comp_types(), 8).unwrap();
            assert_eq!(t.check().unwrap(), 5000);
            assert_eq!(all(&t), model_vec(&model));
            for (k, tid) in model_vec(&model).into_iter().step_by(3) {
                assert!(t.delete(&k, tid).unwrap());
                model.remove(&(k, tid));
            }
            let h = t.height();
            let n = t.num_pages();
            t.close().unwrap();
            (h, n)
        };
        let t = BTree::open(pool(16), &path, "re", comp_types(), 8).unwrap();
        assert_eq!((t.height(), t.num_pages()), (height, pages));
        assert_eq!(t.check().unwrap(), model.len() as u64);
        assert_eq!(all(&t), model_vec(&model));
        // Wrong key types are caught with the index's name.
        let e = BTree::open(pool(16), &path, "re", int_types(), 8)
            .unwrap_err()
            .to_string();
        assert!(e.contains("index 're'") && e.contains("key types"), "{e}");
    }

    /// The range estimate reads a level's nodes over the range as runs, a
    /// request per run of consecutive pages, not a random read per node.
    #[test]
    fn the_range_estimate_reads_a_bulk_built_level_in_one_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("est");
        // 250-byte keys: about 30 entries a page, so 10,000 entries make a
        // root over some 12 internal nodes over 370 leaves.
        let pad = "x".repeat(240);
        let entries: Vec<(Vec<u8>, Tid)> = (0..10_000i32)
            .map(|i| (comp_key(i, &pad), Tid::new(i as u32, 0)))
            .collect();
        let t = BTree::create(pool(4096), &path, "est", comp_types(), 1 << 16).unwrap();
        t.bulk_build(entries.into_iter(), 0.9).unwrap();
        assert_eq!(t.height(), 3);
        t.flush().unwrap();
        drop(t);
        let p = pool(4096);
        let t = BTree::open(p.clone(), &path, "est", comp_types(), 1 << 16).unwrap();
        let int = |v: i32| {
            let mut out = Vec::new();
            encode_key(&comp_types()[..1], &[Value::Int32(v)], &mut out);
            out
        };
        // 60% of the keys: fewer separators on the root than the estimate
        // wants, so it reads the internal nodes below them.
        let (lo, hi) = (Bound::Included(int(2_000)), Bound::Excluded(int(8_000)));
        let before = p.device().stats().snapshot();
        let est = t.estimate_range(&lo, &hi).unwrap();
        let read = p.device().stats().snapshot() - before;
        assert!((est - 6_000.0).abs() < 600.0, "{est}");
        assert!(read.pages_read >= 6, "{read:?}");
        assert!(read.read_requests <= 2, "{read:?}");
        let (seps, _) = t.level_entries_in(1, &lo, &hi).unwrap();
        assert!(seps.len() > 100, "{} separators", seps.len());
    }

    #[test]
    fn open_rejects_non_btree_files() {
        let dir = tempfile::tempdir().unwrap();
        let dev: Arc<dyn Device> = Arc::new(FileDevice::new(false));
        let p = Arc::new(BufferPool::new(dev.clone(), 16 * PAGE_SIZE));
        for (name, kind, tuple) in [
            ("heap", PageKind::Heap, b"hello".as_slice()),
            (
                "magic",
                PageKind::BTreeMeta,
                b"NOTATREE and more bytes to pass the length check....".as_slice(),
            ),
        ] {
            let path = dir.path().join(name);
            let f = dev.create(&path, 8).unwrap();
            for page in 0..2u64 {
                let mut g = p.create(f, page).unwrap();
                let mut pm =
                    PageMut::init(&mut g, if page == 0 { kind } else { PageKind::Heap }, page);
                pm.push(tuple).unwrap();
            }
            p.flush_file(f).unwrap();
            let e = BTree::open(p.clone(), &path, "victim", int_types(), 8)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("index 'victim'") && e.contains("not a strata B-tree"),
                "{e}"
            );
        }
    }

    /// A tree whose root points at a heap page: a clear error, not a panic.
    #[test]
    fn wrong_page_kinds_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(16), &dir.path().join("i"), "kinds", int_types(), 64).unwrap();
        t.bulk_build(sorted_entries(3000, 100, 9).into_iter(), 0.9)
            .unwrap();
        let root = t.root_page();
        {
            let mut g = t.pool.write(t.file, root as u64).unwrap();
            PageMut::init(&mut g, PageKind::Heap, root as u64);
        }
        let e = t.check().unwrap_err().to_string();
        assert!(
            e.contains("index 'kinds'") && e.contains(&format!("page {root} is a heap page")),
            "{e}"
        );
        let e = t
            .range(Bound::Included(int_key(5)), Bound::Unbounded)
            .unwrap()
            .next()
            .unwrap()
            .unwrap_err();
        assert!(e.to_string().contains("heap page"), "{e}");
        assert!(t.insert(&int_key(5), Tid::new(1, 1)).is_err());
    }

    #[test]
    fn prefix_bounds_on_a_composite_key() {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(16), &dir.path().join("i"), "pre", comp_types(), 64)
            .unwrap()
            .with_page_budget(300);
        let strs = ["", "a", "ab", "b"];
        let mut n = 0u32;
        for i in 0..5 {
            for s in strs {
                for r in 0..3 {
                    t.insert(&comp_key(i, s), Tid::new(n, r)).unwrap();
                }
                n += 1;
            }
        }
        assert!(t.height() >= 2);
        let first = |i: i32| {
            let mut out = Vec::new();
            encode_key(&[DataType::Int32], &[Value::Int32(i)], &mut out);
            out
        };
        let cols = |r: &[(Vec<u8>, Tid)]| -> Vec<(i32, String)> {
            r.iter()
                .map(|(k, _)| {
                    let (v, used) = crate::row::decode_key(&comp_types(), k);
                    assert_eq!(used, k.len());
                    match (&v[0], &v[1]) {
                        (Value::Int32(i), Value::Str(s)) => (*i, s.clone()),
                        other => panic!("{other:?}"),
                    }
                })
                .collect()
        };
        let count = |l: Bound<Vec<u8>>, u: Bound<Vec<u8>>| tree_range(&t, &l, &u);
        // [2, 3] on the first column: both values, every string, every tid.
        let r = count(Bound::Included(first(2)), Bound::Included(first(3)));
        assert_eq!(r.len(), 2 * 4 * 3);
        assert!(cols(&r).iter().all(|(i, _)| *i == 2 || *i == 3));
        // (2, 3): nothing of 2 or 3.
        assert!(count(Bound::Excluded(first(2)), Bound::Excluded(first(3))).is_empty());
        // (2, ..): 3 and 4.
        let r = count(Bound::Excluded(first(2)), Bound::Unbounded);
        assert_eq!(r.len(), 2 * 12);
        assert_eq!(cols(&r)[0], (3, String::new()));
        // [.., 1): 0 only.
        let r = count(Bound::Unbounded, Bound::Excluded(first(1)));
        assert!(cols(&r).iter().all(|(i, _)| *i == 0) && r.len() == 12);
        // Full composite bounds: [(1, "a"), (1, "b")) = "a", "ab".
        let r = count(
            Bound::Included(comp_key(1, "a")),
            Bound::Excluded(comp_key(1, "b")),
        );
        assert_eq!(
            cols(&r),
            [
                (1, "a"),
                (1, "a"),
                (1, "a"),
                (1, "ab"),
                (1, "ab"),
                (1, "ab")
            ]
            .map(|(i, s)| (i, s.to_string()))
        );
        // Included upper on a full key includes exactly that key.
        let r = count(
            Bound::Included(comp_key(4, "ab")),
            Bound::Included(comp_key(4, "ab")),
        );
        assert_eq!(r.len(), 3);
        assert_eq!(t.lookup(&comp_key(4, "ab")).unwrap().len(), 3);
        assert!(t.lookup(&comp_key(4, "abc")).unwrap().is_empty());
        // A first-column prefix plus the string's first byte (a raw byte prefix).
        let mut ka = first(1);
        ka.extend_from_slice(&[1, b'a']); // the string column's non-NULL flag, then 'a'
        let r = count(Bound::Included(ka.clone()), Bound::Included(ka));
        assert_eq!(
            cols(&r).iter().filter(|(_, s)| s.starts_with('a')).count(),
            6
        );
        assert_eq!(r.len(), 6);
    }

    /// An iterator holds no latch between steps: the same thread can write while
    /// it iterates, and splits under it neither repeat nor reorder entries.
    #[test]
    fn iterate_while_writing() {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(16), &dir.path().join("i"), "iw", int_types(), 64)
            .unwrap()
            .with_page_budget(256);
        for i in 0..500 {
            t.insert(&int_key(i * 2), Tid::new(0, 0)).unwrap();
        }
        let mut prev: Option<(Vec<u8>, Tid)> = None;
        let (mut seen, mut inserted) = (0, 0u64);
        for (i, r) in t
            .range(Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .enumerate()
        {
            let e = r.unwrap();
            assert!(prev.as_ref().is_none_or(|p| *p < e));
            prev = Some(e);
            seen += 1;
            // Odd keys everywhere, splitting leaves ahead of and behind the cursor.
            if i >= 2000 {
                continue;
            }
            inserted += 1;
            t.insert(
                &int_key(((i as i32 * 37) % 1000) | 1),
                Tid::new(1, i as u16),
            )
            .unwrap();
        }
        assert!(seen >= 500);
        assert_eq!(t.check().unwrap(), 500 + inserted);
    }

    /// Readers in other threads see a prefix of an ascending insert stream, in
    /// order, while the writer splits pages.
    #[test]
    fn concurrent_readers_and_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(32), &dir.path().join("i"), "cc", int_types(), 64)
            .unwrap()
            .with_page_budget(512);
        let n = 20_000;
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..n {
                    t.insert(&int_key(i), Tid::new(i as u32, 0)).unwrap();
                }
            });
            for r in 0..4 {
                let t = &t;
                s.spawn(move || {
                    let mut last = 0;
                    while last < n as usize {
                        let before = t.len() as usize;
                        let lower = Bound::Included(int_key(r));
                        let got: Vec<_> = t
                            .range(lower, Bound::Unbounded)
                            .unwrap()
                            .map(|x| x.unwrap())
                            .collect();
                        assert!(got.len() + r as usize >= before);
                        for (j, (k, tid)) in got.iter().enumerate() {
                            assert_eq!(*k, int_key(r + j as i32));
                            assert_eq!(tid.page, r as u32 + j as u32);
                        }
                        last = got.len() + r as usize;
                        let _ = t.lookup(&int_key(n / 2)).unwrap();
                    }
                });
            }
        });
        assert_eq!(t.check().unwrap(), n as u64);
    }

    /// A batched change for [`run_batches`]: entries by (key index, tid page,
    /// tid slot) as in [`Op`], or positions of existing entries.
    #[derive(Clone, Debug)]
    enum BatchOp {
        Insert(Vec<(u16, u8, u8)>),
        /// Entries that may or may not be there.
        Delete(Vec<(u16, u8, u8)>),
        DeleteExisting(Vec<usize>),
        /// A single-entry change in between.
        Single(Op),
    }

    fn batch_op() -> impl Strategy<Value = BatchOp> {
        let entry = || (0u16..200, 0u8..4, 0u8..4);
        prop_oneof![
            4 => proptest::collection::vec(entry(), 0..120).prop_map(BatchOp::Insert),
            1 => proptest::collection::vec(entry(), 0..60).prop_map(BatchOp::Delete),
            2 => proptest::collection::vec(any::<usize>(), 0..80).prop_map(BatchOp::DeleteExisting),
            2 => op().prop_map(BatchOp::Single),
        ]
    }

    /// Sorted, distinct entries of a batch.
    fn batch_entries(d: Domain, raw: &[(u16, u8, u8)]) -> Vec<(Vec<u8>, Tid)> {
        let set: std::collections::BTreeSet<(Vec<u8>, Tid)> = raw
            .iter()
            .map(|&(k, p, s)| (d.key(k), Tid::new(p as u32, s as u16)))
            .collect();
        set.into_iter().collect()
    }

    /// Runs batched changes (and single ones between them) against a tree and
    /// the model, checking the whole tree after each batch; returns the height.
    fn run_batches(d: Domain, ops: &[BatchOp]) -> usize {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(64), &dir.path().join("i"), "idx", d.types(), 64)
            .unwrap()
            .with_page_budget(d.budget());
        let mut model = Model::new();
        for op in ops {
            match op {
                BatchOp::Insert(raw) => {
                    let batch: Vec<_> = batch_entries(d, raw)
                        .into_iter()
                        .filter(|e| !model.contains_key(e))
                        .collect();
                    t.insert_sorted(&batch).unwrap();
                    model.extend(batch.into_iter().map(|e| (e, ())));
                }
                BatchOp::Delete(raw) => {
                    let batch = batch_entries(d, raw);
                    let there = batch.iter().filter(|e| model.remove(e).is_some()).count();
                    assert_eq!(t.delete_sorted(&batch).unwrap(), there as u64);
                }
                BatchOp::DeleteExisting(picks) => {
                    if model.is_empty() {
                        continue;
                    }
                    let keys: Vec<_> = model.keys().cloned().collect();
                    let batch: std::collections::BTreeSet<_> =
                        picks.iter().map(|i| keys[i % keys.len()].clone()).collect();
                    let batch: Vec<_> = batch.into_iter().collect();
                    for e in &batch {
                        model.remove(e);
                    }
                    assert_eq!(t.delete_sorted(&batch).unwrap(), batch.len() as u64);
                    assert_eq!(t.delete_sorted(&batch).unwrap(), 0);
                }
                BatchOp::Single(op) => match op {
                    Op::Insert(k, p, s) => {
                        let e = (d.key(*k), Tid::new(*p as u32, *s as u16));
                        let r = t.insert(&e.0, e.1);
                        assert_eq!(r.is_ok(), model.insert(e, ()).is_none());
                    }
                    Op::Delete(k, p, s) => {
                        let e = (d.key(*k), Tid::new(*p as u32, *s as u16));
                        assert_eq!(t.delete(&e.0, e.1).unwrap(), model.remove(&e).is_some());
                    }
                    Op::DeleteExisting(i) if !model.is_empty() => {
                        let e = model.keys().nth(i % model.len()).unwrap().clone();
                        model.remove(&e);
                        assert!(t.delete(&e.0, e.1).unwrap());
                    }
                    Op::Range(l, u) => {
                        let (l, u) = (make_bound(d, *l), make_bound(d, *u));
                        assert_eq!(tree_range(&t, &l, &u), model_range(&model, &l, &u));
                    }
                    _ => {}
                },
            }
            assert_eq!(t.check().unwrap(), model.len() as u64, "after {op:?}");
            assert_eq!(leaves_concat(&t), model_vec(&model));
        }
        assert_eq!(all(&t), model_vec(&model));
        t.height()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(proptest_cases(24)))]

        #[test]
        fn batches_match_model_int_keys(ops in proptest::collection::vec(batch_op(), 1..40)) {
            run_batches(Domain::Int, &ops);
        }

        #[test]
        fn batches_match_model_composite_keys(ops in proptest::collection::vec(batch_op(), 1..40)) {
            run_batches(Domain::Composite, &ops);
        }
    }

    /// Big batches grow tall trees through multi-page leaf splits and internal
    /// splits, and empty them again.
    #[test]
    fn batches_grow_and_shrink_tall_trees() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        for d in [Domain::Int, Domain::Composite] {
            let mut ops = Vec::new();
            for round in 0..12 {
                let n = rng.random_range(50..600);
                let raw = (0..n)
                    .map(|_| {
                        (
                            rng.random_range(0..200),
                            rng.random_range(0..8),
                            rng.random_range(0..8),
                        )
                    })
                    .collect();
                ops.push(BatchOp::Insert(raw));
                if round % 3 == 2 {
                    let picks = (0..rng.random_range(10..400))
                        .map(|_| rng.random::<u32>() as usize)
                        .collect();
                    ops.push(BatchOp::DeleteExisting(picks));
                }
            }
            let h = run_batches(d, &ops);
            assert!(h >= 3, "{d:?}: height {h}");
            // Everything out in one batch.
            ops.push(BatchOp::DeleteExisting((0..20_000).collect()));
            run_batches(d, &ops);
        }
    }

    /// An ascending batch at the end of the tree leaves full leaves, as
    /// single ascending inserts do; the same batch into the middle spreads its
    /// leaves evenly. Both give exactly the entries.
    #[test]
    fn ascending_batches_fill_leaves() {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(64), &dir.path().join("a"), "asc", int_types(), 64).unwrap();
        let first: Vec<_> = (0..1000)
            .map(|i| (int_key(i), Tid::new(i as u32, 0)))
            .collect();
        t.insert_sorted(&first).unwrap();
        let rest: Vec<_> = (1000..60_000)
            .map(|i| (int_key(i), Tid::new(i as u32, 0)))
            .collect();
        t.insert_sorted(&rest).unwrap();
        assert_eq!(t.check().unwrap(), 60_000);
        let s = t.stats().unwrap();
        assert!(s.leaf_fill > 0.95, "{s:?}");
        let single =
            BTree::create(pool(64), &dir.path().join("s"), "single", int_types(), 64).unwrap();
        for i in 0..60_000 {
            single.insert(&int_key(i), Tid::new(i as u32, 0)).unwrap();
        }
        assert_eq!(single.stats().unwrap().leaf_pages, s.leaf_pages);
        assert_eq!(all(&t), all(&single));
        // Into the middle: every other key first, then the rest in one batch.
        let m = BTree::create(pool(64), &dir.path().join("m"), "mid", int_types(), 64).unwrap();
        let evens: Vec<_> = (0..30_000)
            .map(|i| (int_key(2 * i), Tid::new(0, 0)))
            .collect();
        m.insert_sorted(&evens).unwrap();
        let odds: Vec<_> = (0..30_000)
            .map(|i| (int_key(2 * i + 1), Tid::new(0, 0)))
            .collect();
        m.insert_sorted(&odds).unwrap();
        assert_eq!(m.check().unwrap(), 60_000);
        let sm = m.stats().unwrap();
        assert!(sm.leaf_fill > 0.5, "{sm:?}");
        assert!(sm.leaf_pages < 2 * s.leaf_pages + 2, "{sm:?} vs {s:?}");
    }

    #[test]
    fn batches_reject_bad_input_before_changing_anything() {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(16), &dir.path().join("i"), "bad", int_types(), 64)
            .unwrap()
            .with_page_budget(200);
        let base: Vec<_> = (0..100).map(|i| (int_key(i * 2), Tid::new(1, 0))).collect();
        t.insert_sorted(&base).unwrap();
        let before = all(&t);
        let unsorted = vec![(int_key(5), Tid::new(1, 0)), (int_key(3), Tid::new(1, 0))];
        let twice = vec![(int_key(5), Tid::new(1, 0)), (int_key(5), Tid::new(1, 0))];
        for bad in [&unsorted, &twice] {
            let e = t.insert_sorted(bad).unwrap_err().to_string();
            assert!(e.contains("index 'bad'") && e.contains("not sorted"), "{e}");
            let e = t.delete_sorted(bad).unwrap_err().to_string();
            assert!(e.contains("not sorted"), "{e}");
        }
        let long = vec![(vec![1u8; MAX_KEY + 1], Tid::new(0, 0))];
        let e = t.insert_sorted(&long).unwrap_err().to_string();
        assert!(e.contains("too large"), "{e}");
        assert_eq!(t.delete_sorted(&long).unwrap(), 0);
        assert_eq!(all(&t), before);
        // An entry that is there already: an error naming it, with the tree
        // consistent and holding at most the entries before it.
        let mut dup: Vec<_> = (0..40)
            .map(|i| (int_key(i * 5 + 1), Tid::new(1, 0)))
            .collect();
        dup.push((int_key(400), Tid::new(2, 0)));
        dup.push((int_key(150), Tid::new(1, 0)));
        dup.sort();
        let e = t.insert_sorted(&dup).unwrap_err().to_string();
        assert!(e.contains("already exists"), "{e}");
        let n = t.check().unwrap();
        let got = all(&t);
        assert!(before.iter().all(|e| got.contains(e)));
        assert!(got.iter().all(|e| before.contains(e) || dup.contains(e)));
        assert!(!got.contains(&(int_key(400), Tid::new(2, 0))));
        assert_eq!(n as usize, got.len());
    }

    #[test]
    fn remove_many_is_remove_at_of_each() {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(16), &dir.path().join("i"), "rm", comp_types(), 64).unwrap();
        let entries: Vec<_> = (0..300)
            .map(|i| {
                (
                    comp_key(i, &"s".repeat(i as usize % 13)),
                    Tid::new(i as u32, 1),
                )
            })
            .collect();
        t.bulk_build(entries.into_iter(), 1.0).unwrap();
        let leaf = t.leaves().unwrap().next().unwrap().unwrap().0;
        let page = t.pool.read(t.file, leaf as u64).unwrap().to_vec();
        let n = PageView::new(&page).n_slots();
        let positions: Vec<u16> = (0..n).filter(|s| s % 3 == 0 || s % 7 == 1).collect();
        let mut one = page.clone();
        for &p in positions.iter().rev() {
            PageMut::new(&mut one).remove_at(p);
        }
        let mut many = page.clone();
        PageMut::new(&mut many).remove_many(&positions);
        assert_eq!(one, many);
    }

    #[test]
    fn leaf_free_region_is_the_gap() {
        let dir = tempfile::tempdir().unwrap();
        let t = BTree::create(pool(16), &dir.path().join("i"), "gap", int_types(), 64).unwrap();
        t.bulk_build(sorted_entries(1000, 100, 10).into_iter(), 0.5)
            .unwrap();
        for i in 0..200 {
            t.delete(&int_key(i % 100), Tid::new(0, i as u16)).unwrap();
        }
        for l in t.leaves().unwrap() {
            let (page, entries) = l.unwrap();
            let (lower, upper) = t.leaf_free_region(page).unwrap();
            assert_eq!(lower as usize, HEADER_SIZE + entries.len() * SLOT_SIZE);
            let bytes: usize = entries.iter().map(|(k, _)| k.len() + TID_LEN).sum();
            assert_eq!(upper as usize, PAGE_SIZE - bytes);
        }
        let e = t.leaf_free_region(t.root_page()).unwrap_err().to_string();
        assert!(e.contains("internal"), "{e}");
    }

    /// Scale: 10M entries bulk built through a 1 MiB pool. Run with
    /// `cargo test --release -p strata-storage bulk_build_10m -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn bulk_build_10m() {
        let dir = tempfile::tempdir().unwrap();
        let types = vec![DataType::Int64];
        let t =
            BTree::create(pool(128), &dir.path().join("i"), "big", types.clone(), 4096).unwrap();
        let n = 10_000_000u64;
        let start = std::time::Instant::now();
        let entries = (0..n).map(|i| {
            let mut k = Vec::with_capacity(9);
            encode_key(&types, &[Value::Int64((i / 3) as i64)], &mut k);
            (k, Tid::new((i / 100) as u32, (i % 100) as u16))
        });
        t.bulk_build(entries, 0.9).unwrap();
        t.flush().unwrap();
        let built = start.elapsed();
        let s = t.stats().unwrap();
        let checked = t.check().unwrap();
        eprintln!(
            "built {n} entries in {built:?}; check {:?}; {s:?}",
            start.elapsed() - built
        );
        assert_eq!(checked, n);
    }
}
