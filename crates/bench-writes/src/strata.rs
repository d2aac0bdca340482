//! The strata side: the benchmark database (loaded through the storage
//! API's `TableLoad`), and every measured statement run through
//! [`SqlSession::execute`] as SQL text. Several clients are several threads
//! in this process, each with its own `SqlSession` over one shared
//! `Arc<Database>`: that is how strata serves concurrent clients.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use arrow::array::{Array, Decimal128Array, Int64Array, StringArray, UInt64Array};
use strata_sql::{QueryResult, SqlSession};
use strata_storage::db::{IndexSpec, NoProgress, TableOptions};
use strata_storage::row::{Column, DataType, Schema, Value};
use strata_storage::{Database, DbOptions};

use crate::workload::{self, COPY_TABLE, PAD_LEN, TABLE};
use crate::{Engine, Measured, StartLine};

/// The benchmark database and a session over it.
pub struct StrataSide {
    db: Arc<Database>,
    session: SqlSession,
}

/// `acct`'s schema.
fn schema() -> Result<Schema> {
    Ok(Schema::new(vec![
        Column::new("k", DataType::Int64, false),
        Column::new("v", DataType::Int64, false),
        Column::new(
            "pad",
            DataType::Varchar {
                len: PAD_LEN as u16,
            },
            false,
        ),
    ])?)
}

/// The one integer in a result (a write's row count, a `count(*)`, a
/// `sum`).
pub fn single_integer(r: &QueryResult) -> Result<i128> {
    let cells: Vec<_> = r
        .batches
        .iter()
        .filter(|b| b.num_rows() > 0)
        .flat_map(|b| b.columns().first().cloned().map(|c| (c, b.num_rows())))
        .collect();
    let [(col, 1)] = &cells[..] else {
        bail!("expected one value, the result has {} rows", r.rows());
    };
    if col.is_null(0) {
        return Ok(0); // sum over no rows
    }
    if let Some(a) = col.as_any().downcast_ref::<UInt64Array>() {
        return Ok(a.value(0) as i128);
    }
    if let Some(a) = col.as_any().downcast_ref::<Int64Array>() {
        return Ok(a.value(0) as i128);
    }
    // `sum` of integers is an exact DECIMAL(38,0) (strata_sql::rules::wide_sum).
    if let Some(a) = col.as_any().downcast_ref::<Decimal128Array>()
        && a.scale() == 0
    {
        return Ok(a.value(0));
    }
    bail!("expected an integer, the result is {}", col.data_type())
}

impl StrataSide {
    /// Opens (or creates) the benchmark database at `dir`, drops the
    /// benchmark's tables left by an earlier run and loads `acct` with
    /// `rows` rows and its index. A database holding any other table is
    /// refused: the benchmark drops and rewrites its tables.
    pub fn open(
        dir: &Path,
        options: DbOptions,
        rows: u64,
        columnar: bool,
        progress: &mut dyn FnMut(&str),
    ) -> Result<StrataSide> {
        let db = Database::open_or_create(dir, options)
            .with_context(|| format!("opening the benchmark database {}", dir.display()))?;
        let names = db.table_names();
        if let Some(other) = names.iter().find(|n| *n != TABLE && *n != COPY_TABLE) {
            bail!(
                "{} holds table {other}, which is not the benchmark's: give the benchmark a \
                 database of its own (--bench-db), it drops and reloads {TABLE} and {COPY_TABLE}",
                dir.display()
            );
        }
        for n in &names {
            db.drop_table(n)?;
        }
        progress(&format!("strata: loading {rows} rows into {TABLE}"));
        let start = Instant::now();
        let mut load = db.begin_create_load(
            TABLE,
            schema()?,
            TableOptions::default(),
            vec![IndexSpec::new(workload::index_name(TABLE), &["k"])],
        )?;
        for k in 0..rows {
            let (k, v, pad) = workload::row(k);
            load.append(&[Value::Int64(k), Value::Int64(v), Value::Str(pad)])?;
        }
        load.commit(&NoProgress)?;
        if columnar {
            strata_columns::rewrite(&db, TABLE, strata_columns::Format::Columns, &NoProgress)?;
        }
        progress(&format!(
            "strata: loaded in {:.1} s{}",
            start.elapsed().as_secs_f64(),
            if columnar { " (as columns)" } else { "" }
        ));
        let db = Arc::new(db);
        let session = SqlSession::new(db.clone())?;
        Ok(StrataSide { db, session })
    }

    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// Runs one statement.
    pub fn execute(&self, sql: &str) -> Result<QueryResult> {
        self.session
            .execute(sql)
            .with_context(|| format!("strata: {sql}"))
    }

