//! strata's access paths and the Smooth Scan paper's cost model.

pub mod cost_model;
