//! What `strata bench skipper` runs: its options, the time scale, and the
//! TPC-H queries the figures use with the tables each reads (the tables its
//! clients put on the device), and the paper's times the scale maps to.

use std::path::PathBuf;

use anyhow::{Result, anyhow};

/// The paper's modeled transfer of one segment: Table 3's 550 s of network
/// access for Q12's 57 segments.
pub const PAPER_TRANSFER_S: f64 = 550.0 / 57.0;
/// The paper's processing time of Q12 alone (Table 3, PostgreSQL's query
/// execution): what `--time-scale auto` maps strata's local Q12 time to.
pub const PAPER_PROCESS_S: f64 = 407.0;

/// A TPC-H query the figures run, with the tables it reads (the ones its
/// clients put on the CSD).
#[derive(Clone, Copy, Debug)]
pub struct TpchQuery {
    pub number: u32,
    pub sql: &'static str,
    pub tables: &'static [&'static str],
}

const QUERIES: [TpchQuery; 5] = [
    TpchQuery {
        number: 3,
        sql: include_str!("../../../sql/queries/q03.sql"),
        tables: &["customer", "orders", "lineitem"],
    },
    TpchQuery {
        number: 5,
        sql: include_str!("../../../sql/queries/q05.sql"),
        tables: &[
            "customer", "orders", "lineitem", "supplier", "nation", "region",
        ],
    },
    TpchQuery {
        number: 10,
        sql: include_str!("../../../sql/queries/q10.sql"),
        tables: &["customer", "orders", "lineitem", "nation"],
    },
    TpchQuery {
        number: 12,
        sql: include_str!("../../../sql/queries/q12.sql"),
        tables: &["orders", "lineitem"],
    },
    TpchQuery {
        number: 14,
        sql: include_str!("../../../sql/queries/q14.sql"),
        tables: &["lineitem", "part"],
    },
];

/// The query `number` (3, 5, 10, 12 or 14: the joins the figures use).
pub fn tpch_query(number: u32) -> Result<TpchQuery> {
    QUERIES
        .iter()
        .find(|q| q.number == number)
        .copied()
        .ok_or_else(|| {
            anyhow!(
                "TPC-H Q{number} is not one of the benchmark's queries ({})",
                QUERIES
                    .iter()
                    .map(|q| format!("Q{}", q.number))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// Real delay per modeled second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimeScale {
    /// Strata's local Q12 time / the paper's 407 s.
    Auto,
    Fixed(f64),
}

/// What to run.
#[derive(Clone, Debug)]
pub struct SkipperOptions {
    /// Databases, CSD data and MJoin reports go here.
    pub bench_db: PathBuf,
    pub out: PathBuf,
    pub sf: f64,
    pub object_bytes: u64,
    /// Runs per point; medians reported.
    pub repeat: usize,
    pub time_scale: TimeScale,
    /// The `strata-sql` binary the clients run.
    pub sql_binary: PathBuf,
    /// Each client's buffer pool.
    pub buffer_pool: String,
    /// Fig. 7's client counts; the largest is the client count of Figs. 9,
    /// 10 and 11b.
    pub clients: Vec<usize>,
    /// Modeled switch time, seconds (the paper: 10).
    pub switch_s: f64,
    /// Fig. 10's switch times.
    pub switches_s: Vec<f64>,
    /// Figs. 8 and 12: client i runs query `mixed[i]`.
    pub mixed: Vec<u32>,
    /// Fig. 8: repetitions per client, back to back.
    pub reps: usize,
    /// Fig. 12: repetitions per client.
    pub fig12_reps: usize,
    /// MJoin's eviction policy (`strata.skipper_evict`).
    pub evict: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queries_name_their_tables() {
        for q in QUERIES {
            for t in q.tables {
                assert!(q.sql.contains(t), "Q{} does not read {t}", q.number);
            }
        }
        assert!(tpch_query(7).is_err());
    }
}
