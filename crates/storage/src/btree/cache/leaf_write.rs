//! Changing one leaf's index cache (No Bits Left Behind §2.1): fills (with
//! admission), promotions, and carrying the items across a leaf split. The
//! format and reads are `leaf.rs`.

use crate::page::{self};
use crate::row::Tid;

use super::leaf::*;

/// What [`fill`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filled {
    /// Put in free slot `slot`.
    Inserted(usize),
    /// No slot was free: an item of the peripheral bucket in `slot` made room.
    Evicted(usize),
    /// The tid was cached already; its value in `slot` was replaced.
    Refreshed(usize),
    /// No slot was free and the admission check kept the items there
    /// ([`fill_admitting`]).
    Rejected,
    /// The leaf has no slot wholly inside its free region (or is not a sane
    /// leaf, or the CSN is 0).
    NoRoom,
    /// The value is not `value_len` bytes long.
    BadValue,
}

/// The directory of a leaf whose cache is valid, built if it has none and the
/// region is large enough for one.
fn dir_or_build(page: &mut [u8], r: &Region) -> Option<Dir> {
    find_dir(page, r).or_else(|| build_dir(page, r))
}

/// Caches `value` for `tid` on this leaf under CSN `csn`. A leaf whose stamp
/// differs (a stale cache) is zeroed and stamped with `csn` first; a leaf
/// without a directory gets one (see the module docs).
pub fn fill(
    page: &mut [u8],
    layout: &CacheLayout,
    csn: u32,
    tid: Tid,
    value: &[u8],
    rng: &mut CacheRng,
) -> Filled {
    fill_admitting(page, layout, csn, tid, value, None, rng, || true)
}

/// [`fill`], asking `admit` before it evicts an item (it is not called while
/// a slot is free): when it says no, nothing is written
/// ([`Filled::Rejected`]). `hint` is a free slot [`probe`] picked at random
/// when it missed; it is taken if it is still free, else another random
/// free slot is.
#[allow(clippy::too_many_arguments)]
pub fn fill_admitting(
    page: &mut [u8],
    layout: &CacheLayout,
    csn: u32,
    tid: Tid,
    value: &[u8],
    hint: Option<usize>,
    rng: &mut CacheRng,
    admit: impl FnOnce() -> bool,
) -> Filled {
    if value.len() != layout.value_len {
        return Filled::BadValue;
    }
    let Some(r) = region(page, layout) else {
        return Filled::NoRoom;
    };
    if csn == 0 {
        return Filled::NoRoom;
    }
    if page::cache_stamp(page) != csn {
        page[r.lower..r.upper].fill(0);
        page::set_cache_stamp(page, csn);
    }
    let dir = dir_or_build(page, &r);
    let ri = items_of(&r, dir);
    if ri.first >= ri.end {
        return Filled::NoRoom;
    }
    let want = tid_bytes(tid);
    // With a directory, one pass finds the item or counts the free slots.
    let (held, free) = match dir {
        Some(d) => match scan_dir::<true>(page, &ri, d, &want) {
            Scan::Holds(s) => (Some(s), 0),
            Scan::Free(n) => (None, n),
        },
        None => (find(page, &ri, None, &want), 0),
    };
    if let Some(s) = held {
        write_item(page, s, &want, value);
        return Filled::Refreshed(s);
    }
    let free = dir.is_some().then_some(free);
    let hinted = hint
        .filter(|&h| dir.is_some_and(|d| (ri.first..ri.end).contains(&h) && page[d.fp_at(h)] == 0));
    let (s, done) = match hinted.or_else(|| random_free_slot(page, &ri, dir, free, rng)) {
        Some(s) => (s, Filled::Inserted(s)),
        None if !admit() => return Filled::Rejected,
        None => {
            let slots = ri.slots_of(ri.peripheral_bucket(rng));
            let s = slots.start + rng.below(slots.len());
            (s, Filled::Evicted(s))
        }
    };
    write_item(page, s, &want, value);
    if let Some(d) = dir {
        page[d.fp_at(s)] = fingerprint(&want);
    }
    done
}

