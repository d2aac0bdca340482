//! `strata model`: the Smooth Scan paper's analytical figures (Fig. 9–12) from
//! the cost model of [`strata_access::cost_model`], and the model's predictions
//! beside measured execution times (the paper's Fig. 24).
//!
//! Two halves, both plain functions on data so that the command line only
//! parses flags and prints:
//!
//! * **Analytical figures** — [`figure_results`] (a figure as the standard
//!   [`ResultSet`]: the competitive ratio in `modeled_ms` and in an extra
//!   column `cr`), [`figure_plot`], [`figure_table`] (a few points for the
//!   terminal), [`paper_comparisons`] and [`analytical_summary`] (our values
//!   beside the paper's, and where the formulas as printed do not give the
//!   paper's numbers), and [`write_analytical`] for all of them at once.
//! * **Predicted vs measured** — [`predicted_vs_measured`] reads a measured
//!   sweep (rows of `full`, `index`, `sort` and `smooth (…)` variants, `x` the
//!   selectivity in percent), builds [`CostParams`] for the measured table with
//!   the device profile's page times ([`DeviceTimes::from_profile`]) and
//!   predicts every path at every measured `x`; [`fig24_plot`],
//!   [`fig24_summary`] and [`write_fig24`] turn that into `fig24.csv`, the plot
//!   and `fig24.md` with the ratio model / measured per path.
//!
//! What is compared with what: on a modeled device (`modeled_ms > 0` in the
//! measured row) the device model's I/O time is set beside the cost model's
//! I/O part, since neither counts CPU; on a real device the wall time is set
//! beside the model's total (I/O + CPU).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use strata_access::cost_model::{
    self, CostParams, DEFAULT_CPU_MS_PER_TUPLE, DeviceTimes, FigureData, IoCosts, MorphPolicy,
    SmoothAssumptions,
};
use strata_storage::device::DeviceProfile;

use crate::plot::{Axis, Legend, Plot};
use crate::results::{ResultRow, ResultSet, median};
use crate::summary::{Comparison, Summary, num};

/// Where `strata model` writes by default.
pub const DEFAULT_OUT_DIR: &str = "results/smooth-scan";

/// How to get a measured sweep for Fig. 24 (printed when none is given or
/// found).
pub const MEASURED_HINT: &str = "A measured sweep is the CSV `strata bench smooth-scan` writes \
for Fig. 15b (Q1 over selectivity: variants `full`, `index`, `sort`, `smooth (elastic, eager)`; \
x = selectivity in %), e.g.\n  \
strata bench smooth-scan 15b --devices hdd,ssd      # or --quick for a 200K-row table\n\
which writes results/smooth-scan/15b.csv (its table goes to ./strata-bench.db); then\n  \
strata --device hdd model --measured results/smooth-scan/15b.csv";

/// The measured sweeps `strata model` looks for in its output directory when
/// none is named, best first: Fig. 15b (unordered Q1), then Fig. 23 (Q1 on
/// the SSD).
pub const PREFERRED_MEASURED: [&str; 2] = ["15b.csv", "23.csv"];

/// The database `strata bench smooth-scan` keeps its tables in by default.
pub const BENCH_DB: &str = "strata-bench.db";

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
    let (si_x, si_cr) = cost_model::si_peak(100_000.0, hdd);
    let v100 = cost_model::elastic_highest_miss_cr(100.0, hdd);
    let v3m = cost_model::elastic_highest_miss_cr(3e6, hdd);
    let e12 = cost_model::elastic_si_cr_for_pages(100_000.0, 12.0, hdd).unwrap_or(f64::NAN);
    vec![
        Comparison::new(
            "Fig. 10 Greedy CR, 1K pages, HDD",
            cost_model::greedy_cr(1000.0, hdd),
            110.0,
        )
        .note("Eq. 31 as printed; reproduced"),
        Comparison::new(
            "Fig. 10 Greedy CR, 10K pages, HDD",
            cost_model::greedy_cr(10_000.0, hdd),
            760.0,
        )
        .note("Eq. 31; reproduced"),
        Comparison::new(
            "Fig. 10 Greedy CR, 1K pages, SSD",
            cost_model::greedy_cr(1000.0, ssd),
            100.0,
        )
        .note("paper: \"from 100 to 750\"; reproduced"),
        Comparison::new(
            "Fig. 10 Greedy CR, 10K pages, SSD",
            cost_model::greedy_cr(10_000.0, ssd),
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
            cost_model::elastic_worst_cr(hdd),
            11.0,
        )
        .note("(rand + seq)/seq; reproduced"),
        Comparison::new(
            "Eq. 42 Elastic worst case CR, SSD",
            cost_model::elastic_worst_cr(ssd),
            6.0,
        )
        .note(
            "NOT reproduced: the formula gives 3 with rand = 2, seq = 1; the paper's 6 is \
             what rand/seq = 5 would give",
        ),
        Comparison::new(
            "Elastic worst case vs Full Scan, HDD",
            cost_model::elastic_worst_cr_vs_full_scan(hdd),
            5.5,
        )
        .note("reproduced"),
        Comparison::new(
            "Elastic worst case vs Full Scan, SSD",
            cost_model::elastic_worst_cr_vs_full_scan(ssd),
            3.0,
        )
        .note("NOT reproduced: formula gives 1.5 (same factor 2 as above)"),
        Comparison::new(
            "Elastic worst case, morphing factor 10, HDD",
            cost_model::elastic_worst_cr_factor(hdd, 10.0),
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
         VLDB Journal 2018), computed by `strata_access::cost_model` from the equations as \
         printed: Smooth Scan's cost on its worst-case data against the Oracle, which reads \
         only the result pages, sequentially. Unit costs as in §6: HDD random 10, sequential 1; \
         SSD random 2, sequential 1. Regenerate with `strata model`.",
    );
    s.heading("Our values beside the paper's");
    s.comparisons(&paper_comparisons());
    s.heading("Where the formulas as printed do not reproduce the paper");
    let (si_x, si_cr) = cost_model::si_peak(100_000.0, IoCosts::HDD);
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
            cost_model::elastic_highest_miss_cr(3e6, IoCosts::HDD),
            num(cost_model::elastic_highest_miss_cr(100.0, IoCosts::HDD))
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
    let figures = cost_model::analytical_figures();
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

