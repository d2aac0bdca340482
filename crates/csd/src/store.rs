//! The CSD's objects on a local directory, and the metadata that must survive
//! a restart.
//!
//! A MAID box keeps each object on one disk group; which group is the one fact a
//! restarted device must not lose (the scheduler, the layouts and every client's
//! reasoning depend on it). So the object → group [`Placement`] lives beside the
//! objects in `<data>/csd-meta.json`, together with every bucket and every
//! object's size and ETag, rewritten atomically (temporary file, fsync, rename,
//! fsync of the directory) on every PUT and DELETE and reloaded at start.
//!
//! Objects are files under `<data>/objects/<bucket>/`. S3 keys are not paths:
//! `a` and `a/b` may both exist, and a key may hold `..`, `%` or bytes a file
//! system dislikes. Each `/`-separated component is therefore percent-encoded
//! and suffixed — `.d` for a directory, `.o` for the object — so `a` is `a.o` and
//! `a/b` is `a.d/b.o`, and no key can name a path outside its bucket. Keys that
//! would still be dangerous or unrepresentable (`..` or `.` components, a
//! leading `/`, NUL, components too long for a file name) are refused with the
//! S3 error a client expects, naming the key.
//!
//! Object data is first streamed into `<data>/staging/` (the PUT's upload does
//! not occupy the device) and moved into place by [`Store::commit_put`] when the
//! scheduler gives the PUT its group's turn. The rename and the metadata rewrite
//! happen under one lock, so a reader that opens an object under the same lock
//! ([`Store::open_object`]) always sees a file and metadata that belong together.
//!
//! At start, the metadata is reconciled with the files: an object whose file is
//! gone is dropped, one whose size changed is re-read (a crash between a
//! rename and the metadata rewrite), and a file the metadata never heard of is
//! adopted and placed.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use strata_storage::exit;

use crate::layout::{LayoutSpec, Placement};

/// The metadata file's name inside the data directory.
pub const META_FILE: &str = "csd-meta.json";
const META_FORMAT: u32 = 1;
/// S3's limit on a key's length in bytes.
pub const MAX_KEY_LEN: usize = 1024;
/// The longest encoded component: a file name's 255 bytes less the suffix.
const MAX_COMPONENT: usize = 253;

/// What went wrong, in S3's terms where a client caused it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no such bucket: {0}")]
    NoSuchBucket(String),
    #[error("no such key: {bucket}/{key}")]
    NoSuchKey { bucket: String, key: String },
    #[error("bucket {0} already exists")]
    BucketExists(String),
    #[error("bucket {bucket} is not empty ({objects} objects)")]
    BucketNotEmpty { bucket: String, objects: usize },
    #[error("invalid bucket name {name:?}: {why}")]
    InvalidBucketName { name: String, why: &'static str },
    #[error("invalid key {key:?}: {why}")]
    InvalidKey { key: String, why: &'static str },
    #[error(
        "key too long ({len} bytes, or a component over {MAX_COMPONENT} once encoded): {key:?}"
    )]
    KeyTooLong { key: String, len: usize },
    #[error("the layout cannot place {bucket}/{key}: {why}")]
    Unplaced {
        bucket: String,
        key: String,
        why: String,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The metadata file does not read (not JSON, another format).
    #[error("{}: {why}", path.display())]
    BadMeta { path: PathBuf, why: String },
    /// The data directory's objects are placed on another number of groups
    /// than the configuration asks for.
    #[error(
        "{}: its objects are placed on {placed} groups but the configuration asks for {asked}; \
         start with groups = {placed} or a fresh data directory",
        path.display()
    )]
    GroupsChanged {
        path: PathBuf,
        placed: u32,
        asked: u32,
    },
}

impl StoreError {
    /// This error's exit code (`strata_storage::exit`): what a client or the
    /// configuration asked for that the store cannot do is bad usage, a
    /// metadata file that does not read is corruption, I/O is an operational
    /// failure.
    pub fn exit_code(&self) -> u8 {
        use StoreError as E;
        match self {
            E::NoSuchBucket(_)
            | E::NoSuchKey { .. }
            | E::BucketExists(_)
            | E::BucketNotEmpty { .. }
            | E::InvalidBucketName { .. }
            | E::InvalidKey { .. }
            | E::KeyTooLong { .. }
            | E::Unplaced { .. }
            | E::GroupsChanged { .. } => exit::USAGE,
            E::BadMeta { .. } => exit::CORRUPT,
            E::Io { .. } => exit::FAILURE,
        }
    }

