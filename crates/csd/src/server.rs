//! `strata csd serve`: the cold storage device as an S3-compatible HTTP service.
//!
//! The S3 protocol (SigV4 signing, XML, error bodies, ranges, chunked
//! uploads) comes from `s3s`, so any S3 client — object_store, boto3, DuckDB —
//! talks to it unmodified (path-style, region `us-east-1`). What is ours is the
//! MAID behaviour behind the operations:
//!
//! * GET and PUT move object data, so each is a request to the object's disk
//!   group: it goes through the [`Dispatcher`] and waits for its turn (a PUT is
//!   first uploaded to staging, then placed by the layout and moved into place
//!   in its group's turn). The response carries the modeled account of that
//!   wait in `x-csd-*` headers.
//! * HEAD, LIST and DELETE only touch metadata, which a MAID controller keeps
//!   on an always-on disk, so they are answered at once.
//!
//! Beside the S3 routes, on the same listener, `GET /_csd/metrics` returns the
//! scheduler's metrics and the server's counters as JSON and `POST
//! /_csd/reset` zeroes them between benchmark runs. (`_` cannot start a
//! bucket name, so these paths never shadow S3 requests.) They are unsigned:
//! the service listens on loopback for benchmarks and tests.
//!
//! Every GET body and PUT upload holds an in-flight guard while it streams;
//! `inflight` in the metrics returns to 0 when every client has finished or
//! gone, which the soak test asserts (memory bounded: at most a few 64 KiB
//! chunks per stream are buffered).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, UNIX_EPOCH};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{HeaderMap, Method, StatusCode};
use hyper_util::rt::TokioIo;
use s3s::auth::SimpleAuth;
use s3s::dto::{
    Bucket, CommonPrefix, CreateBucketInput, CreateBucketOutput, DeleteBucketInput,
    DeleteBucketOutput, DeleteObjectInput, DeleteObjectOutput, DeleteObjectsInput,
    DeleteObjectsOutput, DeletedObject, ETag, GetBucketLocationInput, GetBucketLocationOutput,
    GetObjectInput, GetObjectOutput, HeadBucketInput, HeadBucketOutput, HeadObjectInput,
    HeadObjectOutput, ListBucketsInput, ListBucketsOutput, ListObjectsV2Input, ListObjectsV2Output,
    Object, PutObjectInput, PutObjectOutput, Range, StreamingBlob, Timestamp,
};
use s3s::service::{S3Service, S3ServiceBuilder};
use s3s::stream::{ByteStream, RemainingLength};
use s3s::{Body, S3, S3Error, S3ErrorCode, S3Request, S3Response, S3Result};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::config::CsdConfig;
use crate::dispatch::{Ask, DeviceModel, Dispatcher, Grant};
use crate::layout::Placement;
use crate::store::{OpenObject, Reconciled, Store, StoreError};

/// The header that tags a request with its query.
pub const QUERY_HEADER: &str = "x-strata-query";
const CHUNK: usize = 64 * 1024;

/// The key pair clients sign with.
#[derive(Clone, Debug)]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
}

impl Default for Credentials {
    /// `STRATA_CSD_ACCESS_KEY` / `STRATA_CSD_SECRET_KEY`, else `strata` / `strata-secret`.
    fn default() -> Credentials {
        Credentials {
            access_key: std::env::var("STRATA_CSD_ACCESS_KEY").unwrap_or_else(|_| "strata".into()),
            secret_key: std::env::var("STRATA_CSD_SECRET_KEY")
                .unwrap_or_else(|_| "strata-secret".into()),
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("data directory {}: {source}", dir.display())]
    Store { dir: PathBuf, source: StoreError },
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Config(#[from] crate::error::CsdError),
    #[error("{0}")]
    Runtime(String),
}

/// A server running on the current tokio runtime.
pub struct RunningServer {
    addr: SocketAddr,
    dispatcher: Dispatcher,
    store: Arc<Store>,
    inflight: Arc<AtomicUsize>,
    reconciled: Reconciled,
    stop: watch::Sender<bool>,
    accept: tokio::task::JoinHandle<()>,
    dispatch: tokio::task::JoinHandle<()>,
}

impl RunningServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, what S3 clients take as their endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// GET bodies and PUT uploads streaming right now.
    pub fn inflight(&self) -> usize {
        self.inflight.load(Ordering::SeqCst)
    }

    /// What reconciling the metadata with the files found at start.
    pub fn reconciled(&self) -> &Reconciled {
        &self.reconciled
    }

    /// Stops accepting, lets open connections finish their current request
    /// (for at most a few seconds), then stops the dispatcher.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.accept.await;
        self.dispatch.abort();
        let _ = self.dispatch.await;
    }
}

