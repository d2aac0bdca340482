//! The tables of `pg_catalog`, filled from [`Relations`] for each statement.
//!
//! Each table has PostgreSQL 16's columns that clients read (psql's
//! `\d`, `\dt`, `\di`, `\l`, drivers' metadata queries), in PostgreSQL's
//! types as strata's SQL has them: `oid` is BIGINT, `"char"` and `name` are
//! VARCHAR, arrays (`indkey`, `reloptions`, `stxkind`) are their text form
//! (`{a,b}`; int2vector's `1 2`). Tables of things strata does not have
//! (constraints other than NOT NULL, triggers, rules, policies, inheritance,
//! publications, extended statistics) have their columns and no rows, so a
//! client's query over them plans and finds nothing, as on a PostgreSQL
//! database without such objects.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int16Builder, Int32Builder, Int64Builder,
    StringBuilder,
};
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;

use super::relations::{
    AM_BTREE, AM_COLUMNS, AM_HEAP, INFORMATION_SCHEMA, OWNER, OWNER_NAME, PG_CATALOG, PUBLIC,
    Relations, TYPES,
};

/// A column's type: `O` oid (BIGINT), `S` int2, `I` int4, `L` int8, `F`
/// float, `B` bool, `T` text.
#[derive(Clone, Copy)]
enum K {
    O,
    S,
    I,
    L,
    F,
    B,
    T,
}

/// A value of a row.
#[derive(Clone)]
enum V {
    N(i64),
    F(f64),
    B(bool),
    T(String),
    Null,
}

fn t(s: impl Into<String>) -> V {
    V::T(s.into())
}

