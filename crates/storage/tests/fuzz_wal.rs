//! Fuzzing the write-ahead log: any bytes decode to a record or to "the log
//! ends here", never a panic, and a decoded record encodes back to the same
//! bytes; and whatever a crash or a bad disk does to the log's segment
//! (bytes flipped, overwritten, cut), opening the database either fails with
//! an error or recovers a prefix of the committed transactions — each whole —
//! with every index agreeing with its heap. Case counts are bounded for CI
//! (`PROPTEST_CASES` raises them; `scripts/fuzz.sh` runs longer).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;
use strata_storage::db::{NoProgress, TableOptions};
use strata_storage::maintenance::check::check_database;
use strata_storage::row::{Schema, Value};
use strata_storage::util::proptest_cases;
use strata_storage::wal::LogRecord;
use strata_storage::{Database, DbOptions, IndexSpec};

const TXNS: i64 = 12;

fn opts() -> DbOptions {
    DbOptions {
        direct_io: false,
        buffer_pool_bytes: 2 << 20,
        ..DbOptions::default()
    }
}

/// A database whose log holds `TXNS` committed transactions not yet in the
/// data files (it "crashed" after them); transaction `i` inserts ids
/// `100 * i .. 100 * i + 20` and sets `n = i` on row 0.
fn crashed_db() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let db = Database::create(&path, opts()).unwrap();
        let mut l = db
            .begin_create_load(
                "t",
                Schema::parse("id BIGINT, n BIGINT, s VARCHAR(30)").unwrap(),
                TableOptions::default(),
                vec![IndexSpec::new("t_id", &["id"])],
            )
            .unwrap();
        l.append(&[Value::Int64(0), Value::Int64(-1), Value::Str("zero".into())])
            .unwrap();
        l.commit(&NoProgress).unwrap();
        let t = db.table("t").unwrap();
        for i in 1..=TXNS {
            let txn = db.begin_write().unwrap();
            for k in 0..20 {
                t.insert_row(&[
                    Value::Int64(100 * i + k),
                    Value::Int64(i),
                    Value::Str(format!("txn {i} row {k}")),
                ])
                .unwrap();
            }
            let tid = t
                .index("t_id")
                .unwrap()
                .btree
                .lookup(&t.index("t_id").unwrap().key_of_row(&[
                    Value::Int64(0),
                    Value::Null,
                    Value::Null,
                ]))
                .unwrap()[0];
            t.update_row(
                tid,
                &[Value::Int64(0), Value::Int64(i), Value::Str("zero".into())],
            )
            .unwrap();
            txn.commit().unwrap();
        }
        drop(t);
        db.crash();
        (dir, path)
    })
    .1
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// The log segment holding the transactions.
fn segment(db: &Path) -> PathBuf {
    let mut segs: Vec<PathBuf> = std::fs::read_dir(db.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    segs.sort();
    segs.pop().unwrap()
}

#[derive(Debug, Clone)]
enum Damage {
    Flip(usize, u8),
    Overwrite(usize, Vec<u8>),
    Cut(usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(at, x)| Damage::Flip(at, x)),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..64)
        )
            .prop_map(|(at, b)| Damage::Overwrite(at, b)),
        any::<usize>().prop_map(Damage::Cut),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(512)))]

    #[test]
    fn any_bytes_decode_or_end_the_log(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        if let Some((lsn, rec, len)) = LogRecord::decode(&bytes) {
            let mut again = Vec::new();
            rec.encode(lsn, &mut again);
            prop_assert_eq!(&again[..], &bytes[..len]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(512)))]

    /// A body of any bytes under a correct length and checksum (what a bug, not
    /// a crash, could write) still decodes or ends the log.
    #[test]
    fn any_checksummed_body_decodes_or_ends_the_log(
        kind in 0..4u8,
        body in proptest::collection::vec(any::<u8>(), 0..400)
    ) {
        let mut rec = vec![0u8; 8];
        rec.extend_from_slice(&7u64.to_le_bytes());
        rec.push(kind);
        rec.extend_from_slice(&body);
        let len = (rec.len() - 8) as u32;
        let crc = crc32c::crc32c(&rec[8..]);
        rec[0..4].copy_from_slice(&len.to_le_bytes());
        rec[4..8].copy_from_slice(&crc.to_le_bytes());
        if let Some((lsn, r, n)) = LogRecord::decode(&rec) {
            prop_assert_eq!(lsn, 7);
            let mut again = Vec::new();
            r.encode(lsn, &mut again);
            prop_assert_eq!(&again[..], &rec[..n]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]

    #[test]
    fn a_damaged_log_recovers_a_prefix_of_whole_transactions(
        damages in proptest::collection::vec(damage(), 1..4)
    ) {
        let work = tempfile::tempdir().unwrap();
        let db_dir = work.path().join("db");
        copy_dir(crashed_db(), &db_dir);
        let seg = segment(&db_dir);
        let mut bytes = std::fs::read(&seg).unwrap();
        prop_assume!(!bytes.is_empty());
        for d in &damages {
            match d {
                Damage::Flip(at, x) => {
                    let at = at % bytes.len();
                    bytes[at] ^= x;
                }
                Damage::Overwrite(at, b) => {
                    let at = at % bytes.len();
                    let end = (at + b.len()).min(bytes.len());
                    bytes[at..end].copy_from_slice(&b[..end - at]);
                }
                Damage::Cut(at) => bytes.truncate(at % (bytes.len() + 1)),
            }
        }
        std::fs::write(&seg, &bytes).unwrap();
        let db = match Database::open(&db_dir, opts()) {
            Ok(db) => db,
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                return Ok(());
            }
        };
        let t = db.table("t").unwrap();
        let mut rows = Vec::new();
        t.scan_rows(|_, r| {
            rows.push(r);
            Ok(())
        })
        .unwrap();
        // Row 0 says how many transactions were recovered; exactly their rows exist.
        let zero = rows.iter().find(|r| r[0] == Value::Int64(0)).unwrap();
        let Value::Int64(n) = zero[1] else { panic!("n is a BIGINT") };
        let n = n.max(0);
        prop_assert_eq!(rows.len() as i64, 1 + 20 * n);
        for r in &rows {
            let Value::Int64(id) = r[0] else { panic!("id is a BIGINT") };
            prop_assert!(id == 0 || (id / 100 >= 1 && id / 100 <= n && id % 100 < 20));
        }
        let report = check_database(&db, &NoProgress).unwrap();
        prop_assert_eq!(report[0].rows, rows.len() as u64);
    }
}
