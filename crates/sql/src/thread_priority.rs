//! The CPU priority of the threads that run statements, for a server whose
//! short statements must not queue behind long ones for a core.
//!
//! A server answers an OLTP client's lookups and one-row writes on its
//! connections' own tasks (`SqlSession::run_inline`), in microseconds.
//! Everything else — whatever DataFusion plans and runs: an analytical
//! query's scans, joins and aggregates — runs on the session's statement
//! threads and its runtime's workers, and keeps every core busy for as long
//! as it runs. On a machine with few cores a lookup that wakes up then
//! waits for the scheduler to give it a core: beside TPC-H Q1 on two cores
//! the slowest lookups took 18 ms, where alone they take 1 ms.
//!
//! So a server may run statement threads at a lower priority (a higher
//! `nice`): the scheduler then gives a waking lookup a core at once, and the
//! long query loses only the little time the lookups use. Linux keeps the
//! nice value per thread and a thread starts with its creator's, so the
//! threads a statement starts (a scan's reader threads) follow it. The
//! setting is the process's; nothing changes until it is set (the shell and
//! the embedded API leave it alone: there, nothing else competes).
//!
//! At the lowest priority, 19, the threads also join Linux's idle
//! scheduling class (`SCHED_IDLE`): any other thread that wakes up takes
//! their core at once, where at a nice value the scheduler (EEVDF) may first
//! let the running thread finish its time slice. Measured beside TPC-H Q1
//! on two cores (`strata bench serve-mixed --statement-nice 0,10,19`,
//! results/serve/mixed.md): the 99th percentile lookup took 6.5 ms at 0,
//! 6.5 ms at 10 and 3.9 ms at 19; the slowest lookups (10–50 ms) were as
//! slow alone, from the device. The idle class starves the long statements
//! while short ones keep every core busy, so the server's default is 0.
//!
//! Raising nice (or entering the idle class) needs no privilege; going back
//! does, so a thread keeps what it was given.
//!
//! Tried and not kept: the other side, a short time slice for the threads
//! that answer connections (`sched_setattr`'s `sched_runtime`, which Linux
//! 6.12's EEVDF takes from any thread; a waking thread with a shorter slice
//! may preempt the running one). Beside two CPU-bound statements it left
//! warm lookups' p99 and their slowest where they were
//! (`scripts/lookup_tails.sh`, results/serve/lookup-tails).

use std::sync::atomic::{AtomicI32, Ordering};

/// The nice value of statement threads started from now on (0: unchanged).
static NICE: AtomicI32 = AtomicI32::new(0);

/// The highest nice value Linux has.
pub const LOWEST_PRIORITY: i32 = 19;

/// Runs the statement threads started from now on, and the threads that
/// run their plans, at `nice` (0 to [`LOWEST_PRIORITY`]; 0 leaves them as
/// the process is).
pub fn set_statement_nice(nice: i32) -> Result<(), String> {
    if !(0..=LOWEST_PRIORITY).contains(&nice) {
        return Err(format!(
            "a statement thread's nice value is 0 (the server's own) to {LOWEST_PRIORITY} \
             (the lowest priority), not {nice}"
        ));
    }
    NICE.store(nice, Ordering::Relaxed);
    Ok(())
}

/// The nice value statement threads get.
pub fn statement_nice() -> i32 {
    NICE.load(Ordering::Relaxed)
}

/// Gives the calling thread the statement threads' priority, when one is
/// set. A failure leaves the thread as it was: the statement runs either
/// way.
pub(crate) fn lower_this_thread() {
    let nice = statement_nice();
    if nice == 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: system calls on the calling thread's own id; the one pointer
    // passed (`param`) is to a local that lives across the call.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice);
        if nice == LOWEST_PRIORITY {
            let param = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param);
        }
    }
}

/// The nice value of thread `tid` of this process, from `/proc` (Linux).
pub fn nice_of(tid: u32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // Fields after the name (which may hold spaces), in parentheses: state
    // is field 3, nice field 19.
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(16)?.parse().ok()
}

/// The ids of this process's threads named `name` (Linux, which keeps a
/// thread's first 15 bytes of name).
pub fn threads_named(name: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let name = &name.as_bytes()[..name.len().min(15)];
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|tid| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                .is_ok_and(|c| c.trim_end().as_bytes() == name)
        })
        .collect()
}
