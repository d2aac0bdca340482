//! §6 of the Smooth Scan paper: the competitive analysis of its morphing
//! policies (Greedy, Selectivity Increase, Elastic) against the Oracle, and the
//! data of its analytical figures (Fig. 9–12). The costs they rest on are
//! [`super::cost_model`]'s.

use serde::{Deserialize, Serialize};

use super::cost_model::*;

// ---------------------------------------------------------------------------
// §6: competitive analysis.
// ---------------------------------------------------------------------------

/// Greedy Smooth Scan's competitive ratio on `pages` pages (Eq. 29–31):
/// `#rand = log2(#P + 1)`, `CR = (#rand × rand + (#P − #rand) × seq) /
/// (#rand × seq)`.
pub fn greedy_cr(pages: f64, c: IoCosts) -> f64 {
    let r = (pages + 1.0).log2();
    (r * c.rand + (pages - r) * c.seq) / (r * c.seq)
}

/// Eq. 34: the number `y` of single-result regions of the SI worst case on
/// `pages` pages after `x` expansions, `(#P + 2)/2^x − 2`.
pub fn si_y(pages: f64, x: f64) -> f64 {
    (pages + 2.0) / x.exp2() - 2.0
}

/// Eq. 32: result pages of the SI worst case, `1 + 3(2^(x−1) − 1) + y`.
pub fn si_result_pages(x: f64, y: f64) -> f64 {
    1.0 + 3.0 * ((x - 1.0).exp2() - 1.0) + y
}

/// Selectivity-Increase Smooth Scan's ratio to the Oracle on its worst-case
/// distribution with `x` expansions over `pages` pages (Eq. 32–36); `None` when
/// `x < 1` or the table is too small for `x` expansions (`y < 0`).
pub fn si_cr(pages: f64, x: f64, c: IoCosts) -> Option<f64> {
    let y = si_y(pages, x);
    if x < 1.0 || y < 0.0 {
        return None;
    }
    let rand_io = x + y;
    let ss = rand_io * c.rand + (pages - rand_io) * c.seq;
    Some(ss / (si_result_pages(x, y) * c.seq))
}

/// The largest SI competitive ratio over integer `x` on `pages` pages:
/// `(x, CR)`.
pub fn si_peak(pages: f64, c: IoCosts) -> (u32, f64) {
    let mut best = (1u32, f64::NEG_INFINITY);
    let mut x = 1u32;
    while let Some(cr) = si_cr(pages, x as f64, c) {
        if cr > best.1 {
            best = (x, cr);
        }
        x += 1;
    }
    best
}

/// The SI ratio's peak over real `x` (step 0.01), `(x, CR)`.
pub fn si_peak_continuous(pages: f64, c: IoCosts) -> (f64, f64) {
    let mut best = (1.0, f64::NEG_INFINITY);
    let mut i = 100u32;
    while let Some(cr) = si_cr(pages, i as f64 / 100.0, c) {
        if cr > best.1 {
            best = (i as f64 / 100.0, cr);
        }
        i += 1;
    }
    best
}

/// Pages Elastic Smooth Scan accesses on the SI worst case (Eq. 37):
/// `3·2^x − 3 + y − x` (`x` growing regions `2…2^x`, `x` shrinking ones
/// `2^(x−1)…1`, `y − x` one-page regions).
pub fn elastic_pages(x: f64, y: f64) -> f64 {
    3.0 * x.exp2() - 3.0 + y - x
}

/// Elastic Smooth Scan's ratio to the Oracle after `x` expansions and `y`
/// single-result regions (Eq. 37–39; meaningful for `y ≥ x`).
pub fn elastic_si_cr(x: f64, y: f64, c: IoCosts) -> f64 {
    let pages = elastic_pages(x, y);
    let rand_io = x + y;
    let ss = rand_io * c.rand + (pages - rand_io) * c.seq;
    ss / (si_result_pages(x, y) * c.seq)
}

/// Elastic on the SI worst case of a `pages`-page table (Fig. 12): `y` from
/// Eq. 34; `None` when `x < 1` or `y < x`.
pub fn elastic_si_cr_for_pages(pages: f64, x: f64, c: IoCosts) -> Option<f64> {
    let y = si_y(pages, x);
    if x < 1.0 || y < x {
        return None;
    }
    Some(elastic_si_cr(x, y, c))
}

