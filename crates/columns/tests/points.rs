//! Point reads (`points.rs`): rows spread over the table, as an index
//! lookup reads them, come out as the model has them, of every type and
//! with NULLs, whichever columns are asked; the second read of the same
//! rows decodes nothing and reads nothing, and a read of whole row groups
//! is not a point read.

use super::*;
use strata_columns::points::SLICE_ROWS;

/// Three row groups, the last one short.
const ROWS: i64 = 300_000;

#[test]
fn point_reads_give_the_model_s_rows_and_decode_each_slice_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(&dir.path().join("db"), opts()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(31);
    let model: Vec<Vec<Value>> = (0..ROWS).map(|n| row(n, &mut rng)).collect();
    load(&db, &model);
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    let t = db.table("t").unwrap();
    let scan = ColumnPart::of(&db, &t).unwrap().unwrap();
    let part = ColumnPart::of(&db, &t).unwrap().unwrap().with_point_reads();
    let types = schema().types();

    // Random rows, and the edges: the first and last rows, a row group's
    // last and the next one's first, a slice's last and the next's first.
    let s = SLICE_ROWS as u64;
    let mut positions: Vec<u64> = (0..40).map(|_| rng.random_range(0..ROWS as u64)).collect();
    positions.extend([0, ROWS as u64 - 1, 122_879, 122_880, s - 1, s, 2 * s + 1]);
    positions.sort_unstable();
    positions.dedup();
    let plan = part.plan_positions(&positions);
    assert!(
        plan.units.iter().all(|u| u.is_point()),
        "every unit is a point read"
    );

    for columns in [
        (0..types.len()).collect::<Vec<usize>>(),
        vec![7, 2],
        vec![3],
    ] {
        let want: Vec<Vec<Value>> = positions
            .iter()
            .map(|&p| {
                columns
                    .iter()
                    .map(|&c| model[p as usize][c].clone())
                    .collect()
            })
            .collect();
        let mut picked = columns.clone();
        picked.sort_unstable();
        let read = |what: &str| {
            let mut got: Vec<Vec<Value>> = Vec::new();
            part.read_units(&plan.units, &columns, |b| {
                let ty: Vec<DataType> = picked.iter().map(|&c| types[c]).collect();
                for r in batch_rows(&b, &ty) {
                    // The batch has the columns in table order.
                    got.push(
                        columns
                            .iter()
                            .map(|c| r[picked.binary_search(c).unwrap()].clone())
                            .collect(),
                    );
                }
                Ok(true)
            })
            .unwrap();
            assert_eq!(got, want, "{what} read of columns {columns:?}");
        };
        // The first projection is every column: nothing is decoded yet.
        // The others' slices were decoded with it.
        let first = columns.len() == types.len();
        assert_eq!(
            plan.units.iter().any(|u| part.is_decoded(u, &columns)),
            !first
        );
        let bytes = part.counters().bytes();
        read("first");
        assert_eq!(
            part.counters().bytes() > bytes,
            first,
            "only the first read reads"
        );
        assert!(
            plan.units.iter().all(|u| part.is_decoded(u, &columns)),
            "after it every slice's values are kept"
        );
        let (bytes, requests) = (part.counters().bytes(), part.counters().requests());
        read("second");
        assert_eq!(
            (part.counters().bytes(), part.counters().requests()),
            (bytes, requests),
            "the second read of columns {columns:?} reads nothing"
        );
    }
    // Kept and fresh units in one read, their bytes fetched ahead: the
    // first two row groups' rows were read above, the last one's are new.
    let all: Vec<usize> = (0..types.len()).collect();
    let mut mixed: Vec<u64> = positions.iter().copied().filter(|&p| p < 245_760).collect();
    mixed.extend((0..20).map(|i| 250_000 + i * 2_500));
    let mixed_plan = part.plan_positions(&mixed);
    let kept = mixed_plan
        .units
        .iter()
        .filter(|u| part.is_decoded(u, &all))
        .count();
    assert!(
        kept >= 2 && kept < mixed_plan.units.len(),
        "{kept} kept units"
    );
    assert!(part.ahead(&mixed_plan.units, &all).workers >= 1);
    let mut got: Vec<Vec<Value>> = Vec::new();
    part.read_units(&mixed_plan.units, &all, |b| {
        got.extend(batch_rows(&b, &types));
        Ok(true)
    })
    .unwrap();
    let want: Vec<Vec<Value>> = mixed.iter().map(|&p| model[p as usize].clone()).collect();
    assert_eq!(got, want, "kept and fresh units read together");
    // A part not opened for point reads (a scan's) decodes its units in
    // one pass, however sparse: a fresh slice of a page the lookups above
    // did not touch is not kept.
    let other: Vec<u64> = positions
        .iter()
        .map(|p| (p + SLICE_ROWS as u64 * 3) % ROWS as u64)
        .collect();
    let mut other = other;
    other.sort_unstable();
    other.dedup();
    let sparse = scan.plan_positions(&other);
    assert!(
        sparse
            .units
            .iter()
            .all(|u| u.is_point() && !scan.is_decoded(u, &[0]))
    );
    let mut n = 0;
    scan.read_units(&sparse.units, &[0], |b| {
        n += b.num_rows();
        Ok(true)
    })
    .unwrap();
    assert_eq!(n, other.len());
    assert!(
        !sparse.units.iter().all(|u| part.is_decoded(u, &[0])),
        "the scan kept no values"
    );
    // A read of every row of the row groups is decoded in one pass, and
    // keeps no values.
    let whole = part.plan_all().units;
    assert!(
        whole
            .iter()
            .all(|u| !u.is_point() && !part.is_decoded(u, &all))
    );
    let mut rows = 0;
    part.read_units(&whole, &all, |b| {
        rows += b.num_rows();
        Ok(true)
    })
    .unwrap();
    assert_eq!(rows, ROWS as usize);
}
