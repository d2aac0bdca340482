//! The integration tests of `strata-sql`, built as one binary: every test
//! file linked on its own repeats the whole dependency graph in the target
//! directory, and the clean CI target outgrew the CI disk. One module per
//! test file; `cargo test -p strata-sql --test integration <module>::`
//! runs one of them.
//!
//! `skipper.rs` stays its own binary: it sets the process
//! environment, which no other test may share.

mod cold_tier_sql;
mod common;
mod crash_loop_sql;
mod ddl;
mod deep_sql;
mod dml;
mod fuzz_sql;
mod hot_sql;
mod index_cache_sql;
mod index_join;
mod skipper_faults;
mod sql;
mod tpch;
mod waste;

/// A test file in `tests/` that no `mod` line here names would never be built.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let this = include_str!("integration.rs");
    let separate: &[&str] = &["skipper"];
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(module) = name.strip_suffix(".rs") else {
            continue;
        };
        if module == "integration" || separate.contains(&module) {
            continue;
        }
        assert!(
            this.contains(&format!("\nmod {module};\n")),
            "tests/{name} is not a module of tests/integration.rs"
        );
    }
}
