//! `ANALYZE`: the statistics a classical optimizer plans from, and the
//! textbook estimates it makes with them.
//!
//! ANALYZE reads the whole table once (a full scan: the row and page counts
//! are exact) and keeps a uniform random sample of [`SAMPLE_ROWS`] rows
//! (reservoir sampling), from which it builds, per column, the fraction of
//! NULLs, the number of distinct values (the Haas–Stokes `Duj1` estimator that
//! PostgreSQL uses) and an equi-depth histogram of [`BUCKETS`] buckets. The
//! result is stored in the catalog and is only ever replaced by the next
//! ANALYZE: loads do not touch it, so after a load the optimizer plans from the
//! table as it was — the stale-statistics trap of the Smooth Scan paper (§1,
//! §7.8).
//!
//! Estimates follow the textbook (Selinger et al.; PostgreSQL's defaults where
//! a column has no statistics): uniform values within a histogram bucket,
//! `1/distinct` for equality, independent columns (selectivities multiply),
//! and values outside the histogram's range are assumed absent.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use strata_access::predicate::{CmpOp, Comparison};
use strata_access::{PathChoice, Predicate, ScanSpec, SortOptions, TupleBatch, open_path};
use strata_storage::Table;
use strata_storage::row::{Tid, Value};

/// Rows kept for histograms and distinct counts (PostgreSQL's default:
/// 300 × its statistics target of 100).
pub const SAMPLE_ROWS: usize = 30_000;
/// Buckets of each equi-depth histogram.
pub const BUCKETS: usize = 100;

/// PostgreSQL's selectivities when nothing is known.
const DEFAULT_EQ: f64 = 0.005;
const DEFAULT_INEQ: f64 = 1.0 / 3.0;
const DEFAULT_RANGE: f64 = 0.005;

/// A histogram bound: numbers (INT, DECIMAL as its scaled integer, DATE as its
/// day number, DOUBLE, BOOL) are positions on a line, so a bucket can be
/// interpolated; text is only ordered.
#[derive(Clone, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Bound {
    Num(f64),
    Text(String),
}

