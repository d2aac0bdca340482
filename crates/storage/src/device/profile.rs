//! [`DeviceProfile`]: what a modeled medium costs (seek, rotation, latency,
//! bandwidth, channels), parsed from a spec or built in; [`ModeledDevice`]
//! (`modeled.rs`) charges requests by it and the replay model (`trace.rs`)
//! replays traces on it.
//!
//! # Built-in profiles
//!
//! The numbers are those of the flash paper's Table 1.
//!
//! * `hdd`: a random 4 KB read takes 3.5 ms there; modeled as a 2.5 ms seek plus
//!   1.0 ms of rotation (half a turn of a 15k rpm disk is 2 ms, a 7.2k rpm one
//!   4.2 ms; the split only matters for reporting), and 125 MB/s sequential read
//!   and write. A random 4 KB read thus costs 3.5 ms + 32.8 us here.
//! * `ssd`: 35,000 random 4 KB reads per second with enough reads in flight. One
//!   read is modeled as 0.2 ms of latency plus 4096 B / 200 MB/s = 20.48 us of
//!   transfer, 0.22048 ms in all, so one channel does 4,536 reads/s and 8 channels
//!   do 36,284 reads/s, about the 35,000 of the table (the 200 MB/s bandwidth would
//!   only cap it at 48,828 reads/s). A single synchronous reader gets one channel's
//!   4,536 reads/s, which is the point: flash only pays off with reads in flight.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Result, StorageError};

/// The kind of medium a profile models, which decides the charging rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileKind {
    /// One head: a request not starting where the previous ended pays seek + rotation.
    Hdd,
    /// Fixed latency per request, several requests in flight over `channels`.
    Ssd,
}

/// How a modeled device charges requests. Times in milliseconds, rates in MB/s
/// (10^6 bytes per second). In JSON, `kind`, `read_mb_s` and `write_mb_s` are
/// required; times default to 0, `channels` to 1 and `name` to the file's stem.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    #[serde(default)]
    pub name: String,
    pub kind: ProfileKind,
    /// HDD: average seek time.
    #[serde(default)]
    pub seek_ms: f64,
    /// HDD: average rotational delay.
    #[serde(default)]
    pub rotation_ms: f64,
    /// SSD: latency of every request.
    #[serde(default)]
    pub latency_ms: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    /// SSD: requests served at the same time by a batch.
    #[serde(default = "one")]
    pub channels: u32,
    /// If set, really sleep `modeled time * wait_scale` after each request.
    #[serde(default)]
    pub wait_scale: Option<f64>,
}

fn one() -> u32 {
    1
}

impl DeviceProfile {
    /// The built-in profiles: `hdd` and `ssd` (see the module docs for the numbers).
    pub fn builtin(name: &str) -> Option<DeviceProfile> {
        match name {
            "hdd" => Some(DeviceProfile {
                name: "hdd".into(),
                kind: ProfileKind::Hdd,
                seek_ms: 2.5,
                rotation_ms: 1.0,
                latency_ms: 0.0,
                read_mb_s: 125.0,
                write_mb_s: 125.0,
                channels: 1,
                wait_scale: None,
            }),
            "ssd" => Some(DeviceProfile {
                name: "ssd".into(),
                kind: ProfileKind::Ssd,
                seek_ms: 0.0,
                rotation_ms: 0.0,
                latency_ms: 0.2,
                read_mb_s: 200.0,
                write_mb_s: 200.0,
                channels: 8,
                wait_scale: None,
            }),
            _ => None,
        }
    }

    /// Reads a custom profile from a JSON file and checks it; errors name the file
    /// and the field.
    pub fn from_file(path: &Path) -> Result<DeviceProfile> {
        let text = std::fs::read_to_string(path).map_err(|e| StorageError::io(path, e))?;
        let mut profile: DeviceProfile = serde_json::from_str(&text)
            .map_err(|e| StorageError::Profile(format!("{}: {e}", path.display())))?;
        if profile.name.is_empty() {
            profile.name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "custom".into());
        }
        profile
            .validate()
            .map_err(|e| StorageError::Profile(format!("{}: {e}", path.display())))?;
        Ok(profile)
    }

    /// A built-in profile's name, or else the path of a JSON profile.
    pub fn parse(spec: &str) -> Result<DeviceProfile> {
        if let Some(p) = DeviceProfile::builtin(spec) {
            return Ok(p);
        }
        let path = Path::new(spec);
        if path.exists() {
            return DeviceProfile::from_file(path);
        }
        Err(StorageError::Profile(format!(
            "unknown device profile '{spec}': expected 'hdd', 'ssd' or the path of a JSON profile file"
        )))
    }

    /// Checks that every field makes sense for the kind; the error names the field.
    pub fn validate(&self) -> std::result::Result<(), String> {
        let positive = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!(
                    "field `{field}` must be a positive number of MB/s, got {v}"
                ))
            }
        };
        let non_negative = |field: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(format!(
                    "field `{field}` must be a non-negative number, got {v}"
                ))
            }
        };
        let unused = |field: &str, v: f64| {
            if v == 0.0 {
                Ok(())
            } else {
                Err(format!(
                    "field `{field}` is not used by kind {:?} (use {})",
                    self.kind,
                    match self.kind {
                        ProfileKind::Hdd => "seek_ms and rotation_ms",
                        ProfileKind::Ssd => "latency_ms",
                    }
                ))
            }
        };
        positive("read_mb_s", self.read_mb_s)?;
        positive("write_mb_s", self.write_mb_s)?;
        non_negative("seek_ms", self.seek_ms)?;
        non_negative("rotation_ms", self.rotation_ms)?;
        non_negative("latency_ms", self.latency_ms)?;
        match self.kind {
            ProfileKind::Hdd => unused("latency_ms", self.latency_ms)?,
            ProfileKind::Ssd => {
                unused("seek_ms", self.seek_ms)?;
                unused("rotation_ms", self.rotation_ms)?;
            }
        }
        if self.channels == 0 {
            return Err("field `channels` must be at least 1, got 0".into());
        }
        if let Some(s) = self.wait_scale {
            non_negative("wait_scale", s)?;
        }
        Ok(())
    }

    /// The fixed cost of a request that is not sequential (HDD: seek +
    /// rotation) or of any request (SSD: latency), in ms — the one place that
    /// says it (the device model, Smooth Scan's page costs and the cost model
    /// all use it).
    pub fn fixed_ms(&self) -> f64 {
        match self.kind {
            ProfileKind::Hdd => self.seek_ms + self.rotation_ms,
            ProfileKind::Ssd => self.latency_ms,
        }
    }

    /// [`Self::fixed_ms`] in whole ns.
    pub(crate) fn fixed_ns(&self) -> u64 {
        (self.fixed_ms() * 1e6).round() as u64
    }

    /// Time to move `bytes` at `mb_s` MB/s (= `mb_s / 1000` bytes per ns), in whole ns.
    pub(crate) fn transfer_ns(bytes: u64, mb_s: f64) -> u64 {
        (bytes as f64 * 1e3 / mb_s).round() as u64
    }
}

/// Formats a time so that whole numbers keep one decimal ("1.0 ms", "2.5 ms").
pub(super) fn ms(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}
