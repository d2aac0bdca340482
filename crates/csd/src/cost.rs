//! What storage tiers cost (§2.1, §3.1: Table 1, Fig. 2, Fig. 3).
//!
//! The case for a cold storage tier is an arithmetic one: a database's data
//! is spread over devices by a tier mix (fractions of the data per device),
//! and its cost per GB is the mix's weighted price. Table 1 gives the
//! analyst study's prices and mixes; Fig. 2 prices a 100 TB database under
//! each strategy; Fig. 3 replaces the capacity and archival tiers by a CSD.
//!
//! **How Fig. 3 forms the CSD tier**: the CSD takes over the *sum* of the
//! replaced tiers' fractions (7.2k-RPM SATA 32.5% + tape 52.5% = 85% of the
//! data) and the performance tiers keep theirs, so 3-tier (15k 15%, SATA
//! 32.5%, tape 52.5%) becomes 2-tier (15k 15%, CSD 85%) and 4-tier becomes
//! 3-tier (SSD 2%, 15k 13%, CSD 85%). The saving is the old cost over the
//! new: at $0.1/GB 3.5925 / 2.11 = 1.703 and 4.8225 / 3.34 = 1.444. The
//! paper's six figures (1.70/1.44, 1.63/1.40, 1.24/1.17) are these ratios
//! *truncated* to two decimals (at $0.2 3-tier is 1.6367, at $1 1.2496),
//! which is how they are checked here: to within 0.01.
//!
//! Users can price their own devices and mixes: a JSON file whose fields
//! override the paper's ([`CostInput::load`]); mixes must sum to 1 and name
//! priced devices, and every error names the mix, device or field.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::CsdError;

/// Device names of Table 1.
pub const SSD: &str = "ssd";
pub const HDD_15K: &str = "hdd-15k";
pub const HDD_7K: &str = "hdd-7.2k";
pub const TAPE: &str = "tape";
/// The name the CSD tier gets in replaced mixes.
pub const CSD: &str = "csd";

/// One tiering strategy: the fraction of the data on each device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mix {
    pub name: String,
    pub fractions: BTreeMap<String, f64>,
}

/// Prices, mixes and what a CSD replaces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CostInput {
    /// $/GB per device. In a file, these are merged over the paper's.
    pub prices: BTreeMap<String, f64>,
    /// Fig. 2's strategies, in order. In a file, they replace the paper's.
    pub mixes: Vec<Mix>,
    /// Database size for Fig. 2 (decimal TB: 1 TB = 1000 GB, as the study).
    pub capacity_tb: f64,
    /// Fig. 3's CSD prices, $/GB.
    pub csd_prices: Vec<f64>,
    /// The devices whose tiers a CSD takes over (capacity and archival).
    pub replaced: Vec<String>,
}

impl Default for CostInput {
    fn default() -> Self {
        CostInput::paper()
    }
}

fn mix(name: &str, fractions: &[(&str, f64)]) -> Mix {
    Mix {
        name: name.into(),
        fractions: fractions.iter().map(|(d, f)| (d.to_string(), *f)).collect(),
    }
}

impl CostInput {
    /// Table 1's prices and mixes, the one-device strategies of Fig. 2, a
    /// 100 TB database, and Fig. 3's CSD prices.
    pub fn paper() -> CostInput {
        CostInput {
            prices: [(SSD, 75.0), (HDD_15K, 13.5), (HDD_7K, 4.5), (TAPE, 0.2)]
                .into_iter()
                .map(|(d, p)| (d.to_string(), p))
                .collect(),
            mixes: vec![
                mix("all-ssd", &[(SSD, 1.0)]),
                mix("all-15k", &[(HDD_15K, 1.0)]),
                mix("all-sata", &[(HDD_7K, 1.0)]),
                mix("all-tape", &[(TAPE, 1.0)]),
                mix("2-tier", &[(HDD_15K, 0.35), (HDD_7K, 0.65)]),
                mix("3-tier", &[(HDD_15K, 0.15), (HDD_7K, 0.325), (TAPE, 0.525)]),
                mix(
                    "4-tier",
                    &[(SSD, 0.02), (HDD_15K, 0.13), (HDD_7K, 0.325), (TAPE, 0.525)],
                ),
            ],
            capacity_tb: 100.0,
            csd_prices: vec![0.1, 0.2, 1.0],
            replaced: vec![HDD_7K.into(), TAPE.into()],
        }
    }

