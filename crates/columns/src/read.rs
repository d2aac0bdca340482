//! Reading a columnar table's column part: only the projected columns, only
//! the row groups and pages the scan's comparisons can be true on.
//!
//! A scan opens the part ([`ColumnPart::open`]: each file's footer and page
//! index, checked against the catalog), plans its units ([`ColumnPart::plan`]:
//! a row group with the rows of its pages to read) and reads each unit's
//! batches ([`ColumnPart::read`]), on as many threads as it splits the units
//! among. Every read is counted ([`ReadCounters`]): bytes and requests.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use bytes::{Buf, Bytes};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::file::metadata::PageIndexPolicy;
use parquet::file::metadata::{ParquetColumnIndex, ParquetMetaData};
use parquet::file::reader::{ChunkReader, Length};
use strata_access::PageCosts;
use strata_access::predicate::Comparison;
use strata_access::smooth::page_order::ReadCosts;
use strata_storage::catalog::ColumnsDef;
use strata_storage::page::PAGE_SIZE;
use strata_storage::row::Schema;
use strata_storage::{Database, Table};

use crate::chunk_cache::{ChunkCache, Key};
use crate::convert::arrow_schema;
use crate::error::{ColumnsError, Result};
use crate::file::{Charge, CountedFile, PAGE_ROWS, ReadCounters};
use crate::footer::{Footer, FooterCache};
use crate::prune;

/// Rows per batch a scan hands out.
pub const BATCH_ROWS: usize = 8_192;

/// One open column file.
pub(crate) struct OpenFile {
    /// Its name in the catalog (the chunk cache's key).
    pub(crate) name: Arc<str>,
    pub(crate) path: PathBuf,
    file: CountedFile,
    pub(crate) meta: ArrowReaderMetadata,
    /// Its footer as read: `meta`, and its column index once read.
    footer: Footer,
    /// `meta` reading strings as views, when the part gives views
    /// ([`ColumnPart::with_string_views`]).
    views: Option<ArrowReaderMetadata>,
}

impl OpenFile {
    /// The metadata a scan decodes with: strings as views or not.
    pub(crate) fn read_meta(&self) -> &ArrowReaderMetadata {
        self.views.as_ref().unwrap_or(&self.meta)
    }
}

/// A columnar table's column part, open for reading.
pub struct ColumnPart {
    pub(crate) files: Vec<OpenFile>,
    schema: Schema,
    arrow: SchemaRef,
    counters: Arc<ReadCounters>,
    /// The database's cache of column pages, if any.
    cache: Option<Arc<ChunkCache>>,
    /// Positions of the rows DELETE and UPDATE took away (the table's
    /// delete set, as the statement's snapshot sees it), ascending.
    deleted: Arc<Vec<u64>>,
    /// What a read costs on the database's device: a request, and a page
    /// of it. Reads of one unit closer than [`ColumnPart::gap`] are one
    /// request (reading the gap costs less than another request).
    costs: ReadCosts,
    /// Whether the device is modeled (its time charges no CPU).
    modeled: bool,
    /// Whether point units are read as point reads ([`crate::points`]).
    point_reads: bool,
}

/// A unit is a point read when the blocks of [`PAGE_ROWS`] rows its rows
/// lie in hold at least this many times its rows: most of what decoding
/// those pages yields would be thrown away.
pub const POINT_SPREAD: usize = 8;

/// A row group to read, and which of its rows (`None`: all).
#[derive(Clone, Debug)]
pub struct Unit {
    pub file: usize,
    pub row_group: usize,
    pub selection: Option<RowSelection>,
    /// Rows the unit reads (those of its selected pages, less the deleted).
    pub rows: u64,
    /// The position in the part of the row group's first row, and the row
    /// group's rows.
    pub first: u64,
    pub group_rows: u64,
}

