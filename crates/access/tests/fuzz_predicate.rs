//! Fuzzing the predicate parser (`strata scan --where`): any text either
//! parses or is refused with an error quoting it, never a panic; and what
//! parses from generated conjunctions answers like a model that evaluates the
//! same conjuncts on decoded values, both interpreted and compiled, on rows of
//! every column type with NULLs, stored plain and in narrow encodings (types
//! as hints) whose frames and dictionaries miss some values. Case counts are bounded for CI
//! (`PROPTEST_CASES` raises them; `scripts/fuzz.sh` runs longer).

use std::cmp::Ordering;

use proptest::prelude::*;
use strata_access::Predicate;
use strata_storage::row::encoding::Encoding;
use strata_storage::row::{FixedKind, RowLayout, Schema, Tid, Value};
use strata_storage::util::proptest_cases;

const SCHEMA: &str = "a INT, b BIGINT NULL, d DATE, s VARCHAR(6) NULL, c CHAR(3), f DOUBLE NULL, k DECIMAL(8,2), t BOOL";

fn schema() -> Schema {
    Schema::parse(SCHEMA).unwrap()
}

/// The same columns, none nullable: with the narrow encodings below every
/// column has a fixed offset, so compiled predicates compare codes in place.
const SCHEMA_NOT_NULL: &str =
    "a INT, b BIGINT, d DATE, s VARCHAR(6), c CHAR(3), f DOUBLE, k DECIMAL(8,2), t BOOL";

/// Narrow encodings (types as hints) whose frames and dictionaries miss some
/// of the generated values, so that escapes are common; `short_c`: CHAR c
/// unpadded instead of in a dictionary.
fn narrow(short_c: bool) -> Vec<Encoding> {
    let off = |base: i64| Encoding::Offset { base, width: 1 };
    let dict = |v: &[&str]| Encoding::Dict {
        width: 1,
        values: v.iter().map(|s| s.to_string()).collect(),
    };
    vec![
        off(-1),
        off(0),
        off(18_001),
        dict(&["a", "ab"]),
        if short_c {
            Encoding::Short
        } else {
            dict(&["", "a", "ba"])
        },
        Encoding::Plain,
        // -300..300 over a 1-byte frame from -100: codes up to 254, the rest
        // (and 155, whose code would be the escape) escaped.
        off(-100),
        Encoding::Plain,
    ]
}

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_string()),
        Just("B".to_string()),
        Just("nope".to_string()),
        Just("d".to_string()),
        Just("s".to_string()),
        Just("f".to_string()),
        Just("k".to_string()),
        Just("t".to_string()),
        Just("=".to_string()),
        Just("<>".to_string()),
        Just("!=".to_string()),
        Just("<".to_string()),
        Just(">=".to_string()),
        Just("=>".to_string()),
        Just("AND".to_string()),
        Just("and".to_string()),
        Just("or".to_string()),
        Just("BETWEEN".to_string()),
        Just("'".to_string()),
        Just("''".to_string()),
        Just("'x''y'".to_string()),
        Just("'2020-02-30'".to_string()),
        Just("'1999-12-31'".to_string()),
        Just("99999999999999999999".to_string()),
        Just("-2147483648".to_string()),
        Just("1.005".to_string()),
        Just("NaN".to_string()),
        Just("true".to_string()),
        Just("(".to_string()),
        "[a-z0-9'<>=!.-]{1,6}",
        any::<String>(),
    ]
}

/// Text of random tokens, with or without spaces between them.
fn any_text() -> impl Strategy<Value = String> {
    (proptest::collection::vec(token(), 0..12), any::<bool>())
        .prop_map(|(t, spaced)| t.join(if spaced { " " } else { "" }))
}

#[derive(Clone, Debug)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Between(Value),
}

/// A literal of column `col`'s type, and its SQL text.
fn literal(col: usize) -> BoxedStrategy<(Value, String)> {
    match col {
        0 => (-3i32..3)
            .prop_map(|v| (Value::Int32(v), v.to_string()))
            .boxed(),
        1 => (-3i64..3)
            .prop_map(|v| (Value::Int64(v), v.to_string()))
            .boxed(),
        2 => (0i32..3)
            .prop_map(|v| {
                let (y, m, dd) = strata_storage::row::civil_from_days(18000 + v);
                (Value::Date(18000 + v), format!("'{y:04}-{m:02}-{dd:02}'"))
            })
            .boxed(),
        3 => "[ab]{0,3}"
            .prop_map(|s| (Value::Str(s.clone()), format!("'{s}'")))
            .boxed(),
        4 => "[ab]{0,3}"
            .prop_map(|s| (Value::Str(s.clone()), format!("'{s}'")))
            .boxed(),
        5 => (-2i32..2)
            .prop_map(|v| {
                (
                    Value::Float64(v as f64 / 2.0),
                    format!("{}", v as f64 / 2.0),
                )
            })
            .boxed(),
        6 => (-300i64..300)
            .prop_map(|v| {
                let sign = if v < 0 { "-" } else { "" };
                (
                    Value::Decimal(v),
                    format!("{sign}{}.{:02}", v.abs() / 100, v.abs() % 100),
                )
            })
            .boxed(),
        _ => any::<bool>()
            .prop_map(|b| (Value::Bool(b), b.to_string()))
            .boxed(),
    }
}

const NAMES: [&str; 8] = ["a", "b", "d", "s", "c", "f", "k", "t"];

