//! Skipper's client proxy (§4.3): asks the cold storage device for every
//! object a query needs at once and hands each one over as it arrives.
//!
//! Why at once: the device can only batch what it has been asked for. A
//! pull-based executor asks for one object, waits, asks for the next — so a
//! device serving several clients switches groups for nearly every object
//! (§3.2). With every request of a query queued on the device, a group is
//! served once per cycle and the order of delivery is the device's; MJoin
//! (`strata-sql`'s `skipper` module) copes with any order.
//!
//! Every request carries the query's tag (`x-strata-query`), so the device's
//! query-aware schedulers see which requests belong together. The GETs run
//! concurrently on the cold tier client's runtime; a request that fails in
//! transit (the service restarting, a reset connection) is repeated with
//! backoff for as long as the tier's retry policy allows; a missing object, an
//! object of the wrong size or with the wrong CRC32C fails at once, naming it.
//! Dropping the proxy cancels whatever is still outstanding: the connections
//! close and the device forgets the queued requests.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use strata_storage::StorageError;
use tokio::sync::Semaphore;

use crate::client::{ColdClient, RetryPolicy, StoreFactory, object_error, transient};
use crate::device::ColdTier;
use crate::stats::ColdStats;
use crate::transit;

/// GETs one proxy keeps open at once. The device queues what it is sent, so
/// this only needs to exceed the objects of one query; it bounds sockets.
pub const MAX_IN_FLIGHT: usize = 1024;

/// One object to fetch, as the table's cold-tier manifest describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    pub endpoint: String,
    pub bucket: String,
    pub key: String,
    pub bytes: u64,
    pub crc32c: u32,
}

impl ObjectRef {
    /// `bucket/key`, as errors and the device's scheduler name it.
    pub fn name(&self) -> String {
        format!("{}/{}", self.bucket, self.key)
    }
}

/// An object that arrived (or failed for good).
#[derive(Debug)]
pub struct Arrival {
    /// The id the object was requested with.
    pub id: usize,
    pub result: Result<Bytes, StorageError>,
}

/// The client proxy of one query (see the module docs).
pub struct ClientProxy {
    client: Arc<ColdClient>,
    factory: StoreFactory,
    stores: HashMap<(String, String), Arc<dyn ObjectStore>>,
    retry: RetryPolicy,
    stats: Arc<ColdStats>,
    tag: String,
    slots: Arc<Semaphore>,
    tx: Sender<Arrival>,
    rx: Receiver<Arrival>,
    outstanding: usize,
    tasks: Vec<tokio::task::AbortHandle>,
}

impl std::fmt::Debug for ClientProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientProxy")
            .field("tag", &self.tag)
            .field("outstanding", &self.outstanding)
            .finish_non_exhaustive()
    }
}

impl ClientProxy {
    /// A proxy over `tier`'s client whose requests carry the query tag `tag`.
    pub fn new(tier: &ColdTier, tag: &str) -> Result<ClientProxy, StorageError> {
        let client = tier.client()?;
        let (tx, rx) = channel();
        Ok(ClientProxy {
            retry: client.retry_policy(),
            stats: tier.stats().clone(),
            client,
            factory: tier.proxy_factory(tag),
            stores: HashMap::new(),
            tag: tag.to_string(),
            slots: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            tx,
            rx,
            outstanding: 0,
            tasks: Vec::new(),
        })
    }

    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// Requests not yet delivered.
    pub fn outstanding(&self) -> usize {
        self.outstanding
    }

    fn store(&mut self, o: &ObjectRef) -> Result<Arc<dyn ObjectStore>, StorageError> {
        let key = (o.endpoint.clone(), o.bucket.clone());
        if let Some(s) = self.stores.get(&key) {
            return Ok(s.clone());
        }
        let store = (self.factory)(&o.endpoint, &o.bucket).map_err(|e| {
            object_error(
                &o.endpoint,
                &o.bucket,
                format!("cannot make a client: {e}"),
                false,
            )
        })?;
        self.stores.insert(key, store.clone());
        Ok(store)
    }

    /// Sends the GET of `object`; it arrives through [`ClientProxy::next_arrival`]
    /// with `id`. Returns at once.
    pub fn request(&mut self, id: usize, object: &ObjectRef) -> Result<(), StorageError> {
        self.send(id, object, None)
    }

