//! strata rows ↔ Arrow: the table schema as an Arrow schema, batches of
//! stored tuples as Arrow record batches (only the columns a query needs), and
//! Arrow columns back as strata values (the rows INSERT and UPDATE write).
//!
//! Types map one to one: INT32 → Int32, INT64 → Int64, FLOAT64 → Float64,
//! DECIMAL(p,s) → Decimal128(p,s) (strata stores the scaled i64, so no value
//! changes), DATE → Date32 (both count days since 1970-01-01), CHAR(n) and
//! VARCHAR(n) → Utf8 (CHAR's padding is not significant in strata, so it is
//! trimmed, as PostgreSQL does when it compares `bpchar`), TEXT → Utf8,
//! TIMESTAMP → Timestamp(Microsecond, no time zone) (both count microseconds
//! since 1970), BOOL → Boolean.
//!
//! A scan of a columnar table hands its strings to the query as views
//! (`Utf8View`, [`string_views`]): a view of a string of up to 12 bytes holds
//! it, a longer one points into the decoded page, so filtering, hashing and
//! comparing them moves 16 bytes a value and no string data. Results leave
//! the engine as `Utf8` again (`strata_sql::result_types`).

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, BooleanBuilder, Date32Array, Date32Builder,
    Decimal128Array, Decimal128Builder, Float64Array, Float64Builder, Int32Array, Int32Builder,
    Int64Array, Int64Builder, StringArray, StringBuilder, TimestampMicrosecondArray,
    TimestampMicrosecondBuilder,
};
use arrow::buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType as ArrowType, Field, Schema as ArrowSchema, SchemaRef};
use arrow::datatypes::{
    Date32Type, Decimal128Type, Float64Type, Int32Type, Int64Type, TimeUnit,
    TimestampMicrosecondType,
};
use arrow::error::ArrowError;
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use strata_access::TupleBatch;
use strata_storage::Table;
use strata_storage::row::{
    DataType, Field as Stored, FixedColumn, FixedKind, RowLayout, Schema, Tid, Value,
};

/// The Arrow type a strata column type is read as.
pub fn arrow_type(ty: &DataType) -> ArrowType {
    match *ty {
        DataType::Int32 => ArrowType::Int32,
        DataType::Int64 => ArrowType::Int64,
        DataType::Float64 => ArrowType::Float64,
        DataType::Decimal { precision, scale } => ArrowType::Decimal128(precision, scale as i8),
        DataType::Date => ArrowType::Date32,
        DataType::Timestamp => ArrowType::Timestamp(TimeUnit::Microsecond, None),
        DataType::Char { .. } | DataType::Varchar { .. } => ArrowType::Utf8,
        DataType::Bool => ArrowType::Boolean,
    }
}

/// The Arrow schema of a strata table.
pub fn arrow_schema(schema: &Schema) -> SchemaRef {
    Arc::new(ArrowSchema::new(
        schema
            .columns
            .iter()
            .map(|c| Field::new(&c.name, arrow_type(&c.ty), c.nullable))
            .collect::<Vec<_>>(),
    ))
}

/// `schema` with its strings (`Utf8`) as views (`Utf8View`): the types a
/// scan of a columnar table gives its query.
pub fn string_views(schema: &ArrowSchema) -> SchemaRef {
    retyped(schema, &ArrowType::Utf8, &ArrowType::Utf8View)
}

/// `schema` with its fields of type `from` of type `to`.
pub fn retyped(schema: &ArrowSchema, from: &ArrowType, to: &ArrowType) -> SchemaRef {
    Arc::new(ArrowSchema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                t if t == from => f.as_ref().clone().with_data_type(to.clone()),
                _ => f.as_ref().clone(),
            })
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    ))
}

/// Whether `schema` has a string view column.
pub fn has_string_views(schema: &ArrowSchema) -> bool {
    schema
        .fields()
        .iter()
        .any(|f| f.data_type() == &ArrowType::Utf8View)
}

/// `arrays` with their strings as `schema` wants them: `Utf8` cast to views
/// (no string is copied: a view of a long string points into the array's
/// bytes) or views to `Utf8`. Any other column is left as it is.
pub fn as_schema_types(
    arrays: Vec<ArrayRef>,
    schema: &ArrowSchema,
) -> Result<Vec<ArrayRef>, ArrowError> {
    arrays
        .into_iter()
        .zip(schema.fields())
        .map(|(a, f)| match (a.data_type(), f.data_type()) {
            (ArrowType::Utf8, ArrowType::Utf8View) | (ArrowType::Utf8View, ArrowType::Utf8) => {
                arrow::compute::cast(&a, f.data_type())
            }
            _ => Ok(a),
        })
        .collect()
}

