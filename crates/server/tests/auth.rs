//! Logins with `--password-file` (SCRAM-SHA-256) and TLS, through the
//! `postgres` crate and PostgreSQL 15's psql (whose libpq does its own SCRAM
//! and TLS).

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use postgres::{Client, NoTls};
use strata_server::auth::{Passwords, tls_acceptor};
use strata_server::{ServeOptions, Server};
use strata_storage::util::note_skip;
use strata_storage::{Database, DbOptions};

const USERS: &str = "# users of the tests\nalice:s3cret\nbob:hunter2:with:colons\n";

fn serve(dir: &Path, opts: ServeOptions) -> SocketAddr {
    let db = Arc::new(Database::create(&dir.join("db"), DbOptions::default()).unwrap());
    let server = Server::bind(db, &opts).unwrap();
    let addr = server.local_addr().unwrap();
    std::thread::spawn(move || server.run());
    addr
}

fn with_passwords() -> ServeOptions {
    ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        passwords: Some(Arc::new(Passwords::parse(USERS).unwrap())),
        ..ServeOptions::default()
    }
}

fn login(addr: SocketAddr, user: &str, password: &str) -> Result<Client, postgres::Error> {
    Client::connect(
        &format!(
            "host={} port={} user={user} password='{password}' dbname=strata",
            addr.ip(),
            addr.port()
        ),
        NoTls,
    )
}

fn refusal(r: Result<Client, postgres::Error>) -> (String, String) {
    let e = r.err().expect("the login should be refused");
    let db = e
        .as_db_error()
        .unwrap_or_else(|| panic!("not a server error: {e}"));
    (db.code().code().to_owned(), db.message().to_owned())
}

#[test]
fn logins_prove_their_password_by_scram() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(dir.path(), with_passwords());
    let mut alice = login(addr, "alice", "s3cret").unwrap();
    alice.batch_execute("CREATE TABLE t (k INT)").unwrap();
    let mut bob = login(addr, "bob", "hunter2:with:colons").unwrap();
    let n: i64 = bob.query_one("SELECT count(*) FROM t", &[]).unwrap().get(0);
    assert_eq!(n, 0);
    // A wrong password and a user the file does not name fail alike.
    let (code, wrong) = refusal(login(addr, "alice", "S3cret"));
    assert_eq!(code, "28P01", "{wrong}");
    let (code, unknown) = refusal(login(addr, "mallory", "s3cret"));
    assert_eq!(code, "28P01", "{unknown}");
    assert_eq!(
        wrong.replace("alice", "USER"),
        unknown.replace("mallory", "USER")
    );
    // A client that has no password to give is not let in.
    assert!(
        Client::connect(
            &format!("host={} port={} user=alice", addr.ip(), addr.port()),
            NoTls
        )
        .is_err()
    );
    // The ones let in go on working.
    alice.batch_execute("INSERT INTO t VALUES (1)").unwrap();
    let n: i64 = bob.query_one("SELECT count(*) FROM t", &[]).unwrap().get(0);
    assert_eq!(n, 1);
}

#[test]
fn concurrent_logins_never_see_each_others_exchange() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(dir.path(), with_passwords());
    // Rounds of 12 logins at once, right and wrong passwords interleaved: a
    // handshake state shared between connections would let a wrong one in
    // or keep a right one out.
    for round in 0..4 {
        let logins: Vec<_> = (0..12)
            .map(|i| {
                std::thread::spawn(move || {
                    let (user, password, right) = match (i + round) % 4 {
                        0 => ("alice", "s3cret", true),
                        1 => ("bob", "hunter2:with:colons", true),
                        2 => ("alice", "hunter2:with:colons", false),
                        _ => ("bob", "s3cret", false),
                    };
                    let got = login(addr, user, password)
                        .map(|mut c| c.query_one("SELECT 1", &[]).unwrap().get::<_, i64>(0));
                    (user, right, got.is_ok())
                })
            })
            .collect();
        for l in logins {
            let (user, right, got) = l.join().unwrap();
            assert_eq!(
                got, right,
                "round {round}: {user} with a right password: {right}"
            );
        }
    }
}

#[test]
fn an_address_beyond_loopback_needs_a_password_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::create(&dir.path().join("db"), DbOptions::default()).unwrap());
    let open = ServeOptions {
        listen: "0.0.0.0:0".parse().unwrap(),
        ..ServeOptions::default()
    };
    let e = Server::bind(db.clone(), &open).err().unwrap();
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
    assert!(e.to_string().contains("--password-file"), "{e}");
    let guarded = ServeOptions {
        listen: "0.0.0.0:0".parse().unwrap(),
        ..with_passwords()
    };
    let server = Server::bind(db, &guarded).unwrap();
    let port = server.local_addr().unwrap().port();
    std::thread::spawn(move || server.run());
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    assert!(login(addr, "alice", "s3cret").is_ok());
    assert_eq!(refusal(login(addr, "alice", "nope")).0, "28P01");
}

/// psql over TLS with a password: libpq's own SCRAM and TLS.
#[test]
fn psql_logs_in_over_tls_with_a_password() {
    if !crate::clients::have("psql") {
        note_skip(
            "psql_logs_in_over_tls_with_a_password",
            "psql is not installed",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("server.crt"), dir.path().join("server.key"));
    // A self-signed certificate for localhost, as `openssl req -x509` makes.
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    let opts = ServeOptions {
        tls: Some(tls_acceptor(&cert, &key).unwrap()),
        ..with_passwords()
    };
    let addr = serve(dir.path(), opts);
    let psql = |sslmode: &str, password: &str| {
        Command::new("psql")
            .arg("-X")
            .arg(format!(
                "host={} port={} user=alice dbname=strata sslmode={sslmode}",
                addr.ip(),
                addr.port()
            ))
            .args([
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                "\\conninfo",
                "-c",
                "SELECT 40 + 2",
            ])
            .env("PGPASSWORD", password)
            .output()
            .unwrap()
    };
    let out = psql("require", "s3cret");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("SSL connection (protocol: TLSv1."),
        "{stdout}"
    );
    assert!(stdout.contains("42"), "{stdout}");
    // TLS is offered, not required; the password still is.
    let out = psql("disable", "s3cret");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && !stdout.contains("SSL connection"),
        "{stdout}"
    );
    let out = psql("require", "wrong");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("password authentication failed"),
        "{stderr}"
    );
    // A certificate file that is not one is named.
    let e = tls_acceptor(&key, &key).err().unwrap();
    assert!(e.contains("server.key"), "{e}");
}
