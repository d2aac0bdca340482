//! One column file: a Parquet file of a table's rows in column row groups.
//!
//! Why Parquet: it already is what the format needs — each column of a row
//! group stored apart (a scan reads only the columns it projects), the
//! lightweight encodings types-as-hints chooses for the row heap
//! (dictionaries, run-length and bit-packed levels and codes, plain narrow
//! values), min/max per row group and, in the page index, per page with each
//! page's first row (a scan skips the pages no row of its comparisons can be
//! on) — and every Parquet reader (DuckDB, DataFusion, pyarrow) reads the
//! files as they are. Its costs are in docs/layers/columns.md.
//!
//! Files are written once, fsynced with their directory before the catalog
//! names them, and never changed: a merge writes new files.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::encoding::ColumnEncoding;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::errors::ParquetError;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::reader::{ChunkReader, Length};
use parquet::schema::types::ColumnPath;
use strata_storage::catalog::{ColumnFile, sync_dir};
use strata_storage::device::{Device, FileId, RemoteFile, cold_manifest_path};
use strata_storage::page::PAGE_SIZE;

use crate::error::{ColumnsError, Result};

/// Rows per row group: the unit a scan is split into across threads and the
/// coarsest unit it skips. DuckDB's row group size; at 8 KiB of a narrow
/// column per page it is a few dozen pages per column, enough for one long
/// read per column, and a table of 10^5 rows still has a row group or more
/// per core to share.
pub const ROW_GROUP_ROWS: usize = 122_880;

/// Rows per data page at most: the unit of the page index, and so the finest
/// unit a scan skips (a page of a wide column ends sooner, at
/// [`PAGE_BYTES`]).
pub const PAGE_ROWS: usize = 8_192;

/// Encoded bytes per data page at most, checked every [`WRITE_BATCH`]
/// values. A lookup of one row decompresses and decodes the whole page
/// that holds it, of each column it reads, so a page's bytes bound what one
/// row costs: 8,192 values of a 40-byte string are 360 KiB, several hundred
/// microseconds of Snappy and decoding for one row, where a narrow column's
/// page of as many rows is a few KiB. Pages of 64 KiB (Snappy's own block
/// size, so compression loses nothing) keep that cost the same for every
/// width; a scan pays a page header per 64 KiB for it.
pub const PAGE_BYTES: usize = 64 * 1024;

/// Values the writer takes at a time, and so how often it checks a page's
/// size: pages end within this many rows past [`PAGE_BYTES`].
const WRITE_BATCH: usize = 256;

/// Snappy is kept for a column only if it shrinks the column's encoded
/// sample by at least this fraction. Every read of a page pays for its
/// decompression: a point lookup or a point UPDATE decompresses a whole
/// page (up to [`PAGE_BYTES`]) to reach one value, a warm scan every page
/// it reads. The bytes saved pay that back only when they are many: from
/// the local disk (about 1 GB/s here) a read saves its transfer of them,
/// which for a small saving costs less than Snappy's pass over the whole
/// page; over the cold tier's slower link even a quarter is a quarter of
/// the transfer. Below it the pages are written as encoded. Text that
/// repeats (TPC-H's comments: 57–62% saved) and sorted keys' deltas
/// (`l_orderkey`: 49%) keep Snappy; hex strings (`acct.pad`: 8%) and
/// `o_clerk`'s dictionary codes (8%) do not.
pub const MIN_SNAPPY_SAVING: f64 = 0.25;

