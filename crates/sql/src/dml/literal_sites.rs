//! Where a planned write's literals sit in its expressions, and the same
//! expressions with other literals put there.
//!
//! A write plan ([`super::write_plans`]) made for `UPDATE t SET v = v + -5
//! WHERE k = 42` serves `… + -7 WHERE k = 9` once each literal of the
//! statement's text is known to be one *site*, a literal node of the
//! planned expressions. The sites are found in each expression's visiting
//! order (left to right: only leaves are sites, so pre- and post-order
//! agree), and [`bind`] accepts them only when they are exactly the
//! statement's literals in text order, each typed as DataFusion's SQL
//! planner types a literal: an integer that fits a BIGINT as `Int64` (a
//! minus before it folded in), a string as `Utf8`. Every literal must also
//! hold a value no other one holds, so that a rewrite that moved literals
//! about cannot pass for one that kept them in place, and none may be 0,
//! whose sign cannot tell whether the text negated it.
//!
//! What the check rests on: between the text and these nodes, DataFusion's
//! type coercion and strata's rewrites (`crate::rules`) look at types, not
//! values, and the expressions kept here were not simplified
//! ([`super::filter::runs_unsimplified`]), so no constant was folded from a
//! literal. A literal that would be typed otherwise (a fraction, a number
//! past BIGINT's range) or that CHAR compares differently (trailing spaces)
//! has no value here ([`scalar_of`]), and the statement is planned anew.

use std::sync::Arc;

use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Literal as PhysicalLiteral;

use crate::parse_cache::Literal;

/// `literal` (negated when `negative`) as DataFusion's SQL planner types it,
/// when that type is one a kept plan can take: `Int64` for an integer within
/// BIGINT's range, `Utf8` for a string without trailing spaces.
pub(crate) fn scalar_of(literal: &Literal, negative: bool) -> Option<ScalarValue> {
    match literal {
        Literal::Number(n) => {
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let v: i128 = n.parse().ok()?;
            let v = if negative { -v } else { v };
            i64::try_from(v).ok().map(|v| ScalarValue::Int64(Some(v)))
        }
        Literal::Text(s) if !negative && !s.ends_with(' ') => {
            Some(ScalarValue::Utf8(Some(s.clone())))
        }
        Literal::Text(_) => None,
    }
}

/// How each literal of a statement of one shape reaches its site: negated
/// or not (`-5` is one literal node, `Int64(-5)`, where the text has `5`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Binding {
    negated: Vec<bool>,
}

/// The binding of `literals` (the statement's, in text order) to `sites`
/// (its plan's, in visiting order), when each site is its literal by the
/// rules of this module's header.
pub(crate) fn bind(sites: &[ScalarValue], literals: &[Literal]) -> Option<Binding> {
    if sites.len() != literals.len() {
        return None;
    }
    let mut negated = Vec::with_capacity(sites.len());
    for (site, literal) in sites.iter().zip(literals) {
        let plain = scalar_of(literal, false);
        let minus = scalar_of(literal, true);
        negated.push(
            if plain.as_ref() == Some(site) && minus.as_ref() != Some(site) {
                false
            } else if minus.as_ref() == Some(site) && plain.as_ref() != Some(site) {
                true
            } else {
                return None;
            },
        );
    }
    let distinct = sites
        .iter()
        .enumerate()
        .all(|(i, s)| sites[..i].iter().all(|t| t != s));
    distinct.then_some(Binding { negated })
}

impl Binding {
    /// The values of another statement's literals at the sites, when each
    /// is typed as the one it replaces was.
    pub(crate) fn values(&self, literals: &[Literal]) -> Option<Vec<ScalarValue>> {
        if literals.len() != self.negated.len() {
            return None;
        }
        literals
            .iter()
            .zip(&self.negated)
            .map(|(l, &negative)| scalar_of(l, negative))
            .collect()
    }
}

/// Appends the literal nodes of `e` in visiting order.
pub(crate) fn logical_sites(e: &Expr, out: &mut Vec<ScalarValue>) {
    let _ = e.apply(|n| {
        if let Expr::Literal(v, _) = n {
            out.push(v.clone());
        }
        Ok(TreeNodeRecursion::Continue)
    });
}

/// Appends the literal nodes of `e` in visiting order; `None` when one
/// carries field metadata, which a replacement would not keep.
fn physical_sites(e: &Arc<dyn PhysicalExpr>, out: &mut Vec<ScalarValue>) -> Option<()> {
    let mut plain = true;
    let _ = e.apply(|n| {
        if let Some(l) = n.downcast_ref::<PhysicalLiteral>() {
            plain &= *l == PhysicalLiteral::new(l.value().clone());
            out.push(l.value().clone());
        }
        Ok(TreeNodeRecursion::Continue)
    });
    plain.then_some(())
}

/// `e` with its literal nodes replaced, in visiting order, by the first
/// values of `values`, which it advances past them; `None` when too few.
pub(crate) fn logical_with(e: &Expr, values: &mut &[ScalarValue]) -> Option<Expr> {
    let mut short = false;
    let e = e
        .clone()
        .transform_up(|n| match n {
            Expr::Literal(_, metadata) => match values.split_first() {
                Some((v, rest)) => {
                    *values = rest;
                    Ok(Transformed::yes(Expr::Literal(v.clone(), metadata)))
                }
                None => {
                    short = true;
                    Ok(Transformed::no(Expr::Literal(ScalarValue::Null, metadata)))
                }
            },
            n => Ok(Transformed::no(n)),
        })
        .ok()?
        .data;
    (!short).then_some(e)
}

