//! B+-tree secondary indexes: one paged file per index, pages through the buffer
//! pool.
//!
//! # Entries
//! An entry is an encoded key ([`crate::types::encode_key`]) followed by the 6-byte
//! big-endian [`Tid`] of the row it points to. Encoded keys are prefix-free and
//! compare like their values under `memcmp`, so comparing whole entries as bytes is
//! comparing `(key, tid)`: every entry is unique and there is one total order, and
//! duplicates of one key are just neighbouring entries that may span many leaves.
//!
//! # Pages
//! ```text
//! page 0            meta (PageKind::BTreeMeta): one tuple with magic, format version,
//!                   root, height, first leaf, page count, entry count, key types
//! leaf              slotted page (PageKind::BTreeLeaf); special = next leaf u32 BE,
//!                   prev leaf u32 BE (0 = none: page 0 is never a leaf); the slot
//!                   directory is kept in entry order, so a leaf is binary searched
//! internal          slotted page (PageKind::BTreeInternal); special = leftmost child
//!                   u32 BE, level u32 BE (1 = children are leaves); slot i is
//!                   `separator entry ++ child u32 BE`, in order; the child holds the
//!                   entries >= its separator and < the next separator, the leftmost
//!                   child those below the first separator
//! ```
//! Separators are full entries (key ++ tid), not just keys, so a run of equal keys
//! can be split anywhere and a descent for one `(key, tid)` still finds one leaf.
//!
//! A leaf's free space is always ONE contiguous region between the slot directory
//! and the entries: inserts place the entry at `upper` ([`PageMut::insert_at`]),
//! deletes compact ([`PageMut::remove_at`]) and splits rewrite both halves. The
//! index-cache work keeps hot tuples in that gap; [`BTree::leaf_free_region`] tells
//! where it is.
//!
//! # What is deliberately simple
//! * Concurrency: one tree latch (a reader-writer lock). Writers (insert, delete,
//!   bulk build) hold it exclusively for the whole operation, readers share it, and
//!   nobody holds it between two `next()` calls of an iterator, so an iterator can
//!   be kept open while the same thread writes to the tree. Page frames are pinned
//!   one at a time (two during a split), so a small pool suffices.
//! * No merging: a delete removes the entry and nothing else. Underfull and even
//!   empty leaves stay linked in the tree and are reused by later inserts into their
//!   key range; separators of deleted entries stay valid bounds. Rebuild the index
//!   (bulk build) to compact it. Pages are never freed, so every page of the file
//!   below the meta's page count is part of the tree (which `check` verifies).
//! * Durability: the meta page is written by [`BTree::flush`]; between flushes the
//!   in-memory meta is authoritative. A crash between flushes can leave a tree whose
//!   pages disagree with its meta; the catalog rebuilds indexes from the heap after
//!   a load, which is how strata gets crash safety for indexes.

use std::cmp::Ordering;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;
use serde::Serialize;

use crate::buffer::{BufferPool, PageMutRef, PageRef};
use crate::device::FileId;
use crate::error::{Result, StorageError};
use crate::page::{HEADER_SIZE, PAGE_SIZE, PageKind, PageMut, PageView, SLOT_SIZE};
use crate::types::{DataType, Tid};

const TID_LEN: usize = Tid::ENCODED_LEN;
/// Bytes of a child page number at the end of an internal slot.
const CHILD_LEN: usize = 4;
/// "No page" in sibling links. Page 0 is the meta page, never a leaf.
const NO_PAGE: u32 = 0;
const MAGIC: &[u8; 8] = b"STRBTREE";
const FORMAT_VERSION: u32 = 1;

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
struct Meta {
    root: u32,
    /// 1 = the root is a leaf.
    height: u32,
    num_pages: u32,
    entries: u64,
    first_leaf: u32,
    /// Bumped by every split (not stored). An iterator that remembered a leaf's
    /// next link re-reads it when this changed, because a split of that leaf put a
    /// new page in between.
    splits: u64,
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
enum Node {
    Leaf,
    /// An internal page of this level (1 = its children are leaves).
    Internal(u32),
}

/// A B+-tree index over one paged file. See the module docs for the format.
pub struct BTree {
    pool: Arc<BufferPool>,
    file: FileId,
    path: PathBuf,
    name: String,
    key_types: Vec<DataType>,
    /// The tree latch, guarding the meta too.
    latch: RwLock<Meta>,
    /// Bytes of a page inserts may use before splitting (the page size; tests use a
    /// small budget to grow tall trees from few entries).
    page_budget: usize,
}

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
// Page layout helpers

fn rd32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A leaf's (next, prev) sibling page numbers ([`NO_PAGE`] = none).
pub fn leaf_siblings(v: &PageView<'_>) -> (u32, u32) {
    let s = v.special();
    (rd32(&s[0..4]), rd32(&s[4..8]))
}

fn set_leaf_siblings(pm: &mut PageMut<'_>, next: u32, prev: u32) {
    let s = pm.special_mut();
    s[0..4].copy_from_slice(&next.to_be_bytes());
    s[4..8].copy_from_slice(&prev.to_be_bytes());
}

/// An internal page's (leftmost child, level).
fn internal_header(v: &PageView<'_>) -> (u32, u32) {
    let s = v.special();
    (rd32(&s[0..4]), rd32(&s[4..8]))
}

fn set_internal_header(pm: &mut PageMut<'_>, leftmost: u32, level: u32) {
    let s = pm.special_mut();
    s[0..4].copy_from_slice(&leftmost.to_be_bytes());
    s[4..8].copy_from_slice(&level.to_be_bytes());
}

/// Slot `s`'s bytes; empty for a dead or missing slot (which a B-tree page never
/// has; `check` reports it, everything else treats it as a tiny entry).
fn slot_bytes<'a>(v: &PageView<'a>, s: u16) -> &'a [u8] {
    v.get(s).unwrap_or(&[])
}

/// Splits an internal slot into (separator entry, child page).
fn split_slot(slot: &[u8]) -> (&[u8], u32) {
    if slot.len() < CHILD_LEN {
        return (slot, NO_PAGE);
    }
    let (sep, child) = slot.split_at(slot.len() - CHILD_LEN);
    (sep, rd32(child))
}

