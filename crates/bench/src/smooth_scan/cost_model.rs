//! The analytical cost model (§5) and the competitive analysis (§6) of the Smooth
//! Scan paper (Borovica-Gajic, Idreos, Ailamaki, Zukowski, Fraser: "Smooth Scan:
//! robust access path selection without cardinality estimation", VLDB Journal
//! 2018), plus the data of its analytical figures (Fig. 9–12).
//!
//! Everything here is plain arithmetic on `f64`: no I/O, no state. Costs are in
//! whatever unit [`CostParams`]' `rand_cost`, `seq_cost` and `cpu_cost` are in —
//! abstract units (the paper's §6 uses `rand = 10`, `seq = 1` for an HDD and
//! `rand = 2`, `seq = 1` for an SSD) or milliseconds (see [`DeviceTimes`], which
//! derives per-page times from strata's modeled `hdd`/`ssd` device profiles).
//!
//! # §5: the cost model (Table 1, Eq. 3–27)
//!
//! Parameters ([`CostParams`]): tuple size `Ts`, number of tuples `#T`, page size
//! `Ps`, key size `Ks`, and the per-page random/sequential I/O costs and per-tuple
//! CPU cost. Selectivity `sel` is a *fraction* in `[0, 1]` here (the paper writes
//! percent); values outside are clamped.
//!
//! Derived values ([`CostParams`] methods):
//!
//! | Eq. | value | formula |
//! |-----|-------|---------|
//! | 3 | [`tuples_per_page`](CostParams::tuples_per_page) `#Tp` | `⌊Ps / Ts⌋` |
//! | 4 | [`pages`](CostParams::pages) `#P` | `⌈#T / #Tp⌉` |
//! | 5 | [`fanout`](CostParams::fanout) | `⌊Ps / (1.2 × Ks)⌋` — each key gets 20 % extra for its child pointer |
//! | 6 | [`leaves`](CostParams::leaves) | `⌈#T / fanout⌉` (every tuple has one leaf entry) |
//! | 7 | [`height`](CostParams::height) | `⌈log_fanout(#leaves)⌉ + 1` |
//! | 8 | [`card`](CostParams::card) | `sel × #T` |
//! | 9 | [`leaves_res`](CostParams::leaves_res) | `⌈card / fanout⌉` |
//! | 15 | [`result_pages`](CostParams::result_pages) `#P_res` | `min(card, #P)` — uniform results, one per page: the worst case |
//!
//! Operators (each returns a [`Cost`] with the I/O and the CPU part):
//!
//! * Full Scan, [`full_scan_cost`]: Eq. 10 `FS_io = #P × seq`, Eq. 11
//!   `FS_cpu = #T × cpu`.
//! * Index Scan (non-clustered), [`index_scan_cost`]: Eq. 12
//!   `IS_io = (height + card) × rand + #leaves_res × seq`, Eq. 13
//!   `IS_cpu = (height × log2(fanout) + card) × cpu`.
//! * Sort Scan, [`sort_scan_cost`] — not in the paper's §5; it is the practical
//!   twin of §6's Oracle (result pages read in page order). **Model choice**: the
//!   index part of Eq. 12 (one descent, `height × rand`, plus `#leaves_res × seq`),
//!   then the `#P_res` pages of Eq. 15 in page order. A page is read sequentially
//!   when the page before it also holds results, randomly otherwise. With results
//!   spread uniformly, a page holds results with probability `q = #P_res / #P`, so
//!   the expected number of random jumps (maximal runs of result pages) is
//!   `jumps = q + (#P_res − q)(1 − q)`: about `#P_res` at low selectivity
//!   (every page is a jump) and 1 when every page holds results (one random
//!   access, then a sequential read of the table). `SortS_io = jumps × rand +
//!   (#P_res − jumps) × seq`. CPU: the descent's binary searches, one comparison
//!   per fetched tuple (as in Eq. 13) and the sort of the tuple IDs,
//!   `card × log2(card)`.
//! * §6's Oracle, [`oracle_cost`]: `#P_res × seq` (the result pages, all
//!   sequential; no CPU) — the reference the competitive ratios divide by.
//! * Smooth Scan per mode, [`smooth_scan_modes`], for a given split of `card`
//!   between the modes (Eq. 14: `card = card_m0 + card_m1 + card_m2`):
//!   * **index** part (our split of the paper's Mode 0 term): one descent,
//!     `height × rand`, plus `#leaves_res(card) × seq` — Smooth Scan walks the
//!     whole index range whatever the mode; CPU `height × log2(fanout)` plus one
//!     Page-ID-cache probe per index entry handled in Modes 1/2
//!     (`(card_m1 + card_m2) × cpu`). *Interpretation*: the paper folds the
//!     descent into Mode 0 ("identical to the cost of the index scan for the same
//!     number of tuples") and does not charge the leaves or the per-entry probe of
//!     the entries handled in Modes 1/2; with Eager Smooth Scan (`card_m0 = 0`) its
//!     formulas would otherwise charge no index access at all.
//!   * **Mode 0** (index scan): I/O `card_m0 × rand` (the rest of Eq. 12);
//!     CPU Eq. 16 minus the descent: `card_m0 × 2 × cpu` (the 2: filling the
//!     Tuple-ID cache).
//!   * **Mode 1** (entire page probe): Eq. 17 `#P_m1 = min(card_m1, #P)`, Eq. 18
//!     `I/O = #P_m1 × rand`, Eq. 19 `CPU = (#P_m1 × #Tp + #P_m1 × 2 +
//!     #P_m1 × #Tp × m0chk) × cpu` (compare every tuple of the page; probe and fill
//!     the Page-ID cache; check every tuple against the Tuple-ID cache if Mode 0
//!     ran first).
//!   * **Mode 2** (flattening): Eq. 20 `#P_m2 = min(card_m2, #P − #P_m1)`;
//!     Eq. 21–22 regions double (`f(i+1) = 2 f(i)`, sizes `1, 2, 4, …`); Eq. 23–24
//!     reading `#P_m2 = Σ_{i=0}^{n} 2^i` pages takes `#rand = log2(#P_m2 + 1)`
//!     jumps (the best case; Eq. 25's worst case `min(#P_m2, log2(#P + 1))`
//!     converges to the same value and the paper uses that). Eq. 26 `I/O = #rand ×
//!     rand + (#P_m2 − #rand) × seq`, Eq. 27 CPU as Eq. 19 per page. **The cap**:
//!     the paper's formulas ignore the largest region (2000 pages in its
//!     experiments, §7.4). We handle it ([`doubling_regions`]): regions
//!     `first, 2·first, …` below the cap, then regions of `cap` pages, each one
//!     random plus `cap − 1` sequential pages. Without a cap and with
//!     `first = 1` this is exactly Eq. 24. The count is continuous (a fractional
//!     last region) so costs stay smooth and monotone in `card`.
//!   * The total is the sum of the parts (the paper's final, unnumbered equations).
//! * Eager Smooth Scan under uniform results, [`smooth_scan_cost`], two models
//!   ([`SmoothModel`]):
//!   * [`SmoothModel::Paper`] (default): the formulas above with `card_m0 = 0`,
//!     the first result page in Mode 1 (the first region is one page) and the rest
//!     of the `#P_res` result pages in Mode 2 with regions `2, 4, …` up to the cap.
//!     Like the paper it only counts result pages (flattening is assumed to find
//!     them adjacent); with every page holding results (`card ≥ #P`) it is exact:
//!     the whole table, one random jump per region.
//!   * [`SmoothModel::Simulated`]: an expected-value simulation of strata's
//!     Smooth Scan policies (Greedy / Selectivity-Increase / Elastic with the
//!     `local ≥ grow × global` page-selectivity test of Eq. 1–2) over result pages
//!     spread uniformly (`#P × (1 − (1 − 1/#P)^card)` of them), counting the pages
//!     without results that regions read too. Regions are assumed not to run into
//!     pages read before (an approximation: the real operator cuts a region
//!     short there and then jumps more often).
//!
//! # §6: competitive analysis (Eq. 28–42)
//!
//! `CR = max over sel of SS_cost(sel) / Oracle(sel)` (Eq. 28), Oracle = result
//! pages read sequentially. All functions take the I/O costs as [`IoCosts`]
//! (`rand`, `seq`) and ignore CPU, as the paper does.
//!
//! * **Greedy** ([`greedy_cr`], Fig. 8a/10): worst case when every region's extra
//!   pages are all misses and `card = #rand = log2(#P + 1)` (Eq. 29); Eq. 30
//!   `SS = #rand × rand + (#P − #rand) × seq`; Eq. 31
//!   `CR = SS / (#rand × seq) = rand/seq + #P/#rand − 1`. The formula as printed
//!   reproduces the paper's numbers: HDD 109.3 for 1,000 pages ("110") and 761.6 for
//!   10,000 ("760"); SSD 101.3 and 753.6 ("from 100 to 750").
//! * **Selectivity Increase** ([`si_cr`], [`si_peak`], Fig. 8b/11): regions
//!   `2, 4, …, 2^x` with `1, 3, 6, 12, …, 3·2^(x−2)` result pages (the minimal
//!   sequence that keeps `local > global`), then `y` regions of `2^x` pages with
//!   one result each. Eq. 32 `#P_res = 1 + Σ_{i=0}^{x−2} 3·2^i + y = 1 +
//!   3(2^(x−1) − 1) + y`; Eq. 33 `#P = Σ_{i=1}^{x} 2^i + 2^x y = 2^x (2 + y) − 2`;
//!   Eq. 34 `y = (#P + 2)/2^x − 2`; Eq. 35 `#rand = x + y`, `SS = #rand × rand +
//!   (#P − #rand) × seq`; Eq. 36 `CR = SS / (#P_res × seq)`. **Discrepancy**: the
//!   equations as printed (Eq. 32 is legible) peak at `x ≈ 7.96` (integer
//!   `x = 8`) for 100K pages on HDD, as the paper says, but at CR = 134.4, not the
//!   "≈ 100" the text reads off its 3-D plot. No reading of Eq. 32–36 gives 100 at
//!   `x = 8`: that would need `#P_res ≥ 1,036` while Eq. 32 gives 771. (Summing
//!   Eq. 32 to `x − 1` instead of `x − 2` would give a peak of 96.3, but at
//!   `x ≈ 7.4`, and contradicts the legible sum limit.) We keep the printed
//!   equations.
//! * **Elastic on the SI worst case** ([`elastic_si_cr`], Fig. 12): Elastic grows
//!   `x` times on the same regions, then shrinks `x` times (regions `2^(x−1), …,
//!   2, 1`, one result each) and reads the remaining `y − x` single results with
//!   regions of one page. Eq. 37, pages accessed:
//!   `#P = Σ_{i=1}^{x} 2^i + Σ_{i=0}^{x−1} 2^i + (y − x) = 3·2^x − 3 + y − x`;
//!   Eq. 38 `#rand = x + y`, `SS = #rand × rand + (#P − #rand) × seq`; Eq. 39
//!   `CR = SS / (#P_res × seq)` with `#P_res` from Eq. 32. *Interpretation*: the
//!   OCR shows the upper limits of both sums of Eq. 37 as `x` and a garbled
//!   closed form; the second sum must stop at `x − 1` (the `x` shrinking regions
//!   of the text: `2^(x−1)` down to 1), which is the only reading under which the
//!   CR "converges to 2 for x > 10" (with `Σ_{i=0}^{x}` it would converge to 8/3).
//!   Valid for `y ≥ x`. With `y` from Eq. 34 for 100K pages: 10.0 at `x = 1`,
//!   2.52 at 10, 2.15 at 11, 2.05 at 12.
//! * **Elastic, highest page-miss rate** ([`elastic_highest_miss_cr`], Fig. 9):
//!   the text: half of the table has regions just dense enough to keep doubling,
//!   the other half one result page per shrinking region. We model it as Eq.
//!   37–39 with `y = x` — `x` growing regions with the Eq. 32 densities, then the
//!   `x` shrinking regions with one result each and no single-page tail — so
//!   `#P = 3·2^x − 3`, `#P_res = 3·2^(x−1) − 2 + x`, `#rand = 2x`, `x` solved
//!   (continuously) from `#P`. The growing half holds half of the *regions* and
//!   2/3 of the pages. **Discrepancy**: this converges to 2 as the paper says
//!   (2.000213 at 3M pages, 0.00011 from its "2.0001") but gives 3.513 at 100
//!   pages where the paper has 2.45. We found no reading that gives both: on 100
//!   pages any doubling scheme needs at least 5 regions, i.e. 5 random jumps
//!   (+45 cost units on HDD over a sequential read), and the description allows at
//!   most ~56 result pages (a fully dense half plus one per shrinking region), so
//!   the ratio is at least (100 + 45)/56 ≈ 2.6; the literal reading
//!   (half of the *pages* at the Eq. 32 density 3/4) converges to 8/3, not 2.
//! * **Elastic worst case** ([`elastic_worst_cr`], Fig. 8c): every second page
//!   holds a result, Elastic keeps regions of 2 pages: Eq. 40 `#rand = #P/2`,
//!   Eq. 41 `SS = #rand × rand + (#P − #rand) × seq`, Eq. 42 `CR = SS / (#P/2 ×
//!   seq) = (rand + seq)/seq` = 11 on HDD; against Full Scan
//!   ([`elastic_worst_cr_vs_full_scan`]) `(rand + seq)/(2 seq)` = 5.5.
//!   **Discrepancy**: for the SSD (`rand = 2`, `seq = 1`) the formula gives 3 and
//!   1.5, while the paper states 6 and 3 — exactly twice the formula (and what
//!   `rand/seq = 5` would give); we keep the formula.
//! * **Morphing increase factor** `k` ([`elastic_worst_cr_factor`]): the same
//!   worst case with regions of `k` pages and one result each gives
//!   `CR = (rand + (k − 1) seq)/seq`: 11 for `k = 2` and 19 for `k = 10` on HDD —
//!   which reproduces the paper's "a morphing increase factor of 10 for HDD gives a
//!   competitive ratio of 19".
//!
//! # Figures
//!
//! [`figure_9`], [`figure_10`], [`figure_11`], [`figure_12`] (all in
//! [`analytical_figures`]) return the analytical figures' curves as
//! [`FigureData`] — named series of `(x, y)` points — and
//! [`cost_vs_selectivity`] the §5 operator costs over a selectivity range.

