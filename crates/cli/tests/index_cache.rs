//! Index caches through the real binary: `strata index cache` declares the
//! cached columns (kept in the catalog, shown by `strata info`), wrong names
//! are usage errors (exit 2), and `strata scan --path index-cache` returns
//! exactly the rows of the plain index scan, reading a heap page only for
//! cache misses.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use rand::{Rng, SeedableRng};

fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let csv = dir.path().join("t.csv");
    {
        use std::io::Write;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(16);
        let mut f = std::io::BufWriter::new(std::fs::File::create(&csv).unwrap());
        writeln!(f, "id,grp,note").unwrap();
        for i in 0..20_000 {
            let len = rng.random_range(1..12);
            let note: String = (0..len)
                .map(|_| (b'a' + rng.random_range(0..26u8)) as char)
                .collect();
            writeln!(f, "{i},{},{note}", rng.random_range(0..2000)).unwrap();
        }
    }
    ok(
        &db,
        &[
            "load",
            "t",
            csv.to_str().unwrap(),
            "--schema",
            SCHEMA,
            "--index",
            "t_grp:grp",
        ],
    );
    (dir, db)
}

fn info_json(db: &Path) -> serde_json::Value {
    serde_json::from_str(&ok(db, &["info", "--json"])).unwrap()
}

#[test]
fn cached_columns_are_declared_kept_shown_and_checked() {
    let (_dir, db) = setup();
    let out = ok(
        &db,
        &["index", "cache", "t", "t_grp", "--columns", "id,note"],
    );
    assert!(out.contains("caches (id, note)"), "{out}");
    let v = info_json(&db);
    let ix = &v[0]["indexes"][0];
    assert_eq!(ix["cached_columns"], serde_json::json!(["id", "note"]));
    // id 8 bytes, note VARCHAR(20): 2 + 20; tag and tid 7.
    assert_eq!(ix["cache_item_bytes"], 8 + 22 + 7);
    let text = ok(&db, &["info"]);
    assert!(
        text.contains("caches (id, note) in leaf free space"),
        "{text}"
    );

    for (args, needle) in [
        (
            vec!["index", "cache", "nope", "t_grp", "--columns", "id"],
            "nope",
        ),
        (
            vec!["index", "cache", "t", "nope", "--columns", "id"],
            "nope",
        ),
        (
            vec!["index", "cache", "t", "t_grp", "--columns", "id,zz"],
            "zz",
        ),
        (
            vec!["index", "cache", "t", "t_grp", "--columns", "grp"],
            "key column",
        ),
    ] {
        let o = strata(&db, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    // The failed calls changed nothing.
    assert_eq!(
        info_json(&db)[0]["indexes"][0]["cached_columns"],
        serde_json::json!(["id", "note"])
    );
    let out = ok(&db, &["index", "cache", "t", "t_grp", "--none"]);
    assert!(out.contains("caches no column"), "{out}");
    assert_eq!(
        info_json(&db)[0]["indexes"][0]["cached_columns"],
        serde_json::json!([])
    );
    ok(&db, &["check"]);
}

/// The rows a scan printed with --show (before its report).
fn rows_of(out: &str, header: &str) -> Vec<String> {
    let mut rows: Vec<String> = out
        .lines()
        .take_while(|l| !l.starts_with(header))
        .map(|l| l.to_string())
        .collect();
    rows.sort();
    rows
}

#[test]
fn the_index_cache_path_returns_the_index_scans_rows_and_reads_heap_pages_only_for_misses() {
    let (_dir, db) = setup();
    ok(
        &db,
        &["index", "cache", "t", "t_grp", "--columns", "id,note"],
    );
    for pred in [
        "grp >= 100 AND grp < 400",
        "grp = 7",
        "grp > 1990",
        "grp < 300 AND grp <> 5",
    ] {
        let plain = ok(
            &db,
            &[
                "scan", "t", "--where", pred, "--path", "index", "--show", "1000000",
            ],
        );
        let cached = ok(
            &db,
            &[
                "scan",
                "t",
                "--where",
                pred,
                "--path",
                "index-cache",
                "--columns",
                "id,grp,note",
                "--runs",
                "2",
                "--show",
                "1000000",
            ],
        );
        let (a, b) = (
            rows_of(&plain, "index scan on"),
            rows_of(&cached, "index-cache scan on"),
        );
        assert!(!a.is_empty(), "{pred}");
        // (Not printed: thousands of rows.)
        assert!(
            a == b,
            "{pred}: {} rows by the index scan, {} by index-cache",
            a.len(),
            b.len()
        );
    }
    // A key's ~10 entries fit in its leaf's cache (90% full leaves hold
    // ~20 items of 37 bytes): after the first run every entry hits. Over a
    // wide range the caches thrash, but hits still read no heap page.
    for (pred, all_hit) in [("grp = 7", true), ("grp >= 100 AND grp < 400", false)] {
        let out = ok(
            &db,
            &[
                "scan",
                "t",
                "--where",
                pred,
                "--path",
                "index-cache",
                "--runs",
                "3",
                "--json",
            ],
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let runs = v["runs"].as_array().unwrap();
        let n = |r: &serde_json::Value, k: &str| r[k].as_u64().unwrap();
        assert_eq!(n(&runs[0], "cache_hits"), 0, "caches start empty");
        for r in runs {
            assert_eq!(
                n(r, "cache_hits") + n(r, "cache_misses"),
                n(r, "index_entries")
            );
            assert_eq!(n(r, "rows"), n(r, "index_entries"));
        }
        let (first, last) = (&runs[0], &runs[2]);
        assert!(n(last, "cache_hits") > 0, "{pred}: {last}");
        if all_hit {
            assert_eq!(n(last, "cache_misses"), 0, "{pred}: {last}");
        }
        // Runs that find every page in the pool read the same index pages;
        // the difference in page accesses is one heap page per miss, none per
        // hit. (A run that loads pages counts the cursor's read-ahead too.)
        let base = if n(first, "device_pages_read") == 0 {
            first
        } else {
            &runs[1]
        };
        assert_eq!(
            n(base, "device_pages_read") + n(last, "device_pages_read"),
            0
        );
        // (Either run may miss more: over a wide range a full leaf admits
        // an item only on its second miss, so the misses move between runs.)
        let d = |k: &str| n(base, k) as i64 - n(last, k) as i64;
        assert_eq!(
            d("pool_accesses"),
            d("cache_misses"),
            "{pred}: {base} {last}"
        );
    }
    let pred = "grp >= 100 AND grp < 400";

    // Only key and cached columns.
    let o = strata(
        &db,
        &[
            "scan",
            "t",
            "--where",
            pred,
            "--path",
            "index-cache",
            "--columns",
            "id,grp",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    ok(&db, &["index", "cache", "t", "t_grp", "--columns", "id"]);
    let o = strata(
        &db,
        &[
            "scan",
            "t",
            "--where",
            pred,
            "--path",
            "index-cache",
            "--columns",
            "note",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("note is neither"), "{}", stderr(&o));
    let o = strata(
        &db,
        &[
            "scan",
            "t",
            "--where",
            "grp = 3 AND note = 'x'",
            "--path",
            "index-cache",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
