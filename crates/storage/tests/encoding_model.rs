//! Types as hints (`encoding.rs`) against a model.
//!
//! * By property: a table whose columns cover every encoding (frame of
//!   reference on BIGINT, INT, DATE and DECIMAL; dictionaries and unpadded
//!   text on CHAR and VARCHAR; NULLs) is loaded with narrow values and
//!   compacted, then random steps change it with values chosen to break the
//!   encodings — just below the frame's base, exactly the escape code's value
//!   and around it, the types' limits, strings not in the dictionary, empty,
//!   of the maximum length, multi-byte, CHARs with trailing spaces — in
//!   inserts (one at a time and batched), updates (moving rows and changing
//!   keys), deletes and rolled-back transactions, with compactions (which
//!   choose the encodings again: wider ones), clean reopens and crashes in
//!   between. After every step every row reads back as the model's, by a
//!   scan, by each stored tuple's columns one at a time and as fields, and by
//!   both indexes (the key and a narrow column), and `check_database` passes.
//!   After a compaction the encodings are the ones `choose` picks from the
//!   model's values, and no stored value is escaped.
//! * [`RowLayout`] alone: random encodings of several schemas, random rows
//!   (many escaped, with NULLs), the encoded layout reads back what the plain
//!   one does, through `decode`, `decode_column` and `fields`; and `validate`
//!   rejects every truncated tuple and never panics on garbled ones or on
//!   random bytes (and what it accepts decodes without a panic).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_storage::db::NoProgress;
use strata_storage::maintenance::check::check_database;
use strata_storage::maintenance::compact::CompactOptions;
use strata_storage::row::encoding::{
    ChooseOptions, ColumnSample, Encoding, choose, format_timestamp, is_plain,
};
use strata_storage::row::{
    DataType, Field, FixedColumn, FixedKind, RowLayout, Schema, Tid, Value, days_from_civil,
    encode_key,
};
use strata_storage::util::proptest_cases;
use strata_storage::{Database, DbOptions, IndexSpec, TableOptions};

const SCHEMA: &str = "id BIGINT, small INT, d DATE, price DECIMAL(15,2), flag CHAR(1), \
                      mode CHAR(10), note VARCHAR(40), opt INT NULL, txt VARCHAR(20) NULL, \
                      ts VARCHAR(16)";

const ID: usize = 0;
const SMALL: usize = 1;
/// The integer-like columns the generators fill: id, small, d, price; opt.
const INT_COLS: [usize; 4] = [0, 1, 2, 3];
const OPT: usize = 7;
/// The text columns: flag, mode, note; txt.
const TEXT_COLS: [usize; 3] = [4, 5, 6];
const TXT: usize = 8;
/// Text timestamps `YYYYMMDDHHMMSS`.
const TS: usize = 9;

/// 2024-01-01 00:00:00, in seconds since 1970: the initial timestamps'
/// first.
fn t0() -> i64 {
    days_from_civil(2024, 1, 1) as i64 * 86_400
}

/// Each integer column's initial values: `lo + (0..span)`.
fn initial_frame(col: usize, rows: usize) -> (i64, i64) {
    match col {
        ID => (1000, rows.max(1) as i64),
        SMALL => (0, 50),
        2 => (19_000, 100),
        3 => (100, 5000),
        OPT => (0, 100),
        _ => unreachable!(),
    }
}

/// Each text column's initial values.
fn initial_texts(col: usize) -> Vec<String> {
    let v: &[&str] = match col {
        4 => &["A", "B", "C"],
        5 => &["AIR", "RAIL", "SHIP", "TRUCK"],
        6 => &["alpha", "beta", "gamma", "delta", "epsilon"],
        TXT => &["x", "yy", "zzz"],
        _ => unreachable!(),
    };
    v.iter().map(|s| s.to_string()).collect()
}

fn initial_row(i: usize, rows: usize) -> Vec<Value> {
    let f = |c: usize| initial_frame(c, rows);
    let t = |c: usize, k: usize| {
        let v = initial_texts(c);
        Value::Str(v[k % v.len()].clone())
    };
    vec![
        Value::Int64(f(ID).0 + i as i64),
        Value::Int32((f(SMALL).0 + (i as i64 * 7) % f(SMALL).1) as i32),
        Value::Date((f(2).0 + i as i64 % f(2).1) as i32),
        Value::Decimal(f(3).0 + (i as i64 * 37) % f(3).1),
        t(4, i),
        t(5, i / 3),
        // Mostly distinct: short text, not a dictionary.
        Value::Str(format!("note number {i}")),
        if i.is_multiple_of(5) {
            Value::Null
        } else {
            Value::Int32((i % 100) as i32)
        },
        if i.is_multiple_of(3) {
            Value::Null
        } else {
            t(TXT, i)
        },
        Value::Str(format_timestamp(t0() + (i as i64 * 37) % 3000)),
    ]
}

fn opts() -> DbOptions {
    DbOptions {
        buffer_pool_bytes: 64 * 8192,
        direct_io: false,
        // Checkpoints every few steps, so crashes find some and miss others.
        checkpoint_log_bytes: 64 << 10,
        ..DbOptions::default()
    }
}

fn escape(width: u8) -> i128 {
    (1i128 << (8 * width as u32)) - 1
}

/// The values a column of integer-like type `ty` may hold.
fn int_range(ty: &DataType) -> (i128, i128) {
    match ty {
        DataType::Int32 | DataType::Date => (i32::MIN as i128, i32::MAX as i128),
        DataType::Int64 => (i64::MIN as i128, i64::MAX as i128),
        DataType::Decimal { precision, .. } => {
            let m = 10i128.pow(*precision as u32) - 1;
            (-m, m)
        }
        t => panic!("{t} is not integer-like"),
    }
}

