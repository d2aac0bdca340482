//! The Result Cache against a model, its spill counters, and its temporary files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_access::result_cache::ResultCache;
use strata_storage::StorageError;
use strata_storage::device::{Device, FileDevice, FileId, IoStats};
use strata_storage::page::PAGE_SIZE;
use strata_storage::row::Tid;
use strata_storage::temp::remove_stale as remove_stale_spill_files;

/// An index entry: a big-endian key, then the tid (as the B+-tree encodes them).
fn entry(key: u32, tid: Tid) -> Vec<u8> {
    let mut e = key.to_be_bytes().to_vec();
    tid.encode(&mut e);
    e
}

fn tuple_of(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i * 31 + j * 7) as u8).collect()
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// Runs the access pattern of ordered Smooth Scan: index entries in order; at
/// random moments a burst of not-yet-reached entries (as a probed region finds
/// them) is inserted; each entry reached is taken and must come back exactly if
/// it was inserted. Returns the cache for its report.
fn drive(
    n: usize,
    tuple_len: usize,
    per_part: usize,
    budget: usize,
    seed: u64,
    temp: &Path,
) -> ResultCache {
    let mut rng = StdRng::seed_from_u64(seed);
    // Entries in index order; tids scattered like a random key column's.
    let mut entries: Vec<(Vec<u8>, Tid, usize)> = (0..n)
        .map(|i| {
            let tid = Tid::new(rng.random_range(0..100_000), rng.random_range(0..200));
            (entry(rng.random_range(0..1_000_000), tid), tid, i)
        })
        .collect();
    entries.sort();
    entries.dedup_by(|a, b| a.0 == b.0);
    let bounds: Vec<Vec<u8>> = entries
        .iter()
        .skip(per_part)
        .step_by(per_part)
        .map(|e| e.0.clone())
        .collect();
    let mut cache = ResultCache::new(bounds, budget, Arc::new(FileDevice::new(false)), temp);
    let mut inserted = vec![false; entries.len()];
    for at in 0..entries.len() {
        if rng.random_bool(0.05) {
            // A region: a burst of later entries, like the pages of a region hold.
            let burst = rng.random_range(1..n / 4 + 2);
            for _ in 0..burst {
                let j = rng.random_range(at..entries.len());
                if !inserted[j] && j != at {
                    let (e, tid, i) = &entries[j];
                    cache.insert(e, *tid, &tuple_of(*i, tuple_len)).unwrap();
                    inserted[j] = true;
                }
            }
        }
        let (e, tid, i) = &entries[at];
        let got = cache.take(e, *tid).unwrap().map(<[u8]>::to_vec);
        if inserted[at] {
            assert_eq!(got, Some(tuple_of(*i, tuple_len)), "entry {at}");
        } else {
            assert_eq!(got, None, "entry {at} was never inserted");
        }
    }
    cache
}

#[test]
fn matches_the_model_at_budgets_down_to_a_few_pages() {
    let dir = tempfile::tempdir().unwrap();
    for (seed, budget) in [
        (1, 5 * PAGE_SIZE),
        (2, 8 * PAGE_SIZE),
        (3, 64 << 10),
        (4, 1 << 20),
    ] {
        for tuple_len in [1, 40, 300] {
            let cache = drive(6000, tuple_len, 20, budget, seed, dir.path());
            let r = cache.report();
            assert!(r.peak_bytes <= budget, "{r:?}");
            if budget < 1 << 20 || tuple_len == 300 {
                assert!(r.spilled_tuples > 0, "{r:?}");
            }
            // Every spilled byte is read back, exactly once.
            assert_eq!(r.spill_bytes_read, r.spill_bytes_written, "{r:?}");
        }
    }
    assert!(files_in(dir.path()).is_empty());
}

#[test]
fn spills_write_once_and_read_once_within_the_one_pass_limit() {
    let dir = tempfile::tempdir().unwrap();
    // 40 000 tuples of 40 bytes (1.8 MB spilled) under 1 MiB: runs of 128 KiB,
    // about 14 of them, within the 64 a 1 MiB budget reads at once.
    let cache = drive(40_000, 40, 200, 1 << 20, 7, dir.path());
    let r = cache.report();
    assert!(r.spill_runs > 4, "{r:?}");
    assert_eq!(r.spill_merges, 0, "{r:?}");
    let bound = r.spilled_bytes as f64 * 1.1 + (r.spill_runs as usize * PAGE_SIZE) as f64;
    assert!(
        (r.spill_bytes_written as f64) <= bound,
        "{} written for {} spilled bytes in {} runs",
        r.spill_bytes_written,
        r.spilled_bytes,
        r.spill_runs
    );
    assert_eq!(r.spill_bytes_read, r.spill_bytes_written);
    assert!(r.peak_bytes <= 1 << 20);
}

