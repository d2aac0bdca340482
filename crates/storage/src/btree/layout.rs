//! Where things are on a B+-tree page: leaf sibling links, internal headers,
//! separator slots, entries, and the searches and bounds over them.

use std::cmp::Ordering;
use std::ops::Bound;

use crate::page::{PageKind, PageMut, PageView, SLOT_SIZE};
use crate::row::Tid;

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

/// [`partition`] steered by where `target` should lie among the slots'
/// bytes (`bytes(s)`, sorted), for a node that is not in the CPU's cache: a
/// bisection reads about two cache lines a step (the slot and its entry),
/// log2(n) steps deep, while keys spread evenly over a node (ids, dates,
/// counters) put the answer where a straight line between the bracketing
/// keys says, a probe or two away.
///
/// The answer is decided by `before` alone, exactly as [`partition`]'s (the
/// keys only choose which slots to ask about), so any order of keys is
/// right. It probes both ends, then rounds of an interpolated slot and a
/// guard one slot past it toward the bracket's far end; a round that does
/// not narrow the bracket fourfold (what two bisection steps do) hands the
/// rest to bisection, so a node whose keys mislead costs at most four probes
/// more than bisection. An empty `target` is plain bisection.
pub(super) fn search<'a>(
    n: u16,
    target: &[u8],
    bytes: impl Fn(u16) -> &'a [u8],
    mut before: impl FnMut(u16) -> bool,
) -> u16 {
    if n <= SMALL || target.is_empty() {
        return partition(n, before);
    }
    // The answer lies in (a, b]: before(a) holds, before(b) does not.
    if !before(0) {
        return 0;
    }
    if before(n - 1) {
        return n;
    }
    steer(0, n as i32 - 1, n, target, |i| bytes(i as u16), before)
}

/// Nodes of at most this many slots are bisected.
const SMALL: u16 = 8;

/// [`search`] starting from the bounds the parent gave (`bracket`): the
/// separators on either side of the child a descent took stand for the keys
/// just outside slots 0 and n − 1, so the first probe is already the
/// interpolated slot. That saves the probes of both ends, which in a leaf
/// not in the CPU's cache are two cache misses (a slot and its entry) that
/// the interpolation has to wait for. Bounds only steer (the answer is
/// `before`'s, as in [`search`]); without both, this is [`search`].
pub(super) fn search_in<'a>(
    n: u16,
    target: &[u8],
    bracket: &Bracket,
    bytes: impl Fn(u16) -> &'a [u8],
    before: impl FnMut(u16) -> bool,
) -> u16 {
    let (Some(lo), Some(hi)) = (bracket.lo.get(), bracket.hi.get()) else {
        return search(n, target, bytes, before);
    };
    if n <= SMALL || target.is_empty() {
        return partition(n, before);
    }
    // a = -1 and b = n are the virtual slots of the two bounds: the answer
    // lies in 0..=n, that is in (a, b].
    let last = n as i32;
    let key = |i: i32| {
        if i < 0 {
            lo
        } else if i >= last {
            hi
        } else {
            bytes(i as u16)
        }
    };
    steer(-1, last, n, target, key, before)
}

/// The slot [`search_in`] will probe first in a node of `n` entries between
/// the bounds of `bracket`, if it interpolates (`None` when it does not, or a
/// bound is missing).
pub(super) fn first_probe(bracket: &Bracket, target: &[u8], n: u16) -> Option<u16> {
    let (lo, hi) = (bracket.lo.get()?, bracket.hi.get()?);
    if n <= SMALL || target.is_empty() {
        return None;
    }
    let last = n as i32;
    Some(interpolate(-1, last, lo, hi, target).clamp(0, last - 1) as u16)
}

