//! `PRIMARY KEY` and `UNIQUE` in `CREATE TABLE` (on a column or as a table
//! constraint), as the unique indexes that enforce them
//! ([`crate::ddl::unique`]): a PRIMARY KEY's index is named `<table>_pkey`, a
//! UNIQUE's `<table>_<columns>_key` (PostgreSQL's names), or the
//! constraint's own name (`CONSTRAINT name ...`). A PRIMARY KEY's columns
//! are NOT NULL.

use datafusion::sql::sqlparser::ast::{
    Expr, Ident, IndexColumn, NullsDistinctOption, PrimaryKeyConstraint, TableConstraint,
    UniqueConstraint,
};
use strata_storage::db::IndexSpec;
use strata_storage::row::Column;

use crate::ddl::object::Name;
use crate::error::SqlError;

/// A key a table is created with.
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    /// The constraint's name, if it was given one.
    pub name: Option<String>,
    /// Its columns, as the table's schema spells them.
    pub columns: Vec<String>,
    pub primary: bool,
}

impl Key {
    /// The name of the index that enforces it.
    pub fn index_name(&self, table: &str) -> String {
        match &self.name {
            Some(n) => n.clone(),
            None if self.primary => format!("{table}_pkey"),
            None => format!("{table}_{}_key", self.columns.join("_")),
        }
    }

    /// The unique index that enforces it.
    pub fn index_spec(&self, table: &str) -> IndexSpec {
        let cols: Vec<&str> = self.columns.iter().map(String::as_str).collect();
        IndexSpec::new(self.index_name(table), &cols).unique()
    }
}

fn refuse(table: &str, what: String) -> SqlError {
    SqlError::Query(format!("CREATE TABLE {table}: {what} is not supported"))
}

/// The key of a `PRIMARY KEY` or `UNIQUE` table constraint (with its
/// columns as written); other constraints are refused.
pub(crate) fn table_key(table: &str, k: &TableConstraint) -> Result<(Key, Vec<Name>), SqlError> {
    let (name, columns, primary) = match k {
        TableConstraint::PrimaryKey(p) => {
            plain_primary(table, p)?;
            (&p.name, &p.columns, true)
        }
        TableConstraint::Unique(u) => {
            plain_unique(table, u)?;
            (&u.name, &u.columns, false)
        }
        other => {
            return Err(refuse(
                table,
                format!("the constraint {other} (strata has PRIMARY KEY, UNIQUE and NOT NULL)"),
            ));
        }
    };
    let names = columns
        .iter()
        .map(|c| key_column(table, c))
        .collect::<Result<Vec<_>, _>>()?;
    if names.is_empty() {
        return Err(refuse(table, "a key without columns".into()));
    }
    Ok((
        Key {
            name: name.as_ref().map(|n| Name::of(n).text),
            columns: vec![],
            primary,
        },
        names,
    ))
}

/// The key a column's `PRIMARY KEY` or `UNIQUE` option makes, named
/// `name` when the option was (`CONSTRAINT name PRIMARY KEY`).
pub(crate) fn column_key(column: &str, name: Option<&Ident>, primary: bool) -> Key {
    Key {
        name: name.map(|n| Name::of(n).text),
        columns: vec![column.to_string()],
        primary,
    }
}

pub(crate) fn plain_primary(table: &str, p: &PrimaryKeyConstraint) -> Result<(), SqlError> {
    if p.index_type.is_some() || !p.index_options.is_empty() || p.characteristics.is_some() {
        return Err(refuse(
            table,
            format!("the key options of {p} (a key is a B+-tree, checked at once)"),
        ));
    }
    Ok(())
}

pub(crate) fn plain_unique(table: &str, u: &UniqueConstraint) -> Result<(), SqlError> {
    if u.index_type.is_some() || !u.index_options.is_empty() || u.characteristics.is_some() {
        return Err(refuse(
            table,
            format!("the key options of {u} (a key is a B+-tree, checked at once)"),
        ));
    }
    if u.nulls_distinct == NullsDistinctOption::NotDistinct {
        return Err(refuse(table, "NULLS NOT DISTINCT".into()));
    }
    Ok(())
}

fn key_column(table: &str, c: &IndexColumn) -> Result<Name, SqlError> {
    let o = &c.column;
    if o.options.asc.is_some() || o.options.nulls_first.is_some() || c.operator_class.is_some() {
        return Err(refuse(table, format!("the key {o} (keys are columns)")));
    }
    match &o.expr {
        Expr::Identifier(i) => Ok(Name::of(i)),
        e => Err(refuse(table, format!("the key {e} (keys are columns)"))),
    }
}

/// Resolves `written` (a table constraint's columns) against `columns`,
/// spelled as there; a PRIMARY KEY makes them NOT NULL.
pub(crate) fn resolve(
    table: &str,
    mut key: Key,
    written: &[Name],
    columns: &mut [Column],
) -> Result<Key, SqlError> {
    for w in written {
        let c = columns.iter().position(|c| w.names(&c.name)).ok_or_else(|| {
            SqlError::Query(format!(
                "CREATE TABLE {table}: the key names column '{}', which the table does not have",
                w.text
            ))
        })?;
        if key.columns.contains(&columns[c].name) {
            return Err(SqlError::Query(format!(
                "CREATE TABLE {table}: column '{}' appears twice in a key",
                columns[c].name
            )));
        }
        key.columns.push(columns[c].name.clone());
    }
    Ok(key)
}

/// Checks the keys of a table being created (at most one PRIMARY KEY) and
/// makes a PRIMARY KEY's columns NOT NULL.
pub(crate) fn finish(table: &str, keys: &[Key], columns: &mut [Column]) -> Result<(), SqlError> {
    if keys.iter().filter(|k| k.primary).count() > 1 {
        return Err(SqlError::Query(format!(
            "CREATE TABLE {table}: a table has at most one PRIMARY KEY"
        )));
    }
    for k in keys.iter().filter(|k| k.primary) {
        for c in columns.iter_mut().filter(|c| k.columns.contains(&c.name)) {
            c.nullable = false;
        }
    }
    Ok(())
}
