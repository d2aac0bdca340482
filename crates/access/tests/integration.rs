//! The integration tests of `strata-access`, built as one binary: every test
//! file linked on its own repeats the whole dependency graph in the target
//! directory, and the clean CI target outgrew the CI disk. One module per
//! test file; `cargo test -p strata-access --test integration <module>::`
//! runs one of them.

mod faults;
mod flash_sorts;
mod fuzz_predicate;
mod page_order;
mod paths;
mod result_cache;

/// A test file in `tests/` that no `mod` line here names would never be built.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let this = include_str!("integration.rs");
    let separate: &[&str] = &[];
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
