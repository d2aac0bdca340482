//! Where MJoin goes in a query: the logical plan, after DataFusion's
//! optimizer, rewritten so that every tree of inner joins with a cold table
//! among its inputs — and every scan of a cold table outside such a tree —
//! becomes one [`MJoinNode`].
//!
//! A tree is collected through inner equi-joins (and column-only projections
//! between them); its leaves are whatever is below. The join's equality keys
//! become MJoin's edges when each side's expression reads one leaf; join
//! filters (and keys that read several leaves) become a filter above MJoin —
//! for inner joins that is the same thing. Above it, a projection restores
//! the tree's own columns, so nothing above notices. Outer, semi and anti
//! joins are not distributive over a split of their inputs into objects, so
//! they stay DataFusion's; the cold scans below them get MJoins of their own.
//!
//! A leaf is a *cold relation* when it is a chain of filters, projections
//! and aliases over a scan of a cold strata table without a LIMIT: MJoin
//! reads it object by object. Any other leaf (a local table, a subquery, an
//! aggregate) is *pinned*: run once, whole, and held for every subplan.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema, DFSchemaRef, NullEquality, Result};
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::{
    Expr, Filter, JoinType, LogicalPlan, Projection, TableScan, UserDefinedLogicalNodeCore,
    utils::conjunction,
};

use crate::scan::provider::StrataTable;

/// An equality between key expressions of two leaves.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd)]
pub struct NodeEdge {
    pub a: usize,
    pub ka: Vec<Expr>,
    pub b: usize,
    pub kb: Vec<Expr>,
}

/// The logical MJoin: the inner join of its inputs on its edges, its schema
/// the inputs' columns one after the other.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MJoinNode {
    pub leaves: Vec<LogicalPlan>,
    pub edges: Vec<NodeEdge>,
    /// Per leaf: the cold table it reads, or `None` (pinned).
    pub tables: Vec<Option<String>>,
    pub schema: DFSchemaRef,
}

impl PartialOrd for MJoinNode {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        match self.leaves.partial_cmp(&other.leaves) {
            Some(Ordering::Equal) => self.edges.partial_cmp(&other.edges),
            o => o,
        }
    }
}

impl UserDefinedLogicalNodeCore for MJoinNode {
    fn name(&self) -> &str {
        "MJoin"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        self.leaves.iter().collect()
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        Vec::new()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "MJoin: relations=[{}]", describe(&self.tables))?;
        for e in &self.edges {
            for (x, y) in e.ka.iter().zip(&e.kb) {
                write!(f, ", {x} = {y}")?;
            }
        }
        Ok(())
    }

    fn with_exprs_and_inputs(&self, _exprs: Vec<Expr>, inputs: Vec<LogicalPlan>) -> Result<Self> {
        Ok(MJoinNode {
            leaves: inputs,
            ..self.clone()
        })
    }
}