/// The tables, with their columns.
const DEFS: &[(&str, &[(&str, K)])] = &[
    (
        "pg_namespace",
        &[
            ("oid", K::O),
            ("nspname", K::T),
            ("nspowner", K::O),
            ("nspacl", K::T),
        ],
    ),
    (
        "pg_class",
        &[
            ("oid", K::O),
            ("relname", K::T),
            ("relnamespace", K::O),
            ("reltype", K::O),
            ("reloftype", K::O),
            ("relowner", K::O),
            ("relam", K::O),
            ("relfilenode", K::O),
            ("reltablespace", K::O),
            ("relpages", K::I),
            ("reltuples", K::F),
            ("relallvisible", K::I),
            ("reltoastrelid", K::O),
            ("relhasindex", K::B),
            ("relisshared", K::B),
            ("relpersistence", K::T),
            ("relkind", K::T),
            ("relnatts", K::S),
            ("relchecks", K::S),
            ("relhasrules", K::B),
            ("relhastriggers", K::B),
            ("relhassubclass", K::B),
            ("relrowsecurity", K::B),
            ("relforcerowsecurity", K::B),
            ("relispopulated", K::B),
            ("relreplident", K::T),
            ("relispartition", K::B),
            ("relrewrite", K::O),
            ("relfrozenxid", K::L),
            ("relminmxid", K::L),
            ("relacl", K::T),
            ("reloptions", K::T),
            ("relpartbound", K::T),
        ],
    ),
    (
        "pg_attribute",
        &[
            ("attrelid", K::O),
            ("attname", K::T),
            ("atttypid", K::O),
            ("attstattarget", K::I),
            ("attlen", K::S),
            ("attnum", K::S),
            ("attndims", K::I),
            ("attcacheoff", K::I),
            ("atttypmod", K::I),
            ("attbyval", K::B),
            ("attalign", K::T),
            ("attstorage", K::T),
            ("attcompression", K::T),
            ("attnotnull", K::B),
            ("atthasdef", K::B),
            ("atthasmissing", K::B),
            ("attidentity", K::T),
            ("attgenerated", K::T),
            ("attisdropped", K::B),
            ("attislocal", K::B),
            ("attinhcount", K::I),
            ("attcollation", K::O),
            ("attacl", K::T),
            ("attoptions", K::T),
            ("attfdwoptions", K::T),
            ("attmissingval", K::T),
        ],
    ),
    (
        "pg_index",
        &[
            ("indexrelid", K::O),
            ("indrelid", K::O),
            ("indnatts", K::S),
            ("indnkeyatts", K::S),
            ("indisunique", K::B),
            ("indnullsnotdistinct", K::B),
            ("indisprimary", K::B),
            ("indisexclusion", K::B),
            ("indimmediate", K::B),
            ("indisclustered", K::B),
            ("indisvalid", K::B),
            ("indcheckxmin", K::B),
            ("indisready", K::B),
            ("indislive", K::B),
            ("indisreplident", K::B),
            ("indkey", K::T),
            ("indcollation", K::T),
            ("indclass", K::T),
            ("indoption", K::T),
            ("indexprs", K::T),
            ("indpred", K::T),
        ],
    ),
    (
        "pg_am",
        &[
            ("oid", K::O),
            ("amname", K::T),
            ("amhandler", K::T),
            ("amtype", K::T),
        ],
    ),
    (
        "pg_type",
        &[
            ("oid", K::O),
            ("typname", K::T),
            ("typnamespace", K::O),
            ("typowner", K::O),
            ("typlen", K::S),
            ("typbyval", K::B),
            ("typtype", K::T),
            ("typcategory", K::T),
            ("typispreferred", K::B),
            ("typisdefined", K::B),
            ("typdelim", K::T),
            ("typrelid", K::O),
            ("typelem", K::O),
            ("typarray", K::O),
            ("typbasetype", K::O),
            ("typtypmod", K::I),
            ("typndims", K::I),
            ("typcollation", K::O),
            ("typnotnull", K::B),
            ("typdefault", K::T),
        ],
    ),
    (
        "pg_database",
        &[
            ("oid", K::O),
            ("datname", K::T),
            ("datdba", K::O),
            ("encoding", K::I),
            ("datlocprovider", K::T),
            ("datistemplate", K::B),
            ("datallowconn", K::B),
            ("datconnlimit", K::I),
            ("datcollate", K::T),
            ("datctype", K::T),
            ("daticulocale", K::T),
            ("daticurules", K::T),
            ("datcollversion", K::T),
            ("datacl", K::T),
        ],
    ),
    (
        "pg_roles",
        &[
            ("oid", K::O),
            ("rolname", K::T),
            ("rolsuper", K::B),
            ("rolinherit", K::B),
            ("rolcreaterole", K::B),
            ("rolcreatedb", K::B),
            ("rolcanlogin", K::B),
            ("rolreplication", K::B),
            ("rolconnlimit", K::I),
            ("rolvaliduntil", K::T),
            ("rolbypassrls", K::B),
            ("rolconfig", K::T),
        ],
    ),
    (
        "pg_user",
        &[
            ("usename", K::T),
            ("usesysid", K::O),
            ("usecreatedb", K::B),
            ("usesuper", K::B),
            ("userepl", K::B),
            ("usebypassrls", K::B),
            ("valuntil", K::T),
            ("useconfig", K::T),
        ],
    ),
    (
        "pg_tables",
        &[
            ("schemaname", K::T),
            ("tablename", K::T),
            ("tableowner", K::T),
            ("tablespace", K::T),
            ("hasindexes", K::B),
            ("hasrules", K::B),
            ("hastriggers", K::B),
            ("rowsecurity", K::B),
        ],
    ),
    (
        "pg_indexes",
        &[
            ("schemaname", K::T),
            ("tablename", K::T),
            ("indexname", K::T),
            ("tablespace", K::T),
            ("indexdef", K::T),
        ],
    ),
    (
        "pg_views",
        &[
            ("schemaname", K::T),
            ("viewname", K::T),
            ("viewowner", K::T),
            ("definition", K::T),
        ],
    ),
    (
        "pg_tablespace",
        &[
            ("oid", K::O),
            ("spcname", K::T),
            ("spcowner", K::O),
            ("spcacl", K::T),
            ("spcoptions", K::T),
        ],
    ),
    (
        "pg_attrdef",
        &[
            ("oid", K::O),
            ("adrelid", K::O),
            ("adnum", K::S),
            ("adbin", K::T),
        ],
    ),
    (
        "pg_constraint",
        &[
            ("oid", K::O),
            ("conname", K::T),
            ("connamespace", K::O),
            ("contype", K::T),
            ("condeferrable", K::B),
            ("condeferred", K::B),
            ("convalidated", K::B),
            ("conrelid", K::O),
            ("contypid", K::O),
            ("conindid", K::O),
            ("conparentid", K::O),
            ("confrelid", K::O),
            ("confupdtype", K::T),
            ("confdeltype", K::T),
            ("confmatchtype", K::T),
            ("conislocal", K::B),
            ("coninhcount", K::I),
            ("connoinherit", K::B),
            ("conkey", K::T),
            ("confkey", K::T),
            ("conbin", K::T),
        ],
    ),
    (
        "pg_collation",
        &[
            ("oid", K::O),
            ("collname", K::T),
            ("collnamespace", K::O),
            ("collowner", K::O),
            ("collprovider", K::T),
            ("collisdeterministic", K::B),
            ("collencoding", K::I),
            ("collcollate", K::T),
            ("collctype", K::T),
        ],
    ),
    (
        "pg_description",
        &[
            ("objoid", K::O),
            ("classoid", K::O),
            ("objsubid", K::I),
            ("description", K::T),
        ],
    ),
    (
        "pg_inherits",
        &[
            ("inhrelid", K::O),
            ("inhparent", K::O),
            ("inhseqno", K::I),
            ("inhdetachpending", K::B),
        ],
    ),
    (
        "pg_policy",
        &[
            ("oid", K::O),
            ("polname", K::T),
            ("polrelid", K::O),
            ("polcmd", K::T),
            ("polpermissive", K::B),
            ("polroles", K::T),
            ("polqual", K::T),
            ("polwithcheck", K::T),
        ],
    ),
    (
        "pg_statistic_ext",
        &[
            ("oid", K::O),
            ("stxrelid", K::O),
            ("stxname", K::T),
            ("stxnamespace", K::O),
            ("stxowner", K::O),
            ("stxstattarget", K::I),
            ("stxkeys", K::T),
            ("stxkind", K::T),
            ("stxexprs", K::T),
        ],
    ),
    (
        "pg_publication",
        &[
            ("oid", K::O),
            ("pubname", K::T),
            ("pubowner", K::O),
            ("puballtables", K::B),
            ("pubinsert", K::B),
            ("pubupdate", K::B),
            ("pubdelete", K::B),
            ("pubtruncate", K::B),
            ("pubviaroot", K::B),
        ],
    ),
    (
        "pg_publication_rel",
        &[
            ("oid", K::O),
            ("prpubid", K::O),
            ("prrelid", K::O),
            ("prqual", K::T),
            ("prattrs", K::T),
        ],
    ),
    (
        "pg_publication_namespace",
        &[("oid", K::O), ("pnpubid", K::O), ("pnnspid", K::O)],
    ),
    (
        "pg_trigger",
        &[
            ("oid", K::O),
            ("tgrelid", K::O),
            ("tgparentid", K::O),
            ("tgname", K::T),
            ("tgfoid", K::O),
            ("tgtype", K::S),
            ("tgenabled", K::T),
            ("tgisinternal", K::B),
            ("tgconstrrelid", K::O),
            ("tgconstrindid", K::O),
            ("tgconstraint", K::O),
            ("tgdeferrable", K::B),
            ("tginitdeferred", K::B),
            ("tgnargs", K::S),
            ("tgattr", K::T),
            ("tgargs", K::T),
            ("tgqual", K::T),
            ("tgoldtable", K::T),
            ("tgnewtable", K::T),
        ],
    ),
    (
        "pg_rewrite",
        &[
            ("oid", K::O),
            ("rulename", K::T),
            ("ev_class", K::O),
            ("ev_type", K::T),
            ("ev_enabled", K::T),
            ("is_instead", K::B),
            ("ev_qual", K::T),
            ("ev_action", K::T),
        ],
    ),
    (
        "pg_partitioned_table",
        &[
            ("partrelid", K::O),
            ("partstrat", K::T),
            ("partnatts", K::S),
            ("partdefid", K::O),
            ("partattrs", K::T),
            ("partclass", K::T),
            ("partcollation", K::T),
            ("partexprs", K::T),
        ],
    ),
    (
        "pg_foreign_table",
        &[("ftrelid", K::O), ("ftserver", K::O), ("ftoptions", K::T)],
    ),
    (
        "pg_sequence",
        &[
            ("seqrelid", K::O),
            ("seqtypid", K::O),
            ("seqstart", K::L),
            ("seqincrement", K::L),
            ("seqmax", K::L),
            ("seqmin", K::L),
            ("seqcache", K::L),
            ("seqcycle", K::B),
        ],
    ),
    (
        "pg_proc",
        &[
            ("oid", K::O),
            ("proname", K::T),
            ("pronamespace", K::O),
            ("proowner", K::O),
            ("prolang", K::O),
            ("prokind", K::T),
            ("prosecdef", K::B),
            ("proleakproof", K::B),
            ("proisstrict", K::B),
            ("proretset", K::B),
            ("provolatile", K::T),
            ("proparallel", K::T),
            ("pronargs", K::S),
            ("pronargdefaults", K::S),
            ("prorettype", K::O),
            ("proargtypes", K::T),
            ("proallargtypes", K::T),
            ("proargmodes", K::T),
            ("proargnames", K::T),
            ("prosrc", K::T),
            ("proacl", K::T),
        ],
    ),
    (
        "pg_language",
        &[
            ("oid", K::O),
            ("lanname", K::T),
            ("lanowner", K::O),
            ("lanispl", K::B),
        ],
    ),
    (
        "pg_auth_members",
        &[
            ("oid", K::O),
            ("roleid", K::O),
            ("member", K::O),
            ("grantor", K::O),
            ("admin_option", K::B),
        ],
    ),
    (
        "pg_extension",
        &[
            ("oid", K::O),
            ("extname", K::T),
            ("extowner", K::O),
            ("extnamespace", K::O),
            ("extrelocatable", K::B),
            ("extversion", K::T),
        ],
    ),
];

