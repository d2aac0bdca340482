//! The `LOCK` file of a database, and who holds it.
//!
//! A read-write open takes an exclusive `flock` on `<db>/LOCK`, a read-only
//! open a shared one, so a reader never sees a load in progress and two writers
//! never meet. An open waits up to a second for a holder to let go (one that is
//! exiting, or whose lock a just-forked child still shares).
//!
//! Why this is a module of its own: an open that is refused must say who has
//! the database and what it is doing. A writer refused while `strata check`
//! reads used to be told another process "holds it for writing". The holders
//! are found without writing anything (a read-only open writes nothing under
//! the database directory, so `LOCK` cannot carry them): Linux lists every
//! `flock` in `/proc/locks` with its mode and the pid that took it, matched here
//! to `LOCK` by device and inode, and `/proc/<pid>/cmdline` names the command.
//! Where `/proc/locks` says nothing (another pid namespace, another system),
//! the mode still is known: a shared lock that can be had beside the holders
//! means they only read.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::{Result, StorageError};

/// How long an open waits for another holder of `LOCK` to let go.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The longest command line an error quotes.
const COMMAND_CHARS: usize = 120;

/// The lock file of the database in `dir`.
fn lock_path(dir: &Path) -> std::path::PathBuf {
    dir.join("LOCK")
}

/// Takes `LOCK` of the database in `dir`, shared (a reader) or exclusive (a
/// writer), waiting up to [`LOCK_WAIT`]; refused, the error says who holds it
/// and whether it reads or writes.
pub(crate) fn lock(dir: &Path, shared: bool) -> Result<File> {
    let path = lock_path(dir);
    if !dir.is_dir() {
        return Err(StorageError::Database {
            path: dir.to_path_buf(),
            reason: "no such directory".into(),
        });
    }
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StorageError::io(&path, e))?;
    let op = if shared { libc::LOCK_SH } else { libc::LOCK_EX } | libc::LOCK_NB;
    // A lock outlives its holder's close while a child forked by any thread of
    // that process has not yet exec'd (the child shares the open file), and a
    // process that just closed the database may still be exiting: both let go
    // within moments, so the open waits up to LOCK_WAIT before it gives up.
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        // SAFETY: flock on a valid open descriptor.
        if unsafe { libc::flock(f.as_raw_fd(), op) } == 0 {
            return Ok(f);
        }
        if std::time::Instant::now() >= deadline {
            let writing = if shared {
                // Only a writer keeps a reader out.
                true
            } else {
                !could_share(&f)
            };
            let holders = holders(&f, None);
            return Err(StorageError::Database {
                path: dir.to_path_buf(),
                reason: format!(
                    "in use by another strata process: {} (it holds the LOCK file)",
                    describe(&holders, writing)
                ),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Why a database opened read-only (`held`: the handle's own `LOCK`) may not
/// write now: who else holds it, or that no one does; `unrecovered`: its log
/// holds commits its data files lack (this handle reads them redone in memory).
pub(crate) fn read_only_reason(dir: &Path, held: &File, unrecovered: bool) -> String {
    let own = std::process::id();
    // This handle's own shared lock is one of this process's entries.
    let others = holders(held, Some(own));
    let mut why = if others.is_empty() {
        format!(
            "no other process holds {} now: it was opened read-only on purpose, or its \
             holder has closed it since; open it again to write",
            dir.display()
        )
    } else {
        let writing = others.iter().any(|h| h.writing);
        format!(
            "{}, and a writer must wait until it closes {}",
            describe(&others, writing),
            dir.display()
        )
    };
    if unrecovered {
        why.push_str(
            "; it was not closed cleanly and is read with its log redone in memory: a \
             read-write open writes the redone pages first, and if the disk is too full \
             for them it says how many bytes it needs",
        );
    }
    why
}

/// One holder of a `LOCK`, from `/proc/locks`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Holder {
    pid: u32,
    writing: bool,
}

/// Whether a shared lock can be had beside the holders of `f`'s lock (then
/// they only read); the lock is let go at once.
fn could_share(f: &File) -> bool {
    // SAFETY: flock on a valid open descriptor that holds no lock.
    let got = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0;
    if got {
        // SAFETY: as above.
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_UN) };
    }
    got
}

/// The holders of the lock on the file `f` is open on, from `/proc/locks`
/// (empty where it is not readable); `minus_own`: one shared entry of this
/// pid is the caller's own and is left out.
fn holders(f: &File, minus_own: Option<u32>) -> Vec<Holder> {
    let (Ok(meta), Ok(locks)) = (f.metadata(), std::fs::read_to_string("/proc/locks")) else {
        return Vec::new();
    };
    let mut out = parse_locks(&locks, meta.dev(), meta.ino());
    if let Some(own) = minus_own
        && let Some(i) = out.iter().position(|h| h.pid == own && !h.writing)
    {
        out.remove(i);
    }
    // One process may hold several locks on it (several handles).
    out.dedup();
    out
}

/// The `FLOCK` entries of `/proc/locks` (text `locks`) on the file with device
/// `dev` and inode `ino`; waiters (`->`) are not holders.
fn parse_locks(locks: &str, dev: u64, ino: u64) -> Vec<Holder> {
    let want = format!(
        "{:02x}:{:02x}:{ino}",
        libc::major(dev as libc::dev_t),
        libc::minor(dev as libc::dev_t)
    );
    let mut out = Vec::new();
    for line in locks.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // `<n>: FLOCK ADVISORY WRITE <pid> <maj>:<min>:<inode> <start> <end>`
        if f.len() < 6 || f[1] != "FLOCK" || f[5] != want {
            continue;
        }
        let writing = match f[3] {
            "WRITE" => true,
            "READ" => false,
            _ => continue,
        };
        if let Ok(pid) = f[4].parse::<u32>()
            && pid != 0
        {
            out.push(Holder { pid, writing });
        }
    }
    out.sort_by_key(|h| (h.pid, h.writing));
    out
}

