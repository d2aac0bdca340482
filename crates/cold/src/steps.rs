//! The durable steps of a move between tiers (an upload, a manifest written
//! or removed, a local file removed, a download), counted so that a test can
//! stop a move after any of them and crash the database there.

use strata_storage::{Result, StorageError};

/// Counts durable steps and stops at `TierOptions::stop_after`.
pub(crate) struct Steps {
    done: u64,
    stop_after: Option<u64>,
}

impl Steps {
    pub(crate) fn new(stop_after: Option<u64>) -> Steps {
        Steps {
            done: 0,
            stop_after,
        }
    }

    pub(crate) fn step(&mut self, what: &str) -> Result<()> {
        self.done += 1;
        if self.stop_after == Some(self.done) {
            return Err(StorageError::io(
                what,
                std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    format!(
                        "stopped after step {} as asked (fault injection)",
                        self.done
                    ),
                ),
            ));
        }
        Ok(())
    }
}