// ---------------------------------------------------------------------------
// Predicted vs measured (Fig. 24).
// ---------------------------------------------------------------------------

/// An access path of a measured sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    Full,
    Index,
    Sort,
    /// Smooth Scan with the policy named in the variant (Elastic, strata's
    /// default, when none is).
    Smooth(MorphPolicy),
}

impl PathKind {
    pub fn label(&self) -> &'static str {
        match self {
            PathKind::Full => "full",
            PathKind::Index => "index",
            PathKind::Sort => "sort",
            PathKind::Smooth(_) => "smooth",
        }
    }
}

/// The access path of a measured variant: `full…`, `index…`, `sort…`,
/// `smooth…` (policy from the words `greedy`, `si` / `selectivity`, `elastic`);
/// None for anything else (e.g. `switch`).
pub fn classify_variant(variant: &str) -> Option<PathKind> {
    let v = variant.trim().to_lowercase();
    let word = |w: &str| {
        v.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|t| t == w)
    };
    if v.starts_with("full") {
        Some(PathKind::Full)
    } else if v.starts_with("index") {
        Some(PathKind::Index)
    } else if v.starts_with("sort") {
        Some(PathKind::Sort)
    } else if v.starts_with("smooth") {
        let policy = if word("greedy") {
            MorphPolicy::Greedy
        } else if word("si") || v.contains("selectivity") {
            MorphPolicy::SelectivityIncrease
        } else {
            MorphPolicy::Elastic
        };
        Some(PathKind::Smooth(policy))
    } else {
        None
    }
}

/// Which Smooth Scan model predicts the `smooth (…)` variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SmoothModelChoice {
    /// The paper's Eq. 14–27 (Eager Smooth Scan, whatever the policy), with
    /// the paper's 2000-page region cap.
    #[default]
    Paper,
    /// The expected-value simulation of the variant's policy
    /// ([`SmoothAssumptions::simulated`]).
    Simulated,
}

impl FromStr for SmoothModelChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "paper" => Ok(SmoothModelChoice::Paper),
            "simulated" | "sim" => Ok(SmoothModelChoice::Simulated),
            o => Err(format!("unknown smooth model '{o}' (paper, simulated)")),
        }
    }
}

impl std::fmt::Display for SmoothModelChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SmoothModelChoice::Paper => "paper",
            SmoothModelChoice::Simulated => "simulated",
        })
    }
}

impl SmoothModelChoice {
    fn assumptions(self, policy: MorphPolicy) -> SmoothAssumptions {
        match self {
            SmoothModelChoice::Paper => SmoothAssumptions::default(),
            SmoothModelChoice::Simulated => SmoothAssumptions::simulated(policy),
        }
    }
}

/// The measured table's size, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct TableShape {
    pub rows: u64,
    pub pages: u64,
    /// Indexed key size in bytes (4 for the micro-benchmark's integer key).
    pub key_size: u64,
    /// E.g. "database ./strata.db, table microbench".
    pub source: String,
}

impl TableShape {
    /// [`CostParams::from_table`] with `profile`'s page times and
    /// [`DEFAULT_CPU_MS_PER_TUPLE`]: costs in milliseconds.
    pub fn params(&self, profile: &DeviceProfile) -> CostParams {
        let p = CostParams::from_table(self.rows, self.pages, self.key_size);
        let t = DeviceTimes::from_profile(profile, p.page_size);
        p.with_device_times(t, DEFAULT_CPU_MS_PER_TUPLE)
    }
}

/// The table's size as a measured sweep shows it, when nothing better is at
/// hand: pages = the most pages a `full` run read, rows = the rows a `full`
/// run returned divided by its selectivity (at the largest x). None without a
/// `full` row at x > 0 returning rows.
pub fn infer_table_shape(measured: &ResultSet) -> Option<TableShape> {
    let full: Vec<&ResultRow> = measured
        .rows()
        .iter()
        .filter(|r| classify_variant(&r.variant) == Some(PathKind::Full))
        .collect();
    let pages = full.iter().map(|r| r.pages_read).max()?;
    let best = full
        .iter()
        .filter(|r| r.x > 0.0 && r.x <= 100.0 && r.rows_out > 0)
        .max_by(|a, b| a.x.total_cmp(&b.x))?;
    let rows = (best.rows_out as f64 / (best.x / 100.0)).round() as u64;
    (pages > 0 && rows > 0).then(|| TableShape {
        rows,
        pages,
        key_size: 4,
        source: format!(
            "inferred from the measured sweep: full scan read {pages} pages, {} rows at {}%",
            best.rows_out,
            num(best.x)
        ),
    })
}

