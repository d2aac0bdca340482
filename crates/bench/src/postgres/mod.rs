//! PostgreSQL side by side with strata: the Smooth Scan micro-benchmark
//! (`strata bench smooth-scan postgres`, [`run_postgres_sweep`]) and any set
//! of SQL queries over any strata tables (`strata bench tpch --with-postgres`,
//! [`run_postgres_queries`]).
//!
//! # Modules
//!
//! - `cluster`: finding the binaries, the private cluster (initdb, pg_ctl
//!   start/stop on a free loopback port, stopped on drop) and the client
//!   connection to it (the `postgres` crate, over the unix socket).
//! - `load`: DDL from strata schemas, COPY of strata rows, fingerprints and
//!   the decision to reuse or reload a table.
//! - `explain`: EXPLAIN (FORMAT JSON) read into serde structs, and the
//!   statistics a row records.
//! - `session`: a started cluster with its tables loaded, and cold runs on it.
//! - `engine`: [`PgEngine`], PostgreSQL as one engine of a side-by-side
//!   run: its own defaults, each query timed at the client cold and warm,
//!   bytes read from `/proc`.
//! - `server`: [`PgServer`], the cluster for experiments that drive it
//!   themselves with their own [`ServerConfig`] and connections (`strata
//!   bench writes`).
//! - `options`: what the two experiments take ([`PgOptions`],
//!   [`PgQueryOptions`], [`PgConfig`]) and their checks; SQL text helpers.
//! - `sweep` and `queries`: the two experiments.
//!
//! # The server
//!
//! This module runs the real PostgreSQL on this machine: it finds the Debian
//! packages' binaries (`scripts/setup_postgres.sh` installs them, and as
//! root makes sure the `postgres` OS user exists; a run without them fails
//! saying so), or those of a directory the caller names ([`PgBins::at`]:
//! another version, built or unpacked) and starts a private cluster reachable only on 127.0.0.1 and a
//! unix socket in the work directory, with `max_parallel_workers_per_gather
//! = 0`, `jit = off`, `autovacuum = off` and `track_io_timing = on` (the
//! notes say so beside the results). The cluster outlives an interrupted run
//! (pg_ctl detaches the server from our session); the next run finds it,
//! stops it and goes on.
//!
//! PostgreSQL refuses to run as root: as root, the server, `initdb` and
//! `pg_ctl` run as the unprivileged `postgres` user, which is given the work
//! directory. The benchmark talks to the server through the `postgres`
//! crate's client on the unix socket, authenticated by peer (the OS user;
//! as root, a user-name map lets root in as the `postgres` superuser); TCP
//! needs a password nobody has.
//!
//! # What is loaded
//!
//! Each named strata table is created with the same name and column types
//! ([`create_table_sql`], [`pg_type`]), its rows are streamed from
//! [`Table::scan_rows`](strata_storage::Table::scan_rows) into `COPY ... FROM
//! STDIN (FREEZE)` (the client's COPY writer, text format:
//! [`copy_text_line`]) in the transaction that creates it (never buffered
//! whole), every strata index becomes a B-tree index on the same columns
//! ([`pg_index_name`], [`create_index_sql`]), and the table is `VACUUM
//! ANALYZE`d. Only then is it marked done: its comment is set to
//! [`table_marker`], its DDL. A table is reused by a later run when its
//! marker is the same and its [`Fingerprint`] (row count and the exact sum of
//! every integer, decimal, date, boolean and varchar-length column) matches
//! the strata table's; otherwise it is dropped and loaded again. After a load
//! the fingerprint of what PostgreSQL holds must equal the one of the rows
//! sent, or the run fails.
//!
//! # Cold runs
//!
//! Every run is cold: the client disconnects, the server is stopped, the OS
//! page cache is dropped (only when `drop_caches` asks for it, and where
//! permitted; the notes say when it was not, and the rows say `os_cache =
//! warm`), and the server is started again
//! before the query runs as `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT
//! JSON)` under a [`PgConfig`]: PostgreSQL's own plan, or one scan method
//! forced by the `enable_*` settings. Its "Execution Time" is the row's
//! `wall_ms` (server side: planning excluded, rows not sent to a client, as
//! strata's operators count rows without sending them). A run over the
//! timeout is cancelled by `statement_timeout` (recognised by its SQLSTATE,
//! 57014) and recorded as censored (`wall_ms` = the timeout, the plan from a
//! plain EXPLAIN); the point's remaining repeats are skipped. Each point runs
//! `repeat` times and is reduced by [`Samples`](crate::Samples) before it is
//! returned: median `wall_ms`, the other columns from the median run, `runs`
//! = the runs made.
//!
//! # What is recorded
//!
//! `wall_ms`, `pages_read` (shared hit + read blocks: buffer accesses of the
//! execution, planning's not included), `rows_out` (the top node's rows) and
//! `io_requests` = 0 with `io_requests_known = no`; extra columns `plan`
//! (every node, pre-order), `scan_nodes` (the nodes that read each table,
//! e.g. `lineitem: Bitmap Heap Scan; nation: Seq Scan x2`), `censored`,
//! `os_cache` (`dropped` or `warm`), `shared_hit_blocks`,
//! `shared_read_blocks`, `temp_read_blocks`, `temp_written_blocks`,
//! `io_read_ms`, `planning_ms`, `client_ms` (the client's round trip of the
//! EXPLAIN ANALYZE), a bitmap scan's `exact_heap_blocks`/`lossy_heap_blocks`,
//! `pg_version` and `runs`.
//!
//! [`run_postgres_queries`] adds `query` and `config`; its rows are figure
//! [`PgQueryOptions::figure`] (`tpch`), device `real`, variant
//! `postgres-<config>`, and `x` = the query's position in the list (1, 2, ...),
//! the categorical-axis convention of [`ResultRow`](crate::ResultRow).
//!
//! [`run_postgres_sweep`] runs the micro-benchmark query Q1 (`SELECT * FROM t
//! WHERE c2 >= 0 AND c2 < X`, optionally `ORDER BY c2`) at each selectivity
//! with each of PostgreSQL's three paths forced: Seq Scan, Index Scan, Bitmap
//! Heap Scan. Its rows (figure `15a`/`15b`, variant `PostgreSQL <node>`, `x`
//! = the selectivity) add `plan_node` (the node that scanned the table,
//! checked against the forced one), `order_by` and `c2_upper` (X). A path
//! censored at one selectivity is not run at higher ones. With `ORDER BY c2`
//! at a selectivity covering every row PostgreSQL plans no bitmap scan at all
//! (see [`Order::KeyExpression`]); that point then runs with `ORDER BY c2 +
//! 0`, said in the notes and the `order_by` column.

mod cluster;
mod engine;
mod explain;
mod load;
mod options;
mod queries;
mod server;
mod session;
pub use session::CacheDrop;
mod sweep;

pub use cluster::{DEFAULT_PORT, PgBins, SETUP_SCRIPT, ServerConfig, major_of_version};
pub use engine::{PgEngine, PgRun};
pub use explain::{ExplainStats, ScanNode, explain_sql, is_statement_timeout, parse_explain_json};
pub use load::{
    Fingerprint, copy_text_line, create_index_sql, create_table_sql, fingerprint_columns,
    fingerprint_sql, pg_index_name, pg_type, table_marker,
};
pub use options::{PgConfig, PgMethod, PgOptions, PgQueryOptions};
pub use queries::run_postgres_queries;
pub use server::PgServer;
pub use sweep::{Order, c2_upper, q1_sql, run_postgres_sweep};
