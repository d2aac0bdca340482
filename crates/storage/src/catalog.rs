//! The catalog: every table's schema, files, fill factors, sizes and indexes, in one
//! JSON document `catalog.json` in the database directory.
//!
//! It is the commit point of the database. It is replaced atomically — written to a
//! temporary file, fsynced, renamed over the old one, then the directory fsynced —
//! so after a crash a reader sees either the old catalog or the new one. Data files
//! are always made durable *before* the catalog that references them is written,
//! and files the catalog does not reference are garbage from a load that did not
//! commit (the database removes them when it opens).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Result, StorageError};
use crate::row::Schema;

pub const CATALOG_FILE: &str = "catalog.json";
/// Heap fill factors a table may have (creation and the catalog check both use it).
pub const FILL_FACTORS: std::ops::RangeInclusive<f64> = 0.05..=1.0;
/// Leaf fill factors an index may have.
pub const LEAF_FILLS: std::ops::RangeInclusive<f64> = 0.1..=1.0;
/// 2: pages have a 48-byte header (LSN and CSN) and the database a `wal/`.
const FORMAT: u32 = 2;

/// Catalogs saved by this process ([`Catalog::saves`]).
static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Catalog {
    pub format: u32,
    /// Counter that makes every data file name unique.
    pub next_file: u64,
    pub tables: BTreeMap<String, TableDef>,
    /// Views, by name: their SQL text (the SQL layer plans it when a session
    /// starts; storage keeps it only). Absent in catalogs written before.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub views: BTreeMap<String, ViewDef>,
}

/// A view: a name for a query, kept as its SQL text.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ViewDef {
    pub name: String,
    /// The query (`SELECT ...`), as the SQL layer normalized it.
    pub query: String,
    /// The names the view gives its columns (`CREATE VIEW v (a, b) AS ...`);
    /// empty: the query's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<String>,
    /// The names of the view's columns when it was created: what a query of
    /// the view can still name after its query stopped planning (a table it
    /// reads was dropped), so that the query fails saying so.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TableDef {
    pub name: String,
    pub schema: Schema,
    /// Base path of the heap file, relative to the database directory.
    pub heap_file: String,
    pub segment_pages: u64,
    pub fill_factor: f64,
    /// Committed pages of the heap.
    pub pages: u64,
    /// Live tuples.
    pub rows: u64,
    pub indexes: Vec<IndexDef>,
    /// Optimizer statistics as `ANALYZE` last computed them (opaque to storage;
    /// the SQL layer owns their shape). Loads keep them as they are, so they go
    /// stale until the next `ANALYZE` — deliberately, as in a classical system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<serde_json::Value>,
    /// First heap page of the hot region: where `strata cluster --hot` put the
    /// hot tuples (No Bits Left Behind §3.1, `maintenance/cluster.rs`); absent: never clustered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_region: Option<u64>,
    /// Each column's physical encoding (types as hints, `encoding.rs`);
    /// absent: every column as declared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub encodings: Vec<crate::row::encoding::Encoding>,
    /// Vertical partitioning (No Bits Left Behind §3.2, `split.rs`): the
    /// table holding this table's side columns (those whose encoding is
    /// [`crate::row::encoding::Encoding::Side`]), named `<table>.side`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    /// For a side table: the table it holds columns of. Hidden from
    /// listings, changed only through that table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_of: Option<String>,
    /// A columnar table (`strata-columns`): its rows as of the last
    /// conversion, in Parquet files of column row groups; the heap holds the
    /// rows inserted since (the delta). Absent: a row table, all in the heap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<ColumnsDef>,
}

/// The column part of a columnar table: immutable Parquet files, replaced
/// whole by a catalog swap (a conversion or a merge of the delta), never
/// changed in place.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ColumnsDef {
    pub files: Vec<ColumnFile>,
    /// The delete set's file (`db/deletes.rs`): the positions of the rows
    /// of `files` that DELETE and UPDATE took away. Absent: a part converted
    /// before delete sets existed, which takes no deletes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted: Option<String>,
    /// Each index's tree over the rows of `files` (`db/index.rs`): entries
    /// (key, position as a tid, `Tid::of_position`), built when the files
    /// are written or the index created, never changed after (a deleted
    /// row's entry stays; readers subtract the delete set). The index's own
    /// file (`IndexDef::file`) holds the entries of the delta's rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<ColumnIndexDef>,
}

