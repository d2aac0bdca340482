//! A heat map of ratios (rows × columns of coloured cells with their numbers),
//! written as SVG and PNG with plotters: the robustness figure's "layout ×
//! selectivity → worst ratio of Smooth Scan to the best classical path".
//!
//! Cells are green up to 1.2, yellow up to 1.5, orange up to 3 and red above
//! ([`colour`]); a cell without a value is grey with a dash. Text is drawn by
//! plotters' `ab_glyph` feature with Noto Sans Regular from the `ttf-noto-sans`
//! crate, registered by `plot.rs` (one font, one family name for both), so
//! no system font is needed.

use std::io;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::report::plot::{FAMILY, INK, encode_png, io_error, register_font};

const GREY: RGBColor = RGBColor(225, 225, 225);
const GREEN: RGBColor = RGBColor(120, 200, 120);
const YELLOW: RGBColor = RGBColor(250, 220, 90);
const ORANGE: RGBColor = RGBColor(245, 150, 70);
const RED: RGBColor = RGBColor(215, 60, 50);

/// The colour of a ratio: green ≤ 1.2, yellow ≤ 1.5, orange ≤ 3, red above;
/// grey when there is none.
pub fn colour(value: Option<f64>) -> RGBColor {
    match value {
        None => GREY,
        Some(v) if v <= 1.2 => GREEN,
        Some(v) if v <= 1.5 => YELLOW,
        Some(v) if v <= 3.0 => ORANGE,
        Some(_) => RED,
    }
}