/// The value of type `ty` nearest to `x`.
fn int_value(ty: &DataType, x: i128) -> Value {
    let (lo, hi) = int_range(ty);
    let x = x.clamp(lo, hi);
    match ty {
        DataType::Int32 => Value::Int32(x as i32),
        DataType::Date => Value::Date(x as i32),
        DataType::Int64 => Value::Int64(x as i64),
        _ => Value::Decimal(x as i64),
    }
}

/// `s` cut to at most `len` bytes, at a character boundary.
fn cut(mut s: String, len: usize) -> String {
    while s.len() > len {
        s.pop();
    }
    s
}

/// What a column gives back for `v`: a CHAR without its trailing spaces.
fn normalized(ty: &DataType, v: &Value) -> Value {
    match (ty, v) {
        (DataType::Char { .. }, Value::Str(s)) => Value::Str(s.trim_end_matches(' ').to_string()),
        _ => v.clone(),
    }
}

fn normalize_row(schema: &Schema, row: &[Value]) -> Vec<Value> {
    schema
        .columns
        .iter()
        .zip(row)
        .map(|(c, v)| normalized(&c.ty, v))
        .collect()
}

/// The value of a stored field (`RowLayout::fields`) of a column of type `ty`.
fn field_value(ty: &DataType, f: Field<'_>) -> Value {
    match f {
        Field::Null => Value::Null,
        Field::Int(x) => int_value(ty, x as i128),
        Field::Text(s) => Value::Str(s.to_string()),
        Field::Stamp(x) => Value::Str(format_timestamp(x)),
        Field::Raw(b) => match ty {
            DataType::Int32 => Value::Int32(i32::from_le_bytes(b.try_into().unwrap())),
            DataType::Date => Value::Date(i32::from_le_bytes(b.try_into().unwrap())),
            DataType::Int64 => Value::Int64(i64::from_le_bytes(b.try_into().unwrap())),
            DataType::Timestamp => Value::Timestamp(i64::from_le_bytes(b.try_into().unwrap())),
            DataType::Decimal { .. } => Value::Decimal(i64::from_le_bytes(b.try_into().unwrap())),
            DataType::Float64 => Value::Float64(f64::from_le_bytes(b.try_into().unwrap())),
            DataType::Bool => Value::Bool(b[0] != 0),
            DataType::Char { .. } => {
                Value::Str(String::from_utf8_lossy(b).trim_end_matches(' ').to_string())
            }
            DataType::Varchar { .. } => Value::Str(String::from_utf8_lossy(b).into_owned()),
        },
    }
}

/// The plain value at the start of `b` (a column at a fixed offset).
fn plain_at(ty: &DataType, b: &[u8]) -> Value {
    match ty.fixed_width() {
        Some(w) => field_value(ty, Field::Raw(&b[..w])),
        None => {
            let n = u16::from_le_bytes([b[0], b[1]]) as usize;
            field_value(ty, Field::Raw(&b[2..2 + n]))
        }
    }
}

/// Value equality with floats compared by their bits (a garbled tuple may
/// hold a NaN).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float64(x), Value::Float64(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

// ---------------------------------------------------------------------------
// The property test against a model.

/// An integer-like value, placed relative to the column's current frame of
/// reference (or, when it has none, its initial values' range).
#[derive(Clone, Debug)]
enum IntGen {
    /// Among the initial values (inside the first compaction's frame).
    Narrow(u16),
    /// The frame's base plus this (-2 is below the frame).
    Base(i8),
    /// The value whose code would be the escape, plus this.
    Escape(i8),
    Min,
    Max,
    Any(i64),
}

#[derive(Clone, Debug)]
enum TextGen {
    /// One of the current dictionary's values (or the initial ones).
    Known(usize, u8),
    New(String),
    Empty,
    /// As long as the column allows (multi-byte characters or not).
    Max(bool),
    /// A short string and trailing spaces (dropped by a CHAR).
    Trailing(String, u8),
    Spaces(u8),
}

/// A text timestamp: one placed like an integer (in seconds, relative to
/// the column's frame), or text that is not exactly `YYYYMMDDHHMMSS`.
#[derive(Clone, Debug)]
enum StampGen {
    Seconds(IntGen),
    /// A timestamp with trailing spaces (kept by a VARCHAR).
    Trailing(IntGen, u8),
    /// Not a timestamp, though close to one.
    Malformed(usize),
}

const MALFORMED: [&str; 10] = [
    "20240230000000",
    "2024010100000",
    "202401010000000",
    "20241301000000",
    "20240101240000",
    "20240101000060",
    " 20240101000000",
    "2024-01-01 00:0",
    "",
    "99999999999999",
];

#[derive(Clone, Debug)]
struct RowGen {
    ints: [IntGen; 4],
    texts: [TextGen; 3],
    opt: Option<IntGen>,
    txt: Option<TextGen>,
    ts: StampGen,
}

fn int_gen() -> impl Strategy<Value = IntGen> {
    prop_oneof![
        5 => any::<u16>().prop_map(IntGen::Narrow),
        2 => (-2i8..=2).prop_map(IntGen::Base),
        2 => (-2i8..=2).prop_map(IntGen::Escape),
        1 => Just(IntGen::Min),
        1 => Just(IntGen::Max),
        1 => any::<i64>().prop_map(IntGen::Any),
    ]
}

fn text_gen() -> impl Strategy<Value = TextGen> {
    prop_oneof![
        6 => (any::<usize>(), 0u8..3).prop_map(|(i, sp)| TextGen::Known(i, sp)),
        2 => "[a-zA-Z0-9é€ ]{0,45}".prop_map(TextGen::New),
        1 => Just(TextGen::Empty),
        1 => any::<bool>().prop_map(TextGen::Max),
        1 => ("[a-z]{0,6}", 1u8..6).prop_map(|(s, k)| TextGen::Trailing(s, k)),
        1 => (1u8..4).prop_map(TextGen::Spaces),
    ]
}

