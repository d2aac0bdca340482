//! `strata scan`: one query through one access path, reported like EXPLAIN
//! ANALYZE — rows, pages, requests, sequential/random, bytes, modeled and wall
//! time, and the operator's own decisions (Smooth Scan's mode changes and region
//! sizes, the Result Cache's memory and spills).

use anyhow::{Result, bail};
use clap::Args;
use strata_access::report::Mode;
use strata_access::{
    OrderedPlan, PageCosts, PathChoice, Policy, Predicate, ScanSpec, SmoothOptions, SortOptions,
    Trigger, run_ordered, run_scan,
};
use strata_storage::Database;
use strata_storage::util::{format_bytes, parse_size};

use crate::context::Global;
use crate::context::{db_options, usage};

#[derive(Args, Clone)]
pub struct ScanArgs {
    pub table: String,
    /// Conjunctive predicate, e.g. "c2 >= 0 AND c2 < 500".
    #[arg(long = "where", default_value = "")]
    pub predicate: String,
    /// Produce rows ordered by this (indexed) column.
    #[arg(long)]
    pub order_by: Option<String>,
    /// smooth, full, index, sort, switch, or index-cache (the index scan
    /// answered from the index's leaf cache: every column of --columns and of
    /// the predicate must be a key or cached column of the index).
    #[arg(long, default_value = "smooth")]
    pub path: String,
    /// Columns to project (--path index-cache; default: the index's key and
    /// cached columns), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Runs of the scan in this process (--path index-cache: caches start
    /// empty at every open, so the first run fills and later ones hit).
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Smooth Scan policy: page-order (unordered output; ordered output and the
    /// optimizer/sla triggers use cost-aware regions), cost, greedy, si, elastic.
    #[arg(long, default_value = "page-order")]
    pub policy: String,
    /// Smooth Scan trigger: eager, optimizer, sla.
    #[arg(long, default_value = "eager")]
    pub trigger: String,
    /// The optimizer's row estimate (optimizer trigger, switch scan).
    #[arg(long)]
    pub estimate: Option<u64>,
    /// Time bound in ms (SLA trigger).
    #[arg(long)]
    pub sla_ms: Option<f64>,
    /// Largest Smooth Scan region in pages.
    #[arg(long, default_value_t = 2000)]
    pub region_cap: u32,
    /// Furthest mode: 1, 2 or 2+.
    #[arg(long, default_value = "2+")]
    pub max_mode: String,
    /// Grow the region when local selectivity >= GROW x global.
    #[arg(long, default_value_t = 1.0)]
    pub grow: f64,
    /// Elastic shrinks the region by this factor...
    #[arg(long, default_value_t = 2)]
    pub shrink: u32,
    /// ...when local selectivity < SHRINK_BELOW x global.
    #[arg(long, default_value_t = 1.0)]
    pub shrink_below: f64,
    /// Smooth Scan regions read together (1 = the paper's synchronous operator,
    /// 0 = as many as the device serves at once).
    #[arg(long, default_value_t = 0)]
    pub io_depth: usize,
    /// Result Cache memory budget (ordered Smooth Scan).
    #[arg(long, default_value = "64MiB")]
    pub result_cache: String,
    /// An ORDER BY plan of the flash paper instead of --path: idx, sidx+ps,
    /// sidx+es, fts+ps or fts+es (orders by the predicate's indexed column, or
    /// --order-by).
    #[arg(long)]
    pub plan: Option<String>,
    /// Sort memory of --plan's external merge sort or partitioned sort, and of
    /// the partitioned sort that orders a full, sort or switch scan for --order-by.
    #[arg(long, default_value = "32MiB")]
    pub sort_memory: String,
    /// Requests the sorted index scan of --plan keeps in flight.
    #[arg(long, default_value_t = strata_access::sort_scan::DEPTH)]
    pub sidx_depth: usize,
    /// Write an I/O trace (every request's address, size, read/write, modeled
    /// and wall start/end) to this CSV. On the real device both clocks are the
    /// wall clock: when each request (or its batch) was issued and completed.
    #[arg(long)]
    pub trace: Option<std::path::PathBuf>,
    /// Print the first N rows.
    #[arg(long, default_value_t = 0)]
    pub show: usize,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

impl ScanArgs {
    /// The flags `strata scan TABLE --where PRED --path PATH` would give.
    pub fn for_demo(table: &str, predicate: &str, path: &str) -> ScanArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            args: ScanArgs,
        }
        Wrap::parse_from(["scan", table, "--where", predicate, "--path", path]).args
    }
}