impl Unit {
    /// Whether the unit is a point read ([`crate::points`]): it selects rows, under
    /// 1/[`POINT_SPREAD`] of the rows of the blocks they lie in.
    pub fn is_point(&self) -> bool {
        let Some(sel) = &self.selection else {
            return false;
        };
        let (mut rows, mut blocks, mut at) = (0usize, 0usize, 0usize);
        let mut last: Option<usize> = None;
        for s in sel.iter() {
            if !s.skip && s.row_count > 0 {
                rows += s.row_count;
                let (a, b) = (at / PAGE_ROWS, (at + s.row_count - 1) / PAGE_ROWS);
                let from = match last {
                    Some(l) if l >= a => l + 1,
                    _ => a,
                };
                if b >= from {
                    blocks += b - from + 1;
                }
                last = Some(b);
            }
            at += s.row_count;
        }
        rows > 0 && rows * POINT_SPREAD <= blocks * PAGE_ROWS
    }

    /// The positions in the part of the rows the unit reads, in the order
    /// its batches give them.
    pub fn positions(&self) -> Vec<u64> {
        match &self.selection {
            None => (self.first..self.first + self.group_rows).collect(),
            Some(sel) => {
                let mut out = Vec::with_capacity(self.rows as usize);
                let mut at = self.first;
                for s in sel.iter() {
                    if !s.skip {
                        out.extend(at..at + s.row_count as u64);
                    }
                    at += s.row_count as u64;
                }
                out
            }
        }
    }
}

/// What planning kept of the part.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub units: Vec<Unit>,
    pub row_groups_total: usize,
    pub rows_total: u64,
}

impl Plan {
    /// Rows the plan reads.
    pub fn rows(&self) -> u64 {
        self.units.iter().map(|u| u.rows).sum()
    }
}

impl ColumnPart {
    /// Opens the column part of `table` of `db` (`None` for a row table).
    pub fn of(db: &Database, table: &Table) -> Result<Option<ColumnPart>> {
        let Some(mut part) = ColumnPart::of_every_row(db, table)? else {
            return Ok(None);
        };
        part.deleted = table.deleted_column_rows()?;
        Ok(Some(part))
    }

    /// [`ColumnPart::of`] with the rows the delete set took away still in
    /// it: it reads only what never changes (the files and the indexes'
    /// trees over them), so a reader outside a statement snapshot may use
    /// it while transactions commit; whoever uses its rows leaves out the
    /// deleted ones later.
    pub fn of_every_row(db: &Database, table: &Table) -> Result<Option<ColumnPart>> {
        match table.columns() {
            None => Ok(None),
            Some(def) => {
                let footers = db.extension(FooterCache::default);
                let mut part = ColumnPart::open_with(
                    db.dir(),
                    def,
                    table.schema(),
                    db.direct_io(),
                    Some(&footers),
                    Some(db.device()),
                )?;
                let modeled = PageCosts::modeled(db);
                part.modeled = modeled.is_some();
                part.costs = ReadCosts::new(&modeled.unwrap_or_default(), 1);
                let budget = (db.pool().capacity() * strata_storage::page::PAGE_SIZE) as u64;
                part.cache = Some(db.extension(|| ChunkCache::new(budget)));
                Ok(Some(part))
            }
        }
    }

    /// Opens the files of `def` (in the database at `dir`), of a table of
    /// `schema`, checking each against the catalog; with `O_DIRECT` when
    /// `direct`.
    pub fn open(dir: &Path, def: &ColumnsDef, schema: &Schema, direct: bool) -> Result<ColumnPart> {
        ColumnPart::open_with(dir, def, schema, direct, None, None)
    }

