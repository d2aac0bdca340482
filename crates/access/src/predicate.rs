//! Conjunctive predicates over one table: `c2 >= 0 AND c2 < 500`,
//! `l_shipdate BETWEEN '1994-01-01' AND '1994-12-31'`, `c3 = 7`.
//!
//! Every access path evaluates the whole predicate on every tuple it produces
//! (so a residual conjunct on another column is always honoured); the conjuncts on
//! the index's key column also give the key range the index is scanned over.

use std::cmp::Ordering;
use std::ops::Bound;

use strata_storage::row::encoding::address_of;
use strata_storage::row::{DataType, FixedKind, RowLayout, Schema, Tid, Value, encode_key_value};

use crate::error::{AccessError, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// Whether `a op b` holds, given how `a` compares to `b`.
    pub fn holds(self, o: Ordering) -> bool {
        match self {
            CmpOp::Eq => o == Ordering::Equal,
            CmpOp::Ne => o != Ordering::Equal,
            CmpOp::Lt => o == Ordering::Less,
            CmpOp::Le => o != Ordering::Greater,
            CmpOp::Gt => o == Ordering::Greater,
            CmpOp::Ge => o != Ordering::Less,
        }
    }
}

/// `column op literal`.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub column: usize,
    pub op: CmpOp,
    pub value: Value,
}

/// A conjunction of comparisons (an empty one is `true`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Predicate {
    pub conjuncts: Vec<Comparison>,
}

/// Compares two non-NULL values of the same column type.
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Null, _) | (_, Value::Null) => None,
        (Value::Float64(x), Value::Float64(y)) => x.partial_cmp(y),
        (Value::Str(x), Value::Str(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        _ => Some(a.as_i64()?.cmp(&b.as_i64()?)),
    }
}

impl Predicate {
    pub fn all() -> Predicate {
        Predicate::default()
    }

    /// Parses `col op literal [AND ...]` (ops `= <> != < <= > >=`, and
    /// `col BETWEEN a AND b`). Literals are typed by their column: numbers, and
    /// quoted text or dates.
    pub fn parse(schema: &Schema, text: &str) -> Result<Predicate> {
        let err = |reason: String| AccessError::Predicate {
            text: text.to_string(),
            reason,
        };
        let tokens = tokenize(text).map_err(err)?;
        let mut conjuncts = Vec::new();
        let mut i = 0;
        let expect_and = |i: usize, tokens: &[String]| -> std::result::Result<(), String> {
            match tokens.get(i) {
                Some(t) if t.eq_ignore_ascii_case("and") => Ok(()),
                Some(t) => Err(format!("expected AND, found '{t}'")),
                None => Err("unexpected end".into()),
            }
        };
        while i < tokens.len() {
            let col_name = &tokens[i];
            let column = schema
                .index_of(col_name)
                .ok_or_else(|| err(format!("unknown column '{col_name}'")))?;
            let ty = schema.columns[column].ty;
            let lit = |t: Option<&String>| -> std::result::Result<Value, String> {
                let t = t.ok_or("missing value")?;
                let raw = t
                    .strip_prefix('\'')
                    .and_then(|x| x.strip_suffix('\''))
                    .unwrap_or(t);
                ty.parse_value(raw)
                    .map_err(|e| format!("column '{col_name}': {e}"))
            };
            let op = tokens
                .get(i + 1)
                .ok_or_else(|| err(format!("'{col_name}' needs a comparison")))?;
            if op.eq_ignore_ascii_case("between") {
                let lo = lit(tokens.get(i + 2)).map_err(err)?;
                expect_and(i + 3, &tokens).map_err(err)?;
                let hi = lit(tokens.get(i + 4)).map_err(err)?;
                conjuncts.push(Comparison {
                    column,
                    op: CmpOp::Ge,
                    value: lo,
                });
                conjuncts.push(Comparison {
                    column,
                    op: CmpOp::Le,
                    value: hi,
                });
                i += 5;
            } else {
                let op = match op.as_str() {
                    "=" | "==" => CmpOp::Eq,
                    "<>" | "!=" => CmpOp::Ne,
                    "<" => CmpOp::Lt,
                    "<=" => CmpOp::Le,
                    ">" => CmpOp::Gt,
                    ">=" => CmpOp::Ge,
                    other => return Err(err(format!("unknown operator '{other}'"))),
                };
                let value = lit(tokens.get(i + 2)).map_err(err)?;
                conjuncts.push(Comparison { column, op, value });
                i += 3;
            }
            if i < tokens.len() {
                expect_and(i, &tokens).map_err(err)?;
                i += 1;
                if i == tokens.len() {
                    return Err(err("nothing after AND".into()));
                }
            }
        }
        Ok(Predicate { conjuncts })
    }

