//! strata's client of the cold storage device: whole-object GET, PUT, HEAD and
//! DELETE over any `object_store::ObjectStore` (an S3 endpoint — `strata csd
//! serve` or any other — or, in tests, an in-memory store), from synchronous
//! code.
//!
//! Why a thread of its own: [`strata_storage::device::Device`] is synchronous
//! and `strata-sql` calls it from inside a tokio runtime, where `block_on`
//! panics and dropping a runtime panics too. The client therefore owns a
//! runtime on a dedicated thread; a caller hands it a future and waits for the
//! answer on a plain channel (blocking its thread as a disk read would), and
//! the runtime is shut down on its own thread when the client is dropped.
//!
//! Every request carries the header `x-strata-query: <tag>` (Skipper's
//! scheduler groups requests by query; the tag is per process by default,
//! `<hostname>-<pid>`, or `STRATA_CSD_QUERY`). A request that fails in transit
//! — connection refused or reset while the server restarts, a timeout — is
//! retried with exponential backoff for a bounded time ([`RetryPolicy`]: 4 s
//! by default, and each attempt's connect gives up after
//! [`CONNECT_TIMEOUT`], so a device that is down fails a request within 5 s),
//! then fails naming the object, the endpoint, what the connection met and
//! the tries and time spent ([`crate::transit`]); a missing object fails at
//! once, naming it. No message carries a URL's query string (a presigned
//! URL's signature).

use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, RetryConfig};
use parking_lot::Mutex;
use strata_storage::StorageError;

use crate::stats::ColdStats;
use crate::transit;

/// The header that names the query (or client) a request belongs to.
pub const QUERY_HEADER: &str = "x-strata-query";
/// The environment variable that sets the query tag.
pub const QUERY_ENV: &str = "STRATA_CSD_QUERY";
/// Default credentials of `strata csd serve` (overridden by the usual
/// `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`).
pub const DEFAULT_ACCESS_KEY: &str = "strata";
pub const DEFAULT_SECRET_KEY: &str = "strata-secret";
pub const DEFAULT_REGION: &str = "us-east-1";

/// How long one attempt may take to connect to a cold storage device: with
/// the default [`RetryPolicy`], a device that does not answer fails a
/// request within 5 s.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How long and how often a request failing in transit is repeated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Give up once this long has passed since the first attempt (no new
    /// attempt starts after it; `STRATA_CSD_RETRY_SECS` sets it).
    pub retry_for: Duration,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            // Long enough for `strata csd serve` to restart, short enough
            // that a device that is down is reported at once.
            retry_for: Duration::from_secs(4),
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(2),
        }
    }
}

/// Makes the object store for an (endpoint, bucket).
pub type StoreFactory =
    Arc<dyn Fn(&str, &str) -> Result<Arc<dyn ObjectStore>, String> + Send + Sync>;

/// The default query tag: `STRATA_CSD_QUERY`, else `<hostname>-<pid>`.
pub fn default_query_tag() -> String {
    if let Ok(t) = std::env::var(QUERY_ENV)
        && !t.is_empty()
    {
        return t;
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "strata".into());
    format!("{host}-{}", std::process::id())
}

/// The stores of S3 endpoints: path-style requests, plain HTTP allowed,
/// region us-east-1, credentials `strata`/`strata-secret` unless
/// `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` say otherwise; every request
/// tagged with `tag`. object_store's own retries are off: [`ColdClient`]
/// retries, so that it can count and bound them.
pub fn s3_factory(tag: &str) -> StoreFactory {
    let tag = tag.to_string();
    Arc::new(move |endpoint: &str, bucket: &str| {
        Ok(Arc::new(s3_store(&tag, endpoint, bucket)?) as Arc<dyn ObjectStore>)
    })
}

/// One in-memory object store standing for every endpoint and bucket
/// (object_store's `InMemory`): a cold tier inside the process, for tests and
/// for experiments that leave the network out.
pub fn memory_factory() -> StoreFactory {
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    Arc::new(move |_: &str, _: &str| Ok(store.clone()))
}

