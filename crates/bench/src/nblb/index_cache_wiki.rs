//! `strata bench index-cache wiki`: No Bits Left Behind §2.1's Wikipedia
//! example side by side with PostgreSQL's covering index, in one run.
//!
//! A `page` table of `rows` rows (`strata gen page`: Wikipedia-like, the
//! `name_title` index on `(page_namespace, page_title)` caching `page_id,
//! page_len, page_is_redirect, page_latest`) is generated into a strata
//! database, with one more such index per extra leaf fill asked for (the
//! cache lives in the leaves' free space, so a lower fill gives it room at
//! the price of a larger index). The same rows (read back from strata's
//! heap) are copied into a private PostgreSQL cluster, which gets `CREATE
//! INDEX page_name_title ON page (page_namespace, page_title) INCLUDE
//! (page_id, page_len, page_is_redirect, page_latest)` (fillfactor 90, the
//! default) and `VACUUM (FREEZE, ANALYZE)`, so the visibility map lets an
//! Index Only Scan skip the heap.
//!
//! Lookups: for each zipf exponent, popularity ranks are shuffled over the
//! rows and sequences of `lookups` keys are drawn; each lookup projects the
//! 4 fields of one `(page_namespace, page_title)`. Everything is warm: the
//! strata table is prewarmed into a pool that holds all of it, and
//! PostgreSQL's table and index are `pg_prewarm`ed into `shared_buffers`
//! that hold both. Per run, the same sequence goes through
//!
//! - strata with the index cache: [`Table::lookup_cached`] per key, in
//!   process, after `warmup` lookups of the same distribution filled the
//!   cache (its hit rate over the measured lookups is reported);
//! - strata without it: [`BTree::lookup`] then the heap tuple, decoding the
//!   4 fields;
//! - strata as SQL looks up by default: [`Table::lookup_cached_auto`] on a
//!   copy of the first leaf fill's index (its own cache and governor),
//!   warmed by the same lookups through that call, so its governor has
//!   chosen between the cache and the plain path by the measured runs;
//! - PostgreSQL: ONE statement for the whole sequence, so client round trips
//!   do not count: `unnest($1::int[], $2::text[])` joined to `page` by a
//!   nested loop over the covering index (hash and merge joins, memoize,
//!   sequential and bitmap scans disabled for the session), summing the 4
//!   fields. Its `Execution Time` from `EXPLAIN (ANALYZE, BUFFERS, TIMING
//!   OFF)` is the measurement (server side, planning and the parameters'
//!   transfer excluded); the plan must be an Index Only Scan of the covering
//!   index with `Heap Fetches` 0, or the run fails. The same statement's
//!   client time is recorded too.
//!
//! The sums of all three must be equal for every run, and before measuring,
//! the first keys are checked one by one against PostgreSQL's rows (or, with
//! PostgreSQL off, strata's two paths against each other). Medians of `runs`
//! runs per exponent.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use postgres::Client;
use postgres::types::{FromSql, Type};
use strata_storage::Table;
use strata_storage::btree::BTree;
use strata_storage::btree::cache::leaf::CacheRng;
use strata_storage::db::{CachedLookups, Index};
use strata_storage::row::{Value, encode_key};

use crate::postgres::{PgServer, ServerConfig, copy_text_line, create_table_sql, explain_sql};

/// The table's name in both engines.
pub(super) const TABLE: &str = "page";
/// PostgreSQL's covering index.
pub(super) const PG_INDEX: &str = "page_name_title";
pub(super) const PAGE: u64 = strata_storage::page::PAGE_SIZE as u64;

/// What `strata bench index-cache wiki` runs.
#[derive(Clone, Debug)]
pub struct WikiOptions {
    /// Table sizes; each gets its own files `wiki-<rows>.*`.
    pub rows: Vec<u64>,
    /// Lookups per run.
    pub lookups: u64,
    /// Lookups that fill the cache before the measured runs (per exponent).
    pub warmup: u64,
    /// Measured runs per exponent (medians reported).
    pub runs: usize,
    /// Zipf exponents; 0 is uniform.
    pub exponents: Vec<f64>,
    /// Leaf fills of strata's cached indexes (0.9 is the generator's).
    pub leaf_fills: Vec<f64>,
    pub seed: u64,
    /// Whether to run the PostgreSQL side.
    pub postgres: bool,
    /// PostgreSQL's `shared_buffers`; None: twice strata's table and
    /// indexes, at least 256MB.
    pub shared_buffers: Option<String>,
    pub out: PathBuf,
    /// Scratch: the strata database and the PostgreSQL cluster.
    pub tmp: PathBuf,
}

