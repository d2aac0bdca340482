//! Which rows an `UPDATE` or `DELETE` changes: its WHERE split into the
//! conjuncts strata evaluates on stored bytes (and that may pick an index)
//! and the rest, the index or heap pages that hold candidates, and the
//! candidates' tuple ids.

use super::literal_sites::{paired_sites, paired_with};
use crate::error::SqlError;
use crate::scan::pushdown::unqualified;
use crate::scan::pushdown::{Pushed, classify_for};
use datafusion::arrow::array::{Array, BooleanArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::utils::conjunction;
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::physical_expr::PhysicalExpr;
use std::fmt;
use std::sync::Arc;
use strata_access::batch::BATCH_ROWS;
use strata_access::predicate::{Comparison, KeyRange, Predicate};
use strata_access::{PageCosts, TupleBatch};
use strata_columns::convert::{BatchConverter, arrow_schema, nullable};
use strata_storage::Table;
use strata_storage::row::Tid;

/// Heap pages a scan for DELETE and UPDATE reads per request (1 MiB).
const SCAN_RUN_PAGES: usize = 128;

/// The WHERE of an `UPDATE` or `DELETE`.
#[derive(Clone)]
pub(super) struct Filter {
    /// Conjuncts `column op literal`, which may pick an index.
    pub(super) conjuncts: Vec<Comparison>,
    /// Whether `conjuncts` are the whole WHERE, so that strata's evaluation
    /// of them on the stored bytes answers it (as a scan's pushed-down
    /// conjuncts do) without making the rows Arrow.
    pub(super) on_bytes: bool,
    /// The whole WHERE (none: every row), evaluated on every candidate row.
    pub(super) expr: Option<Arc<dyn PhysicalExpr>>,
    /// The WHERE's conjuncts as logical expressions over unqualified
    /// columns: what `expr` was made from, and what `EXPLAIN` shows.
    pub(super) filters: Vec<Expr>,
}

/// The WHERE's conjuncts as comparisons strata evaluates on the stored
/// bytes, when every one of them is such a comparison (the WHERE is then
/// answered without making a row Arrow); `None` otherwise.
pub(super) fn on_bytes(table: &Table, filters: &[Expr]) -> Option<Vec<Comparison>> {
    let mut conjuncts = Vec::new();
    for f in filters {
        match classify_for(f, table) {
            Pushed::Strata(c) => conjuncts.extend(c),
            Pushed::Residual | Pushed::No => return None,
        }
    }
    Some(conjuncts)
}

/// The WHERE's comparisons on `table`'s stored bytes, and whether they are
/// the whole WHERE; the first conjunct that cannot be evaluated on the
/// table's rows alone as the error.
fn classified<'a>(table: &Table, filters: &'a [Expr]) -> Result<(Vec<Comparison>, bool), &'a Expr> {
    let mut conjuncts = Vec::new();
    let mut on_bytes = true;
    for f in filters {
        match classify_for(f, table) {
            Pushed::Strata(c) => conjuncts.extend(c),
            Pushed::Residual => on_bytes = false,
            Pushed::No => return Err(f),
        }
    }
    Ok((conjuncts, on_bytes))
}

impl Filter {
    pub(super) fn new(
        table: &Table,
        schema: &DFSchema,
        state: &dyn Session,
        filters: Vec<Expr>,
    ) -> Result<Filter> {
        let (conjuncts, on_bytes) = classified(table, &filters).map_err(|f| {
            DataFusionError::Plan(format!(
                "the condition {f} cannot be evaluated on the rows of '{}' alone \
                 (subqueries, other tables and volatile functions are not supported in \
                 the WHERE of UPDATE and DELETE)",
                table.name()
            ))
        })?;
        let filters = filters
            .iter()
            .map(unqualified)
            .collect::<Result<Vec<_>>>()?;
        let expr = match conjunction(filters.clone()) {
            Some(e) => Some(physical(state, e, schema)?),
            None => None,
        };
        Ok(Filter {
            conjuncts,
            on_bytes,
            expr,
            filters,
        })
    }

