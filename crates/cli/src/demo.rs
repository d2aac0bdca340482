//! `strata demo`: the README's first command.

use anyhow::{Result, bail};
use strata_storage::Database;

use crate::context::{Global, db_options, open_db};

/// The README's first command: builds a database, checks it, and shows what a full
/// scan and an index scan each cost for the same range query, cold.
pub fn run(cli: &Global, rows: u64, repeat: usize) -> Result<()> {
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
            compact: false,
            table_format: None,
        };
        crate::generate::run(cli, &args)?;
    }
    println!();
    crate::inspect::info(cli, Some("microbench"), false)?;
    println!();
    crate::inspect::check(cli)?;
    println!();
    // The same query through each access path, cold (a fresh pool each time),
    // round-robin over the repeats so that every path sees the same machine.
    let hi = 1000;
    let pred = format!("c2 >= 0 AND c2 < {hi}");
    let repeat = repeat.max(1);
    println!(
        "query: SELECT * FROM microbench WHERE {pred}   (about 1% of rows), cold{}",
        if repeat > 1 {
            format!(", medians of {repeat} runs")
        } else {
            String::new()
        }
    );
    const PATHS: [&str; 4] = ["full", "index", "sort", "smooth"];
    let mut runs: Vec<Vec<strata_access::ScanOutcome>> = vec![Vec::new(); PATHS.len()];
    let mut device = String::new();
    for _ in 0..repeat {
        for (i, path) in PATHS.iter().enumerate() {
            let db = open_db(cli, true)?;
            let args = crate::scan::ScanArgs::for_demo("microbench", &pred, path);
            let spec = crate::scan::scan_spec(&db, &args)?;
            let choice =
                crate::scan::path_choice(&args, &db, strata_access::PageCosts::modeled(&db))?;
            runs[i].push(strata_access::run_scan(
                spec,
                &choice,
                &strata_access::SortOptions::default(),
                |_| {},
            )?);
            device = db.device().describe();
        }
    }
    let mut medians = Vec::new();
    for (path, outs) in PATHS.iter().zip(&runs) {
        if outs.windows(2).any(|w| w[0].rows != w[1].rows) {
            bail!("{path} returned different rows in different runs");
        }
        let mut walls: Vec<f64> = outs.iter().map(|o| o.wall_ms).collect();
        walls.sort_by(f64::total_cmp);
        let wall = walls[walls.len() / 2];
        let out = &outs[0];
        let io = &out.io;
        // Modeled time is the same in every run: it depends on the requests only.
        let time = if io.modeled_ns > 0 {
            io.modeled_ms()
        } else {
            wall
        };
        medians.push(time);
        println!(
            "  {:<7} {:>7} rows {:>9.1} ms{}  {:>6} read requests ({:>5} random) {:>6} pages",
            path,
            out.rows,
            wall,
            if io.modeled_ns > 0 {
                format!(" (modeled {:>9.1} ms)", io.modeled_ms())
            } else {
                String::new()
            },
            io.read_requests,
            io.random_reads,
            io.pages_read
        );
        if *path == "full" {
            println!("          on {device}");
        }
    }
    let rows: Vec<u64> = runs.iter().map(|o| o[0].rows).collect();
    if rows.windows(2).any(|w| w[0] != w[1]) {
        bail!("the access paths disagree on the rows: {rows:?}");
    }
    let (best, best_path) = medians[..3]
        .iter()
        .zip(PATHS)
        .min_by(|a, b| a.0.total_cmp(b.0))
        .expect("three paths");
    println!(
        "  Smooth Scan / best of full, index and sort ({best_path}): {:.2}x",
        medians[3] / best
    );
    println!(
        "\nSmooth Scan needs no estimate: it starts like an index scan and morphs towards a full scan as it sees more\nqualifying rows. Try `strata --device hdd demo` (a modeled disk) and `strata scan microbench --where \"c2 < 50000\"`."
    );
    Ok(())
}
