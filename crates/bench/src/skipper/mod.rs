//! Skipper (VLDB 2016) on the real cold storage device (`strata csd serve`):
//! a fleet of `strata-sql` clients over their own copies of a TPC-H database
//! whose tables live on the device ([`fleet`]); the pull baseline of §3.2,
//! Figs. 4/5 ([`pull`], `strata bench csd pull`); and §5's Figs. 7–12 with
//! out-of-order execution against that baseline (`strata bench skipper`):
//! [`figures`] runs them, [`options`] says what to run, `round` is one
//! round of clients, and `fig_clients`, `fig_layouts` and `fig_mixed` are
//! the figures.

mod fig_clients;
mod fig_layouts;
mod fig_mixed;
pub mod figures;
pub mod fleet;
pub mod options;
pub mod pull;
mod round;
