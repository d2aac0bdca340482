//! strata's session settings, set with `SET strata.<name> = <value>` and shown
//! by `SHOW strata.<name>`:
//!
//! | setting | values | default |
//! | --- | --- | --- |
//! | `strata.access_path` | `smooth`, `optimizer`, `full`, `index`, `sort`, `switch` | `smooth` |
//! | `strata.smooth_policy` | `page-order`, `cost`, `greedy`, `si`, `elastic` | `page-order` |
//! | `strata.result_cache` | a size such as `64MiB` (ordered Smooth Scan's budget) | `64MiB` |
//! | `strata.ordered_plan` | `auto`, `idx`, `sidx+ps`, `sidx+es`, `fts+ps`, `fts+es` | `auto` |
//! | `strata.sort_memory` | a size (the sorts' memory budget) | `32MiB` |
//! | `strata.direct_dml` | `true`, `false`: plain single-table UPDATE/DELETE planned from the syntax tree ([`crate::dml::direct_dml`]) | `true` |
//! | `strata.index_cache` | `auto`, `on` (`true`), `off` (`false`): answer full-key lookups that need only an index's key and cached columns from its leaves ([`crate::scan::cached_scan`]); `auto` lets each index's governor answer them without the cache while it finds the cache does not pay (`strata_storage::btree::cache::governor`) | `auto` |
//! | `strata.skipper` | `true`, `false`: run joins and scans over cold tables out of order through MJoin ([`crate::skipper`]); `false` is the pull-based baseline | `true` |
//! | `strata.skipper_cache` | a size: MJoin's object cache, counted in the on-device bytes of the objects it holds | `4GiB` |
//! | `strata.skipper_evict` | `max-progress`, `max-pending`: MJoin's eviction policy (Skipper §4.2) | `max-progress` |
//! | `strata.join_order` | `true`, `false`: inner joins reordered by their estimated rows, smallest first, from the `ANALYZE` statistics ([`crate::rules::join_order`]); `false` joins in the order FROM names the tables | `true` |
//! | `strata.scan_partitions` | `auto` or a number from 1 to 256: the parts an unordered full scan or page-ordered Smooth Scan (without a LIMIT) is split into, each read and converted by a thread of its own ([`crate::scan::scan_exec`]); `auto` takes DataFusion's `target_partitions` (the cores), no more than the device serves at once and no more than one part per 8 MiB of heap | `auto` |
//!
//! `strata.ordered_plan` chooses the flash paper's plan for a scan that must
//! produce index-key order (an `ORDER BY` on the key pushed into it); `auto`
//! follows `strata.access_path` — Smooth Scan and the index scan produce key
//! order themselves, and the other paths are followed by a partitioned sort
//! whose partitions come from the index (one write and one read of the data).
//!
//! A bad value is refused when it is SET, naming the setting and what it takes.

use std::fmt;
use std::str::FromStr;

use datafusion::common::config::{ConfigEntry, ConfigExtension, ExtensionOptions};
use datafusion::common::{DataFusionError, Result};
use strata_access::Policy;
use strata_access::ordered_plan::OrderedPlan;
use strata_storage::util::parse_size;

/// How a scan of a strata table chooses its access path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AccessPathSetting {
    /// Smooth Scan: starts as an index scan and morphs as the result grows; no
    /// statistics used.
    #[default]
    Smooth,
    /// A classical cost-based choice among full, index and sort scans from the
    /// statistics `ANALYZE` collected.
    Optimizer,
    Full,
    Index,
    Sort,
    /// Index scan that switches to a full scan once the optimizer's estimate is
    /// exceeded.
    Switch,
}

impl AccessPathSetting {
    pub const ALL: [AccessPathSetting; 6] = [
        AccessPathSetting::Smooth,
        AccessPathSetting::Optimizer,
        AccessPathSetting::Full,
        AccessPathSetting::Index,
        AccessPathSetting::Sort,
        AccessPathSetting::Switch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AccessPathSetting::Smooth => "smooth",
            AccessPathSetting::Optimizer => "optimizer",
            AccessPathSetting::Full => "full",
            AccessPathSetting::Index => "index",
            AccessPathSetting::Sort => "sort",
            AccessPathSetting::Switch => "switch",
        }
    }
}

