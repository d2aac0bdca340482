//! The short markdown summary written beside each experiment's figures.
//!
//! Kept to what a summary needs: a title, headings, paragraphs, figures,
//! plain tables, and a table that sets our numbers beside the paper's with
//! their ratio, which is the quickest way to see whether a reproduction
//! holds up.

use std::fmt::Write;
use std::fs;
use std::io;
use std::path::Path;

/// A markdown document under construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    text: String,
}

/// "Made by `strata …` at commit `abc1234`": this process's command line (the
/// binary by its file name) and the commit of the git checkout it runs in
/// (`-dirty` when tracked files have changes), so a results file says exactly
/// what produced it.
pub fn provenance() -> String {
    let mut args = std::env::args();
    let bin = args
        .next()
        .map(|a| {
            Path::new(&a)
                .file_name()
                .map_or(a.clone(), |f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let command: Vec<String> = std::iter::once(bin)
        .chain(args.map(|a| {
            if a.contains([' ', '"', '*']) {
                format!("'{a}'")
            } else {
                a
            }
        }))
        .collect();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = match git(&["rev-parse", "--short", "HEAD"]) {
        Some(c) => {
            // Results files are what a run writes, so they do not make the
            // code it ran dirty.
            let dirty = git(&[
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ":/",
                ":(top,exclude)results",
            ])
            .is_some_and(|s| !s.is_empty());
            format!("{c}{}", if dirty { "-dirty" } else { "" })
        }
        None => "unknown (not run in a git checkout)".into(),
    };
    format!("Made by `{}` at commit `{commit}`.", command.join(" "))
}

/// One number of ours beside the paper's.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// What is compared, e.g. "Q1 at 0.01%: smooth / full scan".
    pub what: String,
    pub ours: f64,
    pub paper: f64,
    /// Unit shown after both numbers ("" for ratios).
    pub unit: String,
    /// Where the paper's number comes from or why they differ.
    pub note: String,
}

impl Comparison {
    pub fn new(what: impl Into<String>, ours: f64, paper: f64) -> Self {
        Comparison {
            what: what.into(),
            ours,
            paper,
            unit: String::new(),
            note: String::new(),
        }
    }

    pub fn unit(mut self, unit: impl Into<String>) -> Self {
        self.unit = unit.into();
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = note.into();
        self
    }

    /// ours / paper, or None when the paper's value is 0 or not finite.
    pub fn ratio(&self) -> Option<f64> {
        (self.paper != 0.0 && self.paper.is_finite() && self.ours.is_finite())
            .then(|| self.ours / self.paper)
    }
}

impl Summary {
    /// A document starting with a `# title`.
    pub fn new(title: &str) -> Self {
        Summary {
            text: format!("# {}\n", one_line(title)),
        }
    }

    /// A `## heading`.
    pub fn heading(&mut self, text: &str) -> &mut Self {
        let _ = write!(self.text, "\n## {}\n", one_line(text));
        self
    }

    /// A paragraph of markdown (written as given).
    pub fn paragraph(&mut self, text: &str) -> &mut Self {
        let _ = write!(self.text, "\n{}\n", text.trim_end());
        self
    }

    /// A bulleted list.
    pub fn bullets<S: AsRef<str>>(&mut self, items: impl IntoIterator<Item = S>) -> &mut Self {
        self.text.push('\n');
        for item in items {
            let _ = writeln!(self.text, "- {}", one_line(item.as_ref()));
        }
        self
    }

    /// An image link, e.g. `image("Q1 time", "fig7.svg")` for a figure in
    /// the same directory.
    pub fn image(&mut self, alt: &str, path: &str) -> &mut Self {
        let _ = write!(
            self.text,
            "\n![{}]({})\n",
            alt.replace(']', "\\]"),
            path.replace(' ', "%20")
        );
        self
    }

    /// A table; cells are escaped (`|` and line breaks) and rows shorter
    /// than the header are padded. Columns whose cells all look numeric are
    /// right-aligned.
    pub fn table<H: AsRef<str>, C: AsRef<str>>(
        &mut self,
        header: &[H],
        rows: impl IntoIterator<Item = impl IntoIterator<Item = C>>,
    ) -> &mut Self {
        let ncol = header.len();
        let rows: Vec<Vec<String>> = rows
            .into_iter()
            .map(|r| {
                let mut r: Vec<String> = r.into_iter().map(|c| cell(c.as_ref())).collect();
                r.resize(ncol.max(r.len()), String::new());
                r
            })
            .collect();
        let ncol = rows.iter().map(Vec::len).fold(ncol, usize::max);
        let mut head: Vec<String> = header.iter().map(|h| cell(h.as_ref())).collect();
        head.resize(ncol, String::new());
        let numeric: Vec<bool> = (0..ncol)
            .map(|c| {
                rows.iter().any(|r| !r[c].is_empty())
                    && rows.iter().all(|r| r[c].is_empty() || looks_numeric(&r[c]))
            })
            .collect();
        self.text.push('\n');
        let _ = writeln!(self.text, "| {} |", head.join(" | "));
        let rule: Vec<&str> = numeric
            .iter()
            .map(|&n| if n { "---:" } else { "---" })
            .collect();
        let _ = writeln!(self.text, "| {} |", rule.join(" | "));
        for r in rows {
            let _ = writeln!(self.text, "| {} |", r.join(" | "));
        }
        self
    }

    /// The "figures beside the paper's" table: what, ours, paper's, and
    /// ours / paper, plus a note column if any comparison has a note.
    pub fn comparisons(&mut self, items: &[Comparison]) -> &mut Self {
        let with_notes = items.iter().any(|c| !c.note.is_empty());
        let mut header = vec!["", "ours", "paper", "ours / paper"];
        if with_notes {
            header.push("note");
        }
        let rows = items.iter().map(|c| {
            let val = |v: f64| {
                if c.unit.is_empty() {
                    num(v)
                } else {
                    format!("{} {}", num(v), c.unit)
                }
            };
            let mut r = vec![
                c.what.clone(),
                val(c.ours),
                val(c.paper),
                c.ratio()
                    .map_or("n/a".to_string(), |r| format!("{}x", num(r))),
            ];
            if with_notes {
                r.push(c.note.clone());
            }
            r
        });
        self.table(&header, rows)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Writes the document to `path` (e.g. `results/smooth_scan/README.md`),
    /// creating its directory.
    /// Writes the summary, ending with its provenance: the command line that
    /// made it and the git commit it ran at ([`provenance`]).
    pub fn write(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        fs::write(path, format!("{}\n---\n{}\n", self.text, provenance()))
    }
}

/// A number with three significant digits for tables: `0.00123`, `1.5`,
/// `42.3`, `1234`, `1.23e6`; integers below a million in full.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-4..1e6).contains(&a) {
        return format!("{:.2e}", v);
    }
    if v.fract() == 0.0 {
        return format!("{v}");
    }
    let digits = (2 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{:.*}", digits, v);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn one_line(s: &str) -> String {
    s.split(['\n', '\r'])
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn cell(s: &str) -> String {
    one_line(s).replace('|', "\\|")
}

fn looks_numeric(s: &str) -> bool {
    if s == "n/a" {
        return true;
    }
    let t = s
        .split(' ')
        .next()
        .unwrap_or("")
        .trim_end_matches(['x', '%']);
    t.parse::<f64>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_summary_says_what_made_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.md");
        Summary::new("t").write(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with("Made by `") && last.contains("` at commit `"),
            "{last}"
        );
    }

    #[test]
    fn numbers() {
        let got: Vec<String> = [
            0.0, 0.0012345, 1.5, 42.345, 1234.0, 1234.6, 2.5e6, -0.5, 1e-6,
        ]
        .iter()
        .map(|v| num(*v))
        .collect();
        assert_eq!(
            got,
            [
                "0", "0.00123", "1.5", "42.3", "1234", "1235", "2.50e6", "-0.5", "1.00e-6"
            ]
        );
    }

    #[test]
    fn document() {
        let mut s = Summary::new("Smooth Scan: Q1");
        s.paragraph("Smooth Scan stays within 2x of the best access path.")
            .image("time vs selectivity", "fig7 a.svg")
            .table(&["variant", "ms"], [vec!["a|b", "1.5"], vec!["c"]])
            .comparisons(&[
                Comparison::new("smooth / full at 100%", 1.2, 1.1),
                Comparison::new("index scan at 1%", 350.0, 0.0)
                    .unit("ms")
                    .note("paper: off scale"),
            ]);
        let text = s.as_str();
        assert!(
            text.starts_with("# Smooth Scan: Q1\n\nSmooth Scan stays"),
            "{text}"
        );
        assert!(text.contains("![time vs selectivity](fig7%20a.svg)"));
        assert!(
            text.contains("| variant | ms |\n| --- | ---: |\n| a\\|b | 1.5 |\n| c |  |\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "|  | ours | paper | ours / paper | note |\n| --- | ---: | ---: | ---: | --- |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| smooth / full at 100% | 1.2 | 1.1 | 1.09x |  |"),
            "{text}"
        );
        assert!(
            text.contains("| index scan at 1% | 350 ms | 0 ms | n/a | paper: off scale |"),
            "{text}"
        );
    }
}