/// Whether Snappy saves at least [`MIN_SNAPPY_SAVING`] of each column's
/// bytes in `sample` written as the file will be, by the compressed and
/// uncompressed sizes Parquet records of each column chunk.
fn snappy_pays(
    schema: &SchemaRef,
    encodings: &[ColumnEncoding],
    sample: &RecordBatch,
) -> std::result::Result<Vec<bool>, ParquetError> {
    let all = vec![true; encodings.len()];
    // A few pages' worth tells, however many rows came first.
    let sample = sample.slice(0, sample.num_rows().min(4 * PAGE_ROWS));
    let mut w = ArrowWriter::try_new(
        Vec::new(),
        schema.clone(),
        Some(properties(schema, encodings, &all)),
    )?;
    w.write(&sample)?;
    let meta = w.close()?;
    let mut sizes = vec![(0i64, 0i64); encodings.len()];
    for g in meta.row_groups() {
        for (i, c) in g.columns().iter().enumerate() {
            sizes[i].0 += c.compressed_size();
            sizes[i].1 += c.uncompressed_size();
        }
    }
    Ok(sizes
        .into_iter()
        .map(|(compressed, raw)| {
            raw > 0 && 1.0 - compressed as f64 / raw as f64 >= MIN_SNAPPY_SAVING
        })
        .collect())
}

/// The writer's settings for every column file, each column in the
/// encoding [`crate::encoding::choose`] picked for it, with Snappy where
/// `snappy` says it pays and uncompressed elsewhere.
fn properties(
    schema: &SchemaRef,
    encodings: &[ColumnEncoding],
    snappy: &[bool],
) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_data_page_row_count_limit(PAGE_ROWS)
        .set_data_page_size_limit(PAGE_BYTES)
        // Checked per batch of this many values: pages end near PAGE_ROWS
        // or PAGE_BYTES.
        .set_write_batch_size(WRITE_BATCH)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_compression(Compression::SNAPPY)
        .set_created_by("strata".to_string());
    for ((f, e), &compress) in schema.fields().iter().zip(encodings).zip(snappy) {
        let path = || ColumnPath::from(f.name().as_str());
        if !compress {
            b = b.set_column_compression(path(), Compression::UNCOMPRESSED);
        }
        match e {
            ColumnEncoding::Dictionary => {}
            ColumnEncoding::Plain => b = b.set_column_dictionary_enabled(path(), false),
            ColumnEncoding::Delta => {
                b = b
                    .set_column_dictionary_enabled(path(), false)
                    .set_column_encoding(path(), parquet::basic::Encoding::DELTA_BINARY_PACKED)
            }
        }
    }
    b.build()
}

/// Writes one column file at `path` (relative: `dir.join(path)`), durably.
pub struct FileWriter {
    dir: PathBuf,
    file: String,
    schema: SchemaRef,
    /// The open file until the writer is made, then the writer: it is made
    /// once the first page's worth of rows (or all of them) is here, which
    /// decides the columns' dictionaries.
    out: Option<File>,
    writer: Option<ArrowWriter<File>>,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    rows: u64,
}

impl FileWriter {
    /// A new file `file` (the catalog's name, relative to `dir`) of batches
    /// of `schema`.
    pub fn create(dir: &Path, file: String, schema: SchemaRef) -> Result<FileWriter> {
        let path = dir.join(&file);
        let f = File::create(&path).map_err(|e| strata_storage::StorageError::io(&path, e))?;
        Ok(FileWriter {
            dir: dir.to_path_buf(),
            file,
            schema,
            out: Some(f),
            writer: None,
            pending: Vec::new(),
            pending_rows: 0,
            rows: 0,
        })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.rows += batch.num_rows() as u64;
        if self.writer.is_none() {
            self.pending.push(batch.clone());
            self.pending_rows += batch.num_rows();
            if self.pending_rows >= PAGE_ROWS {
                self.start()?;
            }
            return Ok(());
        }
        self.writer
            .as_mut()
            .expect("started")
            .write(batch)
            .map_err(|e| ColumnsError::parquet(self.dir.join(&self.file), e))
    }