/// The table size to model with, and notes on the choice: `--rows`/`--pages`
/// (`flags`) first; then the database's table (`db`) — unless the measured
/// sweep shows a table more than 5 % off in rows or pages, in which case the
/// database holds some other table of that name and the sweep's own size
/// (`inferred`) is used; then the sweep's. A flag given alone is completed
/// from the next source.
pub fn choose_table_shape(
    flags: (Option<u64>, Option<u64>),
    db: Option<TableShape>,
    inferred: Option<TableShape>,
) -> Result<(TableShape, Vec<String>), String> {
    let mut notes = Vec::new();
    let off = |a: u64, b: u64| (a as f64 / b.max(1) as f64 - 1.0).abs() > 0.05;
    let base = match (db, &inferred) {
        (Some(d), Some(i)) if off(d.rows, i.rows) || off(d.pages, i.pages) => {
            notes.push(format!(
                "{} has {} rows in {} pages, but the measured sweep shows {} rows in {} pages: \
                 modeling the measured table",
                d.source, d.rows, d.pages, i.rows, i.pages
            ));
            Some(i.clone())
        }
        (Some(d), _) => Some(d),
        (None, Some(i)) => Some(i.clone()),
        (None, None) => None,
    };
    let shape = match (flags, base) {
        ((Some(rows), Some(pages)), _) => TableShape {
            rows,
            pages,
            key_size: 4,
            source: "--rows/--pages".into(),
        },
        ((Some(rows), None), Some(b)) => TableShape {
            rows,
            source: format!("--rows; pages from {}", b.source),
            ..b
        },
        ((None, Some(pages)), Some(b)) => TableShape {
            pages,
            source: format!("--pages; rows from {}", b.source),
            ..b
        },
        ((None, None), Some(b)) => b,
        _ => {
            return Err(
                "the measured table's size is unknown: give --rows N --pages N, or --db with \
                 the benchmark's table (see --table)"
                    .into(),
            );
        }
    };
    Ok((shape, notes))
}

/// One path's prediction at one selectivity, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub io_ms: f64,
    pub cpu_ms: f64,
    /// Heap pages read plus the index pages of the descent and the leaf walk.
    pub pages: f64,
    /// Result tuples, `sel × #T`.
    pub rows: f64,
}

impl Prediction {
    pub fn total_ms(&self) -> f64 {
        self.io_ms + self.cpu_ms
    }
}

/// Predicts `path` at selectivity `sel` (a fraction) — the same numbers as
/// the series of [`cost_model::cost_vs_selectivity`], split into I/O and CPU.
pub fn predict(p: &CostParams, path: PathKind, sel: f64, smooth: SmoothModelChoice) -> Prediction {
    let card = p.card(sel);
    let index_pages = p.height() as f64 + p.leaves_res(card);
    let (cost, heap_pages) = match path {
        PathKind::Full => (cost_model::full_scan_cost(p), p.pages() as f64),
        PathKind::Index => (cost_model::index_scan_cost(p, sel), card),
        PathKind::Sort => (cost_model::sort_scan_cost(p, sel), p.result_pages(card)),
        PathKind::Smooth(policy) => {
            let pr = cost_model::smooth_scan_cost(p, sel, &smooth.assumptions(policy));
            (pr.total(), pr.pages_read)
        }
    };
    let index_pages = if path == PathKind::Full {
        0.0
    } else {
        index_pages
    };
    Prediction {
        io_ms: cost.io,
        cpu_ms: cost.cpu,
        pages: heap_pages + index_pages,
        rows: card,
    }
}

/// Whether a measured row's `device` is the profile `name`: equal, or one of
/// its words (`"hdd (modeled)"` is `hdd`), ignoring case.
pub fn device_matches(device: &str, name: &str) -> bool {
    let d = device.to_lowercase();
    let n = name.to_lowercase();
    d == n
        || d.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .any(|t| t == n)
}

/// Model / measured of one path on one device, over its measured `x`.
#[derive(Debug, Clone, PartialEq)]
pub struct PathRatio {
    pub device: String,
    /// The measured variant, e.g. `smooth (elastic)`.
    pub variant: String,
    /// `modeled I/O` or `wall`.
    pub basis: String,
    pub points: usize,
    pub median: f64,
    pub max: f64,
    /// The selectivity (%) of the largest ratio.
    pub max_at_x: f64,
    pub min: f64,
}

/// The model beside a measured sweep.
#[derive(Debug, Clone)]
pub struct Fig24 {
    /// `fig24.csv`: per measured row a `… (measured)` row and a `… (model)`
    /// row (in that order).
    pub results: ResultSet,
    pub ratios: Vec<PathRatio>,
    /// The devices modeled, with their parameters (costs in ms).
    pub devices: Vec<(String, CostParams)>,
    pub table: TableShape,
    pub smooth_model: SmoothModelChoice,
    /// Where the measured rows came from (a file name).
    pub source: String,
    /// Rows left out and why.
    pub skipped: Vec<String>,
}

