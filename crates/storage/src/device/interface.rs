//! The device interface every medium implements: [`Device`], the files it
//! holds ([`FileId`]), read requests and aligned buffers ([`AlignedBuf`]),
//! and its I/O statistics ([`IoStats`], [`IoCounters`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::error::Result;
use crate::page::PAGE_SIZE;

use super::file_id::FileId;
use super::trace::TraceRecorder;

/// One read of `buf.len() / PAGE_SIZE` contiguous pages starting at `first_page`.
/// `buf` must be aligned to [`ALIGN`] (use [`AlignedBuf`]).
pub struct ReadRequest<'a> {
    pub file: FileId,
    pub first_page: u64,
    pub buf: &'a mut [u8],
}

/// Alignment required for buffers handed to a device (O_DIRECT).
pub const ALIGN: usize = 4096;

/// The interface every storage medium implements. All methods take `&self`: a
/// device is shared by every thread of the process.
pub trait Device: Send + Sync {
    /// Creates (or truncates to empty) a paged file stored as segments of
    /// `segment_pages` pages, and opens it.
    fn create(&self, path: &Path, segment_pages: u64) -> Result<FileId>;
    /// Opens an existing paged file. Fails naming the path if a segment is missing
    /// or has a size that is not a whole number of pages.
    fn open(&self, path: &Path, segment_pages: u64) -> Result<FileId>;
    /// Forgets an open file (its pages stay on disk).
    fn close(&self, file: FileId);
    /// Path of the file's first segment's base name, for error messages.
    fn path(&self, file: FileId) -> PathBuf;
    /// Where page `page` of `file` lives on disk: its segment file and the page's
    /// index within that segment (for error messages a user can act on).
    fn locate(&self, file: FileId, page: u64) -> (PathBuf, u64);
    /// Number of pages in the file.
    fn num_pages(&self, file: FileId) -> Result<u64>;
    /// Reads `buf.len() / PAGE_SIZE` pages starting at `first_page` in one request.
    fn read(&self, file: FileId, first_page: u64, buf: &mut [u8]) -> Result<()>;
    /// Reads several runs with all of them in flight at once where the device can
    /// (the default issues them one after another).
    fn read_many(&self, reqs: &mut [ReadRequest<'_>]) -> Result<()> {
        for r in reqs.iter_mut() {
            self.read(r.file, r.first_page, r.buf)?;
        }
        Ok(())
    }
    /// Writes `buf.len() / PAGE_SIZE` pages starting at `first_page` (the file grows
    /// as needed; writing past the end leaves no holes the caller did not write).
    fn write(&self, file: FileId, first_page: u64, buf: &[u8]) -> Result<()>;
    /// Shrinks the file to `pages` pages.
    fn truncate(&self, file: FileId, pages: u64) -> Result<()>;
    /// Makes every write to the file durable (fsync of each segment written to).
    fn sync(&self, file: FileId) -> Result<()>;
    /// Accounts a read this device did not serve: `pages` pages from
    /// `first_page` of a file that is not a paged file it holds open (a
    /// column file, which the Parquet reader reads on its own; `file` is an
    /// id of the reader's choosing, [`FileId::external`]). It is counted in
    /// the stats like a read of the device's own, and a modeled device
    /// charges it as one, so a scan of column files costs on a modeled disk
    /// what a scan of heap pages does.
    fn charge_read(&self, file: FileId, first_page: u64, pages: u64) {
        if pages > 0 {
            self.stats().record_read(file, first_page, pages);
        }
    }
    /// The byte file at `path` (a column file, not a paged file), if this
    /// device holds it away from the local disk (the cold tier: the file has
    /// a manifest `<path>.cold.json` naming its object), to be read by byte
    /// ranges; `None` if it is a local file, read from the filesystem. A
    /// device that wraps another hands the question on.
    fn open_remote(&self, path: &Path) -> Result<Option<std::sync::Arc<dyn super::RemoteFile>>> {
        let _ = path;
        Ok(None)
    }
    /// The device's counters.
    fn stats(&self) -> &IoStats;
    /// Short description for reports, e.g. `real (O_DIRECT)` or `hdd (modeled)`.
    fn describe(&self) -> String;
    /// How many requests the device serves at once: what an operator that can
    /// put several requests in flight should aim for (1 for a disk head).
    fn parallelism(&self) -> usize {
        1
    }
    /// The device's I/O trace recorder, if it can record one (modeled devices:
    /// see [`trace`]).
    fn trace(&self) -> Option<&TraceRecorder> {
        None
    }
}

/// Buffers at least this large are anonymous mappings rather than heap memory:
/// the kernel zeroes a mapping a page at a time as it is first touched, where
/// an aligned heap allocation is zeroed whole up front. A read-ahead stream's
/// buffers are sized for its largest request and mostly filled by smaller ones
/// (a page-ordered Smooth Scan's runs), so zeroing them up front cost a scan
/// of 10,000 rows 4 ms before its first read.
const MAP_THRESHOLD: usize = 128 << 10;

/// A heap-allocated, [`ALIGN`]-aligned, zeroed byte buffer of whole pages.
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// The buffer is plain owned memory.
unsafe impl Send for AlignedBuf {}
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `pages` pages. Large buffers (a buffer pool's frames) are
    /// anonymous mappings, zeroed lazily by the kernel page by page as they are
    /// first touched, so opening a database with a big pool costs no time.
    pub fn new(pages: usize) -> AlignedBuf {
        Self::allocate(pages, false)
    }

    /// [`AlignedBuf::new`] backed by 2 MiB pages where the kernel has them
    /// (transparent huge pages, asked for with `madvise`; a kernel that gives
    /// none leaves 4 KiB pages and nothing else changes). For a buffer pool:
    /// a lookup's reads land on random frames, each a TLB miss when the pool
    /// is large, and under virtualization a miss walks two page tables. On the
    /// machine the index-cache figures ran on, a chain of dependent loads over
    /// 512 MiB took 390 ns a load with 4 KiB pages and 213 ns with 2 MiB pages
    /// (64 MiB: 250 and 185 ns).
    pub fn with_huge_pages(pages: usize) -> AlignedBuf {
        Self::allocate(pages, true)
    }

    /// The address of the first byte (for prefetch hints; no reference to
    /// the bytes is made).
    pub fn base(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    fn allocate(pages: usize, huge: bool) -> AlignedBuf {
        let len = pages.max(1) * PAGE_SIZE;
        if len >= MAP_THRESHOLD {
            // SAFETY: an anonymous private mapping with no address hint.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                std::alloc::handle_alloc_error(
                    std::alloc::Layout::from_size_align(len, ALIGN).expect("layout"),
                );
            }
            if huge {
                // SAFETY: advice on the mapping just made; failure is harmless.
                unsafe { libc::madvise(p, len, libc::MADV_HUGEPAGE) };
            }
            let ptr = std::ptr::NonNull::new(p.cast::<u8>()).expect("mmap returned null");
            return AlignedBuf { ptr, len };
        }
        let layout = std::alloc::Layout::from_size_align(len, ALIGN).expect("layout");
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr =
            std::ptr::NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len }
    }
    pub fn pages(&self) -> usize {
        self.len / PAGE_SIZE
    }
    /// Page `i` of the buffer.
    pub fn page(&self, i: usize) -> &[u8] {
        &self[i * PAGE_SIZE..(i + 1) * PAGE_SIZE]
    }
    pub fn page_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self[i * PAGE_SIZE..(i + 1) * PAGE_SIZE]
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.len >= MAP_THRESHOLD {
            // SAFETY: mapped in `new` with this length.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
            return;
        }
        let layout = std::alloc::Layout::from_size_align(self.len, ALIGN).expect("layout");
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) }
    }
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes for the buffer's lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and we hold &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

