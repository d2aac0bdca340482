//! The cache of column pages: what the buffer pool is to heap pages.
//!
//! Column files are immutable and their names are never reused in a
//! database, so a range of a file, once read, stays what it was: the cache
//! keeps ranges (a column chunk, a dictionary, a page) by (file, offset,
//! length) until it needs the room, evicting the least recently used. Its
//! budget is the buffer pool's size, beside the pool: a columnar table's
//! bytes get the memory a row table's pages get. One cache per open
//! database ([`strata_storage::Database::extension`]), shared by its
//! sessions and scans.
//!
//! A range is kept in one of two forms, or both, under the one budget: its
//! bytes as read, or, for a data page a point read decoded
//! ([`crate::points`]), the values of the slices of it the read decoded. A
//! heap page in the pool is read in place; a column page must be
//! decompressed and decoded up to a value before the value can be read.
//! Keeping the values makes the second read of a slice what a heap page's
//! is: an index into memory.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::ArrayRef;
use bytes::Bytes;
use parking_lot::Mutex;

/// A range of a column file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// The file's name in the catalog, shared by every key of the file.
    pub file: Arc<str>,
    pub start: u64,
    pub len: u64,
}

/// Which form of a range an entry holds: its bytes, or the values of one
/// slice of the data page it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Form {
    Bytes,
    Values(u32),
}

#[derive(Clone)]
enum Held {
    Bytes(Bytes),
    Values(ArrayRef),
}

struct Entry {
    held: Held,
    /// Its memory, as the budget counts it.
    size: u64,
    used: u64,
}

#[derive(Default)]
struct Inner {
    map: HashMap<(Key, Form), Entry, foldhash::fast::RandomState>,
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

    fn lookup(&self, key: &Key, form: Form) -> Option<Held> {
        let mut g = self.inner.lock();
        g.clock += 1;
        let now = g.clock;
        match g.map.get_mut(&(key.clone(), form)) {
            Some(e) => {
                e.used = now;
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(e.held.clone())
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// The bytes of range `key`, if held.
    pub fn get(&self, key: &Key) -> Option<Bytes> {
        match self.lookup(key, Form::Bytes)? {
            Held::Bytes(b) => Some(b),
            Held::Values(_) => None,
        }
    }

    /// The values of slice `slice` of the data page at `key`, if held.
    pub fn get_values(&self, key: &Key, slice: u32) -> Option<ArrayRef> {
        match self.lookup(key, Form::Values(slice))? {
            Held::Values(a) => Some(a),
            Held::Bytes(_) => None,
        }
    }

    /// Whether it holds `key`'s bytes: a question, neither counted as a
    /// hit or a miss nor making the range recently used.
    pub fn contains(&self, key: &Key) -> bool {
        self.holds(key, Form::Bytes)
    }

    /// Whether it holds the values of slice `slice` of the data page at
    /// `key` (a question, as [`ChunkCache::contains`]).
    pub fn contains_values(&self, key: &Key, slice: u32) -> bool {
        self.holds(key, Form::Values(slice))
    }

    fn holds(&self, key: &Key, form: Form) -> bool {
        self.inner.lock().map.contains_key(&(key.clone(), form))
    }

    /// Keeps `bytes` as `key`; a range larger than an eighth of the budget
    /// is not kept (one scan must not empty the cache). Over budget, the
    /// least recently used entries go until it is at 7/8 of it.
    pub fn put(&self, key: Key, bytes: Bytes) {
        let size = bytes.len() as u64;
        self.keep(key, Form::Bytes, Held::Bytes(bytes), size);
    }

    /// Keeps `values`, slice `slice` of the data page at `key` decoded,
    /// counted by their memory; as [`ChunkCache::put`] otherwise.
    pub fn put_values(&self, key: Key, slice: u32, values: ArrayRef) {
        let size = values.get_array_memory_size() as u64;
        self.keep(key, Form::Values(slice), Held::Values(values), size);
    }

    fn keep(&self, key: Key, form: Form, held: Held, size: u64) {
        if size > self.budget / 8 {
            return;
        }
        let mut g = self.inner.lock();
        g.clock += 1;
        let used = g.clock;
        if let Some(old) = g.map.insert((key, form), Entry { held, size, used }) {
            g.bytes -= old.size;
        }
        g.bytes += size;
        if g.bytes > self.budget {
            let mut by_age: Vec<(u64, (Key, Form))> =
                g.map.iter().map(|(k, e)| (e.used, k.clone())).collect();
            by_age.sort_unstable_by_key(|(u, _)| *u);
            for (_, k) in by_age {
                if g.bytes <= self.budget / 8 * 7 {
                    break;
                }
                if let Some(e) = g.map.remove(&k) {
                    g.bytes -= e.size;
                }
            }
        }
    }

    /// Bytes held (values counted by their memory).
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
            file: Arc::from("data/t.cols.1.parquet"),
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

    #[test]
    fn keeps_a_page_s_values_beside_its_bytes_under_one_budget() {
        use arrow::array::{Array, Int64Array};
        let values: ArrayRef = Arc::new(Int64Array::from_iter_values(0..64));
        let size = values.get_array_memory_size() as u64;
        let c = ChunkCache::new(size * 8);
        c.put(key(0), Bytes::from(vec![0; 100]));
        assert!(c.get_values(&key(0), 0).is_none(), "bytes are not values");
        c.put_values(key(0), 0, values.clone());
        assert!(c.contains(&key(0)) && c.contains_values(&key(0), 0));
        assert!(!c.contains_values(&key(0), 1), "another slice");
        assert_eq!(c.bytes(), 100 + size);
        let got = c.get_values(&key(0), 0).unwrap();
        assert_eq!(got.len(), 64);
        assert_eq!(c.get(&key(0)).unwrap().len(), 100, "and the bytes stay");
        // Values past the budget evict the least recently used, bytes or
        // values alike.
        for i in 1..9 {
            c.put_values(key(i), 0, values.clone());
        }
        assert!(c.bytes() <= size * 8);
        assert!(!c.contains(&key(0)) && !c.contains_values(&key(0), 0));
        assert!(c.contains_values(&key(8), 0));
    }
}
