//! The Smooth Scan paper's TPC-H analysis over the benchmark's results
//! (§7.2): Table 2 (read requests and bytes read per query and
//! configuration), Table 3 (the histogram of read request sizes) and Fig. 1
//! (what stale statistics cost: the plan made with them over the plan made
//! with fresh ones, for the classical optimizer and for Smooth Scan).
//!
//! Bytes read are `pages_read × 8 KiB`: every request of strata's devices
//! reads whole 8 KiB pages. MB and GB here are 10^6 and 10^9 bytes, as the
//! paper's.

use strata_bench::{Axis, Plot, ResultRow, ResultSet};
use strata_storage::device::{PAGE_SIZE, READ_SIZE_BUCKETS, READ_SIZE_LABELS};

use crate::Config;

/// Thousands of read requests and GB read, as the paper's Table 2 gives them.
pub type PaperIo = (u32, f64);

/// The paper's Table 2 (SF 10, PostgreSQL's plan vs Smooth Scan): query,
/// [`PaperIo`] for PostgreSQL, the same for Smooth Scan.
pub const PAPER_TABLE2: [(&str, PaperIo, PaperIo); 5] = [
    ("q01", (71, 8.9), (87, 10.2)),
    ("q06", (566, 8.7), (95, 8.8)),
    ("q04", (225, 10.9), (235, 12.1)),
    ("q14", (416, 6.8), (87, 8.9)),
    ("q07", (745, 11.6), (124, 11.6)),
];

/// The paper's Table 3: transfers by size of Q1 under Smooth Scan (SF 10),
/// in the classes of [`READ_SIZE_LABELS`] (the paper's largest is 128 KB).
pub const PAPER_TABLE3_Q1_SMOOTH: [u64; 5] = [3079, 288, 174, 168, 83263];

/// The result column of read size class `i` (`reads_8KiB`, …, `reads_gt1MiB`).
pub fn read_size_column(i: usize) -> String {
    format!("reads_{}", READ_SIZE_LABELS[i].replace('>', "gt"))
}

/// Adds the columns of Tables 2 and 3 to a run's row: `bytes_read` and
/// one `reads_<size>` per size class.
pub fn add_io_columns(row: &mut ResultRow, pages_read: u64, read_sizes: &[u64; READ_SIZE_BUCKETS]) {
    row.set("bytes_read", pages_read * PAGE_SIZE as u64);
    for (i, n) in read_sizes.iter().enumerate() {
        row.set(read_size_column(i), n);
    }
}

/// The row of `config` on query `q`.
pub fn row<'a>(results: &'a ResultSet, q: &str, config: &str) -> Option<&'a ResultRow> {
    results
        .rows()
        .iter()
        .find(|r| r.get("query") == q && r.variant == config)
}

/// Median wall time of `config` on query `q`, and whether it was censored.
pub fn wall(results: &ResultSet, q: &str, config: &str) -> Option<(f64, bool)> {
    row(results, q, config).map(|r| (r.wall_ms, r.get("censored") == "yes"))
}

/// Whether a row's I/O counts are strata's requests (PostgreSQL reports
/// buffer accesses instead).
fn requests_known(r: &ResultRow) -> bool {
    r.get("io_requests_known") != "no"
}

