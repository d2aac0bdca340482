//! The server through the `postgres` crate: simple and extended query,
//! parameters and results of every strata type in text and binary, command
//! tags, SQLSTATEs, transaction blocks, writers taking turns, cancel,
//! timeouts, the connection limit, and sessions seeing each other's tables.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{NaiveDate, NaiveDateTime};
use postgres::{Client, NoTls, SimpleQueryMessage};
use rust_decimal::Decimal;
use strata_server::{ServeOptions, Server};
use strata_storage::{Database, DbOptions};

/// A server on a fresh database, serving from a thread of its own.
pub fn serve(max_connections: usize) -> (SocketAddr, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::create(&dir.path().join("db"), DbOptions::default()).unwrap());
    let opts = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        max_connections,
        socket_dir: None,
        ..ServeOptions::default()
    };
    let server = Server::bind(db, &opts).unwrap();
    let addr = server.local_addr().unwrap();
    std::thread::spawn(move || server.run());
    (addr, dir)
}

pub fn connect(addr: SocketAddr) -> Client {
    Client::connect(
        &format!(
            "host={} port={} user=strata dbname=strata",
            addr.ip(),
            addr.port()
        ),
        NoTls,
    )
    .unwrap()
}

/// The SQLSTATE of a failed statement.
fn code(e: &postgres::Error) -> String {
    e.code()
        .map(|c| c.code().to_owned())
        .unwrap_or_else(|| panic!("no SQLSTATE: {e}"))
}

/// Command tags and rows of a simple query.
fn simple(c: &mut Client, sql: &str) -> (Vec<String>, Vec<Vec<Option<String>>>) {
    let mut tags = Vec::new();
    let mut rows = Vec::new();
    for m in c.simple_query(sql).unwrap() {
        match m {
            SimpleQueryMessage::CommandComplete(n) => tags.push(n.to_string()),
            SimpleQueryMessage::Row(r) => {
                rows.push((0..r.len()).map(|i| r.get(i).map(str::to_owned)).collect())
            }
            _ => {}
        }
    }
    (tags, rows)
}

#[test]
fn simple_queries_answer_with_rows_and_postgresql_command_tags() {
    let (addr, _dir) = serve(8);
    let mut c = connect(addr);
    let (tags, _) = simple(
        &mut c,
        "CREATE TABLE t (k INT PRIMARY KEY, v VARCHAR(20), d DATE); \
         INSERT INTO t VALUES (1, 'one', DATE '2024-01-31'), (2, NULL, NULL), (3, 'it''s', DATE '1999-12-31');",
    );
    assert_eq!(tags, vec!["0", "3"]);
    let (_, rows) = simple(&mut c, "SELECT k, v, d FROM t ORDER BY k");
    assert_eq!(
        rows,
        vec![
            vec![
                Some("1".into()),
                Some("one".into()),
                Some("2024-01-31".into())
            ],
            vec![Some("2".into()), None, None],
            vec![
                Some("3".into()),
                Some("it's".into()),
                Some("1999-12-31".into())
            ],
        ]
    );
    assert_eq!(
        c.execute("UPDATE t SET v = 'x' WHERE k >= 2", &[]).unwrap(),
        2
    );
    assert_eq!(c.execute("DELETE FROM t WHERE k = 1", &[]).unwrap(), 1);
    // An error in a query string of several statements stops it there.
    let e = c.simple_query("SELECT 1; SELEC 2; SELECT 3").unwrap_err();
    assert_eq!(code(&e), "42601", "{e}");
    assert_eq!(
        simple(&mut c, "SELECT count(*) FROM t").1,
        vec![vec![Some("2".into())]]
    );
}

