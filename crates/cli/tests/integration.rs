//! The integration tests of `strata-cli`, built as one binary: every test
//! file linked on its own repeats the whole dependency graph in the target
//! directory, and the clean CI target outgrew the CI disk. One module per
//! test file; `cargo test -p strata-cli --test integration <module>::`
//! runs one of them. A file no `mod` line names is never built (storage's
//! `every_test_file_of_the_workspace_is_built` checks every crate).

mod bench;
mod bench_defaults;
mod bench_skipper;
mod cluster;
mod cold_tier_cli;
mod columns;
mod common;
mod crash;
mod csd_serve;
mod errors;
mod flash;
mod golden;
mod index_cache;
mod load_infer;
mod read_beside_writer;
mod scan;
mod sql_beside_serve;
mod tpch;
mod waste;