fn stamp_gen() -> impl Strategy<Value = StampGen> {
    prop_oneof![
        8 => int_gen().prop_map(StampGen::Seconds),
        1 => (int_gen(), 1u8..3).prop_map(|(g, k)| StampGen::Trailing(g, k)),
        2 => any::<usize>().prop_map(StampGen::Malformed),
    ]
}

fn row_gen() -> impl Strategy<Value = RowGen> {
    (
        prop::array::uniform4(int_gen()),
        prop::array::uniform3(text_gen()),
        prop::option::weighted(0.7, int_gen()),
        prop::option::weighted(0.7, text_gen()),
        stamp_gen(),
    )
        .prop_map(|(ints, texts, opt, txt, ts)| RowGen {
            ints,
            texts,
            opt,
            txt,
            ts,
        })
}

#[derive(Clone, Debug)]
enum Step {
    Insert(Vec<RowGen>, bool),
    /// Rows picked by position among the live ones; keep the id or not.
    Update(Vec<(usize, RowGen, bool)>),
    Delete(Vec<usize>, bool),
    /// Inserts, updates and deletes, rolled back.
    Abort(Vec<RowGen>, Vec<(usize, RowGen)>, Vec<usize>),
    Compact {
        plain: bool,
        no_dictionary: bool,
    },
    Reopen,
    Crash,
}

fn step() -> impl Strategy<Value = Step> {
    let rows = |n| proptest::collection::vec(row_gen(), 1..n);
    prop_oneof![
        4 => (rows(12), any::<bool>()).prop_map(|(r, b)| Step::Insert(r, b)),
        3 => proptest::collection::vec((any::<usize>(), row_gen(), prop::bool::weighted(0.7)), 1..8)
            .prop_map(Step::Update),
        2 => (proptest::collection::vec(any::<usize>(), 1..8), any::<bool>())
            .prop_map(|(d, b)| Step::Delete(d, b)),
        1 => (
            proptest::collection::vec(row_gen(), 0..5),
            proptest::collection::vec((any::<usize>(), row_gen()), 0..5),
            proptest::collection::vec(any::<usize>(), 0..5),
        ).prop_map(|(i, u, d)| Step::Abort(i, u, d)),
        3 => (prop::bool::weighted(0.15), prop::bool::weighted(0.2))
            .prop_map(|(plain, no_dictionary)| Step::Compact { plain, no_dictionary }),
        1 => Just(Step::Reopen),
        1 => Just(Step::Crash),
    ]
}

/// Turns generators into rows, relative to the table's current encodings.
struct Ctx {
    schema: Schema,
    initial_rows: usize,
    encodings: Vec<Encoding>,
    /// Ids handed out when a generated one is taken.
    fresh: i64,
}

impl Ctx {
    fn int(&self, col: usize, g: &IntGen) -> Value {
        let ty = &self.schema.columns[col].ty;
        let (lo, span) = initial_frame(col, self.initial_rows);
        let (base, esc) = match self.encodings.get(col) {
            Some(Encoding::Offset { base, width }) => (*base as i128, escape(*width)),
            _ => (lo as i128, 255),
        };
        let (tlo, thi) = int_range(ty);
        let x = match g {
            IntGen::Narrow(k) => lo as i128 + (*k as i128 % span as i128),
            IntGen::Base(d) => base + *d as i128,
            IntGen::Escape(d) => base + esc + *d as i128,
            IntGen::Min => tlo,
            IntGen::Max => thi,
            IntGen::Any(x) => *x as i128,
        };
        int_value(ty, x)
    }

    /// A timestamp's seconds, placed like an integer.
    fn seconds(&self, g: &IntGen) -> i64 {
        let (base, esc) = match self.encodings.get(TS) {
            Some(Encoding::Timestamp { base, width }) => (*base as i128, escape(*width)),
            _ => (t0() as i128, 255),
        };
        // Years 0000 to 9999: the timestamps there are.
        let (lo, hi) = (-62_167_219_200i128, 253_402_300_799i128);
        let x = match g {
            IntGen::Narrow(k) => t0() as i128 + (*k as i128 % 3000),
            IntGen::Base(d) => base + *d as i128,
            IntGen::Escape(d) => base + esc + *d as i128,
            IntGen::Min => lo,
            IntGen::Max => hi,
            IntGen::Any(x) => lo + (*x as i128).rem_euclid(hi - lo + 1),
        };
        x.clamp(lo, hi) as i64
    }

    fn stamp(&self, g: &StampGen) -> Value {
        Value::Str(match g {
            StampGen::Seconds(g) => format_timestamp(self.seconds(g)),
            StampGen::Trailing(g, k) => {
                format!(
                    "{}{}",
                    format_timestamp(self.seconds(g)),
                    " ".repeat(*k as usize)
                )
            }
            StampGen::Malformed(i) => MALFORMED[i % MALFORMED.len()].to_string(),
        })
    }

    fn text(&self, col: usize, g: &TextGen) -> Value {
        let ty = &self.schema.columns[col].ty;
        let (DataType::Char { len } | DataType::Varchar { len }) = *ty else {
            unreachable!()
        };
        let len = len as usize;
        let known = match self.encodings.get(col) {
            Some(Encoding::Dict { values, .. }) => values.clone(),
            _ => initial_texts(col),
        };
        let s = match g {
            TextGen::Known(i, sp) => {
                format!("{}{}", known[i % known.len()], " ".repeat(*sp as usize))
            }
            TextGen::New(s) => s.clone(),
            TextGen::Empty => String::new(),
            TextGen::Max(true) if len >= 2 => {
                format!("{}{}", "é".repeat(len / 2), "x".repeat(len % 2))
            }
            TextGen::Max(_) => "m".repeat(len),
            TextGen::Trailing(s, k) => format!("{s}{}", " ".repeat(*k as usize)),
            TextGen::Spaces(k) => " ".repeat(*k as usize),
        };
        Value::Str(cut(s, len))
    }

