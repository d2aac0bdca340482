//! What the session does with a parsed statement before DataFusion plans it:
//! transaction control and DDL it runs itself, and for `INSERT`, `UPDATE` and
//! `DELETE` the forms strata refuses.
//!
//! DataFusion hands a provider only the WHERE conjuncts it finds on the table
//! (`TableProvider::delete_from` and `update`), after its optimizer ran: a
//! subquery is by then a join whose condition the provider never sees, and a
//! `LIMIT` is dropped. Such a statement would change rows the user did not
//! mean, so it is refused here, on the syntax tree.

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    Assignment, AssignmentTarget, Expr, FromTable, ObjectNamePart, Query, SetExpr, Statement,
    TableObject, TableWithJoins, Value, Visit, Visitor,
};
use strata_storage::Database;

use crate::ddl::{self, Ddl, Name};
use crate::dml::row_check::check_value;
use crate::error::SqlError;

/// What kind of statement the session is given.
#[derive(Debug)]
pub enum Kind {
    Begin,
    Commit,
    Rollback,
    Ddl(Ddl),
    /// `INSERT`, `UPDATE`, `DELETE` or `TRUNCATE` (also under `EXPLAIN`),
    /// planned by DataFusion.
    Write(&'static str),
    /// Anything else, DataFusion's.
    Other,
}

/// Finds a query nested in a statement.
struct Subquery;

impl Visitor for Subquery {
    type Break = ();

    fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        ControlFlow::Break(())
    }
}

fn refuse(verb: &str, what: &str) -> Result<Kind, SqlError> {
    Err(SqlError::Query(format!("{verb}: {what} is not supported")))
}

/// One plain table, no joins.
fn single(tables: &[TableWithJoins]) -> bool {
    matches!(tables, [t] if t.joins.is_empty())
}

/// A column an UPDATE sets twice. DataFusion keeps the last of them without
/// a word; PostgreSQL, DuckDB and the SQL standard refuse the statement
/// (found by the differential tester, crates/difftest).
fn assigned_twice(assignments: &[Assignment]) -> Option<String> {
    let mut seen: Vec<Name> = Vec::new();
    for a in assignments {
        let AssignmentTarget::ColumnName(n) = &a.target else {
            continue;
        };
        let Some(ObjectNamePart::Identifier(i)) = n.0.last() else {
            continue;
        };
        let name = Name::of(i);
        if seen.iter().any(|s| s.text == name.text) {
            return Some(name.text);
        }
        seen.push(name);
    }
    None
}

/// Classifies `stmt`; an error refuses a form strata does not support.
pub fn classify(stmt: &DfStatement) -> Result<Kind, SqlError> {
    match stmt {
        DfStatement::Statement(s) => classify_sql(s),
        DfStatement::Explain(e) => match classify(&e.statement)? {
            Kind::Write(w) => Ok(Kind::Write(w)),
            _ => Ok(Kind::Other),
        },
        _ => Ok(Kind::Other),
    }
}

fn classify_sql(s: &Statement) -> Result<Kind, SqlError> {
    if let Some(ddl) = ddl::parse(s) {
        return ddl.map(Kind::Ddl);
    }
    match s {
        Statement::StartTransaction { modes, .. } => {
            if !modes.is_empty() {
                return refuse("BEGIN", "a transaction mode");
            }
            Ok(Kind::Begin)
        }
        Statement::Commit { chain, .. } => {
            if *chain {
                return refuse("COMMIT", "AND CHAIN");
            }
            Ok(Kind::Commit)
        }
        Statement::Rollback { chain, savepoint } => {
            if *chain || savepoint.is_some() {
                return refuse("ROLLBACK", "AND CHAIN or a savepoint");
            }
            Ok(Kind::Rollback)
        }
        Statement::Insert(i) => {
            const V: &str = "INSERT";
            if i.on.is_some() || i.or.is_some() || i.ignore || i.replace_into || i.overwrite {
                return refuse(V, "a conflict clause, IGNORE, REPLACE or OVERWRITE");
            }
            Ok(Kind::Write(V))
        }
        Statement::Update(u) => {
            const V: &str = "UPDATE";
            if u.from.is_some() || !u.table.joins.is_empty() {
                return refuse(V, "FROM or a join (UPDATE changes one table)");
            }
            if u.limit.is_some() || !u.order_by.is_empty() {
                return refuse(V, "ORDER BY or LIMIT");
            }
            if s.visit(&mut Subquery).is_break() {
                return refuse(V, "a subquery (in WHERE or SET)");
            }
            if let Some(c) = assigned_twice(&u.assignments) {
                return Err(SqlError::Query(format!(
                    "UPDATE: column '{c}' is assigned more than once"
                )));
            }
            Ok(Kind::Write(V))
        }
        Statement::Delete(d) => {
            const V: &str = "DELETE";
            let from = match &d.from {
                FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
            };
            if !d.tables.is_empty() || d.using.is_some() || !single(from) {
                return refuse(
                    V,
                    "USING, a join or several tables (DELETE changes one table)",
                );
            }
            if d.limit.is_some() || !d.order_by.is_empty() {
                return refuse(V, "ORDER BY or LIMIT");
            }
            if s.visit(&mut Subquery).is_break() {
                return refuse(V, "a subquery in WHERE");
            }
            Ok(Kind::Write(V))
        }
        Statement::Truncate(t) => {
            if t.table_names.len() != 1 || t.partitions.is_some() {
                return refuse("TRUNCATE", "more than one table or a partition");
            }
            Ok(Kind::Write("TRUNCATE"))
        }
        Statement::Prepare { statement, .. } => match classify_sql(statement)? {
            Kind::Write(w) => refuse("PREPARE", &format!("a prepared {w}")),
            _ => Ok(Kind::Other),
        },
        _ => Ok(Kind::Other),
    }
}

