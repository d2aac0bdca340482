//! Batched changes: [`BTree::insert_sorted`] and [`BTree::delete_sorted`] take a
//! run of entries sorted by `(key, tid)` and visit each leaf the run touches
//! once, instead of descending from the root for every entry.
//!
//! Both walk the run the same way: descend for its first entry not yet done,
//! remembering the leaf's upper bound (the smallest separator above the entry
//! on the way down, none for the last leaf); every entry of the run below that
//! bound belongs to this leaf, so all of them are applied to it in one write;
//! then descend again for the first entry at or past the bound.

use std::ops::Range;

use crate::error::Result;
use crate::page::{HEADER_SIZE, PAGE_SIZE, PageKind, PageMut, PageView, SLOT_SIZE};
use crate::row::Tid;

use super::layout::*;
use super::tree::{BTree, MAX_KEY, Meta, Node};

/// A run of entries (`key ++ tid`) in one buffer, strictly ascending.
struct Run {
    bytes: Vec<u8>,
    /// End of entry i in `bytes`.
    ends: Vec<usize>,
}

impl Run {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// Bytes entries `range` take on a page, slots included.
    fn page_bytes(&self, range: Range<usize>) -> usize {
        if range.is_empty() {
            return 0;
        }
        let start = if range.start == 0 {
            0
        } else {
            self.ends[range.start - 1]
        };
        self.ends[range.end - 1] - start + range.len() * SLOT_SIZE
    }