    /// The WHERE as `EXPLAIN` shows it; `None` without one.
    pub(super) fn text(&self) -> Option<String> {
        conjunction(self.filters.clone()).map(|e| e.to_string())
    }

    /// Whether the WHERE runs as it stands, unsimplified
    /// ([`runs_unsimplified`]): then its literals are sites
    /// ([`super::literal_sites`]), appended to `out`.
    pub(super) fn sites(&self, out: &mut Vec<ScalarValue>) -> Option<()> {
        let Some(expr) = &self.expr else {
            return Some(());
        };
        if !self.filters.iter().all(runs_unsimplified) {
            return None;
        }
        paired_sites(&self.filters, expr, out)
    }

    /// The same WHERE with the values at the front of `values` at its
    /// literals' sites (advanced past them), its comparisons with `table`'s
    /// stored bytes made again from them; `None` when they do not fit.
    pub(super) fn with_literals(
        &self,
        table: &Table,
        values: &mut &[ScalarValue],
    ) -> Option<Filter> {
        let (filters, expr) = match &self.expr {
            Some(e) => {
                let (filters, e) = paired_with(&self.filters, e, values)?;
                (filters, Some(e))
            }
            None => (Vec::new(), None),
        };
        let (conjuncts, on_bytes) = classified(table, &filters).ok()?;
        Some(Filter {
            conjuncts,
            on_bytes,
            expr,
            filters,
        })
    }

    /// The rows of `batch` (and their `tids`) that satisfy the filter.
    pub(super) fn select<T>(
        &self,
        tids: Vec<T>,
        batch: RecordBatch,
    ) -> Result<(Vec<T>, RecordBatch), SqlError> {
        let Some(expr) = &self.expr else {
            return Ok((tids, batch));
        };
        let values = expr
            .evaluate(&batch)
            .and_then(|v| v.into_array(batch.num_rows()))
            .map_err(SqlError::from)?;
        let mask = values
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| SqlError::Query(format!("WHERE is not a boolean condition: {expr}")))?;
        let keep: Vec<T> = tids
            .into_iter()
            .enumerate()
            .filter(|(i, _)| mask.is_valid(*i) && mask.value(*i))
            .map(|(_, t)| t)
            .collect();
        // NULL is not true: filter_record_batch drops rows whose mask is NULL.
        let batch = filter_record_batch(&batch, mask).map_err(arrow_error)?;
        Ok((keep, batch))
    }
}

/// The index (position in `table.indexes()`) an `UPDATE` or `DELETE` tries
/// first, if any: of those whose first key column the conjuncts bound, the one
/// whose range names the fewest rows. Whether it is used is decided while it
/// is read ([`tids_by_index`]), from where its rows are.
pub(super) fn choose_index(
    table: &Table,
    conjuncts: &[Comparison],
) -> Result<Option<usize>, SqlError> {
    let pred = Predicate {
        conjuncts: conjuncts.to_vec(),
    };
    let bound: Vec<(usize, KeyRange)> = table
        .indexes()
        .iter()
        .enumerate()
        .map(|(i, index)| (i, pred.range_on(index.key_cols[0])))
        .filter(|(_, range)| *range != KeyRange::all())
        .collect();
    // One index to try: nothing to compare.
    if bound.len() < 2 {
        return Ok(bound.first().map(|(i, _)| *i));
    }
    let mut best: Option<(usize, f64)> = None;
    for (i, range) in bound {
        let index = &table.indexes()[i];
        let (lo, hi) = range.encoded(&index.key_types[0]);
        let estimate = index.btree.estimate_range(&lo, &hi)?;
        if best.is_none_or(|(_, b)| estimate < b) {
            best = Some((i, estimate));
        }
    }
    Ok(best.map(|(i, _)| i))
}

