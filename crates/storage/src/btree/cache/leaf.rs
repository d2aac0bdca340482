//! The index cache of No Bits Left Behind (§2.1): hot tuples' fields kept in a
//! B+-tree leaf's free space, so a lookup can be answered without the heap.
//!
//! Everything here works on the bytes of one leaf page and knows nothing of the
//! tree, the buffer pool or the log; [`super::BTree`] calls it under the right
//! latches (see `protocol.rs` beside this file).
//!
//! # Where the cache is
//! A leaf's slot directory grows up from the 48-byte header and its entries grow
//! down from the end of the page, so its free space is one contiguous region
//! `[lower, upper)`. The cache lives there. The region is cut into **slots
//! aligned to the item size** `L` counted from the start of the page: slot `i`
//! is bytes `[i·L, (i+1)·L)`, and only slots wholly inside `[lower, upper)` are
//! part of the cache. A slot therefore never moves when the region shrinks: a
//! key insert that takes 4 bytes of directory and an entry's bytes at the other
//! end simply leaves the slots it touched outside the region (the paper's "key
//! inserts overwrite the periphery"), and the items in every other slot stay.
//!
//! # An item
//! ```text
//! | tag u8 = 0xA5 | tid (6 bytes, as in entries) | value (value_len bytes) |
//! ```
//! A slot whose first byte is not the tag is empty. Empty slots are zeroed by
//! every reset, and the tag tells an empty slot from an item for tuple id
//! (0,0), whose tid bytes are zeros too.
//!
//! # The directory: finding an item without reading every slot
//! The paper places items at random and moves them by swaps, so nothing in a
//! tid says where its item is: a lookup would read every slot (5 KB on a leaf
//! a third full), and a miss — the common case on a cold cache — always
//! would. The cache therefore starts with a directory: the region's first
//! slots hold [`DIR_TAG`], the slot they start at and the number of slots they
//! cover, then one byte per slot, the slot's item's tid fingerprint (any byte
//! but 0, [`TAG`] and [`DIR_TAG`]) or 0 for an empty slot. A lookup compares
//! the fingerprints eight at a time and reads only the slots whose
//! fingerprint matches (one in 253 of the others): about three cache lines
//! instead of eighty. Fills and swaps keep
//! the bytes current.
//!
//! The directory sits at the low end, where the slot directory's 4-byte
//! steps reach it slowly, and the items it displaces are peripheral ones. It
//! is valid only while its first slot still starts with the tag and names
//! itself as the region's first slot and covers all of the region (the region
//! only shrinks between the resets that zero it). A key insert that writes
//! over it leaves lookups to a pass over the slots — still right, every item
//! still carries its tag and tid — until the next fill or promotion writes a
//! new one over the new first slots (dropping the items there). A region
//! where the directory would take a quarter of the slots or more has none.
//! It costs one byte per slot plus 5 (3–7% of the slots for 32- to 15-byte
//! items).
//!
//! # Validity (§2.1.2)
//! The leaf header carries a cache stamp ([`crate::page::cache_stamp`], the
//! paper's CSN_p) and the index a cache sequence number (CSN_idx). The cache of
//! a leaf is valid only while the two are equal; otherwise it reads as empty,
//! and the next fill zeroes the region and stamps the leaf before it writes.
//! Stamp 0 means "no cache" and is never a valid CSN. Items are only ever
//! written under a stamp, and every way a leaf's region grows back (a delete's
//! compaction, a split's re-initialization) zeroes it, so no byte of an entry
//! that once overlapped a slot can be read back as an item.
//!
//! # The most stable position S
//! The paper puts hot items where inserts reach last: with fixed-size keys `K`
//! and directory pointers `D` growing toward each other over a page `P`, they
//! meet at `S = K/(K+D) × P` (measured from the end the keys grow from).
//! strata's entries are variable-length, and the region left is what matters,
//! so S is taken over the leaf's *current* free region: each insert takes
//! `D` = 4 bytes at `lower` and about `E` bytes at `upper`, `E` being this
//! leaf's average entry (key + tid) size, so the two fronts meet at
//! `S = lower + (upper − lower) × D/(D+E)`. Inserts at the leaf's own average
//! move both ends toward S and leave S where it is. An empty leaf has no
//! average; S is then the middle of the region.
//!
//! # Replacement
//! Slots are grouped into buckets of `N` consecutive slots (bucket `b` is slots
//! `[b·N, (b+1)·N)`). A miss's fill goes into a random free slot; when none is
//! free it evicts a random item of the *peripheral* bucket: of the lowest and the
//! highest bucket of the region, the one the inserts will reach first (its
//! distance to the nearest front divided by that front's speed, `D` or `E`). A
//! hit ([`promote`]) swaps the item with a random slot of the adjacent bucket
//! closer to S, so hot items drift to where they are overwritten last.

use crate::page::{self, HEADER_SIZE, PAGE_SIZE, PageKind, PageView, SLOT_SIZE};
use crate::row::Tid;

/// The first byte of a slot that holds an item.
pub const TAG: u8 = 0xA5;
pub(super) const TID_LEN: usize = Tid::ENCODED_LEN;
/// Largest cached value: an item must leave room for a few on a leaf.
pub const MAX_VALUE: usize = 2048;
/// Largest bucket.
pub const MAX_BUCKET: usize = 256;

/// The shape of one index's cache items: the cached fields' encoded bytes are
/// `value_len` long, and `bucket_slots` slots make a bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheLayout {
    pub(super) value_len: usize,
    pub(super) bucket_slots: usize,
}

impl CacheLayout {
    /// A layout for values of `value_len` bytes (1..=[`MAX_VALUE`]) in buckets
    /// of `bucket_slots` slots (1..=[`MAX_BUCKET`]).
    pub fn new(value_len: usize, bucket_slots: usize) -> Result<CacheLayout, String> {
        if value_len == 0 || value_len > MAX_VALUE {
            return Err(format!(
                "a cached value of {value_len} bytes (it must be 1 to {MAX_VALUE} bytes)"
            ));
        }
        if bucket_slots == 0 || bucket_slots > MAX_BUCKET {
            return Err(format!(
                "a bucket of {bucket_slots} slots (it must be 1 to {MAX_BUCKET})"
            ));
        }
        Ok(CacheLayout {
            value_len,
            bucket_slots,
        })
    }
    pub fn value_len(&self) -> usize {
        self.value_len
    }
    pub fn bucket_slots(&self) -> usize {
        self.bucket_slots
    }
    /// Bytes of an item (and of a slot): tag, tid, value.
    pub fn item_len(&self) -> usize {
        1 + TID_LEN + self.value_len
    }

    /// The layout as one word (0 for none), for a lock-free read.
    pub fn to_bits(layout: Option<CacheLayout>) -> u32 {
        layout.map_or(0, |l| (l.value_len as u32) << 16 | l.bucket_slots as u32)
    }

    /// The layout [`to_bits`](Self::to_bits) made the word of.
    pub fn from_bits(bits: u32) -> Option<CacheLayout> {
        CacheLayout::new((bits >> 16) as usize, (bits & 0xFFFF) as usize).ok()
    }
}

/// A small, fast random source for slot choices (splitmix64).
#[derive(Clone, Debug)]
pub struct CacheRng(u64);

impl CacheRng {
    pub fn new(seed: u64) -> CacheRng {
        CacheRng(seed)
    }
    /// The state to resume from ([`CacheRng::new`] with it continues the sequence).
    pub fn state(&self) -> u64 {
        self.0
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
}

/// The cache region of one leaf as it is now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// The free region `[lower, upper)`.
    pub lower: usize,
    pub upper: usize,
    /// Slots wholly inside it: `first..end` (empty when `first >= end`).
    pub first: usize,
    pub end: usize,
    /// Average bytes of an entry on the leaf (the speed of the upper front).
    pub(super) entry_len: usize,
    pub(super) item: usize,
    pub(super) bucket: usize,
}

