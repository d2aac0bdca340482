//! Experiments, result files and plots, one folder per paper.
//!
//! Every strata experiment leaves the same four kinds of file in
//! `results/<experiment>/`: a CSV per figure with the standard columns
//! ([`report::results::STANDARD_COLUMNS`]) so any figure can be re-plotted or
//! compared without re-running it, an SVG and a PNG of each figure, and a
//! short markdown summary that puts our numbers beside the paper's.
//!
//! - [`report`]: what those files are made with: [`ResultRow`],
//!   [`ResultSet`] (CSV out and back in), [`Samples`] (medians of repeated
//!   runs) and [`median`]; [`Plot`] line and grouped-bar charts and a heat
//!   map, SVG and PNG without system libraries; the markdown [`Summary`]
//!   with its [`Comparison`] table;
//! - [`smooth_scan`]: Smooth Scan's figures (`strata bench smooth`) and its
//!   cost model's analytical figures and predictions (`strata model`);
//! - [`flash`]: the flash paper's figures (`strata bench flash`);
//! - [`nblb`]: No Bits Left Behind — the index cache's Figs. 2a–2c and the
//!   Wikipedia example beside PostgreSQL (`strata bench index-cache`), and
//!   the wasted-space Fig. 3 with its semantic ids and split variants
//!   (`strata bench waste`);
//! - [`skipper`]: Skipper on the real cold storage device — the pull
//!   baseline's Figs. 4/5 (`strata bench csd pull`) and §5's Figs. 7–12
//!   (`strata bench skipper`);
//! - [`postgres`]: PostgreSQL beside strata — strata tables copied with
//!   their indexes into a private cluster, queries run cold under the
//!   planner's choice or forced scan methods
//!   ([`postgres::run_postgres_queries`], [`postgres::run_postgres_sweep`]);
//! - [`bench_db`]: the benchmark databases the experiments share.

pub mod bench_db;
pub mod flash;
pub mod nblb;
pub mod postgres;
pub mod report;
pub mod serve;
pub mod skipper;
pub mod smooth_scan;

pub use report::plot::{Axis, Legend, Plot, Scale, Series};
pub use report::results::{ResultRow, ResultSet, Samples, median};
pub use report::summary::{Comparison, Summary};
