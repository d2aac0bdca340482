//! `strata bench tpch --encoding`: types as hints (No Bits Left Behind §4.1)
//! on TPC-H — bytes declared against stored, per column, and the cold full
//! scans of Q1 and Q6 before and after.
//!
//! **Data.** The benchmark database (`crate::prepare`, the one `strata bench
//! tpch` uses) is the *declared* state. Two copies are compacted table by
//! table (`Database::compact`, what `strata compact TABLE` does): `narrow`
//! without dictionaries (frames of reference and unpadded text only) and
//! `dictionary` with them. Copies are made once and reused while their
//! catalog says they are compacted.
//!
//! The paper-like tables (`strata gen revision` and `page`) are generated and
//! compacted too, for their bytes per column before and after.
//!
//! **Measure.** Per round, per device, per state, per query, with the scan in
//! one part and then split as `strata.scan_partitions = auto` splits it: the
//! state's database opened with an empty buffer pool (cold), the query run once
//! under `strata.access_path = full` (or `--access-path`: `smooth`, the SQL
//! default, reaches both queries through the l_shipdate index). Real: direct I/O, wall time; hdd/ssd:
//! wall time plus the profile's modeled device time. Medians over rounds; the
//! speedups are ratios of medians measured in the same rounds. Every answer
//! must be the declared state's in one part, byte for byte.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, ensure};
use strata_bench::bench_db::copy_dir;
use strata_bench::report::results::{ResultRow, ResultSet, median};
use strata_bench::report::summary::{Summary, num, provenance};
use strata_sql::SqlSession;
use strata_storage::Database;
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::maintenance::compact::CompactOptions;
use strata_storage::maintenance::waste::analyze;
use strata_storage::page::PAGE_SIZE;

use crate::BenchOptions;

/// The states, in the report's order.
const STATES: [&str; 3] = ["declared", "narrow", "dictionary"];
const QUERIES: [&str; 2] = ["q01", "q06"];
/// `strata.scan_partitions` of each run: the scan in one part, and as the
/// default splits it (the headline figures).
const PARTS: [&str; 2] = ["1", "auto"];

/// What `--encoding` runs.
pub struct EncodingOptions {
    pub bench: BenchOptions,
    pub devices: Vec<String>,
    /// Rows of the paper-like tables (`strata gen revision`, `page`).
    pub paper_rows: u64,
    /// `strata.access_path` of the runs.
    pub access_path: strata_sql::AccessPathSetting,
}

fn state_dir(base: &Path, state: &str) -> PathBuf {
    if state == "declared" {
        return base.to_path_buf();
    }
    let name = base.file_name().unwrap_or_default().to_string_lossy();
    base.with_file_name(format!("{name}-{state}"))
}

fn open(dir: &Path, opts: DbOptions) -> Result<Database> {
    Database::open(dir, opts).with_context(|| format!("opening {}", dir.display()))
}

