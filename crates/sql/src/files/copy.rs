//! `COPY (SELECT …) TO 'file'` and `COPY table [(columns)] TO 'file'`:
//! a query's rows written to a Parquet or CSV file.
//!
//! strata builds DataFusion without its Parquet support (it costs CI build
//! minutes), so DataFusion's own COPY failed with "no registered file
//! format". strata runs COPY itself: the source is planned and run as a
//! query, and its batches are written as they come with the `parquet`
//! crate's `ArrowWriter` (Snappy-compressed) or arrow's CSV writer (a header
//! line, `,` between fields, NULL as the empty field, dates as
//! `YYYY-MM-DD`). The statement answers the number of rows written.
//!
//! The format is the `FORMAT` option when given, else the file's extension
//! (`.parquet`/`.pq`, `.csv`/`.tsv`/`.txt`). Both PostgreSQL's and
//! DuckDB's option syntax (`(FORMAT csv, HEADER false, DELIMITER ';')`,
//! `WITH (…)`, legacy `CSV HEADER`) and DataFusion's (`STORED AS PARQUET`,
//! `OPTIONS ('format.has_header' 'false')`) are read. The rows go to a
//! temporary file beside the target, renamed over it only when every row is
//! written: a COPY that fails leaves no partial file and an existing one
//! unchanged.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::csv::WriterBuilder;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::SessionState;
use datafusion::execution::context::SessionContext;
use datafusion::sql::parser::{CopyToSource, CopyToStatement, DFParser, Statement as DfStatement};
use datafusion::sql::sqlparser::ast::{
    CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Ident, ObjectName,
    Statement, Value,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;
use futures::StreamExt;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::error::SqlError;
use crate::stop::{Stop, Stopped};

/// The file formats COPY writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    Parquet,
    Csv,
}

impl FileFormat {
    /// The format a name says (`parquet`, `csv`, case-insensitive).
    pub fn named(name: &str) -> Option<FileFormat> {
        match name.to_ascii_lowercase().as_str() {
            "parquet" => Some(FileFormat::Parquet),
            "csv" => Some(FileFormat::Csv),
            _ => None,
        }
    }

    /// The format a file's extension says.
    pub fn of_path(path: &Path) -> Option<FileFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "parquet" | "pq" => Some(FileFormat::Parquet),
            "csv" | "tsv" | "txt" => Some(FileFormat::Csv),
            _ => None,
        }
    }
}

/// What rows a COPY writes.
#[derive(Clone, Debug)]
enum Source {
    /// A query, as written.
    Query(String),
    /// A table and the columns to write (all when empty).
    Table(ObjectName, Vec<Ident>),
}

/// A parsed `COPY … TO 'file'`.
#[derive(Clone, Debug)]
pub struct CopyTo {
    source: Source,
    pub path: PathBuf,
    pub format: FileFormat,
    /// CSV: a header line naming the columns (default true).
    pub header: bool,
    /// CSV: the field separator (default `,`).
    pub delimiter: u8,
    /// CSV: the text written for NULL (default: the empty field).
    pub null: String,
}

fn query(msg: impl Into<String>) -> SqlError {
    SqlError::Query(msg.into())
}

/// Recognizes a `COPY … TO 'file'` statement; `None` for any other
/// statement (the session plans it as usual). An error says what is wrong
/// with the COPY.
pub fn parse(sql: &str) -> Option<Result<CopyTo, SqlError>> {
    let head = sql.trim_start();
    if !head
        .get(..4)
        .is_some_and(|w| w.eq_ignore_ascii_case("copy"))
        || head[4..]
            .chars()
            .next()
            .is_some_and(|c| !c.is_whitespace() && c != '(')
    {
        return None;
    }
    // PostgreSQL's and DuckDB's syntax first, then DataFusion's.
    match postgres(sql) {
        Some(copy) => Some(copy),
        None => match DFParser::parse_sql_with_dialect(sql, &GenericDialect {}) {
            Ok(mut stmts) if stmts.len() == 1 => match stmts.pop_front() {
                Some(DfStatement::CopyTo(c)) => Some(datafusion_copy(&c)),
                _ => None,
            },
            // The session parses it again and reports the error.
            _ => None,
        },
    }
}

