//! Reference caches for Fig. 2a: what a cache of the same capacity could hit
//! on the same sequence of lookups, to measure the index cache against.
//!
//! Two rules for what to keep, each either global (one cache of all the
//! slots) or split into the leaves (each leaf's items compete only for that
//! leaf's slots, as in the index cache):
//! - **oracle**: knows every item's probability, and admits a missed item
//!   only over a less popular one (the best any cache can do);
//! - **LFU**: knows only the lookups so far: keeps the items looked up most
//!   often, a missed item replacing the least looked-up one held when it has
//!   been looked up at least as often (the newer wins a tie).
//!
//! The four together split Swap's distance to the global oracle into what
//! knowing the probabilities is worth (oracle vs LFU), what splitting the
//! slots into leaves costs (global vs per leaf) and what is left to the
//! replacement policy itself (per-leaf LFU vs Swap).

use std::collections::BTreeSet;

/// What a reference cache keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The most popular items by the true probabilities.
    Oracle,
    /// The most looked-up items so far.
    Lfu,
}

/// A reference cache over items `0..n`, split into parts with their own
/// capacities.
pub struct Reference {
    rule: Rule,
    /// Per part: (score, tie, item) of the items held; the first is the one
    /// to evict.
    parts: Vec<BTreeSet<(u64, u64, usize)>>,
    caps: Vec<usize>,
    /// Each item's part.
    part: Vec<u32>,
    /// Each held item's key in its part's set.
    held: Vec<Option<(u64, u64)>>,
    /// Lookups of each item so far (LFU).
    counts: Vec<u64>,
    lookups: u64,
    hits: u64,
}

impl Reference {
    /// One cache of `cap` items over `n` items.
    pub fn global(rule: Rule, n: usize, cap: usize) -> Reference {
        Reference::split(rule, &[(n, cap)])
    }

    /// Consecutive parts: part `k` holds the next `parts[k].0` items and has
    /// room for `parts[k].1` of them (a leaf's entries and its slots).
    pub fn split(rule: Rule, parts: &[(usize, usize)]) -> Reference {
        let n: usize = parts.iter().map(|p| p.0).sum();
        let mut part = Vec::with_capacity(n);
        for (k, &(entries, _)) in parts.iter().enumerate() {
            part.extend(std::iter::repeat_n(k as u32, entries));
        }
        Reference {
            rule,
            parts: vec![BTreeSet::new(); parts.len()],
            caps: parts.iter().map(|p| p.1).collect(),
            part,
            held: vec![None; n],
            counts: vec![0; n],
            lookups: 0,
            hits: 0,
        }
    }

    /// A lookup of `item`, whose popularity rank is `rank` (0: the most
    /// popular); returns whether it hit. Items past the parts' ends are
    /// misses that are never cached.
    pub fn access(&mut self, item: usize, rank: usize) -> bool {
        self.lookups += 1;
        let Some(&k) = self.part.get(item) else {
            return false;
        };
        self.counts[item] += 1;
        let key = match self.rule {
            Rule::Oracle => (u64::MAX - rank as u64, 0),
            Rule::Lfu => (self.counts[item], self.lookups),
        };
        let set = &mut self.parts[k as usize];
        if let Some(old) = self.held[item] {
            self.hits += 1;
            if old != key {
                set.remove(&(old.0, old.1, item));
                set.insert((key.0, key.1, item));
                self.held[item] = Some(key);
            }
            return true;
        }
        if set.len() >= self.caps[k as usize] {
            match set.first().copied() {
                Some(worst) if (worst.0, worst.1) < key => {
                    set.remove(&worst);
                    self.held[worst.2] = None;
                }
                _ => return false,
            }
        }
        set.insert((key.0, key.1, item));
        self.held[item] = Some(key);
        false
    }

    /// Sets part `k`'s room to `caps[k]` (a cache whose slots inserts take,
    /// as Shrink's): a part over its new room drops its worst items (the
    /// least popular, or the least looked-up) until it fits.
    pub fn set_caps(&mut self, caps: &[usize]) {
        for (k, &cap) in caps.iter().enumerate().take(self.caps.len()) {
            self.caps[k] = cap;
            let set = &mut self.parts[k];
            while set.len() > cap {
                let Some(worst) = set.pop_first() else { break };
                self.held[worst.2] = None;
            }
        }
    }

    /// Hits over lookups so far.
    pub fn hit_rate(&self) -> f64 {
        if self.lookups == 0 {
            return 0.0;
        }
        self.hits as f64 / self.lookups as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oracle_keeps_the_popular_items_and_lfu_the_frequent_ones() {
        // Item i has rank i. Capacity 1: the oracle keeps item 0 once seen.
        let mut o = Reference::global(Rule::Oracle, 3, 1);
        let seq = [2, 1, 0, 2, 2, 0, 1, 0];
        let hits: Vec<bool> = seq.iter().map(|&i| o.access(i, i)).collect();
        assert_eq!(hits, [false, false, false, false, false, true, false, true]);
        // LFU keeps what was looked up most: 2 twice before 0 twice.
        let mut l = Reference::global(Rule::Lfu, 3, 1);
        let hits: Vec<bool> = seq.iter().map(|&i| l.access(i, i)).collect();
        // 2 in; 1 (count 1 = 2's count 1, newer) replaces it; 0 replaces 1;
        // 2 (count 2 > 1) replaces 0; 2 hits (3); 0 (2 < 3) stays out; 1
        // stays out; 0 (3 = 3, newer) replaces 2.
        assert_eq!(
            hits,
            [false, false, false, false, true, false, false, false]
        );
        assert_eq!(l.hit_rate(), 1.0 / 8.0);
    }

    #[test]
    fn a_shrunk_cache_drops_its_worst_items_first() {
        let mut o = Reference::global(Rule::Oracle, 4, 3);
        for i in [3, 0, 2] {
            o.access(i, i);
        }
        // Room for one: the most popular held (0) stays.
        o.set_caps(&[1]);
        assert!(o.access(0, 0));
        assert!(!o.access(2, 2) && !o.access(3, 3));
        // LFU keeps the most looked-up: 3 three times, 1 twice, 2 once.
        let mut l = Reference::global(Rule::Lfu, 4, 3);
        for i in [3, 3, 3, 1, 1, 2] {
            l.access(i, i);
        }
        l.set_caps(&[2]);
        assert!(l.access(3, 3) && l.access(1, 1));
        // Room again: 2 is looked up and, with a free slot, cached.
        l.set_caps(&[3]);
        assert!(!l.access(2, 2) && l.access(2, 2));
    }

    #[test]
    fn a_split_cache_keeps_each_part_to_its_own_room() {
        // Two parts of two items, room for one each: the global cache of two
        // would keep items 0 and 1 (both in part 0); split, part 0 keeps 0
        // and part 1 keeps 2.
        let mut s = Reference::split(Rule::Oracle, &[(2, 1), (2, 1)]);
        let mut g = Reference::global(Rule::Oracle, 4, 2);
        for i in [0, 1, 2, 3] {
            s.access(i, i);
            g.access(i, i);
        }
        let (mut sh, mut gh) = (0, 0);
        for i in [0, 1, 2, 3] {
            sh += s.access(i, i) as u32;
            gh += g.access(i, i) as u32;
        }
        assert_eq!((sh, gh), (2, 2));
        // Item 1 hits only in the global cache, item 2 only in the split.
        assert!(g.access(1, 1) && !s.access(1, 1));
        assert!(s.access(2, 2) && !g.access(2, 2));
    }
}
