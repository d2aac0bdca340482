//! TPC-H data: the eight tables of the TPC-H benchmark at any scale factor, loaded
//! into strata tables with the secondary indexes of the Smooth Scan paper's TPC-H
//! experiments, and optionally written as Parquet files so that an independent
//! engine can query exactly the same data.
//!
//! # Where the data comes from
//!
//! [`tpchgen`] is a port of the TPC's `dbgen` that produces the same rows, value
//! for value (its authors check this against dbgen's `.tbl` files), and
//! `tpchgen-arrow` turns its rows into arrow record batches. Those batches go
//! through the same arrow→row conversion as the Parquet loader
//! ([`crate::arrow_rows`]), so strata stores exactly what the Parquet files hold.
//! Generation streams: one batch (8 000 rows) at a time is generated on its own
//! thread while the previous one is appended to the heap and, with a Parquet
//! directory, written to Parquet on a third thread, so generation holds a few
//! batches whatever the scale factor. The index builds at commit sort a table's
//! (key, tuple id) entries in memory (storage's key sort, at least 16 bytes an
//! entry): 0.8 GB peak at SF 1, roughly 1 GB per lineitem index at SF 10.
//!
//! # Types
//!
//! As TPC-H (spec §1.4) defines them: identifiers (keys) are BIGINT (tpchgen's
//! Int64; the spec needs 64 bits above SF 300 for the orders keys), other
//! integers INT, every money amount, quantity, discount and tax DECIMAL(15,2)
//! (exact, a scaled i64), dates DATE, and fixed and variable text CHAR(n) and
//! VARCHAR(n) with the spec's lengths. A value longer than the spec allows would
//! fail the load with the table, row and column named; none does. CHAR values
//! are stored space-padded and read back without the padding; no TPC-H CHAR
//! value ends in a space, so every value round-trips exactly. The Parquet files
//! keep tpchgen's arrow types: Int64/Int32, Decimal128(15,2), Date32 and Utf8View.
//!
//! # Indexes
//!
//! The Smooth Scan paper (§7.2) runs TPC-H SF 10 on PostgreSQL "with the set of
//! indexes proposed by the commercial system" for Q1, Q4, Q6, Q7, Q12, Q14 and
//! Q19, but does not list them. [`TPCH_INDEXES`] is the set those queries'
//! plans in the paper need: an index on every date column they restrict by a
//! range (the access Smooth Scan replaces) and on every key an index
//! nested-loop join probes in them. Each entry says which queries use it and why:
//!
//! | index | queries | why |
//! |---|---|---|
//! | `lineitem_l_shipdate` | Q1, Q6, Q7, Q14 | the range on `l_shipdate`: 98% (Q1), ~15% before the other Q6 filters, 30% (Q7), ~1% (Q14): both ends of the selectivity range the paper sweeps |
//! | `lineitem_l_receiptdate` | Q12 | the one-year range on `l_receiptdate`, the index that sent DBMS-X's Q12 from 1 minute to 11 hours |
//! | `lineitem_l_orderkey` | Q4 | the `EXISTS` probe from each qualifying order into its lineitems |
//! | `lineitem_l_partkey` | Q19 | the nested-loop probe from the few qualifying parts (brand, container, size) into lineitem, the plan that degraded DBMS-X's Q19 |
//! | `orders_o_orderdate` | Q4 | the three-month range on `o_orderdate` |
//! | `orders_o_orderkey` | Q4, Q7, Q12 | primary key: the inner side of lineitem ⋈ orders nested-loop joins |
//! | `part_p_partkey` | Q14, Q19 | primary key: lineitem ⋈ part |
//! | `customer_c_custkey` | Q7 | primary key: orders ⋈ customer |
//! | `supplier_s_suppkey` | Q7 | primary key: lineitem ⋈ supplier |
//! | `nation_n_nationkey` | Q7 | primary key: supplier/customer ⋈ nation (one page; costs nothing) |
//!
//! None on region or partsupp: none of these seven queries reads them.
//!
//! # Atomicity
//!
//! Each table is one atomic load (see [`crate`]): a generation that is killed
//! leaves every table either complete, with its indexes, or absent. The tables
//! commit one after another, so a killed run can leave the first few complete;
//! generation refuses to start when any of the eight tables exists (generate
//! into a fresh `--db`). A Parquet file is written as `<table>.parquet.tmp`,
//! fsynced and renamed, so `<table>.parquet` is always a complete file; an
//! existing one is replaced.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{Duration, Instant};

