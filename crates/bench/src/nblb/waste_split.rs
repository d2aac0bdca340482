//! `strata bench waste split`: vertical partitioning (No Bits Left Behind
//! §3.2) — the rarely read wide columns of Wikipedia's `revision` table in a
//! side table: the bytes each heap takes, and what lookups and full scans
//! cost with and without them in the table's rows, before and after.
//!
//! The table is `strata gen revision` with its index on `rev_id`. Two copies:
//! - `whole`: `strata compact revision` (types as hints);
//! - `split`: the same, then `strata split revision --columns
//!   rev_comment,rev_user_text,rev_sha1` (the edit summary, the user's name
//!   and the content hash: what a page view does not read).
//!
//! Both rewrite the rows in heap order, so a row has the same `rev_id` in
//! both. Per point, each copy is opened read-only with an empty pool of
//! `pool_pct` % of `whole`'s heap pages, `warmup` lookups run, then
//! `lookups` uniform ones are timed twice: reading the row's own columns
//! (`rev_page`, checked), and reading the whole row (the side columns too: a
//! split copy follows the pointer). Then two cold full scans (a new pool
//! each): summing `rev_len`, and counting the non-NULL `rev_comment`s. Real:
//! direct I/O, wall time; hdd/ssd: wall plus the profile's modeled device
//! time. Medians of `rounds` rounds, every device, pool and copy in turn per
//! round with the same rows.

use std::path::Path;

use anyhow::{Context, Result, ensure};
use strata_storage::btree::cache::leaf::CacheRng;
use strata_storage::db::{DbOptions, Index, NoProgress};
use strata_storage::maintenance::compact::CompactOptions;
use strata_storage::row::{DataType, Value, encode_key};
use strata_storage::{Database, Table};

use crate::nblb::waste_fig3::Fig3Options;
use crate::nblb::waste_ids::{make_copies, timed};
use crate::nblb::waste_states::{open_on, prepare};
use crate::report::results::{ResultRow, ResultSet, median};
use crate::report::summary::{Summary, num, provenance};

const TABLE: &str = "revision";
const INDEX: &str = "revision_rev_id";
const STATES: [&str; 2] = ["whole", "split"];
/// The columns the split copy keeps in its side table.
pub const SIDE: [&str; 3] = ["rev_comment", "rev_user_text", "rev_sha1"];

/// What a lookup reads.
#[derive(Clone, Copy, PartialEq)]
enum Reads {
    /// The row's own columns.
    Own,
    /// The whole row.
    All,
}

/// A measured point of one copy.
struct Point {
    rows: u64,
    device: String,
    pool_pct: f64,
    state: &'static str,
    /// µs per lookup and pages read per lookup: own columns, whole row.
    own: (f64, f64),
    all: (f64, f64),
    /// Cold full scans (ms): `sum(rev_len)`, `count(rev_comment)`.
    scan_own_ms: f64,
    scan_all_ms: f64,
}

/// Heap pages of each copy: the table's and its side table's.
fn sizes(root: &Path) -> Result<[(u64, u64); 2]> {
    let mut out = [(0, 0); 2];
    for (s, state) in STATES.iter().enumerate() {
        let db = Database::open(
            &root.join(state),
            DbOptions {
                buffer_pool_bytes: 8 << 20,
                direct_io: false,
                read_only: true,
                ..DbOptions::default()
            },
        )?;
        let t = db.table(TABLE)?;
        out[s] = (
            t.heap().num_pages(),
            t.side_table().map_or(0, |x| x.heap().num_pages()),
        );
    }
    Ok(out)
}

/// One lookup of `rev_id`: the row's `rev_page` must be `page`.
fn lookup(
    t: &Table,
    ix: &Index,
    id: i64,
    page: i64,
    reads: Reads,
    key: &mut Vec<u8>,
) -> Result<()> {
    key.clear();
    encode_key(&[DataType::Int64], &[Value::Int64(id)], key);
    let tids = t.lookup(ix, key)?;
    ensure!(
        tids.len() == 1,
        "split: rev_id {id} has {} entries",
        tids.len()
    );
    let page_col = t.column("rev_page")?;
    let got = match reads {
        Reads::Own => t
            .heap()
            .with_tuple(tids[0], |b| t.layout().decode_column(b, page_col, tids[0]))?,
        Reads::All => {
            let row = t.get_row(tids[0])?;
            if let Some(r) = &row {
                let c = t.column("rev_sha1")?;
                ensure!(!r[c].is_null(), "split: rev_id {id} has no rev_sha1");
            }
            row.map(|r| r[page_col].clone())
        }
    }
    .with_context(|| format!("split: no tuple for rev_id {id}"))?;
    ensure!(
        got.as_i64() == Some(page),
        "split: rev_id {id} found page {got:?}"
    );
    Ok(())
}

/// One copy's measurements at one point.
struct Measured {
    /// µs per lookup and pages read per lookup: own columns, whole row.
    own: (f64, f64),
    all: (f64, f64),
    /// Cold full scans (ms).
    scan_own_ms: f64,
    scan_all_ms: f64,
}

