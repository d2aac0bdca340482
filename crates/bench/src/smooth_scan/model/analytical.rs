//! The analytical figures (Fig. 9–12) from the cost model: results, plots,
//! tables and the comparison with the paper's numbers.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use crate::smooth_scan::competitive::{self, FigureData};
use crate::smooth_scan::cost_model::IoCosts;

use crate::report::plot::{Axis, Legend, Plot};
use crate::report::results::{ResultRow, ResultSet};
use crate::report::summary::{Comparison, Summary, num};

/// Where `strata model` writes by default.
pub const DEFAULT_OUT_DIR: &str = "results/smooth-scan";

// ---------------------------------------------------------------------------
// Analytical figures.
// ---------------------------------------------------------------------------

/// The policy a figure is about, for the `variant` column.
fn figure_policy(id: &str) -> &'static str {
    match id {
        "fig9" => "elastic (highest page-miss)",
        "fig10" => "greedy",
        "fig11" => "selectivity-increase",
        "fig12" => "elastic (SI worst case)",
        _ => "model",
    }
}

/// `(device, variant, table pages)` of one series of an analytical figure.
/// Fig. 9 and 10 have one series per device (x = pages); Fig. 11 and 12 one per
/// table size `#P=…`, on §6's HDD.
fn series_labels(fig: &FigureData, series: &str) -> (String, String, Option<f64>) {
    let policy = figure_policy(&fig.id);
    match series {
        "HDD" | "SSD" => (series.to_lowercase(), policy.to_string(), None),
        s => {
            let pages = s.strip_prefix("#P=").and_then(|p| p.parse::<f64>().ok());
            ("hdd".to_string(), format!("{policy}, {s}"), pages)
        }
    }
}

fn io_costs_of(device: &str) -> IoCosts {
    if device == "ssd" {
        IoCosts::SSD
    } else {
        IoCosts::HDD
    }
}

/// One analytical figure as result rows: `figure` its id (`fig9` …), `device`
/// `hdd`/`ssd` (§6's unit costs: random 10 or 2, sequential 1), `variant` the
/// policy (and the table size for Fig. 11/12), `x` the figure's x, the
/// competitive ratio in `modeled_ms` and in the extra column `cr`; extra
/// columns `x_label`, `pages` (the table's pages), `rand_cost`, `seq_cost`.
pub fn figure_results(fig: &FigureData) -> ResultSet {
    let mut set = ResultSet::new();
    for s in &fig.series {
        let (device, variant, pages) = series_labels(fig, &s.name);
        let c = io_costs_of(&device);
        for &(x, y) in &s.points {
            let mut row = ResultRow::new(&fig.id, &device, &variant, x)
                .with("cr", y)
                .with("x_label", &fig.x_label)
                .with("pages", pages.unwrap_or(x))
                .with("rand_cost", c.rand)
                .with("seq_cost", c.seq);
            row.modeled_ms = y;
            set.push(row);
        }
    }
    set
}

/// A short plot title for an analytical figure (the long one is in the
/// markdown).
fn plot_title(fig: &FigureData) -> String {
    match fig.id.as_str() {
        "fig9" => "Fig. 9: Elastic, highest page-miss case".into(),
        "fig10" => "Fig. 10: Greedy, CR vs table size".into(),
        "fig11" => "Fig. 11: Selectivity Increase, CR vs x (HDD)".into(),
        "fig12" => "Fig. 12: Elastic on SI's worst case (HDD)".into(),
        _ => fig.title.clone(),
    }
}

