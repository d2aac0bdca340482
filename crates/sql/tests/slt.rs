//! SQL tests as data: every `.slt` file under `tests/slt/` runs through a
//! strata session with the `sqllogictest` crate (the format DataFusion and
//! sqllogictest-rs use): statements that must succeed or fail (with the
//! error's message as a regex), queries with their expected rows, and
//! `EXPLAIN` plans, input and expected output side by side.
//!
//! Each file gets a fresh database. Files under `tests/slt/tpch/` get a copy
//! of one TPC-H SF 0.01 database (made once per run, with `ANALYZE`), so
//! plan shapes and answers are those of real TPC-H data.
//!
//! `STRATA_SLT_UPDATE=1 cargo test -p strata-sql --test integration slt::`
//! rewrites each file's expected output with what strata answers now: review
//! the diff before committing it. `STRATA_SLT=name` runs the files whose path
//! contains `name`.
//!
//! Values print as DataFusion's formatter prints them; NULL is `NULL` and an
//! empty string `(empty)`. A cell spanning several lines (a plan) is one row
//! per line. Column types: `I` integer, `R` float or decimal, `T` the rest.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use sqllogictest::{DBOutput, DefaultColumnType};
use strata_load::{TpchSpec, generate_tpch};
use strata_sql::{SqlError, SqlSession};
use strata_storage::Database;
use strata_storage::db::NoProgress;

/// One strata session as sqllogictest's database.
struct Strata(Arc<SqlSession>);

impl sqllogictest::DB for Strata {
    type Error = SqlError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlError> {
        let r = self.0.execute(sql)?;
        let is_query = {
            let head = sql.trim_start().to_ascii_lowercase();
            [
                "select", "with", "explain", "values", "show", "describe", "desc ", "(",
            ]
            .iter()
            .any(|w| head.starts_with(w))
                // INSERT, UPDATE and DELETE … RETURNING answer rows.
                || head.split_whitespace().any(|w| w == "returning")
        };
        if !is_query {
            let count = common::text(&r)
                .first()
                .and_then(|row| row.first())
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            return Ok(DBOutput::StatementComplete(count));
        }
        let types = r
            .schema
            .fields()
            .iter()
            .map(|f| column_type(f.data_type()))
            .collect();
        Ok(DBOutput::Rows {
            types,
            rows: rows(&r),
        })
    }

    fn engine_name(&self) -> &str {
        "strata"
    }
}

fn column_type(t: &DataType) -> DefaultColumnType {
    if t.is_integer() {
        DefaultColumnType::Integer
    } else if t.is_floating() || matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..)) {
        DefaultColumnType::FloatingPoint
    } else {
        DefaultColumnType::Text
    }
}

/// The result's rows as text; a multi-line cell becomes one row per line.
fn rows(r: &strata_sql::QueryResult) -> Vec<Vec<String>> {
    let opts = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for b in &r.batches {
        let fmts: Vec<_> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).unwrap())
            .collect();
        for i in 0..b.num_rows() {
            let cells: Vec<String> = fmts
                .iter()
                .map(|f| match f.value(i).to_string() {
                    s if s.is_empty() => "(empty)".to_string(),
                    s => s,
                })
                .collect();
            let tall = cells.iter().map(|c| c.lines().count()).max().unwrap_or(1);
            if tall <= 1 {
                out.push(cells);
                continue;
            }
            for line in 0..tall {
                out.push(
                    cells
                        .iter()
                        .map(|c| {
                            c.lines()
                                .nth(line)
                                .map(|l| l.trim_end().to_string())
                                .filter(|l| !l.is_empty())
                                .unwrap_or_else(|| "-".to_string())
                        })
                        .collect(),
                );
            }
        }
    }
    out
}

fn slt_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt")
}

/// Every `.slt` file below `dir`, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else if p.extension().is_some_and(|x| x == "slt") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The TPC-H SF 0.01 database the `tpch/` files copy, made once per run.
fn tpch_template() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(&dir.path().join("db"), common::options()).unwrap();
        generate_tpch(Some(&db), &TpchSpec::new(0.01), &NoProgress, |_| {}).unwrap();
        let db = Arc::new(db);
        SqlSession::new(db.clone())
            .unwrap()
            .execute("ANALYZE")
            .unwrap();
        drop(Arc::into_inner(db).expect("the session let the database go"));
        dir
    })
    .path()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else if e.file_name() != "LOCK" {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// A session over a fresh database for `file` (a copy of the TPC-H one
/// for the files under `tpch/`).
fn session_for(file: &Path, dir: &Path) -> Arc<SqlSession> {
    let path = dir.join("db");
    let db = if file.components().any(|c| c.as_os_str() == "tpch") {
        copy_dir(&tpch_template().join("db"), &path);
        Database::open(&path, common::options()).unwrap()
    } else {
        Database::create(&path, common::options()).unwrap()
    };
    Arc::new(SqlSession::new(Arc::new(db)).unwrap())
}

#[test]
fn every_slt_file_gives_its_expected_output() {
    let update = std::env::var_os("STRATA_SLT_UPDATE").is_some_and(|v| v == "1");
    let only = std::env::var("STRATA_SLT").ok();
    let all = files(&slt_dir());
    assert!(
        !all.is_empty(),
        "no .slt files under {}",
        slt_dir().display()
    );
    let mut failed = Vec::new();
    let mut ran = 0;
    for file in all {
        let name = file.strip_prefix(slt_dir()).unwrap().display().to_string();
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        ran += 1;
        let dir = tempfile::tempdir().unwrap();
        let session = session_for(&file, dir.path());
        let mut runner = sqllogictest::Runner::new(|| {
            let s = session.clone();
            async move { Ok(Strata(s)) }
        });
        runner.with_column_validator(sqllogictest::strict_column_validator);
        if update {
            futures::executor::block_on(runner.update_test_file(
                &file,
                " ",
                sqllogictest::default_validator,
                sqllogictest::default_normalizer,
                sqllogictest::strict_column_validator,
            ))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        } else if let Err(e) = runner.run_file(&file) {
            failed.push(format!("{name}: {}", e.display(true)));
        }
    }
    assert!(ran > 0, "STRATA_SLT={only:?} matches no file");
    assert!(
        failed.is_empty(),
        "{} of {ran} .slt files failed (STRATA_SLT_UPDATE=1 rewrites the expected output):\n{}",
        failed.len(),
        failed.join("\n")
    );
}