use serde::{Deserialize, Serialize};
use strata_storage::device::DeviceProfile;

/// The page size of the paper (PostgreSQL's) and of strata.
pub const DEFAULT_PAGE_SIZE: u64 = 8192;

/// The largest morphing region of the paper's experiments (§7.4: 2000 pages =
/// 16 MB).
pub const PAPER_MAX_REGION_PAGES: f64 = 2000.0;

/// Default CPU cost per tuple operation in abstract units, relative to one
/// sequential page read = 1 (about 65 ns against an 8 KiB page at 125 MB/s).
pub const DEFAULT_CPU_UNITS_PER_TUPLE: f64 = 0.001;

/// Default CPU cost per tuple operation in milliseconds (100 ns).
pub const DEFAULT_CPU_MS_PER_TUPLE: f64 = 0.0001;

/// Invalid model parameters.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CostModelError {
    #[error("invalid cost-model parameter: {0}")]
    Invalid(String),
}

/// I/O costs per page, the only hardware parameters of §6.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IoCosts {
    /// Cost of a random page access.
    pub rand: f64,
    /// Cost of a sequential page access.
    pub seq: f64,
}

impl IoCosts {
    /// §6's HDD: random access 10× a sequential one.
    pub const HDD: IoCosts = IoCosts {
        rand: 10.0,
        seq: 1.0,
    };
    /// §6's SSD: random access 2× a sequential one.
    pub const SSD: IoCosts = IoCosts {
        rand: 2.0,
        seq: 1.0,
    };
}

