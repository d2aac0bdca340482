//! `CREATE TABLE`, `CREATE INDEX`, `DROP TABLE` and `DROP INDEX` on the strata
//! database, recognized on the statement's syntax tree before DataFusion plans
//! it (DataFusion's own CREATE TABLE would make an in-memory table).
//!
//! SQL types map to strata's: INT/INTEGER → INT32, BIGINT → INT64,
//! DOUBLE/FLOAT/REAL → FLOAT64, DECIMAL(p,s)/NUMERIC(p,s) → DECIMAL with
//! p ≤ 18, DATE, CHAR(n) (CHAR alone is CHAR(1)), VARCHAR(n), BOOLEAN. Lengths
//! are bytes, at most 4000. TEXT and VARCHAR without a length are refused:
//! strata stores strings of a declared maximum length. Columns are nullable
//! unless declared NOT NULL, as in SQL. Unquoted names are folded to lower
//! case, as DataFusion folds them in queries.

use datafusion::sql::sqlparser::ast::{
    CharacterLength, ColumnDef, ColumnOption, CreateIndex, CreateTable, DataType as SqlType,
    ExactNumberInfo, Expr, Ident, ObjectName, ObjectNamePart, ObjectType, Statement,
};
use strata_storage::db::{IndexSpec, NoProgress, TableOptions};
use strata_storage::row::{Column, DataType, Schema};
use strata_storage::{Database, StorageError};

use crate::session::SqlError;

/// A DDL statement strata runs itself.
#[derive(Clone, Debug, PartialEq)]
pub enum Ddl {
    CreateTable {
        name: String,
        schema: Schema,
        if_not_exists: bool,
    },
    CreateIndex {
        name: Option<String>,
        table: Name,
        columns: Vec<Name>,
        /// Columns cached in the leaves' free space (`WITH (cache = 'c, d')`).
        cache: Vec<Name>,
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
            Ddl::CreateIndex { .. } => "CREATE INDEX",
            Ddl::DropTable { .. } => "DROP TABLE",
            Ddl::DropIndex { .. } => "DROP INDEX",
        }
    }
}

/// A name as written: its text (folded to lower case unless quoted) and
/// whether it was quoted (a quoted name must match exactly).
#[derive(Clone, Debug, PartialEq)]
pub struct Name {
    pub text: String,
    pub quoted: bool,
}

impl Name {
    pub(crate) fn of(i: &Ident) -> Name {
        match i.quote_style {
            Some(_) => Name {
                text: i.value.clone(),
                quoted: true,
            },
            None => Name {
                text: i.value.to_lowercase(),
                quoted: false,
            },
        }
    }

    /// Whether this name names `existing`: exactly, or for an unquoted name
    /// ignoring case (tables loaded by `strata load` may have upper case names).
    pub(crate) fn names(&self, existing: &str) -> bool {
        existing == self.text || (!self.quoted && existing.eq_ignore_ascii_case(&self.text))
    }
}

/// What a DDL statement changed, for the session to register or forget.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Changed {
    pub created: Vec<String>,
    pub dropped: Vec<String>,
}

fn query(msg: String) -> SqlError {
    SqlError::Query(msg)
}

/// The single-part name of an object (strata has one schema).
pub(crate) fn object_name(n: &ObjectName, what: &str) -> Result<Name, SqlError> {
    match n.0.as_slice() {
        [ObjectNamePart::Identifier(i)] => Ok(Name::of(i)),
        _ => Err(query(format!(
            "{what} name {n}: strata has one schema, name the {what} without a qualifier"
        ))),
    }
}

