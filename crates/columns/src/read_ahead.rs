//! Reading a scan's units with their bytes fetched ahead, on worker threads.
//!
//! A unit's read is two steps: fetch its byte ranges (the I/O), then decode
//! them (the CPU). Done one unit after the other, a scan waits for the
//! device at every unit, and a lookup of 34 rows, 34 units of one row each,
//! waits for its requests one at a time although the device could serve
//! many at once. [`ColumnPart::read_units`] fetches the units ahead of the
//! one being decoded on a few worker threads, so that requests overlap each
//! other and the decoding, and hands the batches out in unit order, exactly
//! as reading the units in turn would. A point read's unit
//! ([`crate::points`]) is decoded on its fetch thread too, as soon as its
//! bytes are in: its slices' values, so that a lookup's decoding overlaps
//! its other rows' reads and uses both cores, and the reader only gathers
//! the rows.
//!
//! It reads ahead only where that is what the time is: on the real device
//! (on a modeled one a read's cost is charged in order and CPU is free, so
//! the modeled figures stay those of reads in turn), and only when some
//! unit's bytes are not in the cache already. How far ahead is bounded in
//! bytes ([`AHEAD_BYTES`]), so a wide scan holds a few units, not the table.

use std::collections::HashMap;
use std::sync::mpsc;

use arrow::record_batch::RecordBatch;
use parking_lot::Mutex;

use strata_storage::StorageError;

use crate::error::{ColumnsError, Result};
use crate::points::PointValues;
use crate::read::{ColumnPart, Fetched, Unit};

/// What a fetch thread hands over for a unit.
enum Ready {
    /// Its bytes, to decode.
    Bytes(Fetched),
    /// A point read's values, decoded on the fetch thread: only its rows
    /// are left to gather.
    Points(PointValues),
}

/// At most this many fetches run at once for one reader of units.
pub const WORKERS: usize = 8;

/// The bytes of the units fetched ahead of the one decoded, at most (and at
/// least one unit, however large).
pub const AHEAD_BYTES: u64 = 32 << 20;

/// How a read of units fetches ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ahead {
    /// Worker threads fetching (0: the units are read in turn).
    pub workers: usize,
    /// Units fetched ahead of the one being decoded, at most.
    pub units: usize,
}

impl ColumnPart {
    /// How a read of `units` of `columns` would fetch ahead: not at all on
    /// a modeled device or when the cache holds every unit's bytes; else
    /// up to [`WORKERS`] fetches at once, over as many units as
    /// [`AHEAD_BYTES`] holds (by the average unit's bytes).
    pub fn ahead(&self, units: &[Unit], columns: &[usize]) -> Ahead {
        let none = Ahead {
            workers: 0,
            units: 0,
        };
        if units.len() < 2 || self.modeled() {
            return none;
        }
        let uncached = units
            .iter()
            .filter(|u| !self.is_cached(u, columns) && !self.is_decoded(u, columns))
            .count();
        if uncached == 0 {
            return none;
        }
        let bytes: u64 = units.iter().map(|u| self.unit_bytes(u, columns)).sum();
        let average = (bytes / units.len() as u64).max(1);
        let fit = (AHEAD_BYTES / average).max(1) as usize;
        let ahead = fit.min(units.len());
        Ahead {
            workers: WORKERS.min(ahead).min(uncached),
            units: ahead,
        }
    }

    /// Reads `units` of table columns `columns` in order (each unit's
    /// batches as [`ColumnPart::read`] gives them), handing each batch to
    /// `f`; `f` returning false stops the read. The units' bytes are
    /// fetched ahead as [`ColumnPart::ahead`] says; the first error, of a
    /// fetch or of `f`, ends the read and is returned.
    pub fn read_units(
        &self,
        units: &[Unit],
        columns: &[usize],
        mut f: impl FnMut(RecordBatch) -> Result<bool>,
    ) -> Result<()> {
        let ahead = self.ahead(units, columns);
        if ahead.workers == 0 {
            for u in units {
                let mut go = true;
                self.read(u, columns, |b| {
                    go = f(b)?;
                    Ok(go)
                })?;
                if !go {
                    break;
                }
            }
            return Ok(());
        }
        let (work_tx, work_rx) = mpsc::channel::<usize>();
        let work_rx = Mutex::new(work_rx);
        std::thread::scope(|s| {
            // Owned by this closure, so that its end (however the read
            // ends) drops it before the workers are joined: they then stop.
            let work_tx = work_tx;
            let (done_tx, done_rx) = mpsc::channel::<(usize, Result<Ready>)>();
            for w in 0..ahead.workers {
                let (work_rx, done_tx) = (&work_rx, done_tx.clone());
                let spawned = std::thread::Builder::new()
                    .name(format!("columns fetch {w}"))
                    .spawn_scoped(s, move || {
                        // The sender gone (the read ended) ends the worker.
                        while let Ok(i) = { work_rx.lock().recv() } {
                            let r = self.fetch_ahead(&units[i], columns);
                            if done_tx.send((i, r)).is_err() {
                                break;
                            }
                        }
                    });
                if let Err(e) = spawned {
                    let file = self.file_name(units[0].file);
                    return Err(StorageError::io(file, e).into());
                }
            }
            drop(done_tx);
            let mut asked = 0;
            let mut ask = |upto: usize| -> Result<()> {
                while asked < upto.min(units.len()) {
                    work_tx.send(asked).map_err(|_| self.fetchers_gone(units))?;
                    asked += 1;
                }
                Ok(())
            };
            ask(ahead.units)?;
            let mut ready: HashMap<usize, Result<Ready>> = HashMap::new();
            for (i, u) in units.iter().enumerate() {
                let fetched = loop {
                    if let Some(r) = ready.remove(&i) {
                        break r;
                    }
                    let (j, r) = done_rx.recv().map_err(|_| self.fetchers_gone(units))?;
                    ready.insert(j, r);
                };
                ask(i + 1 + ahead.units)?;
                let mut go = true;
                let each = |b| {
                    go = f(b)?;
                    Ok(go)
                };
                match fetched? {
                    Ready::Bytes(bytes) => self.decode(u, columns, bytes, each)?,
                    Ready::Points(values) => self.gather_points(u, values, each)?,
                }
                if !go {
                    break;
                }
            }
            Ok(())
        })
    }

    /// A fetch thread's work on `unit`: its bytes, and for a point read its
    /// values decoded from them (or found kept, with nothing read).
    fn fetch_ahead(&self, unit: &Unit, columns: &[usize]) -> Result<Ready> {
        match self.point_cache(unit) {
            Some(cache) => {
                let fetched = if self.is_decoded(unit, columns) {
                    None
                } else {
                    Some(self.fetch(unit, columns)?)
                };
                Ok(Ready::Points(
                    self.point_values(cache, unit, columns, fetched)?,
                ))
            }
            None => Ok(Ready::Bytes(self.fetch(unit, columns)?)),
        }
    }

    /// The fetch threads stopped without answering (they cannot, short of
    /// a panic).
    fn fetchers_gone(&self, units: &[Unit]) -> ColumnsError {
        let e = std::io::Error::other("the column fetch threads ended before the read did");
        StorageError::io(self.file_name(units[0].file), e).into()
    }
}