/// Starts a server for `config` over `data_dir` on `addr` (port 0 picks
/// one), with the default [`Credentials`].
pub async fn spawn(
    config: CsdConfig,
    data_dir: &Path,
    addr: SocketAddr,
) -> Result<RunningServer, ServeError> {
    spawn_with(config, data_dir, addr, Credentials::default()).await
}

pub async fn spawn_with(
    config: CsdConfig,
    data_dir: &Path,
    addr: SocketAddr,
    credentials: Credentials,
) -> Result<RunningServer, ServeError> {
    // Flags may have changed a checked file; check again what will run.
    config
        .check(Path::new("(server configuration)"))
        .map_err(ServeError::Config)?;
    let layout = config.layout.clone();
    let (store, reconciled) = {
        let dir = data_dir.to_path_buf();
        let groups = config.groups;
        tokio::task::spawn_blocking(move || Store::open(&dir, layout, groups))
            .await
            .map_err(|e| ServeError::Runtime(format!("opening the store failed: {e}")))?
            .map_err(|source| ServeError::Store {
                dir: data_dir.to_path_buf(),
                source,
            })?
    };
    let store = Arc::new(store);
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Listen { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| ServeError::Listen { addr, source })?;
    let (dispatcher, dispatch) = Dispatcher::spawn(DeviceModel {
        policy: config.policy,
        groups: config.groups,
        initial_group: config.initial_group,
        switch_ms: config.switch_ms,
        bandwidth_mib_s: config.bandwidth_mib_s,
        time_scale: config.time_scale,
    });
    let inflight = Arc::new(AtomicUsize::new(0));
    let csd = Csd {
        store: store.clone(),
        dispatcher: dispatcher.clone(),
        inflight: inflight.clone(),
        region: "us-east-1".into(),
    };
    let s3 = {
        let mut builder = S3ServiceBuilder::new(csd);
        builder.set_auth(SimpleAuth::from_single(
            credentials.access_key,
            credentials.secret_key,
        ));
        builder.build()
    };
    let admin = Admin {
        dispatcher: dispatcher.clone(),
        store: store.clone(),
        inflight: inflight.clone(),
        started: Instant::now(),
        requests: Arc::new(AtomicU64::new(0)),
    };
    let (stop, stop_rx) = watch::channel(false);
    let accept = tokio::spawn(accept_loop(listener, s3, admin, stop_rx));
    Ok(RunningServer {
        addr,
        dispatcher,
        store,
        inflight,
        reconciled,
        stop,
        accept,
        dispatch,
    })
}

async fn accept_loop(
    listener: TcpListener,
    s3: S3Service,
    admin: Admin,
    mut stop: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        let socket = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                // Out of descriptors and the like: keep serving the others.
                Err(_) => continue,
            },
            _ = stop.changed() => break,
        };
        // Reap finished connections so the set stays as large as the open ones.
        while connections.try_join_next().is_some() {}
        let (s3, admin, mut stop) = (s3.clone(), admin.clone(), stop.clone());
        connections.spawn(async move {
            let service = service_fn(move |req: hyper::Request<Incoming>| {
                let (s3, admin) = (s3.clone(), admin.clone());
                async move { route(s3, admin, req).await }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(socket), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
                }
            }
        });
    }
    drop(listener);
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(Duration::from_secs(6), drain)
        .await
        .is_err()
    {
        connections.abort_all();
    }
}

async fn route(
    s3: S3Service,
    admin: Admin,
    req: hyper::Request<Incoming>,
) -> Result<hyper::Response<Body>, s3s::HttpError> {
    admin.requests.fetch_add(1, Ordering::Relaxed);
    if req.uri().path().starts_with("/_csd/") {
        return Ok(admin.handle(req.method(), req.uri().path()).await);
    }
    s3.call(req.map(Body::from)).await
}

#[derive(Clone)]
struct Admin {
    dispatcher: Dispatcher,
    store: Arc<Store>,
    inflight: Arc<AtomicUsize>,
    started: Instant,
    requests: Arc<AtomicU64>,
}