    /// The row to write for `g` (CHARs maybe with trailing spaces), with an
    /// id that `taken` does not have (`keep`: this one).
    fn row(&mut self, g: &RowGen, keep: Option<i64>, taken: impl Fn(i64) -> bool) -> Vec<Value> {
        let mut row = vec![Value::Null; self.schema.len()];
        for (c, ig) in INT_COLS.iter().zip(&g.ints) {
            row[*c] = self.int(*c, ig);
        }
        for (c, tg) in TEXT_COLS.iter().zip(&g.texts) {
            row[*c] = self.text(*c, tg);
        }
        row[OPT] = g.opt.as_ref().map_or(Value::Null, |ig| self.int(OPT, ig));
        row[TXT] = g.txt.as_ref().map_or(Value::Null, |tg| self.text(TXT, tg));
        row[TS] = self.stamp(&g.ts);
        match keep {
            Some(id) => row[ID] = Value::Int64(id),
            None => {
                let Value::Int64(id) = row[ID] else { panic!() };
                if taken(id) {
                    while taken(self.fresh) {
                        self.fresh += 1;
                    }
                    row[ID] = Value::Int64(self.fresh);
                    self.fresh += 1;
                }
            }
        }
        row
    }
}

type Model = BTreeMap<i64, Vec<Value>>;

fn id_of(row: &[Value]) -> i64 {
    match row[ID] {
        Value::Int64(id) => id,
        ref v => panic!("id {v:?}"),
    }
}

fn key(ty: DataType, v: Value) -> Vec<u8> {
    let mut k = Vec::new();
    encode_key(&[ty], &[v], &mut k);
    k
}

/// The encodings a compaction of the model's rows chooses.
fn expected_encodings(schema: &Schema, model: &Model, o: &CompactOptions) -> Vec<Encoding> {
    if o.plain {
        return vec![];
    }
    let mut samples: Vec<ColumnSample> = schema
        .columns
        .iter()
        .map(|c| ColumnSample::new(c.ty))
        .collect();
    for row in model.values() {
        for (s, v) in samples.iter_mut().zip(row) {
            s.add(v);
        }
    }
    let e = choose(
        schema,
        &samples,
        &ChooseOptions {
            dictionary: !o.no_dictionary,
        },
    );
    if is_plain(&e) { vec![] } else { e }
}

/// Every row reads back as the model's, every way, and the database checks.
/// Returns each id's tuple.
fn verify(db: &Database, model: &Model, step: usize) -> BTreeMap<i64, Tid> {
    let t = db.table("t").unwrap();
    let schema = t.schema().clone();
    let layout = t.layout().clone();
    let mut seen: BTreeMap<i64, (Tid, Vec<Value>)> = BTreeMap::new();
    t.scan_rows(|tid, r| {
        let id = id_of(&r);
        assert!(
            seen.insert(id, (tid, r)).is_none(),
            "step {step}: id {id} twice in the heap"
        );
        Ok(())
    })
    .unwrap();
    let got: Model = seen.iter().map(|(k, (_, r))| (*k, r.clone())).collect();
    if &got != model {
        let diffs: Vec<String> = model
            .iter()
            .filter(|(k, v)| got.get(k) != Some(v))
            .map(|(k, v)| format!("id {k}: want {v:?}, got {:?}", got.get(k)))
            .chain(
                got.iter()
                    .filter(|(k, _)| !model.contains_key(k))
                    .map(|(k, v)| format!("id {k}: extra {v:?}")),
            )
            .take(6)
            .collect();
        panic!(
            "step {step}: the heap holds {} rows, the model {}; encodings {:?}; differences: {diffs:#?}",
            got.len(),
            model.len(),
            t.encodings()
        );
    }
    // Each stored tuple: well-formed, and its columns one at a time and its
    // fields read the same row.
    t.heap()
        .scan(|tid, b| {
            let mut fields = Vec::new();
            layout
                .validate(b)
                .unwrap_or_else(|e| panic!("step {step}: tuple {tid}: {e}"));
            let row = layout.decode(b, Tid::default());
            for (c, v) in row.iter().enumerate() {
                assert_eq!(
                    &layout.decode_column(b, c, Tid::default()),
                    v,
                    "step {step}: tuple {tid} column {c}"
                );
            }
            layout.fields(b, Tid::default(), &mut fields);
            let from_fields: Vec<Value> = fields
                .iter()
                .zip(&schema.columns)
                .map(|(f, c)| field_value(&c.ty, *f))
                .collect();
            assert_eq!(from_fields, row, "step {step}: tuple {tid}: fields");
            for upto in 0..=row.len() {
                layout.fields_upto(b, Tid::default(), upto, &mut fields);
                assert_eq!(fields.len(), upto, "step {step}: tuple {tid}");
                for (c, f) in fields.iter().enumerate() {
                    assert_eq!(
                        field_value(&schema.columns[c].ty, *f),
                        row[c],
                        "step {step}: tuple {tid}: fields_upto({upto}) column {c}"
                    );
                }
            }
            Ok(())
        })
        .unwrap();
    // The index on the key: each id, once, at its tuple.
    let ix = t.index("t_id").unwrap();
    for (&id, (tid, _)) in &seen {
        let tids = t
            .lookup(ix, &key(DataType::Int64, Value::Int64(id)))
            .unwrap();
        assert_eq!(tids, vec![*tid], "step {step}: lookup of id {id}");
    }
    assert!(
        t.lookup(ix, &key(DataType::Int64, Value::Int64(i64::MIN + 1)))
            .unwrap()
            .is_empty()
            || model.contains_key(&(i64::MIN + 1))
    );
    // The index on the narrow column: each value's tuples, and nothing for
    // values no row has.
    let is = t.index("t_small").unwrap();
    let mut by_small: BTreeMap<i32, BTreeSet<Tid>> = BTreeMap::new();
    for (tid, r) in seen.values() {
        let Value::Int32(s) = r[SMALL] else { panic!() };
        by_small.entry(s).or_default().insert(*tid);
    }
    for (&s, want) in &by_small {
        let got: BTreeSet<Tid> = t
            .lookup(is, &key(DataType::Int32, Value::Int32(s)))
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(&got, want, "step {step}: lookup of small {s}");
    }
    for s in [i32::MIN, i32::MAX, -1, 49, 50, 254, 255, 256, 65_535] {
        if !by_small.contains_key(&s) {
            let got = t
                .lookup(is, &key(DataType::Int32, Value::Int32(s)))
                .unwrap();
            assert!(got.is_empty(), "step {step}: small {s} found at {got:?}");
        }
    }
    assert_eq!(t.rows(), model.len() as u64, "step {step}: row count");
    let report = check_database(db, &NoProgress)
        .unwrap_or_else(|e| panic!("step {step}: check failed: {e}"));
    assert_eq!(report[0].rows, model.len() as u64);
    seen.into_iter().map(|(k, (tid, _))| (k, tid)).collect()
}

