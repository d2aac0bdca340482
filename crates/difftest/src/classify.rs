//! The verdict on one execution: agreement, both refusing, or a finding in a
//! class. Known differences are a short, named list, each with its reason;
//! everything else is a finding named after what happened (which side
//! refused and its message with the numbers taken out, or which family of
//! query answered differently), so that a run's report groups findings into
//! classes without hiding any.

use crate::compare::{Answer, Cell, answers_agree, answers_agree_within};
use crate::oracle::DuckAnswer;
use crate::strata_runner::Outcome;

/// A class of findings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Class {
    pub name: String,
    /// Whether the class is named in [`KNOWN`] (the run does not fail on it).
    pub explained: bool,
    /// "known difference", "open bug" or "UNEXPLAINED".
    pub label: &'static str,
    pub reason: String,
}

impl Class {
    /// A class the tester cannot explain: the run fails on it.
    pub fn unexplained(name: impl Into<String>, reason: impl Into<String>) -> Class {
        Class {
            name: name.into(),
            explained: false,
            label: "UNEXPLAINED",
            reason: reason.into(),
        }
    }
}

/// What a known class is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// DuckDB differs from the SQL standard and PostgreSQL by its own
    /// choice, or strata follows PostgreSQL where DuckDB does not.
    Difference,
    /// A strata bug (in DataFusion, upstream) recorded in
    /// docs/sql-differences.md with its reproduction, not fixed here.
    OpenBug,
}

/// A known class.
pub struct Known {
    pub name: &'static str,
    pub reason: &'static str,
    pub status: Status,
}

impl Known {
    pub fn class(&self) -> Class {
        Class {
            name: self.name.into(),
            explained: true,
            label: match self.status {
                Status::Difference => "known difference",
                Status::OpenBug => "open bug",
            },
            reason: self.reason.into(),
        }
    }
}

/// An integer overflow DuckDB raises in an expression strata does not
/// compute.
pub const UNCOMPUTED_OVERFLOW: Known = Known {
    name: "an integer overflow DuckDB raises in an expression strata does not compute",
    reason: "strata's integer + - * and negation are checked (crates/sql/src/rules/overflow.rs, which raises \"out of range\"; a wrapped sum would show in TLP), so an answer where DuckDB overflowed is one where strata did not compute that expression for that row: its optimizer simplified it away as PostgreSQL's does (count(DISTINCT e) IS NULL is false, x % 1 is 0, e IS NOT NULL of a NOT NULL e is true, a CASE arm that cannot be taken), or computed it only for the rows that need it (a subquery condition on outer columns, for the rows with a partner; a LEFT JOIN's WHERE, after the join). SQL leaves the order and extent of evaluation to the engine.",
    status: Status::Difference,
};

/// DuckDB refuses a negative DECIMAL cast to DECIMAL(p,p) whose rounded
/// value fits.
pub const DUCK_NEGATIVE_DECIMAL_CAST: Known = Known {
    name: "DuckDB refuses a negative value cast to DECIMAL(p,p) that fits",
    reason: "DuckDB 1.4.4 refuses CAST(-0.793007 AS DECIMAL(2,2)) (\"value is out of range\") though -0.79 fits; PostgreSQL and strata round and answer. strata refuses what does not fit after rounding (-0.995 to DECIMAL(2,2)), as PostgreSQL.",
    status: Status::Difference,
};

/// An error in an expression DuckDB does not compute.
pub const DUCK_SKIPS_ERROR: Known = Known {
    name: "an error in an expression DuckDB does not compute",
    reason: "strata refuses a cast that does not fit (\"too large to store\", \"Can't cast value\") in an expression whose value the answer does not need, which DuckDB skips: the other arm of an AND/OR it evaluates first, a CASE operand it folds because every WHEN is NULL. PostgreSQL's manual (4.2.14) leaves the order of evaluation of subexpressions undefined; the value strata refuses is one that does not fit its type.",
    status: Status::Difference,
};

