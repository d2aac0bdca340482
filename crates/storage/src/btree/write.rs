//! Changing a tree: single inserts with leaf and internal splits, deletes, and
//! the bulk build from a sorted run (batched inserts and deletes into a tree
//! that has entries are in `batch.rs`).

use crate::error::Result;
use crate::page::{PAGE_SIZE, PageKind, PageMut, PageView, SLOT_SIZE};
use crate::row::Tid;

use super::layout::*;
use super::tree::{BTree, MAX_KEY, Meta, Node};

impl BTree {
    /// Inserts the entry `(key, tid)`; `key` is an encoded key. Splits full pages on
    /// the way back up; a root split adds a level. Inserting an entry that exists is
    /// an error.
    pub fn insert(&self, key: &[u8], tid: Tid) -> Result<()> {
        self.check_key(key)?;
        let entry = make_entry(key, tid);
        let mut meta = self.latch.write();
        let mut path = Vec::with_capacity(meta.height as usize);
        let leaf = self.descend(
            &meta,
            &entry,
            |sep| bytes_le(sep, entry.as_slice()),
            Some(&mut path),
            None,
        )?;
        let (all, pos, next, prev) = {
            let mut g = self.write_node(&meta, leaf, Node::Leaf)?;
            let (pos, found) = leaf_search(&PageView::new(&g), &entry);
            if found {
                return Err(self.err(format!(
                    "entry for key {} and tuple {tid} already exists",
                    hex(key)
                )));
            }
            if self.fits(&PageView::new(&g), entry.len())
                && self.insert_keeping_cache(&mut g, SLOT_SIZE, entry.len(), |p| {
                    PageMut::new(p).insert_at(pos, &entry)
                })
            {
                meta.entries += 1;
                return Ok(());
            }
            let v = PageView::new(&g);
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
    pub(super) fn insert_separator(
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
        let leaf = self.descend(
            &meta,
            &entry,
            |sep| bytes_le(sep, entry.as_slice()),
            None,
            None,
        )?;
        // Look first, so a miss does not dirty the page.
        let pos = {
            let g = self.read_node(&meta, leaf, Node::Leaf)?;
            match leaf_search(&PageView::new(&g), &entry) {
                (pos, true) => pos,
                (_, false) => return Ok(false),
            }
        };
        let mut g = self.write_node(&meta, leaf, Node::Leaf)?;
        self.compact_keeping_cache(&mut g, &[tid], |p| PageMut::new(p).remove_at(pos));
        meta.entries = meta.entries.saturating_sub(1);
        drop(g);
        // The tid may be reused: nothing cached for it may be served again,
        // nor a value read before the delete filled after it (a predicate in
        // the index cache's log, see `cache/protocol.rs`).
        self.log_cache_update(&[tid]);
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
}
