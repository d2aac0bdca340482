//! A run's settings: the seed, how many statements, where the report goes.

use std::path::PathBuf;

/// A run's settings.
#[derive(Clone, Debug)]
pub struct Config {
    pub seed: u64,
    /// Statements to run (the run ends after the round that reaches it).
    pub statements: usize,
    /// Where to write the report (`report.json`, `summary.txt`, `repros.md`).
    pub out: Option<PathBuf>,
    /// Print only unexplained findings' reproductions.
    pub quiet: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            seed: 53,
            statements: 10_000,
            out: None,
            quiet: false,
        }
    }
}
