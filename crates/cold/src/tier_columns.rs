//! Moving a columnar table's column files to the cold tier and back: the
//! part of `strata tier cold|local` (`tier.rs`) for files of bytes rather
//! than pages.
//!
//! Each column file goes as one object, byte for byte (key
//! `<table>/<file name>`, a Parquet file any S3 reader can query), checked
//! by a HEAD; its manifest ([`ByteManifest`], with a CRC32C per block for
//! ranged reads) is then written with the paged files' manifests, and the
//! local file removed after. Back: the object is fetched whole, checked
//! against its CRC32C, written and synced under a temporary name and renamed
//! into place; then the manifest goes. A crash at any point leaves either the
//! local file or the object as the file, as for paged files (`tier.rs`).

use std::path::{Path, PathBuf};

use bytes::Bytes;
use strata_storage::catalog::TableDef;
use strata_storage::device::cold_manifest_path;
use strata_storage::{Result, StorageError};

use crate::byte_manifest::ByteManifest;
use crate::client::ColdClient;
use crate::manifest::Manifest;
use crate::steps::Steps;

/// A column file of the table and its manifest's path.
pub(crate) fn column_files(dir: &Path, def: &TableDef) -> Vec<(String, PathBuf)> {
    def.column_files()
        .into_iter()
        .map(|f| {
            let m = cold_manifest_path(&dir.join(&f));
            (f, m)
        })
        .collect()
}

/// Uploads the column files of `def` not on the cold tier yet; the
/// manifests to write once every file of the table is uploaded.
pub(crate) fn upload(
    dir: &Path,
    def: &TableDef,
    client: &ColdClient,
    endpoint: &str,
    bucket: &str,
    steps: &mut Steps,
) -> Result<Vec<(PathBuf, ByteManifest)>> {
    let mut out = Vec::new();
    for (file, manifest) in column_files(dir, def) {
        if manifest.exists() {
            continue;
        }
        let path = dir.join(&file);
        let data = std::fs::read(&path).map_err(|e| StorageError::io(&path, e))?;
        let name = Path::new(&file)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.clone());
        let key = format!("{}/{name}", def.name);
        let m = ByteManifest::of(&data, &def.name, &file, endpoint, bucket, &key);
        let len = data.len() as u64;
        client.put(endpoint, bucket, &key, Bytes::from(data))?;
        let stored = client.head(endpoint, bucket, &key)?;
        if stored != len {
            return Err(StorageError::ColdObject {
                object: format!("object {bucket}/{key}"),
                endpoint: endpoint.to_string(),
                reason: format!("PUT {len} bytes but the device holds {stored}"),
                corrupt: true,
            });
        }
        steps.step(&key)?;
        out.push((manifest, m));
    }
    Ok(out)
}

/// The manifests of the column files of `def` on the cold tier.
pub(crate) fn cold_manifests(dir: &Path, def: &TableDef) -> Result<Vec<(PathBuf, ByteManifest)>> {
    let mut out = Vec::new();
    for (file, manifest) in column_files(dir, def) {
        if manifest.exists() {
            let m = ByteManifest::load(&manifest)?;
            out.push((dir.join(file), m));
        }
    }
    Ok(out)
}

/// Brings the column files of `cold` back: each object fetched whole,
/// checked, written and synced under a temporary name, renamed into place.
pub(crate) fn download(
    dir: &Path,
    cold: &[(PathBuf, ByteManifest)],
    client: &ColdClient,
    steps: &mut Steps,
) -> Result<()> {
    let tmp_dir = dir.join("tmp");
    std::fs::create_dir_all(&tmp_dir).map_err(|e| StorageError::io(&tmp_dir, e))?;
    for (path, m) in cold {
        let tmp = strata_storage::temp::temp_path(&tmp_dir, "tier");
        let fetched = (|| {
            let f = client.get_to_file(&m.endpoint, &m.bucket, &m.key, &tmp)?;
            if f.bytes != m.bytes || f.crc32c != m.crc32c {
                return Err(StorageError::ColdObject {
                    object: format!("object {}", m.object_name()),
                    endpoint: m.endpoint.clone(),
                    reason: format!(
                        "it has {} bytes with CRC32C {:08x}; its manifest ({}) says {} bytes, {:08x}: the object is corrupt",
                        f.bytes, f.crc32c, m.file, m.bytes, m.crc32c
                    ),
                    corrupt: true,
                });
            }
            let out = std::fs::File::open(&tmp).map_err(|e| StorageError::io(&tmp, e))?;
            out.sync_all().map_err(|e| StorageError::io(&tmp, e))?;
            std::fs::rename(&tmp, path).map_err(|e| StorageError::io(path, e))
        })();
        if fetched.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        fetched?;
        steps.step(&path.display().to_string())?;
    }
    Ok(())
}

/// Removes the manifests of `cold` (each a commit point), then, if asked,
/// their objects.
pub(crate) fn forget(
    cold: &[(PathBuf, ByteManifest)],
    client: &ColdClient,
    delete_objects: bool,
    steps: &mut Steps,
) -> Result<()> {
    for (path, _) in cold {
        let p = cold_manifest_path(path);
        Manifest::remove(&p)?;
        steps.step(&p.display().to_string())?;
    }
    if delete_objects {
        for (_, m) in cold {
            client.delete(&m.endpoint, &m.bucket, &m.key)?;
            steps.step(&m.key)?;
        }
    }
    Ok(())
}
