//! Views in the catalog: a name and the SQL text of a query, which the SQL
//! layer plans (storage only keeps them). Creating, replacing and dropping
//! one is a catalog swap, the commit point of every DDL statement.

use crate::catalog::{ViewDef, validate_name};
use crate::error::{Result, StorageError};

use super::database::Database;

impl Database {
    /// The views, by name.
    pub fn views(&self) -> Vec<ViewDef> {
        self.catalog.lock().views.values().cloned().collect()
    }

    /// Stores view `def`; with `replace`, over an existing view of that name.
    /// A table or (without `replace`) a view of the same name, ignoring
    /// ASCII case, is an error.
    pub fn create_view(&self, def: ViewDef, replace: bool) -> Result<()> {
        self.writable()?;
        validate_name(&def.name, "view")?;
        let _writer = self.writer.lock();
        let mut cat = self.catalog.lock();
        if let Some(t) = cat
            .tables
            .keys()
            .find(|t| t.eq_ignore_ascii_case(&def.name))
        {
            // As PostgreSQL: a view and a table share one name space.
            return Err(StorageError::TableExists(t.clone()));
        }
        let existing = cat
            .views
            .keys()
            .find(|v| v.eq_ignore_ascii_case(&def.name))
            .cloned();
        let mut next = cat.clone();
        match existing {
            Some(v) if !replace => {
                return Err(StorageError::Schema(format!(
                    "view '{v}' already exists (CREATE OR REPLACE VIEW replaces it)"
                )));
            }
            Some(v) => {
                next.views.remove(&v);
            }
            None => {}
        }
        next.views.insert(def.name.clone(), def);
        next.save(&self.dir)?;
        *cat = next;
        Ok(())
    }

    /// Removes view `name` (as stored).
    pub fn drop_view(&self, name: &str) -> Result<()> {
        self.writable()?;
        let _writer = self.writer.lock();
        let mut cat = self.catalog.lock();
        let mut next = cat.clone();
        if next.views.remove(name).is_none() {
            return Err(StorageError::Schema(format!("unknown view '{name}'")));
        }
        next.save(&self.dir)?;
        *cat = next;
        Ok(())
    }
}
