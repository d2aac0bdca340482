//! The interactive session: line editing and history (`~/.strata_history`),
//! statements that span lines until their `;`, a timing line after each
//! result, and a few backslash commands.
//!
//! Statements piped in (`echo "SELECT …;" | strata sql --format csv > out.csv`)
//! run the same way, but stdout carries results only: the timing line goes
//! to stderr and is off unless `\timing` turns it on, nothing is added to the
//! history, and a statement that failed makes the process exit with its
//! error's code once the others have run.

use std::io::IsTerminal;

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use strata_sql::{Format, QueryResult, SqlSession, split_statements};
use strata_storage::util::format_bytes;

const HELP: &str = "\
  any SQL statement, ended by ;     e.g. SELECT count(*) FROM lineitem;
  ANALYZE [table, ...];             collect optimizer statistics
  SET strata.access_path = 'smooth' smooth, optimizer, full, index, sort, switch
  EXPLAIN [ANALYZE] <query>;        the plan, with strata's counters after ANALYZE
  \\d [table]                        tables, or one table's columns and indexes
  \\format table|csv|json            output format
  \\timing                           toggle the timing line
  \\q                                quit";

/// The line printed after a result: rows, time, and the device's I/O.
pub fn summary(r: &QueryResult) -> String {
    format!(
        "({} row{}, {:.1} ms; I/O: {} requests, {} read, {} written{})",
        r.rows(),
        if r.rows() == 1 { "" } else { "s" },
        r.elapsed.as_secs_f64() * 1e3,
        r.io.read_requests,
        format_bytes(r.io.bytes_read()),
        format_bytes(r.io.bytes_written()),
        if r.io.modeled_ns > 0 {
            format!(", modeled {:.1} ms", r.io.modeled_ms())
        } else {
            String::new()
        }
    )
}

/// Runs the session; `timing`: the timing line from the start even when the
/// statements are piped in (`--timing`).
pub fn run(session: &SqlSession, mut format: Format, timing: bool) -> anyhow::Result<()> {
    let mut editor = DefaultEditor::new()?;
    let history =
        std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".strata_history"));
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    let interactive = std::io::stdin().is_terminal();
    let mut failures = Failures::default();
    if interactive {
        println!(
            "strata SQL on {} — statements end with ;  \\? for help, \\q to quit",
            session.database().dir().display()
        );
    }
    let mut timing = interactive || timing;
    let mut pending = String::new();
    loop {
        let prompt = if pending.is_empty() {
            "strata> "
        } else {
            "   ...> "
        };
        let line = match editor.readline(prompt) {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) => {
                pending.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        let trimmed = line.trim();
        if pending.is_empty() && trimmed.starts_with('\\') {
            let _ = editor.add_history_entry(trimmed);
            let mut words = trimmed.split_whitespace();
            match (words.next().unwrap_or(""), words.next()) {
                ("\\q", _) => break,
                ("\\?" | "\\h" | "\\help", _) => println!("{HELP}"),
                ("\\timing", _) => {
                    timing = !timing;
                    println!("timing is {}", if timing { "on" } else { "off" });
                }
                ("\\format", Some(f)) => match f.parse() {
                    Ok(f) => format = f,
                    Err(e) => eprintln!("error: {e}"),
                },
                ("\\d", t) => match session.describe(t) {
                    Ok(text) => print!("{text}"),
                    Err(e) => eprintln!("error: {e}"),
                },
                (other, _) => eprintln!("error: unknown command {other} (\\? for help)"),
            }
            continue;
        }
        if pending.is_empty() && matches!(trimmed, "quit" | "exit") {
            break;
        }
        pending.push_str(&line);
        pending.push('\n');
        let (stmts, rest) = split_statements(&pending);
        if stmts.is_empty() {
            if pending.trim().is_empty() {
                pending.clear();
            }
            continue;
        }
        if interactive {
            let _ = editor.add_history_entry(pending.trim());
        }
        pending = rest;
        for stmt in stmts {
            match session.execute(&stmt) {
                Ok(r) => {
                    print!(
                        "{}",
                        strata_sql::format::render(format, &r.schema, &r.batches)?
                    );
                    if timing {
                        eprintln!("{}", summary(&r));
                    }
                }
                // A bad statement ends only itself, not the session.
                Err(e) => {
                    eprintln!("error: {e}");
                    failures.add(e);
                }
            }
        }
    }
    if interactive && let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    warn_open_transaction(session);
    match failures.first {
        Some(first) if !interactive => Err(StatementsFailed {
            failed: failures.count,
            first,
        }
        .into()),
        _ => Ok(()),
    }
}

/// The statements of a session that failed (each was reported as it ran).
#[derive(Default)]
struct Failures {
    count: usize,
    first: Option<strata_sql::SqlError>,
}

impl Failures {
    fn add(&mut self, e: strata_sql::SqlError) {
        self.count += 1;
        self.first.get_or_insert(e);
    }
}

/// The end of a piped session in which statements failed: its exit code is
/// the first failure's.
#[derive(Debug, thiserror::Error)]
#[error("{failed} statement(s) failed; the first")]
pub struct StatementsFailed {
    failed: usize,
    #[source]
    first: strata_sql::SqlError,
}

/// Says so when the session ends inside a transaction, which is rolled back.
pub fn warn_open_transaction(session: &SqlSession) {
    if session.in_transaction() {
        eprintln!(
            "warning: the session ended inside a transaction (BEGIN without COMMIT); it is rolled back"
        );
    }
}
