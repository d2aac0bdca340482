//! Line, point and grouped-bar plots, written as SVG and PNG.
//!
//! A [`Plot`] is laid out once into a list of drawing primitives (a
//! scene); the SVG writer and the PNG rasterizer both draw that list, so
//! the two files show the same picture. The SVG is hand-written text (small,
//! diffable, sharp at any zoom); the PNG is for viewers that show images but
//! not SVG, and is rasterized with `tiny-skia` and a built-in bitmap font so
//! that no system library or font file is needed.
//!
//! ```no_run
//! use strata_bench::plot::{Axis, Plot};
//! let plot = Plot::lines(
//!     "Q1: time vs selectivity",
//!     Axis::log10("selectivity (%)").range(1e-3, 100.0),
//!     Axis::log10("time (ms)"),
//! )
//! .series("full scan", [(1e-3, 900.0), (100.0, 950.0)])
//! .series("smooth scan", [(1e-3, 2.0), (100.0, 1000.0)])
//! .hline("SLA", 1200.0);
//! plot.write("results/smooth_scan/fig7").unwrap(); // fig7.svg + fig7.png
//! ```

mod font;
mod png;
mod raster;
mod svg;

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::Path;

/// How an axis maps values to positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Decades equally spaced; values <= 0 cannot be shown and are skipped.
    Log10,
}

/// An axis: its title, scale and (optionally) a fixed range.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub title: String,
    pub scale: Scale,
    /// Fixed (low, high) range; None fits the data (whole decades on a log
    /// axis, "nice" numbers on a linear one, zero included on a linear value
    /// axis whose data are all >= 0).
    pub range: Option<(f64, f64)>,
}

impl Axis {
    pub fn linear(title: impl Into<String>) -> Axis {
        Axis {
            title: title.into(),
            scale: Scale::Linear,
            range: None,
        }
    }

    pub fn log10(title: impl Into<String>) -> Axis {
        Axis {
            title: title.into(),
            scale: Scale::Log10,
            range: None,
        }
    }

    /// Fixes the range, so that figures of one family share their axes
    /// (e.g. selectivity 0.001%..100% on every Smooth Scan figure). Points
    /// outside are clipped.
    pub fn range(mut self, low: f64, high: f64) -> Axis {
        self.range = Some((low.min(high), low.max(high)));
        self
    }
}

/// One named data series. In a line plot the points are (x, y) and are
/// joined in the order given; in a bar chart x is the category index.
/// Points that are not finite (or not positive on a log axis) are skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Where the legend goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Legend {
    /// Outside the plot area, right of it: never covers data (the default).
    Right,
    TopLeft,
    TopRight,
    BottomLeft,
    BottomRight,
    Hidden,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Lines,
    Bars { categories: Vec<String> },
}

/// A plot; build it with [`Plot::lines`] or [`Plot::bars`] and the builder
/// methods, then [`Plot::write`] it.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    title: String,
    kind: Kind,
    x: Axis,
    y: Axis,
    series: Vec<Series>,
    hlines: Vec<(String, f64)>,
    legend: Legend,
    width: u32,
    height: u32,
}

impl Plot {
    /// A line plot: each series is drawn as a line with a marker at every
    /// point.
    pub fn lines(title: impl Into<String>, x: Axis, y: Axis) -> Plot {
        Plot {
            title: title.into(),
            kind: Kind::Lines,
            x,
            y,
            series: Vec::new(),
            hlines: Vec::new(),
            legend: Legend::Right,
            width: 1000,
            height: 640,
        }
    }

    /// A grouped bar chart: one group per category along x, one bar per
    /// series in each group (add series with [`Plot::bar_series`]). Bars on
    /// a log y axis grow from the bottom of the axis.
    pub fn bars<S: Into<String>>(
        title: impl Into<String>,
        x_title: impl Into<String>,
        categories: impl IntoIterator<Item = S>,
        y: Axis,
    ) -> Plot {
        Plot {
            kind: Kind::Bars {
                categories: categories.into_iter().map(Into::into).collect(),
            },
            ..Plot::lines(title, Axis::linear(x_title), y)
        }
    }

    /// Adds a series of (x, y) points.
    pub fn series(
        mut self,
        name: impl Into<String>,
        points: impl IntoIterator<Item = (f64, f64)>,
    ) -> Plot {
        self.series.push(Series {
            name: name.into(),
            points: points.into_iter().collect(),
        });
        self
    }

    /// Adds a bar series: one value per category, in category order.
    pub fn bar_series(
        mut self,
        name: impl Into<String>,
        values: impl IntoIterator<Item = f64>,
    ) -> Plot {
        let points = values.into_iter().enumerate().map(|(i, v)| (i as f64, v));
        self.series.push(Series {
            name: name.into(),
            points: points.collect(),
        });
        self
    }

    /// Adds already-built series (e.g. from [`crate::ResultSet::series`]).
    pub fn extend_series(mut self, series: impl IntoIterator<Item = Series>) -> Plot {
        self.series.extend(series);
        self
    }

    /// Adds a dashed horizontal reference line at `y` (e.g. an SLA bound),
    /// named in the legend. The y range is widened to include it.
    pub fn hline(mut self, label: impl Into<String>, y: f64) -> Plot {
        self.hlines.push((label.into(), y));
        self
    }

