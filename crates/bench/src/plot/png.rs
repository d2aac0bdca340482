//! A minimal PNG encoder (8-bit RGB, one IDAT chunk).
//!
//! Why not tiny-skia's own `encode_png`: it pulls in the `png` crate and a
//! second deflate implementation, which doubled the crate's cold build;
//! the format itself is a few chunks around a zlib stream, and
//! `miniz_oxide` (pure Rust, small) does the compression.

/// Encodes `rgb` (`width * height * 3` bytes, rows top to bottom) as PNG.
pub(crate) fn encode_rgb(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
    let stride = width as usize * 3;
    assert_eq!(rgb.len(), stride * height as usize, "image size");
    // Each row gets the filter (None, Sub or Up) that leaves the smallest
    // residuals, the usual heuristic; plots are mostly flat runs, so Sub
    // and Up turn most of a row into zeros that deflate well.
    let mut raw = Vec::with_capacity((stride + 1) * height as usize);
    let mut candidate = vec![0u8; stride];
    let mut best = vec![0u8; stride];
    for y in 0..height as usize {
        let row = &rgb[y * stride..(y + 1) * stride];
        let prev = (y > 0).then(|| &rgb[(y - 1) * stride..y * stride]);
        let mut best_kind = 0u8;
        let mut best_cost = cost(row);
        best.copy_from_slice(row);
        for kind in [1u8, 2] {
            if kind == 2 && prev.is_none() {
                continue;
            }
            for i in 0..stride {
                let pred = match kind {
                    1 if i >= 3 => row[i - 3],
                    2 => prev.map_or(0, |p| p[i]),
                    _ => 0,
                };
                candidate[i] = row[i].wrapping_sub(pred);
            }
            let c = cost(&candidate);
            if c < best_cost {
                best_cost = c;
                best_kind = kind;
                best.copy_from_slice(&candidate);
            }
        }
        raw.push(best_kind);
        raw.extend_from_slice(&best);
    }
    let idat = miniz_oxide::deflate::compress_to_vec_zlib(&raw, 6);

    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    // Bit depth 8, colour type 2 (RGB), deflate, adaptive filters, no interlace.
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &idat);
    chunk(&mut out, b"IEND", &[]);
    out
}

/// Sum of residuals read as signed bytes: small when a filter predicts well.
fn cost(bytes: &[u8]) -> u64 {
    bytes.iter().map(|&b| (b as i8).unsigned_abs() as u64).sum()
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// CRC-32 (ISO-HDLC, as PNG uses), bitwise: chunks are few and the IDAT is
/// small, so a table is not worth its code.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Decodes what [`encode_rgb`] writes (RGB8, filters None/Sub/Up, one or
/// more IDAT chunks), checking every CRC: the tests' independent check of
/// the encoder. Returns (width, height, rgb).
#[cfg(test)]
pub(crate) fn decode_rgb(png: &[u8]) -> Result<(u32, u32, Vec<u8>), String> {
    let body = png
        .strip_prefix(b"\x89PNG\r\n\x1a\n")
        .ok_or("no PNG signature")?;
    let mut pos = 0;
    let (mut w, mut h) = (0u32, 0u32);
    let mut idat = Vec::new();
    loop {
        let len = u32::from_be_bytes(
            body.get(pos..pos + 4)
                .ok_or("truncated")?
                .try_into()
                .unwrap(),
        ) as usize;
        let kind = body.get(pos + 4..pos + 8).ok_or("truncated")?;
        let data = body.get(pos + 8..pos + 8 + len).ok_or("truncated")?;
        let crc = body.get(pos + 8 + len..pos + 12 + len).ok_or("truncated")?;
        if crc32(&body[pos + 4..pos + 8 + len]).to_be_bytes() != crc {
            return Err(format!("bad CRC in {}", String::from_utf8_lossy(kind)));
        }
        match kind {
            b"IHDR" => {
                w = u32::from_be_bytes(data[0..4].try_into().unwrap());
                h = u32::from_be_bytes(data[4..8].try_into().unwrap());
                if data[8..13] != [8, 2, 0, 0, 0] {
                    return Err(format!("unsupported IHDR {:?}", &data[8..]));
                }
            }
            b"IDAT" => idat.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        pos += 12 + len;
    }
    let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&idat).map_err(|e| format!("{e:?}"))?;
    let stride = w as usize * 3;
    if raw.len() != (stride + 1) * h as usize {
        return Err("wrong amount of image data".into());
    }
    let mut rgb = vec![0u8; stride * h as usize];
    for y in 0..h as usize {
        let kind = raw[y * (stride + 1)];
        let src = &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)];
        for i in 0..stride {
            let pred = match kind {
                0 => 0,
                1 if i >= 3 => rgb[y * stride + i - 3],
                1 => 0,
                2 if y > 0 => rgb[(y - 1) * stride + i],
                2 => 0,
                k => return Err(format!("unsupported filter {k}")),
            };
            rgb[y * stride + i] = src[i].wrapping_add(pred);
        }
    }
    Ok((w, h, rgb))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_of_iend() {
        // Every PNG ends with this chunk; its CRC is fixed.
        assert_eq!(crc32(b"IEND"), 0xAE42_6082);
    }

    #[test]
    fn round_trip() {
        let (w, h) = (7u32, 5u32);
        let rgb: Vec<u8> = (0..w * h * 3).map(|i| (i * 37 % 251) as u8).collect();
        let png = encode_rgb(w, h, &rgb);
        assert_eq!(decode_rgb(&png).unwrap(), (w, h, rgb));
        let flat = vec![255u8; (w * h * 3) as usize];
        assert_eq!(decode_rgb(&encode_rgb(w, h, &flat)).unwrap().2, flat);
    }
}
