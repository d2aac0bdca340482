//! Native generators for the synthetic data of the papers strata reproduces.
//!
//! Each generator creates its table and index in one atomic load: rows stream
//! straight into the heap writer (1 MiB runs, no buffer pool) and the index is
//! bulk-built from sorted keys at commit. One `Vec<Value>` is reused for every row,
//! so generation does not allocate per row; 10 M microbench rows take seconds plus
//! the index build.
//!
//! All data is a pure function of (kind, rows, seed, fill factor; the fill
//! factor matters to the adversary layouts only): [`SmallRng`] seeded with
//! `seed`, drawn in a fixed order, so a seed reproduces a data set exactly.
//!
//! - `microbench` (Smooth Scan, §7.3): `c1..c10 INT32 NOT NULL`; `c1` is the row
//!   number from 0, equal to the tuple order (the primary key), `c2..c10` uniform in
//!   `[0, 100000]`; non-clustered B+-tree `<table>_c2` on `c2`, so a range on `c2`
//!   has a selectivity set by its width and its matches are spread over the heap.
//! - `skewed` (Smooth Scan, §7.4): the same table, but `c2 = 0` exactly on the
//!   first 1% of rows by position plus 0.001% of the remaining rows chosen at
//!   random; all other `c2` are uniform in `[1, 100000]`, so the predicate
//!   `c2 = 0` selects exactly the skewed rows: a dense cluster at the start of the
//!   heap and a few stragglers ([`skewed_counts`] gives the numbers).
//! - the layouts, for the robustness of access paths: the microbench table
//!   (`c1` the row number, `c3..c10` uniform, index `<table>_c2`) with `c2`
//!   placed in different ways relative to the heap order, and the same `c2`
//!   histogram on all of them. Each layout picks a permutation of ranks
//!   `0..n` over the rows and sets `c2 = rank * 100001 / n` (in `[0, 100000]`,
//!   about `n / 100001` rows a value), so `c2 >= 0 AND c2 < x` selects the
//!   rows of the lowest ranks, a fraction `x / 100001` of the table (give or
//!   take one value's rows), on every layout ([`crate::layout`] has the
//!   details and [`crate::layout::rows_below`] the exact count):
//!   - `uniform`: the ranks are a random permutation (the microbench's shape:
//!     a key range's rows are spread uniformly over the heap);
//!   - `correlated`: ranks in the order of `i/n + noise`, noise uniform in
//!     ±0.01: the key grows with the insertion order, each row within 1% of
//!     the table of its place;
//!   - `periodic`: ranks in the order of `frac(32 i / n) + noise`, noise
//!     uniform in ±1% of the key range: timestamps of 32 batch loads, each
//!     sweeping the whole key range again, so a key range hits 32 bands;
//!   - `clustered`: the heap in runs of 4 pages' worth of rows; the runs take
//!     consecutive blocks of ranks in a random run order, shuffled within the
//!     run: a key range hits whole runs scattered over the heap;
//!   - `alternating` (the Smooth Scan paper's Fig. 8c adversary): the first
//!     row of every second heap page (pages 0, 2, 4, ...; `m = ceil(pages/2)`
//!     rows) has ranks `0..m` in random order, every other row ranks `m..n` in
//!     random order: the predicate selecting `m` rows matches exactly one row
//!     on every second page;
//!   - `dense-start` (Fig. 8b's adversary for Selectivity Increase): every row
//!     of the first `D` pages (`D` = 1% of the pages, at least 1) has ranks
//!     `0..D * rows_per_page` in physical order, then the first row of every
//!     64th page of the rest of the heap the next ranks in random order, and
//!     the other rows the rest in random order: in key order a dense run, then
//!     isolated matches, one per 64 pages, in random page order;
//!   - `dense-tail`: the reverse: the isolated rows (every 64th page of the
//!     heap outside the dense run) have the lowest ranks in random order, then
//!     the dense run of `D` pages, at a random page offset, the next ranks in
//!     physical order.
//!
//!   The adversaries place rows on pages: row `i` of a fresh load of fixed-size
//!   rows lands on page `i / rows_per_page`, the heap's capacity under the
//!   table's fill factor ([`strata_storage::heap::rows_per_page`]), so
//!   `--fill-factor` moves their special rows with the pages.
//! - `flash` (the flash paper, §3.2): 300-byte tuples, `a INT32` a random
//!   permutation of `1..=N` (Fisher–Yates) and `pad CHAR(296)` filled with one
//!   letter repeated (cheap, deterministic, and not all blanks, so the bytes are
//!   really stored); B+-tree `<table>_a` on `a`, whose order is uncorrelated with
//!   the heap order.
//! - `page` (No Bits Left Behind §2.1's example): a table shaped like
//!   MediaWiki's `page` ([`page_schema`]), rows in `page_id` order (1..=N,
//!   creation order), and the `name_title` index `<table>_name_title` on
//!   ([`PAGE_KEY`]) `(page_namespace, page_title)` caching in its leaves' free
//!   space the 4 fields MediaWiki's link lookups project ([`PAGE_CACHED`]:
//!   `page_id BIGINT, page_len INT, page_is_redirect BOOLEAN, page_latest
//!   BIGINT`, 21 bytes, a 28-byte cache item with its tag and tid; the paper
//!   counts 25 bytes). Namespaces are drawn from [`PAGE_NAMESPACES`](crate::PAGE_NAMESPACES) (55% in
//!   namespace 0). Titles are unique: each starts with a core that a
//!   bijection of the row number spells in two-letter syllables (unique, and
//!   free of `_`), followed by `_`-separated words up to a length drawn from a
//!   log-normal law (median 18 bytes, 120 at most before the last word;
//!   never over 255), and now and then a
//!   disambiguation like `_(film)`; so `(page_namespace, page_title)` is a
//!   key. Redirects are 55% of namespace 0 and 5% elsewhere, with short
//!   `page_len`s; other pages' lengths are log-normal (median 2500 bytes).
//!   `page_touched` and `page_links_updated` are MediaWiki's 14-digit
//!   timestamps (2004..2025) as `CHAR(14)`, `page_links_updated` NULL for 1%
//!   of rows, `page_lang` NULL but for 0.1%: heap rows of about 100 bytes.
//!   The lookup workload (zipf over the rows) is the benchmark's
//!   (`strata bench index-cache wiki`), not the table's.
//! - `revision` (No Bits Left Behind §3.1): a table shaped like MediaWiki's
//!   `revision` ([`revision_schema`]), one row per edit in `rev_id` order
//!   (1..=N, time order), and a B+-tree `<table>_rev_id` on `rev_id`. The N
//!   revisions belong to `P = max(1, round(N / 20))` pages
//!   ([`revision_pages`](crate::revision_pages), ids 1..=P): every page gets one revision, and the
//!   other N − P go to pages drawn by a heavy-tailed weight per page: half the
//!   pages (redirects, stubs) are never edited again ([`REVISION_ONCE`](crate::REVISION_ONCE)), the
//!   others weigh a Pareto draw of index [`REVISION_PARETO`](crate::REVISION_PARETO), so most pages
//!   have a few revisions and a few have hundreds or thousands. That sequence
//!   of page ids, shuffled (Fisher–Yates), gives row `i` its `rev_page`: each
//!   page's latest revision (its hot tuple, 1 row in 20) lies anywhere in the
//!   heap, on most of its pages. `rev_parent_id` is the page's previous
//!   `rev_id` (0 for its first), `rev_text_id = rev_id`, `rev_timestamp` a
//!   14-digit timestamp (2004..2025) growing with `rev_id`. 20% of edits are
//!   anonymous (`rev_user` 0, an IPv4 address as `rev_user_text`), the others
//!   by a user uniform in `1..=max(1, N / 50)` whose name is spelled from the
//!   number. 30% are minor, 0.2% have a `rev_deleted` bit set; `rev_len` is
//!   the page's own log-normal length (median 2500 bytes) within ±10% or so,
//!   `rev_sha1` 31 base-36 digits of a hash of `rev_id`. Comments are empty
//!   for 12% of rows, otherwise words up to a log-normal length (median 90
//!   bytes) cut at 255, MediaWiki's limit, sometimes after a `/* section */`:
//!   heap rows of about 200 bytes, about 40 on a page.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_storage::db::{Database, IndexSpec, LoadSummary, Progress, TableOptions};
use strata_storage::row::{Column, DataType, Schema, Value};

