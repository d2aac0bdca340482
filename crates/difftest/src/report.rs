//! A run's counts and findings: statements run, strata executions,
//! agreements, both-refused, TLP checks, and findings per class (explained
//! or not, with the first reproductions of each), printed as a summary and
//! written as JSON and markdown to `--out`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;

use crate::classify::Class;
use crate::config::Config;

/// Reproductions kept (and printed) per class.
const REPROS_PER_CLASS: usize = 3;

/// The findings of one class.
#[derive(Clone, Debug)]
pub struct ClassStats {
    pub class: Class,
    /// Executions in this class.
    pub count: usize,
    /// Distinct statements in this class.
    pub statements: usize,
    pub repros: Vec<String>,
}

/// A run's report.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub seed: u64,
    pub duckdb: String,
    pub rounds: usize,
    /// Generated statements run on both engines (setup, queries, DML, the
    /// checks after DML) and TLP cases.
    pub statements: usize,
    /// Of which queries.
    pub queries: usize,
    pub dml: usize,
    /// strata executions (a query runs once per access path, and twice
    /// that on the cold tier).
    pub executions: usize,
    pub agreements: usize,
    pub both_refused: usize,
    pub tlp_cases: usize,
    pub tlp_agreed: usize,
    /// TLP cases where a partition refused (a predicate that raises an
    /// error), not compared.
    pub tlp_refused: usize,
    pub panics: usize,
    pub families: BTreeMap<String, usize>,
    pub classes: BTreeMap<String, ClassStats>,
    pub elapsed_s: f64,
}

impl Report {
    /// Records a finding of `class` on `executions` executions of one
    /// statement, with its reproduction.
    pub fn finding(
        &mut self,
        class: &Class,
        executions: usize,
        repro: impl FnOnce() -> String,
        quiet: bool,
    ) {
        if class.name.starts_with("panic") {
            self.panics += executions;
        }
        let e = self
            .classes
            .entry(class.name.clone())
            .or_insert_with(|| ClassStats {
                class: class.clone(),
                count: 0,
                statements: 0,
                repros: Vec::new(),
            });
        e.count += executions;
        e.statements += 1;
        if e.repros.len() < REPROS_PER_CLASS {
            let r = repro();
            if !quiet || !class.explained {
                println!("{r}");
            }
            e.repros.push(r);
        }
    }

    /// Executions in unexplained classes (panics among them).
    pub fn unexplained(&self) -> usize {
        self.classes
            .values()
            .filter(|c| !c.class.explained)
            .map(|c| c.count)
            .sum()
    }

    pub fn explained(&self) -> usize {
        self.classes
            .values()
            .filter(|c| c.class.explained)
            .map(|c| c.count)
            .sum()
    }

    /// Whether the run found anything it cannot explain.
    pub fn failed(&self) -> bool {
        self.unexplained() > 0 || self.panics > 0
    }

    pub fn summary(&self) -> String {
        let mut s = format!(
            "difftest: seed {}, DuckDB {}, {} rounds, {:.0} s\n  statements: {} ({} queries, {} DML, {} TLP cases)\n  strata executions: {} — {} agreed, {} both refused, {} explained differences, {} unexplained mismatches, {} panics\n  TLP: {} agreed, {} not compared (a partition refused)\n",
            self.seed,
            self.duckdb,
            self.rounds,
            self.elapsed_s,
            self.statements,
            self.queries,
            self.dml,
            self.tlp_cases,
            self.executions,
            self.agreements,
            self.both_refused,
            self.explained(),
            self.unexplained() - self.panics.min(self.unexplained()),
            self.panics,
            self.tlp_agreed,
            self.tlp_refused,
        );
        s.push_str("  query families:");
        for (f, n) in &self.families {
            s.push_str(&format!(" {f} {n};"));
        }
        s.push('\n');
        if self.classes.is_empty() {
            s.push_str("  no mismatch classes\n");
        }
        for c in self.classes.values() {
            s.push_str(&format!(
                "  [{}] {}: {} executions, {} statements\n",
                c.class.label, c.class.name, c.count, c.statements
            ));
        }
        s
    }

    pub fn to_json(&self, cfg: &Config) -> serde_json::Value {
        json!({
            "seed": self.seed,
            "statements_asked": cfg.statements,
            "duckdb": self.duckdb,
            "rounds": self.rounds,
            "elapsed_s": self.elapsed_s,
            "statements": self.statements,
            "queries": self.queries,
            "dml": self.dml,
            "tlp_cases": self.tlp_cases,
            "tlp_agreed": self.tlp_agreed,
            "tlp_refused": self.tlp_refused,
            "executions": self.executions,
            "agreements": self.agreements,
            "both_refused": self.both_refused,
            "explained": self.explained(),
            "unexplained": self.unexplained(),
            "panics": self.panics,
            "families": self.families,
            "classes": self.classes.values().map(|c| json!({
                "name": c.class.name,
                "explained": c.class.explained,
                "label": c.class.label,
                "reason": c.class.reason,
                "executions": c.count,
                "statements": c.statements,
                "repros": c.repros,
            })).collect::<Vec<_>>(),
        })
    }

    /// Writes `report.json`, `summary.txt` and each class's reproductions
    /// under `dir`.
    pub fn write(&self, dir: &Path, cfg: &Config) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let json =
            serde_json::to_string_pretty(&self.to_json(cfg)).map_err(std::io::Error::other)?;
        std::fs::write(dir.join("report.json"), json)?;
        std::fs::write(dir.join("summary.txt"), self.summary())?;
        let mut repros = String::new();
        for c in self.classes.values() {
            repros.push_str(&format!("#### {}\n\n{}\n\n", c.class.name, c.class.reason));
            for r in &c.repros {
                repros.push_str(&format!("```\n{r}\n```\n\n"));
            }
        }
        std::fs::write(dir.join("repros.md"), repros)
    }
}
