//! The 8 KiB slotted page shared by heap files and B+-trees.
//!
//! ```text
//! 0        4         12    13     14       16      18      20          32    40    48
//! | crc32c | page no | kind| flags| n_slots| lower | upper | special    | lsn | csn | slot dir -> ... free ... <- tuples |
//! ```
//! `lsn` is the write-ahead log position of the transaction that last changed the
//! page (recovery redoes a logged change only on a page older than it, and a page
//! goes to the device only after the log up to it is durable); `csn` is that
//! transaction's commit sequence number (No Bits Left Behind validates cached
//! index entries against it). Pages written by bulk loads carry 0 for both.
//! The slot directory (4 bytes a slot: offset, length) grows up from the header and
//! tuples grow down from the end, so the free space of a page is always one
//! contiguous region between `lower` and `upper` (B+-tree leaves reuse exactly this
//! layout; the index-cache work of the No Bits Left Behind paper lives in that gap).
//! B+-tree leaves keep the stamp of their index cache in the last 4 bytes of
//! the special area ([`cache_stamp`]); it and the cache bytes are memory-only
//! ([`strip_cache`]).
//! A slot of length 0 is dead. The checksum covers bytes 4.. of the page, including
//! the page's own number, so a page written to the wrong place is caught too.

use crate::error::{Result, StorageError};

pub const PAGE_SIZE: usize = 8192;
pub const HEADER_SIZE: usize = 48;
/// Where the header keeps the page's LSN and CSN.
const LSN_AT: usize = 32;
const CSN_AT: usize = 40;
pub const SLOT_SIZE: usize = 4;
/// Largest tuple a page can hold (one slot, empty page).
pub const MAX_TUPLE: usize = PAGE_SIZE - HEADER_SIZE - SLOT_SIZE;
/// Bytes of the header a page kind may use for its own fields.
pub const SPECIAL_LEN: usize = 12;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PageKind {
    Heap = 1,
    BTreeMeta = 2,
    BTreeLeaf = 3,
    BTreeInternal = 4,
}

impl PageKind {
    pub fn from_u8(b: u8) -> Option<PageKind> {
        Some(match b {
            1 => PageKind::Heap,
            2 => PageKind::BTreeMeta,
            3 => PageKind::BTreeLeaf,
            4 => PageKind::BTreeInternal,
            _ => return None,
        })
    }
}

fn rd16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn wr16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

/// The LSN in a page's header.
pub fn lsn_of(page: &[u8]) -> u64 {
    u64::from_le_bytes(page[LSN_AT..LSN_AT + 8].try_into().unwrap())
}

/// Stamps a page with the transaction that changed it.
pub fn set_lsn_csn(page: &mut [u8], lsn: u64, csn: u64) {
    page[LSN_AT..LSN_AT + 8].copy_from_slice(&lsn.to_le_bytes());
    page[CSN_AT..CSN_AT + 8].copy_from_slice(&csn.to_le_bytes());
}

/// Where a B+-tree leaf keeps the stamp (cache sequence number) of the index
/// cache in its free region: the last 4 bytes of the special area (leaves use
/// the first 8 for their sibling links). 0 = no cache. See
/// `btree/cache/leaf.rs`; the stamp and the cache bytes live only in memory:
/// [`strip_cache`] takes them out of every copy of a page that goes to the
/// device or the log.
const CACHE_STAMP_AT: usize = 28;

fn is_leaf(page: &[u8]) -> bool {
    page.len() == PAGE_SIZE && page[12] == PageKind::BTreeLeaf as u8
}

/// The index-cache stamp of a B+-tree leaf (0 for every other page, and for a
/// leaf without a cache).
pub fn cache_stamp(page: &[u8]) -> u32 {
    if !is_leaf(page) {
        return 0;
    }
    u32::from_le_bytes(page[CACHE_STAMP_AT..CACHE_STAMP_AT + 4].try_into().unwrap())
}

/// Sets a leaf's index-cache stamp (ignored on any other page).
pub fn set_cache_stamp(page: &mut [u8], stamp: u32) {
    if is_leaf(page) {
        page[CACHE_STAMP_AT..CACHE_STAMP_AT + 4].copy_from_slice(&stamp.to_le_bytes());
    }
}