impl Bound {
    pub fn of(v: &Value) -> Option<Bound> {
        Some(match v {
            Value::Null => return None,
            Value::Int32(x) | Value::Date(x) => Bound::Num(*x as f64),
            Value::Int64(x) | Value::Decimal(x) | Value::Timestamp(x) => Bound::Num(*x as f64),
            Value::Float64(x) => Bound::Num(*x),
            Value::Bool(b) => Bound::Num(*b as u8 as f64),
            Value::Str(s) => Bound::Text(s.clone()),
        })
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ColumnStats {
    pub name: String,
    pub null_frac: f64,
    pub distinct: f64,
    /// `BUCKETS + 1` bounds (fewer for tiny tables): min, the quantiles, max.
    pub histogram: Vec<Bound>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TableStats {
    pub rows: u64,
    pub pages: u64,
    pub columns: Vec<ColumnStats>,
}

/// A sampled row: a heap tuple (decoded when its columns are needed) or a
/// columnar table's row, decoded already.
enum Sampled {
    Tuple(Tid, Vec<u8>),
    Row(Vec<Value>),
}

/// Reads `table` and computes its statistics.
pub fn analyze(
    table: &std::sync::Arc<Table>,
    db: &strata_storage::Database,
    seed: u64,
) -> strata_access::Result<TableStats> {
    let spec = ScanSpec::new(table.clone(), Predicate::all());
    let mut path = open_path(spec, &PathChoice::Full, &SortOptions::default())?;
    let mut batch = TupleBatch::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut sample: Vec<Sampled> = Vec::new();
    let mut rows = 0u64;
    // Reservoir sampling: the row `rows` takes a place with probability
    // SAMPLE_ROWS / rows.
    let place = |rows: u64, rng: &mut SmallRng, sample: &mut Vec<Sampled>| -> Option<usize> {
        if sample.len() < SAMPLE_ROWS {
            return Some(usize::MAX);
        }
        let j = rng.random_range(0..rows);
        ((j as usize) < SAMPLE_ROWS).then_some(j as usize)
    };
    let put = |sample: &mut Vec<Sampled>, at: usize, s: Sampled| {
        if at == usize::MAX {
            sample.push(s);
        } else {
            sample[at] = s;
        }
    };
    // A columnar table's column part first (its delta is the heap).
    if let Some(part) = strata_columns::ColumnPart::of(db, table)
        .map_err(|e| strata_access::AccessError::Config(e.to_string()))?
    {
        let all: Vec<usize> = (0..table.schema().len()).collect();
        let types = table.schema().types();
        part.read_all(&all, |b| {
            let cols: Vec<Vec<Value>> = b
                .columns()
                .iter()
                .zip(&types)
                .map(|(a, t)| strata_columns::convert::arrow_values(a.as_ref(), t))
                .collect::<Result<_, String>>()
                .map_err(|reason| strata_columns::ColumnsError::Convert {
                    table: table.name().to_string(),
                    reason,
                })?;
            for i in 0..b.num_rows() {
                rows += 1;
                if let Some(at) = place(rows, &mut rng, &mut sample) {
                    put(
                        &mut sample,
                        at,
                        Sampled::Row(cols.iter().map(|c| c[i].clone()).collect()),
                    );
                }
            }
            Ok(true)
        })
        .map_err(|e| strata_access::AccessError::Config(e.to_string()))?;
    }
    while path.next_batch(&mut batch)? {
        for (tid, t) in batch.iter() {
            rows += 1;
            if let Some(at) = place(rows, &mut rng, &mut sample) {
                put(&mut sample, at, Sampled::Tuple(tid, t.to_vec()));
            }
        }
    }
    let layout = table.layout().clone();
    // Each sampled row, decoded; a split table's side columns (`strata
    // split`) are in the side rows the sampled tuples point to.
    let decoded: Vec<Vec<Value>> = sample
        .iter()
        .map(|s| match s {
            Sampled::Row(r) => Ok(r.clone()),
            Sampled::Tuple(tid, t) => {
                let mut row = layout.decode(t, *tid);
                if table.side_table().is_some() {
                    table.join_side(t, *tid, &mut row)?;
                }
                Ok(row)
            }
        })
        .collect::<Result<_, strata_storage::StorageError>>()?;
    let columns = table
        .schema()
        .columns
        .iter()
        .enumerate()
        .map(|(c, col)| {
            let mut vals: Vec<Bound> = decoded.iter().filter_map(|r| Bound::of(&r[c])).collect();
            let nulls = decoded.len() - vals.len();
            vals.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
            ColumnStats {
                name: col.name.clone(),
                null_frac: if decoded.is_empty() {
                    0.0
                } else {
                    nulls as f64 / decoded.len() as f64
                },
                distinct: distinct_estimate(&vals, rows),
                histogram: equi_depth(&vals),
            }
        })
        .collect();
    Ok(TableStats {
        rows,
        pages: table.heap().num_pages(),
        columns,
    })
}

/// Haas & Stokes' Duj1 from a sorted sample of a column of `total` rows:
/// `n·d / (n − f1 + f1·n/N)`, with `d` distinct values in the sample of `n`
/// and `f1` of them seen once. A sample holding the whole table gives `d`.
fn distinct_estimate(sorted: &[Bound], total: u64) -> f64 {
    let n = sorted.len() as f64;
    if sorted.is_empty() {
        return 0.0;
    }
    let mut d = 0.0;
    let mut f1 = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i + 1;
        while j < sorted.len() && sorted[j] == sorted[i] {
            j += 1;
        }
        d += 1.0;
        if j - i == 1 {
            f1 += 1.0;
        }
        i = j;
    }
    let big_n = total.max(sorted.len() as u64) as f64;
    let est = n * d / (n - f1 + f1 * n / big_n);
    est.clamp(d, big_n)
}

fn equi_depth(sorted: &[Bound]) -> Vec<Bound> {
    if sorted.is_empty() {
        return Vec::new();
    }
    let buckets = BUCKETS.min(sorted.len().saturating_sub(1)).max(1);
    (0..=buckets)
        .map(|i| sorted[i * (sorted.len() - 1) / buckets].clone())
        .collect()
}

impl ColumnStats {
    /// Estimated fraction of the column's non-NULL values below `v` (or at most
    /// `v` with `inclusive`).
    fn cdf(&self, v: &Bound, inclusive: bool) -> f64 {
        let h = &self.histogram;
        let Some((first, last)) = h.first().zip(h.last()) else {
            return 0.5;
        };
        if v < first || (!inclusive && v == first) {
            return 0.0;
        }
        if v > last || (inclusive && v == last) {
            return 1.0;
        }
        let buckets = (h.len() - 1) as f64;
        // the bucket [h[i], h[i+1]] holding v
        let i = h
            .partition_point(|b| b <= v)
            .saturating_sub(1)
            .min(h.len() - 2);
        let within = match (&h[i], &h[i + 1], v) {
            (Bound::Num(lo), Bound::Num(hi), Bound::Num(x)) if hi > lo => (x - lo) / (hi - lo),
            _ => 0.5,
        };
        ((i as f64 + within) / buckets).clamp(0.0, 1.0)
    }

    /// Selectivity of the conjuncts `cmps` (all on this column) over all rows.
    fn selectivity(&self, cmps: &[&Comparison]) -> f64 {
        let non_null = 1.0 - self.null_frac;
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        let mut eq_ne = 1.0;
        for c in cmps {
            let Some(v) = Bound::of(&c.value) else {
                return 0.0;
            };
            match c.op {
                CmpOp::Eq => {
                    let inside = self
                        .histogram
                        .first()
                        .zip(self.histogram.last())
                        .is_some_and(|(a, b)| &v >= a && &v <= b);
                    eq_ne *= if inside {
                        1.0 / self.distinct.max(1.0)
                    } else {
                        0.0
                    }
                }
                CmpOp::Ne => eq_ne *= 1.0 - 1.0 / self.distinct.max(1.0),
                CmpOp::Lt => hi = hi.min(self.cdf(&v, false)),
                CmpOp::Le => hi = hi.min(self.cdf(&v, true)),
                CmpOp::Gt => lo = lo.max(self.cdf(&v, true)),
                CmpOp::Ge => lo = lo.max(self.cdf(&v, false)),
            }
        }
        non_null * (hi - lo).max(0.0) * eq_ne
    }
}

/// Selectivity of the conjuncts `cmps` on one column when nothing is known.
fn default_selectivity(cmps: &[&Comparison]) -> f64 {
    let eq = cmps.iter().filter(|c| c.op == CmpOp::Eq).count();
    let ne = cmps.iter().filter(|c| c.op == CmpOp::Ne).count();
    let lower = cmps.iter().any(|c| matches!(c.op, CmpOp::Gt | CmpOp::Ge));
    let upper = cmps.iter().any(|c| matches!(c.op, CmpOp::Lt | CmpOp::Le));
    let range = match (lower, upper) {
        (true, true) => DEFAULT_RANGE,
        (true, false) | (false, true) => DEFAULT_INEQ,
        (false, false) => 1.0,
    };
    range * DEFAULT_EQ.powi(eq as i32) * (1.0 - DEFAULT_EQ).powi(ne as i32)
}

impl TableStats {
    pub fn column(&self, name: &str) -> Option<&ColumnStats> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// Estimated fraction of rows satisfying `conjuncts` (columns by position
    /// in `names`), assuming independent columns.
    pub fn selectivity(&self, conjuncts: &[Comparison], names: &[String]) -> f64 {
        selectivity(Some(self), conjuncts, names)
    }
}

/// Estimated fraction of rows satisfying `conjuncts`, from `stats` where there
/// are some and from the defaults elsewhere.
pub fn selectivity(stats: Option<&TableStats>, conjuncts: &[Comparison], names: &[String]) -> f64 {
    let mut cols: Vec<usize> = conjuncts.iter().map(|c| c.column).collect();
    cols.sort_unstable();
    cols.dedup();
    cols.iter()
        .map(|&col| {
            let on: Vec<&Comparison> = conjuncts.iter().filter(|c| c.column == col).collect();
            match stats.and_then(|s| s.column(&names[col])) {
                Some(cs) => cs.selectivity(&on),
                None => default_selectivity(&on),
            }
        })
        .product()
}

/// PostgreSQL's selectivity of a pattern match it knows nothing about.
const DEFAULT_MATCH: f64 = 0.005;

/// Estimated fraction of rows satisfying `expr`, a predicate over the columns
/// of a table with `schema` (a scan's residual: what is not a plain
/// comparison with a literal): `AND` multiplies, `OR` adds less the overlap,
/// `NOT` complements, `IN` sums its equalities, comparisons with literals use
/// the statistics, anything else takes a classical default — the textbook
/// estimator, independence and all.
pub fn expr_selectivity(
    stats: Option<&TableStats>,
    expr: &datafusion::logical_expr::Expr,
    schema: &strata_storage::row::Schema,
) -> f64 {
    use datafusion::logical_expr::expr::InList;
    use datafusion::logical_expr::{BinaryExpr, Expr, Like, Operator};
    let names: Vec<String> = schema.columns.iter().map(|c| c.name.clone()).collect();
    let sel = |e: &Expr| expr_selectivity(stats, e, schema);
    let s = match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => sel(left) * sel(right),
            Operator::Or => {
                let (a, b) = (sel(left), sel(right));
                a + b - a * b
            }
            _ => match crate::scan::pushdown::classify(expr, schema) {
                crate::scan::pushdown::Pushed::Strata(c) => selectivity(stats, &c, &names),
                _ => match op {
                    Operator::Eq => DEFAULT_EQ,
                    Operator::NotEq => 1.0 - DEFAULT_EQ,
                    Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq => DEFAULT_INEQ,
                    _ => 1.0,
                },
            },
        },
        Expr::Not(e) => 1.0 - sel(e),
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) => {
            let any: f64 = list
                .iter()
                .map(|v| {
                    sel(&Expr::BinaryExpr(BinaryExpr::new(
                        expr.clone(),
                        Operator::Eq,
                        Box::new(v.clone()),
                    )))
                })
                .sum::<f64>()
                .min(1.0);
            if *negated { 1.0 - any } else { any }
        }
        Expr::Like(Like { negated, .. }) => {
            if *negated {
                1.0 - DEFAULT_MATCH
            } else {
                DEFAULT_MATCH
            }
        }
        Expr::Between(_) => match crate::scan::pushdown::classify(expr, schema) {
            crate::scan::pushdown::Pushed::Strata(c) => selectivity(stats, &c, &names),
            _ => DEFAULT_INEQ * DEFAULT_INEQ,
        },
        _ => 1.0,
    };
    s.clamp(0.0, 1.0)
}