/// Absolute per-page access times of a device, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DeviceTimes {
    /// A page read that is not a continuation of the previous one.
    pub random_page_ms: f64,
    /// A page read that continues the previous one.
    pub sequential_page_ms: f64,
}

impl DeviceTimes {
    /// A device with a fixed per-request cost (`fixed_ms`: seek + rotation, or
    /// latency) and a transfer rate in MB/s (10^6 bytes/s): a sequential page costs
    /// `page_size / rate`, a random one `fixed_ms` plus that.
    pub fn from_fixed_and_rate(fixed_ms: f64, mb_per_s: f64, page_size: u64) -> DeviceTimes {
        let transfer_ms = page_size as f64 / (mb_per_s * 1e6) * 1e3;
        DeviceTimes {
            random_page_ms: fixed_ms + transfer_ms,
            sequential_page_ms: transfer_ms,
        }
    }

    /// strata's modeled `hdd` profile: 2.5 ms seek + 1.0 ms rotation, 125 MB/s —
    /// for 8 KiB pages 3.565536 ms random, 0.065536 ms sequential.
    pub fn hdd(page_size: u64) -> DeviceTimes {
        DeviceTimes::from_fixed_and_rate(2.5 + 1.0, 125.0, page_size)
    }

    /// strata's modeled `ssd` profile: 0.2 ms latency, 200 MB/s — for 8 KiB pages
    /// 0.24096 ms random, 0.04096 ms sequential (one synchronous reader, one
    /// channel).
    pub fn ssd(page_size: u64) -> DeviceTimes {
        DeviceTimes::from_fixed_and_rate(0.2, 200.0, page_size)
    }

    /// The page times of any strata [`DeviceProfile`] (read rate; HDD: seek +
    /// rotation, SSD: latency, as one channel sees them).
    pub fn from_profile(profile: &DeviceProfile, page_size: u64) -> DeviceTimes {
        DeviceTimes::from_fixed_and_rate(profile.fixed_ms(), profile.read_mb_s, page_size)
    }

    /// The same times as §6's [`IoCosts`].
    pub fn io_costs(&self) -> IoCosts {
        IoCosts {
            rand: self.random_page_ms,
            seq: self.sequential_page_ms,
        }
    }
}

/// I/O and CPU cost of an operator (or a part of one).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Cost {
    pub io: f64,
    pub cpu: f64,
}

impl Cost {
    pub fn new(io: f64, cpu: f64) -> Cost {
        Cost { io, cpu }
    }

    /// `io + cpu`.
    pub fn total(&self) -> f64 {
        self.io + self.cpu
    }
}

impl std::ops::Add for Cost {
    type Output = Cost;
    fn add(self, o: Cost) -> Cost {
        Cost {
            io: self.io + o.io,
            cpu: self.cpu + o.cpu,
        }
    }
}

impl std::ops::AddAssign for Cost {
    fn add_assign(&mut self, o: Cost) {
        self.io += o.io;
        self.cpu += o.cpu;
    }
}

/// The parameters of Table 1 (the table and the hardware).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CostParams {
    /// `Ts`: tuple size in bytes, overhead included.
    pub tuple_size: u64,
    /// `#T`: tuples in the relation.
    pub num_tuples: u64,
    /// `Ps`: page size in bytes (heap and index pages alike).
    pub page_size: u64,
    /// `Ks`: size of the indexed key in bytes.
    pub key_size: u64,
    /// `rand_cost`: cost of a random page access.
    pub rand_cost: f64,
    /// `seq_cost`: cost of a sequential page access.
    pub seq_cost: f64,
    /// `cpu_cost`: cost of one CPU operation on a tuple.
    pub cpu_cost: f64,
}

impl CostParams {
    /// A table of `num_tuples` tuples of `tuple_size` bytes indexed on a
    /// `key_size`-byte key, 8 KiB pages, §6's HDD costs in abstract units
    /// (random 10, sequential 1) and [`DEFAULT_CPU_UNITS_PER_TUPLE`].
    pub fn new(tuple_size: u64, num_tuples: u64, key_size: u64) -> CostParams {
        CostParams {
            tuple_size,
            num_tuples,
            page_size: DEFAULT_PAGE_SIZE,
            key_size,
            rand_cost: IoCosts::HDD.rand,
            seq_cost: IoCosts::HDD.seq,
            cpu_cost: DEFAULT_CPU_UNITS_PER_TUPLE,
        }
    }

    /// A table whose tuple count and page count are known (e.g. measured): the
    /// tuple size is set to `⌊Ps / ⌈#T / #P⌉⌋`, which gives back `#P` pages
    /// unless tuples are so small that several sizes round to the same count.
    pub fn from_table(num_tuples: u64, num_pages: u64, key_size: u64) -> CostParams {
        let per_page = num_tuples.div_ceil(num_pages.max(1)).max(1);
        let tuple_size = (DEFAULT_PAGE_SIZE / per_page).max(1);
        CostParams::new(tuple_size, num_tuples, key_size)
    }

    /// The paper's micro-benchmark (§7.3): 400M tuples of 10 integer columns in
    /// "3M pages" of 8 KB, a 4-byte integer key. `Ts = 61` gives 134 tuples per
    /// page and 2,985,075 pages.
    pub fn paper_microbenchmark() -> CostParams {
        CostParams::new(61, 400_000_000, 4)
    }

    /// These parameters with other I/O costs and CPU cost (abstract units).
    pub fn with_unit_costs(self, io: IoCosts, cpu_cost: f64) -> CostParams {
        CostParams {
            rand_cost: io.rand,
            seq_cost: io.seq,
            cpu_cost,
            ..self
        }
    }

    /// §6's HDD costs (10 / 1) and [`DEFAULT_CPU_UNITS_PER_TUPLE`].
    pub fn hdd_units(self) -> CostParams {
        self.with_unit_costs(IoCosts::HDD, DEFAULT_CPU_UNITS_PER_TUPLE)
    }

    /// §6's SSD costs (2 / 1) and [`DEFAULT_CPU_UNITS_PER_TUPLE`].
    pub fn ssd_units(self) -> CostParams {
        self.with_unit_costs(IoCosts::SSD, DEFAULT_CPU_UNITS_PER_TUPLE)
    }

    /// Costs in milliseconds: the device's page times and `cpu_ms_per_tuple`.
    pub fn with_device_times(self, times: DeviceTimes, cpu_ms_per_tuple: f64) -> CostParams {
        CostParams {
            rand_cost: times.random_page_ms,
            seq_cost: times.sequential_page_ms,
            cpu_cost: cpu_ms_per_tuple,
            ..self
        }
    }

    /// Costs in milliseconds for strata's modeled `hdd` profile and
    /// [`DEFAULT_CPU_MS_PER_TUPLE`].
    pub fn hdd_ms(self) -> CostParams {
        let t = DeviceTimes::hdd(self.page_size);
        self.with_device_times(t, DEFAULT_CPU_MS_PER_TUPLE)
    }

    /// Costs in milliseconds for strata's modeled `ssd` profile and
    /// [`DEFAULT_CPU_MS_PER_TUPLE`].
    pub fn ssd_ms(self) -> CostParams {
        let t = DeviceTimes::ssd(self.page_size);
        self.with_device_times(t, DEFAULT_CPU_MS_PER_TUPLE)
    }