/// Elastic's highest page-miss case on `pages` pages (Fig. 9): Eq. 37–39 with
/// `y = x`, `x = log2((#P + 3)/3)` (see the module docs and their discrepancy).
pub fn elastic_highest_miss_cr(pages: f64, c: IoCosts) -> f64 {
    let x = ((pages + 3.0) / 3.0).log2();
    elastic_si_cr(x, x, c)
}

/// Elastic's worst case, every second page a result (Eq. 40–42):
/// `(rand + seq)/seq`.
pub fn elastic_worst_cr(c: IoCosts) -> f64 {
    elastic_worst_cr_factor(c, 2.0)
}

/// Elastic's worst case against Full Scan: `(#P/2 × (rand + seq)) / (#P × seq)`.
pub fn elastic_worst_cr_vs_full_scan(c: IoCosts) -> f64 {
    elastic_worst_cr_factor_vs_full_scan(c, 2.0)
}

/// The worst case with morphing increase factor `k`: regions of `k` pages with
/// one result each, `CR = (rand + (k − 1) seq)/seq`.
pub fn elastic_worst_cr_factor(c: IoCosts, k: f64) -> f64 {
    (c.rand + (k - 1.0) * c.seq) / c.seq
}

/// The same against Full Scan: `(rand + (k − 1) seq)/(k seq)`.
pub fn elastic_worst_cr_factor_vs_full_scan(c: IoCosts, k: f64) -> f64 {
    (c.rand + (k - 1.0) * c.seq) / (k * c.seq)
}

// ---------------------------------------------------------------------------
// Figures.
// ---------------------------------------------------------------------------

/// One curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A figure's data: named series of `(x, y)` points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureData {
    /// Short id, e.g. `"fig10"`.
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// The x axis reads best on a log scale.
    pub log_x: bool,
    /// The y axis reads best on a log scale.
    pub log_y: bool,
    pub series: Vec<Series>,
}

impl FigureData {
    /// Tab-separated `series, x, y` lines with a header.
    pub fn to_tsv(&self) -> String {
        let mut s = format!("series\t{}\t{}\n", self.x_label, self.y_label);
        for se in &self.series {
            for (x, y) in &se.points {
                s.push_str(&format!("{}\t{}\t{}\n", se.name, x, y));
            }
        }
        s
    }

    /// The series called `name`.
    pub fn series(&self, name: &str) -> Option<&Series> {
        self.series.iter().find(|s| s.name == name)
    }
}

/// `per_decade` log-spaced points from `from` to `to` (both included).
fn log_points(from: f64, to: f64, per_decade: u32) -> Vec<f64> {
    let mut v = Vec::new();
    let mut i = 0u32;
    loop {
        let x = from * 10f64.powf(i as f64 / per_decade as f64);
        if x > to * (1.0 - 1e-9) {
            break;
        }
        v.push(x.round());
        i += 1;
    }
    v.push(to);
    v
}

/// Fig. 10: Greedy's CR against the Oracle vs `#P` from 100 to 100K pages, HDD
/// and SSD.
pub fn figure_10() -> FigureData {
    cr_by_pages(
        "fig10",
        "Greedy Smooth Scan: CR against the Oracle (Eq. 31)",
        100_000.0,
        true,
        greedy_cr,
    )
}

/// Fig. 11: SI Smooth Scan's CR vs the number of expansions `x` (step 0.25) on
/// HDD, for 100K pages (the paper's) and 10K and 1M (the peak moves right and
/// up with the table size).
pub fn figure_11() -> FigureData {
    cr_by_expansions(
        "fig11",
        "Selectivity-Increase Smooth Scan: CR against the Oracle (Eq. 36), HDD",
        [10_000.0, 100_000.0, 1_000_000.0],
        |p, x| si_cr(p, x, IoCosts::HDD),
    )
}

/// Fig. 12: Elastic Smooth Scan's CR on the SI worst case vs `x` (step 0.25,
/// while `y ≥ x`) on HDD, for 100K, 1M and 3M pages.
pub fn figure_12() -> FigureData {
    cr_by_expansions(
        "fig12",
        "Elastic Smooth Scan on SI's worst case: CR against the Oracle (Eq. 39), HDD",
        [100_000.0, 1_000_000.0, 3_000_000.0],
        |p, x| elastic_si_cr_for_pages(p, x, IoCosts::HDD),
    )
}

