//! The private PostgreSQL cluster: finding the Debian packages' binaries
//! (installed by [`SETUP_SCRIPT`], never by this code), `initdb`, `pg_ctl`
//! start and stop on a free port on 127.0.0.1 with the socket in the work
//! directory, and the client connection to the running server.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{Context, Result, bail};
use postgres::{Client, NoTls};

use super::options::quote_literal;

/// The first port tried for the private cluster on 127.0.0.1 (when it is
/// taken, the first free one of the next 19).
pub const DEFAULT_PORT: u16 = 54329;
const PORT_TRIES: u16 = 20;
/// Installs PostgreSQL (Debian's `postgresql-15`) and, as root, makes sure
/// the OS user [`PG_OS_USER`] exists; relative to the repository's root.
pub const SETUP_SCRIPT: &str = "scripts/setup_postgres.sh";
/// Where the Debian packages put each major version's binaries.
const PG_LIB: &str = "/usr/lib/postgresql";
/// The unprivileged OS user the server runs as when we are root (and the
/// name of the cluster's superuser then: initdb names it after its OS user).
const PG_OS_USER: &str = "postgres";
/// How long `pg_ctl` waits for a start or a stop.
const PG_CTL_WAIT_S: u32 = 300;

/// The setup script: its path in this source tree when it is there (a
/// binary run where it was built), else [`SETUP_SCRIPT`].
fn setup_script() -> String {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match fs::canonicalize(here.join(SETUP_SCRIPT)) {
        Ok(p) => p.display().to_string(),
        Err(_) => SETUP_SCRIPT.to_string(),
    }
}

pub struct PgBins {
    /// e.g. /usr/lib/postgresql/15/bin
    pub(super) dir: PathBuf,
    /// The major version, e.g. "15".
    major: String,
}

impl PgBins {
    /// The newest `/usr/lib/postgresql/<major>/bin` with initdb, pg_ctl and
    /// postgres, or an error saying how to install them.
    pub fn find() -> Result<PgBins> {
        find_binaries(Path::new(PG_LIB)).with_context(|| {
            format!(
                "PostgreSQL is not installed (no {PG_LIB}/<version>/bin/postgres): run {} as root \
                 (it installs the Debian package postgresql-15)",
                setup_script()
            )
        })
    }

    /// The binaries in `dir` (a build or an unpacked distribution of any
    /// version: initdb, pg_ctl and postgres side by side), their major
    /// version read from `postgres --version`.
    pub fn at(dir: &Path) -> Result<PgBins> {
        for b in ["initdb", "pg_ctl", "postgres"] {
            if !dir.join(b).is_file() {
                bail!(
                    "{} is not a PostgreSQL bin directory: it has no {b}",
                    dir.display()
                );
            }
        }
        let dir = fs::canonicalize(dir)?;
        let out = run_ok(
            Command::new(dir.join("postgres")).arg("--version"),
            "postgres --version",
        )?;
        let text = String::from_utf8_lossy(&out.stdout);
        let major = major_of_version(&text)
            .with_context(|| format!("{}/postgres --version printed {text:?}", dir.display()))?;
        Ok(PgBins { dir, major })
    }

    /// `dir`'s binaries ([`PgBins::at`]), or the newest installed
    /// ([`PgBins::find`]) without one.
    pub fn resolve(dir: Option<&Path>) -> Result<PgBins> {
        match dir {
            Some(d) => PgBins::at(d),
            None => PgBins::find(),
        }
    }

    /// The major version, e.g. "15".
    pub fn major(&self) -> &str {
        &self.major
    }

    /// The directory of the binaries.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// "postgres (PostgreSQL) 18.4" → "18" (and "9.6.1" → "9.6", the numbering
/// before 10): the first word that starts with a digit. Also a
/// `server_version` such as "15.18 (Debian 15.18-0+deb12u1)".
pub fn major_of_version(text: &str) -> Option<String> {
    let word = text
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))?;
    let v: String = word
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mut parts = v.split('.');
    let first = parts.next()?;
    let first_n: u32 = first.parse().ok()?;
    if first_n >= 10 {
        return Some(first.to_string());
    }
    let second = parts.next()?;
    second.parse::<u32>().ok()?;
    Some(format!("{first}.{second}"))
}

