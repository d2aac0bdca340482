//! `strata info`: each table's schema, size, format, tier, indexes and what
//! the No Bits Left Behind tools made of it, as JSON ([`tables`]) and as the
//! text the CLI prints ([`render`]).

use serde_json::{Value, json};
use strata_cold::ColdError;
use strata_cold::tier::TableTier;
use strata_storage::util::format_bytes;
use strata_storage::{Database, StorageError};

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

/// One JSON object per table: `only` (which must exist), or every table.
pub fn tables<E>(db: &Database, only: Option<&str>) -> Result<Vec<Value>, E>
where
    E: From<StorageError> + From<ColdError>,
{
    let names = match only {
        Some(t) => {
            db.table(t)?;
            vec![t.to_string()]
        }
        None => db.table_names(),
    };
    let mut out = Vec::new();
    for name in &names {
        out.push(table::<E>(db, name)?);
    }
    Ok(out)
}

fn table<E>(db: &Database, name: &str) -> Result<Value, E>
where
    E: From<StorageError> + From<ColdError>,
{
    let t = db.table(name)?;
    let def = db.catalog().table(name)?.clone();
    let pages = t.heap().num_pages();
    let page = strata_storage::page::PAGE_SIZE as u64;
    let mut idx = Vec::new();
    for i in t.indexes() {
        idx.push(json!({
            "name": i.def.name,
            "columns": i.def.columns,
            "cached_columns": i.cached_fields().map(|f| f.names.clone()).unwrap_or_default(),
            "cache_item_bytes": i.btree.cache_layout().map(|l| l.item_len()),
            "stats": i.btree.stats()?,
            "hot_partition": i.hot().map(|h| json!({
                "entries": h.btree.len(),
                "pages": h.btree.num_pages(),
            })),
        }));
    }
    let tier = strata_cold::tier::table_tier(db.dir(), &def)?;
    let mut entry = json!({
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
            .map(|f| json!({"file": f.file, "rows": f.rows, "bytes": f.bytes}))
            .collect::<Vec<_>>()
            .into();
        entry["delta_rows"] = t.rows().into();
        entry["deleted_column_rows"] = t.delete_set().map_or(0, |d| d.len()).into();
    }
    // Vertical partitioning (`strata split`): the side table.
    if let Some(side) = t.side_table() {
        let sp = side.heap().num_pages();
        entry["side_table"] = json!({
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
            .map(|(c, e)| json!({"column": c.name, "encoding": e.describe()}))
            .collect::<Vec<_>>()
            .into();
    }
    Ok(entry)
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn names(v: &Value) -> String {
    v.as_array()
        .map(|a| a.iter().map(text).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

/// The text `strata info` prints for `tables` (of [`tables`], read here or
/// received from a server) of the database named `db`.
pub fn render(db: &str, tables: &[Value]) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    if tables.is_empty() {
        line(format!("database {db} has no tables"));
    }
    for t in tables {
        line(format!(
            "table {}: {} rows, {} pages ({}), {} segment(s) of {}, fill factor {:.2}, {:.1} rows/page",
            text(&t["table"]),
            t["rows"],
            t["pages"],
            format_bytes(count(&t["bytes"])),
            t["segments"],
            format_bytes(count(&t["segment_pages"]) * strata_storage::page::PAGE_SIZE as u64),
            t["fill_factor"].as_f64().unwrap_or(0.0),
            t["rows_per_page"].as_f64().unwrap_or(0.0)
        ));
        match serde_json::from_value::<TableTier>(t["tier"].clone()) {
            Ok(tier) => line(format!("  tier: {tier}")),
            Err(_) => line(format!("  tier: {}", t["tier"])),
        }
        line(format!("  columns: {}", text(&t["schema"])));
        if let Some(files) = t["column_files"].as_array() {
            let bytes: u64 = files.iter().map(|f| count(&f["bytes"])).sum();
            let rows: u64 = files.iter().map(|f| count(&f["rows"])).sum();
            line(format!(
                "  format: columns, {rows} rows in {} Parquet file(s) ({}), {} of them deleted; {} rows in the delta (the heap above)",
                files.len(),
                format_bytes(bytes),
                count(&t["deleted_column_rows"]),
                t["delta_rows"]
            ));
        }
        if let Some(m) = t["stored_as"].as_array() {
            let cols: Vec<String> = m
                .iter()
                .filter(|e| e["encoding"] != "plain")
                .map(|e| format!("{} {}", text(&e["column"]), text(&e["encoding"])))
                .collect();
            line(format!("  stored as (strata compact): {}", cols.join("; ")));
        }
        if let Some(side) = t["side_table"].as_object() {
            line(format!(
                "  side table (strata split): {} in {} pages ({}), joined back by tuple id",
                names(&side["columns"]),
                side["pages"],
                format_bytes(count(&side["bytes"]))
            ));
        }
        if let Some(p) = t["hot_region_first_page"].as_u64() {
            line(format!(
                "  hot region (strata cluster --hot) from heap page {p}"
            ));
        }
        let counted = count(&t["tuples_with_access_counts"]);
        if counted > 0 {
            line(format!(
                "  {counted} tuples have access counts (index lookups, sampled)"
            ));
        }
        for i in t["indexes"].as_array().into_iter().flatten() {
            let s = &i["stats"];
            line(format!(
                "  index {} on ({}): height {}, {} entries, {} leaf + {} inner pages, leaf fill {:.1}%",
                text(&i["name"]),
                names(&i["columns"]),
                s["height"],
                s["entries"],
                s["leaf_pages"],
                s["internal_pages"],
                s["leaf_fill"].as_f64().unwrap_or(0.0) * 100.0
            ));
            if let Some(h) = i["hot_partition"].as_object() {
                line(format!(
                    "    hot partition: {} entries in {} pages, tried first by one-key lookups",
                    h["entries"], h["pages"]
                ));
            }
            if i["cached_columns"]
                .as_array()
                .is_some_and(|c| !c.is_empty())
            {
                line(format!(
                    "    caches ({}) in leaf free space, {}-byte items",
                    names(&i["cached_columns"]),
                    i["cache_item_bytes"]
                ));
            }
        }
    }
    out
}