/// `schema` with every field nullable: for batches of rows still to be
/// checked (a NULL in a NOT NULL column is reported by strata's row check,
/// which names the column and the row, where Arrow would refuse the batch
/// naming neither).
pub fn nullable(schema: &SchemaRef) -> SchemaRef {
    Arc::new(ArrowSchema::new(
        schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
    ))
}

enum Builder {
    I32(Int32Builder),
    I64(Int64Builder),
    F64(Float64Builder),
    Dec(Decimal128Builder),
    Date(Date32Builder),
    Ts(TimestampMicrosecondBuilder),
    /// `true`: CHAR, whose trailing spaces are padding; a VARCHAR's are data.
    Str(StringBuilder, bool),
    Bool(BooleanBuilder),
}

impl Builder {
    fn new(ty: &DataType, rows: usize) -> Builder {
        match *ty {
            DataType::Int32 => Builder::I32(Int32Builder::with_capacity(rows)),
            DataType::Int64 => Builder::I64(Int64Builder::with_capacity(rows)),
            DataType::Float64 => Builder::F64(Float64Builder::with_capacity(rows)),
            DataType::Decimal { precision, scale } => Builder::Dec(
                Decimal128Builder::with_capacity(rows)
                    .with_precision_and_scale(precision, scale as i8)
                    .expect("strata decimals have precision <= 18"),
            ),
            DataType::Date => Builder::Date(Date32Builder::with_capacity(rows)),
            DataType::Timestamp => Builder::Ts(TimestampMicrosecondBuilder::with_capacity(rows)),
            DataType::Char { len } | DataType::Varchar { len } => Builder::Str(
                StringBuilder::with_capacity(rows, rows * (len as usize).min(64)),
                matches!(ty, DataType::Char { .. }),
            ),
            DataType::Bool => Builder::Bool(BooleanBuilder::with_capacity(rows)),
        }
    }

    /// Appends one stored field (see [`RowLayout::fields`]).
    fn push(&mut self, field: Stored<'_>) {
        let i32_of = |b: &[u8]| i32::from_le_bytes(b[..4].try_into().unwrap());
        let i64_of = |b: &[u8]| i64::from_le_bytes(b[..8].try_into().unwrap());
        // A narrow integer (types as hints) is decoded already.
        if let Stored::Int(x) = field {
            match self {
                Builder::I32(b) => b.append_value(x as i32),
                Builder::Date(b) => b.append_value(x as i32),
                Builder::I64(b) => b.append_value(x),
                Builder::Ts(b) => b.append_value(x),
                Builder::Dec(b) => b.append_value(x as i128),
                // Only integer-like columns have integer encodings.
                _ => self.push(Stored::Null),
            }
            return;
        }
        if let (Builder::Str(b, _), Stored::Text(s)) = (&mut *self, field) {
            b.append_value(s);
            return;
        }
        if let (Builder::Str(b, _), Stored::Stamp(x)) = (&mut *self, field) {
            b.append_value(strata_storage::row::encoding::format_timestamp(x));
            return;
        }
        let field = match field {
            Stored::Raw(b) => Some(b),
            _ => None,
        };
        match (self, field) {
            (Builder::I32(b), f) => b.append_option(f.map(i32_of)),
            (Builder::Date(b), f) => b.append_option(f.map(i32_of)),
            (Builder::I64(b), f) => b.append_option(f.map(i64_of)),
            (Builder::Ts(b), f) => b.append_option(f.map(i64_of)),
            (Builder::Dec(b), f) => b.append_option(f.map(|x| i64_of(x) as i128)),
            (Builder::F64(b), f) => {
                b.append_option(f.map(|x| f64::from_le_bytes(x[..8].try_into().unwrap())))
            }
            (Builder::Bool(b), f) => b.append_option(f.map(|x| x[0] != 0)),
            (Builder::Str(b, _), None) => b.append_null(),
            (Builder::Str(b, char), Some(x)) => {
                // Stored tuples are checksummed and were validated as UTF-8 on
                // insert, so this cannot fail for a sound page.
                let s = std::str::from_utf8(x).unwrap_or("\u{FFFD}");
                b.append_value(if *char { s.trim_end_matches(' ') } else { s })
            }
        }
    }