/// Predicts every `full` / `index` / `sort` / `smooth (…)` row of `measured`
/// on a device matching one of `profiles` (see [`device_matches`]) at its `x`
/// (selectivity in %), with [`TableShape::params`] for that profile.
///
/// For a row with `modeled_ms > 0` the measured time is `modeled_ms` (the
/// device model's I/O time) and the prediction compared with it is the cost
/// model's I/O part; otherwise the measured time is `wall_ms` and the
/// prediction is I/O + CPU. The model row carries the I/O part in
/// `modeled_ms`, I/O + CPU in `wall_ms`, predicted pages and rows, and extra
/// columns `measured_ms`, `predicted_ms`, `ratio` (predicted / measured),
/// `basis`, `model_io_ms`, `model_cpu_ms`, `smooth_model`, `source_figure`.
pub fn predicted_vs_measured(
    measured: &ResultSet,
    table: &TableShape,
    profiles: &[DeviceProfile],
    smooth: SmoothModelChoice,
    source: &str,
) -> Result<Fig24, String> {
    if table.rows == 0 || table.pages == 0 {
        return Err(format!(
            "the measured table has {} rows in {} pages: nothing to model",
            table.rows, table.pages
        ));
    }
    let mut devices: Vec<(String, CostParams)> = Vec::new();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let mut kept: Vec<(&ResultRow, PathKind, usize)> = Vec::new();
    for row in measured.rows() {
        let Some(path) = classify_variant(&row.variant) else {
            *skipped
                .entry(format!("variant '{}' is not a modeled path", row.variant))
                .or_default() += 1;
            continue;
        };
        if row.extra.get("censored").map(String::as_str) == Some("yes") {
            *skipped
                .entry("censored (stopped at the timeout: the time is a lower bound)".into())
                .or_default() += 1;
            continue;
        }
        if !(row.x.is_finite() && (0.0..=100.0).contains(&row.x)) {
            *skipped
                .entry(format!("x = {} is not a selectivity in %", row.x))
                .or_default() += 1;
            continue;
        }
        let Some(profile) = profiles
            .iter()
            .find(|p| device_matches(&row.device, &p.name))
        else {
            *skipped
                .entry(format!(
                    "device '{}' is not among the modeled devices ({})",
                    row.device,
                    profiles
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .or_default() += 1;
            continue;
        };
        let di = match devices.iter().position(|(n, _)| n == &profile.name) {
            Some(i) => i,
            None => {
                let p = table.params(profile);
                p.validate().map_err(|e| e.to_string())?;
                devices.push((profile.name.clone(), p));
                devices.len() - 1
            }
        };
        kept.push((row, path, di));
    }
    if kept.is_empty() {
        let why: Vec<String> = skipped.keys().cloned().collect();
        return Err(format!(
            "no measured row to compare with the model ({})",
            if why.is_empty() {
                "the sweep is empty".to_string()
            } else {
                why.join("; ")
            }
        ));
    }
    let figures: Vec<&str> = {
        let mut f: Vec<&str> = kept.iter().map(|(r, _, _)| r.figure.as_str()).collect();
        f.dedup();
        f.sort();
        f.dedup();
        f
    };
    let label = |r: &ResultRow| {
        if figures.len() > 1 {
            format!("{}: {}", r.figure, r.variant)
        } else {
            r.variant.clone()
        }
    };
    let mut results = ResultSet::new();
    // (device, variant, basis) -> ratios with their x.
    type Key = (String, String, String);
    let mut groups: Vec<(Key, Vec<(f64, f64)>)> = Vec::new();
    for (row, path, di) in kept {
        let (dev_name, params) = &devices[di];
        let pred = predict(params, path, row.x / 100.0, smooth);
        let modeled = row.modeled_ms > 0.0;
        let (basis, measured_ms, predicted_ms) = if modeled {
            ("modeled I/O", row.modeled_ms, pred.io_ms)
        } else {
            ("wall", row.wall_ms, pred.total_ms())
        };
        let ratio = if measured_ms > 0.0 {
            predicted_ms / measured_ms
        } else {
            f64::NAN
        };
        let name = label(row);
        let mut m = row.clone();
        m.figure = "fig24".into();
        m.variant = format!("{name} (measured)");
        m.set("source_figure", &row.figure);
        m.set("measured_ms", measured_ms);
        m.set("basis", basis);
        results.push(m);
        let mut p = ResultRow::new("fig24", &row.device, format!("{name} (model)"), row.x)
            .with("source_figure", &row.figure)
            .with("measured_ms", measured_ms)
            .with("predicted_ms", predicted_ms)
            .with("ratio", ratio)
            .with("basis", basis)
            .with("model_io_ms", pred.io_ms)
            .with("model_cpu_ms", pred.cpu_ms)
            .with("model_device", dev_name)
            .with("smooth_model", smooth);
        p.modeled_ms = pred.io_ms;
        p.wall_ms = pred.total_ms();
        p.pages_read = pred.pages.round() as u64;
        p.rows_out = pred.rows.round() as u64;
        results.push(p);
        if ratio.is_finite() {
            let key = (row.device.clone(), name, basis.to_string());
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push((row.x, ratio)),
                None => groups.push((key, vec![(row.x, ratio)])),
            }
        }
    }
    let ratios = groups
        .into_iter()
        .map(|((device, variant, basis), v)| {
            let rs: Vec<f64> = v.iter().map(|p| p.1).collect();
            let (max_at_x, max) = v
                .iter()
                .copied()
                .fold(
                    (f64::NAN, f64::NEG_INFINITY),
                    |m, p| {
                        if p.1 > m.1 { p } else { m }
                    },
                );
            PathRatio {
                device,
                variant,
                basis,
                points: v.len(),
                median: median(&rs).unwrap_or(f64::NAN),
                max,
                max_at_x,
                min: rs.iter().copied().fold(f64::INFINITY, f64::min),
            }
        })
        .collect();
    Ok(Fig24 {
        results,
        ratios,
        devices,
        table: table.clone(),
        smooth_model: smooth,
        source: source.to_string(),
        skipped: skipped
            .into_iter()
            .map(|(why, n)| format!("{n} row(s): {why}"))
            .collect(),
    })
}

/// The y value a Fig. 24 row is plotted with: the compared time.
fn fig24_y(r: &ResultRow) -> f64 {
    if r.variant.ends_with("(model)") {
        r.extra_f64("predicted_ms").unwrap_or(r.modeled_ms)
    } else {
        r.extra_f64("measured_ms").unwrap_or(r.wall_ms)
    }
}

/// The plot of one device: time vs selectivity on log axes, each path's
/// measured series followed by its model series (distinct colour and marker).
pub fn fig24_plot(f: &Fig24, device: &str) -> Plot {
    let series = f.results.series(|r| r.device == device, fig24_y);
    let basis: Vec<&str> = f
        .ratios
        .iter()
        .filter(|r| r.device == device)
        .map(|r| r.basis.as_str())
        .collect();
    let what = if !basis.is_empty() && basis.iter().all(|b| *b == "modeled I/O") {
        "modeled I/O time (ms)"
    } else {
        "time (ms)"
    };
    Plot::lines(
        format!("Fig. 24: cost model vs measured ({device})"),
        Axis::log10("selectivity (%)"),
        Axis::log10(what),
    )
    .size(1200, 680)
    .extend_series(series)
}

/// The devices of the Fig. 24 rows, in first-seen order.
pub fn fig24_devices(f: &Fig24) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in f.results.rows() {
        if !v.contains(&r.device) {
            v.push(r.device.clone());
        }
    }
    v
}