#[test]
fn parameters_and_results_of_every_type_round_trip_in_binary() {
    let (addr, _dir) = serve(8);
    let mut c = connect(addr);
    c.batch_execute(
        "CREATE TABLE v (x TEXT, n INT, b BIGINT, f DOUBLE, m DECIMAL(12,2), s VARCHAR(30), \
         c CHAR(4), d DATE, t BOOLEAN, ts TIMESTAMP)",
    )
    .unwrap();
    let m = Decimal::new(-123456, 2);
    let d = NaiveDate::from_ymd_opt(1998, 12, 1).unwrap();
    let ts = d.and_hms_milli_opt(23, 59, 58, 250).unwrap();
    let n = c
        .execute(
            "INSERT INTO v VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[
                &"$1 é",
                &-2147483648i32,
                &9007199254740993i64,
                &-0.25f64,
                &m,
                &"o'brien; --",
                &"ab",
                &d,
                &true,
                &ts,
            ],
        )
        .unwrap();
    assert_eq!(n, 1);
    c.execute(
        "INSERT INTO v VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        &[
            &None::<String>,
            &None::<i32>,
            &None::<i64>,
            &None::<f64>,
            &None::<Decimal>,
            &None::<String>,
            &None::<String>,
            &None::<NaiveDate>,
            &None::<bool>,
            &None::<NaiveDateTime>,
        ],
    )
    .unwrap();
    let rows = c
        .query(
            "SELECT x, n, b, f, m, s, c, d, t, ts FROM v WHERE b = $1",
            &[&9007199254740993i64],
        )
        .unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r.get::<_, String>(0), "$1 é");
    assert_eq!(r.get::<_, i32>(1), -2147483648);
    assert_eq!(r.get::<_, i64>(2), 9007199254740993);
    assert_eq!(r.get::<_, f64>(3), -0.25);
    assert_eq!(r.get::<_, Decimal>(4), m);
    assert_eq!(r.get::<_, String>(5), "o'brien; --");
    assert_eq!(r.get::<_, String>(6).trim_end(), "ab");
    assert_eq!(r.get::<_, NaiveDate>(7), d);
    assert!(r.get::<_, bool>(8));
    assert_eq!(r.get::<_, NaiveDateTime>(9), ts);
    let nulls = c
        .query("SELECT n, m, s, d, t, ts FROM v WHERE b IS NULL", &[])
        .unwrap();
    assert_eq!(nulls.len(), 1);
    assert_eq!(nulls[0].get::<_, Option<i32>>(0), None);
    assert_eq!(nulls[0].get::<_, Option<Decimal>>(1), None);
    assert_eq!(nulls[0].get::<_, Option<String>>(2), None);
    assert_eq!(nulls[0].get::<_, Option<NaiveDate>>(3), None);
    assert_eq!(nulls[0].get::<_, Option<bool>>(4), None);
    assert_eq!(nulls[0].get::<_, Option<NaiveDateTime>>(5), None);
    // A prepared statement runs again with other values.
    let s = c.prepare("SELECT count(*) FROM v WHERE d < $1").unwrap();
    assert_eq!(s.params()[0], postgres::types::Type::DATE);
    let later = NaiveDate::from_ymd_opt(2000, 1, 1).unwrap();
    let earlier = NaiveDate::from_ymd_opt(1990, 1, 1).unwrap();
    assert_eq!(c.query_one(&s, &[&later]).unwrap().get::<_, i64>(0), 1);
    assert_eq!(c.query_one(&s, &[&earlier]).unwrap().get::<_, i64>(0), 0);
}

#[test]
fn errors_carry_postgresql_sqlstates() {
    let (addr, _dir) = serve(8);
    let mut c = connect(addr);
    c.batch_execute("CREATE TABLE e (k BIGINT NOT NULL, s VARCHAR(3))")
        .unwrap();
    for (sql, want) in [
        ("SELEC 1", "42601"),
        ("SELECT * FROM nope", "42P01"),
        ("SELECT nope FROM e", "42703"),
        ("SELECT CAST(9223372036854775807 AS BIGINT) + 1", "22003"),
        ("INSERT INTO e VALUES (NULL, 'a')", "23502"),
        ("SELECT CAST('abc' AS INT)", "22P02"),
        ("BEGIN ISOLATION LEVEL SERIALIZABLE", "0A000"),
    ] {
        let e = c.batch_execute(sql).unwrap_err();
        assert_eq!(code(&e), want, "{sql}: {e}");
    }
    // The connection goes on after every error.
    assert_eq!(
        c.query_one("SELECT 1 + 1", &[]).unwrap().get::<_, i64>(0),
        2
    );
}

