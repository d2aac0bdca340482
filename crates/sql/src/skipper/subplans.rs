//! MJoin's subplans and its object cache (Skipper §4.1–4.2, Table 2,
//! Algorithm 1): which combinations of objects are still to be joined, which
//! objects are held, and which one to drop when an arriving object needs room.
//!
//! A query over relations R1..Rn of k1..kn objects has k1 × … × kn subplans,
//! one per combination of one object of each relation; the inner join of the
//! relations is the union of the subplans' joins. A subplan is *pending* until
//! it has run or has been pruned (one of its objects holds no row the query
//! can use). Subplans are numbered in mixed radix (relation 0 varies fastest)
//! and kept in a bitmap; per object, the count of pending subplans it is in.
//!
//! Pure bookkeeping: no data, no I/O, so the policies are tested on their own
//! (the paper's own example among the tests).

use std::collections::BTreeSet;

use crate::options::EvictPolicy;

/// The most subplans one MJoin tracks (a 32 MiB bitmap).
pub const MAX_SUBPLANS: u64 = 1 << 28;

/// An object: (relation, object number within it).
pub type Obj = (usize, usize);

/// The subplans of one query and which are pending.
#[derive(Debug)]
pub struct Subplans {
    counts: Vec<usize>,
    strides: Vec<u64>,
    total: u64,
    bits: Vec<u64>,
    pending: u64,
    /// Per relation, per object: pending subplans containing it.
    per_object: Vec<Vec<u64>>,
}

impl Subplans {
    /// All subplans of relations with `counts` objects, pending. Fails when
    /// there are more than [`MAX_SUBPLANS`] or a relation has no object.
    pub fn new(counts: &[usize]) -> Result<Subplans, String> {
        let mut strides = Vec::with_capacity(counts.len());
        let mut total: u64 = 1;
        for &c in counts {
            strides.push(total);
            total = total
                .checked_mul(c as u64)
                .filter(|&t| t <= MAX_SUBPLANS)
                .ok_or_else(|| {
                    format!(
                        "MJoin: {counts:?} objects per relation make more than {MAX_SUBPLANS} subplans; \
                         move the tables with larger objects (`strata tier cold --object-size`) or SET strata.skipper = false"
                    )
                })?;
        }
        let words = total.div_ceil(64) as usize;
        let mut bits = vec![u64::MAX; words];
        if !total.is_multiple_of(64) {
            bits[words - 1] = (1u64 << (total % 64)) - 1;
        }
        if total == 0 {
            bits.clear();
        }
        let per_object = counts
            .iter()
            .map(|&c| vec![if c == 0 { 0 } else { total / c as u64 }; c])
            .collect();
        Ok(Subplans {
            counts: counts.to_vec(),
            strides,
            total,
            bits,
            pending: total,
            per_object,
        })
    }

    pub fn relations(&self) -> usize {
        self.counts.len()
    }