    /// Makes the writer, its dictionaries decided on the rows held, and
    /// writes them.
    fn start(&mut self) -> Result<()> {
        let path = self.dir.join(&self.file);
        let sample = arrow::compute::concat_batches(&self.schema, &self.pending)
            .map_err(|e| ColumnsError::parquet(&path, e.into()))?;
        let encodings: Vec<ColumnEncoding> = sample
            .columns()
            .iter()
            .map(|c| crate::encoding::choose(c.as_ref()))
            .collect();
        let snappy = snappy_pays(&self.schema, &encodings, &sample)
            .map_err(|e| ColumnsError::parquet(&path, e))?;
        let f = self.out.take().expect("the file is open");
        let mut w = ArrowWriter::try_new(
            f,
            self.schema.clone(),
            Some(properties(&self.schema, &encodings, &snappy)),
        )
        .map_err(|e| ColumnsError::parquet(&path, e))?;
        for b in std::mem::take(&mut self.pending) {
            w.write(&b).map_err(|e| ColumnsError::parquet(&path, e))?;
        }
        self.writer = Some(w);
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Finishes the file (its footer and page index), fsyncs it and its
    /// directory, and says what the catalog records of it.
    pub fn finish(mut self) -> Result<ColumnFile> {
        let path = self.dir.join(&self.file);
        if self.writer.is_none() {
            self.start()?;
        }
        let mut writer = self.writer.take().expect("started");
        let meta = writer
            .finish()
            .map_err(|e| ColumnsError::parquet(&path, e))?;
        // `finish` wrote the footer and flushed every buffer to the file.
        let f = writer.inner();
        f.sync_all()
            .map_err(|e| strata_storage::StorageError::io(&path, e))?;
        let bytes = f
            .metadata()
            .map_err(|e| strata_storage::StorageError::io(&path, e))?
            .len();
        if let Some(parent) = path.parent() {
            sync_dir(parent)?;
        }
        let (tail, offsets_tail) = tails(&meta, bytes);
        Ok(ColumnFile {
            file: self.file,
            rows: self.rows,
            bytes,
            tail,
            offsets_tail,
        })
    }
}

/// Bytes and requests a scan's reads of column files took.
#[derive(Debug, Default)]
pub struct ReadCounters {
    pub bytes: AtomicU64,
    pub requests: AtomicU64,
}

impl ReadCounters {
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

/// An open column file whose reads are counted: the Parquet reader's
/// [`ChunkReader`] over a file, reading at offsets (no shared seek position,
/// so threads may share one). Opened with `O_DIRECT` when the database reads
/// so (`DbOptions::direct_io`), as the heap's files are: every read then goes
/// to the device, and a run is cold without dropping the OS page cache.
#[derive(Clone)]
pub struct CountedFile {
    file: Source,
    len: u64,
    direct: bool,
    counters: Arc<ReadCounters>,
    charge: Option<Charge>,
}

/// Where a column file's bytes are.
#[derive(Clone)]
enum Source {
    Local(Arc<File>),
    /// Held by the database's device away from the local disk (a column
    /// file on the cold tier), read by ranges; it counts its own requests
    /// in the device's stats.
    Remote(Arc<dyn RemoteFile>),
}

/// Where a column file's reads are charged: the database's device, which
/// counts them with its own and, modeled, charges their time
/// ([`Device::charge_read`]), under the file's [`FileId::external`] id.
#[derive(Clone)]
pub struct Charge {
    device: Arc<dyn Device>,
    file: FileId,
}

impl Charge {
    pub fn new(device: Arc<dyn Device>, name: &str) -> Charge {
        Charge {
            device,
            file: FileId::external(name),
        }
    }

