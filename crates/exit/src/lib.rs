//! The one exit-code classifier of strata's binaries.
//!
//! `strata` (which does not link DataFusion) and `strata-sql` (which does)
//! must give a script the same code for the same failure
//! (`strata_storage::exit`: 1 operational, 2 usage, 3 bad input, 4 corrupt).
//! Each library crate's error types say their own code; this crate sits above
//! every library crate (storage, load, access, columns, csd, cold) and below both
//! binaries, so the list of every library error's classifier lives here,
//! once. A binary adds only what is its own (its usage error; for SQL,
//! `SqlError`).

use std::error::Error;

use strata_storage::exit::{self, Classifier};

use strata_cold::ColdError;
use strata_csd::CsdError;
use strata_csd::admin_client::AdminError;
use strata_csd::store::StoreError;

/// The classifiers of every library error type below the binaries
/// (storage's is built into [`exit::code_of`]). An error that wraps another
/// (`strata_csd::server::ServeError` its `StoreError` or `CsdError`) is
/// classified by the cause it wraps; one that none of these recognize is an
/// operational failure.
pub const LIBRARIES: [Classifier; 7] = [
    CsdError::classify,
    StoreError::classify,
    AdminError::classify,
    ColdError::classify,
    strata_load::LoadError::classify,
    strata_access::AccessError::classify,
    strata_columns::ColumnsError::classify,
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
    fn every_library_error_keeps_its_code_in_a_chain() {
        let csd = CsdError::Config {
            path: "csd.json".into(),
            field: "groups".into(),
            message: "must be at least 1".into(),
        };
        assert_eq!(code_of(&Wrapper(Box::new(csd)), &[]), exit::USAGE);
        // The device's server, through the error it wraps.
        let groups = strata_csd::server::ServeError::Store {
            dir: "data".into(),
            source: StoreError::GroupsChanged {
                path: "data/csd-meta.json".into(),
                placed: 3,
                asked: 2,
            },
        };
        assert_eq!(code_of(&Wrapper(Box::new(groups)), &[]), exit::USAGE);
        let meta = StoreError::BadMeta {
            path: "data/csd-meta.json".into(),
            why: "expected value at line 1 column 1".into(),
        };
        assert_eq!(code_of(&Wrapper(Box::new(meta)), &[]), exit::CORRUPT);
        let listen = strata_csd::server::ServeError::Listen {
            addr: "127.0.0.1:9000".parse().unwrap(),
            source: std::io::Error::other("address in use"),
        };
        assert_eq!(code_of(&Wrapper(Box::new(listen)), &[]), exit::FAILURE);
        let endpoint = AdminError::BadEndpoint("localhost:9000".into());
        assert_eq!(code_of(&Wrapper(Box::new(endpoint)), &[]), exit::USAGE);
        let down = AdminError::Request {
            endpoint: "http://127.0.0.1:1".into(),
            message: "cannot connect".into(),
        };
        assert_eq!(code_of(&Wrapper(Box::new(down)), &[]), exit::FAILURE);
        // The cold tier: its setting, and a cold object (a StorageError).
        let setting = ColdError::Setting {
            var: "STRATA_CSD_RETRY_SECS",
            value: "soon".into(),
            expected: "a number of seconds",
        };
        assert_eq!(code_of(&Wrapper(Box::new(setting)), &[]), exit::USAGE);
        let object = strata_storage::StorageError::ColdObject {
            object: "db/t/t.0000.0".into(),
            endpoint: "http://127.0.0.1:9000".into(),
            reason: "CRC32C mismatch".into(),
            corrupt: true,
        };
        assert_eq!(code_of(&Wrapper(Box::new(object)), &[]), exit::CORRUPT);
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
