//! `INSERT`, `UPDATE` and `DELETE` on strata tables.
//!
//! DataFusion plans the statements and hands them to the table provider:
//! `INSERT` as a stream of Arrow batches for a [`DataSink`] ([`InsertSink`]),
//! `UPDATE` and `DELETE` as the WHERE conjuncts and the SET expressions, which
//! [`DmlExec`] runs. Each statement is one write transaction
//! ([`Writes::apply`]) and works in two steps:
//!
//! 1. *Collect*: find the qualifying rows with their tuple ids and compute
//!    every new row, checking each one against the table (NULLs, lengths,
//!    ranges, the size of the row and of every index key). Qualifying rows
//!    come from an index when a conjunct `column op literal` bounds the first
//!    column of one ([`crate::scan::pushdown`]) and the heap pages its entries name
//!    cost less to read, in page order, than the whole heap — decided while
//!    the index range is read, from where the rows actually are, so a range
//!    of keys stored in heap order (a load in key order, an append-only date)
//!    takes the index however many rows it names; otherwise from a scan of
//!    the heap. Either way the whole WHERE is evaluated on the rows, with
//!    DataFusion's own physical expressions on Arrow batches
//!    ([`strata_columns::convert`]), as are the SET expressions.
//! 2. *Apply*: only when every row passed, insert, update or delete them
//!    through [`Table`]'s batched row methods (`insert_rows`, `delete_rows`:
//!    each heap page pinned once, each index leaf descended to once) or
//!    `update_row`, which keep every index in step.
//!
//! Collecting everything before changing anything means a statement that
//! fails on a bad value changes nothing, an `UPDATE` never meets a row it has
//! already moved (the Halloween problem), and `INSERT INTO t SELECT … FROM t`
//! reads only the rows that were there before.

mod column_rows;
pub mod direct_dml;
pub mod direct_insert;
pub mod direct_select;
pub mod direct_write;
mod filter;
mod kept_plans;
mod literal_sites;
pub mod point_plans;
pub mod returning;
pub mod row_check;
mod table_schemas;
pub mod txn;
pub mod write_plans;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, UInt64Array};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{
    DataType as ArrowType, Field, Schema as ArrowSchema, SchemaRef,
};
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue};
use datafusion::datasource::sink::DataSink;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::StreamExt;
use strata_access::PageCosts;
use strata_storage::Table;
use strata_storage::row::{Schema, Tid, Value};

use crate::dml::row_check::{check_row, row_text, shown};
use crate::dml::txn::Writes;
use crate::error::SqlError;
use crate::scan::pushdown::unqualified;
use filter::*;
pub(crate) use filter::{physical, table_schema};
use strata_columns::convert::arrow_values;

/// The schema of a statement's result: the number of rows it changed, as
/// DataFusion's own INSERT answers.
fn count_schema() -> SchemaRef {
    Arc::new(ArrowSchema::new(vec![Field::new(
        "count",
        ArrowType::UInt64,
        false,
    )]))
}

/// A statement's result: the number of rows it changed.
pub fn count_batch(n: u64) -> Result<RecordBatch, SqlError> {
    let count: ArrayRef = Arc::new(UInt64Array::from(vec![n]));
    RecordBatch::try_new(count_schema(), vec![count]).map_err(arrow_error)
}

fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The rows of `batch`, whose columns are the table's, in order.
fn rows_of(batch: &RecordBatch, schema: &Schema) -> Result<Vec<Vec<Value>>, SqlError> {
    let mut rows = vec![Vec::with_capacity(schema.len()); batch.num_rows()];
    for (c, (array, col)) in batch.columns().iter().zip(&schema.columns).enumerate() {
        let values = arrow_values(array.as_ref(), &col.ty)
            .map_err(|e| SqlError::Data(format!("column '{}': {e}", col.name)))?;
        for (row, v) in rows.iter_mut().zip(values) {
            debug_assert_eq!(row.len(), c);
            row.push(v);
        }
    }
    Ok(rows)
}

/// Writes `INSERT`'s rows into a strata table.
pub struct InsertSink {
    writes: Arc<Writes>,
    table: String,
    schema: SchemaRef,
}

