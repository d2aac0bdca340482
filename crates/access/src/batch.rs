//! Batches of tuples passed from an access path to its consumer: the bytes of up
//! to [`BATCH_ROWS`] tuples back to back, with their tuple ids. One allocation
//! serves a whole batch, so a scan producing millions of rows does not allocate
//! per row.

use strata_storage::row::Tid;

/// Rows an access path puts in one batch.
pub const BATCH_ROWS: usize = 1024;

#[derive(Default)]
pub struct TupleBatch {
    data: Vec<u8>,
    ends: Vec<u32>,
    tids: Vec<Tid>,
}

impl TupleBatch {
    pub fn new() -> TupleBatch {
        TupleBatch::default()
    }
    pub fn clear(&mut self) {
        self.data.clear();
        self.ends.clear();
        self.tids.clear();
    }
    #[inline]
    pub fn push(&mut self, tid: Tid, tuple: &[u8]) {
        self.data.extend_from_slice(tuple);
        self.ends.push(self.data.len() as u32);
        self.tids.push(tid);
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.tids.len()
    }
    pub fn is_empty(&self) -> bool {
        self.tids.is_empty()
    }
    pub fn is_full(&self) -> bool {
        self.tids.len() >= BATCH_ROWS
    }
    /// Tuple `i`: its id and bytes.
    #[inline]
    pub fn get(&self, i: usize) -> (Tid, &[u8]) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        (self.tids[i], &self.data[start..self.ends[i] as usize])
    }
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (Tid, &[u8])> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        self.tids
            .iter()
            .zip(starts.zip(&self.ends))
            .map(|(&tid, (start, &end))| (tid, &self.data[start as usize..end as usize]))
    }
}
