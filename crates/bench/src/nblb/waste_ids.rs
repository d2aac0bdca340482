//! `strata bench waste ids`: semantic ids (No Bits Left Behind §4.2) — a
//! surrogate key whose values only need to be unique, not stored, the tuple's
//! address standing in: the bytes it saves and what a lookup by it and a full
//! scan cost, before and after.
//!
//! The table is `strata gen revision` (`rev_id` a dense surrogate key in
//! insertion order, with an index on it). Two copies of it:
//! - `stored`: `strata compact revision` (types as hints: `rev_id` in a frame
//!   of reference, its index kept) — the best a stored id does;
//! - `semantic`: the index dropped, then `strata compact revision
//!   --semantic-id rev_id` (the same encodings for every other column).
//!
//! Both rewrite the rows in heap order, so the i-th tuple of one is the i-th
//! of the other: a lookup of row i asks `stored` for its `rev_id` (the index,
//! then the heap tuple) and `semantic` for its address (the heap tuple), and
//! both answers are checked (the row's `rev_page`). Each point opens its copy
//! read-only with an empty pool of `pool_pct` % of `stored`'s heap, runs
//! `warmup` lookups, then times `lookups` uniform ones; then a cold full scan
//! of the heap (a new pool). Real: direct I/O, wall time; hdd/ssd: wall plus
//! the profile's modeled device time. Medians of `rounds` rounds, every
//! device, pool and state in turn per round with the same rows.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use strata_storage::btree::cache::leaf::CacheRng;
use strata_storage::db::Index;
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::maintenance::compact::CompactOptions;
use strata_storage::page::PAGE_SIZE;
use strata_storage::row::encoding::{address_of, tid_of_address};
use strata_storage::row::{DataType, Value, encode_key};
use strata_storage::{Database, Table};

use crate::nblb::waste_fig3::Fig3Options;
use crate::nblb::waste_states::{open_on, prepare};
use crate::report::results::{ResultRow, ResultSet, median};
use crate::report::summary::{Summary, num, provenance};

const TABLE: &str = "revision";
const INDEX: &str = "revision_rev_id";
const STATES: [&str; 2] = ["stored", "semantic"];

/// One copy's sizes.
#[derive(Clone, Copy, Debug, Default)]
struct Sizes {
    heap_pages: u64,
    index_pages: u64,
}

/// Makes the two copies from the generated `base` (unless made already).
fn make_states(base: &Path, root: &Path, log: &mut dyn FnMut(&str)) -> Result<()> {
    make_copies(base, root, &STATES, log, |db, state| {
        let opts = if state == "semantic" {
            db.drop_index(TABLE, INDEX)?;
            CompactOptions {
                semantic_id: Some("rev_id".into()),
                ..CompactOptions::default()
            }
        } else {
            CompactOptions::default()
        };
        let rep = db.compact(TABLE, &opts, &NoProgress)?;
        Ok(format!(
            "ids: {state}: heap {} -> {} pages",
            rep.pages_before, rep.pages_after
        ))
    })
}

/// Makes a copy of the generated database `base` under `root` for each of
/// `states` (unless made already), changed by `change` (which says what it
/// did); a copy is renamed into place only once made.
pub(crate) fn make_copies(
    base: &Path,
    root: &Path,
    states: &[&str],
    log: &mut dyn FnMut(&str),
    change: impl Fn(&Database, &str) -> Result<String>,
) -> Result<()> {
    for &state in states {
        let dir = root.join(state);
        if dir.join("catalog.json").exists() {
            continue;
        }
        let tmp = root.join(format!("{state}.tmp"));
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp)?;
        }
        crate::bench_db::copy_dir(base, &tmp)?;
        let db = Database::open(
            &tmp,
            DbOptions {
                buffer_pool_bytes: 64 << 20,
                direct_io: false,
                ..DbOptions::default()
            },
        )?;
        log(&change(&db, state)?);
        drop(db);
        std::fs::rename(&tmp, &dir)?;
    }
    Ok(())
}

/// Per row in heap order: its `rev_id` in `stored`, its address in
/// `semantic`, and its `rev_page` (checked to agree); and the sizes.
fn rows_and_sizes(root: &Path) -> Result<(Vec<[i64; 3]>, [Sizes; 2])> {
    let mut ids: Vec<[i64; 3]> = Vec::new();
    let mut sizes = [Sizes::default(); 2];
    for (s, state) in STATES.iter().enumerate() {
        let db = Database::open(
            &root.join(state),
            DbOptions {
                buffer_pool_bytes: 64 << 20,
                direct_io: false,
                read_only: true,
                ..DbOptions::default()
            },
        )?;
        let t = db.table(TABLE)?;
        sizes[s] = Sizes {
            heap_pages: t.heap().num_pages(),
            index_pages: t.indexes().iter().map(|i| i.btree.num_pages()).sum(),
        };
        let (id_col, page_col) = (t.column("rev_id")?, t.column("rev_page")?);
        let mut i = 0usize;
        t.scan_rows(|tid, row| {
            let (id, page) = (row[id_col].as_i64(), row[page_col].as_i64());
            let (Some(id), Some(page)) = (id, page) else {
                return Err(strata_storage::StorageError::Schema(format!(
                    "ids: row at {tid} has no rev_id or rev_page"
                )));
            };
            if s == 0 {
                ids.push([id, 0, page]);
            } else {
                debug_assert_eq!(id, address_of(tid));
                match ids.get_mut(i) {
                    Some(r) if r[2] == page => r[1] = id,
                    _ => {
                        return Err(strata_storage::StorageError::Schema(format!(
                            "ids: row {i} differs between the copies"
                        )));
                    }
                }
            }
            i += 1;
            Ok(())
        })?;
        ensure!(
            i == ids.len(),
            "ids: the copies have {} and {i} rows",
            ids.len()
        );
    }
    Ok((ids, sizes))
}

