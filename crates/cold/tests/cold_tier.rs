//! The cold tier end to end over an in-memory object store: a generated table
//! read through every access path gives the same rows before `tier cold`,
//! after it (pulled object by object through the bounded cache) and after
//! `tier local`; the cache keeps its bound and counts evictions and
//! refetches; corrupt and missing objects and writes to a cold table fail
//! naming what is wrong; transient failures are retried; and a move stopped
//! after any of its durable steps, with the database crashed there, loses
//! nothing and finishes when run again.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use strata_access::{PathChoice, Policy, Predicate, ScanSpec, SmoothOptions, Trigger, run_scan};
use strata_cold::client::{RetryPolicy, StoreFactory};
use strata_cold::device::{ColdConfig, ColdTier};
use strata_cold::tier::{self, TableTier, TierOptions};
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::device::{PAGE_SIZE, cold_manifest_path, segment_path};
use strata_storage::row::Tid;

const ROWS: u64 = 20_000;
const ENDPOINT: &str = "http://csd.test:9000";
/// 16 pages per object: the test table's heap is ~7 objects, its index ~4.
const OBJECT_PAGES: u64 = 16;

/// An in-memory store that fails the next `failures` GETs as a refused
/// connection would (the server restarting), and counts GETs.
#[derive(Debug, Default)]
struct Flaky {
    inner: InMemory,
    failures: AtomicU64,
    gets: AtomicU64,
}

