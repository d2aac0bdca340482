//! Tab completion in the interactive session: SQL keywords, the database's
//! table and column names (read from the catalog, read again after DDL),
//! backslash commands, and file names after `\i` and `\o`.

use rustyline::Context;
use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use strata_storage::Database;

/// Keywords offered for completion: the statements and clauses strata runs.
const KEYWORDS: &[&str] = &[
    "ALL",
    "ALTER",
    "ANALYZE",
    "AND",
    "AS",
    "ASC",
    "AVG",
    "BEGIN",
    "BETWEEN",
    "BIGINT",
    "BOOLEAN",
    "BY",
    "CASE",
    "CAST",
    "CHAR",
    "COALESCE",
    "COMMIT",
    "COUNT",
    "CREATE",
    "CROSS",
    "DATE",
    "DECIMAL",
    "DELETE",
    "DESC",
    "DESCRIBE",
    "DISTINCT",
    "DOUBLE",
    "DROP",
    "ELSE",
    "END",
    "EXCEPT",
    "EXISTS",
    "EXPLAIN",
    "FALSE",
    "FROM",
    "FULL",
    "GROUP",
    "HAVING",
    "IF",
    "IN",
    "INDEX",
    "INNER",
    "INSERT",
    "INT",
    "INTERSECT",
    "INTERVAL",
    "INTO",
    "IS",
    "JOIN",
    "LEFT",
    "LIKE",
    "LIMIT",
    "MAX",
    "MIN",
    "NOT",
    "NULL",
    "NULLS",
    "OFFSET",
    "ON",
    "OR",
    "ORDER",
    "OUTER",
    "OVER",
    "PARTITION",
    "RIGHT",
    "ROLLBACK",
    "SELECT",
    "SET",
    "SHOW",
    "SUM",
    "TABLE",
    "THEN",
    "TRUE",
    "TRUNCATE",
    "UNION",
    "UPDATE",
    "USING",
    "VALUES",
    "VARCHAR",
    "WHEN",
    "WHERE",
    "WITH",
];

/// The backslash commands (`\?` lists them).
pub const COMMANDS: &[&str] = &[
    "\\?", "\\d", "\\format", "\\help", "\\i", "\\o", "\\q", "\\timing", "\\x",
];

/// After these words a table name comes.
const BEFORE_TABLE: &[&str] = &[
    "FROM", "JOIN", "INTO", "UPDATE", "TABLE", "DESCRIBE", "DESC", "ANALYZE",
];

/// The database's tables and each one's columns.
#[derive(Clone, Debug, Default)]
pub struct Names {
    tables: Vec<(String, Vec<String>)>,
}

impl Names {
    /// The names in `db`'s catalog now.
    pub fn read(db: &Database) -> Names {
        let catalog = db.catalog();
        let tables = db
            .table_names()
            .into_iter()
            .map(|t| {
                let columns = catalog
                    .table(&t)
                    .map(|def| def.schema.columns.iter().map(|c| c.name.clone()).collect())
                    .unwrap_or_default();
                (t, columns)
            })
            .collect();
        Names { tables }
    }

    /// These tables' names, each with its columns' (a server's catalog).
    pub fn new(tables: Vec<(String, Vec<String>)>) -> Names {
        Names { tables }
    }

    #[cfg(test)]
    fn of(tables: &[(&str, &[&str])]) -> Names {
        Names {
            tables: tables
                .iter()
                .map(|(t, cs)| (t.to_string(), cs.iter().map(|c| c.to_string()).collect()))
                .collect(),
        }
    }

    fn table_names(&self) -> impl Iterator<Item = &str> {
        self.tables.iter().map(|(t, _)| t.as_str())
    }

