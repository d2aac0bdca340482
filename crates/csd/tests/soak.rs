//! 32 clients putting, reading back and verifying objects concurrently for a
//! few seconds (`STRATA_CSD_SOAK_SECS` for a longer run): nothing is lost or
//! mixed up, every request the device took is accounted for, and when the
//! clients are done no body is left streaming and no upload left in staging.

use crate::common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_csd::layout::LayoutSpec;
use strata_csd::schedule::Policy;

use common::{client, config, start};

const CLIENTS: usize = 32;
const KEYS: usize = 4;

fn payload(client: usize, round: u64, len: usize) -> Bytes {
    let seed = (client as u64) << 32 | round;
    let mut rng = SmallRng::seed_from_u64(seed);
    Bytes::from((0..len).map(|_| rng.random::<u8>()).collect::<Vec<u8>>())
}

/// This process's resident set (Linux `/proc/self/statm`), 0 where unknown.
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_clients_lose_nothing() {
    let secs: u64 = std::env::var("STRATA_CSD_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    let server = start(
        config(4, LayoutSpec::Striped, Policy::Rank { k: 1.0 }, 0.0),
        dir.path(),
    )
    .await;
    for b in 0..4 {
        server.store().create_bucket(&format!("soak{b}")).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(secs);
    // Resident memory, sampled every 100 ms: the first quarter of the run
    // warms up (buffers, connection pools); after it, the peak may not climb
    // by more than 64 MiB however long the run — memory stays flat.
    let warm_until = Instant::now() + Duration::from_secs(secs).div_f64(4.0);
    let sampler = tokio::spawn(async move {
        let (mut warm, mut peak) = (0u64, 0u64);
        while Instant::now() < deadline {
            let rss = rss_bytes();
            if Instant::now() < warm_until {
                warm = warm.max(rss);
            } else {
                peak = peak.max(rss);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (warm, peak)
    });
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let s3 = client(
            &server,
            &format!("soak{}", c % 4),
            Some(&format!("client-{c}")),
        );
        tasks.push(tokio::spawn(async move {
            let mut rng = SmallRng::seed_from_u64(c as u64);
            let mut last: HashMap<usize, (u64, usize)> = HashMap::new();
            let mut round = 0u64;
            let mut ops = 0u64;
            while Instant::now() < deadline {
                round += 1;
                let k = rng.random_range(0..KEYS);
                let key = Path::from(format!("c{c}/k{k}"));
                let len = rng.random_range(1..96 * 1024);
                let body = payload(c, round, len);
                s3.put(&key, PutPayload::from(body.clone())).await.unwrap();
                last.insert(k, (round, len));
                let got = s3.get(&key).await.unwrap().bytes().await.unwrap();
                assert_eq!(got, body, "client {c} read back {key}");
                let a = rng.random_range(0..len as u64);
                let b = rng.random_range(a + 1..=len as u64);
                let got = s3.get_range(&key, a..b).await.unwrap();
                assert_eq!(
                    got,
                    body.slice(a as usize..b as usize),
                    "client {c} range {a}..{b} of {key}"
                );
                ops += 3;
            }
            // Every key this client wrote holds its last write.
            for (k, (round, len)) in &last {
                let key = Path::from(format!("c{c}/k{k}"));
                let got = s3.get(&key).await.unwrap().bytes().await.unwrap();
                assert_eq!(got, payload(c, *round, *len), "client {c} final {key}");
                ops += 1;
            }
            (ops, last.len())
        }));
    }
    let (mut ops, mut keys) = (0u64, 0usize);
    for t in tasks {
        let (o, k) = t.await.unwrap();
        ops += o;
        keys += k;
    }
    assert_eq!(server.store().objects().len(), keys);
    let state = server
        .dispatcher()
        .wait_state(|s| s.pending == 0 && s.transferring.is_none())
        .await
        .unwrap();
    assert_eq!(state.served, ops, "{state:?}");
    assert_eq!(state.submitted, ops);
    assert_eq!(state.cancelled, 0);
    // A body's stream ends on the server a moment after the client has its
    // last byte; wait for the count (bounded), do not assume a time.
    let until = Instant::now() + Duration::from_secs(10);
    while server.inflight() != 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        server.inflight(),
        0,
        "bodies still streaming after the clients finished"
    );
    let staging: Vec<_> = std::fs::read_dir(dir.path().join("staging"))
        .unwrap()
        .collect();
    assert!(staging.is_empty(), "uploads left in staging: {staging:?}");
    let (warm, peak) = sampler.await.unwrap();
    eprintln!(
        "soak: {CLIENTS} clients, {ops} requests in {secs} s, {} switches; resident memory {} MiB after the first quarter, peak {} MiB after it",
        state.switches,
        warm >> 20,
        peak >> 20
    );
    assert!(
        peak <= warm + (64 << 20),
        "resident memory grew from {} MiB to {} MiB",
        warm >> 20,
        peak >> 20
    );
    server.shutdown().await;
}
