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