/// The S3 client of `endpoint`'s `bucket`, as [`s3_factory`] makes it.
fn s3_store(
    tag: &str,
    endpoint: &str,
    bucket: &str,
) -> Result<object_store::aws::AmazonS3, String> {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let mut headers = object_store::HeaderMap::new();
    let value = object_store::HeaderValue::from_str(tag)
        .map_err(|e| format!("query tag {tag:?} is not a valid header value: {e}"))?;
    headers.insert(QUERY_HEADER, value);
    let options = ClientOptions::new()
        .with_allow_http(true)
        .with_default_headers(headers)
        .with_connect_timeout(CONNECT_TIMEOUT)
        .with_timeout(Duration::from_secs(3600));
    AmazonS3Builder::new()
        .with_endpoint(endpoint)
        .with_bucket_name(bucket)
        .with_region(env("AWS_REGION", DEFAULT_REGION))
        .with_access_key_id(env("AWS_ACCESS_KEY_ID", DEFAULT_ACCESS_KEY))
        .with_secret_access_key(env("AWS_SECRET_ACCESS_KEY", DEFAULT_SECRET_KEY))
        .with_allow_http(true)
        .with_virtual_hosted_style_request(false)
        .with_retry(RetryConfig {
            max_retries: 0,
            ..RetryConfig::default()
        })
        .with_client_options(options)
        .build()
        .map_err(|e| e.to_string())
}

/// Creates `bucket` at the S3 `endpoint` unless it exists (object_store has
/// no bucket operations: a PUT of the bucket's URL, presigned by its signer).
async fn create_s3_bucket(
    tag: String,
    endpoint: String,
    bucket: String,
) -> Result<(), AttemptError> {
    use object_store::signer::Signer;
    let answer = |msg: String| AttemptError::Answer(msg);
    let store = s3_store(&tag, &endpoint, &bucket).map_err(answer)?;
    let url = store
        .signed_url(
            reqwest::Method::PUT,
            &ObjectPath::from(""),
            Duration::from_secs(300),
        )
        .await
        .map_err(AttemptError::Store)?;
    let http = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|e| answer(format!("cannot make an HTTP client: {}", e.without_url())))?;
    let resp = http
        .put(url)
        .header(QUERY_HEADER, tag)
        .header(reqwest::header::CONTENT_LENGTH, 0)
        .send()
        .await
        .map_err(|e| {
            // The error names the presigned URL: its words only.
            if e.is_connect() || e.is_timeout() || e.is_request() {
                AttemptError::Transient(transit::reason(&e))
            } else {
                AttemptError::Answer(transit::redact(&e.without_url().to_string()))
            }
        })?;
    let status = resp.status();
    let body = resp.text().await.unwrap_or_default();
    if status.is_success()
        || (status == reqwest::StatusCode::CONFLICT
            && (body.contains("BucketAlreadyOwnedByYou") || body.contains("BucketAlreadyExists")))
    {
        Ok(())
    } else {
        Err(answer(transit::redact(&format!(
            "answered {status}: {body}"
        ))))
    }
}

/// What a GET brought: its length and CRC32C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fetched {
    pub bytes: u64,
    pub crc32c: u32,
}

/// A client of cold storage devices (see the module docs).
pub struct ColdClient {
    handle: tokio::runtime::Handle,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    factory: StoreFactory,
    stores: Mutex<HashMap<(String, String), Arc<dyn ObjectStore>>>,
    retry: RetryPolicy,
    stats: Arc<ColdStats>,
    /// The query tag, when the stores are S3 endpoints (buckets are made by
    /// [`ColdClient::create_bucket`]); `None` for other stores.
    s3_tag: Option<String>,
}

impl std::fmt::Debug for ColdClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColdClient")
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

/// The error of `object` at `endpoint`.
pub(crate) fn object_error(
    endpoint: &str,
    object: &str,
    reason: String,
    corrupt: bool,
) -> StorageError {
    StorageError::ColdObject {
        object: object.to_string(),
        endpoint: endpoint.to_string(),
        reason,
        corrupt,
    }
}

/// Whether a request that failed with `e` may succeed if repeated: failures
/// in transit (no connection, reset, timeout), not answers (no such key,
/// denied, a bad request).
pub(crate) fn transient(e: &object_store::Error) -> bool {
    use object_store::client::{HttpError, HttpErrorKind};
    if matches!(
        e,
        object_store::Error::NotFound { .. }
            | object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. }
            | object_store::Error::InvalidPath { .. }
            | object_store::Error::NotSupported { .. }
            | object_store::Error::NotImplemented { .. }
    ) {
        return false;
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(h) = c.downcast_ref::<HttpError>()
            && matches!(
                h.kind(),
                HttpErrorKind::Connect
                    | HttpErrorKind::Request
                    | HttpErrorKind::Timeout
                    | HttpErrorKind::Interrupted
            )
        {
            return true;
        }
        // A connection the server closed under a request in flight (it
        // stopped or restarted): hyper says so below object_store's kind.
        if let Some(h) = c.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_canceled() || h.is_closed())
        {
            return true;
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            return matches!(
                io.kind(),
                K::ConnectionRefused
                    | K::ConnectionReset
                    | K::ConnectionAborted
                    | K::NotConnected
                    | K::BrokenPipe
                    | K::TimedOut
                    | K::Interrupted
                    | K::UnexpectedEof
            );
        }
        cause = c.source();
    }
    false
}

