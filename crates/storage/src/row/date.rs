//! Dates and timestamps: day numbers of the proleptic Gregorian calendar and
//! their YYYY-MM-DD text, and the seconds of a `YYYYMMDDhhmmss` timestamp.

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i32, m: u32, d: u32) -> i32 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = (y - era * 400) as u32;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe as i32 - 719468
}

/// The (year, month, day) of a day number.
pub fn civil_from_days(z: i32) -> (i32, u32, u32) {
    // In i64: any stored day number (a page may hold any bits) has a date.
    let z = z as i64 + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = (z - era * 146097) as u32;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = (yoe as i64 + era * 400) as i32;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

pub(crate) fn parse_date(s: &str) -> std::result::Result<i32, String> {
    let bad = || format!("'{s}' is not a date (expected YYYY-MM-DD)");
    let mut it = s.splitn(3, '-');
    let (Some(y), Some(m), Some(d)) = (it.next(), it.next(), it.next()) else {
        return Err(bad());
    };
    let (y, m, d) = (
        y.parse::<i32>().map_err(|_| bad())?,
        m.parse::<u32>().map_err(|_| bad())?,
        d.parse::<u32>().map_err(|_| bad())?,
    );
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in_month = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m)
        || d == 0
        || d > days_in_month[m as usize - 1]
        || !(-9999..=9999).contains(&y)
    {
        return Err(format!("'{s}' is not a valid date"));
    }
    Ok(days_from_civil(y, m, d))
}

/// Formats a day number as YYYY-MM-DD.
pub fn format_date(days: i32) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Microseconds since 1970-01-01 00:00:00 of a TIMESTAMP written
/// `YYYY-MM-DD HH:MM:SS[.ffffff]` (or with `T` between date and time, or a
/// date alone: its midnight). The error says what is wrong.
pub(crate) fn parse_timestamp(s: &str) -> std::result::Result<i64, String> {
    let bad = || format!("'{s}' is not a timestamp (expected YYYY-MM-DD HH:MM:SS[.ffffff])");
    let (date, time) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], s[i + 1..].trim_start()),
        None => (s, "00:00:00"),
    };
    let days = parse_date(date).map_err(|e| {
        if e.contains("not a valid date") {
            format!("'{s}' is not a valid timestamp (no date {date})")
        } else {
            bad()
        }
    })?;
    let (hms, frac) = match time.split_once('.') {
        Some((hms, f)) => (hms, Some(f)),
        None => (time, None),
    };
    let mut parts = hms.split(':');
    let mut field = |max: i64| -> std::result::Result<i64, String> {
        let p = parts.next().ok_or_else(bad)?;
        if p.is_empty() || p.len() > 2 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let v: i64 = p.parse().map_err(|_| bad())?;
        if v > max {
            return Err(format!(
                "'{s}' is not a valid timestamp ({p} is out of range)"
            ));
        }
        Ok(v)
    };
    let (h, m) = (field(23)?, field(59)?);
    let sec = if hms.matches(':').count() == 2 {
        field(59)?
    } else {
        0
    };
    if parts.next().is_some() {
        return Err(bad());
    }
    let micros = match frac {
        None => 0,
        Some(f) if !f.is_empty() && f.len() <= 6 && f.bytes().all(|b| b.is_ascii_digit()) => {
            f.parse::<i64>().map_err(|_| bad())? * 10i64.pow(6 - f.len() as u32)
        }
        Some(_) => return Err(bad()),
    };
    Ok(((days as i64 * 86_400 + h * 3600 + m * 60 + sec) * 1_000_000) + micros)
}

/// Formats microseconds since 1970 as `YYYY-MM-DD HH:MM:SS`, with
/// `.ffffff` (trailing zeros dropped) when there is a fraction.
pub fn format_timestamp_micros(t: i64) -> String {
    let secs = t.div_euclid(1_000_000);
    let micros = t.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    // Any stored i64 has a text (days clamped into i32's range).
    let date = format_date(days.clamp(i32::MIN as i64, i32::MAX as i64) as i32);
    let (h, m, sec) = (tod / 3600, tod % 3600 / 60, tod % 60);
    if micros == 0 {
        format!("{date} {h:02}:{m:02}:{sec:02}")
    } else {
        let f = format!("{micros:06}");
        format!("{date} {h:02}:{m:02}:{sec:02}.{}", f.trim_end_matches('0'))
    }
}

/// Seconds since 1970 of a `YYYYMMDDHHMMSS` timestamp (a valid date and
/// time of day), else `None`.
pub fn timestamp_seconds(s: &str) -> Option<i64> {
    if s.len() != 14 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let date = format!("{}-{}-{}", &s[0..4], &s[4..6], &s[6..8]);
    let Ok(days) = parse_date(&date) else {
        return None;
    };
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().ok();
    let (h, m, sec) = (n(8..10)?, n(10..12)?, n(12..14)?);
    (h < 24 && m < 60 && sec < 60).then(|| days as i64 * 86_400 + h * 3600 + m * 60 + sec)
}
