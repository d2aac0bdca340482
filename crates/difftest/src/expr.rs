//! Random typed expressions over a scope of columns, each rendered for both
//! engines. The generator builds an expression of a wanted [`Kind`] from
//! columns, literals (often at a type's edges) and operators whose result
//! type both engines agree on; literals are always written as `CAST(… AS T)`
//! so that `1` is an INTEGER in both (DataFusion alone would read it as a
//! BIGINT). Where the dialects differ by choice it renders two texts
//! (docs/sql-differences.md, "generated around"):
//!
//! * integer division is `/` in strata (as in PostgreSQL) and `//` in DuckDB
//!   (its `/` returns a DOUBLE);
//! * divisors are wrapped in `NULLIF(d, 0)`: DuckDB answers NULL for a
//!   division by zero, strata (as PostgreSQL) refuses;
//! * a DOUBLE is cast to an integer only after `trunc`: DuckDB (as
//!   PostgreSQL) rounds, DataFusion truncates;
//! * a string is cast to an integer only when it was made from one: DuckDB
//!   reads `'1.9'` as the INTEGER 2, strata (as PostgreSQL) refuses it.

use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;

use crate::datagen::{ALPHABET, random_literal};
use crate::f2;
use crate::model::{Kind, Sql2, Ty, quote};

/// The columns an expression may use, as they are referred to (`c1` or
/// `a.c1`), with their types.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub cols: Vec<(String, Ty)>,
}

impl Scope {
    /// The columns of `table`, qualified with `alias` when given.
    pub fn of(table: &crate::model::Table, alias: Option<&str>) -> Scope {
        Scope {
            cols: table
                .columns
                .iter()
                .map(|c| {
                    let name = match alias {
                        Some(a) => format!("{a}.{}", c.name),
                        None => c.name.clone(),
                    };
                    (name, c.ty)
                })
                .collect(),
        }
    }

    /// Both scopes' columns.
    pub fn with(mut self, other: &Scope) -> Scope {
        self.cols.extend(other.cols.iter().cloned());
        self
    }

    pub fn of_kind(&self, k: Kind) -> Vec<&(String, Ty)> {
        self.cols.iter().filter(|(_, t)| t.kind() == k).collect()
    }

    /// A random column of the scope.
    pub fn any(&self, rng: &mut SmallRng) -> (String, Ty) {
        self.cols.choose(rng).expect("a scope has columns").clone()
    }
}

/// An expression generator over one scope.
pub struct ExprGen<'a> {
    pub rng: &'a mut SmallRng,
    pub scope: &'a Scope,
}

fn typed_zero(k: Kind) -> String {
    format!("CAST(0 AS {})", k.sql())
}

fn bin(a: &Sql2, op: &str, b: &Sql2) -> Sql2 {
    Sql2::two(
        format!("({} {op} {})", a.strata, b.strata),
        format!("({} {op} {})", a.duck, b.duck),
    )
}