/// The heap pages a set of rows lies on, as the rows' tids arrive in index
/// order: how many distinct pages and how many runs of neighbouring pages,
/// kept up to date one tid at a time with a bitmap of the heap's pages.
pub(super) struct PagesHit {
    pub(super) pages: u64,
    pub(super) bits: Vec<u64>,
    pub(super) distinct: u64,
    pub(super) runs: u64,
}

impl PagesHit {
    pub(super) fn new(pages: u64) -> PagesHit {
        PagesHit {
            pages,
            bits: vec![0; pages.div_ceil(64) as usize],
            distinct: 0,
            runs: 0,
        }
    }

    pub(super) fn is_set(&self, page: u64) -> bool {
        self.bits
            .get((page / 64) as usize)
            .is_some_and(|w| w & (1 << (page % 64)) != 0)
    }

    /// Adds `page`. A page past the heap's end (a corrupt index; reading it
    /// fails later with an error naming it) counts as a new run each time.
    pub(super) fn add(&mut self, page: u64) {
        if page >= self.pages {
            self.distinct += 1;
            self.runs += 1;
            return;
        }
        let w = &mut self.bits[(page / 64) as usize];
        if *w & (1 << (page % 64)) != 0 {
            return;
        }
        *w |= 1 << (page % 64);
        self.distinct += 1;
        let left = page > 0 && self.is_set(page - 1);
        let right = page + 1 < self.pages && self.is_set(page + 1);
        match (left, right) {
            (false, false) => self.runs += 1,
            (true, true) => self.runs -= 1,
            _ => {}
        }
    }

    /// What reading the pages in page order costs: a random read to start
    /// each run, the rest of a run sequentially.
    pub(super) fn cost(&self, costs: &PageCosts) -> f64 {
        self.runs as f64 * costs.random_ms
            + (self.distinct - self.runs) as f64 * costs.sequential_ms
    }
}

/// The tids in index `index`'s range for `conjuncts`, sorted, when fetching
/// their heap pages (each once, in page order) costs less than reading the
/// whole heap by the device's page costs; `None` as soon as it would cost
/// more — the index is read only that far. Rows clustered in heap order
/// (keys loaded in order, a date range of an append-only table) read a few
/// runs of pages; rows spread over the heap stop the walk after about as many
/// entries as the heap's pages times the sequential-to-random cost ratio.
pub(super) fn tids_by_index(
    table: &Table,
    index: &strata_storage::db::Index,
    conjuncts: &[Comparison],
    costs: &PageCosts,
) -> Result<Option<Vec<Tid>>, SqlError> {
    let (lo, hi) = key_range(index, conjuncts);
    let pages = table.heap().num_pages();
    let scan = pages as f64 * costs.sequential_ms;
    let mut hit = PagesHit::new(pages);
    let mut tids = Vec::new();
    for entry in index.btree.range(lo, hi)? {
        let tid = entry?.1;
        hit.add(tid.page as u64);
        if hit.cost(costs) > scan {
            return Ok(None);
        }
        tids.push(tid);
    }
    // Each heap page once, in order.
    tids.sort_unstable();
    Ok(Some(tids))
}

/// The encoded bounds of index `index`'s first key column that `conjuncts`
/// allow.
pub(super) fn key_range(
    index: &strata_storage::db::Index,
    conjuncts: &[Comparison],
) -> (std::ops::Bound<Vec<u8>>, std::ops::Bound<Vec<u8>>) {
    Predicate {
        conjuncts: conjuncts.to_vec(),
    }
    .range_on(index.key_cols[0])
    .encoded(&index.key_types[0])
}

