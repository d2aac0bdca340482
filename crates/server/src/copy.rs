//! `COPY … TO STDOUT` and `COPY … FROM STDIN`: the protocol's copy mode, in
//! PostgreSQL's text format (tab-separated, `\N` for NULL, backslash escapes)
//! and CSV (RFC 4180 quoting, an empty unquoted field for NULL, optional
//! header), so psql's `\copy`, psycopg's `copy()` and pgbench-style loaders
//! work. (`COPY … TO 'file'` stays the SQL session's own: it writes the file
//! on the server.)
//!
//! Out: the query (or the table's columns) runs in the session and its rows
//! are written as copy data. In: rows are parsed as they arrive and inserted
//! in statements of [`ROWS_PER_INSERT`] rows, each value a literal of its
//! column's type ([`crate::params::text_literal`]); all of a COPY is one
//! transaction — the connection's block when one is open, else one of its
//! own — so a bad row leaves nothing behind, and the error names its line.

use pgwire::api::Type;
use strata_sql::arrow::array::{Array, ArrayRef, BooleanArray};
use strata_sql::arrow::datatypes::{DataType, Schema};
use strata_sql::arrow::record_batch::RecordBatch;
use strata_sql::arrow::util::display::{ArrayFormatter, FormatOptions};
use strata_sql::sqlparser::ast::{
    CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Statement,
};
use strata_sql::sqlparser::dialect::PostgreSqlDialect;
use strata_sql::sqlparser::parser::Parser;

use crate::params::text_literal;
use crate::reply::error;

/// Rows inserted per statement while copying in.
pub const ROWS_PER_INSERT: usize = 1000;

/// How copied rows are written.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub csv: bool,
    pub delimiter: char,
    pub header: bool,
    pub null: String,
    pub quote: char,
}

impl Layout {
    fn text() -> Layout {
        Layout {
            csv: false,
            delimiter: '\t',
            header: false,
            null: "\\N".into(),
            quote: '"',
        }
    }

    fn csv() -> Layout {
        Layout {
            csv: true,
            delimiter: ',',
            header: false,
            null: String::new(),
            quote: '"',
        }
    }
}

/// A COPY to the client or from it.
#[derive(Clone, Debug, PartialEq)]
pub enum Copy {
    /// Rows of `query` to the client.
    Out { query: String, layout: Layout },
    /// Rows from the client into `table` (`columns`: all when empty).
    In {
        table: String,
        columns: Vec<String>,
        layout: Layout,
    },
}

type Refusal = pgwire::error::PgWireError;

/// `sql` as a COPY to or from the client; `None` when it is not one (a
/// `COPY … 'file'` is the session's).
pub fn parse(sql: &str) -> Option<Result<Copy, Refusal>> {
    strata_sql::statement::first_word_of(sql, &["COPY"])?;
    let stmts = match Parser::parse_sql(&PostgreSqlDialect {}, sql) {
        Ok(s) => s,
        Err(e) => return Some(Err(error("42601", format!("COPY: {e}")))),
    };
    let [
        Statement::Copy {
            source,
            to,
            target,
            options,
            legacy_options,
            ..
        },
    ] = stmts.as_slice()
    else {
        return None;
    };
    if !matches!(target, CopyTarget::Stdin | CopyTarget::Stdout) {
        return None;
    }
    Some(copy(source, *to, target, options, legacy_options))
}

