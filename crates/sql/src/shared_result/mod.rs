//! A result computed once and read by every part of a plan that needs it.
//!
//! DataFusion plans a common table expression by copying its plan into
//! every place that names it, so TPC-H Q15's `revenue0` (an aggregate over
//! a quarter of `lineitem`) is computed twice, two full scans of `lineitem`:
//! once for `max(total_revenue)` and once to join with `supplier`.
//! PostgreSQL computes such a CTE once. Here, after DataFusion's logical
//! optimizer, [`rewrite`] finds aggregates that occur more than once in a
//! statement (in the plan or in its subqueries), identical in every
//! expression and input, and wraps each occurrence in a [`SharedNode`] with
//! the same id; the planner ([`SharedPlanner`]) makes every occurrence one
//! [`SharedResultExec`] over a single physical plan of the aggregate, whose
//! batches the first reader computes and the others read from memory.
//!
//! Only aggregates are shared: their output is small next to what they read
//! (a CTE that repeats a whole scan would have to be kept whole in memory,
//! which costs more than a second scan). The memory a shared result keeps
//! is reserved from the statement's memory pool. The result is computed in
//! the task of the reader that asks first, so cancelling that statement
//! stops it as it stops any operator.

mod exec;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::tree_node::{Transformed, TreeNodeRecursion};
use datafusion::common::{DFSchemaRef, DataFusionError, Result};
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{
    Extension, LogicalPlan, UserDefinedLogicalNode, UserDefinedLogicalNodeCore,
};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};
use parking_lot::Mutex;

use exec::Shared;
pub use exec::SharedResultExec;

/// One occurrence of a shared result: `input`, identical in every occurrence
/// with the same `id`, read `readers` times in the statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd)]
pub struct SharedNode {
    pub id: usize,
    pub readers: usize,
    pub input: LogicalPlan,
}

impl UserDefinedLogicalNodeCore for SharedNode {
    fn name(&self) -> &str {
        "SharedResult"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }

    fn schema(&self) -> &DFSchemaRef {
        self.input.schema()
    }

    fn expressions(&self) -> Vec<datafusion::logical_expr::Expr> {
        Vec::new()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "SharedResult: id={}, computed once for {} readers",
            self.id, self.readers
        )
    }

    fn with_exprs_and_inputs(
        &self,
        _exprs: Vec<datafusion::logical_expr::Expr>,
        mut inputs: Vec<LogicalPlan>,
    ) -> Result<Self> {
        if inputs.len() != 1 {
            return Err(DataFusionError::Internal(format!(
                "SharedResult has one input, given {}",
                inputs.len()
            )));
        }
        Ok(SharedNode {
            input: inputs.remove(0),
            ..self.clone()
        })
    }
}

/// Whether `plan` may be computed once for all its occurrences: it reads a
/// table somewhere below it, and nothing in it differs from one evaluation
/// to the next (a volatile function such as `random()`, a reference to an
/// outer query's row).
fn shareable(plan: &LogicalPlan) -> bool {
    let mut reads = false;
    let mut varies = plan.contains_outer_reference();
    let _ = plan.apply_with_subqueries(|p| {
        reads |= matches!(p, LogicalPlan::TableScan(_));
        varies |= p.expressions().iter().any(|e| e.is_volatile());
        Ok(if varies {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    reads && !varies
}

/// `plan` with every aggregate that occurs more than once (over a table)
/// wrapped in a [`SharedNode`]; unchanged when none does.
pub fn rewrite(plan: &LogicalPlan) -> Result<LogicalPlan> {
    let mut counts: HashMap<LogicalPlan, usize> = HashMap::new();
    plan.apply_with_subqueries(|p| {
        if matches!(p, LogicalPlan::Aggregate(_)) && shareable(p) {
            *counts.entry(p.clone()).or_default() += 1;
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    let mut repeated: Vec<(LogicalPlan, usize)> =
        counts.into_iter().filter(|(_, n)| *n > 1).collect();
    if repeated.is_empty() {
        return Ok(plan.clone());
    }
    // Ids in a fixed order (EXPLAIN shows them): by the aggregates' text.
    repeated.sort_by_cached_key(|(p, _)| p.display_indent().to_string());
    let ids: HashMap<LogicalPlan, (usize, usize)> = repeated
        .into_iter()
        .enumerate()
        .map(|(id, (p, n))| (p, (id, n)))
        .collect();
    // Top down: an occurrence is wrapped and not looked into, so an aggregate
    // repeated inside a shared one is computed once with it.
    let rewritten = plan.clone().transform_down_with_subqueries(|p| {
        if let Some((id, readers)) = ids.get(&p) {
            let node = SharedNode {
                id: *id,
                readers: *readers,
                input: p,
            };
            return Ok(Transformed::new(
                LogicalPlan::Extension(Extension {
                    node: Arc::new(node),
                }),
                true,
                TreeNodeRecursion::Jump,
            ));
        }
        Ok(Transformed::no(p))
    })?;
    Ok(rewritten.data)
}

/// Plans every occurrence of a shared result as a [`SharedResultExec`] over
/// the one physical plan made for its id. One planner per statement.
#[derive(Default)]
pub struct SharedPlanner {
    planned: Mutex<HashMap<usize, Arc<Shared>>>,
}

#[async_trait]
impl ExtensionPlanner for SharedPlanner {
    async fn plan_extension(
        &self,
        _planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        _logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn datafusion::catalog::Session,
        _planning_ctx: &PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(node) = node.as_any().downcast_ref::<SharedNode>() else {
            return Ok(None);
        };
        let [input] = physical_inputs else {
            return Err(DataFusionError::Internal(
                "SharedResult has one input".into(),
            ));
        };
        let existing = self.planned.lock().get(&node.id).cloned();
        let shared = match existing {
            Some(s) => s,
            None => {
                // The readers see a leaf: DataFusion's physical optimizer
                // would rewrite each occurrence's copy of the input on its
                // own, so the one input is optimized here, whole.
                let optimized = DefaultPhysicalPlanner::default().optimize_physical_plan(
                    input.clone(),
                    session,
                    |_, _| {},
                )?;
                let s = Arc::new(Shared::new(node.id, node.readers, optimized));
                self.planned.lock().entry(node.id).or_insert(s).clone()
            }
        };
        Ok(Some(Arc::new(SharedResultExec::new(shared))))
    }
}