/// Builds the access path choice from the flags (also used by the benchmarks).
pub fn path_choice(a: &ScanArgs, db: &Database, modeled: Option<PageCosts>) -> Result<PathChoice> {
    Ok(match a.path.as_str() {
        "full" => PathChoice::Full,
        "index" => PathChoice::Index,
        "sort" => PathChoice::Sort,
        "switch" => PathChoice::Switch {
            estimate: a
                .estimate
                .ok_or_else(|| usage("--path switch needs --estimate N"))?,
        },
        "smooth" => {
            let policy: Policy = a.policy.parse().map_err(usage)?;
            let trigger = match a.trigger.as_str() {
                "eager" => Trigger::Eager,
                "optimizer" => Trigger::Optimizer {
                    estimate: a
                        .estimate
                        .ok_or_else(|| usage("--trigger optimizer needs --estimate N"))?,
                },
                "sla" => Trigger::Sla {
                    bound_ms: a
                        .sla_ms
                        .ok_or_else(|| usage("--trigger sla needs --sla-ms N"))?,
                },
                t => {
                    return Err(usage(format!(
                        "unknown trigger '{t}' (eager, optimizer, sla)"
                    )));
                }
            };
            let max_mode = match a.max_mode.as_str() {
                "1" => Mode::PageProbe,
                "2" => Mode::Flattening,
                "2+" => Mode::Expansion,
                m => return Err(usage(format!("unknown mode '{m}' (1, 2, 2+)"))),
            };
            PathChoice::Smooth(SmoothOptions {
                policy,
                trigger,
                max_region_pages: a.region_cap,
                max_mode,
                grow: a.grow,
                shrink: a.shrink,
                shrink_below: a.shrink_below,
                result_cache_bytes: parse_size(&a.result_cache).map_err(usage)? as usize,
                temp_dir: db.dir().join("tmp"),
                page_costs: modeled.unwrap_or_default(),
                modeled_clock: modeled.is_some(),
                io_depth: a.io_depth,
            })
        }
        p => {
            return Err(usage(format!(
                "unknown access path '{p}' (smooth, full, index, sort, switch)"
            )));
        }
    })
}

/// The scan spec for the flags: predicate, index and order.
pub fn scan_spec(db: &Database, a: &ScanArgs) -> Result<ScanSpec> {
    let table = db.table(&a.table)?;
    let predicate = Predicate::parse(table.schema(), &a.predicate)?;
    if let Some(c) = predicate
        .columns()
        .into_iter()
        .find(|c| table.side_columns().contains(c))
    {
        return Err(usage(format!(
            "column {} of table {} is in its side table (strata split): the access paths compare the table's own rows; strata sql filters on it",
            table.schema().columns[c].name,
            a.table
        )));
    }
    let mut spec = ScanSpec::new(table.clone(), predicate);
    if let Some(col) = &a.order_by {
        let c = table.column(col)?;
        let pos = table.indexes().iter().position(|i| i.key_cols[0] == c);
        match pos {
            Some(p) => spec.index = Some(p),
            None => bail!(usage(format!(
                "ORDER BY {col}: table {} has no index on {col}",
                a.table
            ))),
        }
        spec.ordered = true;
    }
    if a.plan.is_some() && spec.index.is_none() {
        return Err(usage(format!(
            "--plan needs an index on the ORDER BY column (--order-by) or on a column of the predicate; table {} has indexes on: {}",
            a.table,
            indexed_columns(&table)
        )));
    }
    if spec.index.is_none() && a.path != "full" && a.plan.is_none() {
        return Err(usage(format!(
            "--path {} needs an index on a column of the predicate; table {} has indexes on: {}",
            a.path,
            a.table,
            indexed_columns(&table)
        )));
    }
    Ok(spec)
}

