//! Reading units with their bytes fetched ahead on worker threads gives the
//! batches reading the units in turn gives, in the same order: whole
//! scans, lookups of single rows spread over every row group, a reader
//! that stops early, a reader that fails, and a fetch that fails. It reads
//! ahead only where it should: not when the cache holds every unit, and
//! not on a modeled device.

use super::*;
use strata_columns::read::Unit;

/// Five row groups.
const ROWS: i64 = 600_000;

fn columnar(dir: &std::path::Path) -> (Database, Vec<Vec<Value>>) {
    let db = Database::create(&dir.join("db"), opts()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(23);
    let model: Vec<Vec<Value>> = (0..ROWS).map(|n| row(n, &mut rng)).collect();
    load(&db, &model);
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    (db, model)
}

/// The rows `read_units` gives of `units`, every column, and how it ended.
fn read_rows(part: &ColumnPart, units: &[Unit]) -> (Vec<Vec<Value>>, Result<(), String>) {
    let types = schema().types();
    let all: Vec<usize> = (0..types.len()).collect();
    let mut out = Vec::new();
    let end = part.read_units(units, &all, |b| {
        out.extend(batch_rows(&b, &types));
        Ok(true)
    });
    (out, end.map_err(|e| e.to_string()))
}

/// The rows `read_units` gives of `units`, every column.
fn read(part: &ColumnPart, units: &[Unit]) -> Vec<Vec<Value>> {
    let (rows, end) = read_rows(part, units);
    end.unwrap();
    rows
}

#[test]
fn gives_the_units_rows_in_order_and_only_reads_ahead_when_it_must() {
    let dir = tempfile::tempdir().unwrap();
    let (db, model) = columnar(dir.path());
    let t = db.table("t").unwrap();
    let part = ColumnPart::of(&db, &t).unwrap().unwrap();
    let all: Vec<usize> = (0..t.schema().len()).collect();
    let units = part.plan_all().units;
    assert_eq!(units.len(), 5, "{} row groups", units.len());
    let cold = part.ahead(&units, &all);
    assert!(cold.workers >= 2 && cold.units >= 2, "{cold:?}");
    assert_eq!(read(&part, &units), model);
    // Everything is in the cache now: nothing to fetch ahead.
    assert_eq!(part.ahead(&units, &all).workers, 0);
    assert_eq!(read(&part, &units), model);

    // Single rows spread over every row group, as an index lookup reads them.
    let positions: Vec<u64> = (0..ROWS as u64).step_by(10_007).collect();
    let fresh = tempfile::tempdir().unwrap();
    let (db2, _) = columnar(fresh.path());
    let part2 = ColumnPart::of(&db2, &db2.table("t").unwrap())
        .unwrap()
        .unwrap();
    let lookup = ColumnPart::plan_at(part2.plan_all(), &positions);
    assert_eq!(lookup.units.len(), 5);
    assert!(part2.ahead(&lookup.units, &all).workers >= 2);
    let want: Vec<Vec<Value>> = positions
        .iter()
        .map(|&p| model[p as usize].clone())
        .collect();
    assert_eq!(read(&part2, &lookup.units), want);
}

#[test]
fn a_reader_that_stops_or_fails_ends_the_read() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = columnar(dir.path());
    let t = db.table("t").unwrap();
    let all: Vec<usize> = (0..t.schema().len()).collect();
    // Stopping after the third batch: exactly three batches, and no
    // worker left behind (the call returns).
    let part = ColumnPart::of(&db, &t).unwrap().unwrap();
    let units = part.plan_all().units;
    assert!(part.ahead(&units, &all).workers >= 2);
    let mut batches = 0;
    part.read_units(&units, &all, |_| {
        batches += 1;
        Ok(batches < 3)
    })
    .unwrap();
    assert_eq!(batches, 3);
    // An error from the reader is the read's error.
    let part = ColumnPart::of(&db, &t).unwrap().unwrap();
    let mut batches = 0;
    let err = part
        .read_units(&units, &all, |_| {
            batches += 1;
            if batches == 2 {
                return Err(strata_columns::ColumnsError::Convert {
                    table: "t".into(),
                    reason: "the reader gave up".into(),
                });
            }
            Ok(true)
        })
        .unwrap_err();
    assert!(err.to_string().contains("the reader gave up"), "{err}");
    assert_eq!(batches, 2);
}

/// A column file cut short after the scan opened it: the fetch of a unit
/// past the cut fails on a worker, and the read returns that error naming
/// the file, with the units before it given whole.
#[test]
fn a_fetch_that_fails_is_the_reads_error() {
    let dir = tempfile::tempdir().unwrap();
    let (db, model) = columnar(dir.path());
    let t = db.table("t").unwrap();
    let part = ColumnPart::of(&db, &t).unwrap().unwrap();
    let all: Vec<usize> = (0..t.schema().len()).collect();
    let units = part.plan_all().units;
    assert!(part.ahead(&units, &all).workers >= 2);
    let file = dir.path().join("db").join(part.file_name(0));
    // Cut the file in the middle of its fourth row group's bytes.
    let cut = part.unit_bytes(&units[0], &all) * 3 + part.unit_bytes(&units[3], &all) / 2;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(cut)
        .unwrap();
    let (got, end) = read_rows(&part, &units);
    let err = end.unwrap_err();
    let name = part.file_name(0);
    assert!(err.to_string().contains(name), "{err} names {name}");
    assert!(
        got.len() < model.len(),
        "{} rows read past the cut",
        got.len()
    );
    assert_eq!(
        got[..],
        model[..got.len()],
        "the rows before the cut are whole"
    );
}

#[test]
fn a_modeled_device_reads_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (db, model) = columnar(dir.path());
    drop(db);
    let db = Database::open(&dir.path().join("db"), opts().device("ssd").unwrap()).unwrap();
    let t = db.table("t").unwrap();
    let part = ColumnPart::of(&db, &t).unwrap().unwrap();
    let all: Vec<usize> = (0..t.schema().len()).collect();
    let units = part.plan_all().units;
    assert_eq!(part.ahead(&units, &all).workers, 0);
    assert_eq!(read(&part, &units), model);
}
