//! The subcommands other than benchmarks.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use strata_storage::db::{DbOptions, IndexSpec, TableOptions};
use strata_storage::types::Schema;
use strata_storage::util::{format_bytes, parse_size};
use strata_storage::{Database, check};

use crate::progress::Bars;
use crate::{BenchCommand, Cli, Command};

/// A mistake in the command line that clap cannot see (exit code 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for UsageError {}

pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

#[derive(Args)]
pub struct LoadArgs {
    /// Table to load into.
    pub table: String,
    /// CSV or Parquet file (by extension; see --format).
    pub file: PathBuf,
    /// csv or parquet (default: from the file extension).
    #[arg(long)]
    pub format: Option<String>,
    /// Schema of a new table: "name TYPE [NULL], ...".
    #[arg(long, conflicts_with = "schema_file")]
    pub schema: Option<String>,
    /// File holding the schema of a new table.
    #[arg(long)]
    pub schema_file: Option<PathBuf>,
    /// The CSV file has no header row.
    #[arg(long)]
    pub no_header: bool,
    /// CSV field delimiter.
    #[arg(long, default_value = ",")]
    pub delimiter: char,
    /// Skip (and report) up to this many bad rows instead of failing.
    #[arg(long, default_value_t = 0)]
    pub max_errors: u64,
    /// Heap fill factor of a new table (0.05..=1.0).
    #[arg(long, default_value_t = 1.0)]
    pub fill_factor: f64,
    /// Segment size of a new table's files.
    #[arg(long, default_value = "1GiB")]
    pub segment_size: String,
    /// Index to create on a new table: NAME:COL[,COL...] (repeatable).
    #[arg(long = "index")]
    pub indexes: Vec<String>,
}

#[derive(Args)]
pub struct GenArgs {
    /// microbench, skewed, flash or tpch.
    pub dataset: String,
    /// Rows (microbench, skewed, flash; default 1000000).
    #[arg(long)]
    pub rows: Option<u64>,
    /// Random seed (microbench, skewed, flash; default 42).
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
}

/// Database options from the global flags.
pub fn db_options(cli: &Cli, read_only: bool) -> Result<DbOptions> {
    let pool = parse_size(&cli.buffer_pool).map_err(usage)? as usize;
    Ok(DbOptions {
        buffer_pool_bytes: pool,
        read_only,
        ..DbOptions::default()
    }
    .device(&cli.device)?)
}

pub fn open_db(cli: &Cli, read_only: bool) -> Result<Database> {
    Ok(Database::open(&cli.db, db_options(cli, read_only)?)?)
}

fn table_options(fill: f64, segment: &str) -> Result<TableOptions> {
    let bytes = parse_size(segment).map_err(usage)?;
    let page = strata_storage::page::PAGE_SIZE as u64;
    if bytes < page || bytes % page != 0 {
        return Err(usage(format!(
            "segment size {segment} must be a whole number of 8 KiB pages"
        )));
    }
    Ok(TableOptions {
        fill_factor: fill,
        segment_pages: bytes / page,
    })
}

pub fn run(cli: &Cli) -> Result<()> {
    match &cli.command {
        Command::Create => {
            Database::create(&cli.db, db_options(cli, false)?)?;
            println!("created database {}", cli.db.display());
            Ok(())
        }
        Command::Load(args) => load(cli, args),
        Command::Gen(args) => gen_cmd(cli, args),
        Command::Info { table, json } => info(cli, table.as_deref(), *json),
        Command::Check => check_cmd(cli),
        Command::Scan(args) => crate::scan::run(cli, args),
        Command::Model(args) => crate::model_cmd::run(cli, args),
        Command::Demo { rows } => demo(cli, *rows),
        Command::Bench {
            which: BenchCommand::Io(args),
        } => crate::bench_io::run(cli, args),
        Command::Bench {
            which: BenchCommand::SmoothScan(args),
        } => crate::bench_smooth::run(cli, args),
        Command::Sql { args } => crate::sql_forward::run(cli, &["sql"], args),
        Command::Bench {
            which: BenchCommand::Tpch { args },
        } => crate::sql_forward::run(cli, &["bench", "tpch"], args),
        Command::Bench {
            which: BenchCommand::Flash(args),
        } => crate::bench_flash::run(cli, args),
    }
}

fn parse_index(spec: &str) -> Result<IndexSpec> {
    let (name, cols) = spec
        .split_once(':')
        .ok_or_else(|| usage(format!("--index '{spec}': expected NAME:COL[,COL...]")))?;
    let cols: Vec<&str> = cols
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    if cols.is_empty() {
        return Err(usage(format!("--index '{spec}': no columns")));
    }
    Ok(IndexSpec::new(name.trim(), &cols))
}

