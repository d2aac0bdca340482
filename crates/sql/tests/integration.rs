//! The integration tests of `strata-sql`, built as one binary: every test
//! file linked on its own repeats the whole dependency graph in the target
//! directory, and the clean CI target outgrew the CI disk. One module per
//! test file; `cargo test -p strata-sql --test integration <module>::`
//! runs one of them. A file no `mod` line names is never built (storage's
//! `every_test_file_of_the_workspace_is_built` checks every crate).
//!
//! `skipper.rs` stays its own binary: it sets the process
//! environment, which no other test may share.

mod cli_output;
mod cold_columns;
mod cold_queries;
mod cold_tier_sql;
mod column_indexes;
mod column_strings;
mod common;
mod crash_loop_sql;
mod ddl;
mod ddl_persist;
mod deep_sql;
mod difftest_findings;
mod dml;
mod file_io;
mod fuzz_sql;
mod hot_sql;
mod index_cache_sql;
mod index_join;
mod join_order;
mod overflow;
mod point_plans;
mod read_beside_writer;
mod repl_session;
mod semantic_id;
mod shared_result;
mod skipper_faults;
mod slt;
mod split;
mod sql;
mod tpch;
mod waste;
mod write_plans;
