//! strata's cold tier, the client side of Skipper (§3.2, §4.3): tables moved
//! to a cold storage device (any S3 endpoint; `strata-csd` is one) as
//! page-aligned objects, read back through a bounded local cache of whole
//! objects, or all of a query's objects at once through the client proxy.
//! A columnar table's column files go as one object each (Parquet files any
//! S3 reader can query), read back by ranged GETs of the columns a query
//! needs ([`byte_object`]).
//!
//! It speaks to the device only over S3 and does not link the device crate.

pub mod byte_manifest;
pub mod byte_object;
pub mod client;
pub mod device;
pub mod error;
pub mod manifest;
pub mod object_cache;
pub mod proxy;
pub mod stats;
mod steps;
pub mod tier;
mod tier_columns;
pub mod transit;

pub use device::{ColdConfig, ColdTier};
pub use error::ColdError;