/// [`fill`] into `slot`, the free slot a [`probe`] of this page picked when
/// it found no item for `tid`, with nothing written to the page since (the
/// caller knows it from the buffer frame's version): the probe passed over
/// every fingerprint already, so the item goes straight into the slot.
/// `None`, with nothing written, when the page does not look as that probe
/// left it (the caller then fills the usual way).
pub fn fill_probed(
    page: &mut [u8],
    layout: &CacheLayout,
    csn: u32,
    tid: Tid,
    value: &[u8],
    slot: usize,
) -> Option<Filled> {
    if value.len() != layout.value_len || !is_valid(page, csn) {
        return None;
    }
    let r = region(page, layout)?;
    let d = find_dir(page, &r)?;
    let ri = items_of(&r, Some(d));
    if !(ri.first..ri.end).contains(&slot) || page[d.fp_at(slot)] != 0 {
        return None;
    }
    let want = tid_bytes(tid);
    write_item(page, slot, &want, value);
    page[d.fp_at(slot)] = fingerprint(&want);
    Some(Filled::Inserted(slot))
}

/// A random free slot of `ri` (the item slots), if any; `free` is their
/// number when a directory pass has counted them already.
fn random_free_slot(
    page: &[u8],
    ri: &Region,
    dir: Option<Dir>,
    free: Option<usize>,
    rng: &mut CacheRng,
) -> Option<usize> {
    match dir {
        Some(d) => {
            let fps = &page[d.fp_at(ri.first)..d.fp_at(ri.end)];
            let free = free.unwrap_or_else(|| fps.iter().filter(|&&b| b == 0).count());
            if free == 0 {
                return None;
            }
            nth_zero(fps, rng.below(free)).map(|i| ri.first + i)
        }
        None => {
            let is_free = |s: &usize| page[s * ri.item] != TAG;
            let free = (ri.first..ri.end).filter(is_free).count();
            if free == 0 {
                return None;
            }
            (ri.first..ri.end).filter(is_free).nth(rng.below(free))
        }
    }
}

/// A hit on the item of `tid` in `slot`: swaps it with a random slot of the
/// adjacent bucket closer to S (an item there moves out to `slot`; an empty
/// slot simply trades places). Returns the item's slot afterwards, or `None`
/// when the cache is not valid under `csn` or `slot` does not hold `tid`
/// (something changed since the lookup, or the directory this write built
/// took its slot).
pub fn promote(
    page: &mut [u8],
    layout: &CacheLayout,
    csn: u32,
    tid: Tid,
    slot: usize,
    rng: &mut CacheRng,
) -> Option<usize> {
    if !is_valid(page, csn) {
        return None;
    }
    let r = region(page, layout)?;
    let dir = dir_or_build(page, &r);
    let ri = items_of(&r, dir);
    if !(ri.first..ri.end).contains(&slot)
        || !holds(slot_bytes(page, slot, r.item), &tid_bytes(tid))
    {
        return None;
    }
    let (b, target) = (ri.bucket_of(slot), ri.stable_bucket());
    if b == target {
        return Some(slot);
    }
    let next = if b < target { b + 1 } else { b - 1 };
    let slots = ri.slots_of(next);
    if slots.is_empty() {
        return Some(slot);
    }
    let other = slots.start + rng.below(slots.len());
    let (lo, hi) = (slot.min(other), slot.max(other));
    let (head, tail) = page.split_at_mut(hi * r.item);
    head[lo * r.item..(lo + 1) * r.item].swap_with_slice(&mut tail[..r.item]);
    if let Some(d) = dir {
        page.swap(d.fp_at(lo), d.fp_at(hi));
    }
    Some(other)
}

