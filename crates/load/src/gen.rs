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
//!   counts 25 bytes). Namespaces are drawn from [`PAGE_NAMESPACES`] (55% in
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
//!   ([`revision_pages`], ids 1..=P): every page gets one revision, and the
//!   other N − P go to pages drawn by a heavy-tailed weight per page: half the
//!   pages (redirects, stubs) are never edited again ([`REVISION_ONCE`]), the
//!   others weigh a Pareto draw of index [`REVISION_PARETO`], so most pages
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

/// The `name_title` index's key columns.
pub const PAGE_KEY: [&str; 2] = ["page_namespace", "page_title"];

/// The columns the `name_title` index caches: what MediaWiki's link lookups
/// project besides the key (21 bytes encoded).
pub const PAGE_CACHED: [&str; 4] = ["page_id", "page_len", "page_is_redirect", "page_latest"];

/// Namespaces and their shares in per mille (they sum to 1000): the main
/// namespace first, then talk, user, user talk, project, file, template,
/// category and the small ones, in the order of English Wikipedia's ranking
/// but with namespace 0 the majority (English Wikipedia's page table has
/// more user talk pages than articles); a shape, not a measurement.
pub const PAGE_NAMESPACES: [(i32, u32); 17] = [
    (0, 550),
    (1, 120),
    (2, 60),
    (3, 140),
    (4, 20),
    (5, 5),
    (6, 30),
    (7, 2),
    (8, 1),
    (10, 20),
    (11, 10),
    (12, 1),
    (13, 1),
    (14, 30),
    (15, 3),
    (118, 6),
    (828, 1),
];

/// Longest `page_title` in bytes (MediaWiki's limit).
pub const PAGE_TITLE_MAX: usize = 255;

/// Columns of [`page_schema`].
const PAGE_COLUMNS: usize = 12;

/// MediaWiki's `page` table in strata's types (MediaWiki's 14-character
/// timestamps as `CHAR(14)`):
/// `page_id BIGINT, page_namespace INT, page_title VARCHAR(255),
/// page_is_redirect BOOLEAN, page_is_new BOOLEAN, page_random DOUBLE,
/// page_touched CHAR(14), page_links_updated CHAR(14) NULL, page_latest
/// BIGINT, page_len INT, page_content_model VARCHAR(32), page_lang
/// VARCHAR(35) NULL`.
pub fn page_schema() -> Schema {
    Schema::parse(
        "page_id BIGINT, page_namespace INT, page_title VARCHAR(255), \
         page_is_redirect BOOLEAN, page_is_new BOOLEAN, page_random DOUBLE, \
         page_touched CHAR(14), page_links_updated CHAR(14) NULL, page_latest BIGINT, \
         page_len INT, page_content_model VARCHAR(32), page_lang VARCHAR(35) NULL",
    )
    .expect("valid schema")
}

const CONSONANTS: &[u8; 20] = b"bcdfghjklmnprstvwxyz";
const VOWELS: &[u8; 5] = b"aeiou";
/// Two-letter syllables: 100 of them.
const SYLLABLES: u64 = 100;
const QUALIFIERS: [&str; 12] = [
    "film",
    "band",
    "album",
    "disambiguation",
    "song",
    "novel",
    "TV_series",
    "footballer",
    "politician",
    "company",
    "village",
    "river",
];
/// Days since 1970-01-01 of 2004-01-01 and 2025-01-01: the timestamps' range.
const TOUCHED_DAYS: (i32, i32) = (12_418, 20_089);

