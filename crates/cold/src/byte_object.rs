//! A column file on the cold tier, read by ranged GETs of its object.
//!
//! The column reader (`strata-columns`) asks for the byte ranges a query
//! needs: the footer and page index once, then the chunks (or pages) of the
//! projected columns of the row groups its comparisons keep. Each ask is one
//! ranged GET, widened to the manifest's checked blocks, each block checked
//! against its CRC32C on arrival; the object is never fetched whole for a
//! query (that is what `strata tier local` does). What the reader keeps of
//! the bytes it got is its own cache's business (the column-chunk cache).
//!
//! Counted as a paged cold file's objects are: each GET is a read request of
//! its bytes in the wrapped device's `IoStats` (so a statement's I/O shows
//! it) and a GET with its bytes in the cold tier's counters, its wait too.

use std::sync::Arc;
use std::time::Instant;

use strata_storage::device::{Device, FileId, PAGE_SIZE, RemoteFile};
use strata_storage::{Result, StorageError};

use crate::byte_manifest::ByteManifest;
use crate::client::ColdClient;
use crate::stats::ColdStats;

/// Bytes whose transfer costs what one GET does: a GET waits a round trip
/// (about a millisecond on loopback, tens in a data centre's object store)
/// before its first byte, and a megabyte streams in about ten milliseconds
/// at the 100 MB/s one S3 connection gives. Ranges closer than this are read
/// as one GET.
pub const REQUEST_BYTES: u64 = 1 << 20;

/// An open column file on the cold tier (see the module docs).
pub struct ByteObject {
    manifest: ByteManifest,
    client: Arc<ColdClient>,
    stats: Arc<ColdStats>,
    /// The wrapped device, whose counters a GET is counted in.
    inner: Arc<dyn Device>,
    id: FileId,
}

impl ByteObject {
    pub fn new(
        manifest: ByteManifest,
        client: Arc<ColdClient>,
        stats: Arc<ColdStats>,
        inner: Arc<dyn Device>,
    ) -> ByteObject {
        let id = FileId::external(&manifest.file);
        ByteObject {
            manifest,
            client,
            stats,
            inner,
            id,
        }
    }

    fn error(&self, reason: String, corrupt: bool) -> StorageError {
        StorageError::ColdObject {
            object: format!("object {}", self.manifest.object_name()),
            endpoint: self.manifest.endpoint.clone(),
            reason,
            corrupt,
        }
    }
}

impl RemoteFile for ByteObject {
    fn len(&self) -> u64 {
        self.manifest.bytes
    }

    fn read_range(&self, start: u64, len: usize) -> Result<Vec<u8>> {
        let m = &self.manifest;
        let end = start + len as u64;
        if end > m.bytes {
            return Err(self.error(
                format!(
                    "bytes {start}..{end} asked of a {}-byte column file ({})",
                    m.bytes, m.file
                ),
                false,
            ));
        }
        if len == 0 {
            return Ok(Vec::new());
        }
        let (first, _, from, to) = m.blocks_of(start, len as u64);
        let started = Instant::now();
        let got = self
            .client
            .get_range(&m.endpoint, &m.bucket, &m.key, from, to - from);
        self.stats.add_wait_ns(started.elapsed().as_nanos() as u64);
        let got = got?;
        self.inner.stats().record_read(
            self.id,
            from / PAGE_SIZE as u64,
            (to - from).div_ceil(PAGE_SIZE as u64),
        );
        if got.len() as u64 != to - from {
            return Err(self.error(
                format!(
                    "a GET of bytes {from}..{to} brought {} bytes: the object is shorter than its manifest ({}) says",
                    got.len(),
                    m.file
                ),
                true,
            ));
        }
        if let Some(b) = m.check(first, &got) {
            return Err(self.error(
                format!(
                    "block {b} (bytes {}..{}) does not match its CRC32C in the manifest ({}): the object is corrupt",
                    b as u64 * m.block_bytes,
                    ((b as u64 + 1) * m.block_bytes).min(m.bytes),
                    m.file
                ),
                true,
            ));
        }
        let at = (start - from) as usize;
        Ok(got[at..at + len].to_vec())
    }

    fn request_bytes(&self) -> u64 {
        REQUEST_BYTES
    }

    fn describe(&self) -> String {
        format!(
            "object {} at {} (table {}, on the cold tier)",
            self.manifest.object_name(),
            self.manifest.endpoint,
            self.manifest.table
        )
    }
}
