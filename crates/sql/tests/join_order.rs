//! The planner's join order (`rules::join_order`), semi joins sunk to their
//! keys' input (`rules::semi_join_sink`) and aggregates given their join's
//! keys (`rules::aggregate_keys`): the plan EXPLAIN shows, and
//! answers equal to a Rust model's and to the plan as written
//! (`strata.join_order = false`), NULL keys and keys with no match included.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use common::query;
use strata_sql::SqlSession;
use strata_storage::Database;
use strata_storage::row::Value;

/// `big(k, g, v)` 20,000 rows (k in 0..2,000, every 97th NULL; g in 0..20),
/// `mid(k, name)` 2,000 rows (one per k), `tiny(g, tag)` 20 rows, tag `x`
/// on g = 7 only, `few(k)` 30 keys (NULL among them when `null_in_few`).
fn setup(analyze: bool, null_in_few: bool) -> (tempfile::TempDir, Arc<Database>) {
    let (dir, db) = common::empty_db();
    common::load(
        &db,
        "big",
        "k INT NULL, g INT, v INT",
        vec![],
        (0..20_000).map(|i| {
            vec![
                if i % 97 == 0 {
                    Value::Null
                } else {
                    Value::Int32((i * 7919) % 2_000)
                },
                Value::Int32(i % 20),
                Value::Int32(i),
            ]
        }),
    );
    common::load(
        &db,
        "mid",
        "k INT, name VARCHAR(20)",
        vec![],
        (0..2_000).map(|k| vec![Value::Int32(k), Value::Str(format!("m{k}"))]),
    );
    common::load(
        &db,
        "tiny",
        "g INT, tag VARCHAR(4)",
        vec![],
        (0..20).map(|g| {
            vec![
                Value::Int32(g),
                Value::Str(if g == 7 { "x" } else { "y" }.into()),
            ]
        }),
    );
    common::load(
        &db,
        "few",
        "k INT NULL",
        vec![],
        (0..30).map(|i| {
            vec![if null_in_few && i == 0 {
                Value::Null
            } else {
                Value::Int32(i * 61 + 5_000 * (i % 2))
            }]
        }),
    );
    let db = Arc::new(db);
    if analyze {
        query(&SqlSession::new(db.clone()).unwrap(), "ANALYZE");
    }
    (dir, db)
}

fn session(db: &Arc<Database>, join_order: bool) -> SqlSession {
    let s = SqlSession::new(db.clone()).unwrap();
    s.set(
        "strata.join_order",
        if join_order { "true" } else { "false" },
    )
    .unwrap();
    s
}

/// The optimized logical plan, as EXPLAIN prints it.
fn logical_plan(s: &SqlSession, sql: &str) -> String {
    query(s, &format!("EXPLAIN {sql}"))
        .into_iter()
        .find(|r| r[0] == "logical_plan")
        .map(|r| r[1].clone())
        .expect("EXPLAIN prints a logical plan")
}