impl WikiOptions {
    /// 10^5 and 10^6 rows, 100k lookups per run after 1M warm-up lookups, 5
    /// runs, zipf 0.5, 0.8, 1.0, leaf fills 0.9 and 0.68 (the paper's
    /// example assumes 68%), PostgreSQL on.
    pub fn new(out: impl Into<PathBuf>, tmp: impl Into<PathBuf>) -> WikiOptions {
        WikiOptions {
            rows: vec![100_000, 1_000_000],
            lookups: 100_000,
            warmup: 1_000_000,
            runs: 5,
            exponents: vec![0.5, 0.8, 1.0],
            leaf_fills: vec![0.9, 0.68],
            seed: 16,
            postgres: true,
            shared_buffers: None,
            out: out.into(),
            tmp: tmp.into(),
        }
    }

    /// Refuses options that cannot run (the CLI's usage errors).
    pub fn check(&self) -> Result<()> {
        if self.rows.is_empty() || self.rows.iter().any(|&n| n == 0 || n > i32::MAX as u64) {
            bail!("wiki: row counts from 1 to {}", i32::MAX);
        }
        if self.lookups == 0 || self.runs == 0 {
            bail!("wiki: lookups and runs must be positive");
        }
        if self.leaf_fills.is_empty() || self.leaf_fills.iter().any(|f| !(0.1..=1.0).contains(f)) {
            bail!("wiki: leaf fills in 0.1..=1.0");
        }
        if self.exponents.is_empty() || self.exponents.iter().any(|e| !(0.0..=4.0).contains(e)) {
            bail!("wiki: zipf exponents in 0..=4");
        }
        Ok(())
    }
}

/// What a run's lookups returned, summed: compared between the engines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Sums {
    pub(super) rows: i64,
    pub(super) page_id: i64,
    pub(super) page_len: i64,
    pub(super) page_latest: i64,
    pub(super) redirects: i64,
}

impl Sums {
    /// Adds one row's cached fields, in [`strata_load::PAGE_CACHED`] order.
    pub(super) fn add(&mut self, v: &[Value]) -> Result<()> {
        let (Value::Int64(id), Value::Int32(len), Value::Bool(redirect), Value::Int64(latest)) =
            (&v[0], &v[1], &v[2], &v[3])
        else {
            bail!("unexpected cached fields {v:?}");
        };
        self.rows += 1;
        self.page_id = self.page_id.wrapping_add(*id);
        self.page_len = self.page_len.wrapping_add(*len as i64);
        self.page_latest = self.page_latest.wrapping_add(*latest);
        self.redirects += *redirect as i64;
        Ok(())
    }
}

/// A lookup key: (page_namespace, page_title) as values.
pub(super) type Key = [Value; 2];

/// The cumulative zipf law over ranks 1..=n (exponent 0: uniform), normalized.
pub(crate) fn zipf_cdf(n: usize, alpha: f64) -> Vec<f64> {
    let mut acc = 0.0;
    let mut cdf: Vec<f64> = (1..=n)
        .map(|r| {
            acc += (r as f64).powf(-alpha);
            acc
        })
        .collect();
    for c in &mut cdf {
        *c /= acc;
    }
    cdf
}

/// `count` row numbers drawn from `cdf` over ranks, ranks mapped by `perm`.
fn draw(cdf: &[f64], perm: &[u32], count: u64, rng: &mut CacheRng) -> Vec<u32> {
    (0..count)
        .map(|_| {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            perm[cdf.partition_point(|&c| c < u).min(cdf.len() - 1)]
        })
        .collect()
}

/// One exponent's sequences: warm-up, then one per run.
pub(super) struct Workload {
    pub(super) alpha: f64,
    pub(super) warmup: Vec<u32>,
    pub(super) runs: Vec<Vec<u32>>,
}

