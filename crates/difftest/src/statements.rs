//! Random statements over the round's tables: queries of every family issue
//! 53 names (projections with arithmetic, comparison, casts, CASE, IN, LIKE
//! and BETWEEN; aggregates with and without GROUP BY; DISTINCT; ORDER BY
//! with LIMIT; joins; IN, EXISTS and scalar subqueries; window functions;
//! set operations; a grouped aggregate named twice, which strata computes
//! once: `strata_sql::shared_result`) and DML (INSERT … VALUES, INSERT … SELECT, UPDATE with
//! expressions, DELETE).
//!
//! An ORDER BY always names every output column, so the order is total up
//! to rows that are equal in every column and a LIMIT's prefix is the same
//! multiset in both engines; window ORDER BYs name every column of the
//! table for the same reason.

use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;

use crate::datagen::random_val;
use crate::expr::{ExprGen, Scope};
use crate::f2;
use crate::model::{Kind, Sql2, Table};

/// A generated query.
#[derive(Clone, Debug)]
pub struct Query {
    pub sql: Sql2,
    /// Whether the answer's order is total (compare as sequences).
    pub ordered: bool,
    /// The family, for reports.
    pub family: &'static str,
}

fn query(sql: Sql2, ordered: bool, family: &'static str) -> Query {
    Query {
        sql,
        ordered,
        family,
    }
}

/// An aggregate over the scope, with its rendering for each engine.
pub fn aggregate(g: &mut ExprGen) -> Sql2 {
    match g.rng.random_range(0..8) {
        0 => Sql2::same("count(*)"),
        1 => {
            // A column, not an expression: DuckDB drops an expression under
            // count() that cannot make a NULL, and with it the error the
            // expression raises (count(abs(-2147483648)) counts).
            let (c, _) = g.scope.any(g.rng);
            Sql2::same(format!("count({c})"))
        }
        2 => {
            let k = g.some_kind();
            let e = g.expr(k, 1);
            f2!("count(DISTINCT {})", e)
        }
        3 | 4 => {
            let k = g.some_kind();
            let e = g.expr(k, 1);
            let f = *["min", "max"].choose(g.rng).unwrap();
            Sql2::two(format!("{f}({})", e.strata), format!("{f}({})", e.duck))
        }
        5 | 6 => {
            let k = *[Kind::Int, Kind::BigInt, Kind::Decimal, Kind::Double]
                .choose(g.rng)
                .unwrap();
            let e = g.expr(k, 1);
            sum(&e)
        }
        _ => {
            // avg over INT (exact in a double) and DOUBLE only: strata's avg
            // of a BIGINT or DECIMAL and DuckDB's differ in type by choice.
            let k = *[Kind::Int, Kind::Double].choose(g.rng).unwrap();
            let e = g.expr(k, 1);
            f2!("avg({})", e)
        }
    }
}

/// `sum(e)`, the same in both engines: over integers DuckDB's is a HUGEINT
/// and strata's a DECIMAL(38,0) (`strata_sql::rules::wide_sum`), neither of which
/// overflows (a wrap shows as a TLP partition sum off by 2^64).
pub fn sum(e: &Sql2) -> Sql2 {
    f2!("sum({})", e)
}

/// A select list: every item named (`AS x0`, `x1`, …), since DataFusion
/// refuses two unnamed items that read the same.
fn items(list: &[Sql2]) -> Sql2 {
    let named: Vec<Sql2> = list
        .iter()
        .enumerate()
        .map(|(i, e)| {
            Sql2::two(
                format!("{} AS x{i}", e.strata),
                format!("{} AS x{i}", e.duck),
            )
        })
        .collect();
    Sql2::join(&named, ", ")
}

/// `n` output expressions of random kinds.
fn select_list(g: &mut ExprGen, n: usize, depth: u32) -> Vec<Sql2> {
    (0..n)
        .map(|_| {
            let k = g.some_kind();
            let d = g.rng.random_range(0..=depth);
            g.expr(k, d)
        })
        .collect()
}

