//! Values written into a statement's text as SQL literals, for the clients
//! that bind parameters: `strata serve`'s portals (`$n` from the wire) and the
//! Python binding's `execute(sql, params)`.
//!
//! strata's SQL session runs statements as text (its own paths — direct
//! writes, COPY, DDL, RETURNING — start from the text, not from DataFusion's
//! plan), so a bound value becomes a literal of its type at the places the
//! SQL tokenizer found `$n` ([`crate::prepare::placeholders`]). A value never
//! becomes SQL syntax: the callers check numbers are numbers and dates are
//! dates, strings are quoted here with their quotes doubled, and a negative
//! number is parenthesized so `- $1` never becomes `--` (a comment).

use std::ops::Range;

use crate::error::SqlError;

/// Why a statement's parameters could not be bound.
#[derive(Debug)]
pub enum BindError {
    /// The statement's text does not tokenize.
    Syntax(SqlError),
    /// The statement uses `$n` but only `bound` values were given.
    Missing { n: usize, bound: usize },
}

impl std::fmt::Display for BindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BindError::Syntax(e) => write!(f, "{e}"),
            BindError::Missing { n, bound } => write!(
                f,
                "the statement uses ${n} but {bound} parameter(s) were bound"
            ),
        }
    }
}

/// `sql` with every `$n` replaced by `literals[n - 1]`.
pub fn bind(sql: &str, literals: &[String]) -> Result<String, BindError> {
    let places = crate::prepare::placeholders(sql).map_err(BindError::Syntax)?;
    substitute(sql, &places, literals)
}

/// `sql` with the placeholders found at `places` (byte range, number from 1)
/// replaced by `literals[n - 1]`.
pub fn substitute(
    sql: &str,
    places: &[(Range<usize>, usize)],
    literals: &[String],
) -> Result<String, BindError> {
    if places.is_empty() {
        return Ok(sql.to_owned());
    }
    let mut out = String::with_capacity(sql.len() + 16 * literals.len());
    let mut at = 0;
    for (range, n) in places {
        let lit = literals.get(n - 1).ok_or(BindError::Missing {
            n: *n,
            bound: literals.len(),
        })?;
        out.push_str(&sql[at..range.start]);
        out.push_str(lit);
        at = range.end;
    }
    out.push_str(&sql[at..]);
    Ok(out)
}

/// `s` as a quoted SQL string.
pub fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A number's text (already checked to be one), negative ones in
/// parentheses.
pub fn number(t: &str) -> String {
    if t.starts_with('-') {
        format!("({t})")
    } else {
        t.to_owned()
    }
}

/// A DOUBLE literal (strata reads `1.5` as an exact DECIMAL), NaN and the
/// infinities included.
pub fn double(f: f64) -> String {
    if f.is_nan() {
        "CAST('NaN' AS DOUBLE)".into()
    } else if f.is_infinite() && f > 0.0 {
        "CAST('Infinity' AS DOUBLE)".into()
    } else if f.is_infinite() {
        "CAST('-Infinity' AS DOUBLE)".into()
    } else {
        format!("CAST({} AS DOUBLE)", number(&format!("{f:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_become_literals_outside_strings_and_missing_ones_are_named() {
        let lits = vec![number("-5"), quoted("it's $1")];
        assert_eq!(
            bind("SELECT $1, '$2', $2 -- $1", &lits).unwrap(),
            "SELECT (-5), '$2', 'it''s $1' -- $1"
        );
        let e = bind("SELECT $3", &lits).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the statement uses $3 but 2 parameter(s) were bound"
        );
        assert_eq!(double(1.5), "CAST(1.5 AS DOUBLE)");
        assert_eq!(double(-0.25), "CAST((-0.25) AS DOUBLE)");
        assert_eq!(double(f64::NEG_INFINITY), "CAST('-Infinity' AS DOUBLE)");
    }
}
