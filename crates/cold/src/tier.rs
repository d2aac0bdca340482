//! Moving a table to the cold tier and back: `strata tier cold TABLE` and
//! `strata tier local TABLE`.
//!
//! To the cold tier: the table's heap and index files are cut into
//! page-aligned objects of `object_bytes` (1 GiB as the paper's segments,
//! smaller for tests) and PUT to the cold storage device — bucket = the
//! database (Skipper's client), keys `<table>/<file>.<n>` (so the CSD's layouts
//! see the table as the relation) — each object checked by a HEAD; then each
//! file's manifest is written atomically and durably, and only then are its
//! local segments removed. Back: every object is fetched, checked against its
//! CRC32C and written into fresh local segments, which are synced; then the
//! manifest is removed (durably), and only then, if asked, the objects are
//! deleted.
//!
//! Why nothing is lost whatever the point of a crash: a file's manifest is the
//! commit point of both moves (see `strata_storage::device::layer`). Before it
//! exists the local segments are the file and the objects are unreferenced;
//! once it exists the objects are the file, and any local segments left are
//! removed by the next read-write open of the database. A table whose files
//! were caught half way (one cold, one local) reads correctly in that mixed
//! state, and running the same command again finishes the move. Tests stop a
//! move after each of its durable steps ([`TierOptions::stop_after`]) and
//! crash the database there.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use strata_storage::catalog::{TableDef, sync_dir};
use strata_storage::device::{AlignedBuf, PAGE_SIZE, cold_manifest_path, segment_path};
use strata_storage::{Database, Result, StorageError};

use crate::device::ColdTier;
use crate::manifest::{MANIFEST_FORMAT, Manifest, ObjectEntry};
use crate::steps::Steps;
use crate::tier_columns;

/// Object size unless configured (`--object-size`): the paper's 1 GB segments.
pub const DEFAULT_OBJECT_BYTES: u64 = 1 << 30;
/// Pages read from the local files per request while uploading.
const READ_RUN_PAGES: u64 = 128;

/// Where and how `tier cold` ships a table.
#[derive(Clone, Debug)]
pub struct TierOptions {
    /// The cold storage device's S3 endpoint, e.g. `http://127.0.0.1:9000`.
    pub endpoint: String,
    /// The bucket (default: [`default_bucket`] of the database).
    pub bucket: Option<String>,
    /// Bytes per object, a whole number of pages.
    pub object_bytes: u64,
    /// `tier local`: delete the objects once the table is local again.
    pub delete_objects: bool,
    /// Stop (with an error) after this many durable steps — object uploads,
    /// manifest writes or removals, segment removals, downloads: the crash
    /// tests' fault point. `None` in real use.
    pub stop_after: Option<u64>,
}

impl TierOptions {
    pub fn new(endpoint: &str) -> TierOptions {
        TierOptions {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            bucket: None,
            object_bytes: DEFAULT_OBJECT_BYTES,
            delete_objects: false,
            stop_after: None,
        }
    }
}

/// The tier a table is on.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "tier", rename_all = "lowercase")]
pub enum TableTier {
    Local,
    /// Every file on the cold tier.
    Cold {
        endpoint: String,
        bucket: String,
        objects: usize,
        bytes: u64,
    },
    /// Some files cold, some local: a move that did not finish (run it again).
    Mixed {
        cold_files: usize,
        files: usize,
    },
}

impl std::fmt::Display for TableTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TableTier::Local => write!(f, "local"),
            TableTier::Cold {
                endpoint,
                bucket,
                objects,
                bytes,
            } => write!(
                f,
                "cold ({objects} objects, {} in bucket {bucket} at {endpoint})",
                strata_storage::util::format_bytes(*bytes)
            ),
            TableTier::Mixed { cold_files, files } => write!(
                f,
                "mixed ({cold_files} of {files} files cold: a move that did not finish; run `strata tier cold` or `strata tier local` again)"
            ),
        }
    }
}

/// The paged files of a table, heap first, as the catalog names them.
fn files_of(def: &TableDef) -> Vec<String> {
    def.paged_files()
}

