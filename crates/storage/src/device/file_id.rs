//! [`FileId`]: the id of a paged file a device has open.

/// Identifies an open paged file on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);