impl fmt::Display for Flaky {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Flaky({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for Flaky {
    async fn put_opts(
        &self,
        location: &ObjectPath,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }
    async fn put_multipart_opts(
        &self,
        location: &ObjectPath,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }
    async fn get_opts(
        &self,
        location: &ObjectPath,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        let fail = self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if fail {
            return Err(object_store::Error::Generic {
                store: "Flaky",
                source: Box::new(std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    "connection refused (injected)",
                )),
            });
        }
        self.inner.get_opts(location, options).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<ObjectPath>>,
    ) -> BoxStream<'static, object_store::Result<ObjectPath>> {
        self.inner.delete_stream(locations)
    }
    fn list(
        &self,
        prefix: Option<&ObjectPath>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }
    async fn list_with_delimiter(
        &self,
        prefix: Option<&ObjectPath>,
    ) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(
        &self,
        from: &ObjectPath,
        to: &ObjectPath,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// A tier whose every endpoint is `store`, holding `cache_objects` objects.
fn tier_over(store: &Arc<Flaky>, cache_objects: u64) -> ColdTier {
    let s: Arc<dyn ObjectStore> = store.clone();
    let factory: StoreFactory = Arc::new(move |_: &str, _: &str| Ok(s.clone()));
    ColdTier::with_factory(
        ColdConfig {
            cache_bytes: cache_objects * OBJECT_PAGES * PAGE_SIZE as u64,
            cache_dir: None,
            query_tag: "test".into(),
            retry: RetryPolicy {
                retry_for: std::time::Duration::from_secs(5),
                initial_backoff: std::time::Duration::from_millis(1),
                max_backoff: std::time::Duration::from_millis(4),
            },
        },
        factory,
    )
}

fn options(tier: Option<&ColdTier>) -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 1 << 20,
        direct_io: false,
        cold_tier: tier.map(ColdTier::layer),
        ..DbOptions::default()
    }
}

fn tier_options() -> TierOptions {
    TierOptions {
        object_bytes: OBJECT_PAGES * PAGE_SIZE as u64,
        bucket: Some("testdb".into()),
        ..TierOptions::new(ENDPOINT)
    }
}

fn generate(dir: &std::path::Path, tier: Option<&ColdTier>) -> Database {
    let db = Database::create(dir, options(tier)).unwrap();
    let mut spec = strata_load::GenSpec::new(strata_load::GenKind::Microbench, ROWS);
    spec.seed = 7;
    strata_load::generate(&db, &spec, &NoProgress).unwrap();
    db
}

/// Every path's rows for `c2 < 2000` (sorted by tid, with their bytes), and
/// the full scan's of the whole table.
type Rows = Vec<(Tid, Vec<u8>)>;

fn paths(dir: &std::path::Path) -> Vec<(&'static str, PathChoice)> {
    vec![
        ("full", PathChoice::Full),
        ("index", PathChoice::Index),
        ("sort", PathChoice::Sort),
        (
            "smooth",
            PathChoice::Smooth(SmoothOptions {
                policy: Policy::Elastic,
                trigger: Trigger::Eager,
                temp_dir: dir.to_path_buf(),
                ..Default::default()
            }),
        ),
    ]
}

fn scan(db: &Database, path: &PathChoice, pred: &str) -> strata_storage::Result<Rows> {
    let table = db.table("microbench")?;
    let pred = Predicate::parse(table.schema(), pred).unwrap();
    let mut rows = Vec::new();
    let spec = ScanSpec::new(table, pred);
    run_scan(spec, path, &Default::default(), |b| {
        rows.extend(b.iter().map(|(t, r)| (t, r.to_vec())))
    })
    .map_err(|e| match e {
        strata_access::AccessError::Storage(s) => s,
        other => panic!("{other}"),
    })?;
    rows.sort();
    Ok(rows)
}

fn all_answers(db: &Database, dir: &std::path::Path) -> Vec<(String, Rows)> {
    let mut out = vec![(
        "all".to_string(),
        scan(db, &PathChoice::Full, "c1 >= 0").unwrap(),
    )];
    for (name, p) in paths(dir) {
        out.push((name.to_string(), scan(db, &p, "c2 < 2000").unwrap()));
    }
    out
}

fn heap_base(db: &Database) -> std::path::PathBuf {
    db.dir()
        .join(&db.catalog().table("microbench").unwrap().heap_file)
}

#[test]
fn cold_reads_equal_local_reads_on_every_path_and_after_coming_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Flaky::default());
    let tier = tier_over(&store, 100);
    let db = generate(dir.path(), Some(&tier));
    let local = all_answers(&db, dir.path());
    assert_eq!(local[0].1.len() as u64, ROWS);
    assert!(local[1].1.len() > 100);
    for (name, rows) in &local[2..] {
        assert_eq!(rows, &local[1].1, "{name} disagrees with full locally");
    }

    let report = tier::to_cold(&db, &tier, "microbench", &tier_options()).unwrap();
    assert_eq!(report.files, 2);
    let heap = heap_base(&db);
    assert!(cold_manifest_path(&heap).exists());
    assert!(!segment_path(&heap, 0).exists(), "local segments removed");
    match tier::table_tier(db.dir(), &db.catalog().table("microbench").unwrap().clone()).unwrap() {
        TableTier::Cold {
            bucket, objects, ..
        } => {
            assert_eq!(bucket, "testdb");
            assert_eq!(objects, report.objects);
        }
        other => panic!("{other:?}"),
    }
    // The same handle reads the table from the cold tier at once.
    let before = tier.counters();
    assert_eq!(all_answers(&db, dir.path()), local);
    let c = tier.counters() - before;
    assert!(c.gets > 0 && c.misses == c.gets && c.hits > 0, "{c:?}");
    assert!(db.table("microbench").unwrap().is_cold());
    drop(db);

    // A fresh open with a fresh tier: everything pulled again, same answers.
    let tier = tier_over(&store, 100);
    let db = Database::open(dir.path(), options(Some(&tier))).unwrap();
    assert_eq!(all_answers(&db, dir.path()), local);
    // strata check's walk over every page and index agrees.
    let checked = strata_storage::maintenance::check::check_database(&db, &NoProgress).unwrap();
    assert_eq!(checked[0].rows, ROWS);
    // Every object was fetched, and once: the cache holds them all.
    let c = tier.counters();
    assert_eq!(c.gets, report.objects as u64, "{c:?}");
    assert_eq!((c.misses, c.refetches, c.evictions), (c.gets, 0, 0));
    assert_eq!(c.bytes_fetched, report.bytes);

    let back = tier::to_local(&db, &tier, "microbench", &tier_options()).unwrap();
    assert_eq!((back.files, back.objects), (2, report.objects));
    assert!(!cold_manifest_path(&heap).exists());
    drop(db);
    // Local again: no cold tier needed.
    let db = Database::open(dir.path(), options(None)).unwrap();
    assert_eq!(all_answers(&db, dir.path()), local);
    assert!(!db.table("microbench").unwrap().is_cold());
}