    /// [`ColumnPart::open`], taking each file's footer and page index from
    /// `footers` when it has them (and keeping them there).
    fn open_with(
        dir: &Path,
        def: &ColumnsDef,
        schema: &Schema,
        direct: bool,
        footers: Option<&FooterCache>,
        device: Option<&Arc<dyn strata_storage::device::Device>>,
    ) -> Result<ColumnPart> {
        let counters = Arc::new(ReadCounters::default());
        let arrow = arrow_schema(schema);
        let mut files = Vec::with_capacity(def.files.len());
        for c in &def.files {
            let path = dir.join(&c.file);
            let mut file = CountedFile::open(dir, c, direct, counters.clone(), device)?;
            if let Some(d) = device {
                file = file.charging(Charge::new(d.clone(), &c.file));
            }
            let footer = match footers.and_then(|f| f.get(&c.file)) {
                Some(m) => m,
                None => {
                    let m = Footer::read(&file, &path, c)?;
                    if let Some(f) = footers {
                        f.put(&c.file, m.clone());
                    }
                    m
                }
            };
            let meta = footer.meta.clone();
            let rows = meta.metadata().file_metadata().num_rows();
            if rows as u64 != c.rows {
                return Err(ColumnsError::Corrupt {
                    file: path,
                    reason: format!("{rows} rows where the catalog committed {}", c.rows),
                });
            }
            let names: Vec<&str> = meta
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect();
            let want: Vec<&str> = schema.columns.iter().map(|c| c.name.as_str()).collect();
            if names != want || meta.schema().fields().len() != arrow.fields().len() {
                return Err(ColumnsError::Corrupt {
                    file: path,
                    reason: format!(
                        "columns ({}) are not the table's ({})",
                        names.join(", "),
                        want.join(", ")
                    ),
                });
            }
            files.push(OpenFile {
                name: Arc::from(c.file.as_str()),
                path,
                file,
                meta,
                footer,
                views: None,
            });
        }
        Ok(ColumnPart {
            files,
            schema: schema.clone(),
            arrow,
            counters,
            cache: None,
            deleted: Arc::default(),
            costs: ReadCosts::new(&PageCosts::default(), 1),
            modeled: false,
            point_reads: false,
        })
    }

    /// Rows of the part its delete set took away.
    pub fn deleted_rows(&self) -> u64 {
        self.deleted.len() as u64
    }

    /// The positions of those rows, ascending.
    pub fn deleted(&self) -> &[u64] {
        &self.deleted
    }

    /// The table's schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Bytes of the column chunks and pages `plan` reads of table columns
    /// `columns` (what its units' reads fetch, before any cache).
    pub fn plan_bytes(&self, plan: &Plan, columns: &[usize]) -> u64 {
        plan.units.iter().map(|u| self.unit_bytes(u, columns)).sum()
    }

    /// The average bytes of a range (a page, or a dictionary) that `plan`
    /// reads of table column `column`: what a row of a block costs in that
    /// column when it is the only one read there.
    pub fn average_page_bytes(&self, plan: &Plan, column: usize) -> f64 {
        let (mut bytes, mut ranges) = (0u64, 0u64);
        for u in &plan.units {
            let meta = self.files[u.file].meta.metadata();
            for (_, len) in needed_ranges(meta, u, &[column]) {
                bytes += len;
                ranges += 1;
            }
        }
        bytes as f64 / ranges.max(1) as f64
    }

    /// Bytes of `unit`'s ranges of table columns `columns`, before any cache.
    pub fn unit_bytes(&self, unit: &Unit, columns: &[usize]) -> u64 {
        let meta = self.files[unit.file].meta.metadata();
        needed_ranges(meta, unit, columns)
            .iter()
            .map(|(_, len)| len)
            .sum()
    }

    /// The units that read exactly the rows at `positions` (ascending and
    /// live: an index lookup's that left the deleted ones out): no page is
    /// pruned and no deleted row subtracted first, which a plan of the whole
    /// part would do for every row group only to narrow it to these rows.
    pub fn plan_positions(&self, positions: &[u64]) -> Plan {
        ColumnPart::plan_at(self.plan_over(&[], &[], false), positions)
    }

    /// `plan` (a [`ColumnPart::plan`]) narrowed to the rows at `positions`
    /// (ascending, live; an index lookup's, `index.rs`): each unit selects
    /// only them, so its read fetches only the pages holding them.
    pub fn plan_at(mut plan: Plan, positions: &[u64]) -> Plan {
        plan.units.retain_mut(|u| {
            let from = positions.partition_point(|&p| p < u.first);
            let to = positions.partition_point(|&p| p < u.first + u.group_rows);
            if from == to {
                return false;
            }
            let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
            for &p in &positions[from..to] {
                let r = (p - u.first) as usize;
                match runs.last_mut() {
                    Some(last) if last.end == r => last.end = r + 1,
                    _ => runs.push(r..r + 1),
                }
            }
            let at = RowSelection::from_consecutive_ranges(runs.into_iter(), u.group_rows as usize);
            let sel = match u.selection.take() {
                Some(s) => s.intersection(&at),
                None => at,
            };
            u.rows = sel.row_count() as u64;
            u.selection = Some(sel);
            u.rows > 0
        });
        plan
    }

