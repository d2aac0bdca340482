//! The CSD server driven from outside by object_store: the S3 operations and
//! their errors, the schedule it applies (against the scheduler run as a
//! model), a restart keeping every object's group, and clients that go away.

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload};
use strata_csd::dispatch::{switch_ns, transfer_ns};
use strata_csd::layout::LayoutSpec;
use strata_csd::schedule::{Policy, QueryKey, Request, Scheduler};

use common::{by_bucket, client, config, start};

fn data(seed: u8, len: usize) -> Bytes {
    Bytes::from(
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect::<Vec<u8>>(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_operations_and_errors_through_object_store() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(
        config(2, LayoutSpec::Striped, Policy::QueryFcfs, 0.0),
        dir.path(),
    )
    .await;
    server.store().create_bucket("data").unwrap();
    let s3 = client(&server, "data", None);

    let body = data(7, 100_000);
    s3.put(
        &Path::from("lineitem/seg.0000"),
        PutPayload::from(body.clone()),
    )
    .await
    .unwrap();
    s3.put(
        &Path::from("lineitem/seg.0001"),
        PutPayload::from(data(8, 10)),
    )
    .await
    .unwrap();
    s3.put(
        &Path::from("orders/seg.0000"),
        PutPayload::from(data(9, 20)),
    )
    .await
    .unwrap();

    let got = s3
        .get(&Path::from("lineitem/seg.0000"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(got, body);
    // bytes=a-b
    let got = s3
        .get_range(&Path::from("lineitem/seg.0000"), 1000..2000)
        .await
        .unwrap();
    assert_eq!(got, body.slice(1000..2000));
    // bytes=a-
    let opts = GetOptions {
        range: Some(GetRange::Offset(99_990)),
        ..GetOptions::default()
    };
    let got = s3
        .get_opts(&Path::from("lineitem/seg.0000"), opts)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(got, body.slice(99_990..));
    // bytes=-n
    let opts = GetOptions {
        range: Some(GetRange::Suffix(5)),
        ..GetOptions::default()
    };
    let got = s3
        .get_opts(&Path::from("lineitem/seg.0000"), opts)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(got, body.slice(99_995..));

    let head = s3.head(&Path::from("lineitem/seg.0000")).await.unwrap();
    assert_eq!(head.size, 100_000);
    assert!(head.e_tag.is_some());

    let listed: Vec<String> = s3
        .list(Some(&Path::from("lineitem")))
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(listed, vec!["lineitem/seg.0000", "lineitem/seg.0001"]);
    let top = s3.list_with_delimiter(None).await.unwrap();
    let prefixes: Vec<String> = top.common_prefixes.iter().map(|p| p.to_string()).collect();
    assert_eq!(prefixes, vec!["lineitem", "orders"]);
    assert!(top.objects.is_empty());

    // A missing key is NotFound, and the message names it.
    let err = s3.get(&Path::from("lineitem/seg.0009")).await.unwrap_err();
    assert!(
        matches!(err, object_store::Error::NotFound { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("lineitem/seg.0009"), "{err}");
    // A range past the end: 416 InvalidRange, naming the object.
    let opts = GetOptions {
        range: Some(GetRange::Offset(200_000)),
        ..GetOptions::default()
    };
    let err = s3
        .get_opts(&Path::from("lineitem/seg.0000"), opts)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("InvalidRange") || err.contains("416"), "{err}");
    assert!(err.contains("data/lineitem/seg.0000"), "{err}");

    s3.delete(&Path::from("lineitem/seg.0000")).await.unwrap();
    let err = s3.head(&Path::from("lineitem/seg.0000")).await.unwrap_err();
    assert!(
        matches!(err, object_store::Error::NotFound { .. }),
        "{err:?}"
    );
    assert_eq!(server.store().group_of("data", "lineitem/seg.0000"), None);

    // A missing bucket, and a client with the wrong secret.
    let err = client(&server, "nope", None)
        .get(&Path::from("x"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("NoSuchBucket") || err.contains("nope"),
        "{err}"
    );
    let metrics = server.dispatcher().metrics().await.unwrap();
    let state = &metrics["state"];
    // Three PUTs and four GETs reached the device; the failed GETs did not.
    assert_eq!(state["served"], 7, "{metrics:#}");
    assert_eq!(server.inflight(), 0);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsigned_and_badly_signed_requests_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(
        config(1, LayoutSpec::AllInOne, Policy::ObjectFcfs, 0.0),
        dir.path(),
    )
    .await;
    server.store().create_bucket("data").unwrap();
    let bad = object_store::aws::AmazonS3Builder::new()
        .with_endpoint(server.endpoint())
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_bucket_name("data")
        .with_access_key_id("strata")
        .with_secret_access_key("wrong")
        .with_retry(object_store::RetryConfig {
            max_retries: 0,
            ..Default::default()
        })
        .build()
        .unwrap();
    let err = bad
        .put(&Path::from("k"), PutPayload::from_static(b"x"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("SignatureDoesNotMatch") || err.contains("403"),
        "{err}"
    );
    assert!(server.store().objects().is_empty());
    server.shutdown().await;
}

/// The scheduler fed the same requests in the same order, served the way the
/// dispatcher serves: a switch when the batch changes group, then each
/// transfer in order.
fn model(
    policy: Policy,
    active: Option<u32>,
    first_ticket: u64,
    requests: &[(&str, &str, u32, u64)],
) -> Scheduler {
    let (switch_ms, bandwidth) = (1000.0, 1.0);
    let mut s = Scheduler::new(policy, 2, active);
    s.set_switch_ns(switch_ns(switch_ms));
    let mut bytes = HashMap::new();
    for (i, (query, object, group, size)) in requests.iter().enumerate() {
        let ticket = first_ticket + i as u64;
        bytes.insert(ticket, *size);
        let (bucket, key) = object.split_once('/').unwrap();
        s.submit(
            Request {
                ticket,
                query: QueryKey(query.to_string()),
                object: object.to_string(),
                relation: strata_csd::layout::Placement::relation_of(bucket, key),
                group: *group,
                bytes: *size,
            },
            0,
        );
    }
    let mut clock = 0;
    while let Some(batch) = s.next_batch(clock) {
        if batch.switch {
            clock += switch_ns(switch_ms);
        }
        for t in batch.tickets {
            let start = clock;
            clock += transfer_ns(bytes[&t], bandwidth);
            s.served(t, start, clock);
        }
    }
    s
}

/// Equal JSON, floats within a relative 1e-9 (sums over hash maps may add in
/// another order).
fn json_close(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_close(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_close(v, w)))
        }
        _ => a == b,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedule_seen_from_outside_matches_the_model() {
    for policy in [
        Policy::QueryFcfs,
        Policy::MaxQueries,
        Policy::Rank { k: 1.0 },
        Policy::ObjectFcfs,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let server = start(config(2, by_bucket(2), policy, 0.0), dir.path()).await;
        for b in ["grp0", "grp1"] {
            server.store().create_bucket(b).unwrap();
        }
        let sizes = [
            (("grp0", "a/1"), 1000u64),
            (("grp1", "b/1"), 3000),
            (("grp0", "a/2"), 2000),
            (("grp1", "c/1"), 500),
        ];
        for ((bucket, key), size) in sizes {
            client(&server, bucket, None)
                .put(&Path::from(key), PutPayload::from(data(1, size as usize)))
                .await
                .unwrap();
        }
        server.dispatcher().reset().await.unwrap().unwrap();

        // Two queries interleaving over both groups, queued while the
        // device is held, one at a time so the order is known.
        let trace: [(&str, &str, u32, u64); 6] = [
            ("q1", "grp0/a/1", 0, 1000),
            ("q2", "grp1/b/1", 1, 3000),
            ("q1", "grp1/c/1", 1, 500),
            ("q2", "grp0/a/2", 0, 2000),
            ("q1", "grp0/a/2", 0, 2000),
            ("q3", "grp1/b/1", 1, 3000),
        ];
        server.dispatcher().pause(true);
        // The loading PUTs left group 1 spun up.
        let active = server.dispatcher().state().active_group;
        assert_eq!(active, Some(1));
        let first_ticket = server.dispatcher().next_ticket();
        let mut tasks = Vec::new();
        for (i, (query, object, _, _)) in trace.iter().enumerate() {
            let (bucket, key) = object.split_once('/').unwrap();
            let s3 = client(&server, bucket, Some(query));
            let key = Path::from(key);
            tasks.push(tokio::spawn(async move {
                s3.get(&key).await.unwrap().bytes().await.unwrap().len()
            }));
            server
                .dispatcher()
                .wait_state(|s| s.pending == i + 1)
                .await
                .unwrap();
        }
        server.dispatcher().pause(false);
        for (task, (_, _, _, size)) in tasks.into_iter().zip(trace) {
            assert_eq!(task.await.unwrap() as u64, size);
        }
        let expected = model(policy, active, first_ticket, &trace);
        let metrics = server.dispatcher().metrics().await.unwrap();
        assert_eq!(
            metrics["state"]["switches"],
            expected.switches(),
            "{policy}: {metrics:#}"
        );
        let model_metrics = serde_json::to_value(expected.metrics()).unwrap();
        assert!(
            json_close(&metrics["scheduler"], &model_metrics),
            "{policy}: the server's scheduler metrics {:#} differ from the model's {model_metrics:#}",
            metrics["scheduler"]
        );
        assert!(expected.switches() >= 1);
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_keeps_every_objects_group() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(4, LayoutSpec::Striped, Policy::Rank { k: 1.0 }, 0.0);
    let server = start(cfg.clone(), dir.path()).await;
    server.store().create_bucket("tab").unwrap();
    let s3 = client(&server, "tab", None);
    // Striped placement depends on arrival order, so a server that lost its
    // metadata could not recompute it.
    let keys: Vec<String> = (0..24)
        .map(|i| format!("rel{}/seg.{i:04}", i % 3))
        .collect();
    for (i, k) in keys.iter().enumerate() {
        s3.put(
            &Path::from(k.as_str()),
            PutPayload::from(data(i as u8, 100 + i)),
        )
        .await
        .unwrap();
    }
    s3.delete(&Path::from(keys[5].as_str())).await.unwrap();
    let before = server.store().objects();
    assert_eq!(before.len(), 23);
    let groups: std::collections::BTreeSet<u32> = before.iter().map(|o| o.3).collect();
    assert_eq!(groups.len(), 4, "striping used every group");
    server.shutdown().await;

    let server = start(cfg.clone(), dir.path()).await;
    assert_eq!(server.store().objects(), before);
    assert_eq!(server.reconciled().objects, 23);
    assert_eq!(
        server.reconciled().adopted + server.reconciled().dropped_missing,
        0
    );
    let s3 = client(&server, "tab", None);
    for (i, k) in keys.iter().enumerate() {
        let got = s3.get(&Path::from(k.as_str())).await;
        if i == 5 {
            assert!(matches!(got, Err(object_store::Error::NotFound { .. })));
        } else {
            assert_eq!(got.unwrap().bytes().await.unwrap(), data(i as u8, 100 + i));
        }
    }
    server.shutdown().await;

    // The metadata wins over a configuration that disagrees with it.
    let err = strata_csd::server::spawn(
        config(3, LayoutSpec::Striped, Policy::QueryFcfs, 0.0),
        dir.path(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .err()
    .expect("a different group count is refused")
    .to_string();
    assert!(
        err.contains("csd-meta.json") && err.contains("4 groups"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_dropped_while_waiting_frees_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(config(2, by_bucket(2), Policy::QueryFcfs, 0.0), dir.path()).await;
    // Group 0 last, so it is the active one.
    for b in ["grp1", "grp0"] {
        server.store().create_bucket(b).unwrap();
        client(&server, b, None)
            .put(&Path::from("x"), PutPayload::from(data(3, 1000)))
            .await
            .unwrap();
    }
    server.dispatcher().reset().await.unwrap().unwrap();
    server.dispatcher().pause(true);
    let s3 = client(&server, "grp1", Some("leaver"));
    let waiting = tokio::spawn(async move { s3.get(&Path::from("x")).await.map(|_| ()) });
    server
        .dispatcher()
        .wait_state(|s| s.pending == 1)
        .await
        .unwrap();
    // The client goes away: its connection closes, the server drops the
    // request, the ticket is cancelled.
    waiting.abort();
    let state = server
        .dispatcher()
        .wait_state(|s| s.pending == 0 && s.cancelled == 1)
        .await
        .unwrap();
    assert_eq!(state.served, 0);
    server.dispatcher().pause(false);
    let got = client(&server, "grp0", Some("stayer"))
        .get(&Path::from("x"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(got, data(3, 1000));
    let state = server.dispatcher().state();
    // Nobody wanted group 1 any more: no switch was made for the leaver.
    assert_eq!((state.switches, state.served, state.cancelled), (0, 1, 1));
    server
        .dispatcher()
        .wait_state(|s| s.transferring.is_none())
        .await
        .unwrap();
    assert_eq!(server.inflight(), 0);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_dropped_mid_transfer_frees_the_device() {
    let dir = tempfile::tempdir().unwrap();
    // Load at time scale 0, then serve at real speed with a slow group: the
    // big object's transfer would take 400 s of real time.
    let mut cfg = config(1, LayoutSpec::AllInOne, Policy::ObjectFcfs, 0.0);
    cfg.bandwidth_mib_s = 0.01;
    let server = start(cfg.clone(), dir.path()).await;
    server.store().create_bucket("tab").unwrap();
    let s3 = client(&server, "tab", None);
    s3.put(&Path::from("big"), PutPayload::from(data(1, 4 << 20)))
        .await
        .unwrap();
    s3.put(&Path::from("small"), PutPayload::from(data(2, 10)))
        .await
        .unwrap();
    server.shutdown().await;

    cfg.time_scale = 1.0;
    let server = start(cfg, dir.path()).await;
    let s3 = client(&server, "tab", Some("leaver"));
    let big = tokio::spawn(async move { s3.get(&Path::from("big")).await.map(|_| ()) });
    server
        .dispatcher()
        .wait_state(|s| s.transferring.is_some())
        .await
        .unwrap();
    big.abort();
    let s3 = client(&server, "tab", Some("stayer"));
    let small = tokio::time::timeout(Duration::from_secs(60), async {
        s3.get(&Path::from("small"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
    })
    .await
    .expect("the small GET is served once the leaver's transfer is cut");
    assert_eq!(small, data(2, 10));
    let state = server.dispatcher().state();
    assert_eq!((state.served, state.cancelled), (1, 1));
    assert_eq!(server.inflight(), 0);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_reset_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(config(2, by_bucket(2), Policy::QueryFcfs, 0.0), dir.path()).await;
    server.store().create_bucket("grp1").unwrap();
    let s3 = client(&server, "grp1", Some("q"));
    s3.put(&Path::from("x"), PutPayload::from(data(1, 2048)))
        .await
        .unwrap();
    let endpoint = server.endpoint();
    let fetch = move |reset: bool| {
        let endpoint = endpoint.clone();
        tokio::task::spawn_blocking(move || strata_csd::admin_client::metrics(&endpoint, reset))
    };
    let text = fetch(false).await.unwrap().unwrap();
    let metrics: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(metrics["state"]["served"], 1);
    assert_eq!(
        metrics["state"]["switches"], 1,
        "group 0 was active; the PUT to group 1 switched"
    );
    assert_eq!(metrics["scheduler"]["switches"], 1);
    assert_eq!(
        metrics["server"]["objects_per_group"],
        serde_json::json!([0, 1])
    );
    assert_eq!(metrics["server"]["inflight"], 0);

    // A reset is refused while a request waits, and says why.
    server.dispatcher().pause(true);
    let waiting = tokio::spawn(async move { s3.get(&Path::from("x")).await.map(|_| ()) });
    server
        .dispatcher()
        .wait_state(|s| s.pending == 1)
        .await
        .unwrap();
    let err = fetch(true).await.unwrap().unwrap_err().to_string();
    assert!(
        err.contains("409") && err.contains("1 requests are waiting"),
        "{err}"
    );
    server.dispatcher().pause(false);
    waiting.await.unwrap().unwrap();

    fetch(true).await.unwrap().unwrap();
    let metrics: serde_json::Value =
        serde_json::from_str(&fetch(false).await.unwrap().unwrap()).unwrap();
    assert_eq!(metrics["state"]["served"], 0);
    assert_eq!(metrics["state"]["modeled_ns"], 0);
    assert_eq!(metrics["scheduler"]["switches"], 0);
    assert_eq!(
        metrics["state"]["active_group"], 1,
        "a reset keeps the spun-up group"
    );
    server.shutdown().await;
}