    pub fn legend(mut self, legend: Legend) -> Plot {
        self.legend = legend;
        self
    }

    /// Image size in pixels (default 1000 x 640). Text does not scale with
    /// it, so a smaller image leaves less room for data.
    pub fn size(mut self, width: u32, height: u32) -> Plot {
        self.width = width.max(200);
        self.height = height.max(150);
        self
    }

    pub fn to_svg(&self) -> String {
        svg::render(&self.scene())
    }

    /// The plot as PNG bytes.
    pub fn to_png(&self) -> io::Result<Vec<u8>> {
        raster::render(&self.scene())
    }

    /// Writes `<stem>.svg` and `<stem>.png` (e.g. stem
    /// `results/smooth_scan/fig7`), creating the directory.
    pub fn write(&self, stem: impl AsRef<Path>) -> io::Result<()> {
        let stem = stem.as_ref();
        if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        let with = |ext: &str| {
            let mut p = OsString::from(stem.as_os_str());
            p.push(ext);
            p
        };
        fs::write(with(".svg"), self.to_svg())?;
        fs::write(with(".png"), self.to_png()?)
    }
}

// ---------------------------------------------------------------------------
// The scene: what both renderers draw.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    fn darker(self) -> Rgb {
        let d = |c: u8| (c as f32 * 0.65) as u8;
        Rgb(d(self.0), d(self.1), d(self.2))
    }
}

const WHITE: Rgb = Rgb(255, 255, 255);
const INK: Rgb = Rgb(34, 34, 34);
const GRID: Rgb = Rgb(225, 225, 225);
const REF: Rgb = Rgb(70, 70, 70);

/// Okabe-Ito colours (distinguishable with the common colour-vision
/// deficiencies), with brown in place of yellow, which is unreadable on white.
const PALETTE: [Rgb; 8] = [
    Rgb(0, 114, 178),
    Rgb(213, 94, 0),
    Rgb(0, 158, 115),
    Rgb(204, 121, 167),
    Rgb(230, 159, 0),
    Rgb(86, 180, 233),
    Rgb(0, 0, 0),
    Rgb(153, 79, 0),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    Circle,
    Square,
    Triangle,
    Diamond,
    TriangleDown,
    Cross,
    Plus,
}

const MARKS: [Mark; 7] = [
    Mark::Circle,
    Mark::Square,
    Mark::Triangle,
    Mark::Diamond,
    Mark::TriangleDown,
    Mark::Cross,
    Mark::Plus,
];

/// A marker's geometry, shared by both renderers.
pub(crate) enum Shape {
    Circle(f32),
    /// A filled polygon.
    Polygon(Vec<(f32, f32)>),
    /// Stroked segments.
    Strokes(Vec<[(f32, f32); 2]>),
}

