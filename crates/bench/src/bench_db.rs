//! The bench database: the tables an experiment generates, kept between runs
//! and reused by later runs for as long as they hold what those runs want.

use std::path::Path;

use anyhow::Result;
use strata_storage::catalog::Catalog;
use strata_storage::db::DbOptions;
use strata_storage::{Database, Table};

/// Generates the tables of `wanted` that the database at `db_dir` lacks or
/// holds with other contents: `name` names a wanted table, `fits` says whether
/// the table of that name is already the one wanted, and `generate` makes a
/// missing one.
///
/// The look is a read-only open, so runs that only read can share the
/// database; the missing tables are then generated through one writable open
/// (the database is created when there is none), each after the stale table
/// of its name, if any, is dropped.
pub(crate) fn generate_missing<W>(
    db_dir: &Path,
    wanted: Vec<W>,
    name: impl Fn(&W) -> String,
    fits: impl Fn(&Table, &W) -> bool,
    mut generate: impl FnMut(&Database, W) -> Result<()>,
) -> Result<()> {
    let missing: Vec<W> = if Catalog::path(db_dir).exists() {
        let db = Database::open(db_dir, options(8 << 20, true))?;
        wanted
            .into_iter()
            .filter(|w| !db.table(&name(w)).is_ok_and(|t| fits(&t, w)))
            .collect()
    } else {
        wanted
    };
    if missing.is_empty() {
        return Ok(());
    }
    let db = Database::open_or_create(db_dir, options(64 << 20, false))?;
    for w in missing {
        let table = name(&w);
        if db.table(&table).is_ok() {
            db.drop_table(&table)?;
        }
        generate(&db, w)?;
    }
    Ok(())
}

/// Buffered (not direct) I/O on the default device, with a pool of `pool` bytes.
fn options(pool: usize, read_only: bool) -> DbOptions {
    DbOptions {
        buffer_pool_bytes: pool,
        direct_io: false,
        profile: None,
        read_only,
        ..DbOptions::default()
    }
}

/// Copies a closed database directory (a benchmark's states are copies of
/// one generated database).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context;
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let dest = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &dest)?;
        } else {
            std::fs::copy(e.path(), &dest)
                .with_context(|| format!("copying {}", e.path().display()))?;
        }
    }
    Ok(())
}