#[test]
fn past_the_one_pass_limit_merges_and_still_reads_each_byte_once() {
    let dir = tempfile::tempdir().unwrap();
    // 1.8 MB spilled under 64 KiB: far more runs than one pass can read.
    let cache = drive(40_000, 40, 20, 64 << 10, 8, dir.path());
    let r = cache.report();
    assert!(r.spill_merges > 0, "{r:?}");
    assert_eq!(r.spill_bytes_read, r.spill_bytes_written);
    assert!(r.peak_bytes <= 64 << 10, "{r:?}");
}

#[test]
fn the_current_partition_frees_taken_tuples_by_compacting() {
    // One partition, current from the start: nothing can be spilled, so the
    // bytes of taken tuples must be reclaimed. 20 000 tuples of 40 bytes pass
    // through a 64 KiB budget with 500 of them live at a time.
    let dir = tempfile::tempdir().unwrap();
    let budget = 64 << 10;
    let mut cache = ResultCache::new(vec![], budget, Arc::new(FileDevice::new(false)), dir.path());
    let n = 20_000u32;
    let ahead = 500u32;
    let put = |cache: &mut ResultCache, i: u32| {
        let tid = Tid::new(i, 1);
        cache
            .insert(&entry(i, tid), tid, &tuple_of(i as usize, 40))
            .unwrap();
    };
    for i in 0..ahead {
        put(&mut cache, i);
    }
    for i in 0..n {
        if i + ahead < n {
            put(&mut cache, i + ahead);
        }
        let tid = Tid::new(i, 1);
        let got = cache.take(&entry(i, tid), tid).unwrap().map(<[u8]>::to_vec);
        assert_eq!(got, Some(tuple_of(i as usize, 40)), "tuple {i}");
    }
    let r = cache.report();
    assert!(r.compactions > 10, "{r:?}");
    assert_eq!(r.spilled_tuples, 0, "{r:?}");
    assert!(r.peak_bytes <= budget, "{r:?}");
}

/// Inserts tuples far ahead until the cache has spilled to its file.
fn spill_some(cache: &mut ResultCache) {
    for i in 0..5000u32 {
        let tid = Tid::new(i, 0);
        cache
            .insert(&entry(500_000 + i, tid), tid, &[7u8; 100])
            .unwrap();
    }
}

fn bounds() -> Vec<Vec<u8>> {
    (1..100u32)
        .map(|k| entry(k * 10_000, Tid::new(0, 0)))
        .collect()
}

#[test]
fn the_spill_file_is_removed_on_drop_and_during_unwinding() {
    let dir = tempfile::tempdir().unwrap();
    let mut cache = ResultCache::new(
        bounds(),
        64 << 10,
        Arc::new(FileDevice::new(false)),
        dir.path(),
    );
    spill_some(&mut cache);
    assert!(cache.report().spill_bytes_written > 0);
    assert!(!files_in(dir.path()).is_empty());
    drop(cache);
    assert!(files_in(dir.path()).is_empty());

    let d = dir.path().to_path_buf();
    let r = std::panic::catch_unwind(move || {
        let mut cache = ResultCache::new(bounds(), 64 << 10, Arc::new(FileDevice::new(false)), &d);
        spill_some(&mut cache);
        assert!(!files_in(&d).is_empty());
        panic!("operator failed");
    });
    assert!(r.is_err());
    assert!(files_in(dir.path()).is_empty());
}

/// A file device whose writes fail with ENOSPC after `room` pages.
struct FullDisk {
    inner: FileDevice,
    room: std::sync::atomic::AtomicU64,
}