    /// Charges a read of `len` bytes at `start`: the device pages it spans.
    fn read(&self, start: u64, len: u64) {
        if len == 0 {
            return;
        }
        let page = PAGE_SIZE as u64;
        let first = start / page;
        let last = (start + len - 1) / page;
        self.device.charge_read(self.file, first, last - first + 1);
    }
}

/// Counts a read of `len` bytes at `start` in `counters` and charges it.
fn account(counters: &ReadCounters, charge: Option<&Charge>, start: u64, len: u64) {
    counters.requests.fetch_add(1, Ordering::Relaxed);
    counters.bytes.fetch_add(len, Ordering::Relaxed);
    if let Some(c) = charge {
        c.read(start, len);
    }
}

/// `O_DIRECT` reads start and end on this boundary.
const DIRECT_ALIGN: u64 = 4096;

/// Bytes a reader from an offset on (`ChunkReader::get_read`) reads at once
/// under `O_DIRECT`.
const DIRECT_CHUNK: usize = 1 << 20;

/// `len` bytes at `start` of a file opened with `O_DIRECT`: the aligned
/// range around them read into an aligned buffer, then copied out. Fewer
/// bytes when the file ends first.
fn read_direct(file: &File, start: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let a_start = start / DIRECT_ALIGN * DIRECT_ALIGN;
    let end = start + len as u64;
    let a_end = end.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
    let n = (a_end - a_start) as usize;
    let mut buf =
        strata_storage::device::AlignedBuf::new(n.div_ceil(strata_storage::page::PAGE_SIZE));
    let mut got = 0usize;
    while (got as u64) < end - a_start {
        let r = file.read_at(&mut buf[got..n], a_start + got as u64)?;
        if r == 0 {
            break;
        }
        got += r;
    }
    let from = (start - a_start) as usize;
    let to = got.min(from + len).max(from);
    Ok(buf[from..to].to_vec())
}

impl CountedFile {
    /// Opens column file `c` of the database at `dir` and checks that it is
    /// the size the catalog committed. A file on the cold tier (it has a
    /// manifest) is opened through `device`, which reads it by ranges.
    pub fn open(
        dir: &Path,
        c: &ColumnFile,
        direct: bool,
        counters: Arc<ReadCounters>,
        device: Option<&Arc<dyn Device>>,
    ) -> Result<CountedFile> {
        let path = dir.join(&c.file);
        let manifest = cold_manifest_path(&path);
        if manifest.exists() {
            let remote = match device {
                Some(d) => d.open_remote(&path)?,
                None => None,
            };
            let Some(remote) = remote else {
                return Err(ColumnsError::Corrupt {
                    file: path,
                    reason: format!(
                        "it is on the cold tier ({} names its object) and this database was \
                         opened without a cold tier to read it",
                        manifest.display()
                    ),
                });
            };
            if remote.len() != c.bytes {
                return Err(ColumnsError::Corrupt {
                    file: path,
                    reason: format!(
                        "{} ({} bytes) is not the file the catalog committed ({} bytes)",
                        remote.describe(),
                        remote.len(),
                        c.bytes
                    ),
                });
            }
            return Ok(CountedFile {
                len: remote.len(),
                file: Source::Remote(remote),
                direct: false,
                counters,
                charge: None,
            });
        }
        let opened = if direct {
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(&path)
        } else {
            File::open(&path)
        };
        // EINVAL: this filesystem does not do O_DIRECT; read through the
        // page cache (the heap's files do the same).
        let (file, direct) = match opened {
            Ok(f) => (f, direct),
            Err(e) if direct && e.raw_os_error() == Some(libc::EINVAL) => (
                File::open(&path).map_err(|e| strata_storage::StorageError::io(&path, e))?,
                false,
            ),
            Err(e) => return Err(strata_storage::StorageError::io(&path, e).into()),
        };
        let len = file
            .metadata()
            .map_err(|e| strata_storage::StorageError::io(&path, e))?
            .len();
        if len != c.bytes {
            return Err(ColumnsError::Corrupt {
                file: path,
                reason: format!(
                    "{len} bytes where the catalog committed {} (truncated or replaced)",
                    c.bytes
                ),
            });
        }
        Ok(CountedFile {
            file: Source::Local(Arc::new(file)),
            len,
            direct,
            counters,
            charge: None,
        })
    }

    /// Charges every read from now on to `charge`'s device (a file the
    /// device holds itself counts its own requests: it is not charged).
    pub fn charging(mut self, charge: Charge) -> CountedFile {
        if let Source::Local(_) = self.file {
            self.charge = Some(charge);
        }
        self
    }

    /// For a file held away from the local disk: the bytes whose transfer
    /// costs what a request does there (reads closer merge into one).
    pub fn request_bytes(&self) -> Option<u64> {
        match &self.file {
            Source::Local(_) => None,
            Source::Remote(r) => Some(r.request_bytes()),
        }
    }

