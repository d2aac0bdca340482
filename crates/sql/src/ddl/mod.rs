//! `CREATE TABLE` (with `PRIMARY KEY` and `UNIQUE`, [`crate::ddl::constraint`]),
//! `CREATE TABLE ... AS SELECT` ([`crate::ddl::ctas`]), `CREATE [UNIQUE] INDEX`,
//! `DROP TABLE`, `DROP INDEX`, `ALTER TABLE` ([`crate::ddl::alter`]) and `CREATE`
//! / `DROP VIEW` ([`crate::ddl::view`]) on the strata database, recognized on the
//! statement's syntax tree before DataFusion plans it (DataFusion's own
//! CREATE TABLE would make an in-memory table, its views would not outlive
//! the session).
//!
//! SQL types map to strata's: INT/INTEGER → INT32, BIGINT → INT64,
//! DOUBLE/FLOAT/REAL → FLOAT64, DECIMAL(p,s)/NUMERIC(p,s) → DECIMAL with
//! p ≤ 18, DATE, TIMESTAMP (without time zone), CHAR(n) (CHAR alone is
//! CHAR(1)), VARCHAR(n), TEXT (and VARCHAR without a length), BOOLEAN.
//! Lengths are bytes, at most 4000; a TEXT value is as long as a row on a
//! page allows. Columns are nullable unless declared NOT NULL (or in the
//! PRIMARY KEY), as in SQL. Unquoted names are folded to lower case, as
//! DataFusion folds them in queries.

pub mod alter;
pub mod column;
pub mod constraint;
pub mod ctas;
pub mod describe;
pub mod object;
pub mod unique;
pub mod view;

use datafusion::sql::sqlparser::ast::{
    CreateIndex, CreateTable, Expr, ObjectName, ObjectType, Statement,
};
use strata_storage::Database;
use strata_storage::db::{IndexSpec, NoProgress, TableOptions};
use strata_storage::row::Schema;

use crate::ddl::alter::Alter;
use crate::ddl::column::column;
use crate::ddl::constraint::Key;
pub use crate::ddl::object::{Changed, Name};
pub(crate) use crate::ddl::object::{find_table, object_name, storage};
use crate::ddl::view::ViewSpec;
use crate::error::SqlError;

fn query(msg: String) -> SqlError {
    SqlError::Query(msg)
}

/// A DDL statement strata runs itself.
#[derive(Clone, Debug, PartialEq)]
pub enum Ddl {
    CreateTable {
        name: String,
        schema: Schema,
        if_not_exists: bool,
        /// PRIMARY KEY and UNIQUE constraints, made unique indexes.
        keys: Vec<Key>,
        /// `WITH (format = 'columns')`: a columnar table (strata-columns).
        columnar: bool,
    },
    /// `CREATE TABLE name AS query`.
    CreateTableAs {
        name: String,
        query: String,
        if_not_exists: bool,
    },
    CreateView(ViewSpec),
    DropView {
        names: Vec<Name>,
        if_exists: bool,
    },
    AlterTable(Alter),
    CreateIndex {
        name: Option<String>,
        table: Name,
        columns: Vec<Name>,
        /// Columns cached in the leaves' free space (`WITH (cache = 'c, d')`).
        cache: Vec<Name>,
        unique: bool,
        if_not_exists: bool,
    },
    DropTable {
        names: Vec<Name>,
        if_exists: bool,
    },
    DropIndex {
        names: Vec<Name>,
        table: Option<Name>,
        if_exists: bool,
    },
}

impl Ddl {
    /// The statement's name, for messages.
    pub fn verb(&self) -> &'static str {
        match self {
            Ddl::CreateTable { .. } => "CREATE TABLE",
            Ddl::CreateTableAs { .. } => "CREATE TABLE AS",
            Ddl::CreateView(_) => "CREATE VIEW",
            Ddl::DropView { .. } => "DROP VIEW",
            Ddl::AlterTable(_) => "ALTER TABLE",
            Ddl::CreateIndex { .. } => "CREATE INDEX",
            Ddl::DropTable { .. } => "DROP TABLE",
            Ddl::DropIndex { .. } => "DROP INDEX",
        }
    }
}

