//! `strata info` and `strata check`: what the database holds and whether it
//! is sound (the reports are `strata_inspect`'s); beside the `strata serve`
//! that owns the database, asked of the server (`through_server.rs`).

use anyhow::Result;
use strata_storage::Database;
use strata_storage::db::SNAPSHOT_TRIES;

use crate::context::{Global, open_db};
use crate::progress::Bars;
use crate::through_server::Server;

/// `report` of the database opened read-only, made again on a new snapshot
/// when it failed while a writer beside it committed (a page the report read
/// written back, a file replaced).
fn on_a_snapshot<T>(cli: &Global, report: impl Fn(&Database) -> Result<T>) -> Result<T> {
    let mut db = open_db(cli, true)?;
    let mut tries = 0;
    loop {
        match report(&db) {
            Err(_) if tries < SNAPSHOT_TRIES && db.worth_a_new_snapshot() => {
                tries += 1;
                db = db.reopen()?;
            }
            r => return r,
        }
    }
}

/// A string literal of SQL: `name` quoted, its quotes doubled.
fn literal(name: &str) -> String {
    format!("'{}'", name.replace('\'', "''"))
}

pub fn info(cli: &Global, only: Option<&str>, json: bool) -> Result<()> {
    let tables: Vec<serde_json::Value> = match Server::of(&cli.db) {
        Some(mut server) => {
            let args = only.map(literal).unwrap_or_default();
            server
                .column(&format!("SELECT info FROM strata_info({args})"))?
                .iter()
                .map(|text| serde_json::from_str(text))
                .collect::<Result<_, _>>()?
        }
        None => on_a_snapshot(cli, |db| {
            strata_inspect::info::tables::<anyhow::Error>(db, only)
        })?,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&tables)?);
    } else {
        print!(
            "{}",
            strata_inspect::info::render(&cli.db.display().to_string(), &tables)
        );
    }
    Ok(())
}

pub fn check(cli: &Global) -> Result<()> {
    let lines = match Server::of(&cli.db) {
        Some(mut server) => server.column("SELECT line FROM strata_check()")?,
        None => on_a_snapshot(cli, |db| {
            let bars = Bars::new();
            let lines = strata_inspect::check::database::<anyhow::Error>(db, &bars)?;
            bars.finish();
            Ok(lines)
        })?,
    };
    for line in lines {
        println!("{line}");
    }
    Ok(())
}

/// `strata index cache TABLE INDEX --columns c,d | --none`.
pub fn index_cache(cli: &Global, table: &str, index: &str, columns: &[String]) -> Result<()> {
    let db = open_db(cli, false)?;
    let cols: Vec<&str> = columns.iter().map(|c| c.trim()).collect();
    db.set_index_cache(table, index, &cols)?;
    let t = db.table(table)?;
    let ix = t.index(index)?;
    match ix.cached_fields() {
        Some(f) => println!(
            "index {} of {table} caches ({}) in its leaves' free space: {}-byte items",
            ix.def.name,
            f.names.join(", "),
            ix.btree.cache_layout().map_or(0, |l| l.item_len())
        ),
        None => println!("index {} of {table} caches no column", ix.def.name),
    }
    Ok(())
}
