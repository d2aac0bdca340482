//! Fig. 3's table and its states: the generated `revision` table, what its
//! data shows (each page's latest revision), the workload's lookups (through
//! the index, or by semantic id), and the copies the figure measures — as
//! generated, clustered (54%, 100%), partitioned, and with rev_id a semantic
//! id — each made from the generated one.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, ensure};
use strata_load::{GenKind, GenSpec, generate};
use strata_storage::btree::cache::leaf::CacheRng;
use strata_storage::db::{DbOptions, NoProgress};
use strata_storage::device::DeviceProfile;
use strata_storage::maintenance::cluster::{ClusterOptions, ClusterReport};
use strata_storage::maintenance::compact::CompactOptions;
use strata_storage::page::PAGE_SIZE;
use strata_storage::row::{DataType, Value, encode_key};
use strata_storage::{Database, Table};

pub(super) const TABLE: &str = "revision";
pub(super) const INDEX: &str = "revision_rev_id";
/// The states with rev_id stored and indexed, in the figure's order.
pub const STATES: [&str; 4] = ["0%", "54%", "100%", "partition"];
/// The states with rev_id a semantic id (no index: a lookup reads the page
/// the id names). No partition: there is no index to split, and the id of a
/// tuple in the hot region already says it is there.
pub const ID_STATES: [&str; 3] = ["id 0%", "id 54%", "id 100%"];

/// A state's directory name.
pub(super) fn state_dir(state: &str) -> String {
    state.replace('%', "pct").replace(' ', "-")
}

pub(super) fn key(id: i64) -> Vec<u8> {
    let mut k = Vec::with_capacity(9);
    encode_key(&[DataType::Int64], &[Value::Int64(id)], &mut k);
    k
}

pub(super) fn open(dir: &Path, pool_bytes: usize, read_only: bool) -> Result<Database> {
    Ok(Database::open(
        dir,
        DbOptions {
            buffer_pool_bytes: pool_bytes,
            direct_io: false,
            read_only,
            ..DbOptions::default()
        },
    )?)
}

/// Generates the table into `dir` unless it holds it with `rows` rows.
pub(crate) fn prepare(dir: &Path, rows: u64, log: &mut dyn FnMut(&str)) -> Result<()> {
    if dir.join("catalog.json").exists() {
        let db = open(dir, 8 << 20, true)?;
        if db
            .table(TABLE)
            .is_ok_and(|t| t.rows() == rows && t.index(INDEX).is_ok())
        {
            return Ok(());
        }
        drop(db);
        std::fs::remove_dir_all(dir)?;
    }
    log(&format!(
        "fig3: generating {TABLE} ({rows} rows) in {}",
        dir.display()
    ));
    std::fs::create_dir_all(dir)?;
    let db = Database::open_or_create(
        dir,
        DbOptions {
            buffer_pool_bytes: 64 << 20,
            direct_io: false,
            ..DbOptions::default()
        },
    )?;
    generate(&db, &GenSpec::new(GenKind::Revision, rows), &NoProgress)?;
    Ok(())
}

/// Copies a closed database directory over whatever `to` held.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    crate::bench_db::copy_dir(from, to)
}

/// What the data shows: every page's latest revision, and the table's sizes.
pub(super) struct Truth {
    pub(super) rows: u64,
    /// The latest revision of each page (rev_id), in rev_id order.
    pub(super) latest: Vec<i64>,
    pub(super) heap_pages: u64,
    pub(super) index_pages: u64,
    /// Heap pages holding a latest revision, as generated.
    pub(super) latest_pages: u64,
}

pub(super) fn truth(dir: &Path) -> Result<Truth> {
    let db = open(dir, 32 << 20, true)?;
    let t = db.table(TABLE)?;
    let (id_col, page_col) = (t.column("rev_id")?, t.column("rev_page")?);
    let mut last: BTreeMap<i64, (i64, u32)> = BTreeMap::new();
    t.heap().scan(|tid, b| {
        let id = t.layout().decode_column(b, id_col, tid).as_i64();
        let page = t.layout().decode_column(b, page_col, tid).as_i64();
        let (Some(id), Some(page)) = (id, page) else {
            return Err(strata_storage::StorageError::Schema(format!(
                "fig3: a revision without rev_id or rev_page at {tid:?}"
            )));
        };
        let e = last.entry(page).or_insert((id, tid.page));
        if id > e.0 {
            *e = (id, tid.page);
        }
        Ok(())
    })?;
    let mut latest: Vec<i64> = last.values().map(|v| v.0).collect();
    latest.sort_unstable();
    let pages: std::collections::BTreeSet<u32> = last.values().map(|v| v.1).collect();
    Ok(Truth {
        rows: t.rows(),
        latest,
        heap_pages: t.heap().num_pages(),
        index_pages: t.index(INDEX)?.btree.num_pages(),
        latest_pages: pages.len() as u64,
    })
}

