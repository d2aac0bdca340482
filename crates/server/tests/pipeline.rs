//! The server through `tokio-postgres`, the asynchronous driver under the
//! `postgres` crate, used as async Rust services use it: many statements in
//! flight on one connection (it pipelines their Parse/Bind/Execute/Sync
//! without waiting for answers), a failure in the middle of a pipeline, a
//! prepared statement with a parameter of every strata type, a transaction,
//! COPY in and out as streams, and a cancel from a second task.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use chrono::NaiveDate;
use futures::{SinkExt, TryStreamExt, future};
use rust_decimal::Decimal;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, NoTls};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn connect(addr: SocketAddr) -> Client {
    let (client, connection) = tokio_postgres::connect(
        &format!(
            "host={} port={} user=strata dbname=strata",
            addr.ip(),
            addr.port()
        ),
        NoTls,
    )
    .await
    .unwrap();
    tokio::spawn(async move {
        // Ends when the client is dropped; an error here fails the queries.
        let _ = connection.await;
    });
    client
}

fn code(e: &tokio_postgres::Error) -> String {
    e.code()
        .map(|c| c.code().to_owned())
        .unwrap_or_else(|| panic!("no SQLSTATE: {e}"))
}

#[test]
fn pipelined_statements_answer_in_order_and_a_failure_stays_its_own() {
    let (addr, _dir) = crate::serve::serve(8);
    runtime().block_on(async {
        let c = connect(addr).await;
        c.batch_execute(
            "CREATE TABLE kv (k INT NOT NULL, v VARCHAR(20), x DECIMAL(12,2), d DATE, b BOOLEAN, big BIGINT, f DOUBLE);
             CREATE UNIQUE INDEX kv_k ON kv (k)",
        )
        .await
        .unwrap();
        let insert = c
            .prepare_typed(
                "INSERT INTO kv VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    Type::INT4,
                    Type::VARCHAR,
                    Type::NUMERIC,
                    Type::DATE,
                    Type::BOOL,
                    Type::INT8,
                    Type::FLOAT8,
                ],
            )
            .await
            .unwrap();
        // 200 inserts in flight at once on one connection.
        let day = NaiveDate::from_ymd_opt(2026, 12, 3).unwrap();
        let rows: Vec<(i32, String, Decimal, NaiveDate, bool, i64, f64)> = (0..200)
            .map(|k| {
                (
                    k,
                    format!("v{k}"),
                    Decimal::new(i64::from(k) * 101, 2),
                    day + chrono::Days::new(k as u64),
                    k % 2 == 0,
                    i64::from(k) << 33,
                    f64::from(k) / 8.0,
                )
            })
            .collect();
        let params: Vec<[&(dyn ToSql + Sync); 7]> = rows
            .iter()
            .map(|(k, v, x, d, b, big, f)| {
                [k as &(dyn ToSql + Sync), v, x, d, b, big, f]
            })
            .collect();
        let counts = future::try_join_all(params.iter().map(|p| c.execute(&insert, p)))
            .await
            .unwrap();
        assert_eq!(counts, vec![1; 200]);

        // Reads pipelined the same way, each its own answer, in its order.
        let select = c
            .prepare("SELECT v, x, d, b, big, f FROM kv WHERE k = $1")
            .await
            .unwrap();
        let keys: Vec<[&(dyn ToSql + Sync); 1]> = rows
            .iter()
            .map(|(k, ..)| [k as &(dyn ToSql + Sync)])
            .collect();
        let answers = future::try_join_all(keys.iter().map(|k| c.query_one(&select, k)))
            .await
            .unwrap();
        for ((_, v, x, d, b, big, f), row) in rows.iter().zip(&answers) {
            assert_eq!(row.get::<_, String>(0), *v);
            assert_eq!(row.get::<_, Decimal>(1), *x);
            assert_eq!(row.get::<_, NaiveDate>(2), *d);
            assert_eq!(row.get::<_, bool>(3), *b);
            assert_eq!(row.get::<_, i64>(4), *big);
            assert_eq!(row.get::<_, f64>(5), *f);
        }

        // A failure in the middle of a pipeline: a duplicate key (23505) and
        // a division by zero (22012) fail alone; the statements around them
        // are answered and the duplicate changed nothing.
        let dup = c.prepare("INSERT INTO kv (k) VALUES ($1)").await.unwrap();
        let div = c.prepare("SELECT 1 / (k - k) FROM kv WHERE k = $1").await.unwrap();
        let (a, b, m, d) = tokio::join!(
            c.query_one(&select, &[&1i32]),
            c.execute(&dup, &[&5i32]),
            c.query(&div, &[&7i32]),
            c.query_one(&select, &[&2i32]),
        );
        assert_eq!(a.unwrap().get::<_, String>(0), "v1");
        assert_eq!(code(&b.unwrap_err()), "23505");
        assert_eq!(code(&m.unwrap_err()), "22012");
        assert_eq!(d.unwrap().get::<_, String>(0), "v2");
        let n: i64 = c
            .query_one("SELECT count(*) FROM kv", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 200);
    });
}

#[test]
fn a_transaction_copy_streams_and_a_cancel_from_another_task() {
    let (addr, _dir) = crate::serve::serve(8);
    runtime().block_on(async {
        let mut c = connect(addr).await;
        c.batch_execute("CREATE TABLE t (k INT NOT NULL, name VARCHAR(20))")
            .await
            .unwrap();

        // A transaction rolled back leaves nothing; one committed, its rows.
        let tx = c.transaction().await.unwrap();
        tx.execute("INSERT INTO t VALUES (1, 'gone')", &[]).await.unwrap();
        tx.rollback().await.unwrap();
        let tx = c.transaction().await.unwrap();
        tx.execute("INSERT INTO t VALUES (1, 'one')", &[]).await.unwrap();
        tx.commit().await.unwrap();

        // COPY FROM STDIN as a sink, in two pieces that split a line.
        let sink = c
            .copy_in("COPY t FROM STDIN WITH (FORMAT csv)")
            .await
            .unwrap();
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from_static(b"2,two\n3,\"th")).await.unwrap();
        sink.send(bytes::Bytes::from_static(b"ree,\"\n")).await.unwrap();
        assert_eq!(sink.finish().await.unwrap(), 2);

        // COPY TO STDOUT as a stream.
        let out = c
            .copy_out("COPY (SELECT k, name FROM t ORDER BY k) TO STDOUT WITH (FORMAT csv)")
            .await
            .unwrap();
        let chunks: Vec<bytes::Bytes> = out.try_collect().await.unwrap();
        let text: String = chunks
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect();
        assert_eq!(text, "1,one\n2,two\n3,\"three,\"\n");

        // A query that would run for minutes, cancelled from another task
        // through the connection's cancel token: 57014 within a second, and
        // the connection goes on.
        let token = c.cancel_token();
        let canceller = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            token.cancel_query(NoTls).await.unwrap();
            Instant::now()
        });
        let e = c
            .query(
                "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b WHERE a.value + b.value = 7",
                &[],
            )
            .await
            .unwrap_err();
        let ended = Instant::now();
        let sent = canceller.await.unwrap();
        assert_eq!(code(&e), "57014");
        assert!(
            ended.duration_since(sent) < Duration::from_secs(1),
            "the query stopped {:?} after the cancel",
            ended.duration_since(sent)
        );
        let n: i64 = c
            .query_one("SELECT count(*) FROM t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 3);
    });
}