    /// Costs in milliseconds for any strata device profile.
    pub fn with_profile(self, profile: &DeviceProfile, cpu_ms_per_tuple: f64) -> CostParams {
        let t = DeviceTimes::from_profile(profile, self.page_size);
        self.with_device_times(t, cpu_ms_per_tuple)
    }

    /// §6's I/O costs.
    pub fn io_costs(&self) -> IoCosts {
        IoCosts {
            rand: self.rand_cost,
            seq: self.seq_cost,
        }
    }

    /// Checks that the derived values are defined: a tuple fits a page, the
    /// B+-tree fanout is at least 2, costs are finite and non-negative.
    pub fn validate(&self) -> Result<(), CostModelError> {
        let bad = |m: String| Err(CostModelError::Invalid(m));
        if self.tuple_size == 0 || self.tuple_size > self.page_size {
            return bad(format!(
                "tuple size {} must be in 1..={} (the page size)",
                self.tuple_size, self.page_size
            ));
        }
        if self.key_size == 0 || self.fanout() < 2 {
            return bad(format!(
                "key size {} gives a B+-tree fanout below 2 on {}-byte pages",
                self.key_size, self.page_size
            ));
        }
        for (name, v) in [
            ("rand_cost", self.rand_cost),
            ("seq_cost", self.seq_cost),
            ("cpu_cost", self.cpu_cost),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(format!("{name} must be finite and non-negative, got {v}"));
            }
        }
        Ok(())
    }

    /// Eq. 3: `#Tp = ⌊Ps / Ts⌋` (at least 1).
    pub fn tuples_per_page(&self) -> u64 {
        (self.page_size / self.tuple_size.max(1)).max(1)
    }

    /// Eq. 4: `#P = ⌈#T / #Tp⌉`.
    pub fn pages(&self) -> u64 {
        self.num_tuples.div_ceil(self.tuples_per_page())
    }

    /// Eq. 5: `fanout = ⌊Ps / (1.2 × Ks)⌋` (20 % of each key's size for the
    /// child pointer), computed exactly as `⌊5 Ps / (6 Ks)⌋`.
    pub fn fanout(&self) -> u64 {
        (5 * self.page_size) / (6 * self.key_size.max(1))
    }

    /// Eq. 6: `#leaves = ⌈#T / fanout⌉`.
    pub fn leaves(&self) -> u64 {
        self.num_tuples.div_ceil(self.fanout().max(2))
    }

    /// Eq. 7: `height = ⌈log_fanout(#leaves)⌉ + 1` (computed with integers).
    pub fn height(&self) -> u64 {
        let f = self.fanout().max(2) as u128;
        let leaves = self.leaves().max(1) as u128;
        let mut levels = 0u64;
        let mut reach = 1u128;
        while reach < leaves {
            reach = reach.saturating_mul(f);
            levels += 1;
        }
        levels + 1
    }

    /// Eq. 8: `card = sel × #T`, `sel` a fraction (clamped to `[0, 1]`).
    pub fn card(&self, sel: f64) -> f64 {
        clamp_sel(sel) * self.num_tuples as f64
    }

    /// Eq. 9: `#leaves_res = ⌈card / fanout⌉`.
    pub fn leaves_res(&self, card: f64) -> f64 {
        (card.max(0.0) / self.fanout().max(2) as f64).ceil()
    }

    /// Eq. 15: `#P_res = min(card, #P)` — results spread uniformly, each on its
    /// own page as long as there are pages (the worst case).
    pub fn result_pages(&self, card: f64) -> f64 {
        card.max(0.0).min(self.pages() as f64)
    }

    /// The expected number of distinct pages holding `card` results placed
    /// uniformly at random: `#P × (1 − (1 − 1/#P)^card)` (at most Eq. 15).
    pub fn expected_result_pages(&self, card: f64) -> f64 {
        let p = self.pages() as f64;
        let card = card.max(0.0);
        if p <= 1.0 {
            return card.min(p);
        }
        let miss = (card * (-1.0 / p).ln_1p()).exp();
        (p * (1.0 - miss)).min(card)
    }

    fn descent_cpu_ops(&self) -> f64 {
        self.height() as f64 * (self.fanout().max(2) as f64).log2()
    }
}

fn clamp_sel(sel: f64) -> f64 {
    if sel.is_nan() {
        0.0
    } else {
        sel.clamp(0.0, 1.0)
    }
}

/// Full Scan: Eq. 10 `#P × seq`, Eq. 11 `#T × cpu` — constant in `sel`.
pub fn full_scan_cost(p: &CostParams) -> Cost {
    Cost::new(
        p.pages() as f64 * p.seq_cost,
        p.num_tuples as f64 * p.cpu_cost,
    )
}

/// Non-clustered Index Scan for `sel`: Eq. 12 and 13.
pub fn index_scan_cost(p: &CostParams, sel: f64) -> Cost {
    index_scan_cost_card(p, p.card(sel))
}

/// Index Scan for `card` result tuples (Eq. 12–13).
pub fn index_scan_cost_card(p: &CostParams, card: f64) -> Cost {
    let card = card.max(0.0);
    let h = p.height() as f64;
    Cost::new(
        (h + card) * p.rand_cost + p.leaves_res(card) * p.seq_cost,
        (p.descent_cpu_ops() + card) * p.cpu_cost,
    )
}

/// Sort Scan (index scan, sort the tuple IDs, read the result pages in page
/// order) for `sel`; see the module docs for the model.
pub fn sort_scan_cost(p: &CostParams, sel: f64) -> Cost {
    sort_scan_cost_card(p, p.card(sel))
}

/// Sort Scan for `card` result tuples.
pub fn sort_scan_cost_card(p: &CostParams, card: f64) -> Cost {
    let card = card.max(0.0);
    let pages = p.pages() as f64;
    let res = p.result_pages(card);
    let jumps = sort_scan_jumps(res, pages);
    let io = p.height() as f64 * p.rand_cost
        + p.leaves_res(card) * p.seq_cost
        + jumps * p.rand_cost
        + (res - jumps) * p.seq_cost;
    let sort = if card > 1.0 { card * card.log2() } else { 0.0 };
    Cost::new(io, (p.descent_cpu_ops() + card + sort) * p.cpu_cost)
}

/// Expected random jumps of a page-ordered read of `res` result pages spread
/// uniformly over `pages` pages: the expected number of maximal runs of result
/// pages, `q + (res − q)(1 − q)` with `q = res / pages`.
pub fn sort_scan_jumps(res: f64, pages: f64) -> f64 {
    if res <= 0.0 || pages <= 0.0 {
        return 0.0;
    }
    let q = (res / pages).min(1.0);
    (q + (res - q).max(0.0) * (1.0 - q)).min(res)
}

/// §6's Oracle for `sel`: the Eq. 15 result pages, all read sequentially.
pub fn oracle_cost(p: &CostParams, sel: f64) -> Cost {
    Cost::new(p.result_pages(p.card(sel)) * p.seq_cost, 0.0)
}

/// Number of regions (= random jumps) needed to read `pages` pages with regions
/// of `first`, `2·first`, `4·first`, … pages, capped at `cap` pages. Continuous:
/// below the cap `log2(pages/first + 1)` (Eq. 24 for `first = 1`); once the
/// regions reach the cap, one more region per `cap` pages. Never more than
/// `pages` (a region has at least one page). `cap = f64::INFINITY` for no cap.
pub fn doubling_regions(pages: f64, first: f64, cap: f64) -> f64 {
    if pages.is_nan() || pages <= 0.0 {
        return 0.0;
    }
    let cap = if cap.is_nan() {
        f64::INFINITY
    } else {
        cap.max(1.0)
    };
    let first = first.max(1.0).min(cap);
    let regions = if cap.is_infinite() {
        (pages / first + 1.0).log2()
    } else {
        // Regions first·2^i strictly smaller than the cap: i = 0..kc.
        let kc = (cap / first).log2().ceil().max(0.0);
        let before_cap = first * (kc.exp2() - 1.0);
        if pages <= before_cap {
            (pages / first + 1.0).log2()
        } else {
            kc + (pages - before_cap) / cap
        }
    };
    regions.min(pages)
}

