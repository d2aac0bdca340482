//! The crate's one error type. Every message names what was at fault — the
//! file and field of a configuration, the object a layout could not place, the
//! input of the cost calculator — because the person reading it has to find and
//! fix that thing, usually without the source at hand.

use std::path::PathBuf;

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
