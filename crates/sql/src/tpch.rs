//! The 22 TPC-H queries, in SQL that DataFusion, DuckDB and PostgreSQL all
//! accept. The benchmark that runs them (the Smooth Scan paper's TPC-H
//! experiment, `strata bench tpch`) is the `strata-bench-tpch` crate.

/// The 22 TPC-H queries with the specification's validation parameters, in a
/// dialect DataFusion, DuckDB and PostgreSQL all accept.
pub const QUERIES: [(&str, &str); 22] = [
    ("q01", include_str!("../queries/q01.sql")),
    ("q02", include_str!("../queries/q02.sql")),
    ("q03", include_str!("../queries/q03.sql")),
    ("q04", include_str!("../queries/q04.sql")),
    ("q05", include_str!("../queries/q05.sql")),
    ("q06", include_str!("../queries/q06.sql")),
    ("q07", include_str!("../queries/q07.sql")),
    ("q08", include_str!("../queries/q08.sql")),
    ("q09", include_str!("../queries/q09.sql")),
    ("q10", include_str!("../queries/q10.sql")),
    ("q11", include_str!("../queries/q11.sql")),
    ("q12", include_str!("../queries/q12.sql")),
    ("q13", include_str!("../queries/q13.sql")),
    ("q14", include_str!("../queries/q14.sql")),
    ("q15", include_str!("../queries/q15.sql")),
    ("q16", include_str!("../queries/q16.sql")),
    ("q17", include_str!("../queries/q17.sql")),
    ("q18", include_str!("../queries/q18.sql")),
    ("q19", include_str!("../queries/q19.sql")),
    ("q20", include_str!("../queries/q20.sql")),
    ("q21", include_str!("../queries/q21.sql")),
    ("q22", include_str!("../queries/q22.sql")),
];

/// The queries of the paper's TPC-H experiment.
pub const PAPER_QUERIES: [&str; 7] = ["q01", "q04", "q06", "q07", "q12", "q14", "q19"];

/// The query text of `name` (`q6`, `q06` or `6`).
pub fn query(name: &str) -> Option<&'static str> {
    let n: u32 = name.trim_start_matches(['q', 'Q']).parse().ok()?;
    QUERIES
        .iter()
        .find(|(q, _)| q[1..].parse::<u32>().ok() == Some(n))
        .map(|(_, sql)| *sql)
}
