//! `<db>/SERVER`: which `strata serve` owns a database, so that `strata sql`,
//! `strata info` and `strata check` run beside it go through it instead of
//! being refused by its `LOCK` (`lock.rs`).
//!
//! The server writes the file when it listens (its address and process id)
//! and removes it when it ends, on SIGINT and SIGTERM too. A server killed by
//! SIGKILL leaves it behind; a reader believes it only while that process still lives and
//! the database's `LOCK` is held (the open that failed says so), and then
//! only as far as a connection to the address succeeds.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

fn path(dir: &Path) -> PathBuf {
    dir.join("SERVER")
}

/// Records that this process serves the database in `dir` at `addr`; the
/// returned guard removes the record when dropped.
pub fn record(dir: &Path, addr: SocketAddr) -> std::io::Result<Served> {
    let file = path(dir);
    let tmp = dir.join("SERVER.tmp");
    std::fs::write(&tmp, format!("{addr}\n{}\n", std::process::id()))?;
    std::fs::rename(&tmp, &file)?;
    Ok(Served { file })
}

/// Removes `<db>/SERVER` when the server ends.
pub struct Served {
    file: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// The connection string a client of the server at `addr` uses: user
/// `strata` (a loopback server without a password file asks none), and a
/// connect that gives up after 5 s.
pub fn conninfo(addr: SocketAddr) -> String {
    format!(
        "host={} port={} user=strata dbname=strata connect_timeout=5",
        addr.ip(),
        addr.port()
    )
}

/// The address of the live server that owns the database in `dir`, if the
/// file names one whose process still runs.
pub fn server_of(dir: &Path) -> Option<SocketAddr> {
    let text = std::fs::read_to_string(path(dir)).ok()?;
    let mut lines = text.lines();
    let addr: SocketAddr = lines.next()?.trim().parse().ok()?;
    let pid: u32 = lines.next()?.trim().parse().ok()?;
    Path::new(&format!("/proc/{pid}")).exists().then_some(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_names_this_process_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let addr: SocketAddr = "127.0.0.1:5433".parse().unwrap();
        assert_eq!(server_of(dir.path()), None);
        let served = record(dir.path(), addr).unwrap();
        assert_eq!(server_of(dir.path()), Some(addr));
        drop(served);
        assert_eq!(server_of(dir.path()), None);
        // A record left by a process that is gone is not believed.
        std::fs::write(dir.path().join("SERVER"), "127.0.0.1:5433\n4294967294\n").unwrap();
        assert_eq!(server_of(dir.path()), None);
        std::fs::write(dir.path().join("SERVER"), "garbage").unwrap();
        assert_eq!(server_of(dir.path()), None);
    }
}
