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
use strata_sql::shell::remote::Remote;
use strata_sql::{Format, SqlSession, split_statements};
use strata_storage::Database;
use strata_storage::db::served;

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
    /// Open the database read-only, beside a process that writes it: each
    /// statement reads the commits made before it began; writes are refused.
    /// (Without it, a session opens read-only when another process writes.)
    #[arg(long)]
    read_only: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    strata_sql::shell::process::finish(match &cli.command {
        Command::Sql(args) => sql(&cli, args),
    })
}

/// Opens the database for a session: read-write when no other process writes
/// it (ANALYZE stores statistics, writes change it), read-only beside one (a
/// write then fails, saying so), or read-only when asked.
fn open(cli: &Cli, read_only: bool) -> anyhow::Result<Arc<Database>> {
    if read_only {
        return Ok(Arc::new(cli.open.open_read_only()?));
    }
    Ok(Arc::new(cli.open.open(true)?))
}

fn sql(cli: &Cli, args: &SqlArgs) -> anyhow::Result<()> {
    let format: Format = args.format.parse().map_err(Usage)?;
    // A `strata serve` owns it: the statements go through the server (without
    // first waiting a second for a LOCK the server never lets go).
    if let Some(addr) = served::server_of(&cli.open.db)
        && let Ok(remote) = Remote::connect(addr)
    {
        return through_server(remote, addr, &cli.open.db, args, format);
    }
    let db = open(cli, args.read_only)?;
    let session = SqlSession::new(db)?;
    for s in &args.settings {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| Usage(format!("--set {s}: expected KEY=VALUE")))?;
        session.set(k.trim(), v.trim())?;
    }
    let scripts = scripts(args)?;
    if scripts.is_empty() {
        return repl::run(repl::Backend::Local(&session), format, args.timing);
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

/// The scripts of -e and -f, in order.
fn scripts(args: &SqlArgs) -> anyhow::Result<Vec<String>> {
    let mut scripts = args.execute.clone();
    if let Some(f) = &args.file {
        scripts.push(
            std::fs::read_to_string(f)
                .map_err(|e| Usage(format!("cannot read {}: {e}", f.display())))?,
        );
    }
    Ok(scripts)
}

/// Runs the statements of -e and -f, or the interactive session, through the
/// `strata serve` at `addr` that holds the database `db`.
fn through_server(
    mut remote: Remote,
    addr: std::net::SocketAddr,
    db: &std::path::Path,
    args: &SqlArgs,
    format: Format,
) -> anyhow::Result<()> {
    let scripts = scripts(args)?;
    for s in &args.settings {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| Usage(format!("--set {s}: expected KEY=VALUE")))?;
        remote.execute(&format!(
            "SET {} = '{}'",
            k.trim(),
            v.trim().replace('\'', "''")
        ))?;
    }
    if scripts.is_empty() {
        let backend = repl::Backend::Served {
            remote: Box::new(remote),
            addr,
            db: db.to_path_buf(),
        };
        return repl::run(backend, format, args.timing);
    }
    if args.timing {
        eprintln!("(through strata serve at {addr})");
    }
    for script in scripts {
        let (mut stmts, rest) = split_statements(&script);
        if !rest.is_empty() {
            stmts.push(rest);
        }
        for stmt in stmts {
            let start = std::time::Instant::now();
            let (schema, batches) = remote.execute(&stmt)?;
            print!(
                "{}",
                strata_sql::shell::format::render(format, &schema, &batches)?
            );
            if args.timing {
                let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
                eprintln!("{rows} row(s) in {:.3} s", start.elapsed().as_secs_f64());
            }
        }
    }
    Ok(())
}
