//! `strata csd cost`: the storage cost of tier mixes and the saving of a
//! CSD as the capacity tier (Skipper §2–3.1: Table 1, Fig. 2, Fig. 3). The
//! arithmetic is in `strata_csd::cost`; this prints it.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use strata_csd::cost::{CostInput, PAPER_FIG3, parse_csd_prices};

use crate::context::usage;

#[derive(Args)]
pub struct CostArgs {
    /// CSD prices for Fig. 3, $/GB, comma-separated (the paper: ArcticBlue
    /// 0.1, tape's 0.2, a worst case 1).
    #[arg(long, value_name = "P,P,…")]
    pub csd_price: Option<String>,
    /// A JSON file over the paper's input: {"prices": {"device": $/GB, …}
    /// (merged), "mixes": [{"name": …, "fractions": {"device": f, …}}, …],
    /// "capacity_tb": 100, "csd_prices": [0.1, …], "replaced": ["hdd-7.2k",
    /// "tape"]}.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Print JSON (table1, fig2, fig3) instead of tables.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &CostArgs) -> Result<()> {
    let mut input = match &a.prices {
        Some(path) => CostInput::load(path).map_err(|e| usage(e.to_string()))?,
        None => CostInput::paper(),
    };
    if let Some(p) = &a.csd_price {
        input.csd_prices = parse_csd_prices(p).map_err(|e| usage(e.to_string()))?;
    }
    input.check().map_err(|e| usage(e.to_string()))?;
    let fig2 = input.fig2();
    let fig3 = input.fig3();
    if a.json {
        let doc = serde_json::json!({ "table1": input, "fig2": fig2, "fig3": fig3 });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    // dearest first: Table 1's order (SSD, 15k, 7.2k, tape)
    let mut devices: Vec<&String> = input.prices.keys().collect();
    devices.sort_by(|a, b| input.prices[*b].total_cmp(&input.prices[*a]).then(a.cmp(b)));
    println!("Table 1: $/GB and the fraction of data per device");
    print!("{:<12}", "");
    for d in &devices {
        print!("{:>10}", d);
    }
    println!();
    print!("{:<12}", "$/GB");
    for d in &devices {
        print!("{:>10}", input.prices[*d]);
    }
    println!();
    for m in &input.mixes {
        print!("{:<12}", m.name);
        for d in &devices {
            match m.fractions.get(*d) {
                Some(f) => print!("{:>9.1}%", f * 100.0),
                None => print!("{:>10}", "-"),
            }
        }
        println!();
    }
    println!();
    println!(
        "Fig. 2: cost of a {} TB database (1 TB = 1000 GB)",
        input.capacity_tb
    );
    println!(
        "{:<12}{:>6}{:>10}{:>14}{:>12}",
        "strategy", "tiers", "$/GB", "total $", "vs cheapest"
    );
    let cheapest = fig2.iter().map(|r| r.per_gb).fold(f64::INFINITY, f64::min);
    for r in &fig2 {
        println!(
            "{:<12}{:>6}{:>10.4}{:>14.0}{:>11.2}x",
            r.strategy,
            r.tiers,
            r.per_gb,
            r.total_usd,
            r.per_gb / cheapest
        );
    }
    println!();
    println!(
        "Fig. 3: a CSD replaces {} (it takes their fractions)",
        input.replaced.join(" + ")
    );
    println!(
        "{:<12}{:>8}{:>10}{:>12}{:>12}{:>10}{:>8}",
        "strategy", "tiers", "CSD $/GB", "before $/GB", "after $/GB", "saving", "paper"
    );
    for r in &fig3 {
        let paper = PAPER_FIG3
            .iter()
            .find(|(s, p, _)| *s == r.strategy && *p == r.csd_price)
            .filter(|_| a.prices.is_none())
            .map_or("-".to_string(), |(_, _, x)| format!("{x:.2}x"));
        println!(
            "{:<12}{:>8}{:>10}{:>12.4}{:>12.4}{:>9.3}x{:>8}",
            r.strategy,
            format!("{}→{}", r.tiers_before, r.tiers_after),
            r.csd_price,
            r.before_per_gb,
            r.after_per_gb,
            r.saving,
            paper
        );
    }
    if fig3.is_empty() {
        println!("(no mix holds all of {})", input.replaced.join(", "));
    } else if a.prices.is_none() {
        println!(
            "(the paper's savings are these ratios truncated to two decimals: it prints 1.6367 as 1.63, 1.2496 as 1.24)"
        );
    }
    Ok(())
}