/// After a compaction: the encodings are what `choose` picks from the
/// model's values, and no value is escaped.
fn verify_compacted(db: &Database, model: &Model, o: &CompactOptions, step: usize) {
    let t = db.table("t").unwrap();
    let want = expected_encodings(t.schema(), model, o);
    assert_eq!(t.encodings(), &want[..], "step {step}: encodings");
    assert_eq!(t.layout().is_encoded(), !want.is_empty(), "step {step}");
    // Independently of `choose`: a narrow column of a compacted table is
    // encoded when its values span fewer than 255.
    if !o.plain
        && let (Some(lo), Some(hi)) = (
            model.values().map(|r| r[SMALL].as_i64().unwrap()).min(),
            model.values().map(|r| r[SMALL].as_i64().unwrap()).max(),
        )
        && hi - lo < 255
    {
        assert!(t.layout().is_encoded(), "step {step}: not encoded");
        assert_eq!(
            t.encodings()[SMALL],
            Encoding::Offset { base: lo, width: 1 },
            "step {step}"
        );
    }
    let coded: Vec<usize> = t
        .encodings()
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            matches!(
                e,
                Encoding::Offset { .. } | Encoding::Dict { .. } | Encoding::Timestamp { .. }
            )
        })
        .map(|(c, _)| c)
        .collect();
    let layout = t.layout().clone();
    t.heap()
        .scan(|tid, b| {
            let mut fields = Vec::new();
            layout.fields(b, Tid::default(), &mut fields);
            for &c in &coded {
                assert!(
                    !matches!(fields[c], Field::Raw(_)),
                    "step {step}: tuple {tid} column {c} escaped after a compaction ({:?})",
                    t.encodings()[c]
                );
            }
            Ok(())
        })
        .unwrap();
}

fn create(path: &Path, rows: usize) -> (Database, Model) {
    let db = Database::create(path, opts()).unwrap();
    let mut load = db
        .begin_create_load(
            "t",
            Schema::parse(SCHEMA).unwrap(),
            TableOptions {
                fill_factor: 1.0,
                segment_pages: 16,
            },
            vec![
                IndexSpec::new("t_id", &["id"]),
                IndexSpec::new("t_small", &["small"]),
            ],
        )
        .unwrap();
    let mut model = Model::new();
    for i in 0..rows {
        let r = initial_row(i, rows);
        load.append(&r).unwrap();
        model.insert(id_of(&r), r);
    }
    load.commit(&NoProgress).unwrap();
    (db, model)
}

fn pick(model: &Model, i: usize) -> Option<i64> {
    (!model.is_empty()).then(|| *model.keys().nth(i % model.len()).unwrap())
}

