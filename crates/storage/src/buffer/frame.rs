//! The buffer pool's frames and its table: a frame's bytes, pin count, usage
//! count and dirty state; the runs write-back gathers; and the page table and
//! eviction state one mutex guards.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering};

use parking_lot::{RwLock, RwLockWriteGuard};

use crate::device::{AlignedBuf, FileId};
use crate::page::{self, PAGE_SIZE};

use super::page_table::PageTable;

pub(super) type Key = (FileId, u64);
/// The pages a write transaction changed, with their images before it.
pub(super) type Captured = HashMap<Key, Option<Box<[u8]>>>;

/// One frame's 8 KiB inside the pool's region. Each frame points at its own page
/// of the region, and the frame's lock decides who may read or write it.
pub(super) struct FrameBytes(pub(super) std::ptr::NonNull<u8>);

// SAFETY: the bytes belong to the pool's region, which outlives every frame, and
// are only reached through the frame's RwLock.
unsafe impl Send for FrameBytes {}
unsafe impl Sync for FrameBytes {}

impl Deref for FrameBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: a distinct PAGE_SIZE slice of the live region (see above).
        unsafe { std::slice::from_raw_parts(self.0.as_ptr(), PAGE_SIZE) }
    }
}

impl DerefMut for FrameBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above; `&mut self` comes from the frame's write lock.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_ptr(), PAGE_SIZE) }
    }
}

pub(super) struct FrameData {
    pub(super) buf: FrameBytes,
    /// The page this frame holds, once loaded.
    pub(super) tag: Option<Key>,
    /// Counts the exclusive latches taken on the frame (a load, a write, a
    /// cache write: [`Frame::write_data`]). A reader that saw `v` under its
    /// shared latch and then, taking the exclusive latch itself, sees `v + 1`
    /// knows that no byte of the frame changed in between.
    pub(super) version: u64,
}

/// One cache line: a pin touches the latch, the pin count, the use count
/// and the tag, so a frame that straddled two lines would cost a pin of a
/// resident page a second cache miss (56-byte frames did, most of them).
#[repr(align(64))]
pub(super) struct Frame {
    pub(super) data: RwLock<FrameData>,
    pub(super) pins: AtomicU32,
    /// How often the frame was pinned lately, up to [`MAX_USAGE`]: each pin
    /// adds one, each aging halves it ([`BufferPool::find_victim`]). Changed
    /// only under the table's lock.
    pub(super) usage: AtomicU8,
    /// The pool's miss count when the frame's page was loaded: of frames
    /// pinned as often, the one loaded longest ago goes first.
    pub(super) loaded: AtomicU32,
    /// Loaded by a read-ahead and not pinned since. Until its reader pins it
    /// (or the counts age) the eviction passes it over: a new page starts
    /// with no use, below every page used before, so a run read ahead into
    /// a pool of used pages would evict its own first pages while its last
    /// ones came in, and the scan would read them again. The reader's first
    /// pin is the use the read-ahead anticipated and does not count again, so
    /// a page a scan has read once stands where any page read once does.
    pub(super) ahead: AtomicBool,
    pub(super) dirty: AtomicBool,
}
const _: () = assert!(
    std::mem::size_of::<Frame>() == 64,
    "a frame is one cache line"
);

/// The most pins a frame's count holds: past this, more use tells nothing
/// the aging would not soon take away (with 15, four halvings forget it).
pub(super) const MAX_USAGE: u8 = 15;
/// Frames drawn for each eviction.
pub(super) const SAMPLES: usize = 16;
/// Evictions, in frames' worth, between two halvings of every count.
pub(super) const AGING_TURNS: usize = 16;

impl Frame {
    /// Counts one use (the table's lock orders every change of it), but not
    /// the first pin of a page read ahead.
    pub(super) fn used(&self) {
        if self.ahead.load(Ordering::Relaxed) {
            self.ahead.store(false, Ordering::Relaxed);
            return;
        }
        let u = self.usage.load(Ordering::Relaxed);
        if u < MAX_USAGE {
            self.usage.store(u + 1, Ordering::Relaxed);
        }
    }
}

impl Frame {
    /// The frame's exclusive latch, counted in its version: every exclusive
    /// latch is taken through here or [`Frame::try_write_data`].
    pub(super) fn write_data(&self) -> RwLockWriteGuard<'_, FrameData> {
        let mut w = self.data.write();
        w.version = w.version.wrapping_add(1);
        w
    }

    /// [`Frame::write_data`] if the latch is free at once.
    pub(super) fn try_write_data(&self) -> Option<RwLockWriteGuard<'_, FrameData>> {
        let mut w = self.data.try_write()?;
        w.version = w.version.wrapping_add(1);
        Some(w)
    }
}

/// Most pages [`BufferPool::flush_all_in_runs`] writes in one request (1 MiB).
pub const FLUSH_RUN_PAGES: usize = 128;

/// Neighbouring dirty pages of one file gathered for one write.
pub(super) struct Run {
    pub(super) buf: AlignedBuf,
    /// The file and first page, once the run has one.
    pub(super) first: Option<Key>,
    /// The frames of the pages in the run, in order.
    pub(super) frames: Vec<usize>,
    /// The newest change in the run.
    pub(super) lsn: u64,
}

impl Run {
    /// Appends a copy of a frame's page, sealed as a write-back seals it.
    pub(super) fn add(&mut self, idx: usize, page: &[u8]) {
        let n = self.frames.len();
        let dst = &mut self.buf[n * PAGE_SIZE..(n + 1) * PAGE_SIZE];
        dst.copy_from_slice(page);
        self.lsn = self.lsn.max(page::lsn_of(dst));
        page::strip_cache(dst);
        page::seal(dst);
        self.frames.push(idx);
    }
}

pub(super) struct Table {
    pub(super) map: PageTable,
    /// Page each frame is assigned to (mirrors `map`), for eviction and for
    /// walking every resident page (flushes, discards), which `map` cannot list.
    pub(super) owner: Vec<Option<Key>>,
    pub(super) hand: usize,
    /// Frames that hold no page (a stale entry, a frame taken since, is
    /// skipped): a miss takes one of these before it evicts anything.
    pub(super) free: Vec<usize>,
    /// The state of the generator that draws eviction candidates (xorshift).
    pub(super) draw: u64,
    /// Evictions since the counts were last halved.
    pub(super) since_aging: usize,
    /// Pins that found their page resident, pins that read it, and pages
    /// evicted: counted under the lock every pin takes anyway, so a pin pays
    /// no atomic operation of its own for them (the misses are also the
    /// clock of `Frame::loaded`).
    pub(super) hits: u64,
    pub(super) misses: u64,
    pub(super) evictions: u64,
}

impl Table {
    /// Every resident page and its frame.
    pub(super) fn resident(&self) -> impl Iterator<Item = (Key, usize)> + '_ {
        self.owner
            .iter()
            .enumerate()
            .filter_map(|(i, k)| k.map(|k| (k, i)))
    }
}
