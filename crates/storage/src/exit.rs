//! Process exit codes: one meaning per code, shared by every strata binary
//! (`strata` and `strata-sql`), so a script sees the same code for the same
//! failure whichever binary ran it.
//!
//! Each error type says its own code (`StorageError::exit_code`,
//! `AccessError::exit_code`, `LoadError::exit_code`, the SQL session's
//! `SqlError::exit_code`); [`code_of`] walks an error's chain of causes and takes
//! the code of the first cause of a known type.

use std::error::Error;

use crate::StorageError;

/// Operational failure: I/O error, disk full, anything not the user's input.
pub const FAILURE: u8 = 1;
/// Bad usage: unknown option value, table, column, index or profile; bad SQL.
pub const USAGE: u8 = 2;
/// Bad input data: a CSV/Parquet row or value that does not fit (the message
/// names file, line and column).
pub const BAD_INPUT: u8 = 3;
/// Corruption: a page or file that fails its checks (the message names file and page).
pub const CORRUPT: u8 = 4;

/// Recognizes one crate's error type in a chain of causes and gives its code.
pub type Classifier = fn(&(dyn Error + 'static)) -> Option<u8>;

/// The exit code of `err`: the first cause in its chain (itself first) that
/// `classifiers` or [`StorageError`] recognize; [`FAILURE`] when none does.
pub fn code_of(err: &(dyn Error + 'static), classifiers: &[Classifier]) -> u8 {
    let mut cause = Some(err);
    while let Some(e) = cause {
        if let Some(code) = classifiers.iter().find_map(|c| c(e)) {
            return code;
        }
        if let Some(s) = e.downcast_ref::<StorageError>() {
            return s.exit_code();
        }
        cause = e.source();
    }
    FAILURE
}

impl StorageError {
    /// This error's exit code (see the module's constants).
    pub fn exit_code(&self) -> u8 {
        use StorageError as E;
        match self {
            E::UnknownTable(_)
            | E::UnknownColumn { .. }
            | E::UnknownIndex(_)
            | E::TableExists(_)
            | E::ViewExists(_)
            | E::IndexExists(_)
            | E::Schema(_)
            | E::Profile(_)
            | E::NoTransaction { .. }
            | E::ColdTier { .. }
            | E::Columnar { .. } => USAGE,
            E::Value { .. } | E::Unique { .. } => BAD_INPUT,
            E::CorruptPage { .. }
            | E::Truncated { .. }
            | E::Catalog { .. }
            | E::Index { .. }
            | E::LostSideRow { .. } => CORRUPT,
            E::ColdObject { corrupt: true, .. } => CORRUPT,
            _ => FAILURE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("wrapped")]
    struct Wrapper(#[source] StorageError);

    #[derive(Debug, thiserror::Error)]
    #[error("mine")]
    struct Mine;

    fn mine(e: &(dyn Error + 'static)) -> Option<u8> {
        e.is::<Mine>().then_some(USAGE)
    }

    #[test]
    fn codes_come_from_the_first_known_cause() {
        let corrupt = StorageError::CorruptPage {
            path: "t.0000".into(),
            page: 3,
            reason: "bad checksum".into(),
        };
        assert_eq!(code_of(&Wrapper(corrupt), &[]), CORRUPT);
        assert_eq!(code_of(&StorageError::UnknownTable("t".into()), &[]), USAGE);
        assert_eq!(code_of(&Mine, &[mine]), USAGE);
        assert_eq!(code_of(&Mine, &[]), FAILURE);
        let io = StorageError::io("x", std::io::Error::other("disk full"));
        assert_eq!(code_of(&io, &[mine]), FAILURE);
        let value = StorageError::Value {
            column: "c".into(),
            reason: "too long".into(),
        };
        assert_eq!(value.exit_code(), BAD_INPUT);
    }
}
