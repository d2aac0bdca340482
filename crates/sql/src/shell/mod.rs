//! What the programs over the SQL layer share: scripts split into
//! statements, result formats, and the process's usage errors and exit codes
//! (the interactive session itself is the `strata-sql` binary's `repl.rs`),
//! and running statements through the `strata serve` that owns a database.

pub mod format;
pub mod open;
pub mod process;
pub mod remote;
pub mod script;