fn run(initial: usize, steps: &[Step]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let (mut db, mut model) = create(&path, initial);
    let schema = Schema::parse(SCHEMA).unwrap();
    let o = CompactOptions::default();
    db.compact("t", &o, &NoProgress).unwrap();
    verify_compacted(&db, &model, &o, 0);
    let first = db.table("t").unwrap().encodings().to_vec();
    assert!(matches!(first[TS], Encoding::Timestamp { .. }), "{first:?}");
    let mut tids = verify(&db, &model, 0);
    let mut ctx = Ctx {
        schema: schema.clone(),
        initial_rows: initial,
        encodings: db.table("t").unwrap().encodings().to_vec(),
        fresh: 1 << 40,
    };
    for (n, s) in steps.iter().enumerate() {
        let n = n + 1;
        ctx.encodings = db.table("t").unwrap().encodings().to_vec();
        match s {
            Step::Insert(gens, batched) => {
                let txn = db.begin_write().unwrap();
                let t = txn.table("t").unwrap();
                let mut next = model.clone();
                let mut rows = Vec::new();
                for g in gens {
                    let r = ctx.row(g, None, |id| next.contains_key(&id));
                    next.insert(id_of(&r), normalize_row(&schema, &r));
                    rows.push(r);
                }
                if *batched {
                    t.insert_rows(&rows).unwrap();
                } else {
                    for r in &rows {
                        t.insert_row(r).unwrap();
                    }
                }
                txn.commit().unwrap();
                model = next;
            }
            Step::Update(changes) => {
                let txn = db.begin_write().unwrap();
                let t = txn.table("t").unwrap();
                let mut next = model.clone();
                let mut touched = BTreeSet::new();
                for (i, g, keep) in changes {
                    let Some(id) = pick(&model, *i) else { break };
                    if !touched.insert(id) || !next.contains_key(&id) {
                        continue;
                    }
                    next.remove(&id);
                    let r = ctx.row(g, keep.then_some(id), |x| next.contains_key(&x));
                    touched.insert(id_of(&r));
                    t.update_row(tids[&id], &r).unwrap();
                    next.insert(id_of(&r), normalize_row(&schema, &r));
                }
                txn.commit().unwrap();
                model = next;
            }
            Step::Delete(picks, batched) => {
                let txn = db.begin_write().unwrap();
                let t = txn.table("t").unwrap();
                let mut gone = BTreeSet::new();
                for i in picks {
                    if let Some(id) = pick(&model, *i) {
                        gone.insert(id);
                    }
                }
                if *batched {
                    let ts: Vec<Tid> = gone.iter().map(|id| tids[id]).collect();
                    t.delete_rows(&ts).unwrap();
                } else {
                    for id in &gone {
                        t.delete_row(tids[id]).unwrap();
                    }
                }
                txn.commit().unwrap();
                for id in gone {
                    model.remove(&id);
                }
            }
            Step::Abort(ins, upd, del) => {
                let txn = db.begin_write().unwrap();
                let t = txn.table("t").unwrap();
                let mut next = model.clone();
                let mut touched = BTreeSet::new();
                for i in del {
                    if let Some(id) = pick(&model, *i)
                        && touched.insert(id)
                    {
                        t.delete_row(tids[&id]).unwrap();
                        next.remove(&id);
                    }
                }
                for (i, g) in upd {
                    if let Some(id) = pick(&model, *i)
                        && touched.insert(id)
                    {
                        next.remove(&id);
                        let r = ctx.row(g, None, |x| next.contains_key(&x));
                        t.update_row(tids[&id], &r).unwrap();
                        next.insert(id_of(&r), r);
                    }
                }
                for g in ins {
                    let r = ctx.row(g, None, |x| next.contains_key(&x));
                    t.insert_row(&r).unwrap();
                    next.insert(id_of(&r), r);
                }
                drop(t);
                drop(txn);
            }
            Step::Compact {
                plain,
                no_dictionary,
            } => {
                let o = CompactOptions {
                    plain: *plain,
                    no_dictionary: *no_dictionary,
                    semantic_id: None,
                };
                let rep = db.compact("t", &o, &NoProgress).unwrap();
                assert_eq!(rep.rows, model.len() as u64, "step {n}: {rep:?}");
                verify_compacted(&db, &model, &o, n);
            }
            Step::Reopen => {
                drop(db);
                db = Database::open(&path, opts()).unwrap();
            }
            Step::Crash => {
                db.crash();
                db = Database::open(&path, opts()).unwrap();
            }
        }
        tids = verify(&db, &model, n);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(24)))]

    #[test]
    fn rows_match_the_model_through_escapes_compactions_and_crashes(
        initial in prop_oneof![1usize..40, 200usize..400],
        steps in proptest::collection::vec(step(), 1..20),
    ) {
        run(initial, &steps);
    }
}

// ---------------------------------------------------------------------------
// RowLayout alone.

/// Schemas for the layout tests: with NULLs (a null bitmap), without (fixed
/// offsets and the run-by-run shape walk), text longer than a one-byte length.
const LAYOUT_SCHEMAS: [&str; 3] = [
    SCHEMA,
    "a INT, b BIGINT, c DATE, e DECIMAL(18,4), f CHAR(3), g VARCHAR(300), h CHAR(300), \
     i BOOL, j DOUBLE, k VARCHAR(10), l INT, m CHAR(1)",
    "x CHAR(4) NULL, y INT NULL, z BIGINT NULL, w VARCHAR(2) NULL, s CHAR(14) NULL",
];

fn random_text(rng: &mut SmallRng, len: usize) -> String {
    const ALPHABET: &[&str] = &["a", "b", "z", "é", "€", "😀", " ", "\0", "Q"];
    let n = match rng.random_range(0..4) {
        0 => 0,
        1 => len,
        _ => rng.random_range(0..=len.min(12)),
    };
    let mut s = String::new();
    while s.len() < n {
        s.push_str(ALPHABET[rng.random_range(0..ALPHABET.len())]);
    }
    cut(s, len)
}

/// An encoding `ty` may have.
fn random_encoding(rng: &mut SmallRng, ty: &DataType) -> Encoding {
    match ty {
        DataType::Int32 | DataType::Date | DataType::Int64 | DataType::Decimal { .. } => {
            if rng.random_bool(0.25) {
                return Encoding::Plain;
            }
            let (lo, hi) = int_range(ty);
            let max_width = if matches!(ty, DataType::Int32 | DataType::Date) {
                3
            } else {
                7
            };
            let width = rng.random_range(1..=max_width);
            let base = match rng.random_range(0..5) {
                0 => lo,
                1 => hi - rng.random_range(0..300),
                2 => 0,
                3 => rng.random_range(-1000..1000),
                _ => rng.random_range(lo..=hi),
            };
            Encoding::Offset {
                base: base as i64,
                width,
            }
        }
        DataType::Char { len } | DataType::Varchar { len } => {
            let len = *len as usize;
            match rng.random_range(0..4) {
                0 => Encoding::Plain,
                1 if len <= 255 => Encoding::Short,
                2 if len >= 14 => Encoding::Timestamp {
                    base: rng.random_range(STAMP_LO..STAMP_HI),
                    width: rng.random_range(1..=8),
                },
                _ => {
                    let width = if rng.random_bool(0.8) { 1 } else { 2 };
                    let mut values = BTreeSet::new();
                    for _ in 0..rng.random_range(1..12) {
                        let mut s = random_text(rng, len);
                        if matches!(ty, DataType::Char { .. }) {
                            s = s.trim_end_matches(' ').to_string();
                        }
                        values.insert(s);
                    }
                    Encoding::Dict {
                        width,
                        values: values.into_iter().collect(),
                    }
                }
            }
        }
        _ => Encoding::Plain,
    }
}

/// Seconds of the first and the last timestamp (years 0000 to 9999).
const STAMP_LO: i64 = -62_167_219_200;
const STAMP_HI: i64 = 253_402_300_799;

