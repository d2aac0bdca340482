//! Protocol fuzzing: every frontend message type, with random and truncated
//! bodies, and the extended protocol's messages built field by field with
//! lying counts and lengths (then cut short or with a byte changed), sent
//! after a real startup. The server must answer that client
//! with an error or close it — never panic — and keep serving the others:
//! a healthy connection opened before the fuzzing runs a query after every
//! case. 48 cases in CI; `PROPTEST_CASES` raises them, and `scripts/fuzz.sh`
//! runs many more.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use crate::serve::connect;
use proptest::prelude::*;
use strata_server::{ServeOptions, Server};
use strata_storage::util::proptest_cases;
use strata_storage::{Database, DbOptions};

/// Panics on the server's threads (named `strata-serve`) that reached the
/// panic hook: a message the server failed to contain.
static SERVER_PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_server_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some("strata-serve") {
                SERVER_PANICS.fetch_add(1, Ordering::SeqCst);
            }
            before(info);
        }));
    });
}

fn serve(dir: &std::path::Path) -> SocketAddr {
    count_server_panics();
    let db = Arc::new(Database::create(&dir.join("db"), DbOptions::default()).unwrap());
    let opts = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        max_connections: 1000,
        socket_dir: None,
        ..ServeOptions::default()
    };
    let server = Server::bind(db, &opts).unwrap();
    let addr = server.local_addr().unwrap();
    std::thread::spawn(move || server.run());
    addr
}

