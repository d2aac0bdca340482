//! A scan's WHERE applied to a batch, conjunct by conjunct.
//!
//! DataFusion evaluates `a AND b AND c` as nested binary ANDs; where the left
//! side keeps few rows it copies the batch down to them, evaluates the right
//! side there and scatters the answers back into a full-length mask, at every
//! AND. On a column scan of TPC-H Q6 that copying and scattering was a third
//! of the scan's time. Here the conjuncts that are plain comparisons (a
//! column or a literal on each side) are each evaluated over the whole batch,
//! their masks ANDed bit by bit, and the batch filtered once; the others
//! (LIKE, arithmetic, functions), which may cost far more per row, are then
//! evaluated together on only the rows the comparisons kept.
//!
//! The rows kept are the same: a row stays when every conjunct is true, and
//! a NULL answer drops it as false does. An expression that fails on a row
//! the comparisons already dropped (a division by zero) is not evaluated
//! there, as PostgreSQL does not promise to evaluate conjuncts in any order.

use std::sync::Arc;

use datafusion::arrow::array::{Array, BooleanArray};
use datafusion::arrow::compute::kernels::boolean::and;
use datafusion::arrow::compute::{filter_record_batch, prep_null_mask_filter};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{
    BinaryExpr, Column, IsNotNullExpr, IsNullExpr, Literal,
};
use datafusion::physical_expr::split_conjunction;

/// The rows of `batch` for which the boolean `expr` is true.
pub(crate) fn filter(batch: RecordBatch, expr: &Arc<dyn PhysicalExpr>) -> Result<RecordBatch> {
    let (plain, rest): (Vec<_>, Vec<_>) = split_conjunction(expr)
        .into_iter()
        .partition(|e| is_plain(e.as_ref()));
    let mut batch = batch;
    if !plain.is_empty() {
        let mut mask: Option<BooleanArray> = None;
        for e in plain {
            let m = as_mask(e.evaluate(&batch)?.into_array(batch.num_rows())?)?;
            mask = Some(match mask {
                None => m,
                Some(so_far) => and(&so_far, &m)?,
            });
        }
        let mask = mask.expect("one plain conjunct at least");
        if mask.true_count() < batch.num_rows() {
            batch = filter_record_batch(&batch, &drop_nulls(mask))?;
        }
    }
    if rest.is_empty() || batch.num_rows() == 0 {
        return Ok(batch);
    }
    let rest = rest
        .into_iter()
        .cloned()
        .reduce(|a, b| Arc::new(BinaryExpr::new(a, Operator::And, b)) as Arc<dyn PhysicalExpr>)
        .expect("one conjunct at least");
    let mask = as_mask(rest.evaluate(&batch)?.into_array(batch.num_rows())?)?;
    Ok(filter_record_batch(&batch, &drop_nulls(mask))?)
}

/// A comparison of columns and literals, or a column's IS [NOT] NULL: cheap
/// per row and unable to fail, so evaluated over the whole batch.
fn is_plain(e: &dyn PhysicalExpr) -> bool {
    let leaf = |e: &Arc<dyn PhysicalExpr>| {
        e.downcast_ref::<Column>().is_some() || e.downcast_ref::<Literal>().is_some()
    };
    if let Some(b) = e.downcast_ref::<BinaryExpr>() {
        return crate::rules::expr_rule::is_comparison(*b.op())
            && leaf(b.left())
            && leaf(b.right());
    }
    if let Some(n) = e.downcast_ref::<IsNullExpr>() {
        return leaf(n.arg());
    }
    if let Some(n) = e.downcast_ref::<IsNotNullExpr>() {
        return leaf(n.arg());
    }
    false
}

fn as_mask(a: Arc<dyn Array>) -> Result<BooleanArray> {
    a.as_any()
        .downcast_ref::<BooleanArray>()
        .cloned()
        .ok_or_else(|| DataFusionError::Internal("a filter that is not boolean".into()))
}

/// `mask` with its NULLs false (what a WHERE does with them).
fn drop_nulls(mask: BooleanArray) -> BooleanArray {
    if mask.null_count() > 0 {
        prep_null_mask_filter(&mask)
    } else {
        mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::common::ScalarValue;
    use datafusion::physical_expr::expressions::{col, lit};

    fn batch() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let a: Vec<Option<i64>> = (0..100).map(|i| (i % 7 != 3).then_some(i)).collect();
        let s: Vec<Option<String>> = (0..100)
            .map(|i| (i % 11 != 5).then(|| format!("v{}", i % 13)))
            .collect();
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(a)),
                Arc::new(StringArray::from(s)),
            ],
        )
        .unwrap()
    }

    fn bin(
        l: Arc<dyn PhysicalExpr>,
        op: Operator,
        r: Arc<dyn PhysicalExpr>,
    ) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(l, op, r))
    }

    /// Every mix of plain and other conjuncts, NULLs among the values, keeps
    /// exactly the rows DataFusion's own evaluation of the whole AND keeps.
    #[test]
    fn keeps_what_the_whole_and_keeps() {
        let b = batch();
        let sch = b.schema();
        let a = col("a", &sch).unwrap();
        let s = col("s", &sch).unwrap();
        let ge = bin(a.clone(), Operator::GtEq, lit(ScalarValue::Int64(Some(10))));
        let lt = bin(a.clone(), Operator::Lt, lit(ScalarValue::Int64(Some(90))));
        let eq_s = bin(s.clone(), Operator::Eq, lit("v4"));
        let modulo = bin(
            bin(
                a.clone(),
                Operator::Modulo,
                lit(ScalarValue::Int64(Some(3))),
            ),
            Operator::Eq,
            lit(ScalarValue::Int64(Some(1))),
        );
        let like = bin(s.clone(), Operator::LikeMatch, lit("v1%"));
        let like4 = bin(s.clone(), Operator::LikeMatch, lit("v4%"));
        let cases = [
            vec![ge.clone()],
            vec![ge.clone(), lt.clone()],
            vec![ge.clone(), lt.clone(), eq_s.clone()],
            vec![modulo.clone()],
            vec![modulo.clone(), ge.clone()],
            vec![like.clone(), lt.clone(), modulo.clone()],
            vec![eq_s.clone(), like4.clone()],
        ];
        for conjuncts in cases {
            let whole = conjuncts
                .iter()
                .cloned()
                .reduce(|x, y| bin(x, Operator::And, y))
                .unwrap();
            let mask = whole
                .evaluate(&b)
                .unwrap()
                .into_array(b.num_rows())
                .unwrap();
            let mask = mask.as_any().downcast_ref::<BooleanArray>().unwrap();
            let want = filter_record_batch(&b, mask).unwrap();
            let got = filter(b.clone(), &whole).unwrap();
            assert_eq!(got, want, "{whole}");
            assert!(
                got.num_rows() > 0 || conjuncts.len() > 2,
                "{whole} keeps rows"
            );
        }
    }

    #[test]
    fn plain_is_comparisons_of_columns_and_literals() {
        let b = batch();
        let sch = b.schema();
        let a = col("a", &sch).unwrap();
        let one = lit(ScalarValue::Int64(Some(1)));
        assert!(is_plain(bin(a.clone(), Operator::Lt, one.clone()).as_ref()));
        assert!(is_plain(&IsNullExpr::new(a.clone())));
        let sum = bin(a.clone(), Operator::Plus, one.clone());
        assert!(!is_plain(bin(sum, Operator::Lt, one.clone()).as_ref()));
        assert!(!is_plain(bin(a, Operator::LikeMatch, one).as_ref()));
    }
}
