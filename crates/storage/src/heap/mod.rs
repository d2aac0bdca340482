//! Heap files: a table's tuples on slotted pages, addressed by [`Tid`] (page, slot).
//!
//! * Loads go through [`HeapWriter`], which fills pages in a private aligned buffer
//!   and writes them to the device in runs (one request per run, not per page),
//!   always starting on a fresh page after the last committed one. Committed pages
//!   are therefore never rewritten by a load, which is what makes a load atomic:
//!   if the process dies before the catalog records the new page count, reopening
//!   truncates the file back to the committed count.
//! * Single-tuple changes (insert, update, delete, moving a tuple to another page
//!   for hot/cold partitioning) go through the buffer pool.
//! * A per-table fill factor leaves room on every page (loads and inserts stop
//!   filling a page at `fill_factor * PAGE_SIZE`), as PostgreSQL's heap fillfactor
//!   does; experiments use it to control tuples per page.
//! * Scans read runs of contiguous pages with [`BufferPool::read_runs`], several
//!   runs in flight, into buffers the scan owns.
//! * Every page that reaches a reader is checked against the table's
//!   [`TupleShape`] (when the database gave the heap one) on top of the pool's
//!   checksum and slot checks: once per page where a scan's run comes in, once
//!   per tuple for a point read. A tuple handed to a reader therefore decodes
//!   without reading past its end, whatever the file holds.

//!
//! The files: `file.rs` ([`HeapFile`]), `stream.rs` (scans and
//! [`PageStream`]) and `writer.rs` ([`HeapWriter`]).

pub mod file;
pub mod stream;
pub mod writer;

pub use file::{HeapFile, WRITE_RUN_PAGES, rows_per_page};
pub use stream::PageStream;
pub use writer::HeapWriter;