/// The tables that have no rows in any strata database: strata has no
/// defaults, constraints but NOT NULL (a UNIQUE constraint is a unique index),
/// collations (text compares bytewise), comments, inheritance, policies,
/// extended statistics, publications, triggers, rules, partitions, foreign
/// tables, sequences or extensions.
pub const EMPTY: &[&str] = &[
    "pg_attrdef",
    "pg_constraint",
    "pg_collation",
    "pg_description",
    "pg_inherits",
    "pg_policy",
    "pg_statistic_ext",
    "pg_publication",
    "pg_publication_rel",
    "pg_publication_namespace",
    "pg_trigger",
    "pg_rewrite",
    "pg_partitioned_table",
    "pg_foreign_table",
    "pg_sequence",
    "pg_extension",
    "pg_proc",
    "pg_auth_members",
];

/// The names of `pg_catalog`'s tables.
pub fn names() -> impl Iterator<Item = &'static str> {
    DEFS.iter().map(|(n, _)| *n)
}

/// Table `name` of `pg_catalog` over `rel`, or None if there is none.
pub fn build(name: &str, rel: &Relations) -> Option<Result<RecordBatch>> {
    let (_, columns) = DEFS.iter().find(|(n, _)| *n == name)?;
    Some(batch(columns, rows(name, rel)))
}

