//! strata's access paths — full, index, sort (bitmap heap), switch and Smooth
//! Scan — and the flash paper's sorts, as pipelined operators that report what
//! they did. (The Smooth Scan paper's cost model is with its experiments, in
//! `strata-bench`.)

pub mod batch;
pub mod error;
pub mod external_sort;
pub mod full;
pub mod index_scan;
pub mod measure;
pub mod ordered_plan;
pub mod partitioned_sort;
pub mod predicate;
pub mod report;
pub mod result_cache;
pub mod run;
pub mod scan;
pub mod smooth;
pub mod sort_scan;
mod spill_file;
pub mod switch;

pub use batch::TupleBatch;
pub use error::{AccessError, Result};
pub use measure::{ScanOutcome, measure};
pub use ordered_plan::{
    FinalSort, OrderedPlan, SortOptions, open_ordered, run_ordered, sort_on_index,
};
pub use predicate::Predicate;
pub use run::{PathChoice, open_path, run_scan};
pub use scan::{AccessPath, ScanSpec};
pub use smooth::{PageCosts, Policy, SmoothOptions, Trigger};
