//! [`FileDevice`]: paged files on a real filesystem.
//!
//! A paged file with base path `p` is the segments `p.0000`, `p.0001`, ... (see
//! [`segment_path`]), each holding `segment_pages` pages except the last, which may
//! be partial (or empty). The device keeps every segment of an open file open and
//! tracks the file's page count in memory, so a read is one range check and one
//! `pread` per segment it touches.
//!
//! Why `O_DIRECT`: the experiments measure cold runs, and dropping the OS page
//! cache needs root and hits every other process. With `O_DIRECT` each read really
//! goes to the device. Some filesystems refuse it (`open` fails with `EINVAL`); the
//! device then warns once and uses buffered I/O for those files, so a run still
//! works but may be warm.
//!
//! `O_DIRECT` needs aligned buffers; callers hand [`AlignedBuf`]s. A buffer that
//! is not aligned anyway is read or written through an aligned bounce buffer, so a
//! mistake costs a copy, not an `EINVAL`.
//!
//! [`Device::read_many`] puts every request in flight at once with io_uring (one
//! ring per thread). Where io_uring is unavailable (old kernel, disabled by
//! `kernel.io_uring_disabled`, seccomp) it warns once and reads one piece after
//! another.
//!
//! Concurrency: the table of open files and each file's segment list are behind
//! read-write locks that are only write-locked to open, close, grow by a segment or
//! truncate. Reads range-check and pick their segments under the read lock, then do
//! the I/O without any lock (holding the segment's `File` through an `Arc`), so a
//! read racing a truncate gets a short read, reported as an error naming the
//! segment, never a panic. Writes hold the read lock for their I/O so that a
//! truncate never interleaves with the page count update of a write.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use io_uring::{IoUring, opcode, types};
use parking_lot::RwLock;

use super::read_window::{PIECE_BYTES, ReadWindow};
use super::trace::{Charged, IoKind, TraceRecorder};
use super::{ALIGN, AlignedBuf, Device, FileId, IoStats, PAGE_SIZE, ReadRequest, segment_path};
use crate::error::{Result, StorageError};

const PAGE: u64 = PAGE_SIZE as u64;

/// Largest transfer of one `pread`/`pwrite` or one io_uring entry. Linux moves at
/// most about 2 GiB per call and an SQE's length is a `u32`; a whole number of pages.
const MAX_IO_PAGES: u64 = (1 << 30) / PAGE;

/// Entries of each thread's io_uring. Larger batches are submitted in chunks.
const RING_ENTRIES: u32 = 64;

/// Paged files on the local filesystem, read and written with `pread`/`pwrite`
/// (and io_uring for [`Device::read_many`]), optionally with `O_DIRECT`.
pub struct FileDevice {
    /// Whether `O_DIRECT` was asked for.
    direct: bool,
    /// Whether `read_many` may use io_uring (tests turn it off to cover the fallback).
    use_io_uring: bool,
    /// Open files, indexed by `FileId`. Ids are never reused, so the sequential /
    /// random bookkeeping of [`IoStats`] never mistakes a new file for an old one.
    files: RwLock<Vec<Option<Arc<OpenFile>>>>,
    stats: IoStats,
    /// Set (and the warning printed) the first time a filesystem refuses `O_DIRECT`.
    direct_refused: AtomicBool,
    /// Records requests with their wall-clock times while a trace is active.
    trace: TraceRecorder,
    /// Paces bulk reads ([`Device::read_many`]) on a direct-I/O device so that
    /// point reads do not queue behind them (see [`super::read_window`]).
    window: Option<ReadWindow>,
}

/// One open paged file.
struct OpenFile {
    base: PathBuf,
    segment_pages: u64,
    /// Never empty. Every segment but the last holds exactly `segment_pages` pages.
    segments: RwLock<Vec<Arc<Segment>>>,
    /// Pages in the file. Changed only under `segments`' lock (read lock plus
    /// `fetch_max` by writes, write lock by truncate).
    num_pages: AtomicU64,
    /// Segments were created or removed since the last sync: the directory needs an
    /// fsync too for that to be durable.
    dir_dirty: AtomicBool,
}

/// One segment file.
struct Segment {
    path: PathBuf,
    file: File,
    /// Opened with `O_DIRECT` (buffers must be aligned).
    direct: bool,
    /// Written to since the last sync.
    dirty: AtomicBool,
}

/// A piece of a read request that lies in one segment.
struct ReadPiece<'a> {
    seg: Arc<Segment>,
    /// Byte offset in the segment.
    offset: u64,
    buf: &'a mut [u8],
}

// The device is shared by every thread of the process.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<FileDevice>();
};

impl FileDevice {
    /// A device opening its files with `O_DIRECT` if `direct` (falling back to
    /// buffered I/O, with one warning, where the filesystem refuses it).
    pub fn new(direct: bool) -> FileDevice {
        FileDevice {
            direct,
            use_io_uring: true,
            files: RwLock::new(Vec::new()),
            stats: IoStats::default(),
            trace: TraceRecorder::default(),
            direct_refused: AtomicBool::new(false),
            window: None,
        }
    }

    /// The same device, with its bulk reads paced by a [`ReadWindow`] when
    /// `on` and the device reads with `O_DIRECT` (through the OS page cache,
    /// latencies are the cache's, not the device's).
    pub fn with_read_window(mut self, on: bool) -> FileDevice {
        self.window = (on && self.direct).then(ReadWindow::new);
        self
    }

    /// What the read window has learned, if the device has one.
    pub fn read_window(&self) -> Option<super::read_window::WindowCounters> {
        self.window.as_ref().map(ReadWindow::counters)
    }

    /// The same device, but `read_many` issues its reads one after another instead
    /// of through io_uring.
    pub fn without_io_uring(mut self) -> FileDevice {
        self.use_io_uring = false;
        self
    }

    fn get(&self, file: FileId) -> Result<Arc<OpenFile>> {
        self.files
            .read()
            .get(file.0 as usize)
            .and_then(|f| f.clone())
            .ok_or_else(|| {
                StorageError::io(
                    format!("<file #{}>", file.0),
                    io::Error::new(
                        io::ErrorKind::NotFound,
                        "no open file has this id (closed?)",
                    ),
                )
            })
    }

    fn register(&self, of: OpenFile) -> FileId {
        let mut files = self.files.write();
        let id = u32::try_from(files.len()).expect("more than 2^32 files opened");
        files.push(Some(Arc::new(of)));
        FileId(id)
    }

    /// Opens (or with `create`, creates empty) one segment file, with `O_DIRECT` if
    /// asked and the filesystem allows it.
    fn open_segment(&self, path: &Path, create: bool) -> Result<Segment> {
        let mut opts = OpenOptions::new();
        opts.read(true).write(true);
        if create {
            opts.create(true).truncate(true);
        }
        if self.direct {
            let mut d = opts.clone();
            d.custom_flags(libc::O_DIRECT);
            match d.open(path) {
                Ok(file) => return Ok(Segment::new(path, file, true)),
                // EINVAL from open with O_DIRECT: this filesystem does not do it.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => self.warn_direct_refused(path),
                Err(e) => return Err(StorageError::io(path, e)),
            }
        }
        let file = opts.open(path).map_err(|e| StorageError::io(path, e))?;
        Ok(Segment::new(path, file, false))
    }