fn rows(name: &str, rel: &Relations) -> Vec<Vec<V>> {
    use V::{B, F, N, Null};
    let no = || B(false);
    match name {
        "pg_namespace" => [
            (PG_CATALOG, "pg_catalog"),
            (PUBLIC, "public"),
            (INFORMATION_SCHEMA, "information_schema"),
        ]
        .iter()
        .map(|(oid, n)| vec![N(*oid), t(*n), N(OWNER), Null])
        .collect(),
        "pg_class" => rel
            .all
            .iter()
            .map(|r| {
                let has_index = rel.indexed.contains(&r.oid);
                vec![
                    N(r.oid),
                    t(&r.name),
                    N(PUBLIC),
                    N(0),
                    N(0),
                    N(OWNER),
                    N(r.access_method),
                    N(r.oid),
                    N(0),
                    N(r.pages.min(i32::MAX as u64) as i64),
                    F(if r.kind == 'v' { -1.0 } else { r.rows as f64 }),
                    N(0),
                    N(0),
                    B(has_index),
                    no(),
                    t("p"),
                    t(r.kind.to_string()),
                    N(r.columns.len() as i64),
                    N(0),
                    B(r.kind == 'v'),
                    no(),
                    no(),
                    no(),
                    no(),
                    B(true),
                    t(if r.kind == 'r' { "d" } else { "n" }),
                    no(),
                    N(0),
                    N(0),
                    N(0),
                    Null,
                    Null,
                    Null,
                ]
            })
            .collect(),
        "pg_attribute" => {
            let mut out = Vec::new();
            for r in &rel.all {
                for (i, a) in r.columns.iter().enumerate() {
                    let len = TYPES
                        .iter()
                        .find(|(oid, ..)| *oid == a.type_oid)
                        .map_or(-1, |ty| ty.2);
                    out.push(vec![
                        N(r.oid),
                        t(&a.name),
                        N(a.type_oid),
                        N(-1),
                        N(len),
                        N(i as i64 + 1),
                        N(0),
                        N(-1),
                        N(a.typmod),
                        B(len > 0 && len <= 8),
                        t(if len == 8 { "d" } else { "i" }),
                        t(if len < 0 { "x" } else { "p" }),
                        t(""),
                        B(a.not_null),
                        no(),
                        no(),
                        t(""),
                        t(""),
                        no(),
                        B(true),
                        N(0),
                        N(0),
                        Null,
                        Null,
                        Null,
                        Null,
                    ]);
                }
            }
            out
        }
        "pg_index" => rel
            .all
            .iter()
            .filter_map(|r| r.index.as_ref().map(|ix| (r, ix)))
            .map(|(r, ix)| {
                let n = ix.keys.len() as i64;
                let keys: Vec<String> = ix.keys.iter().map(|k| k.to_string()).collect();
                let zeros = vec!["0"; ix.keys.len()].join(" ");
                vec![
                    N(r.oid),
                    N(ix.table),
                    N(n),
                    N(n),
                    B(ix.unique),
                    no(),
                    no(),
                    no(),
                    B(true),
                    no(),
                    B(true),
                    no(),
                    B(true),
                    B(true),
                    no(),
                    t(keys.join(" ")),
                    t(zeros.clone()),
                    t(zeros.clone()),
                    t(zeros),
                    Null,
                    Null,
                ]
            })
            .collect(),
        "pg_am" => [
            (AM_HEAP, "heap", "heap_tableam_handler", "t"),
            (AM_COLUMNS, "columns", "strata_columns_handler", "t"),
            (AM_BTREE, "btree", "bthandler", "i"),
        ]
        .iter()
        .map(|(oid, n, h, k)| vec![N(*oid), t(*n), t(*h), t(*k)])
        .collect(),
        "pg_type" => TYPES
            .iter()
            .map(|(oid, n, len, cat)| {
                vec![
                    N(*oid),
                    t(*n),
                    N(PG_CATALOG),
                    N(OWNER),
                    N(*len),
                    B(*len > 0 && *len <= 8),
                    t("b"),
                    t(cat.to_string()),
                    no(),
                    B(true),
                    t(","),
                    N(0),
                    N(0),
                    N(0),
                    N(0),
                    N(-1),
                    N(0),
                    N(if *cat == 'S' { 100 } else { 0 }),
                    no(),
                    Null,
                ]
            })
            .collect(),
        "pg_database" => vec![vec![
            N(5),
            t("strata"),
            N(OWNER),
            N(6),
            t("c"),
            no(),
            B(true),
            N(-1),
            t("C"),
            t("C"),
            Null,
            Null,
            Null,
            Null,
        ]],
        "pg_roles" => vec![vec![
            N(OWNER),
            t(OWNER_NAME),
            B(true),
            B(true),
            B(true),
            B(true),
            B(true),
            no(),
            N(-1),
            Null,
            no(),
            Null,
        ]],
        "pg_user" => vec![vec![
            t(OWNER_NAME),
            N(OWNER),
            B(true),
            B(true),
            no(),
            no(),
            Null,
            Null,
        ]],
        "pg_tables" => rel
            .all
            .iter()
            .filter(|r| r.kind == 'r')
            .map(|r| {
                let has_index = rel.indexed.contains(&r.oid);
                vec![
                    t("public"),
                    t(&r.name),
                    t(OWNER_NAME),
                    Null,
                    B(has_index),
                    no(),
                    no(),
                    no(),
                ]
            })
            .collect(),
        "pg_indexes" => rel
            .all
            .iter()
            .filter_map(|r| r.index.as_ref().map(|ix| (r, ix)))
            .map(|(r, ix)| {
                let table = rel
                    .by_oid(ix.table)
                    .map_or(String::new(), |t| t.name.clone());
                vec![t("public"), t(table), t(&r.name), Null, t(&ix.definition)]
            })
            .collect(),
        "pg_views" => rel
            .all
            .iter()
            .filter_map(|r| r.view_query.as_ref().map(|q| (r, q)))
            .map(|(r, q)| vec![t("public"), t(&r.name), t(OWNER_NAME), t(q)])
            .collect(),
        "pg_language" => [(12, "internal"), (13, "c"), (14, "sql")]
            .iter()
            .map(|(oid, n)| vec![N(*oid), t(*n), N(OWNER), no()])
            .collect(),
        "pg_tablespace" => vec![
            vec![N(1663), t("pg_default"), N(OWNER), Null, Null],
            vec![N(1664), t("pg_global"), N(OWNER), Null, Null],
        ],
        _ => Vec::new(),
    }
}