fn make_slot(sep: &[u8], child: u32) -> Vec<u8> {
    let mut s = Vec::with_capacity(sep.len() + CHILD_LEN);
    s.extend_from_slice(sep);
    s.extend_from_slice(&child.to_be_bytes());
    s
}

/// The key part of an entry (without the tid).
fn key_part(entry: &[u8]) -> &[u8] {
    &entry[..entry.len().saturating_sub(TID_LEN)]
}

fn make_entry(key: &[u8], tid: Tid) -> Vec<u8> {
    let mut e = Vec::with_capacity(key.len() + TID_LEN);
    e.extend_from_slice(key);
    tid.encode(&mut e);
    e
}

/// First index in `0..n` for which `before` is false (`before` must be true on a
/// prefix of the range and false after it).
fn partition(n: u16, mut before: impl FnMut(u16) -> bool) -> u16 {
    let (mut lo, mut hi) = (0u16, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Position of `entry` in a leaf: (where it is or would go, whether it is there).
fn leaf_search(v: &PageView<'_>, entry: &[u8]) -> (u16, bool) {
    let n = v.n_slots();
    let pos = partition(n, |s| slot_bytes(v, s) < entry);
    (pos, pos < n && slot_bytes(v, pos) == entry)
}

/// Compares an entry's key, truncated to the bound's length, with a key prefix.
fn prefix_cmp(entry: &[u8], bound: &[u8]) -> Ordering {
    let k = key_part(entry);
    k[..k.len().min(bound.len())].cmp(bound)
}

/// Whether `entry` lies before the range's lower bound. True on a prefix of the
/// entry order (truncation is monotone), so it can steer a descent.
fn before_lower(lower: &Bound<Vec<u8>>, entry: &[u8]) -> bool {
    match lower {
        Bound::Unbounded => false,
        Bound::Included(b) => prefix_cmp(entry, b) == Ordering::Less,
        Bound::Excluded(b) => prefix_cmp(entry, b) != Ordering::Greater,
    }
}

/// Whether `entry` is within the range's upper bound (true on a prefix).
fn within_upper(upper: &Bound<Vec<u8>>, entry: &[u8]) -> bool {
    match upper {
        Bound::Unbounded => true,
        Bound::Included(b) => prefix_cmp(entry, b) != Ordering::Greater,
        Bound::Excluded(b) => prefix_cmp(entry, b) == Ordering::Less,
    }
}

/// Index at which to split `items` (each costing its length plus a slot) into two
/// halves of about equal bytes, both non-empty.
fn split_point(items: &[Vec<u8>]) -> usize {
    let total: usize = items.iter().map(|i| i.len() + SLOT_SIZE).sum();
    let mut cum = 0;
    for (i, it) in items.iter().enumerate() {
        if cum + (it.len() + SLOT_SIZE) / 2 >= total / 2 {
            return i.clamp(1, items.len() - 1);
        }
        cum += it.len() + SLOT_SIZE;
    }
    items.len() - 1
}

/// Short hex rendering of bytes for error messages.
fn hex(b: &[u8]) -> String {
    let mut s: String = b.iter().take(48).map(|x| format!("{x:02x}")).collect();
    if b.len() > 48 {
        s.push_str(&format!("... ({} bytes)", b.len()));
    }
    s
}

fn kind_name(k: Option<PageKind>) -> &'static str {
    match k {
        Some(PageKind::Heap) => "heap",
        Some(PageKind::BTreeMeta) => "B-tree meta",
        Some(PageKind::BTreeLeaf) => "B-tree leaf",
        Some(PageKind::BTreeInternal) => "B-tree internal",
        None => "unknown",
    }
}

// ---------------------------------------------------------------------------
// Meta page

const META_FIXED: usize = 8 + 4 * 5 + 8 + 8 + 2;

fn encode_meta(m: &Meta, types_json: &[u8]) -> Vec<u8> {
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

fn decode_meta(b: &[u8]) -> std::result::Result<(Meta, &[u8]), String> {
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
        let tree = BTree {
            pool,
            file,
            path: path.to_path_buf(),
            name: name.to_string(),
            key_types,
            latch: RwLock::new(Meta {
                root: 1,
                height: 1,
                num_pages: 2,
                entries: 0,
                first_leaf: 1,
                splits: 0,
            }),
            page_budget: PAGE_SIZE,
        };
        tree.init_empty()?;
        tree.flush()?;
        Ok(tree)
    }

    /// Formats page 0 (meta, written properly by `write_meta`) and page 1 (an empty
    /// root leaf).
    fn init_empty(&self) -> Result<()> {
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
        Ok(BTree {
            pool,
            file,
            path: path.to_path_buf(),
            name: name.to_string(),
            key_types,
            latch: RwLock::new(meta),
            page_budget: PAGE_SIZE,
        })
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
        self.latch.read().height as usize
    }
    /// Number of entries.
    pub fn len(&self) -> u64 {
        self.latch.read().entries
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Pages of the file, the meta page included.
    pub fn num_pages(&self) -> u64 {
        self.latch.read().num_pages as u64
    }
    pub fn root_page(&self) -> u32 {
        self.latch.read().root
    }

    fn err(&self, reason: impl Into<String>) -> StorageError {
        StorageError::Index {
            index: self.name.clone(),
            reason: reason.into(),
        }
    }

    fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.len() > MAX_KEY {
            return Err(self.err(format!(
                "key of {} bytes is too large for an index entry (at most {MAX_KEY} bytes, about a quarter of a page)",
                key.len()
            )));
        }
        Ok(())
    }

    fn check_node(&self, b: &[u8], page: u32, want: Node) -> Result<()> {
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

    fn check_page_no(&self, meta: &Meta, page: u32) -> Result<()> {
        if page == NO_PAGE || page >= meta.num_pages {
            return Err(self.err(format!(
                "a link points to page {page}, outside the tree's pages 1..{}",
                meta.num_pages
            )));
        }
        Ok(())
    }

    /// Pins a tree page for reading, checking that it is what the caller expects.
    fn read_node(&self, meta: &Meta, page: u32, want: Node) -> Result<PageRef<'_>> {
        self.check_page_no(meta, page)?;
        let g = self.pool.read(self.file, page as u64)?;
        self.check_node(&g, page, want)?;
        Ok(g)
    }

    /// Pins a tree page for writing (marks it dirty), checking its kind.
    fn write_node(&self, meta: &Meta, page: u32, want: Node) -> Result<PageMutRef<'_>> {
        self.check_page_no(meta, page)?;
        let g = self.pool.write(self.file, page as u64)?;
        self.check_node(&g, page, want)?;
        Ok(g)
    }

    fn alloc(&self, meta: &mut Meta) -> Result<u32> {
        let p = meta.num_pages;
        if p == u32::MAX {
            return Err(self.err("the index file has reached 2^32 pages"));
        }
        meta.num_pages += 1;
        Ok(p)
    }

    /// Whether an item of `len` bytes (plus its slot) fits on the page within the
    /// page budget. B-tree pages never hold garbage, so used = page - free.
    fn fits(&self, v: &PageView<'_>, len: usize) -> bool {
        let free = v.free_space();
        free >= len + SLOT_SIZE && PAGE_SIZE - free + len + SLOT_SIZE <= self.page_budget
    }

    /// Descends from the root to the leaf that holds the first entry for which
    /// `before` is false (`before` must be true on a prefix of the entry order).
    /// With `path`, records each internal page and the index of the child taken
    /// (0 = leftmost, i + 1 = the child of slot i).
    fn descend(
        &self,
        meta: &Meta,
        mut before: impl FnMut(&[u8]) -> bool,
        mut path: Option<&mut Vec<(u32, u16)>>,
    ) -> Result<u32> {
        let mut page = meta.root;
        for level in (1..meta.height).rev() {
            let g = self.read_node(meta, page, Node::Internal(level))?;
            let v = PageView::new(&g);
            let idx = partition(v.n_slots(), |s| before(split_slot(slot_bytes(&v, s)).0));
            let child = if idx == 0 {
                internal_header(&v).0
            } else {
                split_slot(slot_bytes(&v, idx - 1)).1
            };
            if let Some(p) = path.as_deref_mut() {
                p.push((page, idx));
            }
            page = child;
        }
        Ok(page)
    }

    // -----------------------------------------------------------------------
    // Writes

    /// Inserts the entry `(key, tid)`; `key` is an encoded key. Splits full pages on
    /// the way back up; a root split adds a level. Inserting an entry that exists is
    /// an error.
    pub fn insert(&self, key: &[u8], tid: Tid) -> Result<()> {
        self.check_key(key)?;
        let entry = make_entry(key, tid);
        let mut meta = self.latch.write();
        let mut path = Vec::with_capacity(meta.height as usize);
        let leaf = self.descend(&meta, |sep| sep <= entry.as_slice(), Some(&mut path))?;
        let (all, pos, next, prev) = {
            let mut g = self.write_node(&meta, leaf, Node::Leaf)?;
            let mut pm = PageMut::new(&mut g);
            let (pos, found) = leaf_search(&pm.view(), &entry);
            if found {
                return Err(self.err(format!(
                    "entry for key {} and tuple {tid} already exists",
                    hex(key)
                )));
            }
            if self.fits(&pm.view(), entry.len()) && pm.insert_at(pos, &entry) {
                meta.entries += 1;
                return Ok(());
            }
            let v = pm.view();
            let mut all: Vec<Vec<u8>> = (0..v.n_slots())
                .map(|s| slot_bytes(&v, s).to_vec())
                .collect();
            all.insert(pos as usize, entry);
            let (next, prev) = leaf_siblings(&v);
            (all, pos as usize, next, prev)
        };
        if all.len() < 2 {
            return Err(self.err(format!("leaf {leaf} is empty but cannot take an entry")));
        }
        // Appending at the very end of the tree (ascending loads): keep the old
        // leaf full instead of leaving two half-empty ones behind.
        let k = if next == NO_PAGE && pos == all.len() - 1 {
            pos
        } else {
            split_point(&all)
        };
        let (sep, right) = self.split_leaf(&mut meta, leaf, next, prev, &all, k)?;
        meta.entries += 1;
        self.insert_separator(&mut meta, path, sep, right)
    }

    /// Splits `leaf`, whose entries plus the new one are `all`: `all[..k]` stay,
    /// `all[k..]` go to a new page linked in after it. Returns the new page's first
    /// entry (the separator for the parent) and its page number.
    fn split_leaf(
        &self,
        meta: &mut Meta,
        leaf: u32,
        next: u32,
        prev: u32,
        all: &[Vec<u8>],
        k: usize,
    ) -> Result<(Vec<u8>, u32)> {
        let right = self.alloc(meta)?;
        let overflow = |page: u32| {
            self.err(format!(
                "split of leaf {leaf}: half does not fit on page {page}"
            ))
        };
        {
            let mut g = self.pool.create(self.file, right as u64)?;
            let mut pm = PageMut::init(&mut g, PageKind::BTreeLeaf, right as u64);
            set_leaf_siblings(&mut pm, next, leaf);
            for e in &all[k..] {
                pm.push(e).ok_or_else(|| overflow(right))?;
            }
        }
        {
            let mut g = self.write_node(meta, leaf, Node::Leaf)?;
            let mut pm = PageMut::init(&mut g, PageKind::BTreeLeaf, leaf as u64);
            set_leaf_siblings(&mut pm, right, prev);
            for e in &all[..k] {
                pm.push(e).ok_or_else(|| overflow(leaf))?;
            }
        }
        if next != NO_PAGE {
            let mut g = self.write_node(meta, next, Node::Leaf)?;
            let mut pm = PageMut::new(&mut g);
            let (nn, _) = leaf_siblings(&pm.view());
            set_leaf_siblings(&mut pm, nn, right);
        }
        meta.splits += 1;
        Ok((all[k].clone(), right))
    }

    /// Adds `(sep, right)` to the parents recorded in `path`, splitting internal
    /// pages as needed and growing a new root when the old one splits.
    fn insert_separator(
        &self,
        meta: &mut Meta,
        mut path: Vec<(u32, u16)>,
        mut sep: Vec<u8>,
        mut right: u32,
    ) -> Result<()> {
        while let Some((page, idx)) = path.pop() {
            // path[0] is the root, at level height - 1.
            let level = meta.height - 1 - path.len() as u32;
            let slot = make_slot(&sep, right);
            let (leftmost, all) = {
                let mut g = self.write_node(meta, page, Node::Internal(level))?;
                let mut pm = PageMut::new(&mut g);
                if idx > pm.view().n_slots() {
                    return Err(self.err(format!("internal page {page} changed under a descent")));
                }
                if self.fits(&pm.view(), slot.len()) && pm.insert_at(idx, &slot) {
                    return Ok(());
                }
                let v = pm.view();
                let mut all: Vec<Vec<u8>> = (0..v.n_slots())
                    .map(|s| slot_bytes(&v, s).to_vec())
                    .collect();
                all.insert(idx as usize, slot);
                (internal_header(&v).0, all)
            };
            (sep, right) = self.split_internal(meta, page, level, leftmost, &all)?;
        }
        // The root split: a new root above the old one.
        let root = self.alloc(meta)?;
        {
            let mut g = self.pool.create(self.file, root as u64)?;
            let mut pm = PageMut::init(&mut g, PageKind::BTreeInternal, root as u64);
            set_internal_header(&mut pm, meta.root, meta.height);
            pm.push(&make_slot(&sep, right))
                .ok_or_else(|| self.err("new root cannot hold its separator"))?;
        }
        meta.root = root;
        meta.height += 1;
        meta.splits += 1;
        Ok(())
    }

    /// Splits internal `page` whose slots plus the new one are `all`: the middle
    /// slot's separator moves up, its child becomes the new right page's leftmost.
    fn split_internal(
        &self,
        meta: &mut Meta,
        page: u32,
        level: u32,
        leftmost: u32,
        all: &[Vec<u8>],
    ) -> Result<(Vec<u8>, u32)> {
        let n = all.len();
        if n < 2 {
            return Err(self.err(format!("internal page {page} is full with {n} separators")));
        }
        let m = if n >= 3 {
            split_point(all).clamp(1, n - 2)
        } else {
            1
        };
        let (up, mid_child) = split_slot(&all[m]);
        let right = self.alloc(meta)?;
        let overflow = |p: u32| {
            self.err(format!(
                "split of internal page {page}: half does not fit on page {p}"
            ))
        };
        {
            let mut g = self.pool.create(self.file, right as u64)?;
            let mut pm = PageMut::init(&mut g, PageKind::BTreeInternal, right as u64);
            set_internal_header(&mut pm, mid_child, level);
            for s in &all[m + 1..] {
                pm.push(s).ok_or_else(|| overflow(right))?;
            }
        }
        {
            let mut g = self.write_node(meta, page, Node::Internal(level))?;
            let mut pm = PageMut::init(&mut g, PageKind::BTreeInternal, page as u64);
            set_internal_header(&mut pm, leftmost, level);
            for s in &all[..m] {
                pm.push(s).ok_or_else(|| overflow(page))?;
            }
        }
        meta.splits += 1;
        Ok((up.to_vec(), right))
    }

    /// Deletes the entry `(key, tid)`; returns whether it was there. Pages are never
    /// merged: an underfull or empty leaf stays in the tree (see the module docs).
    pub fn delete(&self, key: &[u8], tid: Tid) -> Result<bool> {
        if key.len() > MAX_KEY {
            return Ok(false);
        }
        let entry = make_entry(key, tid);
        let mut meta = self.latch.write();
        let leaf = self.descend(&meta, |sep| sep <= entry.as_slice(), None)?;
        // Look first, so a miss does not dirty the page.
        let pos = {
            let g = self.read_node(&meta, leaf, Node::Leaf)?;
            match leaf_search(&PageView::new(&g), &entry) {
                (pos, true) => pos,
                (_, false) => return Ok(false),
            }
        };
        let mut g = self.write_node(&meta, leaf, Node::Leaf)?;
        PageMut::new(&mut g).remove_at(pos);
        meta.entries = meta.entries.saturating_sub(1);
        Ok(true)
    }

    /// Builds the tree from `entries` (encoded key, tid) sorted strictly by
    /// `(key, tid)`, on a freshly created (empty) tree: leaves are filled to
    /// `leaf_fill` of a page (at least one entry each) and written one after the
    /// other, then each internal level is built from the first entries of the level
    /// below with the same fill, bottom-up. Nothing is searched; the cost is one
    /// pass over the entries and one page write per page.
    ///
    /// Unsorted or duplicate input is an error; the tree is then left empty.
    pub fn bulk_build(
        &self,
        entries: impl Iterator<Item = (Vec<u8>, Tid)>,
        leaf_fill: f64,
    ) -> Result<()> {
        if !(leaf_fill > 0.0 && leaf_fill <= 1.0) {
            return Err(self.err(format!("leaf fill {leaf_fill} is not in (0, 1]")));
        }
        let mut meta = self.latch.write();
        if meta.entries != 0 || meta.num_pages != 2 || meta.height != 1 {
            return Err(self.err(format!(
                "bulk build needs a freshly created, empty index (it has {} entries in {} pages)",
                meta.entries, meta.num_pages
            )));
        }
        let limit = ((leaf_fill * PAGE_SIZE as f64) as usize).min(self.page_budget);
        match self.build(&mut meta, entries, limit) {
            Ok(()) => Ok(()),
            Err(e) => {
                // Back to the empty tree of `create`; pages past 2 are garbage that
                // later allocations overwrite.
                *meta = Meta {
                    root: 1,
                    height: 1,
                    num_pages: 2,
                    entries: 0,
                    first_leaf: 1,
                    splits: meta.splits + 1,
                };
                self.pool.discard_from(self.file, 2);
                let mut g = self.pool.create(self.file, 1)?;
                let mut pm = PageMut::init(&mut g, PageKind::BTreeLeaf, 1);
                set_leaf_siblings(&mut pm, NO_PAGE, NO_PAGE);
                Err(e)
            }
        }
    }

    fn build(
        &self,
        meta: &mut Meta,
        entries: impl Iterator<Item = (Vec<u8>, Tid)>,
        limit: usize,
    ) -> Result<()> {
        // The leaf being filled lives in a local buffer and goes to the pool once
        // full, when its next link (always the following page) is known.
        let mut local = vec![0u8; PAGE_SIZE];
        let mut page_no: u32 = 1;
        PageMut::init(&mut local, PageKind::BTreeLeaf, 1);
        // (first entry, page) of every page of the level being built.
        let mut level: Vec<(Vec<u8>, u32)> = Vec::new();
        let mut prev: Vec<u8> = Vec::new();
        let mut entry: Vec<u8> = Vec::new();
        let mut count: u64 = 0;
        let emit = |local: &mut [u8], page: u32, next: u32| -> Result<()> {
            set_leaf_siblings(&mut PageMut::new(local), next, page.saturating_sub(1));
            let mut g = self.pool.create(self.file, page as u64)?;
            g.copy_from_slice(local);
            Ok(())
        };
        for (key, tid) in entries {
            self.check_key(&key)?;
            entry.clear();
            entry.extend_from_slice(&key);
            tid.encode(&mut entry);
            if count > 0 && entry <= prev {
                return Err(self.err(format!(
                    "bulk build input is not sorted strictly by (key, tid): entry {} (key {}, tuple {tid}) does not follow key {}, tuple {}",
                    count + 1,
                    hex(&key),
                    hex(key_part(&prev)),
                    Tid::decode(&prev[prev.len() - TID_LEN..]),
                )));
            }
            let v = PageView::new(&local);
            if v.n_slots() > 0
                && (PAGE_SIZE - v.free_space() + entry.len() + SLOT_SIZE > limit
                    || v.free_space() < entry.len() + SLOT_SIZE)
            {
                if page_no == u32::MAX - 1 {
                    return Err(self.err("the index file has reached 2^32 pages"));
                }
                emit(&mut local, page_no, page_no + 1)?;
                page_no += 1;
                PageMut::init(&mut local, PageKind::BTreeLeaf, page_no as u64);
            }
            let mut pm = PageMut::new(&mut local);
            if pm.view().n_slots() == 0 {
                level.push((entry.clone(), page_no));
            }
            pm.push(&entry)
                .ok_or_else(|| self.err("entry does not fit on an empty leaf"))?;
            std::mem::swap(&mut prev, &mut entry);
            count += 1;
        }
        emit(&mut local, page_no, NO_PAGE)?;
        meta.num_pages = page_no + 1;
        meta.first_leaf = 1;
        meta.entries = count;

        let mut height = 1u32;
        while level.len() > 1 {
            let mut upper = Vec::with_capacity(level.len() / 8 + 1);
            let mut i = 0;
            while i < level.len() {
                let leftmost = level[i].1;
                let first = std::mem::take(&mut level[i].0);
                i += 1;
                let page = self.alloc(meta)?;
                let mut g = self.pool.create(self.file, page as u64)?;
                let mut pm = PageMut::init(&mut g, PageKind::BTreeInternal, page as u64);
                set_internal_header(&mut pm, leftmost, height);
                let mut n = 0usize;
                while let Some((sep, child)) = level.get(i) {
                    let len = sep.len() + CHILD_LEN + SLOT_SIZE;
                    let v = pm.view();
                    let physical = v.free_space() >= len;
                    let within = PAGE_SIZE - v.free_space() + len <= limit;
                    // Always take one separator (two children); and take a lone
                    // last child rather than leaving it a node of its own.
                    let last = i + 1 == level.len();
                    if !physical || (n > 0 && !within && !last) {
                        break;
                    }
                    pm.push(&make_slot(sep, *child))
                        .ok_or_else(|| self.err("separator does not fit on an internal page"))?;
                    i += 1;
                    n += 1;
                }
                upper.push((first, page));
            }
            level = upper;
            height += 1;
        }
        meta.root = level.first().map_or(1, |(_, p)| *p);
        meta.height = height;
        meta.splits += 1;
        Ok(())
    }

    // -----------------------------------------------------------------------
    // Reads

    /// Entries whose key lies within the bounds, in (key, tid) order, as (encoded
    /// key, tid). Bounds are encoded key *prefixes* (e.g. just the first columns of
    /// a composite key): an entry's key is cut to the bound's length and compared
    /// with it, so `Included(k)` as upper bound takes every key starting with `k`
    /// and `Excluded(k)` as lower bound skips them.
    ///
    /// The iterator copies one leaf's qualifying entries at a time and holds no
    /// latch or pin between calls. Entries inserted concurrently may or may not be
    /// seen; none is seen twice and the order holds.
    pub fn range(&self, lower: Bound<Vec<u8>>, upper: Bound<Vec<u8>>) -> Result<RangeIter<'_>> {
        Ok(RangeIter {
            tree: self,
            cursor: self.range_cursor(lower, upper),
        })
    }

    /// A detached cursor over the same entries as [`BTree::range`].
    pub fn range_cursor(&self, lower: Bound<Vec<u8>>, upper: Bound<Vec<u8>>) -> RangeCursor {
        RangeCursor {
            lower,
            upper,
            buf: Vec::new(),
            ends: Vec::new(),
            pos: 0,
            started: false,
            done: false,
            leaf: NO_PAGE,
            next_leaf: NO_PAGE,
            splits: 0,
            last: Vec::new(),
            steps: 0,
            streak: 0,
            ahead_until: 0,
        }
    }

    /// Every tid stored under exactly the full encoded key `key`, in tid order.
    pub fn lookup(&self, key: &[u8]) -> Result<Vec<Tid>> {
        let mut out = Vec::new();
        for r in self.range(Bound::Included(key.to_vec()), Bound::Included(key.to_vec()))? {
            let (k, tid) = r?;
            if k == key {
                out.push(tid);
            }
        }
        Ok(out)
    }

    /// The leaves in key order with their entries: `(page, [(encoded key, tid)])`.
    /// One leaf is read per step; run it without concurrent writers for a consistent
    /// picture.
    pub fn leaves(&self) -> Result<LeafIter<'_>> {
        Ok(LeafIter {
            tree: self,
            next: None,
            steps: 0,
            done: false,
        })
    }

    /// `(lower, upper)`: the free region of leaf `page`, between its slot directory
    /// and its entries (one contiguous gap, see the module docs).
    pub fn leaf_free_region(&self, page: u32) -> Result<(u16, u16)> {
        let meta = self.latch.read();
        let g = self.read_node(&meta, page, Node::Leaf)?;
        let v = PageView::new(&g);
        Ok((v.lower(), v.upper()))
    }

    /// The separator keys (key part, without tid) at `level` counted from the root
    /// (0 = root), in order; equal keys can repeat. Leaves hold no separators, so a
    /// level at or below the leaves (any level of a height-1 tree) returns nothing.
    /// Operators partition key ranges with these.
    pub fn level_keys(&self, level: usize) -> Result<Vec<Vec<u8>>> {
        Ok(self
            .level_entries(level)?
            .into_iter()
            .map(|mut e| {
                e.truncate(e.len() - TID_LEN);
                e
            })
            .collect())
    }

    /// Like [`BTree::level_keys`], but whole separator entries (key ++ tid): the
    /// boundaries between the subtrees of that level, in (key, tid) order. Ranges
    /// split at these never split a run of equal keys unevenly, however skewed.
    pub fn level_entries(&self, level: usize) -> Result<Vec<Vec<u8>>> {
        Ok(self
            .level_entries_in(level, &Bound::Unbounded, &Bound::Unbounded)?
            .0)
    }

    /// [`BTree::level_entries`] within a key range: only the nodes whose
    /// subtrees overlap `[lower, upper]` are read (a narrow range costs a page
    /// per level, not the whole level), and only separators inside the range are
    /// returned. Also returns how many subtrees the whole level splits the tree
    /// into, estimated from the mean fanout of the nodes read on each level:
    /// exact for the root and for an unbounded range, off by the fill of the
    /// nodes over a narrow range otherwise (a bulk-built level's last node can
    /// be nearly empty).
    pub fn level_entries_in(
        &self,
        level: usize,
        lower: &Bound<Vec<u8>>,
        upper: &Bound<Vec<u8>>,
    ) -> Result<(Vec<Vec<u8>>, f64)> {
        let meta = self.latch.read();
        let height = meta.height as usize;
        if level + 1 >= height {
            return Ok((Vec::new(), 1.0));
        }
        let (mut pages, mut entries, mut subtrees) = (vec![meta.root], Vec::new(), 1.0);
        for l in 0..=level {
            let node_level = (height - 1 - l) as u32;
            let (mut children, mut fanout) = (Vec::new(), 0usize);
            for &p in &pages {
                let g = self.read_node(&meta, p, Node::Internal(node_level))?;
                let v = PageView::new(&g);
                let slots: Vec<(&[u8], u32)> = (0..v.n_slots())
                    .map(|s| split_slot(slot_bytes(&v, s)))
                    .collect();
                fanout += slots.len() + 1;
                if l == level {
                    entries.extend(
                        slots
                            .iter()
                            .filter(|(sep, _)| {
                                !before_lower(lower, sep) && within_upper(upper, sep)
                            })
                            .map(|(sep, _)| sep.to_vec()),
                    );
                    continue;
                }
                // Child i holds the entries in [separator i, separator i+1).
                for i in 0..=slots.len() {
                    let child = if i == 0 {
                        internal_header(&v).0
                    } else {
                        slots[i - 1].1
                    };
                    let below = i < slots.len() && before_lower(lower, slots[i].0);
                    let above = i > 0 && !within_upper(upper, slots[i - 1].0);
                    if !below && !above {
                        children.push(child);
                    }
                }
            }
            subtrees *= fanout as f64 / pages.len().max(1) as f64;
            pages = children;
        }
        Ok((entries, subtrees))
    }

    /// Shape and fill of the tree (reads every page through the pool).
    pub fn stats(&self) -> Result<BTreeStats> {
        let meta = self.latch.read();
        let mut s = BTreeStats {
            name: self.name.clone(),
            height: meta.height,
            entries: meta.entries,
            num_pages: meta.num_pages as u64,
            root_page: meta.root,
            leaf_pages: 0,
            internal_pages: 0,
            empty_leaves: 0,
            leaf_fill: 0.0,
            internal_fill: 0.0,
            avg_entry_bytes: 0.0,
        };
        let (mut leaf_used, mut internal_used, mut entry_bytes) = (0u64, 0u64, 0u64);
        for p in 1..meta.num_pages {
            let g = self.pool.read(self.file, p as u64)?;
            let v = PageView::new(&g);
            let used = (PAGE_SIZE - v.free_space()) as u64;
            match v.kind() {
                Some(PageKind::BTreeLeaf) => {
                    s.leaf_pages += 1;
                    leaf_used += used;
                    if v.n_slots() == 0 {
                        s.empty_leaves += 1;
                    }
                    entry_bytes += (PAGE_SIZE - v.upper() as usize) as u64;
                }
                Some(PageKind::BTreeInternal) => {
                    s.internal_pages += 1;
                    internal_used += used;
                }
                k => {
                    return Err(self.err(format!(
                        "page {p} is a {} page inside the tree",
                        kind_name(k)
                    )));
                }
            }
        }
        if s.leaf_pages > 0 {
            s.leaf_fill = leaf_used as f64 / (s.leaf_pages * PAGE_SIZE as u64) as f64;
        }
        if s.internal_pages > 0 {
            s.internal_fill = internal_used as f64 / (s.internal_pages * PAGE_SIZE as u64) as f64;
        }
        if meta.entries > 0 {
            s.avg_entry_bytes = entry_bytes as f64 / meta.entries as f64;
        }
        Ok(s)
    }

    /// Verifies the whole structure and returns the number of entries: every page
    /// has the kind and level its parent implies and is reached once; entries and
    /// separators are strictly ordered within pages and every entry and separator
    /// lies within the range its parent assigns (so keys are ordered across leaves);
    /// the leaf chain links every leaf in key order both ways and starts at the
    /// meta's first leaf; the entry and page counts match the meta. Errors name the
    /// index and the page.
    pub fn check(&self) -> Result<u64> {
        let meta = self.latch.read();
        struct Todo {
            page: u32,
            level: u32,
            low: Option<Vec<u8>>,
            high: Option<Vec<u8>>,
        }
        let mut seen = vec![false; meta.num_pages as usize];
        let mut stack = vec![Todo {
            page: meta.root,
            level: meta.height - 1,
            low: None,
            high: None,
        }];
        let (mut entries, mut leaves, mut internals) = (0u64, 0u64, 0u64);
        let (mut prev_leaf, mut expect_leaf) = (NO_PAGE, meta.first_leaf);
        let mut last: Vec<u8> = Vec::new();
        let outside = |e: &[u8], low: &Option<Vec<u8>>, high: &Option<Vec<u8>>| {
            low.as_deref().is_some_and(|l| e < l) || high.as_deref().is_some_and(|h| e >= h)
        };
        while let Some(t) = stack.pop() {
            self.check_page_no(&meta, t.page)?;
            if std::mem::replace(&mut seen[t.page as usize], true) {
                return Err(self.err(format!("page {} is reached twice from the root", t.page)));
            }
            if t.level == 0 {
                let g = self.read_node(&meta, t.page, Node::Leaf)?;
                let v = PageView::new(&g);
                let (next, prev) = leaf_siblings(&v);
                if t.page != expect_leaf {
                    return Err(self.err(if prev_leaf == NO_PAGE {
                        format!("the first leaf is page {} but the meta page says {expect_leaf}", t.page)
                    } else {
                        format!(
                            "leaf {} follows leaf {prev_leaf} in key order, but that leaf's next link is {expect_leaf}",
                            t.page
                        )
                    }));
                }
                if prev != prev_leaf {
                    return Err(self.err(format!(
                        "leaf {} has prev link {prev}, expected {prev_leaf}",
                        t.page
                    )));
                }
                for s in 0..v.n_slots() {
                    let e = slot_bytes(&v, s);
                    if e.len() < TID_LEN {
                        return Err(self.err(format!(
                            "leaf {} slot {s} holds {} bytes, too short for an entry",
                            t.page,
                            e.len()
                        )));
                    }
                    if (entries > 0 || s > 0) && e <= last.as_slice() {
                        return Err(self.err(format!(
                            "leaf {} slot {s}: entry {} is not above the previous entry {}",
                            t.page,
                            hex(e),
                            hex(&last)
                        )));
                    }
                    if outside(e, &t.low, &t.high) {
                        return Err(self.err(format!(
                            "leaf {} slot {s}: entry {} is outside the range its parent assigns",
                            t.page,
                            hex(e)
                        )));
                    }
                    last.clear();
                    last.extend_from_slice(e);
                }
                entries += v.n_slots() as u64;
                leaves += 1;
                prev_leaf = t.page;
                expect_leaf = next;
            } else {
                let g = self.read_node(&meta, t.page, Node::Internal(t.level))?;
                let v = PageView::new(&g);
                let mut children: Vec<(u32, Option<Vec<u8>>)> =
                    vec![(internal_header(&v).0, t.low.clone())];
                for s in 0..v.n_slots() {
                    let (sep, child) = split_slot(slot_bytes(&v, s));
                    if sep.len() < TID_LEN {
                        return Err(
                            self.err(format!("internal page {} slot {s} is too short", t.page))
                        );
                    }
                    if s > 0 && sep <= split_slot(slot_bytes(&v, s - 1)).0 {
                        return Err(self.err(format!(
                            "internal page {} slot {s}: separator {} is not above the previous one",
                            t.page,
                            hex(sep)
                        )));
                    }
                    if outside(sep, &t.low, &t.high) {
                        return Err(self.err(format!(
                            "internal page {} slot {s}: separator {} is outside the range its parent assigns",
                            t.page,
                            hex(sep)
                        )));
                    }
                    children.push((child, Some(sep.to_vec())));
                }
                drop(g);
                // Push right to left so the leftmost child is visited first.
                let mut high = t.high;
                for (child, low) in children.into_iter().rev() {
                    stack.push(Todo {
                        page: child,
                        level: t.level - 1,
                        low: low.clone(),
                        high: high.take(),
                    });
                    high = low;
                }
                internals += 1;
            }
        }
        if expect_leaf != NO_PAGE {
            return Err(self.err(format!(
                "the last leaf {prev_leaf} links to page {expect_leaf} as its next leaf"
            )));
        }
        if entries != meta.entries {
            return Err(self.err(format!(
                "the leaves hold {entries} entries but the meta says {}",
                meta.entries
            )));
        }
        if 1 + leaves + internals != meta.num_pages as u64 {
            return Err(self.err(format!(
                "{} of the {} pages are not reachable from the root",
                meta.num_pages as u64 - 1 - leaves - internals,
                meta.num_pages
            )));
        }
        Ok(entries)
    }

    /// Writes the meta page, writes back the file's dirty pages and syncs the file.
    pub fn flush(&self) -> Result<()> {
        let meta = self.latch.read();
        self.write_meta(&meta)?;
        self.pool.flush_file(self.file)?;
        self.pool.device().sync(self.file)
    }

    fn write_meta(&self, meta: &Meta) -> Result<()> {
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
    fn with_page_budget(mut self, bytes: usize) -> BTree {
        self.page_budget = bytes;
        self
    }
}