    /// Whether the stored tuple at `tid` satisfies every conjunct (NULL never does).
    pub fn eval(&self, layout: &RowLayout, tuple: &[u8], tid: Tid) -> bool {
        self.conjuncts.iter().all(|c| {
            let v = layout.decode_column(tuple, c.column, tid);
            compare(&v, &c.value).is_some_and(|o| c.op.holds(o))
        })
    }

    /// A form of the predicate specialised to a row layout: integer-like
    /// conjuncts on fixed-offset columns compare raw bytes without decoding the
    /// row (every scan evaluates the predicate on every tuple it looks at). In
    /// a table with nullable columns the offsets hold for rows without NULLs;
    /// a row with one is evaluated as [`Predicate::eval`] does.
    pub fn compile(&self, schema: &Schema, layout: &RowLayout) -> CompiledPredicate {
        let checks = self
            .conjuncts
            .iter()
            .map(|c| {
                let ty = schema.columns[c.column].ty;
                if layout.is_address(c.column)
                    && let Some(v) = c.value.as_i64()
                {
                    // A semantic id: compared with the tuple's address.
                    return Check::Address { op: c.op, v };
                }
                // At the column's place in a row without NULLs (a row with
                // one is compared by `generic`, see `eval`).
                let fixed = layout.fixed_column(c.column);
                match (fixed.map(|f| (f.offset, f.kind)), ty, c.value.as_i64()) {
                    (
                        Some((offset, FixedKind::Plain(4))),
                        DataType::Int32 | DataType::Date,
                        Some(v),
                    ) => Check::I32 {
                        offset,
                        op: c.op,
                        v,
                    },
                    (
                        Some((offset, FixedKind::Plain(8))),
                        DataType::Int64 | DataType::Decimal { .. } | DataType::Timestamp,
                        Some(v),
                    ) => Check::I64 {
                        offset,
                        op: c.op,
                        v,
                    },
                    // A frame-of-reference column (types as hints): the code
                    // in place, unless it is the escape.
                    (
                        Some((
                            offset,
                            FixedKind::Int {
                                width,
                                base,
                                escape,
                            },
                        )),
                        _,
                        Some(v),
                    ) => Check::Narrow {
                        offset,
                        width,
                        base,
                        escape,
                        op: c.op,
                        v,
                        generic: c.clone(),
                    },
                    _ => Check::Generic(c.clone()),
                }
            })
            .collect();
        CompiledPredicate {
            checks,
            generic: self.clone(),
            layout: layout.clone(),
        }
    }

    /// The range of `column` the conjuncts allow (`<>` does not narrow it).
    pub fn range_on(&self, column: usize) -> KeyRange {
        let mut r = KeyRange::all();
        for c in self.conjuncts.iter().filter(|c| c.column == column) {
            let v = c.value.clone();
            match c.op {
                CmpOp::Eq => {
                    r.tighten_lower(Bound::Included(v.clone()));
                    r.tighten_upper(Bound::Included(v));
                }
                CmpOp::Gt => r.tighten_lower(Bound::Excluded(v)),
                CmpOp::Ge => r.tighten_lower(Bound::Included(v)),
                CmpOp::Lt => r.tighten_upper(Bound::Excluded(v)),
                CmpOp::Le => r.tighten_upper(Bound::Included(v)),
                CmpOp::Ne => {}
            }
        }
        r
    }

    /// Columns the predicate mentions, in first-mention order.
    pub fn columns(&self) -> Vec<usize> {
        let mut v = Vec::new();
        for c in &self.conjuncts {
            if !v.contains(&c.column) {
                v.push(c.column);
            }
        }
        v
    }
}

#[derive(Clone, Debug)]
enum Check {
    I32 {
        offset: usize,
        op: CmpOp,
        v: i64,
    },
    I64 {
        offset: usize,
        op: CmpOp,
        v: i64,
    },
    Narrow {
        offset: usize,
        width: usize,
        base: i64,
        escape: u64,
        op: CmpOp,
        v: i64,
        generic: Comparison,
    },
    Address {
        op: CmpOp,
        v: i64,
    },
    Generic(Comparison),
}

/// A [`Predicate`] specialised to one row layout ([`Predicate::compile`]).
#[derive(Clone, Debug)]
pub struct CompiledPredicate {
    checks: Vec<Check>,
    /// For a row with a NULL, whose later columns are not at their place.
    generic: Predicate,
    layout: RowLayout,
}

