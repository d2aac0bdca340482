//! Answers as both engines give them, reduced to canonical cells, and their
//! comparison: as multisets of rows unless the statement's ORDER BY makes the
//! order total, integers and decimals by exact value (`1.50` = `1.5` = the
//! integer's text when the scale's digits are zero), floats (and a float
//! against an exact number) within a relative tolerance, text, dates and
//! booleans exactly.

use std::cmp::Ordering;

/// One value of an answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    /// An integer or decimal, normalized: no `+`, no trailing fraction
    /// zeros, no `-0`.
    Exact(String),
    Float(f64),
    Text(String),
    Bool(bool),
    /// YYYY-MM-DD.
    Date(String),
    /// A type the tester does not generate, as text.
    Other(String),
}

/// What a column's values are read as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellKind {
    Exact,
    Float,
    Text,
    Bool,
    Date,
    Other,
}

impl CellKind {
    /// The kind of a DuckDB type name (`INTEGER`, `DECIMAL(18,2)`, `HUGEINT`…).
    pub fn of_duckdb(ty: &str) -> CellKind {
        let t = ty.to_ascii_uppercase();
        if t.starts_with("DECIMAL") || t.ends_with("INT") || t == "INTEGER" {
            CellKind::Exact
        } else if t == "DOUBLE" || t == "FLOAT" || t == "REAL" {
            CellKind::Float
        } else if t == "VARCHAR" {
            CellKind::Text
        } else if t == "BOOLEAN" {
            CellKind::Bool
        } else if t == "DATE" {
            CellKind::Date
        } else {
            CellKind::Other
        }
    }

    /// Reads a value written as text by its engine.
    pub fn cell(self, text: &str) -> Cell {
        match self {
            CellKind::Exact => Cell::Exact(normalize_exact(text)),
            CellKind::Float => Cell::Float(parse_float(text)),
            CellKind::Text => Cell::Text(text.to_string()),
            CellKind::Bool => Cell::Bool(text.eq_ignore_ascii_case("true")),
            CellKind::Date => Cell::Date(text.to_string()),
            CellKind::Other => Cell::Other(text.to_string()),
        }
    }
}

fn parse_float(text: &str) -> f64 {
    match text.to_ascii_lowercase().as_str() {
        "inf" | "infinity" | "+inf" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        t => t.parse().unwrap_or(f64::NAN),
    }
}

/// `+001.500` → `1.5`, `-0.00` → `0`, `12.` → `12`.
pub fn normalize_exact(text: &str) -> String {
    let t = text.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let int = int.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let body = if frac.is_empty() {
        int.to_string()
    } else {
        format!("{int}.{frac}")
    };
    if neg && body != "0" {
        format!("-{body}")
    } else {
        body
    }
}

