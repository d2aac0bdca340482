//! The buffer pool's page table: which frame holds each resident page.
//!
//! Every pin looks a page up here, so the lookup is on the path of every
//! index descent. A hash map puts each (file, page) in a bucket of its own,
//! somewhere in a table as large as the pool: a descent's pages are random,
//! and the page data it reads evicts those buckets from the CPU's cache, so
//! each lookup was a cache miss of its own. Here each file has an array
//! indexed by page number, in chunks of [`CHUNK`] pages made when a page of
//! the chunk first comes in: a B+-tree's pages (a few thousand, a few KiB of
//! entries) stay in the CPU's cache beside its root and inner nodes.
//!
//! The cost is memory: 4 bytes for every page of a file's chunks that ever
//! held a resident page (a chunk stays until its file is discarded), at most
//! 0.05% of the files' size, where a hash map costs about 24 bytes per frame.
//!
//! Files are numbered densely by the device (`FileId`), so the files are an
//! array too. A page number past [`DENSE_PAGES`] or a file number past
//! [`DENSE_FILES`] (a damaged link asking for page 2^40, say; the pool puts a
//! page in its table before it reads it) goes to a hash map instead, so no
//! number makes the arrays grow without bound.

use std::collections::HashMap;

use crate::device::FileId;

type Key = (FileId, u64);

/// Pages per chunk of a file's array (2 KiB of frame numbers).
const CHUNK: usize = 512;
/// Pages of a file the arrays cover (4 TiB of 8 KiB pages); beyond, the map.
const DENSE_PAGES: u64 = 1 << 29;
/// Files the arrays cover; beyond, the map.
const DENSE_FILES: u32 = 1 << 20;
/// An empty entry of a chunk.
const EMPTY: u32 = u32::MAX;

#[derive(Default)]
pub(super) struct PageTable {
    /// Per file, its chunks (`None`: no page of that chunk came in yet).
    files: Vec<Vec<Option<Box<[u32; CHUNK]>>>>,
    /// Pages the arrays do not cover.
    far: HashMap<Key, usize, foldhash::fast::RandomState>,
}

/// Where a key's entry lives in the arrays, if they cover it.
fn dense(key: &Key) -> Option<(usize, usize, usize)> {
    let (file, page) = (key.0.0, key.1);
    (file < DENSE_FILES && page < DENSE_PAGES).then(|| {
        (
            file as usize,
            (page / CHUNK as u64) as usize,
            (page % CHUNK as u64) as usize,
        )
    })
}

impl PageTable {
    /// The frame holding `key`'s page.
    #[inline]
    pub(super) fn get(&self, key: &Key) -> Option<usize> {
        match dense(key) {
            Some((f, c, i)) => {
                let e = self.files.get(f)?.get(c)?.as_ref()?[i];
                (e != EMPTY).then_some(e as usize)
            }
            None => self.far.get(key).copied(),
        }
    }

    pub(super) fn contains_key(&self, key: &Key) -> bool {
        self.get(key).is_some()
    }

    /// Records that frame `idx` holds `key`'s page.
    pub(super) fn insert(&mut self, key: Key, idx: usize) {
        debug_assert!(idx < EMPTY as usize);
        match dense(&key) {
            Some((f, c, i)) => {
                if self.files.len() <= f {
                    self.files.resize_with(f + 1, Vec::new);
                }
                let chunks = &mut self.files[f];
                if chunks.len() <= c {
                    chunks.resize_with(c + 1, || None);
                }
                chunks[c].get_or_insert_with(|| Box::new([EMPTY; CHUNK]))[i] = idx as u32;
            }
            None => {
                self.far.insert(key, idx);
            }
        }
    }

    /// Forgets `key`'s page; the frame that held it, if any.
    pub(super) fn remove(&mut self, key: &Key) -> Option<usize> {
        match dense(key) {
            Some((f, c, i)) => {
                let chunk = self.files.get_mut(f)?.get_mut(c)?.as_mut()?;
                let e = std::mem::replace(&mut chunk[i], EMPTY);
                (e != EMPTY).then_some(e as usize)
            }
            None => self.far.remove(key),
        }
    }

    /// Drops the arrays of a file none of whose pages is in the table any
    /// more (its pages were discarded: the file is being deleted).
    pub(super) fn forget_file(&mut self, file: FileId) {
        if let Some(chunks) = self.files.get_mut(file.0 as usize)
            && chunks
                .iter()
                .flatten()
                .all(|c| c.iter().all(|&e| e == EMPTY))
        {
            *chunks = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn far_pages_and_files_go_to_the_map_and_nothing_grows_for_them() {
        let mut t = PageTable::default();
        let far = [
            (FileId(0), DENSE_PAGES),
            (FileId(0), u64::MAX),
            (FileId(DENSE_FILES), 0),
            (FileId(u32::MAX), 7),
        ];
        for (i, k) in far.iter().enumerate() {
            t.insert(*k, i);
        }
        assert!(t.files.is_empty());
        for (i, k) in far.iter().enumerate() {
            assert_eq!(t.get(k), Some(i));
        }
        assert_eq!(t.remove(&far[1]), Some(1));
        assert_eq!(t.get(&far[1]), None);
        // The last page the arrays cover is in them.
        t.insert((FileId(2), DENSE_PAGES - 1), 9);
        assert_eq!(t.files.len(), 3);
        assert_eq!(t.get(&(FileId(2), DENSE_PAGES - 1)), Some(9));
    }

    #[test]
    fn a_discarded_files_chunks_are_dropped_only_when_empty() {
        let mut t = PageTable::default();
        t.insert((FileId(1), 3), 0);
        t.insert((FileId(1), 5000), 1);
        t.forget_file(FileId(1));
        assert_eq!(t.get(&(FileId(1), 5000)), Some(1));
        t.remove(&(FileId(1), 3));
        t.remove(&(FileId(1), 5000));
        t.forget_file(FileId(1));
        assert!(t.files[1].is_empty());
        assert_eq!(t.get(&(FileId(1), 3)), None);
        t.forget_file(FileId(40)); // never seen: nothing to do
    }

    proptest! {
        /// Any sequence of inserts and removes: the table answers as a map.
        #[test]
        fn the_table_agrees_with_a_map(
            ops in proptest::collection::vec(
                (any::<bool>(), 0u32..4, prop_oneof![0u64..2000, Just(DENSE_PAGES), any::<u64>()], 0usize..1000),
                0..300,
            ),
        ) {
            let mut t = PageTable::default();
            let mut model: HashMap<Key, usize> = HashMap::new();
            for (insert, file, page, idx) in ops {
                let key = (FileId(file), page);
                if insert {
                    t.insert(key, idx);
                    model.insert(key, idx);
                } else {
                    prop_assert_eq!(t.remove(&key), model.remove(&key));
                }
                prop_assert_eq!(t.get(&key), model.get(&key).copied());
            }
            for (k, &v) in &model {
                prop_assert_eq!(t.get(k), Some(v));
                prop_assert!(t.contains_key(k));
            }
        }
    }
}
