//! A table's rows as Arrow and DataFusion see them, made once per table.
//!
//! The direct planners ([`super::direct_select`], [`super::direct_dml`],
//! [`super::direct_insert`]) need a table's Arrow schema and, to resolve the
//! WHERE's columns, a DataFusion schema qualified by the table's name. Making
//! both from the catalog's schema cost a point query an eighth of its
//! instructions, for the same answer every time: a [`Table`]'s schema never
//! changes (DDL opens a new one). So they are kept per database, by the name
//! they are qualified with, for the table object they were made from; a
//! table dropped, recreated or altered is another object and gets its own.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::DFSchema;
use parking_lot::Mutex;
use strata_storage::{Database, Table};

use super::filter::table_schema;

/// The schemas of one table object.
#[derive(Clone)]
pub(super) struct Schemas {
    /// Its rows as Arrow columns (every column nullable, as scans give them).
    pub arrow: SchemaRef,
    /// The same, qualified by the table's name.
    pub qualified: Arc<DFSchema>,
}

/// The database's kept schemas (a [`Database::extension`]).
#[derive(Default)]
struct Kept {
    by_name: Mutex<HashMap<String, (Weak<Table>, Schemas)>>,
}

/// The schemas of `table`, qualified by `name` (the table's name as the
/// statement resolved it); `None` when DataFusion refuses the schema.
pub(super) fn of(db: &Database, name: &str, table: &Arc<Table>) -> Option<Schemas> {
    let kept = db.extension(Kept::default);
    if let Some((t, s)) = kept.by_name.lock().get(name)
        // The same allocation: a Weak keeps it from being reused.
        && std::ptr::eq(t.as_ptr(), Arc::as_ptr(table))
    {
        return Some(s.clone());
    }
    let arrow = table_schema(table);
    let qualified = Arc::new(DFSchema::try_from_qualified_schema(name, arrow.as_ref()).ok()?);
    let made = Schemas { arrow, qualified };
    kept.by_name
        .lock()
        .insert(name.to_string(), (Arc::downgrade(table), made.clone()));
    Some(made)
}