use crate::error::LoadError;
use crate::wikipedia::{
    PAGE_CACHED, PAGE_COLUMNS, PAGE_KEY, PageRows, REVISION_COLUMNS, REVISION_KEY, RevisionRows,
    page_schema, revision_schema,
};

/// Largest value of the uniform microbench columns (inclusive).
pub const MICROBENCH_MAX: i32 = 100_000;
/// Bytes of a `flash` tuple.
const FLASH_TUPLE: u16 = 300;
/// Rows between progress reports.
const PROGRESS_EVERY: u64 = 1 << 16;

/// Which data set to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GenKind {
    Microbench,
    Skewed,
    Flash,
    Uniform,
    Correlated,
    Periodic,
    Clustered,
    Alternating,
    DenseStart,
    DenseTail,
    Page,
    Revision,
}

impl GenKind {
    /// Every data set: the papers' five tables, then the [`GenKind::LAYOUTS`].
    pub const ALL: [GenKind; 12] = {
        let tables = [
            GenKind::Microbench,
            GenKind::Skewed,
            GenKind::Flash,
            GenKind::Page,
            GenKind::Revision,
        ];
        let layouts = GenKind::LAYOUTS;
        let mut all = [GenKind::Microbench; 12];
        assert!(all.len() == tables.len() + layouts.len());
        let mut i = 0;
        while i < all.len() {
            all[i] = if i < tables.len() {
                tables[i]
            } else {
                layouts[i - tables.len()]
            };
            i += 1;
        }
        all
    };