/// A value for a column of type `ty` stored in `enc`: often one the encoding
/// holds (its edges included), often one it must escape.
fn random_value(rng: &mut SmallRng, ty: &DataType, enc: &Encoding, nullable: bool) -> Value {
    if nullable && rng.random_bool(0.2) {
        return Value::Null;
    }
    match ty {
        DataType::Int32 | DataType::Date | DataType::Int64 | DataType::Decimal { .. } => {
            let (lo, hi) = int_range(ty);
            let (base, esc) = match enc {
                Encoding::Offset { base, width } => (*base as i128, escape(*width)),
                _ => (0, 255),
            };
            let x = match rng.random_range(0..10) {
                0 => base,
                1 => base + esc - 1,
                2 => base - 1,
                3 => base + esc,
                4 => base + esc + 1,
                5 => lo,
                6 => hi,
                7 => rng.random_range(lo..=hi),
                _ => base + rng.random_range(0..esc),
            };
            int_value(ty, x)
        }
        DataType::Char { len } | DataType::Varchar { len } => {
            let len = *len as usize;
            let s = match enc {
                Encoding::Dict { values, .. } if rng.random_bool(0.6) => {
                    values[rng.random_range(0..values.len())].clone()
                }
                Encoding::Timestamp { base, width } if rng.random_bool(0.7) => {
                    let (base, esc) = (*base as i128, escape(*width));
                    let x = match rng.random_range(0..7) {
                        0 => base,
                        1 => base + esc - 1,
                        2 => base - 1,
                        3 => base + esc,
                        4 => STAMP_LO as i128,
                        5 => STAMP_HI as i128,
                        _ => base + rng.random_range(0..esc.min(1 << 34)),
                    };
                    format_timestamp(x.clamp(STAMP_LO as i128, STAMP_HI as i128) as i64)
                }
                Encoding::Timestamp { .. } => {
                    MALFORMED[rng.random_range(0..MALFORMED.len())].to_string()
                }
                _ => random_text(rng, len),
            };
            let s = if rng.random_bool(0.2) {
                format!("{s}{}", " ".repeat(rng.random_range(1..4)))
            } else {
                s
            };
            Value::Str(cut(s, len))
        }
        DataType::Bool => Value::Bool(rng.random()),
        // Stored plain (8 bytes); the model draws no TIMESTAMP column type,
        // the arm only keeps the match whole.
        DataType::Timestamp => Value::Timestamp(rng.random()),
        DataType::Float64 => match rng.random_range(0..4) {
            0 => Value::Float64(-0.0),
            1 => Value::Float64(f64::MAX),
            _ => Value::Float64(rng.random_range(-1e9..1e9)),
        },
    }
}

fn random_layout(rng: &mut SmallRng) -> (Schema, Vec<Encoding>) {
    let schema = Schema::parse(LAYOUT_SCHEMAS[rng.random_range(0..LAYOUT_SCHEMAS.len())]).unwrap();
    let encs = schema
        .columns
        .iter()
        .map(|c| random_encoding(rng, &c.ty))
        .collect();
    (schema, encs)
}

fn little_endian(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(a)
}

/// What a tuple that `validate` accepts must allow: decoding it all, a
/// column at a time and as fields, without a panic, with the same values.
fn decodes_consistently(layout: &RowLayout, schema: &Schema, b: &[u8]) -> Result<(), String> {
    let row = layout.decode(b, Tid::default());
    for (c, v) in row.iter().enumerate() {
        let one = layout.decode_column(b, c, Tid::default());
        if !same(&one, v) {
            return Err(format!("column {c}: decode_column {one:?}, decode {v:?}"));
        }
    }
    let mut fields = Vec::new();
    layout.fields(b, Tid::default(), &mut fields);
    if fields.len() != schema.len() {
        return Err(format!("{} fields", fields.len()));
    }
    Ok(())
}

