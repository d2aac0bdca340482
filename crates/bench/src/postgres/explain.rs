//! EXPLAIN's output: `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` read into
//! serde structs ([`Explain`], [`PlanNode`]) and reduced to the statistics a
//! result row records ([`ExplainStats`]).

use anyhow::{Context, Result};
use postgres::error::SqlState;
use serde::Deserialize;

use super::options::trim_sql;

/// One element of EXPLAIN's JSON array (it prints exactly one). Fields not
/// named here are ignored.
#[derive(Debug, Deserialize)]
struct Explain {
    #[serde(rename = "Plan")]
    plan: PlanNode,
    /// Only with ANALYZE.
    #[serde(rename = "Execution Time")]
    execution_ms: Option<f64>,
    #[serde(rename = "Planning Time")]
    planning_ms: Option<f64>,
}

/// A plan node and its children. Counts are read as numbers of any kind
/// (PostgreSQL 18 prints "Actual Rows" with decimals) and rounded.
#[derive(Debug, Deserialize)]
struct PlanNode {
    #[serde(rename = "Node Type")]
    node_type: String,
    /// The table a scan reads (not its alias).
    #[serde(rename = "Relation Name")]
    relation: Option<String>,
    #[serde(rename = "Actual Rows")]
    actual_rows: Option<f64>,
    #[serde(rename = "Shared Hit Blocks")]
    shared_hit_blocks: Option<f64>,
    #[serde(rename = "Shared Read Blocks")]
    shared_read_blocks: Option<f64>,
    #[serde(rename = "Temp Read Blocks")]
    temp_read_blocks: Option<f64>,
    #[serde(rename = "Temp Written Blocks")]
    temp_written_blocks: Option<f64>,
    /// Up to PostgreSQL 16.
    #[serde(rename = "I/O Read Time")]
    io_read_ms: Option<f64>,
    /// PostgreSQL 17 on.
    #[serde(rename = "Shared I/O Read Time")]
    shared_io_read_ms: Option<f64>,
    /// Bitmap Heap Scans.
    #[serde(rename = "Exact Heap Blocks")]
    exact_heap_blocks: Option<f64>,
    #[serde(rename = "Lossy Heap Blocks")]
    lossy_heap_blocks: Option<f64>,
    #[serde(rename = "Plans", default)]
    plans: Vec<PlanNode>,
}

impl PlanNode {
    /// This node and its descendants, top down in pre-order.
    fn pre_order(&self) -> Vec<&PlanNode> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(node) = stack.pop() {
            out.push(node);
            stack.extend(node.plans.iter().rev());
        }
        out
    }
}

fn count(v: Option<f64>) -> Option<u64> {
    v.map(|v| v.round() as u64)
}

/// A plan node that read a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanNode {
    /// "Relation Name": the table, not the alias.
    pub relation: String,
    /// "Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan", ...
    pub node: String,
}

/// What one `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` reports.
#[derive(Clone, Debug, PartialEq)]
pub struct ExplainStats {
    /// "Execution Time" (None for a plain EXPLAIN).
    pub execution_ms: Option<f64>,
    pub planning_ms: Option<f64>,
    /// Every node that read a table, in plan order (pre-order).
    pub scans: Vec<ScanNode>,
    /// Every node, top down in pre-order, joined by " > ", e.g.
    /// "Sort > Bitmap Heap Scan > Bitmap Index Scan".
    pub plan: String,
    /// The top node's "Actual Rows" (0 for a plain EXPLAIN).
    pub rows_out: u64,
    /// Buffers of the execution (the top node counts its children's;
    /// planning's are not included).
    pub shared_hit_blocks: u64,
    pub shared_read_blocks: u64,
    pub temp_read_blocks: u64,
    pub temp_written_blocks: u64,
    /// "I/O Read Time" ("Shared I/O Read Time" from PostgreSQL 17 on), with
    /// `track_io_timing`.
    pub io_read_ms: Option<f64>,
    /// "Exact Heap Blocks" and "Lossy Heap Blocks", summed over the Bitmap
    /// Heap Scans (None without one).
    pub exact_heap_blocks: Option<u64>,
    pub lossy_heap_blocks: Option<u64>,
}

