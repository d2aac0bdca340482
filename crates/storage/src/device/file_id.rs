//! [`FileId`]: the id of a paged file a device has open.

/// Identifies an open paged file on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

impl FileId {
    /// The id under which a file a device does not hold open (a column
    /// file) is charged ([`super::Device::charge_read`]): from the file's
    /// name, with the high bit set, so it never equals the id of a file a
    /// device opened (those count up from 0) and the same file always gets
    /// the same id (a modeled disk's head knows when a read continues the
    /// previous one).
    pub fn external(name: &str) -> FileId {
        // FNV-1a: stable across runs and builds, unlike the std hasher.
        let mut h: u32 = 0x811c_9dc5;
        for b in name.bytes() {
            h ^= b as u32;
            h = h.wrapping_mul(0x0100_0193);
        }
        FileId(0x8000_0000 | (h & 0x7fff_ffff))
    }
}
