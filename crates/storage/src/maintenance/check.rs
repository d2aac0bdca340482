//! `strata check`: reads every page of every table and index and cross-checks them.
//!
//! * Every heap page's checksum, page number and header (the device read verifies
//!   them; a failure names the file and page), and every tuple against the schema.
//! * The row count against the catalog.
//! * Every index's structure ([`BTree::check`](crate::btree::BTree::check)), and
//!   index ↔ heap consistency: the (key, tid) entries recomputed from the heap,
//!   sorted, must equal the index's leaf entries one for one.
//! * A split table's side table (`split.rs`) like a table, and every row's
//!   pointer: each points to a side row, and each side row is pointed to once.

use std::ops::ControlFlow;

use serde::Serialize;

use crate::db::keysort::SortedEntries;
use crate::db::{Database, Progress};
use crate::error::{Result, StorageError};
use crate::page::PageKind;

#[derive(Clone, Debug, Serialize)]
pub struct TableCheck {
    pub table: String,
    pub pages: u64,
    pub rows: u64,
    /// (index name, entries)
    pub indexes: Vec<(String, u64)>,
    /// Heap pages of its side table (`strata split`), if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side_pages: Option<u64>,
}

/// Checks every table; the first problem found is returned as an error that names
/// where it is.
pub fn check_database(db: &Database, progress: &dyn Progress) -> Result<Vec<TableCheck>> {
    let mut out = Vec::new();
    for name in db.table_names() {
        out.push(check_table(db, &name, progress)?);
    }
    Ok(out)
}

pub fn check_table(db: &Database, name: &str, progress: &dyn Progress) -> Result<TableCheck> {
    let table = db.table(name)?;
    let heap = table.heap();
    let path = db.device().path(heap.file_id());
    let layout = table.layout();
    let mut rows = 0u64;
    let mut side_tids = Vec::new();
    progress.phase(&format!("check {name}: heap pages"), heap.num_pages());
    heap.scan_pages(128, 2, |page_no, view| {
        let corrupt = |reason: String| StorageError::CorruptPage {
            path: path.clone(),
            page: page_no,
            reason,
        };
        if view.kind() != Some(PageKind::Heap) {
            return Err(corrupt(format!(
                "expected a heap page, found kind {:?}",
                view.kind()
            )));
        }
        crate::page::verify_slots(view.bytes()).map_err(corrupt)?;
        for (slot, t) in view.tuples() {
            layout
                .validate(t)
                .map_err(|r| corrupt(format!("slot {slot}: {r}")))?;
            if let Some(side) = layout.side_tid(t) {
                side_tids.push((side, crate::row::Tid::new(page_no as u32, slot)));
            }
            rows += 1;
        }
        progress.advance(1);
        Ok(ControlFlow::Continue(()))
    })?;
    let expected = db.catalog().table(name)?.rows;
    if rows != expected && rows != table.rows() {
        return Err(StorageError::Catalog {
            path: crate::catalog::Catalog::path(db.dir()),
            reason: format!(
                "table '{name}' has {rows} rows in its heap but the catalog says {expected}"
            ),
        });
    }
    let side_pages = match table.side_table() {
        Some(side) => {
            let sc = check_table(db, side.name(), progress)?;
            check_pointers(db, name, side, side_tids)?;
            Some(sc.pages)
        }
        None => None,
    };
    let mut indexes = Vec::new();
    for idx in table.indexes() {
        let iname = &idx.def.name;
        let bad = |reason: String| StorageError::Index {
            index: iname.clone(),
            reason,
        };
        let entries = idx.btree.check()?;
        if entries != rows {
            return Err(bad(format!("has {entries} entries for {rows} rows")));
        }
        let expected =
            SortedEntries::collect(heap, layout, &idx.key_cols, &idx.key_types, progress)?;
        progress.phase(
            &format!("check {name}: index {iname} against the heap"),
            entries,
        );
        let mut want = expected.iter();
        for leaf in idx.btree.leaves()? {
            let (page, got) = leaf?;
            progress.advance(got.len() as u64);
            for (key, tid) in got {
                match want.next() {
                    Some((k, t)) if k == key && t == tid => {}
                    Some((_, t)) => {
                        return Err(bad(format!(
                            "leaf page {page}: entry for tuple {tid} does not match the heap (expected an entry for tuple {t})"
                        )));
                    }
                    None => {
                        return Err(bad(format!(
                            "leaf page {page}: entry for tuple {tid} has no row in the heap"
                        )));
                    }
                }
            }
        }
        if let Some((_, t)) = want.next() {
            return Err(bad(format!("row {t} has no index entry")));
        }
        if let Some(hot) = idx.hot() {
            // The hot partition holds, for each key it has, exactly the
            // entries the full index has for it (`cluster.rs`).
            hot.btree.check()?;
            let mut last: Option<Vec<u8>> = None;
            for leaf in hot.btree.leaves()? {
                let (page, got) = leaf?;
                for (key, _) in got {
                    if last.as_deref() == Some(key.as_slice()) {
                        continue;
                    }
                    let mut full = idx.btree.lookup(&key)?;
                    let mut part = hot.btree.lookup(&key)?;
                    full.sort_unstable();
                    part.sort_unstable();
                    if full != part {
                        return Err(bad(format!(
                            "hot partition leaf page {page}: a key has entries {part:?} there but {full:?} in the full index"
                        )));
                    }
                    last = Some(key);
                }
            }
        }
        if let Some(tree) = idx.column_tree() {
            // Its tree over the column part: sound, and positions inside the
            // part (`strata-columns` checks each entry's key against the
            // column files).
            tree.check()?;
            let part = table.columns().map_or(0, |c| c.rows());
            for leaf in tree.leaves()? {
                let (page, got) = leaf?;
                if let Some((_, tid)) = got.iter().find(|(_, t)| t.position() >= part) {
                    return Err(bad(format!(
                        "column-row tree leaf page {page}: position {} is past the column part's {part} rows",
                        tid.position()
                    )));
                }
            }
        }
        indexes.push((iname.clone(), entries));
    }
    // A columnar table's delete set: a sound tree of positions of its column
    // part, each an entry of its own.
    if let Some(set) = table.delete_set() {
        let bad = |reason: String| StorageError::Columnar {
            table: name.to_string(),
            message: format!("table {name}'s delete set ({}): {reason}", set.file()),
        };
        let entries = set.btree.check()?;
        let positions = set.positions()?;
        if positions.len() as u64 != entries {
            return Err(bad(format!(
                "{} positions read for {entries} entries",
                positions.len()
            )));
        }
        let part = table.columns().map_or(0, |c| c.rows());
        if let Some(&last) = positions.last()
            && last >= part
        {
            return Err(bad(format!(
                "position {last} is past the column part's {part} rows"
            )));
        }
        if let Some(w) = positions.windows(2).find(|w| w[0] >= w[1]) {
            return Err(bad(format!("positions {} and {} out of order", w[0], w[1])));
        }
    }
    Ok(TableCheck {
        table: name.to_string(),
        pages: heap.num_pages(),
        rows,
        indexes,
        side_pages,
    })
}