    /// Appends one value of the builder's type (`Value::Null` is NULL).
    fn push_value(&mut self, v: &Value) -> Result<(), ArrowError> {
        match (self, v) {
            (Builder::I32(b), Value::Int32(x)) => b.append_value(*x),
            (Builder::Date(b), Value::Date(x)) => b.append_value(*x),
            (Builder::I64(b), Value::Int64(x)) => b.append_value(*x),
            (Builder::Ts(b), Value::Timestamp(x)) => b.append_value(*x),
            (Builder::Dec(b), Value::Decimal(x)) => b.append_value(*x as i128),
            (Builder::F64(b), Value::Float64(x)) => b.append_value(*x),
            (Builder::Bool(b), Value::Bool(x)) => b.append_value(*x),
            (Builder::Str(b, true), Value::Str(s)) => b.append_value(s.trim_end_matches(' ')),
            (Builder::Str(b, false), Value::Str(s)) => b.append_value(s),
            (Builder::I32(b), Value::Null) => b.append_null(),
            (Builder::Date(b), Value::Null) => b.append_null(),
            (Builder::I64(b), Value::Null) => b.append_null(),
            (Builder::Ts(b), Value::Null) => b.append_null(),
            (Builder::Dec(b), Value::Null) => b.append_null(),
            (Builder::F64(b), Value::Null) => b.append_null(),
            (Builder::Bool(b), Value::Null) => b.append_null(),
            (Builder::Str(b, _), Value::Null) => b.append_null(),
            (_, v) => {
                return Err(ArrowError::InvalidArgumentError(format!(
                    "value {v:?} does not match its column's type"
                )));
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::I32(b) => Arc::new(b.finish()),
            Builder::I64(b) => Arc::new(b.finish()),
            Builder::F64(b) => Arc::new(b.finish()),
            Builder::Dec(b) => Arc::new(b.finish()),
            Builder::Date(b) => Arc::new(b.finish()),
            Builder::Ts(b) => Arc::new(b.finish()),
            Builder::Str(b, _) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
        }
    }
}

/// Turns batches of stored tuples into Arrow record batches of some columns.
pub struct BatchConverter {
    layout: RowLayout,
    types: Vec<DataType>,
    /// Table columns to produce, in output order.
    columns: Vec<usize>,
    /// How a batch of rows without NULLs is read.
    plan: Plan,
    /// How a batch with a NULL is read (a NULL takes no bytes, so the later
    /// columns of its row are not at their fixed place): row by row.
    with_nulls: Plan,
    schema: SchemaRef,
    /// When some of `columns` are in the table's side table (`strata
    /// split`).
    side: Option<SideColumns>,
}

/// How a converter reads its output columns.
#[derive(Clone)]
struct Plan {
    /// How each output column is read.
    reads: Vec<Read>,
    /// How many leading columns of a tuple are walked for the columns read
    /// row by row: one past the last of them (a tuple's fields are found in
    /// order, so the later ones need not be); 0 when there are none.
    upto: usize,
}

impl Plan {
    fn new(columns: &[usize], reads: Vec<Read>) -> Plan {
        let upto = columns
            .iter()
            .zip(&reads)
            .filter(|(_, r)| **r == Read::Row)
            .map(|(&c, _)| c + 1)
            .max()
            .unwrap_or(0);
        Plan { reads, upto }
    }
}

/// How a converter reads one output column.
#[derive(Clone, Copy, PartialEq)]
enum Read {
    /// At its fixed place in every row, a batch's values in one loop
    /// ([`RowLayout::fixed_column`]): no walk over the fields before it.
    Fixed,
    /// Field by field, walking each tuple ([`RowLayout::fields_upto`]).
    Row,
    /// From the side rows the tuples point to.
    Side,
}

/// The columns a converter reads from a side table.
struct SideColumns {
    table: Arc<Table>,
    /// (output position, position in the side row)
    wanted: Vec<(usize, usize)>,
}

impl BatchConverter {
    /// A converter of `table`'s stored tuples producing `columns`
    /// (positions in the table's schema) as `out_schema`. Columns in the
    /// table's side table are read from the side rows the tuples point to;
    /// without any, the side table is not touched.
    pub fn new(table: &Table, columns: Vec<usize>, out_schema: SchemaRef) -> BatchConverter {
        let side_cols = table.side_columns();
        let wanted: Vec<(usize, usize)> = columns
            .iter()
            .enumerate()
            .filter_map(|(out, c)| side_cols.iter().position(|s| s == c).map(|j| (out, j)))
            .collect();
        let side = match table.side_table() {
            Some(t) if !wanted.is_empty() => Some(SideColumns {
                table: t.clone(),
                wanted,
            }),
            _ => None,
        };
        let layout = table.layout();
        let types = layout.types().to_vec();
        let reads: Vec<Read> = columns
            .iter()
            .enumerate()
            .map(|(out, &c)| {
                if side
                    .as_ref()
                    .is_some_and(|s| s.wanted.iter().any(|w| w.0 == out))
                {
                    Read::Side
                } else if layout
                    .fixed_column(c)
                    .is_some_and(|f| columnar(&f, &types[c]))
                {
                    Read::Fixed
                } else {
                    Read::Row
                }
            })
            .collect();
        let row_reads = reads
            .iter()
            .map(|&r| if r == Read::Fixed { Read::Row } else { r })
            .collect();
        BatchConverter {
            layout: layout.clone(),
            types,
            plan: Plan::new(&columns, reads),
            with_nulls: Plan::new(&columns, row_reads),
            columns,
            schema: out_schema,
            side,
        }
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Pushes the side columns of `batch`'s rows: their side rows read in
    /// side-heap order (each side page once, neighbours in one request),
    /// then decoded in the rows' order.
    fn push_side(
        &self,
        side: &SideColumns,
        batch: &TupleBatch,
        builders: &mut [Option<Builder>],
    ) -> Result<(), ArrowError> {
        let external = |e: strata_storage::StorageError| ArrowError::ExternalError(Box::new(e));
        let mut wanted: Vec<(Tid, usize)> = batch
            .iter()
            .enumerate()
            .map(|(i, (_, t))| (self.layout.side_tid(t).expect("a split table's layout"), i))
            .collect();
        wanted.sort_unstable();
        let tids: Vec<Tid> = wanted.iter().map(|w| w.0).collect();
        let mut rows: Vec<(Tid, Vec<u8>)> = vec![(Tid::default(), Vec::new()); batch.len()];
        let mut k = 0;
        side.table
            .heap()
            .with_tuples_prefetched(&tids, 128, |side_tid, b| {
                let (_, i) = wanted[k];
                k += 1;
                match b {
                    Some(b) => {
                        rows[i] = (side_tid, b.to_vec());
                        Ok(())
                    }
                    None => {
                        let tid = batch.iter().nth(i).map(|(t, _)| t).unwrap_or_default();
                        Err(strata_storage::StorageError::LostSideRow {
                            table: side.table.name().trim_end_matches(".side").to_string(),
                            page: tid.page,
                            slot: tid.slot,
                            side_page: side_tid.page,
                            side_slot: side_tid.slot,
                        })
                    }
                }
            })
            .map_err(external)?;
        let mut fields = Vec::new();
        for (side_tid, b) in &rows {
            side.table.layout().fields(b, *side_tid, &mut fields);
            for &(out, j) in &side.wanted {
                if let Some(b) = &mut builders[out] {
                    b.push(fields[j]);
                }
            }
        }
        Ok(())
    }

    /// How `batch` is read: column by column where columns have their fixed
    /// place, unless a row of it has a NULL.
    fn plan_for(&self, batch: &TupleBatch) -> &Plan {
        let fixed = self.plan.reads.contains(&Read::Fixed);
        if fixed && batch.iter().any(|(_, t)| self.layout.has_null(t)) {
            &self.with_nulls
        } else {
            &self.plan
        }
    }

    /// The Arrow batch holding `batch`'s tuples.
    pub fn convert(&self, batch: &TupleBatch) -> Result<RecordBatch, ArrowError> {
        let rows = batch.len();
        let plan = self.plan_for(batch);
        let mut builders: Vec<Option<Builder>> = self
            .columns
            .iter()
            .zip(&plan.reads)
            .map(|(&c, r)| (*r != Read::Fixed).then(|| Builder::new(&self.types[c], rows)))
            .collect();
        if plan.upto > 0 {
            let mut fields = Vec::with_capacity(plan.upto);
            for (tid, tuple) in batch.iter() {
                self.layout.fields_upto(tuple, tid, plan.upto, &mut fields);
                for ((b, &c), r) in builders.iter_mut().zip(&self.columns).zip(&plan.reads) {
                    if let (Some(b), Read::Row) = (b, r) {
                        b.push(fields[c]);
                    }
                }
            }
        }
        if let Some(side) = &self.side {
            self.push_side(side, batch, &mut builders)?;
        }
        let arrays: Vec<ArrayRef> = builders
            .iter_mut()
            .zip(&self.columns)
            .map(|(b, &c)| match (b, self.layout.fixed_column(c)) {
                (Some(b), _) => b.finish(),
                (None, Some(f)) => fixed_array(&self.layout, c, f, &self.types[c], batch),
                // A plan says Fixed only for a fixed column.
                (None, None) => unreachable!("column {c} has no fixed place"),
            })
            .collect();
        let arrays = as_schema_types(arrays, &self.schema)?;
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
    }
}

/// Whether a column stored as `f` is read column-wise into the Arrow type of
/// `ty` by [`fixed_array`].
fn columnar(f: &FixedColumn<'_>, ty: &DataType) -> bool {
    match f.kind {
        FixedKind::Plain(w) => ty.fixed_width() == Some(w),
        FixedKind::Int { .. } => matches!(
            ty,
            DataType::Int32 | DataType::Int64 | DataType::Date | DataType::Decimal { .. }
        ),
        FixedKind::Dict { .. } => matches!(ty, DataType::Char { .. } | DataType::Varchar { .. }),
    }
}

/// Column `col` (of type `ty`, stored as `f`) of every row of `batch`, each
/// read at its fixed place: one tight loop a column, no per-field dispatch.
/// A coded value stored past the columns (its code the escape) is decoded
/// on its own.
fn fixed_array(
    layout: &RowLayout,
    col: usize,
    f: FixedColumn<'_>,
    ty: &DataType,
    batch: &TupleBatch,
) -> ArrayRef {
    let o = f.offset;
    fn text<'t>(t: &'t [u8], o: usize, w: usize, ty: &DataType) -> &'t str {
        let s = std::str::from_utf8(&t[o..o + w]).unwrap_or("\u{FFFD}");
        if matches!(ty, DataType::Char { .. }) {
            s.trim_end_matches(' ')
        } else {
            s
        }
    }
    // The values of an integer-like column, plain (stored as `$stored`) or
    // a frame of reference, as `$native`.
    macro_rules! ints {
        ($stored:ty, $native:ty) => {{
            let v: Vec<$native> = match f.kind {
                FixedKind::Int { base, escape, .. } => batch
                    .iter()
                    .map(|(tid, t)| match f.code(t) {
                        c if c == escape => {
                            layout.decode_column(t, col, tid).as_i64().unwrap_or(0) as $native
                        }
                        c => base.wrapping_add(c as i64) as $native,
                    })
                    .collect(),
                _ => batch
                    .iter()
                    .map(|(_, t)| {
                        const W: usize = std::mem::size_of::<$stored>();
                        <$stored>::from_le_bytes(t[o..o + W].try_into().unwrap()) as $native
                    })
                    .collect(),
            };
            v
        }};
    }
    let width = match f.kind {
        FixedKind::Plain(w) => w,
        _ => 0,
    };
    match (f.kind, ty) {
        (FixedKind::Dict { values, escape, .. }, _) => {
            let mut b = StringBuilder::with_capacity(batch.len(), batch.len() * 8);
            for (tid, t) in batch.iter() {
                match f.code(t) {
                    c if c == escape => match layout.decode_column(t, col, tid) {
                        Value::Str(s) => b.append_value(s),
                        _ => b.append_null(),
                    },
                    c => b.append_value(values.get(c as usize).map_or("", String::as_str)),
                }
            }
            Arc::new(b.finish())
        }
        (_, DataType::Int32) => Arc::new(Int32Array::from(ints!(i32, i32))),
        (_, DataType::Date) => Arc::new(Date32Array::from(ints!(i32, i32))),
        (_, DataType::Int64) => Arc::new(Int64Array::from(ints!(i64, i64))),
        (_, DataType::Timestamp) => Arc::new(TimestampMicrosecondArray::from(ints!(i64, i64))),
        (_, DataType::Decimal { precision, scale }) => Arc::new(
            Decimal128Array::from(ints!(i64, i128))
                .with_precision_and_scale(*precision, *scale as i8)
                .expect("strata decimals have precision <= 18"),
        ),
        (_, DataType::Float64) => {
            Arc::new(Float64Array::from_iter_values(batch.iter().map(
                |(_, t)| f64::from_le_bytes(t[o..o + 8].try_into().unwrap()),
            )))
        }
        (_, DataType::Bool) => Arc::new(BooleanArray::from(
            batch.iter().map(|(_, t)| t[o] != 0).collect::<Vec<bool>>(),
        )),
        (_, DataType::Char { .. } | DataType::Varchar { .. }) => {
            // The bytes end to end (a CHAR's padding dropped: a space byte is
            // never part of a longer UTF-8 character), checked as UTF-8 once
            // for the batch rather than once a value.
            let char = matches!(ty, DataType::Char { .. });
            let mut bytes = Vec::with_capacity(batch.len() * width);
            let mut ends = Vec::with_capacity(batch.len() + 1);
            ends.push(0i32);
            for (_, t) in batch.iter() {
                let mut v = &t[o..o + width];
                while char && v.last() == Some(&b' ') {
                    v = &v[..v.len() - 1];
                }
                bytes.extend_from_slice(v);
                ends.push(bytes.len() as i32);
            }
            let offsets = OffsetBuffer::new(ScalarBuffer::from(ends));
            match StringArray::try_new(offsets, Buffer::from_vec(bytes), None) {
                Ok(a) => Arc::new(a),
                // Not UTF-8 (a stored tuple is checked on insert, so only a
                // damaged page): each value on its own, the bad ones replaced.
                Err(_) => {
                    let mut b = StringBuilder::with_capacity(batch.len(), batch.len() * width);
                    for (_, t) in batch.iter() {
                        b.append_value(text(t, o, width, ty));
                    }
                    Arc::new(b.finish())
                }
            }
        }
    }
}

