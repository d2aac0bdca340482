//! Copying strata tables into PostgreSQL: the DDL from a strata schema, the
//! rows in COPY text format through the client's COPY writer, and the
//! fingerprints that decide whether an earlier run's copy can be reused.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use postgres::{Client, SimpleQueryMessage};
use strata_storage::row::{DataType, Schema, Value, format_date, format_decimal};
use strata_storage::{Database, DbOptions, StorageError, Table};

use super::cluster::Cluster;
use super::options::{quote_ident, quote_literal};

/// The PostgreSQL type of a strata column type.
pub fn pg_type(ty: &DataType) -> String {
    match ty {
        DataType::Int32 => "integer".into(),
        DataType::Int64 => "bigint".into(),
        DataType::Float64 => "double precision".into(),
        DataType::Decimal { precision, scale } => format!("numeric({precision},{scale})"),
        DataType::Date => "date".into(),
        DataType::Timestamp => "timestamp".into(),
        DataType::Char { len } => format!("char({len})"),
        DataType::Varchar {
            len: strata_storage::row::TEXT_LEN,
        } => "text".into(),
        DataType::Varchar { len } => format!("varchar({len})"),
        DataType::Bool => "boolean".into(),
    }
}

/// `CREATE TABLE` for a strata schema: the micro-benchmark table becomes
/// `(c1 integer NOT NULL, ..., c10 integer NOT NULL)`.
pub fn create_table_sql(table: &str, schema: &Schema) -> String {
    let cols: Vec<String> = schema
        .columns
        .iter()
        .map(|c| {
            format!(
                "{} {}{}",
                quote_ident(&c.name),
                pg_type(&c.ty),
                if c.nullable { "" } else { " NOT NULL" }
            )
        })
        .collect();
    format!("CREATE TABLE {} ({})", quote_ident(table), cols.join(", "))
}

/// PostgreSQL's name for a strata index of `table`: index names share one
/// namespace with tables in PostgreSQL, so a name not already starting with
/// `<table>_` gets that prefix (`microbench_c2` stays, `pk` on `orders`
/// becomes `orders_pk`).
pub fn pg_index_name(table: &str, index: &str) -> String {
    if index.starts_with(&format!("{table}_")) {
        index.to_string()
    } else {
        format!("{table}_{index}")
    }
}

/// `CREATE INDEX` (a B-tree) for a strata index on `columns` of `table`.
pub fn create_index_sql(table: &str, index: &str, columns: &[String]) -> String {
    let cols: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
    format!(
        "CREATE INDEX {} ON {} ({})",
        quote_ident(&pg_index_name(table, index)),
        quote_ident(table),
        cols.join(", ")
    )
}

/// The comment a fully loaded table carries (set after its rows, indexes
/// and statistics): its `CREATE TABLE` and `CREATE INDEX` statements. A
/// table whose comment differs was made by another schema or version, or
/// its load did not finish.
pub fn table_marker(table: &Table) -> String {
    let mut ddl = vec![create_table_sql(table.name(), table.schema())];
    ddl.extend(
        table
            .indexes()
            .iter()
            .map(|i| create_index_sql(table.name(), &i.def.name, &i.def.columns)),
    );
    format!("strata: {}", ddl.join("; "))
}