use ::parquet::arrow::ArrowWriter;
use ::parquet::basic::Compression;
use ::parquet::file::properties::WriterProperties;
use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, SchemaRef};
use strata_storage::StorageError;
use strata_storage::db::{Database, IndexSpec, LoadSummary, Progress, TableLoad, TableOptions};
use strata_storage::row::{Schema, Value};
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, PartSuppArrow, RegionArrow,
    SupplierArrow,
};

use crate::arrow_rows::{BatchRows, map_fields};
use crate::error::LoadError;

/// Smallest scale factor: below it the supplier table would be empty (10 000
/// suppliers per unit of SF), and partsupp, which draws suppliers, undefined.
pub const MIN_SCALE_FACTOR: f64 = 0.0001;
/// Largest scale factor: TPC-H's largest (100 TB).
pub const MAX_SCALE_FACTOR: f64 = 100_000.0;
/// Rows per generated record batch (tpchgen-arrow's default).
pub const BATCH_ROWS: usize = 8000;
/// Batches in flight between the generator thread and the loader or writer.
const QUEUE: usize = 4;

/// One of the eight TPC-H tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TpchTable {
    Region,
    Nation,
    Supplier,
    Customer,
    Part,
    PartSupp,
    Orders,
    LineItem,
}

/// A secondary index of the TPC-H setup; see the module docs.
#[derive(Clone, Copy, Debug)]
pub struct TpchIndex {
    pub table: TpchTable,
    pub name: &'static str,
    pub column: &'static str,
    /// The TPC-H queries whose plans in the Smooth Scan paper use it.
    pub queries: &'static str,
    pub why: &'static str,
}

/// The secondary indexes `strata gen tpch` builds (the table in the module docs).
pub const TPCH_INDEXES: &[TpchIndex] = &[
    TpchIndex {
        table: TpchTable::LineItem,
        name: "lineitem_l_shipdate",
        column: "l_shipdate",
        queries: "Q1 Q6 Q7 Q14",
        why: "range on l_shipdate, from 1% (Q14) to 98% (Q1) of lineitem",
    },
    TpchIndex {
        table: TpchTable::LineItem,
        name: "lineitem_l_receiptdate",
        column: "l_receiptdate",
        queries: "Q12",
        why: "one-year range on l_receiptdate",
    },
    TpchIndex {
        table: TpchTable::LineItem,
        name: "lineitem_l_orderkey",
        column: "l_orderkey",
        queries: "Q4",
        why: "EXISTS probe from an order into its lineitems",
    },
    TpchIndex {
        table: TpchTable::LineItem,
        name: "lineitem_l_partkey",
        column: "l_partkey",
        queries: "Q19",
        why: "nested-loop probe from the qualifying parts into lineitem",
    },
    TpchIndex {
        table: TpchTable::Orders,
        name: "orders_o_orderdate",
        column: "o_orderdate",
        queries: "Q4",
        why: "three-month range on o_orderdate",
    },
    TpchIndex {
        table: TpchTable::Orders,
        name: "orders_o_orderkey",
        column: "o_orderkey",
        queries: "Q4 Q7 Q12",
        why: "primary key: inner side of lineitem-orders joins",
    },
    TpchIndex {
        table: TpchTable::Part,
        name: "part_p_partkey",
        column: "p_partkey",
        queries: "Q14 Q19",
        why: "primary key: lineitem-part joins",
    },
    TpchIndex {
        table: TpchTable::Customer,
        name: "customer_c_custkey",
        column: "c_custkey",
        queries: "Q7",
        why: "primary key: orders-customer join",
    },
    TpchIndex {
        table: TpchTable::Supplier,
        name: "supplier_s_suppkey",
        column: "s_suppkey",
        queries: "Q7",
        why: "primary key: lineitem-supplier join",
    },
    TpchIndex {
        table: TpchTable::Nation,
        name: "nation_n_nationkey",
        column: "n_nationkey",
        queries: "Q7",
        why: "primary key: supplier/customer-nation joins",
    },
];

type Batches = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>;

impl TpchTable {
    /// In the order they are generated (the spec's: small dimension tables first).
    pub const ALL: [TpchTable; 8] = [
        TpchTable::Region,
        TpchTable::Nation,
        TpchTable::Supplier,
        TpchTable::Customer,
        TpchTable::Part,
        TpchTable::PartSupp,
        TpchTable::Orders,
        TpchTable::LineItem,
    ];