/// Builds Arrow record batches from rows of strata values (decoded values,
/// such as an index cache's, rather than stored tuples).
pub struct ValueBatchBuilder {
    builders: Vec<Builder>,
    schema: SchemaRef,
    rows: usize,
}

impl ValueBatchBuilder {
    /// A builder of batches of `schema`, whose columns have the strata types
    /// `types`, in order.
    pub fn new(types: &[DataType], schema: SchemaRef) -> ValueBatchBuilder {
        ValueBatchBuilder {
            builders: types.iter().map(|t| Builder::new(t, 0)).collect(),
            schema,
            rows: 0,
        }
    }

    /// Appends a row: one value per column, in order. A value of another type
    /// than its column's is an error (the row may then be partly appended:
    /// drop the builder).
    pub fn push_row<'a>(
        &mut self,
        row: impl IntoIterator<Item = &'a Value>,
    ) -> Result<(), ArrowError> {
        let mut n = 0;
        for (b, v) in self.builders.iter_mut().zip(row) {
            b.push_value(v)?;
            n += 1;
        }
        if n != self.builders.len() {
            return Err(ArrowError::InvalidArgumentError(format!(
                "a row of {n} values for {} columns",
                self.builders.len()
            )));
        }
        self.rows += 1;
        Ok(())
    }

    /// Rows appended since the last [`ValueBatchBuilder::finish`].
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The batch of the rows appended so far; the builder starts over.
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        let arrays: Vec<ArrayRef> = self.builders.iter_mut().map(Builder::finish).collect();
        let arrays = as_schema_types(arrays, &self.schema)?;
        let rows = std::mem::take(&mut self.rows);
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
    }
}

