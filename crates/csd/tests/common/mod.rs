//! Starting servers in-process and S3 clients against them.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::{BackoffConfig, ClientOptions, RetryConfig};
use strata_csd::config::CsdConfig;
use strata_csd::layout::LayoutSpec;
use strata_csd::schedule::Policy;
use strata_csd::server::{self, RunningServer};

pub fn config(groups: u32, layout: LayoutSpec, policy: Policy, time_scale: f64) -> CsdConfig {
    CsdConfig {
        groups,
        switch_ms: 1000.0,
        bandwidth_mib_s: 1.0,
        time_scale,
        layout,
        policy,
        initial_group: Some(0),
    }
}

/// Buckets `grp0`, `grp1`, … each wholly on its group.
pub fn by_bucket(groups: u32) -> LayoutSpec {
    LayoutSpec::Explicit(
        (0..groups)
            .map(|g| (format!("grp{g}/"), g))
            .collect::<BTreeMap<_, _>>(),
    )
}

pub async fn start(config: CsdConfig, dir: &Path) -> RunningServer {
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    server::spawn(config, dir, addr)
        .await
        .expect("server starts")
}

/// An object_store client for one bucket, tagging its requests with `query`.
pub fn client(server: &RunningServer, bucket: &str, query: Option<&str>) -> Arc<AmazonS3> {
    let mut options = ClientOptions::new().with_allow_http(true);
    if let Some(q) = query {
        let mut headers = hyper::HeaderMap::new();
        headers.insert("x-strata-query", q.parse().unwrap());
        options = options.with_default_headers(headers);
    }
    let store = AmazonS3Builder::new()
        .with_endpoint(server.endpoint())
        .with_allow_http(true)
        .with_virtual_hosted_style_request(false)
        .with_region("us-east-1")
        .with_bucket_name(bucket)
        .with_access_key_id("strata")
        .with_secret_access_key("strata-secret")
        .with_client_options(options)
        .with_retry(RetryConfig {
            max_retries: 0,
            backoff: BackoffConfig::default(),
            ..RetryConfig::default()
        })
        .build()
        .expect("client builds");
    Arc::new(store)
}