/// The rounds of [`search`]: the answer lies in (a, b] (slots; `a` may be -1
/// and `b` may be `n`, virtual slots that are never asked about).
fn steer<'a>(
    mut a: i32,
    mut b: i32,
    n: u16,
    target: &[u8],
    key: impl Fn(i32) -> &'a [u8],
    mut before: impl FnMut(u16) -> bool,
) -> u16 {
    debug_assert!(-1 <= a && a < b && b <= n as i32);
    while b - a > SMALL as i32 {
        let width = b - a;
        let g = interpolate(a, b, key(a), key(b), target).clamp(a + 1, b - 1);
        if before(g as u16) {
            a = g;
            if g + 1 < b {
                if before((g + 1) as u16) {
                    a = g + 1;
                } else {
                    b = g + 1;
                }
            }
        } else {
            b = g;
            if g - 1 > a {
                if before((g - 1) as u16) {
                    a = g - 1;
                } else {
                    b = g - 1;
                }
            }
        }
        if (b - a) * 4 > width {
            break;
        }
    }
    let first = (a + 1) as u16;
    first + partition((b - a - 1) as u16, |s| before(first + s))
}

/// The separators a descent passed on either side of the child it took, for
/// [`search_in`] in that child: copies of at most [`EDGE`] bytes (a longer
/// separator is not kept, and the search probes that end itself).
#[derive(Clone, Copy, Default)]
pub(super) struct Bracket {
    pub(super) lo: Edge,
    pub(super) hi: Edge,
}

/// Longest separator a [`Bracket`] keeps.
pub(super) const EDGE: usize = 48;

/// One bound of a [`Bracket`]; length 0 is none (an entry is never empty:
/// it ends with a tid).
#[derive(Clone, Copy)]
pub(super) struct Edge {
    len: u8,
    bytes: [u8; EDGE],
}

impl Default for Edge {
    fn default() -> Self {
        Edge {
            len: 0,
            bytes: [0; EDGE],
        }
    }
}

impl Edge {
    pub(super) fn set(&mut self, sep: &[u8]) {
        if sep.is_empty() || sep.len() > EDGE {
            self.len = 0;
        } else {
            self.bytes[..sep.len()].copy_from_slice(sep);
            self.len = sep.len() as u8;
        }
    }

    pub(super) fn get(&self) -> Option<&[u8]> {
        (self.len > 0).then(|| &self.bytes[..self.len as usize])
    }
}

/// The slot between `a` and `b` where `target` would lie if the keys between
/// `ka` (at slot `a`) and `kb` (at `b`) were spread evenly: each is read as
/// the eight bytes after the two keys' common prefix, a number that orders
/// byte strings as they sort (ties past those bytes aside).
fn interpolate(a: i32, b: i32, ka: &[u8], kb: &[u8], target: &[u8]) -> i32 {
    let c = ka.iter().zip(kb).take_while(|(x, y)| x == y).count();
    let word = |k: &[u8]| {
        let mut w = [0u8; 8];
        let tail = k.get(c..).unwrap_or(&[]);
        let m = tail.len().min(8);
        w[..m].copy_from_slice(&tail[..m]);
        u64::from_be_bytes(w)
    };
    let (xa, xb) = (word(ka), word(kb));
    // A target outside the two keys' prefix lies at one end.
    let xt = match bytes_cmp(&target[..target.len().min(c)], &ka[..c.min(ka.len())]) {
        Ordering::Less => return a,
        Ordering::Greater => return b,
        Ordering::Equal => word(target),
    };
    if xb <= xa || xt <= xa {
        return a;
    }
    if xt >= xb {
        return b;
    }
    a + scale(xt - xa, xb - xa, (b - a) as u64) as i32
}