/// Visits the rows of `table` that satisfy `filter`, in batches of their tids
/// and their values as Arrow (every column), reading them through index
/// `index` when [`tids_by_index`] finds that cheaper than the heap by `costs`,
/// otherwise reading the whole heap.
pub(super) fn find(
    table: &Table,
    filter: &Filter,
    index: Option<usize>,
    costs: &PageCosts,
    each: &mut dyn FnMut(Vec<Tid>, RecordBatch) -> Result<(), SqlError>,
) -> Result<(), SqlError> {
    let all: Vec<usize> = (0..table.schema().len()).collect();
    let converter = BatchConverter::new(table, all, table_schema(table));
    candidates(table, &filter.conjuncts, index, costs, &mut |batch| {
        let arrow = converter.convert(batch).map_err(arrow_error)?;
        let tids = batch.iter().map(|(t, _)| t).collect();
        let (tids, rows) = filter.select(tids, arrow)?;
        if tids.is_empty() {
            Ok(())
        } else {
            each(tids, rows)
        }
    })
    .map(|_| ())
}

/// The tids of the rows of `table` that satisfy `filter` when the whole WHERE
/// is comparisons strata evaluates on the stored bytes
/// ([`Filter::on_bytes`]): no row becomes Arrow. `None` otherwise.
pub(super) fn find_tids_on_bytes(
    table: &Table,
    filter: &Filter,
    index: Option<usize>,
    costs: &PageCosts,
) -> Result<Option<Vec<Tid>>, SqlError> {
    if !filter.on_bytes {
        return Ok(None);
    }
    let check = Predicate {
        conjuncts: filter.conjuncts.clone(),
    }
    .compile(table.schema(), table.layout());
    let mut tids = Vec::new();
    candidates(table, &filter.conjuncts, index, costs, &mut |batch| {
        tids.extend(
            batch
                .iter()
                .filter(|(tid, t)| check.eval(t, *tid))
                .map(|(tid, _)| tid),
        );
        Ok(())
    })?;
    Ok(Some(tids))
}

/// Visits, in batches of at most [`BATCH_ROWS`], the tuples that may satisfy
/// `conjuncts`: those index `index` names in its range when [`tids_by_index`]
/// finds reading them cheaper than the heap by `costs` (each page once, in
/// page order, neighbouring pages in one request), otherwise every tuple of
/// the heap. Whether they came from the index.
pub(super) fn candidates(
    table: &Table,
    conjuncts: &[Comparison],
    index: Option<usize>,
    costs: &PageCosts,
    each: &mut dyn FnMut(&TupleBatch) -> Result<(), SqlError>,
) -> Result<bool, SqlError> {
    let mut batch = TupleBatch::new();
    let by_index = match index {
        Some(i) => {
            tids_by_index(table, &table.indexes()[i], conjuncts, costs)?.map(|tids| (i, tids))
        }
        None => None,
    };
    match by_index {
        Some((i, tids)) => {
            let index = &table.indexes()[i];
            let heap = table.heap();
            let mut start = 0;
            while start < tids.len() {
                // A run of neighbouring pages (at most SCAN_RUN_PAGES), read in
                // one request, then its tuples, each page pinned once.
                let first = tids[start].page as u64;
                let mut last = first;
                let mut end = start;
                while let Some(t) = tids.get(end) {
                    let p = t.page as u64;
                    if p > last + 1 || p - first >= SCAN_RUN_PAGES as u64 {
                        break;
                    }
                    last = p;
                    end += 1;
                }
                // (One page is read when its tuples are: no request of its
                // own, and no look in the pool's table twice.)
                if last > first {
                    heap.pool()
                        .prefetch(heap.file_id(), first, (last - first + 1) as usize)?;
                }
                // In batches of BATCH_ROWS tuples (a page that straddles two
                // is pinned twice).
                for chunk in tids[start..end].chunks(BATCH_ROWS) {
                    heap.with_tuples(chunk, |tid, t| match t {
                        Some(t) => {
                            batch.push(tid, t);
                            Ok(())
                        }
                        None => Err(strata_storage::StorageError::NoSuchTuple {
                            table: table.name().to_string(),
                            page: tid.page,
                            slot: tid.slot,
                        }),
                    })
                    .map_err(|e| match e {
                        strata_storage::StorageError::NoSuchTuple { page, slot, .. } => {
                            SqlError::Corrupt(format!(
                                "index '{}' of table '{}' names tuple {}, which does not \
                                 exist (run `strata check`)",
                                index.def.name,
                                table.name(),
                                Tid::new(page, slot)
                            ))
                        }
                        e => SqlError::from(e),
                    })?;
                    each(&batch)?;
                    batch.clear();
                }
                start = end;
            }
            Ok(true)
        }
        None => {
            let mut failed = None;
            let visit = |page: u64,
                         view: strata_storage::page::PageView<'_>|
             -> strata_storage::error::Result<std::ops::ControlFlow<()>> {
                for (slot, t) in view.tuples() {
                    batch.push(Tid::new(page as u32, slot), t);
                    if batch.is_full() {
                        let done = each(&batch);
                        batch.clear();
                        if let Err(e) = done {
                            failed = Some(e);
                            return Ok(std::ops::ControlFlow::Break(()));
                        }
                    }
                }
                Ok(std::ops::ControlFlow::Continue(()))
            };
            // A heap of one request's worth of pages is read through the
            // pool (no reader thread, no write-back, cached pages free).
            let heap = table.heap();
            if heap.num_pages() <= SCAN_RUN_PAGES as u64 {
                heap.scan_cached(visit)?;
            } else {
                heap.scan_pages(SCAN_RUN_PAGES, 2, visit)?;
            }
            if let Some(e) = failed {
                return Err(e);
            }
            if !batch.is_empty() {
                each(&batch)?;
            }
            Ok(false)
        }
    }
}

