//! Small helpers shared by the layers and the CLI.

/// Parses a size such as `256MiB`, `1GiB`, `64KiB`, `512MB`, `8192` (bytes).
/// Binary (KiB, MiB, GiB, TiB) and decimal (KB, MB, GB, TB) units; `K`, `M`, `G` are binary.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 256MiB)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        u => {
            return Err(format!(
                "'{text}': unknown unit '{u}' (use KiB, MiB, GiB, KB, MB, GB)"
            ));
        }
    };
    Ok((n * mult as f64).round() as u64)
}

/// Formats a byte count with a binary unit, e.g. `1.5 GiB`.
pub fn format_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Cases a property test (a fuzz target) runs: `PROPTEST_CASES` when set
/// (`scripts/fuzz.sh` sets it for long runs), else `default`, the count the
/// test suite runs in CI.
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// For a test that cannot run all it checks here and passes anyway: says so
/// on stderr and appends `test: why` to the file `$STRATA_SKIP_LOG` names,
/// which `scripts/test` lists at the end of a run, so an `ok` that did not
/// run is never silent.
pub fn note_skip(test: &str, why: &str) {
    eprintln!("skipped in {test}: {why}");
    if let Ok(path) = std::env::var("STRATA_SKIP_LOG") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{test}: {why}");
        }
    }
}

/// Asks the CPU to start loading the cache line holding `addr` (a hint:
/// nothing is read into the program, nothing can fault, whatever the
/// address; other architectures do nothing).
#[inline]
pub fn prefetch_line(addr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing into the program and never faults, for
    // any address. SSE is part of the x86-64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(addr as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("2MB"), Ok(2_000_000));
        assert_eq!(parse_size("8192"), Ok(8192));
        assert!(
            parse_size("12 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_size("MiB").unwrap_err().contains("not a size"));
        assert_eq!(format_bytes(3 << 20), "3.0 MiB");
    }
}
