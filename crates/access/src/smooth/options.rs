//! What a Smooth Scan is asked to do: its morphing policy, its trigger, the
//! device's page costs the cost-aware policy and the SLA trigger reason with,
//! and the options that bound it.

use std::path::PathBuf;

use crate::report::Mode;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Greedy,
    SelectivityIncrease,
    Elastic,
    /// strata's extension: Elastic with an absolute yardstick. The region grows
    /// while the pages it reads beyond the one the index pointed at hold results
    /// at least as often as the break-even density — sequential page cost over
    /// random page cost at the operator's I/O depth
    /// ([`PageCosts::break_even_density`]): reading them in sequence is then
    /// cheaper than fetching their results at random — and halves below half of
    /// it. On a disk that density is about 2%; on flash with many requests in
    /// flight, random reads cost about what sequential ones do, so it only grows
    /// over dense data. Regions of one page read nothing beyond the index's
    /// page, so they say nothing about density: the policy then probes with
    /// two-page regions, waiting twice as many batches after each probe that
    /// did not pay off (a sparse query reads a few extra pages, not one per
    /// region every other batch).
    ///
    /// Once a batch of regions read together spans the largest region (the
    /// cap) and still pays off, an index entry only
    /// picks where the next region starts, at random in the heap, and the index
    /// leaves read to find it are overhead. For unordered output the policy
    /// then *sweeps*: regions follow in page order from where the last one
    /// ended (wrapping around once) until every page is processed, or until a
    /// region's density falls below half the break-even and the regions go
    /// back to index entries. Dense queries thereby end as a full scan of the
    /// pages not yet read, without repeating a tuple (the Page-ID cache skips
    /// what regions produced; mode 0's tuples are skipped by their entry).
    CostAware,
    /// strata's default for unordered output: the index range's pages are
    /// collected first (the Page-ID cache as the set of pages wanted), read
    /// once in page order with gaps bridged where the device makes that
    /// cheaper, and the scan morphs into a full scan as soon as a lower bound
    /// on finishing this way reaches the cost of a sweep
    /// ([`super::page_order`]). Ordered output and the Optimizer/SLA triggers
    /// need the index order while reading, so they get the cost-aware
    /// regions.
    PageOrder,
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Policy, String> {
        match s.to_ascii_lowercase().as_str() {
            "greedy" => Ok(Policy::Greedy),
            "si" | "selectivity-increase" | "selectivity_increase" => {
                Ok(Policy::SelectivityIncrease)
            }
            "elastic" => Ok(Policy::Elastic),
            "cost" | "cost-aware" | "costaware" => Ok(Policy::CostAware),
            "page-order" | "page_order" | "pageorder" => Ok(Policy::PageOrder),
            _ => Err(format!(
                "unknown policy '{s}' (page-order, cost, greedy, si, elastic)"
            )),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trigger {
    Eager,
    /// Morph once the rows produced reach the estimate (the next would exceed it).
    Optimizer {
        estimate: u64,
    },
    /// Morph when finishing within `bound_ms` could otherwise not be guaranteed.
    Sla {
        bound_ms: f64,
    },
}

/// What reading a page costs on the device, for the SLA trigger's running
/// estimate and the cost-aware policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PageCosts {
    /// One random page read on its own.
    pub random_ms: f64,
    /// One page of a sequential run.
    pub sequential_ms: f64,
    /// One random page read when many are in flight together (never below the
    /// sequential cost: the device's bandwidth bounds both).
    pub parallel_random_ms: f64,
}

impl Default for PageCosts {
    /// A local NVMe-class device (what `strata bench io` measures here: about
    /// 12k random 8 KiB reads/s at depth 1, 45k at depth 32, 1 GB/s sequential).
    fn default() -> Self {
        PageCosts {
            random_ms: 0.08,
            sequential_ms: 0.008,
            parallel_random_ms: 0.022,
        }
    }
}

impl PageCosts {
    /// The costs a modeled device profile charges.
    pub fn from_profile(p: &strata_storage::device::DeviceProfile) -> PageCosts {
        use strata_storage::device::ProfileKind;
        let seq = strata_storage::page::PAGE_SIZE as f64 / (p.read_mb_s * 1e6) * 1e3;
        let lanes = match p.kind {
            ProfileKind::Hdd => 1.0,
            ProfileKind::Ssd => p.channels.max(1) as f64,
        };
        let random = p.fixed_ms() + seq;
        PageCosts {
            random_ms: random,
            sequential_ms: seq,
            parallel_random_ms: (random / lanes).max(seq),
        }
    }

    /// The costs of the modeled device `db` was opened with; `None` for a real
    /// device (whose costs [`PageCosts::default`] gives).
    pub fn modeled(db: &strata_storage::Database) -> Option<PageCosts> {
        db.profile().map(PageCosts::from_profile)
    }

    /// The density of result pages above which reading the pages next to a
    /// result page in sequence beats fetching their results at random.
    pub fn break_even_density(&self, io_depth: usize) -> f64 {
        let random = if io_depth > 1 {
            self.parallel_random_ms
        } else {
            self.random_ms
        };
        (self.sequential_ms / random).min(1.0)
    }
}

#[derive(Clone, Debug)]
pub struct SmoothOptions {
    pub policy: Policy,
    pub trigger: Trigger,
    /// Largest region, in pages (the paper's best: 2000 pages = 16 MB).
    pub max_region_pages: u32,
    /// The furthest mode to morph to: `PageProbe` stops at mode 1, `Flattening`
    /// at regions of 2 pages (Fig. 16's variants).
    pub max_mode: Mode,
    /// Grow when local selectivity >= `grow` × global selectivity.
    pub grow: f64,
    /// Elastic divides the region by `shrink` when local selectivity <
    /// `shrink_below` × global selectivity (between the two thresholds it keeps
    /// the size).
    pub shrink: u32,
    pub shrink_below: f64,
    /// Memory budget of the Result Cache (ordered output).
    pub result_cache_bytes: usize,
    /// Where the Result Cache spills.
    pub temp_dir: PathBuf,
    /// For the SLA trigger.
    pub page_costs: PageCosts,
    /// Measure the SLA trigger's time spent by the device's modeled time instead
    /// of the wall clock.
    pub modeled_clock: bool,
    /// Regions read together (planned from the next index entries and put in
    /// flight at once, like a bitmap scan's prefetch). 1 is the paper's
    /// synchronous operator; 0 asks the device ([`Device::parallelism`]: 1 for a
    /// disk, its channels for an SSD).
    ///
    /// [`Device::parallelism`]: strata_storage::device::Device::parallelism
    pub io_depth: usize,
}

impl Default for SmoothOptions {
    fn default() -> Self {
        SmoothOptions {
            // The one policy whose decisions no arrangement of the data can
            // mislead (see `page_order`); results/smooth-scan/robustness.md
            // measures it against the best classical path over layouts,
            // sizes and devices.
            policy: Policy::PageOrder,
            trigger: Trigger::Eager,
            max_region_pages: 2000,
            max_mode: Mode::Expansion,
            grow: 1.0,
            shrink: 2,
            shrink_below: 1.0,
            result_cache_bytes: 64 << 20,
            temp_dir: std::env::temp_dir(),
            page_costs: PageCosts::default(),
            modeled_clock: false,
            io_depth: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_storage::device::DeviceProfile;

    #[test]
    fn policies_parse_by_their_names_and_bad_ones_are_named() {
        assert_eq!("greedy".parse(), Ok(Policy::Greedy));
        assert_eq!("SI".parse(), Ok(Policy::SelectivityIncrease));
        assert_eq!("elastic".parse(), Ok(Policy::Elastic));
        assert_eq!("cost-aware".parse(), Ok(Policy::CostAware));
        assert_eq!("page-order".parse(), Ok(Policy::PageOrder));
        let e = "fast".parse::<Policy>().unwrap_err();
        assert!(
            e.contains("'fast'") && e.contains("page-order, cost, greedy, si, elastic"),
            "{e}"
        );
    }

    #[test]
    fn page_costs_follow_the_profile_and_the_break_even_follows_the_device() {
        let hdd = PageCosts::from_profile(&DeviceProfile::builtin("hdd").unwrap());
        let ssd = PageCosts::from_profile(&DeviceProfile::builtin("ssd").unwrap());
        // A disk pays seek + rotation for a random page: 3.5 ms plus the transfer.
        assert!(
            (hdd.random_ms - hdd.sequential_ms - 3.5).abs() < 1e-9,
            "{hdd:?}"
        );
        // One head: in-flight requests do not make random pages cheaper.
        assert_eq!(hdd.parallel_random_ms, hdd.random_ms);
        // Channels do, but never below a sequential page.
        assert!(ssd.parallel_random_ms < ssd.random_ms);
        assert!(ssd.parallel_random_ms >= ssd.sequential_ms);
        for c in [hdd, ssd, PageCosts::default()] {
            let one = c.break_even_density(1);
            let deep = c.break_even_density(32);
            assert!(
                one > 0.0 && one <= 1.0 && deep >= one,
                "{c:?}: {one} {deep}"
            );
            assert!((one - c.sequential_ms / c.random_ms).abs() < 1e-12);
        }
        // Reading on pays off at far sparser data on a disk than on flash.
        assert!(hdd.break_even_density(1) < ssd.break_even_density(1));
    }

    #[test]
    fn the_default_is_the_eager_page_ordered_scan_up_to_the_papers_cap() {
        let o = SmoothOptions::default();
        assert_eq!(o.policy, Policy::PageOrder);
        assert_eq!(o.trigger, Trigger::Eager);
        assert_eq!(o.max_region_pages, 2000);
        assert_eq!(
            o.io_depth, 0,
            "the device decides how many regions are in flight"
        );
    }
}