    /// The paper's input with a file's fields over it: `prices` merged
    /// (a device named there overrides or adds), the other fields replaced
    /// when present. Checked.
    pub fn load(path: impl AsRef<Path>) -> Result<CostInput, CsdError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| CsdError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let bad = |field: &str, message: String| CsdError::Config {
            path: path.to_path_buf(),
            field: field.into(),
            message,
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad("(file)", e.to_string()))?;
        let serde_json::Value::Object(fields) = value else {
            return Err(bad("(file)", "expected a JSON object".into()));
        };
        let mut input = CostInput::paper();
        for (name, v) in fields {
            fn get<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Result<T, String> {
                serde_json::from_value(v).map_err(|e| e.to_string())
            }
            let r = match name.as_str() {
                "prices" => get::<BTreeMap<String, f64>>(v).map(|p| input.prices.extend(p)),
                "mixes" => get(v).map(|m| input.mixes = m),
                "capacity_tb" => get(v).map(|c| input.capacity_tb = c),
                "csd_prices" => get(v).map(|c| input.csd_prices = c),
                "replaced" => get(v).map(|r| input.replaced = r),
                _ => Err(
                    "unknown field; known: prices, mixes, capacity_tb, csd_prices, replaced".into(),
                ),
            };
            r.map_err(|m| bad(&name, m))?;
        }
        input
            .check()
            .map_err(|e| bad("(contents)", e.to_string()))?;
        Ok(input)
    }

    /// Every price finite and ≥ 0, every mix non-empty, its fractions in
    /// [0, 1] summing to 1 (±1e-6) over priced devices, CSD prices > 0, a
    /// positive capacity, replaced devices priced.
    pub fn check(&self) -> Result<(), CsdError> {
        for (d, &p) in &self.prices {
            if !(p.is_finite() && p >= 0.0) {
                return Err(CsdError::cost(
                    &format!("prices.{d}"),
                    format!("{p} is not a price ≥ 0 ($/GB)"),
                ));
            }
        }
        if self.mixes.is_empty() {
            return Err(CsdError::cost("mixes", "no tier mix to price"));
        }
        for m in &self.mixes {
            let field = format!("mix {:?}", m.name);
            if m.fractions.is_empty() {
                return Err(CsdError::cost(&field, "has no device"));
            }
            for (d, &f) in &m.fractions {
                if !(0.0..=1.0).contains(&f) {
                    return Err(CsdError::cost(
                        &field,
                        format!("fraction of {d} is {f}, not in [0, 1]"),
                    ));
                }
                if !self.prices.contains_key(d) {
                    return Err(CsdError::cost(
                        &field,
                        format!(
                            "device {d:?} has no price (priced: {})",
                            self.prices.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
            let sum: f64 = m.fractions.values().sum();
            if (sum - 1.0).abs() > 1e-6 {
                return Err(CsdError::cost(
                    &field,
                    format!("fractions sum to {sum}, not 1"),
                ));
            }
        }
        if !(self.capacity_tb.is_finite() && self.capacity_tb > 0.0) {
            return Err(CsdError::cost(
                "capacity_tb",
                format!("{} is not a size > 0", self.capacity_tb),
            ));
        }
        check_csd_prices(&self.csd_prices)?;
        for d in &self.replaced {
            if !self.prices.contains_key(d) {
                return Err(CsdError::cost(
                    "replaced",
                    format!("device {d:?} has no price"),
                ));
            }
        }
        Ok(())
    }

    /// $/GB of a mix.
    pub fn per_gb(&self, mix: &Mix) -> f64 {
        mix.fractions
            .iter()
            .map(|(d, f)| f * self.prices.get(d).copied().unwrap_or(0.0))
            .sum()
    }

    pub fn mix(&self, name: &str) -> Option<&Mix> {
        self.mixes.iter().find(|m| m.name == name)
    }

    /// Fig. 2: each strategy's $/GB and the cost of the whole database.
    pub fn fig2(&self) -> Vec<StrategyCost> {
        self.mixes
            .iter()
            .map(|m| {
                let per_gb = self.per_gb(m);
                StrategyCost {
                    strategy: m.name.clone(),
                    tiers: m.fractions.values().filter(|&&f| f > 0.0).count(),
                    per_gb,
                    total_usd: per_gb * self.capacity_tb * 1000.0,
                }
            })
            .collect()
    }

    /// A mix with the replaced devices' fractions summed into one CSD tier.
    pub fn with_csd(&self, mix: &Mix) -> Mix {
        let mut fractions = BTreeMap::new();
        let mut csd = 0.0;
        for (d, &f) in &mix.fractions {
            if self.replaced.contains(d) {
                csd += f;
            } else {
                fractions.insert(d.clone(), f);
            }
        }
        fractions.insert(CSD.to_string(), csd);
        Mix {
            name: format!("{}+csd", mix.name),
            fractions,
        }
    }

    /// Fig. 3: for every mix holding all the replaced devices (the tiers a
    /// CSD subsumes), at every CSD price: cost before and after, and the
    /// saving (before / after).
    pub fn fig3(&self) -> Vec<CsdSaving> {
        let mut out = Vec::new();
        for m in &self.mixes {
            if self.replaced.is_empty()
                || !self
                    .replaced
                    .iter()
                    .all(|d| m.fractions.get(d).is_some_and(|&f| f > 0.0))
            {
                continue;
            }
            let before = self.per_gb(m);
            let replaced = self.with_csd(m);
            for &price in &self.csd_prices {
                let mut priced = self.clone();
                priced.prices.insert(CSD.into(), price);
                let after = priced.per_gb(&replaced);
                out.push(CsdSaving {
                    strategy: m.name.clone(),
                    tiers_before: m.fractions.values().filter(|&&f| f > 0.0).count(),
                    tiers_after: replaced.fractions.values().filter(|&&f| f > 0.0).count(),
                    csd_fraction: replaced.fractions[CSD],
                    csd_price: price,
                    before_per_gb: before,
                    after_per_gb: after,
                    saving: before / after,
                });
            }
        }
        out
    }
}

/// Parses `--csd-price 0.1,0.2,1`.
pub fn parse_csd_prices(text: &str) -> Result<Vec<f64>, CsdError> {
    let prices = text
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .map_err(|_| CsdError::parse("CSD price", p, "not a number ($/GB)"))
        })
        .collect::<Result<Vec<f64>, _>>()?;
    check_csd_prices(&prices)?;
    Ok(prices)
}

fn check_csd_prices(prices: &[f64]) -> Result<(), CsdError> {
    if prices.is_empty() {
        return Err(CsdError::cost("csd_prices", "no CSD price given"));
    }
    for &p in prices {
        if !(p.is_finite() && p > 0.0) {
            return Err(CsdError::cost(
                "csd_prices",
                format!("{p} is not a price > 0 ($/GB)"),
            ));
        }
    }
    Ok(())
}

/// One bar of Fig. 2.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StrategyCost {
    pub strategy: String,
    pub tiers: usize,
    pub per_gb: f64,
    pub total_usd: f64,
}

/// One bar of Fig. 3.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CsdSaving {
    pub strategy: String,
    pub tiers_before: usize,
    pub tiers_after: usize,
    /// The fraction of the data the CSD holds (the replaced tiers' sum).
    pub csd_fraction: f64,
    pub csd_price: f64,
    pub before_per_gb: f64,
    pub after_per_gb: f64,
    /// before / after.
    pub saving: f64,
}