#[test]
fn a_failed_transaction_block_refuses_statements_until_it_ends() {
    let (addr, _dir) = serve(8);
    let mut c = connect(addr);
    c.batch_execute("CREATE TABLE a (k INT PRIMARY KEY)")
        .unwrap();
    let mut t = c.transaction().unwrap();
    t.execute("INSERT INTO a VALUES (1)", &[]).unwrap();
    let e = t.execute("INSERT INTO a VALUES (1)", &[]).unwrap_err();
    assert_eq!(code(&e), "23505", "{e}");
    let e = t.execute("INSERT INTO a VALUES (2)", &[]).unwrap_err();
    assert_eq!(code(&e), "25P02", "{e}");
    // COMMIT of a failed block rolls it back.
    t.commit().unwrap();
    assert_eq!(
        c.query_one("SELECT count(*) FROM a", &[])
            .unwrap()
            .get::<_, i64>(0),
        0
    );
    // A block that succeeds commits all of it.
    let mut t = c.transaction().unwrap();
    t.execute("INSERT INTO a VALUES (1)", &[]).unwrap();
    t.execute("INSERT INTO a VALUES (2)", &[]).unwrap();
    t.commit().unwrap();
    assert_eq!(
        c.query_one("SELECT count(*) FROM a", &[])
            .unwrap()
            .get::<_, i64>(0),
        2
    );
}

#[test]
fn writers_take_turns_readers_do_not_wait_and_lock_timeout_says_55p03() {
    let (addr, _dir) = serve(8);
    let mut a = connect(addr);
    let mut b = connect(addr);
    a.batch_execute("CREATE TABLE w (k INT PRIMARY KEY, v INT)")
        .unwrap();
    a.batch_execute("INSERT INTO w VALUES (1, 10)").unwrap();
    // b sees the table a created.
    assert_eq!(
        b.query_one("SELECT v FROM w WHERE k = 1", &[])
            .unwrap()
            .get::<_, i32>(0),
        10
    );
    a.batch_execute("BEGIN; UPDATE w SET v = 11 WHERE k = 1")
        .unwrap();
    // A reader reads the last commit beside the open writer.
    assert_eq!(
        b.query_one("SELECT v FROM w WHERE k = 1", &[])
            .unwrap()
            .get::<_, i32>(0),
        10
    );
    // A second writer waits its turn, up to its lock timeout.
    b.batch_execute("SET lock_timeout = 200").unwrap();
    let started = Instant::now();
    let e = b
        .batch_execute("UPDATE w SET v = 12 WHERE k = 1")
        .unwrap_err();
    assert_eq!(code(&e), "55P03", "{e}");
    assert!(started.elapsed() >= Duration::from_millis(200));
    a.batch_execute("COMMIT").unwrap();
    b.batch_execute("UPDATE w SET v = v + 1 WHERE k = 1")
        .unwrap();
    assert_eq!(
        a.query_one("SELECT v FROM w WHERE k = 1", &[])
            .unwrap()
            .get::<_, i32>(0),
        12
    );
    // A block that only reads holds nobody up.
    a.batch_execute("BEGIN; SELECT * FROM w").unwrap();
    b.batch_execute("UPDATE w SET v = 13 WHERE k = 1").unwrap();
    a.batch_execute("COMMIT").unwrap();
}