/// One lookup of row `r`: by its `rev_id` through `ix` (the `stored`
/// copy), else by its address; checks the answer.
fn lookup(t: &Table, ix: Option<&Index>, r: &[i64; 3], key: &mut Vec<u8>) -> Result<()> {
    let tid = if let Some(ix) = ix {
        key.clear();
        encode_key(&[DataType::Int64], &[Value::Int64(r[0])], key);
        let tids = t.lookup(ix, key)?;
        ensure!(
            tids.len() == 1,
            "ids: rev_id {} has {} entries",
            r[0],
            tids.len()
        );
        tids[0]
    } else {
        tid_of_address(r[1]).with_context(|| format!("ids: {} is no address", r[1]))?
    };
    let row = t
        .get_row(tid)?
        .with_context(|| format!("ids: row {r:?}: no tuple at {tid}"))?;
    let page_col = t.column("rev_page")?;
    ensure!(
        row[page_col].as_i64() == Some(r[2]),
        "ids: row {r:?} found {:?}",
        row[page_col]
    );
    Ok(())
}

/// A measured point.
struct Point {
    rows: u64,
    device: String,
    pool_pct: f64,
    state: &'static str,
    round: usize,
    lookup_us: f64,
    reads_per_lookup: f64,
    scan_ms: f64,
}

/// Seconds of a phase: wall plus the modeled device time, and the pages
/// read.
pub(crate) fn timed(db: &Database, f: impl FnOnce() -> Result<()>) -> Result<(f64, u64)> {
    let dev0 = db.device().stats().snapshot();
    let start = Instant::now();
    f()?;
    let wall = start.elapsed().as_secs_f64();
    let dev = db.device().stats().snapshot() - dev0;
    Ok((wall + dev.modeled_ns as f64 / 1e9, dev.pages_read))
}

fn measure(
    dir: &Path,
    s: usize,
    device: &str,
    frames: u64,
    warm: &[&[i64; 3]],
    timed_rows: &[&[i64; 3]],
) -> Result<(f64, f64, f64)> {
    let db = open_on(dir, frames, device)?;
    let t = db.table(TABLE)?;
    let ix = if s == 0 { Some(t.index(INDEX)?) } else { None };
    let mut key = Vec::new();
    for r in warm {
        lookup(&t, ix, r, &mut key)?;
    }
    let (secs, reads) = timed(&db, || {
        for r in timed_rows {
            lookup(&t, ix, r, &mut key)?;
        }
        Ok(())
    })?;
    drop(t);
    drop(db);
    let db = open_on(dir, frames, device)?;
    let t = db.table(TABLE)?;
    let mut n = 0u64;
    let (scan_s, _) = timed(&db, || {
        t.heap().scan(|_, _| {
            n += 1;
            Ok(())
        })?;
        Ok(())
    })?;
    ensure!(n == t.rows(), "ids: scan saw {n} of {} rows", t.rows());
    let k = timed_rows.len().max(1) as f64;
    Ok((secs * 1e6 / k, reads as f64 / k, scan_s * 1e3))
}

