//! Parsed statements kept by their shape: the statement's text with its
//! literals lifted out.
//!
//! An OLTP client sends the same few statements over and over with other
//! values (`SELECT abalance FROM pgbench_accounts WHERE aid = 42`, then
//! `… = 7`), and on the inline path ([`crate::session::inline`]) parsing
//! them was the largest single cost: a third of a point query's
//! instructions went to sqlparser's tokenizer and parser. SQL Server calls
//! what is done here simple parameterization; strata keeps only the syntax
//! tree (the plan is made again each time, so nothing about the values is
//! assumed): a statement whose shape was parsed before gets a copy of that
//! tree with its own literals put in.
//!
//! Safety of the copy rests on two checks. The shape is taken by a strict
//! lexer that gives up (no shape, the statement is parsed as usual) on
//! anything whose meaning a literal's neighbours could change: comments,
//! quoted identifiers, `$` parameters and dollar quotes, escape and prefixed
//! strings (`E'…'`, `B'…'`), doubled quotes, numbers glued to letters or
//! dots (`1e5`, `.5`), any character outside a small set. And a tree is kept
//! only when its literals, in the syntax tree's visiting order, are exactly
//! the lexer's in text order (same kind, same text): a literal a rewrite
//! removed, moved or changed, or one the visitor does not reach, keeps the
//! shape out of the cache. Statements of one shape differ only in their
//! literals' text, which the parser never branches on, so they parse to the
//! same tree but for those literals.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Value, ValueWithSpan, Visit, VisitMut, Visitor, VisitorMut};
use parking_lot::Mutex;

/// Shapes kept per session; when full, the cache starts over (a client with
/// more distinct statements than this gains little from it anyway).
const CAPACITY: usize = 256;

/// Stands for a number in a shape (no statement with a control character
/// has one).
const NUMBER: char = '\u{1}';
/// Stands for a string.
const TEXT: char = '\u{2}';

/// A literal as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Literal {
    /// Digits, with a fraction or not: `42`, `3.50`.
    Number(String),
    /// The body of a plain single-quoted string without doubled quotes or
    /// backslashes.
    Text(String),
}

/// A statement's text with its literals taken out, and those literals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    pub key: String,
    pub literals: Vec<Literal>,
}

/// The shape of `sql`; `None` when its text holds anything the lexer above
/// does not take.
pub fn shape(sql: &str) -> Option<Shape> {
    let b = sql.as_bytes();
    let mut key = String::with_capacity(sql.len());
    let mut literals = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                // E'…', B'…', X'…', N'…': strings of other kinds.
                if b.get(i) == Some(&b'\'') {
                    return None;
                }
                key.push_str(&sql[start..i]);
            }
            b'0'..=b'9' => {
                if key.ends_with('.') {
                    return None;
                }
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                if b.get(i) == Some(&b'.') {
                    i += 1;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                if b.get(i)
                    .is_some_and(|&n| n.is_ascii_alphanumeric() || n == b'_' || n == b'.')
                {
                    return None;
                }
                literals.push(Literal::Number(sql[start..i].to_string()));
                key.push(NUMBER);
            }
            b'\'' => {
                let start = i + 1;
                let end = start + sql[start..].find('\'')?;
                let body = &sql[start..end];
                if body.contains('\\') || b.get(end + 1) == Some(&b'\'') {
                    return None;
                }
                literals.push(Literal::Text(body.to_string()));
                key.push(TEXT);
                i = end + 1;
            }
            b'-' | b'/' => {
                // `--` and `/*` start comments.
                if matches!(b.get(i + 1), Some(b'-') | Some(b'*')) {
                    return None;
                }
                key.push(c as char);
                i += 1;
            }
            b' ' | b'\t' | b'\n' | b'\r' | b'(' | b')' | b',' | b'.' | b'=' | b'<' | b'>'
            | b'!' | b'*' | b'+' | b'%' | b':' | b';' => {
                key.push(c as char);
                i += 1;
            }
            _ => return None,
        }
    }
    Some(Shape { key, literals })
}

