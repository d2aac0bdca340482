//! The run: rounds of (fresh database, random tables, queries under every
//! access path, TLP, DML with a check of the changed table, the tables moved
//! to the cold tier, queries again) until the statement budget is spent.
//! Each round is seeded from the run's seed and its number, so a finding's
//! seed and round reproduce it; the reproduction printed with it has the
//! round's script up to the statement.
//!
//! DML runs on strata first. When strata refuses, DuckDB runs it inside a
//! transaction that is rolled back; when only DuckDB refuses, or the check
//! query finds the tables different, DuckDB's table is rewritten from
//! strata's, so that one finding does not turn every later answer of the
//! round into another.

use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_sql::AccessPathSetting;

use crate::classify::{self, Class, Verdict};
use crate::compare::{Answer, Cell};
use crate::config::Config;
use crate::datagen::{insert_script, random_table};
use crate::model::{Sql2, Table, Ty, quote};
use crate::oracle::{DuckAnswer, Oracle};
use crate::report::Report;
use crate::statements::{Query, random_dml, random_query};
use crate::strata_runner::{Outcome, Strata};
use crate::tlp;

/// Queries per round on local tables, DML statements, queries on the cold tier.
const HOT_QUERIES: usize = 40;
const DML: usize = 14;
const COLD_QUERIES: usize = 12;
/// A TLP case after every this many queries.
const TLP_EVERY: usize = 3;

/// Runs the differential tester.
pub fn run(cfg: &Config) -> Result<Report, String> {
    let start = Instant::now();
    let mut oracle = Oracle::start()?;
    let mut report = Report {
        seed: cfg.seed,
        duckdb: oracle.version.clone(),
        ..Report::default()
    };
    let mut round = 0u64;
    while report.statements < cfg.statements {
        Round::new(cfg, round, &mut oracle, &mut report)?.run()?;
        round += 1;
        report.rounds += 1;
        if !cfg.quiet && round.is_multiple_of(25) {
            eprintln!(
                "difftest: {} rounds, {} statements, {} unexplained, {:.0} s",
                report.rounds,
                report.statements,
                report.unexplained(),
                start.elapsed().as_secs_f64()
            );
        }
    }
    report.elapsed_s = start.elapsed().as_secs_f64();
    Ok(report)
}

/// One strata configuration a statement runs under.
#[derive(Clone, Copy, Debug)]
struct Setting {
    path: AccessPathSetting,
    /// `Some` on the cold tier.
    skipper: Option<bool>,
}

impl Setting {
    fn name(&self) -> String {
        match self.skipper {
            None => self.path.name().to_string(),
            Some(s) => format!("{} (cold, skipper={s})", self.path.name()),
        }
    }
}

struct Round<'a> {
    cfg: &'a Config,
    number: u64,
    rng: SmallRng,
    strata: Strata,
    oracle: &'a mut Oracle,
    report: &'a mut Report,
    tables: Vec<Table>,
    /// What made the database as it is: strata's statements in order.
    script: Vec<String>,
    cold: bool,
    /// The round's tables with no rows, for telling a constant's error
    /// from a row's ([`Round::refused_when_empty`]).
    empty: Option<(usize, Strata)>,
    /// Rotates the access path of single-path statements.
    turn: usize,
}