    /// Whether its reads go around the page cache (`O_DIRECT`).
    pub fn is_direct(&self) -> bool {
        self.direct
    }
}

/// Bytes read from a column file's end when its catalog entry does not say
/// how many hold its footer and page index (a file written before it was
/// recorded): enough for the footer of a small file in one request.
pub const GUESS_TAIL: u64 = 64 * 1024;

/// What the catalog records of a file's tail, from its footer `meta` and
/// size `bytes`: (`tail`, `offsets_tail`), the bytes from its first column
/// index, and from its first offset index, to its end (the writer puts
/// the column indexes, then the offset indexes, then the footer, after the
/// last data page); the whole footer's length (a guess) when it has none.
pub(crate) fn tails(meta: &ParquetMetaData, bytes: u64) -> (u64, u64) {
    let chunks = || meta.row_groups().iter().flat_map(|rg| rg.columns());
    let from = |first: Option<i64>| match first.and_then(|o| u64::try_from(o).ok()) {
        Some(o) if o < bytes => bytes - o,
        _ => GUESS_TAIL.min(bytes),
    };
    let offsets = chunks().filter_map(|c| c.offset_index_offset()).min();
    let columns = chunks().filter_map(|c| c.column_index_offset()).min();
    let all = [offsets, columns].into_iter().flatten().min();
    let offsets_tail = match offsets {
        Some(_) => from(offsets),
        None => 0,
    };
    (from(all), offsets_tail)
}

impl Length for CountedFile {
    fn len(&self) -> u64 {
        self.len
    }
}

/// A reader from an offset on, counting what it reads.
pub enum CountedRead {
    Buffered {
        inner: BufReader<File>,
        pos: u64,
        counters: Arc<ReadCounters>,
        charge: Option<Charge>,
    },
    /// A file held by the device: ranges of [`DIRECT_CHUNK`] bytes.
    Remote {
        file: Arc<dyn RemoteFile>,
        pos: u64,
        chunk: Vec<u8>,
        at: usize,
        counters: Arc<ReadCounters>,
    },
    /// Under `O_DIRECT`: aligned chunks of [`DIRECT_CHUNK`] bytes.
    Direct {
        file: Arc<File>,
        pos: u64,
        chunk: Vec<u8>,
        at: usize,
        counters: Arc<ReadCounters>,
        charge: Option<Charge>,
    },
}

impl Read for CountedRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let (inner, pos, counters, charge) = match self {
            CountedRead::Remote {
                file,
                pos,
                chunk,
                at,
                counters,
            } => {
                if *at == chunk.len() {
                    let n = (file.len().saturating_sub(*pos) as usize).min(DIRECT_CHUNK);
                    *chunk = file.read_range(*pos, n).map_err(std::io::Error::other)?;
                    *at = 0;
                    account(counters, None, *pos, chunk.len() as u64);
                    *pos += chunk.len() as u64;
                }
                let n = buf.len().min(chunk.len() - *at);
                buf[..n].copy_from_slice(&chunk[*at..*at + n]);
                *at += n;
                return Ok(n);
            }
            CountedRead::Buffered {
                inner,
                pos,
                counters,
                charge,
            } => (inner, pos, counters, charge),
            CountedRead::Direct {
                file,
                pos,
                chunk,
                at,
                counters,
                charge,
            } => {
                if *at == chunk.len() {
                    *chunk = read_direct(file, *pos, DIRECT_CHUNK)?;
                    *at = 0;
                    account(counters, charge.as_ref(), *pos, chunk.len() as u64);
                    *pos += chunk.len() as u64;
                }
                let n = buf.len().min(chunk.len() - *at);
                buf[..n].copy_from_slice(&chunk[*at..*at + n]);
                *at += n;
                return Ok(n);
            }
        };
        let before = inner.buffer().len();
        let n = inner.read(buf)?;
        // A refill of the buffer is one request of the buffer's fill.
        if before == 0 && n > 0 {
            let filled = (n + inner.buffer().len()) as u64;
            account(counters, charge.as_ref(), *pos, filled);
        }
        *pos += n as u64;
        Ok(n)
    }
}

