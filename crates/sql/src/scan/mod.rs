//! strata tables under DataFusion: the table provider and the WHERE conjuncts
//! it takes over, the scan operator that runs strata's access paths (their
//! batches gathered before they are sent), the
//! index-cache scan, the scan of a columnar table's column part (rows as
//! Arrow batches are `strata_columns::convert`), a WHERE applied to a batch
//! conjunct by conjunct, and index nested-loop joins.

pub mod cached_scan;
pub mod coalesced;
pub mod columns;
pub mod conjuncts;
pub mod index_join;
pub mod provider;
pub mod pushdown;
pub mod scan_exec;