/// The Arrow schema of batches of `table`'s rows (nullable: new rows are
/// checked by [`check_row`]).
pub(crate) fn table_schema(table: &Table) -> SchemaRef {
    nullable(&arrow_schema(table.schema()))
}

pub(super) fn arrow_error(e: impl fmt::Display) -> SqlError {
    SqlError::Execution(e.to_string())
}

/// A physical expression for a SET value or WHERE condition, simplified
/// first. The expressions a plain UPDATE or DELETE is planned with from its
/// syntax tree ([`crate::dml::direct_dml`]) have not been through DataFusion's
/// optimizer, and some functions run only once its simplifier has rewritten
/// them: `coalesce` and `nvl` refused with "coalesce should have been
/// simplified to case" (found by the differential tester, crates/difftest).
pub(crate) fn physical(
    state: &dyn Session,
    e: Expr,
    schema: &DFSchema,
) -> Result<Arc<dyn PhysicalExpr>> {
    let info = SimplifyContext::builder()
        .with_schema(Arc::new(schema.clone()))
        .with_config_options(Arc::new(state.config_options().clone()))
        .build();
    // A constant that cannot be computed (a cast out of range) is left to
    // fail when the rows are evaluated, as DataFusion's optimizer leaves it,
    // so the error names the statement, table and column like every other
    // value that does not fit. The functions that run only simplified are
    // still rewritten, each by its own rule, which computes no constant.
    //
    // An expression the simplifier would not change what it computes (see
    // [`runs_unsimplified`]) is planned as it stands: simplifying was a tenth
    // of a one-row UPDATE's instructions.
    let e = if runs_unsimplified(&e) {
        e
    } else if let Some(e) = functions_only(&e, &info) {
        e
    } else {
        match ExprSimplifier::new(info.clone()).simplify(e.clone()) {
            Ok(e) => e,
            Err(_) => functions_simplified(e, &info)?,
        }
    };
    state.create_physical_expr(e, schema)
}

/// Whether `e` computes the same simplified or not, and runs as it stands:
/// a tree of columns, literals other than NULL, casts, DataFusion's own
/// operators and strata's checked arithmetic alone (`v + -5`, `k = 42`),
/// and names given to any of them (`CURRENT_TIMESTAMP` is `now()` named so).
/// Simplifying such a tree only folds constants, which evaluating it
/// computes anyway (a constant that fails, fails there, as it does after a
/// failed simplification); the rewrites that change a result or that a
/// function needs before it runs (a NULL operand of a checked operation,
/// `coalesce`, `now()`) all need a node left out here.
pub(crate) fn runs_unsimplified(e: &Expr) -> bool {
    let other = e.exists(|n| {
        Ok(!match n {
            Expr::Column(_)
            | Expr::Alias(_)
            | Expr::BinaryExpr(_)
            | Expr::Cast(_)
            | Expr::TryCast(_)
            | Expr::Not(_)
            | Expr::Negative(_) => true,
            Expr::Literal(v, _) => !v.is_null(),
            Expr::ScalarFunction(f) => crate::rules::overflow::is_checked(&f.func),
            _ => false,
        })
    });
    matches!(other, Ok(false))
}

