//! The `LOCK` file of a database, and who holds it.
//!
//! A read-write open takes an exclusive `flock` on `<db>/LOCK`, so two
//! writers never meet. A read-only open takes no lock a writer waits for: it
//! reads beside a writer on a snapshot of its own (the last checkpoint and
//! the committed log, checked page by page: `device/snapshot.rs`). It takes a
//! shared lock on `<db>/READERS` instead, which no writer ever takes, only so
//! that it can be named: a read-only open writes nothing under the database
//! directory, so the file is there only once a writer has created it. An
//! open waits up to a second for another writer to let go (one that is
//! exiting, or whose lock a just-forked child still shares).
//!
//! Why this is a module of its own: an open that is refused must say who has
//! the database and what it is doing, and how to share it. The holders are
//! found without writing anything: Linux lists every `flock` in `/proc/locks`
//! with its mode and the pid that took it, matched here to the file by device
//! and inode, and `/proc/<pid>/cmdline` names the command.

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

/// The file read-only opens of the database in `dir` hold a shared lock on.
fn readers_path(dir: &Path) -> std::path::PathBuf {
    dir.join("READERS")
}

/// Takes `LOCK` of the database in `dir` for a writer, waiting up to
/// [`LOCK_WAIT`]; refused, the error says who holds it and how to share the
/// database. Creates `READERS` for the read-only opens to come.
pub(crate) fn lock(dir: &Path) -> Result<File> {
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
    // A lock outlives its holder's close while a child forked by any thread of
    // that process has not yet exec'd (the child shares the open file), and a
    // process that just closed the database may still be exiting: both let go
    // within moments, so the open waits up to LOCK_WAIT before it gives up.
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        // SAFETY: flock on a valid open descriptor.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            let readers = readers_path(dir);
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&readers)
                .map_err(|e| StorageError::io(&readers, e))?;
            return Ok(f);
        }
        if std::time::Instant::now() >= deadline {
            let holders = holders(&f, None);
            return Err(StorageError::Database {
                path: dir.to_path_buf(),
                reason: format!(
                    "in use by another strata process: {} (it holds the LOCK file); one \
                     process writes a database at a time. Read-only opens work beside it \
                     (`strata sql --read-only`, `strata info`, `strata check`), and \
                     `strata serve` shares one database with every client",
                    describe(&holders, true)
                ),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A read-only open's shared lock on `READERS` of the database in `dir`
/// (`None` where no writer has created the file yet); it never waits and
/// never keeps a writer out.
pub(crate) fn reader(dir: &Path) -> Result<Option<File>> {
    if !dir.is_dir() {
        return Err(StorageError::Database {
            path: dir.to_path_buf(),
            reason: "no such directory".into(),
        });
    }
    let path = readers_path(dir);
    let f = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StorageError::io(&path, e)),
    };
    // SAFETY: flock on a valid open descriptor. Only shared locks are ever
    // taken on READERS, so this one is granted at once.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    Ok(Some(f))
}

/// Why a database opened read-only may not write now: the writer beside it,
/// or that no one writes it; `unrecovered`: its log holds commits its data
/// files lack (this handle reads them redone in memory).
pub(crate) fn read_only_reason(dir: &Path, unrecovered: bool) -> String {
    let writers = File::open(lock_path(dir))
        .map(|f| holders(&f, None))
        .unwrap_or_default();
    let writers: Vec<Holder> = writers.into_iter().filter(|h| h.writing).collect();
    let mut why = if writers.is_empty() {
        format!(
            "no process writes {} now: it was opened read-only on purpose, or its writer \
             has closed it since; open it again to write",
            dir.display()
        )
    } else {
        format!(
            "{}, and this handle reads beside it, each statement on the commits made \
             before it began; write through that process, or share the database with \
             `strata serve`",
            describe(&writers, true)
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