fn measure(
    dir: &Path,
    device: &str,
    frames: u64,
    warm: &[&(i64, i64)],
    timed_rows: &[&(i64, i64)],
) -> Result<Measured> {
    let k = timed_rows.len().max(1) as f64;
    let mut lookups = Vec::new();
    for reads in [Reads::Own, Reads::All] {
        let db = open_on(dir, frames, device)?;
        let t = db.table(TABLE)?;
        let ix = t.index(INDEX)?;
        let mut key = Vec::new();
        for &&(id, page) in warm {
            lookup(&t, ix, id, page, reads, &mut key)?;
        }
        let (secs, pages) = timed(&db, || {
            for &&(id, page) in timed_rows {
                lookup(&t, ix, id, page, reads, &mut key)?;
            }
            Ok(())
        })?;
        lookups.push((secs * 1e6 / k, pages as f64 / k));
    }
    let db = open_on(dir, frames, device)?;
    let t = db.table(TABLE)?;
    let len_col = t.column("rev_len")?;
    let (mut n, mut sum) = (0u64, 0i64);
    let (own_s, _) = timed(&db, || {
        t.heap().scan(|tid, b| {
            n += 1;
            sum += t
                .layout()
                .decode_column(b, len_col, tid)
                .as_i64()
                .unwrap_or(0);
            Ok(())
        })?;
        Ok(())
    })?;
    ensure!(n == t.rows(), "split: scan saw {n} of {} rows", t.rows());
    drop(t);
    drop(db);
    let db = open_on(dir, frames, device)?;
    let t = db.table(TABLE)?;
    let comment = t.column("rev_comment")?;
    let mut with_comment = 0u64;
    let (all_s, _) = timed(&db, || {
        t.scan_rows(|_, r| {
            with_comment += !r[comment].is_null() as u64;
            Ok(())
        })?;
        Ok(())
    })?;
    ensure!(with_comment > 0, "split: no comment read");
    Ok(Measured {
        own: lookups[0],
        all: lookups[1],
        scan_own_ms: own_s * 1e3,
        scan_all_ms: all_s * 1e3,
    })
}

/// Each row's (`rev_id`, `rev_page`), in heap order, from `whole`.
fn ids(root: &Path) -> Result<Vec<(i64, i64)>> {
    let db = Database::open(
        &root.join("whole"),
        DbOptions {
            buffer_pool_bytes: 64 << 20,
            direct_io: false,
            read_only: true,
            ..DbOptions::default()
        },
    )?;
    let t = db.table(TABLE)?;
    let (id, page) = (t.column("rev_id")?, t.column("rev_page")?);
    let mut out = Vec::new();
    t.scan_rows(|_, r| {
        if let (Some(i), Some(p)) = (r[id].as_i64(), r[page].as_i64()) {
            out.push((i, p));
        }
        Ok(())
    })?;
    Ok(out)
}

