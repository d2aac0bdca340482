//! The cold tier's local object cache: whole objects in files of a directory,
//! at most a given number of bytes, least recently used object out first.
//!
//! Why whole objects: this is the pull-based baseline of Skipper §3.2 —
//! PostgreSQL over a FUSE file system that fetches a relation's 1 GB segment
//! as one object the first time any page of it is read, and serves the
//! segment's pages locally until it is evicted. The executor reads in its own
//! order, so a scan that comes back to an evicted object fetches it again
//! (counted as a refetch), which is what makes the baseline collapse when
//! clients interleave.
//!
//! Concurrency: readers of an object being fetched wait for that one fetch
//! (no second GET). Each cached object is an open file shared by its readers;
//! eviction unlinks it, so a reader still holding it finishes its read and
//! the space goes back when the last one lets go. Room for an object is made
//! (by eviction) before its fetch starts, so the directory holds at most the
//! limit, except while more objects are being fetched at once than fit, or
//! when one object alone is larger than the limit (it is then the only one
//! held). Files are strata temporary files (`strata-temp-cold-<pid>-<n>`):
//! those of a process that died are removed by the next read-write open of
//! the database, or by the next cache in the same directory.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use strata_storage::StorageError;

use crate::stats::ColdStats;

/// An object in the cache, open for reading.
pub type CachedObject = Arc<File>;

enum Entry {
    /// Being fetched by one reader; the others wait on the slot.
    Fetching(Arc<FetchSlot>),
    Ready {
        file: CachedObject,
        path: PathBuf,
        bytes: u64,
        /// Its position in the LRU order.
        tick: u64,
    },
}

#[derive(Default)]
struct FetchSlot {
    /// `Some(Ok)` once fetched, `Some(Err(message))` if the fetch failed.
    done: Mutex<Option<Result<(), String>>>,
    cv: Condvar,
}

#[derive(Default)]
struct State {
    entries: HashMap<String, Entry>,
    /// Ready objects by last use.
    lru: BTreeMap<u64, String>,
    tick: u64,
    /// Bytes held or reserved by fetches in progress.
    bytes: u64,
    /// Objects fetched at least once (to count refetches).
    seen: HashSet<String>,
}

/// The cache (see the module docs).
pub struct ObjectCache {
    dir: PathBuf,
    limit: u64,
    state: Mutex<State>,
    stats: Arc<ColdStats>,
}

/// Why [`ObjectCache::get`] failed: the fetch's own error, or (for a reader
/// that waited on another's fetch) its message.
pub enum CacheError {
    Fetch(StorageError),
    Waited(String),
}