impl Mark {
    pub(crate) fn shape(self, x: f32, y: f32, r: f32) -> Shape {
        let poly = |pts: &[(f32, f32)]| {
            Shape::Polygon(
                pts.iter()
                    .map(|&(dx, dy)| (x + dx * r, y + dy * r))
                    .collect(),
            )
        };
        let segs = |s: &[[(f32, f32); 2]]| {
            Shape::Strokes(
                s.iter()
                    .map(|&[(a, b), (c, d)]| [(x + a * r, y + b * r), (x + c * r, y + d * r)])
                    .collect(),
            )
        };
        match self {
            Mark::Circle => Shape::Circle(r),
            Mark::Square => poly(&[(-0.85, -0.85), (0.85, -0.85), (0.85, 0.85), (-0.85, 0.85)]),
            Mark::Triangle => poly(&[(0.0, -1.15), (1.05, 0.8), (-1.05, 0.8)]),
            Mark::Diamond => poly(&[(0.0, -1.25), (1.1, 0.0), (0.0, 1.25), (-1.1, 0.0)]),
            Mark::TriangleDown => poly(&[(0.0, 1.15), (1.05, -0.8), (-1.05, -0.8)]),
            Mark::Cross => segs(&[[(-0.9, -0.9), (0.9, 0.9)], [(-0.9, 0.9), (0.9, -0.9)]]),
            Mark::Plus => segs(&[[(-1.1, 0.0), (1.1, 0.0)], [(0.0, -1.1), (0.0, 1.1)]]),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    Start,
    Middle,
    End,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Prim {
    /// A polyline; `clip` limits it to the plot area.
    Line {
        pts: Vec<(f32, f32)>,
        color: Rgb,
        width: f32,
        dash: Option<(f32, f32)>,
        clip: bool,
    },
    Rect {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        fill: Option<Rgb>,
        stroke: Option<(Rgb, f32)>,
        clip: bool,
    },
    Marker {
        mark: Mark,
        x: f32,
        y: f32,
        r: f32,
        color: Rgb,
    },
    /// Text whose cap height is centred on `y`; `scale` is the bitmap
    /// font's pixel size (the SVG font size is 10 x scale); `rotated` turns
    /// it 90 degrees counter-clockwise about (x, y).
    Text {
        x: f32,
        y: f32,
        text: String,
        scale: u32,
        anchor: Anchor,
        rotated: bool,
        color: Rgb,
        bold: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scene {
    pub width: u32,
    pub height: u32,
    /// The plot area (x0, y0, x1, y1): where data are drawn and clipped.
    pub area: (f32, f32, f32, f32),
    pub prims: Vec<Prim>,
}

/// Width of `text` at font scale `s` (matches both renderers).
pub(crate) fn text_width(text: &str, s: u32) -> f32 {
    let n = text.chars().count() as u32;
    if n == 0 {
        0.0
    } else {
        (n * font::ADVANCE * s - s) as f32
    }
}

fn cap(s: u32) -> f32 {
    (font::CAP * s) as f32
}

const TICK_S: u32 = 2;
const LABEL_S: u32 = 2;
const TITLE_S: u32 = 3;
const PAD: f32 = 16.0;
const TICK_LEN: f32 = 6.0;
const LEGEND_ROW: f32 = 26.0;
const LEGEND_SAMPLE: f32 = 36.0;

// ---------------------------------------------------------------------------
// Axis ranges and ticks.

#[derive(Debug, Clone, PartialEq)]
struct Ticks {
    /// Range in value space.
    lo: f64,
    hi: f64,
    major: Vec<(f64, String)>,
    minor: Vec<f64>,
}

fn nice_step(raw: f64) -> f64 {
    let e = raw.log10().floor();
    let f = raw / 10f64.powf(e);
    let n = if f < 1.5 {
        1.0
    } else if f < 3.0 {
        2.0
    } else if f < 7.0 {
        5.0
    } else {
        10.0
    };
    n * 10f64.powf(e)
}

/// Formats a number for a log-axis label: powers of ten from 0.01 to 1000
/// in plain decimals, beyond that as `1e-3`, `1e4`; 2x and 5x likewise.
fn fmt_log(v: f64) -> String {
    let k = v.log10().floor() as i32;
    let m = (v / 10f64.powi(k)).round() as i64;
    let (m, k) = if m >= 10 { (m / 10, k + 1) } else { (m, k) };
    if (-2..=3).contains(&k) {
        let dec = (-k).max(0) as usize;
        format!("{:.*}", dec, m as f64 * 10f64.powi(k))
    } else {
        format!("{m}e{k}")
    }
}

/// Formats a linear-axis label with as many decimals as the step needs.
fn fmt_linear(v: f64, step: f64, max_abs: f64) -> String {
    if max_abs >= 1e7 {
        if v == 0.0 {
            return "0".into();
        }
        let digits = (v.abs().log10().floor() - step.log10().floor()).clamp(0.0, 6.0) as usize;
        let s = format!("{:.*e}", digits, v);
        let (mantissa, exp) = s.split_once('e').expect("{:e} has an exponent");
        let mantissa = if mantissa.contains('.') {
            mantissa.trim_end_matches('0').trim_end_matches('.')
        } else {
            mantissa
        };
        return format!("{mantissa}e{exp}");
    }
    let dec = (-(step.log10() + 1e-9).floor()).max(0.0) as usize;
    let s = format!("{:.*}", dec, v);
    match s.strip_prefix('-') {
        // A tick at zero computed as -0.0 or -1e-17 must not print as "-0.0".
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

fn ticks(axis: &Axis, data: &[f64], include_zero: bool) -> Ticks {
    match axis.scale {
        Scale::Linear => linear_ticks(axis.range, data, include_zero),
        Scale::Log10 => log_ticks(axis.range, data),
    }
}

fn linear_ticks(range: Option<(f64, f64)>, data: &[f64], include_zero: bool) -> Ticks {
    let finite = data.iter().copied().filter(|v| v.is_finite());
    let forced = range.filter(|(a, b)| a.is_finite() && b.is_finite() && a < b);
    let (mut a, mut b) = match forced {
        Some(r) => r,
        None => finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        }),
    };
    if a > b {
        (a, b) = (0.0, 1.0);
    }
    if forced.is_none() {
        if include_zero && a >= 0.0 {
            a = 0.0;
        }
        if a == b {
            let d = if a == 0.0 { 1.0 } else { a.abs() * 0.1 };
            (a, b) = (a - d, b + d);
            if include_zero && a < 0.0 && b > 0.0 && data.iter().all(|v| *v >= 0.0) {
                a = 0.0;
            }
        }
    }
    let step = nice_step((b - a) / 5.0);
    if forced.is_none() {
        a = (a / step).floor() * step;
        b = (b / step).ceil() * step;
    }
    let max_abs = a.abs().max(b.abs());
    let first = (a / step - 1e-9).ceil() as i64;
    let last = (b / step + 1e-9).floor() as i64;
    let major = (first..=last)
        .map(|k| {
            let v = k as f64 * step;
            (v, fmt_linear(v, step, max_abs))
        })
        .collect();
    Ticks {
        lo: a,
        hi: b,
        major,
        minor: Vec::new(),
    }
}

fn log_ticks(range: Option<(f64, f64)>, data: &[f64]) -> Ticks {
    let forced = range.filter(|(a, b)| *a > 0.0 && b.is_finite() && a < b);
    let (a, b) = match forced {
        Some(r) => r,
        None => {
            let pos = data.iter().copied().filter(|v| v.is_finite() && *v > 0.0);
            let (a, b) = pos.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
            if a > b {
                (1.0, 10.0)
            } else {
                let la = a.log10().floor();
                let mut lb = b.log10().ceil();
                if lb <= la {
                    lb = la + 1.0;
                }
                (10f64.powf(la), 10f64.powf(lb))
            }
        }
    };
    let (la, lb) = (a.log10(), b.log10());
    let eps = 1e-9;
    let decades: Vec<i32> = ((la - eps).ceil() as i32..=(lb + eps).floor() as i32).collect();
    let stride = decades.len().div_ceil(9).max(1);
    let mut major: Vec<(f64, String)> = decades
        .iter()
        .filter(|k| k.rem_euclid(stride as i32) == 0)
        .map(|&k| {
            let v = 10f64.powi(k);
            (v, fmt_log(v))
        })
        .collect();
    let in_range = |v: f64| v >= a * (1.0 - eps) && v <= b * (1.0 + eps);
    let mut minor = Vec::new();
    if decades.len() <= 10 {
        for k in la.floor() as i32..=lb.ceil() as i32 {
            for m in 2..=9 {
                let v = m as f64 * 10f64.powi(k);
                if in_range(v) {
                    minor.push(v);
                }
            }
        }
    }
    if major.len() < 2 {
        // Less than a decade in view: label the 2x and 5x ticks too.
        for k in la.floor() as i32..=lb.ceil() as i32 {
            for m in [2.0, 5.0] {
                let v = m * 10f64.powi(k);
                if in_range(v) {
                    major.push((v, fmt_log(v)));
                }
            }
        }
        major.sort_by(|x, y| x.0.total_cmp(&y.0));
    }
    Ticks {
        lo: a,
        hi: b,
        major,
        minor,
    }
}

/// Maps values of one axis to pixels.
#[derive(Debug, Clone, Copy)]
struct Map {
    log: bool,
    lo: f64,
    hi: f64,
    p0: f32,
    p1: f32,
}

impl Map {
    fn new(scale: Scale, t: &Ticks, p0: f32, p1: f32) -> Map {
        let log = scale == Scale::Log10;
        let f = |v: f64| if log { v.log10() } else { v };
        Map {
            log,
            lo: f(t.lo),
            hi: f(t.hi),
            p0,
            p1,
        }
    }

    /// The pixel of `v`, or None if it cannot be shown (not finite, or not
    /// positive on a log axis).
    fn px(&self, v: f64) -> Option<f32> {
        if !v.is_finite() || (self.log && v <= 0.0) {
            return None;
        }
        let t = if self.log { v.log10() } else { v };
        let frac = (t - self.lo) / (self.hi - self.lo);
        Some(self.p0 + (self.p1 - self.p0) * frac as f32)
    }
}

/// Which labels to draw so that none overlaps another: walking along the
/// axis, a label is kept if it starts `gap` past the end of the last kept
/// one. `extents` are each label's (start, end) pixels, in any order.
fn keep_apart(extents: &[(f32, f32)], gap: f32) -> Vec<bool> {
    let mut order: Vec<usize> = (0..extents.len()).collect();
    let lo = |i: usize| extents[i].0.min(extents[i].1);
    order.sort_by(|&a, &b| lo(a).total_cmp(&lo(b)));
    let mut keep = vec![false; extents.len()];
    let mut last_end = f32::NEG_INFINITY;
    for i in order {
        let (s, e) = extents[i];
        if s.min(e) >= last_end + gap {
            last_end = s.max(e);
            keep[i] = true;
        }
    }
    keep
}

// ---------------------------------------------------------------------------
// Layout.

impl Plot {
    pub(crate) fn scene(&self) -> Scene {
        let (w, h) = (self.width as f32, self.height as f32);
        let categories = match &self.kind {
            Kind::Bars { categories } => Some(categories),
            Kind::Lines => None,
        };
        let mut prims = Vec::new();
        prims.push(Prim::Rect {
            x: 0.0,
            y: 0.0,
            w,
            h,
            fill: Some(WHITE),
            stroke: None,
            clip: false,
        });

        // Ranges.
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        let ys: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(self.hlines.iter().map(|l| l.1))
            .collect();
        let y_nonneg = ys.iter().filter(|v| v.is_finite()).all(|v| *v >= 0.0);
        let yt = ticks(&self.y, &ys, y_nonneg || categories.is_some());
        let xt = match categories {
            Some(_) => None,
            None => Some(ticks(&self.x, &xs, false)),
        };

        // Legend entries: (name, colour, marker, dash of a reference line).
        type Entry = (String, Rgb, Option<Mark>, Option<(f32, f32)>);
        let mut entries: Vec<Entry> = Vec::new();
        for (i, s) in self.series.iter().enumerate() {
            let mark = categories.is_none().then_some(MARKS[i % MARKS.len()]);
            entries.push((s.name.clone(), PALETTE[i % PALETTE.len()], mark, None));
        }
        for (i, (label, _)) in self.hlines.iter().enumerate() {
            entries.push((label.clone(), REF, None, Some(ref_dash(i))));
        }
        let show_legend = self.legend != Legend::Hidden && !entries.is_empty();
        let legend_w = entries
            .iter()
            .map(|e| text_width(&e.0, LABEL_S))
            .fold(0.0, f32::max)
            + LEGEND_SAMPLE
            + 30.0;
        let legend_h = entries.len() as f32 * LEGEND_ROW + 12.0;

        // Margins.
        let y_label_w = yt
            .major
            .iter()
            .map(|t| text_width(&t.1, TICK_S))
            .fold(0.0, f32::max);
        let mut left = PAD + y_label_w + TICK_LEN + 8.0;
        if !self.y.title.is_empty() {
            left += cap(LABEL_S) + 16.0;
        }
        let top = if self.title.is_empty() {
            PAD + cap(TICK_S) / 2.0
        } else {
            PAD + cap(TITLE_S) + 22.0
        };
        let mut right = PAD;
        if show_legend && self.legend == Legend::Right {
            right += legend_w + 16.0;
        }
        if let Some(t) = xt.as_ref().and_then(|t| t.major.last()) {
            right = right.max(text_width(&t.1, TICK_S) / 2.0 + 6.0);
        }
        // Category labels turn vertical when they would not fit side by side.
        let mut rotate_cats = false;
        let mut x_labels_h = cap(TICK_S);
        if let Some(cats) = categories {
            let cat_w = (w - left - right) / cats.len().max(1) as f32;
            let widest = cats
                .iter()
                .map(|c| text_width(c, TICK_S))
                .fold(0.0, f32::max);
            if widest > cat_w - 8.0 {
                rotate_cats = true;
                x_labels_h = widest;
            }
        }
        let mut bottom = TICK_LEN + 10.0 + x_labels_h + PAD;
        if !self.x.title.is_empty() {
            bottom += cap(LABEL_S) + 16.0;
        }
        let (x0, y0, x1, y1) = (
            left.round(),
            top.round(),
            (w - right).round(),
            (h - bottom).round(),
        );
        let area = (x0, y0, x1, y1);
        let ym = Map::new(self.y.scale, &yt, y1, y0);

        // Title and axis titles.
        if !self.title.is_empty() {
            prims.push(text(
                w / 2.0,
                PAD + cap(TITLE_S) / 2.0,
                &self.title,
                TITLE_S,
                Anchor::Middle,
                INK,
                true,
            ));
        }
        if !self.x.title.is_empty() {
            let y = h - PAD - cap(LABEL_S) / 2.0;
            prims.push(text(
                (x0 + x1) / 2.0,
                y,
                &self.x.title,
                LABEL_S,
                Anchor::Middle,
                INK,
                false,
            ));
        }
        if !self.y.title.is_empty() {
            let x = PAD + cap(LABEL_S) / 2.0;
            let mut t = text(
                x,
                (y0 + y1) / 2.0,
                &self.y.title,
                LABEL_S,
                Anchor::Middle,
                INK,
                false,
            );
            if let Prim::Text { rotated, .. } = &mut t {
                *rotated = true;
            }
            prims.push(t);
        }

        // Grid, ticks and tick labels.
        let mut axis_marks = Vec::new();
        let ypos: Vec<(f32, &str)> = yt
            .major
            .iter()
            .filter_map(|(v, l)| Some((ym.px(*v)?, l.as_str())))
            .collect();
        let half = cap(TICK_S) / 2.0;
        let extents: Vec<(f32, f32)> = ypos.iter().map(|p| (p.0 - half, p.0 + half)).collect();
        let keep = keep_apart(&extents, 4.0);
        for (i, &(py, label)) in ypos.iter().enumerate() {
            let py = crisp(py);
            prims.push(hline_prim(x0, x1, py, GRID, 1.0));
            axis_marks.push(hline_prim(x0 - TICK_LEN, x0, py, INK, 1.0));
            if keep[i] {
                axis_marks.push(text(
                    x0 - TICK_LEN - 6.0,
                    py,
                    label,
                    TICK_S,
                    Anchor::End,
                    INK,
                    false,
                ));
            }
        }
        for v in &yt.minor {
            if let Some(py) = ym.px(*v) {
                axis_marks.push(hline_prim(x0 - TICK_LEN / 2.0, x0, crisp(py), INK, 1.0));
            }
        }
        let label_y = y1 + TICK_LEN + 8.0 + cap(TICK_S) / 2.0;
        let mut xm = None;
        if let Some(xt) = &xt {
            let m = Map::new(self.x.scale, xt, x0, x1);
            xm = Some(m);
            let xpos: Vec<(f32, &str)> = xt
                .major
                .iter()
                .filter_map(|(v, l)| Some((m.px(*v)?, l.as_str())))
                .collect();
            let extents: Vec<(f32, f32)> = xpos
                .iter()
                .map(|&(px, l)| {
                    (
                        px - text_width(l, TICK_S) / 2.0,
                        px + text_width(l, TICK_S) / 2.0,
                    )
                })
                .collect();
            let keep = keep_apart(&extents, 12.0);
            for (i, &(px, label)) in xpos.iter().enumerate() {
                let px = crisp(px);
                prims.push(vline_prim(px, y0, y1, GRID, 1.0));
                axis_marks.push(vline_prim(px, y1, y1 + TICK_LEN, INK, 1.0));
                if keep[i] {
                    axis_marks.push(text(px, label_y, label, TICK_S, Anchor::Middle, INK, false));
                }
            }
            for v in &xt.minor {
                if let Some(px) = m.px(*v) {
                    axis_marks.push(vline_prim(crisp(px), y1, y1 + TICK_LEN / 2.0, INK, 1.0));
                }
            }
        }

        // Data.
        let inside =
            |px: f32, py: f32| px >= x0 - 0.5 && px <= x1 + 0.5 && py >= y0 - 0.5 && py <= y1 + 0.5;
        match (categories, xm) {
            (Some(cats), _) => {
                let n = cats.len().max(1);
                let cat_w = (x1 - x0) / n as f32;
                let bar_w = cat_w * 0.8 / self.series.len().max(1) as f32;
                let base = if ym.log {
                    y1
                } else {
                    ym.px(0.0_f64.clamp(yt.lo, yt.hi)).unwrap_or(y1)
                };
                for (j, s) in self.series.iter().enumerate() {
                    let color = PALETTE[j % PALETTE.len()];
                    for &(ci, v) in &s.points {
                        if !(ci >= 0.0 && (ci as usize) < cats.len() && ci.fract() == 0.0) {
                            continue;
                        }
                        let Some(py) = ym.px(v) else { continue };
                        let py = py.clamp(y0, y1);
                        let bx = x0 + ci as f32 * cat_w + cat_w * 0.1 + j as f32 * bar_w;
                        prims.push(Prim::Rect {
                            x: bx,
                            y: py.min(base),
                            w: bar_w,
                            h: (py - base).abs(),
                            fill: Some(color),
                            stroke: Some((color.darker(), 1.0)),
                            clip: true,
                        });
                    }
                }
                for (i, c) in cats.iter().enumerate() {
                    let cx = crisp(x0 + (i as f32 + 0.5) * cat_w);
                    if rotate_cats {
                        let mut t =
                            text(cx, y1 + TICK_LEN + 8.0, c, TICK_S, Anchor::End, INK, false);
                        if let Prim::Text { rotated, .. } = &mut t {
                            *rotated = true;
                        }
                        axis_marks.push(t);
                    } else {
                        axis_marks.push(text(cx, label_y, c, TICK_S, Anchor::Middle, INK, false));
                    }
                }
            }
            (None, Some(xm)) => {
                for (i, s) in self.series.iter().enumerate() {
                    let color = PALETTE[i % PALETTE.len()];
                    let mark = MARKS[i % MARKS.len()];
                    let pts: Vec<(f32, f32)> = s
                        .points
                        .iter()
                        .filter_map(|&(x, y)| Some((xm.px(x)?, ym.px(y)?)))
                        .collect();
                    if pts.len() > 1 {
                        prims.push(Prim::Line {
                            pts: pts.clone(),
                            color,
                            width: 2.5,
                            dash: None,
                            clip: true,
                        });
                    }
                    for (px, py) in pts {
                        if inside(px, py) {
                            prims.push(Prim::Marker {
                                mark,
                                x: px,
                                y: py,
                                r: 5.0,
                                color,
                            });
                        }
                    }
                }
            }
            (None, None) => unreachable!("a line plot has an x axis"),
        }
        for (i, (_, v)) in self.hlines.iter().enumerate() {
            if let Some(py) = ym.px(*v) {
                prims.push(Prim::Line {
                    pts: vec![(x0, py), (x1, py)],
                    color: REF,
                    width: 2.0,
                    dash: Some(ref_dash(i)),
                    clip: true,
                });
            }
        }

        // Frame over the data, then ticks and labels.
        prims.push(Prim::Rect {
            x: x0 + 0.5,
            y: y0 + 0.5,
            w: x1 - x0 - 1.0,
            h: y1 - y0 - 1.0,
            fill: None,
            stroke: Some((INK, 1.0)),
            clip: false,
        });
        prims.extend(axis_marks);

        // Legend.
        if show_legend {
            let (lx, ly) = match self.legend {
                Legend::Right => (x1 + 16.0, y0),
                Legend::TopLeft => (x0 + 12.0, y0 + 12.0),
                Legend::TopRight => (x1 - 12.0 - legend_w, y0 + 12.0),
                Legend::BottomLeft => (x0 + 12.0, y1 - 12.0 - legend_h),
                Legend::BottomRight => (x1 - 12.0 - legend_w, y1 - 12.0 - legend_h),
                Legend::Hidden => unreachable!(),
            };
            let (lx, ly) = (lx.round() + 0.5, ly.round() + 0.5);
            prims.push(Prim::Rect {
                x: lx,
                y: ly,
                w: legend_w.round(),
                h: legend_h.round(),
                fill: Some(WHITE),
                stroke: Some((Rgb(160, 160, 160), 1.0)),
                clip: false,
            });
            for (i, (name, color, mark, dash)) in entries.iter().enumerate() {
                let cy = (ly + 6.0 + (i as f32 + 0.5) * LEGEND_ROW).round();
                let sx = lx + 10.0;
                if categories.is_some() && dash.is_none() {
                    prims.push(Prim::Rect {
                        x: sx + 6.0,
                        y: cy - 8.0,
                        w: LEGEND_SAMPLE - 12.0,
                        h: 16.0,
                        fill: Some(*color),
                        stroke: Some((color.darker(), 1.0)),
                        clip: false,
                    });
                } else {
                    prims.push(Prim::Line {
                        pts: vec![(sx, cy), (sx + LEGEND_SAMPLE, cy)],
                        color: *color,
                        width: if dash.is_some() { 2.0 } else { 2.5 },
                        dash: *dash,
                        clip: false,
                    });
                }
                if let Some(mark) = mark {
                    prims.push(Prim::Marker {
                        mark: *mark,
                        x: sx + LEGEND_SAMPLE / 2.0,
                        y: cy,
                        r: 5.0,
                        color: *color,
                    });
                }
                prims.push(text(
                    sx + LEGEND_SAMPLE + 10.0,
                    cy,
                    name,
                    LABEL_S,
                    Anchor::Start,
                    INK,
                    false,
                ));
            }
        }

        Scene {
            width: self.width,
            height: self.height,
            area,
            prims,
        }
    }
}

fn ref_dash(i: usize) -> (f32, f32) {
    [(9.0, 6.0), (3.0, 4.0), (14.0, 4.0)][i % 3]
}

/// Centre of the pixel row/column `v` falls in, so 1 px lines are sharp.
fn crisp(v: f32) -> f32 {
    v.floor() + 0.5
}

fn hline_prim(xa: f32, xb: f32, y: f32, color: Rgb, width: f32) -> Prim {
    Prim::Line {
        pts: vec![(xa, y), (xb, y)],
        color,
        width,
        dash: None,
        clip: false,
    }
}

fn vline_prim(x: f32, ya: f32, yb: f32, color: Rgb, width: f32) -> Prim {
    Prim::Line {
        pts: vec![(x, ya), (x, yb)],
        color,
        width,
        dash: None,
        clip: false,
    }
}

fn text(x: f32, y: f32, s: &str, scale: u32, anchor: Anchor, color: Rgb, bold: bool) -> Prim {
    Prim::Text {
        x,
        y,
        text: s.to_string(),
        scale,
        anchor,
        rotated: false,
        color,
        bold,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(t: &Ticks) -> Vec<&str> {
        t.major.iter().map(|m| m.1.as_str()).collect()
    }

    #[test]
    fn log_ticks_over_the_selectivity_range() {
        let t = log_ticks(Some((1e-3, 100.0)), &[]);
        assert_eq!(labels(&t), ["1e-3", "0.01", "0.1", "1", "10", "100"]);
        assert_eq!(t.minor.len(), 5 * 8);
        let t = log_ticks(None, &[0.5, 2.0e5]);
        assert_eq!((t.lo, t.hi), (0.1, 1e6));
        assert_eq!(
            labels(&t),
            ["0.1", "1", "10", "100", "1000", "1e4", "1e5", "1e6"]
        );
    }

    #[test]
    fn narrow_log_range_labels_2_and_5() {
        let t = log_ticks(Some((1.5, 8.0)), &[]);
        assert_eq!(labels(&t), ["2", "5"]);
        let t = log_ticks(None, &[3.0]);
        assert_eq!(labels(&t), ["1", "10"]);
    }

    #[test]
    fn linear_ticks_are_nice() {
        let t = linear_ticks(None, &[3.0, 97.0], true);
        assert_eq!((t.lo, t.hi), (0.0, 100.0));
        assert_eq!(labels(&t), ["0", "20", "40", "60", "80", "100"]);
        let t = linear_ticks(None, &[0.13, 0.42], false);
        assert_eq!(
            labels(&t),
            [
                "0.10", "0.15", "0.20", "0.25", "0.30", "0.35", "0.40", "0.45"
            ]
        );
        let t = linear_ticks(None, &[-1.0, 2.5], false);
        assert_eq!(
            labels(&t),
            ["-1.0", "-0.5", "0.0", "0.5", "1.0", "1.5", "2.0", "2.5"]
        );
        let t = linear_ticks(None, &[5.0], true);
        assert_eq!(t.lo, 0.0);
        let t = linear_ticks(None, &[0.0, 3.0e8], true);
        assert_eq!(
            labels(&t),
            ["0", "5e7", "1e8", "1.5e8", "2e8", "2.5e8", "3e8"]
        );
    }

    /// Checks that `svg` is well-formed enough for any XML parser: tags
    /// balance, attributes are quoted, text has no raw `<` or stray `&`.
    fn assert_well_formed(svg: &str) {
        let mut stack: Vec<&str> = Vec::new();
        let mut rest = svg;
        let mut elements = 0;
        while let Some(lt) = rest.find('<') {
            let text = &rest[..lt];
            for (i, _) in text.match_indices('&') {
                let ent = &text[i..];
                assert!(
                    ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                        .iter()
                        .any(|e| ent.starts_with(e)),
                    "stray & in {text:?}"
                );
            }
            let gt = rest[lt..].find('>').expect("unclosed tag") + lt;
            let tag = &rest[lt + 1..gt];
            assert!(!tag.contains('<'), "< inside tag {tag:?}");
            assert_eq!(
                tag.matches('"').count() % 2,
                0,
                "unbalanced quotes in {tag:?}"
            );
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop(), Some(name.trim()), "mismatched </{name}>");
            } else if !tag.starts_with('?') && !tag.starts_with('!') {
                elements += 1;
                let name = tag.split([' ', '/']).next().unwrap();
                if !tag.ends_with('/') {
                    stack.push(name);
                }
            }
            rest = &rest[gt + 1..];
        }
        assert!(rest.trim().is_empty(), "text after the root element");
        assert!(stack.is_empty(), "unclosed {stack:?}");
        assert!(elements > 10);
    }

    fn demo() -> Plot {
        Plot::lines(
            "Q1 <all> & more",
            Axis::log10("selectivity (%)").range(1e-3, 100.0),
            Axis::linear("time (ms)").range(0.0, 10.0),
        )
        .series("flat \"five\"", [(1e-3, 5.0), (100.0, 5.0)])
        .series("rising", [(1e-3, 1.0), (0.1, 2.0), (100.0, 9.0)])
        .hline("SLA < 8", 8.0)
    }

    #[test]
    fn svg_is_well_formed_and_names_the_series() {
        let svg = demo().to_svg();
        assert_well_formed(&svg);
        assert!(svg.starts_with("<?xml"));
        for s in [
            "flat &quot;five&quot;",
            "rising",
            "SLA &lt; 8",
            "Q1 &lt;all&gt; &amp; more",
        ] {
            assert!(svg.contains(&format!(">{s}</text>")), "{s} missing");
        }
        assert!(svg.contains("stroke-dasharray"), "reference line is dashed");
        for t in ["1e-3", "0.01", "0.1", ">1<", ">10<", ">100<"] {
            assert!(svg.contains(t), "tick {t} missing");
        }
        let bars = Plot::bars(
            "I/O requests",
            "query",
            ["Q1", "Q6"],
            Axis::log10("requests"),
        )
        .bar_series("full", [10.0, 2000.0])
        .bar_series("smooth", [5.0, 0.0]);
        assert_well_formed(&bars.to_svg());
        let empty = Plot::lines("", Axis::linear(""), Axis::linear(""));
        assert_well_formed(&empty.to_svg());
    }

    /// An RGB image decoded from our PNG.
    struct Image {
        width: u32,
        rgb: Vec<u8>,
    }

    fn rgb_at(img: &Image, x: f32, y: f32) -> Rgb {
        let i = (y as usize * img.width as usize + x as usize) * 3;
        Rgb(img.rgb[i], img.rgb[i + 1], img.rgb[i + 2])
    }

    #[test]
    fn png_decodes_and_draws_the_lines() {
        let plot = demo().size(800, 500);
        let png = plot.to_png().unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!((w, h), (800, 500));
        let (width, height, rgb) = png::decode_rgb(&png).unwrap();
        assert_eq!((width, height), (800, 500));
        let pm = Image { width, rgb };

        let (x0, y0, x1, y1) = plot.scene().area;
        let mid_y = (y0 + y1) / 2.0; // y = 5 on a 0..10 axis
        // Between markers, away from grid lines: the flat series' colour.
        let x = x0 + (x1 - x0) * 0.3;
        assert_eq!(rgb_at(&pm, x, mid_y), PALETTE[0]);
        // The SLA line at y = 8 is dashed: some pixels along it are ink,
        // some are not.
        let sla_y = y1 - (y1 - y0) * 0.8;
        let along: Vec<Rgb> = (0..60)
            .map(|i| rgb_at(&pm, x0 + 100.0 + i as f32, sla_y))
            .collect();
        assert!(
            along.contains(&REF) && along.iter().any(|p| *p != REF),
            "{along:?}"
        );
        assert_eq!(rgb_at(&pm, 2.0, 2.0), WHITE, "background");
        // The title has ink near the top centre.
        let title_ink = (0..400).any(|i| {
            let p = rgb_at(&pm, 200.0 + i as f32, PAD + 10.0);
            p != WHITE
        });
        assert!(title_ink);
    }

    #[test]
    fn png_bars_fill_their_categories() {
        let plot = Plot::bars("pages", "query", ["Q1", "Q6"], Axis::linear("pages"))
            .bar_series("full", [100.0, 100.0])
            .bar_series("smooth", [50.0, 0.0])
            .size(600, 400);
        let (width, _, rgb) = png::decode_rgb(&plot.to_png().unwrap()).unwrap();
        let pm = Image { width, rgb };
        let (x0, _, x1, y1) = plot.scene().area;
        let cat_w = (x1 - x0) / 2.0;
        // First bar of the first group, just above the baseline.
        let x = x0 + cat_w * 0.1 + cat_w * 0.2;
        assert_eq!(rgb_at(&pm, x, y1 - 5.0), PALETTE[0]);
        let x = x0 + cat_w * 0.1 + cat_w * 0.6;
        assert_eq!(rgb_at(&pm, x, y1 - 5.0), PALETTE[1]);
    }

    #[test]
    fn write_makes_svg_and_png() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("results/exp/fig.v2");
        demo().write(&stem).unwrap();
        assert!(dir.path().join("results/exp/fig.v2.svg").is_file());
        assert!(dir.path().join("results/exp/fig.v2.png").is_file());
    }

    #[test]
    fn log_labels() {
        let f: Vec<String> = [1e-4, 1e-3, 0.01, 0.02, 0.5, 1.0, 5.0, 1000.0, 1e4, 2e5]
            .iter()
            .map(|v| fmt_log(*v))
            .collect();
        assert_eq!(
            f,
            [
                "1e-4", "1e-3", "0.01", "0.02", "0.5", "1", "5", "1000", "1e4", "2e5"
            ]
        );
    }
}