/// `fig24.md`: the parameters, the ratio model / measured per path (median,
/// max, min over x), every point, and the model's assumptions.
/// The model/measured ratio table's rows: device, path, basis, points, median,
/// max, x of the max, min.
pub fn ratio_rows(f: &Fig24) -> Vec<Vec<String>> {
    f.ratios
        .iter()
        .map(|r| {
            vec![
                r.device.clone(),
                r.variant.clone(),
                r.basis.clone(),
                r.points.to_string(),
                format!("{}x", num(r.median)),
                format!("{}x", num(r.max)),
                num(r.max_at_x),
                format!("{}x", num(r.min)),
            ]
        })
        .collect()
}

pub fn fig24_summary(f: &Fig24, images: &[(String, String)]) -> Summary {
    let mut s = Summary::new("Fig. 24: the cost model's predictions vs measured times");
    s.paragraph(&format!(
        "Measured: `{}`. The table: {} rows in {} pages ({}). Smooth Scan model: {}. \
         Each path is predicted at each measured selectivity by the §5 cost model \
         (`strata_access::cost_model`, the same numbers as `cost_vs_selectivity`). \
         Where the measured run has a device-modeled time (`modeled_ms > 0`) that is what \
         the model's I/O part is compared with (both leave CPU out); otherwise the wall \
         time is compared with the model's I/O + CPU.",
        f.source,
        f.table.rows,
        f.table.pages,
        f.table.source,
        match f.smooth_model {
            SmoothModelChoice::Paper =>
                "the paper's Eq. 14-27 (Eager, uniform results, 2000-page region cap)",
            SmoothModelChoice::Simulated =>
                "expected-value simulation of the variant's policy (2000-page cap)",
        }
    ));
    let params: Vec<Vec<String>> = f
        .devices
        .iter()
        .map(|(d, p)| {
            vec![
                d.clone(),
                num(p.rand_cost),
                num(p.seq_cost),
                num(p.cpu_cost),
                p.tuples_per_page().to_string(),
                p.pages().to_string(),
                p.fanout().to_string(),
                p.height().to_string(),
            ]
        })
        .collect();
    s.table(
        &[
            "device",
            "random page (ms)",
            "sequential page (ms)",
            "CPU per tuple (ms)",
            "tuples/page",
            "pages (Eq. 4)",
            "fanout",
            "height",
        ],
        params,
    );
    s.heading("Model / measured per path");
    let rows = ratio_rows(f);
    s.table(
        &[
            "device",
            "path",
            "compared",
            "points",
            "median",
            "max",
            "max at x (%)",
            "min",
        ],
        rows,
    );
    for (alt, path) in images {
        s.image(alt, path);
    }
    s.heading("Every point");
    let points: Vec<Vec<String>> = f
        .results
        .rows()
        .iter()
        .filter(|r| r.variant.ends_with("(model)"))
        .map(|r| {
            vec![
                r.device.clone(),
                r.variant.trim_end_matches(" (model)").to_string(),
                num(r.x),
                num(r.extra_f64("measured_ms").unwrap_or(f64::NAN)),
                num(r.extra_f64("predicted_ms").unwrap_or(f64::NAN)),
                r.extra_f64("ratio")
                    .filter(|v| v.is_finite())
                    .map_or("n/a".into(), |v| format!("{}x", num(v))),
            ]
        })
        .collect();
    s.table(
        &[
            "device",
            "path",
            "x (%)",
            "measured (ms)",
            "model (ms)",
            "model / measured",
        ],
        points,
    );
    s.heading("What the model assumes");
    s.bullets([
        "Results spread uniformly, one per page while there are pages (Eq. 15): the worst case \
         for the index and sort scans; clustered or skewed data makes them cheaper than predicted.",
        "Index Scan pays one random read per result tuple (Eq. 12) with no buffer pool: when the \
         pool holds re-read pages the measured time is lower.",
        "One synchronous reader: the model does not overlap requests. strata's Smooth Scan reads \
         several regions together (io_depth), which on the modeled SSD's channels (and in the HDD's \
         elevator order) makes it faster than predicted.",
        "The paper's Smooth Scan model counts only result pages; the simulated one also counts the \
         pages without results that regions read.",
    ]);
    if !f.skipped.is_empty() {
        s.heading("Rows not compared");
        s.bullets(&f.skipped);
    }
    s
}

