//! The interactive session's commands (issue 54), driven through stdin as a
//! script would: `\x` (expanded display), `\o FILE` and `\o` (results to a
//! file and back), `\i FILE` (a file's statements and commands), `\?`; and
//! `strata sql --help` naming the command a user types.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use strata_storage::Database;

fn db() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(Database::create(&path, common::options()).unwrap());
    (dir, path)
}

/// `strata-sql sql` (table format) with `input` on its standard input.
fn session(db: &Path, cwd: &Path, input: &str) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata-sql"));
    c.args(["sql", "--device", "buffered", "--db"])
        .arg(db)
        .current_dir(cwd);
    common::with_stdin(c, input)
}

use common::lossy as text;

const SETUP: &str = "CREATE TABLE t (id INT NOT NULL, name VARCHAR(10));\n\
                     INSERT INTO t VALUES (1, 'ada'), (2, NULL);\n";

#[test]
fn expanded_display_shows_a_record_per_row() {
    let (dir, db) = db();
    let o = session(
        &db,
        dir.path(),
        &format!(
            "{SETUP}\\x\nSELECT id, name FROM t ORDER BY id;\n\\x off\nSELECT id FROM t WHERE id = 1;\n"
        ),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    // Piped, the command's own words go to stderr; stdout holds results.
    assert!(text(&o.stderr).contains("expanded display is on"));
    let records = "-[ RECORD 1 ]\nid   | 1\nname | ada\n-[ RECORD 2 ]\nid   | 2\nname |\n";
    assert!(out.contains(records), "{out}");
    // \x off: the boxed table again.
    assert!(
        out.ends_with("+----+\n| id |\n+----+\n| 1  |\n+----+\n"),
        "{out}"
    );
}

#[test]
fn results_go_to_the_file_o_names_until_o_alone() {
    let (dir, db) = db();
    let file = dir.path().join("out.csv");
    let o = session(
        &db,
        dir.path(),
        &format!(
            "{SETUP}\\format csv\n\\o {}\nSELECT id FROM t ORDER BY id;\n\\d t\n\\o\nSELECT name FROM t WHERE id = 1;\n",
            file.display()
        ),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.starts_with("id\n1\n2\n"), "{written}");
    assert!(written.contains("  id INT NOT NULL\n"), "{written}");
    let out = text(&o.stdout);
    assert!(out.ends_with("name\nada\n"), "{out}");
    assert!(!out.contains("id\n1\n2"), "{out}");
    // A file that cannot be written is an error; results stay on stdout.
    let o = session(
        &db,
        dir.path(),
        "\\format csv\n\\o /nonexistent/dir/x.csv\nSELECT 3 AS n;\n",
    );
    assert!(text(&o.stderr).contains("cannot write /nonexistent/dir/x.csv"));
    assert_eq!(text(&o.stdout), "n\n3\n");
}

#[test]
fn i_runs_the_statements_and_commands_of_a_file() {
    let (dir, db) = db();
    std::fs::write(
        dir.path().join("setup.sql"),
        "-- a script\nCREATE TABLE u (k INT);\nINSERT INTO u\n  VALUES (7), (8);\n\\format csv\nSELECT sum(k) AS total FROM u",
    )
    .unwrap();
    let o = session(
        &db,
        dir.path(),
        "\\i setup.sql\nSELECT count(*) AS n FROM u;\n\\i missing.sql\n",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    // The INSERT's count, the last statement (no `;`), then the session's own.
    assert_eq!(
        text(&o.stdout),
        "+-------+\n| count |\n+-------+\n| 2     |\n+-------+\ntotal\n15\nn\n2\n"
    );
    assert!(
        text(&o.stderr).contains("cannot read missing.sql"),
        "{}",
        text(&o.stderr)
    );
    // A file that includes itself stops at a depth limit, said once.
    std::fs::write(dir.path().join("loop.sql"), "\\i loop.sql\n").unwrap();
    let o = session(&db, dir.path(), "\\i loop.sql\n");
    assert!(
        text(&o.stderr).contains("more than 16 deep"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn help_lists_the_commands() {
    let (dir, db) = db();
    let o = session(&db, dir.path(), "\\?\n");
    let out = text(&o.stdout);
    for cmd in [
        "\\o [FILE]",
        "\\i FILE",
        "\\x",
        "\\d [table]",
        "Tab completes",
    ] {
        assert!(out.contains(cmd), "{cmd} missing:\n{out}");
    }
}

#[test]
fn usage_names_strata_sql() {
    let o = Command::new(env!("CARGO_BIN_EXE_strata-sql"))
        .args(["sql", "--help"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let out = text(&o.stdout);
    assert!(out.contains("Usage: strata sql [OPTIONS]"), "{out}");
    assert!(!out.contains("strata-sql"), "{out}");
}