impl CompiledPredicate {
    /// Same answer as [`Predicate::eval`].
    #[inline]
    pub fn eval(&self, tuple: &[u8], tid: Tid) -> bool {
        if self.layout.has_null(tuple) {
            return self.generic.eval(&self.layout, tuple, tid);
        }
        self.checks.iter().all(|c| match c {
            Check::I32 { offset, op, v } => {
                let x = i32::from_le_bytes(tuple[*offset..*offset + 4].try_into().unwrap()) as i64;
                op.holds(x.cmp(v))
            }
            Check::I64 { offset, op, v } => {
                let x = i64::from_le_bytes(tuple[*offset..*offset + 8].try_into().unwrap());
                op.holds(x.cmp(v))
            }
            Check::Narrow {
                offset,
                width,
                base,
                escape,
                op,
                v,
                generic,
            } => {
                let mut b = [0u8; 8];
                b[..*width].copy_from_slice(&tuple[*offset..*offset + *width]);
                let code = u64::from_le_bytes(b);
                if code == *escape {
                    let x = self.layout.decode_column(tuple, generic.column, tid);
                    compare(&x, &generic.value).is_some_and(|o| generic.op.holds(o))
                } else {
                    op.holds(base.wrapping_add(code as i64).cmp(v))
                }
            }
            Check::Address { op, v } => op.holds(address_of(tid).cmp(v)),
            Check::Generic(c) => {
                let v = self.layout.decode_column(tuple, c.column, tid);
                compare(&v, &c.value).is_some_and(|o| c.op.holds(o))
            }
        })
    }
}

fn tokenize(text: &str) -> std::result::Result<Vec<String>, String> {
    let mut out = Vec::new();
    let cs: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '\'' {
            let start = i;
            i += 1;
            while i < cs.len() && cs[i] != '\'' {
                i += 1;
            }
            if i == cs.len() {
                return Err("unterminated quoted value".into());
            }
            i += 1;
            out.push(cs[start..i].iter().collect());
        } else if "<>=!".contains(c) {
            let start = i;
            while i < cs.len() && "<>=!".contains(cs[i]) {
                i += 1;
            }
            out.push(cs[start..i].iter().collect());
        } else {
            let start = i;
            while i < cs.len() && !cs[i].is_whitespace() && !"<>=!'".contains(cs[i]) {
                i += 1;
            }
            out.push(cs[start..i].iter().collect());
        }
    }
    Ok(out)
}

/// A range of values of one column.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyRange {
    pub lower: Bound<Value>,
    pub upper: Bound<Value>,
}

impl KeyRange {
    pub fn all() -> KeyRange {
        KeyRange {
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }

    fn tighten_lower(&mut self, b: Bound<Value>) {
        if is_tighter(&b, &self.lower, Ordering::Greater) {
            self.lower = b;
        }
    }

    fn tighten_upper(&mut self, b: Bound<Value>) {
        if is_tighter(&b, &self.upper, Ordering::Less) {
            self.upper = b;
        }
    }

    /// Encoded key-prefix bounds for a B+-tree whose first key column has type `ty`.
    pub fn encoded(&self, ty: &DataType) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        let enc = |b: &Bound<Value>| match b {
            Bound::Unbounded => Bound::Unbounded,
            Bound::Included(v) | Bound::Excluded(v) => {
                let mut k = Vec::new();
                encode_key_value(ty, v, &mut k);
                if matches!(b, Bound::Included(_)) {
                    Bound::Included(k)
                } else {
                    Bound::Excluded(k)
                }
            }
        };
        // NULLs sort first in the index and never satisfy a comparison: an
        // unbounded lower end still starts after them.
        let lower = match &self.lower {
            Bound::Unbounded => Bound::Excluded(vec![0u8]),
            b => enc(b),
        };
        (lower, enc(&self.upper))
    }
}