    /// Every table's columns, or only those of `table` (matched ignoring case).
    fn columns<'a>(&'a self, table: Option<&'a str>) -> impl Iterator<Item = &'a str> {
        self.tables
            .iter()
            .filter(move |(t, _)| table.is_none_or(|want| t.eq_ignore_ascii_case(want)))
            .flat_map(|(_, cs)| cs.iter().map(String::as_str))
    }
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `candidate` starts with `prefix`, ignoring case.
fn starts(candidate: &str, prefix: &str) -> bool {
    candidate.len() >= prefix.len()
        && candidate.is_char_boundary(prefix.len())
        && candidate[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Completions of the word before `pos` in `line`: where the word starts and
/// what may replace it, sorted. Keywords come in the case the word was
/// typed in (`sel` → `select`), names as the catalog spells them.
pub fn complete(line: &str, pos: usize, names: &Names) -> (usize, Vec<String>) {
    let before = &line[..pos];
    let start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| !word_char(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let word = &before[start..];
    let head = before.trim_start();
    if head.starts_with('\\') {
        return command(head, before, start, word, names);
    }
    let mut out: Vec<String> = Vec::new();
    // `t.c`: the columns of table `t` (an alias gets every table's columns).
    if start > 0 && before[..start].ends_with('.') {
        let q_end = start - 1;
        let q_start = before[..q_end]
            .char_indices()
            .rev()
            .find(|&(_, c)| !word_char(c))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let qualifier = &before[q_start..q_end];
        let known = names
            .table_names()
            .any(|t| t.eq_ignore_ascii_case(qualifier));
        out.extend(
            names
                .columns(known.then_some(qualifier))
                .filter(|c| starts(c, word))
                .map(String::from),
        );
        return finish(start, out);
    }
    let previous = before[..start]
        .split(|c: char| !word_char(c))
        .rfind(|w| !w.is_empty())
        .unwrap_or("");
    let tables_only = BEFORE_TABLE
        .iter()
        .any(|k| k.eq_ignore_ascii_case(previous));
    out.extend(
        names
            .table_names()
            .filter(|t| starts(t, word))
            .map(String::from),
    );
    if !tables_only {
        out.extend(
            names
                .columns(None)
                .filter(|c| starts(c, word))
                .map(String::from),
        );
        if !word.is_empty() {
            let lower = word.chars().next().is_some_and(char::is_lowercase);
            out.extend(KEYWORDS.iter().filter(|k| starts(k, word)).map(|k| {
                if lower {
                    k.to_lowercase()
                } else {
                    k.to_string()
                }
            }));
        }
    }
    finish(start, out)
}

/// Completion in a backslash command: the command, then its argument.
fn command(
    head: &str,
    before: &str,
    start: usize,
    word: &str,
    names: &Names,
) -> (usize, Vec<String>) {
    let Some((cmd, _)) = head.split_once(char::is_whitespace) else {
        // Still typing the command itself.
        let at = before.len() - head.len();
        return finish(
            at,
            COMMANDS
                .iter()
                .filter(|c| c.starts_with(head))
                .map(|c| c.to_string())
                .collect(),
        );
    };
    let out = match cmd {
        "\\d" => names
            .table_names()
            .filter(|t| starts(t, word))
            .map(String::from)
            .collect(),
        "\\format" => ["table", "csv", "json"]
            .iter()
            .filter(|f| f.starts_with(word))
            .map(|f| f.to_string())
            .collect(),
        "\\x" => ["on", "off"]
            .iter()
            .filter(|f| f.starts_with(word))
            .map(|f| f.to_string())
            .collect(),
        _ => Vec::new(),
    };
    finish(start, out)
}

fn finish(start: usize, mut out: Vec<String>) -> (usize, Vec<String>) {
    out.sort();
    out.dedup();
    (start, out)
}

/// Whether the cursor is in the file argument of `\i` or `\o`.
fn file_argument(line: &str, pos: usize) -> bool {
    let head = line[..pos].trim_start();
    ["\\i ", "\\o "].iter().any(|c| head.starts_with(c))
}

/// The session's line-editor helper: completion only.
pub struct SqlHelper {
    pub names: Names,
    files: FilenameCompleter,
}

impl SqlHelper {
    pub fn new(names: Names) -> SqlHelper {
        SqlHelper {
            names,
            files: FilenameCompleter::new(),
        }
    }
}

impl Completer for SqlHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        if file_argument(line, pos) {
            return self.files.complete(line, pos, ctx);
        }
        let (start, words) = complete(line, pos, &self.names);
        Ok((
            start,
            words
                .into_iter()
                .map(|w| Pair {
                    display: w.clone(),
                    replacement: w,
                })
                .collect(),
        ))
    }
}

impl Hinter for SqlHelper {
    type Hint = String;
}
impl Highlighter for SqlHelper {}
impl Validator for SqlHelper {}
impl rustyline::Helper for SqlHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names::of(&[
            ("lineitem", &["l_orderkey", "l_quantity"]),
            ("orders", &["o_orderkey", "o_orderdate"]),
        ])
    }

    fn words(line: &str) -> Vec<String> {
        complete(line, line.len(), &names()).1
    }

    #[test]
    fn keywords_complete_in_the_case_they_are_typed() {
        assert_eq!(words("sel"), ["select"]);
        assert_eq!(words("SEL"), ["SELECT"]);
        assert_eq!(
            complete("SELECT 1 FR", 11, &names()),
            (9, vec!["FROM".into()])
        );
    }

    #[test]
    fn tables_follow_from_and_columns_follow_a_table_name() {
        assert_eq!(words("SELECT * FROM li"), ["lineitem"]);
        // After FROM only tables, even for an empty word.
        assert_eq!(words("SELECT * FROM "), ["lineitem", "orders"]);
        assert_eq!(words("SELECT l_q"), ["l_quantity"]);
        assert_eq!(words("SELECT o_order"), ["o_orderdate", "o_orderkey"]);
        // `t.` narrows to t's columns; an unknown qualifier (an alias) gets all.
        assert_eq!(words("SELECT orders.o_"), ["o_orderdate", "o_orderkey"]);
        assert_eq!(
            complete("SELECT x.l_o", 12, &names()),
            (9, vec!["l_orderkey".into()])
        );
    }

    #[test]
    fn backslash_commands_and_their_arguments_complete() {
        assert_eq!(words("\\ti"), ["\\timing"]);
        assert_eq!(
            words("\\"),
            COMMANDS.iter().map(|c| c.to_string()).collect::<Vec<_>>()
        );
        assert_eq!(words("\\d or"), ["orders"]);
        assert_eq!(words("\\format j"), ["json"]);
        assert!(file_argument("\\i scr", 6));
        assert!(!file_argument("SELECT 1", 8));
    }

    #[test]
    fn names_are_read_from_the_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(
            &dir.path().join("db"),
            strata_storage::db::DbOptions {
                direct_io: false,
                buffer_pool_bytes: 1 << 20,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(Names::read(&db).tables.is_empty());
        let mut l = db
            .begin_create_load(
                "t",
                strata_storage::row::Schema::parse("id INT, note VARCHAR(10) NULL").unwrap(),
                strata_storage::db::TableOptions::default(),
                vec![],
            )
            .unwrap();
        l.append(&[
            strata_storage::row::Value::Int32(1),
            strata_storage::row::Value::Null,
        ])
        .unwrap();
        l.commit(&strata_storage::db::NoProgress).unwrap();
        let n = Names::read(&db);
        assert_eq!(complete("SELECT no", 9, &n).1, ["not", "note"]);
    }
}
