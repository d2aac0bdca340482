//! Fuzzing SQL: any statement text, from random bytes to random sequences of
//! SQL words, names and literals, either runs or is refused with an error;
//! it never panics or aborts, the database stays consistent (`strata check`),
//! and afterwards the session still answers a known query with the same rows
//! unless a write (INSERT, UPDATE, DELETE, DROP) ran. Case counts are bounded
//! for CI (`PROPTEST_CASES` raises them; `scripts/fuzz.sh` runs longer).

use crate::common;

use std::sync::Arc;

use proptest::prelude::*;
use strata_sql::SqlSession;
use strata_storage::db::{IndexSpec, NoProgress};
use strata_storage::row::Value;
use strata_storage::util::proptest_cases;

/// Whether `sql`, which ran, may have changed table `t`'s rows.
fn writes(sql: &str) -> bool {
    let sql = sql.to_lowercase();
    ["insert", "update", "delete", "drop"]
        .iter()
        .any(|w| sql.contains(w))
}

fn session() -> (tempfile::TempDir, SqlSession) {
    let (dir, db) = common::empty_db();
    let rows = (0..200).map(|i| {
        vec![
            Value::Int32(i % 17),
            if i % 5 == 0 {
                Value::Null
            } else {
                Value::Int64(i as i64 * 3)
            },
            if i % 7 == 0 {
                Value::Null
            } else {
                Value::Str(format!("v{}", i % 11))
            },
            Value::Date(9000 + i),
            Value::Decimal(i as i64 * 101),
        ]
    });
    common::load(
        &db,
        "t",
        "a INT, b BIGINT NULL, s VARCHAR(8) NULL, d DATE, k DECIMAL(8,2)",
        vec![IndexSpec::new("t_a", &["a"])],
        rows,
    );
    let s = SqlSession::new(Arc::new(db)).unwrap();
    (dir, s)
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop_oneof![
            Just("select"), Just("from"), Just("where"), Just("group by"), Just("order by"),
            Just("having"), Just("limit"), Just("join"), Just("on"), Just("union"),
            Just("with"), Just("as"), Just("and"), Just("or"), Just("not"), Just("in"),
            Just("between"), Just("like"), Just("is null"), Just("case"), Just("when"),
            Just("then"), Just("else"), Just("end"), Just("distinct"), Just("exists"),
            Just("explain"), Just("analyze"), Just("set"), Just("show"), Just("values"),
            Just("cast"), Just("interval"), Just("over"), Just("partition by"),
            Just("insert into"), Just("delete"), Just("update"), Just("create table"),
            Just("create index"),
        ].prop_map(str::to_string),
        6 => prop_oneof![
            Just("t"), Just("a"), Just("b"), Just("s"), Just("d"), Just("k"), Just("t.a"),
            Just("x"), Just("nope"), Just("*"), Just("count(*)"), Just("sum(k)"),
            Just("avg(b)"), Just("min(s)"), Just("max(d)"), Just("substr(s, 1, 2)"),
            Just("extract(year from d)"), Just("strata.access_path"),
        ].prop_map(str::to_string),
        6 => prop_oneof![
            Just("0"), Just("1"), Just("-1"), Just("2147483648"), Just("99999999999999999999999"),
            Just("1.5"), Just("1e400"), Just("'x'"), Just("''"), Just("'it''s'"),
            Just("date '1995-01-01'"), Just("date '1995-02-30'"), Just("null"), Just("true"),
            Just("'"), Just("\""), Just("0.01"), Just("-0.0"),
        ].prop_map(str::to_string),
        6 => prop_oneof![
            Just("="), Just("<>"), Just("<"), Just(">="), Just("+"), Just("-"), Just("*"),
            Just("/"), Just("%"), Just("||"), Just("("), Just(")"), Just(","), Just(";"),
            Just("::"), Just("."),
        ].prop_map(str::to_string),
        1 => any::<String>(),
    ]
}

fn statement() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => proptest::collection::vec(word(), 1..24).prop_map(|w| w.join(" ")),
        // A plausible query with random pieces in its slots.
        8 => (word(), word(), word(), word(), word()).prop_map(|(p, q, r, s, u)| {
            format!("select {p}, {q} from t where {r} {s} {u} order by 1 limit 5")
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..80)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

fn answer(s: &SqlSession) -> Vec<String> {
    let r = s
        .execute("select a, count(*) from t where a < 4 group by a order by a")
        .unwrap();
    strata_sql::shell::format::render(strata_sql::Format::Csv, &r.schema, &r.batches)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(256)))]

    #[test]
    fn any_statement_runs_or_is_refused(stmts in proptest::collection::vec(statement(), 1..4)) {
        let (_dir, s) = session();
        let before = answer(&s);
        let mut wrote = false;
        for sql in &stmts {
            match s.execute(sql) {
                Ok(_) => wrote |= writes(sql),
                Err(e) => prop_assert!(!e.to_string().trim().is_empty(), "empty error for {}", sql),
            }
        }
        let check = strata_storage::maintenance::check::check_database(&s.database(), &NoProgress);
        prop_assert!(check.is_ok(), "{:?}", check);
        if !wrote {
            prop_assert_eq!(answer(&s), before);
        }
    }
}
