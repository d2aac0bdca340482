//! The Result Cache's spill file: the runs its spilled partitions' records
//! are written in (append-only, through a staging buffer of up to
//! [`MAX_IO_PAGES`](crate::result_cache::MAX_IO_PAGES) pages, each run
//! starting on a page boundary), each run's read cursor, and the record
//! format (a page delta, slot and length as varints, then the tuple). See
//! [`crate::result_cache`] for how runs are made and merged back.

use std::path::PathBuf;
use std::sync::Arc;

use strata_storage::StorageError;
use strata_storage::device::{AlignedBuf, Device, FileId, segment_path};
use strata_storage::page::PAGE_SIZE;
use strata_storage::row::Tid;

use crate::error::{AccessError, Result};

/// A run of the spill file and, once reading has begun, its cursor.
#[derive(Default)]
pub(crate) struct Run {
    pub(crate) first_page: u64,
    /// Bytes of the run (its pages hold `len.div_ceil(PAGE_SIZE)`).
    pub(crate) len: u64,
    /// Bytes read from the device so far.
    pub(crate) read: u64,
    /// Read-ahead block; `pos..filled` is not consumed yet.
    pub(crate) blk: Option<AlignedBuf>,
    pub(crate) pos: usize,
    pub(crate) filled: usize,
    /// The next group's header (partition, body bytes), read but not taken.
    pub(crate) peeked: Option<(usize, usize)>,
}

impl Run {
    pub(crate) fn exhausted(&self) -> bool {
        self.read == self.len && self.pos == self.filled && self.peeked.is_none()
    }
}

pub(crate) fn corrupt() -> AccessError {
    AccessError::ResultCache("spill file is inconsistent (a run ended inside a record)".into())
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A run record: the page as a zigzag delta from the previous record's (tuples
/// arrive roughly in heap order, so it is mostly one byte), the slot, the
/// length, the tuple.
pub(crate) fn encode_record(out: &mut Vec<u8>, prev: &mut u32, tid: Tid, tuple: &[u8]) {
    let d = i64::from(tid.page) - i64::from(*prev);
    put_varint(out, ((d << 1) ^ (d >> 63)) as u64);
    put_varint(out, u64::from(tid.slot));
    put_varint(out, tuple.len() as u64);
    out.extend_from_slice(tuple);
    *prev = tid.page;
}

pub(crate) fn decode_header(h: &[u8], prev: &mut u32) -> Option<(Tid, usize)> {
    let mut pos = 0;
    let z = get_varint(h, &mut pos)?;
    let d = (z >> 1) as i64 ^ -((z & 1) as i64);
    let page = u32::try_from(i64::from(*prev) + d).ok()?;
    let slot = u16::try_from(get_varint(h, &mut pos)?).ok()?;
    let len = usize::try_from(get_varint(h, &mut pos)?).ok()?;
    *prev = page;
    Some((Tid::new(page, slot), len))
}

/// The spill file: append-only runs written through a staging buffer. Removes
/// its file when dropped (including during unwinding) and as soon as a write
/// fails.
pub(crate) struct SpillFile {
    pub(crate) device: Arc<dyn Device>,
    pub(crate) path: PathBuf,
    pub(crate) file: Option<FileId>,
    pub(crate) next_page: u64,
    pub(crate) stage: Option<AlignedBuf>,
    pub(crate) stage_pages: usize,
    /// Bytes in the stage not yet written.
    pub(crate) staged: usize,
    /// The run being written: first page and bytes so far.
    pub(crate) run_first: u64,
    pub(crate) run_len: u64,
    pub(crate) failed: bool,
    pub(crate) written: u64,
    pub(crate) read: u64,
}

impl SpillFile {
    /// Appends bytes to the current run.
    pub(crate) fn put(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            let cap = self.stage_pages * PAGE_SIZE;
            let stage = self
                .stage
                .get_or_insert_with(|| AlignedBuf::new(self.stage_pages));
            let n = bytes.len().min(cap - self.staged);
            stage[self.staged..self.staged + n].copy_from_slice(&bytes[..n]);
            self.staged += n;
            self.run_len += n as u64;
            bytes = &bytes[n..];
            if self.staged == cap {
                self.write_stage()?;
            }
        }
        Ok(())
    }

    /// Writes the staged bytes as whole pages (the last one padded).
    pub(crate) fn write_stage(&mut self) -> Result<()> {
        if self.staged == 0 {
            return Ok(());
        }
        let pages = self.staged.div_ceil(PAGE_SIZE);
        let file = self.open()?;
        let Some(stage) = self.stage.as_mut() else {
            return Ok(());
        };
        stage[self.staged..pages * PAGE_SIZE].fill(0);
        if let Err(e) = self
            .device
            .write(file, self.next_page, &stage[..pages * PAGE_SIZE])
        {
            return Err(self.fail(e));
        }
        self.next_page += pages as u64;
        self.written += (pages * PAGE_SIZE) as u64;
        self.staged = 0;
        Ok(())
    }

    /// Ends the current run (`None` if it is empty); the next starts on a fresh page.
    pub(crate) fn finish_run(&mut self) -> Result<Option<Run>> {
        self.write_stage()?;
        let run = (self.run_len > 0).then(|| Run {
            first_page: self.run_first,
            len: self.run_len,
            ..Default::default()
        });
        self.run_first = self.next_page;
        self.run_len = 0;
        Ok(run)
    }

    pub(crate) fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<()> {
        let file = self.file.ok_or_else(corrupt)?;
        self.device.read(file, page, buf)?;
        self.read += buf.len() as u64;
        Ok(())
    }

    pub(crate) fn usable(&self) -> Result<()> {
        if self.failed {
            return Err(AccessError::ResultCache(
                "unusable: writing its spill file failed earlier (the file was removed)".into(),
            ));
        }
        Ok(())
    }

    pub(crate) fn open(&mut self) -> Result<FileId> {
        self.usable()?;
        if let Some(f) = self.file {
            return Ok(f);
        }
        let r = (|| {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
            }
            self.device.create(&self.path, 1 << 17)
        })();
        match r {
            Ok(f) => {
                self.file = Some(f);
                Ok(f)
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Removes the file after a failed write and says why, clearly for a full disk.
    pub(crate) fn fail(&mut self, e: StorageError) -> AccessError {
        self.failed = true;
        self.remove();
        match &e {
            StorageError::Io { path, source }
                if source.kind() == std::io::ErrorKind::StorageFull
                    || source.raw_os_error() == Some(28) =>
            {
                AccessError::ResultCacheSpill(format!(
                    "no space left on device writing {}",
                    path.display()
                ))
            }
            _ => AccessError::ResultCacheSpill(e.to_string()),
        }
    }

    pub(crate) fn remove(&mut self) {
        if let Some(f) = self.file.take() {
            self.device.close(f);
        }
        for seg in 0.. {
            match std::fs::remove_file(segment_path(&self.path, seg)) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                _ => {}
            }
        }
    }
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        self.remove();
    }
}
