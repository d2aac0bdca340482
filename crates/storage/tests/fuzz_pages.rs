//! Fuzzing what strata decodes from pages: a small database (a fixed-layout
//! table and a variable-layout one with NULLs, B+-trees of height 2 and 3) has
//! pages of its heap and index files changed — bytes overwritten or flipped,
//! slot directories, tuple lengths and bytes, kinds, child and sibling links
//! replaced — and then *re-sealed* with `page::seal`, so that the checksum
//! passes and only strata's own validation stands between the bytes and the
//! decoders. Every reader then runs: opening, full scans (`scan_rows`,
//! `HeapFile::scan`, a `PageStream` decoding every tuple three ways), point
//! reads, index ranges, lookups, leaves, separator levels, estimates, stats,
//! `BTree::check`, `strata check`, and a few writes. Each must return Ok or an
//! error, never panic or hang (each case runs on a thread with a deadline).
//!
//! A second target feeds `page::verify` random headers and slot directories
//! and, for pages it accepts, runs every `PageView`/`PageMut` operation and the
//! tuple-shape check on them.
//!
//! Case counts are bounded for CI (`PROPTEST_CASES` raises them;
//! `scripts/fuzz.sh` runs longer).

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use proptest::prelude::*;
use strata_storage::btree::cache::leaf::CacheLayout;
use strata_storage::db::{NoProgress, TableOptions};
use strata_storage::maintenance::check::check_database;
use strata_storage::page::{self, HEADER_SIZE, PAGE_SIZE, PageMut, PageView, SLOT_SIZE};
use strata_storage::row::shape::TupleShape;
use strata_storage::row::{Schema, Tid, Value};
use strata_storage::util::proptest_cases;
use strata_storage::{Database, DbOptions, IndexSpec};

fn opts() -> DbOptions {
    DbOptions {
        direct_io: false,
        buffer_pool_bytes: 1 << 20,
        ..DbOptions::default()
    }
}

const FIXED: &str = "a INT, b BIGINT, c CHAR(4)";
const VAR: &str = "k INT, s VARCHAR(40) NULL, d DATE NULL, pad CHAR(500)";

/// The database every case starts from, built once.
fn template() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), opts()).unwrap();
        let mut l = db
            .begin_create_load(
                "f",
                Schema::parse(FIXED).unwrap(),
                TableOptions::default(),
                vec![IndexSpec::new("f_a", &["a"])],
            )
            .unwrap();
        for i in 0..1500 {
            l.append(&[
                Value::Int32(i % 211),
                Value::Int64(i as i64 * 7),
                Value::Str(format!("{:04}", i % 1000)),
            ])
            .unwrap();
        }
        l.commit(&NoProgress).unwrap();
        let mut l = db
            .begin_create_load(
                "v",
                Schema::parse(VAR).unwrap(),
                TableOptions::default(),
                vec![
                    IndexSpec::new("v_s", &["s"]),
                    // 480-byte keys: a tree of height 3 from 1200 rows.
                    IndexSpec::new("v_pad", &["pad", "k"]),
                ],
            )
            .unwrap();
        for i in 0..1200 {
            l.append(&[
                Value::Int32(i),
                if i % 5 == 0 {
                    Value::Null
                } else {
                    Value::Str(format!("s{}", i * 31 % 997).repeat(1 + i as usize % 4))
                },
                if i % 7 == 0 {
                    Value::Null
                } else {
                    Value::Date(i * 3)
                },
                Value::Str(format!("p{:05}", (i * 37) % 1200).repeat(80)),
            ])
            .unwrap();
        }
        l.commit(&NoProgress).unwrap();
        let t = db.table("v").unwrap();
        assert_eq!(t.index("v_pad").unwrap().btree.height(), 3);
        drop(t);
        drop(db);
        dir
    })
    .path()
}

