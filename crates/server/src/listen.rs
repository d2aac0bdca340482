//! The listening socket: accepts connections, gives each its own handlers
//! (and so its own SQL session) and a task on the server's runtime, and
//! refuses connections beyond `--max-connections` with PostgreSQL's
//! SQLSTATE 53300 after their startup packet, as PostgreSQL does.
//!
//! Statements run on their session's statement thread
//! (`SqlSession::spawn`), so a long query on one connection does not hold up
//! another connection's messages; only statements of bounded work that never
//! wait run on the runtime's workers (`SqlSession::run_inline`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use pgwire::api::ConnectionManager;
use pgwire::api::cancel::DefaultCancelHandler;
use strata_storage::Database;
use tokio::net::TcpListener;

use crate::connection::Handlers;
use crate::shared::{Shared, Slot};

/// How the server listens.
#[derive(Clone)]
pub struct ServeOptions {
    pub listen: SocketAddr,
    /// Connections served at once; one more is refused (SQLSTATE 53300).
    pub max_connections: usize,
    /// Also listen on a Unix socket in this directory, named as
    /// PostgreSQL's (`.s.PGSQL.<port>`), so libpq clients connect with
    /// `-h <dir>` as to a local PostgreSQL.
    pub socket_dir: Option<std::path::PathBuf>,
    /// Logins checked by SCRAM-SHA-256 against these users; without them
    /// nobody is asked for a password, and only loopback is served.
    pub passwords: Option<Arc<crate::auth::Passwords>>,
    /// TLS offered on TCP connections (a client's `sslmode` decides).
    pub tls: Option<pgwire::tokio::TlsAcceptor>,
    /// The nice value of the threads that run statements not answered on
    /// the connection's task (DataFusion's plans: analytical queries), so
    /// that lookups get a core at once beside them
    /// (`strata_sql::thread_priority`); 0 runs them as the server.
    pub statement_nice: i32,
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions")
            .field("listen", &self.listen)
            .field("max_connections", &self.max_connections)
            .field("socket_dir", &self.socket_dir)
            .field("passwords", &self.passwords)
            .field("tls", &self.tls.is_some())
            .field("statement_nice", &self.statement_nice)
            .finish()
    }
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 5433)),
            max_connections: 100,
            socket_dir: None,
            passwords: None,
            tls: None,
            statement_nice: DEFAULT_STATEMENT_NICE,
        }
    }
}

/// The statement threads' nice value unless told otherwise: the server's
/// own. Beside a running TPC-H Q1 on two cores (`strata bench serve-mixed
/// --statement-nice 0,10,19`, results/serve/mixed.md) nice 10 made no
/// difference a rerun kept (99th percentile lookup 6.5 ms at 0 and at 10);
/// 19, the idle class, did (3.9 ms) but starves long statements while short
/// ones keep every core busy, which a user would not expect by default.
pub const DEFAULT_STATEMENT_NICE: i32 = 0;

/// A bound server, ready to serve.
pub struct Server {
    listener: std::net::TcpListener,
    /// The Unix socket and its path (removed when the server ends).
    unix: Option<(std::os::unix::net::UnixListener, std::path::PathBuf)>,
    shared: Arc<Shared>,
    tls: Option<pgwire::tokio::TlsAcceptor>,
}