/// Forward iterator over a key range ([`BTree::range`]).
pub struct RangeIter<'a> {
    tree: &'a BTree,
    cursor: RangeCursor,
}

/// The position of a forward range scan, detached from the tree so that an
/// operator can own it next to the table it scans: each step is given the tree
/// ([`RangeCursor::next_entry`]). [`RangeIter`] is the borrowing convenience.
pub struct RangeCursor {
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    /// Qualifying entries of the current leaf, back to back; `ends[i]` is where
    /// entry i ends.
    buf: Vec<u8>,
    ends: Vec<usize>,
    pos: usize,
    started: bool,
    done: bool,
    /// The leaf `buf` came from, its next link then, and the split counter then.
    leaf: u32,
    next_leaf: u32,
    splits: u64,
    /// The last entry copied (empty before the first): later leaves only yield
    /// entries above it, so a leaf split between two steps cannot repeat entries.
    last: Vec<u8>,
    /// Leaves read, to stop on a cycle in a corrupt sibling chain.
    steps: u64,
    /// Sequential read-ahead of the leaf level: how many consecutive leaves were
    /// physically adjacent, and the first page not read ahead yet.
    streak: u32,
    ahead_until: u32,
}

/// Most leaves read ahead in one request (256 KiB).
const LEAF_READ_AHEAD: u32 = 32;

