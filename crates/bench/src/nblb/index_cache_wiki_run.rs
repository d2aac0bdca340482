//! `strata bench index-cache wiki`, the run: for each size, the strata
//! database (one index per leaf fill) and the PostgreSQL cluster, every
//! workload's lookups through each path, checked against each other, and
//! the result files (`wiki-<rows>.csv`, `.md`, `.svg`, `.png`).

use std::time::Instant;

use anyhow::{Result, bail};
use strata_storage::db::{CachedLookups, Index, NoProgress};
use strata_storage::{Database, DbOptions};

use super::index_cache_wiki::{
    Key, PAGE, PG_INDEX, PgSide, Sums, TABLE, Through, WikiOptions, check_rows, keys_of, pg_run,
    shares, strata_cached, strata_plain, workloads,
};
use crate::postgres::PgServer;
use crate::report::plot::{Axis, Legend, Plot};
use crate::report::results::{ResultRow, ResultSet, median};
use crate::report::summary::{Comparison, Summary, num, provenance};

/// One size's measurements, as result rows.
fn run_size(
    o: &WikiOptions,
    n: u64,
    log: &mut dyn FnMut(&str),
) -> Result<(ResultSet, Vec<String>)> {
    let dir = o.tmp.join(format!("wiki-{n}.db"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&o.tmp)?;
    // Room for the heap (~130 bytes a row), every index (one per fill and
    // the governed lookup's copy) and slack.
    let pool = (n as usize) * (160 + 100 * (o.leaf_fills.len() + 1)) + (256 << 20);
    let db = Database::create(
        &dir,
        DbOptions {
            buffer_pool_bytes: pool,
            direct_io: false,
            ..DbOptions::default()
        },
    )?;
    let mut spec = strata_load::GenSpec::new(strata_load::GenKind::Page, n);
    spec.seed = o.seed;
    let start = Instant::now();
    strata_load::generate(&db, &spec, &NoProgress)?;
    let base = spec.index_spec();
    let mut names = Vec::new();
    for &fill in &o.leaf_fills {
        if fill == base.leaf_fill {
            names.push((fill, base.name.clone()));
            continue;
        }
        let name = format!("{}_f{}", base.name, (fill * 100.0).round() as u32);
        let mut s = base.clone();
        s.name = name.clone();
        s.leaf_fill = fill;
        db.create_index(TABLE, s, &NoProgress)?;
        names.push((fill, name));
    }
    // SQL's governed lookup gets its own copy of the first fill's index, so
    // neither its fills nor the cache variants' reach the other's leaves.
    let auto_fill = o.leaf_fills[0];
    let auto_name = format!("{}_auto", base.name);
    let mut s = base.clone();
    s.name = auto_name.clone();
    s.leaf_fill = auto_fill;
    db.create_index(TABLE, s, &NoProgress)?;
    let gen_s = start.elapsed().as_secs_f64();
    let read = db.prewarm(TABLE)?;
    let t = db.table(TABLE)?;
    let heap_bytes = t.heap().num_pages() * PAGE;
    // strata's variants with the cache: one per fill, then the governed
    // lookup on its own index.
    let auto = t.index(&auto_name)?;
    let variants: Vec<(f64, &Index, Through)> = names
        .iter()
        .map(|(f, name)| Ok((*f, t.index(name)?, Through::Cache)))
        .chain([Ok((auto_fill, auto, Through::Auto))])
        .collect::<Result<_>>()?;
    let total = heap_bytes
        + variants
            .iter()
            .map(|(_, i, _)| i.btree.num_pages() * PAGE)
            .sum::<u64>();
    if total as usize > pool {
        bail!("the strata table ({total} bytes) does not fit the pool ({pool} bytes)");
    }
    let mut notes = vec![format!(
        "strata: {n} rows generated and indexed in {gen_s:.1} s (seed {}); heap {:.1} MiB; buffer pool {} MiB (holds the whole table and its indexes: {read} pages prewarmed), buffered I/O",
        o.seed,
        heap_bytes as f64 / (1 << 20) as f64,
        pool >> 20
    )];
    log(&notes[0]);

    let mut pg = if o.postgres {
        let sb = o
            .shared_buffers
            .clone()
            .unwrap_or_else(|| format!("{}MB", (2 * total / (1 << 20)).max(256)));
        Some(PgSide::start(&o.tmp.join("pg"), &sb, &t, log)?)
    } else {
        None
    };

    let work = workloads(o, n);
    let all_ids: Vec<u32> = work
        .iter()
        .flat_map(|w| w.warmup.iter().chain(w.runs.iter().flatten()).copied())
        .collect();
    let (ids, keys) = keys_of(&t, &all_ids)?;
    let key_of = |id: u32| -> &Key { &keys[ids.binary_search(&id).expect("collected")] };
    let seq = |s: &[u32]| -> Vec<&Key> { s.iter().map(|&id| key_of(id)).collect() };

    let first = seq(&work[0].runs[0][..(o.lookups as usize).min(2000)]);
    let checked = check_rows(&t, &variants, &first, pg.as_mut())?;
    notes.push(format!(
        "checked before measuring: the first {checked} keys one by one, strata's cache at every leaf fill and the governed lookup against the heap{}",
        if pg.is_some() {
            " and against PostgreSQL's rows"
        } else {
            ""
        }
    ));

    let mut set = ResultSet::new();
    let version = pg
        .as_ref()
        .map(|p| p.server.version().to_string())
        .unwrap_or_default();
    let mut plan_note = None;
    let mut notes_gov = Vec::new();
    for w in &work {
        let name = if w.alpha == 0.0 {
            "uniform".to_string()
        } else {
            format!("zipf {}", w.alpha)
        };
        let warm = seq(&w.warmup);
        // Each warms through its own way: the governed lookup as SQL's
        // would, its governor keeping what it learned from the workload
        // before.
        for &(_, ix, through) in &variants {
            ix.btree.invalidate_cache();
            strata_cached(&t, ix, &warm, through, &mut CachedLookups::default())?;
        }
        if let Some(p) = pg.as_mut() {
            // Warm-up of the statement (everything is in shared_buffers).
            pg_run(p.client()?, &seq(&w.runs[0]))?;
        }
        let mut cached: Vec<(Vec<f64>, CachedLookups)> =
            vec![(Vec::new(), CachedLookups::default()); variants.len()];
        let (mut plain, mut pg_exec, mut pg_client) = (Vec::new(), Vec::new(), Vec::new());
        let mut pg_last = None;
        for (r, run) in w.runs.iter().enumerate() {
            let keys = seq(run);
            let mut truth = None;
            let mut agree = |what: &str, s: Sums| -> Result<()> {
                match truth {
                    None => truth = Some(s),
                    Some(t) if t == s => {}
                    Some(t) => bail!("{name} run {r}: {what} gave {s:?}, the first path {t:?}"),
                }
                Ok(())
            };
            let (ns, s) = strata_plain(&t, variants[0].1, &keys)?;
            agree("strata without the cache", s)?;
            plain.push(ns);
            for (i, &(fill, ix, through)) in variants.iter().enumerate() {
                let (ns, s) = strata_cached(&t, ix, &keys, through, &mut cached[i].1)?;
                agree(
                    &format!("strata's {} at leaf fill {fill}", through.name()),
                    s,
                )?;
                cached[i].0.push(ns);
            }
            if let Some(p) = pg.as_mut() {
                let (client_ns, s, e) = pg_run(p.client()?, &keys)?;
                agree("PostgreSQL", s)?;
                if e.index_only_scans != 1 || e.heap_fetches != 0 {
                    bail!(
                        "PostgreSQL's plan is not one Index Only Scan of {PG_INDEX} without heap fetches: {} ({} index only scans, {} heap fetches)",
                        e.plan,
                        e.index_only_scans,
                        e.heap_fetches
                    );
                }
                pg_exec.push(e.execution_ms * 1e6 / keys.len() as f64);
                pg_client.push(client_ns);
                pg_last = Some(e);
            }
        }
        let med = |v: &[f64]| median(v).unwrap_or(f64::NAN);
        let row = |variant: &str, ns: f64| {
            ResultRow {
                wall_ms: ns * o.lookups as f64 / 1e6,
                rows_out: o.lookups,
                ..ResultRow::new("wiki", "memory", variant, w.alpha)
            }
            .with("rows", n)
            .with("workload", &name)
            .with("ns_per_lookup", format!("{ns:.1}"))
            .with("runs", o.runs)
        };
        let plain_ns = med(&plain);
        set.push(
            row("strata no cache", plain_ns)
                .with("index_bytes", variants[0].1.btree.num_pages() * PAGE)
                .with("leaf_fill", variants[0].0)
                .with("heap_bytes", heap_bytes),
        );
        let mut line = format!("{n} rows, {name}: strata no cache {plain_ns:.0} ns");
        for (&(fill, ix, through), (ns, c)) in variants.iter().zip(&cached) {
            let variant = through.variant(fill);
            let (hit, around) = shares(c);
            let stats = ix.btree.cache_stats()?;
            let m = med(ns);
            line += &format!(", {variant} {m:.0} ns ({hit:.1}% hits, {around:.1}% around)");
            set.push(
                row(&variant, m)
                    .with("index_bytes", ix.btree.num_pages() * PAGE)
                    .with("leaf_fill", fill)
                    .with("heap_bytes", heap_bytes)
                    .with("hit_rate_pct", format!("{hit:.2}"))
                    .with("around_cache_pct", format!("{around:.2}"))
                    .with("cache_hits", c.hits)
                    .with("cache_misses", c.misses)
                    .with("cache_fills", c.fills)
                    .with("cache_refused", c.refused)
                    .with("without_cache", c.plain)
                    .with("cache_slots", stats.slots)
                    .with("cache_items", stats.items)
                    .with(
                        "capacity_pct",
                        format!("{:.1}", 100.0 * stats.slots as f64 / n as f64),
                    ),
            );
        }
        let g = auto.governor.state();
        notes_gov.push(format!(
            "{name}: the governed lookup's governor chose {:?} after {} decisions and {} switches (last window: {} ns per lookup without the cache, {} through it), exploring one lookup in {}",
            g.chosen, g.decisions, g.switches, g.last_ns[0], g.last_ns[1], g.explore_one_in
        ));
        if let (Some(p), Some(e)) = (pg.as_ref(), pg_last) {
            let (exec, client) = (med(&pg_exec), med(&pg_client));
            line += &format!(", PostgreSQL {exec:.0} ns (client {client:.0} ns)");
            set.push(
                row("PostgreSQL covering index", exec)
                    .with("index_bytes", p.index_bytes)
                    .with("heap_bytes", p.heap_bytes)
                    .with("leaf_fill", 0.9)
                    .with("client_ns_per_lookup", format!("{client:.1}"))
                    .with("plan", &e.plan)
                    .with("heap_fetches", e.heap_fetches)
                    .with("shared_hit_blocks", e.shared_hit)
                    .with("shared_read_blocks", e.shared_read)
                    .with("pg_version", &version)
                    .with("shared_buffers", &p.shared_buffers),
            );
            plan_note.get_or_insert(format!(
                "PostgreSQL's plan (EXPLAIN ANALYZE, every run checked): {}, Heap Fetches {}, shared buffers hit {} / read {} in the last run",
                e.plan, e.heap_fetches, e.shared_hit, e.shared_read
            ));
        }
        log(&line);
    }
    if let Some(p) = &pg {
        notes.push(format!(
            "PostgreSQL {}: private cluster, shared_buffers = {} (holds the table and the index; both pg_prewarm'ed), COPY + CREATE INDEX + VACUUM (FREEZE, ANALYZE) in {:.1} s",
            p.server.version(),
            p.shared_buffers,
            p.load_s
        ));
    }
    notes.extend(plan_note);
    notes.extend(notes_gov);
    drop(t);
    drop(pg);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(o.tmp.join("pg"));
    Ok((set, notes))
}

/// Runs every size: `wiki-<rows>.csv`, `.md`, `.svg`, `.png`; returns the
/// summaries' text.
pub fn run_wiki(o: &WikiOptions, log: &mut dyn FnMut(&str)) -> Result<String> {
    o.check()?;
    if o.postgres {
        PgServer::binaries()?;
    }
    std::fs::create_dir_all(&o.out)?;
    let mut text = String::new();
    for &n in &o.rows {
        let (set, notes) = run_size(o, n, log)?;
        let stem = format!("wiki-{n}");
        set.write_csv(o.out.join(format!("{stem}.csv")))?;
        let s = summarize(o, n, &set, &notes, &stem)?;
        text += s.as_str();
        s.write(o.out.join(format!("{stem}.md")))?;
    }
    Ok(text)
}

fn summarize(
    o: &WikiOptions,
    n: u64,
    set: &ResultSet,
    notes: &[String],
    stem: &str,
) -> Result<Summary> {
    let rows = set.rows();
    let mut variants: Vec<String> = Vec::new();
    for r in rows {
        if !variants.contains(&r.variant) {
            variants.push(r.variant.clone());
        }
    }
    let workloads: Vec<String> = o
        .exponents
        .iter()
        .map(|&a| {
            if a == 0.0 {
                "uniform".to_string()
            } else {
                format!("zipf {a}")
            }
        })
        .collect();
    let find =
        |variant: &str, alpha: f64| rows.iter().find(|r| r.variant == variant && r.x == alpha);
    let ns = |variant: &str, alpha: f64| {
        find(variant, alpha)
            .and_then(|r| r.extra_f64("ns_per_lookup"))
            .unwrap_or(f64::NAN)
    };
    let mut plot = Plot::bars(
        format!("page lookups, {n} rows: strata's index cache vs PostgreSQL's covering index"),
        "lookup skew",
        workloads.clone(),
        Axis::linear("ns per lookup (median)"),
    );
    for v in &variants {
        plot = plot.bar_series(v.clone(), o.exponents.iter().map(|&a| ns(v, a)));
    }
    plot.legend(Legend::Right).write(o.out.join(stem))?;

    let mut s = Summary::new(&format!(
        "Index caches: a Wikipedia-like page table, {n} rows, strata beside PostgreSQL's covering index"
    ));
    s.paragraph(&provenance());
    s.paragraph(&format!(
        "`strata gen page` rows (seed {}): lookups of `(page_namespace, page_title)` projecting `page_id, page_len, page_is_redirect, page_latest` (No Bits Left Behind §2.1's most popular Wikipedia query class). {} lookups per run, zipf-distributed over the rows (popularity ranks shuffled over the rows), median of {} runs per workload; the cache was filled by {} lookups of the same distribution first. Everything warm, one thread. **strata cache**: `Table::lookup_cached` per key in process (the 4 fields from the leaf on a hit, from the heap on a miss, which fills), on an index built at the leaf fill shown; **strata auto**: `Table::lookup_cached_auto`, SQL's default lookup (`strata.index_cache = auto`), on its own copy of the first leaf fill's index, warmed through itself: its governor answers each lookup through the cache or around it (`BTree::lookup` + heap), whichever its timed samples found cheaper (hit % counts the entries answered from the leaves, around % those answered without the cache); **strata no cache**: `BTree::lookup` then the heap tuple's 4 fields; **PostgreSQL**: all the run's keys in ONE statement (`unnest($1::int[], $2::text[])` joined by a nested loop to an Index Only Scan of `CREATE INDEX … (page_namespace, page_title) INCLUDE (page_id, page_len, page_is_redirect, page_latest)`; hash/merge joins, memoize, seq and bitmap scans off), its EXPLAIN (ANALYZE, TIMING OFF) Execution Time per key — no client round trip per lookup, planning and the parameters' transfer excluded; the same statement's client time is in the CSV (`client_ns_per_lookup`). Both sides sum the 4 fields; the sums are equal in every run (checked).",
        o.seed, o.lookups, o.runs, o.warmup
    ));
    s.bullets(notes);
    s.image(&format!("{n} rows"), &format!("{stem}.svg"));

    let pg = "PostgreSQL covering index";
    let has_pg = variants.iter().any(|v| v == pg);
    // Sizes.
    let mut size_rows = Vec::new();
    for v in &variants {
        let Some(r) = rows.iter().find(|r| &r.variant == v) else {
            continue;
        };
        let bytes = r.extra_f64("index_bytes").unwrap_or(f64::NAN);
        let cap = r.get("capacity_pct");
        size_rows.push(vec![
            v.clone(),
            format!("{:.2}", bytes / (1 << 20) as f64),
            format!("{:.1}", bytes / n as f64),
            r.get("leaf_fill"),
            if cap.is_empty() { "—".into() } else { cap },
        ]);
    }
    s.table(
        &[
            "index",
            "MiB",
            "bytes / row",
            "leaf fill",
            "cache capacity (% of rows)",
        ],
        size_rows,
    );
    // Latency.
    let mut header = vec!["workload".to_string()];
    header.extend(variants.iter().map(|v| format!("{v} ns")));
    let cache_variants: Vec<&String> = variants
        .iter()
        .filter(|v| v.starts_with("strata cache") || v.starts_with("strata auto"))
        .collect();
    let auto_variants: Vec<&String> = variants
        .iter()
        .filter(|v| v.starts_with("strata auto"))
        .collect();
    header.extend(cache_variants.iter().map(|v| format!("{v}: hit %")));
    header.extend(auto_variants.iter().map(|v| format!("{v}: around %")));
    if has_pg {
        header.extend(cache_variants.iter().map(|v| format!("PostgreSQL / {v}")));
        header.push("PostgreSQL / strata no cache".into());
    }
    let mut table = Vec::new();
    for (&a, w) in o.exponents.iter().zip(&workloads) {
        let mut line = vec![w.clone()];
        line.extend(variants.iter().map(|v| num(ns(v, a))));
        line.extend(
            cache_variants
                .iter()
                .map(|v| find(v, a).map_or("—".into(), |r| r.get("hit_rate_pct"))),
        );
        line.extend(
            auto_variants
                .iter()
                .map(|v| find(v, a).map_or("—".into(), |r| r.get("around_cache_pct"))),
        );
        if has_pg {
            line.extend(
                cache_variants
                    .iter()
                    .map(|v| format!("{:.2}", ns(pg, a) / ns(v, a))),
            );
            line.push(format!("{:.2}", ns(pg, a) / ns("strata no cache", a)));
        }
        table.push(line);
    }
    s.table(&header, table);
    if has_pg {
        let pg_bytes = find(pg, o.exponents[0])
            .and_then(|r| r.extra_f64("index_bytes"))
            .unwrap_or(f64::NAN);
        let mut cmp = Vec::new();
        for v in &cache_variants {
            let bytes = find(v, o.exponents[0])
                .and_then(|r| r.extra_f64("index_bytes"))
                .unwrap_or(f64::NAN);
            cmp.push(
                Comparison::new(
                    format!("index size: PostgreSQL / {v}"),
                    pg_bytes / bytes,
                    1.0,
                )
                .note("the issue's target: > 1 (a smaller index)"),
            );
            for (&a, w) in o.exponents.iter().zip(&workloads) {
                cmp.push(
                    Comparison::new(
                        format!("lookup time, {w}: PostgreSQL / {v}"),
                        ns(pg, a) / ns(v, a),
                        1.0,
                    )
                    .note("the issue's target: > 1 (faster lookups)"),
                );
            }
        }
        s.comparisons(&cmp);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(postgres: bool) -> (tempfile::TempDir, WikiOptions) {
        let root = tempfile::Builder::new()
            .prefix("strata-wiki-test")
            .tempdir_in("/tmp")
            .unwrap();
        let mut o = WikiOptions::new(root.path().join("out"), root.path().join("tmp"));
        o.rows = vec![3_000];
        o.lookups = 2_000;
        o.warmup = 5_000;
        o.runs = 2;
        o.exponents = vec![0.8];
        o.postgres = postgres;
        (root, o)
    }

    /// Without PostgreSQL: strata's cache path, governed path and heap path
    /// agree key by key and in every run's sums (run_size fails otherwise),
    /// and the files are written.
    #[test]
    fn strata_paths_agree_and_files_are_written() {
        let (_root, o) = small(false);
        let text = run_wiki(&o, &mut |_| {}).unwrap();
        assert!(text.contains("strata cache, leaf fill 0.68"), "{text}");
        assert!(
            text.contains("strata auto, leaf fill 0.9: around %"),
            "{text}"
        );
        let set = ResultSet::read_csv(o.out.join("wiki-3000.csv")).unwrap();
        // no cache + two leaf fills + auto, one workload.
        assert_eq!(set.len(), 4);
        let auto = set
            .rows()
            .iter()
            .find(|r| r.variant == "strata auto, leaf fill 0.9")
            .unwrap();
        // Every entry is answered one way or the other, and a fresh
        // governor explores both.
        let n = |c: &str| auto.extra_f64(c).unwrap();
        assert!(n("cache_hits") + n("cache_misses") > 0.0, "{auto:?}");
        assert!(n("without_cache") > 0.0, "{auto:?}");
        assert_eq!(
            n("cache_hits") + n("cache_misses") + n("without_cache"),
            (o.runs as u64 * o.lookups) as f64,
            "one entry per key: {auto:?}"
        );
        let hit = |fill: &str| {
            set.rows()
                .iter()
                .find(|r| r.variant == format!("strata cache, leaf fill {fill}"))
                .and_then(|r| r.extra_f64("hit_rate_pct"))
                .unwrap()
        };
        assert!(hit("0.68") > hit("0.9"), "more room, more hits");
        assert!(o.out.join("wiki-3000.svg").exists());
        assert!(o.out.join("wiki-3000.png").exists());
        assert!(!o.tmp.join("wiki-3000.db").exists(), "scratch removed");
    }

    /// strata's lookups equal PostgreSQL's, key by key and in every run's
    /// sums. `cargo test -p strata-bench wiki_against_postgres --
    /// --ignored`; needs PostgreSQL (scripts/setup_postgres.sh).
    #[test]
    #[ignore = "needs PostgreSQL (scripts/setup_postgres.sh); ~15 s"]
    fn wiki_against_postgres() {
        let (_root, o) = small(true);
        let text = run_wiki(&o, &mut |_| {}).unwrap();
        assert!(text.contains("PostgreSQL / strata cache"), "{text}");
        let set = ResultSet::read_csv(o.out.join("wiki-3000.csv")).unwrap();
        let pg = set
            .rows()
            .iter()
            .find(|r| r.variant == "PostgreSQL covering index")
            .unwrap();
        assert_eq!(pg.get("heap_fetches"), "0");
        assert!(pg.get("plan").contains("Index Only Scan"));
    }
}