/// The sequences of every exponent (deterministic from the seed).
pub(super) fn workloads(o: &WikiOptions, n: u64) -> Vec<Workload> {
    o.exponents
        .iter()
        .map(|&alpha| {
            let cdf = zipf_cdf(n as usize, alpha);
            let mut rng = CacheRng::new(o.seed ^ alpha.to_bits() ^ n);
            let mut perm: Vec<u32> = (0..n as u32).collect();
            for i in (1..perm.len()).rev() {
                perm.swap(i, rng.below(i + 1));
            }
            let warmup = draw(&cdf, &perm, o.warmup, &mut rng);
            let runs = (0..o.runs)
                .map(|_| draw(&cdf, &perm, o.lookups, &mut rng))
                .collect();
            Workload {
                alpha,
                warmup,
                runs,
            }
        })
        .collect()
}

/// The keys of the rows `ids` (row number = page_id − 1), read from the heap.
pub(super) fn keys_of(t: &Table, ids: &[u32]) -> Result<(Vec<u32>, Vec<Key>)> {
    let mut wanted: Vec<u32> = ids.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let mut keys: Vec<Option<Key>> = vec![None; wanted.len()];
    t.scan_rows(|_, row| {
        if let Value::Int64(id) = row[0]
            && let Ok(i) = wanted.binary_search(&((id - 1) as u32))
        {
            keys[i] = Some([row[1].clone(), row[2].clone()]);
        }
        Ok(())
    })?;
    let keys = keys
        .into_iter()
        .enumerate()
        .map(|(i, k)| k.with_context(|| format!("no row with page_id {}", wanted[i] + 1)))
        .collect::<Result<Vec<_>>>()?;
    Ok((wanted, keys))
}

/// Encodes `key` for `ix` into `buf`.
fn encode(ix: &Index, key: &Key, buf: &mut Vec<u8>) {
    buf.clear();
    encode_key(&ix.key_types, key, buf);
}

/// How a strata variant with the cache looks a key up.
#[derive(Clone, Copy)]
pub(super) enum Through {
    /// [`Table::lookup_cached`]: always the cache (the paper's).
    Cache,
    /// [`Table::lookup_cached_auto`]: the index's governor chooses (SQL's
    /// default).
    Auto,
}

