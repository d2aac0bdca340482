//! PostgreSQL's catalog functions that clients call beside `pg_catalog`'s
//! tables (`pg_table_is_visible`, `format_type`, `pg_get_indexdef`,
//! `pg_size_pretty`, ...), answered from the database's catalog.
//!
//! Each is a row-by-row function of a few arguments: [`Cell`]s in, one
//! [`Cell`] out. Functions about objects strata does not have
//! (`pg_get_constraintdef` of a foreign key, comments) return NULL, as
//! PostgreSQL does for an oid it does not know.

use std::cell::OnceCell;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanBuilder, Int64Builder, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType as ArrowType, Decimal128Type, Int64Type};
use datafusion::catalog::{TableFunctionImpl, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use strata_storage::Database;

use super::relations::{OWNER_NAME, Relations, format_type, size_pretty};

/// One argument or result value.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    I(i64),
    T(String),
    B(bool),
    /// A result only: the statement fails with this message.
    Fail(String),
}

impl Cell {
    /// As an oid or number: a number, or text that is one (`'16384'`).
    fn int(&self) -> Option<i64> {
        match self {
            Cell::I(n) => Some(*n),
            Cell::T(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
}

/// What a function returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Out {
    Text,
    Int,
    Bool,
}

/// A function's body: its arguments of one row, and the catalog it may read.
type Body = dyn Fn(&[Cell], &Catalog<'_>) -> Cell + Send + Sync;

/// Reads the database's relations.
type ReadRelations = dyn Fn() -> Relations + Send + Sync;

/// The relations a call reads: read at the first row that asks, then kept
/// for the rest of the call's rows (psql's `\d` calls `pg_get_indexdef` and
/// `pg_relation_size` once per row of `pg_class`).
struct Catalog<'a> {
    read: &'a ReadRelations,
    read_once: OnceCell<Relations>,
}

impl Catalog<'_> {
    fn get(&self) -> &Relations {
        self.read_once.get_or_init(|| (self.read)())
    }
}

struct PgFunction {
    name: &'static str,
    out: Out,
    signature: Signature,
    body: Arc<Body>,
    relations: Arc<ReadRelations>,
}

impl std::fmt::Debug for PgFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pg_catalog.{}", self.name)
    }
}

// One function per name.
impl PartialEq for PgFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for PgFunction {}
impl Hash for PgFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for PgFunction {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _args: &[ArrowType]) -> Result<ArrowType> {
        Ok(match self.out {
            Out::Text => ArrowType::Utf8,
            Out::Int => ArrowType::Int64,
            Out::Bool => ArrowType::Boolean,
        })
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let arrays: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<Result<_>>()?;
        let catalog = Catalog {
            read: self.relations.as_ref(),
            read_once: OnceCell::new(),
        };
        let mut cells = vec![Cell::Null; arrays.len()];
        let mut text = StringBuilder::new();
        let mut int = Int64Builder::new();
        let mut boolean = BooleanBuilder::new();
        for row in 0..rows {
            for (c, a) in cells.iter_mut().zip(&arrays) {
                *c = cell(a, row)?;
            }
            match ((self.body)(&cells, &catalog), self.out) {
                (Cell::T(s), Out::Text) => text.append_value(s),
                (Cell::I(n), Out::Int) => int.append_value(n),
                (Cell::B(b), Out::Bool) => boolean.append_value(b),
                (Cell::Null, Out::Text) => text.append_null(),
                (Cell::Null, Out::Int) => int.append_null(),
                (Cell::Null, Out::Bool) => boolean.append_null(),
                (Cell::Fail(message), _) => return Err(DataFusionError::Execution(message)),
                (other, _) => {
                    return Err(DataFusionError::Internal(format!(
                        "{} returned {other:?}",
                        self.name
                    )));
                }
            }
        }
        let out: ArrayRef = match self.out {
            Out::Text => Arc::new(text.finish()),
            Out::Int => Arc::new(int.finish()),
            Out::Bool => Arc::new(boolean.finish()),
        };
        Ok(ColumnarValue::Array(out))
    }
}

