//! psycopg 3, the Python driver, against strata serve: `psycopg_client.py`.
//! Without psycopg the test is skipped (and says so in the summary), unless
//! `STRATA_REQUIRE_PSYCOPG=1` (scripts/test sets it and installs psycopg),
//! when it fails.

use std::process::Command;

use strata_storage::util::note_skip;

#[test]
fn psycopg_runs_parameters_transactions_copy_errors_and_cancel() {
    let available = Command::new("python3")
        .args(["-c", "import psycopg"])
        .output();
    let why = match available {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!(
            "python3 cannot import psycopg: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Some(format!("cannot run python3: {e}")),
    };
    if let Some(why) = why {
        if std::env::var("STRATA_REQUIRE_PSYCOPG").as_deref() == Ok("1") {
            panic!("STRATA_REQUIRE_PSYCOPG=1 but {why}");
        }
        note_skip(
            "psycopg_runs_parameters_transactions_copy_errors_and_cancel",
            &why,
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let addr = crate::clients::serve(dir.path());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/psycopg_client.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(addr.ip().to_string())
        .arg(addr.port().to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "psycopg client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
