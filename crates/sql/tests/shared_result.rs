//! A CTE read twice is computed once (`strata_sql::shared_result`): the
//! statement reads the table's pages once, as many as the CTE read once
//! does, where computing it at each reader (DataFusion's plan) read them
//! twice; the answer is the one computing it twice gives.

use std::sync::Arc;

use strata_sql::SqlSession;
use strata_storage::Database;
use strata_storage::row::Value;

use crate::common;

#[test]
fn a_cte_read_twice_reads_its_table_once() {
    const N: i64 = 50_000;
    let (dir, db) = common::empty_db();
    let pad = "x".repeat(60);
    common::load(
        &db,
        "t",
        "k BIGINT, v BIGINT, pad VARCHAR(60)",
        vec![],
        (0..N).map(|i| {
            vec![
                Value::Int64(i % 97),
                Value::Int64(i),
                Value::Str(pad.clone()),
            ]
        }),
    );
    let path = db.dir().to_path_buf();
    drop(db);
    let db = Arc::new(Database::open(&path, common::options()).unwrap());
    let pages = db.table("t").unwrap().heap().num_pages();
    let s = SqlSession::new(db).unwrap();
    let cte = "WITH totals AS (SELECT k, sum(v) AS total FROM t GROUP BY k) ";
    let once = s
        .execute(&format!("{cte} SELECT max(total) FROM totals"))
        .unwrap();
    let twice = s
        .execute(&format!(
            "{cte} SELECT k, total FROM totals WHERE total = (SELECT max(total) FROM totals)"
        ))
        .unwrap();
    // The heap is read in full each time the aggregate runs.
    assert!(
        once.io.pages_read >= pages,
        "{} of {pages}",
        once.io.pages_read
    );
    assert_eq!(
        twice.io.pages_read, once.io.pages_read,
        "the CTE named twice read {} pages, named once {} (the heap has {pages})",
        twice.io.pages_read, once.io.pages_read
    );
    // The second opinion: the same answer from a statement that computes the
    // aggregate twice (two different spellings are not shared).
    let unshared = s
        .execute(
            "SELECT k, total FROM (SELECT k, sum(v) AS total FROM t GROUP BY k) \
             WHERE total = (SELECT max(total) FROM (SELECT k, sum(v + 0) AS total FROM t GROUP BY k))",
        )
        .unwrap();
    assert_eq!(unshared.io.pages_read, 2 * once.io.pages_read);
    assert_eq!(common::text(&twice), common::text(&unshared));
    assert_eq!(
        common::text(&twice),
        vec![vec!["44".to_string(), "12911094".to_string()]]
    );
    drop(dir);
}