impl ExplainStats {
    fn from_explain(e: &Explain) -> ExplainStats {
        let top = &e.plan;
        let nodes = top.pre_order();
        let scans = nodes
            .iter()
            .filter_map(|n| {
                Some(ScanNode {
                    relation: n.relation.clone()?,
                    node: n.node_type.clone(),
                })
            })
            .collect();
        let bitmap: Vec<&&PlanNode> = nodes
            .iter()
            .filter(|n| n.node_type == "Bitmap Heap Scan")
            .collect();
        // None when no Bitmap Heap Scan reports the count.
        let sum = |f: fn(&PlanNode) -> Option<f64>| {
            let v: Vec<u64> = bitmap.iter().filter_map(|n| count(f(n))).collect();
            (!v.is_empty()).then(|| v.iter().sum())
        };
        ExplainStats {
            execution_ms: e.execution_ms,
            planning_ms: e.planning_ms,
            scans,
            plan: nodes
                .iter()
                .map(|n| n.node_type.as_str())
                .collect::<Vec<_>>()
                .join(" > "),
            rows_out: count(top.actual_rows).unwrap_or(0),
            shared_hit_blocks: count(top.shared_hit_blocks).unwrap_or(0),
            shared_read_blocks: count(top.shared_read_blocks).unwrap_or(0),
            temp_read_blocks: count(top.temp_read_blocks).unwrap_or(0),
            temp_written_blocks: count(top.temp_written_blocks).unwrap_or(0),
            io_read_ms: top.io_read_ms.or(top.shared_io_read_ms),
            exact_heap_blocks: sum(|n| n.exact_heap_blocks),
            lossy_heap_blocks: sum(|n| n.lossy_heap_blocks),
        }
    }

    /// The first node that read `table` (None if the plan does not read it).
    pub fn scan_node(&self, table: &str) -> Option<&str> {
        self.scans
            .iter()
            .find(|s| s.relation == table)
            .map(|s| s.node.as_str())
    }

    /// The nodes that read each table, tables by name, nodes in plan order
    /// with a repeated node counted: `lineitem: Bitmap Heap Scan; nation: Seq
    /// Scan x2; orders: Index Scan, Seq Scan`.
    pub fn scans_by_table(&self) -> String {
        let mut tables: Vec<&str> = self.scans.iter().map(|s| s.relation.as_str()).collect();
        tables.sort();
        tables.dedup();
        let per_table = tables.into_iter().map(|t| {
            let mut nodes: Vec<(&str, usize)> = Vec::new();
            for s in self.scans.iter().filter(|s| s.relation == t) {
                match nodes.iter_mut().find(|(n, _)| *n == s.node) {
                    Some((_, k)) => *k += 1,
                    None => nodes.push((&s.node, 1)),
                }
            }
            let nodes: Vec<String> = nodes
                .into_iter()
                .map(|(n, k)| {
                    if k > 1 {
                        format!("{n} x{k}")
                    } else {
                        n.to_string()
                    }
                })
                .collect();
            format!("{t}: {}", nodes.join(", "))
        });
        per_table.collect::<Vec<_>>().join("; ")
    }
}

/// Parses EXPLAIN's JSON output (the one text value of `EXPLAIN (FORMAT
/// JSON)`'s one row).
pub fn parse_explain_json(text: &str) -> Result<ExplainStats> {
    let doc: Vec<Explain> = serde_json::from_str(text)
        .with_context(|| format!("EXPLAIN output is not the expected JSON: {text:?}"))?;
    let [explain] = &doc[..] else {
        anyhow::bail!("EXPLAIN JSON is not a one-element array: {text:?}");
    };
    Ok(ExplainStats::from_explain(explain))
}

/// The statement that plans `sql`: `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF,
/// FORMAT JSON)` (or a plain `EXPLAIN (FORMAT JSON)` when `analyze` is
/// false: the plan a censored run would have used). A `;` ending `sql` is
/// dropped; it is sent alone, so a trailing `--` comment swallows nothing.
pub fn explain_sql(sql: &str, analyze: bool) -> String {
    let explain = if analyze {
        "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON)"
    } else {
        "EXPLAIN (FORMAT JSON)"
    };
    format!("{explain} {}", trim_sql(sql))
}

