//! What the page checks cost a full scan (run by hand, in release):
//! `cargo test --release -p strata-storage --test integration scan_cost:: -- --ignored --nocapture`.
//! Scans 1M rows of a fixed-layout and of a variable-layout table through
//! `HeapFile::scan` (checksums, slot directories and tuple shapes checked), and
//! times the slot and shape checks alone over the same pages.

use std::ops::ControlFlow;
use std::time::Instant;

use strata_storage::db::{NoProgress, TableOptions};
use strata_storage::page::{self, PAGE_SIZE, PageView};
use strata_storage::row::{Schema, Value};
use strata_storage::{Database, DbOptions};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
#[ignore]
fn scan_cost() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(
        dir.path(),
        DbOptions {
            direct_io: false,
            buffer_pool_bytes: 64 << 20,
            ..DbOptions::default()
        },
    )
    .unwrap();
    let rows = 1_000_000;
    for (name, schema) in [
        ("fixed", "a INT, b BIGINT, c CHAR(4)"),
        ("var", "k INT, s VARCHAR(20) NULL, d DATE"),
    ] {
        let mut l = db
            .begin_create_load(
                name,
                Schema::parse(schema).unwrap(),
                TableOptions::default(),
                vec![],
            )
            .unwrap();
        for i in 0..rows {
            let row = if name == "fixed" {
                vec![
                    Value::Int32(i),
                    Value::Int64(i as i64),
                    Value::Str("abcd".into()),
                ]
            } else {
                vec![
                    Value::Int32(i),
                    if i % 5 == 0 {
                        Value::Null
                    } else {
                        Value::Str("x".repeat(i as usize % 20))
                    },
                    Value::Date(i),
                ]
            };
            l.append(&row).unwrap();
        }
        l.commit(&NoProgress).unwrap();
        let t = db.table(name).unwrap();
        let heap = t.heap().clone();
        let mut scans = Vec::new();
        for _ in 0..9 {
            let start = Instant::now();
            let mut sum = 0u64;
            heap.scan(|_, tup| {
                sum += tup[1] as u64;
                Ok(())
            })
            .unwrap();
            scans.push(start.elapsed().as_secs_f64());
            std::hint::black_box(sum);
        }
        // The pages once, then the checks alone over them.
        let mut pages = Vec::new();
        heap.scan_pages(128, 2, |_, v| {
            pages.extend_from_slice(v.bytes());
            Ok(ControlFlow::Continue(()))
        })
        .unwrap();
        let shape = strata_storage::row::shape::TupleShape::new(t.schema());
        // Per page, cache-warm as in a scan: the checksum alone (seal), then
        // page::verify (checksum, header, slot directory), then that and the
        // shape check. The differences are what the checks cost.
        let (mut crc, mut verify, mut both) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..9 {
            let start = Instant::now();
            for p in pages.chunks_exact_mut(PAGE_SIZE) {
                page::seal(p);
            }
            crc.push(start.elapsed().as_secs_f64());
            let start = Instant::now();
            for (i, p) in pages.chunks_exact(PAGE_SIZE).enumerate() {
                page::verify(p, i as u64, dir.path()).unwrap();
            }
            verify.push(start.elapsed().as_secs_f64());
            let start = Instant::now();
            for (i, p) in pages.chunks_exact(PAGE_SIZE).enumerate() {
                page::verify(p, i as u64, dir.path()).unwrap();
                shape.check_page(&PageView::new(p)).unwrap();
            }
            both.push(start.elapsed().as_secs_f64());
        }
        let (scan, crc, verify, both) = (median(scans), median(crc), median(verify), median(both));
        let slots = (verify - crc).max(0.0);
        let shapes = (both - verify).max(0.0);
        println!(
            "{name}: {} pages, {rows} rows; scan {:.2} ms; checksums {:.3} ms; slot directories {:.3} ms ({:.1}% of the scan); tuple shapes {:.3} ms ({:.1}%)",
            pages.len() / PAGE_SIZE,
            scan * 1e3,
            crc * 1e3,
            slots * 1e3,
            100.0 * slots / scan,
            shapes * 1e3,
            100.0 * shapes / scan,
        );
    }
}
