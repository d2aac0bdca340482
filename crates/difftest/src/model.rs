//! The tester's picture of a database: column types (spelled the same way in
//! strata's and DuckDB's DDL), tables, literal values, and a statement in its
//! two renderings. A statement is generated once and rendered for each
//! engine, so that where the two dialects differ by choice (integer division,
//! the type of `sum`) the generator can ask both the same question.

use std::fmt;

/// A column type strata stores (crates/storage/src/row/value.rs): INT, BIGINT,
/// DOUBLE, DECIMAL(p ≤ 18, s), DATE, CHAR(n), VARCHAR(n), BOOLEAN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Int,
    BigInt,
    Double,
    Decimal(u8, u8),
    Date,
    Char(u16),
    Varchar(u16),
    Bool,
}

/// What an expression computes, coarser than [`Ty`]: the generator builds
/// expressions of a kind, and both engines agree on the kind of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int,
    BigInt,
    Double,
    Decimal,
    Date,
    Str,
    Bool,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::Int,
        Kind::BigInt,
        Kind::Double,
        Kind::Decimal,
        Kind::Date,
        Kind::Str,
        Kind::Bool,
    ];

    pub fn is_integer(self) -> bool {
        matches!(self, Kind::Int | Kind::BigInt)
    }

    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            Kind::Int | Kind::BigInt | Kind::Double | Kind::Decimal
        )
    }

    /// The type a value of this kind is cast to (decimals have no one type).
    pub fn sql(self) -> &'static str {
        match self {
            Kind::Int => "INTEGER",
            Kind::BigInt => "BIGINT",
            Kind::Double => "DOUBLE",
            Kind::Decimal => "DECIMAL(18,4)",
            Kind::Date => "DATE",
            Kind::Str => "VARCHAR",
            Kind::Bool => "BOOLEAN",
        }
    }
}

impl Ty {
    pub fn kind(self) -> Kind {
        match self {
            Ty::Int => Kind::Int,
            Ty::BigInt => Kind::BigInt,
            Ty::Double => Kind::Double,
            Ty::Decimal(..) => Kind::Decimal,
            Ty::Date => Kind::Date,
            Ty::Char(_) | Ty::Varchar(_) => Kind::Str,
            Ty::Bool => Kind::Bool,
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Int => f.write_str("INTEGER"),
            Ty::BigInt => f.write_str("BIGINT"),
            Ty::Double => f.write_str("DOUBLE"),
            Ty::Decimal(p, s) => write!(f, "DECIMAL({p},{s})"),
            Ty::Date => f.write_str("DATE"),
            Ty::Char(n) => write!(f, "CHAR({n})"),
            Ty::Varchar(n) => write!(f, "VARCHAR({n})"),
            Ty::Bool => f.write_str("BOOLEAN"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    pub ty: Ty,
    pub nullable: bool,
}

#[derive(Clone, Debug)]
pub struct Table {
    pub name: String,
    pub columns: Vec<Column>,
    /// Indexed columns (one single-column index each).
    pub indexes: Vec<String>,
}

impl Table {
    pub fn ddl(&self) -> String {
        let cols: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                format!(
                    "{} {}{}",
                    c.name,
                    c.ty,
                    if c.nullable { "" } else { " NOT NULL" }
                )
            })
            .collect();
        format!("CREATE TABLE {} ({})", self.name, cols.join(", "))
    }

    pub fn column_list(&self) -> String {
        self.columns
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A literal value of a column.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Null,
    Int(i64),
    Double(f64),
    /// A decimal as its plain text (`-12.50`).
    Dec(String),
    /// YYYY-MM-DD.
    Date(String),
    Str(String),
    Bool(bool),
}

impl Val {
    /// The literal as SQL both engines read as a value of `ty`.
    pub fn sql(&self, ty: Ty) -> String {
        match self {
            Val::Null => format!("CAST(NULL AS {ty})"),
            Val::Int(i) => format!("CAST({i} AS {ty})"),
            Val::Double(d) => format!("CAST('{d:?}' AS DOUBLE)"),
            Val::Dec(d) => format!("CAST('{d}' AS {ty})"),
            Val::Date(d) => format!("DATE '{d}'"),
            Val::Str(s) => quote(s),
            Val::Bool(b) => (if *b { "TRUE" } else { "FALSE" }).to_string(),
        }
    }
}

/// A string literal.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// One statement as each engine is asked it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sql2 {
    pub strata: String,
    pub duck: String,
}

impl Sql2 {
    /// The same text for both engines.
    pub fn same(s: impl Into<String>) -> Sql2 {
        let s = s.into();
        Sql2 {
            strata: s.clone(),
            duck: s,
        }
    }

    /// Different texts.
    pub fn two(strata: impl Into<String>, duck: impl Into<String>) -> Sql2 {
        Sql2 {
            strata: strata.into(),
            duck: duck.into(),
        }
    }

    /// Joins renderings with `sep`.
    pub fn join(parts: &[Sql2], sep: &str) -> Sql2 {
        Sql2 {
            strata: parts
                .iter()
                .map(|p| p.strata.as_str())
                .collect::<Vec<_>>()
                .join(sep),
            duck: parts
                .iter()
                .map(|p| p.duck.as_str())
                .collect::<Vec<_>>()
                .join(sep),
        }
    }
}

impl fmt::Display for Sql2 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.strata == self.duck {
            f.write_str(&self.strata)
        } else {
            write!(f, "{}\n  -- DuckDB: {}", self.strata, self.duck)
        }
    }
}

/// Formats both renderings with the same template: `f2!("{} + {}", a, b)`
/// where each argument is a [`Sql2`].
#[macro_export]
macro_rules! f2 {
    ($fmt:literal $(, $a:expr)* $(,)?) => {
        $crate::model::Sql2 {
            strata: format!($fmt $(, &$a.strata)*),
            duck: format!($fmt $(, &$a.duck)*),
        }
    };
}