/// A connection past its startup (the server said ReadyForQuery).
fn started(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut body = Vec::new();
    body.extend_from_slice(&196_608u32.to_be_bytes()); // protocol 3.0
    for kv in ["user", "strata", "database", "strata"] {
        body.extend_from_slice(kv.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    s.write_all(&msg).unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    // Until a ReadyForQuery message: 'Z', length 5, status.
    while !seen
        .windows(6)
        .any(|w| w[0] == b'Z' && w[1..5] == [0, 0, 0, 5])
    {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed during startup");
        seen.extend_from_slice(&buf[..n]);
    }
    s
}

/// Frontend message types of protocol v3 (and a few that are not).
const TYPES: &[u8] = b"QPBEDCSHXdcfFp\0Z?";

/// How a length field lies: 0 tells the truth; otherwise it is off by this much.
fn lie() -> impl Strategy<Value = i64> {
    prop_oneof![Just(0i64), -8i64..8, Just(1i64 << 20)]
}

/// A message of a random type with a body of random bytes.
fn message() -> impl Strategy<Value = (u8, Vec<u8>, i64)> {
    (
        prop::sample::select(TYPES),
        prop::collection::vec(any::<u8>(), 0..64),
        lie(),
    )
}

/// A C string (no NUL inside), or, now and then, one missing its NUL.
fn cstr(s: &str, nul: bool, out: &mut Vec<u8>) {
    out.extend(s.bytes().filter(|&b| b != 0));
    if nul {
        out.push(0);
    }
}

/// Statements a message may carry: valid ones, ones with parameters, bad ones.
const SQL: &[&str] = &[
    "SELECT 1",
    "SELECT $1::INT + 1",
    "SELECT $1::VARCHAR, $2::BIGINT",
    "CREATE TABLE IF NOT EXISTS f (a INT, b VARCHAR(10))",
    "INSERT INTO f VALUES ($1, $2)",
    "SELECT * FROM f WHERE a = $1",
    "COPY f FROM STDIN",
    "COPY f TO STDOUT",
    "BEGIN",
    "COMMIT",
    "SELEC",
    "",
];

/// A frontend message built field by field as the protocol lays it out
/// (Query, Parse, Bind, Describe, Execute, Close, CopyData, CopyFail,
/// FunctionCall), with counts and lengths inside that may lie, a missing
/// NUL now and then, then cut short or with one byte changed: the bodies
/// random bytes rarely reach, past the first field.
fn structured() -> impl Strategy<Value = (u8, Vec<u8>, i64)> {
    (
        0usize..9,
        prop::sample::select(SQL),
        prop::sample::select(&["", "s1", "p1"][..]),
        any::<bool>(),
        prop::collection::vec(any::<i32>(), 0..4),
        prop::collection::vec(any::<u8>(), 0..24),
        -3i16..6,
        (any::<u16>(), any::<u8>(), 0u8..3),
        lie(),
    )
        .prop_map(
            |(kind, sql, name, nul, ints, bytes, count, (at, byte, mutate), lie)| {
                let mut b = Vec::new();
                let ty = match kind {
                    0 => {
                        cstr(sql, nul, &mut b);
                        b'Q'
                    }
                    1 => {
                        cstr(name, true, &mut b);
                        cstr(sql, nul, &mut b);
                        b.extend_from_slice(&count.to_be_bytes());
                        for i in &ints {
                            b.extend_from_slice(&i.to_be_bytes());
                        }
                        b'P'
                    }
                    2 => {
                        cstr("", true, &mut b); // portal
                        cstr(name, nul, &mut b);
                        // Parameter formats, then values: each a length
                        // (which may be -1, NULL, or lie) and bytes.
                        b.extend_from_slice(&count.to_be_bytes());
                        for _ in 0..count.max(0) {
                            b.extend_from_slice(&((byte % 3) as i16).to_be_bytes());
                        }
                        b.extend_from_slice(&(ints.len() as i16).to_be_bytes());
                        for i in &ints {
                            let len = i.rem_euclid(12) - 1;
                            b.extend_from_slice(&len.to_be_bytes());
                            b.extend(bytes.iter().take(len.max(0) as usize));
                        }
                        b.extend_from_slice(&count.to_be_bytes());
                        b'B'
                    }
                    3 | 5 => {
                        // Describe and Close: a statement or a portal, named.
                        b.push(if nul { b'S' } else { b'P' });
                        cstr(name, true, &mut b);
                        if kind == 3 { b'D' } else { b'C' }
                    }
                    4 => {
                        cstr(name, nul, &mut b);
                        b.extend_from_slice(&ints.first().copied().unwrap_or(0).to_be_bytes());
                        b'E'
                    }
                    6 => {
                        b.extend_from_slice(&bytes);
                        b'd'
                    }
                    7 => {
                        cstr(sql, nul, &mut b);
                        b'f'
                    }
                    _ => {
                        b.extend_from_slice(&ints.first().copied().unwrap_or(0).to_be_bytes());
                        b.extend_from_slice(&count.to_be_bytes());
                        b.extend(bytes.iter().take(8));
                        b'F'
                    }
                };
                match mutate {
                    1 if !b.is_empty() => b.truncate(at as usize % b.len()),
                    2 if !b.is_empty() => {
                        let i = at as usize % b.len();
                        b[i] = byte;
                    }
                    _ => {}
                }
                (ty, b, lie)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]
    #[test]
    fn random_and_truncated_messages_never_bring_the_server_down(
        messages in prop::collection::vec(prop_oneof![message(), structured()], 1..6)
    ) {
        thread_local! {
            static SERVER: (SocketAddr, tempfile::TempDir) = {
                let dir = tempfile::tempdir().unwrap();
                (serve(dir.path()), dir)
            };
        }
        let addr = SERVER.with(|s| s.0);
        let mut healthy = connect(addr);
        let mut s = started(addr);
        for (ty, body, lie) in &messages {
            let len = (body.len() as i64 + 4 + lie).clamp(0, u32::MAX as i64) as u32;
            let mut m = vec![*ty];
            m.extend_from_slice(&len.to_be_bytes());
            m.extend_from_slice(body);
            if s.write_all(&m).is_err() {
                break; // the server closed this client: allowed
            }
        }
        // Whatever it answered, it goes on serving others.
        drop(s);
        let one: i64 = healthy.query_one("SELECT 1", &[]).unwrap().get(0);
        prop_assert_eq!(one, 1);
        let other: i64 = connect(addr)
        .query_one("SELECT 2", &[])
        .unwrap()
        .get(0);
        prop_assert_eq!(other, 2);
        prop_assert_eq!(SERVER_PANICS.load(Ordering::SeqCst), 0);
    }
}

/// A Bind whose body ends inside its parameter-format count (pgwire's
/// decoder reads past it): the client gets a FATAL ErrorResponse with
/// SQLSTATE 08P01 and its connection closes; the server did not panic and
/// serves a new connection.
#[test]
fn a_truncated_bind_is_answered_with_a_protocol_violation() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(dir.path());
    let mut s = started(addr);
    // Bind: portal "", statement "", then one byte of a two-byte count.
    s.write_all(&[b'B', 0, 0, 0, 7, 0, 0, 1]).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap(); // until the server closes it
    assert_eq!(got.first(), Some(&b'E'), "{got:?}");
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains("FATAL") && text.contains("08P01"), "{text}");
    assert!(text.contains("invalid frontend message"), "{text}");
    let one: i64 = connect(addr).query_one("SELECT 1", &[]).unwrap().get(0);
    assert_eq!(one, 1);
    assert_eq!(SERVER_PANICS.load(Ordering::SeqCst), 0);
}