    fn warn_direct_refused(&self, path: &Path) {
        if !self.direct_refused.swap(true, Ordering::Relaxed) {
            eprintln!(
                "warning: {}: the filesystem refuses O_DIRECT; falling back to buffered I/O, so runs are not guaranteed cold",
                path.display()
            );
        }
    }

    /// Adds segments to `of` until segment `last_seg` exists. A segment that stops
    /// being the last one is first extended to full size (the pages skipped over
    /// read back as zeros), so the file stays valid for [`Device::open`].
    fn grow(&self, of: &OpenFile, last_seg: u64) -> Result<()> {
        let mut segs = of.segments.write();
        let full = of.segment_pages * PAGE;
        while segs.len() as u64 <= last_seg {
            let prev = segs.last().expect("a paged file has at least one segment");
            let len = prev
                .file
                .metadata()
                .map_err(|e| StorageError::io(&prev.path, e))?
                .len();
            if len < full {
                prev.file
                    .set_len(full)
                    .map_err(|e| StorageError::io(&prev.path, e))?;
                prev.dirty.store(true, Ordering::Relaxed);
            }
            let seg = self.open_segment(&segment_path(&of.base, segs.len() as u64), true)?;
            seg.dirty.store(true, Ordering::Relaxed);
            segs.push(Arc::new(seg));
            of.dir_dirty.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Reads the pieces one after another.
    fn read_pieces_sync(pieces: &mut [ReadPiece<'_>], window: Option<&ReadWindow>) -> Result<()> {
        for p in pieces {
            let bytes = p.buf.len() as u64;
            if let Some(w) = window {
                w.take(bytes);
            }
            let start = Instant::now();
            let read = pread_exact(&p.seg, p.offset, p.buf);
            if let Some(w) = window {
                w.done(bytes, read.is_ok().then(|| elapsed_ns(start)));
            }
            read.map_err(|e| StorageError::io(&p.seg.path, e))?;
        }
        Ok(())
    }
}

impl Segment {
    fn new(path: &Path, file: File, direct: bool) -> Segment {
        Segment {
            path: path.to_path_buf(),
            file,
            direct,
            dirty: AtomicBool::new(false),
        }
    }
}

impl OpenFile {
    /// Checks that `len` bytes are whole pages; returns how many.
    fn pages_of(&self, len: usize) -> Result<u64> {
        if !len.is_multiple_of(PAGE_SIZE) {
            return Err(StorageError::io(
                &self.base,
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "a buffer of {len} bytes is not a whole number of {PAGE_SIZE}-byte pages"
                    ),
                ),
            ));
        }
        Ok((len / PAGE_SIZE) as u64)
    }

    /// Range-checks a read of `buf` at `first_page` and splits it into one piece per
    /// segment it touches (and per [`MAX_IO_PAGES`]).
    fn plan_read<'a>(
        &self,
        first_page: u64,
        buf: &'a mut [u8],
        out: &mut Vec<ReadPiece<'a>>,
    ) -> Result<()> {
        let pages = (buf.len() / PAGE_SIZE) as u64;
        let segs = self.segments.read();
        let n = self.num_pages.load(Ordering::Acquire);
        if first_page.checked_add(pages).is_none_or(|end| end > n) {
            return Err(StorageError::PageOutOfRange {
                path: self.base.clone(),
                page: first_page.max(n),
                pages: n,
            });
        }
        let mut rest = buf;
        let mut page = first_page;
        while !rest.is_empty() {
            let (seg_no, in_seg, run) = self.run_at(page, (rest.len() / PAGE_SIZE) as u64);
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(run as usize * PAGE_SIZE);
            let seg = segs
                .get(seg_no as usize)
                .ok_or_else(|| self.missing_segment(seg_no))?;
            out.push(ReadPiece {
                seg: seg.clone(),
                offset: in_seg * PAGE,
                buf: head,
            });
            rest = tail;
            page += run;
        }
        Ok(())
    }

    /// For a run of `pages` pages from `page`: its segment, the page's index in that
    /// segment, and how many pages of the run that segment (and one I/O) can take.
    fn run_at(&self, page: u64, pages: u64) -> (u64, u64, u64) {
        let seg = page / self.segment_pages;
        let in_seg = page % self.segment_pages;
        let run = pages.min(self.segment_pages - in_seg).min(MAX_IO_PAGES);
        (seg, in_seg, run)
    }

    fn missing_segment(&self, seg: u64) -> StorageError {
        StorageError::io(
            segment_path(&self.base, seg),
            io::Error::new(io::ErrorKind::NotFound, "segment not open (file shrank?)"),
        )
    }
}

/// Reads exactly `buf.len()` bytes at `offset`, through an aligned bounce buffer if
/// the segment is `O_DIRECT` and `buf` is not aligned. A short read (the file ended
/// early) is an `UnexpectedEof` error that says so.
fn pread_exact(seg: &Segment, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    if seg.direct && !is_aligned(buf) {
        let mut bounce = AlignedBuf::new(buf.len().div_ceil(PAGE_SIZE));
        pread_exact(seg, offset, &mut bounce[..buf.len()])?;
        buf.copy_from_slice(&bounce[..buf.len()]);
        return Ok(());
    }
    seg.file.read_exact_at(buf, offset).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            short_read(offset, buf.len())
        } else {
            e
        }
    })
}

fn short_read(offset: u64, len: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!(
            "short read of {len} bytes at byte {offset}: the segment ends early (did the file shrink?)"
        ),
    )
}

/// Writes all of `buf` at `offset`, through an aligned bounce buffer if needed.
fn pwrite_all(seg: &Segment, offset: u64, buf: &[u8]) -> io::Result<()> {
    if seg.direct && !is_aligned(buf) {
        let mut bounce = AlignedBuf::new(buf.len().div_ceil(PAGE_SIZE));
        bounce[..buf.len()].copy_from_slice(buf);
        return seg.file.write_all_at(&bounce[..buf.len()], offset);
    }
    seg.file.write_all_at(buf, offset)
}

fn is_aligned(buf: &[u8]) -> bool {
    (buf.as_ptr() as usize).is_multiple_of(ALIGN)
}

/// Indices of the existing segments of the paged file `base`, sorted: the files in
/// its directory named exactly like [`segment_path`] names them.
fn list_segments(base: &Path) -> Result<Vec<u64>> {
    let name = base.file_name().ok_or_else(|| {
        StorageError::io(
            base,
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a paged file's path must end in a file name",
            ),
        )
    })?;
    let dir = match base.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut prefix = name.as_bytes().to_vec();
    prefix.push(b'.');
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| StorageError::io(dir, e))? {
        let entry = entry.map_err(|e| StorageError::io(dir, e))?;
        let entry_name = entry.file_name();
        let Some(suffix) = entry_name.as_bytes().strip_prefix(prefix.as_slice()) else {
            continue;
        };
        let Some(n) = std::str::from_utf8(suffix)
            .ok()
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<u64>().ok())
        else {
            continue;
        };
        // Only names segment_path would produce ("7" is not segment 7, "0007" is).
        if format!("{n:04}").as_bytes() == suffix {
            found.push(n);
        }
    }
    found.sort_unstable();
    Ok(found)
}

