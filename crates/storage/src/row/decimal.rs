//! DECIMAL values: scaled 64-bit integers, parsed from and printed as text.

pub(crate) fn parse_decimal(s: &str, precision: u8, scale: u8) -> std::result::Result<i64, String> {
    let bad = || format!("'{s}' is not a decimal number");
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    if (int_part.is_empty() && frac_part.is_empty())
        || !int_part.bytes().all(|c| c.is_ascii_digit())
        || !frac_part.bytes().all(|c| c.is_ascii_digit())
    {
        return Err(bad());
    }
    let mut v: i128 = 0;
    for c in int_part.bytes() {
        v = v * 10 + (c - b'0') as i128;
        if v > i64::MAX as i128 {
            return Err(format!(
                "'{s}' is out of range for DECIMAL({precision},{scale})"
            ));
        }
    }
    let frac = frac_part.as_bytes();
    for i in 0..scale as usize {
        v = v * 10 + frac.get(i).map_or(0, |c| (c - b'0') as i128);
    }
    // Round half away from zero on the first dropped digit, as PostgreSQL's numeric does.
    if frac.get(scale as usize).is_some_and(|c| *c >= b'5') {
        v += 1;
    }
    if v >= 10i128.pow(precision as u32) {
        return Err(format!(
            "'{s}' is out of range for DECIMAL({precision},{scale})"
        ));
    }
    Ok(if neg { -(v as i64) } else { v as i64 })
}

/// Formats a scaled decimal.
pub fn format_decimal(v: i64, scale: u8) -> String {
    if scale == 0 {
        return v.to_string();
    }
    let p = 10u64.pow(scale as u32);
    let a = v.unsigned_abs();
    format!(
        "{}{}.{:0width$}",
        if v < 0 { "-" } else { "" },
        a / p,
        a % p,
        width = scale as usize
    )
}