fn find_binaries(lib: &Path) -> Option<PgBins> {
    let mut found: Vec<(Vec<u32>, PathBuf, String)> = fs::read_dir(lib)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let version: Vec<u32> = name
                .split('.')
                .map(|p| p.parse().ok())
                .collect::<Option<_>>()?;
            let bin = e.path().join("bin");
            ["initdb", "pg_ctl", "postgres"]
                .iter()
                .all(|b| bin.join(b).is_file())
                .then_some((version, bin, name))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, dir, major)| PgBins { dir, major })
}

fn is_root() -> bool {
    // SAFETY: geteuid(2) takes no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `id <flag> [name]`'s one line of output.
fn id(args: &[&str]) -> Option<String> {
    let out = Command::new("id").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The OS user the server runs as when we are root.
#[derive(Clone, Debug)]
pub(super) struct Owner {
    uid: u32,
    gid: u32,
}

impl Owner {
    /// None when we are not root (everything runs as ourselves); as root,
    /// the `postgres` user, which the setup script makes sure exists.
    pub(super) fn for_server() -> Result<Option<Owner>> {
        if !is_root() {
            return Ok(None);
        }
        let num = |flag| id(&[flag, PG_OS_USER])?.parse().ok();
        match (num("-u"), num("-g")) {
            (Some(uid), Some(gid)) => Ok(Some(Owner { uid, gid })),
            _ => bail!(
                "running as root, PostgreSQL needs the OS user {PG_OS_USER} to run as, and \
                 there is none: run {}",
                setup_script()
            ),
        }
    }
}

/// What `strata.conf` sets besides where the server listens and who may
/// connect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// `shared_buffers`, e.g. "64MB".
    pub shared_buffers: String,
    /// `wal_level = minimal` and `max_wal_senders = 0` (a COPY into a table
    /// created in the same transaction skips the WAL: the read experiments'
    /// loads); false leaves both at PostgreSQL's defaults (`replica`, 10).
    pub wal_minimal: bool,
    /// More settings, written after ours (a later line of the file wins):
    /// names of letters, digits and `_`, values written as quoted literals.
    pub extra: Vec<(String, String)>,
}

impl ServerConfig {
    /// The read experiments' configuration: `shared_buffers` and the
    /// minimal WAL, nothing else.
    pub fn reads(shared_buffers: &str) -> ServerConfig {
        ServerConfig {
            shared_buffers: shared_buffers.to_string(),
            wal_minimal: true,
            extra: Vec::new(),
        }
    }

    /// Refuses what would not make a valid configuration file.
    fn validate(&self) -> Result<()> {
        let sb = self.shared_buffers.trim();
        if sb.is_empty() || !sb.chars().all(|c| c.is_ascii_alphanumeric()) {
            bail!(
                "shared_buffers {:?}: expected a size such as 64MB",
                self.shared_buffers
            );
        }
        for (name, value) in &self.extra {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                bail!("PostgreSQL setting name {name:?}: only letters, digits and _");
            }
            if value.contains(['\n', '\r']) {
                bail!("PostgreSQL setting {name}: the value {value:?} spans lines");
            }
        }
        Ok(())
    }
}

/// A private PostgreSQL cluster; stopped when dropped if it is running.
pub(super) struct Cluster {
    bin: PathBuf,
    pub(super) work_dir: PathBuf,
    pub(super) data: PathBuf,
    log: PathBuf,
    pub(super) port: u16,
    owner: Option<Owner>,
    /// The role the client logs in as: the cluster's superuser.
    pub(super) db_user: String,
    running: bool,
    /// Connected while the server runs.
    client: Option<Client>,
}

