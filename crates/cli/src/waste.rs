//! `strata waste`: unused space and encoding waste, table by table (the
//! analysis is `strata_storage::maintenance::waste`).

use std::path::Path;

use anyhow::Result;
use strata_bench::report::plot::{Axis, Plot};
use strata_storage::maintenance::waste::{MAX_DICTIONARY, TableWaste, analyze};
use strata_storage::util::format_bytes;

use crate::context::{Global, chosen_tables, open_db};

pub fn run(cli: &Global, only: Option<&str>, json: bool, plot: Option<&Path>) -> Result<()> {
    let db = open_db(cli, true)?;
    let names = chosen_tables(&db, only)?;
    let mut reports = Vec::new();
    for name in &names {
        reports.push(analyze(&*db.table(name)?)?);
    }
    if let Some(stem) = plot {
        for w in &reports {
            let stem = if reports.len() == 1 {
                stem.to_path_buf()
            } else {
                let file = stem.file_name().unwrap_or_default().to_string_lossy();
                stem.with_file_name(format!("{file}-{}", w.table))
            };
            draw(w, &stem)?;
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
        return Ok(());
    }
    if reports.is_empty() {
        println!("database {} has no tables", cli.db.display());
    }
    for w in &reports {
        print!("{}", text(w));
    }
    Ok(())
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The report of one table as text.
pub fn text(w: &TableWaste) -> String {
    let mut s = String::new();
    let heap = w.heap_bytes();
    let h = &w.heap;
    s += &format!(
        "table {}: {} rows, heap {} pages ({})\n",
        w.table,
        w.rows,
        h.pages,
        format_bytes(heap)
    );
    s += &format!(
        "  unused space: heap {:.1}% full of tuples; free {} ({:.1}%, {}..{} a page), dead tuples {} ({:.1}%), headers and slots {} ({:.1}%)\n",
        100.0 * h.fill(),
        format_bytes(h.free_bytes),
        pct(h.free_bytes, heap),
        format_bytes(h.min_page_free),
        format_bytes(h.max_page_free),
        format_bytes(h.dead_bytes),
        pct(h.dead_bytes, heap),
        format_bytes(h.overhead_bytes),
        pct(h.overhead_bytes, heap),
    );
    for i in &w.indexes {
        s += &format!(
            "  index {}: {} leaf + {} inner pages, leaves {:.1}% full (B+-tree leaves average 68% under random inserts): {} unused\n",
            i.name,
            i.leaf_pages,
            i.internal_pages,
            100.0 * i.leaf_fill,
            format_bytes(i.leaf_free_bytes)
        );
    }
    s += &format!(
        "  encoding waste: the values take {} as declared, {} in their tightest encodings: {} wasted ({:.1}% of the heap)\n",
        format_bytes(w.stored_bytes),
        format_bytes(w.tight_bytes),
        format_bytes(w.encoding_waste()),
        pct(w.encoding_waste(), heap)
    );
    if w.encoded_bytes != w.stored_bytes {
        s += &format!(
            "  types as hints: stored in {} ({:.1}% of declared) after strata compact\n",
            format_bytes(w.encoded_bytes),
            pct(w.encoded_bytes, w.stored_bytes)
        );
    }
    let rows: Vec<[String; 9]> = w
        .columns
        .iter()
        .map(|c| {
            let mut facts = Vec::new();
            if let Some(t) = c.facts.text_holds {
                facts.push(format!("text holding {t}"));
            }
            if let Some((lo, hi)) = c.facts.int_range {
                facts.push(format!("{lo}..{hi}"));
            }
            match c.facts.distinct {
                Some(d) => facts.push(format!("{d} distinct")),
                None => facts.push(format!("over {MAX_DICTIONARY} distinct")),
            }
            if let Some(l) = c.facts.max_len {
                facts.push(format!("longest {l}"));
            }
            if c.nulls > 0 {
                facts.push(format!("{} NULL", c.nulls));
            }
            [
                c.column.clone(),
                c.declared.clone(),
                c.tightest_type.clone(),
                c.suggestion.to_string(),
                format_bytes(c.stored_bytes),
                c.encoding.clone(),
                format_bytes(c.encoded_bytes),
                format!(
                    "{} ({:.1}%)",
                    format_bytes(c.wasted_bytes()),
                    pct(c.wasted_bytes(), heap)
                ),
                facts.join(", "),
            ]
        })
        .collect();
    let head = [
        "column",
        "declared",
        "tightest type",
        "cheapest encoding",
        "declared bytes",
        "stored as",
        "stored bytes",
        "wasted (of heap)",
        "values",
    ];
    let width: Vec<usize> = (0..head.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let mut l = String::from("   ");
        for (c, w) in cells.iter().zip(&width) {
            l += &format!(" {c:<w$} ");
        }
        l.trim_end().to_string() + "\n"
    };
    s += &line(&head.map(String::from));
    for r in &rows {
        s += &line(r);
    }
    s
}

fn draw(w: &TableWaste, stem: &Path) -> Result<()> {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    Plot::bars(
        format!(
            "{}: bytes per column, declared, stored and tightest",
            w.table
        ),
        "column",
        w.columns.iter().map(|c| c.column.clone()),
        Axis::linear("MiB"),
    )
    .bar_series("declared", w.columns.iter().map(|c| mib(c.stored_bytes)))
    .bar_series("stored", w.columns.iter().map(|c| mib(c.encoded_bytes)))
    .bar_series("tightest", w.columns.iter().map(|c| mib(c.tight_bytes)))
    .size((130 * w.columns.len() as u32).max(1000), 640)
    .write(stem)?;
    Ok(())
}