/// Runs the semantic-id experiment, writes `ids.csv` and `ids.md`; returns
/// the summary's text.
pub fn run_ids(o: &Fig3Options, log: &mut dyn FnMut(&str)) -> Result<String> {
    o.check()?;
    std::fs::create_dir_all(&o.out)?;
    let mut points = Vec::new();
    let mut all_sizes = Vec::new();
    for &rows in &o.rows {
        let root = o.work_dir.join(format!("ids-{rows}"));
        let base = root.join("base");
        prepare(&base, rows, log)?;
        make_states(&base, &root, log)?;
        let (ids, sizes) = rows_and_sizes(&root)?;
        ensure!(
            ids.len() as u64 == rows,
            "ids: {} rows, not {rows}",
            ids.len()
        );
        all_sizes.push((rows, sizes));
        for round in 0..o.rounds {
            let mut rng = CacheRng::new(o.seed ^ 0x1D5 ^ ((round as u64) << 20));
            let mut pick =
                |n: u64| -> Vec<&[i64; 3]> { (0..n).map(|_| &ids[rng.below(ids.len())]).collect() };
            let (warm, timed_rows) = (pick(o.warmup), pick(o.lookups));
            for device in &o.devices {
                for &pool_pct in &o.pool_pcts {
                    let frames =
                        ((sizes[0].heap_pages as f64 * pool_pct / 100.0).ceil() as u64).max(64);
                    for (s, state) in STATES.iter().enumerate() {
                        let (lookup_us, reads_per_lookup, scan_ms) =
                            measure(&root.join(state), s, device, frames, &warm, &timed_rows)?;
                        log(&format!(
                            "ids {rows} round {round} {device} pool {pool_pct}% {state}: {lookup_us:.1} µs/lookup ({reads_per_lookup:.3} reads), scan {scan_ms:.0} ms"
                        ));
                        points.push(Point {
                            rows,
                            device: device.clone(),
                            pool_pct,
                            state,
                            round,
                            lookup_us,
                            reads_per_lookup,
                            scan_ms,
                        });
                    }
                }
            }
        }
    }

    let mut set = ResultSet::new();
    for p in &points {
        let mut row = ResultRow::new("ids", &p.device, p.state, p.rows as f64);
        row.wall_ms = p.scan_ms;
        set.push(
            row.with("round", p.round)
                .with("pool_pct", p.pool_pct)
                .with("lookup_us", format!("{:.2}", p.lookup_us))
                .with("reads_per_lookup", format!("{:.3}", p.reads_per_lookup)),
        );
    }
    set.write_csv(o.out.join("ids.csv"))?;

    let med = |rows: u64, device: &str, pool: f64, state: &str, f: fn(&Point) -> f64| {
        let v: Vec<f64> = points
            .iter()
            .filter(|p| {
                p.rows == rows && p.device == device && p.pool_pct == pool && p.state == state
            })
            .map(f)
            .collect();
        median(&v).unwrap_or(f64::NAN)
    };
    let mut s = Summary::new("Semantic ids (No Bits Left Behind §4.2)");
    s.paragraph(&provenance());
    s.paragraph(&format!(
        "Table `{TABLE}` from `strata gen revision`. `stored`: `strata compact {TABLE}` (rev_id in a frame of reference, index `{INDEX}` kept). `semantic`: `{INDEX}` dropped, then `strata compact {TABLE} --semantic-id rev_id` (rev_id not stored: the tuple's address; every other column encoded the same). A lookup of a row: `stored` looks its rev_id up in the index, then reads the tuple; `semantic` reads the tuple at the address; both decode the whole row and check it. {} uniform lookups timed after {} warm-up ones, in an empty pool of {:?}% of `stored`'s heap pages; then a cold full scan of the heap in a new pool. Median of {} rounds, each running every device, pool and state in turn with the same rows. Real: direct I/O, wall time; hdd/ssd: wall time plus the modeled device time.",
        o.lookups, o.warmup, o.pool_pcts, o.rounds
    ));
    let mut size_rows = Vec::new();
    for (rows, z) in &all_sizes {
        let total = |x: &Sizes| x.heap_pages + x.index_pages;
        size_rows.push(vec![
            rows.to_string(),
            format!("{} + {}", z[0].heap_pages, z[0].index_pages),
            format!("{} + {}", z[1].heap_pages, z[1].index_pages),
            format!("{:.1}%", 100.0 * total(&z[1]) as f64 / total(&z[0]) as f64),
            format!(
                "{:.2}",
                (total(&z[0]) - total(&z[1])) as f64 * PAGE_SIZE as f64 / *rows as f64
            ),
        ]);
    }
    s.heading("Bytes");
    s.table(
        &[
            "rows",
            "stored: heap + index pages",
            "semantic: heap + index pages",
            "semantic / stored",
            "bytes saved per row",
        ]
        .map(String::from),
        &size_rows,
    );
    s.heading("Lookups and scans");
    let mut rows_out = Vec::new();
    for &rows in &o.rows {
        for device in &o.devices {
            for &pool in &o.pool_pcts {
                let c = |st| med(rows, device, pool, st, |p| p.lookup_us);
                let r = |st| med(rows, device, pool, st, |p| p.reads_per_lookup);
                let sc = |st| med(rows, device, pool, st, |p| p.scan_ms);
                let speedup = c("stored") / c("semantic");
                let scan_speedup = sc("stored") / sc("semantic");
                rows_out.push(vec![
                    format!("{rows}, {device}, pool {pool}%"),
                    format!("{} ({:.3})", num(c("stored")), r("stored")),
                    format!("{} ({:.3})", num(c("semantic")), r("semantic")),
                    format!("{speedup:.2}x"),
                    num(sc("stored")),
                    num(sc("semantic")),
                    format!("{scan_speedup:.2}x"),
                ]);
            }
        }
    }
    s.table(
        &[
            "rows, device, pool",
            "stored: µs/lookup (reads/lookup)",
            "semantic: µs/lookup (reads/lookup)",
            "lookup speedup",
            "stored: scan ms",
            "semantic: scan ms",
            "scan speedup",
        ]
        .map(String::from),
        &rows_out,
    );
    s.write(o.out.join("ids.md"))?;
    Ok(s.as_str().to_string())
}