/// The values of an Arrow column of a table column of type `ty`, which must
/// be the Arrow type [`arrow_type`] gives it (DataFusion casts what INSERT and
/// UPDATE write to the table's types). CHAR values lose their trailing
/// spaces, as everywhere in strata. Lengths, ranges and NULLs are checked
/// when the row is (see `crate::dml`); the error is a short reason.
pub fn arrow_values(array: &dyn Array, ty: &DataType) -> Result<Vec<Value>, String> {
    let n = array.len();
    let mut out = Vec::with_capacity(n);
    macro_rules! each {
        ($arr:expr, $f:expr) => {{
            let a = $arr;
            for i in 0..n {
                out.push(if a.is_null(i) {
                    Value::Null
                } else {
                    $f(a.value(i))
                });
            }
        }};
    }
    match (ty, array.data_type()) {
        (DataType::Int32, ArrowType::Int32) => {
            each!(array.as_primitive::<Int32Type>(), Value::Int32)
        }
        (DataType::Int64, ArrowType::Int64) => {
            each!(array.as_primitive::<Int64Type>(), Value::Int64)
        }
        (DataType::Float64, ArrowType::Float64) => {
            each!(array.as_primitive::<Float64Type>(), Value::Float64)
        }
        (DataType::Date, ArrowType::Date32) => {
            each!(array.as_primitive::<Date32Type>(), Value::Date)
        }
        (DataType::Timestamp, ArrowType::Timestamp(TimeUnit::Microsecond, None)) => {
            each!(
                array.as_primitive::<TimestampMicrosecondType>(),
                Value::Timestamp
            )
        }
        (DataType::Bool, ArrowType::Boolean) => each!(array.as_boolean(), Value::Bool),
        (DataType::Decimal { scale, .. }, ArrowType::Decimal128(_, s)) if *s == *scale as i8 => {
            let a = array.as_primitive::<Decimal128Type>();
            for i in 0..n {
                if a.is_null(i) {
                    out.push(Value::Null);
                    continue;
                }
                let v = a.value(i);
                let v = i64::try_from(v)
                    .map_err(|_| format!("{} is out of range for {ty}", a.value_as_string(i)))?;
                out.push(Value::Decimal(v));
            }
        }
        (DataType::Char { .. } | DataType::Varchar { .. }, ArrowType::Utf8) => {
            let trim = matches!(ty, DataType::Char { .. });
            each!(array.as_string::<i32>(), |s: &str| Value::Str(
                if trim { s.trim_end_matches(' ') } else { s }.to_string()
            ))
        }
        (DataType::Char { .. } | DataType::Varchar { .. }, ArrowType::Utf8View) => {
            let trim = matches!(ty, DataType::Char { .. });
            each!(array.as_string_view(), |s: &str| Value::Str(
                if trim { s.trim_end_matches(' ') } else { s }.to_string()
            ))
        }
        (ty, t) => {
            return Err(format!(
                "a value of Arrow type {t} cannot be stored as {ty}"
            ));
        }
    }
    Ok(out)
}