    /// The part, reading its point units ([`Unit::is_point`]) as point
    /// reads: each slice of a page decoded once and kept
    /// ([`crate::points`]). For a lookup's rows, a batch at most, which
    /// the same lookups read again; a scan's units, however sparse, are
    /// decoded in one pass: a slice decoded for each of its many rows
    /// costs more than the pass (a sort scan of 0.1% of 10^6 rows took
    /// twice as long).
    pub fn with_point_reads(mut self) -> ColumnPart {
        self.point_reads = true;
        self
    }

    /// The part, giving its string columns as views (`Utf8View`,
    /// [`crate::convert::string_views`]): the Parquet reader builds a view
    /// of each value over the page it decoded rather than copying the
    /// value into an array of its own. The page cache keeps what it keeps
    /// as `Utf8` either way.
    pub fn with_string_views(mut self) -> Result<ColumnPart> {
        for of in &mut self.files {
            let schema = crate::convert::string_views(of.meta.schema());
            let options = ArrowReaderOptions::new()
                .with_page_index_policy(PageIndexPolicy::Optional)
                .with_schema(schema);
            of.views = Some(
                ArrowReaderMetadata::try_new(of.meta.metadata().clone(), options)
                    .map_err(|e| ColumnsError::parquet(&of.path, e))?,
            );
        }
        Ok(self)
    }

    /// Whether it gives strings as views.
    pub fn string_views(&self) -> bool {
        self.files.iter().any(|f| f.views.is_some())
    }

    /// Whether it reads point units as point reads.
    pub fn point_reads(&self) -> bool {
        self.point_reads
    }

    /// The cache `unit`'s slices are kept in, if the part reads it as a
    /// point read.
    pub(crate) fn point_cache(&self, unit: &Unit) -> Option<&ChunkCache> {
        let cache = self.cache.as_deref()?;
        (self.point_reads && unit.is_point()).then_some(cache)
    }

    /// What its reads cost on the database's device.
    pub fn costs(&self) -> &ReadCosts {
        &self.costs
    }

    /// Whether the database's device is modeled: its costs are the time
    /// that counts, and CPU is free.
    pub fn modeled(&self) -> bool {
        self.modeled
    }

    /// Where each row group starts: (file, row group, first position,
    /// rows), in position order.
    pub fn row_groups(&self) -> Vec<(usize, usize, u64, u64)> {
        let mut out = Vec::new();
        let mut at = 0u64;
        for (f, of) in self.files.iter().enumerate() {
            let meta = of.meta.metadata();
            for g in 0..meta.num_row_groups() {
                let rows = meta.row_group(g).num_rows() as u64;
                out.push((f, g, at, rows));
                at += rows;
            }
        }
        out
    }

    /// The gap between two byte ranges of a file below which they are read
    /// as one request: where reading the gap costs less than a request
    /// does on the device (about 72 KiB on local flash, a megabyte on a
    /// disk, whose seek costs what a megabyte of transfer does).
    pub fn gap(&self) -> u64 {
        let pages = (self.costs.request_ms / self.costs.sequential_ms.max(1e-9)).floor();
        let local = (pages.min(1e6) as u64).max(1) * PAGE_SIZE as u64;
        // A file on the cold tier: what a request costs there.
        let remote = self.files.iter().filter_map(|f| f.file.request_bytes());
        remote.fold(local, u64::max)
    }

    /// The requests (offset, bytes) reading `unit`'s columns `columns` takes
    /// with nothing cached: the ranges its decoding needs, those closer
    /// than [`ColumnPart::gap`] merged.
    pub fn requests(&self, unit: &Unit, columns: &[usize]) -> Vec<(u64, u64)> {
        let mut wanted = needed_ranges(self.files[unit.file].meta.metadata(), unit, columns);
        wanted.sort_unstable();
        wanted.dedup();
        merge_ranges(&wanted, self.gap())
    }

