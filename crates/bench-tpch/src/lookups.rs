//! `strata bench tpch --lookups`: point lookups through an index on a
//! columnar table beside the same lookups on the row heap, at TPC-H scale.
//!
//! `lineitem` by `l_partkey` (about 30 rows per key at any scale, spread
//! over the whole table, so min/max pruning keeps every page and only the
//! index narrows the read), projecting 3 columns and all 16. Two databases
//! from one generator: the row tables with the spec's key indexes, and the
//! same tables converted to columns (`strata_columns::rewrite`, which keeps
//! each index as a column tree).
//!
//! Each run opens the database anew in this process (`O_DIRECT` on the real
//! device, an empty buffer pool, cache of column-file bytes and cache of
//! footers: every page, footer and column chunk is read from the disk), runs
//! the lookup (cold), then runs it again in the same session (warm). The
//! process itself is warm: one untimed pass over both databases first, so a
//! run does not also pay for a fresh process's first touch of its code and
//! heap (`scripts/column_lookups.sh` measures that case, a fresh `strata
//! sql` per lookup). The two formats alternate, their order swapped every
//! round; medians over the keys and rounds.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, bail};
use strata_bench::report::summary::{Summary, provenance};
use strata_load::{TpchSpec, generate_tpch};
use strata_sql::SqlSession;
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};

use crate::engines::median;

/// What to run.
pub struct LookupOptions {
    pub sf: f64,
    /// Where the two databases are (built once).
    pub work: PathBuf,
    pub out: PathBuf,
    /// Rounds over every key (each a cold and a warm run per format).
    pub rounds: usize,
    pub db_options: DbOptions,
}

/// The projections measured: what a point query typically returns, and
/// every column (the format's worst case: a read per column).
pub const PROJECTIONS: [(&str, &str); 2] = [
    ("3 columns", "l_orderkey, l_quantity, l_extendedprice"),
    ("all 16", "*"),
];

const FORMATS: [&str; 2] = ["columns", "rows"];

/// Six `l_partkey` values spread over the key range (`1 ..= 200,000 * SF`).
pub fn keys(sf: f64) -> Vec<i64> {
    let parts = ((200_000.0 * sf) as i64).max(40);
    (0..6).map(|i| 17 + i * (parts - 40) / 5).collect()
}

/// One run: the cold and the warm statement.
#[derive(Clone, Copy, Debug, Default)]
struct Run {
    cold_ms: f64,
    warm_ms: f64,
    rows: usize,
    requests: u64,
    bytes: u64,
}

fn prepare(o: &LookupOptions, progress: &mut dyn FnMut(&str)) -> Result<[PathBuf; 2]> {
    std::fs::create_dir_all(&o.work)?;
    let dbs = [o.work.join("columns.db"), o.work.join("rows.db")];
    for (dir, format) in dbs.iter().zip(FORMATS) {
        if dir.join("catalog.json").exists() {
            continue;
        }
        progress(&format!(
            "generating TPC-H SF {} ({format}) into {}",
            o.sf,
            dir.display()
        ));
        let db = Database::create(dir, DbOptions::default())?;
        generate_tpch(Some(&db), &TpchSpec::new(o.sf), &NoProgress, |_| {})?;
        if format == "columns" {
            crate::tpch_to_columns(&db)?;
        }
        SqlSession::new(Arc::new(db))?.execute("ANALYZE")?;
    }
    Ok(dbs)
}

fn run_once(dir: &Path, options: &DbOptions, sql: &str) -> Result<Run> {
    let db = Database::open(
        dir,
        DbOptions {
            read_only: true,
            ..options.clone()
        },
    )?;
    let s = SqlSession::new(Arc::new(db))?;
    let t = Instant::now();
    let cold = s.execute(sql)?;
    let cold_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    s.execute(sql)?;
    Ok(Run {
        cold_ms,
        warm_ms: t.elapsed().as_secs_f64() * 1e3,
        rows: cold.rows(),
        requests: cold.io.read_requests,
        bytes: cold.io.bytes_read(),
    })
}

/// Runs the lookups and writes `lookups.md` and `lookups.csv` in `--out`.
pub fn run(o: &LookupOptions, progress: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    if o.rounds == 0 {
        bail!("--repeat must be at least 1");
    }
    let dbs = prepare(o, progress)?;
    let keys = keys(o.sf);
    let query =
        |proj: &str, key: i64| format!("SELECT {proj} FROM lineitem WHERE l_partkey = {key}");
    // The process's first touch of each path's code and heap, untimed.
    for (_, proj) in PROJECTIONS {
        for db in &dbs {
            run_once(db, &o.db_options, &query(proj, keys[0]))?;
        }
    }
    // runs[projection][format][key] = one Run per round
    let mut runs = vec![vec![vec![Vec::<Run>::new(); keys.len()]; 2]; PROJECTIONS.len()];
    for round in 0..o.rounds {
        for (ki, &key) in keys.iter().enumerate() {
            for (pi, (name, proj)) in PROJECTIONS.iter().enumerate() {
                let sql = query(proj, key);
                let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
                for f in order {
                    let r = run_once(&dbs[f], &o.db_options, &sql)?;
                    progress(&format!(
                        "round {}/{} l_partkey = {key} {name} {}: cold {:.2} ms ({} requests, {} KiB), warm {:.2} ms, {} rows",
                        round + 1,
                        o.rounds,
                        FORMATS[f],
                        r.cold_ms,
                        r.requests,
                        r.bytes >> 10,
                        r.warm_ms,
                        r.rows
                    ));
                    runs[pi][f][ki].push(r);
                }
                let (c, h) = (&runs[pi][0][ki][round], &runs[pi][1][ki][round]);
                if c.rows != h.rows {
                    bail!(
                        "l_partkey = {key}: the columnar table returned {} rows, the row table {}",
                        c.rows,
                        h.rows
                    );
                }
            }
        }
    }
    write(o, &keys, &runs)
}