    /// An [`exit::Classifier`] for this type.
    pub fn classify(e: &(dyn std::error::Error + 'static)) -> Option<u8> {
        e.downcast_ref::<StoreError>().map(StoreError::exit_code)
    }
}

fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One object's metadata.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectMeta {
    pub size: u64,
    /// A strong ETag's value (without quotes): the CRC32C of the bytes and the size.
    pub etag: String,
    /// Milliseconds since the Unix epoch.
    pub modified_ms: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct BucketMeta {
    created_ms: u64,
}

#[derive(Serialize, Deserialize)]
struct Meta {
    format: u32,
    groups: u32,
    placement: Placement,
    buckets: BTreeMap<String, BucketMeta>,
    objects: BTreeMap<String, BTreeMap<String, ObjectMeta>>,
}

/// What reconciling the metadata with the files found at start.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Reconciled {
    pub objects: usize,
    pub dropped_missing: usize,
    pub refreshed: usize,
    pub adopted: usize,
}

/// An object opened for reading: its file, as of the moment its metadata was read.
pub struct OpenObject {
    pub file: fs::File,
    pub meta: ObjectMeta,
    pub group: u32,
}

/// One page of a ListObjectsV2.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ListPage {
    pub objects: Vec<(String, ObjectMeta)>,
    pub common_prefixes: Vec<String>,
    /// Set when more entries follow: the opaque token for the next page.
    pub next_token: Option<String>,
}

/// The objects and their persistent metadata.
pub struct Store {
    root: PathBuf,
    meta: Mutex<Meta>,
    staging_seq: AtomicU64,
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The ETag strong value for an object's CRC32C and size.
pub fn etag_of(crc: u32, size: u64) -> String {
    format!("{crc:08x}{size:016x}")
}

impl Store {
    /// Opens (or creates) the store in `root`. A new store places objects by
    /// `layout` over `groups` groups; an existing one keeps its placement and
    /// refuses a different group count (its objects are on those groups).
    pub fn open(
        root: &Path,
        layout: LayoutSpec,
        groups: u32,
    ) -> Result<(Store, Reconciled), StoreError> {
        for dir in [
            root.to_path_buf(),
            root.join("objects"),
            root.join("staging"),
        ] {
            fs::create_dir_all(&dir).map_err(io_at(&dir))?;
        }
        // Uploads that never reached their turn before a stop.
        let staging = root.join("staging");
        for entry in fs::read_dir(&staging).map_err(io_at(&staging))? {
            let path = entry.map_err(io_at(&staging))?.path();
            fs::remove_file(&path).map_err(io_at(&path))?;
        }
        let meta_path = root.join(META_FILE);
        let mut meta = match fs::read(&meta_path) {
            Ok(bytes) => {
                let meta: Meta =
                    serde_json::from_slice(&bytes).map_err(|e| StoreError::BadMeta {
                        path: meta_path.clone(),
                        why: e.to_string(),
                    })?;
                if meta.format != META_FORMAT {
                    return Err(StoreError::BadMeta {
                        path: meta_path,
                        why: format!("format {} (this build reads {META_FORMAT})", meta.format),
                    });
                }
                if meta.groups != groups {
                    return Err(StoreError::GroupsChanged {
                        path: meta_path,
                        placed: meta.groups,
                        asked: groups,
                    });
                }
                meta
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Meta {
                format: META_FORMAT,
                groups,
                placement: Placement::new(layout, groups),
                buckets: BTreeMap::new(),
                objects: BTreeMap::new(),
            },
            Err(e) => {
                return Err(StoreError::Io {
                    path: meta_path,
                    source: e,
                });
            }
        };
        let reconciled = reconcile(root, &mut meta)?;
        let store = Store {
            root: root.to_path_buf(),
            meta: Mutex::new(meta),
            staging_seq: AtomicU64::new(0),
        };
        store.persist(&store.meta.lock())?;
        Ok((store, reconciled))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn persist(&self, meta: &Meta) -> Result<(), StoreError> {
        let path = self.root.join(META_FILE);
        let bytes = serde_json::to_vec(meta).map_err(|e| StoreError::BadMeta {
            path: path.clone(),
            why: e.to_string(),
        })?;
        write_atomic(&self.root, &path, &bytes)
    }

    pub fn create_bucket(&self, bucket: &str) -> Result<(), StoreError> {
        validate_bucket(bucket)?;
        let mut meta = self.meta.lock();
        if meta.buckets.contains_key(bucket) {
            return Err(StoreError::BucketExists(bucket.to_string()));
        }
        let dir = self.root.join("objects").join(bucket);
        fs::create_dir_all(&dir).map_err(io_at(&dir))?;
        meta.buckets.insert(
            bucket.to_string(),
            BucketMeta {
                created_ms: now_ms(),
            },
        );
        meta.objects.entry(bucket.to_string()).or_default();
        self.persist(&meta)
    }

    pub fn bucket_exists(&self, bucket: &str) -> bool {
        self.meta.lock().buckets.contains_key(bucket)
    }

    /// Buckets with their creation times (ms since the epoch), by name.
    pub fn buckets(&self) -> Vec<(String, u64)> {
        self.meta
            .lock()
            .buckets
            .iter()
            .map(|(b, m)| (b.clone(), m.created_ms))
            .collect()
    }

    pub fn delete_bucket(&self, bucket: &str) -> Result<(), StoreError> {
        let mut meta = self.meta.lock();
        if !meta.buckets.contains_key(bucket) {
            return Err(StoreError::NoSuchBucket(bucket.to_string()));
        }
        let objects = meta.objects.get(bucket).map_or(0, BTreeMap::len);
        if objects > 0 {
            return Err(StoreError::BucketNotEmpty {
                bucket: bucket.to_string(),
                objects,
            });
        }
        let dir = self.root.join("objects").join(bucket);
        match fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(StoreError::Io {
                    path: dir,
                    source: e,
                });
            }
        }
        meta.buckets.remove(bucket);
        meta.objects.remove(bucket);
        self.persist(&meta)
    }