    /// What reading `units` of columns `columns` costs on the device, in
    /// (modeled) milliseconds, with nothing cached: each request's fixed
    /// cost and its pages.
    pub fn cost_ms(&self, units: &[Unit], columns: &[usize]) -> f64 {
        let page = PAGE_SIZE as u64;
        units
            .iter()
            .flat_map(|u| self.requests(u, columns))
            .map(|(_, len)| {
                self.costs.request_ms + len.div_ceil(page) as f64 * self.costs.sequential_ms
            })
            .sum()
    }

    /// The bytes and requests its reads took so far.
    pub fn counters(&self) -> &Arc<ReadCounters> {
        &self.counters
    }

    /// Bytes of the part's files.
    pub fn bytes(&self) -> u64 {
        self.files
            .iter()
            .map(|f| parquet::file::reader::Length::len(&f.file))
            .sum()
    }

    /// The units a scan whose rows must pass `conjuncts` reads: the live
    /// rows of the row groups and pages their comparisons can be true on.
    ///
    /// A plan that prunes by page reads the files' column indexes the first
    /// time (one request per file, [`Footer::page_stats`]): hence the error.
    pub fn plan(&self, conjuncts: &[Comparison]) -> Result<Plan> {
        let tests = prune::tests(&self.schema, &self.arrow, conjuncts);
        let mut stats = Vec::with_capacity(self.files.len());
        if !tests.is_empty() {
            for of in &self.files {
                stats.push(of.footer.page_stats(&of.file, &of.path)?);
            }
        }
        Ok(self.plan_over(&tests, &stats, true))
    }

    /// The units a scan of every live row reads.
    pub fn plan_all(&self) -> Plan {
        self.plan_over(&[], &[], true)
    }

    /// The units of the rows passing `tests` (by row group, and by page
    /// where `stats` has the file's column index), with the deleted rows too
    /// unless `live_only`.
    fn plan_over(
        &self,
        tests: &[prune::Test],
        stats: &[Option<&ParquetColumnIndex>],
        live_only: bool,
    ) -> Plan {
        let mut plan = Plan::default();
        let mut file_first = 0u64;
        for (f, of) in self.files.iter().enumerate() {
            let meta = of.meta.metadata();
            plan.row_groups_total += meta.num_row_groups();
            plan.rows_total += meta.file_metadata().num_rows() as u64;
            let mut firsts = Vec::with_capacity(meta.num_row_groups());
            let mut at = file_first;
            for g in 0..meta.num_row_groups() {
                firsts.push(at);
                at += meta.row_group(g).num_rows() as u64;
            }
            for g in prune::row_groups(meta, &self.arrow, tests) {
                let group_rows = meta.row_group(g).num_rows() as u64;
                let stats = stats.get(f).copied().flatten();
                let mut selection = prune::pages(meta, stats, &self.arrow, tests, g);
                if live_only {
                    selection = self.without_deleted(selection, firsts[g], group_rows);
                }
                let rows = match &selection {
                    Some(s) => s.row_count() as u64,
                    None => group_rows,
                };
                if rows > 0 {
                    plan.units.push(Unit {
                        file: f,
                        row_group: g,
                        selection,
                        rows,
                        first: firsts[g],
                        group_rows,
                    });
                }
            }
            file_first = at;
        }
        plan
    }

    /// `selection` (of the row group whose first row is at `first`, of
    /// `rows` rows; `None`: all) without the deleted rows.
    fn without_deleted(
        &self,
        selection: Option<RowSelection>,
        first: u64,
        rows: u64,
    ) -> Option<RowSelection> {
        let from = self.deleted.partition_point(|&p| p < first);
        let to = self.deleted.partition_point(|&p| p < first + rows);
        if from == to {
            return selection;
        }
        let mut live = Vec::new();
        let mut at = 0usize;
        for &p in &self.deleted[from..to] {
            let r = (p - first) as usize;
            if r > at {
                live.push(at..r);
            }
            at = r + 1;
        }
        if at < rows as usize {
            live.push(at..rows as usize);
        }
        let live = RowSelection::from_consecutive_ranges(live.into_iter(), rows as usize);
        Some(match selection {
            Some(s) => s.intersection(&live),
            None => live,
        })
    }

