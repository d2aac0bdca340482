//! The engine under test: a strata database in a temporary directory with an
//! in-process cold tier (`strata_cold::client::memory_factory`, as
//! crates/sql/tests/cold_tier_sql.rs moves tables), one SQL session over it,
//! each statement run under `catch_unwind` so that a panic is a finding and
//! not the end of the run, and its Arrow answer read into the comparator's
//! cells.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::Array;
use arrow::datatypes::DataType as ArrowType;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use strata_cold::client::memory_factory;
use strata_cold::device::{ColdConfig, ColdTier};
use strata_cold::tier::{self, TierOptions};
use strata_sql::{QueryResult, SqlSession};
use strata_storage::Database;
use strata_storage::db::DbOptions;

use crate::compare::{Answer, Cell, CellKind};

/// What strata answered.
#[derive(Clone, Debug)]
pub enum Outcome {
    Rows(Answer),
    Error(String),
    Panic(String),
}

/// A strata database and its session.
pub struct Strata {
    _dir: tempfile::TempDir,
    path: PathBuf,
    tier: ColdTier,
    session: Option<SqlSession>,
}

impl Strata {
    fn options(tier: &ColdTier) -> DbOptions {
        DbOptions {
            buffer_pool_bytes: 4 << 20,
            direct_io: false,
            cold_tier: Some(tier.layer()),
            ..DbOptions::default()
        }
    }

    /// A fresh, empty database.
    pub fn create() -> Result<Strata, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
        let path = dir.path().join("db");
        let tier = ColdTier::with_factory(
            ColdConfig {
                cache_bytes: 1 << 20,
                ..ColdConfig::default()
            },
            memory_factory(),
        );
        let db = Database::create(&path, Self::options(&tier))
            .map_err(|e| format!("creating a strata database: {e}"))?;
        let session = SqlSession::new(Arc::new(db)).map_err(|e| format!("SQL session: {e}"))?;
        Ok(Strata {
            _dir: dir,
            path,
            tier,
            session: Some(session),
        })
    }

    fn session(&self) -> &SqlSession {
        self.session.as_ref().expect("a strata session is open")
    }

    /// Sets a session setting.
    pub fn set(&self, key: &str, value: &str) -> Result<(), String> {
        self.session().set(key, value).map_err(|e| e.to_string())
    }

    /// Runs one statement; a panic is caught and returned.
    pub fn run(&self, sql: &str) -> Outcome {
        let s = self.session();
        match catch_unwind(AssertUnwindSafe(|| s.execute(sql))) {
            Ok(Ok(r)) => Outcome::Rows(answer(&r)),
            Ok(Err(e)) => Outcome::Error(e.to_string()),
            Err(p) => Outcome::Panic(
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic without a message".into()),
            ),
        }
    }

    /// Moves `tables` to the cold tier (in objects of 64 KiB, so that a
    /// table spans several) and opens the database again over them.
    pub fn to_cold(&mut self, tables: &[String]) -> Result<(), String> {
        let session = self.session.take().expect("a strata session is open");
        let db = session.database().clone();
        drop(session);
        let opts = TierOptions {
            object_bytes: 64 << 10,
            ..TierOptions::new("http://csd.test:9000")
        };
        for t in tables {
            tier::to_cold(&db, &self.tier, t, &opts)
                .map_err(|e| format!("moving {t} to the cold tier: {e}"))?;
        }
        let db = Arc::into_inner(db).ok_or("the database is still shared")?;
        drop(db);
        let db = Database::open(&self.path, Self::options(&self.tier))
            .map_err(|e| format!("opening the database again: {e}"))?;
        self.session =
            Some(SqlSession::new(Arc::new(db)).map_err(|e| format!("SQL session: {e}"))?);
        Ok(())
    }
}

/// The kind of an Arrow column's values.
fn kind(t: &ArrowType) -> CellKind {
    match t {
        ArrowType::Int8
        | ArrowType::Int16
        | ArrowType::Int32
        | ArrowType::Int64
        | ArrowType::UInt8
        | ArrowType::UInt16
        | ArrowType::UInt32
        | ArrowType::UInt64
        | ArrowType::Decimal32(..)
        | ArrowType::Decimal64(..)
        | ArrowType::Decimal128(..)
        | ArrowType::Decimal256(..) => CellKind::Exact,
        ArrowType::Float16 | ArrowType::Float32 | ArrowType::Float64 => CellKind::Float,
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => CellKind::Text,
        ArrowType::Boolean => CellKind::Bool,
        ArrowType::Date32 | ArrowType::Date64 => CellKind::Date,
        _ => CellKind::Other,
    }
}

/// A strata answer as cells.
pub fn answer(r: &QueryResult) -> Answer {
    let opts = FormatOptions::default();
    let kinds: Vec<CellKind> = r
        .schema
        .fields()
        .iter()
        .map(|f| kind(f.data_type()))
        .collect();
    let mut rows = Vec::new();
    for b in &r.batches {
        let cols: Vec<_> = b
            .columns()
            .iter()
            .map(|c| (c.clone(), ArrayFormatter::try_new(c.as_ref(), &opts).ok()))
            .collect();
        for i in 0..b.num_rows() {
            rows.push(
                cols.iter()
                    .zip(&kinds)
                    .map(|((c, f), k)| {
                        if c.is_null(i) {
                            Cell::Null
                        } else {
                            match f {
                                Some(f) => k.cell(&f.value(i).to_string()),
                                None => Cell::Other(format!("{:?}", c.data_type())),
                            }
                        }
                    })
                    .collect(),
            );
        }
    }
    Answer {
        columns: kinds.len(),
        rows,
    }
}
