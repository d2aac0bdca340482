//! The `page` generator (a Wikipedia-like page table): its shape, the
//! distributions its documentation claims, the uniqueness of its
//! (namespace, title) key, its cached index, and determinism.

use crate::common;

use std::collections::{HashMap, HashSet};

use common::{db, rows};
use strata_load::{
    GenKind, GenSpec, PAGE_CACHED, PAGE_KEY, PAGE_NAMESPACES, PAGE_TITLE_MAX, generate,
};
use strata_storage::db::{CachedLookups, NoProgress};
use strata_storage::row::{DataType, Value, encode_key};

fn text(v: &Value) -> &str {
    match v {
        Value::Str(s) => s,
        other => panic!("not a string: {other:?}"),
    }
}

#[test]
fn page_shape_distributions_and_unique_key() {
    let (_dir, db) = db();
    let n = 100_000u64;
    let r = generate(&db, &GenSpec::new(GenKind::Page, n), &NoProgress).unwrap();
    assert_eq!((r.table.as_str(), r.rows), ("page", n));
    let all = rows(&db, "page");
    assert_eq!(all.len() as u64, n);

    let mut ns_count: HashMap<i32, u64> = HashMap::new();
    let mut keys = HashSet::new();
    let (mut title_bytes, mut short, mut long) = (0u64, 0u64, 0u64);
    let (mut ns0, mut ns0_redirects, mut other_redirects) = (0u64, 0u64, 0u64);
    let (mut null_links, mut row_bytes) = (0u64, 0u64);
    for (i, row) in all.iter().enumerate() {
        assert_eq!(row.len(), 12);
        assert_eq!(
            row[0],
            Value::Int64(i as i64 + 1),
            "page_id is the row order"
        );
        let Value::Int32(ns) = row[1] else {
            panic!("{row:?}")
        };
        *ns_count.entry(ns).or_default() += 1;
        let title = text(&row[2]);
        assert!(
            (1..=PAGE_TITLE_MAX).contains(&title.len()),
            "title length {}",
            title.len()
        );
        assert!(
            title
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_()".contains(&b)),
            "{title}"
        );
        assert!(title.as_bytes()[0].is_ascii_uppercase(), "{title}");
        title_bytes += title.len() as u64;
        short += (title.len() < 8) as u64;
        long += (title.len() > 40) as u64;
        assert!(
            keys.insert((ns, title.to_string())),
            "duplicate key {ns} {title}"
        );
        let Value::Bool(redirect) = row[3] else {
            panic!("{row:?}")
        };
        let Value::Int32(len) = row[9] else {
            panic!("{row:?}")
        };
        if redirect {
            assert!((20..=120).contains(&len), "redirect length {len}");
        }
        assert!((0..=2_000_000).contains(&len));
        if ns == 0 {
            ns0 += 1;
            ns0_redirects += redirect as u64;
        } else {
            other_redirects += redirect as u64;
        }
        let touched = text(&row[6]);
        assert_eq!(touched.len(), 14);
        assert!(touched.bytes().all(|b| b.is_ascii_digit()));
        assert!(("20040101000000".."20250101000000").contains(&touched));
        match &row[7] {
            Value::Null => null_links += 1,
            Value::Str(s) => assert!(s.as_str() <= touched, "{s} after {touched}"),
            other => panic!("{other:?}"),
        }
        let Value::Int64(latest) = row[8] else {
            panic!("{row:?}")
        };
        assert!((1..=1_250_000_000).contains(&latest));
        let model = text(&row[10]);
        assert_eq!(model == "Scribunto", ns == 828, "{ns} {model}");
        row_bytes += row
            .iter()
            .map(|v| match v {
                Value::Null => 0,
                Value::Int32(_) => 4,
                Value::Bool(_) => 1,
                Value::Str(s) if s.len() == 14 => 14,
                Value::Str(s) => 2 + s.len() as u64,
                _ => 8,
            })
            .sum::<u64>();
    }
    // Namespace shares as documented, within 0.5 points (n = 100k: the
    // standard error of a 55% share is 0.16 points).
    for (ns, per_mille) in PAGE_NAMESPACES {
        let got = *ns_count.get(&ns).unwrap_or(&0) as f64 / n as f64 * 1000.0;
        assert!(
            (got - per_mille as f64).abs() < 5.0,
            "namespace {ns}: {got:.1}‰, documented {per_mille}‰"
        );
    }
    assert_eq!(ns_count.len(), PAGE_NAMESPACES.len());
    let mean_title = title_bytes as f64 / n as f64;
    assert!(
        (16.0..=24.0).contains(&mean_title),
        "mean title {mean_title}"
    );
    assert!(short > 0 && long > 0, "titles short {short}, long {long}");
    let ns0_share = ns0_redirects as f64 / ns0 as f64;
    assert!((0.53..0.57).contains(&ns0_share), "{ns0_share}");
    let other_share = other_redirects as f64 / (n - ns0) as f64;
    assert!((0.04..0.06).contains(&other_share), "{other_share}");
    assert!((700..1300).contains(&null_links), "{null_links}");
    // Rows of about 100 bytes of values.
    let mean_row = row_bytes as f64 / n as f64;
    assert!((85.0..=110.0).contains(&mean_row), "mean row {mean_row}");

    // The name_title index on the key, caching the 4 fields in 21 bytes.
    let t = db.table("page").unwrap();
    let ix = t.index("page_name_title").unwrap();
    assert_eq!(ix.def.columns, PAGE_KEY.map(String::from));
    let cached = ix.cached_fields().expect("the index caches fields");
    assert_eq!(cached.width(), 8 + 4 + 1 + 8);
    assert_eq!(ix.btree.len(), n);
    // Every key finds its row, through the cache and again from it.
    let mut counts = CachedLookups::default();
    for row in all.iter().step_by(97) {
        let mut k = Vec::new();
        encode_key(
            &[DataType::Int32, DataType::Varchar { len: 255 }],
            &row[1..3],
            &mut k,
        );
        for _ in 0..2 {
            let got = t.lookup_cached(ix, &k, &mut counts).unwrap();
            assert_eq!(got.len(), 1);
            assert_eq!(
                got[0].1,
                vec![
                    row[0].clone(),
                    row[9].clone(),
                    row[3].clone(),
                    row[8].clone()
                ],
                "{PAGE_CACHED:?}"
            );
        }
    }
    assert!(counts.hits > 0 && counts.misses > 0, "{counts:?}");
}

#[test]
fn page_is_deterministic() {
    let (_dir, db) = db();
    let mut spec = GenSpec::new(GenKind::Page, 5_000);
    spec.seed = 7;
    spec.table = Some("a".into());
    generate(&db, &spec, &NoProgress).unwrap();
    spec.table = Some("b".into());
    generate(&db, &spec, &NoProgress).unwrap();
    spec.seed = 8;
    spec.table = Some("c".into());
    generate(&db, &spec, &NoProgress).unwrap();
    let a = rows(&db, "a");
    assert_eq!(a, rows(&db, "b"));
    assert_ne!(a, rows(&db, "c"));
    assert!(db.table("a").unwrap().index("a_name_title").is_ok());
}