/// The figure as a line plot (log axes where the figure asks for them) with
/// the paper's reference values as dashed lines where it states one.
pub fn figure_plot(fig: &FigureData) -> Plot {
    let axis = |title: &str, log: bool| {
        if log {
            Axis::log10(title)
        } else {
            Axis::linear(title)
        }
    };
    let mut plot = Plot::lines(
        plot_title(fig),
        axis(&fig.x_label, fig.log_x),
        axis(&format!("{} (against the Oracle)", fig.y_label), fig.log_y),
    );
    for s in &fig.series {
        plot = plot.series(s.name.clone(), s.points.iter().copied());
    }
    match fig.id.as_str() {
        "fig9" => plot
            .hline("paper: 2.0001 at 3M pages", 2.0001)
            .legend(Legend::TopRight),
        "fig10" => plot.legend(Legend::TopLeft),
        "fig11" => plot
            .hline("paper: peak ~100 (100K pages)", 100.0)
            .legend(Legend::TopRight),
        "fig12" => plot.hline("CR = 2", 2.0).legend(Legend::TopRight),
        _ => plot,
    }
}

/// A few points of the figure for a terminal table: on a log x axis the
/// decades and the last point, on a linear one the integer `x`. The header is
/// the x label and one column per series; a series without that x shows `-`.
pub fn figure_table(fig: &FigureData) -> (Vec<String>, Vec<Vec<String>>) {
    let keep = |x: f64, last: f64| {
        if fig.log_x {
            let l = x.log10();
            (l - l.round()).abs() < 1e-9 || x == last
        } else {
            x.fract() == 0.0
        }
    };
    let mut xs: Vec<f64> = Vec::new();
    for s in &fig.series {
        let last = s.points.last().map_or(f64::NAN, |p| p.0);
        for &(x, _) in &s.points {
            if keep(x, last) && !xs.contains(&x) {
                xs.push(x);
            }
        }
    }
    xs.sort_by(f64::total_cmp);
    let mut header = vec![fig.x_label.clone()];
    header.extend(fig.series.iter().map(|s| s.name.clone()));
    let rows = xs
        .iter()
        .map(|&x| {
            let mut r = vec![num(x)];
            for s in &fig.series {
                r.push(
                    s.points
                        .iter()
                        .find(|p| p.0 == x)
                        .map_or("-".to_string(), |p| num(p.1)),
                );
            }
            r
        })
        .collect();
    (header, rows)
}

