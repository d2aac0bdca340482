//! `strata-server`: `strata serve` runs this binary (it links DataFusion,
//! which `strata` itself does not).
//!
//! Exit codes as `strata`'s: 0 success; 1 an operational failure (the
//! address is taken); 2 bad usage; 4 corruption.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use strata_server::{ServeOptions, Server};
use strata_sql::shell::open::OpenArgs;
use strata_sql::shell::process::Usage;

#[derive(Parser)]
#[command(
    name = "strata serve",
    bin_name = "strata",
    version,
    about = "Serve a strata database over the PostgreSQL wire protocol"
)]
struct Cli {
    #[command(flatten)]
    open: OpenArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Listen for PostgreSQL clients (psql, libpq and JDBC drivers,
    /// psycopg, pgbench) until interrupted.
    Serve(ServeArgs),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Address to listen on (loopback only: connections are not
    /// authenticated).
    #[arg(long, default_value = "127.0.0.1:5433")]
    listen: SocketAddr,
    /// Connections served at once; one more is refused (SQLSTATE 53300).
    #[arg(long, default_value_t = 100)]
    max_connections: usize,
    /// Also listen on a Unix socket in this directory (`.s.PGSQL.<port>`, as
    /// PostgreSQL names it): `psql -h <dir> -p <port>`.
    #[arg(long)]
    socket_dir: Option<std::path::PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    strata_sql::shell::process::finish(match &cli.command {
        Command::Serve(args) => serve(&cli, args),
    })
}

fn serve(cli: &Cli, args: &ServeArgs) -> anyhow::Result<()> {
    let opts = ServeOptions {
        listen: args.listen,
        max_connections: args.max_connections,
        socket_dir: args.socket_dir.clone(),
    };
    if !opts.listen.ip().is_loopback() {
        return Err(Usage(format!(
            "--listen {}: strata serve listens on loopback only (127.0.0.1 or ::1): \
             connections are not authenticated",
            opts.listen
        ))
        .into());
    }
    if opts.max_connections == 0 {
        return Err(Usage("--max-connections must be at least 1".into()).into());
    }
    let db = Arc::new(cli.open.open(false)?);
    let server = Server::bind(db, &opts)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", opts.listen))?;
    let addr = server.local_addr()?;
    // Scripts wait for this line before they connect.
    eprintln!(
        "strata serve: {} on {addr} (psql -h {} -p {} -U strata strata)",
        cli.open.db.display(),
        addr.ip(),
        addr.port()
    );
    server.run()?;
    Ok(())
}
