//! A private PostgreSQL server for experiments that drive it themselves
//! (`strata bench writes`): the same cluster as the read experiments'
//! (binaries found, never installed; initdb, pg_ctl on a free loopback port,
//! stopped on drop), with the caller's configuration and as many client
//! connections as it asks for.

use std::path::{Path, PathBuf};

use anyhow::Result;
use postgres::Client;

use super::cluster::{Cluster, Owner, PgBins, ServerConfig};

/// A started private PostgreSQL server; stopped when dropped.
pub struct PgServer {
    cluster: Cluster,
    bin_dir: PathBuf,
    version: String,
}

impl PgServer {
    /// Where the newest installed PostgreSQL's binaries are, or an error
    /// saying how to install them (the check a caller makes to skip the
    /// PostgreSQL side).
    pub fn binaries() -> Result<PathBuf> {
        Ok(PgBins::find()?.dir)
    }

    /// Finds the binaries, prepares the cluster in `work_dir` (initdb unless
    /// it exists; `config` written into `strata.conf`) and starts it.
    pub fn start(
        work_dir: &Path,
        config: &ServerConfig,
        progress: &mut dyn FnMut(&str),
    ) -> Result<PgServer> {
        PgServer::start_with(&PgBins::find()?, work_dir, config, progress)
    }

    /// [`PgServer::start`] with the binaries `bins`.
    pub fn start_with(
        bins: &PgBins,
        work_dir: &Path,
        config: &ServerConfig,
        progress: &mut dyn FnMut(&str),
    ) -> Result<PgServer> {
        let owner = Owner::for_server()?;
        let mut cluster = Cluster::prepare(bins, owner, work_dir, config, progress)?;
        cluster.start()?;
        let version = cluster
            .client()?
            .query_one("SELECT current_setting('server_version')", &[])?
            .get(0);
        Ok(PgServer {
            cluster,
            bin_dir: bins.dir.clone(),
            version,
        })
    }

    /// The connection made at start.
    pub fn client(&mut self) -> Result<&mut Client> {
        self.cluster.client()
    }

    /// Another connection (e.g. one per client thread).
    pub fn connect(&self) -> Result<Client> {
        self.cluster.connect()
    }

    /// `server_version`, e.g. "15.14 (Debian 15.14-0+deb12u1)".
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The directory of the binaries it runs.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// The cluster's data directory.
    pub fn data_dir(&self) -> &Path {
        &self.cluster.data
    }

    /// The port it listens on (127.0.0.1 and the socket in the work directory).
    pub fn port(&self) -> u16 {
        self.cluster.port
    }

    /// The role clients log in as (the cluster's superuser).
    pub fn user(&self) -> &str {
        &self.cluster.db_user
    }

    /// The directory of its Unix socket: libpq's `host` for a local client
    /// such as pgbench.
    pub fn socket_dir(&self) -> &Path {
        &self.cluster.work_dir
    }

    /// The current value of a setting, as `SHOW` gives it.
    pub fn setting(&mut self, name: &str) -> Result<String> {
        Ok(self
            .client()?
            .query_one("SELECT current_setting($1)", &[&name])?
            .get(0))
    }

    /// Disconnects and stops the server (also done on drop).
    pub fn stop(&mut self) -> Result<()> {
        self.cluster.stop()
    }
}
