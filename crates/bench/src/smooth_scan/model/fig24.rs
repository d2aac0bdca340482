//! The cost model's predictions beside a measured sweep (the paper's Fig. 24).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::smooth_scan::cost_model::{
    self, CostParams, DEFAULT_CPU_MS_PER_TUPLE, DeviceTimes, MorphPolicy, SmoothAssumptions,
};
use strata_storage::device::DeviceProfile;

use crate::report::plot::{Axis, Plot};
use crate::report::results::{ResultRow, ResultSet, median};
use crate::report::summary::{Summary, num};

/// How to get a measured sweep for Fig. 24 (printed when none is given or
/// found).
pub const MEASURED_HINT: &str = "A measured sweep is the CSV `strata bench smooth-scan` writes \
for Fig. 15b (Q1 over selectivity: variants `full`, `index`, `sort`, `smooth (elastic, eager)`; \
x = selectivity in %), e.g.\n  \
strata bench smooth-scan 15b --devices hdd,ssd      # or --quick for a 200K-row table\n\
which writes 15b.csv into the results directory it prints (--out DIR chooses it; its table \
goes to ./strata-bench.db); then\n  \
strata --device hdd model --measured DIR/15b.csv";

/// The measured sweeps `strata model` looks for in its output directory when
/// none is named, best first: Fig. 15b (unordered Q1), then Fig. 23 (Q1 on
/// the SSD).
pub const PREFERRED_MEASURED: [&str; 2] = ["15b.csv", "23.csv"];

/// The database `strata bench smooth-scan` keeps its tables in by default.
pub const BENCH_DB: &str = "strata-bench.db";

// ---------------------------------------------------------------------------
// Predicted vs measured (Fig. 24).
// ---------------------------------------------------------------------------

/// An access path of a measured sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    Full,
    Index,
    Sort,
    /// Smooth Scan with the policy named in the variant (Elastic when none
    /// is: the paper's policy, the one its cost model describes).
    Smooth(MorphPolicy),
}

impl PathKind {
    pub fn label(&self) -> &'static str {
        match self {
            PathKind::Full => "full",
            PathKind::Index => "index",
            PathKind::Sort => "sort",
            PathKind::Smooth(MorphPolicy::Greedy) => "smooth (greedy)",
            PathKind::Smooth(MorphPolicy::SelectivityIncrease) => "smooth (si)",
            PathKind::Smooth(MorphPolicy::Elastic) => "smooth (elastic)",
        }
    }
}

/// The access path of a measured variant: `full…`, `index…`, `sort…`,
/// `smooth…` (policy from the words `greedy`, `si` / `selectivity`, `elastic`);
/// None for anything else (e.g. `switch`) and for Smooth Scan under strata's
/// cost-aware policy, which the paper's cost model does not describe (comparing
/// its measurements with the Elastic model would compare two different policies).
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
        if word("cost") {
            return None;
        }
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
/// the series of [`competitive::cost_vs_selectivity`], split into I/O and CPU.
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
            let why = if row.variant.to_lowercase().contains("cost") {
                "has no model (the paper's cost model describes Greedy, Selectivity Increase and Elastic, not the cost-aware policy)"
            } else {
                "is not a modeled path"
            };
            *skipped
                .entry(format!("variant '{}' {why}", row.variant))
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
         (`crate::smooth_scan::cost_model`, the same numbers as `cost_vs_selectivity`). \
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
