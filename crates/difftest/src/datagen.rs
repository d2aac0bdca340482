//! Random tables and their rows: every strata column type, NULLs, and values
//! drawn often from each type's edges (0, ±1, the integer widths' limits,
//! DECIMAL's largest values at its precision, the first and last date both
//! engines print alike, empty, long and non-ASCII strings), because the
//! edges are where two engines' arithmetic and conversions part.
//!
//! Doubles are multiples of 1/16 no larger than 2^32 in magnitude, so that
//! sums over them are exact in any order and two engines that add in
//! different orders still agree to the last bit. Strings hold no spaces:
//! strata's CHAR drops trailing spaces, DuckDB's CHAR is VARCHAR
//! (docs/sql-differences.md).

use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;

use crate::model::{Column, Kind, Table, Ty, Val};

/// Characters strings are made of: ASCII, LIKE's wildcards as data, and
/// one- to four-byte code points that upper/lower-case alike in both engines.
pub const ALPHABET: &[&str] = &[
    "a", "b", "c", "x", "A", "B", "Z", "0", "1", "9", "_", "%", "-", ".", "é", "ü", "Ω", "日",
    "本", "🦆",
];

const DATES: &[&str] = &[
    "0001-01-01",
    "9999-12-31",
    "1970-01-01",
    "1969-12-31",
    "2000-02-29",
    "1900-03-01",
    "2024-12-31",
];

/// A random column type.
pub fn random_ty(rng: &mut SmallRng) -> Ty {
    match rng.random_range(0..9) {
        0 => Ty::Int,
        1 => Ty::BigInt,
        2 => Ty::Double,
        3 => {
            let p = *[1u8, 5, 9, 10, 12, 15, 18].choose(rng).unwrap();
            let s = rng.random_range(0..=p.min(6));
            let s = if rng.random_bool(0.1) { p } else { s };
            Ty::Decimal(p, s)
        }
        4 => Ty::Date,
        5 => Ty::Char(*[1u16, 4, 12].choose(rng).unwrap()),
        6 => Ty::Varchar(*[1u16, 8, 40, 300].choose(rng).unwrap()),
        7 => Ty::Bool,
        _ => Ty::Int,
    }
}

/// A table named `name`: an INT key column `k` (not unique: a join and
/// grouping key), then two to six random columns; one or two indexes.
pub fn random_table(rng: &mut SmallRng, name: &str) -> Table {
    let mut columns = vec![Column {
        name: "k".into(),
        ty: Ty::Int,
        nullable: rng.random_bool(0.3),
    }];
    for i in 0..rng.random_range(2..=6) {
        columns.push(Column {
            name: format!("c{i}"),
            ty: random_ty(rng),
            nullable: rng.random_bool(0.7),
        });
    }
    let indexable: Vec<String> = columns
        .iter()
        .filter(|c| !matches!(c.ty, Ty::Bool | Ty::Double))
        .map(|c| c.name.clone())
        .collect();
    let mut indexes = Vec::new();
    for _ in 0..rng.random_range(0..=2) {
        let c = indexable.choose(rng).unwrap().clone();
        if !indexes.contains(&c) {
            indexes.push(c);
        }
    }
    Table {
        name: name.into(),
        columns,
        indexes,
    }
}

/// A random value of `ty`; NULL only when `nullable`.
pub fn random_val(rng: &mut SmallRng, ty: Ty, nullable: bool) -> Val {
    if nullable && rng.random_bool(0.15) {
        return Val::Null;
    }
    let edge = rng.random_bool(0.3);
    match ty {
        Ty::Int => Val::Int(if edge {
            *[0, 1, -1, i32::MAX as i64, i32::MIN as i64, 2, -2, 100]
                .choose(rng)
                .unwrap()
        } else {
            small_int(rng)
        }),
        Ty::BigInt => Val::Int(if edge {
            *[
                0,
                1,
                -1,
                i64::MAX,
                i64::MIN,
                i64::MAX - 1,
                i32::MAX as i64,
                i32::MIN as i64,
                1 << 32,
            ]
            .choose(rng)
            .unwrap()
        } else if rng.random_bool(0.2) {
            rng.random_range(-(1i64 << 40)..(1i64 << 40))
        } else {
            small_int(rng)
        }),
        Ty::Double => Val::Double(random_double(rng, edge)),
        Ty::Decimal(p, s) => Val::Dec(random_decimal(rng, p, s, edge)),
        Ty::Date => Val::Date(if edge {
            DATES.choose(rng).unwrap().to_string()
        } else {
            format!(
                "{:04}-{:02}-{:02}",
                rng.random_range(1900..2100),
                rng.random_range(1..=12),
                rng.random_range(1..=28)
            )
        }),
        Ty::Char(n) | Ty::Varchar(n) => Val::Str(random_string(rng, n as usize, edge)),
        Ty::Bool => Val::Bool(rng.random_bool(0.5)),
    }
}

