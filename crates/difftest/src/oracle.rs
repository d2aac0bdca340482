//! The second engine: DuckDB for Python (pinned `duckdb==1.4.4`, the version
//! CI installs for the TPC-H checker), run as one long-lived `python3`
//! co-process per run of `duckdb_oracle.py`, shipped in this crate and
//! embedded in the binary. Statements go in and answers come back as JSON
//! lines, values as canonical text, so the tester needs no DuckDB library
//! of its own and no second build of anything.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value as Json, json};

use crate::compare::{Answer, CellKind};

/// The script, as shipped in crates/difftest.
const SCRIPT: &str = include_str!("../duckdb_oracle.py");

/// What DuckDB answered.
#[derive(Clone, Debug)]
pub enum DuckAnswer {
    Rows(Answer),
    Error(String),
}

/// The DuckDB co-process.
pub struct Oracle {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    pub version: String,
}

impl Oracle {
    /// Starts `python3` on the script; an error says what to install.
    pub fn start() -> Result<Oracle, String> {
        let install = "the differential tester needs python3 and DuckDB for Python: \
                       python3 -m pip install duckdb==1.4.4";
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(SCRIPT)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start python3 ({e}); {install}"))?;
        let stdin = child.stdin.take().ok_or("no stdin for python3")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout for python3")?);
        let mut o = Oracle {
            child,
            stdin,
            stdout,
            version: String::new(),
        };
        let hello = o
            .read()
            .map_err(|e| format!("the DuckDB oracle did not start ({e}); {install}"))?;
        if let Some(f) = hello.get("fatal").and_then(Json::as_str) {
            return Err(format!("{f} ({install})"));
        }
        o.version = hello
            .get("ready")
            .and_then(Json::as_str)
            .ok_or_else(|| format!("unexpected first answer from the DuckDB oracle: {hello}"))?
            .to_string();
        Ok(o)
    }

    fn read(&mut self) -> Result<Json, String> {
        let mut line = String::new();
        let n = self
            .stdout
            .read_line(&mut line)
            .map_err(|e| format!("reading from the DuckDB oracle: {e}"))?;
        if n == 0 {
            return Err("the DuckDB oracle exited".into());
        }
        serde_json::from_str(&line).map_err(|e| format!("bad answer from the DuckDB oracle: {e}"))
    }

    fn ask(&mut self, request: Json) -> Result<Json, String> {
        writeln!(self.stdin, "{request}")
            .and_then(|_| self.stdin.flush())
            .map_err(|e| format!("writing to the DuckDB oracle: {e}"))?;
        self.read()
    }

    /// A fresh, empty in-memory database.
    pub fn reset(&mut self) -> Result<(), String> {
        self.ask(json!({"reset": true})).map(|_| ())
    }

    /// Runs one statement. `Err` only when the co-process itself fails.
    pub fn run(&mut self, sql: &str) -> Result<DuckAnswer, String> {
        let a = self.ask(json!({ "sql": sql }))?;
        if let Some(e) = a.get("error").and_then(Json::as_str) {
            return Ok(DuckAnswer::Error(e.to_string()));
        }
        let kinds: Vec<CellKind> = a["types"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| CellKind::of_duckdb(t.as_str().unwrap_or("")))
                    .collect()
            })
            .unwrap_or_default();
        let rows = a["rows"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|r| {
                        r.as_array()
                            .map(|vals| {
                                vals.iter()
                                    .zip(&kinds)
                                    .map(|(v, k)| match v.as_str() {
                                        Some(t) => k.cell(t),
                                        None => crate::compare::Cell::Null,
                                    })
                                    .collect()
                            })
                            .unwrap_or_default()
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(DuckAnswer::Rows(Answer {
            columns: kinds.len(),
            rows,
        }))
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        // Closing stdin ends the script's loop; wait for it.
        let _ = self.stdin.flush();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
