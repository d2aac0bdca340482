//! `strata`: create a database, load or generate data, inspect and check it, and
//! run the experiments.
//!
//! Exit codes (the same in `strata-sql`; `strata_storage::exit`): 0 success; 1 an
//! operational failure (I/O, a full disk); 2 bad usage or an unknown name (table,
//! column, index, device profile); 3 bad input data (a malformed CSV row, a
//! Parquet type strata cannot store); 4 corruption found (a checksum, a truncated
//! file, an index that disagrees with its heap).
//!
//! Layout: `args` is the command line, `context` what every subcommand shares;
//! one module per subcommand below them; this file parses and dispatches.

mod args;
mod bench_csd;
mod bench_flash;
mod bench_index_cache;
mod bench_io;
mod bench_out;
mod bench_python;
mod bench_serve;
mod bench_skipper;
mod bench_smooth;
mod bench_waste;
mod cluster;
mod compact;
mod context;
mod csd_cost;
mod csd_serve;
mod demo;
mod generate;
mod inspect;
mod load;
mod model_cmd;
mod progress;
mod scan;
mod scan_cached;
mod split;
mod sql_forward;
mod through_server;
mod tier;
mod waste;

use std::process::ExitCode;

use anyhow::Result;
use clap::{CommandFactory, FromArgMatches};
use strata_storage::Database;

use crate::args::{BenchCommand, Cli, Command, CsdCommand, IndexCommand};
use crate::context::db_options;

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    cli.global.db_given =
        matches.value_source("db") == Some(clap::parser::ValueSource::CommandLine);
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(exit_code(&e))
        }
    }
}

/// The process exit code of a failed command: the one classifier both
/// binaries share (`strata_exit`), with this binary's usage error and the
/// errors a server answered with (`through_server.rs`).
fn exit_code(e: &anyhow::Error) -> u8 {
    fn usage(e: &(dyn std::error::Error + 'static)) -> Option<u8> {
        e.is::<context::UsageError>()
            .then_some(strata_storage::exit::USAGE)
    }
    strata_exit::code_of(e.as_ref(), &[usage, through_server::ServerError::classify])
}

/// Runs the parsed command.
fn run(args: &Cli) -> Result<()> {
    let cli = &args.global;
    match &args.command {
        Command::Create => {
            Database::create(&cli.db, db_options(cli, false)?)?;
            println!("created database {}", cli.db.display());
            Ok(())
        }
        Command::Load(a) => load::run(cli, a),
        Command::Gen(a) => generate::run(cli, a),
        Command::Info { table, json } => inspect::info(cli, table.as_deref(), *json),
        Command::Check => inspect::check(cli),
        Command::Cluster(a) => cluster::run(cli, a),
        Command::Compact(a) => compact::run(cli, a),
        Command::Split(a) => split::run(cli, a),
        Command::Waste { table, json, plot } => {
            waste::run(cli, table.as_deref(), *json, plot.as_deref())
        }
        Command::Index {
            which:
                IndexCommand::Cache {
                    table,
                    index,
                    columns,
                    none: _,
                },
        } => inspect::index_cache(cli, table, index, columns),
        Command::Scan(a) => scan::run(cli, a),
        Command::Tier { which } => tier::run(cli, which),
        Command::Model(a) => model_cmd::run(cli, a),
        Command::Demo { rows, repeat } => demo::run(cli, *rows, *repeat),
        Command::Bench {
            which: BenchCommand::Io(a),
        } => bench_io::run(cli, a),
        Command::Bench {
            which: BenchCommand::SmoothScan(a),
        } => bench_smooth::run(cli, a),
        Command::Sql { args } => sql_forward::run(cli, "strata-sql", &["sql"], args),
        Command::Serve { args } => sql_forward::run(cli, "strata-server", &["serve"], args),
        Command::Bench {
            which: BenchCommand::Tpch { args },
        } => sql_forward::run(cli, "strata-bench-tpch", &[], args),
        Command::Bench {
            which: BenchCommand::Writes { args },
        } => sql_forward::run(cli, "strata-bench-writes", &[], args),
        Command::Bench {
            which: BenchCommand::Python { args },
        } => bench_python::run(args),
        Command::Bench {
            which: BenchCommand::Flash(a),
        } => bench_flash::run(cli, a),
        Command::Bench {
            which: BenchCommand::IndexCache(a),
        } => bench_index_cache::run(cli, a),
        Command::Bench {
            which: BenchCommand::Csd(a),
        } => bench_csd::run(cli, a),
        Command::Bench {
            which: BenchCommand::Pgbench(a),
        } => bench_serve::pgbench(cli, a),
        Command::Bench {
            which: BenchCommand::ServeMixed(a),
        } => bench_serve::mixed(cli, a),
        Command::Bench {
            which: BenchCommand::ServeCrash(a),
        } => bench_serve::crash(cli, a),
        Command::Bench {
            which: BenchCommand::Waste(a),
        } => bench_waste::run(cli, a),
        Command::Bench {
            which: BenchCommand::Skipper(a),
        } => bench_skipper::run(cli, a),
        Command::Csd {
            which: CsdCommand::Cost(a),
        } => csd_cost::run(a),
        Command::Csd {
            which: CsdCommand::Serve(a),
        } => csd_serve::serve(a),
        Command::Csd {
            which: CsdCommand::Metrics(a),
        } => csd_serve::metrics(a),
    }
}
