//! The native generators: shape, value ranges, skew, permutation, index and
//! determinism.

mod common;

use std::ops::Bound;

use common::{Recorder, db, rows};
use strata_load::{GenKind, GenSpec, MICROBENCH_MAX, generate, skewed_counts};
use strata_storage::db::{Database, NoProgress};
use strata_storage::types::{DataType, Value, encode_key};

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
        "c1 INT32, c2 INT32, c3 INT32, c4 INT32, c5 INT32, c6 INT32, c7 INT32, c8 INT32, c9 INT32, c10 INT32"
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
        spec.table = Some(format!("{kind}_1"));
        generate(&db, &spec, &NoProgress).unwrap();
        spec.table = Some(format!("{kind}_2"));
        generate(&db, &spec, &NoProgress).unwrap();
        spec.seed = 100;
        spec.table = Some(format!("{kind}_3"));
        generate(&db, &spec, &NoProgress).unwrap();
        let one = rows(&db, &format!("{kind}_1"));
        assert_eq!(one, rows(&db, &format!("{kind}_2")), "{kind}");
        assert_ne!(one, rows(&db, &format!("{kind}_3")), "{kind}");
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
    // The message lists tpch too (generate_tpch, the CLI's other generator).
    let e = "nosuch".parse::<GenKind>().unwrap_err().to_string();
    assert_eq!(
        e,
        "unknown data set 'nosuch': expected one of microbench, skewed, flash, tpch"
    );
}

/// Speed check, run by hand: `cargo test --release -p strata-load --test gen -- --ignored --nocapture`.
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