impl RangeCursor {
    /// The next entry as (encoded key ++ tid bytes, tid), borrowed from the
    /// cursor's copy of the current leaf; `None` at the end of the range.
    pub fn next_entry(&mut self, tree: &BTree) -> Option<Result<(&[u8], Tid)>> {
        loop {
            if self.pos < self.ends.len() {
                let start = if self.pos == 0 {
                    0
                } else {
                    self.ends[self.pos - 1]
                };
                let e = &self.buf[start..self.ends[self.pos]];
                self.pos += 1;
                let k = e.len() - TID_LEN;
                return Some(Ok((e, Tid::decode(&e[k..]))));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.refill(tree) {
                self.done = true;
                self.ends.clear();
                return Some(Err(e));
            }
        }
    }

    /// Copies the qualifying entries of the next leaf that has any into `buf`
    /// (holding the latch shared meanwhile, one pin at a time), or sets `done`.
    fn refill(&mut self, tree: &BTree) -> Result<()> {
        self.buf.clear();
        self.ends.clear();
        self.pos = 0;
        let meta = tree.latch.read();
        // Whether the first page read is the previous leaf again (no step forward).
        let mut reread = false;
        let mut page = if !self.started {
            self.started = true;
            match &self.lower {
                Bound::Unbounded => meta.first_leaf,
                lower => tree.descend(&meta, |sep| before_lower(lower, sep), None)?,
            }
        } else if meta.splits == self.splits {
            self.next_leaf
        } else {
            // Something split since the previous leaf was copied: that leaf may
            // have taken entries since (a split can follow inserts into it) and
            // its next link may now point to a new page. Read it again; entries
            // up to `last` are skipped.
            reread = true;
            self.leaf
        };
        self.splits = meta.splits;
        loop {
            if page == NO_PAGE {
                self.done = true;
                return Ok(());
            }
            if !std::mem::take(&mut reread) {
                self.steps += 1;
                if self.steps > meta.num_pages as u64 {
                    return Err(tree.err(format!(
                        "the leaf chain is longer than the tree (a cycle through page {page})"
                    )));
                }
            }
            // Bulk-built leaves lie in page order: once the walk is seen to be
            // sequential, read the next leaves ahead in one request, doubling
            // the read-ahead as the streak goes on (like an OS read-ahead).
            if self.leaf != NO_PAGE && page == self.leaf.wrapping_add(1) {
                self.streak += 1;
            } else if page != self.leaf {
                self.streak = 0;
            }
            if self.streak >= 2 && page >= self.ahead_until {
                let n = (1u32 << self.streak.min(5))
                    .min(LEAF_READ_AHEAD)
                    .min(meta.num_pages.saturating_sub(page));
                tree.pool.prefetch(tree.file, page as u64, n as usize)?;
                self.ahead_until = page + n;
            }
            let g = tree.read_node(&meta, page, Node::Leaf)?;
            let v = PageView::new(&g);
            let n = v.n_slots();
            let (lower, last) = (&self.lower, &self.last);
            let start = partition(n, |s| {
                let e = slot_bytes(&v, s);
                before_lower(lower, e) || (!last.is_empty() && e <= last.as_slice())
            });
            for s in start..n {
                let e = slot_bytes(&v, s);
                if e.len() < TID_LEN {
                    return Err(tree.err(format!("leaf {page} slot {s} is too short for an entry")));
                }
                if !within_upper(&self.upper, e) {
                    self.done = true;
                    break;
                }
                self.buf.extend_from_slice(e);
                self.ends.push(self.buf.len());
            }
            self.leaf = page;
            self.next_leaf = leaf_siblings(&v).0;
            if let Some(&end) = self.ends.last() {
                let start = if self.ends.len() > 1 {
                    self.ends[self.ends.len() - 2]
                } else {
                    0
                };
                self.last.clear();
                self.last.extend_from_slice(&self.buf[start..end]);
                return Ok(());
            }
            if self.done {
                return Ok(());
            }
            // An empty (or fully skipped) leaf: go on to the next one.
            page = self.next_leaf;
        }
    }
}

impl Iterator for RangeIter<'_> {
    type Item = Result<(Vec<u8>, Tid)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.cursor
            .next_entry(self.tree)
            .map(|r| r.map(|(e, tid)| (e[..e.len() - TID_LEN].to_vec(), tid)))
    }
}