/// Lookup keys of the workload.
pub(super) struct Workload {
    pub(super) cdf: Vec<f64>,
    /// Rank → latest revision.
    pub(super) perm: Vec<i64>,
    pub(super) rows: u64,
    pub(super) hot_pct: f64,
}

impl Workload {
    pub(super) fn new(truth: &Truth, alpha: f64, hot_pct: f64, seed: u64) -> Workload {
        let cdf = crate::nblb::index_cache_wiki::zipf_cdf(truth.latest.len(), alpha);
        let mut perm = truth.latest.clone();
        let mut rng = CacheRng::new(seed ^ 0xF163);
        for i in (1..perm.len()).rev() {
            perm.swap(i, rng.below(i + 1));
        }
        Workload {
            cdf,
            perm,
            rows: truth.rows,
            hot_pct,
        }
    }

    pub(super) fn draw(&self, rng: &mut CacheRng, count: u64) -> Vec<i64> {
        let unit = |rng: &mut CacheRng| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (0..count)
            .map(|_| {
                if unit(rng) * 100.0 < self.hot_pct {
                    let u = unit(rng);
                    self.perm[self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1)]
                } else {
                    1 + rng.below(self.rows as usize) as i64
                }
            })
            .collect()
    }
}

/// One lookup: the index (the hot partition first), then the tuple, decoded.
pub(super) fn lookup(t: &Table, ix: &strata_storage::db::Index, id: i64) -> Result<()> {
    let tids = t.lookup(ix, &key(id))?;
    ensure!(
        tids.len() == 1,
        "fig3: rev_id {id} has {} entries",
        tids.len()
    );
    let row = t
        .get_row(tids[0])?
        .with_context(|| format!("fig3: rev_id {id}'s tuple {:?} is gone", tids[0]))?;
    ensure!(
        row[0] == Value::Int64(id),
        "fig3: lookup of rev_id {id} found {:?}",
        row[0]
    );
    Ok(())
}

/// Where each revision is now in a copy whose rev_id is a semantic id (and
/// the copy's heap pages): its id (address) by the id the generator gave it, which `rev_text_id` keeps
/// (the generator sets it to the rev_id). That is what the application's
/// pointers — Wikipedia's `page_latest` — hold after every move, as the paper
/// notes a move requires.
pub(super) fn addresses(dir: &Path, rows: u64) -> Result<(Vec<i64>, u64)> {
    let db = open(dir, 32 << 20, true)?;
    let t = db.table(TABLE)?;
    let (id_col, text_col) = (t.column("rev_id")?, t.column("rev_text_id")?);
    let mut at = vec![-1i64; rows as usize];
    t.heap().scan(|tid, b| {
        let id = t.layout().decode_column(b, id_col, tid).as_i64();
        let given = t.layout().decode_column(b, text_col, tid).as_i64();
        let (Some(id), Some(given)) = (id, given) else {
            return Err(strata_storage::StorageError::Schema(format!(
                "fig3: a revision without rev_id or rev_text_id at {tid:?}"
            )));
        };
        match usize::try_from(given - 1)
            .ok()
            .and_then(|i| at.get_mut(i))
            .filter(|a| **a < 0)
        {
            Some(a) => *a = id,
            None => {
                return Err(strata_storage::StorageError::Schema(format!(
                    "fig3: rev_text_id {given} at {tid:?} is not in 1..={rows} or is there twice"
                )));
            }
        }
        Ok(())
    })?;
    ensure!(
        at.iter().all(|&a| a >= 0),
        "fig3: {} lacks a revision",
        dir.display()
    );
    Ok((at, t.heap().num_pages()))
}

