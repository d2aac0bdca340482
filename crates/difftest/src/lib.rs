//! strata's differential SQL tester (issue 53). Each round builds random
//! tables — every strata column type, NULLs, values at the types' edges,
//! some columns indexed — with the same DDL and INSERTs in a fresh strata
//! database and in DuckDB, then runs random queries through strata under
//! every `strata.access_path` (under `index` with `strata.index_join = on`,
//! so every join that can probe an index does) and through DuckDB and
//! compares the answers
//! (as multisets unless an ORDER BY makes the order total; floats within a
//! tolerance; both refusing is agreement), runs random DML on both and
//! compares the changed table, checks strata against itself by ternary logic
//! partitioning, and finally moves the tables to an in-process cold tier and
//! runs queries again under every access path with Skipper on and off.
//! Every disagreement is a finding in a class; a class is either a short,
//! named list of known differences with their reasons
//! ([`classify::KNOWN`]) or unexplained, and a run fails on the unexplained
//! ones and on panics. docs/sql-differences.md has the classes found.

pub mod classify;
pub mod compare;
pub mod config;
pub mod datagen;
pub mod driver;
pub mod expr;
pub mod model;
pub mod oracle;
pub mod report;
pub mod statements;
pub mod strata_runner;
pub mod tlp;

pub use config::Config;
pub use driver::run;
pub use report::Report;