    pub fn objects(&self, relation: usize) -> usize {
        self.counts[relation]
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Pending subplans containing `o`.
    pub fn pending_with(&self, o: Obj) -> u64 {
        self.per_object[o.0][o.1]
    }

    fn id(&self, combo: &[usize]) -> u64 {
        combo
            .iter()
            .zip(&self.strides)
            .map(|(&i, &s)| i as u64 * s)
            .sum()
    }

    pub fn is_pending(&self, combo: &[usize]) -> bool {
        let id = self.id(combo);
        self.bits[(id / 64) as usize] >> (id % 64) & 1 == 1
    }

    /// Marks `combo` done (run or pruned); false if it was not pending.
    pub fn finish(&mut self, combo: &[usize]) -> bool {
        let id = self.id(combo);
        let (w, b) = ((id / 64) as usize, id % 64);
        if self.bits[w] >> b & 1 == 0 {
            return false;
        }
        self.bits[w] &= !(1 << b);
        self.pending -= 1;
        for (r, &i) in combo.iter().enumerate() {
            self.per_object[r][i] -= 1;
        }
        true
    }

    /// Marks done every subplan containing `o` (its object yields no rows);
    /// returns how many were pending.
    pub fn prune(&mut self, o: Obj) -> u64 {
        if self.per_object[o.0][o.1] == 0 {
            return 0;
        }
        let sets: Vec<Vec<usize>> = (0..self.relations())
            .map(|r| {
                if r == o.0 {
                    vec![o.1]
                } else {
                    (0..self.counts[r]).collect()
                }
            })
            .collect();
        let mut n = 0;
        for_each_combo(&sets, |c| {
            if self.finish(c) {
                n += 1;
            }
        });
        n
    }

    /// The first pending subplan in number order, if any.
    pub fn first_pending(&self) -> Option<Vec<usize>> {
        let w = self.bits.iter().position(|&w| w != 0)?;
        let mut id = w as u64 * 64 + self.bits[w].trailing_zeros() as u64;
        Some(
            self.counts
                .iter()
                .map(|&c| {
                    let i = (id % c as u64) as usize;
                    id /= c as u64;
                    i
                })
                .collect(),
        )
    }

    /// Objects of pending subplans that are not in `held` (what the next
    /// cycle must request again), relation by relation interleaved.
    pub fn needed(&self, held: &Cache) -> Vec<Obj> {
        let mut per_rel: Vec<Vec<Obj>> = (0..self.relations())
            .map(|r| {
                (0..self.counts[r])
                    .filter(|&i| self.per_object[r][i] > 0 && !held.holds((r, i)))
                    .map(|i| (r, i))
                    .collect()
            })
            .collect();
        interleave(&mut per_rel)
    }

    /// Objects of pending subplans (of relations that are not pinned) that
    /// `held` has: requests the cache saves a new cycle.
    pub fn held_needed(&self, held: &Cache) -> u64 {
        (0..self.relations())
            .filter(|&r| !held.pinned[r])
            .map(|r| {
                (0..self.counts[r])
                    .filter(|&i| self.per_object[r][i] > 0 && held.holds((r, i)))
                    .count() as u64
            })
            .sum()
    }
}

/// `A.1, B.1, C.1, A.2, …`: the objects of several relations taken in turn.
pub fn interleave(per_rel: &mut [Vec<Obj>]) -> Vec<Obj> {
    let longest = per_rel.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for i in 0..longest {
        for r in per_rel.iter() {
            if let Some(&o) = r.get(i) {
                out.push(o);
            }
        }
    }
    out
}

/// Calls `f` with every combination of one element of each set.
pub fn for_each_combo(sets: &[Vec<usize>], mut f: impl FnMut(&[usize])) {
    if sets.iter().any(Vec::is_empty) {
        return;
    }
    let mut idx = vec![0usize; sets.len()];
    let mut combo: Vec<usize> = sets.iter().map(|s| s[0]).collect();
    loop {
        f(&combo);
        let mut r = 0;
        loop {
            if r == sets.len() {
                return;
            }
            idx[r] += 1;
            if idx[r] < sets[r].len() {
                combo[r] = sets[r][idx[r]];
                break;
            }
            idx[r] = 0;
            combo[r] = sets[r][0];
            r += 1;
        }
    }
}

/// Which objects MJoin holds, and their on-device sizes. Objects of pinned
/// relations (local tables, subqueries) are held from the start and never
/// counted or evicted.
#[derive(Debug)]
pub struct Cache {
    capacity: u64,
    used: u64,
    held: Vec<BTreeSet<usize>>,
    sizes: Vec<Vec<u64>>,
    pinned: Vec<bool>,
}

impl Cache {
    /// A cache of `capacity` bytes over relations whose objects have `sizes`;
    /// `pinned[r]`: relation r is held whole, outside the capacity.
    pub fn new(capacity: u64, sizes: Vec<Vec<u64>>, pinned: Vec<bool>) -> Cache {
        Cache {
            capacity,
            used: 0,
            held: vec![BTreeSet::new(); sizes.len()],
            sizes,
            pinned,
        }
    }

