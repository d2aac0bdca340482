//! A device that fails on purpose, at a request chosen by count, so that crash
//! and I/O-error handling is tested at every point deterministically instead of
//! by killing a process after a timed sleep.
//!
//! A [`FaultDevice`] wraps any device and forwards every request to it while a
//! shared [`FaultInjector`] counts reads, writes and syncs. Once armed with a
//! [`FaultPlan`], the injector makes the Nth request of one kind (counted from
//! arming):
//!
//! * fail with `EIO` or `ENOSPC` (the device returns an I/O error naming the file;
//!   nothing is written), and every later one of that kind too (`eio-on-write:N`,
//!   `enospc-on-write:N`, `eio-on-read:N`, `eio-on-sync:N`); or
//! * **crash**: the Nth write reaches the file (or, `torn`, only the first half of
//!   its last page does: a page torn by a power cut mid-write) and the process
//!   then ends at once with [`CRASH_EXIT_CODE`], running no destructor, rollback or
//!   cleanup — exactly what a `SIGKILL` between two writes leaves, but at a point
//!   chosen by count (`crash-after-writes:N`, `crash-after-writes:N,torn`); or
//! * **stop**: the process stops itself (`SIGSTOP`) right after the Nth write,
//!   so that a test can send it a real `SIGKILL` at that point without timing
//!   anything (`stop-after-writes:N`); or
//! * **a full disk** with N bytes free (`full-disk:N`, N may be 0): every
//!   write that grows a paged file past its end, and every extension of the
//!   write-ahead log's segment, takes its new bytes from the budget, and one
//!   that finds too little left fails with `ENOSPC`, writing nothing; a
//!   truncation gives its bytes back. Writes inside a file's length pass, as on
//!   a real full disk. Recovery asks the budget how much room there is
//!   ([`FaultInjector::free_bytes`]) as it asks the filesystem.
//!
//! The command line arms it from the environment ([`FAULT_ENV`]), so end-to-end
//! tests sweep the crash point over every write of a load.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::{Device, FileId, IoStats, PAGE_SIZE, ReadRequest, TraceRecorder};
use crate::error::{Result, StorageError};

/// Environment variable the `strata` binary reads a [`FaultPlan`] from.
pub const FAULT_ENV: &str = "STRATA_FAULT";

/// Exit status of a process ended by an injected crash.
pub const CRASH_EXIT_CODE: i32 = 86;

/// Which requests a plan counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultOp {
    Read,
    Write,
    Sync,
}

/// What happens at the chosen request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The request fails with `EIO`, and so does every later one of its kind.
    Eio,
    /// The request fails with `ENOSPC` (disk full), and so does every later one.
    Enospc,
    /// The process ends right after the write (`torn`: only half of the write's
    /// last page reached the file).
    Crash { torn: bool },
    /// The process stops (`SIGSTOP`) right after the write, for its parent to kill.
    Stop,
    /// The disk has [`FaultPlan::nth`] bytes free: writes that grow a file take
    /// from them and fail with `ENOSPC` once they do not fit.
    DiskFull,
}

/// The request to fail and how: the `nth` (from 1) request of kind `op` counted
/// from when the plan is armed; for [`FaultKind::DiskFull`], `nth` is the bytes
/// free when it is armed (0 allowed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultPlan {
    pub kind: FaultKind,
    pub op: FaultOp,
    pub nth: u64,
}

impl FromStr for FaultPlan {
    type Err = StorageError;