/// How the result tuples split between Smooth Scan's modes (Eq. 14), and the
/// shape of Mode 2's regions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ModeSplit {
    /// `card_m0`: tuples produced by Mode 0 (plain index scan).
    pub card_m0: f64,
    /// `card_m1`: tuples whose pages are read by Mode 1 (entire page probe).
    pub card_m1: f64,
    /// `card_m2`: tuples whose pages are read by Mode 2 (flattening).
    pub card_m2: f64,
    /// `m0chk`: Mode 0 ran first, so Modes 1/2 check tuples against the
    /// Tuple-ID cache.
    pub mode0_first: bool,
    /// Size of Mode 2's first region (1 in Eq. 22).
    pub mode2_first_region: f64,
    /// Largest region in pages (`f64::INFINITY`: the paper's uncapped formulas).
    pub max_region_pages: f64,
}

impl ModeSplit {
    /// The paper's formulas: `card` split as given, Mode 2 regions `1, 2, 4, …`
    /// without a cap, `m0chk = (card_m0 > 0)`.
    pub fn paper(card_m0: f64, card_m1: f64, card_m2: f64) -> ModeSplit {
        ModeSplit {
            card_m0,
            card_m1,
            card_m2,
            mode0_first: card_m0 > 0.0,
            mode2_first_region: 1.0,
            max_region_pages: f64::INFINITY,
        }
    }

    /// `card_m0 + card_m1 + card_m2`.
    pub fn card(&self) -> f64 {
        self.card_m0.max(0.0) + self.card_m1.max(0.0) + self.card_m2.max(0.0)
    }
}

/// Smooth Scan's cost by part (see the module docs for each formula).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SmoothBreakdown {
    /// Descent and leaf walk of the index, per-entry Page-ID-cache probes.
    pub index: Cost,
    /// Mode 0 (index scan): heap fetches and Tuple-ID cache.
    pub mode0: Cost,
    /// Mode 1 (entire page probe): Eq. 17–19.
    pub mode1: Cost,
    /// Mode 2 (flattening access): Eq. 20–27.
    pub mode2: Cost,
    /// `#P_m1`.
    pub mode1_pages: f64,
    /// Pages read in Mode 2 (`#P_m2` in the paper's model).
    pub mode2_pages: f64,
    /// Random jumps of Mode 2 (`#rand_io(m2)`).
    pub mode2_jumps: f64,
}

impl SmoothBreakdown {
    /// The sum of the parts.
    pub fn total(&self) -> Cost {
        self.index + self.mode0 + self.mode1 + self.mode2
    }
}

/// Smooth Scan's cost per mode for a given split of the result (Eq. 14–27).
pub fn smooth_scan_modes(p: &CostParams, split: &ModeSplit) -> SmoothBreakdown {
    let m0 = split.card_m0.max(0.0);
    let m1 = split.card_m1.max(0.0);
    let m2 = split.card_m2.max(0.0);
    let card = m0 + m1 + m2;
    let pages = p.pages() as f64;
    let tp = p.tuples_per_page() as f64;
    let chk = if split.mode0_first { 1.0 } else { 0.0 };
    let (rand, seq, cpu) = (p.rand_cost, p.seq_cost, p.cpu_cost);

    let index = Cost::new(
        p.height() as f64 * rand + p.leaves_res(card) * seq,
        (p.descent_cpu_ops() + m1 + m2) * cpu,
    );
    let mode0 = Cost::new(m0 * rand, m0 * 2.0 * cpu);

    // Eq. 17–19.
    let p_m1 = m1.min(pages);
    let per_page_cpu = (tp + 2.0 + tp * chk) * cpu;
    let mode1 = Cost::new(p_m1 * rand, p_m1 * per_page_cpu);

    // Eq. 20–27 (Eq. 24 with the cap).
    let p_m2 = m2.min((pages - p_m1).max(0.0));
    let jumps = doubling_regions(p_m2, split.mode2_first_region, split.max_region_pages);
    let mode2 = Cost::new(jumps * rand + (p_m2 - jumps) * seq, p_m2 * per_page_cpu);
    SmoothBreakdown {
        index,
        mode0,
        mode1,
        mode2,
        mode1_pages: p_m1,
        mode2_pages: p_m2,
        mode2_jumps: jumps,
    }
}

/// Smooth Scan's morphing policies (§3.2), as strata implements them: after each
/// region, Greedy doubles; Selectivity-Increase doubles when the region's page
/// selectivity is at least `grow` × the global one (Eq. 1–2) and keeps the size
/// otherwise; Elastic doubles on the same test and otherwise divides by `shrink`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MorphPolicy {
    Greedy,
    SelectivityIncrease,
    Elastic,
}

/// Which model [`smooth_scan_cost`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SmoothModel {
    /// The paper's Eq. 14–27 for Eager Smooth Scan, Mode 1 for the first result
    /// page, Mode 2 (regions 2, 4, … up to the cap) for the others; only result
    /// pages are read (Eq. 15 of them).
    Paper,
    /// Expected-value simulation of a policy over uniformly spread results,
    /// counting the pages without results that regions read.
    Simulated {
        policy: MorphPolicy,
        /// Grow when local ≥ `grow` × global page selectivity.
        grow: f64,
        /// Elastic divides the region by this otherwise.
        shrink: f64,
    },
}

/// Assumptions for [`smooth_scan_cost`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SmoothAssumptions {
    pub model: SmoothModel,
    /// Largest region in pages (the paper's: 2000).
    pub max_region_pages: f64,
}

impl Default for SmoothAssumptions {
    /// The paper's model with the paper's 2000-page cap.
    fn default() -> Self {
        SmoothAssumptions {
            model: SmoothModel::Paper,
            max_region_pages: PAPER_MAX_REGION_PAGES,
        }
    }
}

impl SmoothAssumptions {
    /// Simulate `policy` with strata's defaults (`grow = 1`, `shrink = 2`) and the
    /// paper's cap.
    pub fn simulated(policy: MorphPolicy) -> SmoothAssumptions {
        SmoothAssumptions {
            model: SmoothModel::Simulated {
                policy,
                grow: 1.0,
                shrink: 2.0,
            },
            max_region_pages: PAPER_MAX_REGION_PAGES,
        }
    }
}

/// A Smooth Scan prediction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SmoothPrediction {
    /// Cost by part; `breakdown.total()` is the prediction.
    pub breakdown: SmoothBreakdown,
    /// `card`.
    pub card: f64,
    /// Pages holding results (Eq. 15 for the paper's model, the expected
    /// distinct pages for the simulation).
    pub result_pages: f64,
    /// Heap pages read.
    pub pages_read: f64,
    /// Heap regions read, i.e. random heap accesses.
    pub regions: f64,
}

impl SmoothPrediction {
    pub fn total(&self) -> Cost {
        self.breakdown.total()
    }
}

