//! `strata info` and `strata check` beside the `strata serve` that owns the
//! database: its `LOCK` refuses a second process, so they ask the server,
//! which runs `strata_info()` / `strata_check()` (strata-sql) on the database
//! it has open and answers with the same reports (`strata_inspect`).
//!
//! The server is reached as any client reaches it, by the PostgreSQL
//! protocol (the `postgres` crate, the one `strata sql` uses beside a
//! server). A server's error keeps its message and SQLSTATE, and the
//! command exits with the code a local run would give for it.

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;

use postgres::{Client, NoTls, SimpleQueryMessage};
use strata_storage::db::served;
use strata_storage::exit;

/// A connection to the server that owns a database.
pub struct Server {
    client: Client,
    pub addr: SocketAddr,
}

/// An error the server answered with.
#[derive(Debug)]
pub struct ServerError {
    pub sqlstate: Option<String>,
    pub message: String,
    pub addr: SocketAddr,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.sqlstate {
            Some(code) => write!(
                f,
                "{} (SQLSTATE {code}, through strata serve at {})",
                self.message, self.addr
            ),
            None => write!(f, "strata serve at {}: {}", self.addr, self.message),
        }
    }
}

impl std::error::Error for ServerError {}

impl ServerError {
    /// The exit code of a server's error, by its SQLSTATE's class: what a
    /// local run exits with for the same failure.
    pub fn classify(e: &(dyn std::error::Error + 'static)) -> Option<u8> {
        let e = e.downcast_ref::<ServerError>()?;
        let code = e.sqlstate.as_deref().unwrap_or("");
        Some(match code.get(..2).unwrap_or("") {
            "22" | "23" => exit::BAD_INPUT,
            "42" | "0A" | "25" | "3D" | "3F" => exit::USAGE,
            "XX" if code == "XX001" => exit::CORRUPT,
            _ => exit::FAILURE,
        })
    }
}

impl Server {
    /// The live server that owns the database in `db`, connected; `None`
    /// when none serves it or it does not answer (the caller then opens the
    /// database itself, and a held `LOCK` says who holds it).
    pub fn of(db: &Path) -> Option<Server> {
        let addr = served::server_of(db)?;
        let client = Client::connect(&served::conninfo(addr), NoTls).ok()?;
        Some(Server { client, addr })
    }

    /// The first column of every row `sql` returns, as text.
    pub fn column(&mut self, sql: &str) -> Result<Vec<String>, ServerError> {
        let messages = self.client.simple_query(sql).map_err(|e| ServerError {
            sqlstate: e.as_db_error().map(|d| d.code().code().to_string()),
            message: e
                .as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_string()),
            addr: self.addr,
        })?;
        Ok(messages
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => Some(row.get(0).unwrap_or("").to_string()),
                _ => None,
            })
            .collect())
    }
}