fn write(o: &LookupOptions, keys: &[i64], runs: &[Vec<Vec<Vec<Run>>>]) -> Result<PathBuf> {
    std::fs::create_dir_all(&o.out)?;
    let all = |per_key: &[Vec<Run>], f: fn(&Run) -> f64| {
        median(per_key.iter().flatten().map(f).collect())
    };
    let mut csv =
        String::from("projection,format,l_partkey,round,rows,cold_ms,warm_ms,requests,bytes\n");
    let mut summary = Vec::new();
    let mut per_key = Vec::new();
    for ((name, _), per_format) in PROJECTIONS.iter().zip(runs) {
        for (f, per_k) in per_format.iter().enumerate() {
            for (ki, rs) in per_k.iter().enumerate() {
                for (round, r) in rs.iter().enumerate() {
                    csv += &format!(
                        "{name},{},{},{},{},{:.3},{:.3},{},{}\n",
                        FORMATS[f],
                        keys[ki],
                        round + 1,
                        r.rows,
                        r.cold_ms,
                        r.warm_ms,
                        r.requests,
                        r.bytes
                    );
                }
            }
        }
        let [cols, rows] = [&per_format[0], &per_format[1]];
        let (cc, rc) = (all(cols, |r| r.cold_ms), all(rows, |r| r.cold_ms));
        let (cw, rw) = (all(cols, |r| r.warm_ms), all(rows, |r| r.warm_ms));
        summary.push(vec![
            name.to_string(),
            format!("{cc:.2}"),
            format!("{rc:.2}"),
            format!("{:.2}x", cc / rc),
            format!("{cw:.3}"),
            format!("{rw:.3}"),
            format!("{:.2}x", cw / rw),
            format!(
                "{:.0} / {:.0} KiB",
                all(cols, |r| r.requests as f64),
                all(cols, |r| r.bytes as f64) / 1024.0
            ),
            format!(
                "{:.0} / {:.0} KiB",
                all(rows, |r| r.requests as f64),
                all(rows, |r| r.bytes as f64) / 1024.0
            ),
        ]);
        for (ki, key) in keys.iter().enumerate() {
            let m = |rs: &[Run], f: fn(&Run) -> f64| median(rs.iter().map(f).collect());
            let (c, r) = (&cols[ki], &rows[ki]);
            per_key.push(vec![
                name.to_string(),
                key.to_string(),
                c.first().map_or(0, |r| r.rows).to_string(),
                format!("{:.2}", m(c, |r| r.cold_ms)),
                format!("{:.2}", m(r, |r| r.cold_ms)),
                format!("{:.3}", m(c, |r| r.warm_ms)),
                format!("{:.3}", m(r, |r| r.warm_ms)),
            ]);
        }
    }
    let mut s = Summary::new("Point lookups: a columnar table's index beside the row heap's");
    s.paragraph(&provenance());
    s.paragraph(&format!(
        "TPC-H SF {}: `SELECT … FROM lineitem WHERE l_partkey = k` for {} keys spread over the \
         key range, {} rounds; medians over keys and rounds. Each run opens the database anew \
         in one warm process (O_DIRECT, empty buffer pool and caches), runs the lookup (cold), \
         then again in the same session (warm); the formats alternate. Cold requests and bytes \
         are the device's counts over the cold run.",
        o.sf,
        keys.len(),
        o.rounds
    ));
    s.table(
        &[
            "projection",
            "columns cold ms",
            "rows cold ms",
            "cold columns / rows",
            "columns warm ms",
            "rows warm ms",
            "warm columns / rows",
            "columns requests / read",
            "rows requests / read",
        ],
        summary,
    );
    s.table(
        &[
            "projection",
            "l_partkey",
            "rows",
            "columns cold ms",
            "rows cold ms",
            "columns warm ms",
            "rows warm ms",
        ],
        per_key,
    );
    std::fs::write(o.out.join("lookups.csv"), csv)?;
    let md = o.out.join("lookups.md");
    s.write(&md)?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_are_inside_the_part_key_range_at_every_scale() {
        for sf in [0.01, 0.1, 1.0, 10.0] {
            let ks = keys(sf);
            let parts = (200_000.0 * sf) as i64;
            assert_eq!(ks.len(), 6);
            assert!(ks.windows(2).all(|w| w[0] < w[1]), "{ks:?}");
            assert!(
                ks.iter().all(|&k| (1..=parts).contains(&k)),
                "sf {sf}: {ks:?}"
            );
        }
    }
}