/// Recognizes the DDL statements strata runs itself; `None` for any other
/// statement (DataFusion's to plan). An error says what is not supported.
pub fn parse(stmt: &Statement) -> Option<Result<Ddl, SqlError>> {
    match stmt {
        Statement::CreateTable(c) => Some(create_table(c)),
        Statement::CreateIndex(c) => Some(create_index(c)),
        Statement::CreateView(v) => Some(crate::ddl::view::parse_create(v).map(Ddl::CreateView)),
        Statement::AlterTable(a) => Some(crate::ddl::alter::parse(a).map(Ddl::AlterTable)),
        Statement::Drop {
            object_type: ObjectType::View,
            if_exists,
            names,
            ..
        } => Some(
            names
                .iter()
                .map(|n| object_name(n, "view"))
                .collect::<Result<Vec<_>, _>>()
                .map(|names| Ddl::DropView {
                    names,
                    if_exists: *if_exists,
                }),
        ),
        Statement::Drop {
            object_type: object_type @ (ObjectType::Table | ObjectType::Index),
            if_exists,
            names,
            temporary,
            table,
            ..
        } => Some(drop(
            *object_type,
            *if_exists,
            names,
            *temporary,
            table.as_ref(),
        )),
        _ => None,
    }
}

fn create_table(c: &CreateTable) -> Result<Ddl, SqlError> {
    let name = object_name(&c.name, "table")?;
    let refuse = |what: &str| -> Result<Ddl, SqlError> {
        Err(query(format!(
            "CREATE TABLE {}: {what} is not supported",
            name.text
        )))
    };
    if c.or_replace {
        return refuse("OR REPLACE (DROP TABLE first)");
    }
    if c.temporary || c.external {
        return refuse("a TEMPORARY or EXTERNAL table");
    }
    if c.like.is_some() || c.clone.is_some() {
        return refuse("LIKE or CLONE");
    }
    if let Some(q) = &c.query {
        if !c.columns.is_empty() || !c.constraints.is_empty() {
            return refuse("a column list with AS (the query's columns are the table's)");
        }
        return Ok(Ddl::CreateTableAs {
            name: name.text,
            query: q.to_string(),
            if_not_exists: c.if_not_exists,
        });
    }
    if c.columns.is_empty() {
        return refuse("a table without columns");
    }
    let mut columns = Vec::new();
    let mut keys = Vec::new();
    for col in &c.columns {
        let (column, key) = column(&name.text, col)?;
        columns.push(column);
        keys.extend(key);
    }
    for k in &c.constraints {
        let (key, written) = crate::ddl::constraint::table_key(&name.text, k)?;
        keys.push(crate::ddl::constraint::resolve(
            &name.text,
            key,
            &written,
            &mut columns,
        )?);
    }
    crate::ddl::constraint::finish(&name.text, &keys, &mut columns)?;
    let columnar = table_format(&name.text, &c.table_options)?;
    let schema =
        Schema::new(columns).map_err(|e| query(format!("CREATE TABLE {}: {e}", name.text)))?;
    Ok(Ddl::CreateTable {
        name: name.text,
        schema,
        if_not_exists: c.if_not_exists,
        keys,
        columnar,
    })
}

/// `WITH (format = 'rows' | 'columns')` of CREATE TABLE: whether the table is
/// columnar. Any other option is refused, naming it.
fn table_format(
    table: &str,
    options: &datafusion::sql::sqlparser::ast::CreateTableOptions,
) -> Result<bool, SqlError> {
    use datafusion::sql::sqlparser::ast::{CreateTableOptions, SqlOption, Value};
    let list = match options {
        CreateTableOptions::None => return Ok(false),
        CreateTableOptions::With(l) => l,
        other => {
            return Err(query(format!(
                "CREATE TABLE {table}: the options {other} are not supported (strata knows WITH (format = 'rows' | 'columns'))"
            )));
        }
    };
    let mut columnar = false;
    for o in list {
        let format = match o {
            SqlOption::KeyValue { key, value } if key.value.eq_ignore_ascii_case("format") => {
                match value {
                    Expr::Value(v) => match &v.value {
                        Value::SingleQuotedString(s) => Some(s.clone()),
                        _ => None,
                    },
                    Expr::Identifier(i) => Some(i.value.clone()),
                    _ => None,
                }
            }
            _ => None,
        };
        match format.map(|f| f.parse::<strata_columns::Format>()) {
            Some(Ok(f)) => columnar = f == strata_columns::Format::Columns,
            Some(Err(e)) => return Err(query(format!("CREATE TABLE {table}: {e}"))),
            None => {
                return Err(query(format!(
                    "CREATE TABLE {table}: the storage parameter {o} is not supported (strata knows format = 'rows' | 'columns')"
                )));
            }
        }
    }
    Ok(columnar)
}