/// The region of a leaf, or `None` for a page that is not a leaf or whose
/// header's bounds make no sense (a damaged page reads as having no cache).
pub fn region(page: &[u8], layout: &CacheLayout) -> Option<Region> {
    if page.len() != PAGE_SIZE {
        return None;
    }
    let v = PageView::new(page);
    if v.kind() != Some(PageKind::BTreeLeaf) {
        return None;
    }
    let n = v.n_slots() as usize;
    let (lower, upper) = (v.lower() as usize, v.upper() as usize);
    if lower != HEADER_SIZE + n * SLOT_SIZE || lower > upper || upper > PAGE_SIZE {
        return None;
    }
    let item = layout.item_len();
    let first = lower.div_ceil(item);
    let end = (upper / item).max(first);
    // An empty leaf has no average entry: S is then the middle of the region.
    let entry_len = (PAGE_SIZE - upper)
        .checked_div(n)
        .map_or(SLOT_SIZE, |e| e.max(1));
    Some(Region {
        lower,
        upper,
        first,
        end,
        entry_len,
        item,
        bucket: layout.bucket_slots,
    })
}

impl Region {
    /// Slots in the cache.
    pub fn capacity(&self) -> usize {
        self.end - self.first
    }

    /// The most stable byte position S (see the module docs).
    pub fn stable_point(&self) -> usize {
        let d = SLOT_SIZE;
        self.lower + (self.upper - self.lower) * d / (d + self.entry_len)
    }

    /// The bucket of slot `s`.
    pub fn bucket_of(&self, s: usize) -> usize {
        s / self.bucket
    }

    /// The bucket holding S, within the region's buckets.
    pub fn stable_bucket(&self) -> usize {
        let lo = self.bucket_of(self.first);
        let hi = self.bucket_of(self.end.max(self.first + 1) - 1);
        self.bucket_of(self.stable_point() / self.item)
            .clamp(lo, hi)
    }

    /// The slots of bucket `b` that are in the region.
    pub fn slots_of(&self, b: usize) -> std::ops::Range<usize> {
        let lo = (b * self.bucket).max(self.first);
        let hi = ((b + 1) * self.bucket).min(self.end);
        lo..hi.max(lo)
    }

    /// The bucket the inserts will overwrite first: of the lowest and the
    /// highest bucket of the region, the one with fewer inserts to go before
    /// its last slot is reached (`D` bytes an insert at the lower front, the
    /// average entry at the upper one); ties go either way at random.
    pub(super) fn peripheral_bucket(&self, rng: &mut CacheRng) -> usize {
        let (lo, hi) = (self.bucket_of(self.first), self.bucket_of(self.end - 1));
        if lo == hi {
            return lo;
        }
        // Inserts until the lower front passes the low bucket's top byte, and
        // until the upper front passes the high bucket's bottom byte, compared
        // without division: (top − lower)/D against (upper − bottom)/E.
        let top = self.slots_of(lo).end * self.item;
        let bottom = self.slots_of(hi).start * self.item;
        let low_life = (top - self.lower) * self.entry_len;
        let high_life = (self.upper - bottom) * SLOT_SIZE;
        match low_life.cmp(&high_life) {
            std::cmp::Ordering::Less => lo,
            std::cmp::Ordering::Greater => hi,
            std::cmp::Ordering::Equal => {
                if rng.below(2) == 0 {
                    lo
                } else {
                    hi
                }
            }
        }
    }
}

/// Whether the leaf's cache is valid under the index's CSN `csn`.
pub fn is_valid(page: &[u8], csn: u32) -> bool {
    csn != 0 && page::cache_stamp(page) == csn
}

pub(super) fn slot_bytes(page: &[u8], s: usize, item: usize) -> &[u8] {
    &page[s * item..(s + 1) * item]
}

#[inline]
pub(super) fn holds(slot: &[u8], tid: &[u8; TID_LEN]) -> bool {
    // A fixed-size comparison (inlined), not a memcmp call per slot.
    slot[0] == TAG && <&[u8; TID_LEN]>::try_from(&slot[1..1 + TID_LEN]).is_ok_and(|s| s == tid)
}

pub(super) fn tid_bytes(tid: Tid) -> [u8; TID_LEN] {
    let mut b = [0u8; TID_LEN];
    b[..4].copy_from_slice(&tid.page.to_be_bytes());
    b[4..].copy_from_slice(&tid.slot.to_be_bytes());
    b
}

pub(super) fn write_item(page: &mut [u8], s: usize, tid: &[u8; TID_LEN], value: &[u8]) {
    let item = 1 + TID_LEN + value.len();
    let dst = &mut page[s * item..(s + 1) * item];
    dst[0] = TAG;
    dst[1..1 + TID_LEN].copy_from_slice(tid);
    dst[1 + TID_LEN..].copy_from_slice(value);
}

/// The first byte of the slot where a leaf's directory starts.
pub const DIR_TAG: u8 = 0xD1;
/// The directory's header: the tag, the slot it starts at (u16) and the slots
/// it covers (u16), both little-endian.
pub(super) const DIR_HEADER: usize = 5;

/// A slot's fingerprint of the tid it holds: one of the 253 bytes that are
/// not 0 (an empty slot), [`TAG`] or [`DIR_TAG`] (a directory byte read as a
/// slot's first byte must not look like an item or a directory). Every value
/// a byte can take is used: a miss reads one item in 253 of the others.
pub(super) fn fingerprint(tid: &[u8; TID_LEN]) -> u8 {
    let x = tid.iter().fold(0u64, |x, &b| (x << 8) | b as u64);
    let mut f = ((x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % 253) as u8 + 1;
    // Over the two reserved bytes, in increasing order (TAG < DIR_TAG).
    if f >= TAG {
        f += 1;
    }
    if f >= DIR_TAG {
        f += 1;
    }
    f
}

/// Slots a directory covering `count` slots takes.
pub(super) fn dir_slots(count: usize, item: usize) -> usize {
    (DIR_HEADER + count).div_ceil(item)
}

/// A leaf's directory: one fingerprint byte per slot `base..base + count`
/// (0: empty), at byte `at` (the start of slot `base`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Dir {
    pub(super) at: usize,
    pub(super) base: usize,
    pub(super) count: usize,
}

impl Dir {
    /// The byte holding slot `s`'s fingerprint.
    pub(super) fn fp_at(&self, s: usize) -> usize {
        self.at + DIR_HEADER + (s - self.base)
    }
}

/// The directory of the region `r`, if its first slot holds one that covers
/// every slot of the region and lies wholly inside it.
pub(super) fn find_dir(page: &[u8], r: &Region) -> Option<Dir> {
    if r.first >= r.end {
        return None;
    }
    let at = r.first * r.item;
    if page[at] != DIR_TAG {
        return None;
    }
    let base = u16::from_le_bytes([page[at + 1], page[at + 2]]) as usize;
    let count = u16::from_le_bytes([page[at + 3], page[at + 4]]) as usize;
    if base != r.first || base + count < r.end || base + dir_slots(count, r.item) > r.end {
        return None;
    }
    Some(Dir { at, base, count })
}

/// The slots items may use: the region without its directory's slots.
pub(super) fn items_of(r: &Region, dir: Option<Dir>) -> Region {
    match dir {
        Some(d) => Region {
            first: d.base + dir_slots(d.count, r.item),
            ..*r
        },
        None => *r,
    }
}

/// Writes a directory over the first slots of `r` (dropping the items they
/// held) and records every other slot's item in it; zeroes the slots that
/// hold none. `None` when the directory would take more than a quarter of
/// the region (a scan of so few slots is as cheap).
pub(super) fn build_dir(page: &mut [u8], r: &Region) -> Option<Dir> {
    let count = r.end.checked_sub(r.first)?;
    let ds = dir_slots(count, r.item);
    if count == 0 || ds * 4 > count {
        return None;
    }
    let dir = Dir {
        at: r.first * r.item,
        base: r.first,
        count,
    };
    page[dir.at..(r.first + ds) * r.item].fill(0);
    page[dir.at] = DIR_TAG;
    page[dir.at + 1..dir.at + 3].copy_from_slice(&(r.first as u16).to_le_bytes());
    page[dir.at + 3..dir.at + 5].copy_from_slice(&(count as u16).to_le_bytes());
    for s in r.first + ds..r.end {
        let b = s * r.item;
        page[dir.fp_at(s)] = if page[b] == TAG {
            let tid: [u8; TID_LEN] = page[b + 1..b + 1 + TID_LEN].try_into().unwrap();
            fingerprint(&tid)
        } else {
            page[b..b + r.item].fill(0);
            0
        };
    }
    Some(dir)
}