/// Sums of floats in different orders.
pub const FLOAT_SUM_ORDER: Known = Known {
    name: "a sum of doubles added in another order",
    reason: "The answers differ only in floats, by less than 1e-6 relative, in a query that sums or averages doubles: floating-point addition is not associative, and the engines add in different orders (parallel partial sums). The tester's stored doubles add exactly; computed ones (products, quotients, large BIGINTs cast to DOUBLE) need not.",
    status: Status::Difference,
};

/// DuckDB does not enforce VARCHAR(n) and CHAR(n) lengths (its documented
/// choice); strata, as PostgreSQL, refuses a longer string.
pub const VARCHAR_LENGTH: Known = Known {
    name: "VARCHAR(n) length not enforced by DuckDB",
    reason: "DuckDB accepts strings longer than a column's declared VARCHAR(n)/CHAR(n) (its documented choice: the length is not checked); strata, as PostgreSQL and the SQL standard, refuses them.",
    status: Status::Difference,
};

/// DuckDB refuses `-9223372036854775808 % -1` (and the INTEGER one); the
/// remainder is 0, which strata answers as PostgreSQL does.
pub const MOD_MIN: Known = Known {
    name: "DuckDB refuses the smallest integer % -1",
    reason: "DuckDB raises \"Overflow in division\" for MIN % -1; the remainder is 0, and strata, as PostgreSQL, answers 0.",
    status: Status::Difference,
};

/// DuckDB multiplies DECIMALs of up to 18 digits in 64 bits and raises an
/// overflow where the product's declared type holds it.
pub const DECIMAL_MUL: Known = Known {
    name: "DuckDB's DECIMAL arithmetic overflows its 64-bit integer",
    reason: "DuckDB adds, subtracts and multiplies DECIMALs of up to 18 digits in a 64-bit integer and refuses a result past it (\"add an explicit cast to a bigger decimal\"); the result fits its SQL type, and strata, as PostgreSQL, answers it.",
    status: Status::Difference,
};

/// DuckDB rounds DECIMALs to fit its 38 digits where strata keeps them.
pub const DECIMAL_ROUNDED: Known = Known {
    name: "DuckDB rounds a DECIMAL whose type would pass 38 digits",
    reason: "Where the exact type of a result would need more than 38 digits (a UNION of DECIMAL(25,24) and DECIMAL(17,1) needs 16 integer and 24 fraction digits), DuckDB lowers its scale and rounds every value (0.000000000000251577480625 becomes 0.0000000000002515774806); strata keeps the values' scale, as PostgreSQL's numeric does. The answers agree once strata's are rounded to DuckDB's scale.",
    status: Status::Difference,
};

/// DuckDB coerces DECIMAL operands to one 18-digit type that may not hold
/// them.
pub const DECIMAL_COERCION: Known = Known {
    name: "DuckDB coerces DECIMAL operands to a type that does not hold them",
    reason: "DuckDB brings both operands of a DECIMAL + - or comparison to one DECIMAL type of at most 18 digits when both have 18 or fewer (DECIMAL(18,0) and DECIMAL(18,2) become DECIMAL(18,2)) and refuses an operand that type cannot hold (\"Casting value … to type DECIMAL(18,2) failed\"); strata, as PostgreSQL, computes the exact result.",
    status: Status::Difference,
};

/// strata answered no rows without reaching a value DuckDB refused.
pub const UNREAD_ROWS: Known = Known {
    name: "an error DuckDB raises on rows strata never reads",
    reason: "strata answered no rows (or changed none) where DuckDB refused a value: DataFusion skips what cannot change the answer (the other side of an INTERSECT whose first side is empty, a join side with no partner), and with it the value that fails; a plain UPDATE or DELETE computes a constant that cannot be computed row by row, so over no rows it never fails, where DuckDB folds it while planning. Where an expression is evaluated is the engine's choice in SQL; PostgreSQL skips such work too.",
    status: Status::Difference,
};

/// DuckDB writes a DECIMAL(p,p) without its leading zero.
pub const DECIMAL_TEXT: Known = Known {
    name: "DuckDB writes DECIMAL(p,p) as text without the leading zero",
    reason: "CAST(CAST('-0.957' AS DECIMAL(3,3)) AS VARCHAR) is '-.957' in DuckDB, '-0.957' in strata and PostgreSQL.",
    status: Status::Difference,
};

