//! Fuzzing the catalog: whatever `catalog.json` says (bytes, or a valid
//! catalog with values replaced or removed anywhere in it), opening the
//! database, opening its tables, scanning and checking them each either work
//! or fail with an error, never a panic; and no file outside the database
//! directory is touched or created. Case counts are bounded for CI (`PROPTEST_CASES`
//! raises them; `scripts/fuzz.sh` runs longer).

use std::path::Path;

use proptest::prelude::*;
use serde_json::Value as Json;
use strata_storage::db::{NoProgress, TableOptions};
use strata_storage::maintenance::check::check_database;
use strata_storage::row::{Schema, Value};
use strata_storage::util::proptest_cases;
use strata_storage::{Database, DbOptions, IndexSpec};

fn opts() -> DbOptions {
    DbOptions {
        direct_io: false,
        buffer_pool_bytes: 2 << 20,
        ..DbOptions::default()
    }
}

/// A database with two tables (one with two indexes), its catalog as JSON.
fn sample(dir: &Path) -> Json {
    let db = Database::create(dir, opts()).unwrap();
    let mut l = db
        .begin_create_load(
            "t",
            Schema::parse("a INT, s VARCHAR(10) NULL, d DATE").unwrap(),
            TableOptions::default(),
            vec![
                IndexSpec::new("t_a", &["a"]),
                IndexSpec::new("t_sd", &["s", "d"]),
            ],
        )
        .unwrap();
    for i in 0..500 {
        l.append(&[
            Value::Int32(i % 37),
            if i % 3 == 0 {
                Value::Null
            } else {
                Value::Str(format!("s{i}"))
            },
            Value::Date(i),
        ])
        .unwrap();
    }
    l.commit(&NoProgress).unwrap();
    db.create_table(
        "u",
        Schema::parse("x BIGINT").unwrap(),
        TableOptions::default(),
    )
    .unwrap();
    drop(db);
    serde_json::from_slice(&std::fs::read(dir.join("catalog.json")).unwrap()).unwrap()
}

fn replacement() -> impl Strategy<Value = Option<Json>> {
    prop_oneof![
        Just(None),
        Just(Some(Json::Null)),
        Just(Some(Json::Bool(true))),
        Just(Some(serde_json::json!(0))),
        Just(Some(serde_json::json!(-1))),
        Just(Some(serde_json::json!(1))),
        Just(Some(serde_json::json!(u64::MAX))),
        Just(Some(serde_json::json!(1e300))),
        Just(Some(serde_json::json!(0.0000001))),
        Just(Some(serde_json::json!(65535))),
        Just(Some(serde_json::json!(""))),
        Just(Some(serde_json::json!("../../outside"))),
        // An absolute path: `@OUTER@` becomes the test's own directory.
        Just(Some(serde_json::json!("@OUTER@/abs"))),
        Just(Some(serde_json::json!("data/t_a.idx.2"))),
        Just(Some(serde_json::json!("INT"))),
        Just(Some(serde_json::json!("CHAR(0)"))),
        Just(Some(serde_json::json!("VARCHAR(65535)"))),
        Just(Some(serde_json::json!("DECIMAL(40,50)"))),
        Just(Some(serde_json::json!([]))),
        Just(Some(serde_json::json!({}))),
        "[a-z_]{0,8}".prop_map(|s| Some(Json::String(s))),
        any::<i64>().prop_map(|v| Some(serde_json::json!(v))),
    ]
}

/// Replaces (or removes, `None`) the value at a path chosen by `picks`.
fn mutate(node: &mut Json, picks: &[usize], with: Option<Json>) {
    let Some((&p, rest)) = picks.split_first() else {
        if let Some(v) = with {
            *node = v;
        }
        return;
    };
    let nested = |v: &Json| !rest.is_empty() && matches!(v, Json::Object(_) | Json::Array(_));
    match node {
        Json::Object(m) if !m.is_empty() => {
            let key = m.keys().nth(p % m.len()).unwrap().clone();
            if nested(&m[&key]) {
                mutate(m.get_mut(&key).unwrap(), rest, with);
            } else if let Some(v) = with {
                m.insert(key, v);
            } else {
                m.remove(&key);
            }
        }
        Json::Array(a) if !a.is_empty() => {
            let i = p % a.len();
            if nested(&a[i]) {
                mutate(&mut a[i], rest, with);
            } else if let Some(v) = with {
                a[i] = v;
            } else {
                a.remove(i);
            }
        }
        _ => {
            if let Some(v) = with {
                *node = v;
            }
        }
    }
}