/// The slot of `ri` (the item slots) holding `tid`: through the directory's
/// fingerprints (eight at a time) when there is one, else by a pass over the
/// slots.
pub(super) fn find(
    page: &[u8],
    ri: &Region,
    dir: Option<Dir>,
    tid: &[u8; TID_LEN],
) -> Option<usize> {
    let Some(d) = dir else {
        return (ri.first..ri.end).find(|&s| holds(slot_bytes(page, s, ri.item), tid));
    };
    match scan_dir::<false>(page, ri, d, tid) {
        Scan::Holds(s) => Some(s),
        Scan::Free(_) => None,
    }
}

/// What one pass over a directory's fingerprints found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Scan {
    /// The slot holding the tid's item.
    Holds(usize),
    /// No slot holds it; this many slots are free (counted only when asked).
    Free(usize),
}

/// One pass over the directory of `ri`, eight fingerprints at a time: the slot
/// holding `tid`'s item, else (with `COUNT`) how many slots are free. A fill
/// needs both, a lookup only the first.
pub(super) fn scan_dir<const COUNT: bool>(
    page: &[u8],
    ri: &Region,
    d: Dir,
    tid: &[u8; TID_LEN],
) -> Scan {
    scan_dir_with::<COUNT>(page, ri, d, tid, |_| {})
}

/// [`scan_dir`], calling `candidate` with each slot whose fingerprint
/// matches before that slot is read (a lookup starts loading what a hit
/// there will touch next while the slot's own line comes in).
pub(super) fn scan_dir_with<const COUNT: bool>(
    page: &[u8],
    ri: &Region,
    d: Dir,
    tid: &[u8; TID_LEN],
    mut candidate: impl FnMut(usize),
) -> Scan {
    if ri.first >= ri.end {
        return Scan::Free(0);
    }
    let f = fingerprint(tid);
    let fps = &page[d.fp_at(ri.first)..d.fp_at(ri.end)];
    let pattern = 0x0101_0101_0101_0101u64 * f as u64;
    let mut chunks = fps.chunks_exact(8);
    let mut at = 0;
    let mut free = 0;
    for c in chunks.by_ref() {
        let w = u64::from_le_bytes(c.try_into().unwrap());
        // A byte of the xor is zero exactly where the fingerprint matches.
        let mut m = zero_bytes(w ^ pattern);
        while m != 0 {
            let i = at + (m.trailing_zeros() / 8) as usize;
            let s = ri.first + i;
            candidate(s);
            if holds(slot_bytes(page, s, ri.item), tid) {
                return Scan::Holds(s);
            }
            m &= m - 1;
        }
        if COUNT {
            free += bytes_marked(zero_bytes(w));
        }
        at += 8;
    }
    for (j, &b) in chunks.remainder().iter().enumerate() {
        let s = ri.first + at + j;
        if b == f {
            candidate(s);
            if holds(slot_bytes(page, s, ri.item), tid) {
                return Scan::Holds(s);
            }
        }
        free += usize::from(COUNT && b == 0);
    }
    Scan::Free(free)
}

/// How many bytes of `m` (a [`zero_bytes`] mask: bit 7 or nothing in each
/// byte) are marked: the bytes' low bits summed by one multiplication, a
/// few instructions where `count_ones` without POPCNT (the x86-64 baseline)
/// is a dozen.
pub(super) fn bytes_marked(m: u64) -> usize {
    ((m >> 7).wrapping_mul(0x0101_0101_0101_0101) >> 56) as usize
}

/// Bit 7 of each byte of `x` that is zero, and no other bit (exact: no
/// borrow runs from one byte into the next).
pub(super) fn zero_bytes(x: u64) -> u64 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    !(((x & LOW7).wrapping_add(LOW7)) | x | LOW7)
}

/// The position of the `k`-th (from 0) zero byte of `b`, eight at a time.
pub(super) fn nth_zero(b: &[u8], mut k: usize) -> Option<usize> {
    let mut chunks = b.chunks_exact(8);
    for (w, c) in chunks.by_ref().enumerate() {
        let mut m = zero_bytes(u64::from_le_bytes(c.try_into().unwrap()));
        let n = bytes_marked(m);
        if k >= n {
            k -= n;
            continue;
        }
        for _ in 0..k {
            m &= m - 1;
        }
        return Some(w * 8 + (m.trailing_zeros() / 8) as usize);
    }
    let at = b.len() - chunks.remainder().len();
    chunks
        .remainder()
        .iter()
        .enumerate()
        .filter(|&(_, &x)| x == 0)
        .nth(k)
        .map(|(i, _)| at + i)
}

/// A cached item found by [`lookup`].
#[derive(Debug, PartialEq, Eq)]
pub struct Hit<'a> {
    pub slot: usize,
    pub value: &'a [u8],
    /// Whether the item is in the bucket of S already (a promotion would not
    /// move it).
    pub settled: bool,
}

/// The cached value of `tid` on this leaf, if its cache is valid under `csn`
/// and holds one.
pub fn lookup<'a>(page: &'a [u8], layout: &CacheLayout, csn: u32, tid: Tid) -> Option<Hit<'a>> {
    if !is_valid(page, csn) {
        return None;
    }
    let r = region(page, layout)?;
    let dir = find_dir(page, &r);
    let ri = items_of(&r, dir);
    let s = find(page, &ri, dir, &tid_bytes(tid))?;
    Some(Hit {
        slot: s,
        value: &slot_bytes(page, s, r.item)[1 + TID_LEN..],
        settled: ri.bucket_of(s) == ri.stable_bucket(),
    })
}

/// What [`probe`] found for a tid.
#[derive(Debug, PartialEq, Eq)]
pub enum Probed<'a> {
    Hit(Hit<'a>),
    /// Not cached; `free` is a free slot picked at random for the fill (its
    /// lines already loading), if the leaf has a directory and a free slot.
    Miss {
        free: Option<usize>,
    },
}

/// [`lookup`] for a lookup that will act on the answer: on a hit it starts
/// loading the bucket the item will be promoted into while the item's own
/// line comes in; on a miss it picks the fill's free slot now and starts
/// loading it, so the fill after the heap read writes to a line in the CPU's
/// cache. Page reads of a leaf are dominated by cache misses (the slot, the
/// promotion's target, the fill's slot are each a random line of an 8 KiB
/// page); overlapping them is most of what a hit or a fill costs.
pub fn probe<'a>(
    page: &'a [u8],
    layout: &CacheLayout,
    csn: u32,
    tid: Tid,
    rng: &mut CacheRng,
) -> Probed<'a> {
    let miss = Probed::Miss { free: None };
    if !is_valid(page, csn) {
        return miss;
    }
    let Some(r) = region(page, layout) else {
        return miss;
    };
    let dir = find_dir(page, &r);
    let ri = items_of(&r, dir);
    let want = tid_bytes(tid);
    let Some(d) = dir else {
        return match find(page, &ri, None, &want) {
            Some(s) => Probed::Hit(hit_at(page, &ri, s, ri.stable_bucket())),
            None => miss,
        };
    };
    // Worked out at the first candidate only: a miss needs no S.
    let mut target = None;
    let toward = |s: usize| {
        let target = *target.get_or_insert_with(|| ri.stable_bucket());
        let b = ri.bucket_of(s);
        if b != target {
            let next = if b < target { b + 1 } else { b - 1 };
            let slots = ri.slots_of(next);
            prefetch(&page[slots.start * ri.item..slots.end * ri.item]);
        }
    };
    match scan_dir_with::<true>(page, &ri, d, &want, toward) {
        Scan::Holds(s) => {
            let target = *target.get_or_insert_with(|| ri.stable_bucket());
            Probed::Hit(hit_at(page, &ri, s, target))
        }
        Scan::Free(0) => miss,
        Scan::Free(n) => {
            let fps = &page[d.fp_at(ri.first)..d.fp_at(ri.end)];
            let free = nth_zero(fps, rng.below(n)).map(|i| ri.first + i);
            if let Some(s) = free {
                prefetch(slot_bytes(page, s, ri.item));
            }
            Probed::Miss { free }
        }
    }
}

/// The hit in slot `s`; `stable` is the bucket of S.
pub(super) fn hit_at<'a>(page: &'a [u8], ri: &Region, s: usize, stable: usize) -> Hit<'a> {
    Hit {
        slot: s,
        value: &slot_bytes(page, s, ri.item)[1 + TID_LEN..],
        settled: ri.bucket_of(s) == stable,
    }
}

