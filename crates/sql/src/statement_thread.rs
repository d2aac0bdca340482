//! The threads a session's statements run on.
//!
//! A statement needs a deep stack (planning recurses over the syntax tree:
//! [`crate::rules::depth::STACK_BYTES`]), more than a caller's thread may
//! have, so a session runs each statement on a thread of its own making. It
//! keeps them: starting a thread with a large stack for every statement cost
//! more than planning a small one. A caller either waits for its statement
//! ([`Worker::run`]) or hands the thread a job that reports by itself when it
//! ends ([`Worker::start_job`]), as the server does, so that a statement
//! costs one thread wake-up each way and no blocking thread of its own.

use std::cell::Cell;
use std::sync::mpsc;

use crate::error::SqlError;
use crate::rules::depth;

thread_local! {
    /// Set on a statement thread: a statement started there runs on it
    /// directly instead of on another statement thread.
    static ON_STATEMENT_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is a statement thread.
pub fn on_statement_thread() -> bool {
    ON_STATEMENT_THREAD.with(Cell::get)
}

type Job = Box<dyn FnOnce() + Send>;

/// A kept statement thread.
pub(crate) struct Worker {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn gone() -> SqlError {
    SqlError::Execution("the statement thread ended unexpectedly".into())
}

impl Worker {
    pub(crate) fn start() -> Result<Worker, SqlError> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("strata-sql-statement".into())
            .stack_size(depth::STACK_BYTES)
            .spawn(move || {
                ON_STATEMENT_THREAD.with(|on| on.set(true));
                // A server's statement threads may run below its
                // connections' tasks (`crate::thread_priority`).
                crate::thread_priority::lower_this_thread();
                while let Ok(job) = inbox.recv() {
                    job();
                }
            })
            .map_err(|e| SqlError::Execution(format!("cannot start a statement thread: {e}")))?;
        Ok(Worker {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Runs `job` on this thread and waits for its answer, or its panic.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<std::thread::Result<T>, SqlError> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.start_job(move || {
            let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            let _ = tx.send(answer);
        })?;
        rx.recv().map_err(|_| gone())
    }

    /// Starts `job` on this thread with the worker itself (to keep or
    /// drop) and returns at once.
    pub(crate) fn hand_over(
        self,
        job: impl FnOnce(Worker) + Send + 'static,
    ) -> Result<(), SqlError> {
        let jobs = self.jobs.clone().ok_or_else(gone)?;
        jobs.send(Box::new(move || job(self))).map_err(|_| gone())
    }

    /// Starts `job` on this thread and returns at once. The job runs after
    /// the jobs started before it; a panic in it ends the thread.
    pub(crate) fn start_job(&self, job: impl FnOnce() + Send + 'static) -> Result<(), SqlError> {
        self.jobs
            .as_ref()
            .ok_or_else(gone)?
            .send(Box::new(job))
            .map_err(|_| gone())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        self.jobs = None;
        if let Some(t) = self.thread.take()
            // A worker dropped by its own job (the session's last reference
            // went with it) ends when that job returns; it cannot wait for
            // itself.
            && t.thread().id() != std::thread::current().id()
        {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_runs_on_a_statement_thread_and_a_panic_is_answered() {
        assert!(!on_statement_thread());
        let w = Worker::start().unwrap();
        assert!(w.run(on_statement_thread).unwrap().unwrap());
        assert!(w.run(|| -> u8 { panic!("boom") }).unwrap().is_err());
        // The thread survives a caught panic.
        assert_eq!(w.run(|| 7).unwrap().unwrap(), 7);
    }

    #[test]
    fn a_worker_dropped_by_its_own_job_does_not_wait_for_itself() {
        let (tx, rx) = mpsc::channel();
        Worker::start()
            .unwrap()
            .hand_over(move |w| {
                drop(w);
                tx.send(on_statement_thread()).unwrap();
            })
            .unwrap();
        assert!(rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap());
    }
}
