//! Draws the kind of figure the Smooth Scan experiments make (time against
//! selectivity on log axes, with an SLA bound) and a grouped bar chart, so a
//! change to the plot code can be looked at before any experiment runs.
//!
//! `cargo run -p strata-bench --example plot_demo -- /tmp/plot_demo`
//! writes `/tmp/plot_demo_lines.{svg,png}` and `/tmp/plot_demo_bars.{svg,png}`.

use strata_bench::{Axis, Plot};

fn main() -> std::io::Result<()> {
    let stem = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/plot_demo".into());
    let sel = [0.001, 0.01, 0.1, 1.0, 10.0, 20.0, 50.0, 100.0];
    // Index scan: one random page per row; smooth scan: bounded by a full scan.
    let index: Vec<(f64, f64)> = sel.iter().map(|&s| (s, 0.5 + s * 120.0)).collect();
    let smooth: Vec<(f64, f64)> = sel
        .iter()
        .map(|&s| (s, 0.6 + (s * 60.0).min(1400.0 + s * 2.0)))
        .collect();
    let full: Vec<(f64, f64)> = sel.iter().map(|&s| (s, 1300.0 + s * 1.5)).collect();
    Plot::lines(
        "Q1: execution time vs selectivity (HDD model)",
        Axis::log10("selectivity (%)"),
        Axis::log10("modeled time (ms)"),
    )
    .series("Index Scan", index)
    .series("Smooth Scan", smooth)
    .series("Full Scan", full)
    .hline("SLA: 2x full scan", 2800.0)
    .write(format!("{stem}_lines"))?;

    Plot::bars(
        "I/O requests by access path",
        "selectivity (%)",
        ["0.01", "1", "10", "100"],
        Axis::log10("I/O requests"),
    )
    .bar_series("Full Scan", [1200.0, 1200.0, 1200.0, 1200.0])
    .bar_series("Index Scan", [8.0, 9500.0, 95000.0, 950000.0])
    .bar_series("Smooth Scan", [8.0, 900.0, 1300.0, 1250.0])
    .write(format!("{stem}_bars"))
}
