//! The one index walk a split page-ordered Smooth Scan's parts share
//! (`ScanSpec::part_of`): what the walk decided ([`Decided`]: a sweep of a
//! page range, or runs of pages), each part's share of it in page order,
//! and the shared state the first part to need it fills.

use std::sync::{Arc, Mutex};

use crate::error::Result;

/// What the index walk decided: the heap pages to read, in page order.
#[derive(Clone, Debug, PartialEq)]
pub enum Decided {
    /// Every heap page in `[from, to)`: the whole heap as it was when the
    /// scan began, or a part's stretch of it.
    Sweep { from: u64, to: u64 },
    /// These runs (first page, pages), ascending.
    Runs(Vec<(u64, usize)>),
}

impl Decided {
    /// The share of part `k` of `n`: about a `n`-th of the pages, the
    /// shares in page order and together exactly the pages decided.
    pub fn share(&self, k: usize, n: usize) -> Decided {
        let n = n.max(1) as u64;
        let k = (k as u64).min(n - 1);
        match self {
            &Decided::Sweep { from, to } => {
                let span = to - from;
                Decided::Sweep {
                    from: from + span * k / n,
                    to: from + span * (k + 1) / n,
                }
            }
            Decided::Runs(runs) => {
                let total: u64 = runs.iter().map(|r| r.1 as u64).sum();
                let (from, to) = (total * k / n, total * (k + 1) / n);
                // `at`: pages of the runs before this one.
                let mut at = 0u64;
                let mut out = Vec::new();
                for &(first, len) in runs {
                    let (lo, hi) = (at.max(from), (at + len as u64).min(to));
                    if lo < hi {
                        out.push((first + (lo - at), (hi - lo) as usize));
                    }
                    at += len as u64;
                }
                Decided::Runs(out)
            }
        }
    }
}

/// The one index walk of a page-ordered Smooth Scan split into parts: the
/// first part to need it walks the index and decides; the others wait for
/// that, then each reads its own share ([`Decided::share`]).
#[derive(Debug)]
pub struct SharedWalk {
    parts: usize,
    /// The decision, and which parts have taken their share of it (a part
    /// that finds its own share taken is running the scan again, and walks
    /// afresh: the table may have changed since).
    state: Mutex<Option<(Decided, Vec<bool>)>>,
}

impl SharedWalk {
    pub fn new(parts: usize) -> Arc<SharedWalk> {
        Arc::new(SharedWalk {
            parts: parts.max(1),
            state: Mutex::new(None),
        })
    }

    pub fn parts(&self) -> usize {
        self.parts
    }

    /// Part `part`'s share of what the walk decided. The first part of a
    /// run of the scan to ask walks the index (`decide`) for all of them,
    /// holding the lock, so the others wait for it; a part that finds its
    /// own share already taken is running the scan again and walks afresh
    /// (the table may have changed since).
    pub fn share_of(
        &self,
        part: usize,
        decide: impl FnOnce() -> Result<Decided>,
    ) -> Result<Decided> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.as_ref().is_none_or(|(_, taken)| taken[part]) {
            // Nothing decided for this run of the scan yet: decide for all.
            *state = None;
            *state = Some((decide()?, vec![false; self.parts]));
        }
        let (decided, taken) = state.as_mut().expect("decided above");
        taken[part] = true;
        Ok(decided.share(part, self.parts))
    }
}

/// One part of a split scan: the walk its parts share, and which part.
#[derive(Clone, Debug)]
pub struct SplitPart {
    pub walk: Arc<SharedWalk>,
    pub part: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_what_was_decided_once_in_page_order() {
        let sweep = Decided::Sweep { from: 0, to: 10 };
        let shares: Vec<Decided> = (0..3).map(|k| sweep.share(k, 3)).collect();
        assert_eq!(
            shares,
            vec![
                Decided::Sweep { from: 0, to: 3 },
                Decided::Sweep { from: 3, to: 6 },
                Decided::Sweep { from: 6, to: 10 },
            ]
        );
        // 12 pages in three runs, in 4 shares of 3: runs cut where a share ends.
        let runs = Decided::Runs(vec![(5, 2), (20, 7), (100, 3)]);
        let shares: Vec<Decided> = (0..4).map(|k| runs.share(k, 4)).collect();
        assert_eq!(
            shares,
            vec![
                Decided::Runs(vec![(5, 2), (20, 1)]),
                Decided::Runs(vec![(21, 3)]),
                Decided::Runs(vec![(24, 3)]),
                Decided::Runs(vec![(100, 3)]),
            ]
        );
        // More parts than pages: some shares are empty, none overlap.
        let one = Decided::Runs(vec![(7, 1)]);
        let pages: Vec<Decided> = (0..3).map(|k| one.share(k, 3)).collect();
        assert_eq!(
            pages,
            vec![
                Decided::Runs(vec![]),
                Decided::Runs(vec![]),
                Decided::Runs(vec![(7, 1)])
            ]
        );
        assert_eq!(runs.share(0, 1), runs);
    }
}
