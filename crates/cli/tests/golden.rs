//! Golden tests: the `strata` command line and its output, side by side in
//! `tests/golden/*.txt`, on the modeled devices where counters and modeled times
//! are deterministic.
//!
//! A file is a script. A line `$ strata ARGS` runs the binary on the file's own
//! fresh database (`--db` is added); the lines after it, up to the next `$` or
//! `#` line, are its expected output (stdout, then stderr), with `[exit N]`
//! last when it fails. Lines starting with `#` are comments on the next command. Before comparing, output is normalized: the database path becomes
//! `<db>`, and wall-clock numbers (`wall time: … ms`, load rates) become `<…>`.
//!
//! `UPDATE_GOLDEN=1 cargo test -p strata-cli --test integration golden::` rewrites the files
//! with the output the binary gives now (review the diff before committing).

use std::path::{Path, PathBuf};
use std::process::Command;

/// One command of a script and what it should print.
struct Case {
    comments: Vec<String>,
    args: String,
    expected: String,
}

fn parse(text: &str) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    let mut comments = Vec::new();
    for line in text.lines() {
        if let Some(args) = line.strip_prefix("$ strata ") {
            cases.push(Case {
                comments: std::mem::take(&mut comments),
                args: args.to_string(),
                expected: String::new(),
            });
        } else if line.starts_with('#') {
            comments.push(line.to_string());
        } else if let Some(c) = cases.last_mut() {
            c.expected.push_str(line);
            c.expected.push('\n');
        } else {
            comments.push(line.to_string());
        }
    }
    for c in &mut cases {
        c.expected = c.expected.trim_end().to_string();
    }
    cases
}

/// Splits `args` like a shell would for the scripts' needs: words, and
/// double-quoted strings.
fn words(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for ch in args.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// Replaces the parts of the output that depend on the machine or the moment.
fn normalize(text: &str, db: &Path) -> String {
    let text = text.replace(&db.display().to_string(), "<db>");
    text.lines()
        .map(|line| {
            let mut l = line.to_string();
            for (marker, end) in [
                ("wall time: ", " ms"),
                (" in ", " s ("),
                (" s (", " rows/s)"),
                ("written at ", " MB/s"),
            ] {
                if let Some(i) = l.find(marker) {
                    let from = i + marker.len();
                    if let Some(j) = l[from..].find(end) {
                        let number = &l[from..from + j];
                        if !number.is_empty()
                            && number.chars().all(|c| c.is_ascii_digit() || c == '.')
                        {
                            l.replace_range(from..from + j, "<n>");
                        }
                    }
                }
            }
            l.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn run(db: &Path, args: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--db")
        .arg(db)
        .args(words(args))
        .env_remove("STRATA_FAULT")
        .output()
        .expect("run strata");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    text.truncate(text.trim_end().len());
    if !out.status.success() {
        text.push_str(&format!(
            "\n[exit {}]",
            out.status
                .code()
                .map_or("signal".to_string(), |c| c.to_string())
        ));
    }
    normalize(text.trim_end(), db)
}

fn render(cases: &[Case]) -> String {
    let mut out = String::new();
    for c in cases {
        for line in &c.comments {
            out.push_str(line);
            out.push('\n');
        }
        out.push_str(&format!("$ strata {}\n{}\n\n", c.args, c.expected));
    }
    out.trim_end().to_string() + "\n"
}

#[test]
fn golden_scripts() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/golden")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no golden files in {}", dir.display());
    let mut failures = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut cases = parse(&text);
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        for c in &mut cases {
            let got = run(&db, &c.args);
            if got != c.expected {
                if update {
                    c.expected = got;
                } else {
                    failures.push(format!(
                        "{}: $ strata {}\n--- expected\n{}\n--- got\n{}\n",
                        file.display(),
                        c.args,
                        c.expected,
                        got
                    ));
                }
            }
        }
        if update {
            std::fs::write(&file, render(&cases)).unwrap();
        }
    }
    assert!(
        failures.is_empty(),
        "{} command(s) differ from their golden output (UPDATE_GOLDEN=1 rewrites the files):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