/// `orders (cold), <pinned>`, for EXPLAIN.
pub fn describe(tables: &[Option<String>]) -> String {
    tables
        .iter()
        .map(|t| match t {
            Some(t) => format!("{t} (cold)"),
            None => "pinned".to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The cold strata table a leaf reads object by object, if it is a cold
/// relation (see the module docs).
pub fn cold_relation(plan: &LogicalPlan) -> Option<String> {
    // A subquery in a filter or projection would run once per object.
    let subquery = plan.expressions().iter().any(|e| {
        e.exists(|x| {
            Ok(matches!(
                x,
                Expr::ScalarSubquery(_) | Expr::InSubquery(_) | Expr::Exists(_)
            ))
        })
        .unwrap_or(true)
    });
    if subquery {
        return None;
    }
    match plan {
        LogicalPlan::TableScan(ts) => cold_scan(ts),
        LogicalPlan::Filter(f) => cold_relation(&f.input),
        LogicalPlan::Projection(p) => cold_relation(&p.input),
        LogicalPlan::SubqueryAlias(a) => cold_relation(&a.input),
        _ => None,
    }
}

fn cold_scan(ts: &TableScan) -> Option<String> {
    if ts.fetch.is_some() {
        return None;
    }
    let provider = source_as_provider(&ts.source).ok()?;
    let t = provider.downcast_ref::<StrataTable>()?;
    t.is_cold().then(|| t.name().to_string())
}

/// An inner join tree: leaves, equalities, filters.
#[derive(Default)]
struct Tree {
    leaves: Vec<LogicalPlan>,
    on: Vec<(Expr, Expr)>,
    filters: Vec<Expr>,
}

fn is_inner_join(plan: &LogicalPlan) -> bool {
    matches!(plan, LogicalPlan::Join(j)
        if j.join_type == JoinType::Inner && j.null_equality == NullEquality::NullEqualsNothing)
}

fn collect(plan: &LogicalPlan, tree: &mut Tree) {
    match plan {
        LogicalPlan::Join(j) if is_inner_join(plan) => {
            collect(&j.left, tree);
            collect(&j.right, tree);
            tree.on.extend(j.on.iter().cloned());
            tree.filters.extend(j.filter.iter().cloned());
        }
        LogicalPlan::Projection(p)
            if is_inner_join(&p.input) && p.expr.iter().all(|e| matches!(e, Expr::Column(_))) =>
        {
            collect(&p.input, tree)
        }
        _ => tree.leaves.push(plan.clone()),
    }
}

/// `plan` with MJoin wherever it applies (see the module docs).
pub fn rewrite(plan: &LogicalPlan) -> Result<LogicalPlan> {
    if is_inner_join(plan) {
        let mut tree = Tree::default();
        collect(plan, &mut tree);
        if tree.leaves.iter().any(|l| cold_relation(l).is_some())
            && let Some(p) = build(plan, tree)?
        {
            return Ok(p);
        }
    } else if cold_relation(plan).is_some() {
        let tree = Tree {
            leaves: vec![plan.clone()],
            ..Tree::default()
        };
        if let Some(p) = build(plan, tree)? {
            return Ok(p);
        }
    }
    // The rewrite keeps every schema, so the node itself is kept as is.
    Ok(plan
        .clone()
        .map_children(|c| Ok(Transformed::yes(rewrite(&c)?)))?
        .data)
}

/// The leaf reading every column of `e`, if one does.
fn leaf_of(e: &Expr, leaves: &[LogicalPlan]) -> Option<usize> {
    let cols: Vec<&Column> = e.column_refs().into_iter().collect();
    if cols.is_empty() {
        return None;
    }
    let mut found = None;
    for c in cols {
        let l = leaves.iter().position(|l| l.schema().has_column(c))?;
        if found.is_some_and(|f| f != l) {
            return None;
        }
        found = Some(l);
    }
    found
}

/// Projection(Filter?(MJoin(leaves))) standing for `original`, or `None`
/// when the leaves' columns cannot be told apart.
fn build(original: &LogicalPlan, tree: Tree) -> Result<Option<LogicalPlan>> {
    let leaves: Vec<LogicalPlan> = tree
        .leaves
        .iter()
        .map(|l| {
            if cold_relation(l).is_some() {
                Ok(l.clone())
            } else {
                rewrite(l)
            }
        })
        .collect::<Result<_>>()?;
    let mut schema: DFSchema = leaves[0].schema().as_ref().clone();
    for l in &leaves[1..] {
        match schema.join(l.schema()) {
            Ok(s) => schema = s,
            Err(_) => return Ok(None),
        }
    }
    let mut filters = tree.filters;
    let mut edges: Vec<NodeEdge> = Vec::new();
    for (x, y) in tree.on {
        match (leaf_of(&x, &leaves), leaf_of(&y, &leaves)) {
            (Some(a), Some(b)) if a != b => {
                match edges
                    .iter_mut()
                    .find(|e| (e.a, e.b) == (a, b) || (e.a, e.b) == (b, a))
                {
                    Some(e) if e.a == a => {
                        e.ka.push(x);
                        e.kb.push(y);
                    }
                    Some(e) => {
                        e.ka.push(y);
                        e.kb.push(x);
                    }
                    None => edges.push(NodeEdge {
                        a,
                        ka: vec![x],
                        b,
                        kb: vec![y],
                    }),
                }
            }
            _ => filters.push(x.eq(y)),
        }
    }
    let tables = leaves.iter().map(cold_relation).collect();
    let node = MJoinNode {
        leaves,
        edges,
        tables,
        schema: Arc::new(schema),
    };
    let mut plan = LogicalPlan::Extension(datafusion::logical_expr::Extension {
        node: Arc::new(node),
    });
    if let Some(f) = conjunction(filters) {
        plan = LogicalPlan::Filter(Filter::try_new(f, Arc::new(plan))?);
    }
    let columns: Vec<Expr> = original
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    let projected = LogicalPlan::Projection(Projection::try_new(columns, Arc::new(plan))?);
    if projected.schema().fields() != original.schema().fields() {
        return Ok(None);
    }
    Ok(Some(projected))
}
