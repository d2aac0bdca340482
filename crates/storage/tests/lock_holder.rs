//! Who holds a database (issue 53, item 6; issue 57, item 2): a writer
//! refused while another writer has it is told that the holder writes, with
//! its pid and command, and how to share the database; a read-only open
//! takes no lock a writer waits for, so readers and a writer open beside
//! each other, and a read-only handle says who keeps it from writing.

use strata_storage::{Database, DbOptions};

fn opts(read_only: bool) -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 4 << 20,
        direct_io: false,
        read_only,
        ..DbOptions::default()
    }
}

#[test]
fn only_a_second_writer_is_refused_and_it_is_told_who_writes_and_how_to_share() {
    let dir = tempfile::tempdir().unwrap();
    drop(Database::create(dir.path(), opts(false)).unwrap());
    let pid = std::process::id().to_string();

    // A reader first: a writer still opens beside it.
    let reader = Database::open(dir.path(), opts(true)).unwrap();
    let writer = Database::open(dir.path(), opts(false)).unwrap();
    // Another reader opens beside both.
    let second = Database::open(dir.path(), opts(true)).unwrap();
    // A second writer is refused, naming the writer and the ways to share.
    let e = Database::open(dir.path(), opts(false))
        .err()
        .expect("a second writer is refused")
        .to_string();
    assert!(e.contains("in use by another strata process"), "{e}");
    assert!(e.contains("holds it for writing"), "{e}");
    assert!(!e.contains("for reading"), "{e}");
    assert!(e.contains(&format!("pid {pid}")), "{e}");
    assert!(
        e.contains("strata sql --read-only") && e.contains("strata serve"),
        "{e}"
    );
    drop((reader, second, writer));
    // Nobody holds it now: both open.
    drop(Database::open(dir.path(), opts(false)).unwrap());
    drop(Database::open(dir.path(), opts(true)).unwrap());
}

/// A read-only handle whose writes are refused names the writer beside it,
/// or says that no one writes.
#[test]
fn a_read_only_handle_says_who_keeps_it_from_writing() {
    let dir = tempfile::tempdir().unwrap();
    drop(Database::create(dir.path(), opts(false)).unwrap());
    let writer = Database::open(dir.path(), opts(false)).unwrap();
    let session = Database::open(dir.path(), opts(true)).unwrap();
    let why = session.read_only_reason();
    assert!(why.contains("holds it for writing"), "{why}");
    assert!(why.contains("reads beside it"), "{why}");
    drop(writer);
    let why = session.read_only_reason();
    assert!(why.contains("no process writes"), "{why}");
}
