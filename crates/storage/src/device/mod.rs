//! The device layer: one interface for reading and writing runs of pages of
//! paged files, whatever the medium.
//!
//! * [`FileDevice`] is the real one: files on a filesystem, opened with `O_DIRECT`
//!   and aligned buffers so that a run is really cold without dropping the OS page
//!   cache (with a warning and a buffered fallback where the filesystem refuses
//!   `O_DIRECT`). Several requests can be in flight at once ([`Device::read_many`],
//!   io_uring).
//! * [`ModeledDevice`] wraps any device and charges every request by a
//!   [`DeviceProfile`] (`hdd`, `ssd`, or custom), accumulating modeled time
//!   deterministically and, optionally, really waiting.
//!   Its bulk reads are paced by a [`ReadWindow`] learned from the device's
//!   latencies, so that point reads do not queue behind scans.
//! * [`FaultDevice`] wraps any device and fails or "crashes" at a request chosen by
//!   count ([`FaultPlan`]), for deterministic crash and I/O-error tests.
//! * [`OverlayDevice`] wraps any device, serves some pages from memory and
//!   writes none of the files it opens: a read-only open's view of a log
//!   redone in memory.
//!
//! A paged file is a flat array of 8 KiB pages; on disk it is stored as segments of
//! a fixed number of pages (`<path>.0000`, `<path>.0001`, ...) so the cold tier can
//! ship a table segment by segment. Requests that cross a segment boundary are
//! split by the device.
//!
//! Every device counts what it does in [`IoStats`]: requests, pages, bytes,
//! sequential vs random (a read is sequential when it starts at the page right after
//! the previous read of the same device ended, in the same file), modeled time.

/// The [`Device`] methods a wrapping device (modeled, fault-injecting) hands
/// to the device it wraps unchanged: creating, opening and locating files. It
/// writes them once for every wrapper; the wrapper writes the I/O it changes.
macro_rules! forward_files_to {
    ($inner:ident) => {
        fn create(&self, path: &Path, segment_pages: u64) -> Result<FileId> {
            self.$inner.create(path, segment_pages)
        }
        fn open(&self, path: &Path, segment_pages: u64) -> Result<FileId> {
            self.$inner.open(path, segment_pages)
        }
        fn close(&self, file: FileId) {
            self.$inner.close(file)
        }
        fn path(&self, file: FileId) -> PathBuf {
            self.$inner.path(file)
        }
        fn locate(&self, file: FileId, page: u64) -> (PathBuf, u64) {
            self.$inner.locate(file, page)
        }
        fn num_pages(&self, file: FileId) -> Result<u64> {
            self.$inner.num_pages(file)
        }
        fn open_remote(
            &self,
            path: &Path,
        ) -> Result<Option<std::sync::Arc<dyn $crate::device::RemoteFile>>> {
            self.$inner.open_remote(path)
        }
    };
}

pub mod fault;
mod file;
mod file_id;
pub mod interface;
pub mod layer;
mod modeled;
pub mod overlay;
mod profile;
pub mod read_window;
pub mod remote;
pub mod snapshot;
pub mod trace;

pub use fault::{FaultDevice, FaultInjector, FaultPlan};
pub use file::FileDevice;
pub use file_id::FileId;
pub(crate) use interface::add_thread_unwaited_ns;
pub use interface::{
    ALIGN, AlignedBuf, Device, IoCounters, IoStats, READ_SIZE_BUCKETS, READ_SIZE_LABELS,
    ReadRequest, read_size_bucket, segment_path, thread_unwaited_ns,
};
pub use layer::{COLD_MANIFEST_SUFFIX, DeviceLayer, cold_manifest_path, is_cold};
pub use modeled::ModeledDevice;
pub use overlay::OverlayDevice;
pub use profile::{DeviceProfile, ProfileKind};
pub use read_window::{ReadWindow, WindowCounters};
pub use remote::RemoteFile;
pub use snapshot::SnapshotDevice;
pub use trace::{IoKind, Trace, TraceEvent, TraceRecorder};

pub use crate::page::PAGE_SIZE;
