//! Hot/cold clustering and the hot partition (No Bits Left Behind §3.1).
//!
//! Tuples are appended in the order they arrive, so the few that lookups keep
//! reading (Wikipedia's latest revision of each page) sit scattered, about one
//! per heap page among cold ones: every hot lookup reads a page that is mostly
//! cold, and the pool holds a page per hot tuple. [`Database::cluster_hot`]
//! (`strata cluster TABLE --hot`) gathers them, from what the sampled access
//! counts (`heat.rs`) show:
//!
//! 1. **Choose.** The hot tuples are those counted at least
//!    [`ClusterOptions::min_count`] times, most counted first, at most
//!    [`ClusterOptions::max_fraction`] of the rows; [`ClusterOptions::share`]
//!    takes only the most counted part of them (the paper's 54% curve).
//! 2. **Move in.** A chosen tuple outside the table's *hot region* (the heap
//!    pages from the first clustering's end on, `TableDef::hot_region`) is
//!    deleted and appended at the end, as the paper does, its index entries
//!    following it ([`Table::move_row`]). They are appended most counted
//!    first, so the hottest share the first pages: under a skewed workload a
//!    pool too small for the whole region keeps the pages most lookups read.
//! 3. **Move out.** A tuple in the hot region that is no longer hot has cooled:
//!    it goes back into a cold page with room — the holes the tuples moved in
//!    left, then any page before the region with room, from the first — so the
//!    region stays hot. With no room anywhere it stays.
//! 4. **Partition** (optional, or kept if one exists): the hot tuples' entries
//!    of one index go into a small index of their own, the *hot partition*'s
//!    (`IndexDef::hot`). Lookups ([`Table::lookup`]) try it first, and only a
//!    key it does not hold goes to the full index; a small index stays in the
//!    buffer pool where the full one cannot, which is the paper's 8.4x.
//! 5. **Age.** Every count is halved, so tuples that stop being read cool down
//!    over the next clusterings and move back.
//!
//! Moves commit in write transactions of a bounded number of tuples (a
//! transaction keeps the pages it changed in the pool until it commits), so a
//! crash loses at most the batch in flight and leaves every tuple findable.
//! The hot index is built after the moves, under the writer lock, written and
//! synced before the catalog names it (its commit point).
//!
//! The partition's invariant: a key the hot index holds, it holds with every
//! entry the full index has for it. Row changes keep it (`db/table.rs`, `db/index.rs`): an insert
//! whose key is hot goes into both; a delete leaves both; a move or update of
//! a hot tuple keeps its hot entry when its key stays. So a lookup that finds
//! its key in the hot index has the complete answer.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use crate::btree::BTree;
use crate::catalog::{HotDef, sync_dir};
use crate::db::{Database, HotPartition};
use crate::error::{Result, StorageError};
use crate::row::Tid;

/// What `strata cluster --hot` is asked to do.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// Build (or rebuild) a hot partition for this index.
    pub partition: Option<String>,
    /// Sampled accesses a tuple needs to count as hot.
    pub min_count: u32,
    /// The hot tuples are at most this fraction of the rows.
    pub max_fraction: f64,
    /// Cluster only this share of the hot tuples, the most counted first.
    pub share: f64,
    /// Tuples moved per write transaction (`None`: from the pool's size).
    pub batch: Option<usize>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            partition: None,
            min_count: 2,
            max_fraction: 0.25,
            share: 1.0,
            batch: None,
        }
    }
}

/// What a clustering did.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ClusterReport {
    pub table: String,
    /// Tuples with a count, and the sampled accesses counted.
    pub tracked: u64,
    pub sampled_accesses: u64,
    /// Tuples chosen as hot.
    pub hot: u64,
    /// Of them, already in the hot region.
    pub already_in_region: u64,
    /// Moved into the hot region.
    pub moved_in: u64,
    /// Cooled tuples moved out of it, and those left for want of room.
    pub moved_out: u64,
    pub cooled_left: u64,
    /// Write transactions committed.
    pub transactions: u64,
    /// The hot region: its first page and the heap's pages after clustering.
    pub region_start: u64,
    pub heap_pages: u64,
    /// Heap pages holding a hot tuple, before and after.
    pub hot_pages_before: u64,
    pub hot_pages_after: u64,
    /// The hot partition built, if any: its index, entries and pages, and the
    /// full index's pages.
    pub partition: Option<String>,
    pub partition_entries: u64,
    pub partition_pages: u64,
    pub full_index_pages: u64,
    /// Why the counts file could not be read, if it could not.
    pub warning: Option<String>,
}