    /// The smallest capacity that holds one object of each relation (the
    /// largest of each): below it, no subplan can ever run.
    pub fn minimum(&self) -> u64 {
        self.sizes
            .iter()
            .zip(&self.pinned)
            .filter(|(_, p)| !**p)
            .map(|(s, _)| s.iter().copied().max().unwrap_or(0))
            .sum()
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn used(&self) -> u64 {
        self.used
    }

    pub fn holds(&self, o: Obj) -> bool {
        self.held[o.0].contains(&o.1)
    }

    pub fn held(&self, relation: usize) -> &BTreeSet<usize> {
        &self.held[relation]
    }

    pub fn insert(&mut self, o: Obj) {
        if self.held[o.0].insert(o.1) && !self.pinned[o.0] {
            self.used += self.sizes[o.0][o.1];
        }
    }

    pub fn remove(&mut self, o: Obj) {
        if self.held[o.0].remove(&o.1) && !self.pinned[o.0] {
            self.used -= self.sizes[o.0][o.1];
        }
    }

    /// Whether `o` fits without evicting.
    pub fn fits(&self, o: Obj) -> bool {
        self.pinned[o.0] || self.used + self.sizes[o.0][o.1] <= self.capacity
    }

    /// The object to drop so that `arriving` can come in, by `policy`
    /// (Skipper §4.2), never one of `keep`; `None` when nothing can be
    /// dropped.
    pub fn victim(
        &self,
        arriving: Obj,
        plans: &Subplans,
        policy: EvictPolicy,
        keep: &BTreeSet<Obj>,
    ) -> Option<Obj> {
        let candidates: Vec<Obj> = (0..self.held.len())
            .filter(|&r| !self.pinned[r])
            .flat_map(|r| self.held[r].iter().map(move |&i| (r, i)))
            .filter(|&o| o != arriving && !keep.contains(&o))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let pending = |o: Obj| plans.pending_with(o);
        match policy {
            EvictPolicy::MaxPending => candidates.into_iter().min_by_key(|&o| (pending(o), o)),
            EvictPolicy::MaxProgress => {
                let runnable = self.runnable_counts(arriving, plans);
                candidates
                    .into_iter()
                    .min_by_key(|&o| (runnable[o.0][o.1], pending(o), o))
            }
        }
    }

    /// Per held object: the pending subplans it is in that could run with
    /// what is held plus `arriving`.
    fn runnable_counts(&self, arriving: Obj, plans: &Subplans) -> Vec<Vec<u64>> {
        let mut counts: Vec<Vec<u64>> = self.sizes.iter().map(|s| vec![0; s.len()]).collect();
        let sets: Vec<Vec<usize>> = (0..self.held.len())
            .map(|r| {
                let mut s: Vec<usize> = self.held[r].iter().copied().collect();
                if r == arriving.0 && !s.contains(&arriving.1) {
                    s.push(arriving.1);
                }
                s
            })
            .collect();
        for_each_combo(&sets, |c| {
            if plans.is_pending(c) {
                for (r, &i) in c.iter().enumerate() {
                    counts[r][i] += 1;
                }
            }
        });
        counts
    }

    /// The pending subplans that `arrived` (now held) completes: every held
    /// combination containing it.
    pub fn runnable_with(&self, arrived: Obj, plans: &Subplans) -> Vec<Vec<usize>> {
        let sets: Vec<Vec<usize>> = (0..self.held.len())
            .map(|r| {
                if r == arrived.0 {
                    vec![arrived.1]
                } else {
                    self.held[r].iter().copied().collect()
                }
            })
            .collect();
        let mut out = Vec::new();
        for_each_combo(&sets, |c| {
            if plans.is_pending(c) {
                out.push(c.to_vec());
            }
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table 2 of the paper: A and B of two objects, C of objects 1 and 3
    /// (here 0 and 1): eight subplans.
    #[test]
    fn the_papers_example_max_progress_evicts_c3_and_max_pending_may_evict_b1() {
        let mut p = Subplans::new(&[2, 2, 2]).unwrap();
        assert_eq!(p.total(), 8);
        // Done: <A.1, B.1, C.3> and <A.2, B.1, C.3>.
        assert!(p.finish(&[0, 0, 1]));
        assert!(p.finish(&[1, 0, 1]));
        assert!(!p.finish(&[1, 0, 1]));
        assert_eq!(p.pending(), 6);
        // Pending per object: C.1 4, A.1 and A.2 3, B.1 and C.3 2.
        assert_eq!(p.pending_with((2, 0)), 4);
        assert_eq!(p.pending_with((0, 0)), 3);
        assert_eq!(p.pending_with((0, 1)), 3);
        assert_eq!(p.pending_with((1, 0)), 2);
        assert_eq!(p.pending_with((2, 1)), 2);
        // Cache of four objects holds A.1, B.1, A.2, C.3; C.1 arrives.
        let sizes = vec![vec![1; 2], vec![1; 2], vec![1; 2]];
        let mut c = Cache::new(4, sizes, vec![false; 3]);
        for o in [(0, 0), (1, 0), (0, 1), (2, 1)] {
            c.insert(o);
        }
        assert!(!c.fits((2, 0)));
        // Max-progress: runnable with C.1 — A.1: 1, A.2: 1, B.1: 2, C.3: 0.
        let none = BTreeSet::new();
        assert_eq!(
            c.victim((2, 0), &p, EvictPolicy::MaxProgress, &none),
            Some((2, 1))
        );
        // Kept objects are never picked.
        let keep: BTreeSet<Obj> = [(2, 1)].into();
        assert_eq!(
            c.victim((2, 0), &p, EvictPolicy::MaxProgress, &keep),
            Some((0, 0))
        );
        // Max-pending: B.1 and C.3 tie at 2; B.1 (the lower) is picked, the
        // choice the paper shows stalling MJoin.
        assert_eq!(
            c.victim((2, 0), &p, EvictPolicy::MaxPending, &none),
            Some((1, 0))
        );
        c.remove((2, 1));
        c.insert((2, 0));
        let run = c.runnable_with((2, 0), &p);
        assert_eq!(run, vec![vec![0, 0, 0], vec![1, 0, 0]]);
    }

    #[test]
    fn pruning_and_needed_objects() {
        let mut p = Subplans::new(&[3, 2]).unwrap();
        assert_eq!(p.prune((0, 1)), 2);
        assert_eq!(p.prune((0, 1)), 0);
        assert_eq!(p.pending(), 4);
        let mut c = Cache::new(10, vec![vec![1; 3], vec![1; 2]], vec![false, false]);
        c.insert((1, 0));
        // A.2 is pruned; B.1 is held: A.1, B.2, A.3.
        assert_eq!(p.needed(&c), vec![(0, 0), (1, 1), (0, 2)]);
        assert_eq!(p.held_needed(&c), 1);
        // Relation 0 varies fastest: (A.1, B.1) is subplan 0.
        assert_eq!(p.first_pending(), Some(vec![0, 0]));
        assert!(p.finish(&[0, 0]));
        // (A.2, B.1) is pruned: next is (A.3, B.1).
        assert_eq!(p.first_pending(), Some(vec![2, 0]));
        for combo in [[0, 1], [2, 0], [2, 1]] {
            assert!(p.finish(&combo));
        }
        assert_eq!(p.pending(), 0);
        assert_eq!(p.first_pending(), None);
        assert!(p.needed(&c).is_empty());
    }

    #[test]
    fn too_many_subplans_is_refused_and_pinned_relations_are_not_counted() {
        let e = Subplans::new(&[1 << 15, 1 << 15]).unwrap_err();
        assert!(
            e.contains("subplans") && e.contains("strata.skipper"),
            "{e}"
        );
        let mut c = Cache::new(3, vec![vec![2, 3], vec![5]], vec![false, true]);
        assert_eq!(c.minimum(), 3);
        c.insert((1, 0));
        assert_eq!(c.used(), 0);
        assert!(c.fits((0, 1)));
        c.insert((0, 1));
        assert!(!c.fits((0, 0)));
        // Only the arriving object's peers can go; the pinned never.
        let plans = Subplans::new(&[2, 1]).unwrap();
        let none = BTreeSet::new();
        assert_eq!(
            c.victim((0, 0), &plans, EvictPolicy::MaxPending, &none),
            Some((0, 1))
        );
        assert_eq!(plans.first_pending(), Some(vec![0, 0]));
    }

    #[test]
    fn combos_enumerate_the_product() {
        let mut seen = Vec::new();
        for_each_combo(&[vec![1, 2], vec![5], vec![7, 8]], |c| {
            seen.push(c.to_vec())
        });
        assert_eq!(seen.len(), 4);
        assert!(seen.contains(&vec![2, 5, 8]));
        for_each_combo(&[vec![1], vec![]], |_| panic!("empty set: no combination"));
    }
}
