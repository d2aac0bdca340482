//! The integration tests of `strata-storage`, built as one binary: every test
//! file linked on its own repeats the whole dependency graph in the target
//! directory, and the clean CI target outgrew the CI disk. One module per
//! test file; `cargo test -p strata-storage --test integration <module>::`
//! runs one of them. A file no `mod` line names is never built (storage's
//! `every_test_file_of_the_workspace_is_built` checks every crate).

mod bulk;
mod compact_crash;
mod crash_loop;
mod encoding_model;
mod full_disk;
mod fuzz_catalog;
mod fuzz_pages;
mod fuzz_wal;
mod hot;
mod hot_model;
mod index_cache;
mod lock_holder;
mod readers;
mod scan_cost;
mod split;
mod wal;

/// With `autotests = false`, a file in a crate's `tests/` that neither its
/// `integration.rs` nor a `[[test]]` of its Cargo.toml names is never built:
/// checked here for every crate of the workspace.
#[test]
fn every_test_file_of_the_workspace_is_built() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = 0;
    for krate in std::fs::read_dir(&crates).unwrap() {
        let krate = krate.unwrap().path();
        let manifest = std::fs::read_to_string(krate.join("Cargo.toml")).unwrap_or_default();
        if !manifest.contains("autotests = false") {
            continue;
        }
        let tests = krate.join("tests");
        // A crate whose one test binary is not `integration.rs` names its
        // files in the manifest instead.
        let root = std::fs::read_to_string(tests.join("integration.rs")).unwrap_or_default();
        for file in std::fs::read_dir(&tests).unwrap() {
            let name = file.unwrap().file_name().into_string().unwrap();
            let Some(module) = name.strip_suffix(".rs") else {
                continue;
            };
            let built = module == "integration"
                || root.contains(&format!("\nmod {module};\n"))
                || manifest.contains(&format!("path = \"tests/{name}\""));
            assert!(built, "{} is never built", tests.join(&name).display());
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked} test files");
}
