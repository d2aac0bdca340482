//! Where things are on a B+-tree page: leaf sibling links, internal headers,
//! separator slots, entries, and the searches and bounds over them.

use std::cmp::Ordering;
use std::ops::Bound;

use crate::page::{PageKind, PageMut, PageView, SLOT_SIZE};
use crate::types::Tid;

// ---------------------------------------------------------------------------
// Page layout helpers

pub(super) const TID_LEN: usize = Tid::ENCODED_LEN;
/// Bytes of a child page number at the end of an internal slot.
pub(super) const CHILD_LEN: usize = 4;
/// "No page" in sibling links. Page 0 is the meta page, never a leaf.
pub(super) const NO_PAGE: u32 = 0;

pub(super) fn rd32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// The two page numbers of a node's special area: a leaf's siblings, an
/// internal page's leftmost child and level.
fn special_pair(v: &PageView<'_>) -> (u32, u32) {
    let s = v.special();
    (rd32(&s[0..4]), rd32(&s[4..8]))
}

fn set_special_pair(pm: &mut PageMut<'_>, first: u32, second: u32) {
    let s = pm.special_mut();
    s[0..4].copy_from_slice(&first.to_be_bytes());
    s[4..8].copy_from_slice(&second.to_be_bytes());
}

/// A leaf's (next, prev) sibling page numbers ([`NO_PAGE`] = none).
pub fn leaf_siblings(v: &PageView<'_>) -> (u32, u32) {
    special_pair(v)
}

pub(super) fn set_leaf_siblings(pm: &mut PageMut<'_>, next: u32, prev: u32) {
    set_special_pair(pm, next, prev);
}

/// An internal page's (leftmost child, level).
pub(super) fn internal_header(v: &PageView<'_>) -> (u32, u32) {
    special_pair(v)
}

pub(super) fn set_internal_header(pm: &mut PageMut<'_>, leftmost: u32, level: u32) {
    set_special_pair(pm, leftmost, level);
}

/// Slot `s`'s bytes; empty for a dead or missing slot (which a B-tree page never
/// has; `check` reports it, everything else treats it as a tiny entry).
pub(super) fn slot_bytes<'a>(v: &PageView<'a>, s: u16) -> &'a [u8] {
    v.get(s).unwrap_or(&[])
}

/// Splits an internal slot into (separator entry, child page).
pub(super) fn split_slot(slot: &[u8]) -> (&[u8], u32) {
    if slot.len() < CHILD_LEN {
        return (slot, NO_PAGE);
    }
    let (sep, child) = slot.split_at(slot.len() - CHILD_LEN);
    (sep, rd32(child))
}

pub(super) fn make_slot(sep: &[u8], child: u32) -> Vec<u8> {
    let mut s = Vec::with_capacity(sep.len() + CHILD_LEN);
    s.extend_from_slice(sep);
    s.extend_from_slice(&child.to_be_bytes());
    s
}

/// The key part of an entry (without the tid).
pub(super) fn key_part(entry: &[u8]) -> &[u8] {
    &entry[..entry.len().saturating_sub(TID_LEN)]
}

pub(super) fn make_entry(key: &[u8], tid: Tid) -> Vec<u8> {
    let mut e = Vec::with_capacity(key.len() + TID_LEN);
    e.extend_from_slice(key);
    tid.encode(&mut e);
    e
}

