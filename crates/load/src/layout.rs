//! Where the key goes: the ranks behind the layout data sets of `strata gen`
//! (`uniform`, `correlated`, `periodic`, `clustered`, `alternating`,
//! `dense-start`, `dense-tail`; the module docs of the generators say what each
//! looks like).
//!
//! A layout is a permutation: row `i` (in insertion order, which is the heap
//! order of a fresh load) gets the rank `ranks[i]`, every rank in `0..n` exactly
//! once, and its key is `c2 = rank * 100001 / n` ([`c2_of_rank`]). So the key's
//! histogram is the same on every layout and only where the keys sit in the heap
//! differs: `c2 < x` selects the `ceil(x * n / 100001)` rows of lowest rank
//! ([`rows_below`]) on any layout, that is a fraction `x / 100001` of the table,
//! give or take the rows sharing one key (about `n / 100001`).
//!
//! The adversaries place rows on chosen pages. A fixed-size row `i` of a fresh
//! load lands on page `i / rows_per_page`
//! ([`strata_storage::heap::rows_per_page`]), so they take the page capacity
//! as a parameter; everything else is drawn from the caller's random number
//! generator in a fixed order, so a seed reproduces a layout.

use rand::Rng;
use rand::seq::SliceRandom;

use crate::generator::GenKind;

/// The keys run over `0..KEY_VALUES` (`0..=100000`, the microbench's range).
pub const KEY_VALUES: u64 = 100_001;
/// `correlated`: the noise on a row's position score, uniform in ±this (as a
/// fraction of the table).
pub const CORRELATED_NOISE: f64 = 0.01;
/// `periodic`: key cycles over the heap.
pub const PERIODIC_CYCLES: u64 = 32;
/// `periodic`: the noise on a row's score, uniform in ±this (as a fraction of
/// the key range).
pub const PERIODIC_NOISE: f64 = 0.01;
/// `clustered`: pages' worth of rows in one run of consecutive ranks.
pub const CLUSTER_PAGES: u64 = 4;
/// `dense-start`, `dense-tail`: one isolated special row every this many pages.
pub const SPARSE_EVERY_PAGES: u64 = 64;

/// The key of a row of rank `rank` in a table of `rows` rows:
/// `rank * 100001 / rows`, in `0..=100000`.
pub fn c2_of_rank(rank: u64, rows: u64) -> i32 {
    (rank * KEY_VALUES / rows.max(1)) as i32
}

/// Rows with `c2 < x` in a layout table of `rows` rows, whatever the layout:
/// the ranks `r` with `r * 100001 < x * rows`.
pub fn rows_below(x: i64, rows: u64) -> u64 {
    if x <= 0 {
        return 0;
    }
    (x as u64 * rows).div_ceil(KEY_VALUES).min(rows)
}

/// The largest `x` for which `c2 < x` selects at most `k` rows, all of them of
/// rank below `k` (exactly `k` rows when the table has fewer than 100001 rows;
/// otherwise within one key's rows, about `rows / 100001`, below `k`).
pub fn key_bound_for(k: u64, rows: u64) -> i64 {
    (k.min(rows) * KEY_VALUES / rows.max(1)) as i64
}

/// Heap pages of `rows` rows at `rows_per_page` a page.
pub fn pages(rows: u64, rows_per_page: u64) -> u64 {
    rows.div_ceil(rows_per_page.max(1))
}

/// The special rows of an adversary: they hold the lowest ranks,
/// `0..band.rows()`, so `c2 < key_bound_for(band.rows(), n)` selects them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Band {
    /// Rows of the dense run (every row of `dense_pages` whole pages), ranked in
    /// physical order.
    pub dense: u64,
    pub dense_pages: u64,
    /// Isolated rows, one on a page, ranked in random order.
    pub sparse: u64,
}

impl Band {
    pub fn rows(&self) -> u64 {
        self.dense + self.sparse
    }
}

