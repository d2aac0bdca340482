//! Hot/cold clustering under SQL: point queries are counted as accesses, a
//! clustering with a hot partition changes no answer, and SQL's UPDATE,
//! DELETE and INSERT keep the partition exact — an inserted duplicate of a hot
//! key is found beside the old row.

use crate::common;

use std::sync::Arc;

use common::*;
use strata_sql::SqlSession;
use strata_storage::db::{IndexSpec, NoProgress};
use strata_storage::maintenance::check::check_database;
use strata_storage::maintenance::cluster::ClusterOptions;
use strata_storage::row::Value;

const ROWS: i64 = 20_000;

fn note(id: i64) -> String {
    format!("note {id:06}")
}

#[test]
fn sql_lookups_are_counted_and_answers_survive_clustering_and_changes() {
    let (_dir, db) = empty_db();
    load(
        &db,
        "t",
        "id BIGINT NOT NULL, g INT, note VARCHAR(200)",
        vec![IndexSpec::new("t_id", &["id"])],
        (0..ROWS).map(|i| {
            vec![
                Value::Int64(i),
                Value::Int32((i % 10) as i32),
                Value::Str(note(i)),
            ]
        }),
    );
    let db = Arc::new(db);
    db.table("t").unwrap().heat().set_every(1);
    let s = SqlSession::new(db.clone()).unwrap();
    let hot = [3i64, 777, 5_000, 12_345, 19_999];
    let one = |id: i64| query(&s, &format!("SELECT id, g, note FROM t WHERE id = {id}"));
    for _ in 0..3 {
        for id in hot {
            assert_eq!(
                one(id),
                vec![vec![id.to_string(), (id % 10).to_string(), note(id)]]
            );
        }
    }
    // The point queries went through the index: each read its tuple 3 times.
    let t = db.table("t").unwrap();
    let counts = t.heat().snapshot();
    assert_eq!(counts.len(), hot.len(), "{counts:?}");
    assert!(counts.iter().all(|c| c.1 == 3), "{counts:?}");

    let rep = db
        .cluster_hot(
            "t",
            &ClusterOptions {
                partition: Some("t_id".into()),
                ..ClusterOptions::default()
            },
        )
        .unwrap();
    assert_eq!((rep.hot, rep.moved_in, rep.partition_entries), (5, 5, 5));
    for id in hot {
        assert_eq!(
            one(id),
            vec![vec![id.to_string(), (id % 10).to_string(), note(id)]]
        );
    }
    // Changes through SQL.
    let long = "x".repeat(190);
    s.execute(&format!("UPDATE t SET note = '{long}' WHERE id = 777"))
        .unwrap();
    s.execute("DELETE FROM t WHERE id = 5000").unwrap();
    s.execute("INSERT INTO t VALUES (12345, 42, 'a duplicate of a hot key')")
        .unwrap();
    s.execute("UPDATE t SET id = 3 WHERE id = 100").unwrap();
    assert_eq!(one(777), vec![vec!["777".into(), "7".into(), long.clone()]]);
    assert!(one(5000).is_empty());
    let mut dup = one(12345);
    dup.sort();
    assert_eq!(
        dup,
        vec![
            vec![
                "12345".into(),
                "42".into(),
                "a duplicate of a hot key".into()
            ],
            vec!["12345".into(), "5".into(), note(12345)],
        ]
    );
    let mut three = one(3);
    three.sort();
    assert_eq!(
        three,
        vec![
            vec!["3".into(), "0".into(), note(100)],
            vec!["3".into(), "3".into(), note(3)],
        ]
    );
    check_database(&db, &NoProgress).unwrap();
    let count = query(&s, "SELECT count(*) FROM t");
    assert_eq!(count, vec![vec![ROWS.to_string()]]);
}