/// Writes `fig24.csv`, the plot (`fig24.svg/.png`; with several devices also
/// `fig24-<device>.svg/.png`, and `fig24` is the first device's) and
/// `fig24.md` into `out`; returns the files.
pub fn write_fig24(out: &Path, f: &Fig24) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let csv = out.join("fig24.csv");
    f.results.write_csv(&csv)?;
    files.push(csv);
    let devices = fig24_devices(f);
    let mut images = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        let plot = fig24_plot(f, d);
        let mut stems = Vec::new();
        if i == 0 {
            stems.push("fig24".to_string());
        }
        if devices.len() > 1 {
            stems.push(format!("fig24-{}", file_safe(d)));
        }
        for stem in &stems {
            plot.write(out.join(stem))?;
            files.push(out.join(format!("{stem}.svg")));
            files.push(out.join(format!("{stem}.png")));
        }
        let img = stems.last().cloned().unwrap_or_default();
        images.push((format!("model vs measured, {d}"), format!("{img}.svg")));
    }
    let md = out.join("fig24.md");
    fig24_summary(f, &images).write(&md)?;
    files.push(md);
    Ok(files)
}

fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A measured sweep in `dir` to compare with the model when none is named:
/// the first of [`PREFERRED_MEASURED`] that is usable, else among the other
/// `*.csv` files (except `model-*.csv` and `fig24*.csv`) the one with the
/// most rows of modeled paths at x in (0, 100]. Usable: it reads as a result
/// set and has both `full` and `smooth` rows; ties go to the first name.
pub fn find_measured(dir: &Path) -> Option<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".csv") && !name.starts_with("model-") && !name.starts_with("fig24")
        })
        .collect();
    names.sort();
    let usable = |path: &Path| {
        ResultSet::read_csv(path).ok().map(|set| {
            let paths: Vec<PathKind> = set
                .rows()
                .iter()
                .filter(|r| r.x > 0.0 && r.x <= 100.0)
                .filter_map(|r| classify_variant(&r.variant))
                .collect();
            let ok = paths.contains(&PathKind::Full)
                && paths.iter().any(|p| matches!(p, PathKind::Smooth(_)));
            if ok { paths.len() } else { 0 }
        })
    };
    for want in PREFERRED_MEASURED {
        if let Some(p) = names
            .iter()
            .find(|p| p.file_name().is_some_and(|n| n == want))
            && usable(p).unwrap_or(0) > 0
        {
            return Some(p.clone());
        }
    }
    let mut best: Option<(usize, PathBuf)> = None;
    for path in names {
        let n = usable(&path).unwrap_or(0);
        if n > 0 && best.as_ref().is_none_or(|b| n > b.0) {
            best = Some((n, path));
        }
    }
    best.map(|b| b.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row_at(set: &ResultSet, device: &str, x: f64) -> ResultRow {
        set.rows()
            .iter()
            .find(|r| r.device == device && r.x == x)
            .cloned()
            .unwrap_or_else(|| panic!("no {device} row at {x}"))
    }

    #[test]
    fn fig10_csv_has_the_papers_two_points() {
        let set = figure_results(&cost_model::figure_10());
        let csv = set.to_csv();
        assert!(csv.starts_with(
            "figure,device,variant,x,wall_ms,modeled_ms,pages_read,io_requests,rows_out,cr,"
        ));
        let back = ResultSet::from_csv(&csv).unwrap();
        assert_eq!(back.len(), set.len());
        let at_1k = row_at(&back, "hdd", 1000.0);
        let at_10k = row_at(&back, "hdd", 10_000.0);
        assert_eq!(at_1k.figure, "fig10");
        assert_eq!(at_1k.variant, "greedy");
        for (r, paper) in [(&at_1k, 110.0), (&at_10k, 760.0)] {
            let cr = r.extra_f64("cr").unwrap();
            assert_eq!(cr, r.modeled_ms);
            assert!((cr / paper - 1.0).abs() < 0.03, "{cr} vs {paper}");
        }
        assert!(back.rows().iter().any(|r| r.device == "ssd"));
    }

    #[test]
    fn figure_rows_name_devices_and_table_sizes() {
        let set = figure_results(&cost_model::figure_11());
        let r = set
            .rows()
            .iter()
            .find(|r| r.variant == "selectivity-increase, #P=100000" && r.x == 8.0)
            .unwrap();
        assert_eq!(r.device, "hdd");
        assert_eq!(r.extra_f64("pages"), Some(100_000.0));
        assert!((r.modeled_ms - 134.4).abs() < 0.1, "{}", r.modeled_ms);
        let (header, rows) = figure_table(&cost_model::figure_11());
        assert_eq!(header[0], "x (expansions)");
        assert!(rows.iter().all(|r| r.len() == header.len()));
        assert!(rows.iter().any(|r| r[0] == "8"));
        let (_, rows9) = figure_table(&cost_model::figure_9());
        let xs: Vec<&str> = rows9.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(xs, ["100", "1000", "10000", "100000", "1.00e6", "3.00e6"]);
        let t = text_table(&header, &rows);
        assert!(t.lines().count() == rows.len() + 2, "{t}");
    }

    #[test]
    fn markdown_has_the_comparison_table_and_the_discrepancies() {
        let figs = cost_model::analytical_figures();
        let md = analytical_summary(&figs);
        let text = md.as_str();
        assert!(
            text.contains("|  | ours | paper | ours / paper | note |"),
            "{text}"
        );
        assert!(text.contains("| Fig. 10 Greedy CR, 1K pages, HDD | 109 | 110 |"));
        assert!(text.contains("| Fig. 11 SI: peak CR, 100K pages, HDD | 134 | 100 |"));
        assert!(text.contains("| Eq. 42 Elastic worst case CR, SSD | 3 | 6 | 0.5x |"));
        assert!(
            text.contains("| Fig. 9 Elastic highest page-miss CR, 100 pages, HDD | 3.51 | 2.45 |")
        );
        assert!(text.contains("NOT reproduced"));
        assert!(text.contains("![Greedy Smooth Scan"));
        assert!(text.contains("(model-fig12.svg)"));
        let c = paper_comparisons();
        assert!(c.iter().all(|c| c.ours.is_finite()));
    }

    #[test]
    fn write_analytical_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = write_analytical(dir.path()).unwrap();
        assert_eq!(out.figures.len(), 4);
        assert_eq!(out.files.len(), 4 * 3 + 1);
        for f in &out.files {
            assert!(f.exists(), "{}", f.display());
        }
        let back = ResultSet::read_csv(dir.path().join("model-fig12.csv")).unwrap();
        assert!(back.columns().contains(&"cr".to_string()));
    }

    #[test]
    fn variants_classify() {
        assert_eq!(classify_variant("full"), Some(PathKind::Full));
        assert_eq!(classify_variant("Full scan"), Some(PathKind::Full));
        assert_eq!(classify_variant("index"), Some(PathKind::Index));
        assert_eq!(classify_variant("sort"), Some(PathKind::Sort));
        assert_eq!(
            classify_variant("smooth (greedy)"),
            Some(PathKind::Smooth(MorphPolicy::Greedy))
        );
        assert_eq!(
            classify_variant("smooth (si, eager)"),
            Some(PathKind::Smooth(MorphPolicy::SelectivityIncrease))
        );
        assert_eq!(
            classify_variant("smooth (elastic)"),
            Some(PathKind::Smooth(MorphPolicy::Elastic))
        );
        assert_eq!(
            classify_variant("smooth"),
            Some(PathKind::Smooth(MorphPolicy::Elastic))
        );
        assert_eq!(classify_variant("switch"), None);
        assert!(device_matches("HDD", "hdd"));
        assert!(device_matches("hdd (modeled)", "hdd"));
        assert!(!device_matches("ssd", "hdd"));
        assert!(!device_matches("real (O_DIRECT)", "hdd"));
    }

    /// A tiny measured sweep on the modeled HDD and SSD plus rows the model
    /// cannot compare.
    fn synthetic() -> ResultSet {
        let mut set = ResultSet::new();
        for device in ["hdd", "ssd"] {
            for x in [0.01, 0.1, 1.0, 10.0, 100.0] {
                for (i, v) in ["full", "index", "sort", "smooth (elastic)"]
                    .iter()
                    .enumerate()
                {
                    let mut r = ResultRow::new("fig7", device, *v, x);
                    r.wall_ms = 10.0 + i as f64;
                    r.modeled_ms = 100.0 * (i as f64 + 1.0) * (1.0 + x);
                    r.pages_read = if *v == "full" { 7463 } else { 100 };
                    r.rows_out = (1_000_000.0 * x / 100.0) as u64;
                    set.push(r);
                }
            }
        }
        set.push(ResultRow::new("fig7", "hdd", "switch", 1.0));
        set.push(ResultRow::new("fig7", "real (O_DIRECT)", "full", 1.0));
        set
    }

    fn shape() -> TableShape {
        TableShape {
            rows: 1_000_000,
            pages: 7463,
            key_size: 4,
            source: "test".into(),
        }
    }

    #[test]
    fn one_model_row_per_measured_row() {
        let measured = synthetic();
        let profiles = [
            DeviceProfile::builtin("hdd").unwrap(),
            DeviceProfile::builtin("ssd").unwrap(),
        ];
        let f = predicted_vs_measured(
            &measured,
            &shape(),
            &profiles,
            SmoothModelChoice::Paper,
            "synthetic.csv",
        )
        .unwrap();
        let comparable = 2 * 5 * 4;
        let model: Vec<&ResultRow> = f
            .results
            .rows()
            .iter()
            .filter(|r| r.variant.ends_with(" (model)"))
            .collect();
        let meas = f
            .results
            .rows()
            .iter()
            .filter(|r| r.variant.ends_with(" (measured)"))
            .count();
        assert_eq!(model.len(), comparable);
        assert_eq!(meas, comparable);
        assert_eq!(f.skipped.len(), 2, "{:?}", f.skipped);
        assert_eq!(f.devices.len(), 2);
        assert_eq!(f.ratios.len(), 8);
        for r in &f.ratios {
            assert_eq!(r.points, 5);
            assert_eq!(r.basis, "modeled I/O");
            assert!(r.min <= r.median && r.median <= r.max, "{r:?}");
        }
        // The model row: I/O part compared with the measured modeled time.
        let (_, hdd) = &f.devices[0];
        let full = model
            .iter()
            .find(|r| r.device == "hdd" && r.variant == "full (model)" && r.x == 1.0)
            .unwrap();
        let fs = cost_model::full_scan_cost(hdd);
        assert!((full.modeled_ms - fs.io).abs() < 1e-9);
        assert!((full.wall_ms - fs.total()).abs() < 1e-9);
        assert_eq!(full.pages_read, hdd.pages());
        assert_eq!(full.rows_out, 10_000);
        let want = fs.io / (200.0 * 1.0);
        assert!((full.extra_f64("ratio").unwrap() - want).abs() < 1e-9);
        // The predictions are those of cost_vs_selectivity.
        let sels = [1e-4, 1e-2, 1.0];
        let c = cost_model::cost_vs_selectivity(hdd, &sels, &SmoothAssumptions::default());
        for (name, path) in [
            ("full scan", PathKind::Full),
            ("index scan", PathKind::Index),
            ("sort scan", PathKind::Sort),
            ("smooth scan", PathKind::Smooth(MorphPolicy::Elastic)),
        ] {
            for &(s, y) in &c.series(name).unwrap().points {
                let p = predict(hdd, path, s, SmoothModelChoice::Paper);
                assert!((p.total_ms() - y).abs() <= 1e-9 * y.max(1.0), "{name} {s}");
            }
        }
        // CSV round trip, plot and markdown.
        let back = ResultSet::from_csv(&f.results.to_csv()).unwrap();
        assert_eq!(back.len(), f.results.len());
        let plot = fig24_plot(&f, "hdd");
        assert!(plot.to_svg().contains("smooth (elastic) (model)"));
        let md = fig24_summary(&f, &[("hdd".into(), "fig24.svg".into())]);
        let text = md.as_str();
        assert!(text.contains("## Model / measured per path"), "{text}");
        assert!(
            text.contains("| hdd | smooth (elastic) | modeled I/O | 5 |"),
            "{text}"
        );
        assert!(text.contains("variant 'switch' is not a modeled path"));
    }

    #[test]
    fn one_device_and_wall_basis() {
        let mut measured = synthetic();
        let mut r = ResultRow::new("fig7", "hdd", "full", 50.0);
        r.wall_ms = 1000.0;
        measured.push(r);
        let f = predicted_vs_measured(
            &measured,
            &shape(),
            &[DeviceProfile::builtin("hdd").unwrap()],
            SmoothModelChoice::Simulated,
            "s.csv",
        )
        .unwrap();
        assert!(f.results.rows().iter().all(|r| r.device == "hdd"));
        let wall = f
            .ratios
            .iter()
            .find(|r| r.basis == "wall")
            .expect("a wall-time group");
        assert_eq!(wall.points, 1);
        assert!(
            f.results
                .rows()
                .iter()
                .any(|r| r.extra.get("smooth_model").map(String::as_str) == Some("simulated"))
        );
        let dir = tempfile::tempdir().unwrap();
        let files = write_fig24(dir.path(), &f).unwrap();
        assert_eq!(files.len(), 4, "{files:?}");
        assert!(dir.path().join("fig24.png").exists());
        // No comparable rows.
        let none = predicted_vs_measured(
            &ResultSet::new(),
            &shape(),
            &[DeviceProfile::builtin("hdd").unwrap()],
            SmoothModelChoice::Paper,
            "empty",
        );
        assert!(none.is_err());
    }

    #[test]
    fn table_shape_choice() {
        let t = |rows, pages, src: &str| TableShape {
            rows,
            pages,
            key_size: 4,
            source: src.into(),
        };
        let (s, n) = choose_table_shape(
            (None, None),
            Some(t(1000, 10, "db")),
            Some(t(1010, 10, "csv")),
        )
        .unwrap();
        assert_eq!((s.rows, s.source.as_str(), n.len()), (1000, "db", 0));
        let (s, n) = choose_table_shape(
            (None, None),
            Some(t(10_000_000, 74_627, "db")),
            Some(t(200_000, 1493, "csv")),
        )
        .unwrap();
        assert_eq!((s.rows, s.pages, n.len()), (200_000, 1493, 1));
        let (s, _) = choose_table_shape((Some(5), None), None, Some(t(7, 3, "csv"))).unwrap();
        assert_eq!((s.rows, s.pages), (5, 3));
        let (s, _) = choose_table_shape((Some(5), Some(2)), Some(t(7, 3, "db")), None).unwrap();
        assert_eq!((s.rows, s.pages), (5, 2));
        assert!(choose_table_shape((Some(5), None), None, None).is_err());
    }

    #[test]
    fn censored_rows_are_not_compared() {
        let mut measured = synthetic();
        let mut r = ResultRow::new("fig7", "hdd", "index", 50.0).with("censored", "yes");
        r.modeled_ms = 60_000.0;
        measured.push(r);
        let f = predicted_vs_measured(
            &measured,
            &shape(),
            &[DeviceProfile::builtin("hdd").unwrap()],
            SmoothModelChoice::Paper,
            "s.csv",
        )
        .unwrap();
        assert!(!f.results.rows().iter().any(|r| r.x == 50.0));
        assert!(
            f.skipped.iter().any(|s| s.contains("censored")),
            "{:?}",
            f.skipped
        );
    }

    #[test]
    fn table_shape_inferred_and_measured_file_found() {
        let measured = synthetic();
        let t = infer_table_shape(&measured).unwrap();
        assert_eq!(t.pages, 7463);
        assert_eq!(t.rows, 1_000_000);
        assert_eq!(
            t.params(&DeviceProfile::builtin("hdd").unwrap()).pages(),
            7463
        );
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(find_measured(dir.path()), None);
        measured.write_csv(dir.path().join("fig7.csv")).unwrap();
        figure_results(&cost_model::figure_10())
            .write_csv(dir.path().join("model-fig10.csv"))
            .unwrap();
        std::fs::write(dir.path().join("junk.csv"), "a,b\n1,2\n").unwrap();
        assert_eq!(find_measured(dir.path()), Some(dir.path().join("fig7.csv")));
        // 15b.csv is preferred even with fewer rows.
        let small: ResultSet = measured.rows().iter().take(8).cloned().collect();
        small.write_csv(dir.path().join("15b.csv")).unwrap();
        assert_eq!(find_measured(dir.path()), Some(dir.path().join("15b.csv")));
    }
}