fn json_response(status: StatusCode, value: &serde_json::Value) -> hyper::Response<Body> {
    let mut resp = hyper::Response::new(Body::from(format!("{value:#}\n")));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        "application/json".parse().expect("static header"),
    );
    resp
}

impl Admin {
    async fn handle(&self, method: &Method, path: &str) -> hyper::Response<Body> {
        match (method, path) {
            (&Method::GET, "/_csd/metrics") => match self.dispatcher.metrics().await {
                Ok(mut metrics) => {
                    let objects = self.store.objects();
                    let mut per_group = vec![0u64; 0];
                    for (_, _, _, g) in &objects {
                        let g = *g as usize;
                        if per_group.len() <= g {
                            per_group.resize(g + 1, 0);
                        }
                        per_group[g] += 1;
                    }
                    metrics["server"] = serde_json::json!({
                        "uptime_s": self.started.elapsed().as_secs_f64(),
                        "http_requests": self.requests.load(Ordering::Relaxed),
                        "inflight": self.inflight.load(Ordering::SeqCst),
                        "objects": objects.len(),
                        "objects_per_group": per_group,
                    });
                    json_response(StatusCode::OK, &metrics)
                }
                Err(e) => json_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &serde_json::json!({ "error": e.to_string() }),
                ),
            },
            (&Method::POST, "/_csd/reset") => match self.dispatcher.reset().await {
                Ok(Ok(())) => json_response(StatusCode::OK, &serde_json::json!({ "reset": true })),
                Ok(Err(why)) => {
                    json_response(StatusCode::CONFLICT, &serde_json::json!({ "error": why }))
                }
                Err(e) => json_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &serde_json::json!({ "error": e.to_string() }),
                ),
            },
            _ => json_response(
                StatusCode::NOT_FOUND,
                &serde_json::json!({ "error": format!("no admin route {method} {path}; try GET /_csd/metrics or POST /_csd/reset") }),
            ),
        }
    }
}

/// The S3 operations over the store and the dispatcher.
struct Csd {
    store: Arc<Store>,
    dispatcher: Dispatcher,
    inflight: Arc<AtomicUsize>,
    region: String,
}

/// Counts a streaming body while it lives.
struct Inflight(Arc<AtomicUsize>);

impl Inflight {
    fn new(counter: &Arc<AtomicUsize>) -> Inflight {
        counter.fetch_add(1, Ordering::SeqCst);
        Inflight(counter.clone())
    }
}

impl Drop for Inflight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn store_error(e: StoreError) -> S3Error {
    let code = match &e {
        StoreError::NoSuchBucket(_) => S3ErrorCode::NoSuchBucket,
        StoreError::NoSuchKey { .. } => S3ErrorCode::NoSuchKey,
        StoreError::BucketExists(_) => S3ErrorCode::BucketAlreadyOwnedByYou,
        StoreError::BucketNotEmpty { .. } => S3ErrorCode::BucketNotEmpty,
        StoreError::InvalidBucketName { .. } => S3ErrorCode::InvalidBucketName,
        StoreError::InvalidKey { .. } | StoreError::Unplaced { .. } => S3ErrorCode::InvalidArgument,
        StoreError::KeyTooLong { .. } => S3ErrorCode::KeyTooLongError,
        StoreError::Io { .. } | StoreError::BadMeta { .. } | StoreError::GroupsChanged { .. } => {
            S3ErrorCode::InternalError
        }
    };
    S3Error::with_message(code, e.to_string())
}

fn stopped() -> S3Error {
    S3Error::with_message(S3ErrorCode::ServiceUnavailable, "the CSD is shutting down")
}

fn timestamp(ms: u64) -> Timestamp {
    Timestamp::from(UNIX_EPOCH + Duration::from_millis(ms))
}

fn query_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get(QUERY_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .filter(|q| !q.is_empty())
}

/// The `x-csd-*` headers telling a client what its request cost in modeled time.
fn grant_headers(grant: &Grant) -> HeaderMap {
    let mut h = HeaderMap::new();
    let mut put = |name: &'static str, value: String| {
        if let Ok(v) = value.parse() {
            h.insert(name, v);
        }
    };
    put("x-csd-group", grant.group.to_string());
    put(
        "x-csd-modeled-wait-ms",
        format!("{:.3}", grant.wait_ns as f64 / 1e6),
    );
    put(
        "x-csd-modeled-start-ms",
        format!("{:.3}", grant.start_ns as f64 / 1e6),
    );
    put(
        "x-csd-modeled-end-ms",
        format!("{:.3}", grant.end_ns as f64 / 1e6),
    );
    put("x-csd-switched", grant.switched.to_string());
    put("x-csd-switches", grant.switches.to_string());
    put("x-csd-ticket", grant.ticket.to_string());
    h
}

