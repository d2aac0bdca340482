//! Point queries' plans kept by statement shape.
//!
//! The parse cache ([`crate::parse_cache`]) gives a point query of a shape
//! seen before its syntax tree without parsing, but the plan was still made
//! each time: DataFusion's logical expression for the WHERE, its type
//! coercion and strata's rewrites, then the comparisons on the stored bytes
//! ([`super::direct_select`]). For pgbench's `SELECT abalance FROM
//! pgbench_accounts WHERE aid = 42` that was a quarter of the statement's
//! instructions, and copying the cached tree with new literals another
//! eighth, for a plan that differs from the last one only in the value it
//! compares with.
//!
//! So when a point query's plan is made, this module also reads its WHERE
//! itself: a conjunction of `column op literal` (or `literal op column`),
//! every literal an integer for an integer column or a string for a
//! character column. When what it reads is exactly the plan's comparisons
//! (same columns, operators and values, in order) and the statement's
//! literals are all in the WHERE, the plan is kept under the statement's
//! shape. A later statement of that shape is planned by putting its own
//! literals into the kept comparisons, each converted to its column's type;
//! a literal that is not exactly a value of that type (an integer out of
//! the column's range, a string with trailing spaces, which CHAR compares
//! without) leaves the statement to the usual path, which answers it. A
//! comparison of a column with a value of its own type means the same
//! whatever the value, so the kept plan answers every statement of the
//! shape as a fresh plan would.
//!
//! A kept plan is used only under the session settings it was made with
//! (`SET` of the dialect, `strata.direct_dml` or the access path makes new
//! plans), while the catalog is as it was (any DDL or ANALYZE anywhere
//! empties the cache) and while the table's name still opens the same table
//! object.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::execution::SessionState;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, SetExpr, Statement, UnaryOperator, Value as AstValue,
};
use strata_access::predicate::{CmpOp, Comparison};
use strata_storage::row::{DataType, Value};

use super::direct_dml::ident_name;
use super::direct_select::DirectSelect;
use super::kept_plans::ByShape;
use super::txn::Writes;
use crate::options::{AccessPathSetting, StrataOptions};
use crate::parse_cache::{Literal, Shape};
use crate::scan::pushdown::flip;

/// Point queries this process planned from a kept plan (tests assert it).
pub static HITS: AtomicU64 = AtomicU64::new(0);

/// Where a kept comparison's value comes from: the statement's literal at
/// `slot`, negated or not.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Slot {
    slot: usize,
    negative: bool,
}

/// What of a session's settings a point plan depends on: whether the
/// session plans point queries itself, its access path and its dialect.
#[derive(Clone, Debug, PartialEq)]
struct Depends {
    direct: bool,
    access: Option<AccessPathSetting>,
    dialect: String,
}

impl Depends {
    fn of(state: &SessionState) -> Depends {
        let options = state.config().options();
        let strata = options.extensions.get::<StrataOptions>();
        Depends {
            direct: strata.is_none_or(|o| o.direct_dml),
            access: strata.map(|o| o.access_path),
            dialect: options.sql_parser.dialect.to_string(),
        }
    }
}

/// A plan kept for a shape.
struct Kept {
    /// The latest session settings version it is known to hold under.
    settings: AtomicU64,
    /// The settings it was made under.
    depends: Depends,
    /// The table's name as the statement resolved it.
    name: String,
    plan: DirectSelect,
    /// One per comparison of `plan`, in order.
    slots: Vec<Slot>,
}

/// A session's point plans by shape.
#[derive(Default)]
pub struct PointPlans {
    kept: ByShape<Kept>,
}

impl PointPlans {
    /// The plan of a statement of `shape` from a kept one, when it holds
    /// under the session's settings version `settings` and catalog version
    /// `saves`; `None` when there is none or a literal of the statement is
    /// not a value of its column's type. Most statements a session runs
    /// through DataFusion bump its settings version (any may be a `SET`);
    /// given the session's `state`, a plan made under an older version is
    /// taken when the settings it depends on are still the same.
    pub fn plan(
        &self,
        shape: &Shape,
        settings: u64,
        saves: u64,
        writes: &Writes,
        state: Option<&SessionState>,
    ) -> Option<DirectSelect> {
        let kept = self.kept.get(saves, &shape.key)?;
        if kept.settings.load(Ordering::Acquire) != settings {
            if state.is_none_or(|s| Depends::of(s) != kept.depends) {
                return None;
            }
            kept.settings.store(settings, Ordering::Release);
        }
        // The name may open another table object (a table reopened).
        let table = writes.database().table(&kept.name).ok()?;
        if !Arc::ptr_eq(&table, kept.plan.table()) {
            return None;
        }
        let mut conjuncts = Vec::with_capacity(kept.slots.len());
        for (c, s) in kept.plan.conjuncts().iter().zip(&kept.slots) {
            let value = value_of(
                shape.literals.get(s.slot)?,
                s.negative,
                &table.schema().columns[c.column].ty,
            )?;
            conjuncts.push(Comparison {
                column: c.column,
                op: c.op,
                value,
            });
        }
        HITS.fetch_add(1, Ordering::Relaxed);
        Some(kept.plan.with_conjuncts(conjuncts))
    }

