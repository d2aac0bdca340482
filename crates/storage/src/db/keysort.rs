//! Sorting the (key, tid) entries of an index in memory, for bulk builds and for
//! `strata check`'s index ↔ heap comparison.
//!
//! An entry orders as the byte string `key ++ tid` (keys are prefix-free, so this is
//! (key, tid) order). Each entry carries the first 16 bytes of that string as a
//! big-endian `u128`, and the sort compares those integers: for keys of up to 10
//! encoded bytes (INT32, INT64, DATE, DECIMAL, and pairs of INT32) the integer *is*
//! the whole entry, so sorting never touches memory outside the entry array and the
//! key is rebuilt from the integer. Longer keys keep their bytes in one arena and
//! fall back to comparing them only when the first 16 bytes tie. Sorting tens of
//! millions of entries this way is bound by the sort itself, not by cache misses.

use std::cmp::Ordering;

use crate::error::{Result, StorageError};
use crate::heap::HeapFile;
use crate::progress::Progress;
use crate::row::{DataType, RowLayout, Tid, encode_key_value};

const INLINE: usize = 16;

struct Item {
    prefix: u128,
    /// Offset of the key in the arena (only for keys that do not fit inline).
    off: u32,
    len: u16,
    tid: Tid,
}

/// Sorted (key, tid) entries.
pub struct SortedEntries {
    arena: Vec<u8>,
    items: Vec<Item>,
}

impl SortedEntries {
    /// Scans `heap` and collects, sorted, the key of every tuple for an index on
    /// `key_cols`.
    pub fn collect(
        heap: &std::sync::Arc<HeapFile>,
        layout: &RowLayout,
        key_cols: &[usize],
        key_types: &[DataType],
        progress: &dyn Progress,
    ) -> Result<SortedEntries> {
        let mut arena = Vec::new();
        let mut items = Vec::new();
        let mut key = Vec::new();
        progress.phase("scan heap for index keys", heap.num_pages());
        let mut last_page = 0;
        heap.scan(|tid, tuple| {
            key.clear();
            for (ty, &c) in key_types.iter().zip(key_cols) {
                encode_key_value(ty, &layout.decode_column(tuple, c, tid), &mut key);
            }
            items.push(Self::item(&mut arena, &key, tid)?);
            if tid.page != last_page {
                progress.advance((tid.page - last_page) as u64);
                last_page = tid.page;
            }
            Ok(())
        })?;
        progress.phase("sort index keys", items.len() as u64);
        items.sort_unstable_by(|a, b| Self::compare(&arena, a, b));
        progress.advance(items.len() as u64);
        Ok(SortedEntries { arena, items })
    }

    /// No entries yet: [`SortedEntries::push`] them, then
    /// [`SortedEntries::sort`] (the entries of rows not in a heap: a column
    /// part's, `strata-columns`).
    pub fn new() -> SortedEntries {
        SortedEntries {
            arena: Vec::new(),
            items: Vec::new(),
        }
    }

    /// Adds entry (`key`, `tid`); the entries are in order only after
    /// [`SortedEntries::sort`].
    pub fn push(&mut self, key: &[u8], tid: Tid) -> Result<()> {
        let it = Self::item(&mut self.arena, key, tid)?;
        self.items.push(it);
        Ok(())
    }

    /// Puts the entries in (key, tid) order.
    pub fn sort(&mut self) {
        let arena = &self.arena;
        self.items
            .sort_unstable_by(|a, b| Self::compare(arena, a, b));
    }