impl Server {
    /// Binds `opts.listen` for `db`. Any address but loopback needs a
    /// password file: without one connections are not authenticated.
    pub fn bind(db: Arc<Database>, opts: &ServeOptions) -> std::io::Result<Server> {
        if !opts.listen.ip().is_loopback() && opts.passwords.is_none() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "strata serve listens on {} only with --password-file: without one \
                     connections are not authenticated (loopback needs none)",
                    opts.listen
                ),
            ));
        }
        if opts.max_connections == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "--max-connections must be at least 1",
            ));
        }
        if let Err(e) = strata_sql::thread_priority::set_statement_nice(opts.statement_nice) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("--statement-nice: {e}"),
            ));
        }
        let listener = std::net::TcpListener::bind(opts.listen)?;
        listener.set_nonblocking(true)?;
        let unix = match &opts.socket_dir {
            None => None,
            Some(dir) => {
                let port = listener.local_addr()?.port();
                let path = dir.join(format!(".s.PGSQL.{port}"));
                // A socket file left by a server that ended without removing it.
                if std::os::unix::net::UnixStream::connect(&path).is_err() {
                    let _ = std::fs::remove_file(&path);
                }
                let l = std::os::unix::net::UnixListener::bind(&path).map_err(|e| {
                    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
                })?;
                l.set_nonblocking(true)?;
                Some((l, path))
            }
        };
        let manager = Arc::new(ConnectionManager::new());
        Ok(Server {
            listener,
            unix,
            shared: Arc::new(Shared {
                db,
                max_connections: opts.max_connections,
                open: AtomicUsize::new(0),
                cancel: Arc::new(DefaultCancelHandler::new(manager.clone())),
                manager,
                passwords: opts.passwords.clone(),
            }),
            tls: opts.tls.clone(),
        })
    }

    /// The address it listens on (the port, when 0 was asked for).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until the process ends or accepting fails.
    pub fn run(self) -> std::io::Result<()> {
        runtime()?.block_on(self.accept_loop())
    }

    /// Serves until SIGINT (Ctrl-C) or SIGTERM, then returns, dropping every
    /// connection (an open block is rolled back, as when its client goes
    /// away), so that the caller can end cleanly; or until accepting fails.
    /// `strata serve`'s own loop: the handlers are the process's, which a
    /// server inside another program (a test) must not take.
    pub fn run_until_stopped(self) -> std::io::Result<()> {
        let runtime = runtime()?;
        let served = runtime.block_on(async {
            use tokio::signal::unix::{SignalKind, signal};
            let mut term = signal(SignalKind::terminate())?;
            let mut int = signal(SignalKind::interrupt())?;
            tokio::select! {
                r = self.accept_loop() => r,
                _ = term.recv() => Ok(()),
                _ = int.recv() => Ok(()),
            }
        });
        // A statement still running on its own thread is not waited for.
        runtime.shutdown_timeout(std::time::Duration::from_secs(1));
        served
    }

    async fn accept_loop(self) -> std::io::Result<()> {
        let listener = TcpListener::from_std(self.listener)?;
        let shared = self.shared.clone();
        let unix = match self.unix {
            Some((l, path)) => Some((tokio::net::UnixListener::from_std(l)?, RemoveOnDrop(path))),
            None => None,
        };
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((socket, _)) => {
                        let _ = socket.set_nodelay(true);
                        let slot = Slot::take(&shared);
                        let shared = shared.clone();
                        let tls = self.tls.clone();
                        tokio::spawn(async move {
                            let handlers = Handlers::new(shared, slot);
                            let _ = crate::socket::serve_tcp(socket, tls, handlers).await;
                        });
                    }
                    Err(e) => pause_or_fail(e).await?,
                },
                accepted = accept_unix(unix.as_ref().map(|(l, _)| l)) => match accepted {
                    Ok(socket) => {
                        let slot = Slot::take(&shared);
                        let shared = shared.clone();
                        tokio::spawn(async move {
                            let handlers = Handlers::new(shared, slot);
                            let _ = crate::socket::serve_unix(socket, handlers).await;
                        });
                    }
                    Err(e) => pause_or_fail(e).await?,
                },
            }
        }
    }
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        // Statements parse on the workers too (`SqlSession::run_inline`).
        .thread_stack_size(strata_sql::rules::depth::STACK_BYTES)
        .enable_all()
        .thread_name("strata-serve")
        .build()
}

/// The next connection on the Unix socket, or never without one.
async fn accept_unix(
    listener: Option<&tokio::net::UnixListener>,
) -> std::io::Result<tokio::net::UnixStream> {
    match listener {
        Some(l) => l.accept().await.map(|(s, _)| s),
        None => std::future::pending().await,
    }
}

/// After a failed accept: a connection that went away before it was
/// accepted is nothing; too many open files waits a little for some to
/// close (instead of spinning); anything else ends the server.
async fn pause_or_fail(e: std::io::Error) -> std::io::Result<()> {
    use std::io::ErrorKind as K;
    if matches!(
        e.kind(),
        K::ConnectionAborted | K::ConnectionReset | K::Interrupted
    ) {
        return Ok(());
    }
    // EMFILE and ENFILE.
    if matches!(e.raw_os_error(), Some(24) | Some(23)) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        return Ok(());
    }
    Err(e)
}

/// Removes the Unix socket's file when the server ends.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