fn call(name: &str, args: &[&Sql2]) -> Sql2 {
    Sql2::two(
        format!(
            "{name}({})",
            args.iter()
                .map(|a| a.strata.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        format!(
            "{name}({})",
            args.iter()
                .map(|a| a.duck.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
}

fn cast(a: &Sql2, ty: &str) -> Sql2 {
    Sql2::two(
        format!("CAST({} AS {ty})", a.strata),
        format!("CAST({} AS {ty})", a.duck),
    )
}

impl ExprGen<'_> {
    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    /// A literal of kind `k` (sometimes a typed NULL).
    pub fn literal(&mut self, k: Kind) -> Sql2 {
        if self.chance(0.08) {
            return Sql2::same(format!("CAST(NULL AS {})", k.sql()));
        }
        let (v, ty) = random_literal(self.rng, k);
        Sql2::same(v.sql(ty))
    }

    /// A column of kind `k` when the scope has one, else a literal.
    pub fn leaf(&mut self, k: Kind) -> Sql2 {
        let cols = self.scope.of_kind(k);
        if !cols.is_empty() && self.chance(0.75) {
            let (name, _) = cols.choose(self.rng).unwrap();
            return Sql2::same(name.clone());
        }
        self.literal(k)
    }

    /// A kind the scope has columns of (or any kind).
    pub fn some_kind(&mut self) -> Kind {
        if self.chance(0.8) {
            let (_, ty) = self.scope.any(self.rng);
            ty.kind()
        } else {
            *Kind::ALL.choose(self.rng).unwrap()
        }
    }

    /// An expression of kind `k`, at most `depth` operators deep.
    pub fn expr(&mut self, k: Kind, depth: u32) -> Sql2 {
        if depth == 0 || self.chance(0.35) {
            return self.leaf(k);
        }
        if self.chance(0.15) {
            return self.conditional(k, depth - 1);
        }
        match k {
            Kind::Int | Kind::BigInt => self.integer(k, depth - 1),
            Kind::Double => self.double(depth - 1),
            Kind::Decimal => self.decimal(depth - 1),
            Kind::Date => self.leaf(k),
            Kind::Str => self.string(depth - 1),
            Kind::Bool => self.pred(depth),
        }
    }

    /// CASE, COALESCE: the same kind from branches.
    fn conditional(&mut self, k: Kind, d: u32) -> Sql2 {
        match self.rng.random_range(0..4) {
            0 => {
                let (p, a, b) = (self.pred(d), self.expr(k, d), self.expr(k, d));
                f2!("CASE WHEN {} THEN {} ELSE {} END", p, a, b)
            }
            1 => {
                let (p, a) = (self.pred(d), self.expr(k, d));
                f2!("CASE WHEN {} THEN {} END", p, a)
            }
            2 => {
                let (a, b) = (self.expr(k, d), self.expr(k, d));
                call("COALESCE", &[&a, &b])
            }
            _ => {
                let (x, y, a, b) = (
                    self.expr(k, d),
                    self.leaf(k),
                    self.expr(k, d),
                    self.expr(k, d),
                );
                f2!("CASE {} WHEN {} THEN {} ELSE {} END", x, y, a, b)
            }
        }
    }

    fn integer(&mut self, k: Kind, d: u32) -> Sql2 {
        let other = if k == Kind::BigInt && self.chance(0.3) {
            Kind::Int
        } else {
            k
        };
        match self.rng.random_range(0..10) {
            0..=2 => {
                let (a, b) = (self.expr(k, d), self.expr(other, d));
                let op = *["+", "-", "*"].choose(self.rng).unwrap();
                bin(&a, op, &b)
            }
            3 => {
                let (a, b) = (self.expr(k, d), self.expr(k, d));
                let z = typed_zero(k);
                Sql2::two(
                    format!("({} / NULLIF({}, {z}))", a.strata, b.strata),
                    format!("({} // NULLIF({}, {z}))", a.duck, b.duck),
                )
            }
            4 => {
                let (a, b) = (self.expr(k, d), self.expr(k, d));
                let z = Sql2::same(typed_zero(k));
                f2!("({} % NULLIF({}, {}))", a, b, z)
            }
            5 => {
                let a = self.expr(k, d);
                f2!("(-({}))", a)
            }
            6 => {
                let a = self.expr(k, d);
                call("abs", &[&a])
            }
            7 => {
                // From another kind.
                let a = match self.rng.random_range(0..4) {
                    0 => {
                        let x = self.expr(Kind::Double, d);
                        call("trunc", &[&x])
                    }
                    1 => self.expr(Kind::Bool, d),
                    // A string that holds an integer: DuckDB reads '1.9' as
                    // the INTEGER 2, strata (as PostgreSQL) refuses it.
                    2 => {
                        let i = self.expr(k, d);
                        cast(&i, "VARCHAR")
                    }
                    _ => self.expr(
                        if k == Kind::Int {
                            Kind::BigInt
                        } else {
                            Kind::Int
                        },
                        d,
                    ),
                };
                cast(&a, k.sql())
            }
            8 => {
                let s = self.expr(Kind::Str, d);
                cast(&call("length", &[&s]), k.sql())
            }
            _ => self.conditional(k, d),
        }
    }

    fn double(&mut self, d: u32) -> Sql2 {
        match self.rng.random_range(0..9) {
            0..=2 => {
                let a = self.expr(Kind::Double, d);
                let b = if self.chance(0.2) {
                    self.expr(Kind::Int, d)
                } else {
                    self.expr(Kind::Double, d)
                };
                let op = *["+", "-", "*"].choose(self.rng).unwrap();
                bin(&a, op, &b)
            }
            3 => {
                let (a, b) = (self.expr(Kind::Double, d), self.expr(Kind::Double, d));
                let z = Sql2::same(typed_zero(Kind::Double));
                f2!("({} / NULLIF({}, {}))", a, b, z)
            }
            4 => {
                let a = self.expr(Kind::Double, d);
                f2!("(-({}))", a)
            }
            5 => {
                let a = self.expr(Kind::Double, d);
                let f = *["abs", "floor", "ceil", "trunc"].choose(self.rng).unwrap();
                call(f, &[&a])
            }
            6 | 7 => {
                let k = *[Kind::Int, Kind::BigInt, Kind::Decimal]
                    .choose(self.rng)
                    .unwrap();
                let a = self.expr(k, d);
                cast(&a, "DOUBLE")
            }
            _ => self.conditional(Kind::Double, d),
        }
    }

    fn decimal(&mut self, d: u32) -> Sql2 {
        match self.rng.random_range(0..8) {
            0 | 1 => {
                let (a, b) = (self.expr(Kind::Decimal, d), self.expr(Kind::Decimal, d));
                let op = *["+", "-"].choose(self.rng).unwrap();
                bin(&a, op, &b)
            }
            2 => {
                // Products of leaves only: nested products outgrow 38 digits.
                let a = self.leaf(Kind::Decimal);
                let b = if self.chance(0.5) {
                    self.leaf(Kind::Decimal)
                } else {
                    self.leaf(Kind::Int)
                };
                bin(&a, "*", &b)
            }
            3 => {
                let a = self.expr(Kind::Decimal, d);
                if self.chance(0.5) {
                    f2!("(-({}))", a)
                } else {
                    call("abs", &[&a])
                }
            }
            4 | 5 => {
                let k = *[Kind::Int, Kind::BigInt, Kind::Decimal]
                    .choose(self.rng)
                    .unwrap();
                let a = if k == Kind::Decimal {
                    self.leaf(k)
                } else {
                    self.expr(k, d)
                };
                let p = self.rng.random_range(1..=18u8);
                let s = self.rng.random_range(0..=p.min(6));
                cast(&a, &Ty::Decimal(p, s).to_string())
            }
            _ => self.conditional(Kind::Decimal, d),
        }
    }

    fn string(&mut self, d: u32) -> Sql2 {
        match self.rng.random_range(0..8) {
            0 | 1 => {
                let (a, b) = (self.expr(Kind::Str, d), self.expr(Kind::Str, d));
                bin(&a, "||", &b)
            }
            2 => {
                let a = self.expr(Kind::Str, d);
                let f = *["upper", "lower"].choose(self.rng).unwrap();
                call(f, &[&a])
            }
            3 => {
                let a = self.expr(Kind::Str, d);
                let (i, n) = (self.rng.random_range(1..=4), self.rng.random_range(0..=5));
                let (i, n) = (
                    Sql2::same(format!("CAST({i} AS BIGINT)")),
                    Sql2::same(format!("CAST({n} AS BIGINT)")),
                );
                call("substr", &[&a, &i, &n])
            }
            4 | 5 => {
                let k = *[
                    Kind::Int,
                    Kind::BigInt,
                    Kind::Date,
                    Kind::Bool,
                    Kind::Decimal,
                ]
                .choose(self.rng)
                .unwrap();
                let a = self.expr(k, d);
                let text = cast(&a, "VARCHAR");
                if k == Kind::Decimal {
                    // DuckDB writes a DECIMAL(p,p) without its leading zero
                    // ('-.5'); PostgreSQL and strata write '-0.5'.
                    Sql2::two(
                        text.strata,
                        format!("regexp_replace({}, '^(-?)\\.', '\\10.')", text.duck),
                    )
                } else {
                    text
                }
            }
            6 => {
                let a = self.expr(Kind::Str, d);
                let from = Sql2::same(quote(ALPHABET.choose(self.rng).unwrap()));
                let to = Sql2::same(quote(ALPHABET.choose(self.rng).unwrap()));
                call("replace", &[&a, &from, &to])
            }
            _ => self.conditional(Kind::Str, d),
        }
    }

    /// A LIKE pattern over the strings' alphabet.
    fn pattern(&mut self) -> String {
        let mut p = String::new();
        for _ in 0..self.rng.random_range(0..=4) {
            match self.rng.random_range(0..4) {
                0 => p.push('%'),
                1 => p.push('_'),
                _ => p.push_str(ALPHABET.choose(self.rng).unwrap()),
            }
        }
        p
    }

    /// A boolean expression.
    pub fn pred(&mut self, depth: u32) -> Sql2 {
        if depth == 0 {
            return self.comparison(0);
        }
        let d = depth - 1;
        match self.rng.random_range(0..16) {
            0..=3 => self.comparison(d),
            4 => {
                let k = self.some_kind();
                let a = self.expr(k, d);
                let not = if self.chance(0.5) { "NOT " } else { "" };
                Sql2::two(
                    format!("({} IS {not}NULL)", a.strata),
                    format!("({} IS {not}NULL)", a.duck),
                )
            }
            5 => {
                let a = self.pred(d);
                f2!("(NOT {})", a)
            }
            6 => {
                let (a, b) = (self.pred(d), self.pred(d));
                bin(&a, "AND", &b)
            }
            7 => {
                let (a, b) = (self.pred(d), self.pred(d));
                bin(&a, "OR", &b)
            }
            8 => {
                let k = self.some_kind();
                let a = self.expr(k, d);
                let items: Vec<Sql2> = (0..self.rng.random_range(1..=4))
                    .map(|_| self.leaf(k))
                    .collect();
                let list = Sql2::join(&items, ", ");
                let not = if self.chance(0.3) { "NOT " } else { "" };
                Sql2::two(
                    format!("({} {not}IN ({}))", a.strata, list.strata),
                    format!("({} {not}IN ({}))", a.duck, list.duck),
                )
            }
            9 => {
                let k = self.some_kind();
                let (a, lo, hi) = (self.expr(k, d), self.leaf(k), self.leaf(k));
                let not = if self.chance(0.3) { "NOT " } else { "" };
                Sql2::two(
                    format!(
                        "({} {not}BETWEEN {} AND {})",
                        a.strata, lo.strata, hi.strata
                    ),
                    format!("({} {not}BETWEEN {} AND {})", a.duck, lo.duck, hi.duck),
                )
            }
            10 => {
                let a = self.expr(Kind::Str, d);
                let not = if self.chance(0.3) { "NOT " } else { "" };
                let p = quote(&self.pattern());
                Sql2::two(
                    format!("({} {not}LIKE {p})", a.strata),
                    format!("({} {not}LIKE {p})", a.duck),
                )
            }
            11 => {
                let k = self.some_kind();
                let (a, b) = (self.expr(k, d), self.expr(k, d));
                let not = if self.chance(0.5) { "NOT " } else { "" };
                // DuckDB 1.4.4 answers a correlated EXISTS whose condition
                // holds `outer IS DISTINCT FROM inner` without some outer
                // rows; it gets the same condition spelled out (what the
                // operator means: NULL equals NULL, and nothing else).
                let (x, y) = (&a.duck, &b.duck);
                let distinct = format!(
                    "(CASE WHEN {x} IS NULL THEN {y} IS NOT NULL WHEN {y} IS NULL THEN TRUE ELSE {x} <> {y} END)"
                );
                Sql2::two(
                    format!("({} IS {not}DISTINCT FROM {})", a.strata, b.strata),
                    if not.is_empty() {
                        distinct
                    } else {
                        format!("(NOT {distinct})")
                    },
                )
            }
            12 => {
                // Numbers of different kinds.
                let ks = [Kind::Int, Kind::BigInt, Kind::Decimal, Kind::Double];
                let (k1, k2) = (*ks.choose(self.rng).unwrap(), *ks.choose(self.rng).unwrap());
                let (a, b) = (self.expr(k1, d), self.expr(k2, d));
                let op = *["=", "<>", "<", "<=", ">", ">="].choose(self.rng).unwrap();
                bin(&a, op, &b)
            }
            13 => {
                let a = self.pred(d);
                let t = *["IS TRUE", "IS NOT TRUE", "IS FALSE", "IS NOT FALSE"]
                    .choose(self.rng)
                    .unwrap();
                Sql2::two(format!("({} {t})", a.strata), format!("({} {t})", a.duck))
            }
            _ => self.leaf(Kind::Bool),
        }
    }

    /// `a op b` for two expressions of one kind.
    fn comparison(&mut self, d: u32) -> Sql2 {
        let k = self.some_kind();
        let (a, b) = (self.expr(k, d), self.expr(k, d));
        let op = *["=", "<>", "<", "<=", ">", ">="].choose(self.rng).unwrap();
        bin(&a, op, &b)
    }
}