/// The tier of table `def` of the database in `dir`.
pub fn table_tier(dir: &Path, def: &TableDef) -> Result<TableTier> {
    let files = files_of(def);
    let mut cold = Vec::new();
    for f in &files {
        let p = cold_manifest_path(&dir.join(f));
        if p.exists() {
            cold.push(Manifest::load(&p)?);
        }
    }
    let columns = tier_columns::cold_manifests(dir, def)?;
    let all = files.len() + def.column_files().len();
    let n = cold.len() + columns.len();
    let (endpoint, bucket) = match (cold.first(), columns.first()) {
        (Some(m), _) => (m.endpoint.clone(), m.bucket.clone()),
        (None, Some((_, m))) => (m.endpoint.clone(), m.bucket.clone()),
        (None, None) => return Ok(TableTier::Local),
    };
    Ok(if n < all {
        TableTier::Mixed {
            cold_files: n,
            files: all,
        }
    } else {
        TableTier::Cold {
            endpoint,
            bucket,
            objects: cold.iter().map(|m| m.objects.len()).sum::<usize>() + columns.len(),
            bytes: cold
                .iter()
                .flat_map(|m| &m.objects)
                .map(ObjectEntry::bytes)
                .sum::<u64>()
                + columns.iter().map(|(_, m)| m.bytes).sum::<u64>(),
        }
    })
}

/// The bucket of a database: its directory's name, made a valid S3 bucket
/// name (lower case letters, digits, `-` and `.`, 3 to 63 of them).
pub fn default_bucket(dir: &Path) -> String {
    let name = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let mut b: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    b = b
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string();
    b.truncate(63);
    if b.len() < 3 {
        b = format!("strata-{b}").trim_end_matches('-').to_string();
    }
    b
}

/// What a move did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TierReport {
    pub table: String,
    /// Files moved now (files already where they should be are skipped).
    pub files: usize,
    pub objects: usize,
    pub bytes: u64,
}

fn table_def(db: &Database, table: &str) -> Result<TableDef> {
    if db.is_read_only() {
        return Err(StorageError::Database {
            path: db.dir().to_path_buf(),
            reason: "opened read-only; moving a table between tiers writes".into(),
        });
    }
    Ok(db.catalog().table(table)?.clone())
}

