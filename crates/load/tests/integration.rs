//! The integration tests of `strata-load`, built as one binary: every test
//! file linked on its own repeats the whole dependency graph in the target
//! directory, and the clean CI target outgrew the CI disk. One module per
//! test file; `cargo test -p strata-load --test integration <module>::`
//! runs one of them. A file no `mod` line names is never built (storage's
//! `every_test_file_of_the_workspace_is_built` checks every crate).

mod common;
mod csv;
mod fuzz;
mod gen_page;
mod generators;
mod infer;
mod parquet;
mod revision;
mod tpch;