    /// The object's metadata and group, without touching its data.
    pub fn head(&self, bucket: &str, key: &str) -> Result<(ObjectMeta, u32), StoreError> {
        let meta = self.meta.lock();
        let object = lookup(&meta, bucket, key)?.clone();
        let group = meta.placement.group_of(bucket, key).unwrap_or(0);
        Ok((object, group))
    }

    /// The group an object is placed on, if it is.
    pub fn group_of(&self, bucket: &str, key: &str) -> Option<u32> {
        self.meta.lock().placement.group_of(bucket, key)
    }

    /// Opens the object's file under the metadata lock, so the file and the
    /// metadata returned belong together even while a PUT replaces it.
    pub fn open_object(&self, bucket: &str, key: &str) -> Result<OpenObject, StoreError> {
        let meta = self.meta.lock();
        let object = lookup(&meta, bucket, key)?.clone();
        let group = meta.placement.group_of(bucket, key).unwrap_or(0);
        let path = self.object_path(bucket, key)?;
        let file = fs::File::open(&path).map_err(io_at(&path))?;
        Ok(OpenObject {
            file,
            meta: object,
            group,
        })
    }

    /// The group a PUT of this key goes to: the object's group if it is
    /// placed, else the layout's choice (remembered in memory; persisted by
    /// [`Store::commit_put`], forgotten by [`Store::abandon_put`]).
    pub fn place(&self, bucket: &str, key: &str) -> Result<u32, StoreError> {
        validate_key(key)?;
        let mut meta = self.meta.lock();
        if !meta.buckets.contains_key(bucket) {
            return Err(StoreError::NoSuchBucket(bucket.to_string()));
        }
        meta.placement
            .try_place(bucket, key)
            .map_err(|e| StoreError::Unplaced {
                bucket: bucket.to_string(),
                key: key.to_string(),
                why: e.to_string(),
            })
    }

    /// A PUT that will not commit: forget its placement unless the object exists.
    pub fn abandon_put(&self, bucket: &str, key: &str) {
        let mut meta = self.meta.lock();
        let exists = meta
            .objects
            .get(bucket)
            .is_some_and(|o| o.contains_key(key));
        if !exists {
            meta.placement.forget(bucket, key);
        }
    }

