//! MJoin against the real cold storage device service (`strata csd serve`
//! in-process, on loopback) when things go wrong (Skipper §4.3's client
//! proxy): the service stops while every request of a query is queued on it
//! and comes back on the same port — the query retries and gives the local
//! answer; an object that is gone for good fails the query naming it, at
//! once, without hanging.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use strata_cold::client::RetryPolicy;
use strata_cold::device::{ColdConfig, ColdTier};
use strata_cold::tier::{self, TierOptions};
use strata_csd::config::CsdConfig;
use strata_csd::layout::LayoutSpec;
use strata_csd::schedule::Policy;
use strata_csd::server::{self, RunningServer};
use strata_load::{TpchSpec, generate_tpch};
use strata_sql::SqlSession;
use strata_sql::shell::format::{Format, render};
use strata_sql::tpch::QUERIES;
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};

fn start(rt: &tokio::runtime::Runtime, dir: &Path, addr: SocketAddr) -> RunningServer {
    let config = CsdConfig {
        groups: 2,
        // Modeled delays only: the test never sleeps for them.
        time_scale: 0.0,
        layout: LayoutSpec::ByRelation,
        policy: Policy::Rank { k: 1.0 },
        ..CsdConfig::default()
    };
    rt.block_on(server::spawn(config, dir, addr))
        .expect("server starts")
}

fn tier(tag: &str, retry_for: Duration) -> ColdTier {
    ColdTier::new(ColdConfig {
        query_tag: tag.into(),
        retry: RetryPolicy {
            retry_for,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(50),
        },
        ..ColdConfig::default()
    })
}

fn options(tier: &ColdTier) -> DbOptions {
    crate::common::cold_options(tier)
}

fn q12(s: &SqlSession) -> Result<String, String> {
    let (_, sql) = QUERIES.iter().find(|(n, _)| *n == "q12").unwrap();
    let r = s
        .execute(sql.trim().trim_end_matches(';'))
        .map_err(|e| e.to_string())?;
    Ok(render(Format::Csv, &r.schema, &r.batches).unwrap())
}

#[test]
fn mjoin_survives_a_service_restart_and_names_a_missing_object() {
    let scratch = tempfile::tempdir().unwrap();
    let csd_dir = scratch.path().join("csd");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = start(&rt, &csd_dir, "127.0.0.1:0".parse().unwrap());
    let (addr, endpoint) = (server.addr(), server.endpoint());

    let db_dir = scratch.path().join("client1");
    let t = tier("faults", Duration::from_secs(60));
    let db = Database::create(&db_dir, options(&t)).unwrap();
    generate_tpch(Some(&db), &TpchSpec::new(0.01), &NoProgress, |_| {}).unwrap();
    let db = Arc::new(db);
    let local = q12(&SqlSession::new(db.clone()).unwrap()).unwrap();
    let opts = TierOptions {
        object_bytes: 256 << 10,
        ..TierOptions::new(&endpoint)
    };
    for table in ["orders", "lineitem"] {
        tier::to_cold(&db, &t, table, &opts).unwrap();
    }
    drop(Arc::into_inner(db).unwrap());
    let db = Arc::new(Database::open(&db_dir, options(&t)).unwrap());
    let s = SqlSession::new(db.clone()).unwrap();
    assert_eq!(q12(&s).unwrap(), local);

    // Every request of the next query is queued on a paused service, which
    // then stops; the proxy retries until a new service on the same port
    // and directory answers.
    let disp = server.dispatcher().clone();
    disp.pause(true);
    let before = t.counters();
    let query = std::thread::spawn(move || q12(&s));
    let queued = rt
        .block_on(disp.wait_state(|st| st.pending >= 10))
        .expect("the service runs");
    assert!(queued.pending >= 10, "{queued:?}");
    rt.block_on(server.shutdown());
    while (t.counters() - before).retries < 1 {
        std::thread::yield_now();
    }
    let server = start(&rt, &csd_dir, addr);
    assert_eq!(query.join().unwrap().unwrap(), local);
    let c = t.counters() - before;
    assert!(c.retries >= 1, "{c}");

    // An object gone for good: the query fails naming it, without waiting
    // out the retries (a missing object is an answer, not a failure in
    // transit).
    let heap = db.catalog().table("lineitem").unwrap().heap_file.clone();
    let name = Path::new(&heap)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let key = format!("lineitem/{name}.3");
    let bucket = tier::default_bucket(db.dir());
    t.client()
        .unwrap()
        .delete(&endpoint, &bucket, &key)
        .unwrap();
    let s = SqlSession::new(db.clone()).unwrap();
    let started = std::time::Instant::now();
    let e = q12(&s).unwrap_err();
    assert!(
        e.contains(&format!("{bucket}/{key}")) && e.contains("no such object"),
        "{e}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    drop(s);
    drop(db);
    rt.block_on(server.shutdown());
}