    /// `eio-on-write:N`, `enospc-on-write:N`, `eio-on-read:N`, `eio-on-sync:N`,
    /// `crash-after-writes:N`, `crash-after-writes:N,torn` or
    /// `stop-after-writes:N` (N counts from 1), or `full-disk:N` (N bytes free).
    fn from_str(s: &str) -> Result<FaultPlan> {
        let bad = |why: &str| {
            StorageError::Profile(format!(
                "fault plan '{s}': {why} (expected eio-on-write:N, enospc-on-write:N, \
                 eio-on-read:N, eio-on-sync:N, crash-after-writes:N[,torn], stop-after-writes:N \
                 or full-disk:BYTES)"
            ))
        };
        let (what, rest) = s.split_once(':').ok_or_else(|| bad("no ':'"))?;
        let (count, flag) = match rest.split_once(',') {
            Some((c, f)) => (c, Some(f)),
            None => (rest, None),
        };
        let nth: u64 = count.trim().parse().map_err(|_| bad("N is not a number"))?;
        if what.trim() == "full-disk" {
            if flag.is_some() {
                return Err(bad("unknown flag"));
            }
            return Ok(FaultPlan {
                kind: FaultKind::DiskFull,
                op: FaultOp::Write,
                nth,
            });
        }
        if nth == 0 {
            return Err(bad("N counts from 1"));
        }
        let (kind, op) = match what.trim() {
            "eio-on-write" => (FaultKind::Eio, FaultOp::Write),
            "enospc-on-write" => (FaultKind::Enospc, FaultOp::Write),
            "eio-on-read" => (FaultKind::Eio, FaultOp::Read),
            "eio-on-sync" => (FaultKind::Eio, FaultOp::Sync),
            "crash-after-writes" => (FaultKind::Crash { torn: false }, FaultOp::Write),
            "stop-after-writes" => (FaultKind::Stop, FaultOp::Write),
            _ => return Err(bad("unknown fault")),
        };
        let kind = match (kind, flag.map(str::trim)) {
            (k, None) => k,
            (FaultKind::Crash { .. }, Some("torn")) => FaultKind::Crash { torn: true },
            _ => return Err(bad("unknown flag")),
        };
        Ok(FaultPlan { kind, op, nth })
    }
}

impl fmt::Display for FaultPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match (self.kind, self.op) {
            (FaultKind::Crash { .. }, _) => "crash-after-writes",
            (FaultKind::Stop, _) => "stop-after-writes",
            (FaultKind::Enospc, _) => "enospc-on-write",
            (FaultKind::DiskFull, _) => "full-disk",
            (FaultKind::Eio, FaultOp::Write) => "eio-on-write",
            (FaultKind::Eio, FaultOp::Read) => "eio-on-read",
            (FaultKind::Eio, FaultOp::Sync) => "eio-on-sync",
        };
        write!(f, "{name}:{}", self.nth)?;
        if self.kind == (FaultKind::Crash { torn: true }) {
            f.write_str(",torn")?;
        }
        Ok(())
    }
}

/// The shared switch of one or more [`FaultDevice`]s: counts requests and fires
/// the armed plan. A test keeps a handle to arm and disarm it while it runs.
#[derive(Default)]
pub struct FaultInjector {
    plan: Mutex<Option<FaultPlan>>,
    reads: AtomicU64,
    writes: AtomicU64,
    syncs: AtomicU64,
    fired: AtomicU64,
    /// Bytes left under a [`FaultKind::DiskFull`] plan.
    free: AtomicU64,
}

/// What the device does with one request.
enum Verdict {
    Pass,
    Fail(FaultKind),
    Crash { torn: bool },
    Stop,
}

impl fmt::Debug for FaultInjector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultInjector")
            .field("plan", &*self.plan.lock())
            .field("counts", &self.counts())
            .finish()
    }
}

impl FaultInjector {
    pub fn new() -> Arc<FaultInjector> {
        Arc::new(FaultInjector::default())
    }

    /// An injector armed with `plan` from the start.
    pub fn with_plan(plan: FaultPlan) -> Arc<FaultInjector> {
        let f = FaultInjector::new();
        f.arm(plan);
        f
    }

    /// Arms `plan`, counting requests from now.
    pub fn arm(&self, plan: FaultPlan) {
        let mut p = self.plan.lock();
        for c in [&self.reads, &self.writes, &self.syncs] {
            c.store(0, Ordering::SeqCst);
        }
        if plan.kind == FaultKind::DiskFull {
            self.free.store(plan.nth, Ordering::SeqCst);
        }
        *p = Some(plan);
    }

    /// Stops injecting; requests pass again.
    pub fn disarm(&self) {
        *self.plan.lock() = None;
    }

    /// Requests counted since the plan was armed (or since creation): reads,
    /// writes, syncs.
    pub fn counts(&self) -> (u64, u64, u64) {
        (
            self.reads.load(Ordering::SeqCst),
            self.writes.load(Ordering::SeqCst),
            self.syncs.load(Ordering::SeqCst),
        )
    }

    /// How many requests the plan has failed.
    pub fn fired(&self) -> u64 {
        self.fired.load(Ordering::SeqCst)
    }

    /// The bytes free under a `full-disk` plan (`None` under any other plan:
    /// the filesystem's own free space is all there is).
    pub fn free_bytes(&self) -> Option<u64> {
        let plan = self.plan.lock();
        match *plan {
            Some(p) if p.kind == FaultKind::DiskFull => Some(self.free.load(Ordering::SeqCst)),
            _ => None,
        }
    }

