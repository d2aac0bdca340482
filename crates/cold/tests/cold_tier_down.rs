//! `tier cold` with the cold storage device down (issue 53, item 8): nothing
//! listens on the endpoint, so the move fails within the default retry
//! budget — seconds, not a minute — with an error that names the endpoint,
//! says it does not answer and why, and states the tries and time spent,
//! without a presigned URL or signature in it; the table stays local and
//! reads as before.

use std::time::{Duration, Instant};

use strata_access::{PathChoice, Predicate, ScanSpec, run_scan};
use strata_cold::device::{ColdConfig, ColdTier};
use strata_cold::tier::{self, TableTier, TierOptions};
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::exit;

fn all_rows(db: &Database) -> Vec<Vec<u8>> {
    let table = db.table("microbench").unwrap();
    let pred = Predicate::parse(table.schema(), "c1 >= 0").unwrap();
    let mut rows = Vec::new();
    run_scan(
        ScanSpec::new(table, pred),
        &PathChoice::Full,
        &Default::default(),
        |b| rows.extend(b.iter().map(|(_, r)| r.to_vec())),
    )
    .unwrap();
    rows
}

#[test]
fn tier_cold_with_the_service_down_fails_in_seconds_naming_the_endpoint() {
    // A port nobody listens on: bind, read the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    // The defaults: the S3 client and the default retry budget.
    let tier = ColdTier::new(ColdConfig::default());
    let db = Database::create(dir.path(), options(&tier)).unwrap();
    let mut spec = strata_load::GenSpec::new(strata_load::GenKind::Microbench, 2000);
    spec.seed = 3;
    strata_load::generate(&db, &spec, &NoProgress).unwrap();
    let before = all_rows(&db);

    let started = Instant::now();
    let e = tier::to_cold(&db, &tier, "microbench", &TierOptions::new(&endpoint)).unwrap_err();
    let took = started.elapsed();
    let msg = e.to_string();
    assert!(took <= Duration::from_secs(5), "took {took:?}: {msg}");
    assert!(msg.contains(&endpoint), "{msg}");
    assert!(msg.contains("does not answer"), "{msg}");
    assert!(msg.contains("connection refused"), "{msg}");
    // The budget used: tries and time, and the budget itself.
    assert!(
        msg.contains(" tries in ") && msg.contains("retry budget"),
        "{msg}"
    );
    for secret in ["X-Amz", "x-amz", "Signature", "Credential", "?"] {
        assert!(!msg.contains(secret), "{secret} in {msg}");
    }
    // Nothing answered: an operational failure, not the user's input.
    assert_eq!(e.exit_code(), exit::FAILURE, "{msg}");

    // The table is local and intact.
    let def = db.catalog().table("microbench").unwrap().clone();
    assert_eq!(tier::table_tier(db.dir(), &def).unwrap(), TableTier::Local);
    assert!(!db.table("microbench").unwrap().is_cold());
    assert_eq!(all_rows(&db), before);
    drop(db);
    let db = Database::open(dir.path(), options(&tier)).unwrap();
    assert_eq!(all_rows(&db), before);
    let checked = strata_storage::maintenance::check::check_database(&db, &NoProgress).unwrap();
    assert_eq!(checked[0].rows, 2000);
}

/// A small buffered database over `tier`.
fn options(tier: &ColdTier) -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 1 << 20,
        direct_io: false,
        cold_tier: Some(tier.layer()),
        ..DbOptions::default()
    }
}
