//! The cold-tier manifest of one paged file: where its pages went.
//!
//! `strata tier cold` cuts a table's heap and index files into page-aligned
//! objects and ships them to the cold storage device; the manifest
//! `<file>.cold.json` beside the file's (removed) local segments says which
//! endpoint and bucket hold them, each object's key, page count and CRC32C, and
//! how many pages the file has. It is written atomically (temporary file,
//! fsync, rename, fsync of the directory) and it is the commit point of the
//! move: while it exists the objects are the file (see
//! `strata_storage::device::layer`).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use strata_storage::StorageError;
use strata_storage::page::PAGE_SIZE;

/// The manifest format this strata writes and reads.
pub const MANIFEST_FORMAT: u32 = 1;

/// One object of a cold file: pages `[first_page, first_page + pages)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectEntry {
    /// The object's key in the bucket (`<table>/<file>.<n>`).
    pub key: String,
    pub first_page: u64,
    pub pages: u64,
    /// CRC32C of the object's bytes.
    pub crc32c: u32,
}

impl ObjectEntry {
    pub fn bytes(&self) -> u64 {
        self.pages * PAGE_SIZE as u64
    }
}

/// Where a paged file's pages live on the cold tier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    /// The table the file belongs to (errors name it).
    pub table: String,
    /// The file as the catalog names it (`data/<name>`).
    pub file: String,
    /// The cold storage device's S3 endpoint, e.g. `http://127.0.0.1:9000`.
    pub endpoint: String,
    pub bucket: String,
    /// Pages per object (the last object may hold fewer).
    pub object_pages: u64,
    /// Pages of the file.
    pub num_pages: u64,
    pub objects: Vec<ObjectEntry>,
    /// The file's first page, hex: opening a B-tree reads its meta page, and
    /// a query planned over a cold table opens every index of it — kept
    /// here, that costs no request to the device (a GET of a whole object,
    /// and on a shared device possibly a group switch, per index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
}

/// `bytes` as lower-case hex.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The bytes of hex text `s`.
pub fn from_hex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("{} hex digits is an odd number", s.len()));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&s[i..i + 2], 16)
                .map_err(|_| format!("{:?} at {i} is not hex", &s[i..i + 2]))
        })
        .collect()
}

impl Manifest {
    /// `bucket/key` of object `i`, as errors and the CSD's scheduler name it.
    pub fn object_name(&self, i: usize) -> String {
        format!("{}/{}", self.bucket, self.objects[i].key)
    }

    /// The object holding page `page`.
    pub fn object_of(&self, page: u64) -> usize {
        (page / self.object_pages) as usize
    }

    /// Reads and checks the manifest at `path`.
    pub fn load(path: &Path) -> Result<Manifest, StorageError> {
        let bytes = std::fs::read(path).map_err(|e| StorageError::io(path, e))?;
        let bad = |reason: String| StorageError::Catalog {
            path: path.to_path_buf(),
            reason,
        };
        let m: Manifest = serde_json::from_slice(&bytes)
            .map_err(|e| bad(format!("unreadable cold-tier manifest: {e}")))?;
        m.validate().map_err(bad)?;
        Ok(m)
    }

    /// What strata itself would never write: the objects must tile the file's
    /// pages in order, `object_pages` at a time.
    fn validate(&self) -> Result<(), String> {
        if self.format != MANIFEST_FORMAT {
            return Err(format!(
                "format {} is not supported (this strata reads format {MANIFEST_FORMAT})",
                self.format
            ));
        }
        if self.object_pages == 0 {
            return Err("object_pages is 0".into());
        }
        if self.endpoint.is_empty() || self.bucket.is_empty() {
            return Err("endpoint and bucket must not be empty".into());
        }
        let want = self.num_pages.div_ceil(self.object_pages);
        if self.objects.len() as u64 != want {
            return Err(format!(
                "{} objects listed, but {} pages in objects of {} pages make {want}",
                self.objects.len(),
                self.num_pages,
                self.object_pages
            ));
        }
        for (i, o) in self.objects.iter().enumerate() {
            let first = i as u64 * self.object_pages;
            let pages = self.object_pages.min(self.num_pages - first);
            if o.first_page != first || o.pages != pages {
                return Err(format!(
                    "object {i} ({}) covers pages {}..{}, expected {first}..{}",
                    o.key,
                    o.first_page,
                    o.first_page + o.pages,
                    first + pages
                ));
            }
            if o.key.is_empty() {
                return Err(format!("object {i} has an empty key"));
            }
        }
        if let Some(h) = &self.head {
            let bytes = from_hex(h).map_err(|e| format!("head: {e}"))?;
            if bytes.len() != PAGE_SIZE {
                return Err(format!(
                    "head holds {} bytes, a page is {PAGE_SIZE}",
                    bytes.len()
                ));
            }
        }
        Ok(())
    }

