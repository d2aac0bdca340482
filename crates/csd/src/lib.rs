//! The cold storage device of Skipper (§2–4.4): an S3-compatible service whose
//! objects live in MAID disk groups, one group spun up at a time, with the
//! paper's group schedulers; and strata's cold tier, which keeps table segments
//! there and reads them back through a bounded local cache.

pub mod client;
pub mod cold_cache;
pub mod cold_device;
pub mod cold_stats;
pub mod manifest;
pub mod tier;