#[test]
fn a_client_that_disconnects_inside_a_block_gives_the_writer_turn_back() {
    let (addr, _dir) = serve(8);
    let mut a = connect(addr);
    a.batch_execute("CREATE TABLE d (k INT)").unwrap();
    a.batch_execute("BEGIN; INSERT INTO d VALUES (1)").unwrap();
    drop(a);
    let mut b = connect(addr);
    // Waits for the rollback of a's block (at most 10 s), then writes.
    b.batch_execute("SET lock_timeout = '10s'; INSERT INTO d VALUES (2)")
        .unwrap();
    let rows: Vec<i32> = b
        .query("SELECT k FROM d", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(rows, vec![2]);
}

#[test]
fn an_idle_block_is_rolled_back_after_its_timeout_and_the_connection_closed() {
    let (addr, _dir) = serve(8);
    let mut a = connect(addr);
    a.batch_execute("CREATE TABLE i (k INT)").unwrap();
    a.batch_execute(
        "SET idle_in_transaction_session_timeout = 100; BEGIN; INSERT INTO i VALUES (1)",
    )
    .unwrap();
    let mut b = connect(addr);
    // Gets the writer turn once a's idle block is rolled back.
    b.batch_execute("SET lock_timeout = '30s'; INSERT INTO i VALUES (2)")
        .unwrap();
    // As with PostgreSQL, the client sees the FATAL error or, when the
    // close overtakes it, a closed connection; either way it is gone.
    let e = a.batch_execute("SELECT 1").unwrap_err();
    assert!(
        e.code().map(|c| c.code()) == Some("25P03") || e.is_closed(),
        "{e}"
    );
    assert!(a.batch_execute("SELECT 1").unwrap_err().is_closed());
    let rows: Vec<i32> = b
        .query("SELECT k FROM i", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(rows, vec![2]);
}

/// A query that runs for hours unless stopped: a hash join of a table with
/// a trillion generated rows.
fn endless(c: &mut Client) -> &'static str {
    c.batch_execute(
        "CREATE TABLE big (k BIGINT); INSERT INTO big SELECT * FROM generate_series(1, 2000)",
    )
    .unwrap();
    "SELECT count(*) FROM generate_series(1, 1000000000000) g JOIN big ON g.value = big.k + 5000"
}

#[test]
fn a_cancel_request_stops_a_running_query_and_the_connection_goes_on() {
    let (addr, _dir) = serve(8);
    let mut c = connect(addr);
    let sql = endless(&mut c);
    let token = c.cancel_token();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let runner = std::thread::spawn(move || {
        let r = c.query(sql, &[]);
        done_tx.send(()).unwrap();
        (r.map(|_| ()), c)
    });
    // The query runs for hours: after 50 ms it is running (or still being
    // planned). A cancel that finds no statement stops nothing, so it is
    // sent again until the query ends.
    assert!(done_rx.recv_timeout(Duration::from_millis(50)).is_err());
    let started = Instant::now();
    loop {
        token.cancel_query(NoTls).unwrap();
        if done_rx.recv_timeout(Duration::from_millis(50)).is_ok() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the query was not cancelled"
        );
    }
    // One cancel sufficed, and promptly (the issue asks for 100 ms; the
    // bound here leaves room for a loaded test machine).
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let (r, mut c) = runner.join().unwrap();
    let e = r.unwrap_err();
    assert_eq!(code(&e), "57014", "{e}");
    // The cancelled plan let go of the session's threads: the next query
    // does not wait for it.
    let next = Instant::now();
    assert_eq!(
        c.query_one("SELECT 40 + 2", &[]).unwrap().get::<_, i64>(0),
        42
    );
    assert!(
        next.elapsed() < Duration::from_secs(2),
        "{:?}",
        next.elapsed()
    );
}

#[test]
fn statement_timeout_stops_a_long_query() {
    let (addr, _dir) = serve(8);
    let mut c = connect(addr);
    let sql = endless(&mut c);
    c.batch_execute("SET statement_timeout = '300ms'").unwrap();
    let started = Instant::now();
    let e = c.query(sql, &[]).unwrap_err();
    assert_eq!(code(&e), "57014", "{e}");
    // Answered promptly although the join computes without yielding.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    c.batch_execute("SET statement_timeout = 0").unwrap();
    assert_eq!(
        c.query_one("SHOW statement_timeout", &[])
            .unwrap()
            .get::<_, String>(0),
        "0"
    );
}

