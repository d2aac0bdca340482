//! The SQLSTATE of an error: the five-character code PostgreSQL's clients
//! (psql, drivers, ORMs) act on — retry a 55P03, report a 23505 as a
//! duplicate, a 42P01 as an unknown table. The server sends it with every
//! error; the Python binding maps its class to PEP 249's exceptions.
//!
//! strata's errors have kinds ([`SqlError`]'s variants, [`StorageError`]'s)
//! but DataFusion's planning errors carry only a message, so within a kind
//! the message decides the code. Where nothing finer is known the code is
//! the kind's class: 42000 (a query strata refuses), 22000 (a value that does
//! not fit), XX000 (an internal failure).

use strata_storage::StorageError;

use crate::error::SqlError;

/// Codes strata's messages state themselves, as "(SQLSTATE 23505)".
const STATED: [&str; 8] = [
    "23505", "55P03", "42883", "0A000", "42P07", "22003", "23502", "25001",
];

impl SqlError {
    /// This error's SQLSTATE.
    pub fn sqlstate(&self) -> &'static str {
        let text = self.to_string();
        if let Some(code) = STATED
            .iter()
            .find(|c| text.contains(&format!("SQLSTATE {c}")))
        {
            return code;
        }
        match self {
            SqlError::Storage(s) => storage(s),
            SqlError::Access(_) => "XX000",
            SqlError::Corrupt(_) => "XX001",
            SqlError::Query(m) => query(m),
            SqlError::Data(m) => data(m),
            SqlError::Execution(m) => execution(m),
        }
    }
}

fn storage(e: &StorageError) -> &'static str {
    use StorageError as E;
    match e {
        E::UnknownTable(_) => "42P01",
        E::UnknownColumn { .. } => "42703",
        E::UnknownIndex(_) => "42704",
        E::TableExists(_) | E::ViewExists(_) | E::IndexExists(_) => "42P07",
        E::Schema(_) => "42000",
        E::Value { reason, .. } => data(reason),
        E::Unique { .. } => "23505",
        E::LockTimeout { .. } => "55P03",
        E::SnapshotMoved { .. } => "40001",
        E::NoTransaction { .. } => "25000",
        E::ColdTier { .. } | E::Columnar { .. } => "0A000",
        E::NoRoom { .. } => "53100",
        E::PoolExhausted { .. } => "53200",
        E::CorruptPage { .. } | E::Truncated { .. } | E::LostSideRow { .. } => "XX001",
        E::Catalog { .. } | E::Index { .. } => "XX002",
        E::Io { .. } => "58030",
        _ => "XX000",
    }
}

/// Whether `m` (lower case) contains any of `words`.
fn says(m: &str, words: &[&str]) -> bool {
    words.iter().any(|w| m.contains(w))
}

fn query(m: &str) -> &'static str {
    let m = m.to_ascii_lowercase();
    if says(
        &m,
        &[
            "sql error: parsererror",
            "syntax error",
            "expected: ",
            "expected ",
        ],
    ) && !says(&m, &["expected type"])
    {
        "42601"
    } else if says(&m, &["unknown setting", "unrecognized configuration"]) {
        // PostgreSQL's "unrecognized configuration parameter".
        "42704"
    } else if says(&m, &["is not supported", "not implemented", "unsupported"]) {
        "0A000"
    } else if m.contains("table") && says(&m, &["not found", "does not exist", "unknown table"]) {
        "42P01"
    } else if says(&m, &["no field named", "unknown column", "column"])
        && says(
            &m,
            &[
                "not found",
                "does not exist",
                "no field named",
                "unknown column",
            ],
        )
    {
        "42703"
    } else if says(&m, &["already exists"]) {
        "42P07"
    } else if says(&m, &["ambiguous"]) {
        "42702"
    } else if says(
        &m,
        &[
            "transaction is already open",
            "without a transaction",
            "cannot run inside a transaction",
        ],
    ) {
        "25000"
    } else if says(&m, &["cannot be cast", "type", "coerc"]) {
        "42804"
    } else {
        "42000"
    }
}

fn data(m: &str) -> &'static str {
    let m = m.to_ascii_lowercase();
    if says(&m, &["out of range", "overflow"]) {
        "22003"
    } else if says(&m, &["division by zero", "divide by zero"]) {
        "22012"
    } else if says(
        &m,
        &["null value", "not null", "is null", "must not be null"],
    ) {
        "23502"
    } else if says(&m, &["too long"]) {
        "22001"
    } else if says(&m, &["date", "timestamp"]) && !says(&m, &["cannot cast", "parse"]) {
        "22008"
    } else if says(
        &m,
        &[
            "cannot cast",
            "can't cast",
            "invalid",
            "parse",
            "not a valid",
        ],
    ) {
        "22P02"
    } else {
        "22000"
    }
}

fn execution(m: &str) -> &'static str {
    let m = m.to_ascii_lowercase();
    if says(&m, &["read-only", "read only"]) {
        "25006"
    } else if says(&m, &["out of time", "canceling statement"]) {
        "57014"
    } else if says(&m, &["memory", "resources exhausted"]) {
        "53200"
    } else {
        "XX000"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_users_meet_have_postgresql_codes() {
        let cases = [
            (
                SqlError::Query(
                    "SQL error: ParserError(\"Expected: an SQL statement, found: SELEC\")".into(),
                ),
                "42601",
            ),
            (
                SqlError::Query("table 'datafusion.public.nope' not found".into()),
                "42P01",
            ),
            (
                SqlError::Query("Schema error: No field named nope. Valid fields are t.a.".into()),
                "42703",
            ),
            (
                SqlError::Query("UPDATE: ORDER BY or LIMIT is not supported".into()),
                "0A000",
            ),
            (
                SqlError::Data("value out of range: 9223372036854775807 + 1".into()),
                "22003",
            ),
            (SqlError::Data("division by zero".into()), "22012"),
            (
                SqlError::Data(
                    "INSERT into 't', row 1: column 'a' INT NOT NULL: null value".into(),
                ),
                "23502",
            ),
            (
                SqlError::Data("Cannot cast string 'abc' to value of Int32 type".into()),
                "22P02",
            ),
            (
                SqlError::Storage(StorageError::UnknownTable("t".into())),
                "42P01",
            ),
            (
                SqlError::Storage(StorageError::LockTimeout { waited_ms: 10 }),
                "55P03",
            ),
            (
                SqlError::Execution("database opened read-only: INSERT cannot run".into()),
                "25006",
            ),
            (
                SqlError::Query(
                    "Invalid or Unsupported Configuration: unknown setting 'strata.x'".into(),
                ),
                "42704",
            ),
            (SqlError::Execution("disk on fire".into()), "XX000"),
        ];
        for (e, code) in cases {
            assert_eq!(e.sqlstate(), code, "{e}");
        }
    }
}