/// An index's tree over the rows of a column part.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ColumnIndexDef {
    /// The index (`IndexDef::name`).
    pub index: String,
    /// Base path of the tree's file, relative to the database directory.
    pub file: String,
    pub entries: u64,
}

/// One Parquet file of a columnar table.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ColumnFile {
    /// Its path, relative to the database directory (`data/<name>.parquet`).
    pub file: String,
    pub rows: u64,
    /// Its size: a file of another size is not the one the catalog committed.
    pub bytes: u64,
    /// Bytes at its end that hold its page index and footer, so that an
    /// open reads them in one request; 0 when not recorded (a file written
    /// before strata recorded it: its footer is found by reading backwards).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tail: u64,
    /// Bytes at its end that hold its offset index (where each page is) and
    /// footer, the part of `tail` after the column index (each page's min
    /// and max): what an open reads, the column index being read only when
    /// a plan prunes by page; 0 when not recorded (the open reads `tail`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offsets_tail: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ColumnsDef {
    /// Rows in all its files.
    pub fn rows(&self) -> u64 {
        self.files.iter().map(|f| f.rows).sum()
    }

    /// The files of its B+-trees: the delete set's and the indexes' column
    /// trees.
    pub fn tree_files(&self) -> impl Iterator<Item = &String> {
        self.deleted
            .iter()
            .chain(self.indexes.iter().map(|i| &i.file))
    }

    /// Index `name`'s tree over the files, if it has one.
    pub fn index_tree(&self, name: &str) -> Option<&ColumnIndexDef> {
        self.indexes
            .iter()
            .find(|i| i.index.eq_ignore_ascii_case(name))
    }
}

/// The name of table `table`'s side table: not a name a user can give a
/// table (it has a dot), so it never collides with one.
pub fn side_table_name(table: &str) -> String {
    format!("{table}.side")
}

impl TableDef {
    /// The table's paged files, as the catalog names them: its heap, its
    /// indexes, and a columnar table's delete set and column trees (what
    /// `strata tier cold` moves page by page).
    pub fn paged_files(&self) -> Vec<String> {
        std::iter::once(self.heap_file.clone())
            .chain(self.indexes.iter().map(|i| i.file.clone()))
            .chain(self.columns.iter().flat_map(|c| c.tree_files().cloned()))
            .collect()
    }

    /// A columnar table's column files (none for a row table).
    pub fn column_files(&self) -> Vec<String> {
        self.columns
            .iter()
            .flat_map(|c| c.files.iter().map(|f| f.file.clone()))
            .collect()
    }

    /// Where index `name` is in `indexes` (names are unique ignoring ASCII
    /// case, as at creation).
    pub fn index_position(&self, name: &str) -> Result<usize> {
        self.indexes
            .iter()
            .position(|i| i.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| StorageError::UnknownIndex(name.into()))
    }

    /// Index `name`.
    pub fn index_mut(&mut self, name: &str) -> Result<&mut IndexDef> {
        let at = self.index_position(name)?;
        Ok(&mut self.indexes[at])
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct IndexDef {
    pub name: String,
    pub columns: Vec<String>,
    /// Base path of the index file, relative to the database directory.
    pub file: String,
    pub leaf_fill: f64,
    pub entries: u64,
    /// Columns cached in the leaves' free space (No Bits Left Behind §2.1,
    /// `btree/cache/fields.rs`); absent in catalogs written before: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache: Vec<String>,
    /// The hot partition's own index over the same columns (`maintenance/cluster.rs`), if
    /// `strata cluster --hot --partition` made one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot: Option<HotDef>,
    /// A unique index: no two rows have the same key (keys with a NULL
    /// aside). Loads and the SQL layer's writes check it; absent: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unique: bool,
}

/// The index of a hot partition: the entries of the hot tuples only, in a file
/// of its own, tried before the full index by lookups.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct HotDef {
    /// Base path of its file, relative to the database directory.
    pub file: String,
    pub entries: u64,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog {
            format: FORMAT,
            next_file: 1,
            tables: BTreeMap::new(),
            views: BTreeMap::new(),
        }
    }
}

