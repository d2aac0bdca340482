//! strata tables under DataFusion: the table provider and the WHERE conjuncts
//! it takes over, the scan operator that runs strata's access paths, the
//! index-cache scan, rows as Arrow batches, and index nested-loop joins.

pub mod cached_scan;
pub mod convert;
pub mod index_join;
pub mod provider;
pub mod pushdown;
pub mod scan_exec;