/// A COPY in PostgreSQL's syntax, when the whole statement is one.
fn postgres(sql: &str) -> Option<Result<CopyTo, SqlError>> {
    let dialect = GenericDialect {};
    let mut parser = Parser::new(&dialect).try_with_sql(sql).ok()?;
    let stmt = parser.parse_statement().ok()?;
    while parser.consume_token(&Token::SemiColon) {}
    if parser.peek_token().token != Token::EOF {
        return None;
    }
    let Statement::Copy {
        source,
        to,
        target,
        options,
        legacy_options,
        ..
    } = stmt
    else {
        return None;
    };
    Some(postgres_copy(source, to, target, options, legacy_options))
}

fn postgres_copy(
    source: CopySource,
    to: bool,
    target: CopyTarget,
    options: Vec<CopyOption>,
    legacy: Vec<CopyLegacyOption>,
) -> Result<CopyTo, SqlError> {
    if !to {
        return Err(query(
            "COPY … FROM is not supported: read a file with INSERT INTO t SELECT * FROM \
             read_csv('file.csv') (or read_parquet), or `strata load`",
        ));
    }
    let CopyTarget::File { filename } = target else {
        return Err(query(format!(
            "COPY … TO {target}: only a file can be written (COPY … TO 'file.parquet')"
        )));
    };
    let source = match source {
        CopySource::Query(q) => Source::Query(q.to_string()),
        CopySource::Table {
            table_name,
            columns,
        } => Source::Table(table_name, columns),
    };
    let mut format = None;
    let mut csv = CsvOptions::default();
    for o in options {
        match o {
            CopyOption::Format(f) => format = Some(format_named(&f.value)?),
            CopyOption::Header(h) => csv.header = Some(h),
            CopyOption::Delimiter(d) => csv.delimiter = Some(ascii(d)?),
            CopyOption::Null(n) => csv.null = Some(n),
            other => return Err(query(format!("COPY: option {other} is not supported"))),
        }
    }
    for o in legacy {
        match o {
            CopyLegacyOption::Csv(opts) => {
                format = Some(FileFormat::Csv);
                for c in opts {
                    match c {
                        CopyLegacyCsvOption::Header => csv.header = Some(true),
                        other => {
                            return Err(query(format!("COPY: option {other} is not supported")));
                        }
                    }
                }
            }
            CopyLegacyOption::Delimiter(d) => csv.delimiter = Some(ascii(d)?),
            CopyLegacyOption::Null(n) => csv.null = Some(n),
            CopyLegacyOption::Header => csv.header = Some(true),
            other => return Err(query(format!("COPY: option {other} is not supported"))),
        }
    }
    CopyTo::new(source, filename, format, csv)
}

/// A COPY in DataFusion's syntax (`STORED AS`, `OPTIONS (…)`).
fn datafusion_copy(c: &CopyToStatement) -> Result<CopyTo, SqlError> {
    if !c.partitioned_by.is_empty() {
        return Err(query("COPY: PARTITIONED BY is not supported"));
    }
    let source = match &c.source {
        CopyToSource::Query(q) => Source::Query(q.to_string()),
        CopyToSource::Relation(name) => Source::Table(name.clone(), Vec::new()),
    };
    let mut format = c.stored_as.as_deref().map(format_named).transpose()?;
    let mut csv = CsvOptions::default();
    for (key, value) in &c.options {
        let value = match value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
            Value::Number(n, _) => n.clone(),
            Value::Boolean(b) => b.to_string(),
            v => v.to_string(),
        };
        match key.to_ascii_lowercase().as_str() {
            "format" => format = Some(format_named(&value)?),
            "format.has_header" | "has_header" | "header" => {
                csv.header = Some(match value.to_ascii_lowercase().as_str() {
                    "true" | "1" | "on" => true,
                    "false" | "0" | "off" => false,
                    _ => return Err(query(format!("COPY: {key} '{value}' is not a boolean"))),
                })
            }
            "format.delimiter" | "delimiter" => {
                let mut chars = value.chars();
                match (chars.next(), chars.next()) {
                    (Some(d), None) => csv.delimiter = Some(ascii(d)?),
                    _ => return Err(query(format!("COPY: {key} must be one character"))),
                }
            }
            "format.null_value" | "null_value" | "null" => csv.null = Some(value),
            _ => return Err(query(format!("COPY: option '{key}' is not supported"))),
        }
    }
    CopyTo::new(source, c.target.clone(), format, csv)
}