    /// The operator line of strata's plan for `sql` (`EXPLAIN`): how a
    /// write finds its rows (by which index, or by a heap scan).
    pub fn plan(&self, sql: &str) -> Result<String> {
        let r = self.execute(&format!("EXPLAIN {sql}"))?;
        let mut lines = Vec::new();
        for b in &r.batches {
            let Some(plans) = b
                .columns()
                .get(1)
                .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            else {
                bail!("EXPLAIN {sql}: no plan column");
            };
            for i in 0..plans.len() {
                lines.extend(
                    plans
                        .value(i)
                        .lines()
                        .map(str::trim)
                        .filter(|l| l.starts_with("Strata"))
                        .map(str::to_string),
                );
            }
        }
        if lines.is_empty() {
            bail!("EXPLAIN {sql}: no strata operator in the plan");
        }
        Ok(lines.join("; "))
    }

    /// The log syncs so far.
    fn log_syncs(&self) -> Result<u64> {
        Ok(self
            .db
            .wal()
            .context("the benchmark database has no write-ahead log (opened read-only?)")?
            .syncs())
    }

    /// µs since `start`.
    fn us(start: Instant) -> f64 {
        start.elapsed().as_secs_f64() * 1e6
    }

    /// Where a single-row update's time goes: for each key in `keys`, one
    /// after the other (so that all of them see the same machine), `SELECT
    /// 1`, a point `SELECT` by the index, the SQL update of the key, and the
    /// same update through the storage API (index lookup and `update_row` in
    /// a write transaction, then its durable commit, timed apart). Median µs
    /// of each. Every key's `v` grows by 2 (the SQL and the storage update).
    pub fn diagnostics(&self, keys: &[i64]) -> Result<Vec<(String, f64)>> {
        let table = self.db.table(TABLE)?;
        let index = table.index(&workload::index_name(TABLE))?;
        let mut times: [Vec<f64>; 5] = Default::default();
        for &k in keys {
            let t = Instant::now();
            self.execute("SELECT 1")?;
            times[0].push(Self::us(t));
            let t = Instant::now();
            self.execute(&format!("SELECT v FROM {TABLE} WHERE k = {k}"))?;
            times[1].push(Self::us(t));
            let t = Instant::now();
            let n = self.changed_here(&workload::update_sql(k))?;
            times[2].push(Self::us(t));
            if n != 1 {
                bail!("strata: {} changed {n} rows", workload::update_sql(k));
            }

            let t = Instant::now();
            let txn = self.db.begin_write()?;
            let key =
                index.key_of_row(&[Value::Int64(k), Value::Int64(0), Value::Str(String::new())]);
            let tids = index.btree.lookup(&key)?;
            let [tid] = tids[..] else {
                bail!("key {k} has {} rows in strata's {TABLE}", tids.len());
            };
            let mut row = table
                .get_row(tid)?
                .with_context(|| format!("key {k}: the index points at no row"))?;
            let Value::Int64(v) = row[1] else {
                bail!("v of key {k} is {:?}", row[1]);
            };
            row[1] = Value::Int64(v + 1);
            table.update_row(tid, &row)?;
            times[3].push(Self::us(t));
            let t = Instant::now();
            txn.commit()?;
            times[4].push(Self::us(t));
        }
        let what = [
            "strata: SELECT 1 through SqlSession::execute".to_string(),
            format!("strata: SELECT v FROM {TABLE} WHERE k = <key> (by the index)"),
            "strata: the SQL UPDATE of one row with its durable commit (here, between the others)"
                .to_string(),
            "strata: the same change through the storage API, without SQL (begin, index lookup, \
             update_row), before its commit"
                .to_string(),
            "strata: its durable commit alone (log append, fdatasync)".to_string(),
        ];
        what.into_iter()
            .zip(times)
            .map(|(w, t)| Ok((w, strata_bench::median(&t).context("no samples")?)))
            .collect()
    }