/// Predicts Eager Smooth Scan (no Mode 0) for selectivity `sel` with results
/// spread uniformly over the table.
pub fn smooth_scan_cost(p: &CostParams, sel: f64, a: &SmoothAssumptions) -> SmoothPrediction {
    let card = p.card(sel);
    match a.model {
        SmoothModel::Paper => {
            let m1 = card.min(1.0);
            let split = ModeSplit {
                card_m0: 0.0,
                card_m1: m1,
                card_m2: card - m1,
                mode0_first: false,
                mode2_first_region: 2.0,
                max_region_pages: a.max_region_pages,
            };
            let b = smooth_scan_modes(p, &split);
            SmoothPrediction {
                breakdown: b,
                card,
                result_pages: p.result_pages(card),
                pages_read: b.mode1_pages + b.mode2_pages,
                regions: b.mode1_pages + b.mode2_jumps,
            }
        }
        SmoothModel::Simulated {
            policy,
            grow,
            shrink,
        } => simulate(p, card, policy, grow, shrink, a.max_region_pages),
    }
}

/// Expected-value simulation: each region starts at an unread result page, its
/// other pages hold results with the density of the unread part of the table.
fn simulate(
    p: &CostParams,
    card: f64,
    policy: MorphPolicy,
    grow: f64,
    shrink: f64,
    cap: f64,
) -> SmoothPrediction {
    let cap = if cap.is_nan() {
        f64::INFINITY
    } else {
        cap.max(1.0)
    };
    let shrink = if shrink.is_nan() {
        2.0
    } else {
        shrink.max(1.0)
    };
    let grow = if grow.is_nan() { 1.0 } else { grow.max(0.0) };
    let tp = p.tuples_per_page() as f64;
    let (rand, seq, cpu) = (p.rand_cost, p.seq_cost, p.cpu_cost);
    let res0 = p.expected_result_pages(card);
    let mut p_rem = p.pages() as f64;
    let mut r_rem = res0;
    let mut size: f64 = 1.0;
    let (mut seen, mut seen_res) = (0.0f64, 0.0f64);
    let mut m1 = Cost::default();
    let mut m2 = Cost::default();
    let (mut m1_pages, mut m2_pages, mut m2_jumps) = (0.0f64, 0.0f64, 0.0f64);
    const EPS: f64 = 1e-9;
    while r_rem > EPS && p_rem > EPS {
        let s = size.min(p_rem);
        // With less than one result page left, the region happens with that
        // "probability": weight its cost.
        let w = r_rem.min(1.0);
        let found = if s >= p_rem {
            r_rem
        } else if r_rem >= 1.0 {
            1.0 + (r_rem - 1.0) * (s - 1.0) / (p_rem - 1.0).max(EPS)
        } else {
            r_rem
        };
        let found = found.min(r_rem);
        let cost = Cost::new(w * (rand + (s - 1.0) * seq), w * s * (tp + 2.0) * cpu);
        if size <= 1.0 {
            m1 += cost;
            m1_pages += w * s;
        } else {
            m2 += cost;
            m2_pages += w * s;
            m2_jumps += w;
        }
        seen += s;
        seen_res += found;
        p_rem -= s;
        r_rem -= found;
        if w < 1.0 {
            break;
        }
        let local = found / s;
        let global = seen_res / seen;
        let denser = local >= grow * global * (1.0 - 1e-6);
        size = match policy {
            MorphPolicy::Greedy => size * 2.0,
            MorphPolicy::SelectivityIncrease if denser => size * 2.0,
            MorphPolicy::SelectivityIncrease => size,
            MorphPolicy::Elastic if denser => size * 2.0,
            MorphPolicy::Elastic => (size / shrink).floor().max(1.0),
        }
        .clamp(1.0, cap);
    }
    let index = Cost::new(
        p.height() as f64 * rand + p.leaves_res(card) * seq,
        (p.descent_cpu_ops() + card) * cpu,
    );
    let breakdown = SmoothBreakdown {
        index,
        mode0: Cost::default(),
        mode1: m1,
        mode2: m2,
        mode1_pages: m1_pages,
        mode2_pages: m2_pages,
        mode2_jumps: m2_jumps,
    };
    SmoothPrediction {
        breakdown,
        card,
        result_pages: res0,
        pages_read: m1_pages + m2_pages,
        regions: m1_pages + m2_jumps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smooth_scan::competitive::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn derived_values() {
        let p = CostParams::paper_microbenchmark();
        p.validate().unwrap();
        assert_eq!(p.tuples_per_page(), 134);
        assert_eq!(p.pages(), 2_985_075);
        assert_eq!(p.fanout(), 1706); // ⌊8192 / 4.8⌋
        assert_eq!(p.leaves(), 234_467);
        assert_eq!(p.height(), 3); // 1706^2 ≥ 234,467 leaves
        assert_eq!(p.card(0.5), 200_000_000.0);
        assert_eq!(p.card(2.0), 400_000_000.0);
        assert_eq!(p.leaves_res(1707.0), 2.0);
        assert_eq!(p.result_pages(1e9), p.pages() as f64);
        let small = CostParams::new(100, 10, 8);
        assert_eq!(small.height(), 1);
        assert!(CostParams::new(10_000, 10, 4).validate().is_err());
        assert!(CostParams::new(100, 10, 5000).validate().is_err());
        let t = CostParams::from_table(400_000_000, 2_985_075, 4);
        assert_eq!(t.pages(), 2_985_075);
    }

    #[test]
    fn device_times() {
        let h = DeviceTimes::hdd(8192);
        assert!(close(h.sequential_page_ms, 0.065536, 1e-12));
        assert!(close(h.random_page_ms, 3.565536, 1e-12));
        let s = DeviceTimes::ssd(8192);
        assert!(close(s.sequential_page_ms, 0.04096, 1e-12));
        assert!(close(s.random_page_ms, 0.24096, 1e-12));
        for name in ["hdd", "ssd"] {
            let prof = DeviceProfile::builtin(name).unwrap();
            let t = DeviceTimes::from_profile(&prof, 8192);
            let want = if name == "hdd" { h } else { s };
            assert!(close(t.random_page_ms, want.random_page_ms, 1e-12));
            assert!(close(t.sequential_page_ms, want.sequential_page_ms, 1e-12));
        }
        let p = CostParams::paper_microbenchmark().hdd_ms();
        // Full Scan of 2,985,075 pages at 0.065536 ms: about 195.6 s of I/O.
        assert!(close(full_scan_cost(&p).io, 2_985_075.0 * 0.065536, 1e-6));
    }

    #[test]
    fn operator_formulas() {
        let p = CostParams::paper_microbenchmark();
        let fs = full_scan_cost(&p);
        assert_eq!(fs.io, 2_985_075.0);
        assert!(close(fs.cpu, 400_000.0, 1e-6));
        // Index Scan at 0.01 %: 40,000 tuples, 24 leaves, height 3.
        let is = index_scan_cost(&p, 1e-4);
        assert!(close(is.io, (3.0 + 40_000.0) * 10.0 + 24.0, 1e-6));
        assert!(close(
            is.cpu,
            (3.0 * 1706f64.log2() + 40_000.0) * 0.001,
            1e-9
        ));
        assert_eq!(oracle_cost(&p, 1e-4).io, 40_000.0);
        // Sort Scan at 100 %: one jump, then the table sequentially.
        let ss = sort_scan_cost(&p, 1.0);
        let leaves = p.leaves_res(4e8);
        assert!(close(ss.io, 30.0 + leaves + 10.0 + 2_985_074.0, 1e-3));
        // Sort Scan at low selectivity: almost every result page is a jump.
        let jumps = sort_scan_jumps(40_000.0, p.pages() as f64);
        assert!(jumps > 39_400.0 && jumps < 40_000.0, "{jumps}");
        assert!(sort_scan_cost(&p, 1e-4).io < index_scan_cost(&p, 1e-4).io);
    }

    #[test]
    fn doubling_regions_match_eq24_and_cap() {
        for n in [1.0, 3.0, 7.0, 100.0, 1e6] {
            assert!(close(
                doubling_regions(n, 1.0, f64::INFINITY),
                (n + 1.0f64).log2(),
                1e-12
            ));
        }
        // Cap 2000: 1..1024 (11 regions, 2047 pages), then 2000 per region.
        assert!(close(doubling_regions(2047.0, 1.0, 2000.0), 11.0, 1e-12));
        assert!(close(doubling_regions(6047.0, 1.0, 2000.0), 13.0, 1e-12));
        // Regions 2, 4, … after a first page of mode 1 give the same count + 1.
        let a = doubling_regions(1e5, 1.0, 2000.0);
        let b = 1.0 + doubling_regions(1e5 - 1.0, 2.0, 2000.0);
        assert!(close(a, b, 1e-9), "{a} {b}");
        assert!(doubling_regions(0.5, 1.0, 2000.0) <= 0.5);
    }

    #[test]
    fn greedy_cr_matches_figure_10() {
        let hdd_1k = greedy_cr(1000.0, IoCosts::HDD);
        let hdd_10k = greedy_cr(10_000.0, IoCosts::HDD);
        let ssd_1k = greedy_cr(1000.0, IoCosts::SSD);
        let ssd_10k = greedy_cr(10_000.0, IoCosts::SSD);
        println!(
            "Greedy CR: HDD 1K {hdd_1k:.2}, 10K {hdd_10k:.2}; SSD 1K {ssd_1k:.2}, 10K {ssd_10k:.2}"
        );
        // Paper: 110 and 760 (HDD), "from 100 to 750" (SSD); within 3 %.
        assert!((hdd_1k / 110.0 - 1.0).abs() < 0.03, "{hdd_1k}");
        assert!((hdd_10k / 760.0 - 1.0).abs() < 0.03, "{hdd_10k}");
        assert!((ssd_1k / 100.0 - 1.0).abs() < 0.03, "{ssd_1k}");
        assert!((ssd_10k / 750.0 - 1.0).abs() < 0.03, "{ssd_10k}");
        assert!(close(hdd_1k, 109.33, 0.01));
        assert!(close(hdd_10k, 761.57, 0.01));
        // Sublinear growth.
        assert!(hdd_10k / hdd_1k < 10.0);
    }

    #[test]
    fn si_cr_peak_figure_11() {
        let (x, cr) = si_peak(100_000.0, IoCosts::HDD);
        let (xc, crc) = si_peak_continuous(100_000.0, IoCosts::HDD);
        println!(
            "SI peak at 100K pages: integer x = {x}, CR = {cr:.2}; real x = {xc:.2}, CR = {crc:.2}"
        );
        // The paper: peak at x = 8 (matches); value "≈ 100" read off a 3-D plot,
        // where the printed Eq. 32–36 give 134.4 (see the module docs).
        assert_eq!(x, 8);
        assert!((7.5..=8.5).contains(&xc));
        assert!(close(cr, 134.4, 0.1), "{cr}");
        assert!((100.0..=140.0).contains(&cr));
        // Monotone and sublinear in #P; the peak moves right.
        let (x10k, cr10k) = si_peak(10_000.0, IoCosts::HDD);
        let (x1m, cr1m) = si_peak(1_000_000.0, IoCosts::HDD);
        println!("SI peak: 10K x={x10k} CR={cr10k:.2}; 1M x={x1m} CR={cr1m:.2}");
        assert!(cr10k < cr && cr < cr1m);
        assert!(cr1m / cr < 10.0);
        assert!(x10k <= x && x <= x1m);
        assert!(si_cr(100_000.0, 16.0, IoCosts::HDD).is_none());
    }

    #[test]
    fn elastic_on_si_worst_case_figure_12() {
        let p = 100_000.0;
        let c = IoCosts::HDD;
        let at = |x: f64| elastic_si_cr_for_pages(p, x, c).unwrap();
        let vals: Vec<String> = (1..=12)
            .map(|x| format!("{x}:{:.3}", at(x as f64)))
            .collect();
        println!("Elastic on SI worst case, 100K pages: {}", vals.join(" "));
        assert!(close(at(1.0), 10.0, 0.1));
        for x in 1..12 {
            assert!(at(x as f64 + 1.0) < at(x as f64));
        }
        assert!(close(at(11.0), 2.0, 0.2));
        assert!(close(at(12.0), 2.0, 0.06));
        // Larger tables go further: close to 2 beyond x = 10.
        let big = elastic_si_cr_for_pages(3e6, 16.0, c).unwrap();
        assert!(close(big, 2.0, 0.01), "{big}");
        assert!(elastic_si_cr_for_pages(p, 13.0, c).is_none()); // y < x
    }

    #[test]
    fn elastic_highest_miss_figure_9() {
        let c = IoCosts::HDD;
        let v100 = elastic_highest_miss_cr(100.0, c);
        let v3m = elastic_highest_miss_cr(3e6, c);
        println!("Elastic highest miss: 100 pages {v100:.4}, 3M pages {v3m:.6}");
        // The paper: 2.0001 at 3M pages (±0.0005) — reproduced.
        assert!(close(v3m, 2.0001, 0.0005), "{v3m}");
        // The paper: 2.45 at 100 pages — NOT reproduced; our model gives 3.51
        // (see the module docs). Pin our value and the shape.
        assert!(close(v100, 3.513, 0.01), "{v100}");
        let pts = &figure_9().series[0].points;
        for w in pts.windows(2) {
            assert!(w[1].1 < w[0].1);
        }
        assert!(pts.iter().all(|&(_, cr)| cr > 2.0));
    }

    #[test]
    fn elastic_worst_case_eq_42() {
        assert_eq!(elastic_worst_cr(IoCosts::HDD), 11.0);
        assert_eq!(elastic_worst_cr_vs_full_scan(IoCosts::HDD), 5.5);
        // SSD: the formula gives 3 and 1.5; the paper prints 6 and 3 (twice
        // these — what rand/seq = 5 would give).
        assert_eq!(elastic_worst_cr(IoCosts::SSD), 3.0);
        assert_eq!(elastic_worst_cr_vs_full_scan(IoCosts::SSD), 1.5);
        let five = IoCosts {
            rand: 5.0,
            seq: 1.0,
        };
        assert_eq!(elastic_worst_cr(five), 6.0);
        assert_eq!(elastic_worst_cr_vs_full_scan(five), 3.0);
        // Morphing increase factor 10 on HDD: 19, as the paper says.
        assert_eq!(elastic_worst_cr_factor(IoCosts::HDD, 10.0), 19.0);
        assert_eq!(elastic_worst_cr_factor(IoCosts::HDD, 2.0), 11.0);
    }

    #[test]
    fn full_scan_constant_index_scan_increasing() {
        let p = CostParams::paper_microbenchmark();
        let sels = [0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 0.5, 1.0];
        let fs = full_scan_cost(&p);
        let mut prev = f64::NEG_INFINITY;
        for s in sels {
            // Full Scan does not depend on the selectivity.
            assert_eq!(full_scan_cost(&p), fs);
            let is = index_scan_cost(&p, s).total();
            assert!(is > prev, "index scan at {s}: {is} after {prev}");
            prev = is;
        }
    }

    #[test]
    fn smooth_scan_beats_index_scan_and_nears_full_scan() {
        let p = CostParams::paper_microbenchmark().hdd_units();
        let a = SmoothAssumptions::default();
        let sels = [1e-4, 2e-4, 5e-4, 1e-3, 1e-2, 0.05, 0.1, 0.5, 1.0];
        for s in sels {
            let ss = smooth_scan_cost(&p, s, &a).total().total();
            let is = index_scan_cost(&p, s).total();
            assert!(ss <= is, "sel {s}: smooth {ss} > index {is}");
        }
        // At 100 % with the 2000-page cap on a 3M-page table: within 20 % of
        // Full Scan (the paper measured "only 20 % slower").
        let ss = smooth_scan_cost(&p, 1.0, &a);
        let fs = full_scan_cost(&p);
        let ratio = ss.total().total() / fs.total();
        let io_ratio = (ss.breakdown.mode1.io + ss.breakdown.mode2.io) / fs.io;
        println!(
            "Smooth/Full at 100 %: total {ratio:.4}, heap I/O {io_ratio:.5}, {:.0} regions",
            ss.regions
        );
        assert!(ratio <= 1.2, "{ratio}");
        assert!(io_ratio <= 1.01, "{io_ratio}");
        // One region per 2000 pages once at the cap.
        assert!(close(
            ss.regions,
            11.0 + (2_985_075.0 - 2047.0) / 2000.0,
            1e-6
        ));
        // Without the cap the paper's Eq. 24 gives log2(#P + 1) jumps.
        let nocap = SmoothAssumptions {
            max_region_pages: f64::INFINITY,
            ..a
        };
        let r = smooth_scan_cost(&p, 1.0, &nocap).regions;
        assert!(close(r, (2_985_076f64).log2(), 1e-9));
    }

    #[test]
    fn simulated_policies() {
        let p = CostParams::paper_microbenchmark().hdd_units();
        let fs = full_scan_cost(&p).total();
        for policy in [
            MorphPolicy::Greedy,
            MorphPolicy::SelectivityIncrease,
            MorphPolicy::Elastic,
        ] {
            let a = SmoothAssumptions::simulated(policy);
            let at1 = smooth_scan_cost(&p, 1.0, &a);
            assert!(close(
                at1.pages_read,
                p.pages() as f64 * (1.0 - (-134.0f64).exp()),
                1.0
            ));
            assert!(at1.total().total() / fs <= 1.2, "{policy:?}");
            let lo = smooth_scan_cost(&p, 1e-5, &a);
            println!(
                "{policy:?}: sel 1e-5 -> {:.0} (index scan {:.0}), regions {:.0}, pages {:.0}; sel 1 -> {:.3} x full scan",
                lo.total().total(),
                index_scan_cost(&p, 1e-5).total(),
                lo.regions,
                lo.pages_read,
                at1.total().total() / fs
            );
        }
        // Greedy reads far more pages than Elastic at low selectivity.
        let g = smooth_scan_cost(&p, 1e-5, &SmoothAssumptions::simulated(MorphPolicy::Greedy));
        let e = smooth_scan_cost(
            &p,
            1e-5,
            &SmoothAssumptions::simulated(MorphPolicy::Elastic),
        );
        assert!(g.pages_read > 10.0 * e.pages_read);
    }

    #[test]
    fn figures_have_data() {
        let figs = analytical_figures();
        assert_eq!(figs.len(), 4);
        for f in &figs {
            assert!(!f.series.is_empty());
            for s in &f.series {
                assert!(s.points.len() >= 10, "{} {}", f.id, s.name);
                assert!(s.points.iter().all(|(x, y)| x.is_finite() && y.is_finite()));
            }
            assert!(f.to_tsv().lines().count() > 10);
        }
        let f10 = figure_10();
        let hdd = f10.series("HDD").unwrap();
        assert_eq!(hdd.points.first().unwrap().0, 100.0);
        assert_eq!(hdd.points.last().unwrap().0, 100_000.0);
        let f9 = figure_9();
        assert_eq!(f9.series[0].points.last().unwrap().0, 3e6);
        let f11 = figure_11();
        let s = f11.series("#P=100000").unwrap();
        let peak = s
            .points
            .iter()
            .cloned()
            .fold((0.0, 0.0), |m, p| if p.1 > m.1 { p } else { m });
        assert!((7.5..=8.5).contains(&peak.0));
        let p = CostParams::paper_microbenchmark();
        let c = cost_vs_selectivity(&p, &[1e-4, 1e-2, 1.0], &SmoothAssumptions::default());
        assert_eq!(c.series.len(), 5);
    }

    proptest! {
        #[test]
        fn smooth_modes_non_negative_and_add_up(
            ts in 8u64..2000,
            nt in 1u64..50_000_000,
            ks in 1u64..64,
            rand in 0.0f64..20.0,
            seq in 0.0f64..5.0,
            cpu in 0.0f64..0.01,
            f0 in 0.0f64..1.0,
            f1 in 0.0f64..1.0,
            sel in 0.0f64..1.0,
            chk in any::<bool>(),
            cap in prop_oneof![Just(f64::INFINITY), 1.0f64..5000.0],
            first in 1.0f64..8.0,
        ) {
            let p = CostParams::new(ts, nt, ks).with_unit_costs(IoCosts { rand, seq }, cpu);
            prop_assume!(p.validate().is_ok());
            let card = p.card(sel);
            let m0 = card * f0;
            let m1 = (card - m0) * f1;
            let split = ModeSplit {
                card_m0: m0,
                card_m1: m1,
                card_m2: card - m0 - m1,
                mode0_first: chk,
                mode2_first_region: first,
                max_region_pages: cap,
            };
            let b = smooth_scan_modes(&p, &split);
            for part in [b.index, b.mode0, b.mode1, b.mode2] {
                prop_assert!(part.io >= 0.0 && part.cpu >= 0.0, "{b:?}");
            }
            prop_assert!(b.mode2_jumps <= b.mode2_pages + 1e-9);
            prop_assert!(b.mode1_pages + b.mode2_pages <= p.pages() as f64 + 1e-6);
            let t = b.total();
            let sum_io = b.index.io + b.mode0.io + b.mode1.io + b.mode2.io;
            let sum_cpu = b.index.cpu + b.mode0.cpu + b.mode1.cpu + b.mode2.cpu;
            prop_assert!((t.io - sum_io).abs() <= 1e-9 * sum_io.max(1.0));
            prop_assert!((t.cpu - sum_cpu).abs() <= 1e-9 * sum_cpu.max(1.0));
            prop_assert!((t.total() - (t.io + t.cpu)).abs() <= 1e-9 * t.total().max(1.0));
        }

        #[test]
        fn eager_predictions_non_negative_and_add_up(
            nt in 1u64..5_000_000,
            sel in 0.0f64..1.0,
            cap in 1.0f64..3000.0,
            which in 0usize..4,
        ) {
            let p = CostParams::new(64, nt, 8);
            let a = match which {
                0 => SmoothAssumptions { max_region_pages: cap, ..Default::default() },
                1 => SmoothAssumptions { max_region_pages: cap, ..SmoothAssumptions::simulated(MorphPolicy::Greedy) },
                2 => SmoothAssumptions { max_region_pages: cap, ..SmoothAssumptions::simulated(MorphPolicy::SelectivityIncrease) },
                _ => SmoothAssumptions { max_region_pages: cap, ..SmoothAssumptions::simulated(MorphPolicy::Elastic) },
            };
            let pr = smooth_scan_cost(&p, sel, &a);
            let b = pr.breakdown;
            for part in [b.index, b.mode0, b.mode1, b.mode2] {
                prop_assert!(part.io >= 0.0 && part.cpu >= 0.0, "{pr:?}");
            }
            prop_assert!(pr.pages_read <= p.pages() as f64 + 1e-6);
            prop_assert!(pr.regions <= pr.pages_read + 1e-9);
            let t = pr.total();
            prop_assert!((t.io - (b.index.io + b.mode0.io + b.mode1.io + b.mode2.io)).abs() <= 1e-9 * t.io.max(1.0));
            // Never cheaper than the Oracle's I/O for the same result pages
            // (it reads at least them).
            prop_assert!(b.mode1.io + b.mode2.io + 1e-6 >= pr.result_pages.min(p.pages() as f64) * p.seq_cost * 0.999);
        }
    }
}