    /// A fresh file in the staging directory for an upload.
    pub fn staging_file(&self) -> Result<(PathBuf, fs::File), StoreError> {
        let n = self.staging_seq.fetch_add(1, Ordering::Relaxed);
        let path = self.root.join("staging").join(format!("upload-{n}"));
        let file = fs::File::create(&path).map_err(io_at(&path))?;
        Ok((path, file))
    }

    /// Moves a fully written and synced staging file into place as the
    /// object and records it; the metadata is persisted before this returns.
    pub fn commit_put(
        &self,
        bucket: &str,
        key: &str,
        staged: &Path,
        size: u64,
        crc: u32,
    ) -> Result<(ObjectMeta, u32), StoreError> {
        let path = self.object_path(bucket, key)?;
        let mut meta = self.meta.lock();
        if !meta.buckets.contains_key(bucket) {
            return Err(StoreError::NoSuchBucket(bucket.to_string()));
        }
        let parent = path.parent().unwrap_or(&self.root).to_path_buf();
        fs::create_dir_all(&parent).map_err(io_at(&parent))?;
        fs::rename(staged, &path).map_err(io_at(&path))?;
        sync_dir(&parent)?;
        let object = ObjectMeta {
            size,
            etag: etag_of(crc, size),
            modified_ms: now_ms(),
        };
        let group = meta.placement.place(bucket, key);
        meta.objects
            .entry(bucket.to_string())
            .or_default()
            .insert(key.to_string(), object.clone());
        self.persist(&meta)?;
        Ok((object, group))
    }

    /// Deletes an object; deleting a missing key succeeds, as in S3.
    /// Returns whether it existed.
    pub fn delete(&self, bucket: &str, key: &str) -> Result<bool, StoreError> {
        let mut meta = self.meta.lock();
        if !meta.buckets.contains_key(bucket) {
            return Err(StoreError::NoSuchBucket(bucket.to_string()));
        }
        let existed = meta
            .objects
            .get_mut(bucket)
            .and_then(|o| o.remove(key))
            .is_some();
        if !existed {
            return Ok(false);
        }
        let path = self.object_path(bucket, key)?;
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::Io { path, source: e }),
        }
        meta.placement.forget(bucket, key);
        self.persist(&meta)?;
        Ok(true)
    }

    /// One page of a ListObjectsV2 (see [`list_page`]).
    pub fn list(
        &self,
        bucket: &str,
        prefix: &str,
        delimiter: Option<&str>,
        max_keys: usize,
        start_after: Option<&str>,
        token: Option<&str>,
    ) -> Result<ListPage, StoreError> {
        let meta = self.meta.lock();
        let objects = meta
            .objects
            .get(bucket)
            .ok_or_else(|| StoreError::NoSuchBucket(bucket.to_string()))?;
        list_page(objects, prefix, delimiter, max_keys, start_after, token)
    }

    /// Every object with its group, by bucket and key (for tests and tools).
    pub fn objects(&self) -> Vec<(String, String, ObjectMeta, u32)> {
        let meta = self.meta.lock();
        let mut out = Vec::new();
        for (bucket, objects) in &meta.objects {
            for (key, object) in objects {
                let group = meta.placement.group_of(bucket, key).unwrap_or(0);
                out.push((bucket.clone(), key.clone(), object.clone(), group));
            }
        }
        out
    }

    fn object_path(&self, bucket: &str, key: &str) -> Result<PathBuf, StoreError> {
        validate_bucket(bucket)?;
        Ok(self
            .root
            .join("objects")
            .join(bucket)
            .join(encode_key(key)?))
    }
}

fn lookup<'m>(meta: &'m Meta, bucket: &str, key: &str) -> Result<&'m ObjectMeta, StoreError> {
    let objects = meta
        .objects
        .get(bucket)
        .ok_or_else(|| StoreError::NoSuchBucket(bucket.to_string()))?;
    objects.get(key).ok_or_else(|| StoreError::NoSuchKey {
        bucket: bucket.to_string(),
        key: key.to_string(),
    })
}