impl<'a> Round<'a> {
    fn new(
        cfg: &'a Config,
        number: u64,
        oracle: &'a mut Oracle,
        report: &'a mut Report,
    ) -> Result<Round<'a>, String> {
        oracle.reset()?;
        let seed = cfg.seed.wrapping_mul(1_000_003).wrapping_add(number);
        Ok(Round {
            cfg,
            number,
            rng: SmallRng::seed_from_u64(seed),
            strata: Strata::create()?,
            oracle,
            report,
            tables: Vec::new(),
            script: Vec::new(),
            cold: false,
            empty: None,
            turn: 0,
        })
    }

    fn run(mut self) -> Result<(), String> {
        let n = self.rng.random_range(1..=3);
        for i in 0..n {
            let t = random_table(&mut self.rng, &format!("t{i}"));
            if !self.setup_table(&t)? {
                return Ok(());
            }
            self.tables.push(t);
        }
        self.strata_only("ANALYZE");
        for i in 0..HOT_QUERIES {
            let q = random_query(&mut self.rng, &self.tables);
            self.query(&q)?;
            if i % TLP_EVERY == 0 {
                self.tlp();
            }
        }
        for _ in 0..DML {
            let t = self.tables[self.rng.random_range(0..self.tables.len())].clone();
            let stmt = random_dml(&mut self.rng, &t, &self.tables);
            self.dml(&stmt, &t, "DML")?;
        }
        let names: Vec<String> = self.tables.iter().map(|t| t.name.clone()).collect();
        self.strata.to_cold(&names)?;
        self.script
            .push("-- the tables are moved to the cold tier (strata tier cold)".into());
        self.cold = true;
        for i in 0..COLD_QUERIES {
            let q = random_query(&mut self.rng, &self.tables);
            self.query(&q)?;
            if i % TLP_EVERY == 0 {
                self.tlp();
            }
        }
        Ok(())
    }

    /// Creates and fills a table on both sides and indexes it in strata;
    /// `false` when the round cannot go on.
    fn setup_table(&mut self, t: &Table) -> Result<bool, String> {
        let ddl = Sql2::same(t.ddl());
        let s = self.strata.run(&ddl.strata);
        let d = self.oracle.run(&ddl.duck)?;
        self.report.statements += 1;
        if !matches!((&s, &d), (Outcome::Rows(_), DuckAnswer::Rows(_))) {
            let class = Class::unexplained(
                "CREATE TABLE refused",
                "a generated CREATE TABLE failed in one engine",
            );
            let repro = self.repro(&class, &ddl, &[], &s, &d);
            self.report.finding(&class, 1, || repro, self.cfg.quiet);
            return Ok(false);
        }
        self.script.push(ddl.strata.clone());
        let rows = match self.rng.random_range(0..10) {
            0 => 0,
            1..=6 => self.rng.random_range(1..=30),
            _ => self.rng.random_range(30..=120),
        };
        for ins in insert_script(&mut self.rng, t, rows) {
            self.dml(&Sql2::same(ins), t, "INSERT (setup)")?;
        }
        for c in &t.indexes {
            self.strata_only(&format!(
                "CREATE INDEX ix_{}_{c} ON {} ({c})",
                t.name, t.name
            ));
        }
        Ok(true)
    }

    /// A statement strata alone runs (indexes, ANALYZE); it must succeed.
    fn strata_only(&mut self, sql: &str) {
        self.report.statements += 1;
        let out = self.strata.run(sql);
        if let Outcome::Rows(_) = out {
            self.script.push(format!("{sql}; -- strata only"));
            return;
        }
        let class = Class::unexplained(
            format!(
                "strata-only statement failed: {}",
                classify::shape(match &out {
                    Outcome::Error(e) | Outcome::Panic(e) => e,
                    Outcome::Rows(_) => "",
                })
            ),
            "CREATE INDEX or ANALYZE failed on a generated table",
        );
        let stmt = Sql2::same(sql);
        let repro = self.repro(
            &class,
            &stmt,
            &[],
            &out,
            &DuckAnswer::Error("(not run)".into()),
        );
        self.report.finding(&class, 1, || repro, self.cfg.quiet);
    }

    fn settings(&self) -> Vec<Setting> {
        let mut out = Vec::new();
        for path in AccessPathSetting::ALL {
            if self.cold {
                for s in [true, false] {
                    out.push(Setting {
                        path,
                        skipper: Some(s),
                    });
                }
            } else {
                out.push(Setting {
                    path,
                    skipper: None,
                });
            }
        }
        out
    }

    fn apply(&mut self, s: Setting) -> Result<(), String> {
        self.strata.set("strata.access_path", s.path.name())?;
        // Under the index path every join that can probe an index does
        // (inner, semi and anti index joins get DuckDB's opinion too); the
        // other paths keep the planner's own choice.
        let index_join = if s.path == AccessPathSetting::Index {
            "on"
        } else {
            "auto"
        };
        self.strata.set("strata.index_join", index_join)?;
        if let Some(k) = s.skipper {
            self.strata
                .set("strata.skipper", if k { "true" } else { "false" })?;
        }
        Ok(())
    }

    /// The next setting in turn (for statements run under one path).
    fn next_setting(&mut self) -> Setting {
        let all = self.settings();
        self.turn += 1;
        all[self.turn % all.len()]
    }

    /// A strata refusal of a value DuckDB answered is [`classify::CONST_FOLD`]
    /// when the value that failed does not come from a row: DuckDB answered
    /// no row (changed none), or strata refuses the statement the same way
    /// over the round's tables left empty.
    fn planning_refusal(
        &mut self,
        verdict: Verdict,
        out: &Outcome,
        duck: &DuckAnswer,
        sql: &str,
    ) -> Result<Verdict, String> {
        let (Verdict::Finding(c), Outcome::Error(e), DuckAnswer::Rows(d)) = (&verdict, out, duck)
        else {
            return Ok(verdict);
        };
        if c.explained || !classify::value_error(e) {
            return Ok(verdict);
        }
        let dml =
            sql.starts_with("INSERT") || sql.starts_with("UPDATE") || sql.starts_with("DELETE");
        let nothing = d.rows.is_empty()
            || dml && d.rows.len() == 1 && d.rows[0].first().is_some_and(|c| c.text() == "0");
        if nothing || self.refused_when_empty(sql, e)? {
            Ok(Verdict::Finding(classify::CONST_FOLD.class()))
        } else {
            Ok(verdict)
        }
    }

    /// Whether strata refuses `sql` with `error` over the round's tables
    /// created empty (in a second database, made when first needed).
    fn refused_when_empty(&mut self, sql: &str, error: &str) -> Result<bool, String> {
        // Made again when the round has created a table since.
        if self
            .empty
            .as_ref()
            .is_none_or(|(n, _)| *n != self.tables.len())
        {
            let empty = Strata::create()?;
            for t in &self.tables {
                if let Outcome::Error(e) | Outcome::Panic(e) = empty.run(&t.ddl()) {
                    return Err(format!("creating {} empty: {e}", t.name));
                }
            }
            self.empty = Some((self.tables.len(), empty));
        }
        let (_, empty) = self.empty.as_ref().expect("made above");
        Ok(matches!(empty.run(sql), Outcome::Error(x) if x == error))
    }

    /// Runs a query under every setting and compares each answer with DuckDB's.
    fn query(&mut self, q: &Query) -> Result<(), String> {
        self.report.statements += 1;
        self.report.queries += 1;
        *self
            .report
            .families
            .entry(q.family.to_string())
            .or_default() += 1;
        let duck = self.oracle.run(&q.sql.duck)?;
        // Findings grouped by class: the settings they came under, and the
        // first outcome.
        let mut found: Vec<(Class, Vec<String>, Outcome)> = Vec::new();
        for s in self.settings() {
            self.apply(s)?;
            let out = self.strata.run(&q.sql.strata);
            self.report.executions += 1;
            let verdict = classify::classify(&out, &duck, q.ordered, q.family, &q.sql.duck);
            let verdict = self.planning_refusal(verdict, &out, &duck, &q.sql.strata)?;
            match verdict {
                Verdict::Agree => self.report.agreements += 1,
                Verdict::BothRefuse => self.report.both_refused += 1,
                Verdict::Finding(c) => match found.iter_mut().find(|(k, _, _)| *k == c) {
                    Some((_, settings, _)) => settings.push(s.name()),
                    None => found.push((c, vec![s.name()], out)),
                },
            }
        }
        for (class, settings, out) in found {
            let repro = self.repro(&class, &q.sql, &settings, &out, &duck);
            self.report
                .finding(&class, settings.len(), || repro, self.cfg.quiet);
        }
        Ok(())
    }

    /// Runs DML on both engines and compares the changed table.
    fn dml(&mut self, stmt: &Sql2, t: &Table, family: &'static str) -> Result<(), String> {
        self.report.statements += 1;
        self.report.dml += 1;
        let setting = self.next_setting();
        self.apply(setting)?;
        let out = self.strata.run(&stmt.strata);
        self.report.executions += 1;
        let duck = match out {
            Outcome::Rows(_) => self.oracle.run(&stmt.duck)?,
            _ => {
                self.oracle.run("BEGIN TRANSACTION")?;
                let d = self.oracle.run(&stmt.duck)?;
                self.oracle.run("ROLLBACK")?;
                d
            }
        };
        let verdict = classify::classify(&out, &duck, false, family, &stmt.duck);
        let verdict = self.planning_refusal(verdict, &out, &duck, &stmt.strata)?;
        let mut diverged = false;
        match &verdict {
            Verdict::Agree => self.report.agreements += 1,
            Verdict::BothRefuse => self.report.both_refused += 1,
            Verdict::Finding(c) => {
                let repro = self.repro(c, stmt, &[setting.name()], &out, &duck);
                self.report.finding(c, 1, || repro, self.cfg.quiet);
                diverged = matches!(
                    (&out, &duck),
                    (Outcome::Rows(_), DuckAnswer::Error(_)) | (Outcome::Panic(_), _)
                );
            }
        }
        if matches!(out, Outcome::Rows(_)) {
            self.script.push(stmt.strata.clone());
        }
        // The check: the whole table.
        let check = Sql2::same(format!("SELECT * FROM {}", t.name));
        self.report.statements += 1;
        let setting = self.next_setting();
        self.apply(setting)?;
        let s = self.strata.run(&check.strata);
        let d = self.oracle.run(&check.duck)?;
        self.report.executions += 1;
        match classify::classify(&s, &d, false, "table after DML", &check.duck) {
            Verdict::Agree => self.report.agreements += 1,
            Verdict::BothRefuse => self.report.both_refused += 1,
            Verdict::Finding(c) => {
                // After a difference already counted (DuckDB refused what
                // strata stored) the tables differ by that; not a second
                // finding.
                if !diverged {
                    let repro = self.repro(&c, &check, &[setting.name()], &s, &d);
                    self.report.finding(&c, 1, || repro, self.cfg.quiet);
                }
                diverged = true;
            }
        }
        if diverged {
            self.resync(t)?;
        }
        Ok(())
    }

    /// Rewrites DuckDB's copy of `t` from strata's.
    fn resync(&mut self, t: &Table) -> Result<(), String> {
        self.strata.set("strata.access_path", "full")?;
        let Outcome::Rows(rows) = self.strata.run(&format!("SELECT * FROM {}", t.name)) else {
            return Err(format!("cannot read table {} back from strata", t.name));
        };
        self.oracle.run(&format!("DELETE FROM {}", t.name))?;
        for chunk in rows.rows.chunks(50) {
            let tuples: Vec<String> = chunk
                .iter()
                .map(|r| {
                    let vals: Vec<String> = r
                        .iter()
                        .zip(&t.columns)
                        .map(|(c, col)| literal(c, col.ty))
                        .collect();
                    format!("({})", vals.join(", "))
                })
                .collect();
            if let DuckAnswer::Error(e) = self.oracle.run(&format!(
                "INSERT INTO {} VALUES {}",
                t.name,
                tuples.join(", ")
            ))? {
                return Err(format!("re-synchronizing DuckDB's {}: {e}", t.name));
            }
        }
        self.script.push(format!(
            "-- DuckDB's {} rewritten from strata's rows here",
            t.name
        ));
        Ok(())
    }

    /// A TLP case on strata alone, under the next setting.
    fn tlp(&mut self) {
        let case = tlp::random_case(&mut self.rng, &self.tables);
        self.report.statements += 1;
        self.report.tlp_cases += 1;
        let setting = self.next_setting();
        if self.apply(setting).is_err() {
            return;
        }
        let mut answers: Vec<Answer> = Vec::new();
        let mut refused = false;
        for sql in std::iter::once(&case.whole).chain(case.parts.iter()) {
            self.report.executions += 1;
            match self.strata.run(sql) {
                Outcome::Rows(a) => answers.push(a),
                Outcome::Error(_) => refused = true,
                Outcome::Panic(p) => {
                    let class = Class::unexplained(
                        format!("panic: {}", classify::shape(&p)),
                        "strata panicked (caught per statement)",
                    );
                    let stmt = Sql2::same(sql.clone());
                    let repro = self.repro(
                        &class,
                        &stmt,
                        &[setting.name()],
                        &Outcome::Panic(p),
                        &DuckAnswer::Error("(TLP: not run)".into()),
                    );
                    self.report.finding(&class, 1, || repro, self.cfg.quiet);
                    return;
                }
            }
        }
        if refused {
            self.report.tlp_refused += 1;
            return;
        }
        let whole = answers.remove(0);
        let parts: [Answer; 3] = [answers.remove(0), answers.remove(0), answers.remove(0)];
        match tlp::check(&case, &whole, &parts) {
            Ok(()) => self.report.tlp_agreed += 1,
            Err(why) => {
                let class = if why.starts_with(tlp::WRAPPED) {
                    Class::unexplained(
                        "TLP: an integer sum wrapped",
                        "the whole's sum and its partitions' differ by a multiple of 2^64: a sum wrapped in one of them (integer sums are exact DECIMAL(38,0), crates/sql/src/rules/wide_sum.rs)",
                    )
                } else {
                    Class::unexplained(
                        format!("TLP: partitions differ ({:?})", case.combine),
                        "strata's answer to a query differs from the union of its answers under P, NOT P and P IS NULL",
                    )
                };
                let mut text = format!(
                    "{}\n-- whole:\n{}\n-- partitions:\n{}\n{}\n{}\n-- {why}\n-- whole answered:\n{}",
                    self.header(&class, &[setting.name()]),
                    case.whole,
                    case.parts[0],
                    case.parts[1],
                    case.parts[2],
                    whole.show(20)
                );
                for (i, p) in parts.iter().enumerate() {
                    text.push_str(&format!("-- partition {} answered:\n{}", i + 1, p.show(20)));
                }
                self.report.finding(&class, 1, || text, self.cfg.quiet);
            }
        }
    }

    fn header(&self, class: &Class, settings: &[String]) -> String {
        format!(
            "== {}: {}\n-- seed {}, round {} (strata-difftest --seed {}); under {}\n-- script (strata's statements; DuckDB ran the same except those marked strata only):\n{}",
            class.label,
            class.name,
            self.cfg.seed,
            self.number,
            self.cfg.seed,
            if settings.is_empty() {
                "-".to_string()
            } else {
                settings.join(", ")
            },
            self.script
                .iter()
                .map(|s| if s.starts_with("--") || s.ends_with("strata only") {
                    s.clone()
                } else {
                    format!("{s};")
                })
                .collect::<Vec<_>>()
                .join("\n")
        )
    }

    fn repro(
        &self,
        class: &Class,
        stmt: &Sql2,
        settings: &[String],
        strata: &Outcome,
        duck: &DuckAnswer,
    ) -> String {
        let s = match strata {
            Outcome::Rows(a) => a.show(20),
            Outcome::Error(e) => format!("    error: {e}\n"),
            Outcome::Panic(p) => format!("    PANIC: {p}\n"),
        };
        let d = match duck {
            DuckAnswer::Rows(a) => a.show(20),
            DuckAnswer::Error(e) => format!("    error: {e}\n"),
        };
        format!(
            "{}\n-- statement:\n{};\n-- strata answered:\n{s}-- DuckDB answered:\n{d}",
            self.header(class, settings),
            stmt
        )
    }
}

/// A value of a strata answer as a DuckDB literal of a column of `ty`.
fn literal(c: &Cell, ty: Ty) -> String {
    match c {
        Cell::Null => "NULL".into(),
        Cell::Bool(b) => (if *b { "TRUE" } else { "FALSE" }).into(),
        Cell::Date(d) => format!("DATE '{d}'"),
        Cell::Text(s) => quote(s),
        Cell::Float(f) => format!("CAST('{f:?}' AS {ty})"),
        Cell::Exact(s) | Cell::Other(s) => format!("CAST('{s}' AS {ty})"),
    }
}
