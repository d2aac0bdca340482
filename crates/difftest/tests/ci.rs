//! The differential SQL tester's bounded, seeded run (issue 53), and the
//! tester's own unit checks. The crate's only test binary: every test binary
//! links DataFusion, and CI's cold build is long already.
//!
//! The run needs python3 with DuckDB for Python (`python3 -m pip install
//! duckdb==1.4.4`, which `.ci/run` installs); without them it fails saying
//! so. It fails on any unexplained mismatch or panic and prints each one's
//! reproduction.

use strata_difftest::compare::{Answer, Cell, CellKind, answers_agree, normalize_exact};
use strata_difftest::datagen::decimal_text;
use strata_difftest::{Config, run};

#[test]
fn exact_numbers_compare_by_value() {
    assert_eq!(normalize_exact("+001.500"), "1.5");
    assert_eq!(normalize_exact("-0.00"), "0");
    assert_eq!(normalize_exact("12."), "12");
    assert_eq!(normalize_exact("-12.30"), "-12.3");
    assert_eq!(decimal_text(-5, 2), "-0.05");
    assert_eq!(decimal_text(12345, 2), "123.45");
    assert_eq!(decimal_text(7, 0), "7");
    assert!(
        CellKind::Exact
            .cell("1.50")
            .agrees(&CellKind::Exact.cell("1.5"))
    );
    assert!(
        CellKind::Exact
            .cell("3")
            .agrees(&CellKind::Float.cell("3.0000000000001"))
    );
    assert!(
        !CellKind::Exact
            .cell("3")
            .agrees(&CellKind::Float.cell("3.001"))
    );
    assert!(!Cell::Null.agrees(&CellKind::Exact.cell("0")));
}

#[test]
fn answers_compare_as_multisets_unless_ordered() {
    let row = |a: &str, b: &str| vec![CellKind::Exact.cell(a), CellKind::Text.cell(b)];
    let x = Answer {
        columns: 2,
        rows: vec![row("1", "a"), row("2", "b"), row("1", "a")],
    };
    let y = Answer {
        columns: 2,
        rows: vec![row("2", "b"), row("1.0", "a"), row("1", "a")],
    };
    assert!(answers_agree(&x, &y, false));
    assert!(!answers_agree(&x, &y, true));
    let z = Answer {
        columns: 2,
        rows: vec![row("2", "b"), row("1", "a"), row("2", "b")],
    };
    assert!(!answers_agree(&x, &z, false));
}

/// A few thousand statements, each under every access path (and, on the
/// cold tier, with Skipper on and off), compared with DuckDB.
#[test]
fn differential_run_finds_no_unexplained_mismatch() {
    let cfg = Config {
        seed: 53,
        statements: 2000,
        out: std::env::var_os("DIFFTEST_OUT").map(Into::into),
        quiet: true,
    };
    let report = run(&cfg).unwrap_or_else(|e| panic!("the differential tester could not run: {e}"));
    println!("{}", report.summary());
    assert!(
        !report.failed(),
        "unexplained mismatches or panics (reproductions above):\n{}",
        report.summary()
    );
}