/// Fig. 9: Elastic Smooth Scan's CR in the highest page-miss case vs `#P` from
/// 100 to 3M pages, HDD and SSD.
pub fn figure_9() -> FigureData {
    cr_by_pages(
        "fig9",
        "Elastic Smooth Scan, highest page-miss case: CR against the Oracle",
        3_000_000.0,
        false,
        elastic_highest_miss_cr,
    )
}

/// A CR figure over `#P` from 100 to `max_pages` (log x axis) with a series per
/// device, HDD and SSD; `cr(pages, costs)` gives a point.
fn cr_by_pages(
    id: &str,
    title: &str,
    max_pages: f64,
    log_y: bool,
    cr: impl Fn(f64, IoCosts) -> f64,
) -> FigureData {
    let xs = log_points(100.0, max_pages, 10);
    let series = [("HDD", IoCosts::HDD), ("SSD", IoCosts::SSD)]
        .into_iter()
        .map(|(n, c)| Series {
            name: n.into(),
            points: xs.iter().map(|&p| (p, cr(p, c))).collect(),
        })
        .collect();
    cr_figure(id, title, "pages", true, log_y, series)
}

/// A CR figure over the number of expansions `x` with a series per table size
/// in `pages`; `cr(pages, x)` gives a point (see [`x_steps`]).
fn cr_by_expansions(
    id: &str,
    title: &str,
    pages: [f64; 3],
    cr: impl Fn(f64, f64) -> Option<f64>,
) -> FigureData {
    let series = pages
        .into_iter()
        .map(|p| Series {
            name: format!("#P={p}"),
            points: x_steps(|x| cr(p, x)),
        })
        .collect();
    cr_figure(id, title, "x (expansions)", false, false, series)
}

/// A figure of competitive ratios (the y axis is `CR`).
fn cr_figure(
    id: &str,
    title: &str,
    x_label: &str,
    log_x: bool,
    log_y: bool,
    series: Vec<Series>,
) -> FigureData {
    FigureData {
        id: id.into(),
        title: title.into(),
        x_label: x_label.into(),
        y_label: "CR".into(),
        log_x,
        log_y,
        series,
    }
}

/// The points `(x, cr)` for `x` from 1 in steps of 0.25, for as long as
/// `valid(x)` gives a CR.
fn x_steps(valid: impl Fn(f64) -> Option<f64>) -> Vec<(f64, f64)> {
    let mut v = Vec::new();
    let mut i = 4u32;
    while let Some(cr) = valid(i as f64 / 4.0) {
        v.push((i as f64 / 4.0, cr));
        i += 1;
    }
    v
}

/// Figures 9–12.
pub fn analytical_figures() -> Vec<FigureData> {
    vec![figure_9(), figure_10(), figure_11(), figure_12()]
}

/// The §5 operators' total cost (I/O + CPU) vs selectivity: Full Scan, Index
/// Scan, Sort Scan, Oracle and Smooth Scan under `a`, at the selectivities `sels`
/// (fractions).
pub fn cost_vs_selectivity(p: &CostParams, sels: &[f64], a: &SmoothAssumptions) -> FigureData {
    let curve = |name: &str, f: &dyn Fn(f64) -> f64| Series {
        name: name.into(),
        points: sels.iter().map(|&s| (s, f(s))).collect(),
    };
    let fs = full_scan_cost(p).total();
    let series = vec![
        curve("full scan", &|_| fs),
        curve("index scan", &|s| index_scan_cost(p, s).total()),
        curve("sort scan", &|s| sort_scan_cost(p, s).total()),
        curve("smooth scan", &|s| {
            smooth_scan_cost(p, s, a).total().total()
        }),
        curve("oracle", &|s| oracle_cost(p, s).total()),
    ];
    FigureData {
        id: "costs".into(),
        title: format!(
            "Modeled cost vs selectivity ({} tuples, {} pages)",
            p.num_tuples,
            p.pages()
        ),
        x_label: "selectivity".into(),
        y_label: "cost".into(),
        log_x: true,
        log_y: true,
        series,
    }
}