/// Counters of one device. Cheap atomics; read a consistent-enough view with
/// [`IoStats::snapshot`] and subtract two snapshots to get what an operator did.
#[derive(Default)]
pub struct IoStats {
    read_requests: AtomicU64,
    pages_read: AtomicU64,
    sequential_reads: AtomicU64,
    random_reads: AtomicU64,
    write_requests: AtomicU64,
    pages_written: AtomicU64,
    modeled_ns: AtomicU64,
    /// Read requests by size ([`read_size_bucket`]): the Smooth Scan paper's
    /// Table 3.
    read_sizes: [AtomicU64; READ_SIZE_BUCKETS],
    /// Where the previous read ended: (file, next page). Decides sequential vs random.
    last_read_end: Mutex<Option<(FileId, u64)>>,
    /// How many times [`IoStats::forget_position`] was called, so a device that
    /// models a head position of its own (the `hdd` profile) forgets it too.
    position_epoch: AtomicU64,
}

impl IoStats {
    /// Records a read request of `pages` pages starting at `first`; returns whether it
    /// was sequential (started where the previous read ended).
    pub fn record_read(&self, file: FileId, first: u64, pages: u64) -> bool {
        let sequential = {
            let mut last = self.last_read_end.lock();
            let seq = *last == Some((file, first));
            *last = Some((file, first + pages));
            seq
        };
        self.read_requests.fetch_add(1, Ordering::Relaxed);
        self.pages_read.fetch_add(pages, Ordering::Relaxed);
        self.read_sizes[read_size_bucket(pages)].fetch_add(1, Ordering::Relaxed);
        if sequential {
            self.sequential_reads.fetch_add(1, Ordering::Relaxed);
        } else {
            self.random_reads.fetch_add(1, Ordering::Relaxed);
        }
        sequential
    }