/// The CSV options a COPY gave (`None`: not given).
#[derive(Default)]
struct CsvOptions {
    header: Option<bool>,
    delimiter: Option<u8>,
    null: Option<String>,
}

fn format_named(name: &str) -> Result<FileFormat, SqlError> {
    FileFormat::named(name).ok_or_else(|| {
        query(format!(
            "COPY: format '{name}' is not supported (FORMAT parquet or FORMAT csv)"
        ))
    })
}

fn ascii(c: char) -> Result<u8, SqlError> {
    u8::try_from(c)
        .ok()
        .filter(u8::is_ascii)
        .ok_or_else(|| query(format!("COPY: delimiter '{c}' must be one ASCII character")))
}

impl CopyTo {
    fn new(
        source: Source,
        target: String,
        format: Option<FileFormat>,
        csv: CsvOptions,
    ) -> Result<CopyTo, SqlError> {
        let path = PathBuf::from(&target);
        let format = match format.or_else(|| FileFormat::of_path(&path)) {
            Some(f) => f,
            None => {
                return Err(query(format!(
                    "COPY to '{target}': cannot tell the format from the file name; name it \
                     .parquet or .csv, or add (FORMAT parquet) or (FORMAT csv)"
                )));
            }
        };
        if format == FileFormat::Parquet
            && (csv.header.is_some() || csv.delimiter.is_some() || csv.null.is_some())
        {
            return Err(query(
                "COPY: HEADER, DELIMITER and NULL are options of CSV, not of Parquet",
            ));
        }
        let tsv = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("tsv"));
        Ok(CopyTo {
            source,
            path,
            format,
            header: csv.header.unwrap_or(true),
            delimiter: csv.delimiter.unwrap_or(if tsv { b'\t' } else { b',' }),
            null: csv.null.unwrap_or_default(),
        })
    }

    /// The query whose rows are written, as SQL.
    pub fn query_sql(&self) -> String {
        match &self.source {
            Source::Query(q) => q.clone(),
            Source::Table(name, columns) if columns.is_empty() => format!("SELECT * FROM {name}"),
            Source::Table(name, columns) => {
                let cols: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
                format!("SELECT {} FROM {name}", cols.join(", "))
            }
        }
    }
}

/// Where the rows go while they are written: a hidden file beside the
/// target, renamed over it at the end.
fn temporary(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.strata-copy-{}", std::process::id()))
}

/// An open output file of either format.
enum Output {
    Parquet(ArrowWriter<BufWriter<File>>),
    Csv(datafusion::arrow::csv::Writer<BufWriter<File>>),
}

impl Output {
    fn open(copy: &CopyTo, file: File, schema: &SchemaRef) -> Result<Output, String> {
        let out = BufWriter::with_capacity(1 << 20, file);
        Ok(match copy.format {
            FileFormat::Parquet => {
                let props = WriterProperties::builder()
                    .set_compression(Compression::SNAPPY)
                    .build();
                Output::Parquet(
                    ArrowWriter::try_new(out, schema.clone(), Some(props))
                        .map_err(|e| e.to_string())?,
                )
            }
            FileFormat::Csv => Output::Csv(
                WriterBuilder::new()
                    .with_header(copy.header)
                    .with_delimiter(copy.delimiter)
                    .with_null(copy.null.clone())
                    .build(out),
            ),
        })
    }

    fn write(&mut self, b: &RecordBatch) -> Result<(), String> {
        match self {
            Output::Parquet(w) => w.write(b).map_err(|e| e.to_string()),
            Output::Csv(w) => w.write(b).map_err(|e| e.to_string()),
        }
    }