impl InsertSink {
    /// A sink for table `table` whose Arrow schema is `schema` (nullable: the
    /// rows are checked by [`check_row`], which names column and value, not
    /// by DataFusion).
    pub fn new(writes: Arc<Writes>, table: &str, schema: &SchemaRef) -> InsertSink {
        InsertSink {
            writes,
            table: table.to_string(),
            schema: schema.clone(),
        }
    }
}

impl fmt::Debug for InsertSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InsertSink({})", self.table)
    }
}

impl DisplayAs for InsertSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StrataInsert: table={}", self.table)
    }
}

#[async_trait]
impl DataSink for InsertSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> Result<u64> {
        // The whole input first: it may read this very table.
        let mut batches = Vec::new();
        while let Some(b) = data.next().await {
            batches.push(b?);
        }
        // On this thread: handing the write to another one costs two thread
        // switches, more than a one-row statement's work.
        tokio::task::block_in_place(|| insert(&self.writes, &self.table, &batches, None))
            .map(|(n, _)| n)
            .map_err(external)
    }
}

impl InsertSink {
    /// The table the rows go into.
    pub(crate) fn table(&self) -> &str {
        &self.table
    }
}

/// What a statement with `RETURNING` makes of the rows it changes (their
/// values as Arrow batches of the table's columns), computed before it
/// changes any so that a failure changes nothing ([`crate::dml::returning`]).
pub(crate) type Returning<'a> = &'a dyn Fn(&[RecordBatch]) -> Result<Vec<RecordBatch>, SqlError>;

/// Inserts the rows of `batches` (the table's columns, in order) into `table`
/// in one transaction, after checking every one; with `returning`, also
/// what it makes of the rows.
pub(crate) fn insert(
    writes: &Writes,
    table: &str,
    batches: &[RecordBatch],
    returning: Option<Returning<'_>>,
) -> Result<(u64, Vec<RecordBatch>), SqlError> {
    writes.apply("INSERT", |db| {
        let t = db.table(table)?;
        let mut scratch = Vec::new();
        let mut n = 0u64;
        let address = t.layout().address_column();
        for b in batches {
            for row in rows_of(b, t.schema())? {
                n += 1;
                if let Some(c) = address
                    && !row[c].is_null()
                {
                    return Err(SqlError::Data(format!(
                        "INSERT into '{table}', row {n}: column '{}' is a semantic id, its value the row's address: leave it out or give NULL (not {})",
                        t.schema().columns[c].name,
                        shown(&row[c], &t.schema().columns[c].ty)
                    )));
                }
                check_row(&t, &row, &mut scratch)
                    .map_err(|e| SqlError::Data(format!("INSERT into '{table}', row {n}: {e}")))?;
            }
        }
        let out = match returning {
            Some(f) => f(batches)?,
            None => Vec::new(),
        };
        if t.indexes().iter().any(|i| i.def.unique) {
            let mut rows = Vec::new();
            for b in batches {
                rows.extend(rows_of(b, t.schema())?);
            }
            crate::ddl::unique::check_insert(&t, rows.iter().map(Vec::as_slice))?;
        }
        // Batched: each heap page pinned once for the rows it takes, each
        // index leaf descended to once for its entries.
        for b in batches {
            t.insert_rows(&rows_of(b, t.schema())?)?;
        }
        Ok((n, out))
    })
}

/// What a [`DmlExec`] does.
#[derive(Clone)]
enum Op {
    Delete,
    /// New values: (table column, expression over the old row, the logical
    /// expression it was made from, over unqualified columns).
    Update(Vec<(usize, Arc<dyn PhysicalExpr>, Expr)>),
}

/// Runs an `UPDATE` or `DELETE` when executed (planning changes nothing, so
/// `EXPLAIN` is harmless) and answers the number of rows it changed.
#[derive(Clone)]
pub struct DmlExec {
    op: Op,
    writes: Arc<Writes>,
    table: String,
    filter: Filter,
    /// The index the rows are found through (by name, looked up again when
    /// the statement runs), or none for a heap scan.
    index: Option<String>,
    props: Arc<PlanProperties>,
}

