//! `strata split TABLE --columns a,b`: vertical partitioning (No Bits Left
//! Behind §3.2) — move rarely read columns to the table's side table, so that
//! scans and lookups that do not need them read fewer pages (the work is
//! `strata_storage::maintenance::split`).

use anyhow::{Result, bail};
use clap::Args;
use strata_storage::maintenance::split::SplitReport;

use crate::context::{Global, open_db};
use crate::progress::Bars;

#[derive(Args, Debug)]
pub struct SplitArgs {
    /// The table to rewrite.
    pub table: String,
    /// The columns to store in the side table (comma-separated); the others
    /// go (back) into the table's rows.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "COLUMNS",
        conflicts_with = "merge"
    )]
    pub columns: Vec<String>,
    /// Put every column back into the table's rows and drop the side table.
    #[arg(long)]
    pub merge: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cli: &Global, a: &SplitArgs) -> Result<()> {
    if a.columns.is_empty() && !a.merge {
        bail!("name the columns to move with --columns a,b (or --merge to put them back)");
    }
    let db = open_db(cli, false)?;
    let columns: Vec<String> = a.columns.iter().map(|c| c.trim().to_string()).collect();
    let rep = {
        let bars = Bars::new();
        db.split(&a.table, &columns, &bars)?
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rep)?);
    } else {
        print!("{}", text(&rep));
    }
    Ok(())
}

/// The report as text.
pub fn text(r: &SplitReport) -> String {
    let before = r.pages_before + r.side_pages_before;
    let mut s = format!(
        "table {}: {} rows rewritten; heap {} -> {} pages",
        r.table, r.rows, before, r.pages_after
    );
    if r.side_columns.is_empty() {
        s += " (no side table)\n";
    } else {
        s += &format!(
            ", side table {} pages ({})\n  reads that need none of {} read {:.1}% of the pages they read before\n",
            r.side_pages_after,
            r.side_columns.join(", "),
            r.side_columns.join(", "),
            100.0 * r.pages_after as f64 / before.max(1) as f64
        );
    }
    s
}