#[test]
fn encoded_rows_read_back_as_plain_ones() {
    let mut rng = SmallRng::seed_from_u64(0x7e5);
    let (mut rows, mut escaped, mut garbled_ok) = (0, 0, 0);
    for _ in 0..400 {
        let (schema, encs) = random_layout(&mut rng);
        let plain = RowLayout::new(&schema);
        let enc = RowLayout::encoded(&schema, &encs)
            .unwrap_or_else(|e| panic!("{encs:?} for {schema}: {e}"));
        assert_eq!(enc.is_encoded(), !is_plain(&encs));
        let bitmap = if schema.columns.iter().any(|c| c.nullable) {
            schema.len().div_ceil(8)
        } else {
            0
        };
        for _ in 0..40 {
            let row: Vec<Value> = schema
                .columns
                .iter()
                .zip(&encs)
                .map(|(c, e)| random_value(&mut rng, &c.ty, e, c.nullable))
                .collect();
            let want = normalize_row(&schema, &row);
            let (mut pb, mut eb) = (Vec::new(), Vec::new());
            plain.encode(&row, &mut pb, &schema).unwrap();
            enc.encode(&row, &mut eb, &schema)
                .unwrap_or_else(|e| panic!("{row:?} in {encs:?}: {e}"));
            let ctx = || format!("row {row:?}\nencodings {encs:?}\nbytes {eb:?}");
            rows += 1;
            assert!(pb.len() <= schema.max_row_size());
            // Whole rows, columns, fields: the same from both layouts.
            assert_eq!(plain.decode(&pb, Tid::default()), want, "{}", ctx());
            assert_eq!(enc.decode(&eb, Tid::default()), want, "{}", ctx());
            let mut fields = Vec::new();
            for (l, b) in [(&plain, &pb), (&enc, &eb)] {
                for (c, v) in want.iter().enumerate() {
                    assert_eq!(
                        &l.decode_column(b, c, Tid::default()),
                        v,
                        "column {c}: {}",
                        ctx()
                    );
                }
                l.fields(b, Tid::default(), &mut fields);
                let got: Vec<Value> = fields
                    .iter()
                    .zip(&schema.columns)
                    .map(|(f, c)| field_value(&c.ty, *f))
                    .collect();
                assert_eq!(got, want, "fields: {}", ctx());
                // The first columns only (a scan that wants no later one),
                // escaped values among them or not.
                let mut first = Vec::new();
                for upto in 0..=want.len() {
                    l.fields_upto(b, Tid::default(), upto, &mut first);
                    let got: Vec<Value> = first
                        .iter()
                        .zip(&schema.columns)
                        .map(|(f, c)| field_value(&c.ty, *f))
                        .collect();
                    assert_eq!(got, want[..upto], "fields_upto({upto}): {}", ctx());
                }
                l.validate(b).unwrap_or_else(|e| panic!("{e}: {}", ctx()));
                // The tuple is exactly its fields' bytes.
                let sum: usize = row
                    .iter()
                    .enumerate()
                    .map(|(c, v)| l.field_bytes(c, v))
                    .sum();
                assert_eq!(bitmap + sum, b.len(), "field_bytes: {}", ctx());
            }
            // Columns at fixed places read in place.
            for (c, v) in want.iter().enumerate() {
                let ty = &schema.columns[c].ty;
                if let Some(o) = enc.fixed_offset(c) {
                    assert_eq!(&plain_at(ty, &eb[o..]), v, "fixed_offset {c}: {}", ctx());
                }
                let code_at = enc.fixed_column(c).filter(|_| !enc.has_null(&eb));
                if let Some(FixedColumn {
                    offset: o,
                    kind:
                        FixedKind::Int {
                            width: w,
                            base,
                            escape: esc,
                        },
                }) = code_at
                {
                    let code = little_endian(&eb[o..o + w]);
                    let d = v.as_i64().unwrap() as i128 - base as i128;
                    let want_code = if (0..esc as i128).contains(&d) {
                        d as u64
                    } else {
                        escaped += 1;
                        esc
                    };
                    assert_eq!(code, want_code, "fixed_column {c}: {}", ctx());
                }
            }
            // Cut short, one byte too many: an error, never a panic.
            for n in 0..eb.len() {
                assert!(
                    enc.validate(&eb[..n]).is_err(),
                    "a tuple cut to {n} bytes validated: {}",
                    ctx()
                );
            }
            let mut longer = eb.clone();
            longer.push(rng.random());
            assert!(enc.validate(&longer).is_err(), "{}", ctx());
            // Garbled: whatever validates decodes.
            for _ in 0..8 {
                let mut g = eb.clone();
                if g.is_empty() {
                    break;
                }
                for _ in 0..rng.random_range(1..4) {
                    let i = rng.random_range(0..g.len());
                    g[i] ^= 1 << rng.random_range(0..8);
                }
                if enc.validate(&g).is_ok() {
                    garbled_ok += 1;
                    decodes_consistently(&enc, &schema, &g)
                        .unwrap_or_else(|e| panic!("garbled {g:?}: {e}: {}", ctx()));
                }
            }
        }
    }
    assert!(escaped > 1000, "{escaped} escaped codes in {rows} rows");
    assert!(garbled_ok > 100, "{garbled_ok}");
}

#[test]
fn encodings_that_do_not_suit_their_column_are_refused() {
    let s = Schema::parse("a INT, b VARCHAR(300), c CHAR(3), d DOUBLE").unwrap();
    let plain = || vec![Encoding::Plain; 4];
    let mut bad = Vec::new();
    let mut e = plain();
    e[0] = Encoding::Offset { base: 0, width: 4 };
    bad.push(e);
    let mut e = plain();
    e[1] = Encoding::Short;
    bad.push(e);
    let mut e = plain();
    e[2] = Encoding::Dict {
        width: 1,
        values: vec!["toolong".into()],
    };
    bad.push(e);
    let mut e = plain();
    e[2] = Encoding::Dict {
        width: 1,
        values: (0..255).map(|i| format!("{i}")).collect(),
    };
    bad.push(e);
    let mut e = plain();
    e[3] = Encoding::Offset { base: 0, width: 1 };
    bad.push(e);
    let mut e = plain();
    e[0] = Encoding::Short;
    bad.push(e);
    bad.push(vec![Encoding::Short]);
    for e in bad {
        assert!(RowLayout::encoded(&s, &e).is_err(), "{e:?} accepted");
    }
}

fn layout_of(seed: u64) -> (Schema, Vec<Encoding>, RowLayout) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let (schema, encs) = random_layout(&mut rng);
    let l = RowLayout::encoded(&schema, &encs).unwrap();
    (schema, encs, l)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(2000)))]

    #[test]
    fn validate_never_panics_on_random_bytes(
        seed in 0u64..64,
        bytes in proptest::collection::vec(any::<u8>(), 0..120),
    ) {
        let (schema, _, l) = layout_of(seed);
        if l.validate(&bytes).is_ok() {
            decodes_consistently(&l, &schema, &bytes).map_err(TestCaseError::fail)?;
        }
        let p = RowLayout::new(&schema);
        if p.validate(&bytes).is_ok() {
            decodes_consistently(&p, &schema, &bytes).map_err(TestCaseError::fail)?;
        }
    }

    #[test]
    fn validate_never_panics_on_garbled_tuples(
        seed in 0u64..64,
        row_seed in any::<u64>(),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        cut_to in proptest::option::of(any::<usize>()),
    ) {
        let (schema, encs, l) = layout_of(seed);
        let mut rng = SmallRng::seed_from_u64(row_seed);
        let row: Vec<Value> = schema
            .columns
            .iter()
            .zip(&encs)
            .map(|(c, e)| random_value(&mut rng, &c.ty, e, c.nullable))
            .collect();
        let mut b = Vec::new();
        l.encode(&row, &mut b, &schema).unwrap();
        prop_assert!(l.validate(&b).is_ok());
        if let Some(n) = cut_to {
            let n = n % (b.len() + 1);
            b.truncate(n);
        }
        if !b.is_empty() {
            for (i, x) in flips {
                let n = b.len();
                b[i % n] ^= x;
            }
        }
        if l.validate(&b).is_ok() {
            decodes_consistently(&l, &schema, &b).map_err(TestCaseError::fail)?;
        }
    }
}