impl Device for FullDisk {
    fn create(&self, path: &Path, segment_pages: u64) -> strata_storage::Result<FileId> {
        self.inner.create(path, segment_pages)
    }
    fn open(&self, path: &Path, segment_pages: u64) -> strata_storage::Result<FileId> {
        self.inner.open(path, segment_pages)
    }
    fn close(&self, file: FileId) {
        self.inner.close(file)
    }
    fn path(&self, file: FileId) -> PathBuf {
        self.inner.path(file)
    }
    fn locate(&self, file: FileId, page: u64) -> (PathBuf, u64) {
        self.inner.locate(file, page)
    }
    fn num_pages(&self, file: FileId) -> strata_storage::Result<u64> {
        self.inner.num_pages(file)
    }
    fn read(&self, file: FileId, first_page: u64, buf: &mut [u8]) -> strata_storage::Result<()> {
        self.inner.read(file, first_page, buf)
    }
    fn write(&self, file: FileId, first_page: u64, buf: &[u8]) -> strata_storage::Result<()> {
        let pages = (buf.len() / PAGE_SIZE) as u64;
        let left = self.room.load(std::sync::atomic::Ordering::Relaxed);
        if pages > left {
            let (seg, _) = self.inner.locate(file, first_page);
            return Err(StorageError::io(seg, std::io::Error::from_raw_os_error(28)));
        }
        self.room
            .store(left - pages, std::sync::atomic::Ordering::Relaxed);
        self.inner.write(file, first_page, buf)
    }
    fn truncate(&self, file: FileId, pages: u64) -> strata_storage::Result<()> {
        self.inner.truncate(file, pages)
    }
    fn sync(&self, file: FileId) -> strata_storage::Result<()> {
        self.inner.sync(file)
    }
    fn stats(&self) -> &IoStats {
        self.inner.stats()
    }
    fn describe(&self) -> String {
        "full disk".into()
    }
}

#[test]
fn a_full_disk_is_a_clear_error_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Arc::new(FullDisk {
        inner: FileDevice::new(false),
        room: 3.into(),
    });
    let mut cache = ResultCache::new(bounds(), 64 << 10, dev, dir.path());
    let mut err = None;
    for i in 0..5000u32 {
        let tid = Tid::new(i, 0);
        if let Err(e) = cache.insert(&entry(500_000 + i, tid), tid, &[7u8; 100]) {
            err = Some(e);
            break;
        }
    }
    let msg = err.expect("the disk fills up").to_string();
    assert!(
        msg.starts_with("result cache spill: no space left on device writing ")
            && msg.contains("resultcache-"),
        "{msg}"
    );
    // Removed at once, not only when the cache goes.
    assert!(files_in(dir.path()).is_empty());
    // Tuples were lost with the file: later use fails (saying why) rather
    // than answering wrongly.
    let tid = Tid::new(9999, 0);
    let again = cache.insert(&entry(900_000, tid), tid, &[7u8; 100]);
    assert!(again.unwrap_err().to_string().contains("spill file failed"));
    assert!(
        cache
            .take(&entry(0, Tid::new(0, 0)), Tid::new(0, 0))
            .is_err()
    );
    drop(cache);
    assert!(files_in(dir.path()).is_empty());
}

#[test]
fn stale_spill_files_of_dead_processes_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    // No process has a pid this large (Linux caps pids at 2^22).
    let dead = dir.path().join("strata-temp-resultcache-4000000000-0.0000");
    let live = dir.path().join(format!(
        "strata-temp-resultcache-{}-777.0000",
        std::process::id()
    ));
    let other = dir.path().join("notes.txt");
    for f in [&dead, &live, &other] {
        std::fs::write(f, b"x").unwrap();
    }
    // The first cache in this directory cleans it.
    let cache = ResultCache::new(
        vec![],
        1 << 20,
        Arc::new(FileDevice::new(false)),
        dir.path(),
    );
    drop(cache);
    assert!(!dead.exists());
    assert!(live.exists() && other.exists());
    std::fs::write(&dead, b"x").unwrap();
    assert_eq!(remove_stale_spill_files(dir.path()), 1);
    assert!(live.exists() && other.exists());
}

#[test]
fn opening_a_database_read_write_removes_leftover_spill_files() {
    use strata_storage::Database;
    use strata_storage::db::DbOptions;
    let dir = tempfile::tempdir().unwrap();
    let opts = || DbOptions {
        direct_io: false,
        buffer_pool_bytes: 1 << 20,
        ..Default::default()
    };
    drop(Database::create(dir.path(), opts()).unwrap());
    std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
    let left = dir.path().join(format!(
        "tmp/strata-temp-resultcache-{}-5.0000",
        std::process::id()
    ));
    std::fs::write(&left, b"x").unwrap();
    drop(
        Database::open(
            dir.path(),
            DbOptions {
                read_only: true,
                ..opts()
            },
        )
        .unwrap(),
    );
    assert!(left.exists(), "a read-only open changes nothing");
    drop(Database::open(dir.path(), opts()).unwrap());
    assert!(!left.exists());
}
