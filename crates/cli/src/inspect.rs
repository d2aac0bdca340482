//! `strata info` and `strata check`: what the database holds and whether it is sound.

use anyhow::Result;
use strata_storage::maintenance::check;
use strata_storage::util::format_bytes;

use crate::context::{Global, chosen_tables, open_db};
use crate::progress::Bars;

/// A table's columns as `CREATE TABLE` declares them: `c1 INT NOT NULL,
/// name VARCHAR(20)` (SQL's type names, the ones `\d` and `DESCRIBE` show).
fn sql_columns(schema: &strata_storage::row::Schema) -> String {
    schema
        .columns
        .iter()
        .map(|c| {
            format!(
                "{} {}{}",
                c.name,
                c.ty.sql_name(),
                if c.nullable { "" } else { " NOT NULL" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn info(cli: &Global, only: Option<&str>, json: bool) -> Result<()> {
    let db = open_db(cli, true)?;
    let names = chosen_tables(&db, only)?;
    let mut out = Vec::new();
    for name in &names {
        let t = db.table(name)?;
        let cat = db.catalog();
        let def = cat.table(name)?;
        let pages = t.heap().num_pages();
        let page = strata_storage::page::PAGE_SIZE as u64;
        let mut idx = Vec::new();
        for i in t.indexes() {
            idx.push(serde_json::json!({
                "name": i.def.name,
                "columns": i.def.columns,
                "cached_columns": i.cached_fields().map(|f| f.names.clone()).unwrap_or_default(),
                "cache_item_bytes": i.btree.cache_layout().map(|l| l.item_len()),
                "stats": i.btree.stats()?,
                "hot_partition": i.hot().map(|h| serde_json::json!({
                    "entries": h.btree.len(),
                    "pages": h.btree.num_pages(),
                })),
            }));
        }
        let tier = strata_cold::tier::table_tier(db.dir(), def)?;
        let mut entry = serde_json::json!({
            "table": name,
            "tier": tier,
            "schema": sql_columns(t.schema()),
            "rows": t.live_rows(),
            "format": if t.columns().is_some() { "columns" } else { "rows" },
            "pages": pages,
            "bytes": pages * page,
            "fill_factor": def.fill_factor,
            "segment_pages": def.segment_pages,
            "segments": pages.div_ceil(def.segment_pages).max(1),
            "rows_per_page": if pages > 0 { t.rows() as f64 / pages as f64 } else { 0.0 },
            "indexes": idx,
            "hot_region_first_page": def.hot_region,
            "tuples_with_access_counts": t.heat().len(),
        });
        // A columnar table: its column files; the heap is its delta.
        if let Some(c) = t.columns() {
            entry["column_files"] = c
                .files
                .iter()
                .map(|f| serde_json::json!({"file": f.file, "rows": f.rows, "bytes": f.bytes}))
                .collect::<Vec<_>>()
                .into();
            entry["delta_rows"] = t.rows().into();
        }
        // Vertical partitioning (`strata split`): the side table.
        if let Some(side) = t.side_table() {
            let sp = side.heap().num_pages();
            entry["side_table"] = serde_json::json!({
                "columns": side.schema().columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
                "pages": sp,
                "bytes": sp * page,
                "encodings": side.encodings().iter().map(|e| e.describe()).collect::<Vec<_>>(),
            });
        }
        // Types as hints (`strata compact`): how each column is stored.
        if !t.encodings().is_empty() {
            entry["stored_as"] = t
                .schema()
                .columns
                .iter()
                .zip(t.encodings())
                .map(|(c, e)| serde_json::json!({"column": c.name, "encoding": e.describe()}))
                .collect::<Vec<_>>()
                .into();
        }
        out.push(entry);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    if out.is_empty() {
        println!("database {} has no tables", cli.db.display());
    }
    for t in &out {
        println!(
            "table {}: {} rows, {} pages ({}), {} segment(s) of {}, fill factor {:.2}, {:.1} rows/page",
            t["table"].as_str().unwrap(),
            t["rows"],
            t["pages"],
            format_bytes(t["bytes"].as_u64().unwrap()),
            t["segments"],
            format_bytes(
                t["segment_pages"].as_u64().unwrap() * strata_storage::page::PAGE_SIZE as u64
            ),
            t["fill_factor"].as_f64().unwrap(),
            t["rows_per_page"].as_f64().unwrap()
        );
        let tier: strata_cold::tier::TableTier = serde_json::from_value(t["tier"].clone())?;
        println!("  tier: {tier}");
        println!("  columns: {}", t["schema"].as_str().unwrap());
        if let Some(files) = t["column_files"].as_array() {
            let bytes: u64 = files.iter().filter_map(|f| f["bytes"].as_u64()).sum();
            let rows: u64 = files.iter().filter_map(|f| f["rows"].as_u64()).sum();
            println!(
                "  format: columns, {rows} rows in {} Parquet file(s) ({}); {} rows in the delta (the heap above)",
                files.len(),
                format_bytes(bytes),
                t["delta_rows"]
            );
        }
        if let Some(m) = t["stored_as"].as_array() {
            let cols: Vec<String> = m
                .iter()
                .filter(|e| e["encoding"] != "plain")
                .map(|e| {
                    format!(
                        "{} {}",
                        e["column"].as_str().unwrap_or(""),
                        e["encoding"].as_str().unwrap_or("")
                    )
                })
                .collect();
            println!("  stored as (strata compact): {}", cols.join("; "));
        }
        if let Some(side) = t["side_table"].as_object() {
            println!(
                "  side table (strata split): {} in {} pages ({}), joined back by tuple id",
                side["columns"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap_or(""))
                    .collect::<Vec<_>>()
                    .join(", "),
                side["pages"],
                format_bytes(side["bytes"].as_u64().unwrap_or(0))
            );
        }
        if let Some(p) = t["hot_region_first_page"].as_u64() {
            println!("  hot region (strata cluster --hot) from heap page {p}");
        }
        let counted = t["tuples_with_access_counts"].as_u64().unwrap_or(0);
        if counted > 0 {
            println!("  {counted} tuples have access counts (index lookups, sampled)");
        }
        for i in t["indexes"].as_array().unwrap() {
            let s = &i["stats"];
            println!(
                "  index {} on ({}): height {}, {} entries, {} leaf + {} inner pages, leaf fill {:.1}%",
                i["name"].as_str().unwrap(),
                i["columns"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap())
                    .collect::<Vec<_>>()
                    .join(", "),
                s["height"],
                s["entries"],
                s["leaf_pages"],
                s["internal_pages"],
                s["leaf_fill"].as_f64().unwrap_or(0.0) * 100.0
            );
            if let Some(h) = i["hot_partition"].as_object() {
                println!(
                    "    hot partition: {} entries in {} pages, tried first by one-key lookups",
                    h["entries"], h["pages"]
                );
            }
            let cached = i["cached_columns"].as_array().unwrap();
            if !cached.is_empty() {
                println!(
                    "    caches ({}) in leaf free space, {}-byte items",
                    cached
                        .iter()
                        .map(|c| c.as_str().unwrap())
                        .collect::<Vec<_>>()
                        .join(", "),
                    i["cache_item_bytes"]
                );
            }
        }
    }
    Ok(())
}

pub fn check(cli: &Global) -> Result<()> {
    let db = open_db(cli, true)?;
    let bars = Bars::new();
    let report = check::check_database(&db, &bars)?;
    bars.finish();
    for t in &report {
        let idx: Vec<String> = t
            .indexes
            .iter()
            .map(|(n, e)| format!("{n} ({e} entries)"))
            .collect();
        println!(
            "ok: table {}: {} pages, {} rows; indexes: {}",
            t.table,
            t.pages,
            t.rows,
            if idx.is_empty() {
                "none".to_string()
            } else {
                idx.join(", ")
            }
        );
    }
    // A columnar table's column files: every column of every row group
    // decoded.
    for name in db.table_names() {
        let t = db.table(&name)?;
        if let Some(part) = strata_columns::ColumnPart::of(&db, &t)? {
            let rows = part.verify()?;
            println!(
                "ok: table {name}: column files: {rows} rows in {} file(s), every column decoded",
                t.columns().map_or(0, |c| c.files.len())
            );
        }
    }
    println!(
        "check passed: {} table(s), every page verified",
        report.len()
    );
    Ok(())
}

/// `strata index cache TABLE INDEX --columns c,d | --none`.
pub fn index_cache(cli: &Global, table: &str, index: &str, columns: &[String]) -> Result<()> {
    let db = open_db(cli, false)?;
    let cols: Vec<&str> = columns.iter().map(|c| c.trim()).collect();
    db.set_index_cache(table, index, &cols)?;
    let t = db.table(table)?;
    let ix = t.index(index)?;
    match ix.cached_fields() {
        Some(f) => println!(
            "index {} of {table} caches ({}) in its leaves' free space: {}-byte items",
            ix.def.name,
            f.names.join(", "),
            ix.btree.cache_layout().map_or(0, |l| l.item_len())
        ),
        None => println!("index {} of {table} caches no column", ix.def.name),
    }
    Ok(())
}
