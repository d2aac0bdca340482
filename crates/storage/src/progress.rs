//! Progress of long operations (loads, index builds, sorts): the storage layer
//! reports phases and units done; the CLI draws bars from them.

/// Receives progress of long operations (the CLI draws bars from it).
pub trait Progress: Send + Sync {
    /// A new phase of `total` units (rows, pages, entries) begins.
    fn phase(&self, name: &str, total: u64);
    /// `n` more units are done.
    fn advance(&self, n: u64);
}

/// Progress that goes nowhere.
pub struct NoProgress;
impl Progress for NoProgress {
    fn phase(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
}
