//! Names of the objects DDL statements name (tables, indexes, views,
//! columns) and how they are found, what a DDL statement changed, and how a
//! storage error is reported: shared by [`crate::ddl`] and the modules of
//! the statements it dispatches to.

use datafusion::sql::sqlparser::ast::{Ident, ObjectName, ObjectNamePart};
use strata_storage::{Database, StorageError};

use crate::error::SqlError;

fn query(msg: String) -> SqlError {
    SqlError::Query(msg)
}

/// A name as written: its text (folded to lower case unless quoted) and
/// whether it was quoted (a quoted name must match exactly).
#[derive(Clone, Debug, PartialEq)]
pub struct Name {
    pub text: String,
    pub quoted: bool,
}

impl Name {
    pub(crate) fn of(i: &Ident) -> Name {
        match i.quote_style {
            Some(_) => Name {
                text: i.value.clone(),
                quoted: true,
            },
            None => Name {
                text: i.value.to_lowercase(),
                quoted: false,
            },
        }
    }

    /// Whether this name names `existing`: exactly, or for an unquoted name
    /// ignoring case (tables loaded by `strata load` may have upper case names).
    pub(crate) fn names(&self, existing: &str) -> bool {
        existing == self.text || (!self.quoted && existing.eq_ignore_ascii_case(&self.text))
    }
}

/// What a DDL statement changed, for the session to register or forget.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Changed {
    pub created: Vec<String>,
    pub dropped: Vec<String>,
}

/// The single-part name of an object (strata has one schema).
pub(crate) fn object_name(n: &ObjectName, what: &str) -> Result<Name, SqlError> {
    match n.0.as_slice() {
        [ObjectNamePart::Identifier(i)] => Ok(Name::of(i)),
        _ => Err(query(format!(
            "{what} name {n}: strata has one schema, name the {what} without a qualifier"
        ))),
    }
}

/// The table `name` names, if any.
pub(crate) fn find_table(db: &Database, name: &Name) -> Option<String> {
    let names = db.table_names();
    names
        .iter()
        .find(|t| **t == name.text)
        .or_else(|| names.iter().find(|t| name.names(t)))
        .cloned()
}

/// A storage error as the session reports it: the user's mistakes (unknown
/// or existing names, bad schemas) as query errors.
pub(crate) fn storage(verb: &str, e: StorageError) -> SqlError {
    if e.exit_code() == strata_storage::exit::USAGE {
        query(format!("{verb}: {e}"))
    } else {
        SqlError::Storage(e)
    }
}