/// The paged files of a database (heap and index segments), sorted.
fn data_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("data"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// One change to a page.
#[derive(Clone, Debug)]
enum Change {
    /// Overwrite bytes at offsets past the page number (checksum re-sealed).
    Bytes(Vec<(usize, u8)>),
    /// Flip one bit anywhere past the checksum (the page number included).
    Flip(usize, u8),
    /// A new slot count, with `lower` kept consistent or not.
    SlotCount(u16, bool),
    /// Rewrite slot `i` (mod the count) as (offset, length).
    Slot(usize, u16, u16),
    /// Change the length of slot `i` by `delta`.
    TupleLen(usize, i16),
    /// Overwrite a byte inside live tuple `i` at `pos` (mod its length).
    TupleByte(usize, usize, u8),
    /// Cut live tuple `i` to `keep` bytes (mod its length), keeping the slot
    /// inside the tuple area.
    Shorten(usize, usize),
    /// Point the special area's first or second link at a small page number
    /// (sibling links of leaves, leftmost child or level of internal pages).
    Link(bool, u32),
    /// Point the last 4 bytes of tuple `i` (an internal page's child) at a page.
    Child(usize, u32),
    /// Another page kind.
    Kind(u8),
    /// Free-space bounds.
    Bounds(u16, u16),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        3 => proptest::collection::vec((12usize..PAGE_SIZE, any::<u8>()), 1..6).prop_map(Change::Bytes),
        1 => (4usize..PAGE_SIZE, 0u8..8).prop_map(|(o, b)| Change::Flip(o, b)),
        1 => (0u16..400, any::<bool>()).prop_map(|(n, l)| Change::SlotCount(n, l)),
        2 => (any::<usize>(), 0u16..=8300, 0u16..400).prop_map(|(i, o, l)| Change::Slot(i, o, l)),
        3 => (any::<usize>(), -20i16..20).prop_map(|(i, d)| Change::TupleLen(i, d)),
        3 => (any::<usize>(), any::<usize>(), any::<u8>()).prop_map(|(i, p, b)| Change::TupleByte(i, p, b)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(i, k)| Change::Shorten(i, k)),
        3 => (any::<bool>(), 0u32..70).prop_map(|(w, p)| Change::Link(w, p)),
        3 => (any::<usize>(), 0u32..70).prop_map(|(i, p)| Change::Child(i, p)),
        1 => (0u8..6).prop_map(Change::Kind),
        1 => (any::<u16>(), any::<u16>()).prop_map(|(l, u)| Change::Bounds(l, u)),
    ]
}

fn rd16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn wr16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

/// (slot, offset, length) of the live slots that lie inside the page.
fn live_slots(p: &[u8]) -> Vec<(usize, usize, usize)> {
    let n = rd16(p, 14) as usize;
    (0..n)
        .filter_map(|s| {
            let at = HEADER_SIZE + s * SLOT_SIZE;
            if at + SLOT_SIZE > PAGE_SIZE {
                return None;
            }
            let (off, len) = (rd16(p, at) as usize, rd16(p, at + 2) as usize);
            (len > 0 && off + len <= PAGE_SIZE).then_some((s, off, len))
        })
        .collect()
}

fn apply(p: &mut [u8], c: &Change) {
    let n = rd16(p, 14) as usize;
    match c {
        Change::Bytes(v) => {
            for &(o, b) in v {
                p[o] = b;
            }
        }
        Change::Flip(o, b) => p[*o] ^= 1 << b,
        Change::SlotCount(k, keep_lower) => {
            wr16(p, 14, *k);
            if *keep_lower {
                let lower = (HEADER_SIZE + *k as usize * SLOT_SIZE).min(u16::MAX as usize);
                wr16(p, 16, lower as u16);
                if rd16(p, 18) < lower as u16 {
                    wr16(p, 18, lower as u16);
                }
            }
        }
        Change::Slot(i, off, len) if n > 0 => {
            let at = HEADER_SIZE + (i % n) * SLOT_SIZE;
            if at + SLOT_SIZE <= PAGE_SIZE {
                wr16(p, at, *off);
                wr16(p, at + 2, *len);
            }
        }
        Change::TupleLen(i, d) => {
            let live = live_slots(p);
            if let Some(&(s, _, len)) = live.get(i % live.len().max(1)) {
                let at = HEADER_SIZE + s * SLOT_SIZE + 2;
                wr16(
                    p,
                    at,
                    (len as i64 + *d as i64).clamp(0, u16::MAX as i64) as u16,
                );
            }
        }
        Change::TupleByte(i, pos, b) => {
            let live = live_slots(p);
            if let Some(&(_, off, len)) = live.get(i % live.len().max(1)) {
                p[off + pos % len] = *b;
            }
        }
        Change::Shorten(i, keep) => {
            let live = live_slots(p);
            if let Some(&(s, _, len)) = live.get(i % live.len().max(1)) {
                let at = HEADER_SIZE + s * SLOT_SIZE + 2;
                wr16(p, at, (1 + keep % len) as u16);
            }
        }
        Change::Link(second, to) => {
            let at = 20 + if *second { 4 } else { 0 };
            p[at..at + 4].copy_from_slice(&to.to_be_bytes());
        }
        Change::Child(i, to) => {
            let live = live_slots(p);
            if let Some(&(_, off, len)) = live.get(i % live.len().max(1))
                && len >= 4
            {
                p[off + len - 4..off + len].copy_from_slice(&to.to_be_bytes());
            }
        }
        Change::Kind(k) => p[12] = *k,
        Change::Bounds(l, u) => {
            wr16(p, 16, *l);
            wr16(p, 18, *u);
        }
        Change::Slot(..) => {}
    }
}

