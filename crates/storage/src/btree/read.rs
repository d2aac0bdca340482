//! Reading a tree: key ranges, lookups, the leaf level, separator entries of a
//! level, and the iterators and read-ahead cursor over them.

use std::ops::Bound;

use crate::error::Result;
use crate::page::PageView;
use crate::row::Tid;

use super::layout::*;
use super::tree::{BTree, MAX_KEY, Meta, Node};

impl BTree {
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
    ///
    /// A point lookup does not need a range cursor's buffers: it descends
    /// with its parents' separators bracketing each search (as the cache's
    /// lookup does), reads the key's entries in place on the leaf, and walks
    /// on along the chain while they go on. Stored keys are full encoded keys
    /// (checked at insert), which are prefix-free: the entries of `key` are
    /// one run in entry order, and the first entry of another key ends it.
    pub fn lookup(&self, key: &[u8]) -> Result<Vec<Tid>> {
        if key.len() > MAX_KEY {
            return Ok(Vec::new());
        }
        let meta = self.meta();
        let (mut leaf, mut bracket) = self.leaf_for_key(&meta, key)?;
        let mut out = Vec::new();
        for _ in 0..meta.num_pages {
            let g = self.read_node_for(&meta, leaf, Node::Leaf, key, Some(&bracket))?;
            let v = PageView::new(&g);
            let n = v.n_slots();
            let before = |s| bytes_lt(slot_bytes(&v, s), key);
            let mut s = search_in(n, key, &bracket, |s| slot_bytes(&v, s), before);
            while s < n {
                let Some(tid) = self.tid_under_key(leaf, s, slot_bytes(&v, s), key)? else {
                    return Ok(out);
                };
                out.push(tid);
                s += 1;
            }
            let next = leaf_siblings(&v).0;
            if next == NO_PAGE {
                return Ok(out);
            }
            self.check_link(&meta, leaf, next)?;
            leaf = next;
            bracket = Bracket::default();
        }
        Err(self.err(format!(
            "the leaf chain is longer than the tree (a cycle through page {leaf})"
        )))
    }

    /// The tuple id of the entry `e` in slot `s` of `leaf` if it is stored
    /// under exactly `key`; `None` where another key starts (which ends a
    /// point lookup's run). An entry too short for a tuple id is an error
    /// naming the page and slot.
    pub(super) fn tid_under_key(
        &self,
        leaf: u32,
        s: u16,
        e: &[u8],
        key: &[u8],
    ) -> Result<Option<Tid>> {
        if e.len() < TID_LEN {
            return Err(self.err(format!(
                "leaf page {leaf} slot {s} holds {} bytes, too short for a tuple id",
                e.len()
            )));
        }
        Ok((key_part(e) == key).then(|| Tid::decode(&e[e.len() - TID_LEN..])))
    }

    /// The leftmost leaf that can hold entries of the full key `key`, and the
    /// separators its parent has around it (the bounds of its search).
    pub(super) fn leaf_for_key(&self, meta: &Meta, key: &[u8]) -> Result<(u32, Bracket)> {
        let mut bracket = Bracket::default();
        let leaf = self.descend(
            meta,
            key,
            |sep| bytes_lt(sep, key),
            None,
            Some(&mut bracket),
        )?;
        Ok((leaf, bracket))
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
        let meta = self.meta();
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
        let meta = self.meta();
        let height = meta.height as usize;
        if level + 1 >= height {
            return Ok((Vec::new(), 1.0));
        }
        let (mut pages, mut entries, mut subtrees) = (vec![meta.root], Vec::new(), 1.0);
        for l in 0..=level {
            let node_level = (height - 1 - l) as u32;
            let (mut children, mut fanout) = (Vec::new(), 0usize);
            self.prefetch_runs(&pages)?;
            for &p in &pages {
                let g = self.read_node(&meta, p, Node::Internal(node_level))?;
                let v = PageView::new(&g);
                let mut slots: Vec<(&[u8], u32)> = Vec::with_capacity(v.n_slots() as usize);
                for s in 0..v.n_slots() {
                    let slot = slot_bytes(&v, s);
                    if slot.len() < TID_LEN + CHILD_LEN {
                        return Err(self.err(format!(
                            "internal page {p} slot {s} holds {} bytes, too short for a separator and a child",
                            slot.len()
                        )));
                    }
                    let (sep, child) = split_slot(slot);
                    slots.push((sep, child));
                }
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
                        self.check_link(&meta, p, child)?;
                        // Each page has one parent in a sound tree: more
                        // children than pages means links repeat (and a few
                        // levels of them would multiply without bound).
                        if children.len() >= meta.num_pages as usize {
                            return Err(self.err(format!(
                                "level {} lists more children than the tree has pages (page {p} repeats links)",
                                l + 1
                            )));
                        }
                        children.push(child);
                    }
                }
            }
            subtrees *= fanout as f64 / pages.len().max(1) as f64;
            pages = children;
        }
        Ok((entries, subtrees))
    }
}