fn small_int(rng: &mut SmallRng) -> i64 {
    if rng.random_bool(0.5) {
        rng.random_range(-5..=5)
    } else {
        rng.random_range(-1000..=1000)
    }
}

/// A double: a multiple of 1/16 no larger than 2^32 in magnitude. Not -0.0:
/// strata's count(DISTINCT) and PARTITION BY tell it from 0.0, its GROUP BY
/// and `=` do not (an open DataFusion bug, docs/sql-differences.md).
pub fn random_double(rng: &mut SmallRng, edge: bool) -> f64 {
    if edge {
        *[0.0, 1.0, -1.0, 0.5, -0.0625, 4294967296.0, -4294967296.0]
            .choose(rng)
            .unwrap()
    } else {
        rng.random_range(-16_000i64..=16_000) as f64 / 16.0
    }
}

/// A DECIMAL(p,s) value as plain text.
pub fn random_decimal(rng: &mut SmallRng, p: u8, s: u8, edge: bool) -> String {
    let max = 10i128.pow(p as u32) - 1;
    let unscaled: i128 = if edge {
        *[0, 1, -1, max, -max, max / 2, 10i128.pow(s as u32)]
            .choose(rng)
            .unwrap()
    } else {
        rng.random_range(-(max.min(1_000_000))..=max.min(1_000_000))
    };
    let unscaled = unscaled.clamp(-max, max);
    decimal_text(unscaled, s)
}

/// `unscaled / 10^scale` in plain notation.
pub fn decimal_text(unscaled: i128, scale: u8) -> String {
    let neg = unscaled < 0;
    let digits = unscaled.unsigned_abs().to_string();
    let s = scale as usize;
    let body = if s == 0 {
        digits
    } else {
        let padded = format!("{digits:0>width$}", width = s + 1);
        let (int, frac) = padded.split_at(padded.len() - s);
        format!("{int}.{frac}")
    };
    if neg { format!("-{body}") } else { body }
}

/// A string of at most `max_bytes` bytes (empty, short, or as long as fits).
pub fn random_string(rng: &mut SmallRng, max_bytes: usize, edge: bool) -> String {
    let target = if edge {
        *[0, max_bytes, 1].choose(rng).unwrap()
    } else {
        rng.random_range(0..=max_bytes.min(6))
    };
    let mut s = String::new();
    while s.len() < target {
        let c = ALPHABET.choose(rng).unwrap();
        if s.len() + c.len() > max_bytes {
            if s.len() + 1 > max_bytes {
                break;
            }
            s.push('a');
            continue;
        }
        s.push_str(c);
    }
    s
}

/// A literal of a kind (for expressions): a random value of a type of that kind.
pub fn random_literal(rng: &mut SmallRng, kind: Kind) -> (Val, Ty) {
    let ty = match kind {
        Kind::Int => Ty::Int,
        Kind::BigInt => Ty::BigInt,
        Kind::Double => Ty::Double,
        Kind::Decimal => {
            let p = *[3u8, 10, 18].choose(rng).unwrap();
            Ty::Decimal(p, rng.random_range(0..=p.min(4)))
        }
        Kind::Date => Ty::Date,
        Kind::Str => Ty::Varchar(8),
        Kind::Bool => Ty::Bool,
    };
    (random_val(rng, ty, false), ty)
}

/// The INSERT statements that fill `table` with `rows` random rows, in
/// batches of at most 50 rows.
pub fn insert_script(rng: &mut SmallRng, table: &Table, rows: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut left = rows;
    while left > 0 {
        let n = left.min(50);
        left -= n;
        let tuples: Vec<String> = (0..n)
            .map(|_| {
                let vals: Vec<String> = table
                    .columns
                    .iter()
                    .map(|c| random_val(rng, c.ty, c.nullable).sql(c.ty))
                    .collect();
                format!("({})", vals.join(", "))
            })
            .collect();
        out.push(format!(
            "INSERT INTO {} VALUES {}",
            table.name,
            tuples.join(", ")
        ));
    }
    out
}
