//! Opening a column file reads its footer and page index in one request:
//! the catalog records how many bytes at the file's end hold them
//! (`ColumnFile::tail`). A catalog entry without it (a file written before
//! it was recorded), or with a wrong one, still opens the file, in a few
//! requests more, and reads the same rows.

use super::*;

/// Three row groups.
const ROWS: i64 = 300_000;

/// Every row of `part`, every column.
fn all_rows(part: &ColumnPart) -> Vec<Vec<Value>> {
    let types = schema().types();
    let all: Vec<usize> = (0..types.len()).collect();
    let mut out = Vec::new();
    part.read_all(&all, |b| {
        out.extend(batch_rows(&b, &types));
        Ok(true)
    })
    .unwrap();
    out
}

#[test]
fn a_files_footer_and_page_index_come_in_one_request() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(&dir.path().join("db"), opts()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(29);
    let model: Vec<Vec<Value>> = (0..ROWS).map(|n| row(n, &mut rng)).collect();
    load(&db, &model);
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    let table = db.table("t").unwrap();
    let def = table.columns().unwrap().clone();
    assert_eq!(def.files.len(), 1);
    let file = &def.files[0];
    // The page index and the footer: more than the footer's 8-byte tail,
    // less than the file.
    assert!(file.tail > 8 && file.tail < file.bytes, "{file:?}");

    let open = |def: &strata_storage::catalog::ColumnsDef| {
        let part = ColumnPart::open(db.dir(), def, table.schema(), false).unwrap();
        let requests = part.counters().requests();
        (requests, all_rows(&part))
    };
    let (requests, rows) = open(&def);
    assert_eq!(requests, 1, "one request for the footer and the page index");
    assert_eq!(rows, model);

    // Not recorded: the file's last bytes (`GUESS_TAIL`), then what its
    // footer says is missing.
    let mut unknown = def.clone();
    unknown.files[0].tail = 0;
    let (requests, rows) = open(&unknown);
    if file.tail <= strata_columns::file::GUESS_TAIL {
        assert_eq!(requests, 1, "{file:?}");
    } else {
        assert!((2..=3).contains(&requests), "{requests} requests, {file:?}");
    }
    assert_eq!(rows, model);

    // Recorded wrong, too short or longer than the file: still the file's
    // footer and page index, and its rows.
    for tail in [9, file.tail - 1, file.bytes * 2] {
        let mut wrong = def.clone();
        wrong.files[0].tail = tail;
        let (requests, rows) = open(&wrong);
        assert!(requests <= 3, "tail {tail}: {requests} requests");
        assert_eq!(rows, model, "tail {tail}");
    }
}
