//! A column file's footer and page index: what opening the file reads, and
//! what only a scan that skips pages by their min/max reads later.
//!
//! Parquet puts a file's page index between its last data page and its
//! footer, in two parts: first the column index (each page's min and max,
//! column by column), then the offset index (each page's offset, size and
//! first row). A point read through an index's positions needs only the
//! offsets, to find the page of each column that holds a row; the column
//! index, the larger part (for TPC-H's `lineitem` at SF 1, 330 of the 623 KiB
//! after the data), matters only to a plan whose comparisons can skip pages.
//!
//! So an open reads the footer and the offset index, the last
//! [`ColumnFile::offsets_tail`] bytes of the file, in one request, and a
//! file's column index is read, in one request more, the first time a plan
//! prunes by page ([`Footer::page_stats`]); both are then kept in the
//! database's [`FooterCache`]. A file whose catalog entry does not record
//! `offsets_tail` (written before strata did) is opened as before: its whole
//! tail, page index and footer, in one request.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::errors::ParquetError;
use parquet::file::metadata::{
    PageIndexPolicy, ParquetColumnIndex, ParquetMetaData, ParquetMetaDataReader,
};
use parquet::file::reader::{ChunkReader, Length};
use strata_storage::catalog::ColumnFile;

use crate::error::{ColumnsError, Result};
use crate::file::{CountedFile, GUESS_TAIL};

/// A column file's decoded footer and offset index, and its column index
/// once a plan needed it.
#[derive(Clone)]
pub struct Footer {
    pub(crate) meta: ArrowReaderMetadata,
    /// Each page's min and max (`None` inside: the file has none), shared
    /// by every holder of this footer.
    stats: Arc<OnceLock<Option<Arc<ParquetColumnIndex>>>>,
}

impl Footer {
    /// Reads the footer and page index of `file` (at `path`, the catalog's
    /// entry `entry`): the footer and offset index in one request when the
    /// catalog records their bytes ([`ColumnFile::offsets_tail`]); else the
    /// whole tail ([`ColumnFile::tail`]), or, unknown too, the last
    /// [`GUESS_TAIL`] bytes and what the footer says is missing after them.
    pub fn read(file: &CountedFile, path: &Path, entry: &ColumnFile) -> Result<Footer> {
        let err = |e| ColumnsError::parquet(path, e);
        let len = file.len();
        let offsets_only = entry.offsets_tail > 0 && entry.offsets_tail <= len;
        let tail = if offsets_only {
            entry.offsets_tail
        } else if entry.tail > 0 {
            entry.tail
        } else {
            GUESS_TAIL
        };
        let first = tail.min(len);
        let mut bytes = file.get_bytes(len - first, first as usize).map_err(err)?;
        let column_index = if offsets_only {
            PageIndexPolicy::Skip
        } else {
            PageIndexPolicy::Optional
        };
        let mut reader = ParquetMetaDataReader::new()
            .with_column_index_policy(column_index)
            .with_offset_index_policy(PageIndexPolicy::Optional);
        loop {
            let parsed = if reader.has_metadata() {
                reader.read_page_indexes_sized(&bytes, len)
            } else {
                reader.try_parse_sized(&bytes, len)
            };
            match parsed {
                Ok(()) => break,
                Err(ParquetError::NeedMoreData(needed))
                    if (needed as u64) <= len && needed > bytes.len() =>
                {
                    bytes = file.get_bytes(len - needed as u64, needed).map_err(err)?;
                }
                Err(e) => return Err(err(e)),
            }
        }
        let meta = reader.finish().map_err(err)?;
        let stats = OnceLock::new();
        if !offsets_only {
            // Read with the rest: kept as the column index of the file.
            let _ = stats.set(meta.column_index().cloned().map(Arc::new));
        }
        let meta = ArrowReaderMetadata::try_new(
            Arc::new(meta),
            ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional),
        )
        .map_err(err)?;
        Ok(Footer {
            meta,
            stats: Arc::new(stats),
        })
    }

    /// The file's column index (each page's min and max), read from `file`
    /// (at `path`) in one request the first time it is asked for; `None`
    /// when the file has no page index.
    pub fn page_stats(
        &self,
        file: &CountedFile,
        path: &Path,
    ) -> Result<Option<&ParquetColumnIndex>> {
        if self.stats.get().is_none() {
            let read = read_column_index(file, path, self.meta.metadata())?;
            // Another reader may have set it meanwhile: the same bytes.
            let _ = self.stats.set(read.map(Arc::new));
        }
        Ok(self.stats.get().and_then(|s| s.as_deref()))
    }
}

