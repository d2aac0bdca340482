//! What a statement takes and gives before it runs: the types of its `$n`
//! parameters and the columns of its rows, for a client's prepared statement
//! (the PostgreSQL protocol's Parse and Describe).
//!
//! Both come from DataFusion's logical plan of the statement: a parameter
//! compared with or inserted into a column takes the column's type. What
//! strata runs itself (transaction control, DDL, ANALYZE, COPY to a file)
//! takes no parameters and gives no rows to describe; nor do writes without
//! RETURNING, which answer with a count.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::execution::SessionState;
use datafusion::logical_expr::LogicalPlan;

use crate::dml::returning::has_returning;
use crate::error::SqlError;
use crate::rules::depth;
use crate::shell::script::analyze_targets;
use crate::statement::{self, Kind};

/// A statement's parameters and result columns.
#[derive(Clone, Debug)]
pub struct Described {
    /// The type of `$1`, `$2`, …; `None` where nothing in the statement
    /// says (the client's value is then taken as text).
    pub parameters: Vec<Option<DataType>>,
    /// The columns of the rows it returns; `None` when it returns none.
    pub columns: Option<SchemaRef>,
}

impl Described {
    fn nothing() -> Described {
        Described {
            parameters: Vec::new(),
            columns: None,
        }
    }
}

/// Describes `sql` with `state`, planning on `runtime`.
pub(crate) fn describe(
    state: &SessionState,
    runtime: &tokio::runtime::Runtime,
    sql: &str,
) -> Result<Described, SqlError> {
    if analyze_targets(sql).is_some() || crate::files::copy::parse(sql).is_some() {
        return Ok(Described::nothing());
    }
    let dialect = state.config().options().sql_parser.dialect;
    let stmt = state
        .sql_to_statement(sql, &dialect)
        .map(crate::rules::exponent_literal::exponents_as_double)?;
    depth::check(&stmt)?;
    let kind = statement::classify(&stmt)?;
    let returns_rows = match kind {
        Kind::Begin | Kind::Commit | Kind::Rollback | Kind::Ddl(_) => {
            return Ok(Described::nothing());
        }
        Kind::Write(_) => has_returning(&stmt),
        Kind::Other => true,
    };
    let planned = runtime.block_on(state.statement_to_plan(stmt));
    let plan = match planned {
        Ok(p) => p,
        // strata plans RETURNING itself; DataFusion may not.
        Err(_) if !matches!(kind, Kind::Other) => return Ok(Described::nothing()),
        Err(e) => return Err(e.into()),
    };
    let mut by_name = plan.get_parameter_types()?;
    let count = by_name
        .keys()
        .filter_map(|k| k.strip_prefix('$')?.parse::<usize>().ok())
        .max()
        .unwrap_or(0);
    let parameters = (1..=count)
        .map(|i| by_name.remove(&format!("${i}")).flatten())
        .collect();
    let columns = match &plan {
        _ if !returns_rows => None,
        LogicalPlan::Statement(_) | LogicalPlan::Ddl(_) | LogicalPlan::Copy(_) => None,
        LogicalPlan::Dml(_) => None,
        p => Some(crate::result_types::plain_schema(&Arc::new(
            p.schema().as_arrow().clone(),
        ))),
    };
    Ok(Described {
        parameters,
        columns,
    })
}

/// Where `sql`'s `$n` parameters are: each one's byte range in `sql` and its
/// number `n` (from 1). Quoted strings, quoted names and comments are not
/// looked into (the SQL tokenizer finds them).
pub fn placeholders(sql: &str) -> Result<Vec<(std::ops::Range<usize>, usize)>, SqlError> {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .with_unescape(false)
        .tokenize_with_location()
        .map_err(|e| SqlError::Query(format!("SQL error: {e}")))?;
    // Byte offset of every line's start; a location is (line, column) with
    // both counted from 1 and the column in characters.
    let mut line_starts = vec![0usize];
    line_starts.extend(sql.match_indices('\n').map(|(i, _)| i + 1));
    let offset = |line: u64, column: u64| -> Option<usize> {
        let start = *line_starts.get(usize::try_from(line).ok()?.checked_sub(1)?)?;
        let skip = usize::try_from(column).ok()?.checked_sub(1)?;
        let rest = &sql[start..];
        Some(start + rest.char_indices().nth(skip).map_or(rest.len(), |(i, _)| i))
    };
    let mut found = Vec::new();
    for t in tokens {
        let Token::Placeholder(p) = &t.token else {
            continue;
        };
        let Some(n) = p.strip_prefix('$').and_then(|d| d.parse::<usize>().ok()) else {
            continue;
        };
        if n == 0 {
            return Err(SqlError::Query(format!(
                "there is no parameter $0 (at '{p}')"
            )));
        }
        let start = offset(t.span.start.line, t.span.start.column)
            .ok_or_else(|| SqlError::Query(format!("cannot locate parameter {p}")))?;
        found.push((start..start + p.len(), n));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_found_outside_strings_and_comments() {
        let sql = "SELECT 'é $1', \"$2\" -- $3\n, $2 + $10 /* $4 */ FROM t WHERE k = $1";
        let got: Vec<(&str, usize)> = placeholders(sql)
            .unwrap()
            .into_iter()
            .map(|(r, n)| (&sql[r], n))
            .collect();
        assert_eq!(got, vec![("$2", 2), ("$10", 10), ("$1", 1)]);
        assert!(placeholders("SELECT $0").is_err());
    }
}
