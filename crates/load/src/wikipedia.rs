//! The Wikipedia-like tables of No Bits Left Behind's examples, `page` and
//! `revision` (the module docs of `generate` describe the data): their
//! schemas, keys and constants, and the row generators [`crate::generate`]
//! drives, one row at a time in row order.

use rand::Rng;
use rand::rngs::SmallRng;
use strata_storage::row::{Schema, Value};

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
pub(crate) const PAGE_COLUMNS: usize = 12;

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
pub(crate) struct PageRows {
    n: u64,
    /// Coprime with `n`: row `i`'s title core spells `(i·mul + add) mod n`.
    mul: u64,
    add: u64,
    title: String,
    touched: String,
    links: String,
}

impl PageRows {
    pub(crate) fn new(n: u64) -> PageRows {
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
    pub(crate) fn row(&mut self, i: u64, rng: &mut SmallRng, row: &mut Vec<Value>) {
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
pub(crate) const REVISION_COLUMNS: usize = 12;
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
pub(crate) struct RevisionRows {
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
    pub(crate) fn new(n: u64, rng: &mut SmallRng) -> RevisionRows {
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
    pub(crate) fn row(&mut self, i: u64, rng: &mut SmallRng, row: &mut Vec<Value>) {
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
