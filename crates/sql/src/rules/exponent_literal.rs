//! A number written in scientific notation is a DOUBLE.
//!
//! strata parses numeric literals as exact decimals (`0.1` is DECIMAL, as in
//! PostgreSQL), and DataFusion 55 turns `1e300` into a decimal of scale
//! -300, which it refuses ("Decimal scale -300 exceeds the minimum supported
//! scale"): `SELECT 1e300` and `INSERT INTO t VALUES (1e300)` into a DOUBLE
//! column failed, as did `2.5e-40`. Found by the `.slt` tests of issue 55.
//! A literal with an exponent is how one writes a float, and DuckDB reads it
//! as a DOUBLE; so does strata: [`exponents_as_double`] rewrites every such
//! literal of a statement into `CAST('…' AS DOUBLE)` before it is planned.
//! A literal without an exponent stays an exact decimal.

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, ExactNumberInfo, Expr, Value, visit_expressions_mut,
};

/// `stmt` with its numeric literals in scientific notation made DOUBLEs.
pub fn exponents_as_double(mut stmt: DfStatement) -> DfStatement {
    if let DfStatement::Statement(s) = &mut stmt {
        let _ = visit_expressions_mut(s.as_mut(), |e| {
            if let Expr::Value(v) = e
                && let Value::Number(text, _) = &v.value
                && text.contains(['e', 'E'])
            {
                let text = text.clone();
                *e = Expr::Cast {
                    kind: CastKind::Cast,
                    expr: Box::new(Expr::Value(Value::SingleQuotedString(text).into())),
                    data_type: DataType::Double(ExactNumberInfo::None),
                    array: false,
                    format: None,
                };
            }
            ControlFlow::<()>::Continue(())
        });
    }
    stmt
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParser;

    fn rewritten(sql: &str) -> String {
        let mut stmts = DFParser::parse_sql(sql).unwrap();
        exponents_as_double(stmts.pop_front().unwrap()).to_string()
    }

    #[test]
    fn exponents_become_doubles_and_the_rest_stays() {
        assert_eq!(
            rewritten("SELECT 1e300, -2.5E-40, 0.1, 7"),
            "SELECT CAST('1e300' AS DOUBLE), -CAST('2.5E-40' AS DOUBLE), 0.1, 7"
        );
        assert_eq!(
            rewritten("INSERT INTO t VALUES (1e3)"),
            "INSERT INTO t VALUES (CAST('1e3' AS DOUBLE))"
        );
    }
}