    /// Keeps `plan`, made for `stmt` (of `shape`) under `settings` at
    /// catalog version `saves`, when its comparisons are what the WHERE
    /// reads as by the rules above.
    pub fn learn(
        &self,
        stmt: &DfStatement,
        shape: &Shape,
        plan: &DirectSelect,
        state: &SessionState,
        settings: u64,
        saves: u64,
    ) {
        let Some(slots) = slots(stmt, shape, plan) else {
            return;
        };
        let kept = Kept {
            settings: AtomicU64::new(settings),
            depends: Depends::of(state),
            name: plan.table_name().to_string(),
            plan: plan.clone(),
            slots,
        };
        self.kept.insert(saves, &shape.key, kept);
    }
}

/// The literal as a value of a column of type `ty`, when it is exactly one:
/// an integer for INT or BIGINT in range, a string without trailing spaces
/// for CHAR or VARCHAR.
fn value_of(literal: &Literal, negative: bool, ty: &DataType) -> Option<Value> {
    match (literal, ty) {
        (Literal::Number(n), DataType::Int32 | DataType::Int64) => {
            if !n.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let v: i128 = n.parse().ok()?;
            let v = if negative { -v } else { v };
            match ty {
                DataType::Int32 => i32::try_from(v).ok().map(Value::Int32),
                _ => i64::try_from(v).ok().map(Value::Int64),
            }
        }
        (Literal::Text(s), DataType::Char { .. } | DataType::Varchar { .. }) if !negative => {
            (!s.ends_with(' ')).then(|| Value::Str(s.clone()))
        }
        _ => None,
    }
}

/// The slot of each of `plan`'s comparisons, when the WHERE of `stmt` reads
/// as exactly those comparisons and holds every literal of `shape`.
fn slots(stmt: &DfStatement, shape: &Shape, plan: &DirectSelect) -> Option<Vec<Slot>> {
    let DfStatement::Statement(s) = stmt else {
        return None;
    };
    let Statement::Query(q) = s.as_ref() else {
        return None;
    };
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return None;
    };
    let mut leaves = Vec::new();
    comparisons(sel.selection.as_ref()?, &mut leaves)?;
    let conjuncts = plan.conjuncts();
    if leaves.len() != conjuncts.len() || leaves.len() != shape.literals.len() {
        return None;
    }
    let schema = plan.table().schema();
    let mut slots = Vec::with_capacity(leaves.len());
    for (slot, (leaf, c)) in leaves.iter().zip(conjuncts).enumerate() {
        let column = schema.index_of(&leaf.column)?;
        let literal = &shape.literals[slot];
        if column != c.column || leaf.op != c.op || *literal != leaf.literal {
            return None;
        }
        let value = value_of(literal, leaf.negative, &schema.columns[column].ty)?;
        if value != c.value {
            return None;
        }
        slots.push(Slot {
            slot,
            negative: leaf.negative,
        });
    }
    Some(slots)
}

/// A comparison of a column with a literal as the syntax tree has it.
struct Leaf {
    column: String,
    op: CmpOp,
    literal: Literal,
    negative: bool,
}

/// The comparisons of a conjunction, left to right (the text's order);
/// `None` when any part is something else.
fn comparisons(e: &Expr, out: &mut Vec<Leaf>) -> Option<()> {
    match e {
        Expr::Nested(e) => comparisons(e, out),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            comparisons(left, out)?;
            comparisons(right, out)
        }
        Expr::BinaryOp { left, op, right } => {
            let op = match op {
                BinaryOperator::Eq => CmpOp::Eq,
                BinaryOperator::NotEq => CmpOp::Ne,
                BinaryOperator::Lt => CmpOp::Lt,
                BinaryOperator::LtEq => CmpOp::Le,
                BinaryOperator::Gt => CmpOp::Gt,
                BinaryOperator::GtEq => CmpOp::Ge,
                _ => return None,
            };
            let leaf = match (left.as_ref(), right.as_ref()) {
                (Expr::Identifier(i), l) => {
                    let (literal, negative) = literal(l)?;
                    Leaf {
                        column: ident_name(i),
                        op,
                        literal,
                        negative,
                    }
                }
                (l, Expr::Identifier(i)) => {
                    let (literal, negative) = literal(l)?;
                    Leaf {
                        column: ident_name(i),
                        op: flip(op),
                        literal,
                        negative,
                    }
                }
                _ => return None,
            };
            out.push(leaf);
            Some(())
        }
        _ => None,
    }
}

/// A number (negated or not) or a plain string, as the shape's lexer lifts
/// them out.
fn literal(e: &Expr) -> Option<(Literal, bool)> {
    match e {
        Expr::Value(v) => match &v.value {
            AstValue::Number(n, false) => Some((Literal::Number(n.clone()), false)),
            AstValue::SingleQuotedString(s) => Some((Literal::Text(s.clone()), false)),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                AstValue::Number(n, false) => Some((Literal::Number(n.clone()), true)),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}