impl Cell {
    fn as_f64(&self) -> Option<f64> {
        match self {
            Cell::Exact(s) => s.parse().ok(),
            Cell::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// Text as it would be written in a reproduction.
    pub fn text(&self) -> String {
        match self {
            Cell::Null => "NULL".into(),
            Cell::Exact(s) | Cell::Text(s) | Cell::Date(s) | Cell::Other(s) => s.clone(),
            Cell::Float(f) => format!("{f:?}"),
            Cell::Bool(b) => b.to_string(),
        }
    }

    /// Whether two engines' values are the same value.
    pub fn agrees(&self, other: &Cell) -> bool {
        self.agrees_within(other, FLOAT_TOLERANCE)
    }

    /// [`Cell::agrees`] with floats compared within relative tolerance `rel`.
    pub fn agrees_within(&self, other: &Cell, rel: f64) -> bool {
        match (self, other) {
            (Cell::Null, Cell::Null) => true,
            (Cell::Null, _) | (_, Cell::Null) => false,
            (Cell::Exact(a), Cell::Exact(b)) => a == b,
            (Cell::Float(_), Cell::Float(_) | Cell::Exact(_))
            | (Cell::Exact(_), Cell::Float(_)) => float_within(
                self.as_f64().unwrap_or(f64::NAN),
                other.as_f64().unwrap_or(f64::NAN),
                rel,
            ),
            (Cell::Bool(a), Cell::Bool(b)) => a == b,
            _ => self.text() == other.text(),
        }
    }

    /// An order for sorting a multiset (numbers by value, then the rest by
    /// text); equal values under [`Cell::agrees`] sort next to each other.
    fn order(&self, other: &Cell) -> Ordering {
        fn rank(c: &Cell) -> u8 {
            match c {
                Cell::Null => 0,
                Cell::Exact(_) | Cell::Float(_) => 1,
                Cell::Bool(_) => 2,
                _ => 3,
            }
        }
        rank(self)
            .cmp(&rank(other))
            .then_with(|| match (self, other) {
                // Integers past 2^53 tie in f64: the text breaks the tie,
                // the same way in both answers.
                (Cell::Exact(a), Cell::Exact(b)) => {
                    let (x, y) = (self.as_f64().unwrap_or(0.0), other.as_f64().unwrap_or(0.0));
                    x.total_cmp(&y).then_with(|| a.cmp(b))
                }
                // -0.0 sorts as 0.0 (`+ 0.0` makes it so): the same value.
                _ => match (self.as_f64(), other.as_f64()) {
                    (Some(a), Some(b)) => (a + 0.0).total_cmp(&(b + 0.0)),
                    _ => self.text().cmp(&other.text()),
                },
            })
    }
}

/// How far two floats may be apart, relatively, and be one answer.
pub const FLOAT_TOLERANCE: f64 = 1e-9;

/// Relative tolerance `rel` (both infinite of one sign, or both NaN, agree).
pub fn float_within(a: f64, b: f64, rel: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    let scale = a.abs().max(b.abs());
    (a - b).abs() <= rel * scale || (a - b).abs() <= 1e-12
}

/// Rows of one answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    pub columns: usize,
    pub rows: Vec<Vec<Cell>>,
}

impl Answer {
    /// The rows as a few lines of text for a report (at most `max` rows).
    pub fn show(&self, max: usize) -> String {
        let mut out = String::new();
        for r in self.rows.iter().take(max) {
            let cells: Vec<String> = r.iter().map(Cell::text).collect();
            out.push_str(&format!("    ({})\n", cells.join(", ")));
        }
        if self.rows.len() > max {
            out.push_str(&format!("    … {} rows in all\n", self.rows.len()));
        }
        if self.rows.is_empty() {
            out.push_str("    (no rows)\n");
        }
        out
    }

    fn sorted(&self) -> Vec<&Vec<Cell>> {
        let mut rows: Vec<&Vec<Cell>> = self.rows.iter().collect();
        rows.sort_by(|a, b| {
            a.iter()
                .zip(b.iter())
                .map(|(x, y)| x.order(y))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        });
        rows
    }
}

fn rows_agree(a: &[Cell], b: &[Cell], rel: f64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.agrees_within(y, rel))
}

/// Whether two answers agree: as sequences when `ordered`, else as multisets.
pub fn answers_agree(a: &Answer, b: &Answer, ordered: bool) -> bool {
    answers_agree_within(a, b, ordered, FLOAT_TOLERANCE)
}

/// [`answers_agree`] with floats compared within relative tolerance `rel`.
pub fn answers_agree_within(a: &Answer, b: &Answer, ordered: bool, rel: f64) -> bool {
    if a.columns != b.columns || a.rows.len() != b.rows.len() {
        return false;
    }
    if ordered {
        return a
            .rows
            .iter()
            .zip(&b.rows)
            .all(|(x, y)| rows_agree(x, y, rel));
    }
    a.sorted()
        .iter()
        .zip(b.sorted().iter())
        .all(|(x, y)| rows_agree(x, y, rel))
}

/// The union of answers (TLP's partitions), as one answer.
pub fn union(parts: &[&Answer]) -> Answer {
    Answer {
        columns: parts.first().map_or(0, |p| p.columns),
        rows: parts.iter().flat_map(|p| p.rows.iter().cloned()).collect(),
    }
}