fn create_index(c: &CreateIndex) -> Result<Ddl, SqlError> {
    let table = object_name(&c.table_name, "table")?;
    let name = c
        .name
        .as_ref()
        .map(|n| object_name(n, "index").map(|n| n.text))
        .transpose()?;
    let refuse = |what: &str| -> Result<Ddl, SqlError> {
        Err(query(format!(
            "CREATE INDEX on {}: {what} is not supported",
            table.text
        )))
    };
    if c.predicate.is_some() {
        return refuse("a partial index (WHERE)");
    }
    if !c.include.is_empty() {
        return refuse(
            "INCLUDE (strata caches columns in the leaves' free space instead: \
             WITH (cache = 'c, d'))",
        );
    }
    let mut cache = Vec::new();
    for w in &c.with {
        match cache_parameter(w) {
            Some(names) if cache.is_empty() => cache = names,
            Some(_) => return refuse("cache given twice"),
            None => {
                return refuse(&format!(
                    "the storage parameter {w} (strata knows cache = 'c, d')"
                ));
            }
        }
    }
    if let Some(u) = &c.using
        && !u.to_string().eq_ignore_ascii_case("btree")
    {
        return refuse(&format!("USING {u} (strata's indexes are B+-trees)"));
    }
    let mut columns = Vec::new();
    for col in &c.columns {
        let o = &col.column;
        if o.options.asc == Some(false) || o.options.nulls_first.is_some() || o.with_fill.is_some()
        {
            return refuse(&format!("the key {o} (keys are ascending, NULLs first)"));
        }
        match &o.expr {
            Expr::Identifier(i) => columns.push(Name::of(i)),
            e => return refuse(&format!("the key {e} (index keys are columns)")),
        }
    }
    if columns.is_empty() {
        return refuse("an index without columns");
    }
    Ok(Ddl::CreateIndex {
        name,
        table,
        columns,
        cache,
        unique: c.unique,
        if_not_exists: c.if_not_exists,
    })
}

/// The columns of a `cache = 'c, d'` storage parameter (names folded to lower
/// case unless double-quoted inside the string); `None` for any other
/// parameter.
fn cache_parameter(w: &Expr) -> Option<Vec<Name>> {
    use datafusion::sql::sqlparser::ast::{BinaryOperator, Value};
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    } = w
    else {
        return None;
    };
    let Expr::Identifier(key) = left.as_ref() else {
        return None;
    };
    if !key.value.eq_ignore_ascii_case("cache") {
        return None;
    }
    let Expr::Value(v) = right.as_ref() else {
        return None;
    };
    let Value::SingleQuotedString(list) = &v.value else {
        return None;
    };
    Some(
        list.split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(
                |n| match n.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
                    Some(q) => Name {
                        text: q.to_string(),
                        quoted: true,
                    },
                    None => Name {
                        text: n.to_lowercase(),
                        quoted: false,
                    },
                },
            )
            .collect(),
    )
}

fn drop(
    object_type: ObjectType,
    if_exists: bool,
    names: &[ObjectName],
    temporary: bool,
    table: Option<&ObjectName>,
) -> Result<Ddl, SqlError> {
    if temporary {
        return Err(query("DROP TEMPORARY is not supported".into()));
    }
    let what = if object_type == ObjectType::Table {
        "table"
    } else {
        "index"
    };
    let names = names
        .iter()
        .map(|n| object_name(n, what))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(if object_type == ObjectType::Table {
        Ddl::DropTable { names, if_exists }
    } else {
        Ddl::DropIndex {
            names,
            table: table.map(|t| object_name(t, "table")).transpose()?,
            if_exists,
        }
    })
}

