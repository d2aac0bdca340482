//! Writes a [`Scene`] as SVG text.

use std::fmt::Write;

use super::{Anchor, Prim, Rgb, Scene, Shape, font};

/// Monospace so that text widths match the layout (0.6 em per character).
const FONT: &str = "DejaVu Sans Mono, Menlo, Consolas, Liberation Mono, monospace";

pub(crate) fn render(scene: &Scene) -> String {
    let (w, h) = (scene.width, scene.height);
    let (x0, y0, x1, y1) = scene.area;
    let mut s = String::new();
    let _ = writeln!(s, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT}">"#
    );
    let _ = writeln!(
        s,
        r#"<defs><clipPath id="plot-area"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath></defs>"#,
        n(x0),
        n(y0),
        n(x1 - x0),
        n(y1 - y0)
    );
    for p in &scene.prims {
        prim(&mut s, p);
    }
    s.push_str("</svg>\n");
    s
}

fn prim(s: &mut String, p: &Prim) {
    const CLIP: &str = r#" clip-path="url(#plot-area)""#;
    match p {
        Prim::Line {
            pts,
            color,
            width,
            dash,
            clip,
        } => {
            let points: Vec<String> = pts
                .iter()
                .map(|&(x, y)| format!("{},{}", n(x), n(y)))
                .collect();
            let _ = write!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="{}" stroke-linejoin="round""#,
                points.join(" "),
                hex(*color),
                n(*width)
            );
            if let Some((on, off)) = dash {
                let _ = write!(s, r#" stroke-dasharray="{} {}""#, n(*on), n(*off));
            } else {
                s.push_str(r#" stroke-linecap="round""#);
            }
            if *clip {
                s.push_str(CLIP);
            }
            s.push_str("/>\n");
        }
        Prim::Rect {
            x,
            y,
            w,
            h,
            fill,
            stroke,
            clip,
        } => {
            let _ = write!(
                s,
                r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}""#,
                n(*x),
                n(*y),
                n(*w),
                n(*h),
                fill.map_or("none".to_string(), hex)
            );
            if let Some((c, sw)) = stroke {
                let _ = write!(s, r#" stroke="{}" stroke-width="{}""#, hex(*c), n(*sw));
            }
            if *clip {
                s.push_str(CLIP);
            }
            s.push_str("/>\n");
        }
        Prim::Marker {
            mark,
            x,
            y,
            r,
            color,
        } => match mark.shape(*x, *y, *r) {
            Shape::Circle(r) => {
                let _ = writeln!(
                    s,
                    r##"<circle cx="{}" cy="{}" r="{}" fill="{}" stroke="#ffffff" stroke-width="1"/>"##,
                    n(*x),
                    n(*y),
                    n(r),
                    hex(*color)
                );
            }
            Shape::Polygon(pts) => {
                let points: Vec<String> = pts
                    .iter()
                    .map(|&(x, y)| format!("{},{}", n(x), n(y)))
                    .collect();
                let _ = writeln!(
                    s,
                    r##"<polygon points="{}" fill="{}" stroke="#ffffff" stroke-width="1"/>"##,
                    points.join(" "),
                    hex(*color)
                );
            }
            Shape::Strokes(segs) => {
                let d: Vec<String> = segs
                    .iter()
                    .map(|[(a, b), (c, e)]| format!("M{},{}L{},{}", n(*a), n(*b), n(*c), n(*e)))
                    .collect();
                let _ = writeln!(
                    s,
                    r#"<path d="{}" fill="none" stroke="{}" stroke-width="2.5" stroke-linecap="round"/>"#,
                    d.concat(),
                    hex(*color)
                );
            }
        },
        Prim::Text {
            x,
            y,
            text,
            scale,
            anchor,
            rotated,
            color,
            bold,
        } => {
            let size = 10 * scale;
            // The layout centres the cap height on y; the baseline is half a
            // cap height below.
            let drop = (font::CAP * scale) as f32 / 2.0;
            let anchor = match anchor {
                Anchor::Start => "start",
                Anchor::Middle => "middle",
                Anchor::End => "end",
            };
            let weight = if *bold { r#" font-weight="bold""# } else { "" };
            let placement = if *rotated {
                format!(
                    r#"x="0" y="{}" transform="translate({} {}) rotate(-90)""#,
                    n(drop),
                    n(*x),
                    n(*y)
                )
            } else {
                format!(r#"x="{}" y="{}""#, n(*x), n(*y + drop))
            };
            let _ = writeln!(
                s,
                r#"<text {placement} font-size="{size}" text-anchor="{anchor}" fill="{}"{weight}>{}</text>"#,
                hex(*color),
                escape(text)
            );
        }
    }
}

fn hex(c: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// A coordinate with at most two decimals and no trailing zeros.
fn n(v: f32) -> String {
    let s = format!("{:.2}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