#[test]
fn the_cache_keeps_its_bound_and_counts_evictions_and_refetches() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Flaky::default());
    let db = generate(dir.path(), None);
    let local = scan(&db, &PathChoice::Full, "c1 >= 0").unwrap();
    let setup = tier_over(&store, 100);
    let db = {
        drop(db);
        Database::open(dir.path(), options(Some(&setup))).unwrap()
    };
    let r = tier::to_cold(&db, &setup, "microbench", &tier_options()).unwrap();
    drop(db);

    let tier = tier_over(&store, 2);
    let limit = tier.config().cache_bytes;
    let db = Database::open(dir.path(), options(Some(&tier))).unwrap();
    for _ in 0..2 {
        assert_eq!(scan(&db, &PathChoice::Full, "c1 >= 0").unwrap(), local);
        // The next scan starts cold (the pool forgets the heap).
        db.pool()
            .discard_file(db.table("microbench").unwrap().heap().file_id())
            .unwrap();
    }
    let c = tier.counters();
    assert!(c.peak_cached_bytes <= limit, "{c:?} over {limit}");
    assert!(c.evictions > 0, "{c:?}");
    let heap_objects = r.objects as u64 - 1; // the index is one object or more
    assert!(c.refetches >= heap_objects.min(3), "{c:?}");
    assert_eq!(c.gets, c.misses);
    let held = std::fs::read_dir(dir.path().join("tmp"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("strata-temp-cold")
        })
        .count();
    assert!(held <= 2, "{held} objects on disk");
}

/// A database with the table on the cold tier, opened with a fresh tier.
fn cold_db(dir: &std::path::Path, store: &Arc<Flaky>) -> (Database, ColdTier) {
    let tier = tier_over(store, 100);
    let db = generate(dir, Some(&tier));
    tier::to_cold(&db, &tier, "microbench", &tier_options()).unwrap();
    drop(db);
    let tier = tier_over(store, 100);
    (Database::open(dir, options(Some(&tier))).unwrap(), tier)
}

#[test]
fn a_corrupt_object_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Flaky::default());
    let (db, _tier) = cold_db(dir.path(), &store);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let heap_name = heap_base(&db)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let victim = ObjectPath::from(format!("microbench/{heap_name}.2"));
    rt.block_on(async {
        let mut bytes = store
            .inner
            .get(&victim)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
            .to_vec();
        bytes[PAGE_SIZE + 100] ^= 0x40;
        store
            .inner
            .put(&victim, Bytes::from(bytes).into())
            .await
            .unwrap();
    });
    let e = scan(&db, &PathChoice::Full, "c1 >= 0").unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("testdb/microbench/{heap_name}.2"))
            && msg.contains(ENDPOINT)
            && msg.contains("CRC32C"),
        "{msg}"
    );
    assert_eq!(e.exit_code(), strata_storage::exit::CORRUPT);
}

#[test]
fn a_missing_object_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Flaky::default());
    let (db, _tier) = cold_db(dir.path(), &store);
    let heap_name = heap_base(&db)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let victim = ObjectPath::from(format!("microbench/{heap_name}.1"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async { store.inner.delete(&victim).await.unwrap() });
    let msg = scan(&db, &PathChoice::Full, "c1 >= 0")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains(&format!("testdb/microbench/{heap_name}.1"))
            && msg.contains(ENDPOINT)
            && msg.contains("no such object"),
        "{msg}"
    );
}

#[test]
fn writes_to_a_cold_table_fail_saying_how_to_bring_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Flaky::default());
    let (db, tier) = cold_db(dir.path(), &store);
    let want = "table microbench is on the cold tier (read-only); strata tier local microbench brings it back";
    let table = db.table("microbench").unwrap();
    let row: Vec<_> = (0..10).map(strata_storage::row::Value::Int32).collect();
    let txn = db.begin_write().unwrap();
    let e = table.insert_row(&row).unwrap_err();
    assert_eq!(e.to_string(), want);
    assert_eq!(e.exit_code(), strata_storage::exit::USAGE);
    let e = table.delete_row(Tid { page: 0, slot: 0 }).unwrap_err();
    assert_eq!(e.to_string(), want);
    drop(txn);
    let e = db.begin_load("microbench").err().unwrap();
    assert_eq!(e.to_string(), want);
    // And at the device: a write to a cold file.
    let e = db
        .device()
        .write(table.heap().file_id(), 0, &vec![0u8; PAGE_SIZE])
        .unwrap_err();
    assert_eq!(e.to_string(), want);
    // Moving it to the cold tier again says it is there.
    let e = tier::to_cold(&db, &tier, "microbench", &tier_options()).unwrap_err();
    assert!(e.to_string().contains("already on the cold tier"), "{e}");
    let e = tier::to_cold(&db, &tier, "nosuch", &tier_options()).unwrap_err();
    assert_eq!(e.to_string(), "unknown table 'nosuch'");
}