/// Appends one row in `COPY ... FROM STDIN` text format: tab-separated,
/// `\N` for NULL, backslash escapes for backslash, tab, newline and carriage
/// return, a newline at the end. `types` gives each column's type (a
/// DECIMAL's scale).
pub fn copy_text_line(row: &[Value], types: &[DataType], out: &mut Vec<u8>) {
    for (i, v) in row.iter().enumerate() {
        if i > 0 {
            out.push(b'\t');
        }
        // Writing to a Vec cannot fail.
        let _ = match v {
            Value::Null => out.write_all(b"\\N"),
            Value::Int32(x) => write!(out, "{x}"),
            Value::Int64(x) => write!(out, "{x}"),
            Value::Float64(x) if x.is_nan() => out.write_all(b"NaN"),
            Value::Float64(x) if x.is_infinite() => {
                out.write_all(if *x > 0.0 { b"Infinity" } else { b"-Infinity" })
            }
            // Display prints the shortest text that reads back as the same
            // double, without an exponent.
            Value::Float64(x) => write!(out, "{x}"),
            Value::Decimal(x) => {
                let scale = match types.get(i) {
                    Some(DataType::Decimal { scale, .. }) => *scale,
                    _ => 0,
                };
                out.write_all(format_decimal(*x, scale).as_bytes())
            }
            Value::Date(d) => out.write_all(format_date(*d).as_bytes()),
            Value::Timestamp(t) => {
                out.write_all(strata_storage::row::format_timestamp_micros(*t).as_bytes())
            }
            Value::Bool(b) => out.write_all(if *b { b"t" } else { b"f" }),
            Value::Str(s) => {
                for &b in s.as_bytes() {
                    match b {
                        b'\\' => out.extend_from_slice(b"\\\\"),
                        b'\t' => out.extend_from_slice(b"\\t"),
                        b'\n' => out.extend_from_slice(b"\\n"),
                        b'\r' => out.extend_from_slice(b"\\r"),
                        b => out.push(b),
                    }
                }
                Ok(())
            }
        };
    }
    out.push(b'\n');
}

// ---------------------------------------------------------------------------
// Fingerprints: is PostgreSQL's copy of a table the strata table's rows?

/// A table's row count followed by the exact sum of each of its
/// [`fingerprint_columns`] (NULLs skipped), computed the same way from the
/// strata rows and by [`fingerprint_sql`] in PostgreSQL. Cheap to compare and
/// sensitive to any generated data set changing (a scale factor, a seed);
/// floating-point and CHAR columns take no part (their sums are not exact or
/// their text is padded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint(pub Vec<i128>);

impl Fingerprint {
    pub fn rows(&self) -> u64 {
        self.0.first().map_or(0, |&n| n as u64)
    }
}

/// The columns a [`Fingerprint`] sums: integers, decimals (scaled), dates
/// (days since 1970-01-01), booleans (trues) and varchars (bytes).
pub fn fingerprint_columns(schema: &Schema) -> Vec<usize> {
    (0..schema.columns.len())
        .filter(|&i| {
            matches!(
                schema.columns[i].ty,
                DataType::Int32
                    | DataType::Int64
                    | DataType::Decimal { .. }
                    | DataType::Date
                    | DataType::Bool
                    | DataType::Varchar { .. }
            )
        })
        .collect()
}

/// The query PostgreSQL answers with a table's [`Fingerprint`]: one row of
/// integers (bigint and numeric; read as text by [`pg_fingerprint`]).
pub fn fingerprint_sql(table: &str, schema: &Schema) -> String {
    let mut terms = vec!["count(*)".to_string()];
    for i in fingerprint_columns(schema) {
        let col = &schema.columns[i];
        let c = quote_ident(&col.name);
        terms.push(match col.ty {
            DataType::Decimal { scale, .. } => {
                format!(
                    "trunc(coalesce(sum({c}), 0) * 1{})",
                    "0".repeat(scale as usize)
                )
            }
            DataType::Date => format!("coalesce(sum({c} - DATE '1970-01-01'), 0)"),
            DataType::Bool => format!("count(*) FILTER (WHERE {c})"),
            DataType::Varchar { .. } => format!("coalesce(sum(octet_length({c})), 0)"),
            _ => format!("coalesce(sum({c}::numeric), 0)"),
        });
    }
    format!("SELECT {} FROM {}", terms.join(", "), quote_ident(table))
}

/// Reads [`fingerprint_sql`]'s row, its values as the server's text.
fn parse_fingerprint(values: &[Option<&str>]) -> Result<Fingerprint> {
    values
        .iter()
        .map(|v| (*v)?.parse::<i128>().ok())
        .collect::<Option<Vec<_>>>()
        .filter(|v| !v.is_empty())
        .map(Fingerprint)
        .with_context(|| format!("unexpected fingerprint from PostgreSQL: {values:?}"))
}

/// Accumulates a [`Fingerprint`] from strata rows.
struct FingerprintSum {
    columns: Vec<usize>,
    sums: Vec<i128>,
}

