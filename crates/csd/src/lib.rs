//! The cold storage device of Skipper (§2–4.4): an S3-compatible service whose
//! objects live in MAID disk groups, one group spun up at a time, with the
//! paper's group schedulers; and strata's cold tier, which keeps table segments
//! there and reads them back through a bounded local cache.

pub mod admin_client;
pub mod client;
pub mod cold_cache;
pub mod cold_device;
pub mod cold_stats;
pub mod config;
pub mod cost;
pub mod dispatch;
pub mod error;
pub mod layout;
pub mod manifest;
pub mod proxy;
pub mod schedule;
pub mod server;
pub mod sim;
pub mod store;
pub mod tier;
pub mod transit;

pub use config::CsdConfig;
pub use error::CsdError;
pub use layout::{LayoutSpec, Placement};
pub use schedule::{Batch, Metrics, Policy, QueryKey, Request, Scheduler, Ticket};