fn check_segment_pages(base: &Path, segment_pages: u64) -> Result<()> {
    if segment_pages == 0 || segment_pages.checked_mul(PAGE).is_none() {
        return Err(StorageError::io(
            base,
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("invalid segment size of {segment_pages} pages"),
            ),
        ));
    }
    Ok(())
}

/// Fsyncs a directory, so that files created or removed in it stay so.
fn sync_dir(base: &Path) -> io::Result<()> {
    let dir = match base.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

impl FileDevice {
    /// Records a step of requests in the trace, if one is active.
    fn traced(&self, start: Instant, reqs: &[(FileId, u64, u64)], kind: IoKind) {
        if !self.trace.is_active() {
            return;
        }
        let charged = reqs
            .iter()
            .map(|&(file, first_page, pages)| Charged {
                file,
                path: self.get(file).ok().map(|of| of.base.clone()),
                first_page,
                pages,
                kind,
                start_ns: 0,
                end_ns: 0,
            })
            .collect();
        self.trace.record_wall(start, charged);
    }

    /// Reads planned pieces: through io_uring when there are several, else
    /// one `pread` after another; paced by `window` if given.
    fn read_planned(&self, pieces: Vec<ReadPiece<'_>>, window: Option<&ReadWindow>) -> Result<()> {
        let mut pieces = pieces;
        if self.use_io_uring && pieces.len() > 1 {
            // O_DIRECT reads into unaligned buffers need a bounce buffer: do those here.
            let (mut ring_pieces, mut sync_pieces): (Vec<_>, Vec<_>) = pieces
                .into_iter()
                .partition(|p| !p.seg.direct || is_aligned(p.buf));
            Self::read_pieces_sync(&mut sync_pieces, window)?;
            match with_ring(|ring| uring_read(ring, &mut ring_pieces, window)) {
                Some(result) => result,
                None => Self::read_pieces_sync(&mut ring_pieces, window),
            }
        } else {
            Self::read_pieces_sync(&mut pieces, window)
        }
    }

    /// Writes pages, adding segments as the file grows.
    fn write_pages(&self, file: FileId, first_page: u64, buf: &[u8]) -> Result<()> {
        let of = self.get(file)?;
        let pages = of.pages_of(buf.len())?;
        if pages == 0 {
            return Ok(());
        }
        let end = first_page
            .checked_add(pages)
            .ok_or_else(|| StorageError::PageOutOfRange {
                path: of.base.clone(),
                page: first_page,
                pages: of.num_pages.load(Ordering::Acquire),
            })?;
        let last_seg = (end - 1) / of.segment_pages;
        loop {
            {
                let segs = of.segments.read();
                if last_seg < segs.len() as u64 {
                    let mut rest = buf;
                    let mut page = first_page;
                    while !rest.is_empty() {
                        let (seg_no, in_seg, run) =
                            of.run_at(page, (rest.len() / PAGE_SIZE) as u64);
                        let (head, tail) = rest.split_at(run as usize * PAGE_SIZE);
                        let seg = &segs[seg_no as usize];
                        pwrite_all(seg, in_seg * PAGE, head)
                            .map_err(|e| StorageError::io(&seg.path, e))?;
                        seg.dirty.store(true, Ordering::Relaxed);
                        rest = tail;
                        page += run;
                    }
                    of.num_pages.fetch_max(end, Ordering::AcqRel);
                    self.stats.record_write(pages);
                    return Ok(());
                }
            }
            // The write reaches past the last segment: add segments (under the write
            // lock), then try again (a truncate may run in between).
            self.grow(&of, last_seg)?;
        }
    }
}

impl Device for FileDevice {
    fn create(&self, path: &Path, segment_pages: u64) -> Result<FileId> {
        check_segment_pages(path, segment_pages)?;
        // Remove from the last segment down, so a crash half way leaves no gap.
        for seg in list_segments(path)?.into_iter().rev() {
            let p = segment_path(path, seg);
            match std::fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(StorageError::io(p, e)),
            }
        }
        let seg0 = self.open_segment(&segment_path(path, 0), true)?;
        seg0.dirty.store(true, Ordering::Relaxed);
        Ok(self.register(OpenFile {
            base: path.to_path_buf(),
            segment_pages,
            segments: RwLock::new(vec![Arc::new(seg0)]),
            num_pages: AtomicU64::new(0),
            dir_dirty: AtomicBool::new(true),
        }))
    }

    fn open(&self, path: &Path, segment_pages: u64) -> Result<FileId> {
        check_segment_pages(path, segment_pages)?;
        let found = list_segments(path)?;
        if found.is_empty() {
            return Err(StorageError::io(
                segment_path(path, 0),
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "no paged file at {} (its first segment does not exist)",
                        path.display()
                    ),
                ),
            ));
        }
        if let Some(missing) = (0..found.len() as u64).find(|&i| found[i as usize] != i) {
            return Err(StorageError::io(
                segment_path(path, missing),
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "segment {missing} of {} is missing but segment {} exists",
                        path.display(),
                        found.last().unwrap()
                    ),
                ),
            ));
        }
        let mut segments = Vec::with_capacity(found.len());
        let mut num_pages = 0;
        for i in 0..found.len() as u64 {
            let seg = self.open_segment(&segment_path(path, i), false)?;
            let bytes = seg
                .file
                .metadata()
                .map_err(|e| StorageError::io(&seg.path, e))?
                .len();
            let last = i + 1 == found.len() as u64;
            let pages = bytes / PAGE;
            if bytes % PAGE != 0 || (!last && pages < segment_pages) {
                return Err(StorageError::Truncated {
                    path: seg.path.clone(),
                    bytes,
                    expected_pages: if last {
                        bytes.div_ceil(PAGE)
                    } else {
                        segment_pages
                    },
                });
            }
            if pages > segment_pages {
                return Err(StorageError::io(
                    &seg.path,
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "segment has {pages} pages but segments of this file hold {segment_pages} (opened with the wrong segment size?)"
                        ),
                    ),
                ));
            }
            num_pages += pages;
            segments.push(Arc::new(seg));
        }
        Ok(self.register(OpenFile {
            base: path.to_path_buf(),
            segment_pages,
            segments: RwLock::new(segments),
            num_pages: AtomicU64::new(num_pages),
            dir_dirty: AtomicBool::new(false),
        }))
    }

    fn close(&self, file: FileId) {
        if let Some(slot) = self.files.write().get_mut(file.0 as usize) {
            *slot = None;
        }
    }

    fn trace(&self) -> Option<&TraceRecorder> {
        Some(&self.trace)
    }

    fn path(&self, file: FileId) -> PathBuf {
        match self.get(file) {
            Ok(of) => of.base.clone(),
            Err(_) => PathBuf::from(format!("<file #{}>", file.0)),
        }
    }

    fn locate(&self, file: FileId, page: u64) -> (PathBuf, u64) {
        match self.get(file) {
            Ok(of) => (
                segment_path(&of.base, page / of.segment_pages),
                page % of.segment_pages,
            ),
            Err(_) => (PathBuf::from(format!("<file #{}>", file.0)), page),
        }
    }

    fn num_pages(&self, file: FileId) -> Result<u64> {
        Ok(self.get(file)?.num_pages.load(Ordering::Acquire))
    }

    fn read(&self, file: FileId, first_page: u64, buf: &mut [u8]) -> Result<()> {
        let of = self.get(file)?;
        let pages = of.pages_of(buf.len())?;
        if pages == 0 {
            return Ok(());
        }
        let mut pieces = Vec::with_capacity(1);
        of.plan_read(first_page, buf, &mut pieces)?;
        self.stats.record_read(file, first_page, pages);
        if pages == 1
            && let Some(w) = &self.window
        {
            w.point_read();
        }
        let start = Instant::now();
        Self::read_pieces_sync(&mut pieces, None)?;
        self.traced(start, &[(file, first_page, pages)], IoKind::Read);
        Ok(())
    }

    fn read_many(&self, reqs: &mut [ReadRequest<'_>]) -> Result<()> {
        // Check every request before reading anything.
        let mut pieces = Vec::with_capacity(reqs.len());
        let mut records = Vec::with_capacity(reqs.len());
        for r in reqs.iter_mut() {
            let of = self.get(r.file)?;
            let pages = of.pages_of(r.buf.len())?;
            if pages == 0 {
                continue;
            }
            of.plan_read(r.first_page, &mut *r.buf, &mut pieces)?;
            records.push((r.file, r.first_page, pages));
        }
        for &(file, first, pages) in &records {
            self.stats.record_read(file, first, pages);
        }
        let start = Instant::now();
        // Pieces of files that fell back to buffered I/O are not paced: their
        // latencies are the page cache's.
        match &self.window {
            Some(w) if pieces.iter().all(|p| p.seg.direct) => {
                self.read_planned(split_pieces(pieces), Some(w))?
            }
            _ => self.read_planned(pieces, None)?,
        }
        self.traced(start, &records, IoKind::Read);
        Ok(())
    }

    fn write(&self, file: FileId, first_page: u64, buf: &[u8]) -> Result<()> {
        let start = Instant::now();
        self.write_pages(file, first_page, buf)?;
        let pages = (buf.len() / PAGE_SIZE) as u64;
        if pages > 0 {
            self.traced(start, &[(file, first_page, pages)], IoKind::Write);
        }
        Ok(())
    }
    fn truncate(&self, file: FileId, pages: u64) -> Result<()> {
        let of = self.get(file)?;
        let mut segs = of.segments.write();
        let n = of.num_pages.load(Ordering::Acquire);
        if pages > n {
            return Err(StorageError::PageOutOfRange {
                path: of.base.clone(),
                page: pages,
                pages: n,
            });
        }
        // Lower the count first: readers that already picked a segment that goes away
        // get a short read (an error), and no new reader picks it.
        of.num_pages.store(pages, Ordering::Release);
        let keep = pages.div_ceil(of.segment_pages).max(1) as usize;
        // Remove whole segments from the end, so a crash half way leaves no gap.
        while segs.len() > keep {
            let seg = segs.pop().expect("len > keep >= 1");
            match std::fs::remove_file(&seg.path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(StorageError::io(&seg.path, e)),
            }
            of.dir_dirty.store(true, Ordering::Relaxed);
        }
        let last = segs.last().expect("a paged file has at least one segment");
        let last_pages = pages - (keep as u64 - 1) * of.segment_pages;
        last.file
            .set_len(last_pages * PAGE)
            .map_err(|e| StorageError::io(&last.path, e))?;
        last.dirty.store(true, Ordering::Relaxed);
        Ok(())
    }

    fn sync(&self, file: FileId) -> Result<()> {
        let of = self.get(file)?;
        let segs: Vec<Arc<Segment>> = of.segments.read().clone();
        for seg in segs {
            // Clear before syncing: a write that lands during the fsync sets it again.
            if seg.dirty.swap(false, Ordering::AcqRel)
                && let Err(e) = seg.file.sync_all()
            {
                seg.dirty.store(true, Ordering::Relaxed);
                return Err(StorageError::io(&seg.path, e));
            }
        }
        if of.dir_dirty.swap(false, Ordering::AcqRel)
            && let Err(e) = sync_dir(&of.base)
        {
            of.dir_dirty.store(true, Ordering::Relaxed);
            return Err(StorageError::io(&of.base, e));
        }
        Ok(())
    }

    fn stats(&self) -> &IoStats {
        &self.stats
    }

    /// Local flash serves many requests at once; io_uring keeps up to this many
    /// in flight (what `strata bench io` measures at depth 32 here).
    fn parallelism(&self) -> usize {
        16
    }

    fn describe(&self) -> String {
        if !self.direct {
            "real (buffered)".to_string()
        } else if self.direct_refused.load(Ordering::Relaxed) {
            "real (buffered: the filesystem refused O_DIRECT)".to_string()
        } else {
            "real (O_DIRECT)".to_string()
        }
    }
}