impl ChunkReader for CountedFile {
    type T = CountedRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<CountedRead> {
        let file = match &self.file {
            Source::Remote(r) => {
                return Ok(CountedRead::Remote {
                    file: r.clone(),
                    pos: start,
                    chunk: Vec::new(),
                    at: 0,
                    counters: self.counters.clone(),
                });
            }
            Source::Local(f) => f,
        };
        if self.direct {
            return Ok(CountedRead::Direct {
                file: file.clone(),
                pos: start,
                chunk: Vec::new(),
                at: 0,
                counters: self.counters.clone(),
                charge: self.charge.clone(),
            });
        }
        let mut f = file.try_clone()?;
        f.seek(SeekFrom::Start(start))?;
        Ok(CountedRead::Buffered {
            inner: BufReader::new(f),
            pos: start,
            counters: self.counters.clone(),
            charge: self.charge.clone(),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let file = match &self.file {
            Source::Remote(r) => {
                let b = r
                    .read_range(start, length)
                    .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))?;
                account(&self.counters, None, start, length as u64);
                return Ok(b.into());
            }
            Source::Local(f) => f,
        };
        let buf = if self.direct {
            let b = read_direct(file, start, length)?;
            if b.len() != length {
                return Err(parquet::errors::ParquetError::EOF(format!(
                    "{length} bytes at {start}: the file ends after {}",
                    b.len()
                )));
            }
            b
        } else {
            let mut buf = vec![0u8; length];
            file.read_exact_at(&mut buf, start)?;
            buf
        };
        account(&self.counters, self.charge.as_ref(), start, length as u64);
        Ok(buf.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use parquet::file::reader::{FileReader, SerializedFileReader};

    /// Hex strings (Snappy saves a few percent) go uncompressed; text that
    /// repeats and sorted keys keep Snappy; the rows read back as written.
    #[test]
    fn snappy_is_kept_only_for_the_columns_it_shrinks_by_a_quarter() {
        let dir = tempfile::tempdir().unwrap();
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("hex", DataType::Utf8, false),
            Field::new("text", DataType::Utf8, false),
        ]));
        let rows = 3 * PAGE_ROWS as i64;
        // A multiplicative hash: 16 hex digits no two rows share.
        let hex: Vec<String> = (0..rows)
            .map(|i| {
                format!(
                    "{:016x}",
                    (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
                )
            })
            .collect();
        let words = [
            "quickly",
            "final",
            "deposits",
            "sleep",
            "furiously",
            "carefully",
            "ironic",
        ];
        let text: Vec<String> = (0..rows)
            .map(|i| {
                let w = |n: i64| words[((i / 7 + n * 3) % words.len() as i64) as usize];
                format!("{} {} {} of order {i}, {} {}", w(0), w(1), w(2), w(3), w(4))
            })
            .collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values((0..rows).map(|i| i / 3))) as ArrayRef,
                Arc::new(StringArray::from(hex.clone())),
                Arc::new(StringArray::from(text.clone())),
            ],
        )
        .unwrap();
        let mut w = FileWriter::create(dir.path(), "t.parquet".into(), schema.clone()).unwrap();
        for at in (0..rows as usize).step_by(1000) {
            w.write(&batch.slice(at, 1000.min(rows as usize - at)))
                .unwrap();
        }
        w.finish().unwrap();
        let f = File::open(dir.path().join("t.parquet")).unwrap();
        let r = SerializedFileReader::new(f).unwrap();
        let g = r.metadata().row_group(0);
        let codecs: Vec<Compression> = (0..3).map(|i| g.column(i).compression()).collect();
        assert_eq!(
            codecs,
            [
                Compression::SNAPPY,
                Compression::UNCOMPRESSED,
                Compression::SNAPPY
            ]
        );
        let f = File::open(dir.path().join("t.parquet")).unwrap();
        let back: Vec<RecordBatch> =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
                .unwrap()
                .build()
                .unwrap()
                .collect::<std::result::Result<_, _>>()
                .unwrap();
        let back = arrow::compute::concat_batches(&schema, &back).unwrap();
        assert_eq!(back, batch);
    }
}