impl ColdClient {
    /// A client of S3 endpoints tagging its requests with `tag`.
    pub fn s3(
        tag: &str,
        retry: RetryPolicy,
        stats: Arc<ColdStats>,
    ) -> Result<ColdClient, StorageError> {
        let mut c = Self::new(s3_factory(tag), retry, stats)?;
        c.s3_tag = Some(tag.to_string());
        Ok(c)
    }

    /// A client whose stores come from `factory`, counting into `stats`.
    pub fn new(
        factory: StoreFactory,
        retry: RetryPolicy,
        stats: Arc<ColdStats>,
    ) -> Result<ColdClient, StorageError> {
        let (handle_tx, handle_rx) = std::sync::mpsc::channel();
        let (shutdown, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("strata-cold-client".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("strata-cold-io")
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = handle_tx.send(Err(e));
                        return;
                    }
                };
                let _ = handle_tx.send(Ok(rt.handle().clone()));
                // Runs until the client is dropped; the runtime is dropped
                // here, on its own thread.
                rt.block_on(async move {
                    let _ = shutdown_rx.await;
                });
                rt.shutdown_background();
            })
            .map_err(|e| StorageError::io("cold tier client thread", e))?;
        let handle = handle_rx
            .recv()
            .map_err(|_| {
                StorageError::io(
                    "cold tier client thread",
                    std::io::Error::other("the thread ended before starting its runtime"),
                )
            })?
            .map_err(|e| StorageError::io("cold tier client runtime", e))?;
        Ok(ColdClient {
            handle,
            shutdown: Some(shutdown),
            thread: Some(thread),
            factory,
            stores: Mutex::new(HashMap::new()),
            retry,
            stats,
            s3_tag: None,
        })
    }

    /// Makes sure `bucket` exists at `endpoint` (S3 endpoints; other stores
    /// have no buckets to make).
    pub fn create_bucket(&self, endpoint: &str, bucket: &str) -> Result<(), StorageError> {
        let Some(tag) = self.s3_tag.clone() else {
            return Ok(());
        };
        let (e, b) = (endpoint.to_string(), bucket.to_string());
        self.with_retries(
            endpoint,
            &format!("bucket {bucket}"),
            "CreateBucket",
            || create_s3_bucket(tag.clone(), e.clone(), b.clone()),
        )
    }

    pub fn stats(&self) -> &Arc<ColdStats> {
        &self.stats
    }

    pub fn retry_policy(&self) -> RetryPolicy {
        self.retry
    }

    /// The runtime the client's requests run on (the client proxy spawns
    /// its concurrent GETs there).
    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }

    /// Runs `fut` on the client's runtime and waits for it on this thread.
    fn run<T: Send + 'static>(&self, fut: impl Future<Output = T> + Send + 'static) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().ok()
    }

    /// The store of `endpoint` and `bucket` (made once).
    pub fn store(
        &self,
        endpoint: &str,
        bucket: &str,
    ) -> Result<Arc<dyn ObjectStore>, StorageError> {
        let key = (endpoint.to_string(), bucket.to_string());
        if let Some(s) = self.stores.lock().get(&key) {
            return Ok(s.clone());
        }
        let store = (self.factory)(endpoint, bucket).map_err(|e| {
            object_error(
                endpoint,
                bucket,
                format!("cannot make a client: {e}"),
                false,
            )
        })?;
        Ok(self.stores.lock().entry(key).or_insert(store).clone())
    }

    /// Runs `attempt` until it succeeds, fails for good, or has failed in
    /// transit for longer than the retry policy allows.
    fn with_retries<T, F, Fut>(
        &self,
        endpoint: &str,
        object: &str,
        what: &str,
        mut attempt: F,
    ) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AttemptError>> + Send + 'static,
    {
        let start = Instant::now();
        let mut backoff = self.retry.initial_backoff;
        let mut attempts = 0u64;
        loop {
            attempts += 1;
            let outcome = self.run(attempt()).ok_or_else(|| {
                object_error(
                    endpoint,
                    object,
                    "the cold tier's client runtime has stopped".into(),
                    false,
                )
            })?;
            let e = match outcome {
                Ok(v) => return Ok(v),
                Err(AttemptError::Local(e)) => return Err(e),
                Err(AttemptError::Answer(msg)) => {
                    return Err(object_error(
                        endpoint,
                        object,
                        format!("{what}: {}", transit::redact(&msg)),
                        false,
                    ));
                }
                Err(AttemptError::Transient(msg)) => msg,
                Err(AttemptError::Store(object_store::Error::NotFound { .. })) => {
                    return Err(object_error(
                        endpoint,
                        object,
                        format!("{what}: no such object on the cold storage device"),
                        false,
                    ));
                }
                Err(AttemptError::Store(e)) if !transient(&e) => {
                    return Err(object_error(
                        endpoint,
                        object,
                        format!("{what}: {}", transit::redact(&e.to_string())),
                        false,
                    ));
                }
                Err(AttemptError::Store(e)) => transit::reason(&e),
            };
            let elapsed = start.elapsed();
            if elapsed + backoff > self.retry.retry_for {
                return Err(object_error(
                    endpoint,
                    object,
                    transit::gave_up(what, endpoint, &e, attempts, elapsed, self.retry.retry_for),
                    false,
                ));
            }
            self.stats.add_retries(1);
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(self.retry.max_backoff);
        }
    }

    /// GETs `bucket/key` whole into `dest` (created or truncated), computing
    /// its CRC32C on the way.
    pub fn get_to_file(
        &self,
        endpoint: &str,
        bucket: &str,
        key: &str,
        dest: &Path,
    ) -> Result<Fetched, StorageError> {
        let store = self.store(endpoint, bucket)?;
        let object = format!("object {bucket}/{key}");
        let path = ObjectPath::from(key);
        let stats = self.stats.clone();
        let dest = dest.to_path_buf();
        self.with_retries(endpoint, &object, "GET", || {
            let store = store.clone();
            let path = path.clone();
            let stats = stats.clone();
            let dest = dest.clone();
            async move {
                stats.add_gets(1);
                let got = store.get(&path).await.map_err(AttemptError::Store)?;
                let mut file = std::fs::File::create(&dest)
                    .map_err(|e| AttemptError::Local(StorageError::io(&dest, e)))?;
                let mut stream = got.into_stream();
                let mut fetched = Fetched {
                    bytes: 0,
                    crc32c: 0,
                };
                while let Some(chunk) = stream.next().await {
                    let chunk = chunk.map_err(AttemptError::Store)?;
                    fetched.crc32c = crc32c::crc32c_append(fetched.crc32c, &chunk);
                    fetched.bytes += chunk.len() as u64;
                    stats.add_bytes_fetched(chunk.len() as u64);
                    file.write_all(&chunk)
                        .map_err(|e| AttemptError::Local(StorageError::io(&dest, e)))?;
                }
                Ok(fetched)
            }
        })
    }

    /// GETs bytes `[start, start + len)` of `bucket/key` (an S3 ranged
    /// GET): a column file's chunks, not its whole object.
    pub fn get_range(
        &self,
        endpoint: &str,
        bucket: &str,
        key: &str,
        start: u64,
        len: u64,
    ) -> Result<Bytes, StorageError> {
        let store = self.store(endpoint, bucket)?;
        let path = ObjectPath::from(key);
        let stats = self.stats.clone();
        let what = format!("GET of bytes {start}..{}", start + len);
        self.with_retries(endpoint, &format!("object {bucket}/{key}"), &what, || {
            let (store, path, stats) = (store.clone(), path.clone(), stats.clone());
            async move {
                stats.add_gets(1);
                let got = store
                    .get_range(&path, start..start + len)
                    .await
                    .map_err(AttemptError::Store)?;
                stats.add_bytes_fetched(got.len() as u64);
                Ok(got)
            }
        })
    }

    /// PUTs `data` as `bucket/key`.
    pub fn put(
        &self,
        endpoint: &str,
        bucket: &str,
        key: &str,
        data: Bytes,
    ) -> Result<(), StorageError> {
        let store = self.store(endpoint, bucket)?;
        let path = ObjectPath::from(key);
        let stats = self.stats.clone();
        self.with_retries(endpoint, &format!("object {bucket}/{key}"), "PUT", || {
            let (store, path, stats, data) =
                (store.clone(), path.clone(), stats.clone(), data.clone());
            async move {
                stats.add_puts(1);
                let n = data.len() as u64;
                store
                    .put(&path, data.into())
                    .await
                    .map_err(AttemptError::Store)?;
                stats.add_bytes_sent(n);
                Ok(())
            }
        })
    }

    /// The size of `bucket/key`.
    pub fn head(&self, endpoint: &str, bucket: &str, key: &str) -> Result<u64, StorageError> {
        let store = self.store(endpoint, bucket)?;
        let path = ObjectPath::from(key);
        self.with_retries(endpoint, &format!("object {bucket}/{key}"), "HEAD", || {
            let (store, path) = (store.clone(), path.clone());
            async move {
                let meta = store.head(&path).await.map_err(AttemptError::Store)?;
                Ok(meta.size)
            }
        })
    }

    /// Deletes `bucket/key` (a missing object is an error naming it).
    pub fn delete(&self, endpoint: &str, bucket: &str, key: &str) -> Result<(), StorageError> {
        let store = self.store(endpoint, bucket)?;
        let path = ObjectPath::from(key);
        let stats = self.stats.clone();
        self.with_retries(
            endpoint,
            &format!("object {bucket}/{key}"),
            "DELETE",
            || {
                let (store, path, stats) = (store.clone(), path.clone(), stats.clone());
                async move {
                    stats.add_deletes(1);
                    store.delete(&path).await.map_err(AttemptError::Store)
                }
            },
        )
    }
}