/// `dense-start` / `dense-tail`: the pages of the dense run, 1% of the heap
/// and at least one page.
pub fn dense_pages(pages: u64) -> u64 {
    (pages / 100).max(1).min(pages)
}

/// The special rows of `kind` on a table of `rows` rows, `rows_per_page` a
/// page; `None` for layouts without one.
pub fn band(kind: GenKind, rows: u64, rows_per_page: u64) -> Option<Band> {
    let p = pages(rows, rows_per_page);
    match kind {
        GenKind::Alternating => Some(Band {
            dense: 0,
            dense_pages: 0,
            sparse: p.div_ceil(2),
        }),
        GenKind::DenseStart | GenKind::DenseTail => {
            let d = dense_pages(p);
            let dense = if d == p { rows } else { d * rows_per_page };
            Some(Band {
                dense,
                dense_pages: d,
                sparse: (p - d).div_ceil(SPARSE_EVERY_PAGES),
            })
        }
        _ => None,
    }
}

/// The rank of every row of a `kind` table (a permutation of `0..rows`), for
/// the layouts above; `None` for the other data sets (`microbench`, `skewed`,
/// `flash`, `page`, `revision`). Draws from `rng` in a fixed order.
pub fn ranks<R: Rng>(
    kind: GenKind,
    rows: u64,
    rows_per_page: u64,
    rng: &mut R,
) -> Option<Vec<u32>> {
    let n = rows;
    assert!(n <= u32::MAX as u64, "{n} rows: ranks are u32");
    let tpp = rows_per_page.max(1);
    let p = pages(n, tpp);
    Some(match kind {
        GenKind::Uniform => {
            let mut r: Vec<u32> = (0..n as u32).collect();
            r.shuffle(rng);
            r
        }
        GenKind::Correlated => ranks_by_score(n, |i| {
            i as f64 / n as f64 + rng.random_range(-CORRELATED_NOISE..=CORRELATED_NOISE)
        }),
        GenKind::Periodic => ranks_by_score(n, |i| {
            let frac = ((i as u128 * PERIODIC_CYCLES as u128) % n as u128) as f64 / n as f64;
            frac + rng.random_range(-PERIODIC_NOISE..=PERIODIC_NOISE)
        }),
        GenKind::Clustered => {
            let run = CLUSTER_PAGES * tpp;
            let mut order: Vec<u64> = (0..n.div_ceil(run)).collect();
            order.shuffle(rng);
            let mut r = vec![0u32; n as usize];
            let mut next = 0u32;
            for k in order {
                let (from, to) = ((k * run) as usize, ((k + 1) * run).min(n) as usize);
                let slice = &mut r[from..to];
                for v in slice.iter_mut() {
                    *v = next;
                    next += 1;
                }
                slice.shuffle(rng);
            }
            r
        }
        GenKind::Alternating => {
            let special: Vec<u64> = (0..p).step_by(2).map(|pg| pg * tpp).collect();
            with_special(n, &[(special, true)], rng)
        }
        GenKind::DenseStart | GenKind::DenseTail => {
            let d = dense_pages(p);
            // The dense run starts the heap (dense-start) or sits at a random
            // page (dense-tail), ending before the last page so it is whole
            // pages of rows.
            let at = if kind == GenKind::DenseStart || p == d {
                0
            } else {
                rng.random_range(0..p - d)
            };
            let dense: Vec<u64> = (at * tpp..((at + d) * tpp).min(n)).collect();
            // Every 64th page of the rest of the heap, counted outside the run.
            let sparse: Vec<u64> = (0..p - d)
                .step_by(SPARSE_EVERY_PAGES as usize)
                .map(|k| if k < at { k } else { k + d })
                .map(|pg| pg * tpp)
                .collect();
            if kind == GenKind::DenseStart {
                with_special(n, &[(dense, false), (sparse, true)], rng)
            } else {
                with_special(n, &[(sparse, true), (dense, false)], rng)
            }
        }
        GenKind::Microbench
        | GenKind::Skewed
        | GenKind::Flash
        | GenKind::Page
        | GenKind::Revision => return None,
    })
}

