//! `strata compact TABLE`: types as hints (No Bits Left Behind §4.1) — rewrite a
//! table with each column in the narrowest encoding its values allow (the work
//! is `strata_storage::maintenance::compact`).

use anyhow::Result;
use clap::Args;
use strata_storage::maintenance::compact::{CompactOptions, CompactReport};

use crate::context::{Global, open_db};
use crate::progress::Bars;

#[derive(Args, Debug)]
pub struct CompactArgs {
    /// The table to rewrite.
    pub table: String,
    /// Store every column as declared again.
    #[arg(long)]
    pub plain: bool,
    /// No dictionaries: low-cardinality text keeps its (trimmed) bytes.
    #[arg(long)]
    pub no_dictionary: bool,
    /// Make this BIGINT surrogate key a semantic id (No Bits Left Behind
    /// §4.2): no longer stored, its value the tuple's address (page · 65536 +
    /// slot). Its present values are dropped, and it changes when the tuple
    /// moves; `WHERE col = x` reads one tuple, without an index.
    #[arg(long, value_name = "COLUMN")]
    pub semantic_id: Option<String>,
    /// Convert the table: rows (heap pages) or columns (Parquet row
    /// groups; the columns a query needs are all it reads). A columnar
    /// table asked for columns again merges its delta, the rows inserted
    /// since, into new column files.
    #[arg(long, value_name = "rows|columns", conflicts_with_all = ["plain", "no_dictionary", "semantic_id"])]
    pub format: Option<strata_columns::Format>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cli: &Global, a: &CompactArgs) -> Result<()> {
    let db = open_db(cli, false)?;
    if let Some(format) = a.format {
        let rep = {
            let bars = Bars::new();
            strata_columns::rewrite(&db, &a.table, format, &bars)?
        };
        if a.json {
            println!(
                "{}",
                serde_json::json!({
                    "table": rep.table,
                    "format": rep.format.to_string(),
                    "rows": rep.rows,
                    "heap_pages_before": rep.heap_pages_before,
                    "column_bytes_before": rep.column_bytes_before,
                    "heap_pages_after": rep.heap_pages_after,
                    "column_bytes_after": rep.column_bytes_after,
                })
            );
        } else {
            println!("{}", rewrite_text(&rep));
        }
        return Ok(());
    }
    let opts = CompactOptions {
        plain: a.plain,
        no_dictionary: a.no_dictionary,
        semantic_id: a.semantic_id.clone(),
    };
    let rep = {
        let bars = Bars::new();
        db.compact(&a.table, &opts, &bars)?
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rep)?);
    } else {
        print!("{}", text(&rep));
    }
    Ok(())
}

/// `--compact` of `strata load` and `strata gen`: compacts `table` just
/// loaded and prints one line.
pub fn after_load(db: &strata_storage::Database, table: &str) -> Result<()> {
    let r = {
        let bars = Bars::new();
        db.compact(table, &CompactOptions::default(), &bars)?
    };
    let changed = r.columns.iter().filter(|c| c.before != c.after).count();
    println!(
        "compacted {}: heap {} -> {} pages ({:.1}%), {changed} of {} columns narrower (strata info lists them)",
        r.table,
        r.pages_before,
        r.pages_after,
        100.0 * r.pages_after as f64 / r.pages_before.max(1) as f64,
        r.columns.len()
    );
    Ok(())
}

/// `--table-format columns` of `strata load` and `strata gen tpch`:
/// converts `table` just loaded to columns and prints one line.
pub fn to_columns_after_load(db: &strata_storage::Database, table: &str) -> Result<()> {
    let r = {
        let bars = Bars::new();
        strata_columns::rewrite(db, table, strata_columns::Format::Columns, &bars)?
    };
    println!("{}", rewrite_text(&r));
    Ok(())
}

/// A conversion's report as one line.
fn rewrite_text(r: &strata_columns::RewriteReport) -> String {
    let page = strata_storage::page::PAGE_SIZE as u64;
    let before = r.heap_pages_before * page + r.column_bytes_before;
    let after = r.heap_pages_after * page + r.column_bytes_after;
    format!(
        "table {}: {} rows now in {}; {:.1} MiB -> {:.1} MiB ({:.1}%)",
        r.table,
        r.rows,
        r.format,
        before as f64 / 1048576.0,
        after as f64 / 1048576.0,
        100.0 * after as f64 / before.max(1) as f64
    )
}

/// The report as text.
pub fn text(r: &CompactReport) -> String {
    let share = if r.pages_before > 0 {
        100.0 * r.pages_after as f64 / r.pages_before as f64
    } else {
        100.0
    };
    let mut s = format!(
        "table {}: {} rows rewritten; heap {} -> {} pages ({share:.1}%); indexes rebuilt\n",
        r.table, r.rows, r.pages_before, r.pages_after
    );
    for c in &r.columns {
        let mark = if c.before == c.after { " " } else { "*" };
        s += &format!(
            "{mark} {:<20} {:<14} {}\n",
            c.column,
            c.declared,
            c.after.describe()
        );
    }
    if r.columns
        .iter()
        .any(|c| c.after == strata_storage::row::encoding::Encoding::Address && c.before != c.after)
    {
        s += "  a semantic id's values are now the tuples' addresses (the old values are gone)\n";
    }
    s += "  values an encoding cannot hold are stored wide in their row; another compact re-chooses\n";
    s
}