fn pages_of(tids: impl Iterator<Item = Tid>) -> u64 {
    tids.map(|t| t.page).collect::<BTreeSet<_>>().len() as u64
}

impl Database {
    /// Clusters the hot tuples of `table` (see the module docs).
    pub fn cluster_hot(&self, table: &str, opts: &ClusterOptions) -> Result<ClusterReport> {
        if !(opts.share > 0.0 && opts.share <= 1.0) {
            return Err(StorageError::Schema(format!(
                "share {} is not in (0, 1]",
                opts.share
            )));
        }
        if !(opts.max_fraction > 0.0 && opts.max_fraction <= 1.0) {
            return Err(StorageError::Schema(format!(
                "max fraction {} is not in (0, 1]",
                opts.max_fraction
            )));
        }
        let t = self.movable_table(table)?;
        let part_index = match &opts.partition {
            Some(name) => Some(t.index(name)?.def.name.clone()),
            // A partition that exists is rebuilt for the new hot set.
            None => t
                .indexes()
                .iter()
                .find(|i| i.hot().is_some())
                .map(|i| i.def.name.clone()),
        };
        let mut rep = ClusterReport {
            table: t.name().to_string(),
            warning: t.heat().load_warning().map(str::to_string),
            ..ClusterReport::default()
        };

        // 1. Choose.
        let counts = t.heat().snapshot();
        rep.tracked = counts.len() as u64;
        rep.sampled_accesses = counts.iter().map(|c| c.1 as u64).sum();
        let mut cands: Vec<(Tid, u32)> = counts
            .into_iter()
            .filter(|&(_, c)| c >= opts.min_count.max(1))
            .collect();
        cands.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let cap = (opts.max_fraction * t.rows() as f64).floor() as usize;
        cands.truncate(cap);
        let take = (opts.share * cands.len() as f64).ceil() as usize;
        cands.truncate(take);
        // A counted tid whose tuple is gone (a slot freed since) is not hot.
        let mut chosen: HashSet<Tid> = HashSet::with_capacity(cands.len());
        for &(tid, _) in &cands {
            if (tid.page as u64) < t.heap().num_pages()
                && t.heap().with_tuple(tid, |_| ())?.is_some()
            {
                chosen.insert(tid);
            }
        }
        rep.hot = chosen.len() as u64;
        rep.hot_pages_before = pages_of(chosen.iter().copied());

        let region_start = self
            .catalog()
            .table(t.name())?
            .hot_region
            .unwrap_or_else(|| t.heap().num_pages());
        rep.region_start = region_start;
        // Most counted first: the hottest tuples share the region's first
        // pages, so a pool that holds only part of the region holds the part
        // most lookups read (in tuple-id order every region page would be
        // as hot as the next).
        let move_in: Vec<Tid> = cands
            .iter()
            .map(|&(tid, _)| tid)
            .filter(|tid| chosen.contains(tid) && (tid.page as u64) < region_start)
            .collect();
        rep.already_in_region = rep.hot - move_in.len() as u64;
        let mut move_out = Vec::new();
        for p in region_start..t.heap().num_pages() {
            for tid in t.heap().live_tids(p)? {
                if !chosen.contains(&tid) {
                    move_out.push(tid);
                }
            }
        }
        // Where the cooled tuples go first: the cold pages the moves in empty.
        let holes: Vec<u64> = move_in
            .iter()
            .map(|t| t.page as u64)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();

        // 2.-3. Move, in batches that the pool holds.
        let batch = opts.batch.unwrap_or_else(|| {
            let pages = self.pool().capacity();
            // A moved tuple changes its old page, its new one and a leaf of
            // every index (twice); keep a batch to a quarter of the pool.
            (pages / 4 / (2 + 2 * t.indexes().len())).max(1)
        });
        if region_start == t.heap().num_pages() {
            // The first clustering: the hot region starts on a fresh page.
            t.heap().start_new_page();
        }
        let mut new_tid: HashMap<Tid, Tid> = HashMap::new();
        for chunk in move_in.chunks(batch) {
            let txn = self.begin_write()?;
            for &tid in chunk {
                let to = t.move_row(tid, None)?;
                new_tid.insert(tid, to);
            }
            txn.commit()?;
            rep.transactions += 1;
            rep.moved_in += chunk.len() as u64;
        }
        // The holes first, then any cold page with room, from the start.
        let mut hole = holes.iter().copied().chain(0..region_start).peekable();
        for chunk in move_out.chunks(batch) {
            let txn = self.begin_write()?;
            let mut done = Vec::new();
            for &tid in chunk {
                let mut placed = None;
                while let Some(&p) = hole.peek() {
                    if let Some(to) = t.move_row_into(tid, p)? {
                        placed = Some(to);
                        break;
                    }
                    hole.next();
                }
                match placed {
                    Some(to) => done.push(to),
                    None => rep.cooled_left += 1,
                }
            }
            txn.commit()?;
            rep.transactions += 1;
            rep.moved_out += done.len() as u64;
        }
        let hot_now: Vec<Tid> = {
            let mut v: Vec<Tid> = chosen
                .iter()
                .map(|tid| new_tid.get(tid).copied().unwrap_or(*tid))
                .collect();
            v.sort_unstable();
            v
        };
        rep.hot_pages_after = pages_of(hot_now.iter().copied());
        rep.heap_pages = t.heap().num_pages();

        // 4. The partition, and the hot region in the catalog.
        {
            let _w = self.writer_lock();
            let mut built = None;
            if let Some(name) = &part_index {
                let ix = t.index(name)?;
                let mut entries: Vec<(Vec<u8>, Tid)> = Vec::new();
                let mut keys: BTreeSet<Vec<u8>> = BTreeSet::new();
                let mut key = Vec::new();
                for &tid in &hot_now {
                    let found = t
                        .heap()
                        .with_tuple(tid, |b| ix.key_of_tuple(t.layout(), b, tid, &mut key))?;
                    if found.is_some() {
                        keys.insert(key.clone());
                    }
                }
                // Every entry of a hot key (the partition's invariant).
                for k in keys {
                    for tid in ix.btree.lookup(&k)? {
                        entries.push((k.clone(), tid));
                    }
                }
                entries.sort_unstable();
                let file = self.new_file_name(&format!("{}.{}.hot", t.name(), ix.def.name));
                let btree = BTree::create(
                    self.pool().clone(),
                    &self.dir().join(&file),
                    &format!("{} (hot partition)", ix.def.name),
                    ix.key_types.clone(),
                    t.segment_pages(),
                )?;
                btree.bulk_build(entries.iter().cloned(), ix.def.leaf_fill)?;
                btree.flush()?;
                sync_dir(&self.dir().join("data"))?;
                rep.partition = Some(ix.def.name.clone());
                rep.partition_entries = entries.len() as u64;
                rep.partition_pages = btree.num_pages();
                rep.full_index_pages = ix.btree.num_pages();
                built = Some((
                    ix,
                    HotPartition {
                        def: HotDef {
                            file,
                            entries: entries.len() as u64,
                        },
                        btree,
                    },
                ));
            }
            let def = built
                .as_ref()
                .map(|(ix, h)| (ix.def.name.clone(), h.def.clone()));
            self.set_hot(t.name(), region_start, def)?;
            if let Some((ix, h)) = built
                && let Some(old) = ix.set_hot(Some(Arc::new(h)))
            {
                self.drop_hot_files(&old)?;
            }
        }

        // 5. Age.
        t.heat().age();
        Ok(rep)
    }
}