fn load(cli: &Cli, a: &LoadArgs) -> Result<()> {
    let db = Database::open_or_create(&cli.db, db_options(cli, false)?)?;
    let schema = match (&a.schema, &a.schema_file) {
        (Some(s), _) => Some(Schema::parse(s)?),
        (None, Some(f)) => {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("reading schema file {}", f.display()))?;
            Some(Schema::parse(&text).with_context(|| format!("schema file {}", f.display()))?)
        }
        (None, None) => None,
    };
    let indexes = a
        .indexes
        .iter()
        .map(|s| parse_index(s))
        .collect::<Result<Vec<_>>>()?;
    let create = table_options(a.fill_factor, &a.segment_size)?;
    let format = match &a.format {
        Some(f) => f.to_ascii_lowercase(),
        None => a
            .file
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("csv")
            .to_ascii_lowercase(),
    };
    let bars = Bars::new();
    let start = Instant::now();
    let bytes = std::fs::metadata(&a.file).map(|m| m.len()).unwrap_or(0);
    let report = match format.as_str() {
        "csv" | "tsv" | "txt" | "tbl" => {
            if !a.delimiter.is_ascii() {
                return Err(usage("--delimiter must be one ASCII character"));
            }
            let opts = strata_load::CsvOptions {
                header: !a.no_header,
                delimiter: a.delimiter as u8,
                schema,
                create,
                indexes,
                max_errors: a.max_errors,
                ..Default::default()
            };
            strata_load::load_csv(&db, &a.table, &a.file, &opts, &bars)?
        }
        "parquet" | "pq" => {
            let opts = strata_load::ParquetOptions {
                create,
                indexes,
                ..Default::default()
            };
            strata_load::load_parquet(&db, &a.table, &a.file, &opts, &bars)?
        }
        other => {
            return Err(usage(format!(
                "unknown format '{other}' (use csv or parquet)"
            )));
        }
    };
    bars.finish();
    let secs = start.elapsed().as_secs_f64();
    for e in &report.skipped {
        eprintln!("skipped: {e}");
    }
    println!(
        "loaded {} rows into {} in {:.2} s ({:.0} rows/s, {:.1} MB/s){}",
        report.rows_loaded,
        a.table,
        secs,
        report.rows_loaded as f64 / secs,
        bytes as f64 / 1e6 / secs,
        if report.skipped.is_empty() {
            String::new()
        } else {
            format!("; skipped {} bad rows", report.skipped.len())
        }
    );
    Ok(())
}