    /// Writes the manifest to `path` atomically and durably: a temporary file,
    /// fsynced, renamed over `path`, then the directory fsynced.
    pub fn save(&self, path: &Path) -> Result<(), StorageError> {
        save_json(self, path)
    }

    /// Removes the manifest at `path` durably (the commit point of bringing
    /// the file back).
    pub fn remove(path: &Path) -> Result<(), StorageError> {
        std::fs::remove_file(path).map_err(|e| StorageError::io(path, e))?;
        sync_parent(path)
    }
}

/// Writes `value` as JSON to `path` atomically and durably: a temporary
/// file, fsynced, renamed over `path`, then the directory fsynced.
pub fn save_json<T: Serialize>(value: &T, path: &Path) -> Result<(), StorageError> {
    let tmp = tmp_path(path);
    let json = serde_json::to_vec_pretty(value).map_err(|e| StorageError::Catalog {
        path: path.to_path_buf(),
        reason: format!("cannot encode the manifest: {e}"),
    })?;
    let mut f = std::fs::File::create(&tmp).map_err(|e| StorageError::io(&tmp, e))?;
    f.write_all(&json).map_err(|e| StorageError::io(&tmp, e))?;
    f.sync_all().map_err(|e| StorageError::io(&tmp, e))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| StorageError::io(path, e))?;
    sync_parent(path)
}

/// Where [`save_json`] writes before renaming.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// fsync of the directory holding `path`.
pub fn sync_parent(path: &Path) -> Result<(), StorageError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    strata_storage::catalog::sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(num_pages: u64, object_pages: u64) -> Manifest {
        let objects = (0..num_pages.div_ceil(object_pages))
            .map(|i| ObjectEntry {
                key: format!("t/t.heap.{i}"),
                first_page: i * object_pages,
                pages: object_pages.min(num_pages - i * object_pages),
                crc32c: 7,
            })
            .collect();
        Manifest {
            format: MANIFEST_FORMAT,
            table: "t".into(),
            file: "data/t.heap".into(),
            endpoint: "http://127.0.0.1:1".into(),
            bucket: "db".into(),
            object_pages,
            num_pages,
            objects,
            head: None,
        }
    }

    #[test]
    fn the_head_page_round_trips_and_a_bad_one_is_named() {
        let page: Vec<u8> = (0..PAGE_SIZE).map(|i| (i * 7) as u8).collect();
        assert_eq!(from_hex(&to_hex(&page)).unwrap(), page);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.heap.cold.json");
        let mut m = manifest(10, 4);
        m.head = Some(to_hex(&page));
        m.save(&path).unwrap();
        assert_eq!(Manifest::load(&path).unwrap(), m);
        m.head = Some("abc".into());
        std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
        let e = Manifest::load(&path).unwrap_err().to_string();
        assert!(e.contains("head") && e.contains("odd"), "{e}");
        m.head = Some("00".repeat(10));
        std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
        let e = Manifest::load(&path).unwrap_err().to_string();
        assert!(e.contains("head holds 10 bytes"), "{e}");
    }

    #[test]
    fn saves_loads_and_refuses_what_does_not_tile() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.heap.cold.json");
        let m = manifest(10, 4);
        m.save(&p).unwrap();
        assert!(!tmp_path(&p).exists());
        assert_eq!(Manifest::load(&p).unwrap(), m);
        assert_eq!(m.object_of(9), 2);
        assert_eq!(m.object_name(2), "db/t/t.heap.2");

        let mut bad = m.clone();
        bad.objects[1].pages = 3;
        std::fs::write(&p, serde_json::to_vec(&bad).unwrap()).unwrap();
        let e = Manifest::load(&p).unwrap_err().to_string();
        assert!(
            e.contains("t.heap.cold.json") && e.contains("object 1 (t/t.heap.1)"),
            "{e}"
        );

        let mut bad = m.clone();
        bad.objects.pop();
        std::fs::write(&p, serde_json::to_vec(&bad).unwrap()).unwrap();
        let e = Manifest::load(&p).unwrap_err().to_string();
        assert!(e.contains("2 objects listed"), "{e}");

        std::fs::write(&p, b"{").unwrap();
        let e = Manifest::load(&p).unwrap_err().to_string();
        assert!(e.contains("unreadable cold-tier manifest"), "{e}");
    }
}
