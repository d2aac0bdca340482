//! The classical, cost-based access path choice behind
//! `SET strata.access_path = optimizer`: estimate the rows a scan's index range
//! returns from the `ANALYZE` statistics ([`crate::stats`]), cost a full, an
//! index and a sort (bitmap heap) scan with the device's page costs, and take
//! the cheapest — exactly the decision Smooth Scan makes unnecessary. Its
//! estimates are only as good as the statistics: stale after a load, blind to
//! correlations.
//!
//! Costs, in milliseconds of I/O (CPU is not modeled; the paper's point is the
//! I/O cliff):
//! * full: `P · seq`, P the table's pages;
//! * index: `k · random`, one random page read per qualifying index entry k;
//! * sort: `random + (Cardenas(P, k) − 1) · parallel_random`: the expected
//!   distinct pages the k entries hit, read in page order with many requests in
//!   flight — the first one still waits a whole random read, so for a handful
//!   of rows the plain index scan is as cheap and is preferred on a tie.
//!
//! An ordered result costs the same I/O either way (the sort is not modeled).

use strata_access::PageCosts;
use strata_access::predicate::Comparison;
use strata_storage::Table;

use crate::stats::{TableStats, selectivity};

/// A fixed access path, as the optimizer chooses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chosen {
    Full,
    Index,
    Sort,
}

impl Chosen {
    pub fn name(self) -> &'static str {
        match self {
            Chosen::Full => "full",
            Chosen::Index => "index",
            Chosen::Sort => "sort",
        }
    }
}

/// The optimizer's view of one scan.
#[derive(Clone, Debug)]
pub struct Estimate {
    /// Rows the table has, by the statistics.
    pub table_rows: f64,
    pub table_pages: f64,
    /// Rows in the index range (what an index or sort scan reads).
    pub range_rows: f64,
    /// Rows the whole predicate keeps.
    pub rows: f64,
    pub cost_full: f64,
    pub cost_index: Option<f64>,
    pub cost_sort: Option<f64>,
    pub chosen: Chosen,
}

/// Expected distinct pages hit by `k` random rows of a `p`-page table.
pub fn cardenas(p: f64, k: f64) -> f64 {
    if p <= 0.0 {
        return 0.0;
    }
    p * (1.0 - (1.0 - 1.0 / p).powf(k))
}

/// Estimates a scan of `table` by `conjuncts`, whose index (if any) ranges over
/// `index_column`, and picks the cheapest path.
pub fn choose(
    table: &Table,
    stats: Option<&TableStats>,
    conjuncts: &[Comparison],
    index_column: Option<usize>,
    costs: &PageCosts,
) -> Estimate {
    let names: Vec<String> = table
        .schema()
        .columns
        .iter()
        .map(|c| c.name.clone())
        .collect();
    // Without ANALYZE, a planner still knows the table's size on disk; it
    // guesses rows from pages like PostgreSQL does for a never-analyzed table.
    let (rows, pages) = match stats {
        Some(s) => (s.rows as f64, s.pages as f64),
        None => {
            let pages = table.heap().num_pages() as f64;
            let width = table.schema().max_row_size().max(1) as f64;
            (pages * (8192.0 / (width + 24.0)).floor(), pages)
        }
    };
    let sel = selectivity(stats, conjuncts, &names);
    let est_rows = (rows * sel).max(1.0);
    let cost_full = pages * costs.sequential_ms;
    let (mut cost_index, mut cost_sort, mut range_rows) = (None, None, rows);
    if let Some(col) = index_column {
        let on_key: Vec<Comparison> = conjuncts
            .iter()
            .filter(|c| c.column == col)
            .cloned()
            .collect();
        let k = (rows * selectivity(stats, &on_key, &names)).max(1.0);
        range_rows = k;
        cost_index = Some(k * costs.random_ms);
        let parallel = costs.parallel_random_ms.max(costs.sequential_ms);
        cost_sort = Some(costs.random_ms + (cardenas(pages, k) - 1.0).max(0.0) * parallel);
    }
    let mut chosen = (Chosen::Full, cost_full);
    for (c, cost) in [(Chosen::Index, cost_index), (Chosen::Sort, cost_sort)] {
        if let Some(cost) = cost
            && cost < chosen.1
        {
            chosen = (c, cost);
        }
    }
    Estimate {
        table_rows: rows,
        table_pages: pages,
        range_rows,
        rows: est_rows,
        cost_full,
        cost_index,
        cost_sort,
        chosen: chosen.0,
    }
}

impl Estimate {
    /// The cost of the path chosen.
    pub fn chosen_cost(&self) -> f64 {
        match self.chosen {
            Chosen::Full => self.cost_full,
            Chosen::Index => self.cost_index.unwrap_or(self.cost_full),
            Chosen::Sort => self.cost_sort.unwrap_or(self.cost_full),
        }
    }

    /// One line for EXPLAIN: the estimate and each path's cost.
    pub fn describe(&self) -> String {
        let opt = |c: Option<f64>| c.map(|c| format!("{c:.1}")).unwrap_or_else(|| "-".into());
        format!(
            "est_rows={:.0} est_range_rows={:.0} of {:.0} rows/{:.0} pages, cost full={:.1} index={} sort={}",
            self.rows,
            self.range_rows,
            self.table_rows,
            self.table_pages,
            self.cost_full,
            opt(self.cost_index),
            opt(self.cost_sort)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cardenas_is_bounded_by_rows_and_pages() {
        assert!((cardenas(1000.0, 1.0) - 1.0).abs() < 1e-9);
        assert!(cardenas(1000.0, 100.0) < 100.0);
        assert!(cardenas(1000.0, 1e6) > 999.0);
    }
}