fn copy(
    source: &CopySource,
    to: bool,
    target: &CopyTarget,
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
) -> Result<Copy, Refusal> {
    let refuse = |m: String| error("0A000", format!("COPY: {m}"));
    let csv = options
        .iter()
        .any(|o| matches!(o, CopyOption::Format(f) if f.value.eq_ignore_ascii_case("csv")))
        || legacy.iter().any(|o| matches!(o, CopyLegacyOption::Csv(_)));
    let mut layout = if csv { Layout::csv() } else { Layout::text() };
    for o in options {
        match o {
            CopyOption::Format(f) => match f.value.to_ascii_lowercase().as_str() {
                "csv" | "text" => {}
                other => {
                    return Err(refuse(format!(
                        "FORMAT {other} is not supported (text, csv)"
                    )));
                }
            },
            CopyOption::Freeze(_) | CopyOption::Encoding(_) => {}
            CopyOption::Delimiter(c) => layout.delimiter = *c,
            CopyOption::Null(n) => layout.null = n.clone(),
            CopyOption::Header(h) => layout.header = *h,
            CopyOption::Quote(q) => layout.quote = *q,
            other => return Err(refuse(format!("option {other} is not supported"))),
        }
    }
    for o in legacy {
        match o {
            CopyLegacyOption::Csv(more) => {
                for c in more {
                    match c {
                        CopyLegacyCsvOption::Header => layout.header = true,
                        CopyLegacyCsvOption::Quote(q) => layout.quote = *q,
                        other => return Err(refuse(format!("option {other} is not supported"))),
                    }
                }
            }
            CopyLegacyOption::Delimiter(c) => layout.delimiter = *c,
            CopyLegacyOption::Null(n) => layout.null = n.clone(),
            CopyLegacyOption::Header => layout.header = true,
            other => return Err(refuse(format!("option {other} is not supported"))),
        }
    }
    if layout.header && !layout.csv {
        return Err(refuse("HEADER needs FORMAT csv".into()));
    }
    match (source, to, target) {
        (CopySource::Query(q), true, CopyTarget::Stdout) => Ok(Copy::Out {
            query: q.to_string(),
            layout,
        }),
        (
            CopySource::Table {
                table_name,
                columns,
            },
            true,
            CopyTarget::Stdout,
        ) => {
            let cols = if columns.is_empty() {
                "*".to_owned()
            } else {
                columns
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            Ok(Copy::Out {
                query: format!("SELECT {cols} FROM {table_name}"),
                layout,
            })
        }
        (
            CopySource::Table {
                table_name,
                columns,
            },
            false,
            CopyTarget::Stdin,
        ) => Ok(Copy::In {
            table: table_name.to_string(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            layout,
        }),
        (CopySource::Query(_), false, _) => {
            Err(error("42601", "COPY FROM needs a table, not a query"))
        }
        _ => Err(error("42601", "COPY: TO goes with STDOUT, FROM with STDIN")),
    }
}

/// One field of `array`'s row `row` as copy text (`None`: NULL).
fn field(formatter: &ArrayFormatter, array: &ArrayRef, row: usize) -> Option<String> {
    if array.is_null(row) {
        return None;
    }
    // PostgreSQL writes booleans as t and f.
    if let Some(b) = array.as_any().downcast_ref::<BooleanArray>() {
        return Some(if b.value(row) { "t" } else { "f" }.to_owned());
    }
    Some(formatter.value(row).to_string())
}

/// The copy text of `batch`'s rows, one line per row.
pub fn encode(batch: &RecordBatch, layout: &Layout) -> Result<String, Refusal> {
    let options = FormatOptions::default();
    let formatters = batch
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error("XX000", format!("COPY: {e}")))?;
    let mut out = String::new();
    for row in 0..batch.num_rows() {
        for (i, (f, c)) in formatters.iter().zip(batch.columns()).enumerate() {
            if i > 0 {
                out.push(layout.delimiter);
            }
            match field(f, c, row) {
                None => out.push_str(&layout.null),
                Some(v) if layout.csv => out.push_str(&csv_field(&v, layout)),
                Some(v) => out.push_str(&text_field(&v)),
            }
        }
        out.push('\n');
    }
    Ok(out)
}

/// The header line of a CSV copy.
pub fn header(schema: &Schema, layout: &Layout) -> String {
    let names: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| csv_field(f.name(), layout))
        .collect();
    format!("{}\n", names.join(&layout.delimiter.to_string()))
}