#[test]
fn connections_beyond_the_limit_are_refused_with_53300() {
    let (addr, _dir) = serve(2);
    let _a = connect(addr);
    let mut b = connect(addr);
    let url = format!("host={} port={} user=strata", addr.ip(), addr.port());
    let e = match Client::connect(&url, NoTls) {
        Err(e) => e,
        // Refused right after startup: the first statement sees it.
        Ok(mut c) => c.simple_query("SELECT 1").unwrap_err(),
    };
    assert_eq!(e.code().map(|c| c.code()), Some("53300"), "{e}");
    // A slot frees when a connection closes.
    b.batch_execute("SELECT 1").unwrap();
    drop(b);
    let mut again = None;
    for _ in 0..100 {
        if let Ok(mut c) = Client::connect(&url, NoTls)
            && c.simple_query("SELECT 1").is_ok()
        {
            again = Some(c);
            break;
        }
        std::thread::yield_now();
    }
    assert!(again.is_some(), "no connection after one closed");
}

#[test]
fn a_portal_hands_out_rows_in_pieces() {
    let (addr, _dir) = serve(8);
    let mut c = connect(addr);
    c.batch_execute("CREATE TABLE p (k INT); INSERT INTO p SELECT * FROM generate_series(1, 10)")
        .unwrap();
    let mut t = c.transaction().unwrap();
    let portal = t.bind("SELECT k FROM p ORDER BY k", &[]).unwrap();
    let mut seen = Vec::new();
    loop {
        let rows = t.query_portal(&portal, 4).unwrap();
        if rows.is_empty() {
            break;
        }
        assert!(rows.len() <= 4);
        seen.extend(rows.iter().map(|r| r.get::<_, i32>(0)));
    }
    assert_eq!(seen, (1..=10).collect::<Vec<_>>());
}

#[test]
fn copy_from_stdin_and_to_stdout_in_text_and_csv() {
    use std::io::{Read, Write};
    let (addr, _dir) = serve(8);
    let mut c = connect(addr);
    c.batch_execute("CREATE TABLE c (k INT, s VARCHAR(20), d DATE, m DECIMAL(8,2), b BOOLEAN)")
        .unwrap();
    let mut w = c.copy_in("COPY c FROM STDIN").unwrap();
    w.write_all(b"1\ttab\\there\t2024-02-29\t1.50\tt\n2\t\\N\t\\N\t\\N\tf\n")
        .unwrap();
    assert_eq!(w.finish().unwrap(), 2);
    let mut w = c
        .copy_in("COPY c (k, s) FROM STDIN WITH (FORMAT csv, HEADER)")
        .unwrap();
    w.write_all(b"k,s\n3,\"a,\"\"q\"\"\"\n4,\n").unwrap();
    assert_eq!(w.finish().unwrap(), 2);
    let mut out = String::new();
    c.copy_out("COPY (SELECT k, s, d, m, b FROM c ORDER BY k) TO STDOUT")
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(
        out,
        "1\ttab\\there\t2024-02-29\t1.50\tt\n2\t\\N\t\\N\t\\N\tf\n3\ta,\"q\"\t\\N\t\\N\t\\N\n4\t\\N\t\\N\t\\N\t\\N\n"
    );
    let mut csv = String::new();
    c.copy_out(
        "COPY (SELECT k, s FROM c WHERE k >= 3 ORDER BY k) TO STDOUT WITH (FORMAT csv, HEADER)",
    )
    .unwrap()
    .read_to_string(&mut csv)
    .unwrap();
    assert_eq!(csv, "k,s\n3,\"a,\"\"q\"\"\"\n4,\n");
    // A bad row fails the whole COPY, naming its line, and leaves nothing.
    let mut w = c.copy_in("COPY c (k) FROM STDIN").unwrap();
    w.write_all(b"5\n6\nseven\n").unwrap();
    let e = w.finish().unwrap_err();
    assert_eq!(code(&e), "22P02", "{e}");
    assert!(
        e.to_string().contains("line 3") || format!("{e:?}").contains("line 3"),
        "{e:?}"
    );
    assert_eq!(
        c.query_one("SELECT count(*) FROM c", &[])
            .unwrap()
            .get::<_, i64>(0),
        4
    );
}

