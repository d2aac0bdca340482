//! A column file's data pages end at `PAGE_ROWS` rows or `PAGE_BYTES` of
//! encoded values, whichever comes first: a narrow column keeps pages of
//! 8,192 rows, a wide one gets pages of about 64 KiB, so a row read alone
//! decodes about as many bytes in every column. Checked on the pages
//! themselves (decompressed by Parquet's own reader), with the rows read
//! back equal to the model's.

use std::fs::File;

use parquet::file::reader::{FileReader, SerializedFileReader};
use strata_columns::file::{PAGE_BYTES, PAGE_ROWS};

use super::*;

/// Rows of values of `width` bytes: `k` ascending, `s` a string of
/// `width` bytes that differs from row to row.
fn wide_rows(rows: i64, width: usize) -> Vec<Vec<Value>> {
    (0..rows)
        .map(|n| {
            let digits = format!("{n:08}");
            let s: String = digits.chars().cycle().take(width).collect();
            vec![Value::Int64(n), Value::Str(s)]
        })
        .collect()
}

#[test]
fn a_wide_columns_pages_end_at_page_bytes_and_a_narrow_ones_at_page_rows() {
    const ROWS: i64 = 150_000;
    for width in [8usize, 40, 200] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(&dir.path().join("db"), opts()).unwrap();
        let schema = Schema::parse(&format!("k BIGINT, s VARCHAR({width})")).unwrap();
        let model = wide_rows(ROWS, width);
        let mut l = db
            .begin_create_load("w", schema, TableOptions::default(), vec![])
            .unwrap();
        for r in &model {
            l.append(r).unwrap();
        }
        l.commit(&NoProgress).unwrap();
        rewrite(&db, "w", Format::Columns, &NoProgress).unwrap();
        let table = db.table("w").unwrap();
        let def = table.columns().unwrap().clone();
        let file = File::open(db.dir().join(&def.files[0].file)).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        // (rows, decompressed bytes) of every data page of column `c`.
        let pages = |c: usize| {
            let mut out = Vec::new();
            for g in 0..reader.num_row_groups() {
                let mut pages = reader
                    .get_row_group(g)
                    .unwrap()
                    .get_column_page_reader(c)
                    .unwrap();
                while let Some(p) = pages.get_next_page().unwrap() {
                    if !matches!(p.page_type(), parquet::basic::PageType::DICTIONARY_PAGE) {
                        out.push((p.num_values() as usize, p.buffer().len()));
                    }
                }
            }
            out
        };
        // The key: pages of PAGE_ROWS rows (a row group's last page less).
        let k = pages(0);
        assert!(
            k.iter().filter(|(rows, _)| *rows == PAGE_ROWS).count() * 2 > k.len(),
            "width {width}: the key's pages {k:?}"
        );
        assert!(k.iter().all(|(rows, _)| *rows <= PAGE_ROWS));
        // The string: no page past PAGE_BYTES by more than one write batch
        // of values (the size is checked every 256 values), and, once a
        // page of PAGE_ROWS values would pass PAGE_BYTES, shorter pages.
        let s = pages(1);
        let value_bytes = width + 4; // plain: a length, then the bytes
        for &(rows, bytes) in &s {
            assert!(rows <= PAGE_ROWS, "width {width}: {rows} rows");
            assert!(
                bytes <= PAGE_BYTES + 256 * value_bytes,
                "width {width}: a page of {rows} rows is {bytes} bytes"
            );
        }
        let full = s.iter().map(|(r, _)| *r).max().unwrap();
        if PAGE_ROWS * value_bytes > PAGE_BYTES {
            assert!(
                full < PAGE_ROWS && full * value_bytes >= PAGE_BYTES,
                "width {width}: pages of {full} rows"
            );
        } else {
            assert_eq!(full, PAGE_ROWS, "width {width}");
        }
        // And the rows are the model's.
        let part = ColumnPart::of(&db, &table).unwrap().unwrap();
        let types = table.schema().types();
        let mut back = Vec::new();
        part.read_all(&[0, 1], |b| {
            back.extend(batch_rows(&b, &types));
            Ok(true)
        })
        .unwrap();
        assert_eq!(back, model, "width {width}");
    }
}