/// "pid 12 (`strata check`) holds it for reading", for the holders found, or
/// for an unknown one doing `writing` or reading.
fn describe(holders: &[Holder], writing: bool) -> String {
    let doing = if writing { "writing" } else { "reading" };
    match holders {
        [] => format!("a process holds it for {doing}"),
        [h] => format!("{} holds it for {doing}", who(h.pid)),
        hs => {
            let who: Vec<String> = hs.iter().map(|h| who(h.pid)).collect();
            format!("{} hold it for {doing}", who.join(", "))
        }
    }
}

/// "pid 12 (`strata check --db x`)", or "pid 12" where its command is unknown.
fn who(pid: u32) -> String {
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .map(|b| {
            let words: Vec<String> = b
                .split(|&c| c == 0)
                .filter(|w| !w.is_empty())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            words.join(" ")
        })
        .filter(|c| !c.is_empty());
    match cmd {
        Some(c) if c.chars().count() > COMMAND_CHARS => {
            let cut: String = c.chars().take(COMMAND_CHARS).collect();
            format!("pid {pid} (`{cut}...`)")
        }
        Some(c) => format!("pid {pid} (`{c}`)"),
        None => format!("pid {pid}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_locks_lines_of_the_file_give_its_holders_and_their_modes() {
        let dev = libc::makedev(0xfe, 0) as u64;
        let text = "1: FLOCK  ADVISORY  READ 7745 fe:00:10011329 0 EOF\n\
                    2: FLOCK  ADVISORY  WRITE 1976 fe:00:5309364 0 EOF\n\
                    3: FLOCK  ADVISORY  READ 1976 fe:00:10011329 0 EOF\n\
                    3: -> FLOCK  ADVISORY  WRITE 88 fe:00:10011329 0 EOF\n\
                    4: POSIX  ADVISORY  WRITE 99 fe:00:10011329 0 EOF\n\
                    5: FLOCK  ADVISORY  READ 55 fd:00:10011329 0 EOF\n";
        assert_eq!(
            parse_locks(text, dev, 10011329),
            vec![
                Holder {
                    pid: 1976,
                    writing: false
                },
                Holder {
                    pid: 7745,
                    writing: false
                }
            ]
        );
        assert_eq!(
            parse_locks(text, dev, 5309364),
            vec![Holder {
                pid: 1976,
                writing: true
            }]
        );
        assert!(parse_locks("garbage\n\n", dev, 1).is_empty());
    }

    #[test]
    fn a_description_names_the_mode_and_the_pids() {
        let h = |pid| Holder {
            pid,
            writing: false,
        };
        assert_eq!(describe(&[], true), "a process holds it for writing");
        let one = describe(&[h(std::process::id())], false);
        assert!(
            one.starts_with(&format!("pid {} (`", std::process::id())),
            "{one}"
        );
        assert!(one.ends_with("holds it for reading"), "{one}");
        let two = describe(&[h(u32::MAX - 1), h(u32::MAX)], false);
        assert_eq!(
            two,
            format!("pid {}, pid {} hold it for reading", u32::MAX - 1, u32::MAX)
        );
    }
}