/// The literals of `stmt` the lexer would have lifted out, in the syntax
/// tree's visiting order; `None` for a statement the cache does not keep.
fn literals_of(stmt: &DfStatement) -> Option<Vec<Literal>> {
    struct Collect(Vec<Literal>);
    impl Visitor for Collect {
        type Break = ();
        fn pre_visit_value(&mut self, v: &ValueWithSpan) -> ControlFlow<()> {
            match &v.value {
                Value::Number(n, false) => self.0.push(Literal::Number(n.clone())),
                Value::SingleQuotedString(s) => self.0.push(Literal::Text(s.clone())),
                // Any other literal kind: the lexer never lifts one out, so
                // the lists cannot agree; stop early.
                Value::Number(_, true) => return ControlFlow::Break(()),
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let DfStatement::Statement(s) = stmt else {
        return None;
    };
    let mut c = Collect(Vec::new());
    match s.visit(&mut c) {
        ControlFlow::Continue(()) => Some(c.0),
        ControlFlow::Break(()) => None,
    }
}

/// Puts `literals` into the tree in place of its own, in visiting order.
fn with_literals(stmt: &mut DfStatement, literals: &[Literal]) -> bool {
    struct Put<'a>(std::slice::Iter<'a, Literal>);
    impl VisitorMut for Put<'_> {
        type Break = ();
        fn pre_visit_value(&mut self, v: &mut ValueWithSpan) -> ControlFlow<()> {
            match (&mut v.value, self.0.next()) {
                (Value::Number(n, false), Some(Literal::Number(new))) => new.clone_into(n),
                (Value::SingleQuotedString(s), Some(Literal::Text(new))) => new.clone_into(s),
                (Value::Number(..) | Value::SingleQuotedString(_), _) => {
                    return ControlFlow::Break(());
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let DfStatement::Statement(s) = stmt else {
        return false;
    };
    let mut put = Put(literals.iter());
    s.visit(&mut put).is_continue() && put.0.next().is_none()
}

/// A session's parsed statements by shape.
#[derive(Default)]
pub struct ParseCache {
    trees: Mutex<HashMap<String, DfStatement>>,
}

/// Lookups answered from the cache in this process (tests assert they were).
pub static HITS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl ParseCache {
    /// `sql` parsed: a copy of the tree of a statement of the same shape
    /// (parsed under the same `dialect`) with `sql`'s literals, or else
    /// `parse(sql)`, whose tree is kept when it passes the check above.
    pub fn parse(
        &self,
        sql: &str,
        dialect: &str,
        parse: impl FnOnce(&str) -> Option<DfStatement>,
    ) -> Option<DfStatement> {
        self.parse_shaped(sql, shape(sql).as_ref(), dialect, parse)
    }

    /// [`ParseCache::parse`] of `sql` whose shape the caller took
    /// (`shape(sql)`).
    pub fn parse_shaped(
        &self,
        sql: &str,
        shape: Option<&Shape>,
        dialect: &str,
        parse: impl FnOnce(&str) -> Option<DfStatement>,
    ) -> Option<DfStatement> {
        let Some(shape) = shape else {
            return parse(sql);
        };
        let mut key = String::with_capacity(dialect.len() + 1 + shape.key.len());
        key.push_str(dialect);
        key.push('\0');
        key.push_str(&shape.key);
        let kept = self.trees.lock().get(&key).cloned();
        if let Some(mut tree) = kept
            && with_literals(&mut tree, &shape.literals)
        {
            HITS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Some(tree);
        }
        let tree = parse(sql)?;
        if literals_of(&tree).is_some_and(|l| l == shape.literals) {
            let mut trees = self.trees.lock();
            if trees.len() >= CAPACITY {
                trees.clear();
            }
            trees.insert(key, tree.clone());
        }
        Some(tree)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(sql: &str) -> DfStatement {
        let dialect = datafusion::sql::sqlparser::dialect::PostgreSqlDialect {};
        datafusion::sql::parser::DFParser::parse_sql_with_dialect(sql, &dialect)
            .unwrap()
            .pop_front()
            .unwrap()
    }

    #[test]
    fn shapes_lift_numbers_and_strings_and_refuse_what_could_change_meaning() {
        let s = shape("SELECT a FROM t1 WHERE id = 42 AND name = 'bob' AND x > -3.25").unwrap();
        assert_eq!(
            s.literals,
            vec![
                Literal::Number("42".into()),
                Literal::Text("bob".into()),
                Literal::Number("3.25".into())
            ]
        );
        assert_eq!(
            s.key,
            shape("SELECT a FROM t1 WHERE id = 7 AND name = '' AND x > -10")
                .unwrap()
                .key
        );
        assert_ne!(s.key, shape("SELECT a FROM t1 WHERE id = 42").unwrap().key);
        for refused in [
            "SELECT 1e5",
            "SELECT .5",
            "SELECT E'a\\n'",
            "SELECT 'it''s'",
            "SELECT 'a\\b'",
            "SELECT \"Col\" FROM t",
            "SELECT $1",
            "SELECT $$x$$",
            "SELECT 1 -- c",
            "SELECT /* c */ 1",
            "SELECT 'unterminated",
            "SELECT 1x",
            "SELECT a FROM t WHERE b = 'é' AND c = ö",
            "SELECT 1.2.3",
        ] {
            assert_eq!(shape(refused), None, "{refused}");
        }
    }

    #[test]
    fn a_kept_tree_with_new_literals_is_the_tree_of_the_new_text() {
        let cache = ParseCache::default();
        let first = "SELECT a, b FROM t WHERE id = 42 AND name = 'bob' LIMIT 3";
        let _ = cache.parse(first, "pg", |s| Some(parsed(s)));
        for next in [
            "SELECT a, b FROM t WHERE id = 7 AND name = 'alice' LIMIT 10",
            "SELECT a, b FROM t WHERE id = 123456789012345678901234567890 AND name = '' LIMIT 0",
            "SELECT a, b FROM t WHERE id = 3.50 AND name = 'x y' LIMIT 1",
        ] {
            let mut parsed_again = false;
            let got = cache
                .parse(next, "pg", |s| {
                    parsed_again = true;
                    Some(parsed(s))
                })
                .unwrap();
            assert!(!parsed_again, "{next} was parsed");
            assert_eq!(got, parsed(next), "{next}");
            assert_eq!(got.to_string(), parsed(next).to_string());
        }
        // Another dialect's shape is its own.
        let mut parsed_again = false;
        cache.parse(first, "generic", |s| {
            parsed_again = true;
            Some(parsed(s))
        });
        assert!(parsed_again);
    }

    #[test]
    fn a_tree_whose_literals_differ_from_the_texts_is_not_kept() {
        // A typed string: the tree's literal is the lexer's; kept. A negative
        // number: the minus stays in the shape; kept.
        let cache = ParseCache::default();
        for (sql, next) in [
            (
                "SELECT DATE '2020-01-01' - 1",
                "SELECT DATE '2021-02-03' - 5",
            ),
            ("SELECT -5 + 2", "SELECT -6 + 3"),
        ] {
            cache.parse(sql, "pg", |s| Some(parsed(s)));
            let mut again = false;
            let got = cache.parse(next, "pg", |s| {
                again = true;
                Some(parsed(s))
            });
            assert!(!again, "{next}");
            assert_eq!(got.unwrap(), parsed(next));
        }
        // A parse whose tree lost a literal (as a rewrite may): never kept.
        let cache = ParseCache::default();
        let rewrite = |s: &str| Some(parsed(&s.replace("= 42", "= 41")));
        cache.parse("SELECT a FROM t WHERE id = 42", "pg", rewrite);
        let mut again = false;
        cache.parse("SELECT a FROM t WHERE id = 42", "pg", |s| {
            again = true;
            Some(parsed(s))
        });
        assert!(again);
    }
}