pub fn run(cli: &Global, a: &ScanArgs) -> Result<()> {
    let db = Database::open(&cli.db, db_options(cli, true)?)?;
    let spec = scan_spec(&db, a)?;
    if a.path == "index-cache" {
        let schema = spec.table.schema().clone();
        let ix = spec.index()?;
        // The projected columns' types, to print values as their columns do.
        let types: Vec<strata_storage::row::DataType> = match &a.columns {
            Some(list) => list
                .iter()
                .filter_map(|c| schema.index_of(c.trim()))
                .map(|c| schema.columns[c].ty)
                .collect(),
            None => ix
                .key_cols
                .iter()
                .chain(ix.cached_fields().iter().flat_map(|f| f.cols.iter()))
                .map(|&c| schema.columns[c].ty)
                .collect(),
        };
        let mut shown = 0;
        let report =
            crate::scan_cached::run_cached(&db, a.columns.as_deref(), a.runs, &spec, |row| {
                if shown < a.show {
                    let cells: Vec<String> = row
                        .iter()
                        .zip(&types)
                        .map(|(v, ty)| v.display(ty))
                        .collect();
                    println!("{}", cells.join(" | "));
                    shown += 1;
                }
            })?;
        if a.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            crate::scan_cached::print(&report, &a.predicate);
        }
        return Ok(());
    }
    let plan: Option<OrderedPlan> = match &a.plan {
        Some(p) => Some(p.parse::<OrderedPlan>().map_err(|e| usage(e.to_string()))?),
        None => None,
    };
    let choice = if plan.is_some() {
        PathChoice::Full
    } else {
        path_choice(a, &db, PageCosts::modeled(&db))?
    };
    let sort = SortOptions {
        memory_bytes: parse_size(&a.sort_memory).map_err(usage)? as usize,
        temp_dir: db.dir().join("tmp"),
        sidx_depth: a.sidx_depth.max(1),
        tuple_estimate: None,
        final_sort: strata_access::FinalSort::Partitioned,
    };
    let recorder = match &a.trace {
        Some(_) => Some(
            db.device()
                .trace()
                .ok_or_else(|| usage("this device cannot record an I/O trace"))?,
        ),
        None => None,
    };
    if let Some(r) = recorder {
        r.start();
    }
    let table = spec.table.clone();
    let schema = spec.table.schema().clone();
    let mut shown = 0;
    let mut lost = None;
    let sink = |b: &strata_access::TupleBatch| {
        for (tid, t) in b.iter() {
            if shown < a.show && lost.is_none() {
                let mut row = table.layout().decode(t, tid);
                // A split table's side columns, from the side rows.
                if let Err(e) = table.join_side(t, tid, &mut row) {
                    lost = Some(e);
                    continue;
                }
                let cells: Vec<String> = row
                    .iter()
                    .zip(&schema.columns)
                    .map(|(v, c)| v.display(&c.ty))
                    .collect();
                println!("{}", cells.join(" | "));
                shown += 1;
            }
        }
    };
    let outcome = match plan {
        Some(p) => run_ordered(spec.clone().ordered(true), p, &sort, sink)?,
        None => run_scan(spec.clone(), &choice, &sort, sink)?,
    };
    if let Some(e) = lost {
        return Err(e.into());
    }
    if let (Some(r), Some(path)) = (recorder, &a.trace) {
        let trace = r.take();
        trace.write_csv(path)?;
        eprintln!(
            "trace: {} requests written to {}",
            trace.events.len(),
            path.display()
        );
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&outcome)?);
        return Ok(());
    }
    let r = &outcome.report;
    let io = &outcome.io;
    // What ran: the index only when the path walked it (a full scan with
    // an index on the predicate does not), and where a cold table's pages
    // came from.
    let walked = a.plan.is_some() || !matches!(choice, PathChoice::Full);
    let index = spec
        .index
        .filter(|_| walked)
        .map(|i| spec.table.indexes()[i].def.name.clone());
    println!(
        "{} scan on {}{}{}  (rows={})",
        r.path,
        a.table,
        index.map(|i| format!(" using {i}")).unwrap_or_default(),
        if spec.table.is_cold() {
            " from the cold tier (whole objects pulled through the local cache)"
        } else {
            ""
        },
        outcome.rows
    );
    if !a.predicate.is_empty() {
        println!("  predicate: {}", a.predicate);
    }
    if let Some(c) = &a.order_by {
        println!("  order by: {c}");
    }
    if spec.table.is_cold() {
        // What pulling the table from the cold storage device cost
        // (Skipper's pull-based baseline): GETs, cache hits, waiting.
        println!("  {}", crate::context::cold_tier(cli)?.counters());
    }
    println!("  index entries read: {}", r.index_entries);
    println!(
        "  heap pages examined: {} of {}",
        r.heap_pages,
        spec.table.heap().num_pages()
    );
    println!(
        "  I/O: {} read requests ({} sequential, {} random), {} pages, {}; {} pages written",
        io.read_requests,
        io.sequential_reads,
        io.random_reads,
        io.pages_read,
        format_bytes(io.bytes_read()),
        io.pages_written
    );
    if io.modeled_ns > 0 {
        println!(
            "  modeled time: {:.3} ms on {}",
            io.modeled_ms(),
            db.device().describe()
        );
    }
    println!(
        "  wall time: {:.3} ms ({})",
        outcome.wall_ms,
        db.device().describe()
    );
    if !r.mode_changes.is_empty() {
        println!("  mode changes ({}):", r.mode_changes.len());
        for m in r.mode_changes.iter().take(12) {
            println!(
                "    at row {}: mode {} -> {}",
                m.at_row,
                m.from.label(),
                m.to.label()
            );
        }
        if r.mode_changes.len() > 12 {
            println!("    ... {} more", r.mode_changes.len() - 12);
        }
    }
    if !r.regions.is_empty() {
        let hist: Vec<String> = r
            .regions
            .iter()
            .take(24)
            .map(|(_, s)| s.to_string())
            .collect();
        println!(
            "  region sizes (pages): {}{}",
            hist.join(" -> "),
            if r.regions.len() > 24 {
                format!(" ... ({} changes)", r.regions.len())
            } else {
                String::new()
            }
        );
    }
    if r.page_cache_bytes > 0 {
        println!(
            "  Page-ID cache: {} (1 bit per heap page); heap pages read twice: {}",
            format_bytes(r.page_cache_bytes as u64),
            r.reread_pages
        );
    }
    if r.swept_pages > 0 {
        println!(
            "  swept in page order: {} of {} heap pages",
            r.swept_pages, r.heap_pages
        );
    }
    if r.read_ahead_streams > 0 {
        println!("  read-ahead streams: {}", r.read_ahead_streams);
    }
    if let Some(c) = &r.result_cache {
        println!(
            "  result cache: budget {}, peak {}, {} partitions, {} spilled ({} tuples, {} written)",
            format_bytes(c.budget_bytes as u64),
            format_bytes(c.peak_bytes as u64),
            c.partitions,
            c.spilled_partitions,
            c.spilled_tuples,
            format_bytes(c.spill_bytes_written)
        );
        if c.spill_merges > 0 || c.compactions > 0 {
            println!(
                "    {} merges of spill runs, {} compactions of the current partition",
                c.spill_merges, c.compactions
            );
        }
    }
    if let Some(s) = &r.sort {
        println!(
            "  {}: memory {} (peak {}), {} records ({})",
            s.algorithm,
            format_bytes(s.budget_bytes as u64),
            format_bytes(s.peak_bytes as u64),
            s.records,
            format_bytes(s.record_bytes)
        );
        if s.partitions > 0 {
            println!(
                "    partitions: {} ({} split by tuple id, {} fell back to an external sort)",
                s.partitions, s.partitions_split, s.fallbacks
            );
        }
        if s.runs > 0 || s.algorithm.starts_with("external") {
            println!(
                "    runs: {}, fan-in {}, merge passes {} (ceil(log_fan-in runs) = {})",
                s.runs, s.fan_in, s.merge_passes, s.theory_passes
            );
        }
        println!(
            "    temporary I/O: {} pages written in {} requests, {} pages read in {} requests; record bytes written {}, read {}",
            s.pages_written,
            s.write_requests,
            s.pages_read,
            s.read_requests,
            format_bytes(s.record_bytes_written),
            format_bytes(s.record_bytes_read)
        );
    }
    for n in &r.notes {
        println!("  note: {n}");
    }
    Ok(())
}

/// The columns of each index of `table`, for messages: `c2; a,b`.
fn indexed_columns(table: &strata_storage::Table) -> String {
    table
        .indexes()
        .iter()
        .map(|i| i.def.columns.join(","))
        .collect::<Vec<_>>()
        .join("; ")
}