    pub fn record_write(&self, pages: u64) {
        self.write_requests.fetch_add(1, Ordering::Relaxed);
        self.pages_written.fetch_add(pages, Ordering::Relaxed);
    }

    pub fn add_modeled_ns(&self, ns: u64) {
        self.modeled_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Forgets where the previous read ended, so the next read counts as random
    /// (e.g. between two queries, as the head has moved elsewhere).
    pub fn forget_position(&self) {
        *self.last_read_end.lock() = None;
        self.position_epoch.fetch_add(1, Ordering::Relaxed);
    }

    /// Changes every time [`IoStats::forget_position`] is called.
    pub fn position_epoch(&self) -> u64 {
        self.position_epoch.load(Ordering::Relaxed)
    }

    pub fn snapshot(&self) -> IoCounters {
        IoCounters {
            read_requests: self.read_requests.load(Ordering::Relaxed),
            pages_read: self.pages_read.load(Ordering::Relaxed),
            sequential_reads: self.sequential_reads.load(Ordering::Relaxed),
            random_reads: self.random_reads.load(Ordering::Relaxed),
            write_requests: self.write_requests.load(Ordering::Relaxed),
            pages_written: self.pages_written.load(Ordering::Relaxed),
            modeled_ns: self.modeled_ns.load(Ordering::Relaxed),
            read_sizes: std::array::from_fn(|i| self.read_sizes[i].load(Ordering::Relaxed)),
        }
    }
}

/// How many size classes [`IoCounters::read_sizes`] has.
pub const READ_SIZE_BUCKETS: usize = 9;

/// The size classes of read requests, by their largest size: 8 KiB (1 page),
/// 16 KiB (2), 32 KiB (3–4), 64 KiB (5–8), 128 KiB, 256 KiB, 512 KiB, 1 MiB
/// (65–128 pages), and larger than 1 MiB.
pub const READ_SIZE_LABELS: [&str; READ_SIZE_BUCKETS] = [
    "8KiB", "16KiB", "32KiB", "64KiB", "128KiB", "256KiB", "512KiB", "1MiB", ">1MiB",
];

/// The size class of a read of `pages` pages: the smallest `b` with
/// `pages <= 2^b`, the last class taking everything above 128 pages (an empty
/// read, which devices do not count as a request, would go to the first).
pub fn read_size_bucket(pages: u64) -> usize {
    let b = pages.max(1).next_power_of_two().trailing_zeros() as usize;
    b.min(READ_SIZE_BUCKETS - 1)
}

/// A plain copy of [`IoStats`]; `after - before` is what happened in between.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IoCounters {
    pub read_requests: u64,
    pub pages_read: u64,
    pub sequential_reads: u64,
    pub random_reads: u64,
    pub write_requests: u64,
    pub pages_written: u64,
    pub modeled_ns: u64,
    /// Read requests per size class ([`read_size_bucket`], labels in
    /// [`READ_SIZE_LABELS`]); they sum to `read_requests`.
    pub read_sizes: [u64; READ_SIZE_BUCKETS],
}

impl IoCounters {
    pub fn bytes_read(&self) -> u64 {
        self.pages_read * PAGE_SIZE as u64
    }
    pub fn bytes_written(&self) -> u64 {
        self.pages_written * PAGE_SIZE as u64
    }
    pub fn modeled_ms(&self) -> f64 {
        self.modeled_ns as f64 / 1e6
    }
}