/// Makes the compacted copy `state` of the declared database unless it is
/// there (its lineitem encoded).
fn make_state(o: &EncodingOptions, state: &str, log: &mut dyn FnMut(&str)) -> Result<()> {
    let dir = state_dir(&o.bench.bench_db, state);
    let plain_opts = DbOptions {
        buffer_pool_bytes: 256 << 20,
        direct_io: false,
        ..DbOptions::default()
    };
    if dir.join("catalog.json").exists() {
        let db = open(&dir, plain_opts.clone())?;
        if db.table("lineitem")?.layout().is_encoded() {
            return Ok(());
        }
        drop(db);
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    log(&format!(
        "encoding: copying the database to {}",
        dir.display()
    ));
    copy_dir(&o.bench.bench_db, &dir)?;
    let db = open(&dir, plain_opts)?;
    let opts = CompactOptions {
        plain: false,
        no_dictionary: state == "narrow",
        semantic_id: None,
    };
    for t in db.table_names() {
        log(&format!("encoding: compact {t} ({state})"));
        db.compact(&t, &opts, &NoProgress)?;
    }
    Ok(())
}

struct Point {
    round: usize,
    device: String,
    state: &'static str,
    query: &'static str,
    parts: &'static str,
    wall_ms: f64,
    modeled_ms: f64,
    pages_read: u64,
    answer: String,
}

impl Point {
    fn cost_ms(&self) -> f64 {
        self.wall_ms + self.modeled_ms
    }
}

fn run_query(
    dir: &Path,
    opts: DbOptions,
    query: &str,
    path: strata_sql::AccessPathSetting,
    parts: &str,
) -> Result<(f64, f64, u64, String)> {
    let sql = strata_sql::tpch::QUERIES
        .iter()
        .find(|(n, _)| *n == query)
        .map(|(_, q)| q.trim().trim_end_matches(';'))
        .with_context(|| format!("no TPC-H query {query}"))?;
    let session = SqlSession::new(Arc::new(open(dir, opts)?))?;
    session.set("strata.access_path", &path.to_string())?;
    session.set("strata.scan_partitions", parts)?;
    let r = session.execute(sql)?;
    let answer = strata_sql::shell::format::render(strata_sql::Format::Csv, &r.schema, &r.batches)?;
    Ok((
        r.elapsed.as_secs_f64() * 1e3,
        r.io.modeled_ms(),
        r.io.pages_read,
        answer,
    ))
}

/// Per state: heap pages of every table and lineitem's declared and stored
/// bytes per column.
fn bytes_report(o: &EncodingOptions, s: &mut Summary) -> Result<()> {
    let opts = DbOptions {
        buffer_pool_bytes: 256 << 20,
        direct_io: false,
        read_only: true,
        ..DbOptions::default()
    };
    let dbs: Vec<Database> = STATES
        .iter()
        .map(|st| open(&state_dir(&o.bench.bench_db, st), opts.clone()))
        .collect::<Result<_>>()?;
    s.heading("Heap pages per table");
    let mut rows = Vec::new();
    for t in dbs[0].table_names() {
        let pages: Vec<u64> = dbs
            .iter()
            .map(|d| d.table(&t).map(|x| x.heap().num_pages()))
            .collect::<Result<_, _>>()?;
        let mut row = vec![t.clone()];
        for p in &pages {
            row.push(format!(
                "{p} ({:.1}%)",
                100.0 * *p as f64 / pages[0].max(1) as f64
            ));
        }
        rows.push(row);
    }
    s.table(&["table", "declared", "narrow", "dictionary"], rows);
    s.heading("lineitem, bytes per column");
    let w: Vec<_> = dbs
        .iter()
        .map(|d| analyze(&*d.table("lineitem")?))
        .collect::<Result<_, _>>()?;
    let mib = |b: u64| format!("{:.1}", b as f64 / (1 << 20) as f64);
    let mut rows = Vec::new();
    for (i, c) in w[0].columns.iter().enumerate() {
        rows.push(vec![
            c.column.clone(),
            c.declared.clone(),
            mib(c.stored_bytes),
            format!(
                "{} ({})",
                mib(w[1].columns[i].encoded_bytes),
                w[1].columns[i].encoding
            ),
            format!(
                "{} ({})",
                mib(w[2].columns[i].encoded_bytes),
                w[2].columns[i].encoding
            ),
            format!("{} ({})", mib(c.tight_bytes), c.suggestion),
        ]);
    }
    rows.push(vec![
        "all".into(),
        String::new(),
        mib(w[0].stored_bytes),
        mib(w[1].encoded_bytes),
        mib(w[2].encoded_bytes),
        mib(w[0].tight_bytes),
    ]);
    s.table(
        &[
            "column",
            "declared type",
            "declared MiB",
            "narrow MiB",
            "dictionary MiB",
            "cheapest (strata waste) MiB",
        ],
        rows,
    );
    let heap = |x: &strata_storage::maintenance::waste::TableWaste| x.heap.pages * PAGE_SIZE as u64;
    s.paragraph(&format!(
        "lineitem heap: declared {} pages, narrow {} ({:.1}%), dictionary {} ({:.1}%); targets ≤ 55% and ≤ 45%.",
        w[0].heap.pages,
        w[1].heap.pages,
        100.0 * heap(&w[1]) as f64 / heap(&w[0]) as f64,
        w[2].heap.pages,
        100.0 * heap(&w[2]) as f64 / heap(&w[0]) as f64,
    ));
    Ok(())
}

/// The paper's own tables (Wikipedia-like `revision` and `page`, `strata
/// gen`): generated once into `<bench db>-paper`, copied and compacted into
/// `<bench db>-paper-compact`; heap pages and bytes per column before and after.
fn paper_tables(o: &EncodingOptions, s: &mut Summary, log: &mut dyn FnMut(&str)) -> Result<()> {
    use strata_load::{GenKind, GenSpec, generate};
    let base = state_dir(&o.bench.bench_db, "paper");
    let compact = state_dir(&o.bench.bench_db, "paper-compact");
    let opts = DbOptions {
        buffer_pool_bytes: 256 << 20,
        direct_io: false,
        ..DbOptions::default()
    };
    let fresh = Database::open(&base, opts.clone()).ok().is_some_and(|db| {
        ["revision", "page"]
            .iter()
            .all(|t| db.table(t).is_ok_and(|t| t.rows() == o.paper_rows))
    });
    if !fresh {
        if base.exists() {
            std::fs::remove_dir_all(&base)?;
        }
        if compact.exists() {
            std::fs::remove_dir_all(&compact)?;
        }
        log(&format!(
            "encoding: generating revision and page ({} rows)",
            o.paper_rows
        ));
        let db = Database::open_or_create(&base, opts.clone())?;
        for kind in [GenKind::Revision, GenKind::Page] {
            generate(&db, &GenSpec::new(kind, o.paper_rows), &NoProgress)?;
        }
    }
    if !compact.join("catalog.json").exists() {
        copy_dir(&base, &compact)?;
        let db = open(&compact, opts.clone())?;
        for t in ["revision", "page"] {
            log(&format!("encoding: compact {t}"));
            db.compact(t, &CompactOptions::default(), &NoProgress)?;
        }
    }
    let ro = DbOptions {
        read_only: true,
        ..opts
    };
    let (a, b) = (open(&base, ro.clone())?, open(&compact, ro)?);
    s.heading(&format!(
        "The paper-like tables ({} rows each)",
        o.paper_rows
    ));
    let mib = |x: u64| format!("{:.1}", x as f64 / (1 << 20) as f64);
    for t in ["revision", "page"] {
        let before = analyze(&*a.table(t)?)?;
        let after = analyze(&*b.table(t)?)?;
        s.paragraph(&format!(
            "`{t}`: heap {} -> {} pages ({:.1}%); values {} -> {} MiB ({:.1}% of declared; the analyzer's tightest: {} MiB).",
            before.heap.pages,
            after.heap.pages,
            100.0 * after.heap.pages as f64 / before.heap.pages.max(1) as f64,
            mib(before.stored_bytes),
            mib(after.encoded_bytes),
            100.0 * after.encoded_bytes as f64 / before.stored_bytes.max(1) as f64,
            mib(before.tight_bytes),
        ));
        let rows: Vec<Vec<String>> = before
            .columns
            .iter()
            .zip(&after.columns)
            .map(|(x, y)| {
                vec![
                    x.column.clone(),
                    x.declared.clone(),
                    mib(x.stored_bytes),
                    format!("{} ({})", mib(y.encoded_bytes), y.encoding),
                    format!("{} ({})", mib(x.tight_bytes), x.suggestion),
                ]
            })
            .collect();
        s.table(
            &[
                "column",
                "declared type",
                "declared MiB",
                "compacted MiB",
                "cheapest (strata waste) MiB",
            ],
            rows,
        );
    }
    Ok(())
}

/// Runs the experiment; returns the summary's text (also written to
/// `<out>/encoding.md`, with `encoding.csv`).
pub fn run(o: &EncodingOptions, log: &mut dyn FnMut(&str)) -> Result<String> {
    ensure!(o.bench.repeat > 0, "--repeat must be at least 1");
    crate::prepare(&o.bench, log)?;
    for st in &STATES[1..] {
        make_state(o, st, log)?;
    }
    std::fs::create_dir_all(&o.bench.out)?;
    let mut points = Vec::new();
    for round in 0..o.bench.repeat {
        for device in &o.devices {
            let opts = DbOptions {
                buffer_pool_bytes: o.bench.db_options.buffer_pool_bytes,
                ..DbOptions::default()
            }
            .device(device)?;
            for query in QUERIES {
                for state in STATES {
                    for parts in PARTS {
                        let dir = state_dir(&o.bench.bench_db, state);
                        let (wall_ms, modeled_ms, pages_read, answer) =
                            run_query(&dir, opts.clone(), query, o.access_path, parts)?;
                        log(&format!(
                            "round {round} {device} {query} {state} parts={parts}: {wall_ms:.0} ms + modeled {modeled_ms:.0} ms, {pages_read} pages"
                        ));
                        points.push(Point {
                            round,
                            device: device.clone(),
                            state,
                            query,
                            parts,
                            wall_ms,
                            modeled_ms,
                            pages_read,
                            answer,
                        });
                    }
                }
            }
        }
    }
    for p in &points {
        let declared = points
            .iter()
            .find(|x| x.state == "declared" && x.query == p.query && x.parts == PARTS[0])
            .expect("the declared state runs first");
        ensure!(
            p.answer == declared.answer,
            "{} over the {} tables with scan_partitions = {} answered differently from the declared ones in one part",
            p.query,
            p.state,
            p.parts
        );
    }
    let mut set = ResultSet::new();
    for p in &points {
        let mut row = ResultRow::new(p.query, &p.device, p.state, o.bench.sf);
        row.wall_ms = p.wall_ms;
        row.modeled_ms = p.modeled_ms;
        row.pages_read = p.pages_read;
        set.push(row.with("round", p.round).with("scan_partitions", p.parts));
    }
    set.write_csv(o.bench.out.join("encoding.csv"))?;

    let mut s = Summary::new("Types as hints on TPC-H (No Bits Left Behind §4.1)");
    s.paragraph(&provenance());
    s.paragraph(&format!(
        "SF {}. States: `declared` (every column as its declared type), `narrow` (`strata compact TABLE --no-dictionary` of every table: frames of reference, unpadded CHAR, 1-byte VARCHAR lengths) and `dictionary` (`strata compact TABLE`: the same plus dictionaries for low-cardinality text). Each point: the state's database opened with an empty {} pool, the query run once under `strata.access_path = {}`, with the scan in one part (`strata.scan_partitions = 1`) and split as the default splits it (`auto`: {} cores here, no more parts than the device serves at once, so one on the hdd); median of {} rounds, each running every device, query, state and setting in turn. Real: direct I/O, wall time; hdd/ssd: wall time plus the modeled device time. Every answer equals the declared state's in one part, byte for byte. The first table is the default (`auto`); the second compares the two settings.",
        o.bench.sf,
        strata_storage::util::format_bytes(o.bench.db_options.buffer_pool_bytes as u64),
        o.access_path,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        o.bench.repeat
    ));
    bytes_report(o, &mut s)?;
    s.heading(&format!(
        "Cold scans under strata.access_path = {}",
        o.access_path
    ));
    let med_parts =
        |device: &str, query: &str, state: &str, parts: &str, f: &dyn Fn(&Point) -> f64| {
            let v: Vec<f64> = points
                .iter()
                .filter(|p| {
                    p.device == device && p.query == query && p.state == state && p.parts == parts
                })
                .map(f)
                .collect();
            median(&v).unwrap_or(f64::NAN)
        };
    let med = |device: &str, query: &str, state: &str, f: &dyn Fn(&Point) -> f64| {
        med_parts(device, query, state, "auto", f)
    };
    let mut rows = Vec::new();
    for device in &o.devices {
        for query in QUERIES {
            let base = med(device, query, "declared", &|p| p.cost_ms());
            let base_pages = med(device, query, "declared", &|p| p.pages_read as f64);
            let mut row = vec![device.clone(), query.to_string()];
            for state in STATES {
                let c = med(device, query, state, &|p| p.cost_ms());
                let pages = med(device, query, state, &|p| p.pages_read as f64);
                row.push(format!(
                    "{} ms, {} pages{}",
                    num(c),
                    num(pages),
                    if state == "declared" {
                        String::new()
                    } else {
                        format!(
                            " ({:.2}x faster, {:.2}x fewer pages)",
                            base / c,
                            base_pages / pages
                        )
                    }
                ));
            }
            rows.push(row);
        }
    }
    s.table(
        &["device", "query", "declared", "narrow", "dictionary"],
        rows,
    );
    s.paragraph("The same scans in one part and split (`strata.scan_partitions` 1 / auto): ms, and how much faster the split scan is.");
    let mut rows = Vec::new();
    for device in &o.devices {
        for query in QUERIES {
            let mut row = vec![device.clone(), query.to_string()];
            for state in STATES {
                let one = med_parts(device, query, state, "1", &|p| p.cost_ms());
                let split = med_parts(device, query, state, "auto", &|p| p.cost_ms());
                row.push(format!(
                    "{} / {} ms ({:.2}x)",
                    num(one),
                    num(split),
                    one / split
                ));
            }
            rows.push(row);
        }
    }
    s.table(
        &["device", "query", "declared", "narrow", "dictionary"],
        rows,
    );
    paper_tables(o, &mut s, log)?;
    let md = o.bench.out.join("encoding.md");
    s.write(&md)?;
    Ok(s.as_str().to_string())
}