impl FingerprintSum {
    fn new(schema: &Schema) -> FingerprintSum {
        let columns = fingerprint_columns(schema);
        FingerprintSum {
            sums: vec![0; columns.len() + 1],
            columns,
        }
    }

    fn add(&mut self, row: &[Value]) {
        self.sums[0] += 1;
        for (sum, &c) in self.sums[1..].iter_mut().zip(&self.columns) {
            *sum += match &row[c] {
                Value::Int32(v) => *v as i128,
                Value::Int64(v) | Value::Decimal(v) => *v as i128,
                Value::Date(d) => *d as i128,
                Value::Timestamp(_) => 0,
                Value::Bool(b) => *b as i128,
                Value::Str(s) => s.len() as i128,
                Value::Null | Value::Float64(_) => 0,
            };
        }
    }

    fn finish(self) -> Fingerprint {
        Fingerprint(self.sums)
    }
}

// ---------------------------------------------------------------------------
// Loading the strata rows.

/// The strata tables to copy.
pub(super) struct StrataSource {
    /// Kept open while the tables are read.
    _db: Database,
    pub(super) tables: Vec<Arc<Table>>,
}

impl StrataSource {
    pub(super) fn open(dir: &Path, tables: &[String]) -> Result<StrataSource> {
        let db = Database::open(
            dir,
            DbOptions {
                read_only: true,
                direct_io: false,
                ..DbOptions::default()
            },
        )
        .with_context(|| format!("opening the strata database {}", dir.display()))?;
        let tables = tables
            .iter()
            .map(|t| {
                db.table(t)
                    .with_context(|| format!("table {t} of the strata database {}", dir.display()))
            })
            .collect::<Result<_>>()?;
        Ok(StrataSource { _db: db, tables })
    }
}

/// The fingerprint of a strata table's rows (one scan).
fn strata_fingerprint(t: &Table) -> Result<Fingerprint> {
    let mut fp = FingerprintSum::new(t.schema());
    t.scan_rows(|_, row| {
        fp.add(&row);
        Ok(())
    })?;
    Ok(fp.finish())
}

/// Streams every row of `t`, in heap order, as COPY text into `w`; returns
/// the fingerprint of what it sent.
fn copy_rows(t: &Table, w: &mut dyn Write, progress: &mut dyn FnMut(&str)) -> Result<Fingerprint> {
    let types: Vec<DataType> = t.schema().columns.iter().map(|c| c.ty).collect();
    let mut fp = FingerprintSum::new(t.schema());
    let mut line = Vec::with_capacity(256);
    let mut n = 0u64;
    let step = (t.rows() / 10).max(1_000_000);
    t.scan_rows(|_, row| {
        line.clear();
        copy_text_line(&row, &types, &mut line);
        w.write_all(&line)
            .map_err(|e| StorageError::io("the COPY to PostgreSQL", e))?;
        fp.add(&row);
        n += 1;
        if n.is_multiple_of(step) {
            progress(&format!("  copied {n} / {} rows of {}", t.rows(), t.name()));
        }
        Ok(())
    })?;
    Ok(fp.finish())
}

/// The values of the one row of a simple query's answer, as the server's
/// text (the simple query protocol: numeric and json need no client-side
/// type).
pub(super) fn row_values(
    messages: &[SimpleQueryMessage],
    what: &str,
) -> Result<Vec<Option<String>>> {
    let mut rows = messages.iter().filter_map(|m| match m {
        SimpleQueryMessage::Row(r) => Some(r),
        _ => None,
    });
    let (Some(row), None) = (rows.next(), rows.next()) else {
        bail!("expected one row from {what}");
    };
    Ok((0..row.len())
        .map(|i| row.get(i).map(str::to_string))
        .collect())
}

/// PostgreSQL's table `name`: None when it does not exist, else its comment
/// ("" without one).
fn pg_marker(client: &mut Client, name: &str) -> Result<Option<String>> {
    let row = client.query_opt(
        "SELECT coalesce(obj_description(c, 'pg_class'), '') \
         FROM to_regclass($1::text) AS c WHERE c IS NOT NULL",
        &[&quote_ident(name)],
    )?;
    Ok(row.map(|r| r.get(0)))
}