/// One conjunct: column, operator, literal; and its text.
fn conjunct() -> impl Strategy<Value = (usize, Op, Value, String)> {
    (0usize..8, 0usize..7).prop_flat_map(|(col, op)| {
        (literal(col), literal(col)).prop_map(move |((v, vt), (w, wt))| {
            let name = NAMES[col];
            let (o, sym) = match op {
                0 => (Op::Eq, "="),
                1 => (Op::Ne, "<>"),
                2 => (Op::Lt, "<"),
                3 => (Op::Le, "<="),
                4 => (Op::Gt, ">"),
                5 => (Op::Ge, ">="),
                _ => {
                    return (
                        col,
                        Op::Between(w),
                        v,
                        format!("{name} BETWEEN {vt} AND {wt}"),
                    );
                }
            };
            (col, o, v, format!("{name} {sym} {vt}"))
        })
    })
}

fn row() -> impl Strategy<Value = Vec<Value>> {
    let nullable = |col: usize| {
        prop_oneof![3 => literal(col).prop_map(|(v, _)| v), 1 => Just(Value::Null)].boxed()
    };
    let plain = |col: usize| literal(col).prop_map(|(v, _)| v).boxed();
    (
        plain(0),
        nullable(1),
        plain(2),
        nullable(3),
        plain(4),
        nullable(5),
        plain(6),
        plain(7),
    )
        .prop_map(|(a, b, d, s, c, f, k, t)| vec![a, b, d, s, c, f, k, t])
}

/// The model: SQL comparison of two non-NULL values of one type; NULL is
/// unknown. Written here, not taken from the engine.
fn model_cmp(x: &Value, y: &Value) -> Option<Ordering> {
    match (x, y) {
        (Value::Null, _) | (_, Value::Null) => None,
        (Value::Int32(a), Value::Int32(b)) | (Value::Date(a), Value::Date(b)) => Some(a.cmp(b)),
        (Value::Int64(a), Value::Int64(b)) | (Value::Decimal(a), Value::Decimal(b)) => {
            Some(a.cmp(b))
        }
        (Value::Float64(a), Value::Float64(b)) => a.partial_cmp(b),
        (Value::Str(a), Value::Str(b)) => Some(a.cmp(b)),
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        _ => panic!("the generator mixed types: {x:?} {y:?}"),
    }
}

fn model(row: &[Value], conjuncts: &[(usize, Op, Value, String)]) -> bool {
    conjuncts.iter().all(|(col, op, v, _)| {
        let x = &row[*col];
        let Some(o) = model_cmp(x, v) else {
            return false;
        };
        match op {
            Op::Eq => o == Ordering::Equal,
            Op::Ne => o != Ordering::Equal,
            Op::Lt => o == Ordering::Less,
            Op::Le => o != Ordering::Greater,
            Op::Gt => o == Ordering::Greater,
            Op::Ge => o != Ordering::Less,
            Op::Between(hi) => {
                o != Ordering::Less && model_cmp(x, hi).is_some_and(|h| h != Ordering::Greater)
            }
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(512)))]

    #[test]
    fn any_text_parses_or_is_refused_with_the_text(text in any_text()) {
        let s = schema();
        match Predicate::parse(&s, &text) {
            Ok(p) => {
                let layout = RowLayout::new(&s);
                let _ = p.compile(&s, &layout);
                let _ = p.columns();
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains(text.trim()) || text.trim().is_empty(), "{}", msg);
            }
        }
    }

    #[test]
    fn generated_conjunctions_answer_like_the_model(
        conjuncts in proptest::collection::vec(conjunct(), 1..4),
        rows in proptest::collection::vec(row(), 1..16),
    ) {
        let s = schema();
        let text = conjuncts.iter().map(|c| c.3.clone()).collect::<Vec<_>>().join(" AND ");
        let p = Predicate::parse(&s, &text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let nn = Schema::parse(SCHEMA_NOT_NULL).unwrap();
        let p_nn = Predicate::parse(&nn, &text).unwrap_or_else(|e| panic!("{text}: {e}"));
        // Plain, narrow with NULLs, and narrow at fixed offsets.
        let layouts = [
            (&s, &p, RowLayout::new(&s), false),
            (&s, &p, RowLayout::encoded(&s, &narrow(true)).unwrap(), false),
            (&nn, &p_nn, RowLayout::encoded(&nn, &narrow(false)).unwrap(), true),
        ];
        prop_assert!(
            layouts[2].2.fixed_column(6).is_some_and(|f| matches!(f.kind, FixedKind::Int { .. })),
            "k compares in place"
        );
        for (schema, p, layout, not_null) in &layouts {
            let compiled = p.compile(schema, layout);
            for r in &rows {
                let mut r = r.clone();
                if *not_null {
                    for (v, fill) in r.iter_mut().zip([
                        Value::Int32(0), Value::Int64(0), Value::Date(18000),
                        Value::Str(String::new()), Value::Str(String::new()),
                        Value::Float64(0.0), Value::Decimal(0), Value::Bool(false),
                    ]) {
                        if v.is_null() {
                            *v = fill;
                        }
                    }
                }
                let mut tuple = Vec::new();
                layout.encode(&r, &mut tuple, schema).unwrap();
                prop_assert_eq!(layout.decode(&tuple, Tid::default()), r.clone());
                let want = model(&r, &conjuncts);
                let how = if layout.is_encoded() { "encoded" } else { "plain" };
                prop_assert_eq!(p.eval(layout, &tuple, Tid::default()), want, "{} on {:?} ({})", text, r, how);
                prop_assert_eq!(compiled.eval(&tuple, Tid::default()), want, "{} on {:?} (compiled, {})", text, r, how);
            }
        }
    }
}