/// The text of a cell: two decimals below 10, one below 100, none above.
pub fn label(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// A heat map to draw.
#[derive(Clone, Debug, Default)]
pub struct Heatmap {
    pub title: String,
    pub row_labels: Vec<String>,
    pub column_labels: Vec<String>,
    /// `values[row][column]`; `None`: not measured.
    pub values: Vec<Vec<Option<f64>>>,
    /// Cell texts replacing [`label`] of the value (e.g. `>20` for a lower
    /// bound); an empty string keeps the default.
    pub cell_text: Vec<Vec<String>>,
    /// Title of the column axis, drawn above the column labels.
    pub column_title: String,
    /// Lines under the map (e.g. the worst cell).
    pub notes: Vec<String>,
}

/// Writes a heat map of `values` (`values[row][column]`, `None` for a cell
/// without a value) to `stem.svg` and `stem.png`.
pub fn write_heatmap(
    title: &str,
    row_labels: &[String],
    column_labels: &[String],
    values: &[Vec<Option<f64>>],
    stem: &Path,
) -> io::Result<()> {
    Heatmap {
        title: title.to_string(),
        row_labels: row_labels.to_vec(),
        column_labels: column_labels.to_vec(),
        values: values.to_vec(),
        ..Heatmap::default()
    }
    .write(stem)
}

/// Sizes in pixels at scale 1.
const MARGIN: u32 = 16;
const CELL_W: u32 = 74;
const CELL_H: u32 = 34;
const TITLE_H: u32 = 34;
const AXIS_H: u32 = 22;
const HEAD_H: u32 = 26;
const NOTE_H: u32 = 20;
const LEGEND_H: u32 = 30;

impl Heatmap {
    fn row_label_width(&self) -> u32 {
        let longest = self.row_labels.iter().map(|l| l.len()).max().unwrap_or(0) as u32;
        (longest * 9 + 16).max(80)
    }

    fn columns(&self) -> usize {
        self.column_labels
            .len()
            .max(self.values.iter().map(Vec::len).max().unwrap_or(0))
    }

    /// Size in pixels at scale 1.
    pub fn size(&self) -> (u32, u32) {
        let w = 2 * MARGIN + self.row_label_width() + CELL_W * self.columns() as u32;
        let title_w = 2 * MARGIN + self.title.len() as u32 * 10;
        let note_w = self
            .notes
            .iter()
            .map(|n| 2 * MARGIN + n.len() as u32 * 7)
            .max()
            .unwrap_or(0);
        let h = MARGIN
            + TITLE_H
            + AXIS_H
            + HEAD_H
            + CELL_H * self.row_labels.len().max(self.values.len()) as u32
            + 8
            + LEGEND_H
            + NOTE_H * self.notes.len() as u32
            + MARGIN;
        (w.max(title_w).max(note_w).max(520), h)
    }

    /// Writes `stem.svg` and `stem.png` (the PNG at twice the size).
    pub fn write(&self, stem: &Path) -> io::Result<()> {
        register_font();
        if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let (w, h) = self.size();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
            self.draw(&root, 1).map_err(io_error)?;
            root.present().map_err(io_error)?;
        }
        std::fs::write(stem.with_extension("svg"), svg)?;

        let (pw, ph) = (2 * w, 2 * h);
        let mut rgb = vec![255u8; (pw * ph * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut rgb, (pw, ph)).into_drawing_area();
            self.draw(&root, 2).map_err(io_error)?;
            root.present().map_err(io_error)?;
        }
        std::fs::write(stem.with_extension("png"), encode_png(&rgb, pw, ph)?)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        scale: u32,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        let s = |v: u32| (v * scale) as i32;
        let font = |size: u32| (FAMILY, (size * scale) as f64).into_font();
        area.fill(&WHITE)?;
        let left = MARGIN + self.row_label_width();
        let mut y = MARGIN;
        area.draw(&Text::new(
            self.title.clone(),
            (s(MARGIN), s(y)),
            font(19).color(&INK),
        ))?;
        y += TITLE_H;
        let ncol = self.columns() as u32;
        let centre = |pos: Pos, size: u32| font(size).color(&INK).pos(pos);
        area.draw(&Text::new(
            self.column_title.clone(),
            (s(left + CELL_W * ncol / 2), s(y + AXIS_H / 2)),
            centre(Pos::new(HPos::Center, VPos::Center), 14),
        ))?;
        y += AXIS_H;
        for (c, l) in self.column_labels.iter().enumerate() {
            let x = left + CELL_W * c as u32 + CELL_W / 2;
            area.draw(&Text::new(
                l.clone(),
                (s(x), s(y + HEAD_H / 2)),
                centre(Pos::new(HPos::Center, VPos::Center), 14),
            ))?;
        }
        y += HEAD_H;
        let nrow = self.row_labels.len().max(self.values.len());
        for r in 0..nrow {
            let top = y + CELL_H * r as u32;
            if let Some(l) = self.row_labels.get(r) {
                area.draw(&Text::new(
                    l.clone(),
                    (s(left - 10), s(top + CELL_H / 2)),
                    centre(Pos::new(HPos::Right, VPos::Center), 15),
                ))?;
            }
            for c in 0..ncol as usize {
                let x0 = left + CELL_W * c as u32;
                let v = self
                    .values
                    .get(r)
                    .and_then(|row| row.get(c))
                    .copied()
                    .flatten();
                area.draw(&Rectangle::new(
                    [(s(x0), s(top)), (s(x0 + CELL_W), s(top + CELL_H))],
                    colour(v).filled(),
                ))?;
                area.draw(&Rectangle::new(
                    [(s(x0), s(top)), (s(x0 + CELL_W), s(top + CELL_H))],
                    WHITE.stroke_width(scale),
                ))?;
                let text = self
                    .cell_text
                    .get(r)
                    .and_then(|row| row.get(c))
                    .filter(|t| !t.is_empty())
                    .cloned()
                    .unwrap_or_else(|| v.map_or("–".to_string(), label));
                let ink = if v.is_some_and(|v| v > 3.0) {
                    WHITE
                } else {
                    INK
                };
                area.draw(&Text::new(
                    text,
                    (s(x0 + CELL_W / 2), s(top + CELL_H / 2)),
                    font(15)
                        .color(&ink)
                        .pos(Pos::new(HPos::Center, VPos::Center)),
                ))?;
            }
        }
        y += CELL_H * nrow as u32 + 8;
        // Legend.
        let mut x = MARGIN;
        for (value, text) in [
            (Some(1.0), "≤ 1.2"),
            (Some(1.4), "≤ 1.5"),
            (Some(2.0), "≤ 3"),
            (Some(4.0), "> 3"),
            (None, "not measured"),
        ] {
            area.draw(&Rectangle::new(
                [(s(x), s(y + 6)), (s(x + 18), s(y + 22))],
                colour(value).filled(),
            ))?;
            area.draw(&Text::new(
                text.to_string(),
                (s(x + 24), s(y + 14)),
                centre(Pos::new(HPos::Left, VPos::Center), 13),
            ))?;
            x += 36 + 8 * text.chars().count() as u32;
        }
        y += LEGEND_H;
        for n in &self.notes {
            area.draw(&Text::new(
                n.clone(),
                (s(MARGIN), s(y + NOTE_H / 2)),
                centre(Pos::new(HPos::Left, VPos::Center), 13),
            ))?;
            y += NOTE_H;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_and_labels() {
        assert_eq!(colour(Some(1.2)), GREEN);
        assert_eq!(colour(Some(1.21)), YELLOW);
        assert_eq!(colour(Some(1.5)), YELLOW);
        assert_eq!(colour(Some(2.0)), ORANGE);
        assert_eq!(colour(Some(30.0)), RED);
        assert_eq!(colour(None), GREY);
        assert_eq!(
            [0.5, 12.34, 250.0].map(label),
            ["0.50".to_string(), "12.3".into(), "250".into()]
        );
    }

    #[test]
    fn writes_svg_and_png() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("out/map");
        let rows = vec!["uniform".to_string(), "dense-start".into()];
        let cols = vec!["0.001".to_string(), "1".into(), "band".into()];
        write_heatmap(
            "test map",
            &rows,
            &cols,
            &[
                vec![Some(1.0), Some(1.3), None],
                vec![Some(2.5), Some(42.0), Some(0.9)],
            ],
            &stem,
        )
        .unwrap();
        let svg = std::fs::read_to_string(stem.with_extension("svg")).unwrap();
        for t in ["test map", "dense-start", "42.0", "1.30", "band"] {
            assert!(svg.contains(t), "{t} missing");
        }
        let png = std::fs::read(stem.with_extension("png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let (w, h) = Heatmap {
            row_labels: rows,
            column_labels: cols,
            ..Heatmap::default()
        }
        .size();
        assert_eq!(
            u32::from_be_bytes(png[16..20].try_into().unwrap()),
            2 * w,
            "PNG at twice the size"
        );
        assert!(h > 100);
    }
}
