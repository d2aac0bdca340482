//! SQL over tables on the cold tier: the 22 TPC-H queries (SF 0.01) give the
//! same answers with every table moved to the cold storage device — read back
//! object by object through a cache smaller than the data, the pull-based
//! baseline of Skipper §3.2 — as on local files, and again once the tables are
//! back; a write to a cold table fails saying how to bring it back.

use std::sync::Arc;

use strata_cold::client::memory_factory;
use strata_cold::device::{ColdConfig, ColdTier};
use strata_cold::tier::{self, TierOptions};
use strata_load::{TpchSpec, generate_tpch};
use strata_sql::SqlSession;
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};

fn options(tier: &ColdTier) -> DbOptions {
    crate::common::cold_options(tier)
}

/// The 22 answers; `pull`: with MJoin off, so that every cold read goes
/// through the tier's object cache (the pull-based baseline).
fn answers(db: Arc<Database>, pull: bool) -> Vec<String> {
    let settings: &[(&str, &str)] = if pull {
        &[("strata.skipper", "false")]
    } else {
        &[]
    };
    crate::common::tpch_answers(&db, settings)
}

#[test]
fn tpch_answers_are_the_same_on_the_cold_tier_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    // 2 MiB objects, a 6 MiB cache: lineitem alone is larger, so the
    // queries fetch, evict and fetch again.
    let tier = ColdTier::with_factory(
        ColdConfig {
            cache_bytes: 6 << 20,
            ..ColdConfig::default()
        },
        memory_factory(),
    );
    let db = Database::create(&path, options(&tier)).unwrap();
    generate_tpch(Some(&db), &TpchSpec::new(0.01), &NoProgress, |_| {}).unwrap();
    let db = Arc::new(db);
    let local = answers(db.clone(), true);
    let tables = db.table_names();
    let opts = TierOptions {
        object_bytes: 2 << 20,
        ..TierOptions::new("http://csd.test:9000")
    };
    for t in &tables {
        tier::to_cold(&db, &tier, t, &opts).unwrap();
    }
    let db = Arc::into_inner(db).unwrap();
    drop(db);

    let db = Arc::new(Database::open(&path, options(&tier)).unwrap());
    let before = tier.counters();
    let cold = answers(db.clone(), true);
    for (l, c) in local.iter().zip(&cold) {
        assert_eq!(l, c);
    }
    let c = tier.counters() - before;
    assert!(c.gets > 0 && c.evictions > 0 && c.refetches > 0, "{c}");
    assert!(c.peak_cached_bytes <= 6 << 20, "{c}");

    let s = SqlSession::new(db.clone()).unwrap();
    let e = s
        .execute("DELETE FROM nation WHERE n_nationkey = 0")
        .err()
        .unwrap();
    assert!(
        e.to_string().contains(
            "table nation is on the cold tier (read-only); strata tier local nation brings it back"
        ),
        "{e}"
    );
    drop(s);

    for t in &tables {
        tier::to_local(&db, &tier, t, &opts).unwrap();
    }
    let back = answers(db, false);
    assert_eq!(back, local);
}
