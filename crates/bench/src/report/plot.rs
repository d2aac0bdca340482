//! Line, scatter and grouped-bar plots, drawn with `plotters` and written as SVG and
//! PNG.
//!
//! One drawing routine, generic over the plotters backend, draws the figure
//! once on the SVG backend and once on the bitmap backend, so the two files
//! show the same picture. The SVG is small, diffable text; the PNG is for
//! viewers that show images but not SVG. Text in the PNG is rasterized from
//! an embedded font (see `FONT` below), so no system font is needed.
//!
//! ```no_run
//! use strata_bench::report::plot::{Axis, Plot};
//! let plot = Plot::lines(
//!     "Q1: time vs selectivity",
//!     Axis::log10("selectivity (%)"),
//!     Axis::log10("time (ms)"),
//! )
//! .series("full scan", [(1e-3, 900.0), (100.0, 950.0)])
//! .series("smooth scan", [(1e-3, 2.0), (100.0, 1000.0)])
//! .hline("SLA", 1200.0);
//! plot.write("results/smooth_scan/fig7").unwrap(); // fig7.svg + fig7.png
//! ```

use std::ffi::OsString;
use std::fs;
use std::io;
use std::ops::Range;
use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Set by [`label_quick_run`]: every plot's title ends "(quick run)".
static QUICK_RUN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Marks the plots this process draws from now on as a quick run's (small
/// sizes, few points: `--quick`), in their titles, so that a picture is never
/// taken for a full run's.
pub fn label_quick_run() {
    QUICK_RUN.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// How an axis maps values to positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Decades equally spaced; values <= 0 cannot be shown and are skipped.
    Log10,
}

/// An axis: its title and scale. The range fits the data: whole decades on
/// a log axis, "nice" numbers on a linear one, zero included on a linear
/// value axis whose data are all >= 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub title: String,
    pub scale: Scale,
}

impl Axis {
    pub fn linear(title: impl Into<String>) -> Axis {
        Axis {
            title: title.into(),
            scale: Scale::Linear,
        }
    }

    pub fn log10(title: impl Into<String>) -> Axis {
        Axis {
            title: title.into(),
            scale: Scale::Log10,
        }
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
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Lines,
    /// A scatter plot: a small dot per point, nothing joining them.
    Points,
    Bars {
        categories: Vec<String>,
    },
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

    /// A scatter plot: each series is a cloud of small dots, not joined
    /// (e.g. an I/O trace: device address against time).
    pub fn points(title: impl Into<String>, x: Axis, y: Axis) -> Plot {
        Plot {
            kind: Kind::Points,
            ..Plot::lines(title, x, y)
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
        self,
        name: impl Into<String>,
        values: impl IntoIterator<Item = f64>,
    ) -> Plot {
        let points = values.into_iter().enumerate().map(|(i, v)| (i as f64, v));
        self.series(name, points)
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
        let mut svg = String::new();
        let backend = SVGBackend::with_string(&mut svg, (self.width, self.height));
        // Writing into a String cannot fail, and the font is built in.
        self.draw(backend.into_drawing_area())
            .expect("drawing an SVG into a string");
        svg
    }

    /// The plot as PNG bytes.
    pub fn to_png(&self) -> io::Result<Vec<u8>> {
        Ok(self.render_png()?.0)
    }

    /// The PNG and the pixel rectangle of its plot area (for the tests).
    fn render_png(&self) -> io::Result<(Vec<u8>, PixelArea)> {
        let (w, h) = (self.width, self.height);
        let mut rgb = vec![0u8; w as usize * h as usize * 3];
        let area = {
            let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
            let area = self.draw(root.clone()).map_err(io_error)?;
            root.present().map_err(io_error)?;
            area
        };
        Ok((encode_png(&rgb, w, h)?, area))
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

/// An RGB bitmap of `w` x `h` pixels as PNG bytes.
pub(crate) fn encode_png(rgb: &[u8], w: u32, h: u32) -> io::Result<Vec<u8>> {
    let mut png = Vec::new();
    let mut encoder = png::Encoder::new(&mut png, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(io::Error::other)?;
    writer.write_image_data(rgb).map_err(io::Error::other)?;
    writer.finish().map_err(io::Error::other)?;
    Ok(png)
}

pub(crate) fn io_error<E: std::error::Error + Send + Sync>(
    e: DrawingAreaErrorKind<E>,
) -> io::Error {
    io::Error::other(e.to_string())
}

// ---------------------------------------------------------------------------
// Style.

/// The font of all text: Noto Sans Regular (Apache-2.0), embedded by the
/// `ttf-noto-sans` crate. plotters' `ab_glyph` feature draws text only with
/// fonts registered from bytes, and CI machines need not have any system
/// font; of the crates that embed a permissive font, this one is a single
/// 200 KB file with no dependencies and no build script, and it keeps font
/// files out of the repository.
const FONT: &[u8] = ttf_noto_sans::REGULAR;

/// The font's name in plotters' registry, and the SVG's `font-family`: a
/// viewer without Noto Sans uses its own sans-serif font (text is laid out
/// with Noto's widths, so the legend box leaves room for a wider font).
pub(crate) const FAMILY: &str = "Noto Sans, sans-serif";

pub(crate) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let ok = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok();
        assert!(ok, "the embedded Noto Sans does not parse");
    });
}

fn font(size: u32) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&INK)
}

