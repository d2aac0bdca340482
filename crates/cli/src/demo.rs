//! `strata demo`: the README's first command.

use anyhow::{Result, bail};
use strata_storage::Database;

use crate::context::{Global, db_options, open_db};

/// The README's first command: builds a database, checks it, and shows what a full
/// scan and an index scan each cost for the same range query, cold.
pub fn run(cli: &Global, rows: u64) -> Result<()> {
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
        let args = crate::generate::GenArgs {
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
        crate::generate::run(cli, &args)?;
    }
    println!();
    crate::inspect::info(cli, Some("microbench"), false)?;
    println!();
    crate::inspect::check(cli)?;
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