    /// The layouts: the microbench table with `c2` placed by rank
    /// ([`crate::layout`]).
    pub const LAYOUTS: [GenKind; 7] = [
        GenKind::Uniform,
        GenKind::Correlated,
        GenKind::Periodic,
        GenKind::Clustered,
        GenKind::Alternating,
        GenKind::DenseStart,
        GenKind::DenseTail,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GenKind::Microbench => "microbench",
            GenKind::Skewed => "skewed",
            GenKind::Flash => "flash",
            GenKind::Uniform => "uniform",
            GenKind::Correlated => "correlated",
            GenKind::Periodic => "periodic",
            GenKind::Clustered => "clustered",
            GenKind::Alternating => "alternating",
            GenKind::DenseStart => "dense-start",
            GenKind::DenseTail => "dense-tail",
            GenKind::Page => "page",
            GenKind::Revision => "revision",
        }
    }

    /// The table name used when none is given (the generator's name, with `_`
    /// for `-`).
    pub fn default_table(self) -> &'static str {
        match self {
            GenKind::DenseStart => "dense_start",
            GenKind::DenseTail => "dense_tail",
            k => k.name(),
        }
    }

    /// Whether this is one of the [`GenKind::LAYOUTS`].
    pub fn is_layout(self) -> bool {
        GenKind::LAYOUTS.contains(&self)
    }

    /// Whether this layout has a band of special rows ([`crate::layout::band`]).
    pub fn is_adversary(self) -> bool {
        matches!(
            self,
            GenKind::Alternating | GenKind::DenseStart | GenKind::DenseTail
        )
    }

    /// The indexed column (for `page`, the first of the index's two,
    /// [`PAGE_KEY`]).
    pub fn index_column(self) -> &'static str {
        match self {
            GenKind::Flash => "a",
            GenKind::Page => PAGE_KEY[0],
            GenKind::Revision => REVISION_KEY,
            _ => "c2",
        }
    }

    /// The index's columns.
    pub fn index_columns(self) -> Vec<&'static str> {
        match self {
            GenKind::Page => PAGE_KEY.to_vec(),
            k => vec![k.index_column()],
        }
    }

    pub fn schema(self) -> Schema {
        match self {
            GenKind::Flash => flash_schema(),
            GenKind::Page => page_schema(),
            GenKind::Revision => revision_schema(),
            _ => microbench_schema(),
        }
    }

    /// Rows of this data set on one heap page under `fill_factor`.
    pub fn rows_per_page(self, fill_factor: f64) -> u64 {
        strata_storage::heap::rows_per_page(self.schema().max_row_size(), fill_factor) as u64
    }

    /// The special rows of an adversary layout of `rows` rows under
    /// `fill_factor` (they hold ranks `0..band.rows()`); `None` for the others.
    pub fn band(self, rows: u64, fill_factor: f64) -> Option<crate::layout::Band> {
        crate::layout::band(self, rows, self.rows_per_page(fill_factor))
    }
}

impl fmt::Display for GenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for GenKind {
    type Err = LoadError;

    /// Parses a data set's name (case-insensitive; `_` for `-` too).
    fn from_str(s: &str) -> Result<GenKind, LoadError> {
        let want = s.trim().replace('_', "-");
        GenKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(&want))
            .ok_or_else(|| {
                LoadError::Usage(format!(
                    "unknown data set '{s}': expected one of {}, tpch",
                    GenKind::ALL.map(|k| k.name()).join(", ")
                ))
            })
    }
}