pub(crate) const INK: RGBColor = RGBColor(34, 34, 34);
const GRID: RGBColor = RGBColor(222, 222, 222);
const GRID_MINOR: RGBColor = RGBColor(242, 242, 242);
const REF: RGBColor = RGBColor(70, 70, 70);
const LEGEND_BORDER: RGBColor = RGBColor(160, 160, 160);

/// Okabe-Ito colours (distinguishable with the common colour-vision
/// deficiencies), with brown in place of yellow, which is unreadable on white.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(153, 79, 0),
];

fn darker(c: RGBColor) -> RGBColor {
    let d = |v: u8| (v as f32 * 0.65) as u8;
    RGBColor(d(c.0), d(c.1), d(c.2))
}

/// Dash and gap lengths of the i-th reference line.
fn ref_dash(i: usize) -> (i32, i32) {
    [(9, 6), (3, 4), (14, 4)][i % 3]
}

/// Draws the marker of the i-th series at pixel (x, y): circle, square,
/// triangle, diamond, downward triangle, cross, plus, then again.
fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    i: usize,
    (x, y): (i32, i32),
    color: RGBColor,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (fill, pen) = (color.filled(), color.stroke_width(2));
    let at = |pts: &[(i32, i32)]| -> Vec<(i32, i32)> {
        pts.iter().map(|&(dx, dy)| (x + dx, y + dy)).collect()
    };
    let path = |pts: &[(i32, i32)]| PathElement::new(at(pts), pen);
    match i % 7 {
        0 => area.draw(&Circle::new((x, y), 5, fill)),
        1 => area.draw(&Rectangle::new([(x - 4, y - 4), (x + 4, y + 4)], fill)),
        2 => area.draw(&Polygon::new(at(&[(0, -6), (5, 4), (-5, 4)]), fill)),
        3 => area.draw(&Polygon::new(at(&[(0, -6), (5, 0), (0, 6), (-5, 0)]), fill)),
        4 => area.draw(&Polygon::new(at(&[(0, 6), (5, -4), (-5, -4)]), fill)),
        5 => {
            area.draw(&path(&[(-4, -4), (4, 4)]))?;
            area.draw(&path(&[(-4, 4), (4, -4)]))
        }
        _ => {
            area.draw(&path(&[(-5, 0), (5, 0)]))?;
            area.draw(&path(&[(0, -5), (0, 5)]))
        }
    }
}

const TICK_FONT: u32 = 21;

/// Radius (pixels) of a scatter plot's dots.
const DOT: u32 = 2;
const LABEL_FONT: u32 = 22;
const TITLE_FONT: u32 = 27;
const PAD: i32 = 16;
const TICK_LEN: i32 = 6;
const LEGEND_ROW: i32 = 30;
const LEGEND_SAMPLE: i32 = 36;

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

