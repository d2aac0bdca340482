//! The cold tier against the real service: `strata_csd::server` on loopback,
//! strata's S3 client (bucket created by a presigned PUT, objects PUT, GET
//! tagged with the query). A table moved there reads the same through every
//! access path; the server restarted while a scan is waiting (its port
//! refusing connections meanwhile) keeps its object → group metadata and the
//! scan retries and finishes with the same rows; a missing object is named.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use strata_access::{PathChoice, Predicate, ScanSpec, run_scan};
use strata_cold::client::RetryPolicy;
use strata_cold::device::{ColdConfig, ColdTier};
use strata_cold::tier::{self, TierOptions};
use strata_csd::config::CsdConfig;
use strata_csd::layout::LayoutSpec;
use strata_csd::schedule::Policy;
use strata_csd::server::{self, RunningServer};
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::device::PAGE_SIZE;
use strata_storage::row::Tid;

fn csd_config() -> CsdConfig {
    CsdConfig {
        groups: 2,
        switch_ms: 10_000.0,
        bandwidth_mib_s: 1_200.0,
        // Modeled delays only: the test never sleeps for them.
        time_scale: 0.0,
        layout: LayoutSpec::ByRelation,
        policy: Policy::Rank { k: 1.0 },
        initial_group: Some(0),
    }
}

/// A runtime of its own for the server, as `strata csd serve` has.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn start(rt: &tokio::runtime::Runtime, dir: &Path, addr: SocketAddr) -> RunningServer {
    rt.block_on(server::spawn(csd_config(), dir, addr))
        .expect("server starts")
}

fn tier(tag: &str) -> ColdTier {
    ColdTier::new(ColdConfig {
        cache_bytes: 64 * 16 * PAGE_SIZE as u64,
        cache_dir: None,
        query_tag: tag.into(),
        retry: RetryPolicy {
            retry_for: Duration::from_secs(60),
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(50),
        },
    })
}

fn options(tier: &ColdTier) -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 1 << 20,
        direct_io: false,
        cold_tier: Some(tier.layer()),
        ..DbOptions::default()
    }
}

fn scan(db: &Database, path: &PathChoice, pred: &str) -> Vec<(Tid, Vec<u8>)> {
    let table = db.table("microbench").unwrap();
    let pred = Predicate::parse(table.schema(), pred).unwrap();
    let mut rows = Vec::new();
    run_scan(ScanSpec::new(table, pred), path, &Default::default(), |b| {
        rows.extend(b.iter().map(|(t, r)| (t, r.to_vec())))
    })
    .unwrap();
    rows.sort();
    rows
}

#[test]
fn a_table_on_the_served_csd_reads_the_same_and_survives_a_server_restart() {
    let scratch = tempfile::tempdir().unwrap();
    let csd_dir = scratch.path().join("csd");
    let rt = runtime();
    let server = start(&rt, &csd_dir, "127.0.0.1:0".parse().unwrap());
    let addr = server.addr();
    let endpoint = server.endpoint();

    let db_dir = scratch.path().join("sales");
    let t = tier("client-1");
    let db = Database::create(&db_dir, options(&t)).unwrap();
    let mut spec = strata_load::GenSpec::new(strata_load::GenKind::Microbench, 20_000);
    spec.seed = 3;
    strata_load::generate(&db, &spec, &NoProgress).unwrap();
    let all = scan(&db, &PathChoice::Full, "c1 >= 0");
    let some = scan(&db, &PathChoice::Full, "c2 < 3000");

    let opts = TierOptions {
        object_bytes: 16 * PAGE_SIZE as u64,
        ..TierOptions::new(&endpoint)
    };
    let report = tier::to_cold(&db, &t, "microbench", &opts).unwrap();
    assert!(report.objects > 5);
    // The bucket is the database's name; the service placed every object.
    assert!(server.store().bucket_exists("sales"));
    drop(db);

    let t = tier("client-1");
    let db = Database::open(&db_dir, options(&t)).unwrap();
    assert_eq!(scan(&db, &PathChoice::Full, "c1 >= 0"), all);
    assert_eq!(scan(&db, &PathChoice::Index, "c2 < 3000"), some);
    let c = t.counters();
    assert_eq!(c.retries, 0);
    assert!(c.gets > 0 && c.bytes_fetched > 0, "{c}");

    // The server goes away; a scan starts with a cold cache and waits,
    // retrying, until a new server on the same port and directory answers.
    drop(db);
    rt.block_on(server.shutdown());
    let t = tier("client-2");
    let db = Arc::new(Database::open(&db_dir, options(&t)).unwrap());
    let reader = {
        let db = db.clone();
        std::thread::spawn(move || scan(&db, &PathChoice::Full, "c1 >= 0"))
    };
    while t.counters().retries < 2 {
        std::thread::yield_now();
    }
    let server = start(&rt, &csd_dir, addr);
    assert_eq!(reader.join().unwrap(), all);
    assert!(t.counters().retries >= 2);

    // A missing object is named, with the endpoint.
    let heap = db.catalog().table("microbench").unwrap().heap_file.clone();
    let name = Path::new(&heap)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let key = format!("microbench/{name}.0");
    t.client()
        .unwrap()
        .delete(&endpoint, "sales", &key)
        .unwrap();
    drop(db);
    let t = tier("client-3");
    let db = Database::open(&db_dir, options(&t)).unwrap();
    let table = db.table("microbench").unwrap();
    let pred = Predicate::parse(table.schema(), "c1 >= 0").unwrap();
    let e = run_scan(
        ScanSpec::new(table, pred),
        &PathChoice::Full,
        &Default::default(),
        |_| {},
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains(&format!("object sales/{key}"))
            && e.contains(&endpoint)
            && e.contains("no such object"),
        "{e}"
    );
    drop(db);
    rt.block_on(server.shutdown());
}