/// Reads and decodes the column index of the file whose footer is `meta`.
fn read_column_index(
    file: &CountedFile,
    path: &Path,
    meta: &ParquetMetaData,
) -> Result<Option<ParquetColumnIndex>> {
    let err = |e| ColumnsError::parquet(path, e);
    let ranges = meta
        .row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .filter_map(|c| {
            let start = u64::try_from(c.column_index_offset()?).ok()?;
            let len = u64::try_from(c.column_index_length()?).ok()?;
            Some((start, start.checked_add(len)?))
        });
    let Some((start, end)) = ranges.fold(None, |acc: Option<(u64, u64)>, (s, e)| match acc {
        None => Some((s, e)),
        Some((a, b)) => Some((a.min(s), b.max(e))),
    }) else {
        return Ok(None);
    };
    let len = file.len();
    if end > len || start >= end {
        return Err(ColumnsError::Corrupt {
            file: path.to_path_buf(),
            reason: format!("its column index ({start}..{end}) is not within its {len} bytes"),
        });
    }
    let bytes = file.get_bytes(start, (end - start) as usize).map_err(err)?;
    let mut reader = ParquetMetaDataReader::new_with_metadata(meta.clone())
        .with_column_index_policy(PageIndexPolicy::Required)
        .with_offset_index_policy(PageIndexPolicy::Skip);
    reader
        .read_page_indexes_sized(&Range { start, bytes, len }, len)
        .map_err(err)?;
    let read = reader.finish().map_err(err)?;
    Ok(read.column_index().cloned())
}

/// The bytes of one range of a file of `len` bytes, standing for the file
/// from `start` to its end: the Parquet reader asks a reader of a file's
/// tail only for the range it needs of it.
struct Range {
    start: u64,
    bytes: Bytes,
    len: u64,
}

impl Length for Range {
    fn len(&self) -> u64 {
        self.len - self.start
    }
}

impl ChunkReader for Range {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        use bytes::Buf;
        Ok(self
            .get_bytes(start, self.bytes.len().saturating_sub(start as usize))?
            .reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let from = start as usize;
        match from.checked_add(length) {
            Some(to) if to <= self.bytes.len() => Ok(self.bytes.slice(from..to)),
            _ => Err(ParquetError::EOF(format!(
                "{length} bytes at {} of a range of {} read at {}",
                self.start + start,
                self.bytes.len(),
                self.start
            ))),
        }
    }
}

/// The footers and page indexes of the column files a database read, by
/// file name: a file is never changed and its name never reused, so a kept
/// footer never goes stale, and a statement after the first does not read
/// and decode its table's footer again (a point lookup's fixed cost). At
/// most [`FooterCache::FILES`] files; past that it starts over.
#[derive(Default)]
pub struct FooterCache {
    files: parking_lot::Mutex<std::collections::HashMap<String, Footer>>,
}

impl FooterCache {
    pub const FILES: usize = 256;

    pub(crate) fn get(&self, file: &str) -> Option<Footer> {
        self.files.lock().get(file).cloned()
    }

    pub(crate) fn put(&self, file: &str, footer: Footer) {
        let mut f = self.files.lock();
        if f.len() >= Self::FILES {
            f.clear();
        }
        f.insert(file.to_string(), footer);
    }
}