/// Opens the database and uses every reader (and a few writers) on it; every
/// step may fail, none may panic or loop.
fn exercise(dir: &Path, probes: &[u64]) {
    let db = match Database::open(dir, opts()) {
        Ok(db) => db,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    for name in db.table_names() {
        let Ok(t) = db.table(&name) else { continue };
        let _ = t.scan_rows(|_, row| {
            assert_eq!(row.len(), t.schema().len());
            Ok(())
        });
        let heap = t.heap().clone();
        let layout = t.layout().clone();
        let mut tids = Vec::new();
        let _ = heap.scan(|tid, _| {
            if tids.len() < 64 {
                tids.push(tid);
            }
            Ok(())
        });
        if let Ok(mut s) = heap.stream(0, heap.num_pages(), 3, 2) {
            while let Ok(true) = s.next_run() {
                let (_, bytes) = s.run();
                for page in bytes.chunks_exact(PAGE_SIZE) {
                    for (_, tup) in PageView::new(page).tuples() {
                        let row = layout.decode(tup, Tid::default());
                        for (c, whole) in row.iter().enumerate() {
                            let v = layout.decode_column(tup, c, Tid::default());
                            assert_eq!(format!("{v:?}"), format!("{whole:?}"));
                            let _ = v.display(&t.schema().columns[c].ty);
                        }
                        let mut fields = Vec::new();
                        layout.fields(tup, Tid::default(), &mut fields);
                        if let Some(off) = layout.fixed_offset(0) {
                            let _ = &tup[off..off + 4];
                        }
                    }
                }
            }
        }
        for &p in probes {
            let tid = Tid::new((p % (heap.num_pages() + 2)) as u32, (p >> 32) as u16 % 400);
            let _ = t.get_row(tid);
        }
        for idx in t.indexes() {
            let b = &idx.btree;
            let key = |p: u64| -> Vec<u8> { p.to_be_bytes()[..(p % 9) as usize].to_vec() };
            if let Ok(it) = b.range(Bound::Unbounded, Bound::Unbounded) {
                for (i, r) in it.enumerate() {
                    let Ok((_, tid)) = r else { break };
                    if i % 17 == 0 {
                        let _ = t.get_row(tid);
                    }
                }
            }
            for &p in probes {
                if let Ok(it) = b.range(Bound::Included(key(p)), Bound::Excluded(key(p ^ u64::MAX)))
                {
                    for r in it {
                        if r.is_err() {
                            break;
                        }
                    }
                }
                let _ = b.lookup(&key(p));
                let _ = b.estimate_range(&Bound::Excluded(key(p)), &Bound::Unbounded);
            }
            if let Ok(it) = b.leaves() {
                for l in it {
                    if l.is_err() {
                        break;
                    }
                }
            }
            for level in 0..4 {
                let _ = b.level_keys(level);
                let _ = b.level_entries(level);
            }
            let _ = b.leaf_free_region(b.root_page());
            let _ = b.stats();
            let _ = b.check();
        }
        if let Err(e) = check_database(&db, &NoProgress) {
            assert!(!e.to_string().is_empty());
        }
        // Writes on the damaged pages: inserts, a delete and an update.
        let row = |i: i32| -> Vec<Value> {
            if name == "f" {
                vec![Value::Int32(i), Value::Int64(1), Value::Str("abcd".into())]
            } else {
                vec![
                    Value::Int32(i),
                    Value::Str("w".repeat(i as usize % 40)),
                    Value::Null,
                    Value::Str("p00007".into()),
                ]
            }
        };
        // In a transaction that is rolled back (so no damaged page is written).
        let Ok(txn) = db.begin_write() else { continue };
        for i in 0..3 {
            let _ = t.insert_row(&row(i));
        }
        if let Some(&tid) = tids.first() {
            let _ = t.update_row(tid, &row(39));
        }
        if let Some(&tid) = tids.last() {
            let _ = t.delete_row(tid);
        }
        drop(txn);
    }
}

/// Runs `f` on its own thread: a panic there fails the case with its message,
/// and so does not finishing within the deadline (a hang).
fn within_deadline(f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => h.join().unwrap(),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p);
            }
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("a reader did not finish within 60 s (a loop on crafted pages?)")
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]

    /// Crafted pages with valid checksums anywhere in the heaps and indexes.
    #[test]
    fn crafted_pages_fail_cleanly(
        edits in proptest::collection::vec(
            (any::<usize>(), any::<u64>(), proptest::collection::vec(change(), 1..4), proptest::bool::weighted(0.95)),
            1..4,
        ),
        probes in proptest::collection::vec(any::<u64>(), 4),
    ) {
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("db");
        copy_dir(template(), &dir);
        let files = data_files(&dir);
        for (f, p, changes, reseal) in &edits {
            let path = &files[f % files.len()];
            let mut bytes = std::fs::read(path).unwrap();
            let pages = bytes.len() / PAGE_SIZE;
            // Early pages more often: the meta page, roots, first leaves.
            let pick = if p % 3 == 0 { (p >> 8) % 4 } else { p >> 8 } as usize % pages;
            let page = &mut bytes[pick * PAGE_SIZE..(pick + 1) * PAGE_SIZE];
            for c in changes {
                apply(page, c);
            }
            if *reseal {
                page::seal(page);
            }
            std::fs::write(path, &bytes).unwrap();
        }
        within_deadline(move || {
            exercise(&dir, &probes);
            drop(outer);
        });
    }
}

