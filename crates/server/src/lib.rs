//! `strata serve`: one process owns a database and speaks the PostgreSQL
//! frontend/backend protocol (v3) to any number of connections, so psql,
//! drivers (libpq, psycopg, JDBC, tokio-postgres) and pgbench reach strata.
//!
//! - [`auth`]: who may connect — the password file (SCRAM-SHA-256) and the
//!   TLS certificate.
//! - [`startup`]: a connection's startup — the refusal over the limit, then
//!   no authentication or SCRAM.
//! - [`listen`]: the listening sockets (TCP, and a Unix socket named as
//!   PostgreSQL's), one task per connection on the server's runtime.
//! - [`socket`]: a connection's message loop — pgwire's, with a message
//!   pgwire cannot decode answered (SQLSTATE 08P01) instead of panicked on.
//! - [`shared`]: what the connections share — the database, the connection
//!   count and its limit, cancel keys.
//! - [`connection`]: a connection's handlers — simple and extended query,
//!   its transaction block, its settings — over its own
//!   [`strata_sql::SqlSession`].
//! - [`params`]: `$n` parameters bound into a statement's text as literals.
//! - [`copy`]: `COPY … FROM STDIN` and `COPY … TO STDOUT`, text and CSV.
//! - [`reply`]: a statement's result as the protocol's RowDescription,
//!   DataRows and command tag.
//! - [`settings`]: the PostgreSQL settings a connection keeps itself
//!   (`statement_timeout`, `lock_timeout`, isolation levels, client
//!   settings drivers send).
//!
//! The protocol itself (framing, startup, portals, cancel keys) is the
//! `pgwire` crate's; Arrow batches become rows through `arrow-pg`.
//! docs/layers/server.md says why the server is shaped as it is.

pub mod auth;
pub mod connection;
pub mod copy;
pub mod listen;
pub mod params;
pub mod reply;
pub mod settings;
pub mod shared;
pub mod socket;
pub mod startup;

pub use listen::{ServeOptions, Server};