    /// The rows a write changed.
    fn changed_here(&self, sql: &str) -> Result<u64> {
        let n = single_integer(&self.execute(sql)?).with_context(|| format!("strata: {sql}"))?;
        Ok(n as u64)
    }
}

impl Engine for StrataSide {
    fn label(&self) -> &'static str {
        "strata"
    }

    fn checkpoint(&mut self) -> Result<()> {
        Ok(self.db.checkpoint()?)
    }

    fn prewarm(&mut self) -> Result<()> {
        self.db.prewarm(TABLE)?;
        Ok(())
    }

    fn changed(&mut self, sql: &str) -> Result<u64> {
        self.changed_here(sql)
    }

    fn scalar(&mut self, sql: &str) -> Result<i128> {
        single_integer(&self.execute(sql)?).with_context(|| format!("strata: {sql}"))
    }

    fn updates(&mut self, keys: &[Vec<i64>]) -> Result<Measured> {
        let statements: usize = keys.iter().map(Vec::len).sum();
        let syncs = self.log_syncs()?;
        let (secs, changed) = if let [only] = keys {
            let start = Instant::now();
            let mut changed = 0;
            for &k in only {
                changed += self.changed(&workload::update_sql(k))?;
            }
            (start.elapsed().as_secs_f64(), changed)
        } else {
            // Every client opens its session, then all start together.
            let line = StartLine::default();
            std::thread::scope(|s| -> Result<(f64, u64)> {
                let clients = keys.iter().enumerate().map(|(c, keys)| {
                    let db = self.db.clone();
                    let line = &line;
                    std::thread::Builder::new()
                        .name(format!("strata-client-{c}"))
                        .spawn_scoped(s, move || -> Result<u64> {
                            let session = SqlSession::new(db);
                            if !line.ready_and_wait() {
                                return Ok(0);
                            }
                            let session = session?;
                            let mut changed = 0;
                            for &k in keys {
                                let sql = workload::update_sql(k);
                                let r = session
                                    .execute(&sql)
                                    .with_context(|| format!("strata client {c}: {sql}"))?;
                                changed += single_integer(&r)? as u64;
                            }
                            Ok(changed)
                        })
                });
                let (threads, start) = line.start(clients, "strata client")?;
                let changed = crate::join_clients(threads)?;
                Ok((start.elapsed().as_secs_f64(), changed))
            })?
        };
        Ok(Measured {
            secs,
            work: statements as u64,
            changed,
            log_syncs: Some(self.log_syncs()? - syncs),
        })
    }

    fn timed(&mut self, sql: &str) -> Result<Measured> {
        let syncs = self.log_syncs()?;
        let start = Instant::now();
        let changed = self.changed(sql)?;
        let secs = start.elapsed().as_secs_f64();
        Ok(Measured {
            secs,
            work: changed,
            changed,
            log_syncs: Some(self.log_syncs()? - syncs),
        })
    }

    fn recreate_copy_table(&mut self) -> Result<()> {
        self.execute(&format!("DROP TABLE IF EXISTS {COPY_TABLE}"))?;
        self.execute(&workload::create_table_sql(COPY_TABLE))?;
        self.execute(&workload::create_index_sql(COPY_TABLE))?;
        Ok(())
    }

    fn after_round(&mut self) -> Result<()> {
        Ok(())
    }
}
