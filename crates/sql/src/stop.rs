//! When a running statement stops before its end: after a time limit
//! (`statement_timeout`, `strata bench`'s per-query limit) or when somebody
//! cancels it (a client's CancelRequest, a dropped connection, Ctrl-C).
//!
//! A statement runs as a future on its session's runtime; [`Stop::run`] races
//! it against the limit and the cancel signal. Losing the race drops the
//! future, which drops the plan's streams and so stops strata's scan threads
//! and frees what the plan held. Writes are never raced (a write runs to its
//! end or fails, so it is never left half applied).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// A signal that cancels the statement running under it. Cloned handles share
/// the signal: one is kept by whoever may cancel (a server's connection), the
/// other goes with the statement.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<Signal>);

#[derive(Debug, Default)]
struct Signal {
    raised: AtomicBool,
    notify: Notify,
}

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels the statement running under this signal, or the next one to
    /// start before [`Cancel::reset`].
    pub fn cancel(&self) {
        self.0.raised.store(true, Ordering::Release);
        self.0.notify.notify_waiters();
    }

    /// Whether [`Cancel::cancel`] was called since the last reset.
    pub fn is_cancelled(&self) -> bool {
        self.0.raised.load(Ordering::Acquire)
    }

    /// Lowers the signal, for the next statement.
    pub fn reset(&self) {
        self.0.raised.store(false, Ordering::Release);
    }

    /// Resolves once the signal is raised.
    async fn raised(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is read: a cancel between the two
            // wakes it.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// A thread that raises a signal after a time limit, unless dropped first.
struct Watch {
    _done: std::sync::mpsc::Sender<()>,
}

impl Watch {
    fn start(limit: Duration, signal: Cancel) -> Watch {
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("strata-statement-timeout".into())
            .spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(limit) {
                    signal.cancel();
                }
            });
        // Without a thread (the system is out of them) the statement runs
        // without its limit.
        drop(spawned);
        Watch { _done: done }
    }
}

/// When a statement stops early: a time limit, a cancel signal, both or
/// neither.
#[derive(Clone, Debug, Default)]
pub struct Stop {
    pub timeout: Option<Duration>,
    pub cancel: Option<Cancel>,
}

/// Why a statement stopped before its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    TimedOut,
    Cancelled,
}

/// A task that is aborted when this is dropped (its statement was stopped).
pub(crate) struct AbortOnDrop<T>(pub tokio::task::JoinHandle<T>);

impl<T> AbortOnDrop<T> {
    /// The task's output; its panic goes on here. Dropped before the task
    /// ends, the future drops `self`, which aborts the task.
    pub(crate) async fn join(mut self) -> T {
        match (&mut self.0).await {
            Ok(v) => v,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("a statement's task ended without an answer: {e}"),
        }
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Stop {
    /// Whether this never stops a statement.
    pub fn is_never(&self) -> bool {
        self.timeout.is_none() && self.cancel.is_none()
    }

    /// Never stops early.
    pub fn never() -> Stop {
        Stop::default()
    }

    /// Stops after `limit`, when there is one.
    pub fn after(limit: Option<Duration>) -> Stop {
        Stop {
            timeout: limit,
            cancel: None,
        }
    }

    /// Runs `work` until it ends or this stops it.
    pub async fn run<F: Future>(&self, work: F) -> Result<F::Output, Stopped> {
        // The limit is kept by a thread of its own, not the runtime's timer:
        // the runtime's workers drive its timers, and while they compute (an
        // operator that does not yield) a timer would not fire.
        let expired = Cancel::new();
        let _watch = self.timeout.map(|t| Watch::start(t, expired.clone()));
        let timeout = async {
            match self.timeout {
                Some(_) => expired.raised().await,
                None => std::future::pending().await,
            }
        };
        let cancel = async {
            match &self.cancel {
                Some(c) => c.raised().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            // A cancel already raised wins over work that would also be ready.
            biased;
            () = cancel => Err(Stopped::Cancelled),
            () = timeout => Err(Stopped::TimedOut),
            out = work => Ok(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_cancel_stops_work_that_never_ends_and_a_reset_lets_the_next_run() {
        let rt = runtime();
        let cancel = Cancel::new();
        let stop = Stop {
            timeout: None,
            cancel: Some(cancel.clone()),
        };
        let c = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            c.cancel();
        });
        let r = rt.block_on(stop.run(std::future::pending::<()>()));
        assert_eq!(r, Err(Stopped::Cancelled));
        // Raised before the work starts: stopped at once.
        assert_eq!(rt.block_on(stop.run(async { 1 })), Err(Stopped::Cancelled));
        cancel.reset();
        assert_eq!(rt.block_on(stop.run(async { 1 })), Ok(1));
    }

    #[test]
    fn a_timeout_stops_work_and_work_that_ends_first_wins() {
        let rt = runtime();
        let stop = Stop::after(Some(Duration::from_millis(10)));
        assert_eq!(
            rt.block_on(stop.run(std::future::pending::<()>())),
            Err(Stopped::TimedOut)
        );
        assert_eq!(rt.block_on(Stop::never().run(async { 7 })), Ok(7));
    }
}