fn validate_bucket(bucket: &str) -> Result<(), StoreError> {
    let why = if bucket.len() < 3 {
        Some("shorter than 3 bytes")
    } else if bucket.len() > 63 {
        Some("longer than 63 bytes")
    } else if bucket == "." || bucket == ".." || bucket.starts_with('.') {
        Some("starts with a dot")
    } else if !bucket
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    {
        Some("only lowercase letters, digits, '-' and '.' are allowed")
    } else {
        None
    };
    match why {
        Some(why) => Err(StoreError::InvalidBucketName {
            name: bucket.to_string(),
            why,
        }),
        None => Ok(()),
    }
}

/// Refuses keys that are empty, too long, absolute, hold NUL, or have `.` or
/// `..` components.
pub fn validate_key(key: &str) -> Result<(), StoreError> {
    let invalid = |why| {
        Err(StoreError::InvalidKey {
            key: key.to_string(),
            why,
        })
    };
    if key.is_empty() {
        return invalid("empty");
    }
    if key.len() > MAX_KEY_LEN {
        return Err(StoreError::KeyTooLong {
            key: key.to_string(),
            len: key.len(),
        });
    }
    if key.starts_with('/') {
        return invalid("absolute (starts with '/')");
    }
    if key.contains('\0') {
        return invalid("contains NUL");
    }
    if key.split('/').any(|c| c == ".." || c == ".") {
        return invalid("has a '.' or '..' component");
    }
    Ok(())
}

fn encode_component(c: &str) -> String {
    let mut out = String::with_capacity(c.len());
    for b in c.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The relative path of a key's file: components percent-encoded, `.d` on
/// directories, `.o` on the object.
pub fn encode_key(key: &str) -> Result<PathBuf, StoreError> {
    validate_key(key)?;
    let components: Vec<&str> = key.split('/').collect();
    let mut path = PathBuf::new();
    for (i, c) in components.iter().enumerate() {
        let encoded = encode_component(c);
        if encoded.len() > MAX_COMPONENT {
            return Err(StoreError::KeyTooLong {
                key: key.to_string(),
                len: key.len(),
            });
        }
        let suffix = if i + 1 == components.len() {
            ".o"
        } else {
            ".d"
        };
        path.push(format!("{encoded}{suffix}"));
    }
    Ok(path)
}

fn decode_component(name: &str) -> Option<String> {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = name.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Every object file under a bucket directory, as (key, path).
fn walk_bucket(
    dir: &Path,
    prefix: &str,
    out: &mut Vec<(String, PathBuf)>,
) -> Result<(), StoreError> {
    for entry in fs::read_dir(dir).map_err(io_at(dir))? {
        let entry = entry.map_err(io_at(dir))?;
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let file_type = entry.file_type().map_err(io_at(&path))?;
        if let Some(stem) = name.strip_suffix(".d").filter(|_| file_type.is_dir()) {
            if let Some(c) = decode_component(stem) {
                walk_bucket(&path, &format!("{prefix}{c}/"), out)?;
            }
        } else if let Some(stem) = name.strip_suffix(".o").filter(|_| file_type.is_file())
            && let Some(c) = decode_component(stem)
        {
            out.push((format!("{prefix}{c}"), path));
        }
    }
    Ok(())
}

fn file_crc(path: &Path) -> Result<(u32, u64), StoreError> {
    let mut file = fs::File::open(path).map_err(io_at(path))?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut crc, mut size) = (0u32, 0u64);
    loop {
        let n = file.read(&mut buf).map_err(io_at(path))?;
        if n == 0 {
            return Ok((crc, size));
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        size += n as u64;
    }
}

fn reconcile(root: &Path, meta: &mut Meta) -> Result<Reconciled, StoreError> {
    let mut report = Reconciled::default();
    let buckets: Vec<String> = meta.buckets.keys().cloned().collect();
    for bucket in buckets {
        let dir = root.join("objects").join(&bucket);
        fs::create_dir_all(&dir).map_err(io_at(&dir))?;
        let mut files = Vec::new();
        walk_bucket(&dir, "", &mut files)?;
        let on_disk: BTreeMap<String, PathBuf> = files.into_iter().collect();
        let objects = meta.objects.entry(bucket.clone()).or_default();
        let known: Vec<String> = objects.keys().cloned().collect();
        for key in known {
            match on_disk.get(&key) {
                None => {
                    objects.remove(&key);
                    meta.placement.forget(&bucket, &key);
                    report.dropped_missing += 1;
                }
                Some(path) => {
                    let len = fs::metadata(path).map_err(io_at(path))?.len();
                    if len != objects[&key].size {
                        let (crc, size) = file_crc(path)?;
                        objects.insert(
                            key.clone(),
                            ObjectMeta {
                                size,
                                etag: etag_of(crc, size),
                                modified_ms: now_ms(),
                            },
                        );
                        report.refreshed += 1;
                    }
                }
            }
        }
        for (key, path) in &on_disk {
            if !objects.contains_key(key) && validate_key(key).is_ok() {
                let (crc, size) = file_crc(path)?;
                objects.insert(
                    key.clone(),
                    ObjectMeta {
                        size,
                        etag: etag_of(crc, size),
                        modified_ms: now_ms(),
                    },
                );
                meta.placement.place(&bucket, key);
                report.adopted += 1;
            }
        }
        report.objects += objects.len();
    }
    Ok(report)
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_at(dir))
}

/// Writes `bytes` to `path` atomically: a temporary file beside it, fsync,
/// rename over, fsync of the directory.
fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = path.with_extension("json.tmp");
    let mut file = fs::File::create(&tmp).map_err(io_at(&tmp))?;
    file.write_all(bytes).map_err(io_at(&tmp))?;
    file.sync_all().map_err(io_at(&tmp))?;
    drop(file);
    fs::rename(&tmp, path).map_err(io_at(path))?;
    sync_dir(dir)
}

