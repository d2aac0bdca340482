//! Experiments, result files and plots.
//!
//! Every strata experiment leaves the same four kinds of file in
//! `results/<experiment>/`: a CSV per figure with the standard columns
//! ([`results::STANDARD_COLUMNS`]) so any figure can be re-plotted or
//! compared without re-running it, an SVG and a PNG of each figure, and a
//! short markdown summary that puts our numbers beside the paper's. This
//! crate holds the pieces those files are made with:
//!
//! - [`results`]: [`ResultRow`], [`ResultSet`] (CSV out and back in),
//!   [`Samples`] (medians of repeated runs) and [`median`];
//! - [`plot`]: [`Plot`] line and grouped-bar charts, linear or log axes,
//!   written as SVG and PNG without system libraries;
//! - [`heatmap`]: a heat map of ratios (rows × columns of coloured cells),
//!   SVG and PNG through plotters;
//! - [`summary`]: the markdown [`Summary`] with its [`Comparison`] table;
//! - [`flash`]: the flash paper's figures (`strata bench flash`);
//! - [`index_cache`]: No Bits Left Behind's index caches, Fig. 2a
//!   (`strata bench index-cache`); [`index_cache_2b`]: its Fig. 2b,
//!   lookup throughput against the cache's and the pool's hit rates;
//!   [`index_cache_wiki`]: the Wikipedia `page` example beside PostgreSQL's
//!   covering index (`strata bench index-cache wiki`);
//! - [`model`]: the Smooth Scan cost model's analytical figures and its
//!   predictions beside measured times (`strata model`);
//! - [`postgres`]: PostgreSQL beside strata — strata tables copied with
//!   their indexes into a private cluster, queries run cold under the
//!   planner's choice or forced scan methods
//!   ([`postgres::run_postgres_queries`], [`postgres::run_postgres_sweep`]).

pub mod bench_db;
pub mod cache_reference;
pub mod csd_fleet;
pub mod csd_pull;
pub mod csd_skipper;
pub mod flash;
pub mod heatmap;
pub mod index_cache;
pub mod index_cache_2b;
pub mod index_cache_wiki;
pub mod plot;
pub mod postgres;
pub mod results;
pub mod smooth_scan;
pub mod summary;
pub mod waste_fig3;
pub mod waste_ids;
pub mod waste_split;

pub use plot::{Axis, Legend, Plot, Scale, Series};
pub use results::{ResultRow, ResultSet, Samples, median};
pub use summary::{Comparison, Summary};
