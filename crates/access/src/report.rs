//! What an access path did, in its own terms (I/O counters come from the device
//! and are added by [`crate::run::run_scan`]).

use serde::Serialize;

/// Smooth Scan's modes (§3.1): 0 index scan, 1 entire page probe, 2 flattening
/// (regions of 2 pages), 2+ flattening expansion (regions of more pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Mode {
    Index,
    PageProbe,
    Flattening,
    Expansion,
}

impl Mode {
    /// The mode a region of `pages` pages means.
    pub fn of_region(pages: u32) -> Mode {
        match pages {
            0 => Mode::Index,
            1 => Mode::PageProbe,
            2 => Mode::Flattening,
            _ => Mode::Expansion,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            Mode::Index => "0 (index)",
            Mode::PageProbe => "1 (entire page probe)",
            Mode::Flattening => "2 (flattening)",
            Mode::Expansion => "2+ (flattening expansion)",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModeChange {
    /// Rows produced when the change happened.
    pub at_row: u64,
    pub from: Mode,
    pub to: Mode,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CacheReport {
    pub budget_bytes: usize,
    pub peak_bytes: usize,
    pub partitions: usize,
    pub spilled_partitions: usize,
    pub spilled_tuples: u64,
    /// The spilled tuples' bytes with their 6-byte tuple ids: what a spill must
    /// at least write.
    pub spilled_bytes: u64,
    /// Runs written to the spill file (arena flushes and merges); each may pad
    /// its last page.
    pub spill_runs: u64,
    /// Merges of runs (only when the runs outnumber what the budget can read at
    /// once; each writes and reads its runs' data once more).
    pub spill_merges: u64,
    /// Times the current partition's buffer was compacted (the bytes of the
    /// tuples taken from it freed).
    pub compactions: u64,
    pub spill_bytes_written: u64,
    pub spill_bytes_read: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ScanReport {
    pub path: String,
    pub rows: u64,
    /// Index entries read.
    pub index_entries: u64,
    /// Heap pages whose tuples the operator examined (each at most once for full,
    /// sort and smooth scans; index scans count every fetch).
    pub heap_pages: u64,
    /// Heap pages read more than once (counted by Smooth Scan, whose Page-ID
    /// cache is there to keep it at 0).
    pub reread_pages: u64,
    pub mode_changes: Vec<ModeChange>,
    /// Region size (pages) after each change, with the rows produced by then.
    pub regions: Vec<(u64, u32)>,
    /// Bytes of the Page-ID cache bitmap.
    pub page_cache_bytes: usize,
    /// Pages Smooth Scan read in regions placed in page order (a sweep) rather
    /// than at an index entry's page.
    pub swept_pages: u64,
    /// Read-ahead streams Smooth Scan started: one per region it streamed at
    /// an index entry, one per sweep (a sweep's regions share its stream).
    pub read_ahead_streams: u64,
    pub result_cache: Option<CacheReport>,
    /// What an external merge sort or partitioned sort on top of the path did.
    pub sort: Option<SortReport>,
    pub notes: Vec<String>,
}

/// What a sort with a memory budget did (external merge sort or partitioned
/// sort; `crate::external_sort`, `crate::partitioned_sort`). Page and request
/// counts are the sort's own temporary-file I/O; the device counters include
/// them too.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SortReport {
    /// `external merge sort` or `partitioned sort`.
    pub algorithm: String,
    pub budget_bytes: usize,
    /// Most bytes of records and I/O buffers held at once; never above the budget.
    pub peak_bytes: usize,
    /// Records sorted and their bytes as written to temporary files (header +
    /// index entry + tuple).
    pub records: u64,
    pub record_bytes: u64,
    /// ES: initial runs, merge fan-in, merge passes done (the last one streams
    /// the output), and the passes the formula `ceil(log_fan_in(runs))` predicts.
    pub runs: u64,
    pub fan_in: u64,
    pub merge_passes: u64,
    pub theory_passes: u64,
    /// PS: partitions, boundaries that fell between entries of one key (split by
    /// tuple id), and partitions (or whole sorts) that did not fit and were
    /// sorted by an external merge sort instead.
    pub partitions: u64,
    pub partitions_split: u64,
    pub fallbacks: u64,
    /// Temporary-file I/O of the sort.
    pub pages_written: u64,
    pub write_requests: u64,
    pub pages_read: u64,
    pub read_requests: u64,
    /// Record bytes written to and read back from temporary files.
    pub record_bytes_written: u64,
    pub record_bytes_read: u64,
}