/// The statements of an OLTP transaction (pgbench's TPC-B-like one) run on
/// the connection's task, not on the statement thread
/// (`SqlSession::run_inline`), and answer as the planned path does: rows,
/// counts, the block's own writes, and errors with their SQLSTATEs (a block
/// that failed inline refuses what follows with 25P02).
#[test]
fn oltp_statements_run_on_the_connection_and_answer_as_planned_ones() {
    use std::sync::atomic::Ordering::Relaxed;
    use strata_sql::session::inline::INLINE;
    let (addr, _dir) = serve(8);
    let mut c = connect(addr);
    c.batch_execute(
        "CREATE TABLE acc (aid INT NOT NULL PRIMARY KEY, abalance INT, filler CHAR(20)); \
         CREATE TABLE hist (aid INT, delta INT, mtime TIMESTAMP, filler CHAR(8)); \
         INSERT INTO acc SELECT value, 0, '' FROM generate_series(1, 1000);",
    )
    .unwrap();
    let before = INLINE.load(Relaxed);
    let hits = strata_sql::parse_cache::HITS.load(Relaxed);
    let planned = strata_sql::dml::point_plans::HITS.load(Relaxed);
    let written = strata_sql::dml::write_plans::HITS.load(Relaxed);
    for (aid, delta) in [(7, 5), (7, -2), (900, 40)] {
        let (tags, rows) = simple(
            &mut c,
            &format!(
                "BEGIN; \
                 UPDATE acc SET abalance = abalance + {delta} WHERE aid = {aid}; \
                 SELECT abalance FROM acc WHERE aid = {aid}; \
                 INSERT INTO hist (aid, delta, mtime) VALUES ({aid}, {delta}, CURRENT_TIMESTAMP); \
                 END;"
            ),
        );
        assert_eq!(tags, vec!["0", "1", "1", "1", "0"], "{aid}");
        assert_eq!(rows.len(), 1);
    }
    // Every statement of each block: nobody else holds the writer turn, so
    // the first UPDATE takes it inline, and the COMMIT (END) runs there too.
    let inline = INLINE.load(Relaxed) - before;
    assert_eq!(inline, 15, "{inline} statements ran inline");
    // The second and third blocks' statements have the first block's
    // shapes: the UPDATE's and INSERT's syntax trees are copies with the new
    // literals (`strata_sql::parse_cache`), the SELECT is the first block's
    // kept plan with its own key (`strata_sql::dml::point_plans`), reading
    // its block's own write, and the answers above are still right.
    let hits = strata_sql::parse_cache::HITS.load(Relaxed) - hits;
    assert!(hits >= 4, "{hits} statements parsed from the cache");
    let planned = strata_sql::dml::point_plans::HITS.load(Relaxed) - planned;
    assert!(planned >= 2, "{planned} point queries from a kept plan");
    // The third block's UPDATE and INSERT have the first's shapes (the
    // second's negative delta is a shape of its own): both are the first
    // block's kept plans with their own literals (`strata_sql::dml::write_plans`).
    let written = strata_sql::dml::write_plans::HITS.load(Relaxed) - written;
    assert!(written >= 2, "{written} writes from a kept plan");
    let (_, rows) = simple(
        &mut c,
        "SELECT aid, abalance FROM acc WHERE aid IN (7, 900) ORDER BY aid",
    );
    assert_eq!(
        rows,
        vec![
            vec![Some("7".into()), Some("3".into())],
            vec![Some("900".into()), Some("40".into())]
        ]
    );
    let (_, rows) = simple(
        &mut c,
        "SELECT count(*), sum(delta), count(mtime), count(filler) FROM hist",
    );
    assert_eq!(
        rows,
        vec![vec![
            Some("3".into()),
            Some("43".into()),
            Some("3".into()),
            Some("0".into())
        ]]
    );
    // A lookup of a key that is not there: no row.
    assert!(
        simple(&mut c, "SELECT abalance FROM acc WHERE aid = 5000")
            .1
            .is_empty()
    );
    // Errors inside a block that holds the turn: NOT NULL (23502) and a
    // duplicate key (23505), each failing the block.
    for (bad, state) in [
        ("UPDATE acc SET aid = NULL WHERE aid = 8", "23502"),
        ("INSERT INTO acc VALUES (8, 1, 'x')", "23505"),
    ] {
        c.batch_execute("BEGIN; UPDATE acc SET abalance = 1 WHERE aid = 9")
            .unwrap();
        let e = c.batch_execute(bad).unwrap_err();
        assert_eq!(code(&e), state, "{bad}: {e}");
        let e = c
            .batch_execute("SELECT abalance FROM acc WHERE aid = 9")
            .unwrap_err();
        assert_eq!(code(&e), "25P02", "{e}");
        c.batch_execute("ROLLBACK").unwrap();
    }
    // Rolled back: nothing of either block is there.
    let (_, rows) = simple(&mut c, "SELECT abalance FROM acc WHERE aid = 9");
    assert_eq!(rows, vec![vec![Some("0".into())]]);
}