fn pg_fingerprint(client: &mut Client, t: &Table) -> Result<Fingerprint> {
    let sql = fingerprint_sql(t.name(), t.schema());
    let messages = client
        .simple_query(&sql)
        .with_context(|| format!("running {sql}"))?;
    let values = row_values(&messages, &sql)?;
    let values: Vec<Option<&str>> = values.iter().map(Option::as_deref).collect();
    parse_fingerprint(&values)
}

/// Why PostgreSQL's copy of `t` cannot be reused (None: it can).
fn reload_reason(
    client: &mut Client,
    t: &Table,
    progress: &mut dyn FnMut(&str),
) -> Result<Option<String>> {
    let marker = match pg_marker(client, t.name())? {
        None => return Ok(Some("not in PostgreSQL".into())),
        Some(m) => m,
    };
    if marker != table_marker(t) {
        return Ok(Some(
            "its PostgreSQL copy has other columns or indexes, or its load did not finish".into(),
        ));
    }
    progress(&format!(
        "PostgreSQL has {}: comparing its fingerprint with strata's",
        t.name()
    ));
    let theirs = pg_fingerprint(client, t)?;
    if theirs.rows() != t.rows() {
        return Ok(Some(format!(
            "PostgreSQL has {} rows, strata {}",
            theirs.rows(),
            t.rows()
        )));
    }
    if theirs != strata_fingerprint(t)? {
        return Ok(Some("the column sums differ".into()));
    }
    Ok(None)
}

/// A loaded table's sizes, for the notes.
pub(super) struct TableSize {
    pub(super) name: String,
    pub(super) rows: u64,
    pub(super) heap_bytes: u64,
    pub(super) index_bytes: u64,
}

/// Loads every table of `source` that PostgreSQL does not have already (see
/// the module documentation); returns their sizes in PostgreSQL.
pub(super) fn load_tables(
    cluster: &mut Cluster,
    source: &StrataSource,
    progress: &mut dyn FnMut(&str),
    notes: &mut Vec<String>,
) -> Result<Vec<TableSize>> {
    let data_dir = cluster.data.clone();
    let client = cluster.client()?;
    let mut reused = Vec::new();
    let mut loaded = Vec::new();
    for t in &source.tables {
        match reload_reason(client, t, progress)? {
            None => reused.push(t.name().to_string()),
            Some(why) => {
                progress(&format!("loading {} into PostgreSQL: {why}", t.name()));
                let secs = load_table(client, t, progress)?;
                loaded.push(format!("{} ({} rows, {secs:.1} s)", t.name(), t.rows()));
            }
        }
    }
    if !loaded.is_empty() {
        progress("CHECKPOINT");
        client.batch_execute("CHECKPOINT")?;
        notes.push(format!(
            "loaded into PostgreSQL (COPY from strata's heap, B-tree indexes as strata's, \
             VACUUM ANALYZE): {}",
            loaded.join(", ")
        ));
    }
    if !reused.is_empty() {
        notes.push(format!(
            "reused the PostgreSQL copies of {} from an earlier run (same columns, indexes, \
             rows and column sums); delete {} to reload",
            reused.join(", "),
            data_dir.display()
        ));
    }
    source
        .tables
        .iter()
        .map(|t| {
            let row = client.query_one(
                "SELECT pg_relation_size(r), pg_indexes_size(r) \
                 FROM CAST($1::text AS regclass) AS r",
                &[&quote_ident(t.name())],
            )?;
            let size = |i: usize| row.get::<_, i64>(i).max(0) as u64;
            Ok(TableSize {
                name: t.name().to_string(),
                rows: t.rows(),
                heap_bytes: size(0),
                index_bytes: size(1),
            })
        })
        .collect()
}