/// The byte range a GET asks for, checked against the object's size.
fn resolve_range(
    range: Option<Range>,
    size: u64,
    bucket: &str,
    key: &str,
) -> S3Result<Option<std::ops::Range<u64>>> {
    match range {
        None => Ok(None),
        Some(r) => r.check(size).map(Some).map_err(|_| {
            S3Error::with_message(
                S3ErrorCode::InvalidRange,
                format!(
                    "range {} is not satisfiable for {bucket}/{key} ({size} bytes)",
                    r.to_header_string()
                ),
            )
        }),
    }
}

/// A GET body read from its file by a blocking task, a few chunks ahead.
struct FileBody {
    rx: mpsc::Receiver<Result<Bytes, std::io::Error>>,
    remaining: u64,
    _inflight: Inflight,
}

impl Stream for FileBody {
    type Item = Result<Bytes, s3s::StdError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                self.remaining = self.remaining.saturating_sub(chunk.len() as u64);
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Box::new(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl ByteStream for FileBody {
    fn remaining_length(&self) -> RemainingLength {
        RemainingLength::new_exact(self.remaining as usize)
    }
}

fn file_body(object: OpenObject, range: std::ops::Range<u64>, inflight: Inflight) -> FileBody {
    let (tx, rx) = mpsc::channel(2);
    let len = range.end - range.start;
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = object.file;
        if let Err(e) = file.seek(SeekFrom::Start(range.start)) {
            let _ = tx.blocking_send(Err(e));
            return;
        }
        let mut left = len;
        while left > 0 {
            let mut buf = vec![0u8; CHUNK.min(left as usize)];
            match file.read(&mut buf) {
                Ok(0) => {
                    let eof = std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "object file shorter than its metadata",
                    );
                    let _ = tx.blocking_send(Err(eof));
                    return;
                }
                Ok(n) => {
                    buf.truncate(n);
                    left -= n as u64;
                    // The client went away: stop reading.
                    if tx.blocking_send(Ok(Bytes::from(buf))).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            }
        }
    });
    FileBody {
        rx,
        remaining: len,
        _inflight: inflight,
    }
}

/// An upload in staging; removed (and its placement forgotten) unless committed.
struct Staged {
    store: Arc<Store>,
    path: PathBuf,
    bucket: String,
    key: String,
    placed: bool,
    committed: bool,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.path);
            if self.placed {
                self.store.abandon_put(&self.bucket, &self.key);
            }
        }
    }
}

impl Csd {
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> S3Result<T> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || f(&store))
            .await
            .map_err(|e| {
                S3Error::with_message(
                    S3ErrorCode::InternalError,
                    format!("store task failed: {e}"),
                )
            })?
            .map_err(store_error)
    }
}