fn linear_ticks(data: &[f64], include_zero: bool) -> Ticks {
    let finite = data.iter().copied().filter(|v| v.is_finite());
    let (mut a, mut b) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if a > b {
        (a, b) = (0.0, 1.0);
    }
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
    let step = nice_step((b - a) / 5.0);
    a = (a / step).floor() * step;
    b = (b / step).ceil() * step;
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

fn log_ticks(data: &[f64]) -> Ticks {
    let pos = data.iter().copied().filter(|v| v.is_finite() && *v > 0.0);
    let (a, b) = pos.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let (la, lb) = if a > b {
        (0, 1)
    } else {
        let la = a.log10().floor() as i32;
        (la, (b.log10().ceil() as i32).max(la + 1))
    };
    // Every decade gets a tick; at most about 9 are labelled.
    let stride = (lb - la + 9) / 9;
    let major = (la..=lb)
        .filter(|k| k.rem_euclid(stride) == 0)
        .map(|k| (10f64.powi(k), fmt_log(10f64.powi(k))))
        .collect();
    let minor = if lb - la < 10 {
        (la..lb)
            .flat_map(|k| (2..=9).map(move |m| m as f64 * 10f64.powi(k)))
            .collect()
    } else {
        Vec::new()
    };
    Ticks {
        lo: 10f64.powi(la),
        hi: 10f64.powi(lb),
        major,
        minor,
    }
}

/// One axis as plotters sees it: our scale, range and ticks. Implementing
/// [`Ranged`] for it lets one chart type serve all four combinations of
/// linear and log axes, and plotters draw our ticks and labels.
struct AxisCoord {
    log: bool,
    ticks: Ticks,
}

impl AxisCoord {
    fn new(scale: Scale, ticks: Ticks) -> AxisCoord {
        AxisCoord {
            log: scale == Scale::Log10,
            ticks,
        }
    }
}

impl Ranged for AxisCoord {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, (p0, p1): (i32, i32)) -> i32 {
        let f = |v: f64| if self.log { v.log10() } else { v };
        let (lo, hi) = (f(self.ticks.lo), f(self.ticks.hi));
        let frac = (f(*v) - lo) / (hi - lo);
        let frac = if frac.is_finite() { frac } else { 0.0 };
        (p0 as f64 + (p1 - p0) as f64 * frac).round() as i32
    }

    /// The labelled ticks; with light points allowed (plotters' pass for
    /// the fine grid) also the unlabelled log-axis ticks 2..9 x 10^k.
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        let major = self.ticks.major.iter().map(|m| m.0);
        if hint.weight().allow_light_points() {
            major.chain(self.ticks.minor.iter().copied()).collect()
        } else {
            major.collect()
        }
    }

    fn range(&self) -> Range<f64> {
        self.ticks.lo..self.ticks.hi
    }
}

impl ValueFormatter<f64> for AxisCoord {
    fn format_ext(&self, v: &f64) -> String {
        let label = self.ticks.major.iter().find(|m| m.0 == *v);
        label.map(|m| m.1.clone()).unwrap_or_default()
    }
}

/// Pixel ranges (x, y) of a plot area.
type PixelArea = (Range<i32>, Range<i32>);

/// What a legend entry shows beside its name.
enum Sample {
    /// The i-th series' line and marker.
    Line(usize),
    /// A bar of the series' colour.
    Bar,
    /// A dot of the series' colour.
    Dot,
    /// The i-th reference line's dashes.
    Ref(usize),
}

// ---------------------------------------------------------------------------
// Drawing.

impl Plot {
    fn categories(&self) -> Option<&[String]> {
        match &self.kind {
            Kind::Bars { categories } => Some(categories),
            Kind::Lines | Kind::Points => None,
        }
    }

