//! The device's configuration: how many disk groups, what a switch costs,
//! how fast a spun-up group streams, how objects are laid out, which
//! scheduler runs, and how modeled time maps to real delays.
//!
//! Time is *modeled*: a switch costs `switch_ms` and an object `bytes /
//! bandwidth` of modeled time, deterministically, and the server sleeps
//! `modeled × time_scale` in real time so that concurrency shows in wall
//! time without tests waiting the paper's 10 s per switch (`time_scale` 0
//! never sleeps). The defaults are the paper's device: 5 groups (its five
//! clients, one group each), a 10 s switch (§3.2), 1 200 MiB/s per group
//! (the 1–2 GB/s CSDs of §2.2), one group per client, the rank scheduler.
//!
//! JSON, every field optional; an unknown field or a value out of range is
//! an error naming the file and the field.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::CsdError;
use crate::layout::LayoutSpec;
use crate::schedule::Policy;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CsdConfig {
    pub groups: u32,
    /// Modeled group switch time (the paper: 10 s; Pelican 8 s).
    pub switch_ms: f64,
    /// Modeled transfer rate of a spun-up group.
    pub bandwidth_mib_s: f64,
    /// Real delay = modeled × scale; 0 = never sleep.
    pub time_scale: f64,
    pub layout: LayoutSpec,
    pub policy: Policy,
    /// The group spun up at start (None: none; the first request switches).
    pub initial_group: Option<u32>,
}

impl Default for CsdConfig {
    fn default() -> Self {
        CsdConfig {
            groups: 5,
            switch_ms: 10_000.0,
            bandwidth_mib_s: 1_200.0,
            time_scale: 0.001,
            layout: LayoutSpec::OnePerClient,
            policy: Policy::Rank { k: 1.0 },
            initial_group: Some(0),
        }
    }
}

impl CsdConfig {
    /// Reads and checks a JSON configuration file.
    pub fn load(path: impl AsRef<Path>) -> Result<CsdConfig, CsdError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| CsdError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        CsdConfig::from_json(&text, path)
    }

    /// Parses and checks JSON text; `path` names it in errors. Fields are
    /// read one by one so that a bad value's error names its field.
    pub fn from_json(text: &str, path: &Path) -> Result<CsdConfig, CsdError> {
        let bad = |field: &str, message: String| CsdError::Config {
            path: path.to_path_buf(),
            field: field.into(),
            message,
        };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| bad("(file)", e.to_string()))?;
        let serde_json::Value::Object(fields) = value else {
            return Err(bad("(file)", "expected a JSON object of settings".into()));
        };
        let mut c = CsdConfig::default();
        for (name, v) in fields {
            fn get<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Result<T, String> {
                serde_json::from_value(v).map_err(|e| e.to_string())
            }
            let r = match name.as_str() {
                "groups" => get(v).map(|x| c.groups = x),
                "switch_ms" => get(v).map(|x| c.switch_ms = x),
                "bandwidth_mib_s" => get(v).map(|x| c.bandwidth_mib_s = x),
                "time_scale" => get(v).map(|x| c.time_scale = x),
                "layout" => get(v).map(|x| c.layout = x),
                "policy" => get(v).map(|x| c.policy = x),
                "initial_group" => get(v).map(|x| c.initial_group = x),
                _ => Err(format!("unknown field; known: {}", FIELDS.join(", "))),
            };
            r.map_err(|m| bad(&name, m))?;
        }
        c.check(path)?;
        Ok(c)
    }

    /// Range checks; errors name `path` and the field.
    pub fn check(&self, path: &Path) -> Result<(), CsdError> {
        let bad = |field: &str, message: String| CsdError::Config {
            path: path.to_path_buf(),
            field: field.into(),
            message,
        };
        if self.groups == 0 {
            return Err(bad("groups", "must be at least 1".into()));
        }
        if !(self.switch_ms.is_finite() && self.switch_ms >= 0.0) {
            return Err(bad(
                "switch_ms",
                format!("{} is not a time ≥ 0", self.switch_ms),
            ));
        }
        if !(self.bandwidth_mib_s.is_finite() && self.bandwidth_mib_s > 0.0) {
            return Err(bad(
                "bandwidth_mib_s",
                format!("{} is not a rate > 0", self.bandwidth_mib_s),
            ));
        }
        if !(self.time_scale.is_finite() && self.time_scale >= 0.0) {
            return Err(bad(
                "time_scale",
                format!("{} is not a factor ≥ 0", self.time_scale),
            ));
        }
        if let Some(g) = self.initial_group
            && g >= self.groups
        {
            return Err(bad(
                "initial_group",
                format!("group {g} is out of range (groups: {})", self.groups),
            ));
        }
        if let Policy::Rank { k } = self.policy
            && !(k.is_finite() && k >= 0.0)
        {
            return Err(bad("policy", format!("rank K {k} must be finite and ≥ 0")));
        }
        self.layout
            .check(self.groups)
            .map_err(|e| bad("layout", e.to_string()))
    }

    /// The modeled switch time in nanoseconds.
    pub fn switch_ns(&self) -> u64 {
        (self.switch_ms * 1e6).round() as u64
    }

    /// The modeled time to stream `bytes` from a spun-up group.
    pub fn transfer_ns(&self, bytes: u64) -> u64 {
        transfer_ns(bytes, self.bandwidth_mib_s)
    }

    /// The real delay for a modeled duration.
    pub fn real_delay(&self, modeled_ns: u64) -> std::time::Duration {
        std::time::Duration::from_nanos((modeled_ns as f64 * self.time_scale).round() as u64)
    }
}