/// A page from parts: header fields and slots, sealed.
fn random_page(
    kind: u8,
    n: u16,
    consistent_lower: bool,
    upper: u16,
    slots: &[(u16, u16)],
    fill: u8,
) -> Vec<u8> {
    let mut p = vec![fill; PAGE_SIZE];
    p[4..12].copy_from_slice(&5u64.to_le_bytes());
    p[12] = kind;
    p[13] = 0;
    wr16(&mut p, 14, n);
    let lower = if consistent_lower {
        (HEADER_SIZE + n as usize * SLOT_SIZE).min(u16::MAX as usize) as u16
    } else {
        upper / 2
    };
    wr16(&mut p, 16, lower);
    wr16(&mut p, 18, upper);
    for (s, &(off, len)) in slots.iter().enumerate().take(n as usize) {
        let at = HEADER_SIZE + s * SLOT_SIZE;
        if at + SLOT_SIZE <= PAGE_SIZE {
            wr16(&mut p, at, off);
            wr16(&mut p, at + 2, len);
        }
    }
    page::seal(&mut p);
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(512)))]

    /// `page::verify` on arbitrary bytes (sealed or not) returns Ok or an error;
    /// a page it accepts can be read and changed through every
    /// `PageView`/`PageMut` operation without panicking, and stays valid.
    #[test]
    fn verify_is_total_and_what_it_accepts_is_safe(
        kind in 0u8..6,
        n in prop_oneof![0u16..8, 0u16..300, any::<u16>()],
        consistent_lower in proptest::bool::weighted(0.9),
        upper in prop_oneof![7000u16..=8192, any::<u16>()],
        slots in proptest::collection::vec(
            prop_oneof![(7000u16..8192, 0u16..200), (any::<u16>(), any::<u16>()), Just((0, 0))],
            0..300,
        ),
        fill in any::<u8>(),
        raw in proptest::collection::vec(any::<u8>(), PAGE_SIZE),
        data in proptest::collection::vec(any::<u8>(), 1..300),
        pick in any::<u16>(),
    ) {
        let path = Path::new("fuzz");
        // Random bytes: only the all-zeros page or a bad checksum can come of it.
        let _ = page::verify(&raw, 5, path);
        let mut p = random_page(kind, n, consistent_lower, upper, &slots, fill);
        if page::verify(&p, 5, path).is_err() {
            return Ok(());
        }
        let v = PageView::new(&p);
        let mut bytes = 0;
        for (_, t) in v.tuples() {
            bytes += t.len();
        }
        prop_assert!(bytes <= PAGE_SIZE - v.upper() as usize);
        let _ = v.used_bytes();
        for schema in [FIXED, VAR] {
            let _ = TupleShape::new(&Schema::parse(schema).unwrap()).check_page(&v);
        }
        let count = v.n_slots();
        let mut pm = PageMut::new(&mut p);
        let s = if count > 0 { pick % count } else { 0 };
        match pick % 6 {
            0 => { pm.compact(); }
            1 => { let _ = pm.insert(&data); }
            2 => { let _ = pm.update(s, &data); }
            3 => { let _ = pm.kill(s); let _ = pm.insert(&data); }
            4 => { let _ = pm.insert_at(s, &data); }
            _ => if count > 0 { pm.remove_at(s); },
        }
        page::seal(&mut p);
        let after = page::verify(&p, 5, path);
        prop_assert!(after.is_ok(), "{:?}", after);
    }
}