impl BTree {
    /// Reads each run of consecutive page numbers in `pages` into the pool in
    /// one request (up to [`LEAF_READ_AHEAD`] pages): a bulk-built level lies
    /// in page order, so the nodes of a level over a range cost a request, not
    /// one random read each (27 of them at 0.7 ms on a busy disk made a 10M-row
    /// Smooth Scan wait 19 ms for its range estimate).
    fn prefetch_runs(&self, pages: &[u32]) -> Result<()> {
        let mut i = 0;
        while i < pages.len() {
            let mut j = i + 1;
            while j < pages.len()
                && pages[j] == pages[j - 1].wrapping_add(1)
                && j - i < LEAF_READ_AHEAD as usize
            {
                j += 1;
            }
            if j - i > 1 {
                self.pool.prefetch(self.file, pages[i] as u64, j - i)?;
            }
            i = j;
        }
        Ok(())
    }

    /// About how many entries lie within `[lower, upper]`, from the internal
    /// nodes over the range only: the separators in the range on the first
    /// level (from the root) that has at least [`ESTIMATE_SUBTREES`] of them,
    /// or on the level above the leaves, times the entries a subtree of that
    /// level holds on average (the two subtrees at the range's ends count
    /// half each). A narrow range costs a page per level; the whole tree, the
    /// root. A tree of one leaf answers with all its entries.
    pub fn estimate_range(&self, lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> Result<f64> {
        let height = self.height();
        let entries = self.len() as f64;
        for level in 0..height.saturating_sub(1) {
            let (seps, subtrees) = self.level_entries_in(level, lower, upper)?;
            if seps.len() >= ESTIMATE_SUBTREES || level + 2 >= height {
                let per_subtree = entries / subtrees.max(1.0);
                return Ok((seps.len() as f64).max(0.5) * per_subtree);
            }
        }
        Ok(entries)
    }
}

/// Subtrees in the range that make [`BTree::estimate_range`] stop descending.
const ESTIMATE_SUBTREES: usize = 32;

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
    /// Leaves the cursor has read so far.
    pub fn leaves_read(&self) -> u64 {
        self.steps
    }

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
        let meta = tree.meta();
        // Whether the first page read is the previous leaf again (no step forward).
        let mut reread = false;
        // The bounds the first leaf's parent gives; none for later leaves.
        let mut bracket = Bracket::default();
        let mut page = if !self.started {
            self.started = true;
            match &self.lower {
                Bound::Unbounded => meta.first_leaf,
                lower => tree.descend(
                    &meta,
                    bound_key(lower),
                    |sep| before_lower(lower, sep),
                    None,
                    Some(&mut bracket),
                )?,
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
            // Where the walk resumes, or where the range starts.
            let target = if last.is_empty() {
                bound_key(lower)
            } else {
                last.as_slice()
            };
            let start = search_in(
                n,
                target,
                &std::mem::take(&mut bracket),
                |s| slot_bytes(&v, s),
                |s| {
                    let e = slot_bytes(&v, s);
                    before_lower(lower, e) || (!last.is_empty() && bytes_le(e, last.as_slice()))
                },
            );
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
            if self.next_leaf != NO_PAGE {
                tree.check_link(&meta, page, self.next_leaf)?;
            }
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
        let meta = tree.meta();
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
        let next = leaf_siblings(&v).0;
        if next != NO_PAGE {
            tree.check_link(&meta, page, next)?;
        }
        self.next = Some(next);
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

/// The key of a range bound (empty when unbounded), for [`search`]'s aim.
fn bound_key(b: &Bound<Vec<u8>>) -> &[u8] {
    match b {
        Bound::Included(k) | Bound::Excluded(k) => k,
        Bound::Unbounded => &[],
    }
}
