//! What every experiment's result files are made with: the CSV rows and sets
//! ([`results`]), the line and bar charts ([`plot`]) and heat maps
//! ([`heatmap`]) as SVG and PNG, and the markdown summary beside the
//! paper's numbers ([`summary`]).

pub mod heatmap;
pub mod plot;
pub mod results;
pub mod summary;
