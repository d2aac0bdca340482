//! The cache of column-file bytes: what the buffer pool is to heap pages.
//!
//! Column files are immutable and their names are never reused in a
//! database, so a range of a file, once read, stays what it was: the cache
//! keeps ranges (a column chunk, a dictionary, a page) by (file, offset,
//! length) until it needs the room, evicting the least recently used. Its
//! budget is the buffer pool's size, beside the pool: a columnar table's
//! bytes get the memory a row table's pages get. One cache per open
//! database ([`strata_storage::Database::extension`]), shared by its
//! sessions and scans.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;

/// A range of a column file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub file: String,
    pub start: u64,
    pub len: u64,
}

struct Entry {
    bytes: Bytes,
    used: u64,
}

#[derive(Default)]
struct Inner {
    map: HashMap<Key, Entry>,
    bytes: u64,
    clock: u64,
}

/// The cache.
pub struct ChunkCache {
    budget: u64,
    inner: Mutex<Inner>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl ChunkCache {
    /// A cache holding at most `budget` bytes.
    pub fn new(budget: u64) -> ChunkCache {
        ChunkCache {
            budget,
            inner: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    pub fn get(&self, key: &Key) -> Option<Bytes> {
        let mut g = self.inner.lock();
        g.clock += 1;
        let now = g.clock;
        match g.map.get_mut(key) {
            Some(e) => {
                e.used = now;
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(e.bytes.clone())
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Whether it holds `key`: a question, neither counted as a hit or a
    /// miss nor making the range recently used.
    pub fn contains(&self, key: &Key) -> bool {
        self.inner.lock().map.contains_key(key)
    }

    /// Keeps `bytes` as `key`; a range larger than an eighth of the budget
    /// is not kept (one scan must not empty the cache). Over budget, the
    /// least recently used ranges go until it is at 7/8 of it.
    pub fn put(&self, key: Key, bytes: Bytes) {
        let len = bytes.len() as u64;
        if len > self.budget / 8 {
            return;
        }
        let mut g = self.inner.lock();
        g.clock += 1;
        let used = g.clock;
        if let Some(old) = g.map.insert(key, Entry { bytes, used }) {
            g.bytes -= old.bytes.len() as u64;
        }
        g.bytes += len;
        if g.bytes > self.budget {
            let mut by_age: Vec<(u64, Key)> =
                g.map.iter().map(|(k, e)| (e.used, k.clone())).collect();
            by_age.sort_unstable_by_key(|(u, _)| *u);
            for (_, k) in by_age {
                if g.bytes <= self.budget / 8 * 7 {
                    break;
                }
                if let Some(e) = g.map.remove(&k) {
                    g.bytes -= e.bytes.len() as u64;
                }
            }
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.inner.lock().bytes
    }

    /// Lookups that found their range, and those that did not.
    pub fn hits_misses(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64) -> Key {
        Key {
            file: "data/t.cols.1.parquet".into(),
            start: i * 100,
            len: 100,
        }
    }

    #[test]
    fn keeps_within_its_budget_and_evicts_the_least_recently_used() {
        let c = ChunkCache::new(1000);
        for i in 0..10 {
            c.put(key(i), Bytes::from(vec![i as u8; 100]));
        }
        assert_eq!(c.bytes(), 1000);
        // Use 0 again: 1 is now the least recently used.
        assert_eq!(c.get(&key(0)).unwrap()[0], 0);
        c.put(key(10), Bytes::from(vec![10; 100]));
        assert!(c.bytes() <= 1000 / 8 * 7);
        assert!(c.get(&key(0)).is_some(), "recently used stays");
        assert!(c.get(&key(1)).is_none(), "least recently used goes");
        assert!(c.get(&key(10)).is_some());
        // Too large for the cache: not kept.
        c.put(key(99), Bytes::from(vec![0; 200]));
        assert!(c.get(&key(99)).is_none());
        let (hits, misses) = c.hits_misses();
        assert_eq!((hits, misses), (3, 2));
        assert!(c.contains(&key(0)) && !c.contains(&key(1)));
        assert_eq!(c.hits_misses(), (3, 2), "asking is not looking up");
    }
}
