//! Who holds a database (issue 53, item 6): a refused open says whether the
//! holder of `LOCK` reads or writes, and its pid and command, instead of
//! telling a writer that a reader "holds it for writing".

use strata_storage::{Database, DbOptions};

fn opts(read_only: bool) -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 4 << 20,
        direct_io: false,
        read_only,
        ..DbOptions::default()
    }
}

fn refused(dir: &std::path::Path, read_only: bool) -> String {
    Database::open(dir, opts(read_only))
        .err()
        .expect("the open is refused")
        .to_string()
}

/// A writer refused while a reader (`strata check`) has the database is told
/// the holder reads, with its pid; a reader or writer refused while a writer
/// has it is told the holder writes.
#[test]
fn a_refused_open_says_what_the_holder_does_and_who_it_is() {
    let dir = tempfile::tempdir().unwrap();
    drop(Database::create(dir.path(), opts(false)).unwrap());
    let pid = std::process::id().to_string();

    let reader = Database::open(dir.path(), opts(true)).unwrap();
    let e = refused(dir.path(), false);
    assert!(e.contains("in use by another strata process"), "{e}");
    assert!(e.contains("holds it for reading"), "{e}");
    assert!(!e.contains("for writing"), "{e}");
    assert!(e.contains(&format!("pid {pid}")), "{e}");
    drop(reader);

    let writer = Database::open(dir.path(), opts(false)).unwrap();
    for read_only in [false, true] {
        let e = refused(dir.path(), read_only);
        assert!(e.contains("holds it for writing"), "{e}");
        assert!(!e.contains("for reading"), "{e}");
        assert!(e.contains(&format!("pid {pid}")), "{e}");
    }
    drop(writer);
    // Nobody holds it now: both open.
    drop(Database::open(dir.path(), opts(false)).unwrap());
    drop(Database::open(dir.path(), opts(true)).unwrap());
}

/// A read-only handle whose writes are refused names who holds the database
/// (the SQL session's fallback to read-only when a reader has it).
#[test]
fn a_read_only_handle_says_who_keeps_it_from_writing() {
    let dir = tempfile::tempdir().unwrap();
    drop(Database::create(dir.path(), opts(false)).unwrap());
    let checker = Database::open(dir.path(), opts(true)).unwrap();
    let session = Database::open(dir.path(), opts(true)).unwrap();
    let why = session.read_only_reason();
    assert!(why.contains("holds it for reading"), "{why}");
    assert!(!why.contains("for writing"), "{why}");
    drop(checker);
    let why = session.read_only_reason();
    assert!(why.contains("no other process"), "{why}");
}