/// A statement DataFusion runs (here an aggregate) runs on threads of a
/// lower CPU priority than the connections' tasks, which answer lookups
/// (`strata_sql::thread_priority`): beside an analytical query a lookup
/// gets a core at once. The scheduler's side is measured by `strata bench
/// serve-mixed`; this checks the threads' nice values.
#[test]
fn analytical_statements_run_below_the_connections_tasks() {
    use strata_sql::thread_priority::{nice_of, threads_named};
    const NICE: i32 = 10;
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::create(&dir.path().join("db"), DbOptions::default()).unwrap());
    let opts = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        statement_nice: NICE,
        ..ServeOptions::default()
    };
    let server = Server::bind(db, &opts).unwrap();
    let addr = server.local_addr().unwrap();
    std::thread::spawn(move || server.run());
    let mut c = connect(addr);
    c.batch_execute(
        "CREATE TABLE big (k INT NOT NULL PRIMARY KEY, v INT); \
         INSERT INTO big SELECT value, value % 7 FROM generate_series(1, 20000);",
    )
    .unwrap();
    let (_, rows) = simple(&mut c, "SELECT v, count(*) FROM big GROUP BY v ORDER BY v");
    assert_eq!(rows.len(), 7);
    let nice = |name: &str| -> Vec<i32> {
        threads_named(name)
            .into_iter()
            .filter_map(nice_of)
            .collect()
    };
    let (statement, exec, tasks) = (
        nice("strata-sql-statement"),
        nice("strata-sql-exec"),
        nice("strata-serve"),
    );
    assert!(
        !statement.is_empty() && !exec.is_empty() && !tasks.is_empty(),
        "threads: statement {statement:?}, plans {exec:?}, connections {tasks:?}"
    );
    // The connections' tasks keep the process's own priority (0 unless the
    // tests themselves run under nice, which a thread cannot go above).
    let base = tasks[0];
    assert!(tasks.iter().all(|&n| n == base), "{tasks:?}");
    let lowered = base.max(NICE);
    assert!(
        statement.iter().chain(&exec).all(|&n| n == lowered),
        "statement threads {statement:?} and plan threads {exec:?}: nice {lowered} expected"
    );
}
