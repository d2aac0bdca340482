//! A second, independent S3 client: boto3 (Python) runs `boto3_client.py`
//! against an in-process server. Without boto3 the test is skipped, unless
//! `STRATA_REQUIRE_BOTO3=1` (CI sets it and installs boto3), when it fails.

use crate::common;

use std::process::Command;

use strata_csd::layout::LayoutSpec;
use strata_csd::schedule::Policy;

use common::{config, start};

fn boto3_available() -> Result<(), String> {
    match Command::new("python3")
        .args(["-c", "import boto3"])
        .output()
    {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "python3 cannot import boto3: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run python3: {e}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boto3_speaks_to_the_server() {
    if let Err(why) = boto3_available() {
        if std::env::var("STRATA_REQUIRE_BOTO3").as_deref() == Ok("1") {
            panic!("STRATA_REQUIRE_BOTO3=1 but {why} (python3 -m pip install boto3)");
        }
        strata_storage::util::note_skip("boto3_speaks_to_the_server", &why);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = start(
        config(3, LayoutSpec::ByRelation, Policy::Rank { k: 1.0 }, 0.0),
        dir.path(),
    )
    .await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/boto3_client.py");
    let endpoint = server.endpoint();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("python3").arg(script).arg(endpoint).output()
    })
    .await
    .unwrap()
    .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "boto3 client failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
    // Its GETs and PUTs went through the scheduler.
    let state = server.dispatcher().state();
    assert_eq!(state.served, 3 + 4, "{state:?}");
    assert!(server.store().objects().is_empty());
    server.shutdown().await;
}
