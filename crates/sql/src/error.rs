//! The SQL layer's one error type, [`SqlError`], and how DataFusion's errors
//! become it.
//!
//! Its own module so that everything in the crate can name it without
//! importing the session (`session.rs` re-exports it). Each variant has one
//! process exit code (`strata_storage::exit`): a value that does not fit —
//! an overflow, a cast of `'abc'` to INT, an invalid date, a division by
//! zero — is bad input (3) whether strata's row check or DataFusion's
//! kernels found it; bad SQL and unknown names are usage (2); corruption is
//! 4; everything else is an operational failure (1).

use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;
use strata_storage::StorageError;

#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// Bad SQL, unknown names, type errors, bad settings.
    #[error("{0}")]
    Query(String),
    /// A corrupt page or file met while running.
    #[error("{0}")]
    Corrupt(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Access(#[from] strata_access::AccessError),
    /// A value that does not fit its column or its type (NULL in a NOT NULL
    /// column, a string too long, a number out of range, text that is not a
    /// number or a date, a division by zero).
    #[error("{0}")]
    Data(String),
    /// Failures while running (I/O and the like).
    #[error("{0}")]
    Execution(String),
}

impl From<DataFusionError> for SqlError {
    fn from(e: DataFusionError) -> SqlError {
        let root = e.find_root();
        if let DataFusionError::External(x) = root {
            // strata's errors travel through DataFusion as External errors;
            // they keep their exit code.
            return from_external(x.as_ref());
        }
        if let DataFusionError::ArrowError(a, _) = root {
            if let ArrowError::ExternalError(x) = a.as_ref() {
                return from_external(x.as_ref());
            }
            if let Some(msg) = value_error(a) {
                return SqlError::Data(msg);
            }
        }
        // DataFusion's messages can carry a backtrace hint after the first line.
        let msg = root.to_string().lines().next().unwrap_or("").to_string();
        match root {
            DataFusionError::Plan(_)
            | DataFusionError::SchemaError(..)
            | DataFusionError::SQL(..)
            | DataFusionError::NotImplemented(_)
            | DataFusionError::Configuration(_) => SqlError::Query(msg),
            // DataFusion's own casts of literals (e.g. `CAST('abc' AS INT)`
            // folded while planning) report the value in an Execution error.
            DataFusionError::Execution(m) if is_value_message(m) => SqlError::Data(msg),
            _ => SqlError::Execution(msg),
        }
    }
}

/// A strata error carried through DataFusion, with its own exit code.
fn from_external(x: &(dyn std::error::Error + Send + Sync + 'static)) -> SqlError {
    use strata_storage::exit;
    let code = strata_exit::code_of(x, &[SqlError::classify]);
    let msg = x.to_string();
    match code {
        exit::CORRUPT => SqlError::Corrupt(msg),
        exit::BAD_INPUT => SqlError::Data(msg),
        exit::USAGE => SqlError::Query(msg),
        _ => SqlError::Execution(msg),
    }
}

/// The message of an Arrow error about a value that does not fit its type
/// (the data's fault, not the system's); `None` for any other.
fn value_error(a: &ArrowError) -> Option<String> {
    let first = |m: &str| m.lines().next().unwrap_or("").to_string();
    match a {
        ArrowError::CastError(m) | ArrowError::ParseError(m) => Some(first(m)),
        ArrowError::ArithmeticOverflow(m) => Some(format!("value out of range: {}", first(m))),
        ArrowError::DivideByZero => Some("division by zero".into()),
        ArrowError::ComputeError(m) if is_value_message(m) => Some(first(m)),
        _ => None,
    }
}

/// Whether a DataFusion or Arrow message is about a value that does not fit
/// (these errors carry no kind of their own).
fn is_value_message(m: &str) -> bool {
    let m = m.to_ascii_lowercase();
    [
        "cannot cast",
        "can't cast",
        "overflow",
        "out of range",
        "divide by zero",
        "division by zero",
        "invalid date",
        "not a valid",
    ]
    .iter()
    .any(|w| m.contains(w))
}

impl SqlError {
    /// This error's process exit code (see `strata_storage::exit`).
    pub fn exit_code(&self) -> u8 {
        use strata_storage::exit;
        match self {
            SqlError::Query(_) => exit::USAGE,
            SqlError::Corrupt(_) => exit::CORRUPT,
            SqlError::Storage(s) => s.exit_code(),
            SqlError::Access(a) => a.exit_code(),
            SqlError::Data(_) => exit::BAD_INPUT,
            SqlError::Execution(_) => exit::FAILURE,
        }
    }

    /// An [`exit::Classifier`](strata_storage::exit::Classifier) for this type.
    pub fn classify(e: &(dyn std::error::Error + 'static)) -> Option<u8> {
        e.downcast_ref::<SqlError>().map(SqlError::exit_code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_storage::exit;

    #[test]
    fn value_errors_from_datafusion_are_bad_input() {
        let cases = [
            ArrowError::CastError("Cannot cast string 'abc' to value of Int32 type".into()),
            ArrowError::ParseError("invalid date".into()),
            ArrowError::ArithmeticOverflow("Overflow happened on: 1 * 2".into()),
            ArrowError::DivideByZero,
        ];
        for a in cases {
            let e = SqlError::from(DataFusionError::from(a));
            assert_eq!(e.exit_code(), exit::BAD_INPUT, "{e}");
        }
        let io = SqlError::from(DataFusionError::from(ArrowError::IoError(
            "read".into(),
            std::io::Error::other("disk"),
        )));
        assert_eq!(io.exit_code(), exit::FAILURE);
        let plan = SqlError::from(DataFusionError::Plan("no such column".into()));
        assert_eq!(plan.exit_code(), exit::USAGE);
    }
}
