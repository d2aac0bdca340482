//! Semantic ids (No Bits Left Behind §4.2): `compact --semantic-id` drops a
//! surrogate key's bytes and the tuple's address stands in. Checked against a
//! model of the rows (keyed by a second, stored column), the tuple ids the
//! storage layer reports, and the pages a lookup by id reads.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::*;
use strata_access::{PathChoice, Predicate, ScanSpec, SortOptions, TupleBatch};
use strata_sql::SqlSession;
use strata_storage::db::{IndexSpec, NoProgress};
use strata_storage::maintenance::check::check_database;
use strata_storage::maintenance::compact::CompactOptions;
use strata_storage::row::encoding::{Encoding, address_of, tid_of_address};
use strata_storage::row::{Tid, Value};

const ROWS: i64 = 5_000;

fn semantic(col: &str) -> CompactOptions {
    CompactOptions {
        semantic_id: Some(col.into()),
        ..CompactOptions::default()
    }
}

/// Every row as (k → (id, note)), and checks that each id is its tuple's
/// address.
fn rows(db: &strata_storage::Database) -> BTreeMap<i64, (i64, String)> {
    let t = db.table("t").unwrap();
    let mut out = BTreeMap::new();
    t.scan_rows(|tid, row| {
        let id = row[0].as_i64().expect("id is never NULL");
        assert_eq!(id, address_of(tid), "row {row:?} at {tid}");
        let Value::Str(note) = &row[2] else {
            panic!("{row:?}")
        };
        out.insert(row[1].as_i64().unwrap(), (id, note.clone()));
        Ok(())
    })
    .unwrap();
    out
}

/// The heap pages a full scan of `t` reads for `predicate`, and the rows.
fn scan(db: &strata_storage::Database, predicate: &str) -> (u64, u64) {
    let t = db.table("t").unwrap();
    let p = Predicate::parse(t.schema(), predicate).unwrap();
    let mut path = strata_access::open_path(
        ScanSpec::new(t, p),
        &PathChoice::Full,
        &SortOptions::default(),
    )
    .unwrap();
    let mut batch = TupleBatch::new();
    let mut n = 0;
    while path.next_batch(&mut batch).unwrap() {
        n += batch.len() as u64;
    }
    (path.report().heap_pages, n)
}

