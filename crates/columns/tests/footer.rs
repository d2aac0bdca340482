//! Opening a column file reads its footer and offset index in one request:
//! the catalog records how many bytes at the file's end hold them
//! (`ColumnFile::offsets_tail`); the column index (each page's min and max)
//! before them is read in one request more, once, by the first plan that
//! prunes by page. A catalog entry without `offsets_tail` opens the whole
//! tail in one request (`ColumnFile::tail`); one without either (a file
//! written before they were recorded), or with wrong ones, still opens the
//! file, in a few requests more, and reads and prunes the same rows.

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
fn a_files_footer_and_offset_index_come_in_one_request_and_its_min_max_once_a_plan_prunes() {
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
    assert_eq!(
        requests, 1,
        "one request for the footer and the offset index"
    );
    assert_eq!(rows, model);
    // The offset index and the footer: the end of the tail, without the
    // column index before them.
    assert!(
        file.offsets_tail > 8 && file.offsets_tail < file.tail,
        "{file:?}"
    );

    // A plan that prunes by page reads the column index, once.
    let conjuncts = [Comparison {
        column: 0,
        op: CmpOp::Lt,
        value: Value::Int64(5_000),
    }];
    let pruned = |def: &strata_storage::catalog::ColumnsDef| {
        let part = ColumnPart::open(db.dir(), def, table.schema(), false).unwrap();
        let opened = part.counters().requests();
        let bytes = part
            .counters()
            .bytes
            .load(std::sync::atomic::Ordering::Relaxed);
        let first = part.plan(&conjuncts).unwrap();
        let read = part.counters().requests() - opened;
        let again = part.plan(&conjuncts).unwrap();
        assert_eq!(part.counters().requests() - opened, read, "read once");
        assert_eq!(first.units.len(), again.units.len());
        (opened, bytes, read, first)
    };
    let (opened, offsets_bytes, read, plan) = pruned(&def);
    assert_eq!((opened, read), (1, 1), "the open, then the column index");
    assert_eq!(offsets_bytes, file.offsets_tail);
    // Pages pruned: `k` ascends, so 5,000 rows are the first pages of the
    // first row group.
    assert_eq!(plan.units.len(), 1);
    assert!(plan.rows() < 8_192 * 2, "{} rows", plan.rows());
    // Not recorded: the whole tail in the open's one request, and the same
    // pages pruned with nothing more read.
    let mut whole = def.clone();
    whole.files[0].offsets_tail = 0;
    let (opened, whole_bytes, read, whole_plan) = pruned(&whole);
    assert_eq!((opened, read), (1, 0));
    assert_eq!(whole_bytes, file.tail);
    assert_eq!(whole_plan.rows(), plan.rows());
    assert_eq!(
        all_rows(&ColumnPart::open(db.dir(), &whole, table.schema(), false).unwrap()),
        model
    );

    // Not recorded: the file's last bytes (`GUESS_TAIL`), then what its
    // footer says is missing.
    let mut unknown = def.clone();
    unknown.files[0].tail = 0;
    unknown.files[0].offsets_tail = 0;
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
        wrong.files[0].offsets_tail = 0;
        let (requests, rows) = open(&wrong);
        assert!(requests <= 3, "tail {tail}: {requests} requests");
        assert_eq!(rows, model, "tail {tail}");
    }
    for offsets_tail in [9, file.offsets_tail - 1, file.bytes * 2] {
        let mut wrong = def.clone();
        wrong.files[0].offsets_tail = offsets_tail;
        let (requests, rows) = open(&wrong);
        assert!(
            requests <= 3,
            "offsets_tail {offsets_tail}: {requests} requests"
        );
        assert_eq!(rows, model, "offsets_tail {offsets_tail}");
        let (_, _, _, p) = pruned(&wrong);
        assert_eq!(p.rows(), plan.rows(), "offsets_tail {offsets_tail}");
    }
}
