//! The one exit-code classifier of strata's binaries.
//!
//! `strata` (which does not link DataFusion) and `strata-sql` (which does)
//! must give a script the same code for the same failure
//! (`strata_storage::exit`: 1 operational, 2 usage, 3 bad input, 4 corrupt).
//! Each library crate's error type says its own code; this crate sits above
//! every library crate (storage, load, access, csd) and below both
//! binaries, so the list of every library crate's classifier lives here,
//! once. A binary adds only what is its own (its usage error; for SQL,
//! `SqlError`).

use std::error::Error;

use strata_storage::exit::{self, Classifier};

use strata_csd::CsdError;

/// The classifiers of every library crate below the binaries (storage's is
/// built into [`exit::code_of`]).
pub const LIBRARIES: [Classifier; 3] = [
    CsdError::classify,
    strata_load::LoadError::classify,
    strata_access::AccessError::classify,
];

/// The exit code of `err`: the first cause in its chain that `own` (the
/// binary's classifiers, tried first) or a library crate recognizes;
/// [`exit::FAILURE`] when none does.
pub fn code_of(err: &(dyn Error + 'static), own: &[Classifier]) -> u8 {
    let all: Vec<Classifier> = own.iter().chain(LIBRARIES.iter()).copied().collect();
    exit::code_of(err, &all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("while running")]
    struct Wrapper(#[source] Box<dyn Error + Send + Sync>);

    #[derive(Debug, thiserror::Error)]
    #[error("mine")]
    struct Mine;

    fn mine(e: &(dyn Error + 'static)) -> Option<u8> {
        e.is::<Mine>().then_some(exit::USAGE)
    }

    #[test]
    fn every_library_crates_error_keeps_its_code_in_a_chain() {
        let csd = CsdError::Config {
            path: "csd.json".into(),
            field: "groups".into(),
            message: "must be at least 1".into(),
        };
        assert_eq!(code_of(&Wrapper(Box::new(csd)), &[]), exit::USAGE);
        let load = strata_load::LoadError::Mismatch("x.csv: no column 'a'".into());
        assert_eq!(code_of(&Wrapper(Box::new(load)), &[]), exit::BAD_INPUT);
        let storage = strata_storage::StorageError::CorruptPage {
            path: "t.0000".into(),
            page: 3,
            reason: "bad checksum".into(),
        };
        assert_eq!(code_of(&Wrapper(Box::new(storage)), &[]), exit::CORRUPT);
        // A binary's own classifier is asked first; an unknown error is 1.
        assert_eq!(code_of(&Wrapper(Box::new(Mine)), &[mine]), exit::USAGE);
        assert_eq!(code_of(&Mine, &[]), exit::FAILURE);
    }
}