/// Refuses a change of rows of a columnar table whose column part has rows
/// but no delete set (converted before delete sets existed).
fn refuse_columnar_change(db: &strata_storage::Database, name: &str, what: &str) -> Result<()> {
    let table = db.table(name).map_err(|e| external(e.into()))?;
    refuse_columnar_change_of(&table, what)
}

/// [`refuse_columnar_change`] of a table already open.
fn refuse_columnar_change_of(table: &Table, what: &str) -> Result<()> {
    let name = table.name();
    match table.columns() {
        Some(c) if c.rows() > 0 && table.delete_set().is_none() => Err(external(
            strata_storage::StorageError::Columnar {
                table: name.to_string(),
                message: format!(
                    "{what} of table {name}: its column part was converted before columnar \
                     tables took deletes (SQLSTATE 0A000); `strata compact --format columns \
                     {name}` once gives it a delete set"
                ),
            }
            .into(),
        )),
        _ => Ok(()),
    }
}

impl DmlExec {
    /// `DELETE FROM table WHERE filters`.
    pub fn delete(
        writes: Arc<Writes>,
        table: &str,
        state: &dyn Session,
        filters: Vec<Expr>,
    ) -> Result<DmlExec> {
        refuse_columnar_change(writes.database(), table, "DELETE")?;
        DmlExec::new(writes, table, state, filters, |_, _| Ok(Op::Delete))
    }

    /// `UPDATE table SET assignments WHERE filters`.
    pub fn update(
        writes: Arc<Writes>,
        table: &str,
        state: &dyn Session,
        assignments: Vec<(String, Expr)>,
        filters: Vec<Expr>,
    ) -> Result<DmlExec> {
        refuse_columnar_change(writes.database(), table, "UPDATE")?;
        DmlExec::new(writes, table, state, filters, |t, schema| {
            let mut set = Vec::new();
            for (name, e) in assignments {
                let c = t.schema().index_of(&name).ok_or_else(|| {
                    DataFusionError::Plan(format!(
                        "table '{}' has no column '{name}' (it has {})",
                        t.name(),
                        t.schema().names()
                    ))
                })?;
                if t.layout().is_address(c) {
                    return Err(DataFusionError::Plan(format!(
                        "column '{name}' of '{}' is a semantic id, its value the row's address: it cannot be set",
                        t.name()
                    )));
                }
                let e = unqualified(&e)?;
                set.push((c, physical(state, e.clone(), schema)?, e));
            }
            Ok(Op::Update(set))
        })
    }