    /// The x and y axes with their ranges and ticks.
    fn axes(&self) -> (AxisCoord, AxisCoord) {
        let points = || self.series.iter().flat_map(|s| s.points.iter());
        let ys: Vec<f64> = points()
            .map(|p| p.1)
            .chain(self.hlines.iter().map(|l| l.1))
            .collect();
        let y_nonneg = ys.iter().filter(|v| v.is_finite()).all(|v| *v >= 0.0);
        let ticks = |axis: &Axis, data: &[f64], include_zero: bool| match axis.scale {
            Scale::Linear => linear_ticks(data, include_zero),
            Scale::Log10 => log_ticks(data),
        };
        let y = ticks(&self.y, &ys, y_nonneg || self.categories().is_some());
        let x = match self.categories() {
            // One unit per category, labelled at its centre.
            Some(cats) => Ticks {
                lo: 0.0,
                hi: cats.len().max(1) as f64,
                major: (cats.iter().enumerate())
                    .map(|(i, c)| (i as f64 + 0.5, c.clone()))
                    .collect(),
                minor: Vec::new(),
            },
            None => ticks(&self.x, &points().map(|p| p.0).collect::<Vec<_>>(), false),
        };
        (
            AxisCoord::new(self.x.scale, x),
            AxisCoord::new(self.y.scale, y),
        )
    }