fn where_clause(g: &mut ExprGen, p: f64) -> Sql2 {
    if g.rng.random_bool(p) {
        let d = g.rng.random_range(1..=3);
        let w = g.pred(d);
        f2!(" WHERE {}", w)
    } else {
        Sql2::same("")
    }
}

/// Every column of `scope`, for a window's total order.
fn all_columns(scope: &Scope) -> String {
    scope
        .cols
        .iter()
        .map(|(c, _)| format!("{c} NULLS FIRST"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A random query over `tables`.
pub fn random_query(rng: &mut SmallRng, tables: &[Table]) -> Query {
    let t = tables.choose(rng).unwrap().clone();
    let u = tables.choose(rng).unwrap().clone();
    let single = Scope::of(&t, None);
    match rng.random_range(0..21) {
        0..=3 => {
            let mut g = ExprGen {
                rng,
                scope: &single,
            };
            let n = g.rng.random_range(1..=4);
            let list = items(&select_list(&mut g, n, 3));
            let w = where_clause(&mut g, 0.7);
            let name = Sql2::same(&t.name);
            query(f2!("SELECT {} FROM {}{}", list, name, w), false, "select")
        }
        4 => {
            let mut g = ExprGen {
                rng,
                scope: &single,
            };
            let n = g.rng.random_range(1..=3);
            let list = items(&select_list(&mut g, n, 2));
            let w = where_clause(&mut g, 0.5);
            let name = Sql2::same(&t.name);
            query(
                f2!("SELECT DISTINCT {} FROM {}{}", list, name, w),
                false,
                "distinct",
            )
        }
        5 | 6 => {
            let mut g = ExprGen {
                rng,
                scope: &single,
            };
            let aggs: Vec<Sql2> = (0..g.rng.random_range(1..=4))
                .map(|_| aggregate(&mut g))
                .collect();
            let list = items(&aggs);
            let w = where_clause(&mut g, 0.6);
            let name = Sql2::same(&t.name);
            query(
                f2!("SELECT {} FROM {}{}", list, name, w),
                false,
                "aggregate",
            )
        }
        7..=9 => group_by(rng, &t, &single),
        10 | 11 => order_limit(rng, &t, &single),
        12 | 13 => join(rng, &t, &u),
        14 | 15 => subquery(rng, &t, &u),
        16 | 17 => window(rng, &t, &single),
        18 | 19 => set_operation(rng, &t, &u),
        _ => cte_twice(rng, &t, &single),
    }
}

/// A grouped aggregate named twice in one statement: a CTE read by both
/// sides of a UNION ALL, or joined with itself. strata computes it once and
/// reads it twice (`strata_sql::shared_result`); the answer must be that of
/// computing it twice.
fn cte_twice(rng: &mut SmallRng, t: &Table, scope: &Scope) -> Query {
    let inner = group_by(rng, t, scope).sql;
    let sql = if rng.random_bool(0.5) {
        f2!(
            "WITH c AS ({}) SELECT * FROM c UNION ALL SELECT * FROM c",
            inner
        )
    } else {
        f2!("WITH c AS ({}) SELECT count(*) FROM c AS a, c AS b", inner)
    };
    query(sql, false, "CTE read twice")
}

fn group_by(rng: &mut SmallRng, t: &Table, scope: &Scope) -> Query {
    let mut g = ExprGen { rng, scope };
    let mut keys: Vec<String> = (0..g.rng.random_range(1..=2))
        .map(|_| g.scope.any(g.rng).0)
        .collect();
    keys.dedup();
    let mut list: Vec<Sql2> = keys.iter().map(Sql2::same).collect();
    for _ in 0..g.rng.random_range(1..=3) {
        list.push(aggregate(&mut g));
    }
    let list = items(&list);
    let w = where_clause(&mut g, 0.5);
    let having = if g.rng.random_bool(0.3) {
        let a = aggregate(&mut g);
        let n = g.rng.random_range(0..3);
        Sql2::two(
            format!(" HAVING count(*) > {n} OR {} IS NULL", a.strata),
            format!(" HAVING count(*) > {n} OR {} IS NULL", a.duck),
        )
    } else {
        Sql2::same("")
    };
    let name = Sql2::same(&t.name);
    let keys = Sql2::same(keys.join(", "));
    query(
        f2!(
            "SELECT {} FROM {}{} GROUP BY {}{}",
            list,
            name,
            w,
            keys,
            having
        ),
        false,
        "group by",
    )
}

fn order_limit(rng: &mut SmallRng, t: &Table, scope: &Scope) -> Query {
    let mut g = ExprGen { rng, scope };
    let n = g.rng.random_range(1..=3);
    let exprs = select_list(&mut g, n, 2);
    let list = items(&exprs);
    let w = where_clause(&mut g, 0.5);
    let order: Vec<String> = (1..=n)
        .map(|i| {
            let dir = *["ASC", "DESC"].choose(g.rng).unwrap();
            let nulls = *["NULLS FIRST", "NULLS LAST"].choose(g.rng).unwrap();
            format!("{i} {dir} {nulls}")
        })
        .collect();
    let limit = match g.rng.random_range(0..3) {
        0 => String::new(),
        1 => format!(" LIMIT {}", g.rng.random_range(0..10)),
        _ => format!(
            " LIMIT {} OFFSET {}",
            g.rng.random_range(0..10),
            g.rng.random_range(0..5)
        ),
    };
    let tail = Sql2::same(format!(" ORDER BY {}{limit}", order.join(", ")));
    let name = Sql2::same(&t.name);
    query(
        f2!("SELECT {} FROM {}{}{}", list, name, w, tail),
        true,
        "order by/limit",
    )
}

fn join(rng: &mut SmallRng, t: &Table, u: &Table) -> Query {
    let scope = Scope::of(t, Some("a")).with(&Scope::of(u, Some("b")));
    let mut g = ExprGen { rng, scope: &scope };
    let kind = *["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"]
        .choose(g.rng)
        .unwrap();
    let on = if g.rng.random_bool(0.3) {
        let p = g.pred(1);
        f2!("a.k = b.k AND {}", p)
    } else {
        Sql2::same("a.k = b.k")
    };
    let aggregate_it = g.rng.random_bool(0.25);
    let list = if aggregate_it {
        let aggs: Vec<Sql2> = (0..g.rng.random_range(1..=3))
            .map(|_| aggregate(&mut g))
            .collect();
        items(&aggs)
    } else {
        let n = g.rng.random_range(1..=4);
        items(&select_list(&mut g, n, 2))
    };
    let w = where_clause(&mut g, 0.5);
    let from = Sql2::same(format!("{} a {kind} {} b ON ", t.name, u.name));
    query(
        f2!("SELECT {} FROM {}{}{}", list, from, on, w),
        false,
        "join",
    )
}

fn subquery(rng: &mut SmallRng, t: &Table, u: &Table) -> Query {
    let outer = Scope::of(t, Some("a"));
    let inner = Scope::of(u, Some("b"));
    let both = outer.clone().with(&inner);
    let list = {
        let mut g = ExprGen { rng, scope: &outer };
        let n = g.rng.random_range(1..=3);
        items(&select_list(&mut g, n, 2))
    };
    let from = Sql2::same(format!("{} a", t.name));
    let inner_from = format!("{} b", u.name);
    match rng.random_range(0..4) {
        0 => {
            let mut g = ExprGen { rng, scope: &inner };
            let p = g.pred(2);
            let not = if g.rng.random_bool(0.4) { "NOT " } else { "" };
            let sub = Sql2::two(
                format!(
                    " WHERE a.k {not}IN (SELECT b.k FROM {inner_from} WHERE {})",
                    p.strata
                ),
                format!(
                    " WHERE a.k {not}IN (SELECT b.k FROM {inner_from} WHERE {})",
                    p.duck
                ),
            );
            query(
                f2!("SELECT {} FROM {}{}", list, from, sub),
                false,
                "IN subquery",
            )
        }
        1 => {
            let mut g = ExprGen { rng, scope: &both };
            let p = g.pred(2);
            let not = if g.rng.random_bool(0.4) { "NOT " } else { "" };
            let sub = Sql2::two(
                format!(
                    " WHERE {not}EXISTS (SELECT 1 FROM {inner_from} WHERE b.k = a.k AND {})",
                    p.strata
                ),
                format!(
                    " WHERE {not}EXISTS (SELECT 1 FROM {inner_from} WHERE b.k = a.k AND {})",
                    p.duck
                ),
            );
            query(
                f2!("SELECT {} FROM {}{}", list, from, sub),
                false,
                "EXISTS subquery",
            )
        }
        2 => {
            // A correlated scalar subquery with an aggregate (count of no
            // rows is 0, any other aggregate of no rows is NULL).
            let mut g = ExprGen { rng, scope: &inner };
            let a = aggregate(&mut g);
            let sub = Sql2::two(
                format!(", (SELECT {} FROM {inner_from} WHERE b.k = a.k)", a.strata),
                format!(", (SELECT {} FROM {inner_from} WHERE b.k = a.k)", a.duck),
            );
            query(
                f2!("SELECT {}{} FROM {}", list, sub, from),
                false,
                "scalar subquery",
            )
        }
        _ => {
            let (col, ty) = inner.any(rng);
            let f = *["min", "max"].choose(rng).unwrap();
            let k = ty.kind();
            let mut og = ExprGen { rng, scope: &outer };
            let left = og.expr(k, 1);
            let op = *["=", "<", ">=", "<>"].choose(og.rng).unwrap();
            let sub = Sql2::two(
                format!(
                    " WHERE {} {op} (SELECT {f}({col}) FROM {inner_from})",
                    left.strata
                ),
                format!(
                    " WHERE {} {op} (SELECT {f}({col}) FROM {inner_from})",
                    left.duck
                ),
            );
            query(
                f2!("SELECT {} FROM {}{}", list, from, sub),
                false,
                "scalar subquery",
            )
        }
    }
}

fn window(rng: &mut SmallRng, t: &Table, scope: &Scope) -> Query {
    let mut g = ExprGen { rng, scope };
    let total = all_columns(scope);
    let (part, _) = g.scope.any(g.rng);
    let over_total = format!("OVER (PARTITION BY {part} ORDER BY {total})");
    let over_part = format!("OVER (PARTITION BY {part})");
    let (col, ty) = g.scope.any(g.rng);
    let f = match g.rng.random_range(0..8) {
        0 => Sql2::same(format!("row_number() {over_total}")),
        1 => Sql2::same(format!("rank() OVER (ORDER BY {col} NULLS LAST)")),
        2 => Sql2::same(format!(
            "dense_rank() OVER (PARTITION BY {part} ORDER BY {col} DESC NULLS FIRST)"
        )),
        3 => Sql2::same(format!("count(*) {over_part}")),
        4 => Sql2::same(format!("count({col}) {over_total}")),
        5 => {
            let f = *["min", "max"].choose(g.rng).unwrap();
            Sql2::same(format!("{f}({col}) {over_total}"))
        }
        6 => Sql2::same(format!("lag({col}) {over_total}")),
        _ => {
            let summed = if ty.kind().is_numeric() {
                col.as_str()
            } else {
                "k"
            };
            Sql2::same(format!("sum({summed}) {over_part}"))
        }
    };
    let n = g.rng.random_range(1..=2);
    let mut list = select_list(&mut g, n, 1);
    list.push(f);
    let list = items(&list);
    let w = where_clause(&mut g, 0.4);
    let name = Sql2::same(&t.name);
    query(f2!("SELECT {} FROM {}{}", list, name, w), false, "window")
}

fn set_operation(rng: &mut SmallRng, t: &Table, u: &Table) -> Query {
    let (st, su) = (Scope::of(t, None), Scope::of(u, None));
    let k = {
        let (_, ty) = st.any(rng);
        ty.kind()
    };
    let (a, wa) = {
        let mut g = ExprGen { rng, scope: &st };
        (g.expr(k, 2), where_clause(&mut g, 0.5))
    };
    let (b, wb) = {
        let mut g = ExprGen { rng, scope: &su };
        (g.expr(k, 2), where_clause(&mut g, 0.5))
    };
    let op = *["UNION", "UNION ALL", "INTERSECT", "EXCEPT"]
        .choose(rng)
        .unwrap();
    let (nt, nu) = (Sql2::same(&t.name), Sql2::same(&u.name));
    let op = Sql2::same(op);
    query(
        f2!(
            "SELECT {} FROM {}{} {} SELECT {} FROM {}{}",
            a,
            nt,
            wa,
            op,
            b,
            nu,
            wb
        ),
        false,
        "set operation",
    )
}

/// A random DML statement on `t` (which is one of `tables`).
pub fn random_dml(rng: &mut SmallRng, t: &Table, tables: &[Table]) -> Sql2 {
    let scope = Scope::of(t, None);
    match rng.random_range(0..8) {
        0 => {
            let rows: Vec<String> = (0..rng.random_range(1..=3))
                .map(|_| {
                    let vals: Vec<String> = t
                        .columns
                        .iter()
                        .map(|c| random_val(rng, c.ty, c.nullable).sql(c.ty))
                        .collect();
                    format!("({})", vals.join(", "))
                })
                .collect();
            Sql2::same(format!("INSERT INTO {} VALUES {}", t.name, rows.join(", ")))
        }
        1 | 2 => {
            let u = tables.choose(rng).unwrap();
            let su = Scope::of(u, None);
            let mut g = ExprGen { rng, scope: &su };
            let exprs: Vec<Sql2> = t
                .columns
                .iter()
                .map(|c| {
                    let e = g.expr(c.ty.kind(), 1);
                    Sql2::two(
                        format!("CAST({} AS {})", e.strata, c.ty),
                        format!("CAST({} AS {})", e.duck, c.ty),
                    )
                })
                .collect();
            // Named: DataFusion refuses `SELECT CAST(k AS INTEGER) … ORDER BY
            // k` when the CAST changes nothing (docs/sql-differences.md).
            let list = items(&exprs);
            let w = where_clause(&mut g, 0.6);
            let tail = Sql2::same(format!(
                " ORDER BY {} LIMIT {}",
                all_columns(&su),
                g.rng.random_range(1..=8)
            ));
            let head = Sql2::same(format!("INSERT INTO {} SELECT ", t.name));
            let from = Sql2::same(format!(" FROM {}", u.name));
            f2!("{}{}{}{}{}", head, list, from, w, tail)
        }
        3..=5 => {
            let mut g = ExprGen { rng, scope: &scope };
            let n = g.rng.random_range(1..=2);
            let sets: Vec<Sql2> = (0..n)
                .map(|_| {
                    let c = t.columns.choose(g.rng).unwrap();
                    let e = g.expr(c.ty.kind(), 2);
                    Sql2::two(
                        format!("{} = {}", c.name, e.strata),
                        format!("{} = {}", c.name, e.duck),
                    )
                })
                .collect();
            // A column set twice is an error in both engines; keep it, the
            // refusal is compared like any other.
            let sets = Sql2::join(&sets, ", ");
            let w = where_clause(&mut g, 0.7);
            let head = Sql2::same(format!("UPDATE {} SET ", t.name));
            f2!("{}{}{}", head, sets, w)
        }
        _ => {
            let mut g = ExprGen { rng, scope: &scope };
            let w = where_clause(&mut g, 0.9);
            let head = Sql2::same(format!("DELETE FROM {}", t.name));
            f2!("{}{}", head, w)
        }
    }
}
