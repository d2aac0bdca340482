//! `strata load`: a CSV or Parquet file into a table, in one atomic load.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use strata_load::LoadTarget;
use strata_storage::Database;
use strata_storage::db::IndexSpec;
use strata_storage::row::Schema;

use crate::context::{Global, db_options, table_options, usage};
use crate::progress::Bars;

#[derive(Args)]
pub struct LoadArgs {
    /// Table to load into.
    pub table: String,
    /// CSV or Parquet file (by extension; see --format).
    pub file: PathBuf,
    /// csv or parquet (default: from the file extension).
    #[arg(long)]
    pub format: Option<String>,
    /// Schema of a new table: "name TYPE [NULL], ..." (default for a CSV
    /// file: the types inferred from its values, printed to stderr).
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
    /// Then store each column in the narrowest encoding its values allow
    /// (types as hints; the same as `strata compact TABLE` after the load).
    #[arg(long, conflicts_with = "table_format")]
    pub compact: bool,
    /// How a new table stores its rows: rows (heap pages) or columns
    /// (Parquet row groups; `strata compact --format columns` after the
    /// load). `--format` names the input file's format.
    #[arg(long, value_name = "rows|columns")]
    pub table_format: Option<strata_columns::Format>,
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

pub fn run(cli: &Global, a: &LoadArgs) -> Result<()> {
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
    let target = LoadTarget {
        create: table_options(a.fill_factor, &a.segment_size)?,
        indexes,
        max_errors: a.max_errors,
    };
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
            let dialect = strata_load::CsvDialect {
                header: !a.no_header,
                delimiter: a.delimiter as u8,
                ..Default::default()
            };
            // A new table without --schema: its types from the data.
            let schema = match schema {
                Some(s) => Some(s),
                None if db.table(&a.table).is_err() => {
                    let inferred = strata_load::infer_csv_schema(&a.file, &dialect)?;
                    eprintln!(
                        "inferred from {} ({} rows): CREATE TABLE {} ({})",
                        a.file.display(),
                        inferred.records,
                        a.table,
                        strata_load::sql_column_list(&inferred.schema)
                    );
                    Some(inferred.schema)
                }
                None => None,
            };
            let opts = strata_load::CsvOptions {
                header: dialect.header,
                delimiter: dialect.delimiter,
                null_string: dialect.null_string,
                schema,
                target,
            };
            strata_load::load_csv(&db, &a.table, &a.file, &opts, &bars)?
        }
        "parquet" | "pq" => {
            let opts = strata_load::ParquetOptions {
                // --max-errors applies to CSV loads only: a Parquet load stops
                // at its first bad row.
                target: LoadTarget {
                    max_errors: 0,
                    ..target
                },
                schema,
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
    if a.compact {
        crate::compact::after_load(&db, &a.table)?;
    }
    if a.table_format == Some(strata_columns::Format::Columns) {
        crate::compact::to_columns_after_load(&db, &a.table)?;
    }
    Ok(())
}