fn gen_cmd(cli: &Cli, a: &GenArgs) -> Result<()> {
    if a.dataset.trim().eq_ignore_ascii_case("tpch") {
        return gen_tpch(cli, a);
    }
    let kind: strata_load::GenKind = a.dataset.parse()?;
    for (given, flag) in [
        (a.sf.is_some(), "--sf"),
        (a.parquet.is_some(), "--parquet"),
        (a.parquet_only, "--parquet-only"),
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
    let name = strata_load::generate(&db, &spec, &bars)?.table;
    bars.finish();
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
    Ok(())
}

/// `strata gen tpch --sf N [--parquet DIR] [--parquet-only]`: the eight TPC-H
/// tables with their indexes, one line per table as it commits.
fn gen_tpch(cli: &Cli, a: &GenArgs) -> Result<()> {
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
    Ok(())
}

fn info(cli: &Cli, only: Option<&str>, json: bool) -> Result<()> {
    let db = open_db(cli, true)?;
    let names = match only {
        Some(t) => {
            db.table(t)?;
            vec![t.to_string()]
        }
        None => db.table_names(),
    };
    let mut out = Vec::new();
    for name in &names {
        let t = db.table(name)?;
        let cat = db.catalog();
        let def = cat.table(name)?;
        let pages = t.heap().num_pages();
        let page = strata_storage::page::PAGE_SIZE as u64;
        let mut idx = Vec::new();
        for i in t.indexes() {
            idx.push(serde_json::json!({
                "name": i.def.name,
                "columns": i.def.columns,
                "stats": i.btree.stats()?,
            }));
        }
        out.push(serde_json::json!({
            "table": name,
            "schema": t.schema().to_string(),
            "rows": t.rows(),
            "pages": pages,
            "bytes": pages * page,
            "fill_factor": def.fill_factor,
            "segment_pages": def.segment_pages,
            "segments": pages.div_ceil(def.segment_pages).max(1),
            "rows_per_page": if pages > 0 { t.rows() as f64 / pages as f64 } else { 0.0 },
            "indexes": idx,
        }));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    if out.is_empty() {
        println!("database {} has no tables", cli.db.display());
    }
    for t in &out {
        println!(
            "table {}: {} rows, {} pages ({}), {} segment(s) of {}, fill factor {:.2}, {:.1} rows/page",
            t["table"].as_str().unwrap(),
            t["rows"],
            t["pages"],
            format_bytes(t["bytes"].as_u64().unwrap()),
            t["segments"],
            format_bytes(
                t["segment_pages"].as_u64().unwrap() * strata_storage::page::PAGE_SIZE as u64
            ),
            t["fill_factor"].as_f64().unwrap(),
            t["rows_per_page"].as_f64().unwrap()
        );
        println!("  columns: {}", t["schema"].as_str().unwrap());
        for i in t["indexes"].as_array().unwrap() {
            let s = &i["stats"];
            println!(
                "  index {} on ({}): height {}, {} entries, {} leaf + {} inner pages, leaf fill {:.1}%",
                i["name"].as_str().unwrap(),
                i["columns"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap())
                    .collect::<Vec<_>>()
                    .join(", "),
                s["height"],
                s["entries"],
                s["leaf_pages"],
                s["internal_pages"],
                s["leaf_fill"].as_f64().unwrap_or(0.0) * 100.0
            );
        }
    }
    Ok(())
}

fn check_cmd(cli: &Cli) -> Result<()> {
    let db = open_db(cli, true)?;
    let bars = Bars::new();
    let report = check::check_database(&db, &bars)?;
    bars.finish();
    for t in &report {
        let idx: Vec<String> = t
            .indexes
            .iter()
            .map(|(n, e)| format!("{n} ({e} entries)"))
            .collect();
        println!(
            "ok: table {}: {} pages, {} rows; indexes: {}",
            t.table,
            t.pages,
            t.rows,
            if idx.is_empty() {
                "none".to_string()
            } else {
                idx.join(", ")
            }
        );
    }
    println!(
        "check passed: {} table(s), every page verified",
        report.len()
    );
    Ok(())
}

/// The README's first command: builds a database, checks it, and shows what a full
/// scan and an index scan each cost for the same range query, cold.
fn demo(cli: &Cli, rows: u64) -> Result<()> {
    let exists = strata_storage::catalog::Catalog::path(&cli.db).exists();
    let has_table = {
        let db = Database::open_or_create(&cli.db, db_options(cli, false)?)?;
        if !exists {
            println!("created database {}", cli.db.display());
        }
        db.table_names().iter().any(|t| t == "microbench")
    };
    if !has_table {
        println!("generating the Smooth Scan micro-benchmark table ({rows} rows, index on c2)...");
        let args = GenArgs {
            dataset: "microbench".into(),
            rows: Some(rows),
            seed: None,
            fill_factor: 1.0,
            table: None,
            segment_size: "1GiB".into(),
            sf: None,
            parquet: None,
            parquet_only: false,
        };
        gen_cmd(cli, &args)?;
    }
    println!();
    info(cli, Some("microbench"), false)?;
    println!();
    check_cmd(cli)?;
    println!();
    // The same query through each access path, cold (a fresh pool each time).
    let hi = 1000;
    let pred = format!("c2 >= 0 AND c2 < {hi}");
    println!("query: SELECT * FROM microbench WHERE {pred}   (about 1% of rows), cold");
    let mut counts = Vec::new();
    for path in ["full", "index", "sort", "smooth"] {
        let db = open_db(cli, true)?;
        let args = crate::scan::ScanArgs::for_demo("microbench", &pred, path);
        let spec = crate::scan::scan_spec(&db, &args)?;
        let choice = crate::scan::path_choice(&args, &db, strata_access::PageCosts::modeled(&db))?;
        let out = strata_access::run_scan(
            spec,
            &choice,
            &strata_access::SortOptions::default(),
            |_| {},
        )?;
        let io = &out.io;
        println!(
            "  {:<7} {:>7} rows {:>9.1} ms{}  {:>6} read requests ({:>5} random) {:>6} pages",
            path,
            out.rows,
            out.wall_ms,
            if io.modeled_ns > 0 {
                format!(" (modeled {:>9.1} ms)", io.modeled_ms())
            } else {
                String::new()
            },
            io.read_requests,
            io.random_reads,
            io.pages_read
        );
        counts.push(out.rows);
        if path == "full" {
            println!("          on {}", db.device().describe());
        }
    }
    if counts.windows(2).any(|w| w[0] != w[1]) {
        bail!("the access paths disagree on the rows: {counts:?}");
    }
    println!(
        "\nSmooth Scan needs no estimate: it starts like an index scan and morphs towards a full scan as it sees more\nqualifying rows. Try `strata --device hdd demo` (a modeled disk) and `strata scan microbench --where \"c2 < 50000\"`."
    );
    Ok(())
}