/// A continuation token: hex of `k<key>` (resume after a key) or `p<prefix>`
/// (resume after every key under a common prefix).
fn encode_token(kind: char, s: &str) -> String {
    let mut out = String::with_capacity(2 * s.len() + 2);
    for b in std::iter::once(kind as u8).chain(s.bytes()) {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

fn decode_token(token: &str) -> Option<(char, String)> {
    if !token.len().is_multiple_of(2) || token.is_empty() {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(token.get(i..i + 2)?, 16).ok())
        .collect();
    let bytes = bytes?;
    let kind = *bytes.first()? as char;
    if kind != 'k' && kind != 'p' {
        return None;
    }
    Some((kind, String::from_utf8(bytes[1..].to_vec()).ok()?))
}

/// ListObjectsV2 over one bucket's sorted keys: keys under `prefix`, rolled up
/// into common prefixes at the first `delimiter` after the prefix, at most
/// `max_keys` entries (keys and common prefixes together), after `start_after`
/// and after the entry a continuation `token` names.
pub fn list_page(
    objects: &BTreeMap<String, ObjectMeta>,
    prefix: &str,
    delimiter: Option<&str>,
    max_keys: usize,
    start_after: Option<&str>,
    token: Option<&str>,
) -> Result<ListPage, StoreError> {
    let resume = match token {
        Some(t) => Some(decode_token(t).ok_or_else(|| StoreError::InvalidKey {
            key: t.to_string(),
            why: "not a continuation token this server issued",
        })?),
        None => None,
    };
    let delimiter = delimiter.filter(|d| !d.is_empty());
    let mut page = ListPage::default();
    let mut emitted = 0usize;
    let mut last: Option<(char, String)> = None;
    for (key, object) in objects.range::<str, _>((
        std::ops::Bound::Included(prefix),
        std::ops::Bound::Unbounded,
    )) {
        if !key.starts_with(prefix) {
            break;
        }
        if start_after.is_some_and(|s| key.as_str() <= s) {
            continue;
        }
        match &resume {
            Some(('k', after)) if key <= after => continue,
            Some(('p', under)) if key.starts_with(under.as_str()) || key <= under => continue,
            _ => {}
        }
        let rolled = delimiter.and_then(|d| {
            let rest = &key[prefix.len()..];
            rest.find(d)
                .map(|i| format!("{prefix}{}", &rest[..i + d.len()]))
        });
        if let Some(common) = &rolled
            && page.common_prefixes.last() == Some(common)
        {
            continue;
        }
        if emitted == max_keys {
            if let Some((kind, s)) = &last {
                page.next_token = Some(encode_token(*kind, s));
            }
            return Ok(page);
        }
        emitted += 1;
        match rolled {
            Some(common) => {
                last = Some(('p', common.clone()));
                page.common_prefixes.push(common);
            }
            None => {
                last = Some(('k', key.clone()));
                page.objects.push((key.clone(), object.clone()));
            }
        }
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(keys: &[&str]) -> BTreeMap<String, ObjectMeta> {
        keys.iter()
            .map(|k| {
                (
                    k.to_string(),
                    ObjectMeta {
                        size: 1,
                        etag: String::new(),
                        modified_ms: 0,
                    },
                )
            })
            .collect()
    }

    fn keys(page: &ListPage) -> Vec<&str> {
        page.objects.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn keys_are_encoded_inside_their_bucket() {
        assert_eq!(encode_key("a").unwrap(), PathBuf::from("a.o"));
        assert_eq!(encode_key("a/b").unwrap(), PathBuf::from("a.d/b.o"));
        assert_eq!(
            encode_key("x y/%/").unwrap(),
            PathBuf::from("x%20y.d/%25.d/.o")
        );
        for bad in ["../etc/passwd", "a/../../b", "/abs", "a/./b", "nul\0", ""] {
            let err = encode_key(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("{bad:?}")), "{err}");
        }
        let long = "k".repeat(300);
        assert!(matches!(
            encode_key(&long),
            Err(StoreError::KeyTooLong { .. })
        ));
        assert_eq!(decode_component("x%20y").as_deref(), Some("x y"));
    }

    #[test]
    fn list_pages_with_prefix_delimiter_and_tokens() {
        let objs = objects(&["a/1", "a/2", "b", "c/x/1", "c/y", "d"]);
        let page = list_page(&objs, "", Some("/"), 1000, None, None).unwrap();
        assert_eq!(keys(&page), vec!["b", "d"]);
        assert_eq!(page.common_prefixes, vec!["a/", "c/"]);
        assert_eq!(page.next_token, None);

        let page = list_page(&objs, "c/", Some("/"), 1000, None, None).unwrap();
        assert_eq!(keys(&page), vec!["c/y"]);
        assert_eq!(page.common_prefixes, vec!["c/x/"]);

        // Two entries per page: a common prefix counts as one entry and the
        // next page resumes after all of it.
        let mut seen = Vec::new();
        let mut token = None;
        loop {
            let page = list_page(&objs, "", Some("/"), 2, None, token.as_deref()).unwrap();
            assert!(page.objects.len() + page.common_prefixes.len() <= 2);
            seen.extend(page.common_prefixes.iter().cloned());
            seen.extend(page.objects.iter().map(|(k, _)| k.clone()));
            match page.next_token {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        seen.sort();
        assert_eq!(seen, vec!["a/", "b", "c/", "d"]);

        let page = list_page(&objs, "", None, 3, Some("a/2"), None).unwrap();
        assert_eq!(keys(&page), vec!["b", "c/x/1", "c/y"]);
        assert!(page.next_token.is_some());
        let err = list_page(&objs, "", None, 3, None, Some("zz")).unwrap_err();
        assert!(err.to_string().contains("\"zz\""), "{err}");
    }

    #[test]
    fn another_group_count_is_refused_as_bad_usage_and_bad_metadata_as_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open(dir.path(), LayoutSpec::Striped, 3).unwrap());
        let Err(err) = Store::open(dir.path(), LayoutSpec::Striped, 2) else {
            panic!("a store on 3 groups opened with 2");
        };
        assert!(matches!(
            err,
            StoreError::GroupsChanged {
                placed: 3,
                asked: 2,
                ..
            }
        ));
        let msg = err.to_string();
        assert!(
            msg.contains(META_FILE)
                && msg.contains("placed on 3 groups")
                && msg.contains("asks for 2"),
            "{msg}"
        );
        assert_eq!(StoreError::classify(&err), Some(exit::USAGE));

        std::fs::write(dir.path().join(META_FILE), b"not json").unwrap();
        let Err(err) = Store::open(dir.path(), LayoutSpec::Striped, 3) else {
            panic!("unreadable metadata accepted");
        };
        assert!(matches!(err, StoreError::BadMeta { .. }), "{err}");
        assert_eq!(err.exit_code(), exit::CORRUPT);
        let missing = StoreError::NoSuchKey {
            bucket: "b".into(),
            key: "k".into(),
        };
        assert_eq!(missing.exit_code(), exit::USAGE);
        assert_eq!(StoreError::classify(&std::io::Error::other("x")), None);
    }
}