/// Opens the database and uses everything in it; every step may fail, none
/// may panic.
fn exercise(dir: &Path) {
    let db = match Database::open(dir, opts()) {
        Ok(db) => db,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    for name in db.table_names() {
        let Ok(t) = db.table(&name) else { continue };
        let mut n = 0u64;
        let _ = t.scan_rows(|_, _| {
            n += 1;
            Ok(())
        });
        if let Ok(txn) = db.begin_write()
            && t.insert_row(&[Value::Int32(1), Value::Null, Value::Date(3)])
                .is_ok()
        {
            let _ = txn.commit();
        }
    }
    if let Err(e) = check_database(&db, &NoProgress) {
        assert!(!e.to_string().is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(128)))]

    #[test]
    fn any_mutated_catalog_opens_or_fails_clearly(
        mutations in proptest::collection::vec(
            (proptest::collection::vec(any::<usize>(), 1..9), replacement()),
            1..4,
        )
    ) {
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("db");
        let mut cat = sample(&dir);
        // A file beside the database that nothing may change or remove.
        let outside = outer.path().join("outside");
        std::fs::write(&outside, b"keep me").unwrap();
        for (picks, with) in mutations {
            mutate(&mut cat, &picks, with);
        }
        let text = serde_json::to_string(&cat)
            .unwrap()
            .replace("@OUTER@", &outer.path().display().to_string());
        std::fs::write(dir.join("catalog.json"), text).unwrap();
        exercise(&dir);
        prop_assert_eq!(std::fs::read(&outside).unwrap(), b"keep me".to_vec());
        let mut beside: Vec<String> = std::fs::read_dir(outer.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        beside.sort();
        prop_assert_eq!(beside, vec!["db".to_string(), "outside".to_string()]);
    }

    #[test]
    fn any_catalog_bytes_open_or_fail_clearly(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("db");
        sample(&dir);
        std::fs::write(dir.join("catalog.json"), &bytes).unwrap();
        exercise(&dir);
    }
}

/// Values strata never writes are refused when the catalog is read, with
/// the table and field at fault.
#[test]
fn hostile_values_are_refused_naming_the_table_and_field() {
    let cases: Vec<(Vec<&str>, Json, &str)> = vec![
        (
            vec!["tables", "t", "heap_file"],
            serde_json::json!("../../outside"),
            "not a plain name",
        ),
        (
            vec!["tables", "t", "heap_file"],
            serde_json::json!("/etc/hostname"),
            "not a plain name",
        ),
        (
            vec!["tables", "u", "heap_file"],
            serde_json::json!("data/t.heap.1"),
            "used twice",
        ),
        (
            vec!["tables", "t", "segment_pages"],
            serde_json::json!(0),
            "segment size",
        ),
        (
            vec!["tables", "t", "fill_factor"],
            serde_json::json!(0.0),
            "fill factor",
        ),
        (
            vec!["tables", "t", "name"],
            serde_json::json!("zz"),
            "named 'zz'",
        ),
        (
            vec!["tables", "t", "schema", "columns", "1", "len"],
            serde_json::json!(0),
            "column 's'",
        ),
        (
            vec!["tables", "t", "indexes", "0", "columns", "0"],
            serde_json::json!("nope"),
            "no column 'nope'",
        ),
        (
            vec!["tables", "t", "indexes", "1", "name"],
            serde_json::json!("T_A"),
            "appears twice",
        ),
        (
            vec!["tables", "t", "indexes", "0", "leaf_fill"],
            serde_json::json!(7),
            "leaf fill",
        ),
    ];
    for (path, val, want) in cases {
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("db");
        let mut cat = sample(&dir);
        let mut n = &mut cat;
        for k in &path[..path.len() - 1] {
            n = match k.parse::<usize>() {
                Ok(i) => &mut n[i],
                Err(_) => &mut n[*k],
            };
        }
        let last = path[path.len() - 1];
        match last.parse::<usize>() {
            Ok(i) => n[i] = val.clone(),
            Err(_) => n[last] = val.clone(),
        }
        std::fs::write(dir.join("catalog.json"), serde_json::to_vec(&cat).unwrap()).unwrap();
        let e = match Database::open(&dir, opts()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{path:?} = {val} was accepted"),
        };
        assert!(
            e.contains("catalog.json") && e.contains(want),
            "{path:?} = {val}: {e}"
        );
        let table = if path[1] == "u" { "'u'" } else { "'t'" };
        assert!(e.contains(table), "{path:?} = {val}: {e}");
    }
}
