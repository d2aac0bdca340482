//! `strata gen`: the papers' data sets and TPC-H, generated straight into tables.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use strata_storage::Database;
use strata_storage::util::format_bytes;

use crate::context::{Global, db_options, table_options, usage};
use crate::progress::Bars;

#[derive(Args)]
pub struct GenArgs {
    /// microbench, skewed, flash, page (a Wikipedia-like page table whose
    /// (page_namespace, page_title) index caches page_id, page_len,
    /// page_is_redirect, page_latest), revision (a Wikipedia-like revision
    /// table, rows / 20 pages' edits in rev_id order, indexed on rev_id),
    /// tpch, or a layout of the microbench table whose c2 has one histogram
    /// but sits differently in the heap: uniform, correlated, periodic,
    /// clustered, or the adversaries alternating, dense-start, dense-tail.
    pub dataset: String,
    /// Rows (all but tpch; default 1000000).
    #[arg(long)]
    pub rows: Option<u64>,
    /// Random seed (all but tpch; default 42).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Heap fill factor (0.05..=1.0); e.g. 0.25 as public PostgreSQL benchmarks
    /// use. The same option as `strata load --fill-factor` (`--heap-fill`, its
    /// old name here, still works).
    #[arg(long, alias = "heap-fill", default_value_t = 1.0)]
    pub fill_factor: f64,
    /// Table name (default: the data set's name; not for tpch, whose tables have
    /// the spec's names).
    #[arg(long)]
    pub table: Option<String>,
    /// Segment size of the table's files.
    #[arg(long, default_value = "1GiB")]
    pub segment_size: String,
    /// TPC-H scale factor, e.g. 0.01, 1 or 10 (tpch only; SF 1 is about 1 GB of data).
    #[arg(long, allow_hyphen_values = true)]
    pub sf: Option<String>,
    /// Also write the TPC-H tables to DIR/<table>.parquet, for another engine (tpch only).
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,
    /// Write only the Parquet files, no database (tpch only; needs --parquet).
    #[arg(long, requires = "parquet")]
    pub parquet_only: bool,
    /// Then store each column in the narrowest encoding its values allow
    /// (types as hints; `strata compact` of every generated table).
    #[arg(long, conflicts_with_all = ["parquet_only", "table_format"])]
    pub compact: bool,
    /// How the TPC-H tables store their rows: rows (heap pages, the
    /// default) or columns (Parquet row groups). Either way with the
    /// spec's key indexes (on a columnar table each has a tree over the
    /// column rows). tpch only.
    #[arg(long, value_name = "rows|columns", conflicts_with = "parquet_only")]
    pub table_format: Option<strata_columns::Format>,
}

pub fn run(cli: &Global, a: &GenArgs) -> Result<()> {
    if a.dataset.trim().eq_ignore_ascii_case("tpch") {
        return tpch(cli, a);
    }
    let kind: strata_load::GenKind = a.dataset.parse()?;
    for (given, flag) in [
        (a.sf.is_some(), "--sf"),
        (a.parquet.is_some(), "--parquet"),
        (a.parquet_only, "--parquet-only"),
        (a.table_format.is_some(), "--table-format"),
    ] {
        if given {
            return Err(usage(format!("{flag} is for tpch, not {kind}")));
        }
    }
    let db = Database::open_or_create(&cli.db, db_options(cli, false)?)?;
    let spec = strata_load::GenSpec {
        kind,
        rows: a.rows.unwrap_or(1_000_000),
        seed: a.seed.unwrap_or(42),
        table: a.table.clone(),
        options: table_options(a.fill_factor, &a.segment_size)?,
    };
    let bars = Bars::new();
    let start = Instant::now();
    let before = db.device().stats().snapshot();
    let report = strata_load::generate(&db, &spec, &bars)?;
    bars.finish();
    let name = report.table;
    let secs = start.elapsed().as_secs_f64();
    let io = db.device().stats().snapshot() - before;
    let table = db.table(&name)?;
    let heap_bytes = table.heap().num_pages() * strata_storage::page::PAGE_SIZE as u64;
    println!(
        "generated {name}: {} rows in {:.2} s ({:.0} rows/s); heap {} written at {:.1} MB/s; {} MiB written in total",
        table.rows(),
        secs,
        table.rows() as f64 / secs,
        format_bytes(heap_bytes),
        heap_bytes as f64 / 1e6 / secs,
        io.bytes_written() >> 20
    );
    if kind == strata_load::GenKind::Page {
        for ix in table.indexes() {
            println!(
                "index {} on ({}): {} ({} pages, leaf fill {}), caching {}",
                ix.def.name,
                ix.def.columns.join(", "),
                format_bytes(ix.btree.num_pages() * strata_storage::page::PAGE_SIZE as u64),
                ix.btree.num_pages(),
                ix.def.leaf_fill,
                ix.def.cache.join(", ")
            );
        }
    }
    if let Some(b) = report.band {
        let n = table.rows();
        let x = strata_load::layout::key_bound_for(b.rows(), n);
        println!(
            "special rows: {} ({} dense on {} pages, {} isolated), ranks 0..{}; c2 < {x} selects {} of them",
            b.rows(),
            b.dense,
            b.dense_pages,
            b.sparse,
            b.rows(),
            strata_load::layout::rows_below(x, n)
        );
    }
    if a.compact {
        crate::compact::after_load(&db, &name)?;
    }
    Ok(())
}