    fn new(
        writes: Arc<Writes>,
        table: &str,
        state: &dyn Session,
        filters: Vec<Expr>,
        op: impl FnOnce(&Table, &DFSchema) -> Result<Op>,
    ) -> Result<DmlExec> {
        let t = writes
            .database()
            .table(table)
            .map_err(|e| external(e.into()))?;
        let schema = DFSchema::try_from(table_schema(&t).as_ref().clone())?;
        let filter = Filter::new(&t, &schema, state, filters)?;
        let op = op(&t, &schema)?;
        let index = choose_index(&t, &filter.conjuncts)
            .map_err(external)?
            .map(|i| t.indexes()[i].def.name.clone());
        let props = PlanProperties::new(
            EquivalenceProperties::new(count_schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Ok(DmlExec {
            op,
            writes,
            table: table.to_string(),
            filter,
            index,
            props: Arc::new(props),
        })
    }

    /// The literal nodes of its expressions (the SET values', then the
    /// WHERE's) when every one runs unsimplified, so that each literal of
    /// the statement is one node ([`literal_sites`]).
    pub(crate) fn literal_sites(&self) -> Option<Vec<ScalarValue>> {
        let mut sites = Vec::new();
        if let Op::Update(set) = &self.op {
            for (_, p, e) in set {
                if !runs_unsimplified(e) {
                    return None;
                }
                literal_sites::paired_sites(std::slice::from_ref(e), p, &mut sites)?;
            }
        }
        self.filter.sites(&mut sites)?;
        Some(sites)
    }

    /// The same statement with `values` at its literals' sites (in the
    /// order [`DmlExec::literal_sites`] gives them), planned as
    /// [`DmlExec::new`] would plan it; `None` when a value does not fit.
    pub(crate) fn with_literals(&self, values: &[ScalarValue], t: &Table) -> Option<DmlExec> {
        let what = match self.op {
            Op::Delete => "DELETE",
            Op::Update(_) => "UPDATE",
        };
        refuse_columnar_change_of(t, what).ok()?;
        let mut at = values;
        let op = match &self.op {
            Op::Delete => Op::Delete,
            Op::Update(set) => Op::Update(
                set.iter()
                    .map(|(c, p, e)| {
                        let (mut e, p) =
                            literal_sites::paired_with(std::slice::from_ref(e), p, &mut at)?;
                        Some((*c, p, e.pop()?))
                    })
                    .collect::<Option<Vec<_>>>()?,
            ),
        };
        let filter = self.filter.with_literals(t, &mut at)?;
        if !at.is_empty() {
            return None;
        }
        let index = choose_index(t, &filter.conjuncts)
            .ok()?
            .map(|i| t.indexes()[i].def.name.clone());
        Some(DmlExec {
            op,
            writes: self.writes.clone(),
            table: self.table.clone(),
            filter,
            index,
            props: self.props.clone(),
        })
    }

    /// The table it changes.
    pub fn table_name(&self) -> &str {
        &self.table
    }

    /// Runs the statement in one transaction; the number of rows changed.
    pub fn run(&self) -> Result<u64, SqlError> {
        self.run_with(None).map(|(n, _)| n)
    }

    /// Runs the statement in one transaction, handing the rows it changes
    /// (the new rows of an UPDATE, the old ones of a DELETE) to `returning`
    /// before it changes any; the number of rows changed and what
    /// `returning` made of them.
    pub(crate) fn run_returning(
        &self,
        returning: Returning<'_>,
    ) -> Result<(u64, Vec<RecordBatch>), SqlError> {
        self.run_with(Some(returning))
    }

    fn run_with(
        &self,
        returning: Option<Returning<'_>>,
    ) -> Result<(u64, Vec<RecordBatch>), SqlError> {
        let what = match self.op {
            Op::Delete => "DELETE",
            Op::Update(_) => "UPDATE",
        };
        // A point change's column rows, read before the writer turn so that
        // other sessions' turns overlap the reading (column_rows::find_early);
        // not inside a block that has written, whose own changes they must see.
        self.writes.check_writable(what)?;
        let early = match self.writes.writing() {
            true => None,
            false => {
                let db = self.writes.database();
                match db.table(&self.table) {
                    Ok(t) => column_rows::find_early(db, &t, &self.filter)?,
                    Err(_) => None,
                }
            }
        };
        self.run_found(returning, early)
    }

    /// [`DmlExec::run_with`] once the column rows a point change names may
    /// have been read (`early`).
    fn run_found(
        &self,
        returning: Option<Returning<'_>>,
        early: Option<column_rows::FoundEarly>,
    ) -> Result<(u64, Vec<RecordBatch>), SqlError> {
        let what = match self.op {
            Op::Delete => "DELETE",
            Op::Update(_) => "UPDATE",
        };
        // Inside the transaction, and reading as it: the rows are found where
        // the transaction's own earlier changes (BEGIN ... COMMIT) put them,
        // and no other transaction can move them before they change.
        self.writes.apply(what, |db| {
            strata_storage::buffer::as_writer(|| {
                let t = db.table(&self.table)?;
                let costs = PageCosts::modeled(db).unwrap_or_default();
                let index = match &self.index {
                    Some(name) => Some(
                        t.indexes()
                            .iter()
                            .position(|i| &i.def.name == name)
                            .ok_or_else(|| {
                                SqlError::Query(format!("index '{name}' was dropped"))
                            })?,
                    ),
                    None => None,
                };
                match &self.op {
                    Op::Delete => {
                        // RETURNING needs the old rows as Arrow.
                        let on_bytes = match returning {
                            None => find_tids_on_bytes(&t, &self.filter, index, &costs)?,
                            Some(_) => None,
                        };
                        let mut old_rows = Vec::new();
                        let tids = match on_bytes {
                            Some(tids) => tids,
                            None => {
                                let mut tids = Vec::new();
                                find(&t, &self.filter, index, &costs, &mut |found, old| {
                                    tids.extend(found);
                                    if returning.is_some() {
                                        old_rows.push(old);
                                    }
                                    Ok(())
                                })?;
                                tids
                            }
                        };
                        // A columnar table's column rows: marked deleted.
                        let mut positions = Vec::new();
                        let under_turn = column_rows::column_rows_under_turn;
                        under_turn(db, &t, &self.filter, early, &mut |found, old| {
                            positions.extend(found);
                            if returning.is_some() {
                                old_rows.push(old);
                            }
                            Ok(())
                        })?;
                        let out = match returning {
                            Some(f) => f(&old_rows)?,
                            None => Vec::new(),
                        };
                        t.delete_rows(&tids)?;
                        t.delete_column_rows(&positions)?;
                        Ok(((tids.len() + positions.len()) as u64, out))
                    }
                    Op::Update(set) => {
                        let mut changes: Vec<(Vec<Tid>, RecordBatch)> = Vec::new();
                        let mut moved: Vec<(Vec<u64>, RecordBatch)> = Vec::new();
                        let mut scratch = Vec::new();
                        let mut checked = |old: &RecordBatch| -> Result<RecordBatch, SqlError> {
                            let new = assign(&t, set, old)?;
                            for row in rows_of(&new, t.schema())? {
                                check_row(&t, &row, &mut scratch).map_err(|e| {
                                    SqlError::Data(format!(
                                        "UPDATE of '{}': {e}; the new row would be {}",
                                        self.table,
                                        row_text(&row, t.schema())
                                    ))
                                })?;
                            }
                            Ok(new)
                        };
                        find(&t, &self.filter, index, &costs, &mut |tids, old| {
                            changes.push((tids, checked(&old)?));
                            Ok(())
                        })?;
                        // A columnar table's column rows: deleted there, their
                        // new rows inserted into the delta.
                        let under_turn = column_rows::column_rows_under_turn;
                        under_turn(db, &t, &self.filter, early, &mut |found, old| {
                            moved.push((found, checked(&old)?));
                            Ok(())
                        })?;
                        let out = match returning {
                            Some(f) => {
                                let new: Vec<RecordBatch> = changes
                                    .iter()
                                    .map(|(_, b)| b.clone())
                                    .chain(moved.iter().map(|(_, b)| b.clone()))
                                    .collect();
                                f(&new)?
                            }
                            None => Vec::new(),
                        };
                        if !set.is_empty() && t.indexes().iter().any(|i| i.def.unique) {
                            let mut rows = Vec::new();
                            for (tids, new) in &changes {
                                rows.extend(tids.iter().copied().zip(rows_of(new, t.schema())?));
                            }
                            crate::ddl::unique::check_update(&t, &rows)?;
                        }
                        let mut n = 0u64;
                        for (tids, new) in &changes {
                            for (&tid, row) in tids.iter().zip(rows_of(new, t.schema())?) {
                                if !set.is_empty() {
                                    t.update_row(tid, &row)?;
                                }
                                n += 1;
                            }
                        }
                        let positions: Vec<u64> =
                            moved.iter().flat_map(|(p, _)| p.iter().copied()).collect();
                        if !set.is_empty() {
                            t.delete_column_rows(&positions)?;
                            for (_, new) in &moved {
                                t.insert_rows(&rows_of(new, t.schema())?)?;
                            }
                        }
                        n += positions.len() as u64;
                        Ok((n, out))
                    }
                }
            })
        })
    }
}

/// The new rows of an `UPDATE`: `old` with the SET columns replaced by their
/// expressions' values on it.
fn assign(
    table: &Table,
    set: &[(usize, Arc<dyn PhysicalExpr>, Expr)],
    old: &RecordBatch,
) -> Result<RecordBatch, SqlError> {
    let mut columns: Vec<ArrayRef> = old.columns().to_vec();
    let schema = old.schema();
    for (c, expr, _) in set {
        let want = schema.field(*c).data_type();
        // A value the expression cannot compute (a cast out of range, a
        // division by zero) is the data's fault: named like a value that does
        // not fit its column.
        let mut value = expr
            .evaluate(old)
            .and_then(|v| v.into_array(old.num_rows()))
            .map_err(|e| {
                let root = match e.find_root() {
                    DataFusionError::ArrowError(a, _) => a.to_string(),
                    DataFusionError::External(x) => x.to_string(),
                    r => r.to_string().lines().next().unwrap_or("").to_string(),
                };
                SqlError::Data(format!(
                    "UPDATE of '{}': column '{}': {root}",
                    table.name(),
                    table.schema().columns[*c].name
                ))
            })?;
        if value.data_type() != want {
            // Rounded, not truncated, into an integer column.
            value = crate::rules::integer_cast::rounded_for(value, want);
            let strict = CastOptions {
                safe: false,
                ..CastOptions::default()
            };
            value = cast_with_options(&value, want, &strict).map_err(|e| {
                SqlError::Data(format!(
                    "UPDATE of '{}': column '{}': {e}",
                    table.name(),
                    table.schema().columns[*c].name
                ))
            })?;
        }
        columns[*c] = value;
    }
    RecordBatch::try_new(schema, columns).map_err(arrow_error)
}

impl fmt::Debug for DmlExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DmlExec({})", self.table)
    }
}

