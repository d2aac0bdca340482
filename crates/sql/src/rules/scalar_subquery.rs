//! A scalar subquery that finds no row is NULL, whatever its column.
//!
//! DataFusion 55 gives `(SELECT id FROM n)` the nullability of `n.id`; when
//! `id` is NOT NULL and `n` has no row, the value is NULL all the same, and
//! the batch that carries it failed arrow's check ("Column 'id' is declared
//! as non-nullable but contains null values") where PostgreSQL and DuckDB
//! answer NULL. Found by the `.slt` tests of issue 55.
//!
//! [`NullableScalarSubquery`] is an analyzer rule: a scalar subquery whose
//! one column is NOT NULL gets a projection on top that passes the value
//! through [`nullable`], a function that returns its argument as a nullable
//! column (and prints as it, so names do not change).

use std::sync::{Arc, LazyLock};

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder, ScalarUDF, Subquery};
use datafusion::optimizer::AnalyzerRule;

use super::transparent::{self, Nulls};

/// The analyzer rule (see the module docs).
#[derive(Debug, Default)]
pub struct NullableScalarSubquery;

impl AnalyzerRule for NullableScalarSubquery {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| {
            let t = plan.map_expressions(|e| {
                e.transform_up(|e| match e {
                    Expr::ScalarSubquery(sq) if not_null(&sq) => Ok(Transformed::yes(
                        Expr::ScalarSubquery(nullable_subquery(sq)?),
                    )),
                    e => Ok(Transformed::no(e)),
                })
            })?;
            if t.transformed {
                t.map_data(|p| p.recompute_schema())
            } else {
                Ok(t)
            }
        })
        .data()
    }

    fn name(&self) -> &str {
        "strata_nullable_scalar_subquery"
    }
}

fn not_null(sq: &Subquery) -> bool {
    let fields = sq.subquery.schema().fields();
    fields.len() == 1 && !fields[0].is_nullable()
}

/// `sq` with its column passed through [`nullable`].
fn nullable_subquery(sq: Subquery) -> Result<Subquery> {
    let plan = sq.subquery.as_ref().clone();
    let (qualifier, field) = plan.schema().qualified_field(0);
    let column = Expr::Column(datafusion::common::Column::new(
        qualifier.cloned(),
        field.name(),
    ));
    let value = Expr::ScalarFunction(ScalarFunction::new_udf(nullable(), vec![column]))
        .alias_qualified(qualifier.cloned(), field.name());
    let plan = LogicalPlanBuilder::from(plan)
        .project(vec![value])?
        .build()?;
    Ok(Subquery {
        subquery: Arc::new(plan),
        ..sq
    })
}

const NAME: &str = "strata_nullable";

static NULLABLE: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| {
    Arc::new(transparent::udf(
        NAME,
        Nulls::Possible,
        transparent::identity,
    ))
});

/// The function that returns its argument as a nullable column.
pub fn nullable() -> Arc<ScalarUDF> {
    NULLABLE.clone()
}