/// DuckDB's optimizer rewrites away an expression that overflows.
pub const OVERFLOW_REWRITTEN: Known = Known {
    name: "DuckDB rewrites away an expression that overflows",
    reason: "strata refuses an integer overflow (or abs of the smallest integer) that DuckDB never computes: its optimizer rewrites sum(x + c) into sum(x) + c * count(x), (x * x) IS NULL into x IS NULL, c - x = d into x = c - d, abs(x) IS NOT NULL into x IS NOT NULL. PostgreSQL, like strata, computes and refuses.",
    status: Status::Difference,
};

/// strata's optimizer skips an expression whose error DuckDB raises.
pub const UNEVALUATED: Known = Known {
    name: "an error strata's optimizer never evaluates",
    reason: "DuckDB refuses abs(-2147483648) in an expression strata's optimizer removes without computing it (count(DISTINCT abs(k)) IS NULL is false whatever k is).",
    status: Status::Difference,
};

/// Constant subexpressions are evaluated while planning.
pub const CONST_FOLD: Known = Known {
    name: "a constant expression's error raised while planning",
    reason: "strata (DataFusion) evaluates a constant expression once, whatever the rows, as PostgreSQL folds it while planning (its manual warns that a CASE does not shield a constant 1/0): a constant that fails refuses the statement even when no row reaches it. DuckDB evaluates it only for the rows that reach it. Told apart by DuckDB answering no row (changing none), or by strata refusing the statement the same way over the same tables left empty.",
    status: Status::Difference,
};

/// DataFusion names two expressions alike when a CAST changes nothing.
pub const NOOP_CAST_NAMES: Known = Known {
    name: "DataFusion refuses two expressions a no-op CAST names alike",
    reason: "DataFusion drops a CAST to the type a column already has and then finds two expressions of one name: SELECT CAST(k AS INTEGER) FROM t ORDER BY k, or count(DISTINCT c) next to count(DISTINCT CAST(c AS INTEGER)), are refused (\"Projections require unique expression names\", \"duplicate unqualified field name\"). A refusal, not a wrong answer; upstream.",
    status: Status::OpenBug,
};

/// DataFusion's physical planner disagrees with its logical one about nullability.
pub const NULLABILITY_CHECK: Known = Known {
    name: "DataFusion's physical schema check refuses a CASE's nullability",
    reason: "DataFusion 55 refuses some DISTINCT and GROUP BY over COALESCE/CASE of nullable and NOT NULL columns with \"Physical input schema should be the same as the one converted from logical input schema\": the two planners infer the expression's nullability differently. A refusal, not a wrong answer; upstream.",
    status: Status::OpenBug,
};

/// Every known class, for reports and docs.
pub const KNOWN: &[&Known] = &[
    &UNCOMPUTED_OVERFLOW,
    &DUCK_NEGATIVE_DECIMAL_CAST,
    &DUCK_SKIPS_ERROR,
    &FLOAT_SUM_ORDER,
    &VARCHAR_LENGTH,
    &MOD_MIN,
    &DECIMAL_MUL,
    &DECIMAL_COERCION,
    &CONST_FOLD,
    &UNREAD_ROWS,
    &UNEVALUATED,
    &OVERFLOW_REWRITTEN,
    &DECIMAL_TEXT,
    &NOOP_CAST_NAMES,
    &NULLABILITY_CHECK,
];

/// What one execution came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Agree,
    BothRefuse,
    Finding(Class),
}

/// A message with its numbers and quoted parts taken out, as a class name.
pub fn shape(msg: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut last_digit = false;
    for ch in msg.chars() {
        if ch == '\'' || ch == '"' {
            if !quoted {
                out.push('…');
            }
            quoted = !quoted;
            continue;
        }
        if quoted {
            continue;
        }
        if ch.is_ascii_digit() {
            if !last_digit {
                out.push('N');
            }
            last_digit = true;
            continue;
        }
        last_digit = false;
        out.push(ch);
    }
    out.chars().take(90).collect()
}

