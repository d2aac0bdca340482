//! strata's columnar table format.
//!
//! A columnar table keeps its rows as of its last conversion in Parquet files
//! of column row groups ([`file`]), committed by the catalog like a heap
//! (`TableDef::columns`); the rows inserted since go to its heap, the delta,
//! through the log as in a row table. A scan of the column part reads only
//! the columns a query needs, and only the row groups and pages whose
//! min/max statistics can hold a row the query's comparisons keep
//! ([`prune`], [`read`]). [`rewrite`] converts a table between the two
//! formats (and merges a columnar table's delta into new column files).
//! [`read_ahead`] fetches a scan's units ahead of their decoding, on a
//! few threads. [`chunk_cache`] keeps the bytes read, as the buffer pool keeps pages,
//! and [`points`] the values of the pages point reads decoded.
//! [`index`] builds and reads an index's tree over the column part;
//! [`smooth`] walks it as Smooth Scan does, and morphs into the full scan;
//! [`paths`] runs full, index, sort and Smooth Scan over the column part.
//! [`encoding`] picks each column's encoding from its values.
//! [`convert`] turns stored rows into Arrow batches and back, for the
//! column files and for strata-sql's operators. docs/layers/columns.md says
//! why Parquet and what a columnar table does not do yet.

pub mod chunk_cache;
pub mod convert;
pub mod encoding;
pub mod error;
pub mod file;
pub mod footer;
pub mod index;
pub mod paths;
pub mod points;
pub mod prune;
pub mod read;
pub mod read_ahead;
pub mod rewrite;
pub mod smooth;

pub use error::{ColumnsError, Result};
pub use read::ColumnPart;
pub use rewrite::{Format, RewriteReport, rewrite};