/// What to generate.
#[derive(Clone, Debug)]
pub struct GenSpec {
    pub kind: GenKind,
    pub rows: u64,
    pub seed: u64,
    /// Table name; `None`: the generator's name.
    pub table: Option<String>,
    /// Heap options, e.g. `fill_factor` to spread rows over more pages.
    pub options: TableOptions,
}

impl GenSpec {
    /// `rows` rows of `kind` with seed 42 and default table options.
    pub fn new(kind: GenKind, rows: u64) -> GenSpec {
        GenSpec {
            kind,
            rows,
            seed: 42,
            table: None,
            options: TableOptions::default(),
        }
    }

    pub fn table_name(&self) -> &str {
        self.table.as_deref().unwrap_or(self.kind.default_table())
    }

    /// Name of the generated index: `<table>_<column>` (for `revision`,
    /// `<table>_rev_id`); for `page`, `<table>_name_title` (MediaWiki's name).
    pub fn index_name(&self) -> String {
        match self.kind {
            GenKind::Page => format!("{}_name_title", self.table_name()),
            k => format!("{}_{}", self.table_name(), k.index_column()),
        }
    }

    /// The generated index: for `page`, with [`PAGE_CACHED`] cached in its
    /// leaves (leaf fill 90%, the default).
    pub fn index_spec(&self) -> IndexSpec {
        let spec = IndexSpec::new(self.index_name(), &self.kind.index_columns());
        match self.kind {
            GenKind::Page => spec.cache(&PAGE_CACHED),
            _ => spec,
        }
    }
}

/// What [`generate`] did.
#[derive(Clone, Debug)]
pub struct GenReport {
    pub table: String,
    pub kind: GenKind,
    pub rows: u64,
    /// For `skewed`: rows with `c2 = 0`.
    pub c2_zero_rows: Option<u64>,
    /// For the adversary layouts: the special rows (ranks `0..rows()`).
    pub band: Option<crate::layout::Band>,
    /// Wall time including the index build and commit.
    pub elapsed: Duration,
    pub summary: LoadSummary,
}

/// `c1..c10 INT32 NOT NULL`: the microbench and skewed table.
pub fn microbench_schema() -> Schema {
    Schema::new(
        (1..=10)
            .map(|i| Column::new(format!("c{i}"), DataType::Int32, false))
            .collect(),
    )
    .expect("valid schema")
}

/// `a INT32 NOT NULL, pad CHAR(296) NOT NULL`: a 300-byte tuple.
pub fn flash_schema() -> Schema {
    let pad = FLASH_TUPLE - 4;
    Schema::new(vec![
        Column::new("a", DataType::Int32, false),
        Column::new("pad", DataType::Char { len: pad }, false),
    ])
    .expect("valid schema")
}

/// How the `skewed` data set places `c2 = 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkewedCounts {
    /// The first `hot` rows (1%, rounded down) have `c2 = 0`.
    pub hot: u64,
    /// So do this many of the other rows (0.001% of them, rounded to nearest),
    /// chosen uniformly at random without repetition.
    pub scattered: u64,
}

impl SkewedCounts {
    /// Rows with `c2 = 0`.
    pub fn total(&self) -> u64 {
        self.hot + self.scattered
    }
}

/// The `c2 = 0` rows of a `skewed` table of `rows` rows.
pub fn skewed_counts(rows: u64) -> SkewedCounts {
    let hot = rows / 100;
    let scattered = ((rows - hot) as f64 * 1e-5).round() as u64;
    SkewedCounts { hot, scattered }
}

