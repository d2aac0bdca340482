//! A read-only SQL session beside a writer, without a server (issue 57, item
//! 2): it opens while another handle writes the database, each statement
//! reads the commits made before it began (a new snapshot when the log has
//! a newer commit), its settings survive a new snapshot, its writes are
//! refused naming the writer, and while the writer commits transfers and
//! writes pages back, every answer it gives is some committed state whole.

use crate::common;
use crate::common::{error, query, run};

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_sql::{SqlError, SqlSession};
use strata_storage::db::IndexSpec;
use strata_storage::row::Value;
use strata_storage::{Database, DbOptions};

fn options(pool_bytes: usize, read_only: bool) -> DbOptions {
    DbOptions {
        buffer_pool_bytes: pool_bytes,
        read_only,
        ..common::options()
    }
}

/// `acct (id BIGINT, bal BIGINT)` with `rows` accounts of 100, indexed on id.
fn accounts(rows: i64, pool_bytes: usize) -> (tempfile::TempDir, Arc<Database>) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(&dir.path().join("db"), options(pool_bytes, false)).unwrap();
    common::load(
        &db,
        "acct",
        "id BIGINT, bal BIGINT",
        vec![IndexSpec::new("acct_id", &["id"])],
        (1..=rows).map(|i| vec![Value::Int64(i), Value::Int64(100)]),
    );
    (dir, Arc::new(db))
}

fn reader(db: &Database, pool_bytes: usize) -> SqlSession {
    let ro = Database::open(db.dir(), options(pool_bytes, true)).unwrap();
    SqlSession::new(Arc::new(ro)).unwrap()
}

fn totals(s: &SqlSession) -> Vec<Vec<String>> {
    query(s, "SELECT count(*), sum(bal) FROM acct")
}

#[test]
fn each_statement_of_a_reader_sees_the_commits_made_before_it_began() {
    let (_dir, db) = accounts(2000, 4 << 20);
    let w = SqlSession::new(db.clone()).unwrap();
    let r = reader(&db, 4 << 20);
    assert_eq!(totals(&r), [["2000", "200000"]]);
    run(&r, "SET strata.access_path = 'smooth'");
    // A commit the log holds and the files do not yet.
    run(&w, "INSERT INTO acct VALUES (2001, 7)");
    assert_eq!(totals(&r), [["2001", "200007"]]);
    // Written back by a checkpoint.
    run(&w, "UPDATE acct SET bal = bal + 1 WHERE id <= 10");
    db.checkpoint().unwrap();
    assert_eq!(totals(&r), [["2001", "200017"]]);
    // A new snapshot keeps the session's settings.
    assert_eq!(
        query(&r, "SHOW strata.access_path"),
        [["strata.access_path", "smooth"]]
    );
    // Its writes are refused, naming the writer beside it.
    let e = error(&r, "INSERT INTO acct VALUES (1, 1)").to_string();
    assert!(
        e.contains("read-only") && e.contains("holds it for writing"),
        "{e}"
    );
    assert!(!r.database().snapshot_moved());
}

/// A writer thread commits transfers between accounts (each keeps the sum)
/// and writes its pages back (checkpoints, a small pool that evicts) while
/// a reader session sums the accounts: every answer is 50,000 accounts and
/// the first sum, whichever commits it saw. A statement that met pages
/// written back under it ran again on a new snapshot; after five such tries
/// it fails with SQLSTATE 40001, which a busy writer may cause and is
/// counted, never a wrong sum.
#[test]
fn a_reader_beside_a_busy_writer_sees_every_transfer_whole() {
    let (_dir, db) = accounts(50_000, 1 << 20);
    let r = reader(&db, 1 << 20);
    let want = [["50000", "5000000"]];
    assert_eq!(totals(&r), want);
    let done = std::sync::atomic::AtomicBool::new(false);
    let (mut answered, mut refused) = (0, 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let w = SqlSession::new(db.clone()).unwrap();
            let mut rng = SmallRng::seed_from_u64(5);
            for n in 0..300 {
                let (a, b) = (rng.random_range(1..=50_000), rng.random_range(1..=50_000));
                run(&w, "BEGIN");
                run(&w, &format!("UPDATE acct SET bal = bal - 5 WHERE id = {a}"));
                run(&w, &format!("UPDATE acct SET bal = bal + 5 WHERE id = {b}"));
                run(&w, "COMMIT");
                if n % 50 == 49 {
                    db.checkpoint().unwrap();
                }
            }
            done.store(true, std::sync::atomic::Ordering::Release);
        });
        while !done.load(std::sync::atomic::Ordering::Acquire) {
            match r.execute("SELECT count(*), sum(bal) FROM acct") {
                Ok(res) => {
                    assert_eq!(common::text(&res), want);
                    answered += 1;
                }
                Err(e @ SqlError::Storage(_)) | Err(e @ SqlError::Execution(_)) => {
                    assert!(e.to_string().contains("40001"), "{e}");
                    refused += 1;
                }
                Err(e) => panic!("{e}"),
            }
        }
    });
    eprintln!("{answered} sums answered beside the writer, {refused} refused after 5 snapshots");
    // The writer is done: the reader's next statement sees its last commit.
    assert_eq!(totals(&r), want);
    let w = SqlSession::new(db.clone()).unwrap();
    assert_eq!(
        query(&r, "SELECT bal FROM acct ORDER BY id LIMIT 3"),
        query(&w, "SELECT bal FROM acct ORDER BY id LIMIT 3")
    );
}
