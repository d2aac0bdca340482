//! `strata csd serve` and `strata csd metrics`: the cold storage device as a
//! long-running S3 endpoint, and a look at (or reset of) its metrics.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use strata_csd::config::CsdConfig;
use strata_csd::layout::LayoutSpec;
use strata_csd::schedule::Policy;
use strata_csd::server::{self, Credentials};

#[derive(Args)]
pub struct ServeArgs {
    /// Directory of the objects and their metadata (created if missing).
    #[arg(long)]
    pub data: PathBuf,
    /// A JSON configuration (groups, switch_ms, bandwidth_mib_s, time_scale,
    /// layout, policy, initial_group); the flags below override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Address to listen on; port 0 picks a free one (printed).
    #[arg(long, default_value = "127.0.0.1:9000")]
    pub listen: SocketAddr,
    /// object-fcfs, query-fcfs, max-queries, rank or rank:K.
    #[arg(long)]
    pub policy: Option<String>,
    /// Modeled group switch time in milliseconds (the paper: 10000).
    #[arg(long)]
    pub switch_ms: Option<f64>,
    /// Modeled transfer rate of a spun-up group, MiB/s.
    #[arg(long)]
    pub bandwidth_mib_s: Option<f64>,
    /// Real delay = modeled × this (0: never sleep).
    #[arg(long)]
    pub time_scale: Option<f64>,
    /// one-per-client, striped, by-relation, random[:SEED], all-in-one.
    #[arg(long)]
    pub layout: Option<String>,
    /// Number of disk groups.
    #[arg(long)]
    pub groups: Option<u32>,
    /// Access key clients sign with (default: $STRATA_CSD_ACCESS_KEY or strata).
    #[arg(long)]
    pub access_key: Option<String>,
    /// Secret key (default: $STRATA_CSD_SECRET_KEY or strata-secret).
    #[arg(long)]
    pub secret_key: Option<String>,
}

#[derive(Args)]
pub struct MetricsArgs {
    /// The server's endpoint.
    #[arg(long, default_value = "http://127.0.0.1:9000")]
    pub endpoint: String,
    /// Zero the metrics after printing them (between benchmark runs).
    #[arg(long)]
    pub reset: bool,
}

/// The configuration file, then the flags over it.
pub fn effective_config(a: &ServeArgs) -> Result<CsdConfig> {
    let mut config = match &a.config {
        Some(path) => CsdConfig::load(path)?,
        None => CsdConfig::default(),
    };
    if let Some(p) = &a.policy {
        config.policy = p
            .parse::<Policy>()
            .with_context(|| format!("--policy {p}"))?;
    }
    if let Some(l) = &a.layout {
        config.layout = l
            .parse::<LayoutSpec>()
            .with_context(|| format!("--layout {l}"))?;
    }
    if let Some(v) = a.switch_ms {
        config.switch_ms = v;
    }
    if let Some(v) = a.bandwidth_mib_s {
        config.bandwidth_mib_s = v;
    }
    if let Some(v) = a.time_scale {
        config.time_scale = v;
    }
    if let Some(g) = a.groups {
        config.groups = g;
        if config.initial_group.is_some_and(|i| i >= g) {
            config.initial_group = Some(0);
        }
    }
    Ok(config)
}

pub fn serve(a: &ServeArgs) -> Result<()> {
    let config = effective_config(a)?;
    let mut credentials = Credentials::default();
    if let Some(k) = &a.access_key {
        credentials.access_key = k.clone();
    }
    if let Some(k) = &a.secret_key {
        credentials.secret_key = k.clone();
    }
    let summary = format!(
        "{} groups, policy {}, layout {}, switch {} ms, {} MiB/s per group, time scale {}",
        config.groups,
        config.policy,
        config.layout,
        config.switch_ms,
        config.bandwidth_mib_s,
        config.time_scale
    );
    let data = a.data.clone();
    server::serve_blocking(config, &a.data, a.listen, credentials, |addr| {
        use std::io::Write;
        println!(
            "strata csd: listening on http://{addr} (data {}; {summary})",
            data.display()
        );
        println!("strata csd: metrics at http://{addr}/_csd/metrics; stop with Ctrl-C or SIGTERM");
        let _ = std::io::stdout().flush();
    })?;
    println!("strata csd: stopped");
    Ok(())
}

pub fn metrics(a: &MetricsArgs) -> Result<()> {
    let json = strata_csd::admin_client::metrics(&a.endpoint, a.reset)?;
    print!("{json}");
    if a.reset {
        eprintln!("strata csd: metrics reset");
    }
    Ok(())
}