impl DisplayAs for DmlExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.op {
            Op::Delete => write!(f, "StrataDeleteExec: table={}", self.table)?,
            Op::Update(set) => {
                let set: Vec<String> = set.iter().map(|(_, _, e)| e.to_string()).collect();
                write!(
                    f,
                    "StrataUpdateExec: table={}, set=[{}]",
                    self.table,
                    set.join(", ")
                )?
            }
        }
        match &self.index {
            Some(i) => write!(
                f,
                ", rows by index {i} (or a heap scan if their pages cost more)"
            )?,
            None => write!(f, ", rows by heap scan")?,
        }
        if let Some(text) = self.filter.text() {
            write!(f, ", where=[{text}]")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for DmlExec {
    fn name(&self) -> &str {
        "DmlExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        if let Some(e) = &self.filter.expr
            && f(e)? == TreeNodeRecursion::Stop
        {
            return Ok(TreeNodeRecursion::Stop);
        }
        if let Op::Update(set) = &self.op {
            for (_, e, _) in set {
                if f(e)? == TreeNodeRecursion::Stop {
                    return Ok(TreeNodeRecursion::Stop);
                }
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "DmlExec is a leaf and takes no children".into(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "DmlExec has one partition, asked for {partition}"
            )));
        }
        let me = self.clone();
        let stream = futures::stream::once(async move {
            // On this thread (see InsertSink::write_all).
            let n = tokio::task::block_in_place(|| me.run()).map_err(external)?;
            count_batch(n).map_err(external)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            count_schema(),
            stream,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// Distinct pages and runs of neighbouring pages, counted from scratch.
    fn brute(pages: &std::collections::BTreeSet<u64>) -> (u64, u64) {
        let runs = pages
            .iter()
            .filter(|&&p| p == 0 || !pages.contains(&(p - 1)))
            .count();
        (pages.len() as u64, runs as u64)
    }

    #[test]
    fn pages_hit_counts_distinct_pages_and_runs_as_they_arrive() {
        let mut rng = SmallRng::seed_from_u64(7);
        for _ in 0..200 {
            // Whole words of the bitmap and a partial last one.
            let heap = 64 * rng.random_range(1..5u64) - rng.random_range(0..2u64);
            let mut hit = PagesHit::new(heap);
            let mut model = std::collections::BTreeSet::new();
            let mut past_end = 0;
            for _ in 0..rng.random_range(0..400) {
                let p = rng.random_range(0..heap + 3);
                hit.add(p);
                if p < heap {
                    model.insert(p);
                } else {
                    past_end += 1;
                }
                let (distinct, runs) = brute(&model);
                assert_eq!(
                    (hit.distinct, hit.runs),
                    (distinct + past_end, runs + past_end)
                );
            }
        }
    }

    #[test]
    fn a_run_costs_one_random_read_and_the_rest_sequential() {
        let costs = PageCosts {
            random_ms: 10.0,
            sequential_ms: 1.0,
            parallel_random_ms: 2.0,
        };
        let mut hit = PagesHit::new(100);
        for p in 10..20 {
            hit.add(p);
        }
        hit.add(50);
        assert_eq!((hit.distinct, hit.runs), (11, 2));
        assert_eq!(hit.cost(&costs), 2.0 * 10.0 + 9.0);
    }
}