/// DataFusion builds the rows of `INSERT … VALUES` with the nullability of the
/// target columns and fails on a NULL for a NOT NULL column with "Column
/// 'column3' is declared as non-nullable but contains null values", naming a
/// column of the VALUES list. This is `err` said as strata's own row check
/// says it — table, row (when it is a literal NULL), column and type — or
/// `None` when `err` is not that error of an INSERT.
pub fn values_null(stmt: &DfStatement, db: &Database, err: &SqlError) -> Option<SqlError> {
    let msg = err.to_string();
    let position = msg
        .split("Column 'column")
        .nth(1)?
        .split('\'')
        .next()?
        .parse::<usize>()
        .ok()?
        .checked_sub(1)?;
    if !msg.contains("is declared as non-nullable but contains null values") {
        return None;
    }
    let DfStatement::Statement(s) = stmt else {
        return None;
    };
    let Statement::Insert(insert) = s.as_ref() else {
        return None;
    };
    let TableObject::TableName(name) = &insert.table else {
        return None;
    };
    let table = ddl::find_table(db, &ddl::object_name(name, "table").ok()?)?;
    let schema = db.table(&table).ok()?.schema().clone();
    let column = match insert.columns.get(position) {
        None if insert.columns.is_empty() => schema.columns.get(position)?,
        None => return None,
        Some(c) => match c.0.as_slice() {
            [ObjectNamePart::Identifier(i)] => {
                let n = Name::of(i);
                schema.columns.iter().find(|c| n.names(&c.name))?
            }
            _ => return None,
        },
    };
    let reason = check_value(column, &strata_storage::row::Value::Null).err()?;
    let row = insert.source.as_ref().and_then(|q| match q.body.as_ref() {
        SetExpr::Values(v) => v.rows.iter().position(
            |r| matches!(r.content.get(position), Some(Expr::Value(v)) if v.value == Value::Null),
        ),
        _ => None,
    });
    Some(SqlError::Data(match row {
        Some(r) => format!("INSERT into '{table}', row {}: {reason}", r + 1),
        None => format!("INSERT into '{table}': {reason}"),
    }))
}
/// The words of `sql` as written, past comments and whitespace: keywords and
/// names (letters, digits, `_`), and `(` as a word of its own; they end at
/// anything else.
pub fn words(sql: &str) -> impl Iterator<Item = &str> {
    let mut rest = sql;
    std::iter::from_fn(move || {
        loop {
            rest = rest.trim_start();
            if let Some(r) = rest.strip_prefix("--") {
                rest = r.split_once('\n').map_or("", |(_, r)| r);
                continue;
            }
            if let Some(r) = rest.strip_prefix("/*") {
                rest = r.split_once("*/").map_or("", |(_, r)| r);
                continue;
            }
            break;
        }
        if rest.starts_with('(') {
            let (w, r) = rest.split_at(1);
            rest = r;
            return Some(w);
        }
        let end = rest
            .bytes()
            .position(|c| !(c.is_ascii_alphanumeric() || c == b'_'))
            .unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        let (w, r) = rest.split_at(end);
        rest = r;
        Some(w)
    })
}

/// The first word of `sql` ([`words`]) when it is one of `of` (upper case),
/// in any case: which one.
pub fn first_word_of<'a>(sql: &str, of: &[&'a str]) -> Option<&'a str> {
    let w = words(sql).next()?;
    of.iter().copied().find(|k| k.eq_ignore_ascii_case(w))
}

/// The first `n` words of `sql` ([`words`]), upper case.
pub fn leading_words(sql: &str, n: usize) -> Vec<String> {
    words(sql).take(n).map(str::to_ascii_uppercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_skip_comments_and_stop_at_what_is_not_a_word() {
        let sql = "  -- a comment\n /* another */ ( select Count_1 from t; x";
        assert_eq!(
            words(sql).collect::<Vec<_>>(),
            vec!["(", "select", "Count_1", "from", "t"]
        );
        assert_eq!(
            leading_words(sql, 3),
            vec!["(".to_string(), "SELECT".into(), "COUNT_1".into()]
        );
        assert_eq!(first_word_of(" begin;", &["END", "BEGIN"]), Some("BEGIN"));
        assert_eq!(first_word_of("beginning", &["BEGIN"]), None);
        assert_eq!(first_word_of("-- only a comment", &["BEGIN"]), None);
        assert_eq!(first_word_of("/* unterminated", &["BEGIN"]), None);
        assert_eq!(words("é SELECT").next(), None);
        assert_eq!(words("").next(), None);
    }
}
