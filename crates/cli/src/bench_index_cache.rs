//! `strata bench index-cache <figure>`: No Bits Left Behind §2.1's index
//! caches (the work is in `strata_bench::nblb::index_cache`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use strata_bench::nblb::index_cache::{FIGURES, Fig2aOptions, FillOptions, run_fig2a, run_fill};
use strata_bench::nblb::index_cache_2b::Fig2bOptions;
use strata_bench::nblb::index_cache_2b_figure::run_fig2b;
use strata_bench::nblb::index_cache_2c::{Fig2cOptions, run_fig2c};

use crate::context::{Global, usage};

#[derive(Args)]
pub struct IndexCacheArgs {
    /// A figure (2a, 2c, fill) or `all` of them; or `2b`: lookup throughput
    /// against the cache's and the pool's hit rates on a device (a table of
    /// --heap-rows in --bench-db); or `wiki`: a Wikipedia-like page table,
    /// strata's index cache beside PostgreSQL's covering index (it needs
    /// PostgreSQL, scripts/setup_postgres.sh). `all` runs neither of the last
    /// two: they build large tables or need a server.
    pub figure: String,
    /// wiki: table sizes (rows).
    #[arg(long, value_delimiter = ',', default_value = "100000,1000000")]
    pub rows: Vec<u64>,
    /// wiki: leaf fills of strata's cached indexes.
    #[arg(long, value_delimiter = ',', default_value = "0.9,0.68")]
    pub leaf_fills: Vec<f64>,
    /// wiki: lookups that fill the cache before the measured runs.
    #[arg(long, default_value_t = 1_000_000)]
    pub warmup: u64,
    /// wiki: PostgreSQL's shared_buffers (default: twice strata's table and
    /// indexes, at least 256MB).
    #[arg(long)]
    pub shared_buffers: Option<String>,
    /// wiki: strata only, no PostgreSQL.
    #[arg(long)]
    pub no_postgres: bool,
    /// Entries of the index (the table's items).
    #[arg(long, default_value_t = 100_000)]
    pub items: u64,
    /// Lookups per point.
    #[arg(long, default_value_t = 100_000)]
    pub lookups: u64,
    /// Cache capacities to aim at, in percent of the items (the leaf fill
    /// that leaves them is computed; the measured capacity is plotted).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "5,10,15,20,25,30,40,50,70,100"
    )]
    pub capacities: Vec<f64>,
    /// Zipf exponents; 0 is the uniform workload.
    #[arg(long, value_delimiter = ',', default_value = "0.5,0.8,1.0,1.2,0")]
    pub exponents: Vec<f64>,
    /// Leaf fills of the `fill` study.
    #[arg(long, value_delimiter = ',', default_value = "0.5,0.6,0.7,0.8,0.9,1.0")]
    pub fills: Vec<f64>,
    #[arg(long, default_value_t = 16)]
    pub seed: u64,
    /// Passes per variant of 2c, runs per workload of wiki (median reported).
    #[arg(long, default_value_t = 5)]
    pub passes: usize,
    /// Where results go (default: a new ./strata-bench-<time>/index-cache).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// 2b: rows of its table (about 200 bytes each).
    #[arg(long, default_value_t = 2_000_000)]
    pub heap_rows: u64,
    /// 2b: devices, comma-separated: real (direct I/O), hdd, ssd (modeled).
    #[arg(long, default_value = "real,ssd")]
    pub devices: String,
    /// 2b: index-cache hit rates (%), the x axis.
    #[arg(long, value_delimiter = ',', default_value = "0,25,50,75,90,95,99,100")]
    pub hit_rates: Vec<f64>,
    /// 2b: buffer-pool hit rates (%) of the misses' heap pages, the lines.
    #[arg(long, value_delimiter = ',', default_value = "0,10,25,50,75,100")]
    pub pool_hit_rates: Vec<f64>,
    /// 2b: cache hit rates (%) at which the pool line of 10% (the issue's
    /// setting, a pool holding 10% of the heap) also runs the governed lookup
    /// (SQL's default, `strata.index_cache = auto`).
    #[arg(long, value_delimiter = ',', default_value = "0,90,99")]
    pub auto_hit_rates: Vec<f64>,
    /// 2b: heap accesses per point (the lookups are at most --lookups); 4000
    /// average over the real disk's swings (with 2000, single opens' speedups
    /// at 90% hits ranged from 5.9x to 9.3x).
    #[arg(long, default_value_t = 4_000)]
    pub misses: u64,
    /// 2b: opens per device and line (median reported).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// 2b: the database holding its table (kept between runs; default: the
    /// global --db when given, else strata-index-cache.db).
    #[arg(long)]
    pub bench_db: Option<PathBuf>,
}