impl Cluster {
    /// Creates the work directory, gives it to the owner, initializes the
    /// cluster unless it exists, stops a server left running in it, and
    /// writes our settings (`strata.conf`, included from postgresql.conf,
    /// and the authentication files it names).
    pub(super) fn prepare(
        bins: &PgBins,
        owner: Option<Owner>,
        work_dir: &Path,
        config: &ServerConfig,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Cluster> {
        config.validate()?;
        fs::create_dir_all(work_dir).with_context(|| format!("creating {}", work_dir.display()))?;
        let work_dir = fs::canonicalize(work_dir)?;
        let db_user = match owner {
            Some(_) => PG_OS_USER.to_string(),
            None => id(&["-un"]).context("`id -un` gave no user name")?,
        };
        let mut cluster = Cluster {
            bin: bins.dir.clone(),
            data: work_dir.join("strata-pgdata"),
            log: work_dir.join("strata-postgres.log"),
            work_dir,
            port: DEFAULT_PORT,
            owner,
            db_user,
            running: false,
            client: None,
        };
        cluster.give_work_dir()?;
        let version_file = cluster.data.join("PG_VERSION");
        let major = bins.major().to_string();
        if version_file.is_file() {
            let v = fs::read_to_string(&version_file)?;
            if v.trim() != major {
                bail!(
                    "{} holds a PostgreSQL {} cluster but the binaries are version {major}: \
                     delete it or choose another work directory",
                    cluster.data.display(),
                    v.trim()
                );
            }
            if cluster.is_running() {
                progress("stopping a PostgreSQL server left running in the work directory");
                cluster.running = true;
                cluster.stop()?;
            }
        } else {
            if cluster.data.exists() {
                // An initdb that did not finish.
                fs::remove_dir_all(&cluster.data)?;
            }
            progress(&format!(
                "initdb {} (PostgreSQL {major})",
                cluster.data.display()
            ));
            let mut c = cluster.command("initdb");
            c.arg("-D").arg(&cluster.data).args([
                "--auth-local=peer",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
            ]);
            run_ok(&mut c, "initdb")?;
            let conf = cluster.data.join("postgresql.conf");
            let mut text = fs::read_to_string(&conf)?;
            text.push_str("\n# strata bench: our settings\ninclude 'strata.conf'\n");
            fs::write(&conf, text)?;
        }
        cluster.port = free_port()?;
        let hba = cluster.data.join("strata_hba.conf");
        let ident = cluster.data.join("strata_ident.conf");
        let files = [
            (
                cluster.data.join("strata.conf"),
                settings_conf(cluster.port, &cluster.work_dir, &hba, &ident, config),
            ),
            (hba, HBA_CONF.to_string()),
            (ident, ident_conf(&cluster.db_user, cluster.owner.is_some())),
        ];
        for (path, text) in files {
            fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            if let Some(o) = &cluster.owner {
                std::os::unix::fs::chown(&path, Some(o.uid), Some(o.gid))?;
            }
        }
        Ok(cluster)
    }

    /// As root: makes the owner own the work directory (unless it is
    /// world-writable, like /tmp) and checks that it can write there.
    fn give_work_dir(&self) -> Result<()> {
        let Some(o) = &self.owner else { return Ok(()) };
        let meta = fs::metadata(&self.work_dir)?;
        if meta.mode() & 0o002 == 0 && meta.uid() != o.uid {
            chown_tree(&self.work_dir, o)?;
        }
        let mut c = Command::new("test");
        c.arg("-w").arg(&self.work_dir).current_dir("/");
        c.uid(o.uid).gid(o.gid);
        if !c.status().is_ok_and(|s| s.success()) {
            bail!(
                "the {PG_OS_USER} user cannot write {}: a parent directory is probably not \
                 searchable by others; choose a work directory under /tmp",
                self.work_dir.display()
            );
        }
        Ok(())
    }

    /// A command for one of the binaries, as the owner, in the work directory,
    /// with no PG* variables from our environment and no stdin.
    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(self.bin.join(program));
        c.current_dir(&self.work_dir)
            .env("HOME", &self.work_dir)
            .env("LC_ALL", "C")
            .env("LANG", "C")
            .stdin(Stdio::null());
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("PG") {
                c.env_remove(k);
            }
        }
        if let Some(o) = &self.owner {
            c.uid(o.uid).gid(o.gid);
        }
        c
    }

    fn is_running(&self) -> bool {
        let mut c = self.command("pg_ctl");
        c.arg("status").arg("-D").arg(&self.data);
        c.output().is_ok_and(|o| o.status.success())
    }

    /// Starts the server and connects to it.
    pub(super) fn start(&mut self) -> Result<()> {
        let mut c = self.command("pg_ctl");
        c.arg("start")
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(&self.log)
            .args(["-w", "-s", "-t", &PG_CTL_WAIT_S.to_string()]);
        if let Err(e) = run_ok(&mut c, "starting PostgreSQL (pg_ctl start)") {
            bail!(
                "{e:#}\nlast lines of {}:\n{}",
                self.log.display(),
                log_tail(&self.log, 15)
            );
        }
        self.running = true;
        self.client = Some(self.connect()?);
        Ok(())
    }

    /// A new connection to the running server, as the cluster's superuser
    /// over the unix socket.
    pub(super) fn connect(&self) -> Result<Client> {
        if !self.running {
            bail!("PostgreSQL is not running");
        }
        postgres::Config::new()
            .host_path(&self.work_dir)
            .port(self.port)
            .user(&self.db_user)
            .dbname("postgres")
            .application_name("strata-bench")
            .connect(NoTls)
            .with_context(|| {
                format!(
                    "connecting to PostgreSQL as {} on the socket in {} (port {})",
                    self.db_user,
                    self.work_dir.display(),
                    self.port
                )
            })
    }

    /// Disconnects and stops the server (a fast shutdown).
    pub(super) fn stop(&mut self) -> Result<()> {
        if let Some(client) = self.client.take() {
            // Closing says goodbye to the server; a connection it already
            // dropped is no reason to fail.
            let _ = client.close();
        }
        if !self.running {
            return Ok(());
        }
        let mut c = self.command("pg_ctl");
        c.arg("stop").arg("-D").arg(&self.data).args([
            "-m",
            "fast",
            "-w",
            "-s",
            "-t",
            &PG_CTL_WAIT_S.to_string(),
        ]);
        run_ok(&mut c, "pg_ctl stop")?;
        self.running = false;
        Ok(())
    }

    /// The connection to the running server.
    pub(super) fn client(&mut self) -> Result<&mut Client> {
        self.client
            .as_mut()
            .context("PostgreSQL is not running (no connection)")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Runs `cmd` to completion and fails with its output unless it succeeds.
fn run_ok(cmd: &mut Command, what: &str) -> Result<Output> {
    let out = cmd
        .output()
        .with_context(|| format!("{what}: running {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
    Ok(out)
}

/// `strata.conf`: where the server listens, our settings, and the
/// authentication files.
fn settings_conf(
    port: u16,
    socket_dir: &Path,
    hba: &Path,
    ident: &Path,
    config: &ServerConfig,
) -> String {
    let lit = |p: &Path| quote_literal(&p.to_string_lossy());
    let mut text = format!(
        "# written by strata bench (crates/bench/src/postgres/cluster.rs) on every run\n\
         listen_addresses = '127.0.0.1'\n\
         port = {port}\n\
         unix_socket_directories = {}\n\
         hba_file = {}\n\
         ident_file = {}\n\
         shared_buffers = {}\n\
         max_parallel_workers_per_gather = 0\n\
         jit = off\n\
         autovacuum = off\n\
         track_io_timing = on\n",
        lit(socket_dir),
        lit(hba),
        lit(ident),
        quote_literal(config.shared_buffers.trim()),
    );
    if config.wal_minimal {
        text.push_str("wal_level = minimal\nmax_wal_senders = 0\n");
    }
    for (name, value) in &config.extra {
        text.push_str(&format!("{name} = {}\n", quote_literal(value)));
    }
    text
}

/// Who may connect: OS users through the socket, as the role `strata_ident`
/// maps them to; over TCP only with a password (nobody has one).
const HBA_CONF: &str = "# written by strata bench on every run\n\
                        local all all peer map=strata\n\
                        host all all 127.0.0.1/32 scram-sha-256\n";

/// Each OS user may log in as the role of its name; as root, root may log
/// in as the superuser `db_user` (the server's OS user).
fn ident_conf(db_user: &str, root: bool) -> String {
    let mut text = "# written by strata bench on every run\n".to_string();
    if root {
        text.push_str(&format!("strata root {db_user}\n"));
    }
    text.push_str("strata /^(.*)$ \\1\n");
    text
}

fn chown_tree(path: &Path, o: &Owner) -> Result<()> {
    std::os::unix::fs::lchown(path, Some(o.uid), Some(o.gid))
        .with_context(|| format!("chown {}", path.display()))?;
    if fs::symlink_metadata(path)?.is_dir() {
        for e in fs::read_dir(path)? {
            chown_tree(&e?.path(), o)?;
        }
    }
    Ok(())
}

/// The first port from [`DEFAULT_PORT`] free on 127.0.0.1.
fn free_port() -> Result<u16> {
    (DEFAULT_PORT..DEFAULT_PORT + PORT_TRIES)
        .find(|&p| TcpListener::bind(("127.0.0.1", p)).is_ok())
        .with_context(|| {
            format!(
                "no free port in {DEFAULT_PORT}..{} on 127.0.0.1",
                DEFAULT_PORT + PORT_TRIES
            )
        })
}

fn log_tail(path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_files() {
        let conf = settings_conf(
            54330,
            Path::new("/tmp/it's"),
            Path::new("/d/strata_hba.conf"),
            Path::new("/d/strata_ident.conf"),
            &ServerConfig::reads(" 64MB "),
        );
        for line in [
            "listen_addresses = '127.0.0.1'\n",
            "port = 54330\n",
            "unix_socket_directories = '/tmp/it''s'\n",
            "hba_file = '/d/strata_hba.conf'\n",
            "ident_file = '/d/strata_ident.conf'\n",
            "shared_buffers = '64MB'\n",
            "max_parallel_workers_per_gather = 0\n",
            "track_io_timing = on\n",
            "wal_level = minimal\n",
        ] {
            assert!(conf.contains(line), "{line:?} in {conf}");
        }
        // The write benchmark's: the default WAL, and settings of its own.
        let writes = ServerConfig {
            shared_buffers: "256MB".into(),
            wal_minimal: false,
            extra: vec![("synchronous_commit".into(), "on".into())],
        };
        writes.validate().unwrap();
        let conf = settings_conf(
            1,
            Path::new("/s"),
            Path::new("/h"),
            Path::new("/i"),
            &writes,
        );
        assert!(
            !conf.contains("wal_level") && !conf.contains("max_wal_senders"),
            "{conf}"
        );
        assert!(conf.ends_with("synchronous_commit = 'on'\n"), "{conf}");
        let bad = |extra: (&str, &str)| ServerConfig {
            extra: vec![(extra.0.into(), extra.1.into())],
            ..writes.clone()
        };
        assert!(bad(("fsync = off #", "on")).validate().is_err());
        assert!(bad(("fsync", "on\nfsync = off")).validate().is_err());
        assert!(ServerConfig::reads("64MB'").validate().is_err());
        assert!(HBA_CONF.contains("\nlocal all all peer map=strata\n"));
        assert_eq!(
            ident_conf("postgres", true),
            "# written by strata bench on every run\nstrata root postgres\nstrata /^(.*)$ \\1\n"
        );
        assert!(!ident_conf("me", false).contains("root"));
    }

    #[test]
    fn finds_the_newest_complete_installation() {
        let lib = tempfile::tempdir().unwrap();
        assert!(find_binaries(&lib.path().join("none")).is_none());
        let install = |version: &str, bins: &[&str]| {
            let dir = lib.path().join(version).join("bin");
            fs::create_dir_all(&dir).unwrap();
            for b in bins {
                fs::write(dir.join(b), "").unwrap();
            }
        };
        install("13", &["initdb", "pg_ctl", "postgres"]);
        install("15", &["initdb", "pg_ctl", "postgres", "psql"]);
        install("16", &["initdb", "pg_ctl"]);
        install("common", &["initdb", "pg_ctl", "postgres"]);
        let b = find_binaries(lib.path()).unwrap();
        assert_eq!(b.dir, lib.path().join("15/bin"));
        assert_eq!(b.major(), "15");
        assert_eq!(
            major_of_version("postgres (PostgreSQL) 18.4\n").as_deref(),
            Some("18")
        );
        assert_eq!(
            major_of_version("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)").as_deref(),
            Some("15")
        );
        assert_eq!(major_of_version("postgres (PostgreSQL)"), None);
        assert_eq!(
            major_of_version("postgres (PostgreSQL) 9.6.24").as_deref(),
            Some("9.6")
        );
        assert!(PgBins::at(&lib.path().join("16/bin")).is_err());
        assert!(setup_script().ends_with(SETUP_SCRIPT));
    }
}
