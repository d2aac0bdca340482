//! The cold tier as a [`Device`]: paged files with a cold-tier manifest are
//! read from the cold storage device through a bounded local object cache;
//! every other file goes to the device it wraps.
//!
//! This is Skipper's pull-based baseline (§3.2, "PostgreSQL on CSD"): the
//! executor runs unchanged, in its own order, and the first read of a page in
//! object k fetches the whole object (a GET tagged with the query, waiting for
//! the CSD's disk group to spin up), after which the object's pages are read
//! locally until the cache evicts it. Every access path and SQL therefore
//! work over cold tables without knowing; what it costs is in
//! [`ColdCounters`].
//!
//! The I/O a cold file costs is what the cold storage device is asked for:
//! each object fetched counts in the wrapped device's `IoStats` as one read
//! request of the object's pages (its bytes), so a statement's I/O, which
//! those counters give, is the GETs and bytes of its cold tables next to the
//! reads of its local ones. Pages served from the local object cache (or
//! the first page, kept in the manifest) cost no request and count none;
//! they are the cache's hits in [`ColdCounters`]. MJoin, which fetches
//! objects through the client proxy instead, counts them in the same
//! counters ([`count_fetch`]).
//!
//! A database installs it through `DbOptions::cold_tier` with a [`ColdTier`],
//! which the caller keeps to read the counters. Cold files are read-only:
//! writing or truncating one fails naming the table and how to bring it back.

use std::collections::HashMap;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use parking_lot::{Mutex, RwLock};
use strata_storage::device::{
    Device, DeviceLayer, FileId, IoStats, PAGE_SIZE, ReadRequest, RemoteFile, TraceRecorder,
    cold_manifest_path,
};
use strata_storage::{Result, StorageError};

use crate::byte_manifest::ByteManifest;
use crate::byte_object::ByteObject;
use crate::client::{ColdClient, RetryPolicy, StoreFactory, default_query_tag};
use crate::error::ColdError;
use crate::manifest::Manifest;
use crate::object_cache::{CacheError, ObjectCache};
use crate::stats::{ColdCounters, ColdStats};

/// The local cache's size unless configured (`--cold-cache`).
pub const DEFAULT_CACHE_BYTES: u64 = 512 << 20;

/// File ids of cold files start here, far above any the wrapped device hands
/// out (it counts up from 0), so the two never meet.
const COLD_FILE_BASE: u32 = 1 << 31;

/// How the cold tier reads.
#[derive(Clone, Debug)]
pub struct ColdConfig {
    /// Bytes the local object cache may hold.
    pub cache_bytes: u64,
    /// The cache's directory (default: the database's `tmp/`).
    pub cache_dir: Option<PathBuf>,
    /// The `x-strata-query` tag of every request.
    pub query_tag: String,
    pub retry: RetryPolicy,
}

pub use crate::transit::RETRY_ENV;

impl ColdConfig {
    /// The defaults, with the query tag from `STRATA_CSD_QUERY` and the
    /// retry bound from `STRATA_CSD_RETRY_SECS` when they are set.
    pub fn from_env() -> std::result::Result<ColdConfig, ColdError> {
        let mut c = ColdConfig::default();
        if let Ok(v) = std::env::var(RETRY_ENV) {
            let secs: f64 = v
                .trim()
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                .ok_or_else(|| ColdError::Setting {
                    var: RETRY_ENV,
                    value: v.clone(),
                    expected: "a number of seconds",
                })?;
            c.retry.retry_for = std::time::Duration::from_secs_f64(secs);
        }
        Ok(c)
    }
}

impl Default for ColdConfig {
    fn default() -> Self {
        ColdConfig {
            cache_bytes: DEFAULT_CACHE_BYTES,
            cache_dir: None,
            query_tag: default_query_tag(),
            retry: RetryPolicy::default(),
        }
    }
}

struct TierShared {
    config: ColdConfig,
    /// `None`: S3 endpoints.
    factory: Option<StoreFactory>,
    stats: Arc<ColdStats>,
    /// Started on first use: a process that never touches a cold file never
    /// starts the client's thread.
    client: Mutex<Option<Arc<ColdClient>>>,
}

/// The cold tier of a process: configuration, the client of the cold storage
/// devices and the counters. Clone it into `DbOptions::cold_tier` and keep a
/// clone to read [`ColdTier::counters`].
#[derive(Clone)]
pub struct ColdTier(Arc<TierShared>);