#[async_trait::async_trait]
impl S3 for Csd {
    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        let bucket = req.input.bucket;
        self.blocking(move |s| s.create_bucket(&bucket)).await?;
        Ok(S3Response::new(CreateBucketOutput::default()))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        if !self.store.bucket_exists(&req.input.bucket) {
            return Err(store_error(StoreError::NoSuchBucket(req.input.bucket)));
        }
        Ok(S3Response::new(HeadBucketOutput {
            bucket_region: Some(self.region.clone()),
            ..Default::default()
        }))
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        if !self.store.bucket_exists(&req.input.bucket) {
            return Err(store_error(StoreError::NoSuchBucket(req.input.bucket)));
        }
        Ok(S3Response::new(GetBucketLocationOutput::default()))
    }

    async fn list_buckets(
        &self,
        _req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        let buckets = self
            .store
            .buckets()
            .into_iter()
            .map(|(name, created)| Bucket {
                name: Some(name),
                creation_date: Some(timestamp(created)),
                bucket_region: Some(self.region.clone()),
            })
            .collect();
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(buckets),
            ..Default::default()
        }))
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        let bucket = req.input.bucket;
        self.blocking(move |s| s.delete_bucket(&bucket)).await?;
        Ok(S3Response::new(DeleteBucketOutput::default()))
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let HeadObjectInput {
            bucket, key, range, ..
        } = req.input;
        let (meta, group) = self.store.head(&bucket, &key).map_err(store_error)?;
        let (length, content_range) = match resolve_range(range, meta.size, &bucket, &key)? {
            Some(r) => (
                r.end - r.start,
                Some(format!("bytes {}-{}/{}", r.start, r.end - 1, meta.size)),
            ),
            None => (meta.size, None),
        };
        let mut resp = S3Response::new(HeadObjectOutput {
            content_length: Some(length as i64),
            content_range,
            e_tag: Some(ETag::Strong(meta.etag)),
            last_modified: Some(timestamp(meta.modified_ms)),
            ..Default::default()
        });
        if let Ok(v) = group.to_string().parse() {
            resp.headers.insert("x-csd-group", v);
        }
        Ok(resp)
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let query = query_of(&req.headers);
        let GetObjectInput {
            bucket, key, range, ..
        } = req.input;
        let (meta, group) = self.store.head(&bucket, &key).map_err(store_error)?;
        let wanted = resolve_range(range, meta.size, &bucket, &key)?;
        let bytes = wanted.as_ref().map_or(meta.size, |r| r.end - r.start);
        let grant = self
            .dispatcher
            .request(Ask {
                query,
                bucket: bucket.clone(),
                key: key.clone(),
                relation: Placement::relation_of(&bucket, &key),
                group,
                bytes,
            })
            .await
            .map_err(|_| stopped())?;
        // The object may have been replaced while we waited: serve what is
        // there now, consistently with its metadata.
        let object = {
            let (b, k) = (bucket.clone(), key.clone());
            self.blocking(move |s| s.open_object(&b, &k)).await?
        };
        let size = object.meta.size;
        let range = match range {
            None => 0..size,
            Some(_) => resolve_range(range, size, &bucket, &key)?.unwrap_or(0..size),
        };
        let content_range =
            wanted.map(|_| format!("bytes {}-{}/{}", range.start, range.end - 1, size));
        let etag = object.meta.etag.clone();
        let modified = object.meta.modified_ms;
        let length = range.end - range.start;
        let body = file_body(object, range, Inflight::new(&self.inflight));
        let mut resp = S3Response::new(GetObjectOutput {
            body: Some(StreamingBlob::new(body)),
            content_length: Some(length as i64),
            content_range,
            e_tag: Some(ETag::Strong(etag)),
            last_modified: Some(timestamp(modified)),
            ..Default::default()
        });
        resp.headers = grant_headers(&grant);
        Ok(resp)
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        let query = query_of(&req.headers);
        let PutObjectInput {
            bucket, key, body, ..
        } = req.input;
        crate::store::validate_key(&key).map_err(store_error)?;
        if !self.store.bucket_exists(&bucket) {
            return Err(store_error(StoreError::NoSuchBucket(bucket)));
        }
        // Upload to staging first: the transfer from the client does not
        // occupy the device.
        let (path, file) = {
            let store = self.store.clone();
            tokio::task::spawn_blocking(move || store.staging_file())
                .await
                .map_err(|e| S3Error::with_message(S3ErrorCode::InternalError, e.to_string()))?
                .map_err(store_error)?
        };
        let mut staged = Staged {
            store: self.store.clone(),
            path: path.clone(),
            bucket: bucket.clone(),
            key: key.clone(),
            placed: false,
            committed: false,
        };
        let io = |e: std::io::Error| {
            S3Error::with_message(
                S3ErrorCode::InternalError,
                format!("{}: {e}", path.display()),
            )
        };
        let (mut size, mut crc) = (0u64, 0u32);
        {
            let _inflight = Inflight::new(&self.inflight);
            let mut file = tokio::fs::File::from_std(file);
            if let Some(mut body) = body {
                while let Some(chunk) = body.next().await {
                    let chunk = chunk.map_err(|e| {
                        S3Error::with_message(
                            S3ErrorCode::IncompleteBody,
                            format!("upload of {bucket}/{key} failed after {size} bytes: {e}"),
                        )
                    })?;
                    crc = crc32c::crc32c_append(crc, &chunk);
                    size += chunk.len() as u64;
                    file.write_all(&chunk).await.map_err(io)?;
                }
            }
            file.sync_all().await.map_err(io)?;
        }
        let group = self.store.place(&bucket, &key).map_err(store_error)?;
        staged.placed = true;
        let grant = self
            .dispatcher
            .request(Ask {
                query,
                bucket: bucket.clone(),
                key: key.clone(),
                relation: Placement::relation_of(&bucket, &key),
                group,
                bytes: size,
            })
            .await
            .map_err(|_| stopped())?;
        let (meta, _) = {
            let (b, k, p) = (bucket.clone(), key.clone(), path.clone());
            self.blocking(move |s| s.commit_put(&b, &k, &p, size, crc))
                .await?
        };
        staged.committed = true;
        let mut resp = S3Response::new(PutObjectOutput {
            e_tag: Some(ETag::Strong(meta.etag)),
            size: Some(size as i64),
            ..Default::default()
        });
        resp.headers = grant_headers(&grant);
        Ok(resp)
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let DeleteObjectInput { bucket, key, .. } = req.input;
        self.blocking(move |s| s.delete(&bucket, &key)).await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let DeleteObjectsInput { bucket, delete, .. } = req.input;
        let quiet = delete.quiet.unwrap_or(false);
        let keys: Vec<String> = delete.objects.into_iter().map(|o| o.key).collect();
        let results = self
            .blocking(move |s| {
                Ok(keys
                    .into_iter()
                    .map(|k| (s.delete(&bucket, &k), k))
                    .collect::<Vec<_>>())
            })
            .await?;
        let mut deleted = Vec::new();
        let mut errors = Vec::new();
        for (result, key) in results {
            match result {
                Ok(_) if quiet => {}
                Ok(_) => deleted.push(DeletedObject {
                    key: Some(key),
                    ..Default::default()
                }),
                Err(e) => {
                    let e = store_error(e);
                    errors.push(s3s::dto::Error {
                        code: Some(e.code().as_str().to_string()),
                        key: Some(key),
                        message: e.message().map(str::to_string),
                        ..Default::default()
                    });
                }
            }
        }
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: Some(deleted),
            errors: Some(errors),
            ..Default::default()
        }))
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let ListObjectsV2Input {
            bucket,
            continuation_token,
            delimiter,
            max_keys,
            prefix,
            start_after,
            ..
        } = req.input;
        let max = max_keys.unwrap_or(1000).clamp(0, 1000);
        let page = self
            .store
            .list(
                &bucket,
                prefix.as_deref().unwrap_or(""),
                delimiter.as_deref(),
                max as usize,
                start_after.as_deref(),
                continuation_token.as_deref(),
            )
            .map_err(|e| match e {
                StoreError::InvalidKey { key, why } => S3Error::with_message(
                    S3ErrorCode::InvalidArgument,
                    format!("continuation token {key:?} of a listing of {bucket}: {why}"),
                ),
                e => store_error(e),
            })?;
        let key_count = (page.objects.len() + page.common_prefixes.len()) as i32;
        let contents = page
            .objects
            .into_iter()
            .map(|(key, meta)| Object {
                key: Some(key),
                size: Some(meta.size as i64),
                e_tag: Some(ETag::Strong(meta.etag)),
                last_modified: Some(timestamp(meta.modified_ms)),
                ..Default::default()
            })
            .collect();
        let common_prefixes = page
            .common_prefixes
            .into_iter()
            .map(|p| CommonPrefix { prefix: Some(p) })
            .collect();
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(bucket),
            prefix,
            delimiter,
            max_keys: Some(max),
            key_count: Some(key_count),
            continuation_token,
            start_after,
            is_truncated: Some(page.next_token.is_some()),
            next_continuation_token: page.next_token,
            contents: Some(contents),
            common_prefixes: Some(common_prefixes),
            ..Default::default()
        }))
    }
}

/// Runs a server until SIGINT or SIGTERM on a runtime of its own, calling
/// `on_listen` with the bound address once it accepts connections.
pub fn serve_blocking(
    config: CsdConfig,
    data_dir: &Path,
    addr: SocketAddr,
    credentials: Credentials,
    on_listen: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ServeError::Runtime(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let server = spawn_with(config, data_dir, addr, credentials).await?;
        on_listen(server.addr());
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| ServeError::Runtime(format!("cannot watch SIGTERM: {e}")))?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        server.shutdown().await;
        Ok::<(), ServeError>(())
    })
}