/// One leaf as [`LeafIter`] yields it: its page number and its entries as
/// (encoded key, tid), in order.
pub type Leaf = (u32, Vec<(Vec<u8>, Tid)>);

/// Iterator over the leaves in key order ([`BTree::leaves`]).
pub struct LeafIter<'a> {
    tree: &'a BTree,
    /// The next leaf to read; `None` before the first.
    next: Option<u32>,
    steps: u64,
    done: bool,
}

impl LeafIter<'_> {
    fn step(&mut self) -> Result<Option<Leaf>> {
        let tree = self.tree;
        let meta = tree.latch.read();
        let page = self.next.unwrap_or(meta.first_leaf);
        if page == NO_PAGE {
            return Ok(None);
        }
        self.steps += 1;
        if self.steps > meta.num_pages as u64 {
            return Err(tree.err(format!(
                "the leaf chain is longer than the tree (a cycle through page {page})"
            )));
        }
        let g = tree.read_node(&meta, page, Node::Leaf)?;
        let v = PageView::new(&g);
        let mut out = Vec::with_capacity(v.n_slots() as usize);
        for s in 0..v.n_slots() {
            let e = slot_bytes(&v, s);
            if e.len() < TID_LEN {
                return Err(tree.err(format!("leaf {page} slot {s} is too short for an entry")));
            }
            let k = e.len() - TID_LEN;
            out.push((e[..k].to_vec(), Tid::decode(&e[k..])));
        }
        self.next = Some(leaf_siblings(&v).0);
        Ok(Some((page, out)))
    }
}

impl Iterator for LeafIter<'_> {
    type Item = Result<Leaf>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.step().transpose();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{Device, FileDevice};
    use crate::types::{Value, encode_key};
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

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
        #![proptest_config(ProptestConfig { cases: 32, .. ProptestConfig::default() })]

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
                    let (v, used) = crate::types::decode_key(&comp_types(), k);
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