pub fn run(cli: &Global, a: &IndexCacheArgs) -> Result<()> {
    if a.figure == "wiki" {
        return wiki(a);
    }
    let known: Vec<&str> = FIGURES.iter().copied().chain(["2b"]).collect();
    let figures: Vec<String> = match a.figure.as_str() {
        "all" => FIGURES.iter().map(|f| f.to_string()).collect(),
        f if known.contains(&f) => vec![f.to_string()],
        f => {
            return Err(usage(format!(
                "unknown figure {f}: index-cache has {}, wiki (or all)",
                known.join(", ")
            )));
        }
    };
    if a.items == 0 || a.items > u32::MAX as u64 / 2 || a.lookups == 0 {
        return Err(usage(
            "--items and --lookups must be positive (items < 2^31)",
        ));
    }
    if a.capacities.iter().any(|c| !(*c > 0.0 && *c <= 400.0)) {
        return Err(usage("--capacities: percentages in (0, 400]"));
    }
    if a.fills.iter().any(|f| !(0.1..=1.0).contains(f)) {
        return Err(usage("--fills: leaf fills in 0.1..=1.0"));
    }
    if a.exponents.iter().any(|e| !(0.0..=4.0).contains(e)) {
        return Err(usage("--exponents: zipf exponents in 0..=4"));
    }
    let tmp = std::env::temp_dir().join(format!("strata-index-cache-{}", std::process::id()));
    let mut c = Fig2cOptions {
        items: a.items,
        lookups: a.lookups.min(a.items),
        passes: a.passes,
        out: PathBuf::new(),
        tmp: tmp.clone(),
        seed: a.seed,
    };
    let mut o = Fig2aOptions {
        items: a.items,
        lookups: a.lookups,
        capacities: a.capacities.clone(),
        exponents: a.exponents.clone(),
        out: PathBuf::new(),
        tmp,
        seed: a.seed,
    };
    let mut fill = FillOptions {
        items: a.items,
        lookups: a.lookups,
        fills: a.fills.clone(),
        exponents: a.exponents.clone(),
        out: PathBuf::new(),
        tmp: o.tmp.clone(),
        seed: a.seed,
    };
    let bench_db = if figures.iter().any(|f| f == "2b") {
        crate::bench_out::bench_db(cli, a.bench_db.as_deref(), "strata-index-cache.db")
    } else {
        PathBuf::from("strata-index-cache.db")
    };
    let mut b = Fig2bOptions::new(bench_db, PathBuf::new());
    b.rows = a.heap_rows;
    b.devices = crate::bench_smooth::parse_devices(&a.devices)?;
    b.hit_rates = a.hit_rates.clone();
    b.pool_hit_rates = a.pool_hit_rates.clone();
    b.auto_hit_rates = a.auto_hit_rates.clone();
    b.misses = a.misses;
    b.max_lookups = a.lookups.max(a.misses);
    b.rounds = a.rounds;
    b.seed = a.seed;
    b.check().map_err(|e| usage(e.to_string()))?;
    // Checked: now the results directory.
    let out = crate::bench_out::results_dir(a.out.as_deref(), "index-cache")?;
    c.out = out.clone();
    o.out = out.clone();
    fill.out = out.clone();
    b.out = out;
    let done = crate::bench_smooth::run_figures(&figures, &o.out, |f, log| match f {
        "2a" => run_fig2a(&o, log),
        "2b" => run_fig2b(&b, log),
        "fill" => run_fill(&fill, log),
        _ => run_fig2c(&c, log),
    });
    let _ = std::fs::remove_dir_all(&o.tmp);
    done
}

/// `strata bench index-cache wiki` (the work is in
/// `strata_bench::nblb::index_cache_wiki`). `--exponents` defaults to 2a's list
/// there too.
fn wiki(a: &IndexCacheArgs) -> Result<()> {
    let tmp = std::env::temp_dir().join(format!("strata-index-cache-wiki-{}", std::process::id()));
    let mut o = strata_bench::nblb::index_cache_wiki::WikiOptions::new(PathBuf::new(), &tmp);
    o.rows = a.rows.clone();
    o.lookups = a.lookups;
    o.warmup = a.warmup;
    o.runs = a.passes;
    o.exponents = a.exponents.clone();
    o.leaf_fills = a.leaf_fills.clone();
    o.seed = a.seed;
    o.postgres = !a.no_postgres;
    o.shared_buffers = a.shared_buffers.clone();
    o.check().map_err(|e| usage(e.to_string()))?;
    o.out = crate::bench_out::results_dir(a.out.as_deref(), "index-cache")?;
    let done = crate::bench_smooth::run_figures(&["wiki".to_string()], &o.out, |_, log| {
        strata_bench::nblb::index_cache_wiki_run::run_wiki(&o, log)
    });
    let _ = std::fs::remove_dir_all(&tmp);
    done
}