impl Catalog {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(CATALOG_FILE)
    }

    /// Reads the catalog of the database in `dir`.
    pub fn load(dir: &Path) -> Result<Catalog> {
        let path = Self::path(dir);
        let bytes = std::fs::read(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                StorageError::Database {
                    path: dir.to_path_buf(),
                    reason:
                        "not a strata database (no catalog.json); create one with `strata create`"
                            .into(),
                }
            } else {
                StorageError::io(&path, e)
            }
        })?;
        let cat: Catalog = serde_json::from_slice(&bytes).map_err(|e| StorageError::Catalog {
            path: path.clone(),
            reason: format!("unreadable: {e}"),
        })?;
        if cat.format != FORMAT {
            return Err(StorageError::Catalog {
                path,
                reason: format!(
                    "format {} is not supported (this strata reads format {FORMAT}{})",
                    cat.format,
                    if cat.format < FORMAT {
                        "; the database was written by an older strata, whose pages had no \
                         log sequence numbers: re-create it and load the data again"
                    } else {
                        ""
                    }
                ),
            });
        }
        cat.validate()
            .map_err(|reason| StorageError::Catalog { path, reason })?;
        Ok(cat)
    }

    /// Checks what strata itself would never write: names, types, sizes and
    /// files, so that a damaged or hand-edited catalog is refused with the
    /// table and field at fault instead of misleading an open table. Every
    /// data file must be a distinct plain name under `data/`: no catalog can
    /// make strata open, create or remove a file outside the database.
    fn validate(&self) -> std::result::Result<(), String> {
        let mut files = std::collections::BTreeSet::new();
        let mut file_ok = |what: &str, f: &str| {
            let plain = f.strip_prefix("data/").is_some_and(|n| {
                !n.is_empty()
                    && n.len() <= 255
                    && n != "."
                    && n != ".."
                    && n.bytes()
                        .all(|c| c.is_ascii_alphanumeric() || b"_.-".contains(&c))
            });
            if !plain {
                return Err(format!(
                    "{what}: file '{f}' is not a plain name under data/"
                ));
            }
            if !files.insert(f.to_string()) {
                return Err(format!("{what}: file '{f}' is used twice"));
            }
            Ok(())
        };
        for (key, v) in &self.views {
            let what = format!("view '{key}'");
            if v.name != *key {
                return Err(format!("{what} is named '{}' inside", v.name));
            }
            validate_name(key, "view").map_err(|e| e.to_string())?;
            if self.tables.keys().any(|t| t.eq_ignore_ascii_case(key)) {
                return Err(format!("{what} has the name of a table"));
            }
        }
        for (key, t) in &self.tables {
            let what = format!("table '{key}'");
            if t.name != *key {
                return Err(format!("{what} is named '{}' inside", t.name));
            }
            match &t.side_of {
                None => validate_name(key, "table").map_err(|e| e.to_string())?,
                Some(owner) => {
                    let named = side_table_name(owner);
                    if *key != named {
                        return Err(format!(
                            "{what}: a side table of '{owner}' must be named '{named}'"
                        ));
                    }
                    if self.tables.get(owner).and_then(|o| o.side.as_ref()) != Some(key) {
                        return Err(format!(
                            "{what}: table '{owner}' does not name it as its side table"
                        ));
                    }
                    if !t.indexes.is_empty() {
                        return Err(format!("{what}: a side table has no indexes"));
                    }
                }
            }
            let has_side = t.encodings.contains(&crate::row::encoding::Encoding::Side);
            if has_side != t.side.is_some() || (has_side && t.side_of.is_some()) {
                return Err(format!(
                    "{what}: side columns (encoding 'side') and a side table go together, and a side table has neither"
                ));
            }
            if let Some(side) = &t.side {
                if self.tables.get(side).and_then(|s| s.side_of.as_ref()) != Some(key) {
                    return Err(format!(
                        "{what}: its side table '{side}' is missing or belongs to another table"
                    ));
                }
                let expected: Vec<_> = t
                    .schema
                    .columns
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| {
                        t.encodings.get(*i) == Some(&crate::row::encoding::Encoding::Side)
                    })
                    .map(|(_, c)| c)
                    .collect();
                let held: Vec<_> = self.tables[side].schema.columns.iter().collect();
                if expected != held {
                    return Err(format!(
                        "{what}: its side columns are not the columns of its side table '{side}'"
                    ));
                }
            }
            Schema::new(t.schema.columns.clone()).map_err(|e| format!("{what}: {e}"))?;
            for c in &t.schema.columns {
                c.ty.validate()
                    .map_err(|e| format!("{what}, column '{}': {e}", c.name))?;
            }
            if t.segment_pages == 0 {
                return Err(format!("{what}: segment size of 0 pages"));
            }
            if !FILL_FACTORS.contains(&t.fill_factor) {
                return Err(format!(
                    "{what}: fill factor {} is outside {FILL_FACTORS:?}",
                    t.fill_factor
                ));
            }
            file_ok(&what, &t.heap_file)?;
            let mut names = std::collections::BTreeSet::new();
            for i in &t.indexes {
                let what = format!("{what}, index '{}'", i.name);
                validate_name(&i.name, "index").map_err(|e| e.to_string())?;
                if !names.insert(i.name.to_ascii_lowercase()) {
                    return Err(format!("{what} appears twice"));
                }
                if i.columns.is_empty() {
                    return Err(format!("{what} has no columns"));
                }
                if let Some(c) = i.columns.iter().find(|c| t.schema.index_of(c).is_none()) {
                    return Err(format!("{what}: no column '{c}' in the table"));
                }
                if !LEAF_FILLS.contains(&i.leaf_fill) {
                    return Err(format!(
                        "{what}: leaf fill {} is outside {LEAF_FILLS:?}",
                        i.leaf_fill
                    ));
                }
                file_ok(&what, &i.file)?;
                if let Some(h) = &i.hot {
                    file_ok(&format!("{what}, hot partition"), &h.file)?;
                }
            }
        }
        Ok(())
    }

    /// How many catalogs this process saved: a reader that registered the
    /// tables at one count registers them again when it moved (another
    /// session of a server created, dropped or altered one).
    pub fn saves() -> u64 {
        SAVES.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Replaces the catalog atomically (see the module docs).
    pub fn save(&self, dir: &Path) -> Result<()> {
        let path = Self::path(dir);
        let tmp = dir.join(format!("{CATALOG_FILE}.tmp"));
        let json = serde_json::to_vec_pretty(self).expect("catalog serializes");
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |e| StorageError::io(p, e)
        };
        let mut f = File::create(&tmp).map_err(io(&tmp))?;
        if let Err(e) = f.write_all(&json).and_then(|()| f.sync_all()) {
            // On a full disk, a half-written file would keep the room it took.
            drop(f);
            let _ = std::fs::remove_file(&tmp);
            return Err(io(&tmp)(e));
        }
        drop(f);
        std::fs::rename(&tmp, &path).map_err(io(&path))?;
        SAVES.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        sync_dir(dir)
    }

    /// A fresh file name stem for `what` (e.g. `orders.heap`), unique in this database.
    pub fn new_file_name(&mut self, what: &str) -> String {
        let n = self.next_file;
        self.next_file += 1;
        format!("data/{what}.{n}")
    }

    pub fn table(&self, name: &str) -> Result<&TableDef> {
        self.tables
            .get(name)
            .ok_or_else(|| StorageError::UnknownTable(name.to_string()))
    }
}

