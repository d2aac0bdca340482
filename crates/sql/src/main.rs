//! `strata-sql`: SQL over a strata database. `strata sql …` runs this binary
//! (DataFusion is kept out of `strata` itself so the demo builds quickly).
//!
//! Exit codes as `strata`'s: 0 success; 1 an operational failure; 2 bad usage,
//! bad SQL, unknown names or types; 3 bad input data; 4 corruption.

mod repl;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use strata_sql::shell::open::OpenArgs;
use strata_sql::shell::process::Usage;
use strata_sql::{Format, SqlSession, split_statements};
use strata_storage::Database;

#[derive(Parser)]
// `strata sql` runs this binary as `strata-sql … sql …`: usage lines say
// `strata sql`, the command a user types, not the binary's own name.
#[command(
    name = "strata sql",
    bin_name = "strata",
    version,
    about = "SQL over a strata database"
)]
struct Cli {
    #[command(flatten)]
    open: OpenArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run SQL: statements from -e and -f in order, or an interactive session.
    Sql(SqlArgs),
}

#[derive(clap::Args)]
struct SqlArgs {
    /// A statement (or several, separated by `;`) to run; repeatable.
    #[arg(short = 'e', long = "execute")]
    execute: Vec<String>,
    /// A file of statements to run.
    #[arg(short = 'f', long = "file")]
    file: Option<PathBuf>,
    /// Output format: table, csv or json.
    #[arg(long, default_value = "table")]
    format: String,
    /// Print each statement's time, rows and I/O to stderr (on by default in
    /// an interactive session; results alone go to stdout).
    #[arg(long)]
    timing: bool,
    /// Session settings, e.g. --set strata.access_path=optimizer (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    strata_sql::shell::process::finish(match &cli.command {
        Command::Sql(args) => sql(&cli, args),
    })
}

/// Opens the database for a session: read-write when no other process holds
/// it (ANALYZE stores statistics, writes change it), read-only otherwise (a
/// write then fails, saying so).
fn open(cli: &Cli) -> anyhow::Result<Arc<Database>> {
    Ok(Arc::new(cli.open.open(true)?))
}

fn sql(cli: &Cli, args: &SqlArgs) -> anyhow::Result<()> {
    let format: Format = args.format.parse().map_err(Usage)?;
    let session = SqlSession::new(open(cli)?)?;
    for s in &args.settings {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| Usage(format!("--set {s}: expected KEY=VALUE")))?;
        session.set(k.trim(), v.trim())?;
    }
    let mut scripts = args.execute.clone();
    if let Some(f) = &args.file {
        scripts.push(
            std::fs::read_to_string(f)
                .map_err(|e| Usage(format!("cannot read {}: {e}", f.display())))?,
        );
    }
    if scripts.is_empty() {
        return repl::run(&session, format, args.timing);
    }
    for script in scripts {
        let (mut stmts, rest) = split_statements(&script);
        if !rest.is_empty() {
            stmts.push(rest);
        }
        for stmt in stmts {
            let r = session.execute(&stmt)?;
            print!(
                "{}",
                strata_sql::shell::format::render(format, &r.schema, &r.batches)?
            );
            if args.timing {
                eprintln!("{}", repl::summary(&r));
            }
        }
    }
    repl::warn_open_transaction(&session);
    Ok(())
}
