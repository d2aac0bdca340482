//! The `revision` generator (a Wikipedia-like revision table): its shape, the
//! page ids and parent chains, the size of its rows, how its latest
//! revisions spread over the heap, its index, and determinism.

use crate::common;

use std::collections::{HashMap, HashSet};

use common::{db, rows};
use strata_load::{
    GenKind, GenSpec, REVISION_KEY, REVISION_TEXT_MAX, generate, revision_pages, revision_schema,
};
use strata_storage::db::NoProgress;
use strata_storage::row::{DataType, Value};

fn text(v: &Value) -> &str {
    match v {
        Value::Str(s) => s,
        other => panic!("not a string: {other:?}"),
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int32(x) => *x as i64,
        Value::Int64(x) => *x,
        other => panic!("not an integer: {other:?}"),
    }
}

/// Bytes of a row in the heap's format: no null bitmap (no nullable
/// column), fixed widths, VARCHAR a 2-byte length then its bytes.
fn row_bytes(row: &[Value]) -> u64 {
    let schema = revision_schema();
    schema
        .columns
        .iter()
        .zip(row)
        .map(|(c, v)| match (c.ty, v) {
            (DataType::Int32, _) => 4,
            (DataType::Int64, _) => 8,
            (DataType::Bool, _) => 1,
            (DataType::Char { len }, _) => len as u64,
            (DataType::Varchar { .. }, Value::Str(s)) => 2 + s.len() as u64,
            other => panic!("{other:?}"),
        })
        .sum()
}

#[test]
fn revision_pages_is_a_rounded_twentieth() {
    for (rows, pages) in [
        (0, 0),
        (1, 1),
        (9, 1),
        (29, 1),
        (30, 2),
        (20_000, 1_000),
        (20_009, 1_000),
        (20_010, 1_001),
        (10_000_000, 500_000),
    ] {
        assert_eq!(revision_pages(rows), pages, "{rows} rows");
    }
    assert_eq!("Revision".parse::<GenKind>().unwrap(), GenKind::Revision);
    assert_eq!(GenKind::Revision.to_string(), "revision");
    assert!(GenKind::ALL.contains(&GenKind::Revision));
    assert!(!GenKind::Revision.is_layout());
    let schema = GenKind::Revision.schema();
    assert_eq!(schema, revision_schema());
    assert!(schema.columns.iter().all(|c| !c.nullable));
    let names: Vec<&str> = schema.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "rev_id",
            "rev_page",
            "rev_text_id",
            "rev_comment",
            "rev_user",
            "rev_user_text",
            "rev_timestamp",
            "rev_minor_edit",
            "rev_deleted",
            "rev_len",
            "rev_parent_id",
            "rev_sha1"
        ]
    );
}