    /// Takes `bytes` of new room for `path` from a `full-disk` plan's budget,
    /// or fails with `ENOSPC` (taking nothing) when fewer are left. Passes
    /// under any other plan.
    pub fn take_room(&self, path: &Path, bytes: u64) -> Result<()> {
        let plan = self.plan.lock();
        if !matches!(*plan, Some(p) if p.kind == FaultKind::DiskFull) || bytes == 0 {
            return Ok(());
        }
        let free = self.free.load(Ordering::SeqCst);
        if free < bytes {
            self.fired.fetch_add(1, Ordering::SeqCst);
            return Err(injected(FaultKind::Enospc, path, "write"));
        }
        self.free.store(free - bytes, Ordering::SeqCst);
        Ok(())
    }

    /// Gives `bytes` back to a `full-disk` plan's budget (a file shrank).
    pub fn give_room(&self, bytes: u64) {
        let plan = self.plan.lock();
        if matches!(*plan, Some(p) if p.kind == FaultKind::DiskFull) {
            self.free.fetch_add(bytes, Ordering::SeqCst);
        }
    }

    /// Appends `buf` to a file that is not a paged file (the write-ahead log)
    /// with `append`, as one write request under the armed plan: it may fail,
    /// or the process may end right after it (with a torn append: only the
    /// first half of `buf` written).
    pub fn on_append(
        &self,
        path: &std::path::Path,
        buf: &[u8],
        append: impl Fn(&[u8]) -> Result<()>,
    ) -> Result<()> {
        match self.verdict(FaultOp::Write) {
            Verdict::Pass => append(buf),
            Verdict::Fail(kind) => Err(injected(kind, path, "write")),
            Verdict::Crash { torn } => {
                let _ = append(if torn { &buf[..buf.len() / 2] } else { buf });
                crash_now()
            }
            Verdict::Stop => {
                append(buf)?;
                stop_now();
                Ok(())
            }
        }
    }

    /// A sync of such a file under the armed plan.
    pub fn on_sync(&self, path: &std::path::Path) -> Result<()> {
        match self.verdict(FaultOp::Sync) {
            Verdict::Fail(kind) => Err(injected(kind, path, "fsync")),
            _ => Ok(()),
        }
    }

    fn verdict(&self, op: FaultOp) -> Verdict {
        let counter = match op {
            FaultOp::Read => &self.reads,
            FaultOp::Write => &self.writes,
            FaultOp::Sync => &self.syncs,
        };
        // Count under the plan's lock so arming and counting do not interleave.
        let plan = self.plan.lock();
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        match *plan {
            Some(p) if p.op == op && n >= p.nth => match p.kind {
                FaultKind::Crash { torn } if n == p.nth => Verdict::Crash { torn },
                FaultKind::Stop if n == p.nth => Verdict::Stop,
                FaultKind::Crash { .. } | FaultKind::Stop | FaultKind::DiskFull => Verdict::Pass,
                kind => {
                    self.fired.fetch_add(1, Ordering::SeqCst);
                    Verdict::Fail(kind)
                }
            },
            _ => Verdict::Pass,
        }
    }
}

/// The error of an injected failure of `what` on `path`.
fn injected(kind: FaultKind, path: &std::path::Path, what: &str) -> StorageError {
    let errno = match kind {
        FaultKind::Enospc => libc::ENOSPC,
        _ => libc::EIO,
    };
    let source = std::io::Error::from_raw_os_error(errno);
    StorageError::io(
        path,
        std::io::Error::new(source.kind(), format!("{what}: {source} (injected)")),
    )
}

/// The injected crash: the process ends now, as if killed.
fn crash_now() -> ! {
    // SAFETY: _exit ends the process without running anything else, which is
    // the point: no destructor or rollback may tidy up after a crash.
    unsafe { libc::_exit(CRASH_EXIT_CODE) }
}

/// The process stops (`SIGSTOP`) for its parent to kill.
fn stop_now() {
    // SAFETY: raising a signal on this process has no memory effects.
    unsafe { libc::raise(libc::SIGSTOP) };
}

/// A device that forwards to `inner` and injects the faults of its injector.
pub struct FaultDevice {
    inner: Arc<dyn Device>,
    faults: Arc<FaultInjector>,
}

impl FaultDevice {
    pub fn new(inner: Arc<dyn Device>, faults: Arc<FaultInjector>) -> FaultDevice {
        FaultDevice { inner, faults }
    }

