//! Statements run through the `strata serve` that owns a database
//! (`strata_storage::db::served`), for `strata sql -e/-f` beside it: the same results,
//! rendered the same way, as when `strata sql` opens the database itself.
//!
//! The server is reached as any client reaches it, by the PostgreSQL
//! protocol (the `postgres` crate). A statement runs by the simple query
//! protocol; for one that returns rows, its column types come from a Parse
//! of the same text (which runs nothing), and each column's text is cast
//! back to the Arrow type strata would have given it (integers, doubles,
//! booleans, dates, timestamps, decimals at the scale their text shows), so
//! CSV and JSON output match a local run's.

use std::net::SocketAddr;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use postgres::types::Type;
use postgres::{Client, NoTls, SimpleQueryMessage};

use crate::SqlError;

/// A connection to the server that owns a database.
pub struct Remote {
    client: Client,
    addr: SocketAddr,
}

impl Remote {
    /// Connects to `addr` as user `strata` (a loopback server without a
    /// password file asks none).
    pub fn connect(addr: SocketAddr) -> Result<Remote, SqlError> {
        let client =
            Client::connect(&strata_storage::db::served::conninfo(addr), NoTls).map_err(|e| {
                SqlError::Execution(format!("cannot connect to strata serve at {addr}: {e}"))
            })?;
        Ok(Remote { client, addr })
    }

    /// Runs one statement; its result as a local session would give it.
    pub fn execute(&mut self, sql: &str) -> Result<(SchemaRef, Vec<RecordBatch>), SqlError> {
        let messages = self
            .client
            .simple_query(sql)
            .map_err(|e| error(&e, self.addr))?;
        let mut names: Option<Vec<String>> = None;
        let mut rows: Vec<Vec<Option<String>>> = Vec::new();
        let mut count = 0;
        for m in messages {
            match m {
                SimpleQueryMessage::RowDescription(cols) => {
                    names = Some(cols.iter().map(|c| c.name().to_string()).collect());
                }
                SimpleQueryMessage::Row(r) => {
                    rows.push((0..r.len()).map(|i| r.get(i).map(str::to_owned)).collect());
                }
                SimpleQueryMessage::CommandComplete(n) => count = n,
                _ => {}
            }
        }
        let Some(names) = names else {
            // No rows: a write answers with its count, as locally.
            let verb = crate::statement::leading_words(sql, 1)
                .pop()
                .unwrap_or_default()
                .to_ascii_uppercase();
            if matches!(verb.as_str(), "INSERT" | "UPDATE" | "DELETE" | "COPY") {
                let batch = crate::dml::count_batch(count)?;
                return Ok((batch.schema(), vec![batch]));
            }
            return Ok((Arc::new(Schema::empty()), Vec::new()));
        };
        // The column types, from a Parse that runs nothing.
        let types: Vec<Option<Type>> = match self.client.prepare(sql) {
            Ok(s) if s.columns().len() == names.len() => s
                .columns()
                .iter()
                .map(|c| Some(c.type_().clone()))
                .collect(),
            _ => vec![None; names.len()],
        };
        let mut fields = Vec::with_capacity(names.len());
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(names.len());
        for (i, (name, ty)) in names.iter().zip(&types).enumerate() {
            let text: ArrayRef = Arc::new(StringArray::from(
                rows.iter().map(|r| r[i].as_deref()).collect::<Vec<_>>(),
            ));
            let array = match ty.as_ref().and_then(|t| arrow_type(t, &text)) {
                Some(to) => cast(&text, &to).unwrap_or(text),
                None => text,
            };
            fields.push(Field::new(name, array.data_type().clone(), true));
            arrays.push(array);
        }
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(schema.clone(), arrays)
            .map_err(|e| SqlError::Execution(e.to_string()))?;
        Ok((schema, vec![batch]))
    }
}

/// The Arrow type a column of PostgreSQL type `t` is read back as; a
/// NUMERIC keeps the largest scale its values are written with.
fn arrow_type(t: &Type, text: &ArrayRef) -> Option<ArrowType> {
    Some(match *t {
        Type::INT2 | Type::INT4 => ArrowType::Int32,
        Type::INT8 => ArrowType::Int64,
        Type::FLOAT4 | Type::FLOAT8 => ArrowType::Float64,
        Type::BOOL => ArrowType::Boolean,
        Type::DATE => ArrowType::Date32,
        Type::TIMESTAMP => ArrowType::Timestamp(TimeUnit::Microsecond, None),
        Type::NUMERIC => {
            let text = text.as_any().downcast_ref::<StringArray>()?;
            let scale = text
                .iter()
                .flatten()
                .map(|v| v.split_once('.').map_or(0, |(_, f)| f.len()))
                .max()
                .unwrap_or(0);
            ArrowType::Decimal128(38, i8::try_from(scale).ok()?)
        }
        _ => return None,
    })
}

/// A server's error as the same kind of `SqlError` a local run gives, by its
/// SQLSTATE class, with the code and the server named.
fn error(e: &postgres::Error, addr: SocketAddr) -> SqlError {
    let Some(db) = e.as_db_error() else {
        return SqlError::Execution(format!("strata serve at {addr}: {e}"));
    };
    let code = db.code().code();
    let message = format!(
        "{} (SQLSTATE {code}, through strata serve at {addr})",
        db.message()
    );
    match &code[..2] {
        "22" | "23" => SqlError::Data(message),
        "42" | "0A" | "25" | "3D" | "3F" => SqlError::Query(message),
        "XX" if code == "XX001" => SqlError::Corrupt(message),
        _ => SqlError::Execution(message),
    }
}