#[test]
fn revision_shape_chains_and_scattered_latest() {
    let (_dir, db) = db();
    let n = 20_000u64;
    let r = generate(&db, &GenSpec::new(GenKind::Revision, n), &NoProgress).unwrap();
    assert_eq!((r.table.as_str(), r.rows), ("revision", n));
    let t = db.table("revision").unwrap();
    let mut all = Vec::new();
    let mut heap_page = Vec::new();
    t.scan_rows(|tid, row| {
        heap_page.push(tid.page);
        all.push(row);
        Ok(())
    })
    .unwrap();
    assert_eq!(all.len() as u64, n);
    let p = revision_pages(n);
    let users = n / 50;

    // Per page: its revisions' ids in rev_id order.
    let mut revisions: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut names: HashMap<i64, String> = HashMap::new();
    let mut sha1s = HashSet::new();
    let (mut anonymous, mut minor, mut deleted, mut no_comment) = (0u64, 0u64, 0u64, 0u64);
    let (mut long_comments, mut bytes, mut comment_bytes) = (0u64, 0u64, 0u64);
    let mut lens = Vec::new();
    let mut last_ts = String::new();
    for (i, row) in all.iter().enumerate() {
        assert_eq!(row.len(), 12);
        let rev_id = int(&row[0]);
        assert_eq!(rev_id, i as i64 + 1, "rev_id is the heap order");
        assert_eq!(int(&row[2]), rev_id, "rev_text_id");
        let page = int(&row[1]);
        assert!((1..=p as i64).contains(&page), "rev_page {page}");
        let chain = revisions.entry(page).or_default();
        assert_eq!(
            int(&row[10]),
            chain.last().copied().unwrap_or(0),
            "rev_parent_id of {rev_id}"
        );
        chain.push(rev_id);

        let comment = text(&row[3]);
        assert!(comment.len() <= REVISION_TEXT_MAX);
        assert!(
            !comment.starts_with(' ') && !comment.ends_with(' '),
            "{comment:?}"
        );
        no_comment += comment.is_empty() as u64;
        long_comments += (comment.len() >= 200) as u64;
        comment_bytes += comment.len() as u64;

        let user = int(&row[4]);
        let user_text = text(&row[5]);
        assert!((1..=REVISION_TEXT_MAX).contains(&user_text.len()));
        if user == 0 {
            anonymous += 1;
            let octets: Vec<u8> = user_text.split('.').map(|o| o.parse().unwrap()).collect();
            assert_eq!(octets.len(), 4, "{user_text}");
        } else {
            assert!((1..=users as i64).contains(&user), "rev_user {user}");
            let name = names.entry(user).or_insert_with(|| user_text.to_string());
            assert_eq!(name, user_text, "one name per user");
            assert!(user_text.as_bytes()[0].is_ascii_uppercase(), "{user_text}");
        }

        let ts = text(&row[6]);
        assert_eq!(ts.len(), 14);
        assert!(ts.bytes().all(|b| b.is_ascii_digit()), "{ts}");
        assert!(("20040101000000".."20250101000000").contains(&ts), "{ts}");
        assert!(last_ts.as_str() <= ts, "{last_ts} then {ts}");
        last_ts = ts.to_string();

        let Value::Bool(m) = row[7] else {
            panic!("{row:?}")
        };
        minor += m as u64;
        let d = int(&row[8]);
        assert!((0..=15).contains(&d), "rev_deleted {d}");
        deleted += (d != 0) as u64;
        let len = int(&row[9]);
        assert!((0..=2_000_000).contains(&len), "rev_len {len}");
        lens.push(len);
        let sha1 = text(&row[11]);
        assert_eq!(sha1.len(), 31);
        assert!(
            sha1.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()),
            "{sha1}"
        );
        assert!(sha1s.insert(sha1.to_string()), "duplicate sha1 {sha1}");
        bytes += row_bytes(row);
    }

    // Every page has a revision; a few have many, most few.
    assert_eq!(revisions.len() as u64, p, "every page 1..={p} is edited");
    let mut counts: Vec<usize> = revisions.values().map(Vec::len).collect();
    counts.sort_unstable();
    let once = counts.iter().filter(|&&c| c == 1).count();
    assert!(
        *counts.last().unwrap() >= 100,
        "busiest page {}",
        counts.last().unwrap()
    );
    assert!(
        counts[counts.len() / 2] <= 12,
        "median {}",
        counts[counts.len() / 2]
    );
    assert!(once as u64 > p / 4, "{once} pages with one revision");

    // The latest revision of each page: 5% of the rows, on most heap pages.
    let latest: HashSet<i64> = revisions.values().map(|c| *c.last().unwrap()).collect();
    let share = latest.len() as f64 / n as f64;
    assert!((0.045..=0.055).contains(&share), "latest share {share}");
    let heap_pages = t.heap().num_pages();
    assert_eq!(
        heap_pages,
        *heap_page.iter().max().unwrap() as u64 + 1,
        "one heap segment, pages 0.."
    );
    let hot_pages: HashSet<u32> = latest
        .iter()
        .map(|&id| heap_page[id as usize - 1])
        .collect();
    let hot_share = hot_pages.len() as f64 / heap_pages as f64;
    assert!(
        hot_share > 0.5,
        "latest revisions on {hot_share} of the heap"
    );

    // Rows of about 200 bytes, 30..50 a page.
    let mean_row = bytes as f64 / n as f64;
    assert!((170.0..=230.0).contains(&mean_row), "mean row {mean_row}");
    let per_page = t.rows() as f64 / heap_pages as f64;
    assert!((30.0..=50.0).contains(&per_page), "{per_page} rows a page");

    // The documented shares (n = 20k: a 30% share's standard error is 0.3
    // points).
    let pct = |k: u64| k as f64 / n as f64 * 100.0;
    assert!(
        (18.0..=22.0).contains(&pct(anonymous)),
        "{}",
        pct(anonymous)
    );
    assert!((28.0..=32.0).contains(&pct(minor)), "{}", pct(minor));
    assert!(pct(deleted) < 1.0, "{}", pct(deleted));
    assert!(
        (10.5..=13.5).contains(&pct(no_comment)),
        "{}",
        pct(no_comment)
    );
    assert!(long_comments > 0);
    let mean_comment = comment_bytes as f64 / n as f64;
    assert!((85.0..=115.0).contains(&mean_comment), "{mean_comment}");
    // rev_len: each page's length, log-normal over the pages (median 2500);
    // over the revisions the busiest pages would weigh too much.
    let mut page_lens: Vec<i64> = latest.iter().map(|&id| lens[id as usize - 1]).collect();
    page_lens.sort_unstable();
    let median_len = page_lens[page_lens.len() / 2];
    assert!(
        (1_800..=3_500).contains(&median_len),
        "median rev_len {median_len}"
    );

    // The rev_id index.
    let ix = t.index("revision_rev_id").unwrap();
    assert_eq!(ix.def.columns, vec![REVISION_KEY.to_string()]);
    assert_eq!(ix.btree.len(), n);
}

#[test]
fn revision_is_deterministic_and_small_tables_work() {
    let (_dir, db) = db();
    let mut spec = GenSpec::new(GenKind::Revision, 5_000);
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
    assert!(db.table("a").unwrap().index("a_rev_id").is_ok());

    // Tiny tables: every page still gets its revision.
    for n in [0u64, 1, 2, 19, 30, 41] {
        let mut spec = GenSpec::new(GenKind::Revision, n);
        spec.table = Some(format!("tiny_{n}"));
        generate(&db, &spec, &NoProgress).unwrap();
        let all = rows(&db, &format!("tiny_{n}"));
        assert_eq!(all.len() as u64, n);
        let pages: HashSet<i64> = all.iter().map(|r| int(&r[1])).collect();
        assert_eq!(pages.len() as u64, revision_pages(n), "{n} rows");
    }
}