/// Starts loading the directory of a leaf whose cache is valid under `csn`,
/// before the lookup searches the leaf's keys: the directory's lines then
/// arrive while the key search waits on its own.
pub fn prefetch_dir(page: &[u8], layout: &CacheLayout, csn: u32) {
    if !is_valid(page, csn) {
        return;
    }
    if let Some(r) = region(page, layout).filter(|r| r.first < r.end) {
        let at = r.first * r.item;
        let end = (at + DIR_HEADER + r.capacity()).min(r.end * r.item);
        prefetch(&page[at..end]);
    }
}

/// Asks the CPU to start loading the cache lines of `bytes` (a hint: nothing
/// is read, nothing can fault, and on other architectures it does nothing).
pub(super) fn prefetch(bytes: &[u8]) {
    const LINE: usize = 64;
    let start = bytes.as_ptr() as usize & !(LINE - 1);
    let end = bytes.as_ptr() as usize + bytes.len();
    for a in (start..end).step_by(LINE) {
        crate::util::prefetch_line(a as *const u8);
    }
}

/// The slots of the leaf's region that items may use now (the region without
/// its directory's slots), if it is a sane leaf.
pub fn item_slots(page: &[u8], layout: &CacheLayout) -> Option<Region> {
    let r = region(page, layout)?;
    Some(items_of(&r, find_dir(page, &r)))
}

/// How many items the leaf's region holds at most: its slots less those of
/// the directory it has, or would get with its next fill.
pub fn item_capacity(page: &[u8], layout: &CacheLayout) -> usize {
    let Some(r) = region(page, layout) else {
        return 0;
    };
    if let Some(d) = find_dir(page, &r) {
        return items_of(&r, Some(d)).capacity();
    }
    let count = r.capacity();
    let ds = dir_slots(count, r.item);
    if count > 0 && ds * 4 <= count {
        count - ds
    } else {
        count
    }
}

/// The slots the leaf's directory takes, if it has one.
pub fn directory_slots(page: &[u8], layout: &CacheLayout) -> Option<std::ops::Range<usize>> {
    let r = region(page, layout)?;
    let d = find_dir(page, &r)?;
    Some(d.base..d.base + dir_slots(d.count, r.item))
}

/// A cached item, as [`items`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub slot: usize,
    pub tid: Tid,
    pub value: Vec<u8>,
}