/// fsyncs a directory so a rename or a new file in it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StorageError::io(dir, e))
}

/// Checks a table or index name: 1-64 letters, digits or `_`, not starting
/// with a digit.
pub(crate) fn validate_name(name: &str, what: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        && !name.as_bytes()[0].is_ascii_digit();
    if ok {
        Ok(())
    } else {
        Err(StorageError::Schema(format!(
            "{what} name '{name}' must be 1-64 letters, digits or '_' and not start with a digit"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_load_round_trip_and_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let e = Catalog::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a strata database"), "{e}");
        let mut c = Catalog::default();
        let f = c.new_file_name("t.heap");
        c.tables.insert(
            "t".into(),
            TableDef {
                name: "t".into(),
                side: None,
                side_of: None,
                columns: None,
                schema: Schema::parse("a INT, b VARCHAR(3) NULL").unwrap(),
                heap_file: f,
                segment_pages: 8,
                fill_factor: 1.0,
                pages: 3,
                rows: 10,
                indexes: vec![],
                stats: Some(serde_json::json!({"rows": 10})),
                hot_region: None,
                encodings: vec![],
            },
        );
        c.save(dir.path()).unwrap();
        assert_eq!(Catalog::load(dir.path()).unwrap(), c);
        std::fs::write(Catalog::path(dir.path()), b"{ torn").unwrap();
        let e = Catalog::load(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("catalog.json") && e.contains("unreadable"),
            "{e}"
        );
    }
}