#[test]
fn a_semantic_id_is_the_tuple_address_and_a_lookup_by_it_reads_one_page() {
    let (dir, db) = empty_db();
    load(
        &db,
        "t",
        "id BIGINT NOT NULL, k BIGINT NOT NULL, note VARCHAR(100)",
        vec![IndexSpec::new("t_k", &["k"])],
        (0..ROWS).map(|i| {
            vec![
                Value::Int64(1_000_000 + i),
                Value::Int64(i),
                Value::Str(format!("note {i} {}", "x".repeat((i % 50) as usize))),
            ]
        }),
    );
    let pages_before = db.table("t").unwrap().heap().num_pages();

    // Wrong columns are refused, naming what is wrong; nothing changes.
    let e = db.compact("t", &semantic("note"), &NoProgress).unwrap_err();
    assert!(e.to_string().contains("needs BIGINT"), "{e}");
    let e = db.compact("t", &semantic("nope"), &NoProgress).unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
    let e = db.compact("t", &semantic("k"), &NoProgress).unwrap_err();
    assert!(
        e.to_string().contains("t_k") && e.to_string().contains("drop the index"),
        "{e}"
    );

    let rep = db.compact("t", &semantic("id"), &NoProgress).unwrap();
    assert_eq!(rep.rows, ROWS as u64);
    assert_eq!(rep.columns[0].after, Encoding::Address);
    assert!(rep.pages_after < pages_before, "{rep:?}");
    let model = rows(&db);
    assert_eq!(model.len(), ROWS as usize);
    for (k, (_, note)) in &model {
        assert!(note.starts_with(&format!("note {k} ")), "{k}: {note}");
    }

    // A lookup by id reads exactly its page; a range, the pages it spans.
    let (&k, &(id, _)) = model.iter().nth(1234).unwrap();
    let (pages, n) = scan(&db, &format!("id = {id}"));
    assert_eq!((pages, n), (1, 1));
    let (pages, n) = scan(&db, &format!("id = {}", id + 70_000)); // no such slot
    assert!(pages <= 1 && n == 0, "{pages} {n}");
    let lo = address_of(Tid::new(3, 0));
    let hi = address_of(Tid::new(5, 0)) - 1;
    let want = model
        .values()
        .filter(|(i, _)| (lo..=hi).contains(i))
        .count();
    assert_eq!(
        scan(&db, &format!("id >= {lo} AND id <= {hi}")),
        (2, want as u64)
    );
    assert_eq!(scan(&db, "id < 0"), (0, 0));

    let db = Arc::new(db);
    let s = SqlSession::new(db.clone()).unwrap();
    assert_eq!(
        query(&s, &format!("SELECT k FROM t WHERE id = {id}")),
        vec![vec![k.to_string()]]
    );
    let plan = query(&s, &format!("EXPLAIN SELECT k FROM t WHERE id = {id}")).concat();
    assert!(plan.concat().contains("tid range"), "{plan:?}");
    assert_eq!(
        query(
            &s,
            &format!("SELECT count(*) FROM t WHERE id BETWEEN {lo} AND {hi}")
        ),
        vec![vec![want.to_string()]]
    );

    // Writes: an insert leaves the id out and gets its address; giving one,
    // setting one, or indexing one is an error naming the column.
    let e = s
        .execute(&format!("INSERT INTO t VALUES ({id}, -1, 'given')"))
        .err()
        .expect("an error")
        .to_string();
    assert!(
        e.contains("'id' is a semantic id") && e.contains("row 1"),
        "{e}"
    );
    let e = s
        .execute("UPDATE t SET id = 5 WHERE k = 1")
        .err()
        .expect("an error")
        .to_string();
    assert!(e.contains("'id'") && e.contains("cannot be set"), "{e}");
    let e = s
        .execute("CREATE INDEX t_id ON t (id)")
        .err()
        .expect("an error")
        .to_string();
    assert!(e.contains("semantic id"), "{e}");
    query(
        &s,
        "INSERT INTO t (k, note) VALUES (-1, 'new one'), (-2, 'another')",
    );
    query(&s, "INSERT INTO t VALUES (NULL, -3, 'null id')");
    query(
        &s,
        &format!("UPDATE t SET note = 'changed' WHERE id = {id}"),
    );
    query(
        &s,
        &format!("DELETE FROM t WHERE id = {}", model.get(&7).expect("k 7").0),
    );
    // Rows that grow out of their page move, and their ids with them.
    let long = "y".repeat(99);
    let moved = query(
        &s,
        &format!("UPDATE t SET note = '{long}' WHERE k >= 100 AND k < 400"),
    );
    assert_eq!(moved, vec![vec!["300".to_string()]]);
    let after = rows(&db);
    let changed_ids = (100..400).filter(|k| after[k].0 != model[k].0).count();
    assert!(changed_ids > 0, "no row moved");
    assert!((100..400).all(|k| after[&k].1 == long));
    assert_eq!(after.len(), ROWS as usize + 3 - 1);
    assert!(!after.contains_key(&7));
    for k in [-1, -2, -3] {
        let (id, _) = after[&k];
        let tid = tid_of_address(id).unwrap();
        assert!(db.table("t").unwrap().get_row(tid).unwrap().is_some());
    }
    assert_eq!(after[&k].1, "changed");
    assert_eq!(
        query(
            &s,
            &format!("SELECT note FROM t WHERE id = {}", after[&k].0)
        ),
        vec![vec!["changed".to_string()]]
    );
    check_database(&db, &NoProgress).unwrap();

    // It lasts: a reopen, and a compaction without the option, keep it; a
    // plain one stores the addresses as they then are.
    drop(s);
    let db = Arc::try_unwrap(db).ok().unwrap();
    drop(db);
    let db = reopen(&dir.path().join("db"));
    assert_eq!(db.table("t").unwrap().encodings()[0], Encoding::Address);
    let rep = db
        .compact("t", &CompactOptions::default(), &NoProgress)
        .unwrap();
    assert_eq!(rep.columns[0].after, Encoding::Address);
    let kept = rows(&db);
    assert_eq!(
        kept.iter()
            .map(|(k, v)| (*k, v.1.clone()))
            .collect::<Vec<_>>(),
        after
            .iter()
            .map(|(k, v)| (*k, v.1.clone()))
            .collect::<Vec<_>>()
    );
    let ids: Vec<i64> = kept.values().map(|v| v.0).collect();
    let plain = CompactOptions {
        plain: true,
        ..CompactOptions::default()
    };
    db.compact("t", &plain, &NoProgress).unwrap();
    let t = db.table("t").unwrap();
    assert!(t.encodings().is_empty());
    let mut stored = Vec::new();
    t.scan_rows(|_, row| {
        stored.push(row[0].as_i64().unwrap());
        Ok(())
    })
    .unwrap();
    stored.sort_unstable();
    let mut ids = ids;
    ids.sort_unstable();
    assert_eq!(stored, ids);
}

/// §4.2's second use: lookups by a semantic id are counted, and clustering
/// the hot tuples moves them into the hot region, which changes their ids to
/// addresses there: the id itself says which partition a tuple is in.
#[test]
fn clustering_moves_hot_tuples_and_their_ids_name_the_hot_region() {
    let (_dir, db) = empty_db();
    load(
        &db,
        "t",
        "id BIGINT NOT NULL, k BIGINT NOT NULL, note VARCHAR(100)",
        vec![],
        (0..ROWS).map(|i| {
            vec![
                Value::Int64(i),
                Value::Int64(i),
                Value::Str(format!("note {i} {}", "z".repeat(60))),
            ]
        }),
    );
    db.compact("t", &semantic("id"), &NoProgress).unwrap();
    let before = rows(&db);
    db.table("t").unwrap().heat().set_every(1);
    // Every 50th row is hot: looked up by id five times.
    let hot: Vec<i64> = before.keys().copied().filter(|k| k % 50 == 0).collect();
    for _ in 0..5 {
        for k in &hot {
            assert_eq!(scan(&db, &format!("id = {}", before[k].0)), (1, 1));
        }
    }
    let rep = db
        .cluster_hot(
            "t",
            &strata_storage::maintenance::cluster::ClusterOptions::default(),
        )
        .unwrap();
    assert_eq!(rep.hot, hot.len() as u64, "{rep:?}");
    let after = rows(&db);
    let region = address_of(Tid::new(rep.region_start as u32, 0));
    for (k, (id, note)) in &after {
        assert_eq!(note, &before[k].1, "k {k}");
        assert_eq!(
            *id >= region,
            k % 50 == 0,
            "k {k}: id {id}, region from {region}"
        );
    }
    check_database(&db, &NoProgress).unwrap();
}
