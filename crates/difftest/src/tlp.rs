//! Ternary logic partitioning (Rigger & Su, OOPSLA 2020): self-checks of
//! strata that need no second engine. For a query Q and a random predicate
//! P every row of Q satisfies exactly one of P, NOT P and P IS NULL, so
//! rows(Q) = rows(Q WHERE P) ⊎ rows(Q WHERE NOT P) ⊎ rows(Q WHERE P IS NULL);
//! and count, sum, min and max over Q are the count, sum, min and max of
//! the three partitions' answers. A difference is a wrong answer in one of
//! the four plans (a filter pushed into a scan, an index range, a join).

use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;

use crate::compare::{Answer, Cell, answers_agree, union};
use crate::expr::{ExprGen, Scope};
use crate::model::{Kind, Table};

/// How [`check`]'s message starts when a BIGINT sum wrapped.
pub const WRAPPED: &str = "wrapped by a multiple of 2^64";

/// How the partitions' answers combine into the whole's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// Rows: the multiset union.
    Rows,
    Count,
    /// sum over an integer column.
    Sum,
    Min,
    Max,
}

/// A TLP case: the whole query and its three partitions (strata's SQL).
#[derive(Clone, Debug)]
pub struct Case {
    pub whole: String,
    pub parts: [String; 3],
    pub combine: Combine,
}

/// A random case over one table or a join of two.
pub fn random_case(rng: &mut SmallRng, tables: &[Table]) -> Case {
    let t = tables.choose(rng).unwrap();
    let (from, scope) = if tables.len() > 1 && rng.random_bool(0.3) {
        let u = tables.choose(rng).unwrap();
        (
            format!("{} a JOIN {} b ON a.k = b.k", t.name, u.name),
            Scope::of(t, Some("a")).with(&Scope::of(u, Some("b"))),
        )
    } else {
        (t.name.clone(), Scope::of(t, None))
    };
    let mut g = ExprGen { rng, scope: &scope };
    let d = g.rng.random_range(1..=3);
    let p = g.pred(d).strata;
    let (select, combine) = match g.rng.random_range(0..6) {
        0 | 1 => {
            let cols: Vec<String> = scope.cols.iter().map(|(c, _)| c.clone()).collect();
            (cols.join(", "), Combine::Rows)
        }
        2 => ("count(*)".to_string(), Combine::Count),
        3 => {
            let ints: Vec<&(String, crate::model::Ty)> = scope
                .cols
                .iter()
                .filter(|(_, ty)| ty.kind().is_integer())
                .collect();
            let (c, _) = ints.choose(g.rng).expect("k is an integer column");
            (format!("sum({c})"), Combine::Sum)
        }
        _ => {
            let ok: Vec<&(String, crate::model::Ty)> = scope
                .cols
                .iter()
                .filter(|(_, ty)| {
                    matches!(ty.kind(), Kind::Int | Kind::BigInt | Kind::Date | Kind::Str)
                })
                .collect();
            let (c, _) = ok.choose(g.rng).expect("k is an integer column");
            if g.rng.random_bool(0.5) {
                (format!("min({c})"), Combine::Min)
            } else {
                (format!("max({c})"), Combine::Max)
            }
        }
    };
    let base = format!("SELECT {select} FROM {from}");
    Case {
        whole: base.clone(),
        parts: [
            format!("{base} WHERE {p}"),
            format!("{base} WHERE NOT ({p})"),
            format!("{base} WHERE ({p}) IS NULL"),
        ],
        combine,
    }
}

/// The single value of a one-row, one-column answer.
fn scalar(a: &Answer) -> Option<&Cell> {
    a.rows.first().and_then(|r| r.first())
}

fn int_of(c: &Cell) -> Option<i128> {
    match c {
        Cell::Exact(s) => s.parse().ok(),
        _ => None,
    }
}

/// Whether the whole's answer equals the partitions' combined; `Err` says
/// what the partitions combine to when it does not.
pub fn check(case: &Case, whole: &Answer, parts: &[Answer; 3]) -> Result<(), String> {
    match case.combine {
        Combine::Rows => {
            let u = union(&[&parts[0], &parts[1], &parts[2]]);
            if answers_agree(whole, &u, false) {
                Ok(())
            } else {
                Err(format!(
                    "{} rows in the whole, {} + {} + {} in the partitions",
                    whole.rows.len(),
                    parts[0].rows.len(),
                    parts[1].rows.len(),
                    parts[2].rows.len()
                ))
            }
        }
        Combine::Count | Combine::Sum => {
            let vals: Vec<Option<i128>> =
                parts.iter().map(|p| scalar(p).and_then(int_of)).collect();
            let combined: Option<i128> = vals.iter().fold(None, |acc, v| match (acc, v) {
                (None, v) => *v,
                (a, None) => a,
                (Some(a), Some(b)) => Some(a + b),
            });
            let combined = match (case.combine, combined) {
                (Combine::Count, None) => Some(0),
                (_, c) => c,
            };
            let w = scalar(whole).and_then(int_of);
            match (w, combined) {
                _ if w == combined => Ok(()),
                // The whole and the partitions differ by a multiple of 2^64:
                // a BIGINT sum wrapped in one of them.
                (Some(a), Some(b)) if (a - b) % (1i128 << 64) == 0 => {
                    Err(format!("{WRAPPED}: the partitions add up to {b}"))
                }
                _ => Err(format!("the partitions add up to {combined:?}")),
            }
        }
        Combine::Min | Combine::Max => {
            let vals: Vec<&Cell> = parts
                .iter()
                .filter_map(scalar)
                .filter(|c| **c != Cell::Null)
                .collect();
            let key = |c: &Cell| -> (Option<i128>, String) { (int_of(c), c.text()) };
            let best = if case.combine == Combine::Min {
                vals.iter().min_by_key(|c| key(c))
            } else {
                vals.iter().max_by_key(|c| key(c))
            };
            let combined = best.map(|c| (*c).clone()).unwrap_or(Cell::Null);
            let w = scalar(whole).cloned().unwrap_or(Cell::Null);
            if w.agrees(&combined) {
                Ok(())
            } else {
                Err(format!("the partitions give {}", combined.text()))
            }
        }
    }
}