/// How a lookup finds a revision by the id the generator gave it: through
/// the index on the stored rev_id, or by its semantic id now (`at`, from
/// [`addresses`]) — the one page it names.
pub(super) enum Finder<'a> {
    Index(&'a strata_storage::db::Index),
    Address { at: &'a [i64], text_col: usize },
}

impl<'a> Finder<'a> {
    pub(super) fn of(t: &'a Table, at: Option<&'a [i64]>) -> Result<Finder<'a>> {
        Ok(match at {
            Some(at) => Finder::Address {
                at,
                text_col: t.column("rev_text_id")?,
            },
            None => Finder::Index(t.index(INDEX)?),
        })
    }

    /// One lookup of revision `given`, its row decoded whole and checked.
    pub(super) fn find(&self, t: &Table, given: i64) -> Result<()> {
        let (at, text_col) = match self {
            Finder::Index(ix) => return lookup(t, ix, given),
            Finder::Address { at, text_col } => (at, *text_col),
        };
        let id = usize::try_from(given - 1)
            .ok()
            .and_then(|i| at.get(i).copied())
            .with_context(|| format!("fig3: no revision {given}"))?;
        let (_, row) = t
            .lookup_address(id)?
            .with_context(|| format!("fig3: no row has the semantic id {id} (revision {given})"))?;
        ensure!(
            row[text_col] == Value::Int64(given) && row[0] == Value::Int64(id),
            "fig3: semantic id {id} of revision {given} found {:?}",
            &row[..3]
        );
        Ok(())
    }
}

/// Makes state `state` from the generated database `base` into `dir`, its
/// training lookups drawn from `seed`. The
/// semantic-id states start from `id 0%` (made first, its addresses `at0`).
pub(super) fn make_state(
    seed: u64,
    base: &Path,
    dir: &Path,
    state: &str,
    wl: &Workload,
    train: u64,
    at0: Option<&[i64]>,
) -> Result<Option<ClusterReport>> {
    let semantic = ID_STATES.contains(&state);
    match state {
        "0%" => {
            copy_dir(base, dir)?;
            return Ok(None);
        }
        // rev_id no longer stored: the index on it dropped, every other
        // column as declared (as in the stored copies), the id the address.
        "id 0%" => {
            copy_dir(base, dir)?;
            let db = open(dir, 64 << 20, false)?;
            db.drop_index(TABLE, INDEX)?;
            let opts = CompactOptions {
                plain: true,
                semantic_id: Some("rev_id".into()),
                ..CompactOptions::default()
            };
            db.compact(TABLE, &opts, &NoProgress)?;
            return Ok(None);
        }
        _ => {}
    }
    let from = if semantic {
        dir.with_file_name(state_dir("id 0%"))
    } else {
        base.to_path_buf()
    };
    copy_dir(&from, dir)?;
    // Training: the whole table fits this pool, so it is quick; the counts
    // are what lookups would leave in any pool.
    let db = open(dir, 1 << 30, false)?;
    let t = db.table(TABLE)?;
    let finder = Finder::of(&t, if semantic { at0 } else { None })?;
    t.heat().clear();
    let mut rng = CacheRng::new(seed ^ 0x7EA1);
    for id in wl.draw(&mut rng, train) {
        finder.find(&t, id)?;
    }
    let opts = ClusterOptions {
        share: if state.ends_with("54%") { 0.54 } else { 1.0 },
        partition: (state == "partition").then(|| INDEX.to_string()),
        ..ClusterOptions::default()
    };
    let rep = db.cluster_hot(TABLE, &opts)?;
    Ok(Some(rep))
}

/// Opens `dir` read-only with an empty pool of `frames` pages on `device`:
/// `real` (direct I/O) or a built-in profile (`hdd`, `ssd`).
pub(crate) fn open_on(dir: &Path, frames: u64, device: &str) -> Result<Database> {
    let real = device == "real";
    Ok(Database::open(
        dir,
        DbOptions {
            buffer_pool_bytes: frames as usize * PAGE_SIZE,
            direct_io: real,
            profile: if real {
                None
            } else {
                Some(DeviceProfile::builtin(device).with_context(|| format!("device {device}"))?)
            },
            read_only: true,
            ..DbOptions::default()
        },
    )?)
}