impl Through {
    pub(super) fn lookup(
        self,
        t: &Table,
        ix: &Index,
        key: &[u8],
        counts: &mut CachedLookups,
    ) -> Result<Vec<(strata_storage::row::Tid, Vec<Value>)>> {
        Ok(match self {
            Through::Cache => t.lookup_cached(ix, key, counts)?,
            Through::Auto => t.lookup_cached_auto(ix, key, counts)?,
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Through::Cache => "cache",
            Through::Auto => "governed lookup",
        }
    }

    /// The variant's name in the results, at leaf fill `fill`.
    pub(super) fn variant(self, fill: f64) -> String {
        match self {
            Through::Cache => format!("strata cache, leaf fill {fill}"),
            Through::Auto => format!("strata auto, leaf fill {fill}"),
        }
    }
}

/// strata with the cache: per key, [`Table::lookup_cached`] or
/// [`Table::lookup_cached_auto`].
pub(super) fn strata_cached(
    t: &Table,
    ix: &Index,
    keys: &[&Key],
    through: Through,
    counts: &mut CachedLookups,
) -> Result<(f64, Sums)> {
    let mut sums = Sums::default();
    let mut buf = Vec::new();
    let start = Instant::now();
    for k in keys {
        encode(ix, k, &mut buf);
        for (_, v) in through.lookup(t, ix, &buf, counts)? {
            sums.add(&v)?;
        }
    }
    Ok((start.elapsed().as_nanos() as f64 / keys.len() as f64, sums))
}

/// Share of a variant's index entries (%) answered from the leaves, and
/// answered around the cache by the governor.
pub(super) fn shares(c: &CachedLookups) -> (f64, f64) {
    let all = (c.hits + c.misses + c.plain).max(1) as f64;
    (100.0 * c.hits as f64 / all, 100.0 * c.plain as f64 / all)
}

/// strata without the cache: [`BTree::lookup`], then the heap tuple's 4
/// fields.
pub(super) fn strata_plain(t: &Table, ix: &Index, keys: &[&Key]) -> Result<(f64, Sums)> {
    let fields = ix.cached_fields().context("the index caches no fields")?;
    let mut sums = Sums::default();
    let mut buf = Vec::new();
    let start = Instant::now();
    for k in keys {
        encode(ix, k, &mut buf);
        for tid in BTree::lookup(&ix.btree, &buf)? {
            let v = t.cached_columns(&fields, tid)?;
            if let Some(v) = v {
                sums.add(&v)?;
            }
        }
    }
    Ok((start.elapsed().as_nanos() as f64 / keys.len() as f64, sums))
}

/// The lookup statement over `unnest($1::int[], $2::text[])`.
const PG_SUMS: &str = "SELECT count(*), sum(p.page_id)::bigint, sum(p.page_len)::bigint, \
     sum(p.page_latest)::bigint, count(*) FILTER (WHERE p.page_is_redirect) \
     FROM unnest($1::int[], $2::text[]) AS k(ns, t) \
     JOIN page p ON p.page_namespace = k.ns AND p.page_title = k.t";
/// The same lookups row by row, in the keys' order (the check).
const PG_ROWS: &str = "SELECT k.i, p.page_id, p.page_len, p.page_is_redirect, p.page_latest \
     FROM unnest($1::int[], $2::text[]) WITH ORDINALITY AS k(ns, t, i) \
     JOIN page p ON p.page_namespace = k.ns AND p.page_title = k.t ORDER BY k.i";
/// The session: a nested loop over the index, no per-statement cache of
/// inner results (memoize), no parallelism, no JIT.
const PG_SESSION: &str = "SET enable_hashjoin = off; SET enable_mergejoin = off; \
     SET enable_memoize = off; SET enable_seqscan = off; SET enable_bitmapscan = off; \
     SET max_parallel_workers_per_gather = 0; SET jit = off";

/// `json` (EXPLAIN's output type) as text.
struct JsonText(String);

impl<'a> FromSql<'a> for JsonText {
    fn from_sql(
        _: &Type,
        raw: &'a [u8],
    ) -> std::result::Result<JsonText, Box<dyn std::error::Error + Sync + Send>> {
        Ok(JsonText(std::str::from_utf8(raw)?.to_string()))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::JSON || *ty == Type::TEXT
    }
}

/// What one EXPLAIN ANALYZE of [`PG_SUMS`] showed.
pub(super) struct PgExplained {
    pub(super) execution_ms: f64,
    pub(super) plan: String,
    pub(super) heap_fetches: u64,
    pub(super) index_only_scans: u64,
    pub(super) shared_hit: u64,
    pub(super) shared_read: u64,
}

/// Walks an EXPLAIN JSON plan: (Heap Fetches summed, Index Only Scans of
/// the covering index).
fn walk(node: &serde_json::Value, fetches: &mut u64, ios: &mut u64) {
    if node["Node Type"] == "Index Only Scan" && node["Index Name"] == PG_INDEX {
        *ios += 1;
    }
    *fetches += node["Heap Fetches"].as_u64().unwrap_or(0);
    if let Some(children) = node["Plans"].as_array() {
        for c in children {
            walk(c, fetches, ios);
        }
    }
}

fn pg_params<'a>(keys: &[&'a Key]) -> Result<(Vec<i32>, Vec<&'a str>)> {
    let mut ns = Vec::with_capacity(keys.len());
    let mut titles = Vec::with_capacity(keys.len());
    for k in keys {
        let (Value::Int32(n), Value::Str(t)) = (&k[0], &k[1]) else {
            bail!("unexpected key {k:?}");
        };
        ns.push(*n);
        titles.push(t.as_str());
    }
    Ok((ns, titles))
}