/// Drops and loads one table: CREATE TABLE and COPY in one transaction
/// (with wal_level = minimal the COPY into a table created in it skips the
/// WAL, and FREEZE writes the rows frozen), a check that PostgreSQL holds
/// the fingerprint of what was sent, the indexes, VACUUM ANALYZE, and last
/// the marker. Returns the seconds it took.
fn load_table(client: &mut Client, t: &Table, progress: &mut dyn FnMut(&str)) -> Result<f64> {
    let start = Instant::now();
    let qt = quote_ident(t.name());
    client.batch_execute(&format!("DROP TABLE IF EXISTS {qt}"))?;
    let mut tx = client.transaction()?;
    tx.batch_execute(&create_table_sql(t.name(), t.schema()))?;
    let copy = format!("COPY {qt} FROM STDIN WITH (FREEZE)");
    let mut w = BufWriter::with_capacity(1 << 20, tx.copy_in(&copy)?);
    // On an error the writer is dropped unfinished, which aborts the COPY,
    // and the transaction rolls back: no partial table is left.
    let sent = copy_rows(t, &mut w, progress)
        .with_context(|| format!("COPY of {} into PostgreSQL", t.name()))?;
    let copied = w
        .into_inner()
        .map_err(|e| e.into_error())
        .and_then(|w| w.finish().map_err(std::io::Error::other))
        .with_context(|| format!("COPY of {} into PostgreSQL", t.name()))?;
    tx.commit()?;
    let held = pg_fingerprint(client, t)?;
    if held != sent || sent.rows() != t.rows() || copied != t.rows() {
        bail!(
            "after COPY ({copied} rows) PostgreSQL's {} has fingerprint {:?} (rows, column \
             sums), strata sent {:?} of {} rows",
            t.name(),
            held.0,
            sent.0,
            t.rows()
        );
    }
    progress(&format!(
        "  copied {} rows of {} in {:.1} s",
        sent.rows(),
        t.name(),
        start.elapsed().as_secs_f64()
    ));
    for i in t.indexes() {
        let sql = create_index_sql(t.name(), &i.def.name, &i.def.columns);
        progress(&format!("  {sql}"));
        client.batch_execute(&sql)?;
    }
    progress(&format!("  VACUUM ANALYZE {}", t.name()));
    // VACUUM runs outside a transaction block: a statement of its own.
    client.batch_execute(&format!("VACUUM ANALYZE {qt}"))?;
    client.batch_execute(&format!(
        "COMMENT ON TABLE {qt} IS {}",
        quote_literal(&table_marker(t))
    ))?;
    Ok(start.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_storage::row::Column;

    #[test]
    fn fingerprint_sql_for_several_tables() {
        let nation = Schema::parse(
            "n_nationkey INT, n_name CHAR(25), n_regionkey INT, n_comment VARCHAR(152) NULL",
        )
        .unwrap();
        let lineitem = Schema::parse(
            "l_orderkey BIGINT, l_quantity DECIMAL(15,2), l_discount DECIMAL(15,0), \
             l_returnflag CHAR(1), l_shipdate DATE, l_price DOUBLE, l_late BOOL NULL",
        )
        .unwrap();
        let sql: Vec<String> = [("nation", &nation), ("lineitem", &lineitem)]
            .iter()
            .map(|(t, s)| fingerprint_sql(t, s))
            .collect();
        assert_eq!(
            sql,
            [
                "SELECT count(*), coalesce(sum(\"n_nationkey\"::numeric), 0), \
                 coalesce(sum(\"n_regionkey\"::numeric), 0), \
                 coalesce(sum(octet_length(\"n_comment\")), 0) FROM \"nation\"",
                "SELECT count(*), coalesce(sum(\"l_orderkey\"::numeric), 0), \
                 trunc(coalesce(sum(\"l_quantity\"), 0) * 100), \
                 trunc(coalesce(sum(\"l_discount\"), 0) * 1), \
                 coalesce(sum(\"l_shipdate\" - DATE '1970-01-01'), 0), \
                 count(*) FILTER (WHERE \"l_late\") FROM \"lineitem\"",
            ]
        );
        assert_eq!(fingerprint_columns(&lineitem), [0, 1, 2, 4, 6]);

        // The same sums from strata's values: decimals scaled, dates in days,
        // trues counted, NULLs and the unsummed columns skipped.
        let mut fp = FingerprintSum::new(&lineitem);
        let row = |key: i64, qty: i64, day: i32, late: Value| {
            vec![
                Value::Int64(key),
                Value::Decimal(qty),
                Value::Decimal(3),
                Value::Str("R".into()),
                Value::Date(day),
                Value::Float64(0.5),
                late,
            ]
        };
        fp.add(&row(1, 1750, 9000, Value::Bool(true)));
        fp.add(&row(1 << 40, -250, -3, Value::Null));
        fp.add(&row(7, 100, 1, Value::Bool(false)));
        let fp = fp.finish();
        assert_eq!(fp, Fingerprint(vec![3, (1 << 40) + 8, 1600, 9, 8998, 1]));
        assert_eq!(fp.rows(), 3);
        // The query's row, as the server's text, reads back as the same.
        let text = ["3", "1099511627784", "1600", "9", "8998", "1"].map(Some);
        assert_eq!(parse_fingerprint(&text).unwrap(), fp);
        let mut nfp = FingerprintSum::new(&nation);
        nfp.add(&[
            Value::Int32(5),
            Value::Str("ETHIOPIA".into()),
            Value::Int32(0),
            Value::Str("é!".into()),
        ]);
        nfp.add(&[
            Value::Int32(6),
            Value::Str("FRANCE".into()),
            Value::Int32(3),
            Value::Null,
        ]);
        assert_eq!(
            nfp.finish(),
            Fingerprint(vec![2, 11, 3, 3]),
            "bytes, not chars"
        );
        assert!(parse_fingerprint(&[]).is_err());
        assert!(parse_fingerprint(&[Some("3"), Some("1.5")]).is_err());
        assert!(parse_fingerprint(&[Some("3"), None]).is_err(), "a NULL sum");
        assert!(parse_fingerprint(&[Some("ERROR")]).is_err());
    }

    /// A strata database with `orders` (two indexes, one composite) and an
    /// index-less `region`.
    fn small_db(dir: &Path) -> Database {
        let db = Database::create(
            dir,
            DbOptions {
                direct_io: false,
                ..DbOptions::default()
            },
        )
        .unwrap();
        let schema = Schema::parse(
            "o_orderkey BIGINT, o_total DECIMAL(12,2), o_date DATE, o_note VARCHAR(20) NULL",
        )
        .unwrap();
        let indexes = vec![
            strata_storage::IndexSpec::new("orders_pk", &["o_orderkey"]),
            strata_storage::IndexSpec::new("by_date", &["o_date", "o_orderkey"]),
        ];
        let mut load = db
            .begin_create_load("orders", schema, Default::default(), indexes)
            .unwrap();
        for i in 0..1000i64 {
            let note = match i % 3 {
                0 => Value::Null,
                1 => Value::Str(format!("n\t{i}")),
                _ => Value::Str("back\\slash".into()),
            };
            let row = [
                Value::Int64(i),
                Value::Decimal(i * 101 - 5000),
                Value::Date(9000 + (i % 400) as i32),
                note,
            ];
            load.append(&row).unwrap();
        }
        load.commit(&strata_storage::db::NoProgress).unwrap();
        db.create_table(
            "region",
            Schema::parse("r_regionkey INT, r_name CHAR(25)").unwrap(),
            Default::default(),
        )
        .unwrap();
        db
    }

    #[test]
    fn indexes_and_marker_follow_the_strata_tables() {
        let dir = tempfile::tempdir().unwrap();
        drop(small_db(dir.path()));
        let src = StrataSource::open(dir.path(), &["orders".into(), "region".into()]).unwrap();
        let orders = &src.tables[0];
        assert_eq!(
            table_marker(orders),
            "strata: CREATE TABLE \"orders\" (\"o_orderkey\" bigint NOT NULL, \"o_total\" \
             numeric(12,2) NOT NULL, \"o_date\" date NOT NULL, \"o_note\" varchar(20)); \
             CREATE INDEX \"orders_pk\" ON \"orders\" (\"o_orderkey\"); \
             CREATE INDEX \"orders_by_date\" ON \"orders\" (\"o_date\", \"o_orderkey\")"
        );
        assert_eq!(
            table_marker(&src.tables[1]),
            "strata: CREATE TABLE \"region\" (\"r_regionkey\" integer NOT NULL, \"r_name\" \
             char(25) NOT NULL)"
        );
        assert_eq!(
            pg_index_name("microbench", "microbench_c2"),
            "microbench_c2"
        );
        assert_eq!(pg_index_name("a", "ab_c"), "a_ab_c");
        let e = StrataSource::open(dir.path(), &["orders".into(), "nope".into()])
            .err()
            .unwrap();
        assert!(
            format!("{e:#}").contains("table nope of the strata database"),
            "{e:#}"
        );
        // Q1 needs an index on c2.
        assert!(crate::postgres::sweep::check_q1_table(orders).is_err());
    }

    /// What COPY sends is every row in COPY text, and its fingerprint is the
    /// one a reuse check computes from the table.
    #[test]
    fn copy_streams_every_row_with_its_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        drop(small_db(dir.path()));
        let src = StrataSource::open(dir.path(), &["orders".into()]).unwrap();
        let t = &src.tables[0];
        let mut sent = Vec::new();
        let mut messages = Vec::new();
        let fp = copy_rows(t, &mut sent, &mut |m| messages.push(m.to_string())).unwrap();
        let text = String::from_utf8(sent).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1000);
        assert!(
            lines.contains(&"0\t-50.00\t1994-08-23\t\\N"),
            "{:?}",
            &lines[..3]
        );
        assert!(lines.contains(&"1\t-48.99\t1994-08-24\tn\\t1"));
        assert!(lines.contains(&"2\t-47.98\t1994-08-25\tback\\\\slash"));
        assert_eq!(fp, strata_fingerprint(t).unwrap());
        let sum_total: i128 = (0..1000).map(|i| (i * 101 - 5000) as i128).sum();
        let sum_days: i128 = (0..1000).map(|i| 9000 + (i % 400) as i128).sum();
        let note_bytes: i128 = (0..1000)
            .map(|i| match i % 3 {
                0 => 0,
                1 => format!("n\t{i}").len() as i128,
                _ => 10,
            })
            .sum();
        assert_eq!(
            fp,
            Fingerprint(vec![1000, 499_500, sum_total, sum_days, note_bytes])
        );
        assert!(messages.is_empty(), "no progress under a million rows");
    }

    #[test]
    fn copy_text_format() {
        let types = vec![
            DataType::Int32,
            DataType::Int64,
            DataType::Float64,
            DataType::Decimal {
                precision: 12,
                scale: 2,
            },
            DataType::Date,
            DataType::Varchar { len: 20 },
            DataType::Bool,
            DataType::Int32,
        ];
        let row = vec![
            Value::Int32(-7),
            Value::Int64(1 << 40),
            Value::Float64(0.1),
            Value::Decimal(-12345),
            Value::Date(0),
            Value::Str("a\tb\\c\nd\re".into()),
            Value::Bool(true),
            Value::Null,
        ];
        let mut out = Vec::new();
        copy_text_line(&row, &types, &mut out);
        copy_text_line(&[Value::Float64(f64::NEG_INFINITY)], &types[2..3], &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "-7\t1099511627776\t0.1\t-123.45\t1970-01-01\ta\\tb\\\\c\\nd\\re\tt\t\\N\n-Infinity\n"
        );
        let mb: Vec<Value> = (1..=10).map(Value::Int32).collect();
        let mut out = Vec::new();
        copy_text_line(&mb, &[DataType::Int32; 10], &mut out);
        assert_eq!(out, b"1\t2\t3\t4\t5\t6\t7\t8\t9\t10\n");
    }

    #[test]
    fn ddl_from_the_strata_schema() {
        let schema = Schema::new(vec![
            Column::new("c1", DataType::Int32, false),
            Column::new("note", DataType::Varchar { len: 40 }, true),
        ])
        .unwrap();
        assert_eq!(
            create_table_sql("microbench", &schema),
            "CREATE TABLE \"microbench\" (\"c1\" integer NOT NULL, \"note\" varchar(40))"
        );
        assert_eq!(
            create_table_sql("t", &strata_load::microbench_schema()),
            format!(
                "CREATE TABLE \"t\" ({})",
                (1..=10)
                    .map(|i| format!("\"c{i}\" integer NOT NULL"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
    }

    /// Every strata type through COPY into a real PostgreSQL and back as the
    /// server's text: DECIMAL scaled, DATE, CHAR padded, VARCHAR escapes,
    /// NULLs, doubles, booleans. A second load is a reuse.
    /// `cargo test -p strata-bench types_round_trip -- --ignored`; needs
    /// PostgreSQL (scripts/setup_postgres.sh).
    #[test]
    #[ignore = "needs PostgreSQL (scripts/setup_postgres.sh); ~10 s"]
    fn types_round_trip_through_real_postgres() {
        use super::super::cluster::{Owner, PgBins};
        let root = tempfile::Builder::new()
            .prefix("strata-pg-test")
            .tempdir_in("/tmp")
            .unwrap();
        let db_dir = root.path().join("strata.db");
        let db = Database::create(
            &db_dir,
            DbOptions {
                direct_io: false,
                ..DbOptions::default()
            },
        )
        .unwrap();
        let schema = Schema::parse(
            "k INT, big BIGINT, amt DECIMAL(10,2) NULL, d DATE NULL, code CHAR(5), \
             note VARCHAR(20) NULL, x DOUBLE NULL, ok BOOL NULL",
        )
        .unwrap();
        let mut load = db
            .begin_create_load("types", schema, Default::default(), vec![])
            .unwrap();
        let rows = [
            [
                Value::Int32(1),
                Value::Int64(-(1 << 40)),
                Value::Decimal(-12345),
                Value::Date(0),
                Value::Str("ab".into()),
                Value::Str("a\tb\\c\nd".into()),
                Value::Float64(0.1),
                Value::Bool(true),
            ],
            [
                Value::Int32(2),
                Value::Int64(0),
                Value::Null,
                Value::Null,
                Value::Str("abcde".into()),
                Value::Null,
                Value::Null,
                Value::Null,
            ],
            [
                Value::Int32(3),
                Value::Int64(7),
                Value::Decimal(5),
                Value::Date(-1),
                Value::Str("é".into()),
                Value::Str(String::new()),
                Value::Float64(f64::NEG_INFINITY),
                Value::Bool(false),
            ],
        ];
        for r in &rows {
            load.append(r).unwrap();
        }
        load.commit(&strata_storage::db::NoProgress).unwrap();
        drop(db);

        let source = StrataSource::open(&db_dir, &["types".into()]).unwrap();
        let bins = PgBins::find().unwrap();
        let owner = Owner::for_server().unwrap();
        let mut cluster = Cluster::prepare(
            &bins,
            owner,
            &root.path().join("pg"),
            &super::super::cluster::ServerConfig::reads("16MB"),
            &mut |_| {},
        )
        .unwrap();
        cluster.start().unwrap();
        let mut notes = Vec::new();
        let sizes = load_tables(&mut cluster, &source, &mut |_| {}, &mut notes).unwrap();
        assert_eq!((sizes[0].name.as_str(), sizes[0].rows), ("types", 3));
        assert!(notes[0].starts_with("loaded into PostgreSQL"), "{notes:?}");
        let messages = cluster
            .client()
            .unwrap()
            .simple_query("SELECT * FROM types ORDER BY k")
            .unwrap();
        let got: Vec<Vec<Option<&str>>> = messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i)).collect()),
                _ => None,
            })
            .collect();
        assert_eq!(
            got,
            [
                [
                    Some("1"),
                    Some("-1099511627776"),
                    Some("-123.45"),
                    Some("1970-01-01"),
                    Some("ab   "),
                    Some("a\tb\\c\nd"),
                    Some("0.1"),
                    Some("t"),
                ],
                [
                    Some("2"),
                    Some("0"),
                    None,
                    None,
                    Some("abcde"),
                    None,
                    None,
                    None,
                ],
                [
                    Some("3"),
                    Some("7"),
                    Some("0.05"),
                    Some("1969-12-31"),
                    Some("é    "),
                    Some(""),
                    Some("-Infinity"),
                    Some("f"),
                ],
            ]
        );
        // The next run finds the same fingerprint and reuses the table.
        let mut notes = Vec::new();
        load_tables(&mut cluster, &source, &mut |_| {}, &mut notes).unwrap();
        assert!(notes[0].starts_with("reused"), "{notes:?}");
        cluster.stop().unwrap();
    }
}