/// Recognizes the DDL statements strata runs itself; `None` for any other
/// statement (DataFusion's to plan). An error says what is not supported.
pub fn parse(stmt: &Statement) -> Option<Result<Ddl, SqlError>> {
    match stmt {
        Statement::CreateTable(c) => Some(create_table(c)),
        Statement::CreateIndex(c) => Some(create_index(c)),
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
    if c.query.is_some() {
        return refuse(
            "AS SELECT (create the table with its columns, then INSERT INTO ... SELECT)",
        );
    }
    if c.like.is_some() || c.clone.is_some() {
        return refuse("LIKE or CLONE");
    }
    if let Some(k) = c.constraints.first() {
        return refuse(&format!(
            "the constraint {k} (strata checks NOT NULL only; CREATE INDEX makes an index)"
        ));
    }
    if c.columns.is_empty() {
        return refuse("a table without columns");
    }
    let columns = c
        .columns
        .iter()
        .map(|col| column(&name.text, col))
        .collect::<Result<Vec<_>, _>>()?;
    let schema =
        Schema::new(columns).map_err(|e| query(format!("CREATE TABLE {}: {e}", name.text)))?;
    Ok(Ddl::CreateTable {
        name: name.text,
        schema,
        if_not_exists: c.if_not_exists,
    })
}

fn column(table: &str, c: &ColumnDef) -> Result<Column, SqlError> {
    let name = Name::of(&c.name).text;
    let mut nullable = true;
    for o in &c.options {
        match &o.option {
            ColumnOption::Null => nullable = true,
            ColumnOption::NotNull => nullable = false,
            other => {
                return Err(query(format!(
                    "CREATE TABLE {table}: column '{name}': {other} is not supported \
                     (strata columns take NULL or NOT NULL)"
                )));
            }
        }
    }
    let ty = column_type(&c.data_type)
        .and_then(|t| t.validate().map(|()| t))
        .map_err(|why| {
            query(format!(
                "CREATE TABLE {table}: column '{name}' of type {}: {why}",
                c.data_type
            ))
        })?;
    Ok(Column::new(name, ty, nullable))
}

/// The strata type of a SQL column type; the error says why there is none.
fn column_type(t: &SqlType) -> Result<DataType, String> {
    const TYPES: &str = "strata has INT, BIGINT, DOUBLE, DECIMAL(p,s) with p <= 18, DATE, \
                         CHAR(n), VARCHAR(n) and BOOLEAN";
    let length = |l: &Option<CharacterLength>, default: Option<u64>| -> Result<u16, String> {
        let n = match l {
            Some(CharacterLength::IntegerLength { length, .. }) => *length,
            Some(CharacterLength::Max) => {
                return Err("strings need a length of at most 4000 bytes, not MAX".into());
            }
            None => default.ok_or(
                "strings need a length (at most 4000 bytes), e.g. VARCHAR(100)".to_string(),
            )?,
        };
        u16::try_from(n).map_err(|_| format!("length {n} is more than 4000 bytes"))
    };
    let decimal = |info: &ExactNumberInfo| -> Result<DataType, String> {
        let (p, s) = match *info {
            ExactNumberInfo::None => {
                return Err("DECIMAL needs a precision of at most 18, e.g. DECIMAL(15,2)".into());
            }
            ExactNumberInfo::Precision(p) => (p, 0),
            ExactNumberInfo::PrecisionAndScale(p, s) => (
                p,
                u64::try_from(s).map_err(|_| format!("scale {s} is negative"))?,
            ),
        };
        if !(1..=18).contains(&p) || s > p {
            return Err(format!(
                "DECIMAL({p},{s}): precision must be 1..=18 (a 64-bit integer) and the scale at most the precision"
            ));
        }
        Ok(DataType::Decimal {
            precision: p as u8,
            scale: s as u8,
        })
    };
    Ok(match t {
        SqlType::Int(_) | SqlType::Integer(_) | SqlType::Int4(_) | SqlType::Int32 => {
            DataType::Int32
        }
        SqlType::BigInt(_) | SqlType::Int8(_) | SqlType::Int64 => DataType::Int64,
        SqlType::Double(_)
        | SqlType::DoublePrecision
        | SqlType::Float8
        | SqlType::Float64
        | SqlType::Float(_)
        | SqlType::Real
        | SqlType::Float4
        | SqlType::Float32 => DataType::Float64,
        SqlType::Decimal(i) | SqlType::Numeric(i) | SqlType::Dec(i) => decimal(i)?,
        SqlType::Date => DataType::Date,
        SqlType::Char(l) | SqlType::Character(l) => DataType::Char {
            len: length(l, Some(1))?,
        },
        SqlType::Varchar(l) | SqlType::CharacterVarying(l) | SqlType::CharVarying(l) => {
            DataType::Varchar {
                len: length(l, None)?,
            }
        }
        SqlType::Text | SqlType::String(_) => {
            return Err(
                "strings need a length (at most 4000 bytes): use VARCHAR(n) instead of TEXT".into(),
            );
        }
        SqlType::Bool | SqlType::Boolean => DataType::Bool,
        _ => return Err(format!("not supported; {TYPES}")),
    })
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
    if c.unique {
        return refuse("UNIQUE (strata's indexes do not enforce uniqueness)");
    }
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

/// The table `name` names, if any.
pub(crate) fn find_table(db: &Database, name: &Name) -> Option<String> {
    let names = db.table_names();
    names
        .iter()
        .find(|t| **t == name.text)
        .or_else(|| names.iter().find(|t| name.names(t)))
        .cloned()
}

/// A storage error as the session reports it: the user's mistakes (unknown
/// or existing names, bad schemas) as query errors.
fn storage(verb: &str, e: StorageError) -> SqlError {
    if e.exit_code() == strata_storage::exit::USAGE {
        query(format!("{verb}: {e}"))
    } else {
        SqlError::Storage(e)
    }
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
            db.create_table(name, schema.clone(), TableOptions::default())
                .map_err(|e| storage(verb, e))?;
            changed.created.push(name.clone());
        }
        Ddl::CreateIndex {
            name,
            table,
            columns,
            cache,
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
            db.create_index(&t, IndexSpec::new(name, &cols).cache(&cached), &NoProgress)
                .map_err(|e| storage(verb, e))?;
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
    }
    Ok(changed)
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
            "a INT32, b VARCHAR(20) NULL, c DECIMAL(15,2) NULL, d DATE NULL, e INT64 NULL, \
             f FLOAT64 NULL, g CHAR(1) NULL, h BOOL NULL, i DECIMAL(9,0) NULL, J FLOAT64 NULL"
        );
    }

    #[test]
    fn unsupported_types_and_clauses_are_named() {
        let e = error("create table t (a INT, note TEXT)");
        assert!(e.contains("'note'") && e.contains("VARCHAR(n)"), "{e}");
        let e = error("create table t (a DECIMAL(20,2))");
        assert!(e.contains("'a'") && e.contains("1..=18"), "{e}");
        let e = error("create table t (a VARCHAR)");
        assert!(e.contains("'a'") && e.contains("length"), "{e}");
        let e = error("create table t (a VARCHAR(5000))");
        assert!(e.contains("'a'") && e.contains("4000"), "{e}");
        let e = error("create table t (a TIMESTAMP)");
        assert!(e.contains("'a'") && e.contains("TIMESTAMP"), "{e}");
        let e = error("create table t (a INT DEFAULT 3)");
        assert!(e.contains("'a'") && e.contains("DEFAULT"), "{e}");
        let e = error("create table t (a INT, PRIMARY KEY (a))");
        assert!(e.contains("PRIMARY KEY"), "{e}");
        let e = error("create table t (a INT, A INT)");
        assert!(e.contains("duplicate column"), "{e}");
        let e = error("create unique index i on t (a)");
        assert!(e.contains("UNIQUE"), "{e}");
        let e = error("create index i on t (a + 1)");
        assert!(e.contains("a + 1"), "{e}");
        let e = error("drop table s.t");
        assert!(e.contains("qualifier"), "{e}");
    }
}
