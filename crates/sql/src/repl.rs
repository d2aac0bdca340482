//! The interactive session: line editing and history (`~/.strata_history`),
//! tab completion of keywords, tables and columns ([`complete`]), statements
//! that span lines until their `;`, a timing line after each result, and
//! psql's backslash commands: `\d`, `\x` (expanded display, [`expanded`]),
//! `\o FILE` (results to a file), `\i FILE` (run a file's statements),
//! `\format`, `\timing`, `\q`.
//!
//! Statements piped in (`echo "SELECT …;" | strata sql --format csv > out.csv`)
//! run the same way, but stdout carries results only: the timing line goes
//! to stderr and is off unless `\timing` turns it on, nothing is added to the
//! history, and a statement that failed makes the process exit with its
//! error's code once the others have run.

mod backend;
mod complete;
mod expanded;

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use rustyline::Editor;
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use strata_sql::{Format, split_statements};

pub use backend::{Backend, summary, warn_open_transaction};
use complete::SqlHelper;

const HELP: &str = "\
  any SQL statement, ended by ;     e.g. SELECT count(*) FROM lineitem;
  ANALYZE [table, ...];             collect optimizer statistics
  SET strata.access_path = 'smooth' smooth, optimizer, full, index, sort, switch
  EXPLAIN [ANALYZE] <query>;        the plan, with strata's counters after ANALYZE
  DESCRIBE table;                   a table's columns and their SQL types
  \\d [table]                        tables, or one table's columns and indexes
  \\x [on|off]                       toggle expanded display (a record per row)
  \\o [FILE]                         send results to FILE; \\o alone: back to stdout
  \\i FILE                           run the statements (and commands) of FILE
  \\format table|csv|json            output format
  \\timing                           toggle the timing line
  \\q                                quit
  Tab completes keywords, table and column names, commands and file names.";

/// How deep `\i` may nest (a file that includes itself stops there).
const MAX_INCLUDE_DEPTH: usize = 16;

/// Runs the session over `backend` (this process's session, or the server
/// that owns the database); `timing`: the timing line from the start even
/// when the statements are piped in (`--timing`).
pub fn run(mut backend: Backend<'_>, format: Format, timing: bool) -> anyhow::Result<()> {
    let mut editor: Editor<SqlHelper, DefaultHistory> = Editor::new()?;
    editor.set_helper(Some(SqlHelper::new(backend.names())));
    let history =
        std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".strata_history"));
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        println!(
            "{} — statements end with ;  \\? for help, \\q to quit",
            backend.banner()
        );
    }
    let mut repl = Repl {
        backend,
        format,
        timing: interactive || timing,
        expanded: false,
        out: Sink::Stdout,
        failures: Failures::default(),
        catalog_changed: false,
        interactive,
    };
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
        let flow = repl.line(&line, &mut pending, 0);
        match &flow {
            Flow::Command => {
                let _ = editor.add_history_entry(line.trim());
            }
            Flow::Ran(text) if interactive => {
                let _ = editor.add_history_entry(text.as_str());
            }
            _ => {}
        }
        if std::mem::take(&mut repl.catalog_changed)
            && let Some(h) = editor.helper_mut()
        {
            h.names = repl.backend.names();
        }
        if matches!(flow, Flow::Quit) {
            break;
        }
    }
    if interactive && let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    repl.backend.warn_open_transaction();
    match repl.failures.first {
        Some(first) if !interactive => Err(StatementsFailed {
            failed: repl.failures.count,
            first,
        }
        .into()),
        _ => Ok(()),
    }
}

/// What a line did.
enum Flow {
    /// Nothing yet: the statement goes on, or the line was empty.
    More,
    /// Statements ended on this line and ran: their text, for the history.
    Ran(String),
    /// A backslash command.
    Command,
    Quit,
}

/// Where results go: stdout, or the file `\o` named.
enum Sink {
    Stdout,
    File(PathBuf, File),
}

impl Sink {
    fn write(&mut self, text: &str) -> std::io::Result<()> {
        match self {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())?;
                out.flush()
            }
            Sink::File(_, f) => {
                f.write_all(text.as_bytes())?;
                f.flush()
            }
        }
    }

    fn name(&self) -> String {
        match self {
            Sink::Stdout => "standard output".into(),
            Sink::File(p, _) => p.display().to_string(),
        }
    }
}

/// The session's state between lines.
struct Repl<'a> {
    backend: Backend<'a>,
    format: Format,
    timing: bool,
    /// `\x`: results as records (in the table format).
    expanded: bool,
    out: Sink,
    failures: Failures,
    /// A statement may have created or dropped a table or index: completion
    /// reads the names again.
    catalog_changed: bool,
    /// Reading from a terminal: what a command says goes to stdout, else
    /// to stderr (piped, stdout carries results only).
    interactive: bool,
}

