//! Skipper's out-of-order execution over a cold storage device (§4.1–4.3):
//! queries over tables on the cold tier run through MJoin, which asks the
//! device for every object a query needs at once and joins them in whatever
//! order they arrive.
//!
//! * [`rewrite`] puts MJoin in the optimized logical plan (inner join trees
//!   and scans over cold tables);
//! * [`exec`] is the state manager of Algorithm 1 (requests, arrivals, cache,
//!   reissues, pruning), [`subplans`] its bookkeeping and eviction policies,
//!   [`join`] the n-ary join operator, [`object_scan`] the decoding of one
//!   object, [`column_objects`] the objects of a columnar table (its row
//!   groups' chunks of the columns a query reads, and its delta's pages);
//! * the client proxy is `strata_cold::proxy`.
//!
//! [`SkipperPlanner`] is the session's query planner: with `strata.skipper`
//! on (the default) it rewrites the plan, then plans it with DataFusion's
//! planner extended by MJoin; off, queries over cold tables pull objects in
//! plan order through the cold tier's cache — the baseline of §3.2.

pub mod column_objects;
pub mod exec;
pub mod join;
pub mod object_scan;
pub mod rewrite;
pub mod subplans;

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{LogicalPlan, UserDefinedLogicalNode};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};
use strata_storage::Database;

use crate::options::StrataOptions;
use exec::MJoinExec;
use join::Edge;
use rewrite::MJoinNode;

/// The session's query planner (see the module docs).
pub struct SkipperPlanner {
    db: Arc<Database>,
}

impl std::fmt::Debug for SkipperPlanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SkipperPlanner")
    }
}

impl SkipperPlanner {
    pub fn new(db: Arc<Database>) -> SkipperPlanner {
        SkipperPlanner { db }
    }
}

fn settings(session: &dyn datafusion::catalog::Session) -> StrataOptions {
    session
        .config_options()
        .extensions
        .get::<StrataOptions>()
        .cloned()
        .unwrap_or_default()
}

#[async_trait]
impl QueryPlanner for SkipperPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn datafusion::catalog::Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let settings = settings(session);
        let planner = DefaultPhysicalPlanner::with_extension_planners(vec![
            Arc::new(MJoinPlanner {
                db: self.db.clone(),
                settings: settings.clone(),
            }),
            Arc::new(crate::shared_result::SharedPlanner::default()),
        ]);
        let plan = if settings.skipper && self.db.cold_tier().is_some() {
            rewrite::rewrite(logical_plan)?
        } else {
            logical_plan.clone()
        };
        // An aggregate a statement names twice (a CTE read twice) is
        // computed once (`crate::shared_result`).
        let plan = crate::shared_result::rewrite(&plan)?;
        planner.create_physical_plan(&plan, session).await
    }
}

/// Plans [`MJoinNode`]s as [`MJoinExec`]s.
struct MJoinPlanner {
    db: Arc<Database>,
    settings: StrataOptions,
}

#[async_trait]
impl ExtensionPlanner for MJoinPlanner {
    async fn plan_extension(
        &self,
        planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn datafusion::catalog::Session,
        planning_ctx: &PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(node) = node.as_any().downcast_ref::<MJoinNode>() else {
            return Ok(None);
        };
        if logical_inputs.len() != node.leaves.len() {
            return Err(DataFusionError::Internal(
                "MJoin: inputs do not match its leaves".into(),
            ));
        }
        let mut keys = vec![Vec::new(); node.leaves.len()];
        let mut edges = Vec::new();
        for e in &node.edges {
            let phys = |leaf: usize, exprs: &[datafusion::logical_expr::Expr]| {
                exprs
                    .iter()
                    .map(|x| {
                        planner.create_physical_expr(
                            x,
                            logical_inputs[leaf].schema(),
                            session,
                            planning_ctx,
                        )
                    })
                    .collect::<Result<Vec<_>>>()
            };
            let (ka, kb) = (phys(e.a, &e.ka)?, phys(e.b, &e.kb)?);
            keys[e.a].push(ka);
            keys[e.b].push(kb);
            edges.push(Edge {
                a: e.a,
                ka: keys[e.a].len() - 1,
                b: e.b,
                kb: keys[e.b].len() - 1,
            });
        }
        Ok(Some(Arc::new(MJoinExec::new(
            Arc::new(node.schema.as_arrow().clone()),
            physical_inputs.to_vec(),
            keys,
            edges,
            node.tables.clone(),
            self.db.clone(),
            self.settings.clone(),
        )?)))
    }
}

/// Installs the planner in `state`.
pub fn with_planner(state: SessionState, db: Arc<Database>) -> SessionState {
    datafusion::execution::session_state::SessionStateBuilder::new_from_existing(state)
        .with_query_planner(Arc::new(SkipperPlanner::new(db)))
        .build()
}
