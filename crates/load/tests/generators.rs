//! The native generators: shape, value ranges, skew, permutation, index and
//! determinism.

use crate::common;

use std::ops::Bound;

use common::{Recorder, db, rows};
use strata_load::{GenKind, GenSpec, MICROBENCH_MAX, generate, skewed_counts};
use strata_storage::db::{Database, NoProgress};
use strata_storage::row::{DataType, Value, encode_key};

fn key(v: i32) -> Vec<u8> {
    let mut k = Vec::new();
    encode_key(&[DataType::Int32], &[Value::Int32(v)], &mut k);
    k
}

fn int(v: &Value) -> i32 {
    match v {
        Value::Int32(x) => *x,
        other => panic!("not an INT32: {other:?}"),
    }
}

/// Entries of the index on `column` with key in `lo..=hi`.
fn index_count(db: &Database, table: &str, column: &str, lo: i32, hi: i32) -> usize {
    let t = db.table(table).unwrap();
    let idx = t.index_on(column).unwrap();
    idx.btree
        .range(Bound::Included(key(lo)), Bound::Included(key(hi)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
        .len()
}

#[test]
fn microbench_shape_ranges_and_index() {
    let (_dir, db) = db();
    let n = 20_000;
    let p = Recorder::default();
    let r = generate(&db, &GenSpec::new(GenKind::Microbench, n), &p).unwrap();
    assert_eq!(
        (
            r.table.as_str(),
            r.rows,
            r.summary.rows_total,
            r.summary.indexes_built
        ),
        ("microbench", n, n, 1)
    );
    assert_eq!(p.phase("generate microbench"), Some((n, n)));
    let t = db.table("microbench").unwrap();
    assert_eq!(
        t.schema().to_string(),
        "c1 INT, c2 INT, c3 INT, c4 INT, c5 INT, c6 INT, c7 INT, c8 INT, c9 INT, c10 INT"
    );
    let idx = t.index("microbench_c2").unwrap();
    assert_eq!(idx.btree.len(), n);

    let all = rows(&db, "microbench");
    assert_eq!(all.len() as u64, n);
    let (mut lo_seen, mut hi_seen) = (false, false);
    for (i, r) in all.iter().enumerate() {
        assert_eq!(int(&r[0]), i as i32, "c1 is the tuple order");
        for v in &r[1..] {
            let v = int(v);
            assert!((0..=MICROBENCH_MAX).contains(&v));
            lo_seen |= v < 100;
            hi_seen |= v > MICROBENCH_MAX - 100;
        }
    }
    assert!(lo_seen && hi_seen, "values span the whole range");
    // The index agrees with a scan for a 10% range predicate.
    let (lo, hi) = (20_000, 29_999);
    let scanned = all
        .iter()
        .filter(|r| (lo..=hi).contains(&int(&r[1])))
        .count();
    assert!(scanned > 1_500 && scanned < 2_500, "{scanned}");
    assert_eq!(index_count(&db, "microbench", "c2", lo, hi), scanned);
}

#[test]
fn skewed_has_exactly_the_planned_zeros() {
    let (_dir, db) = db();
    let n = 300_000;
    let counts = skewed_counts(n);
    assert_eq!((counts.hot, counts.scattered), (3_000, 3));
    let mut spec = GenSpec::new(GenKind::Skewed, n);
    spec.seed = 7;
    let r = generate(&db, &spec, &NoProgress).unwrap();
    assert_eq!(r.c2_zero_rows, Some(3_003));
    let t = db.table("skewed").unwrap();
    assert!(t.index("skewed_c2").is_ok());
    let mut zeros = 0;
    let mut scattered = Vec::new();
    t.scan_rows(|_, r| {
        let (c1, c2) = (int(&r[0]), int(&r[1]));
        if (c1 as u64) < counts.hot {
            assert_eq!(c2, 0, "row {c1} is in the first 1%");
        } else if c2 == 0 {
            scattered.push(c1);
        } else {
            assert!((1..=MICROBENCH_MAX).contains(&c2));
        }
        zeros += (c2 == 0) as u64;
        for v in &r[2..] {
            assert!((0..=MICROBENCH_MAX).contains(&int(v)));
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(zeros, counts.total());
    assert_eq!(scattered.len(), 3);
    assert_eq!(
        index_count(&db, "skewed", "c2", 0, 0) as u64,
        counts.total()
    );
    // Same seed, same stragglers; another seed, others.
    let again = |seed: u64, name: &str| {
        let mut s = GenSpec::new(GenKind::Skewed, n);
        s.seed = seed;
        s.table = Some(name.into());
        generate(&db, &s, &NoProgress).unwrap();
        let mut z = Vec::new();
        db.table(name)
            .unwrap()
            .scan_rows(|_, r| {
                if int(&r[1]) == 0 && int(&r[0]) as u64 >= counts.hot {
                    z.push(int(&r[0]));
                }
                Ok(())
            })
            .unwrap();
        z
    };
    assert_eq!(again(7, "s7"), scattered);
    assert_ne!(again(8, "s8"), scattered);
}

#[test]
fn flash_rows_are_300_bytes_and_a_is_a_permutation() {
    let (_dir, db) = db();
    let n = 5_000u64;
    let r = generate(&db, &GenSpec::new(GenKind::Flash, n), &NoProgress).unwrap();
    assert_eq!(r.table, "flash");
    let t = db.table("flash").unwrap();
    assert_eq!(t.schema().max_row_size(), 300);
    assert_eq!(t.index("flash_a").unwrap().btree.len(), n);
    let all = rows(&db, "flash");
    let mut a: Vec<i32> = all.iter().map(|r| int(&r[0])).collect();
    assert_ne!(a, (1..=n as i32).collect::<Vec<_>>(), "shuffled");
    for r in &all {
        match &r[1] {
            Value::Str(s) => assert!(s.len() == 296 && s.bytes().all(|b| b == s.as_bytes()[0])),
            other => panic!("{other:?}"),
        }
    }
    a.sort_unstable();
    assert_eq!(a, (1..=n as i32).collect::<Vec<_>>());
    assert_eq!(index_count(&db, "flash", "a", 1, 100), 100);
}

#[test]
fn same_seed_same_data() {
    let (_dir, db) = db();
    for kind in GenKind::ALL {
        let mut spec = GenSpec::new(kind, 3_000);
        spec.seed = 99;
        let t = kind.default_table();
        spec.table = Some(format!("{t}_1"));
        generate(&db, &spec, &NoProgress).unwrap();
        spec.table = Some(format!("{t}_2"));
        generate(&db, &spec, &NoProgress).unwrap();
        spec.seed = 100;
        spec.table = Some(format!("{t}_3"));
        generate(&db, &spec, &NoProgress).unwrap();
        let one = rows(&db, &format!("{t}_1"));
        assert_eq!(one, rows(&db, &format!("{t}_2")), "{kind}");
        assert_ne!(one, rows(&db, &format!("{t}_3")), "{kind}");
    }
}

#[test]
fn fill_factor_spreads_rows_and_names_are_checked() {
    let (_dir, db) = db();
    let mut spec = GenSpec::new(GenKind::Microbench, 10_000);
    spec.table = Some("full".into());
    let full = generate(&db, &spec, &NoProgress).unwrap();
    spec.table = Some("half".into());
    spec.options.fill_factor = 0.5;
    let half = generate(&db, &spec, &NoProgress).unwrap();
    assert!(
        half.summary.pages_total >= 2 * full.summary.pages_total - 1,
        "{half:?} {full:?}"
    );
    // The table exists now.
    assert!(
        generate(&db, &spec, &NoProgress)
            .unwrap_err()
            .to_string()
            .contains("already exists")
    );

    assert_eq!("Skewed".parse::<GenKind>().unwrap(), GenKind::Skewed);
    assert_eq!(
        "dense_start".parse::<GenKind>().unwrap(),
        GenKind::DenseStart
    );
    // The message lists tpch too (generate_tpch, the CLI's other generator).
    let e = "nosuch".parse::<GenKind>().unwrap_err().to_string();
    assert_eq!(
        e,
        "unknown data set 'nosuch': expected one of microbench, skewed, flash, page, revision, \
         uniform, correlated, periodic, clustered, alternating, dense-start, dense-tail, tpch"
    );
}

/// Speed check, run by hand: `cargo test --release -p strata-load --test integration generators:: -- --ignored --nocapture`.
/// 10 M microbench rows with the index should take well under a minute.
#[test]
#[ignore]
fn microbench_10m_rows_is_fast() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(
        &dir.path().join("db"),
        strata_storage::db::DbOptions {
            direct_io: false,
            ..Default::default()
        },
    )
    .unwrap();
    struct Timed(std::time::Instant);
    impl strata_storage::db::Progress for Timed {
        fn phase(&self, name: &str, _: u64) {
            eprintln!("{:>8.2?} {name}", self.0.elapsed());
        }
        fn advance(&self, _: u64) {}
    }
    let start = std::time::Instant::now();
    let p = Timed(start);
    let r = generate(&db, &GenSpec::new(GenKind::Microbench, 10_000_000), &p).unwrap();
    let took = start.elapsed();
    eprintln!("{took:>8.2?} done: {} pages", r.summary.pages_total);
    assert!(took.as_secs() < 60, "{took:?}");
}

/// The rank of a row from its key in a layout table of fewer than 100001 rows
/// (where every rank has a key of its own): the smallest `r` with
/// `r * 100001 / n == c2`, that is `ceil(c2 * n / 100001)`.
fn rank_of(c2: i32, n: u64) -> u64 {
    (c2 as u64 * n).div_ceil(100_001)
}

/// (page, rank) of every row of a layout table, in heap order, from a scan of
/// its heap (the rows' real tuple ids).
fn placed(db: &Database, table: &str, n: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    db.table(table)
        .unwrap()
        .scan_rows(|tid, r| {
            assert_eq!(int(&r[0]) as usize, out.len(), "c1 is the row number");
            out.push((tid.page as u64, rank_of(int(&r[1]), n)));
            Ok(())
        })
        .unwrap();
    out
}

/// Every layout has the same key histogram: each rank once, `c2` from its rank,
/// so `c2 < x` selects the same number of rows on every layout, which the index
/// agrees with; under both fill factors the bench uses.
#[test]
fn layouts_share_one_histogram_and_selectivity() {
    let (_dir, db) = db();
    let n = 30_000u64;
    for fill in [1.0, 0.25] {
        for kind in GenKind::LAYOUTS {
            let table = format!("{}_{}", kind.default_table(), (fill * 100.0) as u32);
            let mut spec = GenSpec::new(kind, n);
            spec.table = Some(table.clone());
            spec.options.fill_factor = fill;
            let r = generate(&db, &spec, &NoProgress).unwrap();
            assert_eq!(r.band, kind.band(n, fill), "{kind}");
            let placed = placed(&db, &table, n);
            let mut ranks: Vec<u64> = placed.iter().map(|p| p.1).collect();
            ranks.sort_unstable();
            assert_eq!(ranks, (0..n).collect::<Vec<_>>(), "{kind}: every rank once");
            // Rows per page as the heap's rule says.
            let tpp = kind.rows_per_page(fill);
            assert_eq!(tpp, if fill == 1.0 { 185 } else { 45 });
            assert!(
                placed
                    .iter()
                    .enumerate()
                    .all(|(i, p)| p.0 == i as u64 / tpp)
            );
            let all = rows(&db, &table);
            for x in [1i32, 3, 100, 1_000, 33_333, 100_000, 100_001] {
                let want = strata_load::layout::rows_below(x as i64, n);
                let got = all.iter().filter(|r| int(&r[1]) < x).count() as u64;
                assert_eq!(got, want, "{kind} x={x}");
                // x / 100001 of the table, give or take a row per value.
                let frac = x as f64 / 100_001.0 * n as f64;
                assert!((got as f64 - frac).abs() <= 1.0, "{kind} x={x}");
                if x > 0 && x <= MICROBENCH_MAX {
                    assert_eq!(index_count(&db, &table, "c2", 0, x - 1) as u64, got);
                }
            }
        }
    }
}

/// The adversaries' special rows sit where the layouts promise, on the pages a
/// heap scan finds them on, under both fill factors.
#[test]
fn adversaries_place_their_band_on_the_promised_pages() {
    let (_dir, db) = db();
    let n = 50_000u64;
    for fill in [1.0, 0.25] {
        let gen_ = |kind: GenKind| {
            let table = format!("{}_{}", kind.default_table(), (fill * 100.0) as u32);
            let mut spec = GenSpec::new(kind, n);
            spec.seed = 11;
            spec.table = Some(table.clone());
            spec.options.fill_factor = fill;
            let band = generate(&db, &spec, &NoProgress).unwrap().band.unwrap();
            let placed = placed(&db, &table, n);
            let pages = placed.last().unwrap().0 + 1;
            // The band's rows by rank: (page, rank).
            let mut on: Vec<(u64, u64)> =
                placed.into_iter().filter(|p| p.1 < band.rows()).collect();
            on.sort_by_key(|p| p.1);
            (band, pages, on)
        };

        // alternating: one row on every second page, pages 0, 2, 4, ...
        let (band, pages, on) = gen_(GenKind::Alternating);
        assert_eq!(band.rows(), pages.div_ceil(2));
        let mut p: Vec<u64> = on.iter().map(|x| x.0).collect();
        assert!(p.windows(2).any(|w| w[0] > w[1]), "random order");
        p.sort_unstable();
        assert_eq!(p, (0..pages).step_by(2).collect::<Vec<_>>(), "fill {fill}");
        // The band's key bound selects exactly it (fewer than 100001 rows).
        let x = strata_load::layout::key_bound_for(band.rows(), n);
        assert_eq!(strata_load::layout::rows_below(x, n), band.rows());

        // dense-start: the first D pages whole, in physical order, then every
        // 64th page after them, one row each, in random order.
        let (band, pages, on) = gen_(GenKind::DenseStart);
        let d = (pages / 100).max(1);
        let tpp = GenKind::DenseStart.rows_per_page(fill);
        assert_eq!((band.dense_pages, band.dense), (d, d * tpp));
        let dense = &on[..band.dense as usize];
        assert!(dense.iter().enumerate().all(|(i, x)| x.0 == i as u64 / tpp));
        let mut sparse: Vec<u64> = on[band.dense as usize..].iter().map(|x| x.0).collect();
        sparse.sort_unstable();
        assert_eq!(sparse, (d..pages).step_by(64).collect::<Vec<_>>());

        // dense-tail: every 64th page outside the run first, then the run of D
        // whole pages at a random offset, in physical order.
        let (band, pages, on) = gen_(GenKind::DenseTail);
        let dense = &on[band.sparse as usize..];
        let at = dense[0].0;
        assert!(at > 0 && at + d < pages, "{at}");
        assert!(
            dense
                .iter()
                .enumerate()
                .all(|(i, x)| x.0 == at + i as u64 / tpp)
        );
        assert_eq!(dense.len() as u64, d * tpp);
        let mut sparse: Vec<u64> = on[..band.sparse as usize].iter().map(|x| x.0).collect();
        sparse.sort_unstable();
        let outside: Vec<u64> = (0..pages).filter(|p| !(at..at + d).contains(p)).collect();
        assert_eq!(sparse, outside.into_iter().step_by(64).collect::<Vec<_>>());
    }
}

/// Speed check of the slowest layout, run by hand (see `microbench_10m_rows_is_fast`).
#[test]
#[ignore]
fn correlated_10m_rows_is_fast() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(
        &dir.path().join("db"),
        strata_storage::db::DbOptions {
            direct_io: false,
            ..Default::default()
        },
    )
    .unwrap();
    let start = std::time::Instant::now();
    let r = generate(
        &db,
        &GenSpec::new(GenKind::Correlated, 10_000_000),
        &NoProgress,
    )
    .unwrap();
    let took = start.elapsed();
    eprintln!("{took:>8.2?} done: {} pages", r.summary.pages_total);
    assert!(took.as_secs() < 60, "{took:?}");
}
