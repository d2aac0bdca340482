//! Deep SQL gets an error, never a stack overflow.
//!
//! DataFusion plans, optimizes and evaluates expressions recursively. A
//! 5,000-term `select a+a+...+a from t` parses (the parser builds a chain of
//! binary operators in a loop) into a tree 5,000 levels deep, and planning it
//! on a thread's default 2 MiB stack overflowed and aborted the process. Two
//! guards:
//!
//! * before planning, every statement's expression nesting is measured on its
//!   syntax tree ([`check`]) and a statement nested deeper than
//!   [`MAX_EXPR_DEPTH`] is refused with an error giving the limit; the walk
//!   stops at the limit, so measuring costs no more stack than planning a
//!   statement at the limit would;
//! * statements plan and run on threads with [`STACK_BYTES`] of stack (the
//!   session runs each statement on such a thread, and the runtime's workers
//!   have as much), which holds a statement at the limit in every phase:
//!   parsing, planning, optimizing and evaluation (`tests/deep_sql.rs` runs
//!   one). The stack is reserved address space; only what a statement touches
//!   becomes memory.
//!
//! Parentheses nest the parser itself; DataFusion's parser stops at its
//! recursion limit (`datafusion.sql_parser.recursion_limit`, 50) with an error
//! of its own.

use std::ops::ControlFlow;

use datafusion::sql::parser::{CopyToSource, Statement};
use datafusion::sql::sqlparser::ast::{Expr, Visit, Visitor};

use crate::error::SqlError;

/// Deepest expression nesting a statement may have (operators, function
/// arguments, CASE arms and subqueries all count one level each).
pub const MAX_EXPR_DEPTH: usize = 2_000;

/// Stack of the threads that plan and run statements.
pub const STACK_BYTES: usize = 512 << 20;

/// Counts how deep expressions nest, stopping past the limit.
struct Depth {
    now: usize,
    limit: usize,
}

impl Visitor for Depth {
    type Break = ();

    fn pre_visit_expr(&mut self, _: &Expr) -> ControlFlow<()> {
        self.now += 1;
        if self.now > self.limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    fn post_visit_expr(&mut self, _: &Expr) -> ControlFlow<()> {
        self.now -= 1;
        ControlFlow::Continue(())
    }
}

/// Whether `stmt` nests expressions deeper than `limit`.
fn deeper_than(stmt: &Statement, limit: usize) -> bool {
    let mut d = Depth { now: 0, limit };
    match stmt {
        Statement::Statement(s) => s.visit(&mut d).is_break(),
        Statement::Explain(e) => deeper_than(&e.statement, limit),
        Statement::CopyTo(c) => match &c.source {
            CopyToSource::Query(q) => q.visit(&mut d).is_break(),
            CopyToSource::Relation(_) => false,
        },
        Statement::CreateExternalTable(_) | Statement::Reset(_) => false,
    }
}

/// Refuses a statement nested deeper than [`MAX_EXPR_DEPTH`].
pub fn check(stmt: &Statement) -> Result<(), SqlError> {
    if deeper_than(stmt, MAX_EXPR_DEPTH) {
        return Err(SqlError::Query(format!(
            "the statement nests expressions more than {MAX_EXPR_DEPTH} levels deep \
             (each operator, function call and subquery inside another is a level; \
             a chain like a+a+...+a of N terms is N levels): split it into smaller expressions"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParserBuilder;

    fn parse(sql: &str) -> Statement {
        let mut stmts = DFParserBuilder::new(sql)
            .build()
            .unwrap()
            .parse_statements()
            .unwrap();
        stmts.pop_front().unwrap()
    }

    fn chain(terms: usize) -> String {
        let mut s = String::from("select ");
        for i in 0..terms {
            if i > 0 {
                s.push('+');
            }
            s.push('a');
        }
        s.push_str(" from t");
        s
    }

    #[test]
    fn a_chain_of_n_terms_is_n_levels_deep() {
        // a+a has one `+` over two identifiers: 2 levels.
        assert!(!deeper_than(&parse(&chain(2)), 2));
        assert!(deeper_than(&parse(&chain(3)), 2));
        assert!(!deeper_than(&parse(&chain(10)), 10));
        assert!(deeper_than(&parse(&chain(11)), 10));
    }

    #[test]
    fn explain_and_subqueries_count_too() {
        let explain = parse(&format!("explain {}", chain(11)));
        assert!(deeper_than(&explain, 10));
        // `+` > subquery > max() > `+` > a: 5 levels.
        let sub = parse("select (select max(a+a) from t) + 1 from t");
        assert!(!deeper_than(&sub, 5));
        assert!(deeper_than(&sub, 4));
    }

    #[test]
    fn the_error_names_the_limit() {
        let e = check(&parse(&chain(MAX_EXPR_DEPTH + 1))).unwrap_err();
        assert!(e.to_string().contains(&MAX_EXPR_DEPTH.to_string()), "{e}");
        check(&parse(&chain(MAX_EXPR_DEPTH))).unwrap();
    }
}
