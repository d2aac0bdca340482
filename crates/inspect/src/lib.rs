//! What a database holds ([`info`]) and whether it is sound ([`check`]).
//!
//! `strata info` and `strata check` print these reports from the CLI, which
//! opens the database itself; the SQL functions `strata_info()` and
//! `strata_check()` (strata-sql) return the same reports from inside a
//! process that already has it open, which is how the CLI asks a running
//! `strata serve` for them (its `LOCK` refuses a second process). Both sides
//! call this crate, so the two answers cannot drift apart.
//!
//! It sits above storage, the cold tier (a table's tier) and the columnar
//! format (a table's column files) and below both binaries' crates.

pub mod check;
pub mod info;