fn text_field(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

fn csv_field(v: &str, layout: &Layout) -> String {
    let q = layout.quote;
    let needs = v.is_empty()
        || v == layout.null
        || v.contains(layout.delimiter)
        || v.contains(q)
        || v.contains('\n')
        || v.contains('\r');
    if !needs {
        return v.to_owned();
    }
    let doubled = v.replace(q, &format!("{q}{q}"));
    format!("{q}{doubled}{q}")
}

/// Rows arriving from the client, parsed line by line.
pub struct Incoming {
    layout: Layout,
    /// Bytes of a line not complete yet.
    partial: Vec<u8>,
    /// Lines parsed so far (the header counts), for error messages.
    pub lines: usize,
    skip_header: bool,
    /// The client's end-of-data marker (`\.`) was seen.
    ended: bool,
}

impl Incoming {
    pub fn new(layout: Layout) -> Incoming {
        Incoming {
            skip_header: layout.header,
            layout,
            partial: Vec::new(),
            lines: 0,
            ended: false,
        }
    }

    /// The rows completed by `data`, each a list of fields (`None`: NULL).
    pub fn feed(&mut self, data: &[u8]) -> Result<Vec<Vec<Option<String>>>, Refusal> {
        self.partial.extend_from_slice(data);
        let mut rows = Vec::new();
        loop {
            if self.ended {
                self.partial.clear();
                break;
            }
            let Some(end) = self.line_end() else {
                break;
            };
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            if let Some(row) = self.line(&line[..line.len() - 1])? {
                rows.push(row);
            }
        }
        Ok(rows)
    }

    /// The rows of a last line without its newline.
    pub fn finish(&mut self) -> Result<Vec<Vec<Option<String>>>, Refusal> {
        if self.partial.is_empty() || self.ended {
            return Ok(Vec::new());
        }
        let line = std::mem::take(&mut self.partial);
        Ok(self.line(&line)?.into_iter().collect())
    }

    /// Where the line that starts the buffer ends (a newline outside CSV
    /// quotes).
    fn line_end(&self) -> Option<usize> {
        if !self.layout.csv {
            return self.partial.iter().position(|&b| b == b'\n');
        }
        let q = self.layout.quote as u8;
        let mut quoted = false;
        for (i, &b) in self.partial.iter().enumerate() {
            if b == q {
                quoted = !quoted;
            } else if b == b'\n' && !quoted {
                return Some(i);
            }
        }
        None
    }

    fn line(&mut self, raw: &[u8]) -> Result<Option<Vec<Option<String>>>, Refusal> {
        self.lines += 1;
        let line = std::str::from_utf8(raw).map_err(|e| {
            error(
                "22021",
                format!("COPY, line {}: invalid UTF-8: {e}", self.lines),
            )
        })?;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line == "\\." {
            self.ended = true;
            return Ok(None);
        }
        if self.skip_header {
            self.skip_header = false;
            return Ok(None);
        }
        let fields = if self.layout.csv {
            csv_fields(line, &self.layout)
        } else {
            text_fields(line, &self.layout)
        }
        .map_err(|m| error("22P04", format!("COPY, line {}: {m}", self.lines)))?;
        Ok(Some(fields))
    }
}

fn text_fields(line: &str, layout: &Layout) -> Result<Vec<Option<String>>, String> {
    line.split(layout.delimiter)
        .map(|f| {
            if f == layout.null {
                return Ok(None);
            }
            let mut out = String::with_capacity(f.len());
            let mut chars = f.chars();
            while let Some(c) = chars.next() {
                if c != '\\' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('t') => out.push('\t'),
                    Some('n') => out.push('\n'),
                    Some('r') => out.push('\r'),
                    Some('b') => out.push('\u{8}'),
                    Some('f') => out.push('\u{c}'),
                    Some('v') => out.push('\u{b}'),
                    Some(other) => out.push(other),
                    None => return Err("a field ends with a lone backslash".into()),
                }
            }
            Ok(Some(out))
        })
        .collect()
}