/// A strata value as text for messages and plans.
pub fn value_text(v: &Value, ty: &DataType) -> String {
    v.display(ty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_storage::db::NoProgress;
    use strata_storage::{Database, DbOptions, TableOptions};

    /// The converter with every column read row by row, field after field.
    fn row_by_row(c: &BatchConverter) -> BatchConverter {
        BatchConverter {
            layout: c.layout.clone(),
            types: c.types.clone(),
            plan: c.with_nulls.clone(),
            with_nulls: c.with_nulls.clone(),
            columns: c.columns.clone(),
            schema: c.schema.clone(),
            side: None,
        }
    }

    fn row(i: i64) -> Vec<Value> {
        vec![
            Value::Int64(1_000 + i),
            Value::Int32((i % 50) as i32 - 25),
            Value::Date(9_000 + (i % 400) as i32),
            Value::Decimal(10_000 + i * 7),
            Value::Float64(i as f64 / 3.0),
            Value::Bool(i % 3 == 0),
            Value::Str(["A", "N", "R"][(i % 3) as usize].into()),
            Value::Str(["ab", "abcd", ""][(i % 3) as usize].into()),
            Value::Str(format!("note {i}")),
            Value::Int32(i as i32),
        ]
    }

    /// A batch read column by column equals the same batch read field by
    /// field and a model (each tuple decoded on its own to values), on a
    /// table as declared, compacted (frames of reference, a dictionary,
    /// unpadded CHAR) and holding values the encodings escape; and on the
    /// same table with nullable columns, whose batches are read column by
    /// column until one holds a NULL.
    #[test]
    fn columns_read_at_their_fixed_place_equal_tuples_read_field_by_field() {
        columns_at_their_fixed_place(false);
        columns_at_their_fixed_place(true);
    }

    fn columns_at_their_fixed_place(nullable: bool) {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(
            Database::create(
                &dir.path().join("db"),
                DbOptions {
                    direct_io: false,
                    ..DbOptions::default()
                },
            )
            .unwrap(),
        );
        let null = if nullable { " NULL" } else { "" };
        let schema = Schema::parse(&format!(
            "k BIGINT, i INT{null}, d DATE, p DECIMAL(12,2), f DOUBLE, b BOOL, flag CHAR(1), \
             c CHAR(4), v VARCHAR(10){null}, x INT{null}"
        ))
        .unwrap();
        let mut l = db
            .begin_create_load("t", schema.clone(), TableOptions::default(), vec![])
            .unwrap();
        for i in 0..3000 {
            l.append(&row(i)).unwrap();
        }
        l.commit(&NoProgress).unwrap();
        // Escaped values: outside every frame, a flag the dictionary lacks.
        let escaped = vec![
            Value::Int64(1 << 40),
            Value::Int32(-2_000_000_000),
            Value::Date(-700_000),
            Value::Decimal(-99_999_999_999),
            Value::Float64(-0.0),
            Value::Bool(true),
            Value::Str("Z".into()),
            Value::Str("wxyz".into()),
            Value::Str("  ".into()),
            Value::Int32(7),
        ];
        let all: Vec<usize> = (0..schema.len()).collect();
        // Output orders: every column, and some in another order.
        let outputs = [all.clone(), vec![6, 3, 0, 9, 2]];
        for state in ["declared", "compacted", "escaped"] {
            match state {
                "compacted" => {
                    db.compact("t", &Default::default(), &NoProgress).unwrap();
                }
                "escaped" => {
                    let txn = db.begin_write().unwrap();
                    let t = txn.table("t").unwrap();
                    t.insert_row(&escaped).unwrap();
                    if nullable {
                        t.insert_row(&[
                            Value::Int64(5),
                            Value::Null,
                            Value::Date(10_957),
                            Value::Decimal(150),
                            Value::Float64(0.5),
                            Value::Bool(false),
                            Value::Str("A".into()),
                            Value::Str("ab".into()),
                            Value::Null,
                            Value::Null,
                        ])
                        .unwrap();
                    }
                    txn.commit().unwrap();
                }
                _ => {}
            }
            let table = db.table("t").unwrap();
            let mut batch = TupleBatch::new();
            let mut model = Vec::new();
            table
                .heap()
                .scan(|tid, b| {
                    batch.push(tid, b);
                    model.push(table.layout().decode(b, tid));
                    Ok(())
                })
                .unwrap();
            if state == "escaped" {
                assert!(model.contains(&escaped), "the escaped row is stored");
            }
            for cols in &outputs {
                let full = arrow_schema(&schema);
                let out = Arc::new(full.project(cols).unwrap());
                let conv = BatchConverter::new(&table, cols.clone(), out.clone());
                // Every column before the VARCHAR sits at a fixed place (the
                // CHARs padded or, compacted, dictionary codes); the VARCHAR
                // (a length and its bytes) and the one after it do not.
                // A batch holding a NULL is read row by row.
                let with_null = nullable && state == "escaped";
                let fixed_wanted: Vec<Read> = cols
                    .iter()
                    .map(|&c| {
                        if c >= 8 || with_null {
                            Read::Row
                        } else {
                            Read::Fixed
                        }
                    })
                    .collect();
                assert_eq!(
                    conv.plan_for(&batch)
                        .reads
                        .iter()
                        .map(|r| *r == Read::Fixed)
                        .collect::<Vec<_>>(),
                    fixed_wanted
                        .iter()
                        .map(|r| *r == Read::Fixed)
                        .collect::<Vec<_>>(),
                    "{state} {cols:?}"
                );
                let got = conv.convert(&batch).unwrap();
                let by_rows = row_by_row(&conv).convert(&batch).unwrap();
                let types: Vec<DataType> = cols.iter().map(|&c| schema.columns[c].ty).collect();
                let mut m = ValueBatchBuilder::new(&types, out.clone());
                for r in &model {
                    m.push_row(cols.iter().map(|&c| &r[c])).unwrap();
                }
                let want = m.finish().unwrap();
                assert_eq!(got, want, "{state} {cols:?}: column by column");
                assert_eq!(by_rows, want, "{state} {cols:?}: field by field");
            }
        }
    }
}
