//! The crate's own error: a setting of the cold tier that cannot be used.
//! Reading, fetching and moving cold data fail with `StorageError`s
//! (`ColdObject`, `ColdTier`, I/O), which the storage layer classifies; this
//! type is what is left, the configuration a user gave.

use strata_storage::exit;

/// A setting of the cold tier that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ColdError {
    /// An environment variable holds a value the cold tier cannot take.
    #[error("{var}={value:?} is not {expected}")]
    Setting {
        var: &'static str,
        value: String,
        /// What the variable takes (`a number of seconds`).
        expected: &'static str,
    },
}

impl ColdError {
    /// This error's exit code (`strata_storage::exit`): a setting the user
    /// gave, so bad usage.
    pub fn exit_code(&self) -> u8 {
        match self {
            ColdError::Setting { .. } => exit::USAGE,
        }
    }

    /// An [`exit::Classifier`] for this type.
    pub fn classify(e: &(dyn std::error::Error + 'static)) -> Option<u8> {
        e.downcast_ref::<ColdError>().map(ColdError::exit_code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_setting_is_bad_usage_and_names_the_variable() {
        let e = ColdError::Setting {
            var: crate::transit::RETRY_ENV,
            value: "soon".into(),
            expected: "a number of seconds",
        };
        assert_eq!(
            e.to_string(),
            "STRATA_CSD_RETRY_SECS=\"soon\" is not a number of seconds"
        );
        assert_eq!(ColdError::classify(&e), Some(exit::USAGE));
        assert_eq!(ColdError::classify(&std::io::Error::other("x")), None);
    }
}
