//! SQL over strata: strata tables as DataFusion table providers whose scans run
//! strata's access paths (Smooth Scan by default), a classical cost-based
//! optimizer over `ANALYZE` statistics for comparison, scripts and result
//! formatting, SQL writes (`INSERT`, `UPDATE`, `DELETE`, `CREATE`/`DROP` of
//! tables and indexes, transactions), and the 22 TPC-H queries (their
//! benchmark is `strata-bench-tpch`).
//!
//! DataFusion is a large dependency; it lives in this crate only, so the rest
//! of strata (and `strata demo`) builds without it.

pub mod alter;
pub mod cached_scan;
pub mod column;
pub mod constraint;
pub mod convert;
pub mod copy;
pub mod ctas;
pub mod date_compare;
pub mod ddl;
pub mod depth;
pub mod describe;
pub mod direct_dml;
pub mod dml;
pub mod equality;
pub mod error;
pub mod explain_total;
pub mod exponent_literal;
pub mod expr_rule;
pub mod files;
pub mod float_compare;
pub mod format;
pub mod index_join;
pub mod integer_cast;
pub mod lossy_cast;
pub mod object;
pub mod optimizer;
pub mod options;
pub mod overflow;
pub mod process;
pub mod provider;
pub mod pushdown;
pub mod returning;
pub mod row_check;
pub mod scalar_subquery;
pub mod scan_exec;
pub mod script;
pub mod session;
pub mod set_all;
pub mod skipper;
pub mod statement;
pub mod stats;
pub mod tpch;
pub mod txn;
pub mod unique;
pub mod view;
pub mod waste;
pub mod wide_sum;

pub use format::Format;
pub use options::{AccessPathSetting, StrataOptions};
pub use script::split_statements;
pub use session::{QueryResult, SqlError, SqlSession};
