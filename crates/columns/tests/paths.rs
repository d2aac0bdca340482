//! The access paths over the column part against a model, on modeled
//! devices: full, index, sort and Smooth Scan give exactly the model's rows
//! for every layout and selectivity, column reads are charged to the
//! device, and Smooth Scan costs at most 1.5x the best of the others in
//! every cell (the robustness target, here on tables small enough for a
//! test; `strata bench smooth-scan robustness --table-format columns` runs
//! the matrix).

use super::*;
use strata_columns::index::create_index;
use strata_columns::paths::{self, ColumnPath};

const ROWS: i64 = 150_000;

/// The key `i` (column 1) of row `n` under `layout`: each value three
/// times, 0..ROWS/3.
fn key(layout: &str, n: i64, perm: &[i64]) -> i32 {
    (match layout {
        // Ascending with the rows: min/max alone finds a range.
        "correlated" => n / 3,
        // In no order: every page holds every part of the range.
        "uniform" => perm[n as usize] / 3,
        // Runs of 2,000 rows in a random order of the runs.
        "clustered" => {
            let run = n / 2000;
            let runs = ROWS / 2000;
            (perm[run as usize % runs as usize] % runs * 2000 + n % 2000) / 3
        }
        _ => unreachable!(),
    }) as i32
}

fn table(dir: &std::path::Path, layout: &str) -> Vec<Vec<Value>> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
    let mut perm: Vec<i64> = (0..ROWS).collect();
    for i in (1..perm.len()).rev() {
        perm.swap(i, rng.random_range(0..=i));
    }
    let model: Vec<Vec<Value>> = (0..ROWS)
        .map(|n| {
            let mut r = row(n, &mut rng);
            r[1] = Value::Int32(key(layout, n, &perm));
            r
        })
        .collect();
    let db = Database::create(dir, opts()).unwrap();
    load(&db, &model);
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    create_index(&db, "t", IndexSpec::new("t_i", &["i"]), &NoProgress).unwrap();
    model
}

/// Runs `path` on a fresh open of the database on `device` (so nothing is
/// cached): the rows, sorted, and the modeled milliseconds charged.
fn run(
    dir: &std::path::Path,
    device: &str,
    c: &[Comparison],
    path: ColumnPath,
) -> (Vec<Vec<Value>>, f64, paths::PathRun) {
    let mut o = opts().device(device).unwrap();
    o.direct_io = false;
    let db = Database::open(dir, o).unwrap();
    let t = db.table("t").unwrap();
    let types = t.schema().types();
    let part = ColumnPart::of(&db, &t).unwrap().unwrap();
    let before = db.device().stats().snapshot();
    let (bytes, requests) = (part.counters().bytes(), part.counters().requests());
    let mut rows = Vec::new();
    let r = paths::run(&part, &t, c, path, |b| {
        rows.extend(batch_rows(b, &types));
        Ok(true)
    })
    .unwrap();
    let io = db.device().stats().snapshot() - before;
    // Every column-file read was charged to the device: its pages cover
    // the bytes the part counted, in as many requests (index leaves come
    // on top).
    let bytes = part.counters().bytes() - bytes;
    let requests = part.counters().requests() - requests;
    assert!(
        io.pages_read * 8192 >= bytes && bytes > 0,
        "{io:?}, {bytes} bytes"
    );
    assert!(io.read_requests >= requests, "{io:?}, {requests} requests");
    (sorted(rows), io.modeled_ms(), r)
}

#[test]
fn every_path_gives_the_models_rows_and_smooth_scan_stays_near_the_best() {
    let mut worst: Vec<String> = Vec::new();
    for layout in ["correlated", "uniform", "clustered"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let model = table(&path, layout);
        for device in ["hdd", "ssd"] {
            for pct in [0.01, 0.1, 1.0, 10.0, 50.0, 100.0] {
                let hi = ((ROWS / 3) as f64 * pct / 100.0).round().max(1.0) as i32;
                let c = [
                    Comparison {
                        column: 1,
                        op: CmpOp::Ge,
                        value: Value::Int32(0),
                    },
                    Comparison {
                        column: 1,
                        op: CmpOp::Lt,
                        value: Value::Int32(hi),
                    },
                ];
                let want = sorted(
                    model
                        .iter()
                        .filter(|r| c.iter().all(|c| passes(&r[c.column], c.op, &c.value)))
                        .cloned()
                        .collect(),
                );
                let mut costs = Vec::new();
                let mut paths_run = vec![ColumnPath::Full, ColumnPath::Sort, ColumnPath::Smooth];
                // One row read at a time: only where it can be the best.
                if pct <= 1.0 {
                    paths_run.push(ColumnPath::Index);
                }
                for p in paths_run {
                    let (got, ms, r) = run(&path, device, &c, p);
                    assert_eq!(
                        got.len(),
                        want.len(),
                        "{layout} {device} {pct}% {}",
                        p.name()
                    );
                    assert!(
                        got == want,
                        "{layout} {device} {pct}% {}: rows differ",
                        p.name()
                    );
                    assert!(
                        ms > 0.0,
                        "{layout} {device} {pct}% {}: nothing charged",
                        p.name()
                    );
                    if p == ColumnPath::Smooth && pct == 100.0 {
                        // The whole range: the bound says so before a leaf.
                        assert!(r.morphed && r.entries == 0, "{layout} {device}: {}", r.note);
                    }
                    if p == ColumnPath::Smooth && pct == 0.01 && layout == "uniform" {
                        // 15 rows where min/max keeps every page: through
                        // the index. (Where min/max keeps only their page,
                        // the full scan reads what the index would, and the
                        // index's own leaves tip it to the full scan.)
                        assert!(!r.morphed, "{layout} {device}: {}", r.note);
                    }
                    costs.push((p, ms, r));
                }
                let best = costs
                    .iter()
                    .filter(|c| c.0 != ColumnPath::Smooth)
                    .map(|c| c.1)
                    .fold(f64::INFINITY, f64::min);
                let smooth = costs.iter().find(|c| c.0 == ColumnPath::Smooth).unwrap();
                let ratio = smooth.1 / best;
                let line = format!(
                    "{layout} {device} {pct}%: smooth {:.2} ms / best {best:.2} ms = {ratio:.2} ({})",
                    smooth.1, smooth.2.note
                );
                eprintln!("{line}");
                if ratio > 1.5 {
                    worst.push(line);
                }
            }
        }
    }
    assert!(
        worst.is_empty(),
        "Smooth Scan over 1.5x the best path:\n{}",
        worst.join("\n")
    );
}