// ---------------------------------------------------------------------------
// Specific crafted pages: each is refused with an error naming the page.

/// A private copy of the template database.
struct Copy {
    _outer: tempfile::TempDir,
    dir: PathBuf,
}

fn copy() -> Copy {
    let outer = tempfile::tempdir().unwrap();
    let dir = outer.path().join("db");
    copy_dir(template(), &dir);
    Copy { _outer: outer, dir }
}

/// The first segment of a table's heap (`index: None`) or of one of its indexes.
fn file_of(dir: &Path, table: &str, index: Option<&str>) -> PathBuf {
    let cat = Database::open(dir, opts()).unwrap().catalog();
    let t = cat.table(table).unwrap();
    let base = match index {
        None => t.heap_file.clone(),
        Some(i) => t.indexes.iter().find(|d| d.name == i).unwrap().file.clone(),
    };
    strata_storage::device::segment_path(&dir.join(base), 0)
}

/// Changes page `page` of the file at `path` and re-seals it.
fn edit(path: &Path, page: usize, f: impl FnOnce(&mut [u8])) {
    let mut bytes = std::fs::read(path).unwrap();
    let p = &mut bytes[page * PAGE_SIZE..(page + 1) * PAGE_SIZE];
    f(p);
    page::seal(p);
    std::fs::write(path, &bytes).unwrap();
}

fn slot_of(p: &[u8], s: usize) -> (usize, usize) {
    let at = HEADER_SIZE + s * SLOT_SIZE;
    (rd16(p, at) as usize, rd16(p, at + 2) as usize)
}

fn set_slot(p: &mut [u8], s: usize, off: usize, len: usize) {
    let at = HEADER_SIZE + s * SLOT_SIZE;
    wr16(p, at, off as u16);
    wr16(p, at + 2, len as u16);
}

fn scan_error(dir: &Path, table: &str) -> String {
    let db = Database::open(dir, opts()).unwrap();
    let t = db.table(table).unwrap();
    let e = t.scan_rows(|_, _| Ok(())).unwrap_err().to_string();
    // The same page through `strata check`.
    let c = check_database(&db, &NoProgress).unwrap_err().to_string();
    assert!(c.contains("corrupt page"), "{c}");
    e
}

