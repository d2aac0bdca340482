//! SQL's semantics where DataFusion 55 computes something else: analyzer and
//! optimizer rules (checked integer arithmetic, SQL's equality, casts that
//! round, DATE against a number refused, `EXCEPT ALL`/`INTERSECT ALL` as
//! multisets, sums that cannot wrap), the expression walk they share, what
//! the rules that replace `+ - *` by functions share (`operator_fn`), and the
//! depth limit that turns deep SQL into an error instead of a stack overflow;
//! and four rules about speed, not meaning: inner joins in the order of the
//! rows they make (`join_order`), a semi or anti join sunk to the input that
//! holds its keys (`semi_join_sink`), a grouped aggregate given the keys
//! its join can meet (`aggregate_keys`), and DECIMAL arithmetic without
//! overflow checks none can need (`decimal_arith`).
//! The session installs them (`crate::session`).

pub mod aggregate_keys;
pub mod date_compare;
pub mod decimal_arith;
pub mod depth;
pub mod equality;
pub mod exponent_literal;
pub mod expr_rule;
pub mod float_compare;
pub mod integer_cast;
pub mod join_order;
pub mod lossy_cast;
pub mod operator_fn;
pub mod overflow;
pub mod scalar_subquery;
pub mod semi_join_sink;
pub mod set_all;
pub mod transparent;
pub mod wide_sum;