fn overflow(duck_error: &str, width: &str) -> bool {
    duck_error.contains(width)
        && (duck_error.contains("Overflow") || duck_error.contains("out of range"))
}

fn finding(name: String, reason: &str) -> Verdict {
    Verdict::Finding(Class::unexplained(name, reason))
}

/// The column DuckDB names in "when casting from source column c".
fn source_column(e: &str) -> Option<&str> {
    let rest = e.split("source column ").nth(1)?;
    rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
}

/// An answer with every `0` just before a `.` in its text taken out, so
/// DuckDB's `-.957` (a DECIMAL(p,p) cast to text) and strata's `-0.957`
/// compare equal, alone or inside a longer string (`'a1' || CAST(x AS
/// VARCHAR)` is `a1.5` in DuckDB and `a10.5` in strata). Both answers are
/// written so before they are compared.
fn leading_zero(a: &Answer) -> Answer {
    let fix = |c: &Cell| match c {
        Cell::Text(t) if t.contains('.') => Cell::Text(t.replace("0.", ".")),
        c => c.clone(),
    };
    Answer {
        columns: a.columns,
        rows: a.rows.iter().map(|r| r.iter().map(fix).collect()).collect(),
    }
}

/// The fraction digits of an exact number's text.
fn scale(t: &str) -> usize {
    t.split_once('.').map_or(0, |(_, f)| f.len())
}

/// `t` (an exact number's normalized text) rounded half away from zero to
/// `to` fraction digits, normalized again; `None` past 38 digits.
fn round_exact(t: &str, to: usize) -> Option<String> {
    let from = scale(t);
    if from <= to {
        return Some(t.to_string());
    }
    let negative = t.starts_with('-');
    let digits: String = t.chars().filter(char::is_ascii_digit).collect();
    let n: i128 = digits.parse().ok()?;
    let cut = 10i128.checked_pow(u32::try_from(from - to).ok()?)?;
    let mut q = n / cut;
    if (n % cut) * 2 >= cut {
        q += 1;
    }
    let text = q.to_string();
    let text = if to == 0 {
        text
    } else {
        let padded = format!("{text:0>width$}", width = to + 1);
        let (whole, fraction) = padded.split_at(padded.len() - to);
        let fraction = fraction.trim_end_matches('0');
        if fraction.is_empty() {
            whole.to_string()
        } else {
            format!("{whole}.{fraction}")
        }
    };
    Some(
        if negative && text.chars().any(|c| ('1'..='9').contains(&c)) {
            format!("-{text}")
        } else {
            text
        },
    )
}