/// Takes a leaf's index cache out of `page`: zeroes its stamp and its free
/// region (whatever the header's bounds say, clamped to the page). Returns
/// whether the page had one; a page without a stamp is left untouched, so
/// pages of other kinds, and leaves no cache ever wrote to, keep every byte.
/// The pool runs it on every leaf it writes back and every leaf it loads, and
/// a commit on both images it logs, so cache bytes never reach the device or
/// the log.
pub fn strip_cache(page: &mut [u8]) -> bool {
    if cache_stamp(page) == 0 {
        return false;
    }
    page[CACHE_STAMP_AT..CACHE_STAMP_AT + 4].fill(0);
    let lower = (rd16(page, 16) as usize).clamp(HEADER_SIZE, PAGE_SIZE);
    let upper = (rd16(page, 18) as usize).clamp(lower, PAGE_SIZE);
    page[lower..upper].fill(0);
    true
}

/// `page` without its index cache: borrowed as is when it has none, else a
/// stripped copy ([`strip_cache`]). The log records pages through it.
pub fn without_cache(page: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if cache_stamp(page) == 0 {
        return std::borrow::Cow::Borrowed(page);
    }
    let mut copy = page.to_vec();
    strip_cache(&mut copy);
    std::borrow::Cow::Owned(copy)
}

/// Computes and stores the checksum; call just before a page goes to the device.
pub fn seal(page: &mut [u8]) {
    let crc = crc32c::crc32c(&page[4..PAGE_SIZE]);
    page[0..4].copy_from_slice(&crc.to_le_bytes());
}

/// Checks a page read from `path` at `page_no`: checksum, page number and header
/// sanity. The error names the file and page.
pub fn verify(page: &[u8], page_no: u64, path: &std::path::Path) -> Result<()> {
    let corrupt = |reason: String| StorageError::CorruptPage {
        path: path.to_path_buf(),
        page: page_no,
        reason,
    };
    if page.iter().all(|&b| b == 0) {
        return Err(corrupt("page is all zeros (never written)".into()));
    }
    let stored = u32::from_le_bytes(page[0..4].try_into().unwrap());
    let actual = crc32c::crc32c(&page[4..PAGE_SIZE]);
    if stored != actual {
        return Err(corrupt(format!(
            "checksum mismatch (stored {stored:08x}, computed {actual:08x})"
        )));
    }
    verify_shape(page, page_no, path)
}

/// [`verify`] without the checksum, for pages whose bytes were already
/// checked as a whole (an object of the cold tier, against the CRC32C its
/// manifest keeps): page number, kind, header bounds and slot directory.
pub fn verify_shape(page: &[u8], page_no: u64, path: &std::path::Path) -> Result<()> {
    let corrupt = |reason: String| StorageError::CorruptPage {
        path: path.to_path_buf(),
        page: page_no,
        reason,
    };
    let v = PageView::new(page);
    if v.page_no() != page_no {
        return Err(corrupt(format!("page claims to be page {}", v.page_no())));
    }
    if PageKind::from_u8(page[12]).is_none() {
        return Err(corrupt(format!("unknown page kind {}", page[12])));
    }
    let (lower, upper) = (v.lower() as usize, v.upper() as usize);
    if lower < HEADER_SIZE
        || lower > upper
        || upper > PAGE_SIZE
        || lower != HEADER_SIZE + v.n_slots() as usize * SLOT_SIZE
    {
        return Err(corrupt(format!(
            "bad free-space bounds lower={lower} upper={upper}"
        )));
    }
    verify_slots(page).map_err(corrupt)
}