/// `strata gen tpch --sf N [--parquet DIR] [--parquet-only]`: the eight TPC-H
/// tables with their indexes, one line per table as it commits.
fn tpch(cli: &Global, a: &GenArgs) -> Result<()> {
    for (given, flag) in [
        (a.rows.is_some(), "--rows"),
        (a.seed.is_some(), "--seed"),
        (a.table.is_some(), "--table"),
    ] {
        if given {
            return Err(usage(format!(
                "{flag} is not for tpch: its size is set by --sf and its tables have the spec's names"
            )));
        }
    }
    let sf_text =
        a.sf.as_deref()
            .ok_or_else(|| usage("tpch needs a scale factor: --sf 0.01, --sf 1, ..."))?;
    let mut spec = strata_load::TpchSpec::new(strata_load::parse_scale_factor(sf_text)?);
    spec.options = table_options(a.fill_factor, &a.segment_size)?;
    spec.parquet_dir = a.parquet.clone();
    let columnar = a.table_format == Some(strata_columns::Format::Columns);
    let db = if a.parquet_only {
        None
    } else {
        Some(Database::open_or_create(&cli.db, db_options(cli, false)?)?)
    };
    let bars = Bars::new();
    let start = Instant::now();
    let before = db.as_ref().map(|d| d.device().stats().snapshot());
    let page = strata_storage::page::PAGE_SIZE as u64;
    let (mut rows, mut heap, mut index, mut parquet) = (0u64, 0u64, 0u64, 0u64);
    strata_load::generate_tpch(db.as_ref(), &spec, &bars, |r| {
        bars.finish();
        let mut line = format!(
            "generated {:<8} {:>10} rows in {:>7.2} s",
            r.table.name(),
            r.rows,
            r.elapsed.as_secs_f64()
        );
        rows += r.rows;
        if let Some(t) = db.as_ref().and_then(|d| d.table(r.table.name()).ok()) {
            let h = t.heap().num_pages() * page;
            let i: u64 = t.indexes().iter().map(|i| i.btree.num_pages() * page).sum();
            heap += h;
            index += i;
            line += &format!("; heap {:>9}", format_bytes(h));
            if !t.indexes().is_empty() {
                let names: Vec<&str> = t.indexes().iter().map(|i| i.def.name.as_str()).collect();
                line += &format!(", indexes {} ({})", format_bytes(i), names.join(", "));
            }
        }
        if let Some((path, bytes)) = &r.parquet {
            parquet += bytes;
            line += &format!("; {} {}", path.display(), format_bytes(*bytes));
        }
        println!("{line}");
    })?;
    bars.finish();
    let secs = start.elapsed().as_secs_f64();
    let mut total = format!(
        "generated TPC-H SF {}: {rows} rows in {secs:.2} s",
        spec.scale_factor
    );
    if let (Some(db), Some(before)) = (&db, before) {
        let io = db.device().stats().snapshot() - before;
        total += &format!(
            "; heaps {}, indexes {}, {} MiB written in total",
            format_bytes(heap),
            format_bytes(index),
            io.bytes_written() >> 20
        );
    }
    if a.parquet.is_some() {
        total += &format!("; Parquet {}", format_bytes(parquet));
    }
    println!("{total}");
    if let (true, Some(db)) = (a.compact, &db) {
        for t in strata_load::TpchTable::ALL {
            crate::compact::after_load(db, t.name())?;
        }
    }
    if let (true, Some(db)) = (columnar, &db) {
        for t in strata_load::TpchTable::ALL {
            crate::compact::to_columns_after_load(db, t.name())?;
        }
    }
    Ok(())
}
