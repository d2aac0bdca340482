//! Temporary files: one naming scheme for every operator that spills (the
//! external and partitioned sorts' runs and partitions, the Result Cache's
//! spill file), so one cleanup finds what a crashed process left behind and a
//! trace can route every temporary file to its own medium.
//!
//! A temporary file is `<dir>/strata-temp-<what>-<pid>-<n>` (plus the device's
//! segment suffix, `.0000`, …): `what` names the operator, `pid` the process
//! that owns it, `n` a counter within the process. The operator removes its
//! file when it is dropped (also on error and unwinding); files whose process
//! no longer exists are removed by [`remove_stale`], and opening a database
//! read-write removes every temporary file in its `tmp/` (no other process can
//! be using them while it holds the exclusive lock).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Prefix of every temporary file's name.
pub const TEMP_FILE_PREFIX: &str = "strata-temp";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh temporary file path in `dir` for operator `what` (the file and the
/// directory are not created).
pub fn temp_path(dir: &Path, what: &str) -> PathBuf {
    dir.join(format!(
        "{TEMP_FILE_PREFIX}-{what}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Whether `name` (a file name) is a temporary file's.
pub fn is_temp(name: &str) -> bool {
    name.starts_with(TEMP_FILE_PREFIX)
}

/// The process that owns the temporary file `name`, if it is one.
fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(TEMP_FILE_PREFIX)?.strip_prefix('-')?;
    let stem = rest.split('.').next()?;
    let mut fields = stem.rsplit('-');
    let _counter = fields.next()?;
    fields.next()?.parse().ok()
}

/// Removes the temporary files in `dir` of processes that no longer exist (left
/// by a crash or a kill). Returns how many files it removed.
pub fn remove_stale(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let me = std::process::id();
    let mut removed = 0;
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(owner) else {
            continue;
        };
        let alive = pid == me || Path::new(&format!("/proc/{pid}")).exists();
        if !alive && std::fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// [`remove_stale`], the first time this process uses `dir`.
pub fn remove_stale_once(dir: &Path) {
    static CLEANED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let mut cleaned = CLEANED.lock().unwrap_or_else(|e| e.into_inner());
    if !cleaned.iter().any(|d| d == dir) {
        cleaned.push(dir.to_path_buf());
        remove_stale(dir);
    }
}

/// Removes every temporary file in `dir`, whoever made it (the caller knows
/// that nobody is using them).
pub fn remove_all(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_name().to_str().is_some_and(is_temp) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_owner_and_stale_ones_go() {
        let dir = tempfile::tempdir().unwrap();
        let mine = temp_path(dir.path(), "es");
        let name = mine.file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(owner(&name), Some(std::process::id()));
        assert_eq!(owner(&format!("{name}.0003")), Some(std::process::id()));
        assert_ne!(mine, temp_path(dir.path(), "es"));
        assert_eq!(owner("notes.txt"), None);
        // No process has a pid this large (Linux caps pids at 2^22).
        let dead = dir.path().join("strata-temp-resultcache-4000000000-0.0000");
        let other = dir.path().join("notes.txt");
        for f in [
            &dead,
            &other,
            &PathBuf::from(format!("{}.0000", mine.display())),
        ] {
            std::fs::write(f, b"x").unwrap();
        }
        assert_eq!(remove_stale(dir.path()), 1);
        assert!(!dead.exists() && other.exists());
        remove_all(dir.path());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
