//! The cold-tier manifest of a byte file: a columnar table's column file
//! (Parquet), moved to the cold storage device as one object.
//!
//! Why one object per file, unchanged: the file already is a Parquet file of
//! column row groups, so the object is one too, and any S3 + Parquet reader
//! (DuckDB's httpfs, pyarrow, DataFusion) queries it as it is; and strata
//! reads only the byte ranges a query needs of it (ranged GETs of the
//! projected columns' chunks), so a large object costs nothing a query does
//! not use. Why a CRC32C per block: a ranged GET brings part of the object,
//! which a checksum of the whole cannot check; each [`ByteManifest::block_bytes`]
//! block has its own, and a read is widened to whole blocks and checks each.
//!
//! Written atomically beside the file's place (`<file>.cold.json`, as a paged
//! file's manifest), it is the commit point of the move both ways.

use std::path::Path;

use serde::{Deserialize, Serialize};
use strata_storage::StorageError;

use crate::manifest::save_json;

/// The byte manifest format this strata writes and reads.
pub const BYTE_MANIFEST_FORMAT: u32 = 1;

/// Bytes per checked block: a ranged read is widened to whole blocks, so a
/// small block wastes little of a read (at most two blocks' worth), and a
/// file of 1 GiB lists 16,384 checksums.
pub const BLOCK_BYTES: u64 = 64 << 10;

/// What `kind` says of a byte manifest (a paged file's has none).
const KIND: &str = "bytes";

/// Where a byte file's bytes live on the cold tier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByteManifest {
    pub format: u32,
    /// Always `bytes`: tells it from a paged file's manifest.
    pub kind: String,
    /// The table the file belongs to (errors name it).
    pub table: String,
    /// The file as the catalog names it (`data/<name>.parquet`).
    pub file: String,
    pub endpoint: String,
    pub bucket: String,
    /// The object's key (`<table>/<file name>`).
    pub key: String,
    pub bytes: u64,
    /// CRC32C of all the bytes (checked when the file comes back whole).
    pub crc32c: u32,
    pub block_bytes: u64,
    /// CRC32C of each block of `block_bytes` (the last may be shorter).
    pub blocks: Vec<u32>,
}

impl ByteManifest {
    /// The manifest of `data`, the file `file` of `table`, as object `key`.
    pub fn of(
        data: &[u8],
        table: &str,
        file: &str,
        endpoint: &str,
        bucket: &str,
        key: &str,
    ) -> ByteManifest {
        ByteManifest {
            format: BYTE_MANIFEST_FORMAT,
            kind: KIND.into(),
            table: table.into(),
            file: file.into(),
            endpoint: endpoint.into(),
            bucket: bucket.into(),
            key: key.into(),
            bytes: data.len() as u64,
            crc32c: crc32c::crc32c(data),
            block_bytes: BLOCK_BYTES,
            blocks: data
                .chunks(BLOCK_BYTES as usize)
                .map(crc32c::crc32c)
                .collect(),
        }
    }

    /// `bucket/key`, as errors and the device's scheduler name the object.
    pub fn object_name(&self) -> String {
        format!("{}/{}", self.bucket, self.key)
    }

    /// The blocks `[first, last]` covering `len` bytes from `start`, and
    /// the byte range they span.
    pub fn blocks_of(&self, start: u64, len: u64) -> (usize, usize, u64, u64) {
        let first = start / self.block_bytes;
        let last = (start + len.max(1) - 1) / self.block_bytes;
        let from = first * self.block_bytes;
        let to = ((last + 1) * self.block_bytes).min(self.bytes);
        (first as usize, last as usize, from, to)
    }

    /// Reads and checks the manifest at `path`.
    pub fn load(path: &Path) -> Result<ByteManifest, StorageError> {
        let bytes = std::fs::read(path).map_err(|e| StorageError::io(path, e))?;
        let bad = |reason: String| StorageError::Catalog {
            path: path.to_path_buf(),
            reason,
        };
        let m: ByteManifest = serde_json::from_slice(&bytes).map_err(|e| {
            bad(format!(
                "unreadable cold-tier manifest of a column file: {e}"
            ))
        })?;
        m.validate().map_err(bad)?;
        Ok(m)
    }

    fn validate(&self) -> Result<(), String> {
        if self.format != BYTE_MANIFEST_FORMAT || self.kind != KIND {
            return Err(format!(
                "format {} of kind {:?} is not supported (this strata reads format \
                 {BYTE_MANIFEST_FORMAT} of kind {KIND:?})",
                self.format, self.kind
            ));
        }
        if self.endpoint.is_empty() || self.bucket.is_empty() || self.key.is_empty() {
            return Err("endpoint, bucket and key must not be empty".into());
        }
        if self.block_bytes == 0 {
            return Err("block_bytes is 0".into());
        }
        let want = self.bytes.div_ceil(self.block_bytes);
        if self.blocks.len() as u64 != want {
            return Err(format!(
                "{} block checksums listed, but {} bytes in blocks of {} make {want}",
                self.blocks.len(),
                self.bytes,
                self.block_bytes
            ));
        }
        Ok(())
    }

    /// Writes it to `path` atomically and durably.
    pub fn save(&self, path: &Path) -> Result<(), StorageError> {
        save_json(self, path)
    }

    /// Checks `data`, blocks `first..` of the object, against the block
    /// checksums: the first block that differs, if any.
    pub fn check(&self, first: usize, data: &[u8]) -> Option<usize> {
        data.chunks(self.block_bytes as usize)
            .enumerate()
            .find(|(i, b)| self.blocks.get(first + i) != Some(&crc32c::crc32c(b)))
            .map(|(i, _)| first + i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_reads_and_checks_find_the_bad_block() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let m = ByteManifest::of(&data, "t", "data/t.c0.parquet", "mem://", "db", "t/t.c0");
        assert_eq!(m.blocks.len(), 4);
        assert_eq!(m.blocks_of(0, 1), (0, 0, 0, BLOCK_BYTES));
        assert_eq!(m.blocks_of(BLOCK_BYTES - 1, 2), (0, 1, 0, 2 * BLOCK_BYTES));
        assert_eq!(m.blocks_of(199_999, 1), (3, 3, 3 * BLOCK_BYTES, 200_000));
        let (f, _, from, to) = m.blocks_of(70_000, 100_000);
        assert_eq!(m.check(f, &data[from as usize..to as usize]), None);
        let mut bad = data.clone();
        bad[150_000] ^= 1;
        assert_eq!(m.check(f, &bad[from as usize..to as usize]), Some(2));

        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.c0.parquet.cold.json");
        m.save(&p).unwrap();
        assert_eq!(ByteManifest::load(&p).unwrap(), m);
        let mut wrong = m.clone();
        wrong.blocks.pop();
        std::fs::write(&p, serde_json::to_vec(&wrong).unwrap()).unwrap();
        let e = ByteManifest::load(&p).unwrap_err().to_string();
        assert!(e.contains("3 block checksums listed"), "{e}");
    }
}