/// Ranks in the order of `score(i)` over the rows `i`. Scores are quantized
/// to 32 bits over `[-0.5, 1.5]` (steps of 5e-10, a 200th of a row's
/// share of a 10M-row table) and sorted as one u64 with the row, which breaks
/// the rare ties: 8 bytes a row, one sort.
fn ranks_by_score(n: u64, mut score: impl FnMut(u64) -> f64) -> Vec<u32> {
    let mut keys: Vec<u64> = (0..n)
        .map(|i| {
            let s = ((score(i) + 0.5) / 2.0).clamp(0.0, 1.0);
            let q = (s * u32::MAX as f64) as u64;
            (q << 32) | i
        })
        .collect();
    keys.sort_unstable();
    let mut r = vec![0u32; n as usize];
    for (rank, k) in keys.into_iter().enumerate() {
        r[(k & 0xffff_ffff) as usize] = rank as u32;
    }
    r
}

/// Groups of special rows (row numbers, ascending) take the lowest ranks group
/// after group, each in random order (`true`) or in row order; every other row
/// gets one of the remaining ranks in random order.
fn with_special<R: Rng>(n: u64, groups: &[(Vec<u64>, bool)], rng: &mut R) -> Vec<u32> {
    const FREE: u32 = u32::MAX;
    let mut r = vec![FREE; n as usize];
    let mut next = 0u32;
    for (rows, shuffled) in groups {
        let mut vals: Vec<u32> = (next..next + rows.len() as u32).collect();
        if *shuffled {
            vals.shuffle(rng);
        }
        for (&row, v) in rows.iter().zip(vals) {
            debug_assert_eq!(r[row as usize], FREE, "row {row} in two groups");
            r[row as usize] = v;
        }
        next += rows.len() as u32;
    }
    let mut rest: Vec<u32> = (next..n as u32).collect();
    rest.shuffle(rng);
    let mut rest = rest.into_iter();
    for v in r.iter_mut().filter(|v| **v == FREE) {
        *v = rest.next().expect("as many free rows as ranks left");
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    fn of(kind: GenKind, n: u64, tpp: u64, seed: u64) -> Vec<u32> {
        ranks(kind, n, tpp, &mut SmallRng::seed_from_u64(seed)).unwrap()
    }

    #[test]
    fn every_layout_is_a_permutation_and_seeds_reproduce() {
        for kind in GenKind::LAYOUTS {
            for (n, tpp) in [(1u64, 185u64), (7, 3), (1000, 45), (250_001, 185)] {
                let r = of(kind, n, tpp, 5);
                let mut seen = vec![false; n as usize];
                for &v in &r {
                    assert!(
                        !std::mem::replace(&mut seen[v as usize], true),
                        "{kind} {n}"
                    );
                }
                assert_eq!(r, of(kind, n, tpp, 5), "{kind} {n}");
                if n > 100 {
                    assert_ne!(r, of(kind, n, tpp, 6), "{kind} {n}");
                }
            }
        }
        assert!(ranks(GenKind::Microbench, 10, 2, &mut SmallRng::seed_from_u64(1)).is_none());
    }

    #[test]
    fn keys_select_the_lowest_ranks() {
        for n in [1000u64, 100_001, 1_000_000] {
            let mut count = vec![0u64; KEY_VALUES as usize];
            for rank in 0..n {
                let c2 = c2_of_rank(rank, n);
                assert!((0..=100_000).contains(&c2));
                count[c2 as usize] += 1;
            }
            let mut below = 0;
            for x in 0..=KEY_VALUES as i64 {
                assert_eq!(rows_below(x, n), below, "{n} {x}");
                if x < KEY_VALUES as i64 {
                    below += count[x as usize];
                }
            }
            for k in [0, 1, n / 3, n] {
                let x = key_bound_for(k, n);
                let got = rows_below(x, n);
                assert!(got <= k && k - got <= n / KEY_VALUES, "{n} {k} {got}");
                assert!(rows_below(x + 1, n) > k || k == n, "{n} {k}");
            }
        }
    }

    #[test]
    fn correlated_and_periodic_follow_the_row_number() {
        let n = 100_000u64;
        let r = of(GenKind::Correlated, n, 185, 1);
        let noise = (2.0 * CORRELATED_NOISE * n as f64) as i64 + 1;
        assert!(
            r.iter()
                .enumerate()
                .all(|(i, &v)| (v as i64 - i as i64).abs() <= noise)
        );
        let r = of(GenKind::Periodic, n, 185, 1);
        // The lowest 1/32 of the ranks start every cycle.
        let cycle = n / PERIODIC_CYCLES;
        let starts = (0..PERIODIC_CYCLES)
            .filter(|c| r[(c * cycle) as usize] < (n / 10) as u32)
            .count();
        assert_eq!(starts as u64, PERIODIC_CYCLES);
    }

    #[test]
    fn clustered_runs_hold_consecutive_ranks() {
        let (n, tpp) = (10_000u64, 45u64);
        let r = of(GenKind::Clustered, n, tpp, 3);
        let run = (CLUSTER_PAGES * tpp) as usize;
        for chunk in r.chunks(run) {
            let lo = *chunk.iter().min().unwrap();
            let hi = *chunk.iter().max().unwrap();
            assert_eq!((hi - lo) as usize, chunk.len() - 1);
        }
        assert_ne!(r[0], 0, "runs in random order (seed 3)");
    }

    #[test]
    fn adversaries_put_their_band_on_the_planned_pages() {
        let (n, tpp) = (100_000u64, 45u64);
        let p = pages(n, tpp);
        let band_pages = |kind| {
            let r = of(kind, n, tpp, 9);
            let b = band(kind, n, tpp).unwrap();
            let mut on: Vec<(u64, u32)> = r
                .iter()
                .enumerate()
                .filter(|(_, v)| (**v as u64) < b.rows())
                .map(|(i, v)| (i as u64 / tpp, *v))
                .collect();
            on.sort_by_key(|x| x.1);
            (b, on)
        };
        let (b, on) = band_pages(GenKind::Alternating);
        assert_eq!(b.rows(), p.div_ceil(2));
        let mut pg: Vec<u64> = on.iter().map(|x| x.0).collect();
        pg.sort_unstable();
        assert_eq!(pg, (0..p).step_by(2).collect::<Vec<_>>());

        let (b, on) = band_pages(GenKind::DenseStart);
        let d = p / 100;
        assert_eq!((b.dense_pages, b.dense), (d, d * tpp));
        let dense: Vec<u64> = on[..b.dense as usize].iter().map(|x| x.0).collect();
        assert!(dense.windows(2).all(|w| w[0] <= w[1]) && dense[0] == 0);
        assert_eq!(*dense.last().unwrap(), d - 1);
        let mut sparse: Vec<u64> = on[b.dense as usize..].iter().map(|x| x.0).collect();
        assert_ne!(
            sparse.windows(2).filter(|w| w[0] < w[1]).count(),
            sparse.len() - 1
        );
        sparse.sort_unstable();
        assert_eq!(sparse, (d..p).step_by(64).collect::<Vec<_>>());

        let (b, on) = band_pages(GenKind::DenseTail);
        let mut sparse: Vec<u64> = on[..b.sparse as usize].iter().map(|x| x.0).collect();
        let dense: Vec<u64> = on[b.sparse as usize..].iter().map(|x| x.0).collect();
        let at = dense[0];
        assert!(at > 0, "a random offset (seed 9)");
        assert!(dense.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(*dense.last().unwrap(), at + d - 1);
        sparse.sort_unstable();
        let outside: Vec<u64> = (0..p).filter(|pg| !(at..at + d).contains(pg)).collect();
        assert_eq!(sparse, outside.into_iter().step_by(64).collect::<Vec<_>>());
    }
}