    fn item(arena: &mut Vec<u8>, key: &[u8], tid: Tid) -> Result<Item> {
        let mut entry = [0u8; 32];
        let n = key.len().min(INLINE);
        entry[..n].copy_from_slice(&key[..n]);
        if key.len() < INLINE {
            let mut t = Vec::with_capacity(Tid::ENCODED_LEN);
            tid.encode(&mut t);
            let m = (INLINE - key.len()).min(Tid::ENCODED_LEN);
            entry[key.len()..key.len() + m].copy_from_slice(&t[..m]);
        }
        let prefix = u128::from_be_bytes(entry[..INLINE].try_into().unwrap());
        let off = if key.len() + Tid::ENCODED_LEN > INLINE {
            let off = arena.len();
            arena.extend_from_slice(key);
            u32::try_from(off).map_err(|_| StorageError::Index {
                index: "build".into(),
                reason: "more than 4 GiB of long keys; the in-memory sort cannot hold them".into(),
            })?
        } else {
            0
        };
        Ok(Item {
            prefix,
            off,
            len: key.len() as u16,
            tid,
        })
    }

    fn compare(arena: &[u8], a: &Item, b: &Item) -> Ordering {
        a.prefix.cmp(&b.prefix).then_with(|| {
            if a.len as usize + Tid::ENCODED_LEN <= INLINE
                && b.len as usize + Tid::ENCODED_LEN <= INLINE
            {
                // Both entries are wholly in their prefixes, which are equal.
                return Ordering::Equal;
            }
            Self::key(arena, a)
                .cmp(Self::key(arena, b))
                .then(a.tid.cmp(&b.tid))
        })
    }

    fn key<'a>(arena: &'a [u8], it: &Item) -> &'a [u8] {
        &arena[it.off as usize..][..it.len as usize]
    }

    /// Checks that no key repeats (keys holding a NULL aside, as SQL's
    /// UNIQUE has them); the error of the first that does is `dup(key as
    /// text)`.
    pub fn check_unique(
        &self,
        types: &[DataType],
        dup: impl Fn(String) -> StorageError,
    ) -> Result<()> {
        let mut last: Option<Vec<u8>> = None;
        for (key, _) in self.iter() {
            if last.as_ref() == Some(&key) {
                let (values, _) = crate::row::decode_key(types, &key);
                if !values.iter().any(|v| v.is_null()) {
                    let text: Vec<String> = values
                        .iter()
                        .zip(types)
                        .map(|(v, t)| v.display(t))
                        .collect();
                    return Err(dup(text.join(", ")));
                }
            }
            last = Some(key);
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Entries in (key, tid) order, keys as owned bytes.
    pub fn iter(&self) -> impl Iterator<Item = (Vec<u8>, Tid)> + '_ {
        self.items.iter().map(|it| {
            let key = if it.len as usize + Tid::ENCODED_LEN <= INLINE {
                it.prefix.to_be_bytes()[..it.len as usize].to_vec()
            } else {
                Self::key(&self.arena, it).to_vec()
            };
            (key, it.tid)
        })
    }
}

impl Default for SortedEntries {
    fn default() -> SortedEntries {
        SortedEntries::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the key lengths (short, inline, and long with shared prefixes),
        /// the order is that of (key bytes, tid) and keys come back intact.
        #[test]
        fn sorts_like_key_then_tid(entries in proptest::collection::vec(
            (proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 0..24), 0u32..5, 0u16..3), 0..300)
        ) {
            let mut arena = Vec::new();
            let mut items = Vec::new();
            let mut model = Vec::new();
            for (k, p, s) in &entries {
                // Real keys are prefix-free; make these so with the string key
                // encoding (0x00 escaped as 0x00 0xFF, terminated by 0x00 0x00).
                let mut key = Vec::new();
                for &b in k {
                    key.push(b);
                    if b == 0 {
                        key.push(0xFF);
                    }
                }
                key.extend_from_slice(&[0, 0]);
                let tid = Tid::new(*p, *s);
                if model.iter().any(|(mk, mt)| *mk == key && *mt == tid) {
                    continue;
                }
                items.push(SortedEntries::item(&mut arena, &key, tid).unwrap());
                model.push((key, tid));
            }
            items.sort_unstable_by(|a, b| SortedEntries::compare(&arena, a, b));
            let s = SortedEntries { arena, items };
            model.sort();
            prop_assert_eq!(s.iter().collect::<Vec<_>>(), model);
        }
    }
}