#[test]
fn without_a_cold_tier_opening_a_cold_table_says_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Flaky::default());
    let (db, _tier) = cold_db(dir.path(), &store);
    drop(db);
    let db = Database::open(dir.path(), options(None)).unwrap();
    let e = db.table("microbench").err().unwrap();
    let msg = e.to_string();
    assert!(
        msg.contains("table microbench is on the cold tier")
            && msg.contains(".cold.json")
            && msg.contains("strata tier local microbench"),
        "{msg}"
    );
    assert!(!segment_path(&heap_base(&db), 0).exists());
}

#[test]
fn transient_failures_are_retried_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Flaky::default());
    let (db, tier) = cold_db(dir.path(), &store);
    store.failures.store(3, Ordering::SeqCst);
    assert_eq!(
        scan(&db, &PathChoice::Full, "c1 >= 0").unwrap().len() as u64,
        ROWS
    );
    let c = tier.counters();
    assert_eq!(c.retries, 3, "{c:?}");
    assert_eq!(c.gets, c.misses + 3);
}

/// Stops a move after each of its durable steps, crashing the database
/// there: reopened, the table reads the same; the move run again finishes.
#[test]
fn a_move_stopped_after_any_step_loses_nothing_and_finishes_when_run_again() {
    let scratch = tempfile::tempdir().unwrap();
    let expected = {
        let db = generate(&scratch.path().join("ref"), None);
        scan(&db, &PathChoice::Full, "c1 >= 0").unwrap()
    };
    let mut n = 1;
    let mut finished_cold = false;
    while !finished_cold {
        let dir = scratch.path().join(format!("cold-{n}"));
        let store = Arc::new(Flaky::default());
        let tier = tier_over(&store, 100);
        let db = generate(&dir, Some(&tier));
        let stop = TierOptions {
            stop_after: Some(n),
            ..tier_options()
        };
        let r = tier::to_cold(&db, &tier, "microbench", &stop);
        finished_cold = r.is_ok();
        if let Err(e) = &r {
            assert!(e.to_string().contains("fault injection"), "{e}");
        }
        db.crash();
        let tier = tier_over(&store, 100);
        let db = Database::open(&dir, options(Some(&tier))).unwrap();
        assert_eq!(
            scan(&db, &PathChoice::Full, "c1 >= 0").unwrap(),
            expected,
            "stopped after step {n}"
        );
        let def = db.catalog().table("microbench").unwrap().clone();
        if !matches!(
            tier::table_tier(&dir, &def).unwrap(),
            TableTier::Cold { .. }
        ) {
            assert!(!finished_cold);
            tier::to_cold(&db, &tier, "microbench", &tier_options()).unwrap();
        }
        assert!(matches!(
            tier::table_tier(&dir, &def).unwrap(),
            TableTier::Cold { .. }
        ));
        assert_eq!(
            scan(&db, &PathChoice::Index, "c2 < 500").unwrap(),
            scan(&db, &PathChoice::Full, "c2 < 500").unwrap()
        );

        // Back, stopped after step n too.
        let stop = TierOptions {
            stop_after: Some(n),
            delete_objects: true,
            ..tier_options()
        };
        let back = tier::to_local(&db, &tier, "microbench", &stop);
        db.crash();
        let tier = tier_over(&store, 100);
        let db = Database::open(&dir, options(Some(&tier))).unwrap();
        assert_eq!(
            scan(&db, &PathChoice::Full, "c1 >= 0").unwrap(),
            expected,
            "back, stopped after step {n}"
        );
        let def = db.catalog().table("microbench").unwrap().clone();
        if tier::table_tier(&dir, &def).unwrap() != TableTier::Local {
            assert!(back.is_err());
            tier::to_local(&db, &tier, "microbench", &tier_options()).unwrap();
        }
        drop(db);
        let db = Database::open(&dir, options(None)).unwrap();
        assert_eq!(scan(&db, &PathChoice::Full, "c1 >= 0").unwrap(), expected);
        n += 1;
    }
    assert!(n > 10, "the sweep covered {n} steps");
}