/// Whether bound `b` is tighter than `current`: further inward, which is
/// where `compare(b, current)` is `inward` (`Greater` for a lower bound, `Less`
/// for an upper one), or at the same value but exclusive.
fn is_tighter(b: &Bound<Value>, current: &Bound<Value>, inward: Ordering) -> bool {
    match (current, b) {
        (Bound::Unbounded, _) => true,
        (_, Bound::Unbounded) => false,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(x) | Bound::Excluded(x)) => {
            match compare(x, a) {
                Some(Ordering::Equal) => matches!(b, Bound::Excluded(_)),
                Some(o) => o == inward,
                None => false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        Schema::parse("c1 INT, c2 INT, d DATE, s VARCHAR(10) NULL").unwrap()
    }

    #[test]
    fn parses_and_evaluates() {
        let s = schema();
        let layout = RowLayout::new(&s);
        let p = Predicate::parse(
            &s,
            "c2 >= 0 AND c2 < 500 and d between '1994-01-01' AND '1994-12-31'",
        )
        .unwrap();
        assert_eq!(p.conjuncts.len(), 4);
        let row = |c2: i32, d: &str| {
            let mut b = Vec::new();
            let d = DataType::Date.parse_value(d).unwrap();
            layout
                .encode(
                    &[Value::Int32(1), Value::Int32(c2), d, Value::Null],
                    &mut b,
                    &s,
                )
                .unwrap();
            b
        };
        assert!(p.eval(&layout, &row(10, "1994-06-01"), Tid::default()));
        assert!(!p.eval(&layout, &row(500, "1994-06-01"), Tid::default()));
        assert!(!p.eval(&layout, &row(10, "1995-01-01"), Tid::default()));
        let r = p.range_on(1);
        assert_eq!(r.lower, Bound::Included(Value::Int32(0)));
        assert_eq!(r.upper, Bound::Excluded(Value::Int32(500)));
        let p2 = Predicate::parse(&s, "c2 < 100 AND c2 <= 50 AND c2 > 3 AND c2 >= 3").unwrap();
        let r = p2.range_on(1);
        assert_eq!(
            (r.lower, r.upper),
            (
                Bound::Excluded(Value::Int32(3)),
                Bound::Included(Value::Int32(50))
            )
        );
        // NULL never satisfies a comparison.
        let ps = Predicate::parse(&s, "s <> 'x'").unwrap();
        assert!(!ps.eval(&layout, &row(1, "1994-01-01"), Tid::default()));
    }

    proptest::proptest! {
        /// The compiled form answers exactly like the interpreted one.
        #[test]
        fn compiled_matches_interpreted(c1 in -5i32..5, c2 in -5i32..5, d in -3i32..3, k in -5i32..5, op in 0usize..6) {
            let s = Schema::parse("c1 INT, c2 INT, d DATE, s CHAR(4)").unwrap();
            let layout = RowLayout::new(&s);
            let ops = ["=", "<>", "<", "<=", ">", ">="];
            let text = format!("c2 {} {k} AND c1 >= -3 AND d < '1970-01-02' AND s <> 'b'", ops[op]);
            let p = Predicate::parse(&s, &text).unwrap();
            let mut b = Vec::new();
            layout.encode(&[Value::Int32(c1), Value::Int32(c2), Value::Date(d), Value::Str("a".into())], &mut b, &s).unwrap();
            proptest::prop_assert_eq!(p.compile(&s, &layout).eval(&b, Tid::default()), p.eval(&layout, &b, Tid::default()));
        }
    }

    proptest::proptest! {
        /// A semantic id compares as its tuple's address, compiled or not,
        /// and the model is `page · 2^16 + slot` written out here.
        #[test]
        fn a_semantic_id_compares_as_the_address(page in 0u32..5, slot in 0u16..4, k in -2i64..400_000, op in 0usize..6, c in -3i32..3) {
            use strata_storage::row::encoding::Encoding;
            let s = Schema::parse("id BIGINT, c INT").unwrap();
            let layout = RowLayout::encoded(&s, &[Encoding::Address, Encoding::Plain]).unwrap();
            let ops = ["=", "<>", "<", "<=", ">", ">="];
            let text = format!("id {} {k} AND c >= -1", ops[op]);
            let p = Predicate::parse(&s, &text).unwrap();
            let mut b = Vec::new();
            layout.encode(&[Value::Int64(-7), Value::Int32(c)], &mut b, &s).unwrap();
            proptest::prop_assert_eq!(b.len(), 4, "the id takes no bytes");
            let tid = Tid::new(page, slot);
            let id = page as i64 * 65536 + slot as i64;
            let want = [id == k, id != k, id < k, id <= k, id > k, id >= k][op] && c >= -1;
            proptest::prop_assert_eq!(p.compile(&s, &layout).eval(&b, tid), want);
            proptest::prop_assert_eq!(p.eval(&layout, &b, tid), want);
            proptest::prop_assert_eq!(layout.decode(&b, tid), vec![Value::Int64(id), Value::Int32(c)]);
        }
    }

    #[test]
    fn bad_predicates_say_what_is_wrong() {
        let s = schema();
        let e = |t: &str| Predicate::parse(&s, t).unwrap_err().to_string();
        assert!(e("c9 = 1").contains("unknown column 'c9'"));
        assert!(e("c2 ~ 1").contains("unknown operator '~'"));
        assert!(e("c2 = abc").contains("'abc' is not a 32-bit integer"));
        assert!(e("c2 = 1 OR c2 = 2").contains("expected AND, found 'OR'"));
        assert!(e("c2 = 1 AND").contains("nothing after AND"));
        assert!(e("s = 'abc").contains("unterminated"));
        assert!(e("c2").contains("needs a comparison"));
    }
}