/// Checks the slot directory of a page whose header bounds are sane: every live
/// slot lies inside the tuple area (`upper..PAGE_SIZE`), and the live tuples
/// together fit in it (strata's tuples never overlap). [`verify`] runs it on
/// every page that comes from the device — one pass over the directory — so
/// that no slot can make a reader see bytes of the header or directory as a
/// tuple, and [`PageMut::compact`] and [`PageMut::update`] can rely on the
/// live bytes fitting the page.
pub fn verify_slots(page: &[u8]) -> Result<(), String> {
    let v = PageView::new(page);
    let upper = v.upper() as usize;
    let dir = page
        .get(HEADER_SIZE..HEADER_SIZE + v.n_slots() as usize * SLOT_SIZE)
        .ok_or("the slot directory runs past the page")?;
    // One branch-free pass (every scan runs this on every page); the slot at
    // fault is looked for only when there is one.
    let upper32 = upper as u32;
    let (mut outside, mut live) = (0u32, 0u32);
    let (entries, _) = dir.as_chunks::<SLOT_SIZE>();
    for e in entries {
        let w = u32::from_le_bytes(*e);
        let (off, len) = (w & 0xffff, w >> 16);
        outside |= ((len != 0) & ((off < upper32) | (off + len > PAGE_SIZE as u32))) as u32;
        live += len;
    }
    let live = live as usize;
    if outside != 0 {
        for s in 0..v.n_slots() {
            let (off, len) = v.slot(s);
            if len > 0 && (off < upper || off + len > PAGE_SIZE) {
                return Err(format!(
                    "slot {s} (offset {off}, {len} bytes) points outside the tuple area {upper}..{PAGE_SIZE}"
                ));
            }
        }
    }
    if live > PAGE_SIZE - upper {
        return Err(format!(
            "live tuples take {live} bytes, more than the {} of the tuple area (slots overlap)",
            PAGE_SIZE - upper
        ));
    }
    Ok(())
}

/// Read-only view of a page.
#[derive(Clone, Copy)]
pub struct PageView<'a> {
    b: &'a [u8],
}

impl<'a> PageView<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        debug_assert_eq!(b.len(), PAGE_SIZE);
        PageView { b }
    }
    pub fn page_no(&self) -> u64 {
        u64::from_le_bytes(self.b[4..12].try_into().unwrap())
    }
    /// The whole page.
    pub fn bytes(&self) -> &'a [u8] {
        self.b
    }
    pub fn kind(&self) -> Option<PageKind> {
        PageKind::from_u8(self.b[12])
    }
    pub fn flags(&self) -> u8 {
        self.b[13]
    }
    pub fn n_slots(&self) -> u16 {
        rd16(self.b, 14)
    }
    pub fn lower(&self) -> u16 {
        rd16(self.b, 16)
    }
    pub fn upper(&self) -> u16 {
        rd16(self.b, 18)
    }
    pub fn special(&self) -> &'a [u8] {
        &self.b[20..32]
    }
    /// Log position of the transaction that last changed the page (0: none since
    /// the page was bulk-written).
    pub fn lsn(&self) -> u64 {
        lsn_of(self.b)
    }
    /// Commit sequence number of that transaction.
    pub fn csn(&self) -> u64 {
        u64::from_le_bytes(self.b[CSN_AT..CSN_AT + 8].try_into().unwrap())
    }
    /// Contiguous free bytes between the slot directory and the tuples.
    pub fn free_space(&self) -> usize {
        (self.upper() - self.lower()) as usize
    }
    /// (offset, length) of slot `s`.
    pub fn slot(&self, s: u16) -> (usize, usize) {
        let at = HEADER_SIZE + s as usize * SLOT_SIZE;
        (rd16(self.b, at) as usize, rd16(self.b, at + 2) as usize)
    }
    /// The tuple in slot `s`, or `None` if the slot is dead or does not exist.
    pub fn get(&self, s: u16) -> Option<&'a [u8]> {
        if s >= self.n_slots() {
            return None;
        }
        let (off, len) = self.slot(s);
        if len == 0 {
            return None;
        }
        self.b.get(off..off + len)
    }
    /// Live tuples with their slot numbers.
    pub fn tuples(&self) -> impl Iterator<Item = (u16, &'a [u8])> + 'a {
        let v = *self;
        (0..v.n_slots()).filter_map(move |s| v.get(s).map(|t| (s, t)))
    }
    /// Bytes used by live tuples and their slots.
    pub fn used_bytes(&self) -> usize {
        HEADER_SIZE
            + self.n_slots() as usize * SLOT_SIZE
            + self.tuples().map(|(_, t)| t.len()).sum::<usize>()
    }
}

/// Mutable view of a page.
pub struct PageMut<'a> {
    b: &'a mut [u8],
}