/// Appends syllable `d` (0..100).
fn push_syllable(s: &mut String, d: u64) {
    s.push(CONSONANTS[(d / 5) as usize] as char);
    s.push(VOWELS[(d % 5) as usize] as char);
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut SmallRng) -> f64 {
    let u: f64 = 1.0 - rng.random::<f64>();
    let v: f64 = rng.random();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// The MediaWiki timestamp (YYYYMMDDHHMMSS) `secs` seconds after
/// 2004-01-01 00:00:00.
fn push_timestamp(s: &mut String, secs: u64) {
    use std::fmt::Write;
    let days = TOUCHED_DAYS.0 + (secs / 86_400) as i32;
    let secs = secs % 86_400;
    let date = strata_storage::row::format_date(days);
    s.extend(date.chars().filter(|c| *c != '-'));
    let _ = write!(s, "{:02}{:02}{:02}", secs / 3600, secs / 60 % 60, secs % 60);
}

/// The rows of a `page` table of `n` rows, drawn in row order.
struct PageRows {
    n: u64,
    /// Coprime with `n`: row `i`'s title core spells `(i·mul + add) mod n`.
    mul: u64,
    add: u64,
    title: String,
    touched: String,
    links: String,
}

impl PageRows {
    fn new(n: u64) -> PageRows {
        // A multiplier near n·0.618 coprime with n scatters the cores.
        let gcd = |mut a: u64, mut b: u64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let mut mul = ((n as f64 * 0.618_033_988_7) as u64).max(1);
        while gcd(mul, n.max(1)) != 1 {
            mul += 1;
        }
        PageRows {
            n: n.max(1),
            mul,
            add: n / 3,
            title: String::with_capacity(PAGE_TITLE_MAX),
            touched: String::with_capacity(14),
            links: String::with_capacity(14),
        }
    }

    /// Row `i` (0-based; `page_id` is `i + 1`) into `row`.
    fn row(&mut self, i: u64, rng: &mut SmallRng, row: &mut Vec<Value>) {
        let pick = rng.random_range(0..1000u32);
        let mut acc = 0;
        let ns = PAGE_NAMESPACES
            .iter()
            .find(|(_, share)| {
                acc += share;
                pick < acc
            })
            .map_or(0, |(ns, _)| *ns);
        self.make_title(i, ns, rng);
        let redirect = rng.random::<f64>() < if ns == 0 { 0.55 } else { 0.05 };
        let len = if redirect {
            rng.random_range(20..=120)
        } else {
            (2500.0 * (1.3 * normal(rng)).exp()).clamp(0.0, 2_000_000.0) as i32
        };
        // Seconds since 2004-01-01 of page_touched; the links were updated
        // at most 30 days before it, never before 2004.
        let touched = rng.random_range(0..(TOUCHED_DAYS.1 - TOUCHED_DAYS.0) as u64 * 86_400);
        self.touched.clear();
        push_timestamp(&mut self.touched, touched);
        let links_updated = if rng.random::<f64>() < 0.01 {
            Value::Null
        } else {
            self.links.clear();
            let back = rng.random_range(0..=30 * 86_400).min(touched);
            push_timestamp(&mut self.links, touched - back);
            Value::Str(self.links.clone())
        };
        let model = match ns {
            828 => "Scribunto",
            2 if rng.random::<f64>() < 0.02 => {
                if rng.random::<bool>() {
                    "css"
                } else {
                    "javascript"
                }
            }
            _ => "wikitext",
        };
        let lang = if rng.random::<f64>() < 0.001 {
            Value::Str("en".into())
        } else {
            Value::Null
        };
        row.clear();
        row.extend([
            Value::Int64(i as i64 + 1),
            Value::Int32(ns),
            Value::Str(self.title.clone()),
            Value::Bool(redirect),
            Value::Bool(rng.random::<f64>() < 0.05),
            Value::Float64(rng.random::<f64>()),
            Value::Str(self.touched.clone()),
            links_updated,
            Value::Int64(rng.random_range(1..=1_250_000_000)),
            Value::Int32(len),
            Value::Str(model.into()),
            lang,
        ]);
    }

    /// Row `i`'s title into `self.title`: the unique core, words up to a
    /// log-normal length, sometimes a disambiguation.
    fn make_title(&mut self, i: u64, ns: i32, rng: &mut SmallRng) {
        let t = &mut self.title;
        t.clear();
        // Bijective base 100 of p + 1: a distinct syllable string per row.
        let p = ((i % self.n) as u128 * self.mul as u128 + self.add as u128) % self.n as u128;
        let mut v = p as u64 + 1;
        while v > 0 {
            let d = (v - 1) % SYLLABLES;
            push_syllable(t, d);
            v = (v - 1) / SYLLABLES;
        }
        t[..1].make_ascii_uppercase();
        let target = (18.0 * (0.5 * normal(rng)).exp()).round().clamp(1.0, 120.0) as usize;
        while t.len() < target {
            let syllables = rng.random_range(1..=4u64);
            if t.len() + 1 + 2 * syllables as usize > PAGE_TITLE_MAX {
                break;
            }
            t.push('_');
            let start = t.len();
            for _ in 0..syllables {
                push_syllable(t, rng.random_range(0..SYLLABLES));
            }
            if rng.random::<bool>() {
                t[start..start + 1].make_ascii_uppercase();
            }
        }
        if ns == 0 && rng.random::<f64>() < 0.05 {
            let q = QUALIFIERS[rng.random_range(0..QUALIFIERS.len())];
            if t.len() + q.len() + 3 <= PAGE_TITLE_MAX {
                t.push_str("_(");
                t.push_str(q);
                t.push(')');
            }
        }
    }
}

// ---------------------------------------------------------------------------
// `revision`: a Wikipedia-like revision table.

/// The indexed column of `revision`.
pub const REVISION_KEY: &str = "rev_id";

/// Share of the pages that are never edited after their first revision
/// (redirects, stubs): their weight in the draw of the other revisions is 0.
pub const REVISION_ONCE: f64 = 0.5;

/// Index of the Pareto law of the other pages' weights: a weight is
/// `u^(-1/REVISION_PARETO)`, `u` uniform in `(0, 1]`, so at least 1, with a
/// finite mean (3) and a tail heavy enough for a few pages to take thousands
/// of revisions.
pub const REVISION_PARETO: f64 = 1.5;

/// Longest `rev_comment` and `rev_user_text` in bytes (MediaWiki's limit).
pub const REVISION_TEXT_MAX: usize = 255;

/// Columns of [`revision_schema`].
const REVISION_COLUMNS: usize = 12;
/// Share of the edits that are anonymous (`rev_user` 0, an IP address).
const REVISION_ANONYMOUS: f64 = 0.2;
/// Share of the edits marked minor.
const REVISION_MINOR: f64 = 0.3;
/// Share of the edits with a `rev_deleted` bit set.
const REVISION_DELETED: f64 = 0.002;
/// Share of the edits without a comment.
const REVISION_NO_COMMENT: f64 = 0.12;
/// Median (bytes) and log-σ of the other comments' lengths, before the cut at
/// [`REVISION_TEXT_MAX`]: a mean of about 113 bytes, 12% of them cut.
const REVISION_COMMENT_LEN: (f64, f64) = (90.0, 0.9);
/// Share of the comments that start with a `/* section */`.
const REVISION_SECTION: f64 = 0.35;
/// Digits of `rev_sha1`: a SHA-1 in base 36, as MediaWiki stores it.
const SHA1_DIGITS: usize = 31;
const BASE36: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// MediaWiki's `revision` table (its pre-1.31 shape, with the comment and the
/// user in the row) in strata's types; `rev_deleted`, a `TINYINT` bit field in
/// MediaWiki, is an `INT` (strata has no smaller integer):
/// `rev_id BIGINT, rev_page INT, rev_text_id BIGINT, rev_comment
/// VARCHAR(255), rev_user INT, rev_user_text VARCHAR(255), rev_timestamp
/// CHAR(14), rev_minor_edit BOOLEAN, rev_deleted INT, rev_len INT,
/// rev_parent_id BIGINT, rev_sha1 CHAR(31)`.
pub fn revision_schema() -> Schema {
    Schema::parse(
        "rev_id BIGINT, rev_page INT, rev_text_id BIGINT, rev_comment VARCHAR(255), \
         rev_user INT, rev_user_text VARCHAR(255), rev_timestamp CHAR(14), \
         rev_minor_edit BOOLEAN, rev_deleted INT, rev_len INT, rev_parent_id BIGINT, \
         rev_sha1 CHAR(31)",
    )
    .expect("valid schema")
}

/// Pages (`rev_page` 1..=P) of a `revision` table of `rows` rows: a 20th of
/// the rows, rounded, at least 1 (none for no rows).
pub fn revision_pages(rows: u64) -> u64 {
    if rows == 0 {
        0
    } else {
        (rows / 20 + (rows % 20 >= 10) as u64).max(1)
    }
}

/// Users (`rev_user` 1..=U) of a `revision` table of `rows` rows.
fn revision_users(rows: u64) -> u64 {
    (rows / 50).max(1)
}

/// SplitMix64's finalizer: a well-mixed 64-bit hash of `x`.
fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Appends `rev_sha1` of revision `rev_id`: 31 base-36 digits of a hash.
fn push_sha1(s: &mut String, rev_id: u64) {
    let mut h = rev_id;
    let mut left = SHA1_DIGITS;
    while left > 0 {
        h = mix64(h);
        // 12 base-36 digits of a u64 are (nearly) uniform: 36^12 < 2^64.
        let mut v = h;
        for _ in 0..left.min(12) {
            s.push(BASE36[(v % 36) as usize] as char);
            v /= 36;
        }
        left -= left.min(12);
    }
}

/// Appends the name of user `user` (≥ 1): the number spelled in syllables
/// (distinct per user), then, chosen by a hash of the number, a second word,
/// separated by a space or not, and sometimes digits; about 10 bytes.
fn push_user_name(s: &mut String, user: u64) {
    let start = s.len();
    let mut v = user;
    while v > 0 {
        push_syllable(s, (v - 1) % SYLLABLES);
        v = (v - 1) / SYLLABLES;
    }
    s[start..start + 1].make_ascii_uppercase();
    let h = mix64(user.rotate_left(32));
    if h & 1 == 1 {
        s.push(' ');
    }
    let word = s.len();
    for k in 0..1 + (h >> 1) % 3 {
        push_syllable(s, (h >> (8 + 7 * k)) % SYLLABLES);
    }
    s[word..word + 1].make_ascii_uppercase();
    if (h >> 40).is_multiple_of(5) {
        use std::fmt::Write;
        let _ = write!(s, "{}", (h >> 44) % 100);
    }
}

/// Appends a word of 1..=4 syllables, capitalized when `upper`.
fn push_word(s: &mut String, rng: &mut SmallRng, upper: bool) {
    let start = s.len();
    for _ in 0..rng.random_range(1..=4u32) {
        push_syllable(s, rng.random_range(0..SYLLABLES));
    }
    if upper {
        s[start..start + 1].make_ascii_uppercase();
    }
}

/// The rows of a `revision` table of `n` rows, drawn in row order.
struct RevisionRows {
    n: u64,
    users: u64,
    /// Seconds of the timestamps' range (2004..2025).
    span: u64,
    /// `rev_page` of every row, in row (`rev_id`) order.
    pages: Vec<u32>,
    /// Per page (`rev_page - 1`): its latest `rev_id` so far, 0 before its
    /// first revision.
    latest: Vec<u32>,
    /// Per page: the typical length of its text, which each revision's
    /// `rev_len` varies a little.
    base_len: Vec<f32>,
    comment: String,
    user_text: String,
    timestamp: String,
    sha1: String,
}

impl RevisionRows {
    /// Draws the pages' weights and lengths, the revisions' pages and their
    /// order.
    fn new(n: u64, rng: &mut SmallRng) -> RevisionRows {
        let p = revision_pages(n) as usize;
        // Cumulative weights: page k is drawn for x in [cum[k-1], cum[k]).
        let mut cum = Vec::with_capacity(p);
        let mut total = 0.0f64;
        for _ in 0..p {
            if rng.random::<f64>() >= REVISION_ONCE {
                let u = 1.0 - rng.random::<f64>();
                total += u.powf(-1.0 / REVISION_PARETO);
            }
            cum.push(total);
        }
        if total == 0.0 {
            // Every page drew "once" (a tiny table): weigh them evenly.
            cum = (1..=p).map(|k| k as f64).collect();
            total = p as f64;
        }
        let mut pages: Vec<u32> = Vec::with_capacity(n as usize);
        pages.extend(1..=p as u32);
        for _ in p as u64..n {
            let x = rng.random::<f64>() * total;
            let k = cum.partition_point(|&c| c <= x).min(p - 1);
            pages.push(k as u32 + 1);
        }
        drop(cum);
        for i in (1..pages.len()).rev() {
            let j = rng.random_range(0..=i);
            pages.swap(i, j);
        }
        let base_len = (0..p)
            .map(|_| (2500.0 * (1.3 * normal(rng)).exp()).clamp(1.0, 2_000_000.0) as f32)
            .collect();
        RevisionRows {
            n,
            users: revision_users(n),
            span: (TOUCHED_DAYS.1 - TOUCHED_DAYS.0) as u64 * 86_400,
            pages,
            latest: vec![0; p],
            base_len,
            comment: String::with_capacity(REVISION_TEXT_MAX),
            user_text: String::with_capacity(REVISION_TEXT_MAX),
            timestamp: String::with_capacity(14),
            sha1: String::with_capacity(SHA1_DIGITS),
        }
    }

    /// Row `i` (0-based; `rev_id` is `i + 1`) into `row`.
    fn row(&mut self, i: u64, rng: &mut SmallRng, row: &mut Vec<Value>) {
        let rev_id = i + 1;
        let page = self.pages[i as usize] as usize;
        let parent = std::mem::replace(&mut self.latest[page - 1], rev_id as u32);

        self.user_text.clear();
        let user = if rng.random::<f64>() < REVISION_ANONYMOUS {
            use std::fmt::Write;
            let ip: [u8; 4] = rng.random();
            let _ = write!(
                self.user_text,
                "{}.{}.{}.{}",
                ip[0].max(1),
                ip[1],
                ip[2],
                ip[3]
            );
            0
        } else {
            let user = rng.random_range(1..=self.users);
            push_user_name(&mut self.user_text, user);
            user
        };
        let minor = rng.random::<f64>() < REVISION_MINOR;
        let deleted = if rng.random::<f64>() < REVISION_DELETED {
            rng.random_range(1..=15)
        } else {
            0
        };
        let len = (self.base_len[page - 1] as f64 * (0.1 * normal(rng)).exp())
            .round()
            .clamp(0.0, 2_000_000.0) as i32;
        // Row i's second lies in the i-th of n equal slices of the range, so
        // the timestamps never decrease.
        let slice = rng.random_range(0..self.span) as u128;
        let secs = (i as u128 * self.span as u128 + slice) / self.n as u128;
        self.timestamp.clear();
        push_timestamp(&mut self.timestamp, secs as u64);
        self.make_comment(rng);
        self.sha1.clear();
        push_sha1(&mut self.sha1, rev_id);

        row.clear();
        row.extend([
            Value::Int64(rev_id as i64),
            Value::Int32(page as i32),
            Value::Int64(rev_id as i64),
            Value::Str(self.comment.clone()),
            Value::Int32(user as i32),
            Value::Str(self.user_text.clone()),
            Value::Str(self.timestamp.clone()),
            Value::Bool(minor),
            Value::Int32(deleted),
            Value::Int32(len),
            Value::Int64(parent as i64),
            Value::Str(self.sha1.clone()),
        ]);
    }

    /// A comment into `self.comment`: empty, or words (after a `/* section
    /// */` now and then) cut at a log-normal length of at most 255 bytes.
    fn make_comment(&mut self, rng: &mut SmallRng) {
        let c = &mut self.comment;
        c.clear();
        if rng.random::<f64>() < REVISION_NO_COMMENT {
            return;
        }
        let (median, sigma) = REVISION_COMMENT_LEN;
        let len = (median * (sigma * normal(rng)).exp())
            .round()
            .clamp(1.0, REVISION_TEXT_MAX as f64) as usize;
        if rng.random::<f64>() < REVISION_SECTION {
            c.push_str("/* ");
            for k in 0..rng.random_range(1..=3u32) {
                if k > 0 {
                    c.push(' ');
                }
                push_word(c, rng, k == 0);
            }
            c.push_str(" */");
        }
        while c.len() < len {
            if !c.is_empty() {
                c.push(' ');
            }
            let upper = c.is_empty() || rng.random::<f64>() < 0.1;
            push_word(c, rng, upper);
        }
        c.truncate(len);
        if c.ends_with(' ') {
            c.pop();
            c.push('.');
        }
    }
}