fn csv_fields(line: &str, layout: &Layout) -> Result<Vec<Option<String>>, String> {
    let q = layout.quote;
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut value = String::new();
        let mut was_quoted = false;
        if chars.peek() == Some(&q) {
            was_quoted = true;
            chars.next();
            loop {
                match chars.next() {
                    Some(c) if c == q => {
                        if chars.peek() == Some(&q) {
                            chars.next();
                            value.push(q);
                        } else {
                            break;
                        }
                    }
                    Some(c) => value.push(c),
                    None => return Err("a quoted field is not closed".into()),
                }
            }
        }
        while let Some(&c) = chars.peek() {
            if c == layout.delimiter {
                break;
            }
            if was_quoted {
                return Err(format!("unexpected '{c}' after a closing quote"));
            }
            value.push(c);
            chars.next();
        }
        let null = !was_quoted && value == layout.null;
        fields.push(if null { None } else { Some(value) });
        if chars.next().is_none() {
            break;
        }
    }
    Ok(fields)
}

/// `INSERT INTO table (columns) VALUES …` of `rows`, each field a literal
/// of its column's type; `first_line` numbers the rows in errors.
pub fn insert(
    table: &str,
    columns: &[(String, Type)],
    rows: &[Vec<Option<String>>],
    first_line: usize,
) -> Result<String, Refusal> {
    let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
    let mut sql = format!("INSERT INTO {table} ({}) VALUES ", names.join(", "));
    for (i, row) in rows.iter().enumerate() {
        let line = first_line + i;
        if row.len() != columns.len() {
            return Err(error(
                "22P04",
                format!(
                    "COPY {table}, line {line}: {} field(s), the table takes {}",
                    row.len(),
                    columns.len()
                ),
            ));
        }
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for (j, (v, (name, ty))) in row.iter().zip(columns).enumerate() {
            if j > 0 {
                sql.push_str(", ");
            }
            match v {
                None => sql.push_str("NULL"),
                Some(v) => sql.push_str(&text_literal(v, ty).map_err(|m| {
                    error(
                        "22P02",
                        format!("COPY {table}, line {line}, column {name}: {m}"),
                    )
                })?),
            }
        }
        sql.push(')');
    }
    Ok(sql)
}

/// A column's PostgreSQL type from its Arrow type.
pub fn pg_type(t: &DataType) -> Type {
    arrow_pg::datatypes::into_pg_type(t).unwrap_or(Type::TEXT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_statements_to_and_from_the_client_are_recognized() {
        let out = parse("COPY (SELECT 1) TO STDOUT WITH (FORMAT csv, HEADER)")
            .unwrap()
            .unwrap();
        assert!(matches!(out, Copy::Out { ref layout, .. } if layout.csv && layout.header));
        let psql = parse("COPY  t TO STDOUT csv").unwrap().unwrap();
        assert!(
            matches!(psql, Copy::Out { ref query, ref layout } if query == "SELECT * FROM t" && layout.csv)
        );
        let inp = parse("copy t (a, b) from stdin").unwrap().unwrap();
        assert_eq!(
            inp,
            Copy::In {
                table: "t".into(),
                columns: vec!["a".into(), "b".into()],
                layout: Layout::text()
            }
        );
        assert!(parse("COPY t TO '/tmp/x.csv'").is_none());
        assert!(parse("SELECT 1").is_none());
    }

    #[test]
    fn text_and_csv_lines_parse_with_escapes_quotes_and_nulls() {
        let mut text = Incoming::new(Layout::text());
        let rows = text.feed(b"1\ta\\tb\t\\N\n2\t").unwrap();
        assert_eq!(
            rows,
            vec![vec![Some("1".into()), Some("a\tb".into()), None]]
        );
        assert_eq!(
            text.feed(b"x\t\n\\.\n").unwrap(),
            vec![vec![Some("2".into()), Some("x".into()), Some("".into())]]
        );
        let mut csv = Incoming::new(Layout {
            header: true,
            ..Layout::csv()
        });
        let rows = csv
            .feed(b"k,v\n1,\"a,\"\"b\"\"\nc\"\n2,\n3,\"\"\n")
            .unwrap();
        assert_eq!(
            rows,
            vec![
                vec![Some("1".into()), Some("a,\"b\"\nc".into())],
                vec![Some("2".into()), None],
                vec![Some("3".into()), Some("".into())],
            ]
        );
        let mut bad = Incoming::new(Layout::csv());
        let e = bad.feed(b"1,\"x\"y\n").unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
    }
}