    /// The end of the entries from `from` on that lie below `high` (all of
    /// them without a bound).
    fn below(&self, from: usize, high: Option<&[u8]>) -> usize {
        let Some(high) = high else {
            return self.len();
        };
        let (mut lo, mut hi) = (from, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.get(mid) < high {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl BTree {
    /// Copies `entries` into one run, checking that they ascend strictly by
    /// `(key, tid)`. Keys longer than [`MAX_KEY`] are an error for an insert and
    /// left out of a delete (no such entry can be in the tree).
    fn run(&self, entries: &[(Vec<u8>, Tid)], insert: bool) -> Result<Run> {
        let total: usize = entries.iter().map(|(k, _)| k.len() + TID_LEN).sum();
        let mut run = Run {
            bytes: Vec::with_capacity(total),
            ends: Vec::with_capacity(entries.len()),
        };
        for (n, (key, tid)) in entries.iter().enumerate() {
            if key.len() > MAX_KEY {
                if insert {
                    self.check_key(key)?;
                }
                continue;
            }
            let start = run.bytes.len();
            run.bytes.extend_from_slice(key);
            tid.encode(&mut run.bytes);
            if let Some(&prev_end) = run.ends.last() {
                let prev_start = run.ends.len().checked_sub(2).map_or(0, |i| run.ends[i]);
                let prev = &run.bytes[prev_start..prev_end];
                if run.bytes[start..] <= *prev {
                    return Err(self.err(format!(
                        "batched {} input is not sorted strictly by (key, tid): entry {} (key {}, tuple {tid}) does not follow key {}, tuple {}",
                        if insert { "insert" } else { "delete" },
                        n + 1,
                        hex(key),
                        hex(key_part(prev)),
                        Tid::decode(&prev[prev.len() - TID_LEN..]),
                    )));
                }
            }
            run.ends.push(run.bytes.len());
        }
        Ok(run)
    }

    /// Descends to the leaf that holds `entry`'s place and returns it with its
    /// upper bound: the smallest separator above `entry` on the way down (the
    /// deepest one there is, as each level's bounds lie within its parent's), or
    /// `None` for the last leaf. Every entry in `[entry, bound)` belongs there.
    fn descend_bounded(&self, meta: &Meta, entry: &[u8]) -> Result<(u32, Option<Vec<u8>>)> {
        let mut page = meta.root;
        let mut high = None;
        for level in (1..meta.height).rev() {
            let g = self.read_node(meta, page, Node::Internal(level))?;
            let v = PageView::new(&g);
            let n = v.n_slots();
            let idx = search(
                n,
                entry,
                |s| split_slot(slot_bytes(&v, s)).0,
                |s| bytes_le(split_slot(slot_bytes(&v, s)).0, entry),
            );
            if idx < n {
                high = Some(split_slot(slot_bytes(&v, idx)).0.to_vec());
            }
            page = self.child(meta, &v, page, idx)?;
        }
        Ok((page, high))
    }

    /// Inserts `entries` (encoded key, tid), which must be sorted strictly by
    /// `(key, tid)`; the result is the tree that [`BTree::insert`] of each would
    /// give, up to where pages split. Each leaf the run touches is descended to
    /// once and takes every entry of the run that belongs to it (below the next
    /// separator) in one write. A leaf that overflows is split into as many pages
    /// as its old and new entries need, of about equal fill, linked in after it;
    /// their separators then go to the parents as [`BTree::insert`] puts one
    /// (a descent per new page, not per entry). At the very end of the tree
    /// (ascending appends) the pages are filled full instead, as single inserts
    /// keep the old leaf full, so an ascending load leaves full leaves.
    ///
    /// Unsorted input or an over-long key is an error before anything changes.
    /// An entry that exists already is an error too, found when its leaf is
    /// reached: the leaves before it have then taken their part of the run (the
    /// tree is consistent, with that prefix of the run inserted), and the
    /// caller's write transaction is expected to abort, as after a failed
    /// [`BTree::insert`] among several.
    pub fn insert_sorted(&self, entries: &[(Vec<u8>, Tid)]) -> Result<()> {
        let run = self.run(entries, true)?;
        let mut meta = self.latch.write();
        let mut i = 0;
        while i < run.len() {
            let (leaf, high) = self.descend_bounded(&meta, run.get(i))?;
            let j = run.below(i, high.as_deref());
            let seps = self.insert_into_leaf(&mut meta, leaf, &run, i..j)?;
            for (sep, page) in seps {
                let mut path = Vec::with_capacity(meta.height as usize);
                self.descend(
                    &meta,
                    &sep,
                    |s| bytes_le(s, sep.as_slice()),
                    Some(&mut path),
                    None,
                )?;
                self.insert_separator(&mut meta, path, sep, page)?;
            }
            i = j;
        }
        Ok(())
    }

    /// Puts `run[range]`, all of which belong to `leaf`, on it; returns the
    /// separators and pages of the new leaves a split linked in after it (none
    /// when everything fit), in order.
    fn insert_into_leaf(
        &self,
        meta: &mut Meta,
        leaf: u32,
        run: &Run,
        range: Range<usize>,
    ) -> Result<Vec<(Vec<u8>, u32)>> {
        let mut g = self.write_node(meta, leaf, Node::Leaf)?;
        let v = PageView::new(&g);
        let n = v.n_slots();
        // Existing entries must not come again: one merge pass finds them.
        let mut a = 0u16;
        for b in range.clone() {
            let e = run.get(b);
            let step = gallop(n - a, |s| slot_bytes(&v, a + s) < e);
            a += step;
            if a < n && slot_bytes(&v, a) == e {
                return Err(self.err(format!(
                    "entry for key {} and tuple {} already exists",
                    hex(key_part(e)),
                    Tid::decode(&e[e.len() - TID_LEN..])
                )));
            }
        }
        let add = run.page_bytes(range.clone());
        let free = v.free_space();
        if free >= add && PAGE_SIZE - free + add <= self.page_budget {
            // Everything fits: in place, as single inserts would put them.
            let low = range.len() * SLOT_SIZE;
            let all_in = self.insert_keeping_cache(&mut g, low, add - low, |p| {
                let mut pm = PageMut::new(p);
                let mut lo = 0u16;
                for b in range.clone() {
                    let e = run.get(b);
                    let view = pm.view();
                    let step = gallop(view.n_slots() - lo, |s| slot_bytes(&view, lo + s) < e);
                    lo += step;
                    if !pm.insert_at(lo, e) {
                        return false;
                    }
                    lo += 1;
                }
                true
            });
            if !all_in {
                return Err(self.err(format!("leaf {leaf} has no room for an entry")));
            }
            meta.entries += range.len() as u64;
            return Ok(Vec::new());
        }

        // A split: the old entries and the new ones, merged, over this leaf and
        // as many new ones as they need.
        let old = g.to_vec();
        drop(g);
        let carried = self.carry_for_split(leaf, &old);
        let ov = PageView::new(&old);
        let (next, prev) = leaf_siblings(&ov);
        let old_bytes = PAGE_SIZE - ov.free_space() - HEADER_SIZE;
        let total = old_bytes + add;
        let cap = self
            .page_budget
            .min(PAGE_SIZE)
            .saturating_sub(HEADER_SIZE)
            .max(1);
        // The end of the tree, everything new after everything old: fill pages
        // full. Otherwise spread the entries evenly over the pages they need.
        let append = next == NO_PAGE && (n == 0 || run.get(range.start) > slot_bytes(&ov, n - 1));
        let pages = total.div_ceil(cap).max(2);
        let mut local = vec![0u8; PAGE_SIZE];
        PageMut::init(&mut local, PageKind::BTreeLeaf, leaf as u64);
        let (mut page, mut page_prev) = (leaf, prev);
        let (mut used, mut done, mut closed) = (0usize, 0usize, 0usize);
        let mut seps = Vec::new();
        let (mut a, mut b) = (0u16, range.start);
        loop {
            let e: &[u8] = match (a < n, b < range.end) {
                (false, false) => break,
                (true, false) => {
                    a += 1;
                    slot_bytes(&ov, a - 1)
                }
                (false, true) => {
                    b += 1;
                    run.get(b - 1)
                }
                (true, true) => {
                    let (x, y) = (slot_bytes(&ov, a), run.get(b));
                    if x < y {
                        a += 1;
                        x
                    } else {
                        b += 1;
                        y
                    }
                }
            };
            let len = e.len() + SLOT_SIZE;
            let full = used + len > cap;
            let share = !append && done >= (closed + 1) * total / pages;
            if used > 0 && (full || share) {
                let new = self.alloc(meta)?;
                self.emit_leaf(meta, &mut local, (page, page != leaf), new, page_prev)?;
                seps.push((e.to_vec(), new));
                (page_prev, page) = (page, new);
                PageMut::init(&mut local, PageKind::BTreeLeaf, page as u64);
                used = 0;
                closed += 1;
            }
            PageMut::new(&mut local)
                .push(e)
                .ok_or_else(|| self.err(format!("an entry does not fit on new leaf {page}")))?;
            used += len;
            done += len;
        }
        self.emit_leaf(meta, &mut local, (page, page != leaf), next, page_prev)?;
        if next != NO_PAGE && page != leaf {
            let mut g = self.write_node(meta, next, Node::Leaf)?;
            let mut pm = PageMut::new(&mut g);
            let (nn, _) = leaf_siblings(&pm.view());
            set_leaf_siblings(&mut pm, nn, page);
        }
        if let Some(c) = carried {
            let pages: Vec<u32> = std::iter::once(leaf)
                .chain(seps.iter().map(|s| s.1))
                .collect();
            self.refill_after_split(meta, c, &pages)?;
        }
        meta.entries += range.len() as u64;
        if !seps.is_empty() {
            meta.splits += 1;
        }
        Ok(seps)
    }

    /// Writes the leaf built in `local` to page `page` (the split leaf itself, or
    /// a `fresh` one) with its sibling links.
    fn emit_leaf(
        &self,
        meta: &Meta,
        local: &mut [u8],
        (page, fresh): (u32, bool),
        next: u32,
        prev: u32,
    ) -> Result<()> {
        set_leaf_siblings(&mut PageMut::new(local), next, prev);
        let mut g = if fresh {
            self.pool.create(self.file, page as u64)?
        } else {
            self.write_node(meta, page, Node::Leaf)?
        };
        g.copy_from_slice(local);
        Ok(())
    }

    /// Deletes `entries` (encoded key, tid), sorted strictly by `(key, tid)`;
    /// returns how many were there (entries that are not are skipped, as
    /// [`BTree::delete`] returns `false` for them). Each leaf the run touches is
    /// descended to and read once, and written once if it held any of them: all
    /// of the run's entries on it go in one pass. Like [`BTree::delete`] it never
    /// merges pages. Unsorted input is an error before anything changes.
    pub fn delete_sorted(&self, entries: &[(Vec<u8>, Tid)]) -> Result<u64> {
        let run = self.run(entries, false)?;
        let mut meta = self.latch.write();
        let mut removed = 0u64;
        let mut i = 0;
        let mut found: Vec<u16> = Vec::new();
        while i < run.len() {
            let (leaf, high) = self.descend_bounded(&meta, run.get(i))?;
            let j = run.below(i, high.as_deref());
            // Look first, so a leaf without any of them is not dirtied.
            found.clear();
            {
                let g = self.read_node(&meta, leaf, Node::Leaf)?;
                let v = PageView::new(&g);
                let n = v.n_slots();
                let mut a = 0u16;
                for b in i..j {
                    let e = run.get(b);
                    let step = gallop(n - a, |s| slot_bytes(&v, a + s) < e);
                    a += step;
                    if a < n && slot_bytes(&v, a) == e {
                        found.push(a);
                        a += 1;
                    }
                }
            }
            if !found.is_empty() {
                let mut g = self.write_node(&meta, leaf, Node::Leaf)?;
                let tids: Vec<Tid> = found
                    .iter()
                    .map(|&s| {
                        let e = slot_bytes(&PageView::new(&g), s);
                        Tid::decode(&e[e.len() - TID_LEN..])
                    })
                    .collect();
                self.compact_keeping_cache(&mut g, &tids, |p| PageMut::new(p).remove_many(&found));
                meta.entries = meta.entries.saturating_sub(found.len() as u64);
                removed += found.len() as u64;
                drop(g);
                // Their tids may be reused (see `delete`).
                self.log_cache_update(&tids);
            }
            i = j;
        }
        Ok(removed)
    }
}