/// Nanoseconds to move `bytes` at `mib_s` MiB/s.
pub fn transfer_ns(bytes: u64, mib_s: f64) -> u64 {
    (bytes as f64 * 1e9 / (mib_s * 1024.0 * 1024.0)).round() as u64
}

/// The settings a configuration file may have.
pub const FIELDS: [&str; 7] = [
    "groups",
    "switch_ms",
    "bandwidth_mib_s",
    "time_scale",
    "layout",
    "policy",
    "initial_group",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CsdConfig, CsdError> {
        CsdConfig::from_json(text, Path::new("csd.json"))
    }

    #[test]
    fn defaults_are_the_papers_device() {
        let c = parse("{}").unwrap();
        assert_eq!(c, CsdConfig::default());
        assert_eq!(c.groups, 5);
        assert_eq!(c.switch_ns(), 10_000_000_000);
        assert_eq!(c.policy, Policy::Rank { k: 1.0 });
        assert_eq!(c.initial_group, Some(0));
        // 1 GiB at 1200 MiB/s
        assert_eq!(
            c.transfer_ns(1 << 30),
            (1024.0 / 1200.0 * 1e9f64).round() as u64
        );
        assert_eq!(
            c.real_delay(10_000_000_000),
            std::time::Duration::from_millis(10)
        );
    }

    #[test]
    fn fields_parse() {
        let c = parse(
            r#"{"groups": 3, "switch_ms": 20, "bandwidth_mib_s": 100, "time_scale": 0,
                "layout": {"random": {"seed": 5}}, "policy": "rank:0.5", "initial_group": null}"#,
        )
        .unwrap();
        assert_eq!(c.groups, 3);
        assert_eq!(c.layout, LayoutSpec::Random { seed: 5 });
        assert_eq!(c.policy, Policy::Rank { k: 0.5 });
        assert_eq!(c.initial_group, None);
        assert_eq!(c.real_delay(123), std::time::Duration::ZERO);
        let back = parse(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn errors_name_file_and_field() {
        for (text, field) in [
            (r#"{"groups": 0}"#, "groups"),
            (r#"{"switch_ms": -1}"#, "switch_ms"),
            (r#"{"bandwidth_mib_s": 0}"#, "bandwidth_mib_s"),
            (r#"{"time_scale": -0.5}"#, "time_scale"),
            (r#"{"groups": 2, "initial_group": 2}"#, "initial_group"),
            (r#"{"policy": "lifo"}"#, "policy"),
            (r#"{"groups": "five"}"#, "groups"),
            ("[1]", "(file)"),
            (r#"{"groupz": 2}"#, "groupz"),
            (
                r#"{"groups": 2, "layout": {"explicit": {"c0/": 5}}}"#,
                "layout",
            ),
            ("not json", "(file)"),
        ] {
            let e = parse(text).unwrap_err();
            let msg = e.to_string();
            assert!(msg.starts_with("csd.json: "), "{msg}");
            match e {
                CsdError::Config { field: f, .. } => assert_eq!(f, field, "{msg}"),
                other => panic!("{other}"),
            }
        }
        let msg = parse(r#"{"policy": "lifo"}"#).unwrap_err().to_string();
        assert!(msg.contains("lifo"), "{msg}");
        let msg = CsdConfig::load("/nonexistent/csd.json")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("/nonexistent/csd.json"), "{msg}");
    }
}