impl FromStr for AccessPathSetting {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let t = s.trim().trim_matches('\'').to_ascii_lowercase();
        AccessPathSetting::ALL
            .into_iter()
            .find(|p| p.name() == t)
            .ok_or_else(|| {
                format!(
                    "strata.access_path: unknown access path '{s}' (expected smooth, optimizer, full, index, sort or switch)"
                )
            })
    }
}

impl fmt::Display for AccessPathSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// strata's settings in a DataFusion session.
#[derive(Clone, Debug)]
pub struct StrataOptions {
    pub access_path: AccessPathSetting,
    pub smooth_policy: Policy,
    pub result_cache_bytes: usize,
    /// `None` is `auto`.
    pub ordered_plan: Option<OrderedPlan>,
    pub sort_memory_bytes: usize,
    pub direct_dml: bool,
    /// Whether a query answerable from an index cache uses it.
    pub index_cache: IndexCacheSetting,
    /// Whether queries over cold tables run out of order (MJoin).
    pub skipper: bool,
    pub skipper_cache_bytes: u64,
    pub skipper_evict: EvictPolicy,
    /// When a hash join becomes an index nested-loop join.
    pub index_join: IndexJoinSetting,
    /// The parts a full scan or a page-ordered Smooth Scan is split into; `None` is `auto`
    /// ([`crate::scan::scan_exec`]).
    pub scan_partitions: Option<usize>,
    /// Whether inner joins are reordered by their estimated rows.
    pub join_order: bool,
}

/// The most parts `strata.scan_partitions` takes.
pub const MAX_SCAN_PARTITIONS: usize = 256;

fn parse_partitions(value: &str) -> std::result::Result<Option<usize>, String> {
    let v = value.trim().trim_matches('\'');
    if v.eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    match v.parse::<usize>() {
        Ok(n) if (1..=MAX_SCAN_PARTITIONS).contains(&n) => Ok(Some(n)),
        _ => Err(format!(
            "strata.scan_partitions: '{value}' is not auto or a number from 1 to {MAX_SCAN_PARTITIONS}"
        )),
    }
}

/// When the planner replaces a hash join by an index nested-loop join
/// ([`crate::scan::index_join`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IndexJoinSetting {
    /// Where its estimated cost is lower, under `strata.access_path` =
    /// `optimizer` or `smooth` (the fixed paths keep hash joins).
    #[default]
    Auto,
    /// Never.
    Off,
    /// Wherever one is possible, whatever the estimates.
    On,
}

impl IndexJoinSetting {
    pub fn name(self) -> &'static str {
        match self {
            IndexJoinSetting::Auto => "auto",
            IndexJoinSetting::Off => "off",
            IndexJoinSetting::On => "on",
        }
    }
}

impl FromStr for IndexJoinSetting {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().trim_matches('\'').to_ascii_lowercase().as_str() {
            "auto" => Ok(IndexJoinSetting::Auto),
            "off" | "false" => Ok(IndexJoinSetting::Off),
            "on" | "true" => Ok(IndexJoinSetting::On),
            _ => Err(format!(
                "strata.index_join: unknown value '{s}' (expected auto, off or on)"
            )),
        }
    }
}

/// Whether lookups that need only an index's key and cached columns go
/// through its leaf cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IndexCacheSetting {
    /// Through the cache while the index's governor finds that it pays;
    /// otherwise the index entries and the heap (the same answer).
    #[default]
    Auto,
    /// Never: such queries take the ordinary scan.
    Off,
    /// Always through the cache (No Bits Left Behind as the paper has it).
    On,
}

impl IndexCacheSetting {
    pub fn name(self) -> &'static str {
        match self {
            IndexCacheSetting::Auto => "auto",
            IndexCacheSetting::Off => "off",
            IndexCacheSetting::On => "on",
        }
    }
}