/// [`logical_with`] for a physical expression.
fn physical_with(
    e: &Arc<dyn PhysicalExpr>,
    values: &mut &[ScalarValue],
) -> Option<Arc<dyn PhysicalExpr>> {
    let mut short = false;
    let e = Arc::clone(e)
        .transform_up(|n| {
            if n.is::<PhysicalLiteral>() {
                return Ok(match values.split_first() {
                    Some((v, rest)) => {
                        *values = rest;
                        Transformed::yes(Arc::new(PhysicalLiteral::new(v.clone())) as _)
                    }
                    None => {
                        short = true;
                        Transformed::no(n)
                    }
                });
            }
            Ok(Transformed::no(n))
        })
        .ok()?
        .data;
    (!short).then_some(e)
}

/// Appends the literal nodes of `logical` (in order) when `physical`, the
/// expression made from them, has the same ones; `None` otherwise.
pub(crate) fn paired_sites(
    logical: &[Expr],
    physical: &Arc<dyn PhysicalExpr>,
    out: &mut Vec<ScalarValue>,
) -> Option<()> {
    let mut l = Vec::new();
    for e in logical {
        logical_sites(e, &mut l);
    }
    let mut p = Vec::new();
    physical_sites(physical, &mut p)?;
    (l == p).then(|| out.extend(l))
}

/// `logical` and `physical` (paired as [`paired_sites`] pairs them) with
/// the first values of `values` at their sites, advanced past them.
pub(crate) fn paired_with(
    logical: &[Expr],
    physical: &Arc<dyn PhysicalExpr>,
    values: &mut &[ScalarValue],
) -> Option<(Vec<Expr>, Arc<dyn PhysicalExpr>)> {
    let mut at = *values;
    let logical = logical
        .iter()
        .map(|e| logical_with(e, &mut at))
        .collect::<Option<Vec<_>>>()?;
    let physical = physical_with(physical, values)?;
    (at.len() == values.len()).then_some((logical, physical))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::common::DFSchema;
    use datafusion::logical_expr::{cast, col, lit};
    use datafusion::prelude::SessionContext;

    fn number(n: &str) -> Literal {
        Literal::Number(n.into())
    }

    #[test]
    fn a_literal_is_typed_as_datafusions_planner_types_it() {
        assert_eq!(
            scalar_of(&number("42"), false),
            Some(ScalarValue::Int64(Some(42)))
        );
        assert_eq!(
            scalar_of(&number("42"), true),
            Some(ScalarValue::Int64(Some(-42)))
        );
        assert_eq!(
            scalar_of(&number("9223372036854775808"), true),
            Some(ScalarValue::Int64(Some(i64::MIN)))
        );
        // Past BIGINT, a fraction: typed otherwise by DataFusion.
        assert_eq!(scalar_of(&number("9223372036854775808"), false), None);
        assert_eq!(scalar_of(&number("3.5"), false), None);
        assert_eq!(
            scalar_of(&Literal::Text("ab".into()), false),
            Some(ScalarValue::Utf8(Some("ab".into())))
        );
        assert_eq!(scalar_of(&Literal::Text("ab ".into()), false), None);
    }

    #[test]
    fn sites_bind_only_to_distinct_literals_in_text_order() {
        let int = |v| ScalarValue::Int64(Some(v));
        let literals = [number("1234"), number("42")];
        let b = bind(&[int(-1234), int(42)], &literals).expect("binds");
        assert_eq!(
            b.values(&[number("7"), number("9")]),
            Some(vec![int(-7), int(9)])
        );
        // Out of order, a literal missing, equal values, a zero: no binding.
        assert_eq!(bind(&[int(42), int(-1234)], &literals), None);
        assert_eq!(bind(&[int(42)], &literals), None);
        assert_eq!(bind(&[int(5), int(5)], &[number("5"), number("5")]), None);
        assert_eq!(bind(&[int(0), int(42)], &[number("0"), number("42")]), None);
        // A literal a rewrite changed.
        assert_eq!(bind(&[int(1235), int(42)], &literals), None);
        // A later literal DataFusion would type otherwise.
        assert_eq!(b.values(&[number("7.5"), number("9")]), None);
    }

    #[test]
    fn replacing_sites_keeps_the_tree_and_changes_the_values() {
        let schema = Schema::new(vec![Field::new("v", DataType::Int32, true)]);
        let df = DFSchema::try_from(schema.clone()).unwrap();
        let e = (cast(col("v"), DataType::Int64) + lit(-5i64)).gt(lit(42i64));
        let mut sites = Vec::new();
        logical_sites(&e, &mut sites);
        assert_eq!(
            sites,
            vec![ScalarValue::Int64(Some(-5)), ScalarValue::Int64(Some(42))]
        );
        let state = SessionContext::new().state();
        let p = state.create_physical_expr(e.clone(), &df).unwrap();
        let mut physical = Vec::new();
        physical_sites(&p, &mut physical).unwrap();
        assert_eq!(physical, sites);

        let new = [ScalarValue::Int64(Some(-7)), ScalarValue::Int64(Some(9))];
        let mut at = &new[..];
        let e2 = logical_with(&e, &mut at).unwrap();
        assert!(at.is_empty());
        assert_eq!(
            e2,
            (cast(col("v"), DataType::Int64) + lit(-7i64)).gt(lit(9i64))
        );
        let mut at = &new[..];
        let p2 = physical_with(&p, &mut at).unwrap();
        let fresh = state.create_physical_expr(e2.clone(), &df).unwrap();
        assert_eq!(p2.to_string(), fresh.to_string());
        // Too few values: no expression.
        let mut at = &new[..1];
        assert!(logical_with(&e, &mut at).is_none());
        let mut at = &new[..1];
        assert!(physical_with(&p, &mut at).is_none());
    }
}
