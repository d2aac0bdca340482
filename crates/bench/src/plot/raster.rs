//! Rasterizes a [`Scene`] to PNG with tiny-skia and the built-in font.

use std::io;

use tiny_skia::{
    Color, FillRule, LineCap, LineJoin, Mask, Paint, PathBuilder, Pixmap, Rect, Stroke, StrokeDash,
    Transform,
};

use super::{Anchor, Prim, Rgb, Scene, Shape, font, text_width};

pub(crate) fn render(scene: &Scene) -> io::Result<Vec<u8>> {
    let pm = draw(scene)?;
    // Everything is drawn opaque on an opaque background, so the
    // premultiplied RGBA pixels are plain RGB with alpha 255.
    let rgb: Vec<u8> = pm
        .data()
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect();
    Ok(super::png::encode_rgb(pm.width(), pm.height(), &rgb))
}

pub(crate) fn draw(scene: &Scene) -> io::Result<Pixmap> {
    let err = || {
        io::Error::other(format!(
            "cannot make a {}x{} image",
            scene.width, scene.height
        ))
    };
    let mut pm = Pixmap::new(scene.width, scene.height).ok_or_else(err)?;
    pm.fill(Color::WHITE);
    let (x0, y0, x1, y1) = scene.area;
    let mut clip = Mask::new(scene.width, scene.height).ok_or_else(err)?;
    if let Some(r) = Rect::from_ltrb(x0, y0, x1, y1) {
        clip.fill_path(
            &PathBuilder::from_rect(r),
            FillRule::Winding,
            false,
            Transform::identity(),
        );
    }
    for p in &scene.prims {
        prim(&mut pm, &clip, p);
    }
    Ok(pm)
}

fn paint(c: Rgb, anti_alias: bool) -> Paint<'static> {
    let mut p = Paint::default();
    p.set_color_rgba8(c.0, c.1, c.2, 255);
    p.anti_alias = anti_alias;
    p
}

fn prim(pm: &mut Pixmap, clip: &Mask, p: &Prim) {
    let id = Transform::identity();
    match p {
        Prim::Line {
            pts,
            color,
            width,
            dash,
            clip: clipped,
        } => {
            let mut pb = PathBuilder::new();
            for (i, &(x, y)) in pts.iter().enumerate() {
                if i == 0 {
                    pb.move_to(x, y);
                } else {
                    pb.line_to(x, y);
                }
            }
            let Some(path) = pb.finish() else { return };
            let stroke = Stroke {
                width: *width,
                line_cap: if dash.is_some() {
                    LineCap::Butt
                } else {
                    LineCap::Round
                },
                line_join: LineJoin::Round,
                dash: dash.and_then(|(on, off)| StrokeDash::new(vec![on, off], 0.0)),
                ..Stroke::default()
            };
            // Axis-parallel hairlines look sharper without anti-aliasing.
            let aa =
                !(*width <= 1.0 && pts.windows(2).all(|w| w[0].0 == w[1].0 || w[0].1 == w[1].1));
            let mask = clipped.then_some(clip);
            pm.stroke_path(&path, &paint(*color, aa), &stroke, id, mask);
        }
        Prim::Rect {
            x,
            y,
            w,
            h,
            fill,
            stroke,
            clip: clipped,
        } => {
            let Some(r) = Rect::from_xywh(*x, *y, w.max(0.01), h.max(0.01)) else {
                return;
            };
            let mask = clipped.then_some(clip);
            if let Some(c) = fill {
                pm.fill_rect(r, &paint(*c, true), id, mask);
            }
            if let Some((c, sw)) = stroke {
                let s = Stroke {
                    width: *sw,
                    ..Stroke::default()
                };
                pm.stroke_path(
                    &PathBuilder::from_rect(r),
                    &paint(*c, *sw > 1.0),
                    &s,
                    id,
                    mask,
                );
            }
        }
        Prim::Marker {
            mark,
            x,
            y,
            r,
            color,
        } => {
            let outline = Stroke {
                width: 1.0,
                ..Stroke::default()
            };
            let white = paint(Rgb(255, 255, 255), true);
            match mark.shape(*x, *y, *r) {
                Shape::Circle(r) => {
                    if let Some(path) = PathBuilder::from_circle(*x, *y, r) {
                        pm.fill_path(&path, &paint(*color, true), FillRule::Winding, id, None);
                        pm.stroke_path(&path, &white, &outline, id, None);
                    }
                }
                Shape::Polygon(pts) => {
                    let mut pb = PathBuilder::new();
                    for (i, &(px, py)) in pts.iter().enumerate() {
                        if i == 0 {
                            pb.move_to(px, py);
                        } else {
                            pb.line_to(px, py);
                        }
                    }
                    pb.close();
                    if let Some(path) = pb.finish() {
                        pm.fill_path(&path, &paint(*color, true), FillRule::Winding, id, None);
                        pm.stroke_path(&path, &white, &outline, id, None);
                    }
                }
                Shape::Strokes(segs) => {
                    let mut pb = PathBuilder::new();
                    for [(a, b), (c, d)] in segs {
                        pb.move_to(a, b);
                        pb.line_to(c, d);
                    }
                    let s = Stroke {
                        width: 2.5,
                        line_cap: LineCap::Round,
                        ..Stroke::default()
                    };
                    if let Some(path) = pb.finish() {
                        pm.stroke_path(&path, &paint(*color, true), &s, id, None);
                    }
                }
            }
        }
        Prim::Text {
            x,
            y,
            text,
            scale,
            anchor,
            rotated,
            color,
            bold,
        } => draw_text(pm, *x, *y, text, *scale, *anchor, *rotated, *color, *bold),
    }
}

/// Draws `text` with the bitmap font: each font pixel is a `scale` x
/// `scale` square, positioned on whole device pixels so edges stay sharp.
#[allow(clippy::too_many_arguments)]
fn draw_text(
    pm: &mut Pixmap,
    x: f32,
    y: f32,
    text: &str,
    scale: u32,
    anchor: Anchor,
    rotated: bool,
    color: Rgb,
    bold: bool,
) {
    let s = scale as f32;
    let w = text_width(text, scale);
    let u0 = match anchor {
        Anchor::Start => 0.0,
        Anchor::Middle => -(w / 2.0).round(),
        Anchor::End => -w,
    };
    let v0 = -(font::CAP as f32 * s / 2.0).round();
    let mut pb = PathBuilder::new();
    for (i, c) in text.chars().enumerate() {
        let gx = u0 + (i as u32 * font::ADVANCE * scale) as f32;
        for (col, row) in font::pixels(c) {
            let px = gx + col as f32 * s;
            let py = v0 + row as f32 * s;
            let extra = if bold { (s / 2.0).ceil() } else { 0.0 };
            if let Some(r) = Rect::from_xywh(px, py, s + extra, s) {
                pb.push_rect(r);
            }
        }
    }
    let Some(path) = pb.finish() else { return };
    let (tx, ty) = (x.round(), y.round());
    let t = if rotated {
        // (u, v) -> (tx + v, ty - u): text reads bottom to top.
        Transform::from_row(0.0, -1.0, 1.0, 0.0, tx, ty)
    } else {
        Transform::from_translate(tx, ty)
    };
    pm.fill_path(&path, &paint(color, false), FillRule::Winding, t, None);
}
