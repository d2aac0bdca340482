//! `strata tier cold TABLE --endpoint URL` and `strata tier local TABLE`: move
//! a table's files to the cold storage device (Skipper's CSD, `strata csd
//! serve` or any S3 endpoint) and back. The moves themselves, and why a crash
//! at any point loses nothing, are in `strata_cold::tier`.

use anyhow::Result;
use clap::{Args, Subcommand};
use strata_cold::tier::{self, TierOptions};
use strata_storage::util::{format_bytes, parse_size};

use crate::context::{Global, cold_tier, open_db, usage};

#[derive(Subcommand)]
pub enum TierCommand {
    /// Upload a table's files as objects and read it from the cold tier from
    /// now on (read-only until `strata tier local`): heap and index files cut
    /// into objects of pages; a columnar table's column files as one Parquet
    /// object each, which queries read by ranged GETs of the columns they need.
    Cold(ColdArgs),
    /// Bring a table back from the cold tier to local files.
    Local(LocalArgs),
}

#[derive(Args)]
pub struct ColdArgs {
    pub table: String,
    /// The cold storage device's S3 endpoint, e.g. http://127.0.0.1:9000.
    #[arg(long)]
    pub endpoint: String,
    /// Bucket (default: the database directory's name).
    #[arg(long)]
    pub bucket: Option<String>,
    /// Size of each object of pages, a whole number of 8 KiB pages (the
    /// paper ships 1 GB segments); a column file is one object whatever its
    /// size.
    #[arg(long, default_value = "1GiB")]
    pub object_size: String,
}

#[derive(Args)]
pub struct LocalArgs {
    pub table: String,
    /// Delete the objects from the cold storage device once the table is local.
    #[arg(long)]
    pub delete_objects: bool,
}

pub fn run(cli: &Global, cmd: &TierCommand) -> Result<()> {
    let db = open_db(cli, false)?;
    let tier = cold_tier(cli)?;
    let (what, report) = match cmd {
        TierCommand::Cold(a) => {
            let object_bytes =
                parse_size(&a.object_size).map_err(|e| usage(format!("--object-size: {e}")))?;
            let opts = TierOptions {
                bucket: a.bucket.clone(),
                object_bytes,
                ..TierOptions::new(&a.endpoint)
            };
            (
                "to the cold tier",
                tier::to_cold(&db, &tier, &a.table, &opts)?,
            )
        }
        TierCommand::Local(a) => {
            let opts = TierOptions {
                delete_objects: a.delete_objects,
                ..TierOptions::new("")
            };
            (
                "back to local files",
                tier::to_local(&db, &tier, &a.table, &opts)?,
            )
        }
    };
    let def = db.catalog().table(&report.table)?.clone();
    println!(
        "moved table {} {what}: {} file(s), {} object(s), {}",
        report.table,
        report.files,
        report.objects,
        format_bytes(report.bytes)
    );
    println!("  tier: {}", tier::table_tier(db.dir(), &def)?);
    println!("  {}", tier.counters());
    Ok(())
}