/// Runs [`PG_SUMS`] over `keys` (client time in ns per lookup, sums), then
/// the same under EXPLAIN ANALYZE.
pub(super) fn pg_run(client: &mut Client, keys: &[&Key]) -> Result<(f64, Sums, PgExplained)> {
    let (ns, titles) = pg_params(keys)?;
    let start = Instant::now();
    let row = client.query_one(PG_SUMS, &[&ns, &titles])?;
    let client_ns = start.elapsed().as_nanos() as f64 / keys.len() as f64;
    let get = |i: usize| -> i64 { row.get::<_, Option<i64>>(i).unwrap_or(0) };
    let sums = Sums {
        rows: get(0),
        page_id: get(1),
        page_len: get(2),
        page_latest: get(3),
        redirects: get(4),
    };
    let row = client.query_one(&explain_sql(PG_SUMS, true), &[&ns, &titles])?;
    let json = row.get::<_, JsonText>(0).0;
    let stats = crate::postgres::parse_explain_json(&json)?;
    let doc: serde_json::Value = serde_json::from_str(&json)?;
    let (mut heap_fetches, mut index_only_scans) = (0, 0);
    walk(&doc[0]["Plan"], &mut heap_fetches, &mut index_only_scans);
    Ok((
        client_ns,
        sums,
        PgExplained {
            execution_ms: stats
                .execution_ms
                .context("EXPLAIN ANALYZE without Execution Time")?,
            plan: stats.plan,
            heap_fetches,
            index_only_scans,
            shared_hit: stats.shared_hit_blocks,
            shared_read: stats.shared_read_blocks,
        },
    ))
}

/// The PostgreSQL side of one size: the cluster with `page` loaded.
pub(super) struct PgSide {
    pub(super) server: PgServer,
    pub(super) heap_bytes: u64,
    pub(super) index_bytes: u64,
    pub(super) shared_buffers: String,
    pub(super) load_s: f64,
}

impl PgSide {
    pub(super) fn start(
        work_dir: &Path,
        shared_buffers: &str,
        t: &Table,
        log: &mut dyn FnMut(&str),
    ) -> Result<PgSide> {
        let mut server = PgServer::start(work_dir, &ServerConfig::reads(shared_buffers), log)?;
        let start = Instant::now();
        let client = server.client()?;
        client.batch_execute(&format!("DROP TABLE IF EXISTS {TABLE}"))?;
        let mut tx = client.transaction()?;
        tx.batch_execute(&create_table_sql(TABLE, t.schema()))?;
        let types: Vec<_> = t.schema().columns.iter().map(|c| c.ty).collect();
        let mut w = tx.copy_in(&format!("COPY {TABLE} FROM STDIN WITH (FREEZE)"))?;
        let mut buf = Vec::with_capacity(1 << 20);
        let mut write_err = None;
        t.scan_rows(|_, row| {
            copy_text_line(&row, &types, &mut buf);
            if buf.len() >= 1 << 20 {
                if let Err(e) = std::io::Write::write_all(&mut w, &buf) {
                    write_err.get_or_insert(e);
                }
                buf.clear();
            }
            Ok(())
        })?;
        if let Some(e) = write_err {
            return Err(e).context("COPY into PostgreSQL");
        }
        std::io::Write::write_all(&mut w, &buf).context("COPY into PostgreSQL")?;
        let copied = w.finish().context("COPY into PostgreSQL")?;
        tx.commit()?;
        if copied != t.rows() {
            bail!(
                "PostgreSQL's COPY took {copied} rows, {} were sent",
                t.rows()
            );
        }
        let cached = strata_load::PAGE_CACHED.join(", ");
        let key = strata_load::PAGE_KEY.join(", ");
        // One statement per call: VACUUM cannot run in the implicit
        // transaction of a multi-statement string.
        for sql in [
            format!("CREATE INDEX {PG_INDEX} ON {TABLE} ({key}) INCLUDE ({cached})"),
            format!("VACUUM (FREEZE, ANALYZE) {TABLE}"),
            "CHECKPOINT".to_string(),
            "CREATE EXTENSION IF NOT EXISTS pg_prewarm".to_string(),
        ] {
            client
                .batch_execute(&sql)
                .with_context(|| format!("PostgreSQL: {sql}"))?;
        }
        client.query_one(
            &format!("SELECT pg_prewarm('{TABLE}'), pg_prewarm('{PG_INDEX}')"),
            &[],
        )?;
        let row = client.query_one(
            &format!(
                "SELECT pg_relation_size('{TABLE}'), pg_relation_size('{PG_INDEX}'), \
                 current_setting('shared_buffers')"
            ),
            &[],
        )?;
        let side = PgSide {
            heap_bytes: row.get::<_, i64>(0) as u64,
            index_bytes: row.get::<_, i64>(1) as u64,
            shared_buffers: row.get(2),
            load_s: start.elapsed().as_secs_f64(),
            server,
        };
        log(&format!(
            "PostgreSQL {}: loaded {} rows in {:.1} s; heap {:.1} MiB, covering index {:.1} MiB; shared_buffers {}",
            side.server.version(),
            t.rows(),
            side.load_s,
            side.heap_bytes as f64 / (1 << 20) as f64,
            side.index_bytes as f64 / (1 << 20) as f64,
            side.shared_buffers
        ));
        side_session(side)
    }