/// Where the optimizer's estimates come from, for EXPLAIN.
pub fn describe(stats: Option<&TableStats>) -> String {
    match stats {
        Some(s) => format!("ANALYZE: {} rows, {} pages", s.rows, s.pages),
        None => "no ANALYZE statistics (default selectivities)".into(),
    }
}

/// DataFusion's statistics of a scan of `rows` estimated rows with `schema`'s
/// columns: each column's `ANALYZE` distinct count, at most `rows`.
/// DataFusion's estimate of an equi-join's rows divides the product of its
/// inputs' rows by the larger distinct count of the key; without counts it
/// takes a column's distinct values to be its input's rows, which makes
/// every join of a small table with a large one as small as the small one,
/// and its choice of the side to build a hash table on follows that.
pub(crate) fn scan_statistics(
    stats: Option<&TableStats>,
    schema: &datafusion::arrow::datatypes::SchemaRef,
    rows: usize,
) -> datafusion::common::Statistics {
    use datafusion::common::stats::Precision;
    let mut s = datafusion::common::Statistics::new_unknown(schema);
    s.num_rows = Precision::Inexact(rows);
    if let Some(stats) = stats {
        for (c, f) in s.column_statistics.iter_mut().zip(schema.fields()) {
            if let Some(col) = stats.column(f.name()) {
                let d = col.distinct.max(1.0).min(rows.max(1) as f64);
                c.distinct_count = Precision::Inexact(d.round() as usize);
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform(n: usize) -> ColumnStats {
        let vals: Vec<Bound> = (0..n).map(|i| Bound::Num(i as f64)).collect();
        ColumnStats {
            name: "a".into(),
            null_frac: 0.0,
            distinct: distinct_estimate(&vals, n as u64),
            histogram: equi_depth(&vals),
        }
    }

    fn cmp(op: CmpOp, v: i32) -> Comparison {
        Comparison {
            column: 0,
            op,
            value: Value::Int32(v),
        }
    }

    #[test]
    fn uniform_ranges_are_estimated_by_their_width() {
        let c = uniform(10_000);
        assert_eq!(c.distinct, 10_000.0);
        let s = c.selectivity(&[&cmp(CmpOp::Ge, 1000), &cmp(CmpOp::Lt, 3000)]);
        assert!((s - 0.2).abs() < 0.01, "{s}");
        let s = c.selectivity(&[&cmp(CmpOp::Eq, 77)]);
        assert!((s - 1e-4).abs() < 1e-9, "{s}");
        // outside the histogram: absent
        assert_eq!(c.selectivity(&[&cmp(CmpOp::Gt, 20_000)]), 0.0);
        assert_eq!(c.selectivity(&[&cmp(CmpOp::Eq, -5)]), 0.0);
        assert_eq!(c.selectivity(&[&cmp(CmpOp::Le, 20_000)]), 1.0);
    }

    #[test]
    fn duj1_counts_distinct_values_of_a_partial_sample() {
        // every value twice in the sample: no singletons, so d itself
        let vals: Vec<Bound> = (0..1000)
            .flat_map(|i| [Bound::Num(i as f64), Bound::Num(i as f64)])
            .collect();
        assert_eq!(distinct_estimate(&vals, 1_000_000), 1000.0);
        // all singletons from a table 100x larger: scaled up towards N
        let vals: Vec<Bound> = (0..1000).map(|i| Bound::Num(i as f64)).collect();
        let d = distinct_estimate(&vals, 100_000);
        assert!(d > 50_000.0, "{d}");
    }

    #[test]
    fn independence_multiplies_and_defaults_apply_without_stats() {
        let names = vec!["a".to_string(), "b".to_string()];
        let stats = TableStats {
            rows: 10_000,
            pages: 100,
            columns: vec![uniform(10_000)],
        };
        let mut on_b = cmp(CmpOp::Lt, 5);
        on_b.column = 1;
        let s = stats.selectivity(&[cmp(CmpOp::Lt, 5000), on_b], &names);
        assert!((s - 0.5 / 3.0).abs() < 0.01, "{s}");
        let s = selectivity(None, &[cmp(CmpOp::Ge, 1), cmp(CmpOp::Le, 2)], &names);
        assert_eq!(s, DEFAULT_RANGE);
    }
}