/// Every item of the leaf's cache valid under `csn`, in slot order (for
/// statistics and tests).
pub fn items(page: &[u8], layout: &CacheLayout, csn: u32) -> Vec<Item> {
    if !is_valid(page, csn) {
        return Vec::new();
    }
    let Some(r) = region(page, layout) else {
        return Vec::new();
    };
    (r.first..r.end)
        .filter_map(|s| {
            let b = slot_bytes(page, s, r.item);
            (b[0] == TAG).then(|| Item {
                slot: s,
                tid: Tid::decode(&b[1..1 + TID_LEN]),
                value: b[1 + TID_LEN..].to_vec(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::leaf_write::*;
    use super::*;
    use crate::page::PageMut;
    use crate::util::proptest_cases;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// A leaf with `n` entries of `len` bytes each.
    fn leaf(n: usize, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; PAGE_SIZE];
        let mut p = PageMut::init(&mut buf, PageKind::BTreeLeaf, 9);
        for i in 0..n {
            let mut e = vec![0u8; len];
            e[..8].copy_from_slice(&(i as u64).to_be_bytes());
            assert!(p.push(&e).is_some());
        }
        buf
    }

    fn value(tid: Tid, round: u8, len: usize) -> Vec<u8> {
        let mut v = vec![round; len];
        v[0] = tid.page as u8;
        v[len - 1] = tid.slot as u8;
        v
    }

    fn layout() -> CacheLayout {
        CacheLayout::new(25, 4).unwrap()
    }

    /// The zero bytes of `b`, eight at a time: what a fill's `scan_dir` counts.
    fn count_zeros(b: &[u8]) -> usize {
        let mut chunks = b.chunks_exact(8);
        let words: usize = chunks
            .by_ref()
            .map(|c| bytes_marked(zero_bytes(u64::from_le_bytes(c.try_into().unwrap()))))
            .sum();
        words + chunks.remainder().iter().filter(|&&x| x == 0).count()
    }

    #[test]
    fn zero_bytes_are_counted_and_selected_like_a_byte_loop() {
        let mut rng = CacheRng::new(7);
        for len in 0..70 {
            for _ in 0..50 {
                // Mostly 0x00, 0x80 and 0x01 (the bytes a borrow or a carry
                // would confuse), some arbitrary.
                let b: Vec<u8> = (0..len)
                    .map(|_| match rng.below(5) {
                        0 | 1 => 0,
                        2 => 0x80,
                        3 => 1,
                        _ => rng.next_u64() as u8,
                    })
                    .collect();
                let zeros: Vec<usize> = (0..len).filter(|&i| b[i] == 0).collect();
                assert_eq!(count_zeros(&b), zeros.len(), "{b:?}");
                for (k, &i) in zeros.iter().enumerate() {
                    assert_eq!(nth_zero(&b, k), Some(i), "{b:?} k {k}");
                }
                assert_eq!(nth_zero(&b, zeros.len()), None);
            }
        }
    }

    #[test]
    fn layouts_are_checked() {
        assert!(CacheLayout::new(0, 4).is_err());
        assert!(CacheLayout::new(MAX_VALUE + 1, 4).is_err());
        assert!(CacheLayout::new(8, 0).is_err());
        assert_eq!(CacheLayout::new(25, 4).unwrap().item_len(), 32);
    }

    #[test]
    fn an_empty_slot_is_not_tid_zero() {
        let mut page = leaf(10, 20);
        let l = layout();
        let zero = Tid::new(0, 0);
        let mut rng = CacheRng::new(1);
        // A stamped, zeroed region: every slot is empty, none is tid (0,0).
        page::set_cache_stamp(&mut page, 5);
        assert_eq!(lookup(&page, &l, 5, zero), None);
        assert!(items(&page, &l, 5).is_empty());
        let v = vec![7u8; 25];
        assert!(matches!(
            fill(&mut page, &l, 5, zero, &v, &mut rng),
            Filled::Inserted(_)
        ));
        assert_eq!(lookup(&page, &l, 5, zero).unwrap().value, &v[..]);
        assert_eq!(items(&page, &l, 5).len(), 1);
    }

    #[test]
    fn a_stale_stamp_reads_empty_and_the_next_fill_resets() {
        let mut page = leaf(10, 20);
        let l = layout();
        let mut rng = CacheRng::new(2);
        let (a, b) = (Tid::new(1, 1), Tid::new(2, 2));
        fill(&mut page, &l, 3, a, &value(a, 1, 25), &mut rng);
        assert!(lookup(&page, &l, 3, a).is_some());
        assert_eq!(lookup(&page, &l, 4, a), None, "another CSN: stale");
        assert_eq!(lookup(&page, &l, 0, a), None, "CSN 0 is never valid");
        fill(&mut page, &l, 4, b, &value(b, 1, 25), &mut rng);
        assert_eq!(page::cache_stamp(&page), 4);
        assert_eq!(lookup(&page, &l, 4, a), None, "the reset dropped a");
        assert_eq!(items(&page, &l, 4).len(), 1);
        assert_eq!(
            fill(&mut page, &l, 0, a, &value(a, 1, 25), &mut rng),
            Filled::NoRoom
        );
        assert_eq!(
            fill(&mut page, &l, 4, a, &[1, 2], &mut rng),
            Filled::BadValue
        );
    }

    #[test]
    fn one_pass_finds_the_item_or_counts_the_free_slots_like_a_slot_loop() {
        let l = layout();
        let mut rng = CacheRng::new(11);
        for keys in [0, 40, 120] {
            let mut page = leaf(keys, 24);
            let t0 = Tid::new(0, 1);
            fill(&mut page, &l, 1, t0, &value(t0, 0, 25), &mut rng);
            let d = find_dir(&page, &region(&page, &l).unwrap()).expect("a directory");
            let ri = item_slots(&page, &l).unwrap();
            for i in 0..3 * ri.capacity() {
                // Tids repeat (refreshes) and are new (inserts, evictions).
                let t = Tid::new(rng.below(2 * ri.capacity()) as u32, 1);
                let want = tid_bytes(t);
                let free: Vec<usize> = (ri.first..ri.end)
                    .filter(|&s| page[s * ri.item] != TAG)
                    .collect();
                let held =
                    (ri.first..ri.end).find(|&s| holds(slot_bytes(&page, s, ri.item), &want));
                let expect = match held {
                    Some(s) => Scan::Holds(s),
                    None => Scan::Free(free.len()),
                };
                assert_eq!(scan_dir::<true>(&page, &ri, d, &want), expect, "fill {i}");
                match fill(&mut page, &l, 1, t, &value(t, 1, 25), &mut rng) {
                    Filled::Refreshed(s) => assert_eq!(Some(s), held),
                    Filled::Inserted(s) => assert!(held.is_none() && free.contains(&s)),
                    Filled::Evicted(_) => assert!(held.is_none() && free.is_empty()),
                    other => panic!("{other:?}"),
                }
            }
        }
    }

    #[test]
    fn a_probe_answers_like_a_lookup_and_its_free_slot_is_the_fills() {
        let l = layout();
        let mut rng = CacheRng::new(5);
        for keys in [0, 40, 120] {
            let mut page = leaf(keys, 24);
            let ri = item_slots(&page, &l).unwrap();
            for i in 0..3 * ri.capacity() {
                let t = Tid::new(rng.below(2 * ri.capacity()) as u32, 1);
                let seen = lookup(&page, &l, 1, t).map(|h| (h.slot, h.value.to_vec()));
                let hint = match probe(&page, &l, 1, t, &mut rng) {
                    Probed::Hit(h) => {
                        assert_eq!(Some((h.slot, h.value.to_vec())), seen, "probe {i}");
                        None
                    }
                    Probed::Miss { free } => {
                        assert_eq!(seen, None, "probe {i}");
                        // A free slot of the leaf's items, when it has any.
                        let ri = item_slots(&page, &l).unwrap();
                        if let Some(f) = free {
                            assert!((ri.first..ri.end).contains(&f));
                            assert_ne!(page[f * ri.item], TAG, "probe {i}: slot {f} holds an item");
                        }
                        free
                    }
                };
                let v = value(t, 2, 25);
                match fill_admitting(&mut page, &l, 1, t, &v, hint, &mut rng, || true) {
                    Filled::Inserted(s) if hint.is_some() => assert_eq!(Some(s), hint),
                    Filled::Inserted(_) | Filled::Refreshed(_) | Filled::Evicted(_) => {}
                    other => panic!("{other:?}"),
                }
            }
        }
    }

    #[test]
    fn a_fill_takes_its_hint_only_while_the_slot_is_free() {
        let l = layout();
        let mut rng = CacheRng::new(8);
        let mut page = leaf(10, 24);
        let (a, b) = (Tid::new(1, 1), Tid::new(2, 2));
        fill(&mut page, &l, 1, a, &value(a, 0, 25), &mut rng);
        let Probed::Miss { free: Some(f) } = probe(&page, &l, 1, b, &mut rng) else {
            panic!("a miss with a free slot");
        };
        // Another fill took the slot since the probe: the hint is not taken.
        let c = Tid::new(3, 3);
        assert_eq!(
            fill_admitting(
                &mut page,
                &l,
                1,
                c,
                &value(c, 0, 25),
                Some(f),
                &mut rng,
                || true
            ),
            Filled::Inserted(f)
        );
        let got = fill_admitting(
            &mut page,
            &l,
            1,
            b,
            &value(b, 0, 25),
            Some(f),
            &mut rng,
            || true,
        );
        assert!(matches!(got, Filled::Inserted(s) if s != f), "{got:?}");
        assert_eq!(lookup(&page, &l, 1, c).unwrap().value, &value(c, 0, 25)[..]);
        assert_eq!(lookup(&page, &l, 1, b).unwrap().value, &value(b, 0, 25)[..]);
        // A hint outside the items (the directory's own slot) is not taken.
        let d = Tid::new(4, 4);
        let ri = item_slots(&page, &l).unwrap();
        let got = fill_admitting(
            &mut page,
            &l,
            1,
            d,
            &value(d, 0, 25),
            Some(ri.first - 1),
            &mut rng,
            || true,
        );
        assert!(
            matches!(got, Filled::Inserted(s) if s >= ri.first),
            "{got:?}"
        );
        assert!(
            find_dir(&page, &region(&page, &l).unwrap()).is_some(),
            "the directory survives"
        );
    }

    #[test]
    fn a_full_cache_evicts_from_a_peripheral_bucket() {
        let mut page = leaf(60, 24);
        let l = layout();
        let mut rng = CacheRng::new(3);
        // The first fill writes the directory; the rest of the region is
        // the items'.
        let t0 = Tid::new(0, 1);
        fill(&mut page, &l, 1, t0, &value(t0, 0, 25), &mut rng);
        let dir = directory_slots(&page, &l).expect("a directory");
        let r = item_slots(&page, &l).unwrap();
        assert_eq!(r.first, dir.end);
        let cap = r.capacity();
        assert!(cap > 20, "{r:?}");
        for i in 1..cap {
            let t = Tid::new(i as u32, 1);
            assert!(matches!(
                fill(&mut page, &l, 1, t, &value(t, 0, 25), &mut rng),
                Filled::Inserted(_)
            ));
        }
        let (lo, hi) = (r.bucket_of(r.first), r.bucket_of(r.end - 1));
        for i in 0..200 {
            let t = Tid::new(10_000 + i, 2);
            match fill(&mut page, &l, 1, t, &value(t, 0, 25), &mut rng) {
                Filled::Evicted(s) => {
                    let b = r.bucket_of(s);
                    assert!(
                        b == lo || b == hi,
                        "evicted from bucket {b}, not {lo} or {hi}"
                    );
                }
                other => panic!("{other:?}"),
            }
            assert_eq!(items(&page, &l, 1).len(), cap);
        }
        // Refreshing a cached tid replaces its value in place.
        let t = Tid::new(cap as u32 / 2, 1);
        if let Some(h) = lookup(&page, &l, 1, t) {
            let s = h.slot;
            assert_eq!(
                fill(&mut page, &l, 1, t, &value(t, 9, 25), &mut rng),
                Filled::Refreshed(s)
            );
            assert_eq!(lookup(&page, &l, 1, t).unwrap().value, &value(t, 9, 25)[..]);
        }
    }

    #[test]
    fn the_stable_point_is_where_the_fronts_meet() {
        // 100 entries of 36 bytes: the upper front moves 9 times as fast as the
        // lower one, so S is a tenth of the way up the region.
        let page = leaf(100, 36);
        let r = region(&page, &layout()).unwrap();
        assert_eq!(r.stable_point(), r.lower + (r.upper - r.lower) / 10);
        // Inserting entries of the average size leaves S (almost) where it is.
        let mut grown = page.clone();
        let mut p = PageMut::new(&mut grown);
        for _ in 0..20 {
            assert!(p.insert_at(0, &[1u8; 36]));
        }
        let r2 = region(&grown, &layout()).unwrap();
        assert!(r2.stable_point().abs_diff(r.stable_point()) <= 1);
        // An empty leaf: the middle.
        let empty = leaf(0, 0);
        let r = region(&empty, &layout()).unwrap();
        assert_eq!(r.stable_point(), (r.lower + r.upper) / 2);
    }

    #[test]
    fn hits_move_an_item_one_bucket_toward_s_until_it_is_there() {
        let mut page = leaf(40, 20);
        let l = CacheLayout::new(25, 2).unwrap();
        let mut rng = CacheRng::new(4);
        let t0 = Tid::new(0, 0);
        fill(&mut page, &l, 7, t0, &value(t0, 0, 25), &mut rng);
        let r = item_slots(&page, &l).unwrap();
        // Fill the whole cache, then follow the item in the lowest slot.
        for i in 1..r.capacity() {
            let t = Tid::new(i as u32, 0);
            fill(&mut page, &l, 7, t, &value(t, 0, 25), &mut rng);
        }
        let target = r.stable_bucket();
        for start in [r.first, r.end - 1] {
            let t = items(&page, &l, 7)
                .into_iter()
                .find(|i| i.slot == start)
                .unwrap()
                .tid;
            let before: HashMap<Tid, Vec<u8>> = items(&page, &l, 7)
                .into_iter()
                .map(|i| (i.tid, i.value))
                .collect();
            let mut slot = start;
            let mut hits = 0;
            while r.bucket_of(slot) != target {
                let h = lookup(&page, &l, 7, t).unwrap();
                assert_eq!(h.slot, slot);
                let d = r.bucket_of(slot).abs_diff(target);
                slot = promote(&mut page, &l, 7, t, slot, &mut rng).unwrap();
                assert_eq!(r.bucket_of(slot).abs_diff(target), d - 1);
                hits += 1;
            }
            assert!(hits > 0);
            assert_eq!(promote(&mut page, &l, 7, t, slot, &mut rng), Some(slot));
            // Swaps move items, never lose or change one.
            let after: HashMap<Tid, Vec<u8>> = items(&page, &l, 7)
                .into_iter()
                .map(|i| (i.tid, i.value))
                .collect();
            assert_eq!(before, after);
        }
        // A promote of a slot that does not hold the tid does nothing.
        let snapshot = page.clone();
        assert_eq!(
            promote(&mut page, &l, 7, Tid::new(999_999, 9), r.first, &mut rng),
            None
        );
        assert_eq!(
            promote(&mut page, &l, 8, Tid::new(0, 0), r.first, &mut rng),
            None
        );
        assert_eq!(page, snapshot);
    }

    /// The point of swapping toward S (the paper's Swap and Shrink): after a
    /// skewed run of hits, key inserts that take half of the free region
    /// leave the hot items and overwrite mostly cold ones.
    #[test]
    fn hot_items_outlive_cold_ones_when_inserts_shrink_the_region() {
        let mut page = leaf(100, 20);
        let l = layout();
        let mut rng = CacheRng::new(11);
        let r = region(&page, &l).unwrap();
        let t0 = Tid::new(0, 0);
        fill(&mut page, &l, 1, t0, &value(t0, 0, 25), &mut rng);
        let cap = item_slots(&page, &l).unwrap().capacity();
        for i in 1..cap {
            let t = Tid::new(i as u32, 0);
            fill(&mut page, &l, 1, t, &value(t, 0, 25), &mut rng);
        }
        let hot: Vec<Tid> = (0..cap)
            .step_by(cap / 16)
            .map(|i| Tid::new(i as u32, 0))
            .collect();
        for _ in 0..3000 {
            let t = hot[rng.below(hot.len())];
            let slot = lookup(&page, &l, 1, t).unwrap().slot;
            promote(&mut page, &l, 1, t, slot, &mut rng).unwrap();
        }
        // Entries of the leaf's average size, until half the region is gone.
        let mut p = PageMut::new(&mut page);
        while p.view().free_space() > (r.upper - r.lower) / 2 {
            let n = p.view().n_slots();
            assert!(p.insert_at(rng.below(n as usize + 1) as u16, &[0x77u8; 20]));
        }
        let left: std::collections::HashSet<Tid> =
            items(&page, &l, 1).into_iter().map(|i| i.tid).collect();
        let hot_kept = hot.iter().filter(|t| left.contains(t)).count();
        let cold_kept = left.len() - hot_kept;
        let cold = cap - hot.len();
        assert_eq!(hot_kept, hot.len(), "every hot item survives");
        assert!(
            (cold_kept as f64) < 0.55 * cold as f64,
            "{cold_kept} of {cold} cold items survive"
        );
    }

    #[test]
    fn key_inserts_overwrite_the_periphery_only() {
        let mut page = leaf(30, 20);
        let l = layout();
        let mut rng = CacheRng::new(5);
        let r = region(&page, &l).unwrap();
        for i in 0..r.capacity() {
            let t = Tid::new(i as u32, 3);
            fill(&mut page, &l, 2, t, &value(t, 1, 25), &mut rng);
        }
        let before = items(&page, &l, 2);
        let mut p = PageMut::new(&mut page);
        for i in 0..10 {
            assert!(p.insert_at(i, &[0xFFu8; 40]));
        }
        let r2 = region(&page, &l).unwrap();
        assert!(r2.capacity() < r.capacity());
        let kept: Vec<Item> = before
            .into_iter()
            .filter(|i| (r2.first..r2.end).contains(&i.slot))
            .collect();
        assert_eq!(items(&page, &l, 2), kept);
        assert!(!kept.is_empty());
    }

    #[test]
    fn fingerprints_are_never_an_empty_slot_or_a_tag() {
        let mut seen = [false; 256];
        for page in 0..2000u32 {
            for slot in 0..8u16 {
                seen[fingerprint(&tid_bytes(Tid::new(page * 7919, slot))) as usize] = true;
            }
        }
        assert!(!seen[0] && !seen[TAG as usize] && !seen[DIR_TAG as usize]);
        let unused: Vec<usize> = (0..256).filter(|&b| !seen[b]).collect();
        assert_eq!(
            unused,
            [0, TAG as usize, DIR_TAG as usize],
            "every other byte is used"
        );
    }

    /// The directory finds what a pass over the slots finds; a key insert
    /// that overwrites its first slot leaves lookups to such passes (still
    /// right), and the next fill writes a new one over the new first slots.
    #[test]
    fn a_lost_directory_falls_back_to_a_scan_and_is_rebuilt() {
        let mut page = leaf(40, 20);
        let l = layout();
        let mut rng = CacheRng::new(12);
        let t0 = Tid::new(0, 0);
        fill(&mut page, &l, 3, t0, &value(t0, 0, 25), &mut rng);
        let dir = directory_slots(&page, &l).unwrap();
        let cap = item_slots(&page, &l).unwrap().capacity();
        assert_eq!(item_capacity(&page, &l), cap);
        for i in 1..cap as u32 {
            let t = Tid::new(i, 0);
            assert!(matches!(
                fill(&mut page, &l, 3, t, &value(t, 0, 25), &mut rng),
                Filled::Inserted(_)
            ));
        }
        let all = items(&page, &l, 3);
        assert_eq!(all.len(), cap);
        assert!(all.iter().all(|i| !dir.contains(&i.slot)));
        for i in &all {
            assert_eq!(lookup(&page, &l, 3, i.tid).unwrap().slot, i.slot);
        }
        assert_eq!(lookup(&page, &l, 3, Tid::new(9999, 0)), None);
        // Entries until the directory's first slot is overwritten.
        let mut p = PageMut::new(&mut page);
        while region(p.view().bytes(), &l).unwrap().first == dir.start {
            assert!(p.insert_at(0, &[0x33u8; 20]));
        }
        assert_eq!(directory_slots(&page, &l), None);
        let r = region(&page, &l).unwrap();
        assert_eq!(
            item_capacity(&page, &l),
            r.capacity() - dir_slots(r.capacity(), r.item),
            "counted as if the next fill's directory were there"
        );
        let left = items(&page, &l, 3);
        assert!(!left.is_empty());
        for i in &left {
            assert_eq!(lookup(&page, &l, 3, i.tid).unwrap().value, &i.value[..]);
        }
        let t = Tid::new(50_000, 1);
        let got = fill(&mut page, &l, 3, t, &value(t, 0, 25), &mut rng);
        let dir2 = directory_slots(&page, &l).expect("rebuilt");
        assert_eq!(dir2.start, region(&page, &l).unwrap().first);
        let evicted = match got {
            Filled::Evicted(s) => Some(s),
            Filled::Inserted(_) => None,
            other => panic!("{other:?}"),
        };
        let kept: Vec<Item> = left
            .into_iter()
            .filter(|i| !dir2.contains(&i.slot) && Some(i.slot) != evicted)
            .collect();
        for i in &kept {
            assert_eq!(lookup(&page, &l, 3, i.tid).unwrap().value, &i.value[..]);
        }
        assert_eq!(items(&page, &l, 3).len(), kept.len() + 1);
        // A region too small for a directory to pay (a quarter of it or
        // more) is scanned instead.
        let mut small = leaf(0, 0);
        let tiny = CacheLayout::new(2000, 4).unwrap();
        fill(&mut small, &tiny, 1, t, &[5u8; 2000], &mut rng);
        assert_eq!(directory_slots(&small, &tiny), None);
        assert_eq!(lookup(&small, &tiny, 1, t).unwrap().value, &[5u8; 2000][..]);
    }

    /// A delete's compaction with the cache carried across: every item but
    /// the deleted tid's comes back with its value, and an item whose tail an
    /// entry had overwritten (its slot cut off by the region's top) does not
    /// come back as half an item.
    #[test]
    fn a_delete_keeps_the_cache_but_the_deleted_item_and_never_half_an_item() {
        let l = layout();
        let mut rng = CacheRng::new(13);
        let mut page = leaf(60, 20);
        let r = region(&page, &l).unwrap();
        for i in 0..r.capacity() as u32 {
            let t = Tid::new(i, 2);
            fill(&mut page, &l, 4, t, &value(t, 1, 25), &mut rng);
        }
        // An entry whose bytes reach into the top slot's tail.
        let top = r.end - 1;
        let cut = items(&page, &l, 4)
            .into_iter()
            .find(|i| i.slot == top)
            .expect("the top slot holds an item");
        let len = r.upper - (top * r.item + r.item / 2);
        assert!(PageMut::new(&mut page).insert_at(0, &vec![0x42u8; len]));
        let r2 = region(&page, &l).unwrap();
        assert!(r2.end <= top, "the top slot left the region");
        let before = items(&page, &l, 4);
        let gone = before[before.len() / 2].tid;
        // Delete that entry again: the region grows back over the top slot.
        let c = carry(&page, &l, 4).unwrap();
        PageMut::new(&mut page).remove_at(0);
        assert!(restore(&mut page, &l, &c, &[gone], &mut rng));
        let after = items(&page, &l, 4);
        let expect: Vec<Item> = before.into_iter().filter(|i| i.tid != gone).collect();
        assert_eq!(after, expect);
        assert!(after.iter().all(|i| i.tid != cut.tid), "no half item");
        for i in &after {
            assert_eq!(i.value, value(i.tid, 1, 25));
            assert_eq!(lookup(&page, &l, 4, i.tid).unwrap().value, &i.value[..]);
        }
        assert_eq!(lookup(&page, &l, 4, gone), None);
        // A stale cache is not carried; a changed stamp refuses the restore.
        assert!(carry(&page, &l, 5).is_none());
        let c = carry(&page, &l, 4).unwrap();
        PageMut::new(&mut page).remove_at(0);
        page::set_cache_stamp(&mut page, 6);
        assert!(!restore(&mut page, &l, &c, &[], &mut rng));

        // Deletes on a leaf with a directory: the region grows at both ends,
        // past what the directory covers, and it is written again over the
        // region's first slots at once, every item kept and found through it.
        let mut page = leaf(60, 20);
        let cap = item_capacity(&page, &l);
        for i in 0..cap as u32 / 2 {
            let t = Tid::new(i, 2);
            fill(&mut page, &l, 4, t, &value(t, 1, 25), &mut rng);
        }
        let first = directory_slots(&page, &l).unwrap().start;
        let before = as_map(&items(&page, &l, 4));
        for _ in 0..10 {
            let c = carry(&page, &l, 4).unwrap();
            PageMut::new(&mut page).remove_at(3);
            assert!(restore(&mut page, &l, &c, &[], &mut rng));
            let r = region(&page, &l).unwrap();
            assert_eq!(directory_slots(&page, &l).map(|d| d.start), Some(r.first));
        }
        assert!(
            region(&page, &l).unwrap().first < first,
            "the region grew down"
        );
        assert_eq!(as_map(&items(&page, &l, 4)), before);
        for (t, v) in &before {
            assert_eq!(lookup(&page, &l, 4, *t).unwrap().value, &v[..]);
        }
    }

    #[test]
    fn damaged_pages_read_as_no_cache() {
        let l = layout();
        let mut rng = CacheRng::new(6);
        let t = Tid::new(1, 1);
        // Not a leaf.
        let mut heap = leaf(5, 20);
        heap[12] = PageKind::Heap as u8;
        assert_eq!(
            fill(&mut heap, &l, 1, t, &[0; 25], &mut rng),
            Filled::NoRoom
        );
        assert_eq!(lookup(&heap, &l, 1, t), None);
        // Bounds that disagree with the slot count, or cross.
        for (lower, upper) in [(49, 8000), (8100, 100), (48, 9000)] {
            let mut p = leaf(0, 0);
            p[16..18].copy_from_slice(&(lower as u16).to_le_bytes());
            p[18..20].copy_from_slice(&(upper as u16).to_le_bytes());
            page::set_cache_stamp(&mut p, 1);
            assert_eq!(fill(&mut p, &l, 1, t, &[0; 25], &mut rng), Filled::NoRoom);
            assert_eq!(lookup(&p, &l, 1, t), None);
            assert!(items(&p, &l, 1).is_empty());
            assert_eq!(promote(&mut p, &l, 1, t, 10, &mut rng), None);
        }
        // Short slices are not pages.
        assert_eq!(region(&[0u8; 100], &l), None);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Fill(u8, u8),
        Lookup(u8),
        InsertEntry(u16, u8),
        InsertKeeping(u16, u8),
        DeleteEntry(u16),
        DeleteKeeping(u16),
        Invalidate,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..60, any::<u8>()).prop_map(|(t, v)| Op::Fill(t, v)),
            4 => (0u8..60).prop_map(Op::Lookup),
            2 => (any::<u16>(), 6u8..80).prop_map(|(p, l)| Op::InsertEntry(p, l)),
            2 => (any::<u16>(), 6u8..80).prop_map(|(p, l)| Op::InsertKeeping(p, l)),
            1 => any::<u16>().prop_map(Op::DeleteEntry),
            2 => any::<u16>().prop_map(Op::DeleteKeeping),
            1 => Just(Op::Invalidate),
        ]
    }

    fn as_map(items: &[Item]) -> HashMap<Tid, Vec<u8>> {
        items.iter().map(|i| (i.tid, i.value.clone())).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(proptest_cases(32)))]

        /// Random fills, hits, key inserts, deletes and invalidations against a
        /// model of what was filled under the current CSN: the cache never
        /// returns a tid that was not filled or a value other than the last
        /// one filled; a fill with a free slot evicts nothing; a hit only moves
        /// items; a key insert drops exactly the items whose slots left the
        /// region; an invalidation empties the cache.
        #[test]
        fn the_cache_agrees_with_a_model(
            entries in 0usize..120,
            entry_len in 8usize..60,
            value_len in 1usize..40,
            bucket in 1usize..9,
            seed in any::<u64>(),
            ops in proptest::collection::vec(op(), 1..300),
        ) {
            let l = CacheLayout::new(value_len, bucket).unwrap();
            let mut page = leaf(entries.min((PAGE_SIZE - HEADER_SIZE) / (entry_len + SLOT_SIZE)), entry_len);
            let mut rng = CacheRng::new(seed);
            let mut csn = 1u32;
            let mut model: HashMap<Tid, Vec<u8>> = HashMap::new();
            for op in ops {
                let before = items(&page, &l, csn);
                match op {
                    Op::Fill(t, round) => {
                        let tid = Tid::new(t as u32 * 7, t as u16);
                        let v = value(tid, round, value_len);
                        let had = model.contains_key(&tid);
                        // Some tids may not evict (an admission check says no).
                        let admits = t % 3 != 0;
                        let asked = std::cell::Cell::new(false);
                        let got = fill_admitting(&mut page, &l, csn, tid, &v, None, &mut rng, || {
                            asked.set(true);
                            admits
                        });
                        // A directory the fill wrote took the items of its slots.
                        let dir = directory_slots(&page, &l).unwrap_or(0..0);
                        let before: Vec<Item> = before.into_iter().filter(|i| !dir.contains(&i.slot)).collect();
                        let had = had && before.iter().any(|i| i.tid == tid);
                        let cap = item_slots(&page, &l).map_or(0, |r| r.capacity());
                        let free = cap - before.len();
                        match got {
                            Filled::Inserted(_) => prop_assert!(!had && free > 0),
                            Filled::Evicted(_) => prop_assert!(!had && free == 0 && admits),
                            Filled::Refreshed(_) => prop_assert!(had),
                            Filled::NoRoom => prop_assert_eq!(cap, 0),
                            Filled::BadValue => prop_assert!(false, "bad value"),
                            Filled::Rejected => {
                                prop_assert!(!had && free == 0 && !admits);
                                prop_assert_eq!(items(&page, &l, csn), before.clone());
                            }
                        }
                        // Asked exactly when it would evict.
                        prop_assert_eq!(asked.get(), !had && free == 0 && cap > 0);
                        if got == Filled::Rejected {
                            continue;
                        }
                        if got != Filled::NoRoom {
                            model.insert(tid, v.clone());
                            prop_assert_eq!(lookup(&page, &l, csn, tid).map(|h| h.value.to_vec()), Some(v));
                        }
                        let after = as_map(&items(&page, &l, csn));
                        let mut expect = as_map(&before);
                        if got != Filled::NoRoom {
                            expect.insert(tid, model[&tid].clone());
                        }
                        if matches!(got, Filled::Evicted(_)) {
                            prop_assert_eq!(after.len(), expect.len() - 1);
                            prop_assert!(after.iter().all(|(k, v)| expect.get(k) == Some(v)));
                        } else {
                            prop_assert_eq!(after, expect);
                        }
                    }
                    Op::Lookup(t) => {
                        let tid = Tid::new(t as u32 * 7, t as u16);
                        if let Some(h) = lookup(&page, &l, csn, tid) {
                            prop_assert_eq!(Some(&h.value.to_vec()), model.get(&tid));
                            let slot = h.slot;
                            let had_dir = directory_slots(&page, &l).is_some();
                            let moved = promote(&mut page, &l, csn, tid, slot, &mut rng);
                            // A promotion writes a directory where a key insert
                            // destroyed it, taking the items of its slots.
                            let dir = directory_slots(&page, &l).unwrap_or(0..0);
                            let before: Vec<Item> = if had_dir { before } else {
                                before.into_iter().filter(|i| !dir.contains(&i.slot)).collect()
                            };
                            match moved {
                                Some(moved) => {
                                    let r = item_slots(&page, &l).unwrap();
                                    let d = r.bucket_of(slot).abs_diff(r.stable_bucket());
                                    let d2 = r.bucket_of(moved).abs_diff(r.stable_bucket());
                                    prop_assert_eq!(d2, d.saturating_sub(1));
                                }
                                None => prop_assert!(!had_dir && dir.contains(&slot)),
                            }
                            prop_assert_eq!(as_map(&items(&page, &l, csn)), as_map(&before));
                        }
                    }
                    Op::InsertEntry(pos, len) => {
                        let mut p = PageMut::new(&mut page);
                        let n = p.view().n_slots();
                        if p.insert_at(pos % (n + 1), &vec![0xEEu8; len as usize]) {
                            let r = region(&page, &l).unwrap();
                            let kept: Vec<Item> = before.into_iter().filter(|i| (r.first..r.end).contains(&i.slot)).collect();
                            prop_assert_eq!(items(&page, &l, csn), kept);
                        }
                    }
                    Op::InsertKeeping(pos, len) => {
                        // What `BTree::insert` does: the items the insert
                        // writes over move to free slots, and only when none
                        // is left are they lost.
                        let entry = vec![0xEEu8; len as usize];
                        let d = displaced(&page, &l, csn, SLOT_SIZE, entry.len());
                        let n = PageView::new(&page).n_slots();
                        let had_dir = is_valid(&page, csn) && directory_slots(&page, &l).is_some();
                        if PageMut::new(&mut page).insert_at(pos % (n + 1), &entry) {
                            if let Some(d) = d {
                                put_back(&mut page, &l, d, &mut rng);
                            }
                            let now = items(&page, &l, csn);
                            let cap = item_slots(&page, &l).map_or(0, |r| r.capacity());
                            prop_assert_eq!(now.len(), before.len().min(cap), "lost only for want of a slot");
                            let before_map = as_map(&before);
                            prop_assert!(now.iter().all(|i| before_map.get(&i.tid) == Some(&i.value)));
                            // An item not in the insert's way keeps its slot.
                            let r = item_slots(&page, &l).unwrap();
                            for b in before.iter().filter(|b| (r.first..r.end).contains(&b.slot)) {
                                prop_assert!(now.iter().any(|i| i.slot == b.slot && i.tid == b.tid), "{:?} moved", b.tid);
                            }
                            // A directory the insert cut off is there again.
                            if had_dir && cap > 0 && directory_slots(&page, &l).is_none() {
                                let r = region(&page, &l).unwrap();
                                prop_assert!(dir_slots(r.capacity(), r.item) * 4 > r.capacity());
                            }
                            for i in &now {
                                prop_assert_eq!(lookup(&page, &l, csn, i.tid).map(|h| h.slot), Some(i.slot));
                            }
                        }
                    }
                    Op::DeleteKeeping(pos) => {
                        // What `BTree::delete` does: the cache is carried
                        // over the compaction, its directory kept usable.
                        let n = PageView::new(&page).n_slots();
                        if n > 0 {
                            let c = carry(&page, &l, csn);
                            PageMut::new(&mut page).remove_at(pos % n);
                            if let Some(c) = &c {
                                prop_assert!(restore(&mut page, &l, c, &[], &mut rng));
                            }
                            let now = items(&page, &l, csn);
                            let cap = item_slots(&page, &l).map_or(0, |r| r.capacity());
                            prop_assert_eq!(now.len(), before.len().min(cap));
                            let before_map = as_map(&before);
                            prop_assert!(now.iter().all(|i| before_map.get(&i.tid) == Some(&i.value)));
                            for i in &now {
                                prop_assert_eq!(lookup(&page, &l, csn, i.tid).map(|h| h.slot), Some(i.slot));
                            }
                        }
                    }
                    Op::DeleteEntry(pos) => {
                        let mut p = PageMut::new(&mut page);
                        let n = p.view().n_slots();
                        if n > 0 {
                            p.remove_at(pos % n);
                            // Compaction zeroes the free region: the items are gone.
                            prop_assert!(items(&page, &l, csn).is_empty());
                        }
                    }
                    Op::Invalidate => {
                        csn += 1;
                        prop_assert!(items(&page, &l, csn).is_empty());
                    }
                }
                // Never an item that was not filled, never a wrong value.
                let now = items(&page, &l, csn);
                let tids: std::collections::HashSet<Tid> = now.iter().map(|i| i.tid).collect();
                prop_assert_eq!(tids.len(), now.len(), "a tid cached twice");
                for i in &now {
                    prop_assert_eq!(Some(&i.value), model.get(&i.tid));
                }
                // The model forgets what the cache lost, so a later fill of it
                // counts as new.
                let kept = as_map(&now);
                model.retain(|k, _| kept.contains_key(k));
            }
        }

        /// Any bytes at all: no operation panics, and a page whose stamp is
        /// not the CSN reads as empty.
        #[test]
        fn arbitrary_bytes_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), PAGE_SIZE),
            leafy in any::<bool>(),
            stamp_matches in any::<bool>(),
            slot in 0usize..400,
            seed in any::<u64>(),
        ) {
            let mut page = bytes;
            if leafy {
                page[12] = PageKind::BTreeLeaf as u8;
            }
            let l = layout();
            let csn = if stamp_matches { page::cache_stamp(&page).max(1) } else { 0x5EED };
            let stale = page::cache_stamp(&page) != csn;
            let t = Tid::new(3, 4);
            let mut rng = CacheRng::new(seed);
            prefetch_dir(&page, &l, csn);
            if stale {
                prop_assert_eq!(lookup(&page, &l, csn, t), None);
                prop_assert_eq!(probe(&page, &l, csn, t, &mut rng), Probed::Miss { free: None });
                prop_assert!(items(&page, &l, csn).is_empty());
            } else {
                let _ = lookup(&page, &l, csn, t);
                let _ = probe(&page, &l, csn, t, &mut rng);
                let _ = items(&page, &l, csn);
            }
            let _ = promote(&mut page, &l, csn, t, slot, &mut rng);
            let v = vec![1u8; 25];
            // Any hint, even one pointing anywhere: checked before it is used.
            let hint = Some(slot);
            if !matches!(
                fill_admitting(&mut page, &l, csn, t, &v, hint, &mut rng, || true),
                Filled::NoRoom
            ) {
                // A fill over a stale region zeroed it first: only t is there.
                if stale {
                    prop_assert_eq!(as_map(&items(&page, &l, csn)), HashMap::from([(t, v.clone())]));
                }
                prop_assert_eq!(lookup(&page, &l, csn, t).map(|h| h.value.to_vec()), Some(v));
            }
        }
    }
}
