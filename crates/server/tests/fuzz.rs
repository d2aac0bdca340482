//! Protocol fuzzing: every frontend message type, with random and truncated
//! bodies, sent after a real startup. The server must answer that client
//! with an error or close it — never panic — and keep serving the others:
//! a healthy connection opened before the fuzzing runs a query after every
//! case. (`scripts/fuzz.sh` runs many more cases with fresh seeds.)

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use postgres::{Client, NoTls};
use proptest::prelude::*;
use strata_server::{ServeOptions, Server};
use strata_storage::{Database, DbOptions};

fn serve(dir: &std::path::Path) -> SocketAddr {
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

fn message() -> impl Strategy<Value = (u8, Vec<u8>, i64)> {
    (
        prop::sample::select(TYPES),
        prop::collection::vec(any::<u8>(), 0..64),
        // How the length field lies: 0 tells the truth; otherwise it is off by this much.
        prop_oneof![Just(0i64), -8i64..8, Just(1i64 << 20)],
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn random_and_truncated_messages_never_bring_the_server_down(
        messages in prop::collection::vec(message(), 1..4)
    ) {
        thread_local! {
            static SERVER: (SocketAddr, tempfile::TempDir) = {
                let dir = tempfile::tempdir().unwrap();
                (serve(dir.path()), dir)
            };
        }
        let addr = SERVER.with(|s| s.0);
        let mut healthy = Client::connect(
            &format!("host={} port={} user=strata dbname=strata", addr.ip(), addr.port()),
            NoTls,
        )
        .unwrap();
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
        let other: i64 = Client::connect(
            &format!("host={} port={} user=strata dbname=strata", addr.ip(), addr.port()),
            NoTls,
        )
        .unwrap()
        .query_one("SELECT 2", &[])
        .unwrap()
        .get(0);
        prop_assert_eq!(other, 2);
    }
}
