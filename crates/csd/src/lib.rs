//! The cold storage device of Skipper (§2–4.4): an S3-compatible service whose
//! objects live in MAID disk groups, one group spun up at a time, with the
//! paper's group schedulers, their simulator and the tier cost calculator.
//! strata's side of it, the cold tier that keeps table segments there, is the
//! `strata-cold` crate; the two meet only over S3.

pub mod admin_client;
pub mod config;
pub mod cost;
pub mod dispatch;
pub mod error;
pub mod layout;
pub mod schedule;
pub mod server;
pub mod sim;
pub mod store;

pub use config::CsdConfig;
pub use error::CsdError;
pub use layout::{LayoutSpec, Placement};
pub use schedule::{Batch, Metrics, Policy, QueryKey, Request, Scheduler, Ticket};
