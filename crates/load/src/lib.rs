//! strata's loaders: typed CSV ([`load_csv`]) and Parquet ([`load_parquet`])
//! import, CSV column types inferred from the data ([`infer_csv_schema`]),
//! native generators for the papers' synthetic data ([`generate`]), and the
//! TPC-H tables ([`generate_tpch`]).
//!
//! Every loader appends through one [`TableLoad`]
//! and commits it at the very end, so a load is atomic: it either adds every good
//! row (and rebuilds the table's indexes) or leaves the table exactly as it was. A
//! load that fails before commit simply drops the `TableLoad`, which gives its
//! pages back; a table the load was creating never appears in the catalog.
//!
//! Errors name where the problem is: the file, the line (CSV) or row (Parquet),
//! the column by number and name, and the reason, e.g.
//! `data.csv:17: column 3 (c2): 'abc' is not a 32-bit integer`. Loaders print
//! nothing; rows skipped under `max_errors` are returned in the [`LoadReport`].

mod arrow_rows;
mod csv;
mod error;
// `gen` is a reserved word in edition 2024.
#[path = "gen.rs"]
mod generator;
mod import;
mod infer;
pub mod layout;
mod parquet;
mod tpch;
mod wikipedia;

pub use crate::csv::{CsvOptions, CsvReport, load_csv};
pub use crate::error::{LoadError, RowError, RowPosition};
pub use crate::generator::{
    GenKind, GenReport, GenSpec, MICROBENCH_MAX, SkewedCounts, flash_schema, generate,
    microbench_schema, skewed_counts,
};
pub use crate::import::{LoadReport, LoadTarget};
pub use crate::infer::{
    CsvDialect, CsvRowReader, InferredSchema, infer_csv_schema, sql_column_list, sql_type,
};
pub use crate::parquet::{ParquetOptions, ParquetReport, load_parquet};
pub use crate::tpch::{
    BATCH_ROWS, MAX_SCALE_FACTOR, MIN_SCALE_FACTOR, TPCH_INDEXES, TpchIndex, TpchSpec, TpchTable,
    TpchTableReport, append_tpch_rows, generate_tpch, load_tpch_history_then_recent,
    parse_scale_factor,
};
pub use crate::wikipedia::{
    PAGE_CACHED, PAGE_KEY, PAGE_NAMESPACES, PAGE_TITLE_MAX, REVISION_KEY, REVISION_ONCE,
    REVISION_PARETO, REVISION_TEXT_MAX, page_schema, revision_pages, revision_schema,
};