impl std::fmt::Debug for ColdTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColdTier")
            .field("config", &self.0.config)
            .finish_non_exhaustive()
    }
}

impl ColdTier {
    /// A cold tier over S3 endpoints (see [`crate::client::s3_factory`]).
    pub fn new(config: ColdConfig) -> ColdTier {
        ColdTier(Arc::new(TierShared {
            config,
            factory: None,
            stats: Arc::default(),
            client: Mutex::new(None),
        }))
    }

    /// A cold tier whose stores come from `factory` (tests: an in-memory
    /// store whatever the endpoint).
    pub fn with_factory(config: ColdConfig, factory: StoreFactory) -> ColdTier {
        ColdTier(Arc::new(TierShared {
            config,
            factory: Some(factory),
            stats: Arc::default(),
            client: Mutex::new(None),
        }))
    }

    pub fn config(&self) -> &ColdConfig {
        &self.0.config
    }

    /// What the tier did so far.
    pub fn counters(&self) -> ColdCounters {
        self.0.stats.snapshot()
    }

    /// The client (started on first use).
    pub fn client(&self) -> Result<Arc<ColdClient>> {
        let mut c = self.0.client.lock();
        if let Some(c) = &*c {
            return Ok(c.clone());
        }
        let (retry, stats) = (self.0.config.retry, self.0.stats.clone());
        let client = Arc::new(match &self.0.factory {
            Some(f) => ColdClient::new(f.clone(), retry, stats)?,
            None => ColdClient::s3(&self.0.config.query_tag, retry, stats)?,
        });
        *c = Some(client.clone());
        Ok(client)
    }

    /// The stores the client proxy of one query uses: the tier's own factory
    /// (tests), else S3 clients tagging every request with `tag`.
    pub fn proxy_factory(&self, tag: &str) -> StoreFactory {
        match &self.0.factory {
            Some(f) => f.clone(),
            None => crate::client::s3_factory(tag),
        }
    }

    /// The tier's counters (the client proxy adds its GETs to them).
    pub fn stats(&self) -> &Arc<ColdStats> {
        &self.0.stats
    }

    /// The cold tier as a layer for `DbOptions::cold_tier`.
    pub fn layer(&self) -> Arc<dyn DeviceLayer> {
        Arc::new(self.clone())
    }
}

