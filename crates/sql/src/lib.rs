//! SQL over strata: strata tables as DataFusion table providers whose scans run
//! strata's access paths (Smooth Scan by default), a classical cost-based
//! optimizer over `ANALYZE` statistics for comparison, scripts and result
//! formatting, SQL writes (`INSERT`, `UPDATE`, `DELETE`, `CREATE`/`DROP` of
//! tables and indexes, transactions), and the 22 TPC-H queries (their
//! benchmark is `strata-bench-tpch`).
//!
//! The folders: `scan/` (strata tables as DataFusion providers and scans,
//! Arrow conversion, index joins), `rules/` (analyzer and optimizer rules that
//! give SQL's answers where DataFusion 55 gives others), `ddl/` and `dml/`
//! (the statements strata runs itself), `files/` (reading and writing CSV
//! and Parquet in a query), `skipper/` (MJoin over the cold tier), `shell/`
//! (scripts, result formats, the process's errors); the REPL is the
//! `strata-sql` binary's own (`main.rs`, `repl.rs`).
//!
//! DataFusion is a large dependency; it lives in this crate only, so the rest
//! of strata (and `strata demo`) builds without it.

pub mod ddl;
pub mod dml;
pub mod error;
pub mod explain_total;
pub mod files;
pub mod inspect;
pub mod literal;
pub mod optimizer;
pub mod options;
pub mod parse_cache;
pub mod pg_catalog;
pub mod prepare;
pub mod result_types;
pub mod rules;
pub mod scan;
pub mod session;
pub mod shared_result;
pub mod shell;
pub mod skipper;
pub mod sqlstate;
pub mod statement;
pub mod statement_thread;
pub mod stats;
pub mod stop;
pub mod thread_priority;
pub mod tpch;
pub mod waste;

/// Arrow as the session's results carry it (DataFusion's).
pub use datafusion::arrow;
pub use datafusion::sql::sqlparser;
pub use options::{AccessPathSetting, StrataOptions};
pub use session::{QueryResult, SqlError, SqlSession};
pub use shell::format::Format;
pub use shell::script::split_statements;
pub use stop::{Cancel, Stop, Stopped};