/// Whether the leaf's cache, valid under `csn`, holds an item for any of
/// `tids` (sorted ascending): a directory probe per tid when there are few,
/// else one pass over the slots with a binary search per item. The predicate
/// log's check of a leaf (§2.1.2, `protocol.rs`).
pub fn holds_any(page: &[u8], layout: &CacheLayout, csn: u32, tids: &[Tid]) -> bool {
    if tids.is_empty() || !is_valid(page, csn) {
        return false;
    }
    let Some(r) = region(page, layout) else {
        return false;
    };
    let dir = find_dir(page, &r);
    let ri = items_of(&r, dir);
    if dir.is_some() && tids.len() <= 32 {
        return tids
            .iter()
            .any(|&t| find(page, &ri, dir, &tid_bytes(t)).is_some());
    }
    (ri.first..ri.end).any(|s| {
        let b = slot_bytes(page, s, r.item);
        b[0] == TAG && tids.binary_search(&Tid::decode(&b[1..1 + TID_LEN])).is_ok()
    })
}

/// The items a key insert is about to write over, copied aside
/// ([`displaced`], then [`put_back`]).
pub struct Displaced {
    stamp: u32,
    /// Whether the leaf had a directory, which the insert may cut off.
    had_dir: bool,
    /// (slot, item bytes) of each item in a slot the insert may take.
    items: Vec<(usize, Vec<u8>)>,
}

/// The items in the slots that an insert taking `low` bytes at the lower end
/// of the free region (directory pointers) and `high` bytes at its upper end
/// (entries) may overwrite, if the cache is valid under `csn`. `None` when
/// there are none and the directory is out of reach: then the insert costs
/// the cache nothing.
///
/// The paper lets inserts "overwrite the periphery freely". strata moves
/// those items into free slots instead ([`put_back`]), and loses them only
/// when no slot is free: the periphery holds the items that hits have not
/// promoted yet, not only cold ones, and while the cache has room there is no
/// reason to drop them (Fig. 2a's Shrink).
pub fn displaced(
    page: &[u8],
    layout: &CacheLayout,
    csn: u32,
    low: usize,
    high: usize,
) -> Option<Displaced> {
    if !is_valid(page, csn) {
        return None;
    }
    let r = region(page, layout)?;
    if r.first >= r.end {
        return None;
    }
    let dir = find_dir(page, &r);
    let ri = items_of(&r, dir);
    // Slots with a byte in [lower, lower + low) or [upper - high, upper).
    let (low_end, high_start) = (r.lower + low, r.upper.saturating_sub(high));
    let low_lost = (ri.first..ri.end).take_while(|&s| s * r.item < low_end);
    let high_lost = (ri.first..ri.end)
        .rev()
        .take_while(|&s| (s + 1) * r.item > high_start && s * r.item >= low_end);
    let items: Vec<(usize, Vec<u8>)> = low_lost
        .chain(high_lost)
        .filter(|&s| page[s * r.item] == TAG)
        .map(|s| (s, slot_bytes(page, s, r.item).to_vec()))
        .collect();
    let dir_hit = dir.is_some() && r.first * r.item < low_end;
    if items.is_empty() && !dir_hit {
        return None;
    }
    Some(Displaced {
        stamp: csn,
        had_dir: dir.is_some(),
        items,
    })
}

/// After the insert: every item of `d` that is no longer in a slot of the
/// region goes into a random free slot, while there is one (the rest are
/// lost, as in the paper). A directory the insert cut off is written again
/// over the region's new first slots, and the items it would drop there move
/// too, so lookups keep their fast path. Returns how many items moved.
pub fn put_back(page: &mut [u8], layout: &CacheLayout, d: Displaced, rng: &mut CacheRng) -> usize {
    let Some(r) = region(page, layout) else {
        return 0;
    };
    if page::cache_stamp(page) != d.stamp || r.first >= r.end {
        return 0;
    }
    let pending: Vec<Vec<u8>> = d
        .items
        .into_iter()
        .filter(|(s, _)| !(r.first..r.end).contains(s))
        .map(|(_, b)| b)
        .collect();
    place_keeping_dir(page, &r, d.had_dir, pending, rng)
}