fn batch(columns: &[(&str, K)], rows: Vec<Vec<V>>) -> Result<RecordBatch> {
    if let Some(r) = rows.iter().find(|r| r.len() != columns.len()) {
        return Err(datafusion::error::DataFusionError::Internal(format!(
            "a pg_catalog row has {} values for {} columns",
            r.len(),
            columns.len()
        )));
    }
    let mut fields = Vec::with_capacity(columns.len());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(columns.len());
    for (at, (name, kind)) in columns.iter().enumerate() {
        let values = rows.iter().map(|r| &r[at]);
        let num = |v: &V| match v {
            V::N(n) => Some(*n),
            _ => None,
        };
        let (ty, array): (ArrowType, ArrayRef) = match kind {
            K::O | K::L => {
                let mut b = Int64Builder::new();
                values.for_each(|v| b.append_option(num(v)));
                (ArrowType::Int64, Arc::new(b.finish()))
            }
            K::I => {
                let mut b = Int32Builder::new();
                values.for_each(|v| b.append_option(num(v).map(|n| n as i32)));
                (ArrowType::Int32, Arc::new(b.finish()))
            }
            K::S => {
                let mut b = Int16Builder::new();
                values.for_each(|v| b.append_option(num(v).map(|n| n as i16)));
                (ArrowType::Int16, Arc::new(b.finish()))
            }
            K::F => {
                let mut b = Float64Builder::new();
                values.for_each(|v| {
                    b.append_option(match v {
                        V::F(f) => Some(*f),
                        _ => None,
                    })
                });
                (ArrowType::Float64, Arc::new(b.finish()))
            }
            K::B => {
                let mut b = BooleanBuilder::new();
                values.for_each(|v| {
                    b.append_option(match v {
                        V::B(x) => Some(*x),
                        _ => None,
                    })
                });
                (ArrowType::Boolean, Arc::new(b.finish()))
            }
            K::T => {
                let mut b = StringBuilder::new();
                values.for_each(|v| {
                    b.append_option(match v {
                        V::T(s) => Some(s.as_str()),
                        _ => None,
                    })
                });
                (ArrowType::Utf8, Arc::new(b.finish()))
            }
        };
        fields.push(Field::new(*name, ty, true));
        arrays.push(array);
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_has_its_tables_columns() {
        let rel = Relations::default();
        for name in names() {
            let b = build(name, &rel).unwrap().unwrap();
            assert!(b.num_columns() > 0, "{name}");
        }
        assert!(build("pg_nothing", &rel).is_none());
        assert_eq!(build("pg_namespace", &rel).unwrap().unwrap().num_rows(), 3);
        for name in EMPTY {
            assert!(names().any(|n| n == *name), "{name}");
            assert!(rows(name, &rel).is_empty(), "{name}");
        }
    }
}
