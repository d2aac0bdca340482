//! strata serve, reached by PostgreSQL clients nobody here wrote: the
//! `postgres` crate (libpq's protocol in Rust), `tokio-postgres` (its
//! asynchronous core: pipelining, COPY streams), PostgreSQL 15's psql and
//! pgbench, and psycopg 3 (Python); logins by password and TLS. One test binary (each links DataFusion).

mod auth;
mod clients;
mod fuzz;
mod pipeline;
mod psycopg;
mod serve;
