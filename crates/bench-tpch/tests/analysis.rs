//! The benchmark at SF 0.01 on the modeled `ssd`: Tables 2 and 3, Fig. 1 and
//! Fig. 14 come out and agree with the runs' counters.

use std::path::PathBuf;
use std::time::Duration;

use strata_bench::ResultSet;
use strata_bench_tpch::analysis::read_size_column;
use strata_bench_tpch::trace::fig14;
use strata_bench_tpch::{BenchOptions, Config, plan_in, resolve_queries, run, write};
use strata_storage::db::DbOptions;

fn options(name: &str) -> BenchOptions {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bench-tpch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    BenchOptions {
        sf: 0.01,
        bench_db: dir.join("db"),
        out: dir.join("out"),
        queries: vec!["1".into(), "6".into()],
        configs: Config::DEFAULT.to_vec(),
        repeat: 1,
        timeout: Duration::from_secs(120),
        db_options: DbOptions::default().device("ssd").unwrap(),
        device: "ssd".into(),
        with_postgres: false,
        drop_caches: false,
        postgres_bin: None,
    }
}

#[test]
fn tables_2_and_3_and_fig_1_agree_with_the_runs() {
    let opts = options("tables");
    let (results, notes) = run(&opts, &mut |_| {}).unwrap();
    let md = std::fs::read_to_string(write(&opts, &results, &notes).unwrap()).unwrap();
    // Every query under every configuration, smooth-stale included.
    assert_eq!(results.rows().len(), 2 * Config::DEFAULT.len());
    for r in results.rows() {
        let what = format!("{} {}", r.get("query"), r.variant);
        assert_eq!(r.get("censored"), "no", "{what}");
        assert!(r.io_requests > 0, "{what}");
        let sizes: u64 = (0..9)
            .map(|i| r.get(&read_size_column(i)).parse::<u64>().unwrap())
            .sum();
        assert_eq!(
            sizes, r.io_requests,
            "{what}: the histogram counts every request"
        );
        assert_eq!(
            r.get("bytes_read").parse::<u64>().unwrap(),
            r.pages_read * 8192,
            "{what}"
        );
    }
    // Index scan of Q1 reads page by page; full scan in large requests.
    let q1 = |v: &str| {
        results
            .rows()
            .iter()
            .find(|r| r.get("query") == "q01" && r.variant == v)
            .unwrap()
    };
    let one_page = |v: &str| q1(v).get(&read_size_column(0)).parse::<u64>().unwrap();
    assert!(one_page("index") * 2 > q1("index").io_requests);
    assert_eq!(one_page("full"), 0);
    // The CSV has the columns.
    let csv = ResultSet::read_csv(opts.out.join("tpch.csv")).unwrap();
    assert!(csv.columns().iter().any(|c| c == "reads_gt1MiB"));
    assert!(csv.columns().iter().any(|c| c == "bytes_read"));
    for s in [
        "## Table 2: read requests and bytes read",
        "| paper: Smooth Scan, SF 10 | 87K req / 10.2 GB | 95K req / 8.8 GB |",
        "## Table 3: read request sizes",
        "| Q01 | index |",
        "| Q01 | smooth |",
        "| Q01 | full |",
        "| Q01 | paper: Smooth Scan, SF 10 | 3079 | 288 | 174 | 168 | 83263 |",
        "## Fig. 1: what stale statistics cost",
        "| query | optimizer-stale / optimizer-fresh | smooth-stale / optimizer-fresh |",
        "smooth-stale/best",
        "Q06 smooth-stale: lineitem: smooth via",
    ] {
        assert!(md.contains(s), "{s} missing from\n{md}");
    }
    let req = format!("| full | {} req / ", q1("full").io_requests);
    assert!(md.contains(&req), "{req} missing from\n{md}");
    assert!(opts.out.join("fig1.png").is_file());
    assert!(opts.out.join("fig1.svg").is_file());
    remove(&opts);
}