    /// Sends the ranged GETs of byte ranges `ranges` (offset, length) of
    /// `object` (a column file's: the chunks a query needs of a row group);
    /// their bytes, end to end, arrive through [`ClientProxy::next_arrival`]
    /// with `id`. `object`'s size and CRC32C are not checked: the caller
    /// checks what arrives against the file's block checksums.
    pub fn request_ranges(
        &mut self,
        id: usize,
        object: &ObjectRef,
        ranges: Vec<(u64, u64)>,
    ) -> Result<(), StorageError> {
        self.send(id, object, Some(ranges))
    }

    /// Spawns the fetch of `object` (whole, or `ranges` of it).
    fn send(
        &mut self,
        id: usize,
        object: &ObjectRef,
        ranges: Option<Vec<(u64, u64)>>,
    ) -> Result<(), StorageError> {
        let store = self.store(object)?;
        let (tx, slots, stats, retry) = (
            self.tx.clone(),
            self.slots.clone(),
            self.stats.clone(),
            self.retry,
        );
        let object = object.clone();
        let task = self.client.handle().spawn(async move {
            let result = match (slots.acquire_owned().await, ranges) {
                (Ok(_permit), None) => fetch(store, &object, retry, &stats).await,
                (Ok(_permit), Some(r)) => fetch_ranges(store, &object, &r, retry, &stats).await,
                (Err(_), _) => Err(object_error(
                    &object.endpoint,
                    &object.name(),
                    "GET: the client proxy closed".into(),
                    false,
                )),
            };
            let _ = tx.send(Arrival { id, result });
        });
        self.tasks.push(task.abort_handle());
        self.outstanding += 1;
        Ok(())
    }

    /// The next object to arrive, waiting for it; `None` when nothing is
    /// outstanding.
    pub fn next_arrival(&mut self) -> Option<Arrival> {
        if self.outstanding == 0 {
            return None;
        }
        let a = self.rx.recv().ok()?;
        self.outstanding -= 1;
        Some(a)
    }
}