/// A count as the paper prints it: in K above 10,000.
fn count(n: f64) -> String {
    if n >= 10_000.0 {
        format!("{:.0}K", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// Bytes in MB, or GB from 1 GB up.
fn bytes(b: f64) -> String {
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else {
        format!("{:.1} MB", b / 1e6)
    }
}

/// Table 2: one row per configuration (then the paper's two, SF 10), one
/// column per query; a cell is `requests / bytes read`.
pub fn table2(
    results: &ResultSet,
    queries: &[String],
    variants: &[String],
) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["configuration".to_string()];
    header.extend(queries.iter().map(|q| q.to_uppercase()));
    let mut rows = Vec::new();
    for v in variants {
        let mut line = vec![v.clone()];
        for q in queries {
            line.push(match row(results, q, v) {
                None => "-".into(),
                Some(r) if r.get("censored") == "yes" => "(timeout)".into(),
                Some(r) if !requests_known(r) => "n/a".into(),
                Some(r) => format!(
                    "{} req / {}",
                    count(r.io_requests as f64),
                    bytes((r.pages_read * PAGE_SIZE as u64) as f64)
                ),
            });
        }
        rows.push(line);
    }
    for (label, pick) in [
        ("paper: PostgreSQL, SF 10", 0),
        ("paper: Smooth Scan, SF 10", 1),
    ] {
        let mut line = vec![label.to_string()];
        for q in queries {
            line.push(match PAPER_TABLE2.iter().find(|p| p.0 == q) {
                Some(&(_, pg, ss)) => {
                    let (k, gb) = if pick == 0 { pg } else { ss };
                    format!("{k}K req / {gb} GB")
                }
                None => "-".into(),
            });
        }
        rows.push(line);
    }
    (header, rows)
}

/// The read size histogram of a row, if its run finished and counted
/// requests.
pub fn read_sizes(r: &ResultRow) -> Option<[u64; READ_SIZE_BUCKETS]> {
    if r.get("censored") == "yes" || !requests_known(r) {
        return None;
    }
    let mut h = [0; READ_SIZE_BUCKETS];
    for (i, n) in h.iter_mut().enumerate() {
        *n = r.get(&read_size_column(i)).parse().ok()?;
    }
    Some(h)
}

/// Table 3: one row per query and configuration that finished, the number of
/// read requests of each size, and the paper's Q1 under Smooth Scan (SF 10).
pub fn table3(
    results: &ResultSet,
    queries: &[String],
    variants: &[String],
) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["query".to_string(), "configuration".to_string()];
    header.extend(READ_SIZE_LABELS.iter().map(|l| l.to_string()));
    header.push("requests".into());
    let mut rows = Vec::new();
    for q in queries {
        for v in variants {
            let Some(h) = row(results, q, v).and_then(read_sizes) else {
                continue;
            };
            let mut line = vec![q.to_uppercase(), v.clone()];
            line.extend(h.iter().map(|n| n.to_string()));
            line.push(h.iter().sum::<u64>().to_string());
            rows.push(line);
        }
    }
    let mut paper = vec!["Q01".into(), "paper: Smooth Scan, SF 10".into()];
    for i in 0..READ_SIZE_BUCKETS {
        paper.push(
            PAPER_TABLE3_Q1_SMOOTH
                .get(i)
                .map_or("-".into(), |n| n.to_string()),
        );
    }
    paper.push(PAPER_TABLE3_Q1_SMOOTH.iter().sum::<u64>().to_string());
    rows.push(paper);
    (header, rows)
}

/// `num / den` of the median wall times on `q`, and whether it is a lower
/// bound (`num` censored); none when either is missing or `den` censored.
pub fn ratio(results: &ResultSet, q: &str, num: &str, den: &str) -> Option<(f64, bool)> {
    let (n, n_censored) = wall(results, q, num)?;
    let (d, d_censored) = wall(results, q, den)?;
    (!d_censored && d > 0.0).then_some((n / d, n_censored))
}

/// A ratio as the tables print it (`≥` when a lower bound).
pub fn ratio_text(r: Option<(f64, bool)>) -> String {
    match r {
        Some((x, lower)) => format!("{}{x:.2}", if lower { "≥ " } else { "" }),
        None => "-".into(),
    }
}

/// The fastest uncensored time of `q` among all strata configurations (any
/// path, any join; not PostgreSQL).
pub fn best(results: &ResultSet, q: &str) -> Option<f64> {
    results
        .rows()
        .iter()
        .filter(|r| r.get("query") == q && Config::parse(&r.variant).is_ok())
        .filter(|r| r.get("censored") != "yes")
        .map(|r| r.wall_ms)
        .min_by(f64::total_cmp)
}

/// The two ratios of Fig. 1.
pub const FIG1_RATIOS: [(&str, &str); 2] = [
    ("optimizer-stale", "optimizer-fresh"),
    ("smooth-stale", "optimizer-fresh"),
];

/// Fig. 1: per query, `optimizer-stale / optimizer-fresh` and
/// `smooth-stale / optimizer-fresh` (log scale; a query whose bar is a lower
/// bound, its run censored, is marked `*`), and the same as a table. None
/// when the results have neither ratio.
pub fn fig1(
    results: &ResultSet,
    queries: &[String],
    title: String,
) -> Option<(Plot, Vec<String>, Vec<Vec<String>>)> {
    let ratios: Vec<Vec<Option<(f64, bool)>>> = queries
        .iter()
        .map(|q| {
            FIG1_RATIOS
                .iter()
                .map(|(n, d)| ratio(results, q, n, d))
                .collect()
        })
        .collect();
    if ratios.iter().flatten().all(Option::is_none) {
        return None;
    }
    let labels = queries.iter().zip(&ratios).map(|(q, rs)| {
        let lower = rs.iter().flatten().any(|r| r.1);
        format!("{}{}", q.to_uppercase(), if lower { "*" } else { "" })
    });
    let mut plot = Plot::bars(
        title,
        "query (* a censored run: its bar is a lower bound)",
        labels,
        Axis::log10("wall time / optimizer-fresh"),
    )
    .hline("optimizer-fresh", 1.0);
    let mut header = vec!["query".to_string()];
    for (k, (n, d)) in FIG1_RATIOS.iter().enumerate() {
        let name = format!("{n} / {d}");
        plot = plot.bar_series(&name, ratios.iter().map(|rs| rs[k].map_or(0.0, |r| r.0)));
        header.push(name);
    }
    let rows = queries
        .iter()
        .zip(&ratios)
        .map(|(q, rs)| {
            let mut line = vec![q.to_uppercase()];
            line.extend(rs.iter().map(|r| ratio_text(*r)));
            line
        })
        .collect();
    Some((plot, header, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(q: &str, v: &str, wall: f64, censored: bool, sizes: [u64; 9]) -> ResultRow {
        let mut r = ResultRow::new("tpch", "ssd", v, 1.0)
            .with("query", q)
            .with("censored", if censored { "yes" } else { "no" });
        r.wall_ms = wall;
        r.io_requests = sizes.iter().sum();
        r.pages_read = 3 * r.io_requests;
        let pages = r.pages_read;
        add_io_columns(&mut r, pages, &sizes);
        r
    }

    fn results() -> ResultSet {
        let mut s = ResultSet::new();
        s.push(run(
            "q01",
            "optimizer-fresh",
            100.0,
            false,
            [1, 0, 0, 0, 20, 0, 0, 0, 0],
        ));
        s.push(run("q01", "optimizer-stale", 400.0, true, [0; 9]));
        s.push(run(
            "q01",
            "smooth-stale",
            120.0,
            false,
            [3, 2, 1, 0, 15000, 0, 0, 0, 0],
        ));
        s.push(run(
            "q01",
            "full",
            90.0,
            false,
            [0, 0, 0, 0, 21, 0, 0, 0, 0],
        ));
        s.push(
            run("q01", "postgres-optimizer", 10.0, false, [0; 9]).with("io_requests_known", "no"),
        );
        s
    }

    #[test]
    fn table2_gives_requests_and_bytes_beside_the_papers() {
        let s = results();
        let qs = vec!["q01".to_string()];
        let vs: Vec<String> = s.rows().iter().map(|r| r.variant.clone()).collect();
        let (header, rows) = table2(&s, &qs, &vs);
        assert_eq!(header, ["configuration", "Q01"]);
        // 21 requests of 3 pages: 63 × 8192 bytes.
        assert_eq!(rows[0], ["optimizer-fresh", "21 req / 0.5 MB"]);
        assert_eq!(rows[1][1], "(timeout)");
        assert_eq!(rows[2][1], "15K req / 368.8 MB");
        assert_eq!(rows[4][1], "n/a");
        assert_eq!(rows[5], ["paper: PostgreSQL, SF 10", "71K req / 8.9 GB"]);
        assert_eq!(rows[6], ["paper: Smooth Scan, SF 10", "87K req / 10.2 GB"]);
    }

    #[test]
    fn table3_lists_the_finished_runs_and_the_paper() {
        let s = results();
        let vs: Vec<String> = s.rows().iter().map(|r| r.variant.clone()).collect();
        let (header, rows) = table3(&s, &["q01".to_string()], &vs);
        assert_eq!(header.len(), 2 + 9 + 1);
        assert_eq!(header[2..6], ["8KiB", "16KiB", "32KiB", "64KiB"]);
        let variants: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
        assert_eq!(
            variants,
            [
                "optimizer-fresh",
                "smooth-stale",
                "full",
                "paper: Smooth Scan, SF 10"
            ]
        );
        assert_eq!(
            rows[1][2..],
            ["3", "2", "1", "0", "15000", "0", "0", "0", "0", "15006"]
        );
        assert_eq!(rows[3][2..7], ["3079", "288", "174", "168", "83263"]);
    }

    #[test]
    fn fig1_ratios_mark_lower_bounds_and_best_ignores_postgres_and_timeouts() {
        let s = results();
        assert_eq!(
            ratio(&s, "q01", "optimizer-stale", "optimizer-fresh"),
            Some((4.0, true))
        );
        assert_eq!(
            ratio(&s, "q01", "smooth-stale", "optimizer-fresh"),
            Some((1.2, false))
        );
        assert_eq!(
            ratio(&s, "q01", "optimizer-fresh", "optimizer-stale"),
            None,
            "censored denominator"
        );
        assert_eq!(best(&s, "q01"), Some(90.0));
        let (_, header, rows) = fig1(&s, &["q01".to_string()], "Fig. 1".into()).unwrap();
        assert_eq!(header[1], "optimizer-stale / optimizer-fresh");
        assert_eq!(rows[0], ["Q01", "≥ 4.00", "1.20"]);
        let mut none = ResultSet::new();
        none.push(run("q01", "full", 1.0, false, [0; 9]));
        assert!(fig1(&none, &["q01".to_string()], String::new()).is_none());
    }
}
