//! A byte file a device holds away from the local disk: a column file
//! (Parquet, not a paged file) whose bytes are an object on the cold tier.
//!
//! Why a trait here: the column reader (`strata-columns`) reads its files by
//! byte ranges, and the cold tier (`strata-cold`) is what holds them once
//! `strata tier cold` moved them; neither crate depends on the other. The
//! device a database reads through answers [`super::Device::open_remote`]
//! for a path: `None` for a local file, else this handle, whose reads are
//! ranged requests to wherever the bytes are (checked, counted and retried
//! there).

use crate::error::Result;

/// An open byte file held by a device (see the module docs).
pub trait RemoteFile: Send + Sync {
    /// Its length in bytes.
    fn len(&self) -> u64;
    /// Whether it has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `len` bytes from `start`, in one request (fails if the file ends
    /// first, naming the file and where it is held).
    fn read_range(&self, start: u64, len: usize) -> Result<Vec<u8>>;
    /// Bytes whose transfer costs what one request does where it is held: a
    /// reader merges two ranges closer than this into one request.
    fn request_bytes(&self) -> u64;
    /// Where it is, for messages (e.g. `object db/t/t.c0.parquet at http://…`).
    fn describe(&self) -> String;
}