/// A plain-text table with aligned columns (numbers right-aligned), for the
/// terminal.
pub fn text_table(header: &[String], rows: &[Vec<String>]) -> String {
    let ncol = rows.iter().map(Vec::len).fold(header.len(), usize::max);
    let cell = |r: &[String], c: usize| r.get(c).cloned().unwrap_or_default();
    let width: Vec<usize> = (0..ncol)
        .map(|c| {
            rows.iter()
                .map(|r| cell(r, c).chars().count())
                .chain([cell(header, c).chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let numeric = |s: &str| s == "-" || s.trim_end_matches(['x', '%']).parse::<f64>().is_ok();
    let right: Vec<bool> = (0..ncol)
        .map(|c| {
            !rows.is_empty()
                && rows.iter().all(|r| {
                    let v = cell(r, c);
                    v.is_empty() || numeric(&v)
                })
        })
        .collect();
    let mut out = String::new();
    let mut line = |r: &[String]| {
        let cells: Vec<String> = (0..ncol)
            .map(|c| {
                let v = cell(r, c);
                if right[c] {
                    format!("{v:>w$}", w = width[c])
                } else {
                    format!("{v:<w$}", w = width[c])
                }
            })
            .collect();
        let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
    };
    line(header);
    let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
    line(&rule);
    for r in rows {
        line(r);
    }
    out
}

/// Our analytical values beside the numbers the paper states (§6), with a
/// note wherever the formulas as printed do not give the paper's number.
pub fn paper_comparisons() -> Vec<Comparison> {
    let hdd = IoCosts::HDD;
    let ssd = IoCosts::SSD;
    let (si_x, si_cr) = competitive::si_peak(100_000.0, hdd);
    let v100 = competitive::elastic_highest_miss_cr(100.0, hdd);
    let v3m = competitive::elastic_highest_miss_cr(3e6, hdd);
    let e12 = competitive::elastic_si_cr_for_pages(100_000.0, 12.0, hdd).unwrap_or(f64::NAN);
    vec![
        Comparison::new(
            "Fig. 10 Greedy CR, 1K pages, HDD",
            competitive::greedy_cr(1000.0, hdd),
            110.0,
        )
        .note("Eq. 31 as printed; reproduced"),
        Comparison::new(
            "Fig. 10 Greedy CR, 10K pages, HDD",
            competitive::greedy_cr(10_000.0, hdd),
            760.0,
        )
        .note("Eq. 31; reproduced"),
        Comparison::new(
            "Fig. 10 Greedy CR, 1K pages, SSD",
            competitive::greedy_cr(1000.0, ssd),
            100.0,
        )
        .note("paper: \"from 100 to 750\"; reproduced"),
        Comparison::new(
            "Fig. 10 Greedy CR, 10K pages, SSD",
            competitive::greedy_cr(10_000.0, ssd),
            750.0,
        )
        .note("reproduced"),
        Comparison::new(
            "Fig. 11 SI: x at the peak, 100K pages, HDD",
            si_x as f64,
            8.0,
        )
        .note("Eq. 32-36; reproduced"),
        Comparison::new("Fig. 11 SI: peak CR, 100K pages, HDD", si_cr, 100.0).note(
            "NOT reproduced: Eq. 32-36 as printed peak at 134.4; the paper reads ~100 off \
             its 3-D plot (100 at x = 8 would need #P_res >= 1,036, Eq. 32 gives 771)",
        ),
        Comparison::new(
            "Fig. 12 Elastic on SI worst case, x = 12, 100K pages",
            e12,
            2.0,
        )
        .note("Eq. 37-39 (second sum to x-1); the paper: converges to 2 for x > 10"),
        Comparison::new(
            "Fig. 9 Elastic highest page-miss CR, 100 pages, HDD",
            v100,
            2.45,
        )
        .note(
            "NOT reproduced: our reading of the text gives 3.51; no reading found gives \
             both 2.45 here and 2.0001 at 3M pages (>= ~2.6 on 100 pages)",
        ),
        Comparison::new(
            "Fig. 9 Elastic highest page-miss CR, 3M pages, HDD",
            v3m,
            2.0001,
        )
        .note(format!(
            "reproduced to 1e-3: {v3m:.6} vs 2.0001 (both converge to 2)"
        )),
        Comparison::new(
            "Eq. 42 Elastic worst case CR, HDD",
            competitive::elastic_worst_cr(hdd),
            11.0,
        )
        .note("(rand + seq)/seq; reproduced"),
        Comparison::new(
            "Eq. 42 Elastic worst case CR, SSD",
            competitive::elastic_worst_cr(ssd),
            6.0,
        )
        .note(
            "NOT reproduced: the formula gives 3 with rand = 2, seq = 1; the paper's 6 is \
             what rand/seq = 5 would give",
        ),
        Comparison::new(
            "Elastic worst case vs Full Scan, HDD",
            competitive::elastic_worst_cr_vs_full_scan(hdd),
            5.5,
        )
        .note("reproduced"),
        Comparison::new(
            "Elastic worst case vs Full Scan, SSD",
            competitive::elastic_worst_cr_vs_full_scan(ssd),
            3.0,
        )
        .note("NOT reproduced: formula gives 1.5 (same factor 2 as above)"),
        Comparison::new(
            "Elastic worst case, morphing factor 10, HDD",
            competitive::elastic_worst_cr_factor(hdd, 10.0),
            19.0,
        )
        .note("reproduced"),
    ]
}

/// `model.md`: the comparison with the paper, the discrepancies in plain
/// words, and per figure its image and a few points. `figs` are the figures
/// written beside it as `model-<id>.svg`.
pub fn analytical_summary(figs: &[FigureData]) -> Summary {
    let mut s = Summary::new("Smooth Scan: analytical figures from the cost model");
    s.paragraph(
        "The competitive ratios (CR) of §6 of the Smooth Scan paper (Borovica-Gajic et al., \
         VLDB Journal 2018), computed by `crate::smooth_scan::cost_model` from the equations as \
         printed: Smooth Scan's cost on its worst-case data against the Oracle, which reads \
         only the result pages, sequentially. Unit costs as in §6: HDD random 10, sequential 1; \
         SSD random 2, sequential 1. Regenerate with `strata model`.",
    );
    s.heading("Our values beside the paper's");
    s.comparisons(&paper_comparisons());
    s.heading("Where the formulas as printed do not reproduce the paper");
    let (si_x, si_cr) = competitive::si_peak(100_000.0, IoCosts::HDD);
    s.bullets([
        format!(
            "Fig. 11 (Selectivity Increase): Eq. 32-36 peak at x = {si_x} for 100K pages, as \
             the paper says, but at CR = {} rather than the \"about 100\" the text reads off \
             its 3-D plot. No reading of the equations gives 100 at x = 8 (it would need at \
             least 1,036 result pages where Eq. 32 gives 771); summing Eq. 32 to x-1 would give \
             96.3 but at x = 7.4 and against the legible sum limit. We keep the printed equations.",
            num(si_cr)
        ),
        format!(
            "Fig. 9 (Elastic, highest page-miss rate): our model (Eq. 37-39 with y = x) \
             converges to 2 as the paper says ({:.6} at 3M pages against its 2.0001) but gives \
             {} at 100 pages where the paper has 2.45. On 100 pages any doubling scheme needs \
             at least 5 random jumps and the description allows at most ~56 result pages, so \
             the ratio is at least ~2.6 under any reading we found.",
            competitive::elastic_highest_miss_cr(3e6, IoCosts::HDD),
            num(competitive::elastic_highest_miss_cr(100.0, IoCosts::HDD))
        ),
        "Eq. 42 (Elastic worst case, every second page a result): (rand + seq)/seq gives 11 \
         on HDD as the paper says, but 3 on SSD (rand = 2, seq = 1) where the paper states 6, \
         and 1.5 instead of 3 against Full Scan: exactly twice the formula, i.e. what \
         rand/seq = 5 would give. We keep the formula."
            .to_string(),
        "Everything else the paper states in §6 is reproduced: Greedy's 110 and 760 (HDD) and \
         100 to 750 (SSD), SI's peak position, Elastic's 11 on HDD and the CR of 19 for a \
         morphing increase factor of 10."
            .to_string(),
    ]);
    for fig in figs {
        s.heading(&format!("{}: {}", fig.id, fig.title));
        s.image(&fig.title, &format!("model-{}.svg", fig.id));
        let (header, rows) = figure_table(fig);
        s.table(&header, rows);
        s.paragraph(&format!(
            "Data: `model-{}.csv` (the CR is in `modeled_ms` and `cr`).",
            fig.id
        ));
    }
    s
}

/// What [`write_analytical`] produced.
#[derive(Debug, Clone)]
pub struct AnalyticalOutput {
    pub figures: Vec<FigureData>,
    /// Files written (CSV, SVG, PNG per figure, then `model.md`).
    pub files: Vec<PathBuf>,
    pub summary: Summary,
}

/// Writes `model-fig9.csv` … `model-fig12.csv`, their SVG and PNG plots and
/// `model.md` into `out`.
pub fn write_analytical(out: &Path) -> io::Result<AnalyticalOutput> {
    let figures = competitive::analytical_figures();
    let mut files = Vec::new();
    for fig in &figures {
        let stem = out.join(format!("model-{}", fig.id));
        let csv = stem.with_extension("csv");
        figure_results(fig).write_csv(&csv)?;
        files.push(csv);
        figure_plot(fig).write(&stem)?;
        files.push(stem.with_extension("svg"));
        files.push(stem.with_extension("png"));
    }
    let summary = analytical_summary(&figures);
    let md = out.join("model.md");
    summary.write(&md)?;
    files.push(md);
    Ok(AnalyticalOutput {
        figures,
        files,
        summary,
    })
}
