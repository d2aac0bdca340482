//! A statement's result as the protocol answers it: rows (RowDescription and
//! DataRows, text or binary per column, through `arrow-pg`) or a command tag
//! (`INSERT 0 3`, `UPDATE 1`, `CREATE TABLE`), and errors with their
//! SQLSTATE.

use std::sync::Arc;

use futures::stream;
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldInfo, QueryResponse, Response, Tag};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use strata_sql::arrow::datatypes::Schema;
pub use strata_sql::statement::leading_words;
use strata_sql::{QueryResult, SqlError};

/// What a statement is, by its leading keywords: the command tag's words.
pub fn verb(sql: &str) -> String {
    // Most statements' tag is their first word.
    if let Some(w) = strata_sql::statement::words(sql).next()
        && ![
            "CREATE", "DROP", "ALTER", "TRUNCATE", "START", "END", "ABORT", "(",
        ]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(w))
    {
        return w.to_ascii_uppercase();
    }
    let words = leading_words(sql, 4);
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    match w(0) {
        "CREATE" => {
            let mut rest: Vec<&str> = words[1..].iter().map(String::as_str).collect();
            rest.retain(|x| {
                !matches!(
                    *x,
                    "OR" | "REPLACE" | "UNIQUE" | "TEMP" | "TEMPORARY" | "EXTERNAL"
                )
            });
            format!("CREATE {}", rest.first().copied().unwrap_or(""))
        }
        "DROP" | "ALTER" => format!("{} {}", w(0), w(1)),
        "TRUNCATE" => "TRUNCATE TABLE".into(),
        "START" => "BEGIN".into(),
        "END" => "COMMIT".into(),
        "ABORT" => "ROLLBACK".into(),
        "(" => "SELECT".into(),
        v => v.to_owned(),
    }
}

/// The fields of rows of `schema`, each in the format the client asked.
pub fn fields(schema: &Schema, format: &Format) -> PgWireResult<Arc<Vec<FieldInfo>>> {
    arrow_pg::datatypes::arrow_schema_to_pg_fields(schema, format, None).map(Arc::new)
}

/// The answer to a statement `verb` that gave `result`.
pub fn response(verb: &str, result: QueryResult, format: &Format) -> PgWireResult<Response> {
    match verb {
        "INSERT" if let Some(n) = result.written() => {
            return Ok(Response::Execution(
                Tag::new("INSERT").with_oid(0).with_rows(n as usize),
            ));
        }
        "UPDATE" | "DELETE" | "COPY" if let Some(n) = result.written() => {
            return Ok(Response::Execution(Tag::new(verb).with_rows(n as usize)));
        }
        _ => {}
    }
    if result.schema.fields().is_empty() {
        return Ok(Response::Execution(Tag::new(verb)));
    }
    let fields = fields(&result.schema, format)?;
    let rows = result.batches.into_iter().flat_map({
        let fields = fields.clone();
        move |b| arrow_pg::datatypes::encode_recordbatch(fields.clone(), b)
    });
    let mut answer = QueryResponse::new(fields, stream::iter(rows));
    if matches!(verb, "INSERT" | "UPDATE" | "DELETE") {
        answer.set_command_tag(verb);
    }
    Ok(Response::Query(answer))
}

/// An error to the client: `code` is its SQLSTATE.
pub fn error(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".to_owned(),
        code.to_owned(),
        message.into(),
    )))
}

/// A fatal error: the server closes the connection after sending it.
pub fn fatal(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "FATAL".to_owned(),
        code.to_owned(),
        message.into(),
    )))
}

/// A SQL session's error, with its SQLSTATE.
pub fn sql_error(e: &SqlError) -> PgWireError {
    error(e.sqlstate(), e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_are_postgresql_command_tags() {
        for (sql, tag) in [
            ("select 1", "SELECT"),
            ("  -- c\n/* x */ insert into t values (1)", "INSERT"),
            ("CREATE UNIQUE INDEX i ON t (a)", "CREATE INDEX"),
            ("create or replace view v as select 1", "CREATE VIEW"),
            ("drop table t", "DROP TABLE"),
            ("truncate t", "TRUNCATE TABLE"),
            ("end", "COMMIT"),
            ("(select 1) union (select 2)", "SELECT"),
        ] {
            assert_eq!(verb(sql), tag, "{sql}");
        }
    }
}
