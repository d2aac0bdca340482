//! Benchmarks of `strata serve`, the PostgreSQL wire protocol server: the
//! same client program driving strata and PostgreSQL side by side.

pub mod crash;
pub mod mixed;
pub mod pgbench;