/// Puts the items `pending` into random free slots of the region `r`, while
/// there are any; first, if the leaf had a directory (`had_dir`) that a
/// change of the region cut off (its first slot is no longer the region's,
/// or it no longer covers the region's end), writes one again over the
/// region's new first slots, moving the items there too. Returns how many
/// items were placed.
fn place_keeping_dir(
    page: &mut [u8],
    r: &Region,
    had_dir: bool,
    mut pending: Vec<Vec<u8>>,
    rng: &mut CacheRng,
) -> usize {
    let mut dir = find_dir(page, r);
    if dir.is_none() && had_dir {
        let count = r.end - r.first;
        let ds = dir_slots(count, r.item);
        if ds * 4 <= count {
            for s in r.first..r.first + ds {
                if page[s * r.item] == TAG {
                    pending.push(slot_bytes(page, s, r.item).to_vec());
                }
            }
        }
        dir = build_dir(page, r);
    }
    let ri = items_of(r, dir);
    let mut placed = 0;
    for item in &pending {
        let Some(s) = random_free_slot(page, &ri, dir, None, rng) else {
            break;
        };
        page[s * r.item..(s + 1) * r.item].copy_from_slice(item);
        if let Some(dir) = dir {
            let tid: [u8; TID_LEN] = item[1..1 + TID_LEN].try_into().unwrap();
            page[dir.fp_at(s)] = fingerprint(&tid);
        }
        placed += 1;
    }
    placed
}

/// A leaf's cache slots copied aside while a delete compacts the leaf
/// ([`carry`], then [`restore`]).
pub struct Carried {
    at: usize,
    bytes: Vec<u8>,
    stamp: u32,
    /// Whether the leaf had a directory.
    had_dir: bool,
}

/// The bytes of the leaf's slots, if its cache is valid under `csn` and holds
/// any slot: a delete's compaction zeroes the free region, and without this
/// every delete would empty its leaf's cache (the trap of §2.1: "leaf
/// compaction on delete shrinks the cache").
pub fn carry(page: &[u8], layout: &CacheLayout, csn: u32) -> Option<Carried> {
    if !is_valid(page, csn) {
        return None;
    }
    let r = region(page, layout)?;
    if r.capacity() == 0 {
        return None;
    }
    let at = r.first * r.item;
    Some(Carried {
        at,
        bytes: page[at..r.end * r.item].to_vec(),
        stamp: csn,
        had_dir: find_dir(page, &r).is_some(),
    })
}

/// Puts carried slots back at their place after a delete compacted the
/// leaf, less the items of `gone` (the deleted entries' tids: their rows
/// are gone, and their tids may be reused). Only slots that were wholly in
/// the region are carried, so a slot the old region cut off (its tail under
/// an entry until the delete) comes back empty, never half an item. A
/// directory the grown region no longer matches is written again at once
/// (see [`put_back`]). Returns whether they were put back: not when the
/// leaf's stamp changed or its region no longer holds every carried slot (a
/// delete only grows it).
pub fn restore(
    page: &mut [u8],
    layout: &CacheLayout,
    c: &Carried,
    gone: &[Tid],
    rng: &mut CacheRng,
) -> bool {
    let Some(r) = region(page, layout) else {
        return false;
    };
    if page::cache_stamp(page) != c.stamp || c.at < r.lower || c.at + c.bytes.len() > r.upper {
        return false;
    }
    page[c.at..c.at + c.bytes.len()].copy_from_slice(&c.bytes);
    let dir = find_dir(page, &r);
    let ri = items_of(&r, dir);
    for &t in gone {
        if let Some(s) = find(page, &ri, dir, &tid_bytes(t)) {
            page[s * r.item..(s + 1) * r.item].fill(0);
            if let Some(d) = dir {
                page[d.fp_at(s)] = 0;
            }
        }
    }
    place_keeping_dir(page, &r, c.had_dir, Vec::new(), rng);
    true
}