/// Moves `table` to the cold tier (see the module docs). Files already there
/// are skipped; a table wholly there is an error.
pub fn to_cold(
    db: &Database,
    tier: &ColdTier,
    table: &str,
    opts: &TierOptions,
) -> Result<TierReport> {
    let def = table_def(db, table)?;
    if def.side.is_some() || def.side_of.is_some() {
        return Err(StorageError::ColdTier {
            table: table.to_string(),
            message: format!(
                "table {table} is split into two heaps (strata split); the cold tier moves one heap per table: strata split {t} --merge first",
                t = def.side_of.as_deref().unwrap_or(table)
            ),
        });
    }
    let page = PAGE_SIZE as u64;
    if opts.object_bytes < page || !opts.object_bytes.is_multiple_of(page) {
        return Err(StorageError::ColdTier {
            table: table.to_string(),
            message: format!(
                "object size {} bytes is not a whole number of 8 KiB pages",
                opts.object_bytes
            ),
        });
    }
    let object_pages = opts.object_bytes / page;
    if let TableTier::Cold {
        endpoint, bucket, ..
    } = table_tier(db.dir(), &def)?
    {
        return Err(StorageError::ColdTier {
            table: table.to_string(),
            message: format!(
                "table {table} is already on the cold tier (bucket {bucket} at {endpoint}); \
                 strata tier local {table} brings it back"
            ),
        });
    }
    let bucket = opts
        .bucket
        .clone()
        .unwrap_or_else(|| default_bucket(db.dir()));
    let client = tier.client()?;
    client.create_bucket(&opts.endpoint, &bucket)?;
    // Everything committed is in the files, and the heap cut to its
    // committed size, before reading them.
    db.checkpoint()?;
    let open = db.table(table)?;
    let device = db.device().clone();
    let ids = open.paged_files();
    let mut todo = Vec::new();
    for f in files_of(&def) {
        let id = ids.iter().find(|(n, _)| *n == f).map(|(_, id)| *id);
        let id = id.ok_or_else(|| StorageError::ColdTier {
            table: table.to_string(),
            message: format!("file {f} of the catalog is not open in table {table}"),
        })?;
        todo.push((id, f));
    }
    let mut steps = Steps::new(opts.stop_after);
    let mut report = TierReport {
        table: table.to_string(),
        ..TierReport::default()
    };
    let mut manifests = Vec::new();
    for (file_id, file) in &todo {
        let base = db.dir().join(file);
        if cold_manifest_path(&base).exists() {
            continue;
        }
        let num_pages = if *file == def.heap_file {
            open.heap().num_pages()
        } else {
            device.num_pages(*file_id)?
        };
        let name = Path::new(file)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.clone());
        let mut objects = Vec::new();
        let mut head = None;
        let mut buf = AlignedBuf::new(READ_RUN_PAGES as usize);
        for (k, first) in (0..num_pages).step_by(object_pages as usize).enumerate() {
            let pages = object_pages.min(num_pages - first);
            let mut data = Vec::with_capacity((pages * page) as usize);
            let mut p = first;
            while p < first + pages {
                let n = READ_RUN_PAGES.min(first + pages - p);
                let chunk = &mut buf[..(n * page) as usize];
                device.read(*file_id, p, chunk)?;
                data.extend_from_slice(chunk);
                p += n;
            }
            let key = format!("{table}/{name}.{k}");
            if k == 0 && data.len() >= PAGE_SIZE {
                head = Some(crate::manifest::to_hex(&data[..PAGE_SIZE]));
            }
            let crc = crc32c::crc32c(&data);
            let len = data.len() as u64;
            client.put(&opts.endpoint, &bucket, &key, Bytes::from(data))?;
            let stored = client.head(&opts.endpoint, &bucket, &key)?;
            if stored != len {
                return Err(StorageError::ColdObject {
                    object: format!("object {bucket}/{key}"),
                    endpoint: opts.endpoint.clone(),
                    reason: format!("PUT {len} bytes but the device holds {stored}"),
                    corrupt: true,
                });
            }
            steps.step(&key)?;
            report.objects += 1;
            report.bytes += len;
            objects.push(ObjectEntry {
                key,
                first_page: first,
                pages,
                crc32c: crc,
            });
        }
        manifests.push((
            base,
            Manifest {
                format: MANIFEST_FORMAT,
                table: table.to_string(),
                file: file.clone(),
                endpoint: opts.endpoint.clone(),
                bucket: bucket.clone(),
                object_pages,
                num_pages,
                objects,
                head,
            },
        ));
    }
    drop(open);
    let columns =
        tier_columns::upload(db.dir(), &def, &client, &opts.endpoint, &bucket, &mut steps)?;
    report.objects += columns.len();
    report.bytes += columns.iter().map(|(_, m)| m.bytes).sum::<u64>();
    for (base, m) in &manifests {
        let path = cold_manifest_path(base);
        m.save(&path)?;
        steps.step(&path.display().to_string())?;
    }
    for (path, m) in &columns {
        m.save(path)?;
        steps.step(&path.display().to_string())?;
    }
    // The database forgets the local files before they go.
    db.close_table(table)?;
    for (base, _) in &manifests {
        remove_segments(base)?;
        steps.step(&base.display().to_string())?;
        report.files += 1;
    }
    for (_, m) in &columns {
        let local = db.dir().join(&m.file);
        std::fs::remove_file(&local).map_err(|e| StorageError::io(&local, e))?;
        steps.step(&local.display().to_string())?;
        report.files += 1;
    }
    sync_dir(&db.dir().join("data"))?;
    Ok(report)
}

/// Removes the local segments of the paged file `base`, last first (a crash
/// half way leaves a prefix, never a gap).
fn remove_segments(base: &Path) -> Result<()> {
    let mut segs = Vec::new();
    while segment_path(base, segs.len() as u64).exists() {
        segs.push(segment_path(base, segs.len() as u64));
    }
    for p in segs.iter().rev() {
        std::fs::remove_file(p).map_err(|e| StorageError::io(p, e))?;
    }
    Ok(())
}