impl Repl<'_> {
    /// Takes one line typed (or read by `\i`, `depth` files deep): a
    /// backslash command, or part of a statement in `pending`.
    fn line(&mut self, line: &str, pending: &mut String, depth: usize) -> Flow {
        let trimmed = line.trim();
        if pending.is_empty() && trimmed.starts_with('\\') {
            return self.command(trimmed, depth);
        }
        if pending.is_empty() && matches!(trimmed, "quit" | "exit") {
            return Flow::Quit;
        }
        pending.push_str(line);
        pending.push('\n');
        let (stmts, rest) = split_statements(pending);
        if stmts.is_empty() {
            if pending.trim().is_empty() {
                pending.clear();
            }
            return Flow::More;
        }
        let text = pending.trim().to_string();
        *pending = rest;
        for stmt in stmts {
            self.statement(&stmt);
        }
        Flow::Ran(text)
    }

    /// Runs one statement and shows its result; a bad statement ends only
    /// itself, not the session.
    fn statement(&mut self, stmt: &str) {
        match self.backend.execute(stmt) {
            Ok(r) => {
                let text = if self.expanded && self.format == Format::Table {
                    expanded::render(&r.schema, &r.batches)
                } else {
                    strata_sql::shell::format::render(self.format, &r.schema, &r.batches)
                };
                match text {
                    Ok(t) => self.emit(&t),
                    Err(e) => eprintln!("error: cannot format the result: {e}"),
                }
                if self.timing {
                    eprintln!("{}", r.summary);
                }
                if changes_catalog(stmt) {
                    self.catalog_changed = true;
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                self.failures.add(e);
            }
        }
    }

    /// Writes to the sink; a failed write says so and goes back to stdout.
    fn emit(&mut self, text: &str) {
        if let Err(e) = self.out.write(text) {
            eprintln!(
                "error: cannot write to {}: {e}; results go to standard output again",
                self.out.name()
            );
            self.out = Sink::Stdout;
            let _ = self.out.write(text);
        }
    }

    /// What a command says about itself (`timing is on`).
    fn note(&self, text: &str) {
        if self.interactive {
            println!("{text}");
        } else {
            eprintln!("{text}");
        }
    }

    fn command(&mut self, line: &str, depth: usize) -> Flow {
        let (cmd, arg) = match line.split_once(char::is_whitespace) {
            Some((c, a)) => (c, Some(a.trim()).filter(|a| !a.is_empty())),
            None => (line, None),
        };
        match (cmd, arg) {
            ("\\q", _) => return Flow::Quit,
            ("\\?" | "\\h" | "\\help", _) => println!("{HELP}"),
            ("\\timing", _) => {
                self.timing = !self.timing;
                self.note(&format!(
                    "timing is {}",
                    if self.timing { "on" } else { "off" }
                ));
            }
            ("\\x", a) => match a {
                None => self.set_expanded(!self.expanded),
                Some("on") => self.set_expanded(true),
                Some("off") => self.set_expanded(false),
                Some(other) => eprintln!("error: \\x takes on or off, not '{other}'"),
            },
            ("\\format", Some(f)) => match f.parse() {
                Ok(f) => self.format = f,
                Err(e) => eprintln!("error: {e}"),
            },
            ("\\format", None) => eprintln!("error: \\format takes table, csv or json"),
            ("\\d", t) => match self.backend.describe(t) {
                Ok(text) => self.emit(&text),
                Err(e) => eprintln!("error: {e}"),
            },
            ("\\o", None) => self.out = Sink::Stdout,
            ("\\o", Some(file)) => match File::create(file) {
                Ok(f) => self.out = Sink::File(PathBuf::from(file), f),
                Err(e) => eprintln!("error: cannot write {file}: {e}"),
            },
            ("\\i", None) => eprintln!("error: \\i takes a file name"),
            ("\\i", Some(file)) => return self.include(Path::new(file), depth),
            (other, _) => eprintln!("error: unknown command {other} (\\? for help)"),
        }
        Flow::Command
    }

    fn set_expanded(&mut self, on: bool) {
        self.expanded = on;
        self.note(&format!(
            "expanded display is {}",
            if on { "on" } else { "off" }
        ));
        if on && self.format != Format::Table {
            self.note("(it applies to the table format: \\format table)");
        }
    }

    /// `\i FILE`: each line of the file as if typed; a statement left
    /// without its `;` at the end runs too, as `-f` runs it.
    fn include(&mut self, file: &Path, depth: usize) -> Flow {
        if depth >= MAX_INCLUDE_DEPTH {
            eprintln!(
                "error: \\i {}: files included more than {MAX_INCLUDE_DEPTH} deep (does it include itself?)",
                file.display()
            );
            return Flow::Command;
        }
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", file.display());
                return Flow::Command;
            }
        };
        let mut pending = String::new();
        for line in text.lines() {
            if let Flow::Quit = self.line(line, &mut pending, depth + 1) {
                return Flow::Quit;
            }
        }
        let rest = pending.trim();
        if !rest.is_empty() {
            let (mut stmts, rest) = split_statements(rest);
            if !rest.is_empty() {
                stmts.push(rest);
            }
            for stmt in stmts {
                self.statement(&stmt);
            }
        }
        Flow::Command
    }
}

/// Whether `stmt` may change the tables, indexes or columns (completion then
/// reads the catalog again).
fn changes_catalog(stmt: &str) -> bool {
    let first = stmt
        .split(|c: char| !c.is_alphanumeric())
        .find(|w| !w.is_empty())
        .unwrap_or("");
    ["CREATE", "DROP", "ALTER"]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(first))
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

#[cfg(test)]
mod tests {
    use super::changes_catalog;

    #[test]
    fn ddl_changes_the_catalog_and_queries_do_not() {
        assert!(changes_catalog("CREATE TABLE t (a INT)"));
        assert!(changes_catalog("  drop index i"));
        assert!(!changes_catalog("SELECT * FROM create_log"));
        assert!(!changes_catalog("INSERT INTO t VALUES (1)"));
    }
}
