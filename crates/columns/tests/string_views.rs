//! A part opened with `with_string_views` gives its string columns as
//! views (`Utf8View`) holding the model's values, in a scan of whole row
//! groups, of pruned pages and in point reads; the slices point reads keep
//! stay `Utf8`, so a part without views reading them after gets `Utf8`.

use super::*;
use arrow::datatypes::DataType as ArrowType;

const ROWS: i64 = 150_000;

/// Reads `units` of `columns` from `part`: the rows, and the Arrow types of
/// the batches' columns (each batch's the same).
fn read(
    part: &ColumnPart,
    units: &[strata_columns::read::Unit],
    columns: &[usize],
) -> (Vec<Vec<Value>>, Vec<ArrowType>) {
    let types = schema().types();
    let ty: Vec<DataType> = columns.iter().map(|&c| types[c]).collect();
    let mut rows = Vec::new();
    let mut arrow: Option<Vec<ArrowType>> = None;
    part.read_units(units, columns, |b| {
        let t: Vec<ArrowType> = b.columns().iter().map(|c| c.data_type().clone()).collect();
        assert!(arrow.get_or_insert_with(|| t.clone()) == &t);
        rows.extend(batch_rows(&b, &ty));
        Ok(true)
    })
    .unwrap();
    (rows, arrow.unwrap_or_default())
}

#[test]
fn string_views_hold_the_models_strings_in_scans_and_point_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(&dir.path().join("db"), opts()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(47);
    let model: Vec<Vec<Value>> = (0..ROWS).map(|n| row(n, &mut rng)).collect();
    load(&db, &model);
    rewrite(&db, "t", Format::Columns, &NoProgress).unwrap();
    let t = db.table("t").unwrap();
    let plain = ColumnPart::of(&db, &t).unwrap().unwrap();
    let views = ColumnPart::of(&db, &t)
        .unwrap()
        .unwrap()
        .with_string_views()
        .unwrap();
    assert!(views.string_views() && !plain.string_views());
    // k, flag (CHAR(1)), v (VARCHAR, NULLs).
    let cols = [0usize, 6, 7];
    let want_types = |string: ArrowType| vec![ArrowType::Int64, string.clone(), string];

    // Every row.
    let whole = views.plan_all().units;
    let (rows, types) = read(&views, &whole, &cols);
    assert_eq!(types, want_types(ArrowType::Utf8View));
    let want: Vec<Vec<Value>> = model
        .iter()
        .map(|r| cols.iter().map(|&c| r[c].clone()).collect())
        .collect();
    assert_eq!(rows, want, "a scan of every row");
    let (rows, types) = read(&plain, &plain.plan_all().units, &cols);
    assert_eq!((rows, types), (want.clone(), want_types(ArrowType::Utf8)));

    // Pruned pages: a range of the key.
    let range = [
        Comparison {
            column: 0,
            op: CmpOp::Ge,
            value: Value::Int64(40_000),
        },
        Comparison {
            column: 0,
            op: CmpOp::Lt,
            value: Value::Int64(52_000),
        },
    ];
    let units = views.plan(&range).unwrap().units;
    let (rows, _) = read(&views, &units, &cols);
    let kept: Vec<&Vec<Value>> = rows
        .iter()
        .filter(|r| matches!(r[0], Value::Int64(k) if (40_000..52_000).contains(&k)))
        .collect();
    assert_eq!(kept.len(), 12_000);
    assert!(rows.len() < ROWS as usize, "pages were pruned");

    // Point reads: views out, Utf8 kept.
    let points = ColumnPart::of(&db, &t)
        .unwrap()
        .unwrap()
        .with_point_reads()
        .with_string_views()
        .unwrap();
    let positions: Vec<u64> = (0..30).map(|i| i * 4_999 + 7).collect();
    let plan = points.plan_positions(&positions);
    assert!(plan.units.iter().all(|u| u.is_point()));
    let want: Vec<Vec<Value>> = positions
        .iter()
        .map(|&p| cols.iter().map(|&c| model[p as usize][c].clone()).collect())
        .collect();
    let (rows, types) = read(&points, &plan.units, &cols);
    assert_eq!(
        (rows, types),
        (want.clone(), want_types(ArrowType::Utf8View))
    );
    let kept = ColumnPart::of(&db, &t).unwrap().unwrap().with_point_reads();
    assert!(plan.units.iter().all(|u| kept.is_decoded(u, &cols)));
    let (rows, types) = read(&kept, &plan.units, &cols);
    assert_eq!((rows, types), (want, want_types(ArrowType::Utf8)));
}