#[test]
fn a_fixed_layout_tuple_of_the_wrong_length_is_a_corrupt_page() {
    let c = copy();
    edit(&file_of(&c.dir, "f", None), 1, |p| {
        let (off, _) = slot_of(p, 0);
        set_slot(p, 0, off, 15);
    });
    let e = scan_error(&c.dir, "f");
    assert!(
        e.contains("corrupt page 1 of")
            && e.contains("slot 0: tuple of 15 bytes, the table's rows have 16"),
        "{e}"
    );
    let db = Database::open(&c.dir, opts()).unwrap();
    let t = db.table("f").unwrap();
    let e = t.get_row(Tid::new(1, 0)).unwrap_err().to_string();
    assert!(
        e.contains("corrupt page 1 of") && e.contains("slot 0"),
        "{e}"
    );
    assert!(
        t.get_row(Tid::new(1, 1)).unwrap().is_some(),
        "the page's other tuples still read"
    );
}

#[test]
fn a_varchar_running_past_its_tuple_is_a_corrupt_page() {
    let c = copy();
    edit(&file_of(&c.dir, "v", None), 0, |p| {
        // Row 1: bitmap, k INT, then the length of s.
        let (off, _) = slot_of(p, 1);
        wr16(p, off + 5, u16::MAX);
    });
    let e = scan_error(&c.dir, "v");
    assert!(
        e.contains("corrupt page 0 of")
            && e.contains("slot 1: tuple has")
            && e.contains("account for"),
        "{e}"
    );
}

#[test]
fn a_null_flag_on_a_not_null_column_is_a_corrupt_page() {
    let c = copy();
    edit(&file_of(&c.dir, "v", None), 0, |p| {
        let (off, _) = slot_of(p, 1);
        p[off] |= 1;
    });
    let e = scan_error(&c.dir, "v");
    assert!(
        e.contains("corrupt page 0 of") && e.contains("slot 1: column 1 is NULL but NOT NULL"),
        "{e}"
    );
}

#[test]
fn a_slot_pointing_into_the_header_is_a_corrupt_page() {
    let c = copy();
    edit(&file_of(&c.dir, "f", None), 0, |p| set_slot(p, 3, 8, 16));
    let e = scan_error(&c.dir, "f");
    assert!(
        e.contains("corrupt page 0 of")
            && e.contains("slot 3 (offset 8, 16 bytes) points outside the tuple area"),
        "{e}"
    );
}

#[test]
fn overlapping_slots_are_a_corrupt_page() {
    let c = copy();
    edit(&file_of(&c.dir, "f", None), 2, |p| {
        // Slot 1 spans the whole tuple area, over every other tuple.
        let upper = rd16(p, 18) as usize;
        set_slot(p, 1, upper, PAGE_SIZE - upper);
    });
    let e = scan_error(&c.dir, "f");
    assert!(
        e.contains("corrupt page 2 of") && e.contains("slots overlap"),
        "{e}"
    );
}

#[test]
fn an_index_page_inside_a_heap_is_a_corrupt_page() {
    let c = copy();
    edit(&file_of(&c.dir, "f", None), 2, |p| p[12] = 3);
    let e = scan_error(&c.dir, "f");
    assert!(
        e.contains("corrupt page 2 of") && e.contains("expected a heap page, found kind 3"),
        "{e}"
    );
    let db = Database::open(&c.dir, opts()).unwrap();
    let e = db
        .table("f")
        .unwrap()
        .get_row(Tid::new(2, 0))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("corrupt page 2 of") && e.contains("expected a heap page"),
        "{e}"
    );
}