/// Row `row` of `a` as a [`Cell`].
fn cell(a: &ArrayRef, row: usize) -> Result<Cell> {
    if a.is_null(row) {
        return Ok(Cell::Null);
    }
    Ok(match a.data_type() {
        ArrowType::Utf8 => Cell::T(a.as_string::<i32>().value(row).to_string()),
        ArrowType::LargeUtf8 => Cell::T(a.as_string::<i64>().value(row).to_string()),
        ArrowType::Utf8View => Cell::T(a.as_string_view().value(row).to_string()),
        ArrowType::Boolean => Cell::B(a.as_boolean().value(row)),
        ArrowType::Decimal128(_, scale) => {
            let v = a.as_primitive::<Decimal128Type>().value(row);
            let whole = v / 10i128.pow(u32::from((*scale).max(0) as u8));
            Cell::I(i64::try_from(whole).unwrap_or(i64::MAX))
        }
        t if t.is_integer() => {
            let c = datafusion::arrow::compute::cast(&a.slice(row, 1), &ArrowType::Int64)?;
            Cell::I(c.as_primitive::<Int64Type>().value(0))
        }
        other => {
            return Err(DataFusionError::Plan(format!(
                "a pg_catalog function does not take {other}"
            )));
        }
    })
}

/// Registers the functions in `ctx`; those that read the catalog read `db`'s.
pub fn register(ctx: &SessionContext, db: &Arc<Database>) {
    let relations = {
        let db = db.clone();
        move || Relations::read(&db, &|_| Vec::new())
    };
    let rel: Arc<ReadRelations> = Arc::new(relations);
    let any = |n: usize| TypeSignature::Any(n);
    let add = |name: &'static str, arities: &[usize], out: Out, body: Arc<Body>| {
        let signature = Signature::one_of(
            arities.iter().map(|n| any(*n)).collect(),
            Volatility::Stable,
        );
        ctx.register_udf(ScalarUDF::new_from_impl(PgFunction {
            name,
            out,
            signature,
            body,
            relations: rel.clone(),
        }));
    };
    let constant = |c: Cell| -> Arc<Body> {
        Arc::new(move |args: &[Cell], _: &Catalog<'_>| {
            if args.first() == Some(&Cell::Null) {
                Cell::Null
            } else {
                c.clone()
            }
        })
    };
    add(
        "pg_table_is_visible",
        &[1],
        Out::Bool,
        constant(Cell::B(true)),
    );
    add(
        "pg_type_is_visible",
        &[1],
        Out::Bool,
        constant(Cell::B(true)),
    );
    add(
        "pg_function_is_visible",
        &[1],
        Out::Bool,
        constant(Cell::B(true)),
    );
    add(
        "pg_relation_is_publishable",
        &[1],
        Out::Bool,
        constant(Cell::B(false)),
    );
    add(
        "pg_get_userbyid",
        &[1],
        Out::Text,
        constant(Cell::T(OWNER_NAME.into())),
    );
    add(
        "pg_encoding_to_char",
        &[1],
        Out::Text,
        constant(Cell::T("UTF8".into())),
    );
    // Every table is in the database's own directory.
    add(
        "pg_tablespace_location",
        &[1],
        Out::Text,
        constant(Cell::T(String::new())),
    );
    for name in [
        "obj_description",
        "col_description",
        "shobj_description",
        "pg_get_constraintdef",
        "pg_get_statisticsobjdef_columns",
        "pg_get_partkeydef",
        "pg_get_triggerdef",
        "pg_get_ruledef",
        "pg_get_function_result",
        "pg_get_function_arguments",
        "pg_get_function_identity_arguments",
    ] {
        add(name, &[1, 2, 3], Out::Text, constant(Cell::Null));
    }
    add(
        "format_type",
        &[2],
        Out::Text,
        Arc::new(|a: &[Cell], _: &Catalog<'_>| match a[0].int() {
            Some(oid) => format_type(oid, a[1].int()).map_or(Cell::Null, Cell::T),
            None => Cell::Null,
        }),
    );
    // `pg_get_expr(expression, relation)`: strata stores no expressions
    // (defaults, index expressions, partition bounds); the text as given.
    add(
        "pg_get_expr",
        &[2, 3],
        Out::Text,
        Arc::new(|a: &[Cell], _: &Catalog<'_>| match &a[0] {
            Cell::T(s) => Cell::T(s.clone()),
            _ => Cell::Null,
        }),
    );
    add(
        "pg_get_indexdef",
        &[1, 3],
        Out::Text,
        Arc::new(move |a: &[Cell], c: &Catalog<'_>| {
            let Some(oid) = a[0].int() else {
                return Cell::Null;
            };
            let all = c.get();
            let Some(ix) = all
                .by_oid(oid)
                .and_then(|i| i.index.as_ref().map(|x| (i, x)))
            else {
                return Cell::Null;
            };
            // With a column number, that key column's name.
            match a.get(1).and_then(Cell::int) {
                Some(n) if n > 0 => {
                    ix.0.columns
                        .get(n as usize - 1)
                        .map_or(Cell::Null, |c| Cell::T(c.name.clone()))
                }
                _ => Cell::T(ix.1.definition.clone()),
            }
        }),
    );
    add(
        "pg_get_viewdef",
        &[1, 2],
        Out::Text,
        Arc::new(move |a: &[Cell], c: &Catalog<'_>| {
            let all = c.get();
            let found = match &a[0] {
                Cell::T(name) if name.parse::<i64>().is_err() => all.by_name(name),
                c => c.int().and_then(|oid| all.by_oid(oid)),
            };
            found
                .and_then(|v| v.view_query.clone())
                .map_or(Cell::Null, Cell::T)
        }),
    );
    // Sizes: heap pages and column files of a table, pages of an index.
    for (name, what) in [
        ("pg_relation_size", Size::Own),
        ("pg_table_size", Size::Own),
        ("pg_indexes_size", Size::Indexes),
        ("pg_total_relation_size", Size::Total),
    ] {
        add(
            name,
            &[1, 2],
            Out::Int,
            Arc::new(move |a: &[Cell], c: &Catalog<'_>| {
                let all = c.get();
                let Some(target) = relation(all, &a[0]) else {
                    return Cell::Null;
                };
                let indexes: u64 = all
                    .all
                    .iter()
                    .filter(|i| i.index.as_ref().is_some_and(|x| x.table == target.oid))
                    .map(|i| i.bytes)
                    .sum();
                Cell::I(match what {
                    Size::Own => target.bytes,
                    Size::Indexes => indexes,
                    Size::Total => target.bytes + indexes,
                } as i64)
            }),
        );
    }
    add(
        "pg_size_pretty",
        &[1],
        Out::Text,
        Arc::new(|a: &[Cell], _: &Catalog<'_>| {
            a[0].int().map_or(Cell::Null, |n| Cell::T(size_pretty(n)))
        }),
    );
    // `array_to_string` of an array in its text form (`{a,b}`), which is how
    // pg_catalog's array columns are stored.
    add(
        "array_to_string",
        &[2, 3],
        Out::Text,
        Arc::new(|a: &[Cell], _: &Catalog<'_>| match (&a[0], &a[1]) {
            (Cell::T(array), Cell::T(sep)) => Cell::T(array_elements(array).join(sep)),
            _ => Cell::Null,
        }),
    );
    // `x = ANY(array)` over those arrays (the rewrite makes it a call).
    add(
        "strata_any_equal",
        &[2],
        Out::Bool,
        Arc::new(|a: &[Cell], _: &Catalog<'_>| match (&a[0], &a[1]) {
            (Cell::Null, _) | (_, Cell::Null) => Cell::Null,
            (x, Cell::T(array)) => {
                let x = match x {
                    Cell::T(s) => s.clone(),
                    Cell::I(n) => n.to_string(),
                    Cell::B(b) => if *b { "t" } else { "f" }.into(),
                    Cell::Null | Cell::Fail(_) => return Cell::Null,
                };
                Cell::B(array_elements(array).contains(&x.as_str()))
            }
            _ => Cell::Null,
        }),
    );
    // `'t'::regclass`: the oid of a relation named by text (or given as a
    // number); an unknown name is an error, as in PostgreSQL.
    add(
        "strata_regclass",
        &[1],
        Out::Int,
        Arc::new(move |a: &[Cell], c: &Catalog<'_>| match &a[0] {
            Cell::Null => Cell::Null,
            Cell::T(name) if name.trim().parse::<i64>().is_err() => {
                match relation(c.get(), &a[0]) {
                    Some(t) => Cell::I(t.oid),
                    None => Cell::Fail(format!(
                        "relation \"{name}\" does not exist (no table, view or index of that name)"
                    )),
                }
            }
            // A number is an oid as it is, as in PostgreSQL.
            c => c.int().map_or(Cell::Null, Cell::I),
        }),
    );
    ctx.register_udtf("pg_partition_ancestors", Arc::new(PartitionAncestors));
}