    pub(super) fn client(&mut self) -> Result<&mut Client> {
        self.server.client()
    }
}

fn side_session(mut side: PgSide) -> Result<PgSide> {
    side.client()?.batch_execute(PG_SESSION)?;
    Ok(side)
}

/// Checks the first keys one by one: strata's cached and plain paths, and
/// PostgreSQL's rows when there is a PostgreSQL side.
pub(super) fn check_rows(
    t: &Table,
    indexes: &[(f64, &Index, Through)],
    keys: &[&Key],
    pg: Option<&mut PgSide>,
) -> Result<usize> {
    let mut expected: Vec<Vec<Value>> = Vec::new();
    let (_, first, _) = indexes[0];
    let fields = first
        .cached_fields()
        .context("the index caches no fields")?;
    let mut buf = Vec::new();
    for k in keys {
        encode(first, k, &mut buf);
        let tids = first.btree.lookup(&buf)?;
        let [tid] = tids[..] else {
            bail!("key {k:?}: {} entries, expected one", tids.len());
        };
        let v = t
            .heap()
            .with_tuple(tid, |b| {
                fields
                    .cols
                    .iter()
                    .map(|&c| t.layout().decode_column(b, c, tid))
                    .collect::<Vec<Value>>()
            })?
            .with_context(|| format!("key {k:?}: no tuple at {tid:?}"))?;
        expected.push(v);
    }
    for &(fill, ix, through) in indexes {
        // Twice: a miss that fills, then (mostly) a hit.
        for _ in 0..2 {
            let mut counts = CachedLookups::default();
            for (k, want) in keys.iter().zip(&expected) {
                encode(ix, k, &mut buf);
                let got = through.lookup(t, ix, &buf, &mut counts)?;
                if got.len() != 1 || &got[0].1 != want {
                    bail!(
                        "key {k:?}: strata's {} (leaf fill {fill}) gave {got:?}, the heap {want:?}",
                        through.name()
                    );
                }
            }
        }
    }
    if let Some(pg) = pg {
        let (ns, titles) = pg_params(keys)?;
        let rows = pg.client()?.query(PG_ROWS, &[&ns, &titles])?;
        if rows.len() != keys.len() {
            bail!("PostgreSQL found {} of {} keys", rows.len(), keys.len());
        }
        for (i, (r, want)) in rows.iter().zip(&expected).enumerate() {
            let got = vec![
                Value::Int64(r.get(1)),
                Value::Int32(r.get(2)),
                Value::Bool(r.get(3)),
                Value::Int64(r.get(4)),
            ];
            if r.get::<_, i64>(0) != i as i64 + 1 || &got != want {
                bail!(
                    "key {:?}: PostgreSQL gave {got:?}, strata {want:?}",
                    keys[i]
                );
            }
        }
    }
    Ok(keys.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_draws_are_skewed_and_deterministic() {
        let mut o = WikiOptions::new("/nonexistent", "/nonexistent");
        o.exponents = vec![1.0, 0.0];
        o.warmup = 0;
        o.lookups = 20_000;
        o.runs = 1;
        let a = workloads(&o, 1000);
        let b = workloads(&o, 1000);
        assert_eq!(a[0].runs, b[0].runs);
        let top = |w: &Workload| {
            let mut c = vec![0u32; 1000];
            for &i in &w.runs[0] {
                c[i as usize] += 1;
            }
            *c.iter().max().unwrap()
        };
        // zipf 1 over 1000 ranks: the top item ~13% of draws; uniform ~0.1%.
        assert!(top(&a[0]) > 2000, "{}", top(&a[0]));
        assert!(top(&a[1]) < 60, "{}", top(&a[1]));
    }
}
