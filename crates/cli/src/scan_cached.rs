//! `strata scan --path index-cache`: the index scan answered from the index
//! cache (No Bits Left Behind §2.1) — index-only when the query needs only
//! the index's key columns and the columns it caches.
//!
//! The range on the index's first column comes from the predicate as for
//! `--path index`; for each distinct key in it, [`Table::lookup_cached`] gives
//! every entry's cached columns, from the leaf on a hit and from the heap
//! tuple (then filled into the leaf) on a miss. Every column of `--columns`
//! and of the predicate must be a key or cached column of the index (else a
//! usage error naming the column); the other conjuncts are evaluated on the
//! decoded values. Rows come out in (key, tid) order, as from the index scan.
//!
//! Caches live in memory only and start empty at every open, so one process
//! runs the scan `--runs` times and reports each run: the first fills, the
//! later ones hit what fits in the leaves' free space.

use std::time::Instant;

use anyhow::Result;
use serde::Serialize;
use strata_access::ScanSpec;
use strata_access::predicate::compare;
use strata_storage::db::CachedLookups;
use strata_storage::row::{Tid, Value, decode_key};
use strata_storage::{Database, Table};

use crate::context::usage;

/// One run of the scan.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CachedRun {
    pub rows: u64,
    /// Index entries in the range (each answered from a leaf or the heap).
    pub index_entries: u64,
    /// Distinct keys looked up.
    pub keys: u64,
    /// Entries answered from a leaf's cache: no heap page read for them.
    pub cache_hits: u64,
    /// Entries whose heap tuple was read (each one heap page access).
    pub cache_misses: u64,
    pub cache_fills: u64,
    /// Fills refused (a concurrent change, a busy leaf, no room).
    pub fills_refused: u64,
    /// Buffer-pool page accesses (index and heap) and device page reads.
    pub pool_accesses: u64,
    pub device_pages_read: u64,
    pub wall_ms: f64,
}

#[derive(Serialize)]
pub struct CachedReport {
    pub path: &'static str,
    pub table: String,
    pub index: String,
    pub columns: Vec<String>,
    pub cached_columns: Vec<String>,
    pub runs: Vec<CachedRun>,
}

/// Where each output column comes from.
#[derive(Clone, Copy)]
enum Source {
    Key(usize),
    Cached(usize),
}

fn source(table: &Table, spec: &ScanSpec, col: usize) -> Result<Source> {
    let ix = spec.index()?;
    if let Some(k) = ix.key_cols.iter().position(|&c| c == col) {
        return Ok(Source::Key(k));
    }
    let fields = ix.cached_fields();
    if let Some(p) = fields
        .as_ref()
        .and_then(|f| f.cols.iter().position(|&c| c == col))
    {
        return Ok(Source::Cached(p));
    }
    Err(usage(format!(
        "--path index-cache answers only from index {}'s key ({}) and cached columns ({}); column {} is neither (declare it with `strata index cache {} {} --columns ...`)",
        ix.def.name,
        ix.def.columns.join(", "),
        fields.map(|f| f.names.join(", ")).unwrap_or_default(),
        table.schema().columns[col].name,
        table.name(),
        ix.def.name
    )))
}