/// A thread's io_uring, made on first use.
enum RingState {
    Untried,
    Ready(Box<IoUring>),
    Unavailable,
}

thread_local! {
    static RING: RefCell<RingState> = const { RefCell::new(RingState::Untried) };
}

/// Set once io_uring has been found unavailable and the warning printed.
static IO_URING_WARNED: AtomicBool = AtomicBool::new(false);

/// Outcome of [`uring_read`]: the result, and whether the ring must be thrown away
/// (it may hold entries that were never submitted).
type UringOutcome = (Result<()>, bool);

/// Runs `f` with this thread's ring; `None` if io_uring is unavailable (then the
/// caller reads without it).
fn with_ring(f: impl FnOnce(&mut IoUring) -> UringOutcome) -> Option<Result<()>> {
    RING.try_with(|cell| {
        let mut state = cell.borrow_mut();
        if matches!(*state, RingState::Untried) {
            *state = match IoUring::new(RING_ENTRIES) {
                Ok(ring) => RingState::Ready(Box::new(ring)),
                Err(e) => {
                    if !IO_URING_WARNED.swap(true, Ordering::Relaxed) {
                        eprintln!("warning: io_uring is unavailable ({e}); batched reads are issued one at a time");
                    }
                    RingState::Unavailable
                }
            };
        }
        let RingState::Ready(ring) = &mut *state else {
            return None;
        };
        let (result, discard) = f(ring);
        if discard {
            *state = RingState::Untried;
        }
        Some(result)
    })
    .ok()
    .flatten()
}

