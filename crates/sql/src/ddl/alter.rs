//! `ALTER TABLE t ADD [COLUMN] c type [NULL]`, `DROP [COLUMN] c`, `RENAME
//! [COLUMN] a TO b` and `RENAME TO u`, one change per statement, run by
//! [`strata_storage::Database::alter_table`] (which says what each does to
//! the table's files and why it is crash-safe). A new column is NULL in the
//! rows already there, so it may be NOT NULL only in an empty table;
//! `DEFAULT` and keys on a new column are refused. A column an index has
//! as a key (or caches) is not dropped: the error names the index.

use datafusion::sql::sqlparser::ast::{AlterTable, AlterTableOperation, RenameTableNameKind};
use strata_storage::Database;
use strata_storage::db::{NoProgress, TableChange};
use strata_storage::row::Column;

use crate::ddl::object::{Changed, Name, find_table, object_name, storage};
use crate::error::SqlError;

/// An `ALTER TABLE` statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Alter {
    pub table: Name,
    pub if_exists: bool,
    pub change: Change,
}

/// What one `ALTER TABLE` changes.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    AddColumn { column: Column, if_not_exists: bool },
    DropColumn { name: Name, if_exists: bool },
    RenameColumn { from: Name, to: String },
    Rename(String),
}

fn query(msg: String) -> SqlError {
    SqlError::Query(msg)
}

/// `ALTER TABLE` as an [`Alter`]; an error names what is not supported.
pub(crate) fn parse(a: &AlterTable) -> Result<Alter, SqlError> {
    let table = object_name(&a.name, "table")?;
    let refuse = |what: String| -> Result<Alter, SqlError> {
        Err(query(format!(
            "ALTER TABLE {}: {what} is not supported",
            table.text
        )))
    };
    if a.only || a.location.is_some() || a.on_cluster.is_some() || a.table_type.is_some() {
        return refuse("ONLY, a location, a cluster or a table type".into());
    }
    let [op] = a.operations.as_slice() else {
        return refuse("more than one change in a statement (give one ALTER TABLE each)".into());
    };
    let change = match op {
        AlterTableOperation::AddColumn {
            if_not_exists,
            column_def,
            column_position,
            ..
        } => {
            if column_position.is_some() {
                return refuse("FIRST or AFTER (a new column is the last)".into());
            }
            let (column, key) = crate::ddl::column::column(&table.text, column_def)
                .map_err(|e| query(e.to_string().replace("CREATE TABLE", "ALTER TABLE")))?;
            if key.is_some() {
                return refuse(
                    "PRIMARY KEY or UNIQUE on a new column (CREATE UNIQUE INDEX makes one)".into(),
                );
            }
            Change::AddColumn {
                column,
                if_not_exists: *if_not_exists,
            }
        }
        AlterTableOperation::DropColumn {
            column_names,
            if_exists,
            drop_behavior,
            ..
        } => {
            if drop_behavior.is_some() {
                return refuse("CASCADE or RESTRICT".into());
            }
            let [c] = column_names.as_slice() else {
                return refuse("dropping several columns at once".into());
            };
            Change::DropColumn {
                name: Name::of(c),
                if_exists: *if_exists,
            }
        }
        AlterTableOperation::RenameColumn {
            old_column_name,
            new_column_name,
        } => Change::RenameColumn {
            from: Name::of(old_column_name),
            to: Name::of(new_column_name).text,
        },
        AlterTableOperation::RenameTable { table_name } => {
            let (RenameTableNameKind::To(n) | RenameTableNameKind::As(n)) = table_name;
            Change::Rename(object_name(n, "table")?.text)
        }
        other => return refuse(format!("{other}")),
    };
    Ok(Alter {
        table,
        if_exists: a.if_exists,
        change,
    })
}

/// Runs an `ALTER TABLE`: what the session re-registers is the table
/// (under its new name after a rename).
pub(crate) fn run(db: &Database, a: &Alter) -> Result<Changed, SqlError> {
    let Alter {
        table,
        if_exists,
        change,
    } = a;
    const VERB: &str = "ALTER TABLE";
    let Some(t) = find_table(db, table) else {
        if *if_exists {
            return Ok(Changed::default());
        }
        return Err(query(format!("{VERB}: unknown table '{}'", table.text)));
    };
    let schema = db.table(&t)?.schema().clone();
    let find = |n: &Name| schema.columns.iter().find(|c| n.names(&c.name));
    let change = match change {
        Change::AddColumn {
            column,
            if_not_exists,
        } => {
            if find(&Name {
                text: column.name.clone(),
                quoted: true,
            })
            .is_some()
                && *if_not_exists
            {
                return Ok(Changed::default());
            }
            TableChange::AddColumn(column.clone())
        }
        Change::DropColumn { name, if_exists } => match find(name) {
            Some(c) => TableChange::DropColumn(c.name.clone()),
            None if *if_exists => return Ok(Changed::default()),
            None => {
                return Err(query(format!(
                    "{VERB} {t}: no column '{}' (it has {})",
                    name.text,
                    schema.names()
                )));
            }
        },
        Change::RenameColumn { from, to } => match find(from) {
            Some(c) => TableChange::RenameColumn {
                from: c.name.clone(),
                to: to.clone(),
            },
            None => {
                return Err(query(format!(
                    "{VERB} {t}: no column '{}' (it has {})",
                    from.text,
                    schema.names()
                )));
            }
        },
        Change::Rename(to) => TableChange::Rename(to.clone()),
    };
    db.alter_table(&t, &change, &NoProgress)
        .map_err(|e| storage(&format!("{VERB} {t}"), e))?;
    let now = match &change {
        TableChange::Rename(to) => to.clone(),
        _ => t.clone(),
    };
    Ok(Changed {
        created: vec![now],
        dropped: vec![t],
    })
}