/// Runs the scan `runs` times; rows of the last run go to `row` (projected
/// values in the order of `columns`, `--columns`; without it the index's key
/// and cached columns).
pub fn run_cached(
    db: &Database,
    columns: Option<&[String]>,
    runs: usize,
    spec: &ScanSpec,
    mut row: impl FnMut(&[Value]),
) -> Result<CachedReport> {
    let table = spec.table.clone();
    let ix = spec.index()?;
    let Some(fields) = ix.cached_fields() else {
        return Err(usage(format!(
            "--path index-cache: index {} of {} caches no column (`strata index cache {} {} --columns ...`)",
            ix.def.name,
            table.name(),
            table.name(),
            ix.def.name
        )));
    };
    let cols: Vec<usize> = match columns {
        Some(list) => list
            .iter()
            .map(|c| table.column(c.trim()))
            .collect::<strata_storage::Result<_>>()?,
        None => ix.key_cols.iter().chain(&fields.cols).copied().collect(),
    };
    let out_src: Vec<Source> = cols
        .iter()
        .map(|&c| source(&table, spec, c))
        .collect::<Result<_>>()?;
    let conj: Vec<(Source, &strata_access::predicate::Comparison)> = spec
        .predicate
        .conjuncts
        .iter()
        .map(|c| Ok((source(&table, spec, c.column)?, c)))
        .collect::<Result<_>>()?;
    let pick = |s: Source, key: &[Value], cached: &[Value]| -> Value {
        match s {
            Source::Key(k) => key[k].clone(),
            Source::Cached(p) => cached[p].clone(),
        }
    };
    let runs = runs.max(1);
    let mut report = CachedReport {
        path: "index-cache",
        table: table.name().to_string(),
        index: ix.def.name.clone(),
        columns: cols
            .iter()
            .map(|&c| table.schema().columns[c].name.clone())
            .collect(),
        cached_columns: fields.names.clone(),
        runs: Vec::new(),
    };
    let mut values = Vec::with_capacity(cols.len());
    for r in 0..runs {
        let last = r + 1 == runs;
        let (pool0, dev0) = (
            db.pool().counters(),
            db.device().stats().snapshot().pages_read,
        );
        let start = Instant::now();
        let mut run = CachedRun::default();
        let mut counts = CachedLookups::default();
        let mut cursor = spec.cursor()?;
        let mut prev: Vec<u8> = Vec::new();
        let mut first = true;
        while let Some(entry) = cursor.next_entry(&ix.btree) {
            let (entry, _) = entry?;
            // The entry is the encoded key followed by the tid.
            let key = &entry[..entry.len() - Tid::ENCODED_LEN];
            run.index_entries += 1;
            if !first && key == prev.as_slice() {
                // Every entry of this key came with the first one.
                continue;
            }
            first = false;
            prev.clear();
            prev.extend_from_slice(key);
            run.keys += 1;
            let (key_vals, _) = decode_key(&ix.key_types, &prev);
            for (_, cached) in table.lookup_cached(ix, &prev, &mut counts)? {
                let pass = conj.iter().all(|(s, c)| {
                    let v = pick(*s, &key_vals, &cached);
                    compare(&v, &c.value).is_some_and(|o| c.op.holds(o))
                });
                if !pass {
                    continue;
                }
                run.rows += 1;
                if last {
                    values.clear();
                    values.extend(out_src.iter().map(|&s| pick(s, &key_vals, &cached)));
                    row(&values);
                }
            }
        }
        run.wall_ms = start.elapsed().as_secs_f64() * 1e3;
        let pool = db.pool().counters() - pool0;
        run.pool_accesses = pool.hits + pool.misses;
        run.device_pages_read = db.device().stats().snapshot().pages_read - dev0;
        run.cache_hits = counts.hits;
        run.cache_misses = counts.misses;
        run.cache_fills = counts.fills;
        run.fills_refused = counts.refused;
        report.runs.push(run);
    }
    Ok(report)
}

pub fn print(report: &CachedReport, predicate: &str) {
    let last = report.runs.last().cloned().unwrap_or_default();
    println!(
        "index-cache scan on {} using {}  (rows={})",
        report.table, report.index, last.rows
    );
    if !predicate.is_empty() {
        println!("  predicate: {predicate}");
    }
    println!(
        "  columns: {}  (cached in leaves: {})",
        report.columns.join(", "),
        report.cached_columns.join(", ")
    );
    for (i, r) in report.runs.iter().enumerate() {
        println!(
            "  run {}: {} index entries, {} keys; cache hits {}, misses {} (heap tuples read), fills {}, fills refused {}; {} pool page accesses, {} device pages read; {:.3} ms",
            i + 1,
            r.index_entries,
            r.keys,
            r.cache_hits,
            r.cache_misses,
            r.cache_fills,
            r.fills_refused,
            r.pool_accesses,
            r.device_pages_read,
            r.wall_ms
        );
    }
}
