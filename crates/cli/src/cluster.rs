//! `strata cluster TABLE --hot`: hot/cold clustering (No Bits Left Behind §3.1;
//! the work is `strata_storage::maintenance::cluster`).

use anyhow::{Result, bail};
use clap::Args;
use strata_storage::maintenance::cluster::{ClusterOptions, ClusterReport};

use crate::context::{Global, open_db};

#[derive(Args, Debug)]
pub struct ClusterArgs {
    /// The table to cluster.
    pub table: String,
    /// Gather the tuples index lookups read most (from the sampled access
    /// counts every index lookup keeps) at the end of the heap, and move the
    /// ones that cooled back into cold pages.
    #[arg(long, required = true)]
    pub hot: bool,
    /// Also give the hot tuples a small index of their own over INDEX's
    /// columns (the hot partition), which lookups of one key try first.
    #[arg(long, value_name = "INDEX")]
    pub partition: Option<String>,
    /// Sampled accesses a tuple needs to count as hot.
    #[arg(long, default_value_t = 2)]
    pub min_count: u32,
    /// The hot tuples are at most this fraction of the rows.
    #[arg(long, default_value_t = 0.25)]
    pub max_fraction: f64,
    /// Cluster only this share of the hot tuples, the most read first.
    #[arg(long, default_value_t = 1.0)]
    pub share: f64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cli: &Global, a: &ClusterArgs) -> Result<()> {
    if !a.hot {
        bail!("strata cluster clusters by access only: give --hot");
    }
    let db = open_db(cli, false)?;
    let opts = ClusterOptions {
        partition: a.partition.clone(),
        min_count: a.min_count,
        max_fraction: a.max_fraction,
        share: a.share,
        batch: None,
    };
    let rep = db.cluster_hot(&a.table, &opts)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rep)?);
    } else {
        print!("{}", text(&rep));
    }
    Ok(())
}

/// The report as text.
pub fn text(r: &ClusterReport) -> String {
    let mut s = String::new();
    if let Some(w) = &r.warning {
        s += &format!("warning: {w}\n");
    }
    s += &format!(
        "table {}: {} tuples counted ({} sampled accesses); {} hot\n",
        r.table, r.tracked, r.sampled_accesses, r.hot
    );
    if r.tracked == 0 {
        s +=
            "  no access counted yet: index lookups (SQL or strata scan --path index) count them\n";
    }
    s += &format!(
        "  hot region from heap page {} ({} pages now): {} moved in, {} already there, {} cooled moved out, {} cooled left for want of room, in {} transactions\n",
        r.region_start,
        r.heap_pages,
        r.moved_in,
        r.already_in_region,
        r.moved_out,
        r.cooled_left,
        r.transactions
    );
    s += &format!(
        "  the hot tuples were on {} heap pages and are on {}\n",
        r.hot_pages_before, r.hot_pages_after
    );
    if let Some(p) = &r.partition {
        let ratio = if r.partition_pages > 0 {
            r.full_index_pages as f64 / r.partition_pages as f64
        } else {
            0.0
        };
        s += &format!(
            "  hot partition of index {p}: {} entries in {} pages ({ratio:.1}x smaller than the full index's {} pages); lookups of one key try it first\n",
            r.partition_entries, r.partition_pages, r.full_index_pages
        );
    }
    s += "  access counts halved: tuples no longer read cool down and move back at a later clustering\n";
    s
}