/// Reads every piece through `ring`, keeping up to a ring's worth in flight and,
/// with a `window`, no more bytes than it allows (waiting for room only when
/// none of this call's reads is in flight). Waits for every submitted entry
/// to complete before returning, even after an error, because the kernel writes
/// into the pieces' buffers.
fn uring_read(
    ring: &mut IoUring,
    pieces: &mut [ReadPiece<'_>],
    window: Option<&ReadWindow>,
) -> UringOutcome {
    let capacity = ring.params().sq_entries() as usize;
    // When each piece in flight was put there.
    let mut started: Vec<Option<Instant>> = vec![None; pieces.len()];
    let release_all = |started: &[Option<Instant>], pieces: &[ReadPiece<'_>]| {
        if let Some(w) = window {
            for (i, _) in started.iter().enumerate().filter(|(_, s)| s.is_some()) {
                w.done(pieces[i].buf.len() as u64, None);
            }
        }
    };
    let mut completions: Vec<(u64, i32)> = Vec::with_capacity(capacity);
    let mut first_error: Option<StorageError> = None;
    let (mut next, mut in_flight) = (0, 0);
    loop {
        // After an error nothing more is put in flight.
        while first_error.is_none() && next < pieces.len() && in_flight < capacity {
            let bytes = pieces[next].buf.len() as u64;
            if let Some(w) = window {
                if in_flight == 0 {
                    w.take(bytes);
                } else if !w.try_take(bytes) {
                    break;
                }
            }
            let p = &mut pieces[next];
            let entry = opcode::Read::new(
                types::Fd(p.seg.file.as_raw_fd()),
                p.buf.as_mut_ptr(),
                p.buf.len() as u32, // at most MAX_IO_PAGES pages
            )
            .offset(p.offset)
            .build()
            .user_data(next as u64);
            // SAFETY: the buffer and the file stay alive and untouched until the
            // entry completes: this function reaps every entry it submitted
            // before it returns (but for a ring that failed, which is thrown away).
            if unsafe { ring.submission().push(&entry) }.is_err() {
                // Cannot happen: fewer entries than the ring holds are in flight,
                // and submitted ones have left the submission queue.
                if let Some(w) = window {
                    w.done(bytes, None);
                }
                if in_flight == 0 {
                    return (Err(ring_error(&p.seg.path, "submission queue full")), true);
                }
                break;
            }
            started[next] = Some(Instant::now());
            next += 1;
            in_flight += 1;
        }
        if in_flight == 0 {
            break;
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                ) => {}
            Err(e) => {
                // io_uring_enter itself failed; the ring is unusable.
                release_all(&started, pieces);
                let path = &pieces[next.saturating_sub(1)].seg.path;
                return (Err(StorageError::io(path, e)), true);
            }
        }
        completions.clear();
        completions.extend(ring.completion().map(|c| (c.user_data(), c.result())));
        for &(i, res) in &completions {
            let i = i as usize;
            in_flight -= 1;
            let began = started[i].take();
            let p = &mut pieces[i];
            let error = if res < 0 {
                Some(io::Error::from_raw_os_error(-res))
            } else if (res as usize) < p.buf.len() {
                // A short read: finish it synchronously; at the end of the file
                // this reports the short read.
                let got = res as usize;
                pread_exact(&p.seg, p.offset + got as u64, &mut p.buf[got..]).err()
            } else {
                None
            };
            if let Some(w) = window {
                let whole = error.is_none() && res as usize == p.buf.len();
                let latency = began.filter(|_| whole).map(elapsed_ns);
                w.done(p.buf.len() as u64, latency);
            }
            if let Some(e) = error {
                first_error.get_or_insert_with(|| StorageError::io(&p.seg.path, e));
            }
        }
    }
    match first_error {
        Some(e) => (Err(e), false),
        None => (Ok(()), false),
    }
}