impl DeviceLayer for ColdTier {
    fn wrap(&self, inner: Arc<dyn Device>, db_dir: &Path) -> Result<Arc<dyn Device>> {
        let dir = self
            .0
            .config
            .cache_dir
            .clone()
            .unwrap_or_else(|| db_dir.join("tmp"));
        Ok(Arc::new(ColdDevice::new(inner, self.clone(), &dir)))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// An open cold file.
struct ColdFile {
    base: PathBuf,
    manifest: Manifest,
    /// The first page, when the manifest keeps it (read without a request).
    head: Option<Vec<u8>>,
}

/// The device (see the module docs).
pub struct ColdDevice {
    inner: Arc<dyn Device>,
    tier: ColdTier,
    cache: ObjectCache,
    files: RwLock<HashMap<FileId, Arc<ColdFile>>>,
    next: AtomicU32,
}

impl ColdDevice {
    pub fn new(inner: Arc<dyn Device>, tier: ColdTier, cache_dir: &Path) -> ColdDevice {
        let cache = ObjectCache::new(cache_dir, tier.0.config.cache_bytes, tier.0.stats.clone());
        ColdDevice {
            inner,
            tier,
            cache,
            files: RwLock::new(HashMap::new()),
            next: AtomicU32::new(COLD_FILE_BASE),
        }
    }

    fn cold(&self, file: FileId) -> Option<Arc<ColdFile>> {
        if file.0 < COLD_FILE_BASE {
            return None;
        }
        self.files.read().get(&file).cloned()
    }

    fn read_only(&self, f: &ColdFile) -> StorageError {
        strata_storage::db::cold_read_only(&f.manifest.table)
    }

    /// Reads pages `[first, first + n)` of a cold file into `buf`.
    fn read_cold(&self, id: FileId, f: &ColdFile, first: u64, buf: &mut [u8]) -> Result<()> {
        let m = &f.manifest;
        let n = (buf.len() / PAGE_SIZE) as u64;
        if first + n > m.num_pages {
            return Err(StorageError::PageOutOfRange {
                path: f.base.clone(),
                page: first + n - 1,
                pages: m.num_pages,
            });
        }
        if first == 0
            && n == 1
            && let Some(h) = &f.head
        {
            buf.copy_from_slice(h);
            return Ok(());
        }
        let mut page = first;
        let mut done = 0usize;
        while page < first + n {
            let k = m.object_of(page);
            let o = &m.objects[k];
            let take = (o.first_page + o.pages).min(first + n) - page;
            let object = self.object(id, m, k)?;
            let bytes = take as usize * PAGE_SIZE;
            let at = (page - o.first_page) * PAGE_SIZE as u64;
            object
                .read_exact_at(&mut buf[done..done + bytes], at)
                .map_err(|e| StorageError::io(self.locate_cold(f, page).0, e))?;
            done += bytes;
            page += take;
        }
        Ok(())
    }

    /// Object `k` of cold file `id`, from the cache or fetched (and counted
    /// as the file's I/O) and checked.
    fn object(&self, id: FileId, m: &Manifest, k: usize) -> Result<Arc<std::fs::File>> {
        let o = &m.objects[k];
        let name = format!("object {}", m.object_name(k));
        let started = Instant::now();
        let got = self
            .cache
            .get(&format!("{}/{}", m.endpoint, m.object_name(k)), o.bytes(), |dest| {
                let client = self.tier.client()?;
                let f = client.get_to_file(&m.endpoint, &m.bucket, &o.key, dest)?;
                count_fetch(self.inner.as_ref(), id, o.first_page, f.bytes);
                let corrupt = |reason: String| StorageError::ColdObject {
                    object: name.clone(),
                    endpoint: m.endpoint.clone(),
                    reason,
                    corrupt: true,
                };
                if f.bytes != o.bytes() {
                    return Err(corrupt(format!(
                        "it has {} bytes, its manifest ({}) says {}",
                        f.bytes,
                        m.file,
                        o.bytes()
                    )));
                }
                if f.crc32c != o.crc32c {
                    return Err(corrupt(format!(
                        "its CRC32C is {:08x}, its manifest ({}) says {:08x}: the object is corrupt",
                        f.crc32c, m.file, o.crc32c
                    )));
                }
                Ok(())
            });
        self.tier
            .0
            .stats
            .add_wait_ns(started.elapsed().as_nanos() as u64);
        got.map_err(|e| match e {
            CacheError::Fetch(e) => e,
            CacheError::Waited(msg) => StorageError::ColdObject {
                object: name.clone(),
                endpoint: m.endpoint.clone(),
                reason: format!("another reader's fetch of it failed: {msg}"),
                corrupt: false,
            },
        })
    }

    fn locate_cold(&self, f: &ColdFile, page: u64) -> (PathBuf, u64) {
        let m = &f.manifest;
        let k = m.object_of(page).min(m.objects.len().saturating_sub(1));
        match m.objects.get(k) {
            Some(o) => (
                PathBuf::from(format!("{}/{}", m.endpoint, m.object_name(k))),
                page - o.first_page,
            ),
            None => (f.base.clone(), page),
        }
    }

    /// The local cache (tests and benches look at what it holds).
    pub fn cache(&self) -> &ObjectCache {
        &self.cache
    }
}

/// Counts a fetched object — `bytes` from page `first_page` of cold file
/// `file` — as one read request of its pages in `device`'s counters, the ones
/// a statement's I/O is read from (see the module docs).
pub fn count_fetch(device: &dyn Device, file: FileId, first_page: u64, bytes: u64) {
    device
        .stats()
        .record_read(file, first_page, bytes.div_ceil(PAGE_SIZE as u64));
}

impl Device for ColdDevice {
    fn create(&self, path: &Path, segment_pages: u64) -> Result<FileId> {
        let manifest = cold_manifest_path(path);
        if manifest.exists() {
            let m = Manifest::load(&manifest)?;
            return Err(self.read_only(&ColdFile {
                base: path.to_path_buf(),
                manifest: m,
                head: None,
            }));
        }
        self.inner.create(path, segment_pages)
    }

    fn open(&self, path: &Path, segment_pages: u64) -> Result<FileId> {
        let manifest = cold_manifest_path(path);
        if manifest.exists() {
            let m = Manifest::load(&manifest)?;
            // Checked by `Manifest::load`: a page of hex.
            let head = m
                .head
                .as_deref()
                .and_then(|h| crate::manifest::from_hex(h).ok());
            let id = FileId(self.next.fetch_add(1, Ordering::Relaxed));
            self.files.write().insert(
                id,
                Arc::new(ColdFile {
                    base: path.to_path_buf(),
                    manifest: m,
                    head,
                }),
            );
            return Ok(id);
        }
        let id = self.inner.open(path, segment_pages)?;
        if id.0 >= COLD_FILE_BASE {
            self.inner.close(id);
            return Err(StorageError::io(
                path,
                std::io::Error::other(
                    "the device under the cold tier handed out a file id in the cold tier's range",
                ),
            ));
        }
        Ok(id)
    }

    fn close(&self, file: FileId) {
        if file.0 >= COLD_FILE_BASE {
            self.files.write().remove(&file);
        } else {
            self.inner.close(file)
        }
    }

    fn path(&self, file: FileId) -> PathBuf {
        match self.cold(file) {
            Some(f) => f.base.clone(),
            None => self.inner.path(file),
        }
    }

    fn locate(&self, file: FileId, page: u64) -> (PathBuf, u64) {
        match self.cold(file) {
            Some(f) => self.locate_cold(&f, page),
            None => self.inner.locate(file, page),
        }
    }

    fn num_pages(&self, file: FileId) -> Result<u64> {
        match self.cold(file) {
            Some(f) => Ok(f.manifest.num_pages),
            None => self.inner.num_pages(file),
        }
    }

    fn read(&self, file: FileId, first_page: u64, buf: &mut [u8]) -> Result<()> {
        match self.cold(file) {
            Some(f) => self.read_cold(file, &f, first_page, buf),
            None => self.inner.read(file, first_page, buf),
        }
    }

    fn read_many(&self, reqs: &mut [ReadRequest<'_>]) -> Result<()> {
        let mut local = Vec::with_capacity(reqs.len());
        for r in reqs.iter_mut() {
            match self.cold(r.file) {
                Some(f) => self.read_cold(r.file, &f, r.first_page, r.buf)?,
                None => local.push(ReadRequest {
                    file: r.file,
                    first_page: r.first_page,
                    buf: &mut *r.buf,
                }),
            }
        }
        if local.is_empty() {
            Ok(())
        } else {
            self.inner.read_many(&mut local)
        }
    }

    fn write(&self, file: FileId, first_page: u64, buf: &[u8]) -> Result<()> {
        match self.cold(file) {
            Some(f) => Err(self.read_only(&f)),
            None => self.inner.write(file, first_page, buf),
        }
    }

    fn truncate(&self, file: FileId, pages: u64) -> Result<()> {
        match self.cold(file) {
            Some(f) => Err(self.read_only(&f)),
            None => self.inner.truncate(file, pages),
        }
    }

    fn sync(&self, file: FileId) -> Result<()> {
        match self.cold(file) {
            // Nothing is ever written to a cold file.
            Some(_) => Ok(()),
            None => self.inner.sync(file),
        }
    }

    fn charge_read(&self, file: FileId, first_page: u64, pages: u64) {
        self.inner.charge_read(file, first_page, pages)
    }

    /// A column file with a manifest: read by ranged GETs of its object.
    fn open_remote(&self, path: &Path) -> Result<Option<Arc<dyn RemoteFile>>> {
        let manifest = cold_manifest_path(path);
        if !manifest.exists() {
            return self.inner.open_remote(path);
        }
        let m = ByteManifest::load(&manifest)?;
        Ok(Some(Arc::new(ByteObject::new(
            m,
            self.tier.client()?,
            self.tier.stats().clone(),
            self.inner.clone(),
        ))))
    }
    fn stats(&self) -> &IoStats {
        self.inner.stats()
    }

    /// The wrapped device's: the cold tier reports itself through its
    /// counters ([`ColdTier::counters`]), so reports of local tables stay
    /// as they were.
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn parallelism(&self) -> usize {
        self.inner.parallelism()
    }

    fn trace(&self) -> Option<&TraceRecorder> {
        self.inner.trace()
    }
}