/// Brings `table` back from the cold tier (see the module docs). Local files
/// are skipped; a table with no file on the cold tier is an error.
pub fn to_local(
    db: &Database,
    tier: &ColdTier,
    table: &str,
    opts: &TierOptions,
) -> Result<TierReport> {
    let def = table_def(db, table)?;
    let mut cold = Vec::new();
    for f in files_of(&def) {
        let base = db.dir().join(&f);
        let p = cold_manifest_path(&base);
        if p.exists() {
            cold.push((base, Manifest::load(&p)?));
        }
    }
    let columns = tier_columns::cold_manifests(db.dir(), &def)?;
    if cold.is_empty() && columns.is_empty() {
        return Err(StorageError::ColdTier {
            table: table.to_string(),
            message: format!("table {table} is not on the cold tier (its files are local)"),
        });
    }
    let client = tier.client()?;
    db.close_table(table)?;
    let mut steps = Steps::new(opts.stop_after);
    let mut report = TierReport {
        table: table.to_string(),
        ..TierReport::default()
    };
    let tmp_dir = db.dir().join("tmp");
    std::fs::create_dir_all(&tmp_dir).map_err(|e| StorageError::io(&tmp_dir, e))?;
    for (base, m) in &cold {
        // Leftovers of an earlier attempt go first.
        remove_segments(base)?;
        let mut segments = Segments::new(base, def.segment_pages);
        for (k, o) in m.objects.iter().enumerate() {
            let tmp = strata_storage::temp::temp_path(&tmp_dir, "tier");
            let fetched = (|| {
                let f = client.get_to_file(&m.endpoint, &m.bucket, &o.key, &tmp)?;
                if f.bytes != o.bytes() || f.crc32c != o.crc32c {
                    return Err(StorageError::ColdObject {
                        object: format!("object {}", m.object_name(k)),
                        endpoint: m.endpoint.clone(),
                        reason: format!(
                            "it has {} bytes with CRC32C {:08x}; its manifest ({}) says {} bytes, {:08x}: the object is corrupt",
                            f.bytes,
                            f.crc32c,
                            m.file,
                            o.bytes(),
                            o.crc32c
                        ),
                        corrupt: true,
                    });
                }
                let data = std::fs::read(&tmp).map_err(|e| StorageError::io(&tmp, e))?;
                segments.write(o.first_page, &data)
            })();
            let _ = std::fs::remove_file(&tmp);
            fetched?;
            report.objects += 1;
            report.bytes += o.bytes();
        }
        segments.finish(m.num_pages)?;
        steps.step(&base.display().to_string())?;
    }
    tier_columns::download(db.dir(), &columns, &client, &mut steps)?;
    report.objects += columns.len();
    report.bytes += columns.iter().map(|(_, m)| m.bytes).sum::<u64>();
    sync_dir(&db.dir().join("data"))?;
    for (base, _) in &cold {
        let p = cold_manifest_path(base);
        Manifest::remove(&p)?;
        steps.step(&p.display().to_string())?;
        report.files += 1;
    }
    if opts.delete_objects {
        for (_, m) in &cold {
            for o in &m.objects {
                client.delete(&m.endpoint, &m.bucket, &o.key)?;
                steps.step(&o.key)?;
            }
        }
    }
    tier_columns::forget(&columns, &client, opts.delete_objects, &mut steps)?;
    report.files += columns.len();
    Ok(report)
}

/// Local segments being written back from objects.
struct Segments {
    base: PathBuf,
    segment_pages: u64,
    open: Vec<std::fs::File>,
}

impl Segments {
    fn new(base: &Path, segment_pages: u64) -> Segments {
        Segments {
            base: base.to_path_buf(),
            segment_pages,
            open: Vec::new(),
        }
    }

    fn segment(&mut self, seg: u64) -> Result<&std::fs::File> {
        while self.open.len() as u64 <= seg {
            let p = segment_path(&self.base, self.open.len() as u64);
            let f = std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(&p)
                .map_err(|e| StorageError::io(&p, e))?;
            self.open.push(f);
        }
        Ok(&self.open[seg as usize])
    }

    /// Writes pages starting at `first_page` (`data` is whole pages).
    fn write(&mut self, first_page: u64, data: &[u8]) -> Result<()> {
        let page = PAGE_SIZE as u64;
        let mut p = first_page;
        let mut at = 0usize;
        while at < data.len() {
            let seg = p / self.segment_pages;
            let in_seg = p % self.segment_pages;
            let n = ((self.segment_pages - in_seg) * page).min((data.len() - at) as u64) as usize;
            let path = segment_path(&self.base, seg);
            self.segment(seg)?
                .write_all_at(&data[at..at + n], in_seg * page)
                .map_err(|e| StorageError::io(&path, e))?;
            at += n;
            p += n as u64 / page;
        }
        Ok(())
    }

    /// Makes the file exist with `num_pages` pages (an empty file has an
    /// empty first segment) and syncs every segment.
    fn finish(mut self, num_pages: u64) -> Result<()> {
        let segs = num_pages.div_ceil(self.segment_pages).max(1);
        self.segment(segs - 1)?;
        for (i, f) in self.open.iter().enumerate() {
            let p = segment_path(&self.base, i as u64);
            f.sync_all().map_err(|e| StorageError::io(&p, e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_bucket_is_the_database_name_made_valid() {
        let root = tempfile::tempdir().unwrap();
        let mk = |name: &str| {
            let d = root.path().join(name);
            std::fs::create_dir_all(&d).unwrap();
            default_bucket(&d)
        };
        assert_eq!(mk("strata.db"), "strata.db");
        assert_eq!(mk("My_Sales DB"), "my-sales-db");
        assert_eq!(mk("_x_"), "strata-x");
        assert_eq!(mk(&"a".repeat(80)).len(), 63);
    }
}