impl FromStr for IndexCacheSetting {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().trim_matches('\'').to_ascii_lowercase().as_str() {
            "auto" => Ok(IndexCacheSetting::Auto),
            "off" | "false" => Ok(IndexCacheSetting::Off),
            "on" | "true" => Ok(IndexCacheSetting::On),
            _ => Err(format!(
                "strata.index_cache: unknown value '{s}' (expected auto, on or off)"
            )),
        }
    }
}

/// Which cached object MJoin drops when an arriving one needs room
/// (Skipper §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EvictPolicy {
    /// The object in the fewest subplans that could run now, given the cache
    /// and the arriving object; ties go to the fewest pending subplans.
    #[default]
    MaxProgress,
    /// The object in the fewest pending subplans.
    MaxPending,
}

impl EvictPolicy {
    pub fn name(self) -> &'static str {
        match self {
            EvictPolicy::MaxProgress => "max-progress",
            EvictPolicy::MaxPending => "max-pending",
        }
    }
}

impl FromStr for EvictPolicy {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().trim_matches('\'').to_ascii_lowercase().as_str() {
            "max-progress" => Ok(EvictPolicy::MaxProgress),
            "max-pending" => Ok(EvictPolicy::MaxPending),
            _ => Err(format!(
                "strata.skipper_evict: unknown policy '{s}' (expected max-progress or max-pending)"
            )),
        }
    }
}

impl Default for StrataOptions {
    fn default() -> Self {
        StrataOptions {
            access_path: AccessPathSetting::Smooth,
            smooth_policy: Policy::PageOrder,
            result_cache_bytes: 64 << 20,
            ordered_plan: None,
            sort_memory_bytes: 32 << 20,
            direct_dml: true,
            index_cache: IndexCacheSetting::Auto,
            skipper: true,
            skipper_cache_bytes: 4 << 30,
            skipper_evict: EvictPolicy::MaxProgress,
            index_join: IndexJoinSetting::Auto,
            scan_partitions: None,
            join_order: true,
        }
    }
}

fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::PageOrder => "page-order",
        Policy::CostAware => "cost",
        Policy::Greedy => "greedy",
        Policy::SelectivityIncrease => "si",
        Policy::Elastic => "elastic",
    }
}

fn parse_policy(s: &str) -> std::result::Result<Policy, String> {
    Ok(
        match s.trim().trim_matches('\'').to_ascii_lowercase().as_str() {
            "page-order" => Policy::PageOrder,
            "cost" => Policy::CostAware,
            "greedy" => Policy::Greedy,
            "si" => Policy::SelectivityIncrease,
            "elastic" => Policy::Elastic,
            _ => {
                return Err(format!(
                    "strata.smooth_policy: unknown policy '{s}' (expected page-order, cost, greedy, si or elastic)"
                ));
            }
        },
    )
}

/// A boolean setting: `true`/`on` or `false`/`off`.
fn parse_bool(name: &str, value: &str) -> std::result::Result<bool, String> {
    match value.trim_matches('\'').to_ascii_lowercase().as_str() {
        "true" | "on" => Ok(true),
        "false" | "off" => Ok(false),
        _ => Err(format!("strata.{name}: '{value}' is not true or false")),
    }
}

impl ConfigExtension for StrataOptions {
    const PREFIX: &'static str = "strata";
}