#[derive(Clone, Copy)]
enum Size {
    Own,
    Indexes,
    Total,
}

/// The relation an argument names: an oid, a number as text, or a name.
fn relation<'a>(all: &'a Relations, c: &Cell) -> Option<&'a super::relations::Relation> {
    match c {
        Cell::T(name) if name.trim().parse::<i64>().is_err() => all.by_name(name.trim()),
        c => c.int().and_then(|oid| all.by_oid(oid)),
    }
}

/// The elements of an array in PostgreSQL's text form: `{a,b}`, or an
/// int2vector's `1 2`.
fn array_elements(text: &str) -> Vec<&str> {
    let t = text.trim();
    match t.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        Some("") => Vec::new(),
        Some(inner) => inner.split(',').map(|e| e.trim_matches('"')).collect(),
        None => t.split_whitespace().collect(),
    }
}

/// `pg_partition_ancestors(rel)`: a relation is its own only ancestor, as
/// every strata table is unpartitioned.
#[derive(Debug)]
struct PartitionAncestors;

impl TableFunctionImpl for PartitionAncestors {
    fn call(&self, args: &[Expr]) -> Result<Arc<dyn TableProvider>> {
        let oid = match args.first() {
            Some(Expr::Literal(ScalarValue::Utf8(Some(s)), _)) => s.trim().parse::<i64>().ok(),
            Some(Expr::Literal(v, _)) => {
                v.clone()
                    .cast_to(&ArrowType::Int64)
                    .ok()
                    .and_then(|v| match v {
                        ScalarValue::Int64(n) => n,
                        _ => None,
                    })
            }
            _ => None,
        };
        let Some(oid) = oid else {
            return Err(DataFusionError::Plan(
                "pg_partition_ancestors takes a relation's oid".into(),
            ));
        };
        let schema = Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
            datafusion::arrow::datatypes::Field::new("relid", ArrowType::Int64, false),
        ]));
        let batch = datafusion::arrow::record_batch::RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(datafusion::arrow::array::Int64Array::from(vec![
                oid,
            ]))],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_text_forms() {
        assert_eq!(array_elements("{d,f,m}"), vec!["d", "f", "m"]);
        assert_eq!(array_elements("{}"), Vec::<&str>::new());
        assert_eq!(array_elements("1 3"), vec!["1", "3"]);
        assert_eq!(Cell::T(" 16384".into()).int(), Some(16384));
    }
}