    /// The table's name (lower case, as in the queries).
    pub fn name(self) -> &'static str {
        match self {
            TpchTable::Region => "region",
            TpchTable::Nation => "nation",
            TpchTable::Supplier => "supplier",
            TpchTable::Customer => "customer",
            TpchTable::Part => "part",
            TpchTable::PartSupp => "partsupp",
            TpchTable::Orders => "orders",
            TpchTable::LineItem => "lineitem",
        }
    }

    /// The strata schema: TPC-H spec §1.4's types (see the module docs).
    pub fn schema(self) -> Schema {
        let text = match self {
            TpchTable::Region => "r_regionkey BIGINT, r_name CHAR(25), r_comment VARCHAR(152)",
            TpchTable::Nation => {
                "n_nationkey BIGINT, n_name CHAR(25), n_regionkey BIGINT, n_comment VARCHAR(152)"
            }
            TpchTable::Supplier => {
                "s_suppkey BIGINT, s_name CHAR(25), s_address VARCHAR(40), s_nationkey BIGINT, \
                 s_phone CHAR(15), s_acctbal DECIMAL(15,2), s_comment VARCHAR(101)"
            }
            TpchTable::Customer => {
                "c_custkey BIGINT, c_name VARCHAR(25), c_address VARCHAR(40), c_nationkey BIGINT, \
                 c_phone CHAR(15), c_acctbal DECIMAL(15,2), c_mktsegment CHAR(10), \
                 c_comment VARCHAR(117)"
            }
            TpchTable::Part => {
                "p_partkey BIGINT, p_name VARCHAR(55), p_mfgr CHAR(25), p_brand CHAR(10), \
                 p_type VARCHAR(25), p_size INT, p_container CHAR(10), \
                 p_retailprice DECIMAL(15,2), p_comment VARCHAR(23)"
            }
            TpchTable::PartSupp => {
                "ps_partkey BIGINT, ps_suppkey BIGINT, ps_availqty INT, \
                 ps_supplycost DECIMAL(15,2), ps_comment VARCHAR(199)"
            }
            TpchTable::Orders => {
                "o_orderkey BIGINT, o_custkey BIGINT, o_orderstatus CHAR(1), \
                 o_totalprice DECIMAL(15,2), o_orderdate DATE, o_orderpriority CHAR(15), \
                 o_clerk CHAR(15), o_shippriority INT, o_comment VARCHAR(79)"
            }
            TpchTable::LineItem => {
                "l_orderkey BIGINT, l_partkey BIGINT, l_suppkey BIGINT, l_linenumber INT, \
                 l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), \
                 l_discount DECIMAL(15,2), l_tax DECIMAL(15,2), l_returnflag CHAR(1), \
                 l_linestatus CHAR(1), l_shipdate DATE, l_commitdate DATE, l_receiptdate DATE, \
                 l_shipinstruct CHAR(25), l_shipmode CHAR(10), l_comment VARCHAR(44)"
            }
        };
        Schema::parse(text).expect("the TPC-H schemas are valid")
    }

    /// The arrow schema of the generated batches (and of the Parquet file).
    pub fn arrow_schema(self) -> SchemaRef {
        match self {
            TpchTable::Region => RegionArrow::schema_ref(),
            TpchTable::Nation => NationArrow::schema_ref(),
            TpchTable::Supplier => SupplierArrow::schema_ref(),
            TpchTable::Customer => CustomerArrow::schema_ref(),
            TpchTable::Part => PartArrow::schema_ref(),
            TpchTable::PartSupp => PartSuppArrow::schema_ref(),
            TpchTable::Orders => OrderArrow::schema_ref(),
            TpchTable::LineItem => LineItemArrow::schema_ref(),
        }
    }

    /// The secondary indexes built on this table ([`TPCH_INDEXES`]).
    pub fn indexes(self) -> Vec<IndexSpec> {
        TPCH_INDEXES
            .iter()
            .filter(|i| i.table == self)
            .map(|i| IndexSpec::new(i.name, &[i.column]))
            .collect()
    }

    /// Rows at scale factor `sf` as the spec (and tpchgen) fix them; `None` for
    /// lineitem, whose 1 to 7 lines per order are drawn at random (about 4 per
    /// order: 6 001 215 at SF 1).
    pub fn rows(self, sf: f64) -> Option<u64> {
        let n = match self {
            TpchTable::Region => 5,
            TpchTable::Nation => 25,
            TpchTable::Supplier => SupplierGenerator::calculate_row_count(sf, 1, 1),
            TpchTable::Customer => CustomerGenerator::calculate_row_count(sf, 1, 1),
            TpchTable::Part => PartGenerator::calculate_row_count(sf, 1, 1),
            TpchTable::PartSupp => PartSuppGenerator::calculate_row_count(sf, 1, 1) * 4,
            TpchTable::Orders => OrderGenerator::calculate_row_count(sf, 1, 1),
            TpchTable::LineItem => return None,
        };
        Some(n.max(0) as u64)
    }

    /// Rows to expect, for progress: [`TpchTable::rows`], or 4 per order for lineitem.
    fn estimated_rows(self, sf: f64) -> u64 {
        self.rows(sf)
            .unwrap_or_else(|| 4 * TpchTable::Orders.rows(sf).unwrap_or(0))
    }

    /// The table's rows at scale factor `sf` as arrow record batches.
    pub fn batches(self, sf: f64, batch_rows: usize) -> Batches {
        let n = batch_rows.max(1);
        match self {
            TpchTable::Region => {
                Box::new(RegionArrow::new(RegionGenerator::new(sf, 1, 1)).with_batch_size(n))
            }
            TpchTable::Nation => {
                Box::new(NationArrow::new(NationGenerator::new(sf, 1, 1)).with_batch_size(n))
            }
            TpchTable::Supplier => {
                Box::new(SupplierArrow::new(SupplierGenerator::new(sf, 1, 1)).with_batch_size(n))
            }
            TpchTable::Customer => {
                Box::new(CustomerArrow::new(CustomerGenerator::new(sf, 1, 1)).with_batch_size(n))
            }
            TpchTable::Part => {
                Box::new(PartArrow::new(PartGenerator::new(sf, 1, 1)).with_batch_size(n))
            }
            TpchTable::PartSupp => {
                Box::new(PartSuppArrow::new(PartSuppGenerator::new(sf, 1, 1)).with_batch_size(n))
            }
            TpchTable::Orders => {
                Box::new(OrderArrow::new(OrderGenerator::new(sf, 1, 1)).with_batch_size(n))
            }
            TpchTable::LineItem => {
                Box::new(LineItemArrow::new(LineItemGenerator::new(sf, 1, 1)).with_batch_size(n))
            }
        }
    }
}