/// strata's answer `a` with every exact number of a column rounded to the
/// largest scale DuckDB's answer `b` shows in that column, when that is
/// smaller than strata's somewhere; `None` when no column is.
fn rounded_to_scales_of(a: &Answer, b: &Answer) -> Option<Answer> {
    let widest = |x: &Answer, col: usize| {
        x.rows
            .iter()
            .filter_map(|r| match r.get(col) {
                Some(Cell::Exact(t)) => Some(scale(t)),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    };
    let scales: Vec<usize> = (0..a.columns).map(|c| widest(b, c)).collect();
    if (0..a.columns).all(|c| widest(a, c) <= scales[c]) {
        return None;
    }
    let rows = a
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .zip(&scales)
                .map(|(c, &to)| match c {
                    Cell::Exact(t) => round_exact(t, to).map(Cell::Exact),
                    c => Some(c.clone()),
                })
                .collect::<Option<Vec<_>>>()
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Answer {
        columns: a.columns,
        rows,
    })
}

/// Whether the statement sums or averages (or windows over) something: the
/// places where doubles are added in an order the engine picks.
fn sums_floats(sql: &str) -> bool {
    ["sum(", "avg(", " OVER ("].iter().any(|f| sql.contains(f))
}

/// Whether DuckDB's error is its refusal of a negative value cast to a
/// DECIMAL(p,p) that holds the value rounded to its scale (`Casting value
/// "-0.793007" to type DECIMAL(2,2) failed`).
fn negative_decimal_cast_fits(e: &str) -> bool {
    let Some(rest) = e.split("Casting value \"").nth(1) else {
        return false;
    };
    let Some((value, rest)) = rest.split_once('"') else {
        return false;
    };
    let Some(ty) = rest
        .split("to type DECIMAL(")
        .nth(1)
        .and_then(|t| t.split_once(')'))
        .map(|(t, _)| t)
    else {
        return false;
    };
    let Some((p, s)) = ty.split_once(',') else {
        return false;
    };
    let (Ok(p), Ok(s), Ok(v)) = (
        p.trim().parse::<i32>(),
        s.trim().parse::<i32>(),
        value.parse::<f64>(),
    ) else {
        return false;
    };
    // Rounded half away from zero to the scale, as PostgreSQL and strata do.
    let unit = 10f64.powi(s);
    let rounded = (v.abs() * unit).round() / unit;
    v < 0.0 && rounded < 10f64.powi(p - s)
}

/// Whether strata's answer is no row, or a DML statement's count of 0:
/// nothing read reached the expression DuckDB failed on.
fn changed_nothing(a: &Answer, sql: &str) -> bool {
    let dml = ["INSERT", "UPDATE", "DELETE"]
        .iter()
        .any(|w| sql.trim_start().starts_with(w));
    a.rows.is_empty() || (dml && a.rows.len() == 1 && a.rows[0] == [Cell::Exact("0".into())])
}

/// Whether the value DuckDB failed to cast to `ty` is written in the
/// statement as a literal of that type (otherwise DuckDB's coercion made
/// the cast: a column's value, or a literal of another type).
fn written_as(e: &str, sql: &str, ty: &str) -> bool {
    match e
        .split("Casting value \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
    {
        Some(value) => sql.contains(&format!("'{value}' AS {ty}")),
        None => true,
    }
}

/// Whether the value DuckDB failed to cast to `ty` is written in the
/// statement as a literal of another DECIMAL type (`CAST('-9…9' AS
/// DECIMAL(18,0))` that DuckDB brought to DECIMAL(18,2)).
fn written_as_other_decimal(e: &str, sql: &str, ty: &str) -> bool {
    let Some(value) = e
        .split("Casting value \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
    else {
        return false;
    };
    let literal = format!("'{value}' AS DECIMAL(");
    sql.match_indices(&literal)
        .any(|(i, _)| !sql[i + literal.len() - "DECIMAL(".len()..].starts_with(ty))
}

/// The DECIMAL type of DuckDB's "Casting value … to type DECIMAL(p,s)
/// failed" or "Could not cast value … to DECIMAL(p,s)".
fn coerced_decimal(e: &str) -> Option<String> {
    if !(e.contains("Casting value") || e.contains("Could not cast value")) {
        return None;
    }
    let i = e.find("DECIMAL(")?;
    let j = e[i..].find(')')?;
    Some(e[i..i + j + 1].to_string())
}

/// The verdict on strata's outcome against DuckDB's answer. `duck_sql` is
/// the statement as DuckDB ran it.
pub fn classify(
    strata: &Outcome,
    duck: &DuckAnswer,
    ordered: bool,
    family: &str,
    duck_sql: &str,
) -> Verdict {
    match (strata, duck) {
        (Outcome::Panic(p), _) => finding(
            format!("panic: {}", shape(p)),
            "strata panicked (caught per statement)",
        ),
        (Outcome::Error(_), DuckAnswer::Error(_)) => Verdict::BothRefuse,
        (Outcome::Rows(a), DuckAnswer::Rows(b)) => {
            if answers_agree(a, b, ordered) {
                Verdict::Agree
            } else if answers_agree(&leading_zero(a), &leading_zero(b), ordered) {
                Verdict::Finding(DECIMAL_TEXT.class())
            } else if sums_floats(duck_sql) && answers_agree_within(a, b, ordered, 1e-6) {
                Verdict::Finding(FLOAT_SUM_ORDER.class())
            } else if duck_sql.contains("DECIMAL")
                && let Some(rounded) = rounded_to_scales_of(a, b)
                && answers_agree(&rounded, b, ordered)
            {
                Verdict::Finding(DECIMAL_ROUNDED.class())
            } else {
                finding(
                    format!("different answers: {family}"),
                    "both engines answered, with different rows",
                )
            }
        }
        (Outcome::Rows(a), DuckAnswer::Error(e)) => {
            if changed_nothing(a, duck_sql)
                && (e.contains("Conversion Error") || e.contains("Out of Range"))
            {
                Verdict::Finding(UNREAD_ROWS.class())
            } else if overflow(e, "INT64")
                || overflow(e, "INT32")
                || e.contains("Overflow in negation")
            {
                Verdict::Finding(UNCOMPUTED_OVERFLOW.class())
            } else if negative_decimal_cast_fits(e) {
                Verdict::Finding(DUCK_NEGATIVE_DECIMAL_CAST.class())
            } else if e.contains("Overflow in division") && duck_sql.contains(" % NULLIF(") {
                // A remainder in the statement (the generator writes each as
                // `a % NULLIF(b, 0)`); strata refuses MIN / -1 itself.
                Verdict::Finding(MOD_MIN.class())
            } else if e.contains("Overflow on abs") {
                Verdict::Finding(UNEVALUATED.class())
            } else if e.contains(" of DECIMAL(") && e.contains("Overflow in") {
                Verdict::Finding(DECIMAL_MUL.class())
            } else if let Some(ty) = coerced_decimal(e)
                && match source_column(e) {
                    Some(c) => !duck_sql.contains(&format!("{c} AS {ty}")),
                    None => {
                        !duck_sql.contains(&format!("AS {ty}"))
                            || written_as_other_decimal(e, duck_sql, &ty)
                            || !written_as(e, duck_sql, &ty)
                    }
                }
            {
                // A DECIMAL type the statement does not write for the value:
                // DuckDB's own coercion of an operand.
                Verdict::Finding(DECIMAL_COERCION.class())
            } else {
                finding(
                    format!("DuckDB refuses, strata answers: {}", shape(e)),
                    "strata answered a statement DuckDB refused",
                )
            }
        }
        (Outcome::Error(e), DuckAnswer::Rows(_)) => {
            if e.contains("too long for") || e.contains("bytes, longer than") {
                Verdict::Finding(VARCHAR_LENGTH.class())
            } else if e.contains("Projections require unique expression names")
                || e.contains("duplicate unqualified field name")
            {
                Verdict::Finding(NOOP_CAST_NAMES.class())
            } else if e.contains("Physical input schema should be the same") {
                Verdict::Finding(NULLABILITY_CHECK.class())
            } else if e.contains(" out of range: ") || e.contains("overflow on abs") {
                Verdict::Finding(OVERFLOW_REWRITTEN.class())
            } else if e.contains("too large to store")
                || e.contains("too small to store")
                || e.contains("Can't cast value")
            {
                Verdict::Finding(DUCK_SKIPS_ERROR.class())
            } else {
                finding(
                    format!("strata refuses, DuckDB answers: {}", shape(e)),
                    "strata refused a statement DuckDB answered",
                )
            }
        }
    }
}

/// Whether a strata refusal is a value error (a cast, an overflow, a
/// division by zero) of the kind constant folding raises.
pub fn value_error(e: &str) -> bool {
    [
        "Cast error",
        "Can't cast",
        "too small to store",
        "too large to store",
        "verflow",
        "Divide by zero",
        "out of range",
    ]
    .iter()
    .any(|m| e.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duckdbs_negative_decimal_cast_is_told_from_a_real_overflow() {
        let e = |v: &str, t: &str| {
            format!(
                "Conversion Error: Casting value \"{v}\" to type DECIMAL({t}) failed: value is out of range!"
            )
        };
        assert!(negative_decimal_cast_fits(&e("-0.793007", "2,2")));
        assert!(negative_decimal_cast_fits(&e("-.785", "2,2")));
        // Rounds to -1.00: does not fit, DuckDB is right to refuse.
        assert!(!negative_decimal_cast_fits(&e("-0.995", "2,2")));
        // Positive, or too large whatever the rounding.
        assert!(!negative_decimal_cast_fits(&e("0.5", "2,2")));
        assert!(!negative_decimal_cast_fits(&e("-7.9858", "3,3")));
        assert!(!negative_decimal_cast_fits("Out of Range Error: Overflow"));
    }

    #[test]
    fn a_literal_of_another_decimal_type_is_duckdbs_coercion() {
        let e = "Conversion Error: Casting value \"-999999999999999999\" to type DECIMAL(18,2) failed: value is out of range!";
        let sql =
            "SELECT CAST('1.5' AS DECIMAL(18,2)) > CAST('-999999999999999999' AS DECIMAL(18,0))";
        assert!(written_as_other_decimal(e, sql, "DECIMAL(18,2)"));
        let own = "SELECT CAST('-999999999999999999' AS DECIMAL(18,2))";
        assert!(!written_as_other_decimal(e, own, "DECIMAL(18,2)"));
    }

    #[test]
    fn a_column_value_duckdb_failed_to_cast_is_its_coercion() {
        let e = "Conversion Error: Casting value \"499999999999999\" to type DECIMAL(18,4) failed: value is out of range!";
        let sql = "SELECT x FROM t2 WHERE (CAST(k AS DECIMAL(13,4)) - c2) BETWEEN CAST('8.3435' AS DECIMAL(18,4)) AND 1";
        assert!(!written_as(e, sql, "DECIMAL(18,4)"));
        let own = "SELECT CAST('499999999999999' AS DECIMAL(18,4))";
        assert!(written_as(e, own, "DECIMAL(18,4)"));
        let count = Answer {
            columns: 1,
            rows: vec![vec![Cell::Exact("0".into())]],
        };
        assert!(changed_nothing(&count, "DELETE FROM t0 WHERE x"));
        assert!(!changed_nothing(&count, "SELECT count(*) FROM t0"));
    }

    #[test]
    fn exact_numbers_round_half_away_from_zero_to_a_scale() {
        assert_eq!(
            round_exact("0.000000000000251577480625", 22).as_deref(),
            Some("0.0000000000002515774806")
        );
        assert_eq!(
            round_exact("0.000000000000475457137156", 22).as_deref(),
            Some("0.0000000000004754571372")
        );
        assert_eq!(
            round_exact("0.999999999998000000000001", 22).as_deref(),
            Some("0.999999999998")
        );
        assert_eq!(round_exact("-2.5", 0).as_deref(), Some("-3"));
        assert_eq!(round_exact("-0.04", 1).as_deref(), Some("0"));
        assert_eq!(round_exact("12.345", 5).as_deref(), Some("12.345"));
        // Rounded, the answers agree; not rounded (or a real difference), not.
        let one = |t: &str| Answer {
            columns: 1,
            rows: vec![vec![Cell::Exact(t.into())], vec![Cell::Null]],
        };
        let strata = one("0.000000000000475457137156");
        let r = rounded_to_scales_of(&strata, &one("0.0000000000004754571372")).unwrap();
        assert!(answers_agree(&r, &one("0.0000000000004754571372"), false));
        let r = rounded_to_scales_of(&strata, &one("0.0000000000004754571373")).unwrap();
        assert!(!answers_agree(&r, &one("0.0000000000004754571373"), false));
        assert!(rounded_to_scales_of(&one("1.5"), &one("1.25")).is_none());
    }

    #[test]
    fn float_sums_in_another_order_are_not_a_wrong_answer() {
        let a = Answer {
            columns: 1,
            rows: vec![vec![Cell::Float(33016073692.25)]],
        };
        let b = Answer {
            columns: 1,
            rows: vec![vec![Cell::Float(33016073557.333332)]],
        };
        let duck = DuckAnswer::Rows(b.clone());
        let sum = "SELECT avg(CAST(c2 AS DOUBLE)) FROM t0";
        assert_eq!(
            classify(&Outcome::Rows(a.clone()), &duck, false, "aggregate", sum),
            Verdict::Finding(FLOAT_SUM_ORDER.class())
        );
        // Without a sum it is a different answer.
        let plain = "SELECT CAST(c2 AS DOUBLE) FROM t0";
        assert!(matches!(
            classify(&Outcome::Rows(a), &duck, false, "select", plain),
            Verdict::Finding(c) if !c.explained
        ));
    }
}