/// The tables of the innermost join: the first two table scans after the
/// last join EXPLAIN prints (a join's inputs print below it, and the rule's
/// trees nest each join in the next, on its left or its right).
fn first_joined(plan: &str) -> Vec<String> {
    let lines: Vec<&str> = plan.lines().collect();
    let last_join = lines
        .iter()
        .rposition(|l| l.contains("Join:"))
        .unwrap_or_else(|| panic!("no join in:\n{plan}"));
    let mut two: Vec<String> = lines[last_join..]
        .iter()
        .filter_map(|l| l.trim().strip_prefix("TableScan: "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .take(2)
        .collect();
    two.sort();
    two
}

/// The first line of `plan` holding `what`.
fn line_of(plan: &str, what: &str) -> usize {
    plan.lines()
        .position(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no {what} in:\n{plan}"))
}

fn sorted(mut rows: Vec<Vec<String>>) -> Vec<Vec<String>> {
    rows.sort();
    rows
}

const THREE_WAY: &str = "SELECT big.v, mid.name, tiny.tag FROM big, mid, tiny \
     WHERE big.k = mid.k AND big.g = tiny.g AND tiny.tag = 'x'";

/// The model's rows of [`THREE_WAY`].
fn three_way_model() -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for i in 0..20_000 {
        if i % 97 == 0 || i % 20 != 7 {
            continue;
        }
        let k = (i * 7919) % 2_000;
        rows.push(vec![i.to_string(), format!("m{k}"), "x".to_string()]);
    }
    sorted(rows)
}

#[test]
fn the_filtered_small_table_is_joined_first_and_the_answer_is_the_models() {
    let (_dir, db) = setup(true, false);
    let on = session(&db, true);
    let off = session(&db, false);
    // As written, big joins mid first; by the estimates, one row of tiny
    // keeps a twentieth of big, so tiny joins big first.
    assert_eq!(first_joined(&logical_plan(&off, THREE_WAY)), ["big", "mid"]);
    assert_eq!(first_joined(&logical_plan(&on, THREE_WAY)), ["big", "tiny"]);
    let model = three_way_model();
    assert_eq!(model.len(), 990);
    assert_eq!(sorted(query(&on, THREE_WAY)), model);
    assert_eq!(sorted(query(&off, THREE_WAY)), model);
    // The columns come back in the query's order whatever the join order:
    // `SELECT *` of the reordered joins names big's, mid's, then tiny's.
    let star = "SELECT * FROM big, mid, tiny WHERE big.k = mid.k AND big.g = tiny.g \
                AND tiny.tag = 'x' AND big.v = 7";
    assert_eq!(
        query(&on, star),
        [["1433", "7", "7", "1433", "m1433", "7", "x"]]
    );
    assert_eq!(query(&off, star), query(&on, star));
}

#[test]
fn without_statistics_the_joins_stay_as_written() {
    let (_dir, db) = setup(false, false);
    let on = session(&db, true);
    assert_eq!(first_joined(&logical_plan(&on, THREE_WAY)), ["big", "mid"]);
    assert_eq!(sorted(query(&on, THREE_WAY)), three_way_model());
    // ANALYZE in the same session: its next plan uses the new statistics
    // (a table keeps its decoded statistics only until the catalog is
    // saved again).
    query(&on, "ANALYZE");
    assert_eq!(first_joined(&logical_plan(&on, THREE_WAY)), ["big", "tiny"]);
    assert_eq!(sorted(query(&on, THREE_WAY)), three_way_model());
}

const SEMI: &str = "SELECT mid.name, big.v FROM mid, big \
     WHERE mid.k = big.k AND mid.k IN (SELECT k FROM few)";

#[test]
fn an_in_subquery_runs_on_the_table_holding_its_key() {
    let (_dir, db) = setup(true, false);
    let on = session(&db, true);
    let plan = logical_plan(&on, SEMI);
    // The semi join's left input is mid's scan, under the inner join.
    let (semi, inner) = (
        line_of(&plan, "LeftSemi Join"),
        line_of(&plan, "Inner Join"),
    );
    assert!(
        inner < semi,
        "the semi join is below the inner join:\n{plan}"
    );
    let few: HashSet<i32> = (0..30).map(|i| i * 61 + 5_000 * (i % 2)).collect();
    let mut model = Vec::new();
    for i in 0..20_000 {
        let k = (i * 7919) % 2_000;
        if i % 97 != 0 && few.contains(&k) {
            model.push(vec![format!("m{k}"), i.to_string()]);
        }
    }
    assert!(!model.is_empty());
    assert_eq!(sorted(query(&on, SEMI)), sorted(model.clone()));
    assert_eq!(sorted(query(&session(&db, false), SEMI)), sorted(model));
}

#[test]
fn a_semi_join_stays_above_a_join_with_a_filtered_table() {
    let (_dir, db) = setup(true, false);
    let on = session(&db, true);
    // tiny is filtered: the join with it may keep far fewer of big's rows
    // than big has, so the IN is tested after it.
    let sql = "SELECT big.v FROM big, tiny WHERE big.g = tiny.g AND tiny.tag = 'x' \
               AND big.k IN (SELECT k FROM mid WHERE name LIKE 'm1%')";
    let plan = logical_plan(&on, sql);
    let (semi, inner) = (
        line_of(&plan, "LeftSemi Join"),
        line_of(&plan, "Inner Join"),
    );
    assert!(
        semi < inner,
        "the semi join stays above the inner join:\n{plan}"
    );
    let mids: HashSet<i32> = (0..2_000)
        .filter(|k| format!("m{k}").starts_with("m1"))
        .collect();
    let model: Vec<Vec<String>> = (0..20_000)
        .filter(|i| i % 97 != 0 && i % 20 == 7 && mids.contains(&((i * 7919) % 2_000)))
        .map(|i| vec![i.to_string()])
        .collect();
    assert!(!model.is_empty());
    assert_eq!(sorted(query(&on, sql)), sorted(model));
}

#[test]
fn not_in_with_a_null_and_not_exists_sunk_keep_sql_s_answers() {
    for null_in_few in [false, true] {
        let (_dir, db) = setup(true, null_in_few);
        let on = session(&db, true);
        let off = session(&db, false);
        let not_in = "SELECT count(*) FROM mid, big WHERE mid.k = big.k \
                      AND mid.k NOT IN (SELECT k FROM few)";
        let not_exists = "SELECT count(*) FROM mid, big WHERE mid.k = big.k \
                          AND NOT EXISTS (SELECT 1 FROM few WHERE few.k = mid.k)";
        let few: HashSet<i32> = (0..30)
            .filter(|i| !(null_in_few && *i == 0))
            .map(|i| i * 61 + 5_000 * (i % 2))
            .collect();
        let mut per_key: HashMap<i32, usize> = HashMap::new();
        for i in 0..20_000 {
            if i % 97 != 0 {
                *per_key.entry((i * 7919) % 2_000).or_default() += 1;
            }
        }
        let outside: usize = per_key
            .iter()
            .filter(|(k, _)| !few.contains(k))
            .map(|(_, n)| n)
            .sum();
        // A NULL in the subquery makes NOT IN unknown for every row.
        let want_not_in = if null_in_few { 0 } else { outside };
        assert_eq!(
            query(&on, not_in),
            [[want_not_in.to_string()]],
            "null in few: {null_in_few}"
        );
        assert_eq!(query(&off, not_in), query(&on, not_in));
        assert_eq!(
            query(&on, not_exists),
            [[outside.to_string()]],
            "null in few: {null_in_few}"
        );
        assert_eq!(query(&off, not_exists), query(&on, not_exists));
    }
}

/// Whether the logical plan has a semi join right under an aggregate, and how
/// many semi joins it has in all.
fn semi_under_aggregate(plan: &str) -> (bool, usize) {
    let lines: Vec<&str> = plan.lines().map(str::trim).collect();
    let under = lines
        .windows(2)
        .any(|w| w[0].starts_with("Aggregate:") && w[1].starts_with("LeftSemi Join:"));
    (
        under,
        lines
            .iter()
            .filter(|l| l.starts_with("LeftSemi Join:"))
            .count(),
    )
}

#[test]
fn a_correlated_aggregate_groups_only_the_keys_its_join_can_meet() {
    let (_dir, db) = setup(true, false);
    let on = session(&db, true);
    // The subquery's aggregate of big by g meets the one tiny row tagged x.
    let sql = "SELECT count(*), sum(big.v) FROM big, tiny WHERE big.g = tiny.g AND tiny.tag = 'x' \
               AND big.v > (SELECT avg(b2.v) FROM big b2 WHERE b2.g = tiny.g)";
    let (under, semis) = semi_under_aggregate(&logical_plan(&on, sql));
    assert!(under, "{}", logical_plan(&on, sql));
    assert_eq!(
        semis,
        1,
        "the rewrite is made once: {}",
        logical_plan(&on, sql)
    );
    let vs: Vec<i64> = (0..20_000i64).filter(|i| i % 20 == 7).collect();
    let avg = vs.iter().sum::<i64>() as f64 / vs.len() as f64;
    let kept: Vec<i64> = vs.iter().copied().filter(|&v| v as f64 > avg).collect();
    let want = [[kept.len().to_string(), kept.iter().sum::<i64>().to_string()]];
    assert_eq!(query(&on, sql), want);
    assert_eq!(query(&session(&db, false), sql), want);
}

#[test]
fn a_grouped_derived_table_joined_on_its_key_keeps_its_groups_and_null_joins_nothing() {
    let (_dir, db) = setup(true, false);
    let on = session(&db, true);
    let sql = "SELECT mid.k, s.c FROM mid, (SELECT k, count(*) AS c FROM big GROUP BY k) s \
               WHERE mid.k = s.k AND mid.name LIKE 'm1%'";
    let (under, semis) = semi_under_aggregate(&logical_plan(&on, sql));
    assert!(under && semis == 1, "{}", logical_plan(&on, sql));
    let mut per_key: HashMap<i32, usize> = HashMap::new();
    for i in 0..20_000 {
        if i % 97 != 0 {
            *per_key.entry((i * 7919) % 2_000).or_default() += 1;
        }
    }
    let model: Vec<Vec<String>> = per_key
        .iter()
        .filter(|(k, _)| format!("m{k}").starts_with("m1"))
        .map(|(k, c)| vec![k.to_string(), c.to_string()])
        .collect();
    assert!(!model.is_empty());
    assert_eq!(sorted(query(&on, sql)), sorted(model));
    // Without a filter on mid, the aggregate is left whole.
    let whole = "SELECT count(*) FROM mid, (SELECT k, count(*) AS c FROM big GROUP BY k) s \
                 WHERE mid.k = s.k";
    assert!(!semi_under_aggregate(&logical_plan(&on, whole)).0);
    assert_eq!(query(&on, whole), [[per_key.len().to_string()]]);
}

/// `build_input_rows` of the first (topmost) hash join EXPLAIN ANALYZE
/// prints: the rows its hash table was built on.
fn top_join_build_rows(s: &SqlSession, sql: &str) -> f64 {
    let plan: String = query(s, &format!("EXPLAIN ANALYZE {sql}"))
        .into_iter()
        .map(|r| r[1].clone())
        .collect::<Vec<_>>()
        .join("\n");
    let line = plan
        .lines()
        .find(|l| l.contains("HashJoinExec"))
        .unwrap_or_else(|| panic!("no hash join in:\n{plan}"));
    let at = line.find("build_input_rows=").expect("build rows") + "build_input_rows=".len();
    let text: String = line[at..]
        .chars()
        .take_while(|c| *c != ',' && *c != ']')
        .collect();
    let (n, unit) = text.trim().split_once(' ').unwrap_or((text.trim(), ""));
    let n: f64 = n.parse().unwrap_or_else(|_| panic!("rows {text:?}"));
    n * match unit {
        "K" => 1e3,
        "M" => 1e6,
        _ => 1.0,
    }
}

#[test]
fn a_join_builds_its_hash_table_on_the_input_it_adds_when_that_is_smaller() {
    let (_dir, db) = setup(true, false);
    // tiny joined with big makes about 20,000 rows (tiny does not shrink big
    // without its tag filter); mid's 2,000 joined to that are what the last
    // join should build on.
    let sql = "SELECT big.v, mid.name, tiny.tag FROM tiny, big, mid \
               WHERE big.g = tiny.g AND big.k = mid.k";
    let on = session(&db, true);
    // The rule puts mid on the last join's left (the side built on) ...
    let logical = logical_plan(&on, sql);
    let lines: Vec<&str> = logical.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.contains("Inner Join:"))
        .expect("a join");
    assert!(
        lines[top + 1].trim().starts_with("TableScan: mid"),
        "{logical}"
    );
    // ... and DataFusion leaves it there.
    let built = top_join_build_rows(&on, sql);
    assert!(built <= 2_000.0, "built on {built} rows");
    // As written too: the scans tell DataFusion their columns' distinct
    // counts, so it estimates tiny ⋈ big at 20,000 rows (without them, at
    // the smaller input's 20) and swaps the last join's sides itself.
    let off = session(&db, false);
    let built = top_join_build_rows(&off, sql);
    assert!(built <= 2_000.0, "as written, built on {built} rows");
    let mut model = Vec::new();
    for i in 0..20_000 {
        if i % 97 == 0 {
            continue;
        }
        let k = (i * 7919) % 2_000;
        let tag = if i % 20 == 7 { "x" } else { "y" };
        model.push(vec![i.to_string(), format!("m{k}"), tag.to_string()]);
    }
    assert_eq!(sorted(query(&on, sql)), sorted(model.clone()));
    assert_eq!(sorted(query(&off, sql)), sorted(model));
}
