//! `strata-server`: `strata serve` runs this binary (it links DataFusion,
//! which `strata` itself does not).
//!
//! Exit codes as `strata`'s: 0 success; 1 an operational failure (the
//! address is taken); 2 bad usage; 4 corruption.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use mimalloc::MiMalloc;
use strata_server::auth::{Passwords, tls_acceptor};
use strata_server::{ServeOptions, Server};
use strata_sql::shell::open::OpenArgs;
use strata_sql::shell::process::Usage;

/// mimalloc (see Cargo.toml: glibc's malloc and free were 30% of a point
/// query's instructions).
#[global_allocator]
static ALLOCATOR: MiMalloc = MiMalloc;

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
    /// Address to listen on. Any address but loopback needs
    /// --password-file.
    #[arg(long, default_value = "127.0.0.1:5433")]
    listen: SocketAddr,
    /// Users and passwords, one `user:password` per line, readable by its
    /// owner only (chmod 600): every login then proves its password by
    /// SCRAM-SHA-256. Without it nobody is asked for one.
    #[arg(long)]
    password_file: Option<std::path::PathBuf>,
    /// TLS certificate chain (PEM), offered on TCP connections; with
    /// --tls-key.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// TLS private key (PEM) of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// Connections served at once; one more is refused (SQLSTATE 53300).
    #[arg(long, default_value_t = 100)]
    max_connections: usize,
    /// Also listen on a Unix socket in this directory (`.s.PGSQL.<port>`, as
    /// PostgreSQL names it): `psql -h <dir> -p <port>`.
    #[arg(long)]
    socket_dir: Option<std::path::PathBuf>,
    /// CPU priority (nice, 0-19) of the threads that run analytical
    /// statements: lookups and one-row writes, answered on the connections'
    /// own tasks, then get a core sooner beside them. 0: the server's own;
    /// 19 also puts them in the idle scheduling class (any other thread
    /// preempts them; they may starve while short statements keep every
    /// core busy).
    #[arg(
        long,
        default_value_t = strata_server::listen::DEFAULT_STATEMENT_NICE,
        value_parser = clap::value_parser!(i32).range(0..=19)
    )]
    statement_nice: i32,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    strata_sql::shell::process::finish(match &cli.command {
        Command::Serve(args) => serve(&cli, args),
    })
}

fn serve(cli: &Cli, args: &ServeArgs) -> anyhow::Result<()> {
    if !args.listen.ip().is_loopback() && args.password_file.is_none() {
        return Err(Usage(format!(
            "--listen {}: an address other than loopback (127.0.0.1 or ::1) needs \
             --password-file FILE: without one connections are not authenticated",
            args.listen
        ))
        .into());
    }
    let passwords = match &args.password_file {
        Some(path) => Some(Arc::new(Passwords::load(path).map_err(Usage)?)),
        None => None,
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls_acceptor(cert, key).map_err(Usage)?),
        _ => None,
    };
    let opts = ServeOptions {
        listen: args.listen,
        max_connections: args.max_connections,
        socket_dir: args.socket_dir.clone(),
        passwords,
        tls,
        statement_nice: args.statement_nice,
    };
    if opts.max_connections == 0 {
        return Err(Usage("--max-connections must be at least 1".into()).into());
    }
    let db = Arc::new(cli.open.open(false)?);
    let server = Server::bind(db, &opts)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", opts.listen))?;
    let addr = server.local_addr()?;
    // `strata sql` beside this server goes through it (shell/served.rs).
    let _served = strata_storage::db::served::record(&cli.open.db, addr)
        .map_err(|e| anyhow::anyhow!("{}: cannot write SERVER: {e}", cli.open.db.display()))?;
    // Scripts wait for this line before they connect.
    let user = match &opts.passwords {
        Some(p) => format!("-U <user>; {} user(s), SCRAM-SHA-256", p.len()),
        None => "-U strata".to_owned(),
    };
    eprintln!(
        "strata serve: {} on {addr}{} (psql -h {} -p {} {user} strata)",
        cli.open.db.display(),
        if opts.tls.is_some() {
            ", TLS offered"
        } else {
            ""
        },
        addr.ip(),
        addr.port()
    );
    server.run_until_stopped()?;
    eprintln!("strata serve: stopped");
    Ok(())
}