impl std::ops::Sub for IoCounters {
    type Output = IoCounters;
    fn sub(self, o: IoCounters) -> IoCounters {
        IoCounters {
            read_requests: self.read_requests - o.read_requests,
            pages_read: self.pages_read - o.pages_read,
            sequential_reads: self.sequential_reads - o.sequential_reads,
            random_reads: self.random_reads - o.random_reads,
            write_requests: self.write_requests - o.write_requests,
            pages_written: self.pages_written - o.pages_written,
            modeled_ns: self.modeled_ns - o.modeled_ns,
            read_sizes: std::array::from_fn(|i| self.read_sizes[i] - o.read_sizes[i]),
        }
    }
}

impl std::fmt::Display for IoCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "reads: {} requests ({} sequential, {} random), {} pages, {:.1} MiB; writes: {} requests, {} pages; modeled {:.3} ms",
            self.read_requests,
            self.sequential_reads,
            self.random_reads,
            self.pages_read,
            self.bytes_read() as f64 / (1 << 20) as f64,
            self.write_requests,
            self.pages_written,
            self.modeled_ms()
        )
    }
}

/// Path of segment `seg` of a paged file whose base path is `base`.
pub fn segment_path(base: &Path, seg: u64) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(format!(".{seg:04}"));
    PathBuf::from(s)
}

thread_local! {
    static UNWAITED_NS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Modeled device time of this thread's reads that no thread waited for
/// (a modeled device charges its time without sleeping it, unless its
/// profile's wait scale says so), in ns since the thread started. What an
/// operation on this thread really cost on a modeled device is its wall time
/// plus the growth of this (`btree/cache/governor.rs` times lookups so).
pub fn thread_unwaited_ns() -> u64 {
    UNWAITED_NS.with(|c| c.get())
}

/// Charges `ns` of modeled time that was not waited to this thread.
pub(crate) fn add_thread_unwaited_ns(ns: u64) {
    UNWAITED_NS.with(|c| c.set(c.get().saturating_add(ns)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_with_and_without_huge_pages_are_zeroed_aligned_and_whole() {
        // Below and above the mapping threshold, and over 2 MiB so that a
        // huge page can back part of it.
        for pages in [1, 16, 300] {
            for mut b in [AlignedBuf::new(pages), AlignedBuf::with_huge_pages(pages)] {
                assert_eq!(b.len(), pages * PAGE_SIZE);
                assert_eq!(b.as_ptr() as usize % ALIGN, 0);
                assert!(b.iter().all(|&x| x == 0));
                b.page_mut(pages - 1)[PAGE_SIZE - 1] = 7;
                assert_eq!(b.page(pages - 1)[PAGE_SIZE - 1], 7);
            }
        }
    }

    #[test]
    fn read_size_classes_are_powers_of_two_pages() {
        let classes: Vec<usize> = [
            1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 128, 129, 10_000,
        ]
        .iter()
        .map(|&p| read_size_bucket(p))
        .collect();
        assert_eq!(classes, [0, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8]);
        assert_eq!(READ_SIZE_LABELS[4], "128KiB");
        assert_eq!(16 * PAGE_SIZE, 128 << 10, "16 pages are 128 KiB");
    }

    #[test]
    fn the_read_size_histogram_counts_exactly_the_requests_recorded() {
        let stats = IoStats::default();
        let f = FileId(1);
        let sizes = [1u64, 1, 2, 3, 4, 16, 16, 16, 100, 128, 129, 1000];
        let mut at = 0;
        for &n in &sizes {
            stats.record_read(f, at, n);
            at += n + 1;
        }
        stats.record_write(64); // writes are not in it
        let before = stats.snapshot();
        assert_eq!(before.read_sizes, [2, 1, 2, 0, 3, 0, 0, 2, 2]);
        assert_eq!(before.read_sizes.iter().sum::<u64>(), before.read_requests);
        assert_eq!(before.read_requests, sizes.len() as u64);
        // A delta holds only what happened in between.
        stats.record_read(f, 0, 8);
        stats.record_read(f, 8, 8);
        let d = stats.snapshot() - before;
        assert_eq!(d.read_sizes, [0, 0, 0, 2, 0, 0, 0, 0, 0]);
        assert_eq!(d.read_requests, 2);
        assert_eq!(d.bytes_read(), 16 * PAGE_SIZE as u64);
    }
}