#[test]
fn a_leaf_sibling_cycle_is_an_error_not_a_loop() {
    let c = copy();
    edit(&file_of(&c.dir, "f", Some("f_a")), 2, |p| {
        p[20..24].copy_from_slice(&1u32.to_be_bytes());
    });
    let db = Database::open(&c.dir, opts()).unwrap();
    let t = db.table("f").unwrap();
    let b = &t.index("f_a").unwrap().btree;
    let e = b
        .range(Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .find_map(|r| r.err())
        .unwrap()
        .to_string();
    assert!(
        e.contains("index 'f_a'") && e.contains("a cycle through page"),
        "{e}"
    );
    let e = b
        .leaves()
        .unwrap()
        .find_map(|r| r.err())
        .unwrap()
        .to_string();
    assert!(e.contains("a cycle through page"), "{e}");
    assert!(b.check().is_err());
}

#[test]
fn a_sibling_link_outside_the_tree_names_the_leaf() {
    let c = copy();
    edit(&file_of(&c.dir, "f", Some("f_a")), 1, |p| {
        p[20..24].copy_from_slice(&9999u32.to_be_bytes());
    });
    let db = Database::open(&c.dir, opts()).unwrap();
    let t = db.table("f").unwrap();
    let b = &t.index("f_a").unwrap().btree;
    let e = b
        .leaves()
        .unwrap()
        .find_map(|r| r.err())
        .unwrap()
        .to_string();
    assert!(e.contains("page 1 links to page 9999"), "{e}");
    let e = b
        .range(Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .find_map(|r| r.err())
        .unwrap()
        .to_string();
    assert!(e.contains("page 1 links to page 9999"), "{e}");
}

#[test]
fn a_leaf_entry_shorter_than_a_tid_is_an_error() {
    let c = copy();
    edit(&file_of(&c.dir, "f", Some("f_a")), 1, |p| {
        let (off, _) = slot_of(p, 0);
        set_slot(p, 0, off, 3);
    });
    let db = Database::open(&c.dir, opts()).unwrap();
    let t = db.table("f").unwrap();
    let b = &t.index("f_a").unwrap().btree;
    let e = b
        .range(Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .find_map(|r| r.err())
        .unwrap()
        .to_string();
    assert!(e.contains("leaf 1 slot 0 is too short for an entry"), "{e}");
    // A point lookup that lands on it, with and without an index cache, names
    // it too rather than ending the key's run there.
    let short = {
        let g = b.pool().read(b.file_id(), 1).unwrap();
        PageView::new(&g).get(0).unwrap().to_vec()
    };
    assert_eq!(short.len(), 3);
    let want = "leaf page 1 slot 0 holds 3 bytes, too short for a tuple id";
    let e = b.lookup(&short).unwrap_err().to_string();
    assert!(e.contains(want), "{e}");
    b.set_cache_layout(Some(CacheLayout::new(16, 4).unwrap()));
    let e = b.lookup_cached(&short).unwrap_err().to_string();
    assert!(e.contains(want), "{e}");
}

/// The root of `v_pad` (height 3), its first separator's key, and the index file.
fn pad_root(dir: &Path) -> (u32, Vec<u8>, PathBuf) {
    let db = Database::open(dir, opts()).unwrap();
    let t = db.table("v").unwrap();
    let b = &t.index("v_pad").unwrap().btree;
    assert_eq!(b.height(), 3);
    let (root, key) = (b.root_page(), b.level_keys(0).unwrap()[0].clone());
    drop(t);
    drop(db);
    (root, key, file_of(dir, "v", Some("v_pad")))
}

#[test]
fn an_internal_slot_shorter_than_a_child_link_names_the_page() {
    let c = copy();
    let (root, key, file) = pad_root(&c.dir);
    edit(&file, root as usize, |p| {
        let (off, _) = slot_of(p, 0);
        set_slot(p, 0, off, 3);
    });
    let db = Database::open(&c.dir, opts()).unwrap();
    let t = db.table("v").unwrap();
    let b = &t.index("v_pad").unwrap().btree;
    let want =
        format!("internal page {root} slot 0 holds 3 bytes, too short for a separator and a child");
    let e = b.level_keys(0).unwrap_err().to_string();
    assert!(e.contains(&want), "{e}");
    let e = b.lookup(&key).unwrap_err().to_string();
    assert!(e.contains(&want), "{e}");
}

#[test]
fn a_child_link_outside_the_tree_names_the_page() {
    let c = copy();
    let (root, key, file) = pad_root(&c.dir);
    edit(&file, root as usize, |p| {
        let (off, len) = slot_of(p, 0);
        p[off + len - 4..off + len].copy_from_slice(&9999u32.to_be_bytes());
    });
    let db = Database::open(&c.dir, opts()).unwrap();
    let t = db.table("v").unwrap();
    let b = &t.index("v_pad").unwrap().btree;
    let want = format!("page {root} links to page 9999");
    // Keys above the first separator descend through its child.
    let e = b
        .range(Bound::Excluded(key), Bound::Unbounded)
        .unwrap()
        .find_map(|r| r.err())
        .unwrap()
        .to_string();
    assert!(e.contains(&want), "{e}");
    let e = b.level_entries(1).unwrap_err().to_string();
    assert!(e.contains(&want), "{e}");
    let e = check_database(&db, &NoProgress).unwrap_err().to_string();
    assert!(e.contains("9999"), "{e}");
}

#[test]
fn a_meta_page_claiming_more_levels_than_pages_is_refused() {
    let c = copy();
    edit(&file_of(&c.dir, "f", Some("f_a")), 0, |p| {
        let (off, _) = slot_of(p, 0);
        // The meta tuple: magic, version, root, then the height.
        p[off + 16..off + 20].copy_from_slice(&1000u32.to_le_bytes());
    });
    let db = Database::open(&c.dir, opts()).unwrap();
    let e = db.table("f").err().unwrap().to_string();
    assert!(
        e.contains("index 'f_a'") && e.contains("height 1000"),
        "{e}"
    );
}

/// A dictionary code past the dictionary's end (on a table with nullable
/// columns, in a row without NULLs: the walk such rows take) is caught where
/// the page comes in, naming the page, the slot and the code, by scans, point
/// reads and `strata check` alike; it is not read as an empty string.
#[test]
fn a_dictionary_code_that_names_no_value_is_a_corrupt_page() {
    use strata_storage::maintenance::compact::CompactOptions;
    let outer = tempfile::tempdir().unwrap();
    let dir = outer.path().join("db");
    let colours = ["red", "green", "blue"];
    {
        let db = Database::create(&dir, opts()).unwrap();
        let mut l = db
            .begin_create_load(
                "d",
                Schema::parse("k INT, colour CHAR(8), n INT NULL").unwrap(),
                TableOptions::default(),
                vec![],
            )
            .unwrap();
        for i in 0..600 {
            l.append(&[
                Value::Int32(i),
                Value::Str(colours[i as usize % 3].into()),
                Value::Int32(i),
            ])
            .unwrap();
        }
        l.commit(&NoProgress).unwrap();
        let r = db
            .compact("d", &CompactOptions::default(), &NoProgress)
            .unwrap();
        let dict = r
            .columns
            .iter()
            .find(|c| c.column == "colour")
            .map(|c| c.after.clone());
        assert!(
            matches!(dict, Some(strata_storage::row::encoding::Encoding::Dict { ref values, width: 1 }) if values.len() == 3),
            "{dict:?}"
        );
    }
    // Row 0 of page 0: the null bitmap (1 byte), k's code, then colour's
    // 1-byte code; 3 is one past the dictionary and not the escape (255).
    let k_width = {
        let db = Database::open(&dir, opts()).unwrap();
        let cat = db.catalog();
        match &cat.table("d").unwrap().encodings[0] {
            strata_storage::row::encoding::Encoding::Offset { width, .. } => *width as usize,
            e => panic!("k stored as {e:?}"),
        }
    };
    edit(&file_of(&dir, "d", None), 0, |p| {
        let (off, _) = slot_of(p, 0);
        assert_eq!(p[off], 0, "row 0 has no NULL");
        assert!(p[off + 1 + k_width] < 3);
        p[off + 1 + k_width] = 3;
    });
    let db = Database::open(&dir, opts()).unwrap();
    let t = db.table("d").unwrap();
    let e = t.scan_rows(|_, _| Ok(())).unwrap_err().to_string();
    assert!(
        e.contains("corrupt page 0 of")
            && e.contains("slot 0: column 2 has code 3 of a dictionary of 3"),
        "{e}"
    );
    let e = t.get_row(Tid::new(0, 0)).unwrap_err().to_string();
    assert!(
        e.contains("corrupt page 0 of") && e.contains("slot 0"),
        "{e}"
    );
    let c = check_database(&db, &NoProgress).unwrap_err().to_string();
    assert!(c.contains("corrupt page"), "{c}");
}
