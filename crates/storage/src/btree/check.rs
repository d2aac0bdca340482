//! A tree's shape and fill (`stats`) and its full structural check (`check`).

use crate::error::Result;
use crate::page::{PAGE_SIZE, PageKind, PageView};

use super::layout::*;
use super::tree::{BTree, BTreeStats, Node};

impl BTree {
    /// Shape and fill of the tree (reads every page through the pool).
    pub fn stats(&self) -> Result<BTreeStats> {
        let meta = self.meta();
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
        let meta = self.meta();
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
}
