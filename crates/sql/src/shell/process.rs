//! What the binaries over the SQL layer (`strata-sql`, `strata-bench-tpch`)
//! share as processes: the usage error, and the one way a failed run becomes
//! a message and an exit code (`strata_exit`, the classifier `strata`
//! uses too, with `SqlError` added).

use std::process::ExitCode;

use crate::SqlError;

/// A mistake in the command line that clap cannot see (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// The process exit code of a failed run.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    fn usage(e: &(dyn std::error::Error + 'static)) -> Option<u8> {
        e.is::<Usage>().then_some(strata_storage::exit::USAGE)
    }
    strata_exit::code_of(e.as_ref(), &[SqlError::classify, usage])
}

/// Runs a binary's work: success, or the error on stderr and its exit code.
pub fn finish(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(exit_code(&e))
        }
    }
}