impl std::fmt::Display for TpchTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a scale factor such as `1`, `0.01` or `10`; the error (a
/// [`LoadError::Usage`]) says what is accepted.
pub fn parse_scale_factor(text: &str) -> Result<f64, LoadError> {
    let bad = |why: &str| {
        LoadError::Usage(format!(
            "scale factor '{}' {why}: expected a number from {MIN_SCALE_FACTOR} to {MAX_SCALE_FACTOR}, e.g. 0.01, 1 or 10",
            text.trim()
        ))
    };
    let sf: f64 = text.trim().parse().map_err(|_| bad("is not a number"))?;
    if !sf.is_finite() {
        return Err(bad("is not a number"));
    }
    if sf < MIN_SCALE_FACTOR {
        return Err(bad("is too small"));
    }
    if sf > MAX_SCALE_FACTOR {
        return Err(bad("is too large"));
    }
    Ok(sf)
}

/// What to generate.
#[derive(Clone, Debug)]
pub struct TpchSpec {
    pub scale_factor: f64,
    /// Heap options of the eight tables.
    pub options: TableOptions,
    /// Also write `<dir>/<table>.parquet`.
    pub parquet_dir: Option<PathBuf>,
    /// Rows per generated batch (default [`BATCH_ROWS`]).
    pub batch_rows: usize,
    /// Build the spec's key indexes (default); without them, for tables
    /// converted to columns after the load (a columnar table has none yet).
    pub indexes: bool,
}

impl TpchSpec {
    pub fn new(scale_factor: f64) -> TpchSpec {
        TpchSpec {
            scale_factor,
            options: TableOptions::default(),
            parquet_dir: None,
            batch_rows: BATCH_ROWS,
            indexes: true,
        }
    }
}

/// What generating one table did.
#[derive(Clone, Debug)]
pub struct TpchTableReport {
    pub table: TpchTable,
    pub rows: u64,
    /// Generation, load, index builds, commit and Parquet file, wall time.
    pub elapsed: Duration,
    /// The commit, when the table was loaded into strata.
    pub summary: Option<LoadSummary>,
    /// The Parquet file written and its size in bytes.
    pub parquet: Option<(PathBuf, u64)>,
}

/// Generates the eight TPC-H tables at `spec.scale_factor` into `db` (each in
/// one atomic load, with its [`TpchTable::indexes`]) and, with
/// `spec.parquet_dir`, into Parquet files; with `db = None` only the Parquet
/// files. Fails before generating anything when `db` already has any of the
/// tables. Calls `done` after each table. Progress: phase `generate <table>` in
/// rows, then the commit's phases (index builds).
pub fn generate_tpch(
    db: Option<&Database>,
    spec: &TpchSpec,
    progress: &dyn Progress,
    mut done: impl FnMut(&TpchTableReport),
) -> Result<Vec<TpchTableReport>, LoadError> {
    if !(MIN_SCALE_FACTOR..=MAX_SCALE_FACTOR).contains(&spec.scale_factor) {
        return Err(LoadError::Usage(format!(
            "scale factor {} is outside {MIN_SCALE_FACTOR}..={MAX_SCALE_FACTOR}",
            spec.scale_factor
        )));
    }
    if db.is_none() && spec.parquet_dir.is_none() {
        return Err(LoadError::Usage(
            "nothing to generate: neither a database nor a Parquet directory".into(),
        ));
    }
    if let Some(db) = db {
        let names = db.table_names();
        let existing: Vec<&str> = TpchTable::ALL
            .iter()
            .map(|t| t.name())
            .filter(|t| names.iter().any(|n| n == t))
            .collect();
        if !existing.is_empty() {
            return Err(LoadError::Usage(format!(
                "table{} {} already exist{} in {}; TPC-H generates all eight tables into a database \
                 that has none of them (use a fresh --db)",
                if existing.len() > 1 { "s" } else { "" },
                existing.join(", "),
                if existing.len() > 1 { "" } else { "s" },
                db.dir().display()
            )));
        }
    }
    if let Some(dir) = &spec.parquet_dir {
        std::fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
    }
    let mut out = Vec::new();
    for t in TpchTable::ALL {
        let report = generate_table(db, t, spec, progress)?;
        done(&report);
        out.push(report);
    }
    Ok(out)
}

/// Generates one table: a generator thread, the load on this thread, the
/// Parquet writer on a third.
fn generate_table(
    db: Option<&Database>,
    t: TpchTable,
    spec: &TpchSpec,
    progress: &dyn Progress,
) -> Result<TpchTableReport, LoadError> {
    let start = Instant::now();
    let sf = spec.scale_factor;
    let schema = t.schema();
    let arrow_schema = t.arrow_schema();
    let source = format!("tpchgen {}", t.name());
    let map = map_fields(arrow_schema.fields(), &schema, &source, t.name())?;
    let mut load = match db {
        Some(db) => Some(db.begin_create_load(
            t.name(),
            schema.clone(),
            spec.options.clone(),
            if spec.indexes { t.indexes() } else { vec![] },
        )?),
        None => None,
    };
    let parquet_path = spec
        .parquet_dir
        .as_ref()
        .map(|d| d.join(format!("{}.parquet", t.name())));
    progress.phase(&format!("generate {}", t.name()), t.estimated_rows(sf));

    let (rows, parquet) = std::thread::scope(|s| -> Result<_, LoadError> {
        let (load_tx, load_rx) = match load {
            Some(_) => {
                let (tx, rx) = sync_channel::<RecordBatch>(QUEUE);
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        let (pq_tx, pq_rx) = match parquet_path {
            Some(_) => {
                let (tx, rx) = sync_channel::<RecordBatch>(QUEUE);
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        let batch_rows = spec.batch_rows;
        let generator = s.spawn(move || produce(t, sf, batch_rows, load_tx, pq_tx));
        let writer = match (&parquet_path, pq_rx) {
            (Some(path), Some(rx)) => {
                let schema = arrow_schema.clone();
                // Without a load, the writer is what shows progress.
                let shown = load.is_none().then_some(progress);
                Some(s.spawn(move || write_parquet(path, schema, rx, shown)))
            }
            _ => None,
        };
        let mut rows = 0u64;
        let mut loaded: Result<(), LoadError> = Ok(());
        if let (Some(load), Some(rx)) = (load.as_mut(), load_rx) {
            let mut row = vec![Value::Null; schema.len()];
            loaded = (|| {
                for batch in rx {
                    let conv = BatchRows::new(&batch, &map);
                    for i in 0..batch.num_rows() {
                        rows += 1;
                        let bad = |c: usize, reason: String| {
                            LoadError::Mismatch(format!(
                                "{source}: row {rows}: column {} ({}): {reason}; table '{}' was not created",
                                c + 1,
                                schema.columns[c].name,
                                t.name()
                            ))
                        };
                        conv.row(i, &schema, &mut row)
                            .map_err(|(c, reason)| bad(c, reason))?;
                        load.append(&row).map_err(|e| match e {
                            StorageError::Value { column, reason } => {
                                bad(schema.index_of(&column).unwrap_or(0), reason)
                            }
                            e => e.into(),
                        })?;
                    }
                    progress.advance(batch.num_rows() as u64);
                }
                Ok(())
            })();
            // On failure the receiver is dropped here, so the generator stops.
        }
        let generated = generator
            .join()
            .expect("the generator thread does not panic");
        let written = writer.map(|w| w.join().expect("the Parquet writer does not panic"));
        loaded?;
        let generated = generated?;
        if load.is_none() {
            rows = generated;
        }
        let parquet = match written {
            Some(r) => Some(r?),
            None => None,
        };
        Ok((rows, parquet))
    })?;

    let summary = match load {
        Some(load) => Some(load.commit(progress)?),
        None => None,
    };
    let parquet = match parquet {
        Some(tmp) => Some(tmp.commit()?),
        None => None,
    };
    Ok(TpchTableReport {
        table: t,
        rows,
        elapsed: start.elapsed(),
        summary,
        parquet,
    })
}

/// Loads TPC-H into `db` the way a warehouse is loaded: every table with the
/// orders placed before `cutoff` (days since 1970-01-01; orders by
/// `o_orderdate`, lineitem by `l_shipdate`, the other tables whole), then
/// `between` runs (an `ANALYZE`, whose statistics the rest will make stale),
/// then the remaining orders and lineitems are appended. `progress_note`
/// hears each step.
pub fn load_tpch_history_then_recent<E: From<LoadError>>(
    db: &Database,
    spec: &TpchSpec,
    cutoff: i32,
    between: &mut dyn FnMut() -> Result<(), E>,
    progress_note: &mut dyn FnMut(&str),
    progress: &dyn Progress,
) -> Result<(), E> {
    let date_col = |t: TpchTable| match t {
        TpchTable::Orders => t.schema().index_of("o_orderdate"),
        TpchTable::LineItem => t.schema().index_of("l_shipdate"),
        _ => None,
    };
    let old = |col: Option<usize>, row: &[Value]| match col {
        Some(c) => matches!(row[c], Value::Date(d) if d < cutoff),
        None => true,
    };
    let sf = spec.scale_factor;
    for t in TpchTable::ALL {
        progress_note(&format!("loading {t} (history)"));
        let col = date_col(t);
        let mut load = db
            .begin_create_load(
                t.name(),
                t.schema(),
                spec.options.clone(),
                if spec.indexes { t.indexes() } else { vec![] },
            )
            .map_err(LoadError::from)?;
        append_tpch_rows(&mut load, t, sf, &mut |r| old(col, r), progress)?;
        load.commit(progress).map_err(LoadError::from)?;
    }
    between()?;
    for t in [TpchTable::Orders, TpchTable::LineItem] {
        progress_note(&format!("appending {t} (recent)"));
        let col = date_col(t);
        let mut load = db.begin_load(t.name()).map_err(LoadError::from)?;
        append_tpch_rows(&mut load, t, sf, &mut |r| !old(col, r), progress)?;
        load.commit(progress).map_err(LoadError::from)?;
    }
    Ok(())
}

/// Appends to `load` the rows of table `t` at scale factor `sf` for which
/// `keep` holds, in generation order; returns how many were appended. For
/// loading one table in several steps (e.g. `strata bench tpch` loads a
/// warehouse's history before its recent rows, with an `ANALYZE` in between);
/// each step regenerates the table, which tpchgen does deterministically.
pub fn append_tpch_rows(
    load: &mut TableLoad<'_>,
    t: TpchTable,
    sf: f64,
    keep: &mut dyn FnMut(&[Value]) -> bool,
    progress: &dyn Progress,
) -> Result<u64, LoadError> {
    let schema = t.schema();
    let source = format!("tpchgen {}", t.name());
    let map = map_fields(t.arrow_schema().fields(), &schema, &source, t.name())?;
    let mut row = vec![Value::Null; schema.len()];
    let mut appended = 0u64;
    for batch in t.batches(sf, BATCH_ROWS) {
        let batch = batch.map_err(|e| LoadError::Mismatch(format!("{source}: {e}")))?;
        let conv = BatchRows::new(&batch, &map);
        for i in 0..batch.num_rows() {
            conv.row(i, &schema, &mut row).map_err(|(c, reason)| {
                LoadError::Mismatch(format!(
                    "{source}: column {} ({}): {reason}",
                    c + 1,
                    schema.columns[c].name
                ))
            })?;
            if keep(&row) {
                load.append(&row)?;
                appended += 1;
            }
        }
        progress.advance(batch.num_rows() as u64);
    }
    Ok(appended)
}

/// The generator thread: sends each batch to the loader and the Parquet writer
/// until the generator ends or a receiver hangs up (its side failed and reports
/// why). Returns the rows generated.
fn produce(
    t: TpchTable,
    sf: f64,
    batch_rows: usize,
    load: Option<SyncSender<RecordBatch>>,
    parquet: Option<SyncSender<RecordBatch>>,
) -> Result<u64, LoadError> {
    let mut rows = 0u64;
    for batch in t.batches(sf, batch_rows) {
        let batch = batch.map_err(|e| LoadError::Mismatch(format!("tpchgen {t}: {e}")))?;
        rows += batch.num_rows() as u64;
        if let Some(tx) = &parquet
            && tx.send(batch.clone()).is_err()
        {
            break;
        }
        if let Some(tx) = &load
            && tx.send(batch).is_err()
        {
            break;
        }
    }
    Ok(rows)
}

/// The Parquet writer thread: writes every batch received to `<path>.tmp`
/// (Snappy-compressed) and fsyncs it; [`ParquetTmp::commit`] renames it once
/// the whole table was generated. `progress`: advance by each batch's rows.
fn write_parquet(
    path: &Path,
    schema: SchemaRef,
    rx: Receiver<RecordBatch>,
    progress: Option<&dyn Progress>,
) -> Result<ParquetTmp, LoadError> {
    // From here on, a failure (or a panic) removes the temporary file.
    let mut tmp = ParquetTmp {
        tmp: path.with_extension("parquet.tmp"),
        path: path.to_path_buf(),
        bytes: 0,
    };
    let pq = |e: ::parquet::errors::ParquetError| io_error(&tmp.tmp, std::io::Error::other(e));
    let file = File::create(&tmp.tmp).map_err(|e| io_error(&tmp.tmp, e))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer = ArrowWriter::try_new(file, schema, Some(props)).map_err(pq)?;
    for batch in rx {
        writer.write(&batch).map_err(pq)?;
        if let Some(p) = progress {
            p.advance(batch.num_rows() as u64);
        }
    }
    let file = writer.into_inner().map_err(pq)?;
    file.sync_all().map_err(|e| io_error(&tmp.tmp, e))?;
    tmp.bytes = file.metadata().map_err(|e| io_error(&tmp.tmp, e))?.len();
    Ok(tmp)
}

fn io_error(path: &Path, e: std::io::Error) -> LoadError {
    StorageError::io(path, e).into()
}

/// A complete, fsynced Parquet file under its temporary name; removed if dropped
/// before [`ParquetTmp::commit`].
struct ParquetTmp {
    tmp: PathBuf,
    path: PathBuf,
    bytes: u64,
}

impl ParquetTmp {
    /// Renames the file to its final name (replacing an older file) and fsyncs
    /// the directory. Returns the final path and the file's size.
    fn commit(mut self) -> Result<(PathBuf, u64), LoadError> {
        std::fs::rename(&self.tmp, &self.path).map_err(|e| io_error(&self.path, e))?;
        self.tmp.clear();
        if let Some(dir) = self.path.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io_error(dir, e))?;
        }
        Ok((std::mem::take(&mut self.path), self.bytes))
    }
}

impl Drop for ParquetTmp {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