/// Runs the vertical-partitioning experiment, writes `split.csv` and
/// `split.md`; returns the summary's text.
pub fn run_split(o: &Fig3Options, log: &mut dyn FnMut(&str)) -> Result<String> {
    o.check()?;
    std::fs::create_dir_all(&o.out)?;
    let mut points = Vec::new();
    let mut all_sizes = Vec::new();
    let side: Vec<String> = SIDE.iter().map(|c| c.to_string()).collect();
    for &rows in &o.rows {
        let root = o.work_dir.join(format!("split-{rows}"));
        let base = root.join("base");
        prepare(&base, rows, log)?;
        make_copies(&base, &root, &STATES, log, |db, state| {
            let rep = db.compact(TABLE, &CompactOptions::default(), &NoProgress)?;
            let mut msg = format!(
                "split: {state}: compacted, heap {} -> {} pages",
                rep.pages_before, rep.pages_after
            );
            if state == "split" {
                let r = db.split(TABLE, &side, &NoProgress)?;
                msg += &format!(
                    "; split: {} + {} side pages",
                    r.pages_after, r.side_pages_after
                );
            }
            Ok(msg)
        })?;
        let z = sizes(&root)?;
        all_sizes.push((rows, z));
        let ids = ids(&root)?;
        ensure!(
            ids.len() as u64 == rows,
            "split: {} rows, not {rows}",
            ids.len()
        );
        for round in 0..o.rounds {
            let mut rng = CacheRng::new(o.seed ^ 0x5B1 ^ ((round as u64) << 20));
            let mut pick = |n: u64| -> Vec<&(i64, i64)> {
                (0..n).map(|_| &ids[rng.below(ids.len())]).collect()
            };
            let (warm, timed_rows) = (pick(o.warmup), pick(o.lookups));
            for device in &o.devices {
                for &pool_pct in &o.pool_pcts {
                    let frames = ((z[0].0 as f64 * pool_pct / 100.0).ceil() as u64).max(64);
                    for state in STATES {
                        let Measured {
                            own,
                            all,
                            scan_own_ms,
                            scan_all_ms,
                        } = measure(&root.join(state), device, frames, &warm, &timed_rows)?;
                        log(&format!(
                            "split {rows} round {round} {device} pool {pool_pct}% {state}: own {:.1} µs ({:.3} reads), all {:.1} µs ({:.3} reads), scans {scan_own_ms:.0} / {scan_all_ms:.0} ms",
                            own.0, own.1, all.0, all.1
                        ));
                        points.push(Point {
                            rows,
                            device: device.clone(),
                            pool_pct,
                            state,
                            own,
                            all,
                            scan_own_ms,
                            scan_all_ms,
                        });
                    }
                }
            }
        }
    }

    let mut set = ResultSet::new();
    for p in &points {
        let mut row = ResultRow::new("split", &p.device, p.state, p.rows as f64);
        row.wall_ms = p.scan_own_ms;
        set.push(
            row.with("pool_pct", p.pool_pct)
                .with("lookup_own_us", format!("{:.2}", p.own.0))
                .with("reads_own", format!("{:.3}", p.own.1))
                .with("lookup_all_us", format!("{:.2}", p.all.0))
                .with("reads_all", format!("{:.3}", p.all.1))
                .with("scan_all_ms", format!("{:.1}", p.scan_all_ms)),
        );
    }
    set.write_csv(o.out.join("split.csv"))?;

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
    let mut s = Summary::new("Vertical partitioning (No Bits Left Behind §3.2)");
    s.paragraph(&provenance());
    s.paragraph(&format!(
        "Table `{TABLE}` from `strata gen revision`, index `{INDEX}`. `whole`: `strata compact {TABLE}`. `split`: the same, then `strata split {TABLE} --columns {}`. A lookup finds the rev_id in the index and reads either the row's own columns (`rev_page`, checked) or the whole row (the side columns too). {} uniform lookups timed after {} warm-up ones, in an empty pool of {:?}% of `whole`'s heap pages; then two cold full scans in new pools: `sum(rev_len)` and `count(rev_comment)`. Median of {} rounds, each running every device, pool and copy in turn with the same rows. Real: direct I/O, wall time; hdd/ssd: wall time plus the modeled device time.",
        SIDE.join(","),
        o.lookups,
        o.warmup,
        o.pool_pcts,
        o.rounds
    ));
    s.heading("Bytes");
    let size_rows: Vec<Vec<String>> = all_sizes
        .iter()
        .map(|(rows, z)| {
            vec![
                rows.to_string(),
                z[0].0.to_string(),
                format!("{} + {}", z[1].0, z[1].1),
                format!("{:.1}%", 100.0 * z[1].0 as f64 / z[0].0 as f64),
                format!("{:.1}%", 100.0 * (z[1].0 + z[1].1) as f64 / z[0].0 as f64),
            ]
        })
        .collect();
    s.table(
        &[
            "rows",
            "whole: heap pages",
            "split: heap + side pages",
            "split heap / whole",
            "split heap + side / whole",
        ]
        .map(String::from),
        &size_rows,
    );
    s.heading("Lookups and scans");
    let mut out = Vec::new();
    for &rows in &o.rows {
        for device in &o.devices {
            for &pool in &o.pool_pcts {
                let m = |st, f: fn(&Point) -> f64| med(rows, device, pool, st, f);
                let cell = |st, f: fn(&Point) -> f64, g: fn(&Point) -> f64| {
                    format!("{} ({:.3})", num(m(st, f)), m(st, g))
                };
                out.push(vec![
                    format!("{rows}, {device}, pool {pool}%"),
                    cell("whole", |p| p.own.0, |p| p.own.1),
                    cell("split", |p| p.own.0, |p| p.own.1),
                    format!("{:.2}x", m("whole", |p| p.own.0) / m("split", |p| p.own.0)),
                    cell("whole", |p| p.all.0, |p| p.all.1),
                    cell("split", |p| p.all.0, |p| p.all.1),
                    format!("{:.2}x", m("whole", |p| p.all.0) / m("split", |p| p.all.0)),
                    format!(
                        "{:.2}x",
                        m("whole", |p| p.scan_own_ms) / m("split", |p| p.scan_own_ms)
                    ),
                    format!(
                        "{:.2}x",
                        m("whole", |p| p.scan_all_ms) / m("split", |p| p.scan_all_ms)
                    ),
                ]);
            }
        }
    }
    s.table(
        &[
            "rows, device, pool",
            "whole: own columns µs/lookup (reads)",
            "split: own columns µs/lookup (reads)",
            "own columns speedup",
            "whole: whole row µs/lookup (reads)",
            "split: whole row µs/lookup (reads)",
            "whole row speedup",
            "scan sum(rev_len) speedup",
            "scan count(rev_comment) speedup",
        ]
        .map(String::from),
        &out,
    );
    s.write(o.out.join("split.md"))?;
    Ok(s.as_str().to_string())
}