impl Drop for ColdClient {
    fn drop(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Why one attempt failed: the store (maybe transient), a failure in transit
/// outside object_store (what it met, in words), an answer that will not
/// change, or something local (the last two never retried).
enum AttemptError {
    Store(object_store::Error),
    Transient(String),
    Answer(String),
    Local(StorageError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;

    fn client(store: Arc<dyn ObjectStore>, retry: RetryPolicy) -> ColdClient {
        let factory: StoreFactory = Arc::new(move |_: &str, _: &str| Ok(store.clone()));
        ColdClient::new(factory, retry, Arc::default()).unwrap()
    }

    #[test]
    fn put_get_head_delete_round_trip_and_a_missing_object_is_named() {
        let c = client(Arc::new(InMemory::new()), RetryPolicy::default());
        let data = Bytes::from(vec![7u8; 20_000]);
        c.put("mem://", "db", "t/t.heap.0", data.clone()).unwrap();
        assert_eq!(c.head("mem://", "db", "t/t.heap.0").unwrap(), 20_000);
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("obj");
        let f = c.get_to_file("mem://", "db", "t/t.heap.0", &dest).unwrap();
        assert_eq!(f.bytes, 20_000);
        assert_eq!(f.crc32c, crc32c::crc32c(&data));
        assert_eq!(std::fs::read(&dest).unwrap(), data.to_vec());
        c.delete("mem://", "db", "t/t.heap.0").unwrap();
        let e = c
            .get_to_file("mem://", "db", "t/t.heap.0", &dest)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("db/t/t.heap.0") && e.contains("mem://") && e.contains("no such object"),
            "{e}"
        );
        let s = c.stats().snapshot();
        assert_eq!((s.puts, s.gets, s.deletes, s.retries), (1, 2, 1, 0));
        assert_eq!(s.bytes_fetched, 20_000);
    }

    #[test]
    fn a_refused_connection_is_retried_for_a_bounded_time_then_named() {
        // A port nobody listens on: bind, read the port, close.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let endpoint = format!("http://127.0.0.1:{port}");
        let c = ColdClient::new(
            s3_factory("test-query"),
            RetryPolicy {
                retry_for: Duration::from_millis(300),
                initial_backoff: Duration::from_millis(10),
                max_backoff: Duration::from_millis(40),
            },
            Arc::default(),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let e = c
            .get_to_file(&endpoint, "db", "t/t.heap.3", &dir.path().join("o"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("db/t/t.heap.3")
                && e.contains(&endpoint)
                && e.contains("does not answer (connection refused)")
                && e.contains(" tries in "),
            "{e}"
        );
        assert!(c.stats().snapshot().retries >= 2);
    }

    #[test]
    fn the_client_works_and_drops_inside_a_callers_runtime() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        rt.block_on(async {
            tokio::task::spawn(async {
                let c = client(Arc::new(InMemory::new()), RetryPolicy::default());
                c.put("mem://", "b", "k", Bytes::from_static(b"x")).unwrap();
                assert_eq!(c.head("mem://", "b", "k").unwrap(), 1);
                drop(c);
            })
            .await
            .unwrap();
        });
    }
}