    /// Draws the plot on `root`; returns the plot area's pixels.
    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> Result<PixelArea, DrawingAreaErrorKind<DB::ErrorType>> {
        register_font();
        let bars = self.categories().is_some();
        let (xc, yc) = self.axes();
        root.fill(&WHITE)?;
        let text_w = |s: &str, size: u32| -> Result<i32, DrawingAreaErrorKind<DB::ErrorType>> {
            Ok(root.estimate_text_size(s, &font(size))?.0 as i32)
        };

        let mut area = root.margin(PAD / 2, 0, 0, 0);
        let title = match QUICK_RUN.load(std::sync::atomic::Ordering::Relaxed) {
            true if self.title.is_empty() => "quick run".to_string(),
            true => format!("{} (quick run)", self.title),
            false => self.title.clone(),
        };
        if !title.is_empty() {
            area = area.titled(&title, font(TITLE_FONT))?;
        }

        // Legend entries and size.
        let mut entries: Vec<(&str, RGBColor, Sample)> = Vec::new();
        for (i, s) in self.series.iter().enumerate() {
            let sample = match self.kind {
                Kind::Bars { .. } => Sample::Bar,
                Kind::Points => Sample::Dot,
                Kind::Lines => Sample::Line(i),
            };
            entries.push((&s.name, PALETTE[i % PALETTE.len()], sample));
        }
        for (i, (label, _)) in self.hlines.iter().enumerate() {
            entries.push((label, REF, Sample::Ref(i)));
        }
        let mut legend_w = 0;
        for e in &entries {
            legend_w = legend_w.max(text_w(e.0, TICK_FONT)?);
        }
        let legend_w = legend_w * 6 / 5 + LEGEND_SAMPLE + 24;
        let legend_h = entries.len() as i32 * LEGEND_ROW + 12;
        let show_legend = !entries.is_empty();
        let legend_outside = show_legend && self.legend == Legend::Right;
        let mut legend_x = 0;
        if legend_outside {
            let (x, w) = (area.get_pixel_range().0, legend_w + PAD);
            legend_x = x.end - w;
            area = area.split_horizontally(x.end - x.start - w).0;
        }

        // Room for tick labels and axis titles.
        let mut y_labels_w = 0;
        for (_, label) in &yc.ticks.major {
            y_labels_w = y_labels_w.max(text_w(label, TICK_FONT)?);
        }
        let mut y_area = y_labels_w + 2 * TICK_LEN + 4;
        if !self.y.title.is_empty() {
            y_area += LABEL_FONT as i32 + 2;
        }
        let mut x_area = 2 * TICK_LEN + TICK_FONT as i32;
        if !self.x.title.is_empty() {
            x_area += LABEL_FONT as i32 + 4;
        }

        // Whether a value can be shown: finite, and positive on a log axis.
        let shows = |log: bool, v: f64| v.is_finite() && !(log && v <= 0.0);
        let (x_log, y_log) = (xc.log, yc.log);
        let (x_lo, x_hi) = (xc.ticks.lo, xc.ticks.hi);
        let (y_lo, y_hi) = (yc.ticks.lo, yc.ticks.hi);
        let mut chart = ChartBuilder::on(&area)
            .margin(PAD)
            .margin_top(PAD / 2)
            .x_label_area_size(x_area)
            .y_label_area_size(y_area)
            .build_cartesian_2d(xc, yc)?;
        let mut mesh = chart.configure_mesh();
        mesh.label_style(font(TICK_FONT))
            .axis_desc_style(font(LABEL_FONT))
            .axis_style(INK)
            .bold_line_style(GRID)
            .light_line_style(GRID_MINOR)
            .set_all_tick_mark_size(TICK_LEN);
        if !self.x.title.is_empty() {
            mesh.x_desc(&self.x.title);
        }
        if !self.y.title.is_empty() {
            mesh.y_desc(&self.y.title);
        }
        if bars {
            mesh.disable_x_mesh();
        }
        mesh.draw()?;

        // Data.
        if let Some(cats) = self.categories() {
            let width = 0.8 / self.series.len().max(1) as f64;
            let base = if self.y.scale == Scale::Log10 {
                y_lo
            } else {
                0f64.clamp(y_lo, y_hi)
            };
            for (j, s) in self.series.iter().enumerate() {
                let color = PALETTE[j % PALETTE.len()];
                let shown = s.points.iter().filter(|&&(ci, v)| {
                    ci >= 0.0 && ci < cats.len() as f64 && ci.fract() == 0.0 && shows(y_log, v)
                });
                chart.draw_series(shown.flat_map(|&(ci, v)| {
                    let x0 = ci + 0.1 + j as f64 * width;
                    let corners = [(x0, base), (x0 + width, v.clamp(y_lo, y_hi))];
                    [
                        Rectangle::new(corners, color.filled()),
                        Rectangle::new(corners, darker(color).stroke_width(1)),
                    ]
                }))?;
            }
        } else {
            for (i, s) in self.series.iter().enumerate() {
                let color = PALETTE[i % PALETTE.len()];
                let pts: Vec<(f64, f64)> = (s.points.iter().copied())
                    .filter(|&(x, y)| shows(x_log, x) && shows(y_log, y))
                    .collect();
                if self.kind == Kind::Points {
                    let dots = pts.iter().map(|&p| Circle::new(p, DOT, color.filled()));
                    chart.draw_series(dots)?;
                    continue;
                }
                chart.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?;
                for p in &pts {
                    draw_marker(&root, i, chart.backend_coord(p), color)?;
                }
            }
        }
        for (i, &(_, y)) in self.hlines.iter().enumerate() {
            if shows(y_log, y) {
                let (dash, gap) = ref_dash(i);
                chart.draw_series(DashedLineSeries::new(
                    [(x_lo, y), (x_hi, y)],
                    dash,
                    gap,
                    REF.stroke_width(2),
                ))?;
            }
        }

        // A frame around the plot area, then the legend.
        let (px, py) = chart.plotting_area().get_pixel_range();
        root.draw(&Rectangle::new(
            [(px.start, py.start), (px.end - 1, py.end - 1)],
            INK.stroke_width(1),
        ))?;
        if show_legend {
            let (lx, ly) = match self.legend {
                Legend::Right => (legend_x, py.start),
                Legend::TopLeft => (px.start + 12, py.start + 12),
                Legend::TopRight => (px.end - 12 - legend_w, py.start + 12),
            };
            let corners = [(lx, ly), (lx + legend_w, ly + legend_h)];
            root.draw(&Rectangle::new(corners, WHITE.filled()))?;
            root.draw(&Rectangle::new(corners, LEGEND_BORDER.stroke_width(1)))?;
            let label = font(TICK_FONT).pos(Pos::new(HPos::Left, VPos::Center));
            for (k, (name, color, sample)) in entries.iter().enumerate() {
                let cy = ly + 6 + k as i32 * LEGEND_ROW + LEGEND_ROW / 2;
                let (sx, ex) = (lx + 10, lx + 10 + LEGEND_SAMPLE);
                match *sample {
                    Sample::Line(i) => {
                        root.draw(&PathElement::new(
                            [(sx, cy), (ex, cy)],
                            color.stroke_width(2),
                        ))?;
                        draw_marker(&root, i, ((sx + ex) / 2, cy), *color)?;
                    }
                    Sample::Dot => {
                        root.draw(&Circle::new(((sx + ex) / 2, cy), 4, color.filled()))?;
                    }
                    Sample::Bar => {
                        let corners = [(sx + 6, cy - 8), (ex - 6, cy + 8)];
                        root.draw(&Rectangle::new(corners, color.filled()))?;
                        root.draw(&Rectangle::new(corners, darker(*color).stroke_width(1)))?;
                    }
                    Sample::Ref(i) => {
                        let (dash, gap) = ref_dash(i);
                        let pts = [(sx, cy), (ex, cy)];
                        let style = REF.stroke_width(2);
                        root.draw(&DashedPathElement::new(pts, dash, gap, style))?;
                    }
                }
                root.draw_text(name, &label, (ex + 10, cy))?;
            }
        }
        Ok((px, py))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(t: &Ticks) -> Vec<&str> {
        t.major.iter().map(|m| m.1.as_str()).collect()
    }

    #[test]
    fn log_ticks_fit_whole_decades() {
        let t = log_ticks(&[1e-3, 100.0]);
        assert_eq!((t.lo, t.hi), (1e-3, 100.0));
        assert_eq!(labels(&t), ["1e-3", "0.01", "0.1", "1", "10", "100"]);
        assert_eq!(t.minor.len(), 5 * 8);
        let t = log_ticks(&[0.5, 2.0e5, -1.0, f64::NAN]);
        assert_eq!((t.lo, t.hi), (0.1, 1e6));
        assert_eq!(
            labels(&t),
            ["0.1", "1", "10", "100", "1000", "1e4", "1e5", "1e6"]
        );
        let t = log_ticks(&[3.0]);
        assert_eq!(labels(&t), ["1", "10"]);
        // Many decades: every other one labelled, no minor ticks.
        let t = log_ticks(&[1e-6, 1e8]);
        assert_eq!(labels(&t).len(), 8);
        assert!(t.minor.is_empty());
        let t = log_ticks(&[]);
        assert_eq!((t.lo, t.hi), (1.0, 10.0));
    }

    #[test]
    fn linear_ticks_are_nice() {
        let t = linear_ticks(&[3.0, 97.0], true);
        assert_eq!((t.lo, t.hi), (0.0, 100.0));
        assert_eq!(labels(&t), ["0", "20", "40", "60", "80", "100"]);
        let t = linear_ticks(&[0.13, 0.42], false);
        assert_eq!(
            labels(&t),
            [
                "0.10", "0.15", "0.20", "0.25", "0.30", "0.35", "0.40", "0.45"
            ]
        );
        let t = linear_ticks(&[-1.0, 2.5], false);
        assert_eq!(
            labels(&t),
            ["-1.0", "-0.5", "0.0", "0.5", "1.0", "1.5", "2.0", "2.5"]
        );
        let t = linear_ticks(&[5.0], true);
        assert_eq!(t.lo, 0.0);
        let t = linear_ticks(&[0.0, 3.0e8], true);
        assert_eq!(
            labels(&t),
            ["0", "5e7", "1e8", "1.5e8", "2e8", "2.5e8", "3e8"]
        );
    }

    #[test]
    fn axis_coord_maps_linear_and_log() {
        let lin = AxisCoord::new(Scale::Linear, linear_ticks(&[0.0, 10.0], true));
        assert_eq!(lin.map(&5.0, (100, 200)), 150);
        assert_eq!(lin.map(&10.0, (500, 100)), 100, "y runs upwards");
        let log = AxisCoord::new(Scale::Log10, log_ticks(&[1e-3, 100.0]));
        assert_eq!(log.map(&1.0, (0, 500)), 300);
        assert_eq!(log.format_ext(&0.01), "0.01");
        assert_eq!(log.format_ext(&0.02), "", "minor ticks are not labelled");
        assert_eq!(
            log.key_points(plotters::coord::ranged1d::BoldPoints(10))
                .len(),
            6
        );
        assert_eq!(log.key_points(10).len(), 6 + 40);
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
                let name = tag.split([' ', '/', '\n']).next().unwrap();
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

    /// The text of every `<text>` element of `svg`.
    fn svg_texts(svg: &str) -> Vec<&str> {
        svg.split("<text")
            .skip(1)
            .map(|t| {
                let body = &t[t.find('>').unwrap() + 1..];
                body[..body.find("</text>").unwrap()].trim()
            })
            .collect()
    }

    fn demo() -> Plot {
        Plot::lines(
            "Q1 <all> & more",
            Axis::log10("selectivity (%)"),
            Axis::linear("time (ms)"),
        )
        .series("flat \"five\"", [(1e-3, 5.0), (100.0, 5.0)])
        .series("rising", [(1e-3, 1.0), (0.1, 2.0), (100.0, 9.0)])
        .hline("SLA < 8", 8.0)
        .hline("ceiling", 10.0)
    }

    #[test]
    fn svg_is_well_formed_and_names_everything() {
        let svg = demo().to_svg();
        assert_well_formed(&svg);
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
        let texts = svg_texts(&svg);
        for s in [
            "flat &quot;five&quot;",
            "rising",
            "SLA &lt; 8",
            "ceiling",
            "Q1 &lt;all&gt; &amp; more",
            "selectivity (%)",
            "time (ms)",
        ] {
            assert!(texts.contains(&s), "{s} missing from {texts:?}");
        }
        for t in ["1e-3", "0.01", "0.1", "1", "10", "100", "0", "2", "8"] {
            assert!(texts.contains(&t), "tick {t} missing from {texts:?}");
        }
        // No tick label is drawn twice (plotters' light pass draws none).
        assert_eq!(texts.iter().filter(|t| **t == "0.01").count(), 1);

        let bars = Plot::bars(
            "I/O requests",
            "query",
            ["Q1", "Q6"],
            Axis::log10("requests"),
        )
        .bar_series("full", [10.0, 2000.0])
        .bar_series("smooth", [5.0, 0.0]);
        let svg = bars.to_svg();
        assert_well_formed(&svg);
        let texts = svg_texts(&svg);
        for s in ["Q1", "Q6", "full", "smooth", "requests", "query", "1000"] {
            assert!(texts.contains(&s), "{s} missing from {texts:?}");
        }
        let empty = Plot::lines("", Axis::linear(""), Axis::linear(""));
        assert_well_formed(&empty.to_svg());
    }

    /// An RGB image decoded from our PNG.
    struct Image {
        width: u32,
        height: u32,
        rgb: Vec<u8>,
    }

    impl Image {
        fn decode(bytes: &[u8]) -> Image {
            let mut reader = png::Decoder::new(io::Cursor::new(bytes))
                .read_info()
                .unwrap();
            let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
            let info = reader.next_frame(&mut rgb).unwrap();
            assert_eq!(info.color_type, png::ColorType::Rgb);
            Image {
                width: info.width,
                height: info.height,
                rgb,
            }
        }

        fn at(&self, x: i32, y: i32) -> RGBColor {
            let i = (y as usize * self.width as usize + x as usize) * 3;
            RGBColor(self.rgb[i], self.rgb[i + 1], self.rgb[i + 2])
        }
    }

    #[test]
    fn png_decodes_and_draws_the_lines() {
        let plot = demo().size(800, 500);
        let (png, (px, py)) = plot.render_png().unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let img = Image::decode(&png);
        assert_eq!((img.width, img.height), (800, 500));
        assert_eq!(plot.to_png().unwrap(), png, "same picture twice");

        // y runs 0..10 on the plot area; x from 1e-3 to 100 (5 decades).
        let y_of = |v: f64| py.end - 1 - ((py.len() - 1) as f64 * v / 10.0).round() as i32;
        let x_of = |decades: f64| px.start + ((px.len() - 1) as f64 * decades / 5.0) as i32;
        // Between markers: the flat series' colour at y = 5.
        let x = x_of(1.5);
        assert!(
            (-1..=1).any(|d| img.at(x, y_of(5.0) + d) == PALETTE[0]),
            "no flat line at y = 5"
        );
        // The SLA line at y = 8 is dashed: some pixels along it are its
        // colour, some are not.
        let along: Vec<RGBColor> = (0..60).map(|i| img.at(x + i, y_of(8.0))).collect();
        assert!(
            along.contains(&REF) && along.iter().any(|p| *p != REF),
            "{along:?}"
        );
        // Nothing at y = 7.
        assert!((0..60).all(|i| img.at(x + i, y_of(7.0)) != REF));
        assert_eq!(img.at(2, 2), WHITE, "background");
        // The frame is ink.
        assert_eq!(img.at(px.end - 1, (py.start + py.end) / 2), INK);
        // The title has ink above the plot area, near the top centre.
        let title_ink = (0..py.start).any(|y| (300..500).any(|x| img.at(x, y) != WHITE));
        assert!(title_ink);
        // The legend is right of the plot area and has the series' colours.
        let legend: Vec<RGBColor> = (px.end..800)
            .flat_map(|x| (py.start..py.start + 80).map(move |y| (x, y)))
            .map(|(x, y)| img.at(x, y))
            .collect();
        assert!(legend.contains(&PALETTE[0]) && legend.contains(&PALETTE[1]));
    }

    #[test]
    fn png_bars_fill_their_categories() {
        let plot = Plot::bars("pages", "query", ["Q1", "Q6"], Axis::linear("pages"))
            .bar_series("full", [100.0, 100.0])
            .bar_series("smooth", [50.0, 0.0])
            .legend(Legend::TopLeft)
            .size(600, 400);
        let (png, (px, py)) = plot.render_png().unwrap();
        let img = Image::decode(&png);
        let cat_w = px.len() as f64 / 2.0;
        let x_at = |cats: f64| px.start + (cat_w * cats) as i32;
        let above_base = py.end - 5;
        // Both bars of the first group, just above the baseline.
        assert_eq!(img.at(x_at(0.1 + 0.2), above_base), PALETTE[0]);
        assert_eq!(img.at(x_at(0.1 + 0.6), above_base), PALETTE[1]);
        // The second group's "smooth" bar is 0: no bar there.
        assert_eq!(img.at(x_at(1.0 + 0.1 + 0.6), above_base), WHITE);
        // "smooth" in Q1 reaches half way up the 0..100 axis.
        let mid = (py.start + py.end) / 2;
        assert_eq!(img.at(x_at(0.1 + 0.6), mid + 5), PALETTE[1]);
        assert_ne!(img.at(x_at(0.1 + 0.6), mid - 5), PALETTE[1]);
    }

    #[test]
    fn points_are_dots_without_lines() {
        let plot = Plot::points("trace", Axis::linear("time"), Axis::linear("page"))
            .series("table reads", [(0.0, 0.0), (10.0, 10.0)])
            .size(600, 400);
        let svg = plot.to_svg();
        assert_well_formed(&svg);
        assert!(svg_texts(&svg).contains(&"table reads"));
        let as_lines = Plot::lines("trace", Axis::linear("time"), Axis::linear("page"))
            .series("table reads", [(0.0, 0.0), (10.0, 10.0)])
            .size(600, 400)
            .to_svg();
        let polylines = |svg: &str| svg.matches("<polyline").count();
        // The line plot has two more: its data line and its legend's sample.
        assert_eq!(
            polylines(&svg) + 2,
            polylines(&as_lines),
            "no line joins the dots"
        );
        let (png, (px, py)) = plot.render_png().unwrap();
        let img = Image::decode(&png);
        // A dot at each end of the diagonal, nothing half way along it.
        assert_eq!(img.at(px.start + 1, py.end - 2), PALETTE[0]);
        let (mx, my) = ((px.start + px.end) / 2, (py.start + py.end) / 2);
        assert!((-3..=3).all(|d| img.at(mx + d, my + d) != PALETTE[0]));
    }

    #[test]
    fn write_makes_svg_and_png() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("results/exp/fig.v2");
        demo().write(&stem).unwrap();
        let svg = fs::read_to_string(dir.path().join("results/exp/fig.v2.svg")).unwrap();
        assert_eq!(svg, demo().to_svg());
        let png = fs::read(dir.path().join("results/exp/fig.v2.png")).unwrap();
        assert_eq!(png, demo().to_png().unwrap());
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