impl ExtensionOptions for StrataOptions {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone())
    }

    fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let err = DataFusionError::Configuration;
        match key {
            "access_path" => self.access_path = value.parse().map_err(err)?,
            "smooth_policy" => self.smooth_policy = parse_policy(value).map_err(err)?,
            "result_cache" => {
                self.result_cache_bytes = parse_size(value.trim_matches('\''))
                    .map_err(|e| err(format!("strata.result_cache: {e}")))?
                    as usize
            }
            "ordered_plan" => {
                let v = value.trim_matches('\'');
                self.ordered_plan = if v.eq_ignore_ascii_case("auto") {
                    None
                } else {
                    Some(v.parse().map_err(|e: strata_access::AccessError| {
                        err(format!("strata.ordered_plan: {e} (or auto)"))
                    })?)
                }
            }
            "sort_memory" => {
                self.sort_memory_bytes = parse_size(value.trim_matches('\''))
                    .map_err(|e| err(format!("strata.sort_memory: {e}")))?
                    as usize
            }
            "direct_dml" => self.direct_dml = parse_bool("direct_dml", value).map_err(err)?,
            "join_order" => self.join_order = parse_bool("join_order", value).map_err(err)?,
            "index_cache" => self.index_cache = value.parse().map_err(err)?,
            "skipper" => self.skipper = parse_bool("skipper", value).map_err(err)?,
            "skipper_cache" => {
                self.skipper_cache_bytes = parse_size(value.trim_matches('\''))
                    .map_err(|e| err(format!("strata.skipper_cache: {e}")))?
            }
            "skipper_evict" => self.skipper_evict = value.parse().map_err(err)?,
            "index_join" => self.index_join = value.parse().map_err(err)?,
            "scan_partitions" => self.scan_partitions = parse_partitions(value).map_err(err)?,
            _ => {
                return Err(err(format!(
                    "unknown setting 'strata.{key}' (strata has access_path, smooth_policy, result_cache, ordered_plan, sort_memory, direct_dml, join_order, index_cache, skipper, skipper_cache, skipper_evict, index_join, scan_partitions)"
                )));
            }
        }
        Ok(())
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        let entry = |key: &str, value: String, description: &'static str| ConfigEntry {
            key: format!("strata.{key}"),
            value: Some(value),
            description,
        };
        vec![
            entry(
                "access_path",
                self.access_path.to_string(),
                "access path of strata scans: smooth, optimizer, full, index, sort, switch",
            ),
            entry(
                "smooth_policy",
                policy_name(self.smooth_policy).to_string(),
                "Smooth Scan's morphing policy: cost, greedy, si, elastic",
            ),
            entry(
                "result_cache",
                strata_storage::util::format_bytes(self.result_cache_bytes as u64),
                "memory budget of the ordered Smooth Scan's Result Cache",
            ),
            entry(
                "ordered_plan",
                self.ordered_plan
                    .map_or("auto".to_string(), |p| p.name().to_string()),
                "plan of scans that must produce key order: auto, idx, sidx+ps, sidx+es, fts+ps, fts+es",
            ),
            entry(
                "sort_memory",
                strata_storage::util::format_bytes(self.sort_memory_bytes as u64),
                "memory budget of the external and partitioned sorts",
            ),
            entry(
                "direct_dml",
                self.direct_dml.to_string(),
                "plan plain single-table UPDATE and DELETE from the syntax tree, not as a query",
            ),
            entry(
                "join_order",
                self.join_order.to_string(),
                "reorder inner joins by their estimated rows (ANALYZE); false joins in FROM's order",
            ),
            entry(
                "index_cache",
                self.index_cache.name().to_string(),
                "answer full-key lookups of an index's key and cached columns from its leaves: auto (where the cache pays), on, off",
            ),
            entry(
                "skipper",
                self.skipper.to_string(),
                "run joins and scans over cold tables out of order (MJoin); false pulls objects in plan order",
            ),
            entry(
                "skipper_cache",
                strata_storage::util::format_bytes(self.skipper_cache_bytes),
                "MJoin's object cache, in on-device bytes of the objects it holds",
            ),
            entry(
                "skipper_evict",
                self.skipper_evict.name().to_string(),
                "MJoin's eviction policy: max-progress or max-pending",
            ),
            entry(
                "index_join",
                self.index_join.name().to_string(),
                "index nested-loop joins: auto (where cheaper, under optimizer and smooth), off, on (wherever possible)",
            ),
            entry(
                "scan_partitions",
                self.scan_partitions
                    .map_or("auto".to_string(), |n| n.to_string()),
                "parts a full or page-ordered Smooth Scan is split into, each on a thread: auto (the cores, the device's parallelism, 8 MiB a part) or 1 to 256",
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_refuse_bad_values() {
        let mut o = StrataOptions::default();
        o.set("access_path", "'optimizer'").unwrap();
        assert_eq!(o.access_path, AccessPathSetting::Optimizer);
        o.set("smooth_policy", "elastic").unwrap();
        assert_eq!(o.smooth_policy, Policy::Elastic);
        o.set("result_cache", "1MiB").unwrap();
        assert_eq!(o.result_cache_bytes, 1 << 20);
        let e = o.set("access_path", "fast").unwrap_err().to_string();
        assert!(e.contains("unknown access path 'fast'"), "{e}");
        let e = o.set("nope", "1").unwrap_err().to_string();
        assert!(e.contains("unknown setting 'strata.nope'"), "{e}");
        let e = o.set("result_cache", "lots").unwrap_err().to_string();
        assert!(e.contains("strata.result_cache"), "{e}");
        o.set("ordered_plan", "sidx+ps").unwrap();
        assert_eq!(o.ordered_plan, Some(OrderedPlan::SidxPs));
        o.set("ordered_plan", "auto").unwrap();
        assert_eq!(o.ordered_plan, None);
        let e = o.set("ordered_plan", "bogo").unwrap_err().to_string();
        assert!(
            e.contains("strata.ordered_plan") && e.contains("bogo"),
            "{e}"
        );
        o.set("sort_memory", "2MiB").unwrap();
        assert_eq!(o.sort_memory_bytes, 2 << 20);
        o.set("direct_dml", "false").unwrap();
        assert!(!o.direct_dml);
        let e = o.set("direct_dml", "maybe").unwrap_err().to_string();
        assert!(
            e.contains("strata.direct_dml") && e.contains("maybe"),
            "{e}"
        );
        assert_eq!(o.index_cache, IndexCacheSetting::Auto);
        o.set("index_cache", "off").unwrap();
        assert_eq!(o.index_cache, IndexCacheSetting::Off);
        o.set("index_cache", "'TRUE'").unwrap();
        assert_eq!(o.index_cache, IndexCacheSetting::On);
        o.set("index_cache", "auto").unwrap();
        assert_eq!(o.index_cache, IndexCacheSetting::Auto);
        let e = o.set("index_cache", "2").unwrap_err().to_string();
        assert!(e.contains("strata.index_cache") && e.contains("'2'"), "{e}");
        o.set("skipper", "false").unwrap();
        assert!(!o.skipper);
        o.set("skipper_cache", "'64MiB'").unwrap();
        assert_eq!(o.skipper_cache_bytes, 64 << 20);
        o.set("skipper_evict", "max-pending").unwrap();
        assert_eq!(o.skipper_evict, EvictPolicy::MaxPending);
        o.set("scan_partitions", "3").unwrap();
        assert_eq!(o.scan_partitions, Some(3));
        o.set("scan_partitions", "'auto'").unwrap();
        assert_eq!(o.scan_partitions, None);
        for bad in ["0", "257", "-1", "many"] {
            let e = o.set("scan_partitions", bad).unwrap_err().to_string();
            assert!(
                e.contains("strata.scan_partitions") && e.contains(&format!("'{bad}'")),
                "{e}"
            );
        }
        let e = o.set("skipper_evict", "lru").unwrap_err().to_string();
        assert!(
            e.contains("strata.skipper_evict") && e.contains("'lru'"),
            "{e}"
        );
        o.set("index_join", "on").unwrap();
        assert_eq!(o.index_join, IndexJoinSetting::On);
        let e = o.set("index_join", "sometimes").unwrap_err().to_string();
        assert!(
            e.contains("strata.index_join") && e.contains("'sometimes'"),
            "{e}"
        );
        assert_eq!(o.entries().len(), 13);
    }
}