    /// Finishes the file and syncs it to the device.
    fn finish(self) -> Result<(), String> {
        let out = match self {
            Output::Parquet(w) => w.into_inner().map_err(|e| e.to_string())?,
            Output::Csv(w) => w.into_inner(),
        };
        let file = out.into_inner().map_err(|e| e.error().to_string())?;
        file.sync_all().map_err(|e| e.to_string())
    }
}

/// Runs `copy`: plans its query with `state`, runs it in `ctx` on
/// `runtime` and writes the rows; the number of rows written, or `None` when
/// `stop` stopped it first (then no file is left behind).
pub(crate) fn run(
    copy: &CopyTo,
    state: SessionState,
    ctx: &SessionContext,
    runtime: &tokio::runtime::Runtime,
    stop: &Stop,
) -> Result<Result<u64, Stopped>, SqlError> {
    let sql = copy.query_sql();
    let dialect = state.config().options().sql_parser.dialect;
    let stmt = state
        .sql_to_statement(&sql, &dialect)
        .map(crate::rules::exponent_literal::exponents_as_double)?;
    crate::rules::depth::check(&stmt)?;
    let tmp = temporary(&copy.path);
    let target = copy.path.display().to_string();
    let io = |e: String| SqlError::Execution(format!("COPY to '{target}': {e}"));
    let work = async {
        let plan = state.statement_to_plan(stmt).await?;
        let df = ctx.execute_logical_plan(plan).await?;
        let schema = crate::result_types::plain_schema(&Arc::new(df.schema().as_arrow().clone()));
        let mut stream = df.execute_stream().await?;
        let file = File::create(&tmp).map_err(|e| io(e.to_string()))?;
        let mut out = Output::open(copy, file, &schema).map_err(io)?;
        let mut rows = 0u64;
        while let Some(b) = stream.next().await {
            let b = crate::result_types::plain_batch(b?)
                .map_err(datafusion::error::DataFusionError::from)?;
            rows += b.num_rows() as u64;
            out.write(&b).map_err(io)?;
        }
        out.finish().map_err(io)?;
        std::fs::rename(&tmp, &copy.path).map_err(|e| io(e.to_string()))?;
        Ok::<_, SqlError>(rows)
    };
    let answer = match runtime.block_on(stop.run(work)) {
        Ok(r) => r.map(Ok),
        Err(stopped) => Ok(Err(stopped)),
    };
    if !matches!(answer, Ok(Ok(_))) {
        let _ = std::fs::remove_file(&tmp);
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(sql: &str) -> CopyTo {
        parse(sql).expect("a COPY").expect("parses")
    }

    #[test]
    fn the_format_comes_from_the_option_or_the_extension() {
        assert_eq!(parsed("COPY t TO 'x.parquet'").format, FileFormat::Parquet);
        assert_eq!(parsed("copy t to 'x.CSV'").format, FileFormat::Csv);
        let c = parsed("COPY (SELECT 1) TO 'x.out' (FORMAT csv, HEADER false, DELIMITER ';')");
        assert_eq!(
            (c.format, c.header, c.delimiter),
            (FileFormat::Csv, false, b';')
        );
        assert_eq!(
            parsed("COPY t TO 'x.out' WITH (FORMAT parquet)").format,
            FileFormat::Parquet
        );
        assert_eq!(
            parsed("COPY t TO 'x.out' STORED AS PARQUET").format,
            FileFormat::Parquet
        );
        assert!(!parsed("COPY t TO 'x.csv' OPTIONS ('format.has_header' 'false')").header);
        assert_eq!(
            parsed("COPY t (a, b) TO 'x.csv'").query_sql(),
            "SELECT a, b FROM t"
        );
        assert!(parse("SELECT 1").is_none());
        assert!(parse("copyx").is_none());
        for bad in [
            "COPY t TO 'x.dat'",
            "COPY t TO 'x.csv' (FORMAT xml)",
            "COPY t FROM 'x.csv'",
            "COPY t TO STDOUT",
            "COPY t TO 'x.parquet' (HEADER)",
        ] {
            assert!(matches!(parse(bad), Some(Err(_))), "{bad}");
        }
    }
}