    fn error(&self, kind: FaultKind, file: FileId, what: &str) -> StorageError {
        injected(kind, &self.inner.path(file), what)
    }

    /// The injected crash: the process ends now, as if killed.
    fn crash(&self) -> ! {
        crash_now()
    }

    /// Writes `buf` with only the first half of its last page reaching the file
    /// (the rest of that page keeps what it held, or zeros past the end).
    fn write_torn(&self, file: FileId, first_page: u64, buf: &[u8]) -> Result<()> {
        let pages = (buf.len() / PAGE_SIZE) as u64;
        let last = first_page + pages - 1;
        let mut old = super::AlignedBuf::new(1);
        if last < self.inner.num_pages(file)? {
            self.inner.read(file, last, &mut old)?;
        }
        let mut torn = super::AlignedBuf::new(pages as usize);
        torn.copy_from_slice(buf);
        let tail = &mut torn[(pages as usize - 1) * PAGE_SIZE..];
        tail[PAGE_SIZE / 2..].copy_from_slice(&old[PAGE_SIZE / 2..]);
        self.inner.write(file, first_page, &torn)
    }
}

impl Device for FaultDevice {
    forward_files_to!(inner);
    fn read(&self, file: FileId, first_page: u64, buf: &mut [u8]) -> Result<()> {
        match self.faults.verdict(FaultOp::Read) {
            Verdict::Fail(kind) => Err(self.error(kind, file, "read")),
            _ => self.inner.read(file, first_page, buf),
        }
    }
    fn read_many(&self, reqs: &mut [ReadRequest<'_>]) -> Result<()> {
        for r in reqs.iter() {
            if let Verdict::Fail(kind) = self.faults.verdict(FaultOp::Read) {
                return Err(self.error(kind, r.file, "read"));
            }
        }
        self.inner.read_many(reqs)
    }
    fn write(&self, file: FileId, first_page: u64, buf: &[u8]) -> Result<()> {
        match self.faults.verdict(FaultOp::Write) {
            Verdict::Pass => {
                if self.faults.free_bytes().is_some() {
                    // Under a full-disk plan: what the write adds past the end.
                    let end = first_page + (buf.len() / PAGE_SIZE) as u64;
                    let grows = end.saturating_sub(self.inner.num_pages(file)?);
                    self.faults
                        .take_room(&self.inner.path(file), grows * PAGE_SIZE as u64)?;
                }
                self.inner.write(file, first_page, buf)
            }
            Verdict::Fail(kind) => Err(self.error(kind, file, "write")),
            Verdict::Crash { torn } => {
                // The crash point's own write reaches the file (whole or torn);
                // nothing after it does.
                let _ = if torn {
                    self.write_torn(file, first_page, buf)
                } else {
                    self.inner.write(file, first_page, buf)
                };
                self.crash()
            }
            Verdict::Stop => {
                let written = self.inner.write(file, first_page, buf);
                stop_now();
                written
            }
        }
    }
    fn truncate(&self, file: FileId, pages: u64) -> Result<()> {
        if self.faults.free_bytes().is_none() {
            return self.inner.truncate(file, pages);
        }
        let before = self.inner.num_pages(file)?;
        self.inner.truncate(file, pages)?;
        self.faults
            .give_room(before.saturating_sub(pages) * PAGE_SIZE as u64);
        Ok(())
    }
    fn sync(&self, file: FileId) -> Result<()> {
        match self.faults.verdict(FaultOp::Sync) {
            Verdict::Fail(kind) => Err(self.error(kind, file, "fsync")),
            _ => self.inner.sync(file),
        }
    }
    fn charge_read(&self, file: FileId, first_page: u64, pages: u64) {
        self.inner.charge_read(file, first_page, pages)
    }
    fn stats(&self) -> &IoStats {
        self.inner.stats()
    }
    fn describe(&self) -> String {
        match *self.faults.plan.lock() {
            Some(p) => format!("{} with fault {p}", self.inner.describe()),
            None => self.inner.describe(),
        }
    }
    fn parallelism(&self) -> usize {
        self.inner.parallelism()
    }
    fn trace(&self) -> Option<&TraceRecorder> {
        self.inner.trace()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{AlignedBuf, FileDevice};

    fn device(plan: &str) -> (tempfile::TempDir, FaultDevice, FileId, Arc<FaultInjector>) {
        let dir = tempfile::tempdir().unwrap();
        let faults = FaultInjector::new();
        let dev = FaultDevice::new(Arc::new(FileDevice::new(false)), faults.clone());
        let f = dev.create(&dir.path().join("f"), 64).unwrap();
        faults.arm(plan.parse().unwrap());
        (dir, dev, f, faults)
    }

    #[test]
    fn plans_parse_and_print_back() {
        for s in [
            "eio-on-write:3",
            "enospc-on-write:1",
            "eio-on-read:7",
            "eio-on-sync:2",
            "crash-after-writes:12",
            "crash-after-writes:5,torn",
            "stop-after-writes:9",
            "full-disk:0",
            "full-disk:65536",
        ] {
            assert_eq!(s.parse::<FaultPlan>().unwrap().to_string(), s);
        }
        for bad in [
            "eio",
            "eio-on-write:0",
            "eio-on-write:x",
            "melt:3",
            "eio-on-write:3,torn",
            "full-disk:x",
            "full-disk:8,torn",
        ] {
            let e = bad.parse::<FaultPlan>().unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn the_nth_write_and_every_later_one_fail_naming_the_file() {
        let (_d, dev, f, faults) = device("enospc-on-write:3");
        let page = AlignedBuf::new(1);
        dev.write(f, 0, &page).unwrap();
        dev.write(f, 1, &page).unwrap();
        let e = dev.write(f, 2, &page).unwrap_err().to_string();
        assert!(
            e.contains("No space left on device") && e.contains("injected"),
            "{e}"
        );
        assert!(e.contains("/f"), "{e}");
        assert!(dev.write(f, 3, &page).is_err());
        assert_eq!(dev.num_pages(f).unwrap(), 2, "failed writes wrote nothing");
        assert_eq!(faults.fired(), 2);
        faults.disarm();
        dev.write(f, 2, &page).unwrap();
        assert_eq!(dev.num_pages(f).unwrap(), 3);
    }

    #[test]
    fn a_full_disk_fails_only_writes_that_grow_a_file_and_truncation_gives_room_back() {
        let (_d, dev, f, faults) = device("full-disk:16384");
        let page = AlignedBuf::new(1);
        assert_eq!(faults.free_bytes(), Some(16384));
        dev.write(f, 0, &page).unwrap();
        dev.write(f, 1, &page).unwrap();
        assert_eq!(faults.free_bytes(), Some(0));
        dev.write(f, 0, &page).unwrap(); // inside the file: no new room
        let e = dev.write(f, 2, &page).unwrap_err().to_string();
        assert!(
            e.contains("No space left on device") && e.contains("/f"),
            "{e}"
        );
        assert_eq!(
            dev.num_pages(f).unwrap(),
            2,
            "the failed write wrote nothing"
        );
        dev.truncate(f, 1).unwrap();
        assert_eq!(faults.free_bytes(), Some(8192));
        dev.write(f, 1, &page).unwrap();
        assert!(dev.write(f, 2, &page).is_err());
        assert_eq!(faults.fired(), 2);
        faults.disarm();
        assert_eq!(faults.free_bytes(), None);
        dev.write(f, 2, &page).unwrap();
    }

    #[test]
    fn reads_and_syncs_fail_when_planned() {
        let (_d, dev, f, faults) = device("eio-on-read:2");
        let mut page = AlignedBuf::new(1);
        dev.write(f, 0, &page).unwrap();
        dev.read(f, 0, &mut page).unwrap();
        assert!(dev.read(f, 0, &mut page).is_err());
        faults.arm("eio-on-sync:1".parse().unwrap());
        assert!(dev.sync(f).unwrap_err().to_string().contains("fsync"));
        assert_eq!(faults.counts(), (0, 0, 1));
    }

    #[test]
    fn a_torn_write_keeps_the_old_second_half_of_its_last_page() {
        let (_d, dev, f, _faults) = device("eio-on-sync:99");
        let mut old = AlignedBuf::new(2);
        old.fill(1);
        dev.write(f, 0, &old).unwrap();
        let mut new = AlignedBuf::new(2);
        new.fill(2);
        dev.write_torn(f, 0, &new).unwrap();
        let mut back = AlignedBuf::new(2);
        dev.read(f, 0, &mut back).unwrap();
        assert!(back.page(0).iter().all(|&b| b == 2));
        assert!(back.page(1)[..PAGE_SIZE / 2].iter().all(|&b| b == 2));
        assert!(back.page(1)[PAGE_SIZE / 2..].iter().all(|&b| b == 1));
    }
}