/// `e` with each function call replaced by what the function's own
/// `simplify` makes of it, when that leaves a tree that runs unsimplified
/// ([`runs_unsimplified`]): `now()` becomes the statement's start time, and
/// the rest of DataFusion's simplifier would only fold constants (a fifth of
/// a one-row INSERT's instructions, for pgbench's `CURRENT_TIMESTAMP`).
pub(crate) fn functions_only(e: &Expr, info: &SimplifyContext) -> Option<Expr> {
    let f = functions_simplified(e.clone(), info).ok()?;
    runs_unsimplified(&f).then_some(f)
}

/// `e` with each function call replaced by what the function's own
/// `simplify` makes of it (`coalesce` a `CASE`, `arrow_cast` a `CAST`).
fn functions_simplified(e: Expr, info: &SimplifyContext) -> Result<Expr> {
    e.transform_up(|e| match e {
        Expr::ScalarFunction(ScalarFunction { func, args }) => {
            Ok(match func.simplify(args, info)? {
                ExprSimplifyResult::Simplified(e) => Transformed::yes(e),
                ExprSimplifyResult::Original(args) => {
                    Transformed::no(Expr::ScalarFunction(ScalarFunction { func, args }))
                }
            })
        }
        e => Ok(Transformed::no(e)),
    })
    .map(|t| t.data)
}

#[cfg(test)]
mod tests {
    use super::{functions_only, runs_unsimplified};
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::ScalarValue;
    use datafusion::functions::core::expr_fn::coalesce;
    use datafusion::logical_expr::{cast, col, lit};

    #[test]
    fn only_columns_literals_casts_and_operators_run_unsimplified() {
        assert!(runs_unsimplified(&col("k").eq(lit(42i64))));
        assert!(runs_unsimplified(&(col("v") + (-lit(5i64)))));
        assert!(runs_unsimplified(
            &cast(col("v"), DataType::Int64).gt(lit(1i32))
        ));
        // A NULL operand, a function: simplified first.
        assert!(!runs_unsimplified(
            &(col("v") + lit(ScalarValue::Int64(None)))
        ));
        assert!(!runs_unsimplified(&coalesce(vec![col("v"), lit(7i64)])));
        assert!(!runs_unsimplified(&col("v").is_null()));
    }

    #[test]
    fn now_becomes_the_statements_time_without_the_whole_simplifier() {
        use datafusion::arrow::datatypes::TimeUnit;
        use datafusion::logical_expr::simplify::SimplifyContext;
        let start =
            datafusion::common::arrow::temporal_conversions::timestamp_s_to_datetime(1_700_000_000)
                .unwrap()
                .and_utc();
        let info = SimplifyContext::builder()
            .with_query_execution_start_time(Some(start))
            .build();
        let now = datafusion::functions::datetime::expr_fn::now();
        // As SQL's CURRENT_TIMESTAMP plans: `now()` named.
        let e = cast(
            now.alias("current_timestamp()"),
            DataType::Timestamp(TimeUnit::Microsecond, None),
        );
        let f = functions_only(&e, &info).expect("now() simplified by itself");
        assert!(runs_unsimplified(&f));
        assert!(f.to_string().contains("1700000000"), "{f}");
        // coalesce becomes a CASE, which the whole simplifier is for.
        assert!(functions_only(&coalesce(vec![col("v"), lit(7i64)]), &info).is_none());
    }
}