/// Whether an error's SQLSTATE says the statement was cancelled
/// (`query_canceled`, 57014: what `statement_timeout` raises).
pub fn is_statement_timeout(code: Option<&SqlState>) -> bool {
    code == Some(&SqlState::QUERY_CANCELED)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from PostgreSQL 15.18 (Debian): the output of
    /// `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON)` of Q1 at 1% with
    /// ORDER BY c2 and the bitmap scan forced, cold, track_io_timing on.
    const SAMPLE: &str = r#"[
  {
    "Plan": {
      "Node Type": "Sort",
      "Parallel Aware": false,
      "Async Capable": false,
      "Startup Cost": 481.21,
      "Total Cost": 482.44,
      "Plan Rows": 495,
      "Plan Width": 40,
      "Actual Rows": 500,
      "Actual Loops": 1,
      "Sort Key": ["c2"],
      "Sort Method": "quicksort",
      "Sort Space Used": 64,
      "Sort Space Type": "Memory",
      "Shared Hit Blocks": 5,
      "Shared Read Blocks": 290,
      "Shared Dirtied Blocks": 0,
      "Shared Written Blocks": 0,
      "Local Hit Blocks": 0,
      "Local Read Blocks": 0,
      "Local Dirtied Blocks": 0,
      "Local Written Blocks": 0,
      "Temp Read Blocks": 0,
      "Temp Written Blocks": 0,
      "I/O Read Time": 6.936,
      "I/O Write Time": 0.000,
      "Temp I/O Read Time": 0.000,
      "Temp I/O Write Time": 0.000,
      "Plans": [
        {
          "Node Type": "Bitmap Heap Scan",
          "Parent Relationship": "Outer",
          "Parallel Aware": false,
          "Async Capable": false,
          "Relation Name": "microbench",
          "Alias": "microbench",
          "Startup Cost": 13.36,
          "Total Cost": 459.05,
          "Plan Rows": 495,
          "Plan Width": 40,
          "Actual Rows": 500,
          "Actual Loops": 1,
          "Recheck Cond": "((c2 >= 0) AND (c2 < 1000))",
          "Rows Removed by Index Recheck": 0,
          "Exact Heap Blocks": 289,
          "Lossy Heap Blocks": 0,
          "Shared Hit Blocks": 2,
          "Shared Read Blocks": 290,
          "Shared Dirtied Blocks": 0,
          "Shared Written Blocks": 0,
          "Local Hit Blocks": 0,
          "Local Read Blocks": 0,
          "Local Dirtied Blocks": 0,
          "Local Written Blocks": 0,
          "Temp Read Blocks": 0,
          "Temp Written Blocks": 0,
          "I/O Read Time": 6.936,
          "I/O Write Time": 0.000,
          "Temp I/O Read Time": 0.000,
          "Temp I/O Write Time": 0.000,
          "Plans": [
            {
              "Node Type": "Bitmap Index Scan",
              "Parent Relationship": "Outer",
              "Parallel Aware": false,
              "Async Capable": false,
              "Index Name": "microbench_c2",
              "Startup Cost": 0.00,
              "Total Cost": 13.24,
              "Plan Rows": 495,
              "Plan Width": 0,
              "Actual Rows": 500,
              "Actual Loops": 1,
              "Index Cond": "((c2 >= 0) AND (c2 < 1000))",
              "Shared Hit Blocks": 2,
              "Shared Read Blocks": 1,
              "Shared Dirtied Blocks": 0,
              "Shared Written Blocks": 0,
              "Local Hit Blocks": 0,
              "Local Read Blocks": 0,
              "Local Dirtied Blocks": 0,
              "Local Written Blocks": 0,
              "Temp Read Blocks": 0,
              "Temp Written Blocks": 0,
              "I/O Read Time": 0.011,
              "I/O Write Time": 0.000,
              "Temp I/O Read Time": 0.000,
              "Temp I/O Write Time": 0.000
            }
          ]
        }
      ]
    },
    "Planning": {
      "Shared Hit Blocks": 72,
      "Shared Read Blocks": 20,
      "Shared Dirtied Blocks": 2,
      "Shared Written Blocks": 0,
      "Local Hit Blocks": 0,
      "Local Read Blocks": 0,
      "Local Dirtied Blocks": 0,
      "Local Written Blocks": 0,
      "Temp Read Blocks": 0,
      "Temp Written Blocks": 0,
      "I/O Read Time": 0.222,
      "I/O Write Time": 0.000,
      "Temp I/O Read Time": 0.000,
      "Temp I/O Write Time": 0.000
    },
    "Planning Time": 0.523,
    "Triggers": [
    ],
    "Execution Time": 7.812
  }
]
"#;

    #[test]
    fn parses_explain_json() {
        let s = parse_explain_json(SAMPLE).unwrap();
        assert_eq!(
            s,
            ExplainStats {
                execution_ms: Some(7.812),
                planning_ms: Some(0.523),
                scans: vec![ScanNode {
                    relation: "microbench".into(),
                    node: "Bitmap Heap Scan".into()
                }],
                plan: "Sort > Bitmap Heap Scan > Bitmap Index Scan".into(),
                rows_out: 500,
                // The Sort's counts (its children's included), not planning's.
                shared_hit_blocks: 5,
                shared_read_blocks: 290,
                temp_read_blocks: 0,
                temp_written_blocks: 0,
                io_read_ms: Some(6.936),
                exact_heap_blocks: Some(289),
                lossy_heap_blocks: Some(0),
            }
        );
        assert_eq!(s.scan_node("microbench"), Some("Bitmap Heap Scan"));
        assert_eq!(s.scan_node("other"), None);
        assert_eq!(s.scans_by_table(), "microbench: Bitmap Heap Scan");
    }

    #[test]
    fn parses_a_hand_made_plan() {
        let text = r#"[
  {
    "Plan": {
      "Node Type": "Sort",
      "Actual Rows": 12,
      "Actual Loops": 1,
      "Shared Hit Blocks": 3,
      "Shared Read Blocks": 40,
      "Temp Read Blocks": 5,
      "Temp Written Blocks": 6,
      "I/O Read Time": 1.25,
      "Plans": [
        {
          "Node Type": "Seq Scan",
          "Relation Name": "microbench",
          "Actual Rows": 12,
          "Shared Hit Blocks": 3,
          "Shared Read Blocks": 40
        }
      ]
    },
    "Planning": { "Shared Hit Blocks": 99 },
    "Planning Time": 0.5,
    "Triggers": [],
    "Execution Time": 17.75
  }
]
"#;
        let s = parse_explain_json(text).unwrap();
        assert_eq!(
            s,
            ExplainStats {
                execution_ms: Some(17.75),
                planning_ms: Some(0.5),
                scans: vec![ScanNode {
                    relation: "microbench".into(),
                    node: "Seq Scan".into()
                }],
                plan: "Sort > Seq Scan".into(),
                rows_out: 12,
                shared_hit_blocks: 3,
                shared_read_blocks: 40,
                temp_read_blocks: 5,
                temp_written_blocks: 6,
                io_read_ms: Some(1.25),
                exact_heap_blocks: None,
                lossy_heap_blocks: None,
            }
        );
        assert!(parse_explain_json("ERROR: x").is_err());
        assert!(parse_explain_json("[{}]").is_err());
        assert!(parse_explain_json("[]").is_err());
        assert!(parse_explain_json("[{\"Plan\": {\"Plans\": []}}]").is_err());
        assert!(parse_explain_json("[{\"Plan\": ").is_err());
    }

    /// Written by hand in the shape PostgreSQL 17 prints (its "Shared I/O
    /// Read Time"), for TPC-H Q7 as PostgreSQL plans it: six scans, nation
    /// twice (n1, n2), two Bitmap Heap Scans, a hash spilling to temp files.
    const JOIN_PLAN: &str = r#"[
  {
    "Plan": {
      "Node Type": "Aggregate",
      "Strategy": "Sorted",
      "Partial Mode": "Simple",
      "Parallel Aware": false,
      "Async Capable": false,
      "Startup Cost": 181203.11,
      "Total Cost": 183711.08,
      "Plan Rows": 6079,
      "Plan Width": 272,
      "Actual Rows": 4,
      "Actual Loops": 1,
      "Group Key": ["n1.n_name", "n2.n_name", "(EXTRACT(year FROM lineitem.l_shipdate))"],
      "Shared Hit Blocks": 2210,
      "Shared Read Blocks": 118004,
      "Shared Dirtied Blocks": 0,
      "Shared Written Blocks": 0,
      "Local Hit Blocks": 0,
      "Local Read Blocks": 0,
      "Local Dirtied Blocks": 0,
      "Local Written Blocks": 0,
      "Temp Read Blocks": 2050,
      "Temp Written Blocks": 2048,
      "Shared I/O Read Time": 912.25,
      "Shared I/O Write Time": 0.000,
      "Local I/O Read Time": 0.000,
      "Local I/O Write Time": 0.000,
      "Temp I/O Read Time": 3.5,
      "Temp I/O Write Time": 4.25,
      "Plans": [
        {
          "Node Type": "Sort",
          "Parent Relationship": "Outer",
          "Actual Rows": 5924,
          "Actual Loops": 1,
          "Sort Key": ["n1.n_name", "n2.n_name"],
          "Sort Method": "quicksort",
          "Plans": [
            {
              "Node Type": "Hash Join",
              "Parent Relationship": "Outer",
              "Join Type": "Inner",
              "Actual Rows": 5924,
              "Actual Loops": 1,
              "Hash Cond": "(orders.o_custkey = customer.c_custkey)",
              "Plans": [
                {
                  "Node Type": "Nested Loop",
                  "Parent Relationship": "Outer",
                  "Join Type": "Inner",
                  "Actual Rows": 146008,
                  "Actual Loops": 1,
                  "Plans": [
                    {
                      "Node Type": "Hash Join",
                      "Parent Relationship": "Outer",
                      "Join Type": "Inner",
                      "Actual Rows": 146008,
                      "Actual Loops": 1,
                      "Hash Cond": "(lineitem.l_suppkey = supplier.s_suppkey)",
                      "Plans": [
                        {
                          "Node Type": "Bitmap Heap Scan",
                          "Parent Relationship": "Outer",
                          "Relation Name": "lineitem",
                          "Alias": "lineitem",
                          "Actual Rows": 1828450,
                          "Actual Loops": 1,
                          "Recheck Cond": "((l_shipdate >= '1995-01-01'::date) AND (l_shipdate <= '1996-12-31'::date))",
                          "Exact Heap Blocks": 100,
                          "Lossy Heap Blocks": 5,
                          "Plans": [
                            {
                              "Node Type": "Bitmap Index Scan",
                              "Parent Relationship": "Outer",
                              "Index Name": "lineitem_l_shipdate",
                              "Actual Rows": 1828450,
                              "Actual Loops": 1
                            }
                          ]
                        },
                        {
                          "Node Type": "Hash",
                          "Parent Relationship": "Inner",
                          "Actual Rows": 798,
                          "Actual Loops": 1,
                          "Plans": [
                            {
                              "Node Type": "Seq Scan",
                              "Parent Relationship": "Outer",
                              "Relation Name": "supplier",
                              "Alias": "supplier",
                              "Actual Rows": 10000,
                              "Actual Loops": 1
                            }
                          ]
                        }
                      ]
                    },
                    {
                      "Node Type": "Index Scan",
                      "Parent Relationship": "Inner",
                      "Scan Direction": "Forward",
                      "Index Name": "orders_pkey",
                      "Relation Name": "orders",
                      "Alias": "orders",
                      "Actual Rows": 1,
                      "Actual Loops": 146008,
                      "Index Cond": "(o_orderkey = lineitem.l_orderkey)"
                    }
                  ]
                },
                {
                  "Node Type": "Hash",
                  "Parent Relationship": "Inner",
                  "Actual Rows": 12008,
                  "Actual Loops": 1,
                  "Plans": [
                    {
                      "Node Type": "Hash Join",
                      "Parent Relationship": "Outer",
                      "Join Type": "Inner",
                      "Actual Rows": 12008,
                      "Actual Loops": 1,
                      "Plans": [
                        {
                          "Node Type": "Bitmap Heap Scan",
                          "Parent Relationship": "Outer",
                          "Relation Name": "customer",
                          "Alias": "customer",
                          "Actual Rows": 150000,
                          "Actual Loops": 1,
                          "Exact Heap Blocks": 10,
                          "Lossy Heap Blocks": 2,
                          "Plans": [
                            {
                              "Node Type": "Bitmap Index Scan",
                              "Parent Relationship": "Outer",
                              "Index Name": "customer_c_nationkey",
                              "Actual Rows": 150000,
                              "Actual Loops": 1
                            }
                          ]
                        },
                        {
                          "Node Type": "Hash",
                          "Parent Relationship": "Inner",
                          "Actual Rows": 2,
                          "Actual Loops": 1,
                          "Plans": [
                            {
                              "Node Type": "Nested Loop",
                              "Parent Relationship": "Outer",
                              "Join Type": "Inner",
                              "Actual Rows": 2,
                              "Actual Loops": 1,
                              "Join Filter": "(((n1.n_name = 'FRANCE'::bpchar) AND (n2.n_name = 'GERMANY'::bpchar)) OR ((n1.n_name = 'GERMANY'::bpchar) AND (n2.n_name = 'FRANCE'::bpchar)))",
                              "Plans": [
                                {
                                  "Node Type": "Seq Scan",
                                  "Parent Relationship": "Outer",
                                  "Relation Name": "nation",
                                  "Alias": "n1",
                                  "Actual Rows": 25,
                                  "Actual Loops": 1
                                },
                                {
                                  "Node Type": "Seq Scan",
                                  "Parent Relationship": "Inner",
                                  "Relation Name": "nation",
                                  "Alias": "n2",
                                  "Actual Rows": 2,
                                  "Actual Loops": 25
                                }
                              ]
                            }
                          ]
                        }
                      ]
                    }
                  ]
                }
              ]
            }
          ]
        }
      ]
    },
    "Planning": {
      "Shared Hit Blocks": 310,
      "Shared Read Blocks": 41
    },
    "Planning Time": 4.125,
    "Triggers": [
    ],
    "Execution Time": 2543.5
  }
]
"#;

    #[test]
    fn parses_a_join_plan_with_scans_per_table() {
        let s = parse_explain_json(JOIN_PLAN).unwrap();
        let scans: Vec<(&str, &str)> = s
            .scans
            .iter()
            .map(|n| (n.relation.as_str(), n.node.as_str()))
            .collect();
        assert_eq!(
            scans,
            [
                ("lineitem", "Bitmap Heap Scan"),
                ("supplier", "Seq Scan"),
                ("orders", "Index Scan"),
                ("customer", "Bitmap Heap Scan"),
                ("nation", "Seq Scan"),
                ("nation", "Seq Scan"),
            ]
        );
        assert_eq!(
            s.scans_by_table(),
            "customer: Bitmap Heap Scan; lineitem: Bitmap Heap Scan; nation: Seq Scan x2; \
             orders: Index Scan; supplier: Seq Scan"
        );
        assert_eq!(
            s.plan,
            "Aggregate > Sort > Hash Join > Nested Loop > Hash Join > Bitmap Heap Scan > \
             Bitmap Index Scan > Hash > Seq Scan > Index Scan > Hash > Hash Join > \
             Bitmap Heap Scan > Bitmap Index Scan > Hash > Nested Loop > Seq Scan > Seq Scan"
        );
        assert_eq!(s.scan_node("orders"), Some("Index Scan"));
        assert_eq!(s.scan_node("region"), None);
        // The top node's counters, not planning's; the bitmap blocks of both
        // Bitmap Heap Scans; PostgreSQL 17's name for the read time.
        assert_eq!(s.execution_ms, Some(2543.5));
        assert_eq!(s.planning_ms, Some(4.125));
        assert_eq!(s.rows_out, 4);
        assert_eq!((s.shared_hit_blocks, s.shared_read_blocks), (2210, 118004));
        assert_eq!((s.temp_read_blocks, s.temp_written_blocks), (2050, 2048));
        assert_eq!(s.io_read_ms, Some(912.25));
        assert_eq!(
            (s.exact_heap_blocks, s.lossy_heap_blocks),
            (Some(110), Some(7))
        );
    }

    #[test]
    fn scans_by_table_lists_each_node_kind_once_with_its_count() {
        let scan = |relation: &str, node: &str| ScanNode {
            relation: relation.into(),
            node: node.into(),
        };
        let mut s = parse_explain_json(SAMPLE).unwrap();
        s.scans = vec![
            scan("orders", "Index Scan"),
            scan("b", "Seq Scan"),
            scan("orders", "Seq Scan"),
            scan("orders", "Index Scan"),
        ];
        assert_eq!(
            s.scans_by_table(),
            "b: Seq Scan; orders: Index Scan x2, Seq Scan"
        );
        assert_eq!(s.scan_node("orders"), Some("Index Scan"));
        s.scans.clear();
        assert_eq!(s.scans_by_table(), "");
    }

    #[test]
    fn explain_statements_and_timeouts() {
        let sql = "SELECT * FROM \"microbench\" WHERE c2 >= 0 AND c2 < 1000 ORDER BY c2";
        assert_eq!(
            explain_sql(sql, true),
            "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) SELECT * FROM \"microbench\" \
             WHERE c2 >= 0 AND c2 < 1000 ORDER BY c2"
        );
        // A trailing semicolon is dropped; a trailing comment stays (the
        // statement is sent alone).
        assert_eq!(
            explain_sql(
                "  SELECT count(*) FROM a JOIN b USING (c1) -- the join\n ;; \n",
                false
            ),
            "EXPLAIN (FORMAT JSON) SELECT count(*) FROM a JOIN b USING (c1) -- the join"
        );
        // statement_timeout's SQLSTATE, not another error's.
        assert!(is_statement_timeout(Some(&SqlState::from_code("57014"))));
        assert!(!is_statement_timeout(Some(&SqlState::from_code("42P01"))));
        assert!(!is_statement_timeout(None));
    }
}