impl<'a> PageMut<'a> {
    pub fn new(b: &'a mut [u8]) -> Self {
        debug_assert_eq!(b.len(), PAGE_SIZE);
        PageMut { b }
    }

    /// Formats an empty page.
    pub fn init(b: &'a mut [u8], kind: PageKind, page_no: u64) -> Self {
        b.fill(0);
        b[4..12].copy_from_slice(&page_no.to_le_bytes());
        b[12] = kind as u8;
        wr16(b, 14, 0);
        wr16(b, 16, HEADER_SIZE as u16);
        wr16(b, 18, PAGE_SIZE as u16);
        PageMut { b }
    }

    pub fn view(&self) -> PageView<'_> {
        PageView { b: self.b }
    }
    pub fn set_flags(&mut self, f: u8) {
        self.b[13] = f;
    }
    pub fn special_mut(&mut self) -> &mut [u8] {
        &mut self.b[20..32]
    }
    fn set_n_slots(&mut self, n: u16) {
        wr16(self.b, 14, n)
    }
    fn set_lower(&mut self, v: u16) {
        wr16(self.b, 16, v)
    }
    fn set_upper(&mut self, v: u16) {
        wr16(self.b, 18, v)
    }
    fn set_slot(&mut self, s: u16, off: usize, len: usize) {
        let at = HEADER_SIZE + s as usize * SLOT_SIZE;
        wr16(self.b, at, off as u16);
        wr16(self.b, at + 2, len as u16);
    }

    /// Whether a tuple of `len` bytes fits, counting a new slot.
    pub fn fits(&self, len: usize) -> bool {
        self.view().free_space() >= len + SLOT_SIZE
    }

    /// Appends a tuple in a new slot at the end of the directory.
    pub fn push(&mut self, data: &[u8]) -> Option<u16> {
        let n = self.view().n_slots();
        self.insert_at(n, data).then_some(n)
    }

    /// Puts a tuple in the first dead slot, or a new one; returns the slot.
    /// Compacts the page when the free space is fragmented.
    pub fn insert(&mut self, data: &[u8]) -> Option<u16> {
        let v = self.view();
        let dead = (0..v.n_slots()).find(|&s| v.slot(s).1 == 0);
        match dead {
            Some(s) => {
                if v.free_space() < data.len() {
                    self.compact();
                    if self.view().free_space() < data.len() {
                        return None;
                    }
                }
                let off = self.view().upper() as usize - data.len();
                self.b[off..off + data.len()].copy_from_slice(data);
                self.set_upper(off as u16);
                self.set_slot(s, off, data.len());
                Some(s)
            }
            None => {
                if !self.fits(data.len()) {
                    self.compact();
                }
                self.push(data)
            }
        }
    }

    /// Inserts a tuple with a new slot at directory position `pos`, shifting later
    /// slots up by one (B+-trees keep their directory in key order this way).
    pub fn insert_at(&mut self, pos: u16, data: &[u8]) -> bool {
        let v = self.view();
        let n = v.n_slots();
        assert!(pos <= n);
        if data.is_empty() || !self.fits(data.len()) {
            return false;
        }
        let off = v.upper() as usize - data.len();
        self.b[off..off + data.len()].copy_from_slice(data);
        let at = HEADER_SIZE + pos as usize * SLOT_SIZE;
        let end = HEADER_SIZE + n as usize * SLOT_SIZE;
        self.b.copy_within(at..end, at + SLOT_SIZE);
        self.set_slot(pos, off, data.len());
        self.set_n_slots(n + 1);
        self.set_lower((end + SLOT_SIZE) as u16);
        self.set_upper(off as u16);
        true
    }

    /// Removes directory entry `pos` entirely, shifting later slots down (B+-tree
    /// delete). The tuple bytes become garbage reclaimed by [`PageMut::compact`].
    pub fn remove_at(&mut self, pos: u16) {
        let n = self.view().n_slots();
        assert!(pos < n);
        let at = HEADER_SIZE + pos as usize * SLOT_SIZE;
        let end = HEADER_SIZE + n as usize * SLOT_SIZE;
        self.b.copy_within(at + SLOT_SIZE..end, at);
        self.b[end - SLOT_SIZE..end].fill(0);
        self.set_n_slots(n - 1);
        self.set_lower((end - SLOT_SIZE) as u16);
        self.compact();
    }

    /// Removes the directory entries at `positions` (ascending, distinct, each
    /// below the slot count) in one pass: the page ends up byte for byte as
    /// [`PageMut::remove_at`] of each, from the last to the first, would leave it
    /// (live tuples packed at the end in slot order), at the cost of one
    /// compaction instead of one per entry (B+-tree batched delete).
    pub fn remove_many(&mut self, positions: &[u16]) {
        let v = self.view();
        let n = v.n_slots();
        let mut kept: Vec<(usize, usize)> = Vec::with_capacity(n as usize);
        let mut gone = positions.iter().copied().peekable();
        for s in 0..n {
            if gone.peek() == Some(&s) {
                gone.next();
                continue;
            }
            kept.push(v.slot(s));
        }
        assert!(
            gone.next().is_none(),
            "positions must be ascending, distinct and within the slot directory"
        );
        // The live bytes, copied out before the page is rewritten over them.
        let mut bytes = Vec::with_capacity(PAGE_SIZE - v.upper() as usize);
        for &(off, len) in &kept {
            bytes.extend_from_slice(&self.b[off..off + len]);
        }
        let lower = HEADER_SIZE + kept.len() * SLOT_SIZE;
        self.b[lower..PAGE_SIZE].fill(0);
        let (mut upper, mut at) = (PAGE_SIZE, 0);
        for (s, &(off, len)) in kept.iter().enumerate() {
            if len == 0 {
                // A dead slot keeps its place in the directory, as in compact.
                self.set_slot(s as u16, off, 0);
                continue;
            }
            upper -= len;
            self.b[upper..upper + len].copy_from_slice(&bytes[at..at + len]);
            self.set_slot(s as u16, upper, len);
            at += len;
        }
        self.set_n_slots(kept.len() as u16);
        self.set_lower(lower as u16);
        self.set_upper(upper as u16);
    }

    /// Marks slot `s` dead, keeping slot numbers stable (heap delete).
    pub fn kill(&mut self, s: u16) -> bool {
        if self.view().get(s).is_none() {
            return false;
        }
        self.set_slot(s, 0, 0);
        true
    }

    /// Replaces the tuple in slot `s` if the new version fits on this page.
    pub fn update(&mut self, s: u16, data: &[u8]) -> bool {
        let Some(old) = self.view().get(s) else {
            return false;
        };
        if data.len() <= old.len() {
            let (off, _) = self.view().slot(s);
            self.b[off..off + data.len()].copy_from_slice(data);
            self.set_slot(s, off, data.len());
            return true;
        }
        // Drop the old version, then place the new one (compacting if needed).
        let live = self.view().used_bytes() - old.len();
        if PAGE_SIZE - live < data.len() {
            return false;
        }
        self.set_slot(s, 0, 0);
        if self.view().free_space() < data.len() {
            self.compact();
        }
        let off = self.view().upper() as usize - data.len();
        self.b[off..off + data.len()].copy_from_slice(data);
        self.set_upper(off as u16);
        self.set_slot(s, off, data.len());
        true
    }

    /// Moves live tuples together at the end of the page so the free space is one
    /// region again. Slot numbers do not change.
    pub fn compact(&mut self) {
        let v = self.view();
        let n = v.n_slots();
        let mut live: Vec<(u16, Vec<u8>)> = v.tuples().map(|(s, t)| (s, t.to_vec())).collect();
        live.sort_by_key(|(s, _)| *s);
        let mut upper = PAGE_SIZE;
        let lower = HEADER_SIZE + n as usize * SLOT_SIZE;
        self.b[lower..PAGE_SIZE].fill(0);
        for (s, t) in &live {
            upper -= t.len();
            self.b[upper..upper + t.len()].copy_from_slice(t);
            self.set_slot(*s, upper, t.len());
        }
        self.set_upper(upper as u16);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn strip_cache_clears_a_leaf_stamp_and_free_region_only() {
        let mut buf = vec![0u8; PAGE_SIZE];
        let mut p = PageMut::init(&mut buf, PageKind::BTreeLeaf, 3);
        p.special_mut()[0..8].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(p.insert_at(0, b"an entry"));
        let clean = buf.clone();
        assert!(!strip_cache(&mut buf), "no stamp: nothing to strip");
        assert_eq!(buf, clean);
        let (lower, upper) = {
            let v = PageView::new(&buf);
            (v.lower() as usize, v.upper() as usize)
        };
        set_cache_stamp(&mut buf, 77);
        assert_eq!(cache_stamp(&buf), 77);
        buf[lower..upper].fill(0xEE);
        assert!(strip_cache(&mut buf));
        assert_eq!(
            buf, clean,
            "the stamp and free region are zero again, the rest kept"
        );
        assert_eq!(cache_stamp(&buf), 0);

        // Other kinds have no stamp: set is ignored, strip changes nothing.
        let mut heap = vec![0u8; PAGE_SIZE];
        PageMut::init(&mut heap, PageKind::Heap, 1).special_mut()[8..12].fill(9);
        let before = heap.clone();
        set_cache_stamp(&mut heap, 5);
        assert_eq!(cache_stamp(&heap), 0);
        assert!(!strip_cache(&mut heap));
        assert_eq!(heap, before);

        // Nonsense bounds are clamped, never a panic.
        let mut bad = clean.clone();
        set_cache_stamp(&mut bad, 1);
        bad[16..18].copy_from_slice(&9000u16.to_le_bytes());
        bad[18..20].copy_from_slice(&10u16.to_le_bytes());
        assert!(strip_cache(&mut bad));
        assert_eq!(cache_stamp(&bad), 0);
    }

    #[test]
    fn insert_get_kill_update_compact() {
        let mut buf = vec![0u8; PAGE_SIZE];
        let mut p = PageMut::init(&mut buf, PageKind::Heap, 7);
        let a = p.insert(b"hello").unwrap();
        let b = p.insert(b"world!").unwrap();
        assert_eq!((a, b), (0, 1));
        assert!(p.kill(a));
        assert_eq!(p.view().get(a), None);
        assert_eq!(p.insert(b"again").unwrap(), 0, "dead slot is reused");
        assert!(p.update(b, b"a much longer tuple than before"));
        assert_eq!(p.view().get(b).unwrap(), b"a much longer tuple than before");
        p.compact();
        assert_eq!(p.view().get(0).unwrap(), b"again");
        seal(&mut buf);
        verify(&buf, 7, Path::new("t")).unwrap();
        let e = verify(&buf, 8, Path::new("t")).unwrap_err().to_string();
        assert!(
            e.contains("page 8") && e.contains("claims to be page 7"),
            "{e}"
        );
        buf[5000] ^= 1;
        let e = verify(&buf, 7, Path::new("t")).unwrap_err().to_string();
        assert!(
            e.contains("corrupt page 7 of t") && e.contains("checksum"),
            "{e}"
        );
    }

    #[test]
    fn fills_exactly_and_keeps_free_space_contiguous() {
        let mut buf = vec![0u8; PAGE_SIZE];
        let mut p = PageMut::init(&mut buf, PageKind::Heap, 0);
        let t = [9u8; 100];
        let mut n = 0;
        while p.push(&t).is_some() {
            n += 1;
        }
        assert_eq!(n, (PAGE_SIZE - HEADER_SIZE) / (100 + SLOT_SIZE));
        let v = p.view();
        assert_eq!(v.free_space(), v.upper() as usize - v.lower() as usize);
        assert!(v.free_space() < 104);
    }

    #[test]
    fn ordered_insert_and_remove() {
        let mut buf = vec![0u8; PAGE_SIZE];
        let mut p = PageMut::init(&mut buf, PageKind::BTreeLeaf, 0);
        assert!(p.insert_at(0, b"b"));
        assert!(p.insert_at(0, b"a"));
        assert!(p.insert_at(2, b"c"));
        let got: Vec<_> = p.view().tuples().map(|(_, t)| t.to_vec()).collect();
        assert_eq!(got, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        p.remove_at(1);
        let got: Vec<_> = p.view().tuples().map(|(_, t)| t.to_vec()).collect();
        assert_eq!(got, vec![b"a".to_vec(), b"c".to_vec()]);
        assert_eq!(p.view().lower() as usize, HEADER_SIZE + 2 * SLOT_SIZE);
    }
}