/// `d · n / span` rounded down, for `d < span` and `n < 2^16`, in 64 bits:
/// both `d` and `span` lose their low bits until `span` fits in 48, so the
/// product cannot overflow. A 128-bit division is a library call that cost
/// more than the rest of a node's search; the bits dropped move the guess by
/// at most one slot.
fn scale(d: u64, span: u64, n: u64) -> u64 {
    let shift = (u64::BITS - span.leading_zeros()).saturating_sub(48);
    (d >> shift) * n / (span >> shift).max(1)
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
    let pos = search(
        n,
        entry,
        |s| slot_bytes(v, s),
        |s| bytes_lt(slot_bytes(v, s), entry),
    );
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

    /// search finds what partition finds for every answer over keys spread
    /// evenly, in clusters, with long runs of duplicates, and in any other
    /// sorted shape, and asks few questions where the keys are even.
    #[test]
    fn search_agrees_with_partition_on_any_sorted_keys() {
        type Shape = (&'static str, fn(u64) -> u64);
        let shapes: [Shape; 5] = [
            ("even", |i| i * 10),
            ("squares", |i| i * i * i),
            ("duplicates", |i| i / 7),
            ("clustered", |i| if i < 200 { i } else { 1 << 40 | i }),
            ("flat", |_| 5),
        ];
        let enc = |x: u64| {
            let mut k = vec![1u8, 2];
            k.extend_from_slice(&x.to_be_bytes());
            k
        };
        for (name, f) in shapes {
            for n in [0u16, 1, 5, 9, 10, 64, 300] {
                let keys: Vec<Vec<u8>> = (0..n as u64).map(|i| enc(f(i))).collect();
                let mut targets: Vec<Vec<u8>> = keys.clone();
                targets.extend((0..n as u64).map(|i| enc(f(i) + 1)));
                targets.extend([
                    vec![0u8],
                    vec![1u8],
                    vec![1u8, 2],
                    vec![9u8],
                    enc(0),
                    enc(u64::MAX),
                ]);
                for t in &targets {
                    let want = partition(n, |s| keys[s as usize] < *t);
                    let mut calls = 0;
                    let got = search(
                        n,
                        t,
                        |s| &keys[s as usize],
                        |s| {
                            calls += 1;
                            keys[s as usize] < *t
                        },
                    );
                    assert_eq!(got, want, "{name} n {n} target {t:?}");
                    let bisect = 16 - n.leading_zeros();
                    assert!(calls <= bisect + 4, "{name} n {n}: {calls} calls");
                    if name == "even" && n == 300 && keys.contains(t) {
                        assert!(calls <= 5, "even keys, n {n}, target {t:?}: {calls} calls");
                    }
                }
            }
        }
    }

    /// With the bounds a parent gives, an even node is answered in fewer
    /// probes than from its own ends, and bounds that are wrong (outside the
    /// keys, inside them, reversed) still give partition's answer.
    #[test]
    fn first_probe_names_the_slot_search_in_asks_about_first() {
        let enc = |x: u64| {
            let mut k = vec![1u8, 2];
            k.extend_from_slice(&x.to_be_bytes());
            k
        };
        let n = 300u16;
        let keys: Vec<Vec<u8>> = (0..n as u64)
            .map(|i| enc(100 + i * 7 + i * i % 5))
            .collect();
        let mut b = Bracket::default();
        b.lo.set(&enc(95));
        b.hi.set(&enc(100 + 300 * 8));
        for t in keys.iter().chain(&[enc(0), enc(4000)]) {
            let mut first = None;
            search_in(
                n,
                t,
                &b,
                |s| &keys[s as usize],
                |s| {
                    first.get_or_insert(s);
                    keys[s as usize] < *t
                },
            );
            assert_eq!(first_probe(&b, t, n), first, "target {t:?}");
        }
        // No guess without both bounds, or for a node searched by bisection.
        assert_eq!(first_probe(&Bracket::default(), &keys[5], n), None);
        assert_eq!(first_probe(&b, &keys[5], SMALL), None);
    }

    #[test]
    fn search_in_takes_its_ends_from_the_bracket() {
        let enc = |x: u64| {
            let mut k = vec![1u8, 2];
            k.extend_from_slice(&x.to_be_bytes());
            k
        };
        let n = 300u16;
        let keys: Vec<Vec<u8>> = (0..n as u64).map(|i| enc(100 + i * 10)).collect();
        let bracket = |lo: &[u8], hi: &[u8]| {
            let mut b = Bracket::default();
            b.lo.set(lo);
            b.hi.set(hi);
            b
        };
        let right = bracket(&enc(95), &enc(100 + 300 * 10));
        let wrong = [
            bracket(&enc(0), &enc(u64::MAX)),
            bracket(&enc(1000), &enc(1100)),
            bracket(&enc(5000), &enc(10)),
            bracket(&[0u8; 60], &enc(10)), // too long to keep: both ends probed
            Bracket::default(),
        ];
        let (mut with, mut without) = (0, 0);
        for t in keys
            .iter()
            .chain(&[enc(0), enc(99), enc(3105), enc(u64::MAX)])
        {
            let want = partition(n, |s| keys[s as usize] < *t);
            let mut calls = 0;
            let got = search_in(
                n,
                t,
                &right,
                |s| &keys[s as usize],
                |s| {
                    calls += 1;
                    keys[s as usize] < *t
                },
            );
            assert_eq!(got, want, "target {t:?}");
            with += calls;
            calls = 0;
            search(
                n,
                t,
                |s| &keys[s as usize],
                |s| {
                    calls += 1;
                    keys[s as usize] < *t
                },
            );
            without += calls;
            for b in &wrong {
                let got = search_in(n, t, b, |s| &keys[s as usize], |s| keys[s as usize] < *t);
                assert_eq!(got, want, "target {t:?}");
            }
        }
        // Every interior target is found by the interpolated probe and its
        // guard: two fewer than probing both ends first.
        assert!(
            with + 2 * 290 <= without,
            "{with} probes with bounds, {without} without"
        );
    }

    proptest! {
        /// Random sorted keys, a random target and random bounds (right or
        /// not): search_in answers as partition does.
        #[test]
        fn search_in_agrees_with_partition(
            mut keys in proptest::collection::vec(proptest::collection::vec(0u8..6, 0..12), 0..200),
            target in proptest::collection::vec(0u8..6, 0..12),
            lo in proptest::collection::vec(0u8..6, 0..12),
            hi in proptest::collection::vec(0u8..6, 0..12),
        ) {
            keys.sort();
            let n = keys.len() as u16;
            let mut b = Bracket::default();
            b.lo.set(&lo);
            b.hi.set(&hi);
            let want = partition(n, |s| keys[s as usize] < target);
            let got = search_in(n, &target, &b, |s| &keys[s as usize], |s| keys[s as usize] < target);
            prop_assert_eq!(got, want);
        }

        /// Random sorted keys of random lengths and random targets.
        #[test]
        fn search_agrees_with_partition(
            mut keys in proptest::collection::vec(proptest::collection::vec(0u8..6, 0..12), 0..200),
            target in proptest::collection::vec(0u8..6, 0..12),
        ) {
            keys.sort();
            let n = keys.len() as u16;
            let want = partition(n, |s| keys[s as usize] < target);
            let got = search(n, &target, |s| &keys[s as usize], |s| keys[s as usize] < target);
            prop_assert_eq!(got, want);
        }
    }

    /// The interpolation's 64-bit scaling lands on the slot exact
    /// arithmetic gives or next to it, and never past the end.
    #[test]
    fn the_interpolated_slot_is_the_exact_one_or_its_neighbour() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..200_000 {
            // Spans of every width, from a few to all 64 bits.
            let span = (next() >> (i % 64)).max(2);
            let d = next() % span;
            let n = next() % (1 << 16);
            let exact = (d as u128 * n as u128 / span as u128) as u64;
            let got = scale(d, span, n);
            assert!(got <= n, "{d} {span} {n}: {got} > {n}");
            assert!(
                exact.abs_diff(got) <= 1,
                "{d} {span} {n}: {got}, exactly {exact}"
            );
        }
        assert_eq!(scale(0, u64::MAX, 100), 0);
        assert!((99..=100).contains(&scale(u64::MAX - 1, u64::MAX, 100)));
        assert_eq!(scale(5, 10, 4), 2);
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
