//! The crate's one error type. Every message names what was at fault — the
//! file and field of a configuration, the object a layout could not place, the
//! input of the cost calculator — because the person reading it has to find and
//! fix that thing, usually without the source at hand.

use std::path::PathBuf;

use strata_storage::exit;

/// What went wrong in the CSD engine (configuration, layouts, costs,
/// simulations).
#[derive(Debug, thiserror::Error)]
pub enum CsdError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A configuration file is malformed or one of its fields is out of range.
    #[error("{}: {field}: {message}", path.display())]
    Config {
        path: PathBuf,
        /// The JSON field at fault (`groups`, `layout.explicit`, …), or
        /// `(file)` when the file is not JSON at all.
        field: String,
        message: String,
    },
    /// A value given as text (a policy, a layout, a price list) does not parse.
    #[error("{what} {value:?}: {message}")]
    Parse {
        what: String,
        value: String,
        message: String,
    },
    /// An explicit layout has no prefix matching the object being stored.
    #[error("object {object:?} matches no prefix of the explicit layout (prefixes: {prefixes})")]
    Unplaced { object: String, prefixes: String },
    /// A layout or request names a group the device does not have.
    #[error("{what}: group {group} is out of range (the device has {groups} groups, 0..{groups})")]
    GroupOutOfRange {
        what: String,
        group: u32,
        groups: u32,
    },
    /// Bad input to the cost calculator (prices, tier mixes).
    #[error("cost input {field}: {message}")]
    Cost { field: String, message: String },
    /// A simulation scenario that cannot run (no clients, an empty query, …).
    #[error("simulation {field}: {message}")]
    Sim { field: String, message: String },
}

impl CsdError {
    /// This error's exit code (`strata_storage::exit`): a file that cannot
    /// be read or written is an operational failure; everything else is
    /// what the user gave — a configuration, a value, a layout, prices, a
    /// scenario — and is bad usage.
    pub fn exit_code(&self) -> u8 {
        match self {
            CsdError::Io { .. } => exit::FAILURE,
            CsdError::Config { .. }
            | CsdError::Parse { .. }
            | CsdError::Unplaced { .. }
            | CsdError::GroupOutOfRange { .. }
            | CsdError::Cost { .. }
            | CsdError::Sim { .. } => exit::USAGE,
        }
    }

    /// An [`exit::Classifier`] for this type.
    pub fn classify(e: &(dyn std::error::Error + 'static)) -> Option<u8> {
        e.downcast_ref::<CsdError>().map(CsdError::exit_code)
    }

    pub(crate) fn parse(what: &str, value: &str, message: impl Into<String>) -> CsdError {
        CsdError::Parse {
            what: what.into(),
            value: value.into(),
            message: message.into(),
        }
    }

    pub(crate) fn sim(field: &str, message: impl Into<String>) -> CsdError {
        CsdError::Sim {
            field: field.into(),
            message: message.into(),
        }
    }

    pub(crate) fn cost(field: &str, message: impl Into<String>) -> CsdError {
        CsdError::Cost {
            field: field.into(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("while serving")]
    struct Wrapper(#[source] CsdError);

    #[test]
    fn errors_classify_into_strata_exit_codes() {
        let io = CsdError::Io {
            path: "csd.json".into(),
            source: std::io::Error::other("disk full"),
        };
        assert_eq!(io.exit_code(), exit::FAILURE);
        let usage = [
            CsdError::Config {
                path: "csd.json".into(),
                field: "groups".into(),
                message: "must be at least 1".into(),
            },
            CsdError::parse("policy", "fastest", "unknown policy"),
            CsdError::Unplaced {
                object: "t/x.0".into(),
                prefixes: "a/".into(),
            },
            CsdError::GroupOutOfRange {
                what: "layout".into(),
                group: 9,
                groups: 5,
            },
            CsdError::cost("price", "negative"),
            CsdError::sim("clients", "none"),
        ];
        for e in &usage {
            assert_eq!(e.exit_code(), exit::USAGE, "{e}");
            assert_eq!(CsdError::classify(e), Some(exit::USAGE), "{e}");
        }
        assert_eq!(CsdError::classify(&io), Some(exit::FAILURE));
        // Not a CsdError: not this classifier's.
        let other = std::io::Error::other("x");
        assert_eq!(CsdError::classify(&other), None);
        // Through a chain of causes, as the shared classifier walks it.
        let wrapped = Wrapper(CsdError::parse("layout", "zigzag", "unknown layout"));
        assert_eq!(exit::code_of(&wrapped, &[CsdError::classify]), exit::USAGE);
    }
}