/// The paper's stated Fig. 3 savings: (strategy, CSD $/GB, saving).
pub const PAPER_FIG3: [(&str, f64, f64); 6] = [
    ("3-tier", 0.1, 1.70),
    ("4-tier", 0.1, 1.44),
    ("3-tier", 0.2, 1.63),
    ("4-tier", 0.2, 1.40),
    ("3-tier", 1.0, 1.24),
    ("4-tier", 1.0, 1.17),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn ratio(input: &CostInput, a: &str, b: &str) -> f64 {
        input.per_gb(input.mix(a).unwrap()) / input.per_gb(input.mix(b).unwrap())
    }

    #[test]
    fn fig3_matches_the_papers_six_savings() {
        let input = CostInput::paper();
        let rows = input.fig3();
        assert_eq!(rows.len(), 6);
        for (strategy, price, paper) in PAPER_FIG3 {
            let r = rows
                .iter()
                .find(|r| r.strategy == strategy && r.csd_price == price)
                .unwrap();
            assert!(
                (r.saving - paper).abs() < 0.01,
                "{strategy} at ${price}: {} vs {paper}",
                r.saving
            );
            // truncated to two decimals, exactly the paper's figure
            assert_eq!(
                (r.saving * 100.0).floor() / 100.0,
                paper,
                "{strategy} ${price}"
            );
            assert!((r.csd_fraction - 0.85).abs() < 1e-12);
            assert_eq!(r.tiers_after, r.tiers_before - 1);
        }
    }

    #[test]
    fn section_2_claims() {
        let input = CostInput::paper();
        // "a 20× reduction ... all-tape vs All-SATA": 4.5 / 0.2 = 22.5
        let tape = ratio(&input, "all-sata", "all-tape");
        assert!((tape - 22.5).abs() < 1e-9 && tape >= 20.0);
        // three-tier: 2× cheaper than two-tier, 1.25× than All-SATA
        let two = ratio(&input, "2-tier", "3-tier");
        assert!((two - 7.65 / 3.5925).abs() < 1e-9);
        assert!((2.0..2.2).contains(&two), "{two}");
        let sata = ratio(&input, "all-sata", "3-tier");
        assert!((sata - 1.25).abs() < 0.01, "{sata}");
    }

    #[test]
    fn fig2_prices_a_100tb_database() {
        let rows = CostInput::paper().fig2();
        let get = |s: &str| rows.iter().find(|r| r.strategy == s).unwrap();
        assert!((get("3-tier").total_usd - 359_250.0).abs() < 1e-6);
        assert!((get("all-tape").total_usd - 20_000.0).abs() < 1e-6);
        assert!((get("4-tier").per_gb - 4.8225).abs() < 1e-12);
        assert_eq!(get("4-tier").tiers, 4);
    }

    #[test]
    fn bad_input_is_named() {
        let mut i = CostInput::paper();
        i.mixes[4].fractions.insert(HDD_7K.into(), 0.6);
        let e = i.check().unwrap_err().to_string();
        assert!(e.contains("\"2-tier\"") && e.contains("sum to 0.95"), "{e}");
        let mut i = CostInput::paper();
        i.mixes[0].fractions = [("flash".to_string(), 1.0)].into();
        let e = i.check().unwrap_err().to_string();
        assert!(e.contains("\"all-ssd\"") && e.contains("\"flash\""), "{e}");
        let mut i = CostInput::paper();
        i.prices.insert(TAPE.into(), -1.0);
        assert!(i.check().unwrap_err().to_string().contains("prices.tape"));
        let e = parse_csd_prices("0.1,x").unwrap_err().to_string();
        assert!(e.contains("\"x\""), "{e}");
        assert!(parse_csd_prices("0.1,0").is_err());
        assert_eq!(parse_csd_prices("0.1, 0.2,1").unwrap(), vec![0.1, 0.2, 1.0]);
    }

    #[test]
    fn a_price_file_overrides_the_paper() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.json");
        std::fs::write(
            &path,
            r#"{"prices": {"tape": 0.4, "smr": 2.0},
                "mixes": [{"name": "mine", "fractions": {"hdd-15k": 0.2, "smr": 0.3, "tape": 0.5}}],
                "replaced": ["smr", "tape"], "csd_prices": [0.5]}"#,
        )
        .unwrap();
        let i = CostInput::load(&path).unwrap();
        assert_eq!(i.prices["ssd"], 75.0);
        let rows = i.fig3();
        assert_eq!(rows.len(), 1);
        let before = 0.2 * 13.5 + 0.3 * 2.0 + 0.5 * 0.4;
        let after = 0.2 * 13.5 + 0.8 * 0.5;
        assert!((rows[0].saving - before / after).abs() < 1e-12);
        std::fs::write(
            &path,
            r#"{"mixes": [{"name": "m", "fractions": {"ssd": 0.5}}]}"#,
        )
        .unwrap();
        let e = CostInput::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("prices.json") && e.contains("\"m\"") && e.contains("sum to 0.5"),
            "{e}"
        );
        std::fs::write(&path, r#"{"price": {}}"#).unwrap();
        let e = CostInput::load(&path).unwrap_err().to_string();
        assert!(e.contains("price: unknown field"), "{e}");
    }
}