    /// Reads `unit`'s rows of table columns `columns` (in table order in
    /// each batch: the reader gives a file's columns in its order), handing
    /// each batch to `f`; `f` returning false stops the read.
    pub fn read(
        &self,
        unit: &Unit,
        columns: &[usize],
        f: impl FnMut(RecordBatch) -> Result<bool>,
    ) -> Result<()> {
        if let Some(cache) = self.point_cache(unit) {
            // Fetched only if some slice's values are not kept.
            return self.decode_points(cache, unit, columns, None, f);
        }
        let fetched = self.fetch(unit, columns)?;
        self.decode(unit, columns, fetched, f)
    }

    /// [`ColumnPart::read`] of bytes fetched already: `ranges` (offset,
    /// bytes) of the unit's file, which should cover what
    /// [`ColumnPart::requests`] names (anything else is read from the file).
    /// MJoin's column objects arrive so.
    ///
    /// No ranges: the unit is read as [`ColumnPart::read`] reads it (from
    /// the cache, when [`ColumnPart::is_cached`] said so). Otherwise what
    /// the unit needs of them goes into the cache, as a read's would.
    pub fn read_fetched(
        &self,
        unit: &Unit,
        columns: &[usize],
        mut ranges: Vec<(u64, Bytes)>,
        f: impl FnMut(RecordBatch) -> Result<bool>,
    ) -> Result<()> {
        if ranges.is_empty() {
            return self.read(unit, columns, f);
        }
        ranges.sort_unstable_by_key(|(s, _)| *s);
        let of = &self.files[unit.file];
        let fetched = Fetched {
            file: of.file.clone(),
            ranges: Arc::new(ranges),
        };
        if let Some(c) = &self.cache {
            for (start, len) in needed_ranges(of.meta.metadata(), unit, columns) {
                if let Some((s, b)) = fetched.range_at(start)
                    && start + len <= s + b.len() as u64
                {
                    let at = (start - s) as usize;
                    let key = Key {
                        file: of.name.clone(),
                        start,
                        len,
                    };
                    c.put(key, b.slice(at..at + len as usize));
                }
            }
        }
        self.decode(unit, columns, fetched, f)
    }

    /// Whether the cache holds every range reading `unit`'s `columns`
    /// needs: its read then asks the device for nothing.
    pub fn is_cached(&self, unit: &Unit, columns: &[usize]) -> bool {
        let Some(c) = &self.cache else {
            return false;
        };
        let of = &self.files[unit.file];
        needed_ranges(of.meta.metadata(), unit, columns)
            .into_iter()
            .all(|(start, len)| {
                c.contains(&Key {
                    file: of.name.clone(),
                    start,
                    len,
                })
            })
    }

    /// The catalog's name of file `i` of the part (a unit's `file`).
    pub fn file_name(&self, i: usize) -> &str {
        &self.files[i].name
    }

    /// Fetches what reading `unit`'s `columns` needs: from the cache what
    /// it holds, the rest read from the file (and kept in the cache).
    pub(crate) fn fetch(&self, unit: &Unit, columns: &[usize]) -> Result<Fetched> {
        let of = &self.files[unit.file];
        Fetched::fetch(of, self.cache.as_deref(), unit, columns, self.gap())
            .map_err(|e| ColumnsError::parquet(&of.path, e))
    }

    /// Decodes `unit`'s rows of `columns` from `fetched`.
    pub(crate) fn decode(
        &self,
        unit: &Unit,
        columns: &[usize],
        fetched: Fetched,
        mut f: impl FnMut(RecordBatch) -> Result<bool>,
    ) -> Result<()> {
        let of = &self.files[unit.file];
        if let Some(cache) = self.point_cache(unit) {
            return self.decode_points(cache, unit, columns, Some(fetched), f);
        }
        let mask = ProjectionMask::roots(of.meta.parquet_schema(), columns.iter().copied());
        let mut b =
            ParquetRecordBatchReaderBuilder::new_with_metadata(fetched, of.read_meta().clone())
                .with_projection(mask)
                .with_row_groups(vec![unit.row_group])
                .with_batch_size(BATCH_ROWS);
        if let Some(s) = &unit.selection {
            b = b.with_row_selection(s.clone());
        }
        let reader = b.build().map_err(|e| ColumnsError::parquet(&of.path, e))?;
        for batch in reader {
            let batch = batch.map_err(|e| ColumnsError::Corrupt {
                file: of.path.clone(),
                reason: e.to_string(),
            })?;
            if !f(batch)? {
                break;
            }
        }
        Ok(())
    }