/// First index in `0..n` for which `before` is false (`before` must be true on a
/// prefix of the range and false after it).
pub(super) fn partition(n: u16, mut before: impl FnMut(u16) -> bool) -> u16 {
    let (mut lo, mut hi) = (0u16, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// [`partition`] for a sorted run of lookups that usually land next to each
/// other (a batch's entries in a leaf): probes 0, 1, 3, 7, ... and then
/// bisects between the last two probes, so an answer `k` costs about
/// 2·log2(k + 1) calls of `before` — one when it is 0 — instead of log2(n).
pub(super) fn gallop(n: u16, mut before: impl FnMut(u16) -> bool) -> u16 {
    if n == 0 || !before(0) {
        return 0;
    }
    // before(lo) holds; the answer is in lo + 1 ..= hi.
    let (mut lo, mut hi) = (0u16, 1u16);
    while hi < n && before(hi) {
        lo = hi;
        hi = hi.saturating_mul(2).saturating_add(1);
    }
    let hi = hi.min(n);
    lo + 1 + partition(hi - lo - 1, |s| before(lo + 1 + s))
}

/// Position of `entry` in a leaf: (where it is or would go, whether it is there).
pub(super) fn leaf_search(v: &PageView<'_>, entry: &[u8]) -> (u16, bool) {
    let n = v.n_slots();
    let pos = partition(n, |s| bytes_lt(slot_bytes(v, s), entry));
    (pos, pos < n && slot_bytes(v, pos) == entry)
}

/// Compares an entry's key, truncated to the bound's length, with a key prefix.
pub(super) fn prefix_cmp(entry: &[u8], bound: &[u8]) -> Ordering {
    let k = key_part(entry);
    bytes_cmp(&k[..k.len().min(bound.len())], bound)
}

/// `a.cmp(b)` for byte strings, eight bytes at a time. Keys and entries are
/// short (an 8-byte integer key with its tid is 14 bytes), where the slice
/// comparison's call to `memcmp` cost more than the comparing: searches in
/// a descent made a quarter of a lookup's time.
#[inline]
pub(super) fn bytes_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_be_bytes(a[i..i + 8].try_into().unwrap());
        let y = u64::from_be_bytes(b[i..i + 8].try_into().unwrap());
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    while i < n {
        if a[i] != b[i] {
            return a[i].cmp(&b[i]);
        }
        i += 1;
    }
    a.len().cmp(&b.len())
}

/// `a < b` by [`bytes_cmp`].
#[inline]
pub(super) fn bytes_lt(a: &[u8], b: &[u8]) -> bool {
    bytes_cmp(a, b) == Ordering::Less
}

/// `a <= b` by [`bytes_cmp`].
#[inline]
pub(super) fn bytes_le(a: &[u8], b: &[u8]) -> bool {
    bytes_cmp(a, b) != Ordering::Greater
}

/// Whether `entry` lies before the range's lower bound. True on a prefix of the
/// entry order (truncation is monotone), so it can steer a descent.
pub(super) fn before_lower(lower: &Bound<Vec<u8>>, entry: &[u8]) -> bool {
    match lower {
        Bound::Unbounded => false,
        Bound::Included(b) => prefix_cmp(entry, b) == Ordering::Less,
        Bound::Excluded(b) => prefix_cmp(entry, b) != Ordering::Greater,
    }
}

/// Whether `entry` is within the range's upper bound (true on a prefix).
pub(super) fn within_upper(upper: &Bound<Vec<u8>>, entry: &[u8]) -> bool {
    match upper {
        Bound::Unbounded => true,
        Bound::Included(b) => prefix_cmp(entry, b) != Ordering::Greater,
        Bound::Excluded(b) => prefix_cmp(entry, b) == Ordering::Less,
    }
}

/// Index at which to split `items` (each costing its length plus a slot) into two
/// halves of about equal bytes, both non-empty.
pub(super) fn split_point(items: &[Vec<u8>]) -> usize {
    let total: usize = items.iter().map(|i| i.len() + SLOT_SIZE).sum();
    let mut cum = 0;
    for (i, it) in items.iter().enumerate() {
        if cum + (it.len() + SLOT_SIZE) / 2 >= total / 2 {
            return i.clamp(1, items.len() - 1);
        }
        cum += it.len() + SLOT_SIZE;
    }
    items.len() - 1
}

/// Short hex rendering of bytes for error messages.
pub(super) fn hex(b: &[u8]) -> String {
    let mut s: String = b.iter().take(48).map(|x| format!("{x:02x}")).collect();
    if b.len() > 48 {
        s.push_str(&format!("... ({} bytes)", b.len()));
    }
    s
}

pub(super) fn kind_name(k: Option<PageKind>) -> &'static str {
    match k {
        Some(PageKind::Heap) => "heap",
        Some(PageKind::BTreeMeta) => "B-tree meta",
        Some(PageKind::BTreeLeaf) => "B-tree leaf",
        Some(PageKind::BTreeInternal) => "B-tree internal",
        None => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The word-at-a-time comparison orders byte strings as slices do,
        /// prefixes and equal words included.
        #[test]
        fn bytes_cmp_is_the_slice_order(
            a in proptest::collection::vec(0u8..4, 0..40),
            b in proptest::collection::vec(0u8..4, 0..40),
            shared in proptest::collection::vec(any::<u8>(), 0..20),
        ) {
            let (a, b) = ([&shared[..], &a].concat(), [&shared[..], &b].concat());
            prop_assert_eq!(bytes_cmp(&a, &b), a.cmp(&b));
            prop_assert_eq!(bytes_lt(&a, &b), a < b);
            prop_assert_eq!(bytes_le(&a, &b), a <= b);
            prop_assert_eq!(bytes_cmp(&a, &a), Ordering::Equal);
        }
    }

    /// gallop finds what partition finds, for every length and answer, and
    /// asks once when the answer is the first slot.
    #[test]
    fn gallop_agrees_with_partition_and_is_cheap_next_door() {
        for n in 0..300u16 {
            for k in 0..=n {
                let mut calls = 0;
                let got = gallop(n, |s| {
                    calls += 1;
                    s < k
                });
                assert_eq!(got, partition(n, |s| s < k), "n {n} k {k}");
                if k == 0 && n > 0 {
                    assert_eq!(calls, 1);
                }
                if n > 0 {
                    assert!(
                        calls <= 2 * (16 - (k + 1).leading_zeros()) + 2,
                        "n {n} k {k}: {calls}"
                    );
                }
            }
        }
    }
}