/// Runs `ddl` on `db`. Every statement commits on its own (the catalog is
/// replaced atomically) and a failing one leaves the database as it was.
pub fn run(db: &Database, ddl: &Ddl) -> Result<Changed, SqlError> {
    let verb = ddl.verb();
    let mut changed = Changed::default();
    match ddl {
        Ddl::CreateTable {
            name,
            schema,
            if_not_exists,
            keys,
            columnar,
        } => {
            // DataFusion folds unquoted names, so two tables differing only in
            // case could not both be queried.
            if let Some(t) = db
                .table_names()
                .into_iter()
                .find(|t| t.eq_ignore_ascii_case(name))
            {
                if *if_not_exists {
                    return Ok(changed);
                }
                return Err(query(format!("{verb}: table '{t}' already exists")));
            }
            let indexes = keys.iter().map(|k| k.index_spec(name)).collect();
            db.begin_create_load(name, schema.clone(), TableOptions::default(), indexes)
                .and_then(|mut load| {
                    if *columnar {
                        load.columnar()?;
                    }
                    load.commit(&NoProgress)
                })
                .map_err(|e| storage(verb, e))?;
            changed.created.push(name.clone());
        }
        Ddl::CreateIndex {
            name,
            table,
            columns,
            cache,
            unique,
            if_not_exists,
        } => {
            let t = find_table(db, table)
                .ok_or_else(|| query(format!("{verb}: unknown table '{}'", table.text)))?;
            let open = db.table(&t)?;
            let column = |c: &Name| -> Result<String, SqlError> {
                let i = open
                    .schema()
                    .columns
                    .iter()
                    .position(|x| c.names(&x.name))
                    .ok_or_else(|| {
                        query(format!(
                            "{verb}: table '{t}' has no column '{}' (it has {})",
                            c.text,
                            open.schema().names()
                        ))
                    })?;
                Ok(open.schema().columns[i].name.clone())
            };
            let cols = columns.iter().map(column).collect::<Result<Vec<_>, _>>()?;
            let cached = cache.iter().map(column).collect::<Result<Vec<_>, _>>()?;
            let name = name
                .clone()
                .unwrap_or_else(|| format!("{t}_{}", cols.join("_")));
            let exists = db
                .catalog()
                .tables
                .values()
                .flat_map(|t| &t.indexes)
                .any(|i| i.name.eq_ignore_ascii_case(&name));
            if exists && *if_not_exists {
                return Ok(changed);
            }
            let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
            let cached: Vec<&str> = cached.iter().map(String::as_str).collect();
            let mut spec = IndexSpec::new(name, &cols).cache(&cached);
            spec.unique = *unique;
            // A columnar table's index has a tree over its column rows,
            // which strata-columns builds from the column files.
            strata_columns::index::create_index(db, &t, spec, &NoProgress).map_err(
                |e| match e {
                    strata_columns::ColumnsError::Storage(e) => storage(verb, e),
                    e => SqlError::from(datafusion::common::DataFusionError::External(Box::new(e))),
                },
            )?;
        }
        Ddl::DropTable { names, if_exists } => {
            // All names are resolved first: one unknown name drops nothing.
            let mut found = Vec::new();
            for n in names {
                match find_table(db, n) {
                    Some(t) => found.push(t),
                    None if *if_exists => {}
                    None => return Err(query(format!("{verb}: unknown table '{}'", n.text))),
                }
            }
            for t in found {
                db.drop_table(&t).map_err(|e| storage(verb, e))?;
                changed.dropped.push(t);
            }
        }
        Ddl::DropIndex {
            names,
            table,
            if_exists,
        } => {
            let catalog = db.catalog();
            let mut found = Vec::new();
            for n in names {
                let owner = catalog.tables.values().find_map(|t| {
                    let on_table = table.as_ref().is_none_or(|tn| tn.names(&t.name));
                    t.indexes
                        .iter()
                        .find(|i| on_table && n.names(&i.name))
                        .map(|i| (t.name.clone(), i.name.clone()))
                });
                match owner {
                    Some(o) => found.push(o),
                    None if *if_exists => {}
                    None => return Err(query(format!("{verb}: unknown index '{}'", n.text))),
                }
            }
            for (t, i) in found {
                db.drop_index(&t, &i).map_err(|e| storage(verb, e))?;
            }
        }
        Ddl::AlterTable(a) => return crate::ddl::alter::run(db, a),
        Ddl::CreateTableAs { .. } | Ddl::CreateView(_) | Ddl::DropView { .. } => {
            return Err(SqlError::Execution(format!(
                "{verb} runs in a session (it plans a query)"
            )));
        }
    }
    Ok(changed)
}