    /// Decodes every column of every row group, the deleted rows too (what
    /// `strata check` runs): the rows, which must be the catalog's count
    /// (checked when the part was opened, per file, from the footers).
    pub fn verify(&self) -> Result<u64> {
        let all: Vec<usize> = (0..self.schema.len()).collect();
        let mut rows = 0u64;
        for u in &self.plan_over(&[], &[], false).units {
            self.read(u, &all, |b| {
                rows += b.num_rows() as u64;
                Ok(true)
            })?;
        }
        let want: u64 = self
            .files
            .iter()
            .map(|f| f.meta.metadata().file_metadata().num_rows() as u64)
            .sum();
        if rows != want {
            return Err(ColumnsError::Corrupt {
                file: self
                    .files
                    .first()
                    .map(|f| f.path.clone())
                    .unwrap_or_default(),
                reason: format!("{rows} rows decoded where the footers say {want}"),
            });
        }
        Ok(rows)
    }

    /// Reads every live row of columns `columns`, unit after unit.
    pub fn read_all(
        &self,
        columns: &[usize],
        f: impl FnMut(RecordBatch) -> Result<bool>,
    ) -> Result<()> {
        self.read_units(&self.plan_all().units, columns, f)
    }
}

/// `ranges` (ascending by offset) with those closer than `gap` merged.
fn merge_ranges(ranges: &[(u64, u64)], gap: u64) -> Vec<(u64, u64)> {
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for &(start, len) in ranges {
        match merged.last_mut() {
            Some((s, l)) if start <= *s + *l + gap => {
                *l = (*l).max(start + len - *s);
            }
            _ => merged.push((start, len)),
        }
    }
    merged
}

/// The bytes a unit's decoding needs — its projected column chunks, or of
/// those only the dictionary and the pages holding selected rows — read
/// before decoding, adjacent ranges in one request: the Parquet reader asks
/// page by page, and under `O_DIRECT` each of its asks would be a request
/// of its own. What it asks beyond them is read from the file.
#[derive(Clone)]
pub(crate) struct Fetched {
    file: CountedFile,
    /// (offset, bytes), by offset.
    ranges: Arc<Vec<(u64, Bytes)>>,
}

impl Fetched {
    /// Fetches what `unit` needs of `columns` of file `of`: from `cache`
    /// what it holds, the rest read (adjacent ranges in one request) and
    /// kept there.
    fn fetch(
        of: &OpenFile,
        cache: Option<&ChunkCache>,
        unit: &Unit,
        columns: &[usize],
        gap: u64,
    ) -> parquet::errors::Result<Fetched> {
        let mut wanted = needed_ranges(of.meta.metadata(), unit, columns);
        wanted.sort_unstable();
        wanted.dedup();
        let key = |start: u64, len: u64| Key {
            file: of.name.clone(),
            start,
            len,
        };
        let mut ranges: Vec<(u64, Bytes)> = Vec::with_capacity(wanted.len());
        let mut missing: Vec<(u64, u64)> = Vec::new();
        for &(start, len) in &wanted {
            match cache.and_then(|c| c.get(&key(start, len))) {
                Some(b) => ranges.push((start, b)),
                None => missing.push((start, len)),
            }
        }
        let merged = merge_ranges(&missing, gap);
        let mut pieces = missing.iter().peekable();
        for (m_start, m_len) in merged {
            let read = of.file.get_bytes(m_start, m_len as usize)?;
            while let Some(&&(start, len)) = pieces.peek() {
                if start >= m_start + m_len {
                    break;
                }
                let at = (start - m_start) as usize;
                let b = read.slice(at..at + len as usize);
                if let Some(c) = cache {
                    c.put(key(start, len), b.clone());
                }
                ranges.push((start, b));
                pieces.next();
            }
        }
        ranges.sort_unstable_by_key(|(s, _)| *s);
        Ok(Fetched {
            file: of.file.clone(),
            ranges: Arc::new(ranges),
        })
    }