impl Drop for ClientProxy {
    fn drop(&mut self) {
        self.slots.close();
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// One object's GET with retries, checked against its manifest entry.
async fn fetch(
    store: Arc<dyn ObjectStore>,
    o: &ObjectRef,
    retry: RetryPolicy,
    stats: &ColdStats,
) -> Result<Bytes, StorageError> {
    let path = ObjectPath::from(o.key.as_str());
    let b = retried(o, "GET", retry, stats, || async {
        store.get(&path).await?.bytes().await
    })
    .await?;
    check(o, &o.name(), b)
}

/// Byte ranges `(offset, length)` of an object, each a ranged GET with
/// retries, one after another; their bytes end to end. Each range must
/// arrive whole; what the bytes are is checked by the caller (a column
/// file's manifest has a CRC32C per block).
async fn fetch_ranges(
    store: Arc<dyn ObjectStore>,
    o: &ObjectRef,
    ranges: &[(u64, u64)],
    retry: RetryPolicy,
    stats: &ColdStats,
) -> Result<Bytes, StorageError> {
    let path = ObjectPath::from(o.key.as_str());
    let mut out = Vec::with_capacity(ranges.iter().map(|r| r.1 as usize).sum());
    for &(start, len) in ranges {
        let what = format!("GET of bytes {start}..{}", start + len);
        let b = retried(o, &what, retry, stats, || async {
            store.get_range(&path, start..start + len).await
        })
        .await?;
        if b.len() as u64 != len {
            return Err(object_error(
                &o.endpoint,
                &o.name(),
                format!("{what}: {} bytes arrived", b.len()),
                true,
            ));
        }
        out.extend_from_slice(&b);
    }
    Ok(out.into())
}

/// Runs one request (`attempt`) until it succeeds, fails for good, or has
/// failed in transit for longer than the retry policy allows; counts each
/// try as a GET and the bytes that arrived.
async fn retried<F, Fut>(
    o: &ObjectRef,
    what: &str,
    retry: RetryPolicy,
    stats: &ColdStats,
    mut attempt: F,
) -> Result<Bytes, StorageError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Bytes, object_store::Error>>,
{
    let name = o.name();
    let start = Instant::now();
    let mut backoff = retry.initial_backoff;
    let mut attempts = 0u64;
    loop {
        attempts += 1;
        stats.add_gets(1);
        let e = match attempt().await {
            Ok(b) => {
                stats.add_bytes_fetched(b.len() as u64);
                return Ok(b);
            }
            Err(e) => e,
        };
        if matches!(e, object_store::Error::NotFound { .. }) {
            return Err(object_error(
                &o.endpoint,
                &name,
                format!("{what}: no such object on the cold storage device"),
                false,
            ));
        }
        if !transient(&e) {
            return Err(object_error(
                &o.endpoint,
                &name,
                format!("{what}: {}", transit::redact(&e.to_string())),
                false,
            ));
        }
        let elapsed = start.elapsed();
        if elapsed + backoff > retry.retry_for {
            return Err(object_error(
                &o.endpoint,
                &name,
                transit::gave_up(
                    what,
                    &o.endpoint,
                    &transit::reason(&e),
                    attempts,
                    elapsed,
                    retry.retry_for,
                ),
                false,
            ));
        }
        stats.add_retries(1);
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(retry.max_backoff.max(Duration::from_millis(1)));
    }
}

/// The object's bytes, if they are what the manifest says.
fn check(o: &ObjectRef, name: &str, b: Bytes) -> Result<Bytes, StorageError> {
    if b.len() as u64 != o.bytes {
        return Err(object_error(
            &o.endpoint,
            name,
            format!(
                "GET: {} bytes arrived, the manifest says {}",
                b.len(),
                o.bytes
            ),
            true,
        ));
    }
    let crc = crc32c::crc32c(&b);
    if crc != o.crc32c {
        return Err(object_error(
            &o.endpoint,
            name,
            format!("GET: CRC32C {crc:08x}, the manifest says {:08x}", o.crc32c),
            true,
        ));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::memory_factory;
    use crate::device::ColdConfig;

    fn put(tier: &ColdTier, key: &str, data: &[u8]) -> ObjectRef {
        let c = tier.client().unwrap();
        c.put("mem://", "db", key, Bytes::copy_from_slice(data))
            .unwrap();
        ObjectRef {
            endpoint: "mem://".into(),
            bucket: "db".into(),
            key: key.into(),
            bytes: data.len() as u64,
            crc32c: crc32c::crc32c(data),
        }
    }

    #[test]
    fn every_object_arrives_once_with_its_id_and_errors_name_the_object() {
        let tier = ColdTier::with_factory(ColdConfig::default(), memory_factory());
        let objs: Vec<ObjectRef> = (0..20)
            .map(|i| put(&tier, &format!("t/t.heap.{i}"), &vec![i as u8; 1000 + i]))
            .collect();
        let mut p = ClientProxy::new(&tier, "q1").unwrap();
        for (i, o) in objs.iter().enumerate() {
            p.request(i, o).unwrap();
        }
        assert_eq!(p.outstanding(), 20);
        let mut seen = [false; 20];
        while let Some(a) = p.next_arrival() {
            let b = a.result.unwrap();
            assert_eq!(b.len(), 1000 + a.id);
            assert!(b.iter().all(|&x| x == a.id as u8));
            assert!(!seen[a.id]);
            seen[a.id] = true;
        }
        assert!(seen.iter().all(|&s| s));

        // Missing, wrong size, wrong CRC: each fails naming the object.
        let mut missing = objs[0].clone();
        missing.key = "t/t.heap.99".into();
        let mut short = objs[1].clone();
        short.bytes += 1;
        let mut bad_crc = objs[2].clone();
        bad_crc.crc32c ^= 1;
        for (i, o) in [missing, short, bad_crc].iter().enumerate() {
            p.request(i, o).unwrap();
        }
        let mut errors: Vec<String> = std::iter::from_fn(|| p.next_arrival())
            .map(|a| a.result.unwrap_err().to_string())
            .collect();
        errors.sort();
        assert_eq!(errors.len(), 3);
        assert!(
            errors
                .iter()
                .any(|e| e.contains("db/t/t.heap.99") && e.contains("no such object"))
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("db/t/t.heap.1") && e.contains("bytes arrived"))
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("db/t/t.heap.2") && e.contains("CRC32C"))
        );
    }
}