/// Runs `ddl` in a session: the statements that plan a query (CREATE TABLE
/// AS, CREATE VIEW) with the session's context, the others as [`run`].
pub(crate) fn run_in_session(
    ctx: &datafusion::execution::context::SessionContext,
    runtime: &tokio::runtime::Runtime,
    db: &Database,
    ddl: &Ddl,
) -> Result<Changed, SqlError> {
    match ddl {
        Ddl::CreateView(v) => {
            crate::ddl::view::create(ctx, runtime, db, v).map(|()| Changed::default())
        }
        Ddl::DropView { names, if_exists } => {
            crate::ddl::view::drop(ctx, db, names, *if_exists).map(|()| Changed::default())
        }
        Ddl::CreateTableAs {
            name,
            query,
            if_not_exists,
        } => crate::ddl::ctas::run(ctx, runtime, db, name, query, *if_not_exists),
        _ => run(db, ddl),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::{DFParserBuilder, Statement as DfStatement};

    fn parsed(sql: &str) -> Result<Ddl, SqlError> {
        let mut stmts = DFParserBuilder::new(sql)
            .build()
            .unwrap()
            .parse_statements()
            .unwrap();
        match stmts.pop_front().unwrap() {
            DfStatement::Statement(s) => parse(&s).expect("a DDL statement"),
            other => panic!("not a plain statement: {other}"),
        }
    }

    fn error(sql: &str) -> String {
        parsed(sql).unwrap_err().to_string()
    }

    #[test]
    fn sql_types_map_to_strata_types() {
        let Ddl::CreateTable { name, schema, .. } = parsed(
            "create table Orders (a INT NOT NULL, b VARCHAR(20), c DECIMAL(15,2), d DATE, \
             e BIGINT, f DOUBLE PRECISION, g CHAR, h BOOLEAN NULL, i NUMERIC(9), \"J\" real)",
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(name, "orders");
        assert_eq!(
            schema.to_string(),
            "a INT, b VARCHAR(20) NULL, c DECIMAL(15,2) NULL, d DATE NULL, e BIGINT NULL, \
             f DOUBLE NULL, g CHAR(1) NULL, h BOOLEAN NULL, i DECIMAL(9,0) NULL, J DOUBLE NULL"
        );
    }

    #[test]
    fn text_timestamp_and_keys_are_parsed() {
        let Ddl::CreateTable { schema, keys, .. } = parsed(
            "create table t (id INT PRIMARY KEY, body TEXT, tag VARCHAR, at TIMESTAMP, \
             s VARCHAR(MAX), u INT, CONSTRAINT t_u UNIQUE (u, tag))",
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(
            schema.to_string(),
            "id INT, body TEXT NULL, tag TEXT NULL, at TIMESTAMP NULL, s TEXT NULL, u INT NULL"
        );
        assert_eq!(
            keys.iter()
                .map(|k| (k.index_name("t"), k.columns.join(","), k.primary))
                .collect::<Vec<_>>(),
            vec![
                ("t_pkey".to_string(), "id".to_string(), true),
                ("t_u".to_string(), "u,tag".to_string(), false),
            ]
        );
        assert!(matches!(
            parsed("create table c as select 1 as x").unwrap(),
            Ddl::CreateTableAs { .. }
        ));
        assert!(matches!(
            parsed("create or replace view v (a) as select 1").unwrap(),
            Ddl::CreateView(ViewSpec {
                or_replace: true,
                ..
            })
        ));
        assert!(matches!(
            parsed("alter table t rename column a to b").unwrap(),
            Ddl::AlterTable(_)
        ));
    }

    #[test]
    fn unsupported_types_and_clauses_are_named() {
        let e = error("create table t (a INT, note BYTEA)");
        assert!(e.contains("'note'") && e.contains("TEXT"), "{e}");
        let e = error("create table t (a DECIMAL(20,2))");
        assert!(e.contains("'a'") && e.contains("1..=18"), "{e}");
        let e = error("create table t (a VARCHAR(5000))");
        assert!(e.contains("'a'") && e.contains("4000"), "{e}");
        let e = error("create table t (a TIMESTAMP WITH TIME ZONE)");
        assert!(e.contains("'a'") && e.contains("TIME ZONE"), "{e}");
        let e = error("create table t (a INT DEFAULT 3)");
        assert!(e.contains("'a'") && e.contains("DEFAULT"), "{e}");
        let e = error("create table t (a INT, CHECK (a > 0))");
        assert!(e.contains("CHECK"), "{e}");
        let e = error("create table t (a INT PRIMARY KEY, b INT, PRIMARY KEY (b))");
        assert!(e.contains("one PRIMARY KEY"), "{e}");
        let e = error("create table t (a INT, A INT)");
        assert!(e.contains("duplicate column"), "{e}");
        let e = error("create unique index i on t (a) where a > 0");
        assert!(e.contains("partial"), "{e}");
        let e = error("create index i on t (a + 1)");
        assert!(e.contains("a + 1"), "{e}");
        let e = error("drop table s.t");
        assert!(e.contains("qualifier"), "{e}");
    }
}