    /// The fetched bytes from `start` to the end of its range, and the
    /// range's end.
    fn range_at(&self, start: u64) -> Option<&(u64, Bytes)> {
        let i = self.ranges.partition_point(|(s, _)| *s <= start);
        let r = self.ranges.get(i.checked_sub(1)?)?;
        (start < r.0 + r.1.len() as u64).then_some(r)
    }
}

/// The byte ranges of `unit`'s columns `columns` its reader decodes.
fn needed_ranges(meta: &ParquetMetaData, unit: &Unit, columns: &[usize]) -> Vec<(u64, u64)> {
    let rg = meta.row_group(unit.row_group);
    let rows = rg.num_rows() as usize;
    // The selected rows as [from, to) ranges.
    let selected: Option<Vec<(usize, usize)>> = unit.selection.as_ref().map(|sel| {
        let mut at = 0;
        let mut out = Vec::new();
        for s in sel.iter() {
            if !s.skip {
                out.push((at, at + s.row_count));
            }
            at += s.row_count;
        }
        out
    });
    let mut out = Vec::new();
    for &c in columns {
        let (start, len) = rg.column(c).byte_range();
        let pages = meta
            .offset_index()
            .map(|oi| oi[unit.row_group][c].page_locations());
        // Page by page where the page index says where pages are (the
        // cache keeps pages, small enough to keep under any budget; reads
        // coalesce them again), else the whole chunk.
        match (&selected, pages) {
            (selected, Some(pages)) if !pages.is_empty() => {
                // The dictionary page, before the first data page.
                let first = pages[0].offset as u64;
                if first > start {
                    out.push((start, first - start));
                }
                for (i, p) in pages.iter().enumerate() {
                    let from = p.first_row_index as usize;
                    let to = pages
                        .get(i + 1)
                        .map_or(rows, |n| n.first_row_index as usize);
                    let wanted = selected
                        .as_ref()
                        .is_none_or(|sel| sel.iter().any(|&(a, b)| a < to && from < b));
                    if wanted {
                        out.push((p.offset as u64, p.compressed_page_size as u64));
                    }
                }
            }
            _ => out.push((start, len)),
        }
    }
    out
}

impl Length for Fetched {
    fn len(&self) -> u64 {
        self.file.len()
    }
}

/// A reader of fetched bytes, or of the file beyond them.
pub(crate) enum FetchedRead {
    Mem(bytes::buf::Reader<Bytes>),
    File(crate::file::CountedRead),
}

impl std::io::Read for FetchedRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            FetchedRead::Mem(r) => r.read(buf),
            FetchedRead::File(r) => r.read(buf),
        }
    }
}

impl ChunkReader for Fetched {
    type T = FetchedRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<FetchedRead> {
        match self.range_at(start) {
            Some((s, b)) => Ok(FetchedRead::Mem(b.slice((start - s) as usize..).reader())),
            None => Ok(FetchedRead::File(self.file.get_read(start)?)),
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        match self.range_at(start) {
            Some((s, b)) if (start - s) as usize + length <= b.len() => {
                let at = (start - s) as usize;
                Ok(b.slice(at..at + length))
            }
            _ => self.file.get_bytes(start, length),
        }
    }
}

/// Splits `units` into at most `parts` runs of about equal rows, in order.
pub fn split(units: &[Unit], parts: usize) -> Vec<Vec<Unit>> {
    let parts = parts.max(1).min(units.len().max(1));
    let total: u64 = units.iter().map(|u| u.rows).sum();
    let share = total.div_ceil(parts as u64).max(1);
    let mut out: Vec<Vec<Unit>> = vec![Vec::new()];
    let mut acc = 0;
    for u in units {
        if acc >= share && out.len() < parts {
            out.push(Vec::new());
            acc = 0;
        }
        acc += u.rows;
        out.last_mut().expect("one part at least").push(u.clone());
    }
    out
}