/// Generates `spec` into a new table with its index, atomically. Progress: phase
/// `generate <table>` in rows, then the commit's phases (index build).
pub fn generate(
    db: &Database,
    spec: &GenSpec,
    progress: &dyn Progress,
) -> Result<GenReport, LoadError> {
    let start = Instant::now();
    let table = spec.table_name();
    // c1 runs 0..rows and `a` 1..=rows, both INT32 (and `rev_page`, an INT,
    // at most rows / 20).
    let limit = i32::MAX as u64;
    if spec.rows > limit {
        return Err(LoadError::Usage(format!(
            "{} rows is too many for {}: its INT32 key holds at most {limit}",
            spec.rows, spec.kind
        )));
    }
    let index = spec.index_spec();
    let mut load =
        db.begin_create_load(table, spec.kind.schema(), spec.options.clone(), vec![index])?;
    progress.phase(&format!("generate {table}"), spec.rows);
    let mut rng = SmallRng::seed_from_u64(spec.seed);
    let n = spec.rows;
    let mut c2_zero_rows = None;
    let mut band = None;
    let tick = |i: u64| {
        if (i + 1).is_multiple_of(PROGRESS_EVERY) {
            progress.advance(PROGRESS_EVERY);
        }
    };

    match spec.kind {
        GenKind::Microbench | GenKind::Skewed => {
            // Rows (by position) with c2 = 0, ascending; empty for microbench.
            let (hot, mut zeros) = if spec.kind == GenKind::Skewed {
                let counts = skewed_counts(n);
                c2_zero_rows = Some(counts.total());
                let mut z: Vec<u64> = rand::seq::index::sample(
                    &mut rng,
                    (n - counts.hot) as usize,
                    counts.scattered as usize,
                )
                .into_iter()
                .map(|i| counts.hot + i as u64)
                .collect();
                z.sort_unstable();
                (counts.hot, z.into_iter().peekable())
            } else {
                (0, Vec::new().into_iter().peekable())
            };
            let skewed = spec.kind == GenKind::Skewed;
            let mut row = vec![Value::Int32(0); 10];
            for i in 0..n {
                row[0] = Value::Int32(i as i32);
                row[1] = Value::Int32(if !skewed {
                    rng.random_range(0..=MICROBENCH_MAX)
                } else if i < hot || zeros.next_if_eq(&i).is_some() {
                    0
                } else {
                    rng.random_range(1..=MICROBENCH_MAX)
                });
                for v in &mut row[2..] {
                    *v = Value::Int32(rng.random_range(0..=MICROBENCH_MAX));
                }
                load.append(&row)?;
                tick(i);
            }
        }
        kind @ (GenKind::Uniform
        | GenKind::Correlated
        | GenKind::Periodic
        | GenKind::Clustered
        | GenKind::Alternating
        | GenKind::DenseStart
        | GenKind::DenseTail) => {
            let tpp = kind.rows_per_page(spec.options.fill_factor);
            band = crate::layout::band(kind, n, tpp);
            let ranks = crate::layout::ranks(kind, n, tpp, &mut rng).expect("a layout");
            let mut row = vec![Value::Int32(0); 10];
            for (i, &rank) in ranks.iter().enumerate() {
                row[0] = Value::Int32(i as i32);
                row[1] = Value::Int32(crate::layout::c2_of_rank(rank as u64, n));
                for v in &mut row[2..] {
                    *v = Value::Int32(rng.random_range(0..=MICROBENCH_MAX));
                }
                load.append(&row)?;
                tick(i as u64);
            }
        }
        GenKind::Flash => {
            let mut perm: Vec<i32> = (1..=n as i32).collect();
            for i in (1..perm.len()).rev() {
                let j = rng.random_range(0..=i);
                perm.swap(i, j);
            }
            let pad_len = (FLASH_TUPLE - 4) as usize;
            let pads: Vec<String> = (b'a'..=b'z')
                .map(|c| (c as char).to_string().repeat(pad_len))
                .collect();
            let mut row = vec![Value::Int32(0), Value::Str(String::with_capacity(pad_len))];
            for (i, &a) in perm.iter().enumerate() {
                row[0] = Value::Int32(a);
                if let Value::Str(s) = &mut row[1] {
                    s.clear();
                    s.push_str(&pads[i % pads.len()]);
                }
                load.append(&row)?;
                tick(i as u64);
            }
        }
        GenKind::Page => {
            let mut page = PageRows::new(n);
            let mut row = Vec::with_capacity(PAGE_COLUMNS);
            for i in 0..n {
                page.row(i, &mut rng, &mut row);
                load.append(&row)?;
                tick(i);
            }
        }
        GenKind::Revision => {
            let mut rev = RevisionRows::new(n, &mut rng);
            let mut row = Vec::with_capacity(REVISION_COLUMNS);
            for i in 0..n {
                rev.row(i, &mut rng, &mut row);
                load.append(&row)?;
                tick(i);
            }
        }
    }
    progress.advance(n % PROGRESS_EVERY);

    let summary = load.commit(progress)?;
    Ok(GenReport {
        table: table.to_string(),
        kind: spec.kind,
        rows: n,
        c2_zero_rows,
        band,
        elapsed: start.elapsed(),
        summary,
    })
}

// ---------------------------------------------------------------------------
// `page`: a Wikipedia-like page table.