/// Pieces cut to at most [`PIECE_BYTES`] each, for the read window (a
/// whole number of pages each, so aligned buffers stay aligned).
fn split_pieces(pieces: Vec<ReadPiece<'_>>) -> Vec<ReadPiece<'_>> {
    let mut out = Vec::with_capacity(pieces.len());
    for p in pieces {
        if p.buf.len() <= PIECE_BYTES {
            out.push(p);
            continue;
        }
        let mut offset = p.offset;
        for chunk in p.buf.chunks_mut(PIECE_BYTES) {
            let len = chunk.len() as u64;
            out.push(ReadPiece {
                seg: p.seg.clone(),
                offset,
                buf: chunk,
            });
            offset += len;
        }
    }
    out
}

fn elapsed_ns(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn ring_error(path: &Path, what: &str) -> StorageError {
    StorageError::io(path, io::Error::other(format!("io_uring: {what}")))
}

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// Page `page` of the test file `tag`: every byte derived from both, so a page
    /// read from the wrong place or file is caught.
    fn page_bytes(tag: u8, page: u64) -> Vec<u8> {
        (0..PAGE_SIZE)
            .map(|i| {
                (i as u64)
                    .wrapping_mul(31)
                    .wrapping_add(page * 7 + tag as u64) as u8
            })
            .collect()
    }

    /// An aligned buffer holding pages `first..first + n` of file `tag`.
    fn pages_buf(tag: u8, first: u64, n: usize) -> AlignedBuf {
        let mut b = AlignedBuf::new(n);
        for i in 0..n {
            b.page_mut(i)
                .copy_from_slice(&page_bytes(tag, first + i as u64));
        }
        b
    }

    fn assert_pages(buf: &[u8], tag: u8, first: u64) {
        for (i, page) in buf.chunks(PAGE_SIZE).enumerate() {
            assert!(
                page == page_bytes(tag, first + i as u64).as_slice(),
                "page {} of file {tag} differs",
                first + i as u64
            );
        }
    }

    fn seg_len(base: &Path, seg: u64) -> Option<u64> {
        std::fs::metadata(segment_path(base, seg))
            .ok()
            .map(|m| m.len())
    }

    /// Reads runs of `pages` pages from each of `firsts` of file `f` in one
    /// `read_many`, and checks them against the test file `tag`.
    fn read_many_and_check(dev: &FileDevice, f: FileId, tag: u8, firsts: &[u64], pages: usize) {
        let mut bufs: Vec<AlignedBuf> = firsts.iter().map(|_| AlignedBuf::new(pages)).collect();
        let mut reqs: Vec<ReadRequest> = bufs
            .iter_mut()
            .zip(firsts)
            .map(|(buf, &p)| ReadRequest {
                file: f,
                first_page: p,
                buf,
            })
            .collect();
        dev.read_many(&mut reqs).unwrap();
        for (buf, &p) in bufs.iter().zip(firsts) {
            assert_pages(buf, tag, p);
        }
    }

    fn devices() -> Vec<FileDevice> {
        vec![
            FileDevice::new(false),
            FileDevice::new(true),
            FileDevice::new(true).without_io_uring(),
            FileDevice::new(true).with_read_window(true),
            FileDevice::new(true)
                .without_io_uring()
                .with_read_window(true),
        ]
    }

    /// Runs longer than a window's piece, read by four threads at once through
    /// one paced device, come back whole; every piece taken from the window is
    /// given back, and the window has measured the device.
    #[test]
    fn paced_bulk_reads_return_every_page_and_free_the_window() {
        for dev in [
            FileDevice::new(true).with_read_window(true),
            FileDevice::new(true)
                .without_io_uring()
                .with_read_window(true),
        ] {
            let dir = tempfile::tempdir().unwrap();
            // Segments of 50 pages: 200-page runs cross them.
            let f = dev.create(&dir.path().join("t"), 50).unwrap();
            dev.write(f, 0, &pages_buf(3, 0, 600)).unwrap();
            let dev = &dev;
            std::thread::scope(|s| {
                for t in 0..4u64 {
                    s.spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(t);
                        for _ in 0..10 {
                            let firsts: Vec<u64> =
                                (0..3).map(|_| rng.random_range(0..400)).collect();
                            read_many_and_check(dev, f, 3, &firsts, 200);
                        }
                    });
                }
            });
            let w = dev.read_window().expect("a paced device has a window");
            assert_eq!(w.in_flight, 0, "{w:?}");
            assert!(w.probes >= 1 && w.unloaded_ns > 0, "{w:?}");
            // Requests are counted as asked, not as the pieces put in flight.
            assert_eq!(dev.stats().snapshot().read_requests, 4 * 10 * 3);
            // Past the end of the file: an error, and the window is free.
            let mut buf = AlignedBuf::new(100);
            let mut reqs = [ReadRequest {
                file: f,
                first_page: 550,
                buf: &mut buf,
            }];
            assert!(dev.read_many(&mut reqs).is_err());
            assert_eq!(dev.read_window().unwrap().in_flight, 0);
        }
        assert!(
            FileDevice::new(false)
                .with_read_window(true)
                .read_window()
                .is_none(),
            "buffered I/O is not paced"
        );
    }

    #[test]
    fn describe_says_how_files_are_opened() {
        assert_eq!(FileDevice::new(false).describe(), "real (buffered)");
        let dir = tempfile::tempdir().unwrap();
        let dev = FileDevice::new(true);
        dev.create(&dir.path().join("t"), 3).unwrap();
        // /tmp here accepts O_DIRECT; elsewhere the fallback is described.
        assert!(dev.describe().starts_with("real ("), "{}", dev.describe());
    }

    #[test]
    fn runs_across_segment_boundaries_read_back() {
        for dev in devices() {
            let dir = tempfile::tempdir().unwrap();
            let base = dir.path().join("t");
            let f = dev.create(&base, 3).unwrap();
            assert_eq!(dev.num_pages(f).unwrap(), 0);
            dev.write(f, 0, &pages_buf(1, 0, 10)).unwrap();
            assert_eq!(dev.num_pages(f).unwrap(), 10);
            let p = PAGE;
            assert_eq!(
                (0..5).map(|s| seg_len(&base, s)).collect::<Vec<_>>(),
                vec![Some(3 * p), Some(3 * p), Some(3 * p), Some(p), None]
            );
            // A run starting mid-segment, crossing two boundaries.
            let mut buf = AlignedBuf::new(6);
            dev.read(f, 2, &mut buf).unwrap();
            assert_pages(&buf, 1, 2);
            // Overwrite across the end: pages 8..13.
            dev.write(f, 8, &pages_buf(1, 8, 5)).unwrap();
            assert_eq!(dev.num_pages(f).unwrap(), 13);
            let mut all = AlignedBuf::new(13);
            dev.read(f, 0, &mut all).unwrap();
            assert_pages(&all, 1, 0);
            dev.sync(f).unwrap();
        }
    }

    #[test]
    fn reopen_sees_the_same_pages() {
        for dev in devices() {
            let dir = tempfile::tempdir().unwrap();
            let base = dir.path().join("t");
            let f = dev.create(&base, 3).unwrap();
            dev.write(f, 0, &pages_buf(2, 0, 7)).unwrap();
            dev.sync(f).unwrap();
            dev.close(f);
            assert!(dev.num_pages(f).is_err(), "a closed id is gone");
            let g = dev.open(&base, 3).unwrap();
            assert_ne!(f, g, "ids are not reused");
            assert_eq!(dev.num_pages(g).unwrap(), 7);
            assert_eq!(dev.path(g), base);
            let mut buf = AlignedBuf::new(7);
            dev.read(g, 0, &mut buf).unwrap();
            assert_pages(&buf, 2, 0);
            // Create truncates an existing file to nothing.
            let h = dev.create(&base, 3).unwrap();
            assert_eq!(dev.num_pages(h).unwrap(), 0);
            assert_eq!(seg_len(&base, 1), None);
            assert_eq!(dev.num_pages(dev.open(&base, 3).unwrap()).unwrap(), 0);
        }
    }

    #[test]
    fn open_rejects_damaged_files_naming_the_segment() {
        let dev = FileDevice::new(true);
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("t");
        let write7 = || {
            let f = dev.create(&base, 3).unwrap();
            dev.write(f, 0, &pages_buf(3, 0, 7)).unwrap();
            dev.close(f);
        };

        // The last segment is not a whole number of pages.
        write7();
        let last = segment_path(&base, 2);
        let f = OpenOptions::new().append(true).open(&last).unwrap();
        f.set_len(PAGE + 100).unwrap();
        match dev.open(&base, 3) {
            Err(StorageError::Truncated { path, bytes, .. }) => {
                assert_eq!(path, last);
                assert_eq!(bytes, PAGE + 100);
            }
            other => panic!("expected Truncated, got {:?}", other.map(|_| ())),
        }
        let msg = dev.open(&base, 3).err().unwrap().to_string();
        assert!(msg.contains("t.0002") && msg.contains("truncated"), "{msg}");

        // A middle segment shorter than a full segment.
        write7();
        let middle = segment_path(&base, 1);
        File::options()
            .write(true)
            .open(&middle)
            .unwrap()
            .set_len(2 * PAGE)
            .unwrap();
        match dev.open(&base, 3) {
            Err(StorageError::Truncated {
                path,
                bytes,
                expected_pages,
            }) => {
                assert_eq!(path, middle);
                assert_eq!(bytes, 2 * PAGE);
                assert_eq!(expected_pages, 3);
            }
            other => panic!("expected Truncated, got {:?}", other.map(|_| ())),
        }

        // A middle segment missing.
        write7();
        std::fs::remove_file(&middle).unwrap();
        let msg = dev.open(&base, 3).err().unwrap().to_string();
        assert!(msg.contains("t.0001") && msg.contains("missing"), "{msg}");

        // Opened with the wrong segment size.
        write7();
        let msg = dev.open(&base, 2).err().unwrap().to_string();
        assert!(
            msg.contains("t.0000") && msg.contains("segment size"),
            "{msg}"
        );

        // Nothing there at all.
        let msg = dev
            .open(&dir.path().join("nope"), 3)
            .err()
            .unwrap()
            .to_string();
        assert!(msg.contains("nope.0000"), "{msg}");
    }

    #[test]
    fn reads_past_the_end_are_out_of_range() {
        for dev in devices() {
            let dir = tempfile::tempdir().unwrap();
            let f = dev.create(&dir.path().join("t"), 3).unwrap();
            dev.write(f, 0, &pages_buf(4, 0, 4)).unwrap();
            let mut buf = AlignedBuf::new(2);
            for (first, bad) in [(4, 4), (3, 4), (100, 100), (u64::MAX, u64::MAX)] {
                match dev.read(f, first, &mut buf) {
                    Err(StorageError::PageOutOfRange { page, pages, .. }) => {
                        assert_eq!((page, pages), (bad, 4));
                    }
                    other => panic!("expected PageOutOfRange, got {:?}", other.map(|_| ())),
                }
            }
            let mut one = AlignedBuf::new(1);
            let mut reqs = [
                ReadRequest {
                    file: f,
                    first_page: 0,
                    buf: &mut buf,
                },
                ReadRequest {
                    file: f,
                    first_page: 4,
                    buf: &mut one,
                },
            ];
            assert!(matches!(
                dev.read_many(&mut reqs),
                Err(StorageError::PageOutOfRange { .. })
            ));
            // Nothing was counted: the batch was rejected before any I/O.
            assert_eq!(dev.stats().snapshot().read_requests, 0);
        }
    }

    #[test]
    fn read_many_returns_exactly_the_written_pages() {
        for dev in devices() {
            let dir = tempfile::tempdir().unwrap();
            let a = dev.create(&dir.path().join("a"), 3).unwrap();
            let b = dev.create(&dir.path().join("b"), 5).unwrap();
            dev.write(a, 0, &pages_buf(5, 0, 100)).unwrap();
            dev.write(b, 0, &pages_buf(6, 0, 50)).unwrap();
            let mut rng = SmallRng::seed_from_u64(7);

            // 40 random single pages of one file.
            let pages: Vec<u64> = (0..40).map(|_| rng.random_range(0..100)).collect();
            let mut bufs: Vec<AlignedBuf> = (0..40).map(|_| AlignedBuf::new(1)).collect();
            let mut reqs: Vec<ReadRequest> = bufs
                .iter_mut()
                .zip(&pages)
                .map(|(buf, &p)| ReadRequest {
                    file: a,
                    first_page: p,
                    buf,
                })
                .collect();
            dev.read_many(&mut reqs).unwrap();
            for (buf, &p) in bufs.iter().zip(&pages) {
                assert_pages(buf, 5, p);
            }
            let s = dev.stats().snapshot();
            assert_eq!((s.read_requests, s.pages_read), (40, 40));

            // 150 runs of 1..=7 pages in two files: more pieces than the ring holds,
            // most crossing a segment boundary.
            let runs: Vec<(FileId, u8, u64, usize)> = (0..150)
                .map(|_| {
                    let n = rng.random_range(1..=7);
                    if rng.random_bool(0.5) {
                        (a, 5, rng.random_range(0..=100 - n as u64), n)
                    } else {
                        (b, 6, rng.random_range(0..=50 - n as u64), n)
                    }
                })
                .collect();
            let mut bufs: Vec<AlignedBuf> = runs.iter().map(|r| AlignedBuf::new(r.3)).collect();
            let mut reqs: Vec<ReadRequest> = bufs
                .iter_mut()
                .zip(&runs)
                .map(|(buf, r)| ReadRequest {
                    file: r.0,
                    first_page: r.2,
                    buf,
                })
                .collect();
            dev.read_many(&mut reqs).unwrap();
            for (buf, r) in bufs.iter().zip(&runs) {
                assert_pages(buf, r.1, r.2);
            }
            let s = dev.stats().snapshot();
            assert_eq!(s.read_requests, 190, "one count per request, not per piece");
            assert_eq!(
                s.pages_read,
                40 + runs.iter().map(|r| r.3 as u64).sum::<u64>()
            );
        }
    }

    #[test]
    fn counters_are_exact() {
        for dev in devices() {
            let dir = tempfile::tempdir().unwrap();
            let a = dev.create(&dir.path().join("a"), 3).unwrap();
            let b = dev.create(&dir.path().join("b"), 3).unwrap();
            dev.write(a, 0, &pages_buf(7, 0, 10)).unwrap(); // 1 request, 10 pages
            dev.write(b, 0, &pages_buf(8, 0, 2)).unwrap(); // 1 request, 2 pages
            dev.write(b, 2, &pages_buf(8, 2, 1)).unwrap(); // 1 request, 1 page
            let mut buf = AlignedBuf::new(4);
            dev.read(a, 0, &mut buf[..2 * PAGE_SIZE]).unwrap(); // random (first read)
            dev.read(a, 2, &mut buf[..3 * PAGE_SIZE]).unwrap(); // sequential, crosses a segment
            dev.read(a, 6, &mut buf[..PAGE_SIZE]).unwrap(); // random (skips page 5)
            let (mut x, mut y, mut z) =
                (AlignedBuf::new(1), AlignedBuf::new(2), AlignedBuf::new(1));
            let mut reqs = [
                ReadRequest {
                    file: a,
                    first_page: 7,
                    buf: &mut x,
                }, // sequential
                ReadRequest {
                    file: a,
                    first_page: 8,
                    buf: &mut y,
                }, // sequential
                ReadRequest {
                    file: a,
                    first_page: 0,
                    buf: &mut z,
                }, // random
            ];
            dev.read_many(&mut reqs).unwrap();
            dev.read(b, 1, &mut buf[..PAGE_SIZE]).unwrap(); // random: another file
            dev.read(a, 1, &mut buf[..PAGE_SIZE]).unwrap(); // random: back to a
            dev.stats().forget_position();
            dev.read(a, 2, &mut buf[..PAGE_SIZE]).unwrap(); // random: position forgotten
            dev.read(a, 3, &mut buf[..0]).unwrap(); // empty: not a request
            let s = dev.stats().snapshot();
            assert_eq!(
                s,
                super::super::IoCounters {
                    read_requests: 9,
                    pages_read: 2 + 3 + 1 + 1 + 2 + 1 + 1 + 1 + 1,
                    sequential_reads: 3,
                    random_reads: 6,
                    write_requests: 3,
                    pages_written: 13,
                    modeled_ns: 0,
                    // 1 page: 6 reads; 2 pages: 2; 3 pages: 1 (the 3–4 class)
                    read_sizes: [6, 2, 1, 0, 0, 0, 0, 0, 0],
                }
            );
        }
    }

    #[test]
    fn truncate_removes_and_shortens_segments() {
        for dev in devices() {
            let dir = tempfile::tempdir().unwrap();
            let base = dir.path().join("t");
            let f = dev.create(&base, 3).unwrap();
            dev.write(f, 0, &pages_buf(9, 0, 10)).unwrap();
            dev.truncate(f, 4).unwrap();
            assert_eq!(dev.num_pages(f).unwrap(), 4);
            assert_eq!(
                (0..4).map(|s| seg_len(&base, s)).collect::<Vec<_>>(),
                vec![Some(3 * PAGE), Some(PAGE), None, None]
            );
            let mut buf = AlignedBuf::new(4);
            dev.read(f, 0, &mut buf).unwrap();
            assert_pages(&buf, 9, 0);
            assert!(matches!(
                dev.read(f, 4, &mut buf[..PAGE_SIZE]),
                Err(StorageError::PageOutOfRange { .. })
            ));
            assert!(dev.truncate(f, 5).is_err(), "truncate does not grow");
            // Exactly at a segment boundary: the last kept segment is full.
            dev.truncate(f, 3).unwrap();
            assert_eq!(seg_len(&base, 1), None);
            // And grows again by writing.
            dev.write(f, 3, &pages_buf(9, 3, 2)).unwrap();
            assert_eq!(dev.num_pages(dev.open(&base, 3).unwrap()).unwrap(), 5);
            dev.truncate(f, 0).unwrap();
            assert_eq!(seg_len(&base, 0), Some(0));
            assert_eq!(seg_len(&base, 1), None);
            dev.sync(f).unwrap();
            assert_eq!(dev.num_pages(dev.open(&base, 3).unwrap()).unwrap(), 0);
        }
    }

    #[test]
    fn writing_past_the_end_leaves_a_valid_file() {
        for dev in devices() {
            let dir = tempfile::tempdir().unwrap();
            let base = dir.path().join("t");
            let f = dev.create(&base, 3).unwrap();
            dev.write(f, 0, &pages_buf(1, 0, 1)).unwrap();
            dev.write(f, 7, &pages_buf(1, 7, 1)).unwrap();
            assert_eq!(dev.num_pages(f).unwrap(), 8);
            let g = dev.open(&base, 3).unwrap();
            assert_eq!(dev.num_pages(g).unwrap(), 8);
            let mut buf = AlignedBuf::new(8);
            dev.read(g, 0, &mut buf).unwrap();
            assert_pages(buf.page(0), 1, 0);
            assert_pages(buf.page(7), 1, 7);
            assert!(
                buf[PAGE_SIZE..7 * PAGE_SIZE].iter().all(|&b| b == 0),
                "skipped pages read as zeros"
            );
        }
    }

    #[test]
    fn a_file_that_shrank_underneath_is_an_error_not_a_panic() {
        for dev in devices() {
            let dir = tempfile::tempdir().unwrap();
            let base = dir.path().join("t");
            let f = dev.create(&base, 3).unwrap();
            dev.write(f, 0, &pages_buf(1, 0, 6)).unwrap();
            // Someone else cuts segment 1 down to one page.
            File::options()
                .write(true)
                .open(segment_path(&base, 1))
                .unwrap()
                .set_len(PAGE)
                .unwrap();
            let mut buf = AlignedBuf::new(2);
            let msg = dev.read(f, 3, &mut buf).err().unwrap().to_string();
            assert!(
                msg.contains("t.0001") && msg.contains("short read"),
                "{msg}"
            );
            let (mut x, mut y) = (AlignedBuf::new(1), AlignedBuf::new(1));
            let mut reqs = [
                ReadRequest {
                    file: f,
                    first_page: 0,
                    buf: &mut x,
                },
                ReadRequest {
                    file: f,
                    first_page: 5,
                    buf: &mut y,
                },
            ];
            let msg = dev.read_many(&mut reqs).err().unwrap().to_string();
            assert!(
                msg.contains("t.0001") && msg.contains("short read"),
                "{msg}"
            );
            assert_pages(&x, 1, 0);
        }
    }

    #[test]
    fn unaligned_buffers_work_with_o_direct() {
        let dev = FileDevice::new(true);
        let dir = tempfile::tempdir().unwrap();
        let f = dev.create(&dir.path().join("t"), 3).unwrap();
        let mut raw = vec![0u8; 3 * PAGE_SIZE + 1];
        let start = if (raw.as_ptr() as usize).is_multiple_of(ALIGN) {
            1
        } else {
            0
        };
        raw[start..start + 3 * PAGE_SIZE].copy_from_slice(&pages_buf(2, 0, 3));
        dev.write(f, 0, &raw[start..start + 3 * PAGE_SIZE]).unwrap();
        raw.fill(0);
        dev.read(f, 0, &mut raw[start..start + 3 * PAGE_SIZE])
            .unwrap();
        assert_pages(&raw[start..start + 3 * PAGE_SIZE], 2, 0);
        let (head, tail) = raw[start..start + 3 * PAGE_SIZE].split_at_mut(PAGE_SIZE);
        let mut reqs = [
            ReadRequest {
                file: f,
                first_page: 2,
                buf: head,
            },
            ReadRequest {
                file: f,
                first_page: 0,
                buf: tail,
            },
        ];
        dev.read_many(&mut reqs).unwrap();
        assert_pages(&raw[start..start + PAGE_SIZE], 2, 2);
        assert_pages(&raw[start + PAGE_SIZE..start + 3 * PAGE_SIZE], 2, 0);
        // A buffer that is not whole pages is refused, naming the file.
        let msg = dev.read(f, 0, &mut raw[..100]).err().unwrap().to_string();
        assert!(msg.contains("whole number"), "{msg}");
    }

    #[test]
    fn concurrent_readers_and_writers() {
        let dev = Arc::new(FileDevice::new(true));
        let dir = tempfile::tempdir().unwrap();
        let f = dev.create(&dir.path().join("t"), 4).unwrap();
        dev.write(f, 0, &pages_buf(1, 0, 64)).unwrap();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let dev = dev.clone();
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(t);
                    for _ in 0..50 {
                        // Rewrite a page with the same bytes, and read a batch.
                        let p = rng.random_range(0..64);
                        dev.write(f, p, &pages_buf(1, p, 1)).unwrap();
                        let pages: Vec<u64> = (0..8).map(|_| rng.random_range(0..64)).collect();
                        read_many_and_check(&dev, f, 1, &pages, 1);
                    }
                });
            }
        });
        assert_eq!(dev.stats().snapshot().read_requests, 4 * 50 * 8);
    }

    mod model {
        //! A random sequence of writes, truncates and reopens against an in-memory
        //! model of the file.
        use crate::util::proptest_cases;
        use proptest::prelude::*;

        use super::*;

        #[derive(Clone, Debug)]
        enum Op {
            Write { first: u64, pages: usize, tag: u8 },
            Truncate(u64),
            Reopen,
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                4 => (0u64..20, 1usize..8, any::<u8>()).prop_map(|(first, pages, tag)| Op::Write { first, pages, tag }),
                1 => (0u64..20).prop_map(Op::Truncate),
                1 => Just(Op::Reopen),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(proptest_cases(32)))]
            #[test]
            fn device_matches_a_model(ops in proptest::collection::vec(op(), 1..25), direct in any::<bool>()) {
                let dev = FileDevice::new(direct);
                let dir = tempfile::tempdir().unwrap();
                let base = dir.path().join("t");
                let mut f = dev.create(&base, 3).unwrap();
                // Expected content of each page (None: never written, reads zeros).
                let mut model: Vec<Option<(u8, u64)>> = Vec::new();
                for op in ops {
                    match op {
                        Op::Write { first, pages, tag } => {
                            dev.write(f, first, &pages_buf(tag, first, pages)).unwrap();
                            let end = first as usize + pages;
                            if model.len() < end {
                                model.resize(end, None);
                            }
                            for p in first..end as u64 {
                                model[p as usize] = Some((tag, first));
                            }
                        }
                        Op::Truncate(n) => {
                            let r = dev.truncate(f, n);
                            prop_assert_eq!(r.is_ok(), n as usize <= model.len());
                            model.truncate(n as usize);
                        }
                        Op::Reopen => {
                            dev.close(f);
                            f = dev.open(&base, 3).unwrap();
                        }
                    }
                    prop_assert_eq!(dev.num_pages(f).unwrap(), model.len() as u64);
                }
                let mut buf = AlignedBuf::new(model.len());
                dev.read(f, 0, &mut buf[..model.len() * PAGE_SIZE]).unwrap();
                for (p, m) in model.iter().enumerate() {
                    let got = &buf[p * PAGE_SIZE..(p + 1) * PAGE_SIZE];
                    match m {
                        // pages_buf(tag, first, _) fills page p with page_bytes(tag, p).
                        Some((tag, _)) => prop_assert!(got == page_bytes(*tag, p as u64).as_slice()),
                        None => prop_assert!(got.iter().all(|&b| b == 0)),
                    }
                }
            }
        }
    }
}