/// Each row of table `name` points to a side row of `side`, and each side
/// row is pointed to by one row. `pointers`: (side row, row) pairs.
fn check_pointers(
    db: &Database,
    name: &str,
    side: &crate::db::Table,
    mut pointers: Vec<(crate::row::Tid, crate::row::Tid)>,
) -> Result<()> {
    let path = db.device().path(side.heap().file_id());
    let bad = |page: u32, reason: String| StorageError::CorruptPage {
        path: path.clone(),
        page: page as u64,
        reason: format!("side table of {name}: {reason}"),
    };
    pointers.sort_unstable();
    if let Some(w) = pointers.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(bad(
            w[0].0.page,
            format!(
                "slot {} is pointed to by rows {} and {}",
                w[0].0.slot, w[0].1, w[1].1
            ),
        ));
    }
    let mut want = pointers.iter();
    let mut err = None;
    side.heap().scan(|tid, _| {
        match want.next() {
            Some((t, _)) if *t == tid => {}
            Some((t, row)) if *t < tid => {
                err.get_or_insert(bad(
                    t.page,
                    format!("row {row} points to slot {}, which holds no row", t.slot),
                ));
            }
            _ => {
                err.get_or_insert(bad(
                    tid.page,
                    format!(
                        "slot {} holds a row no row of the table points to",
                        tid.slot
                    ),
                ));
            }
        }
        Ok(())
    })?;
    if let Some((t, row)) = want.next() {
        err.get_or_insert(bad(
            t.page,
            format!("row {row} points to slot {}, which holds no row", t.slot),
        ));
    }
    match err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