impl ObjectCache {
    /// A cache of at most `limit` bytes in `dir` (created when first needed).
    pub fn new(dir: &Path, limit: u64, stats: Arc<ColdStats>) -> ObjectCache {
        strata_storage::temp::remove_stale_once(dir);
        ObjectCache {
            dir: dir.to_path_buf(),
            limit,
            state: Mutex::new(State::default()),
            stats,
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Object `name` of `bytes` bytes, from the cache, or fetched by
    /// `fetch(path)` into a new file at `path` (which must leave exactly the
    /// object there, checked, or fail).
    pub fn get(
        &self,
        name: &str,
        bytes: u64,
        fetch: impl FnOnce(&Path) -> Result<(), StorageError>,
    ) -> Result<CachedObject, CacheError> {
        let slot = loop {
            let mut st = self.state.lock();
            match st.entries.get(name) {
                Some(Entry::Ready { file, .. }) => {
                    let file = file.clone();
                    Self::touch(&mut st, name);
                    self.stats.add_hits(1);
                    return Ok(file);
                }
                Some(Entry::Fetching(slot)) => {
                    let slot = slot.clone();
                    drop(st);
                    self.stats.add_shared_fetches(1);
                    let mut done = slot.done.lock();
                    while done.is_none() {
                        slot.cv.wait(&mut done);
                    }
                    if let Some(Err(msg)) = &*done {
                        return Err(CacheError::Waited(msg.clone()));
                    }
                    // Fetched: loop to take it (it may even be evicted already).
                }
                None => {
                    let slot = Arc::new(FetchSlot::default());
                    st.entries
                        .insert(name.to_string(), Entry::Fetching(slot.clone()));
                    self.stats.add_misses(1);
                    if !st.seen.insert(name.to_string()) {
                        self.stats.add_refetches(1);
                    }
                    self.make_room(&mut st, bytes);
                    st.bytes += bytes;
                    self.stats.set_cached_bytes(st.bytes);
                    break slot;
                }
            }
        };
        let path = strata_storage::temp::temp_path(&self.dir, "cold");
        let fetched = std::fs::create_dir_all(&self.dir)
            .map_err(|e| StorageError::io(&self.dir, e))
            .and_then(|()| fetch(&path))
            .and_then(|()| File::open(&path).map_err(|e| StorageError::io(&path, e)));
        let mut st = self.state.lock();
        let result = match fetched {
            Ok(file) => {
                let file = Arc::new(file);
                st.tick += 1;
                let tick = st.tick;
                st.lru.insert(tick, name.to_string());
                st.entries.insert(
                    name.to_string(),
                    Entry::Ready {
                        file: file.clone(),
                        path,
                        bytes,
                        tick,
                    },
                );
                *slot.done.lock() = Some(Ok(()));
                Ok(file)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                st.entries.remove(name);
                st.bytes -= bytes;
                self.stats.set_cached_bytes(st.bytes);
                *slot.done.lock() = Some(Err(e.to_string()));
                Err(CacheError::Fetch(e))
            }
        };
        drop(st);
        slot.cv.notify_all();
        result
    }

    /// Marks `name` (ready) as just used.
    fn touch(st: &mut State, name: &str) {
        st.tick += 1;
        let now = st.tick;
        if let Some(Entry::Ready { tick, .. }) = st.entries.get_mut(name) {
            let old = std::mem::replace(tick, now);
            st.lru.remove(&old);
            st.lru.insert(now, name.to_string());
        }
    }

    /// Evicts least recently used objects until `incoming` more bytes fit
    /// (or nothing ready is left to evict).
    fn make_room(&self, st: &mut State, incoming: u64) {
        while st.bytes + incoming > self.limit {
            let Some((_, victim)) = st.lru.pop_first() else {
                break;
            };
            if let Some(Entry::Ready { path, bytes, .. }) = st.entries.remove(&victim) {
                let _ = std::fs::remove_file(&path);
                st.bytes -= bytes;
                self.stats.add_evictions(1);
            }
        }
    }

    /// Objects held now (ready), by name, least recently used first.
    pub fn held(&self) -> Vec<String> {
        self.state.lock().lru.values().cloned().collect()
    }

    /// Forgets every object (their files go).
    pub fn clear(&self) {
        let mut st = self.state.lock();
        let names: Vec<String> = st.lru.values().cloned().collect();
        for n in names {
            if let Some(Entry::Ready { path, bytes, .. }) = st.entries.remove(&n) {
                let _ = std::fs::remove_file(&path);
                st.bytes -= bytes;
            }
        }
        st.lru.clear();
        self.stats.set_cached_bytes(st.bytes);
    }
}

impl Drop for ObjectCache {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    fn fill(path: &Path, byte: u8, len: usize) -> Result<(), StorageError> {
        std::fs::write(path, vec![byte; len]).map_err(|e| StorageError::io(path, e))
    }

    #[test]
    fn lru_by_object_within_the_limit_counting_evictions_and_refetches() {
        let dir = tempfile::tempdir().unwrap();
        let stats = Arc::new(ColdStats::default());
        let cache = ObjectCache::new(dir.path(), 300, stats.clone());
        let get = |name: &str, byte: u8| {
            let f = match cache.get(name, 100, |p| fill(p, byte, 100)) {
                Ok(f) => f,
                Err(_) => panic!("fetch failed"),
            };
            let mut b = [0u8; 1];
            f.read_exact_at(&mut b, 99).unwrap();
            assert_eq!(b[0], byte);
        };
        get("a", 1);
        get("b", 2);
        get("c", 3);
        get("a", 1); // hit: a is now the most recent
        get("d", 4); // evicts b
        assert_eq!(cache.held(), ["c", "a", "d"]);
        get("b", 2); // refetch, evicts c
        let s = stats.snapshot();
        assert_eq!((s.hits, s.misses, s.evictions, s.refetches), (1, 5, 2, 1));
        assert_eq!(s.peak_cached_bytes, 300);
        let files = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, 3);
        drop(cache);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_failed_fetch_leaves_nothing_and_is_tried_again() {
        let dir = tempfile::tempdir().unwrap();
        let stats = Arc::new(ColdStats::default());
        let cache = ObjectCache::new(dir.path(), 1000, stats.clone());
        let r = cache.get("x", 100, |p| {
            fill(p, 9, 10)?;
            Err(StorageError::Schema("boom".into()))
        });
        assert!(matches!(r, Err(CacheError::Fetch(StorageError::Schema(_)))));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        assert_eq!(stats.snapshot().cached_bytes, 0);
        assert!(cache.get("x", 100, |p| fill(p, 9, 100)).is_ok());
    }

    #[test]
    fn concurrent_readers_of_one_object_share_one_fetch() {
        let dir = tempfile::tempdir().unwrap();
        let stats = Arc::new(ColdStats::default());
        let cache = Arc::new(ObjectCache::new(dir.path(), 1000, stats.clone()));
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let fetcher = {
            let cache = cache.clone();
            std::thread::spawn(move || {
                let r = cache.get("obj", 100, |p| {
                    started_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                    fill(p, 5, 100)
                });
                assert!(r.is_ok());
            })
        };
        started_rx.recv().unwrap();
        let readers: Vec<_> = (0..7)
            .map(|_| {
                let cache = cache.clone();
                std::thread::spawn(move || {
                    let r = cache.get("obj", 100, |_| panic!("a second fetch"));
                    assert!(r.is_ok());
                })
            })
            .collect();
        // Every reader is waiting on the one fetch before it is let finish.
        while stats.snapshot().shared_fetches < 7 {
            std::thread::yield_now();
        }
        release_tx.send(()).unwrap();
        fetcher.join().unwrap();
        for t in readers {
            t.join().unwrap();
        }
        let s = stats.snapshot();
        assert_eq!((s.misses, s.shared_fetches, s.hits), (1, 7, 7));
    }
}