/// Removes a passed test's database and output.
fn remove(opts: &BenchOptions) {
    let _ = std::fs::remove_dir_all(opts.bench_db.parent().unwrap());
}

#[test]
fn fig14_traces_every_read_of_q1_or_says_what_it_cut() {
    let opts = options("fig14");
    let runs = fig14(&opts, 1_000_000, &mut |_| {}).unwrap();
    let names: Vec<&str> = runs.iter().map(|r| r.path.name()).collect();
    assert_eq!(names, ["full", "index", "smooth"]);
    for r in &runs {
        assert!(!r.censored && r.dropped == 0, "{r:?}");
        // Q1 writes nothing: the trace is exactly the statement's reads.
        assert_eq!(r.traced_reads as u64, r.read_requests.unwrap(), "{r:?}");
        assert_eq!(r.traced, r.traced_reads, "{r:?}");
        let csv = std::fs::read_to_string(&r.csv).unwrap();
        assert_eq!(
            csv.lines().count(),
            r.traced + 1,
            "a header and a row per request"
        );
        let png = opts.out.join(format!("fig14-{}.png", r.path.name()));
        assert!(png.is_file(), "{}", png.display());
    }
    let index = &runs[1];
    assert!(index.traced > 10 * runs[0].traced, "{runs:?}");

    // Capped: the first 10 requests in the CSV, the rest counted.
    let runs = fig14(&opts, 10, &mut |_| {}).unwrap();
    let capped = &runs[1];
    assert_eq!(capped.traced, 10);
    assert_eq!(
        capped.traced as u64 + capped.dropped,
        capped.read_requests.unwrap()
    );
    let csv = std::fs::read_to_string(&capped.csv).unwrap();
    assert_eq!(csv.lines().count(), 11);
    let md = std::fs::read_to_string(opts.out.join("fig14.md")).unwrap();
    assert!(
        md.contains(&format!(
            "index: ran to completion; only its first 10 requests are traced ({} more were made)",
            capped.dropped
        )),
        "{md}"
    );
    remove(&opts);
}

#[test]
fn plans_name_the_scans_and_the_index_nested_loop_joins() {
    let explain = "plan_type,plan\n\
        physical_plan,\"ProjectionExec: expr=[x]\n  \
        IndexJoinExec: inner=orders via orders_o_orderkey, inner_path=smooth, on=[(l_orderkey, o_orderkey)], inner_predicate=[o_orderdate < 1995-03-15], index join: estimates\n    \
        StrataScanExec: table=lineitem, path=switch (at 9452 rows, the optimizer's estimate) via lineitem_l_shipdate, predicate=[l_shipdate >= 1994-01-01], est_rows=800\n  \
        IndexJoinExec: inner=part via part_p_partkey, inner_path=index\n    \
        StrataScanExec: table=customer, path=full\"\n";
    assert_eq!(
        plan_in(explain),
        "customer: full; \
         lineitem: switch (at 9452 rows, the optimizer's estimate) via lineitem_l_shipdate; \
         join: INLJ into orders via orders_o_orderkey (smooth); \
         join: INLJ into part via part_p_partkey (index)"
    );
    assert_eq!(plan_in("plan_type,plan\nphysical_plan,EmptyExec\n"), "");
}

#[test]
fn all_queries_are_the_22() {
    let all = resolve_queries(&["all".into()]).unwrap();
    assert_eq!(all.len(), 22);
    assert_eq!(all[0].0, "q01");
    assert_eq!(all[21].0, "q22");
    let some = resolve_queries(&["6".into(), "Q14".into()]).unwrap();
    let names: Vec<&str> = some.iter().map(|q| q.0.as_str()).collect();
    assert_eq!(names, ["q06", "q14"]);
    assert!(resolve_queries(&["23".into()]).is_err());
    assert_eq!(
        Config::parse("smooth-stale").unwrap().name(),
        "smooth-stale"
    );
}
