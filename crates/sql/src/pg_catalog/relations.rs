//! What the database holds, in PostgreSQL's terms: its relations (tables,
//! views, indexes) with the object ids, type ids and sizes `pg_catalog`
//! shows for them.
//!
//! strata has no object ids; clients need them only to join one catalog
//! table with another within a few statements (psql's `\d t` looks the
//! table's oid up, then asks for its columns and indexes by that oid). An
//! oid here is a hash of the object's kind and name, so it stays the same
//! from one statement to the next and from one connection to another, and
//! names the same object as long as it exists. They are above 16383, where
//! PostgreSQL numbers user objects; the system's own (namespaces, types,
//! access methods) have PostgreSQL's fixed oids.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType as ArrowType;
use strata_storage::Database;
use strata_storage::page::PAGE_SIZE;
use strata_storage::row::value::{DataType, TEXT_LEN};

/// `pg_catalog`'s own namespace.
pub const PG_CATALOG: i64 = 11;
/// The namespace every strata relation is in.
pub const PUBLIC: i64 = 2200;
/// `information_schema`'s namespace.
pub const INFORMATION_SCHEMA: i64 = 13_000;
/// The owner every object has: strata has no roles.
pub const OWNER: i64 = 10;
pub const OWNER_NAME: &str = "strata";
/// Access methods: the row heap, strata's column files, B+-trees.
pub const AM_HEAP: i64 = 2;
pub const AM_COLUMNS: i64 = 9_001;
pub const AM_BTREE: i64 = 403;

/// One column of a relation, as `pg_attribute` has it.
#[derive(Clone, Debug)]
pub struct Attribute {
    pub name: String,
    pub type_oid: i64,
    /// The type modifier (`atttypmod`): length + 4 for character types,
    /// `(precision << 16 | scale) + 4` for numeric, else -1.
    pub typmod: i64,
    pub not_null: bool,
}

/// A relation: `relkind` `r` (table), `v` (view) or `i` (index).
#[derive(Clone, Debug)]
pub struct Relation {
    pub oid: i64,
    pub name: String,
    pub kind: char,
    pub access_method: i64,
    pub columns: Vec<Attribute>,
    /// Pages and rows (tables and indexes); 0 for views.
    pub pages: u64,
    pub rows: u64,
    /// On-disk bytes (heap pages and column files; index pages).
    pub bytes: u64,
    /// For an index: its table, its key columns' positions in the table
    /// (1-based), whether it is unique, and the `CREATE INDEX` statement.
    pub index: Option<IndexOf>,
    /// For a view: its query.
    pub view_query: Option<String>,
}

#[derive(Clone, Debug)]
pub struct IndexOf {
    pub table: i64,
    pub keys: Vec<usize>,
    pub unique: bool,
    pub definition: String,
}

/// The database's relations as of one statement.
#[derive(Clone, Debug, Default)]
pub struct Relations {
    pub all: Vec<Relation>,
    /// The oids of the tables that have an index.
    pub indexed: std::collections::HashSet<i64>,
}

impl Relations {
    /// Reads the catalog of `db`; `view_columns` gives a view's columns as
    /// the session plans them (a view stores only its query).
    pub fn read(
        db: &Arc<Database>,
        view_columns: &dyn Fn(&str) -> Vec<(String, ArrowType)>,
    ) -> Relations {
        let mut all = Vec::new();
        for name in db.table_names() {
            let Ok(table) = db.table(&name) else { continue };
            let schema = table.schema();
            let oid = oid_of('r', &name);
            let columns: Vec<Attribute> = schema
                .columns
                .iter()
                .map(|c| {
                    let (type_oid, typmod) = pg_type(&c.ty);
                    Attribute {
                        name: c.name.clone(),
                        type_oid,
                        typmod,
                        not_null: !c.nullable,
                    }
                })
                .collect();
            let heap_pages = table.heap().num_pages();
            let column_bytes: u64 = table
                .columns()
                .map(|c| c.files.iter().map(|f| f.bytes).sum())
                .unwrap_or(0);
            for ix in table.indexes() {
                let keys: Vec<usize> = ix.key_cols.iter().map(|k| k + 1).collect();
                let pages = ix.btree.num_pages();
                all.push(Relation {
                    oid: oid_of('i', &format!("{name}.{}", ix.def.name)),
                    name: ix.def.name.clone(),
                    kind: 'i',
                    access_method: AM_BTREE,
                    columns: keys.iter().map(|k| columns[k - 1].clone()).collect(),
                    pages,
                    rows: ix.def.entries,
                    bytes: pages * PAGE_SIZE as u64,
                    index: Some(IndexOf {
                        table: oid,
                        keys,
                        unique: ix.def.unique,
                        definition: format!(
                            "CREATE {}INDEX {} ON public.{} USING btree ({})",
                            if ix.def.unique { "UNIQUE " } else { "" },
                            ix.def.name,
                            name,
                            ix.def.columns.join(", ")
                        ),
                    }),
                    view_query: None,
                });
            }
            all.push(Relation {
                oid,
                name: name.clone(),
                kind: 'r',
                access_method: if table.columns().is_some() {
                    AM_COLUMNS
                } else {
                    AM_HEAP
                },
                columns,
                pages: heap_pages,
                rows: table.rows(),
                bytes: heap_pages * PAGE_SIZE as u64 + column_bytes,
                index: None,
                view_query: None,
            });
        }
        for view in db.views() {
            let columns = view_columns(&view.name)
                .into_iter()
                .map(|(name, ty)| {
                    let (type_oid, typmod) = pg_type_of_arrow(&ty);
                    Attribute {
                        name,
                        type_oid,
                        typmod,
                        not_null: false,
                    }
                })
                .collect();
            all.push(Relation {
                oid: oid_of('v', &view.name),
                name: view.name.clone(),
                kind: 'v',
                access_method: 0,
                columns,
                pages: 0,
                rows: 0,
                bytes: 0,
                index: None,
                view_query: Some(view.query.clone()),
            });
        }
        all.sort_by_key(|r| r.oid);
        let indexed = all
            .iter()
            .filter_map(|r| r.index.as_ref().map(|i| i.table))
            .collect();
        Relations { all, indexed }
    }

    pub fn by_oid(&self, oid: i64) -> Option<&Relation> {
        self.all
            .binary_search_by_key(&oid, |r| r.oid)
            .ok()
            .map(|i| &self.all[i])
    }

    /// The relation a name (`t`, `public.t`, `"T"`) names, as `'t'::regclass`
    /// does; tables and views before indexes.
    pub fn by_name(&self, name: &str) -> Option<&Relation> {
        let name = name.strip_prefix("public.").unwrap_or(name);
        let exact = name.len() >= 2 && name.starts_with('"') && name.ends_with('"');
        let wanted = if exact {
            name[1..name.len() - 1].to_string()
        } else {
            name.to_ascii_lowercase()
        };
        let mut found: Vec<&Relation> = self
            .all
            .iter()
            .filter(|r| {
                if exact {
                    r.name == wanted
                } else {
                    r.name.eq_ignore_ascii_case(&wanted)
                }
            })
            .collect();
        found.sort_by_key(|r| r.kind == 'i');
        found.first().copied()
    }
}

/// A stable oid for an object of `kind` named `name` (FNV-1a, folded into
/// 16384 .. 2^31).
pub fn oid_of(kind: char, name: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in std::iter::once(kind as u8).chain(name.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    16_384 + (h % (i32::MAX as u64 - 16_384)) as i64
}

/// PostgreSQL's type oid and type modifier for a strata column type.
pub fn pg_type(ty: &DataType) -> (i64, i64) {
    match ty {
        DataType::Int32 => (INT4, -1),
        DataType::Int64 => (INT8, -1),
        DataType::Float64 => (FLOAT8, -1),
        DataType::Decimal { precision, scale } => (
            NUMERIC,
            ((i64::from(*precision) << 16) | i64::from(*scale)) + 4,
        ),
        DataType::Date => (DATE, -1),
        DataType::Timestamp => (TIMESTAMP, -1),
        DataType::Char { len } => (BPCHAR, i64::from(*len) + 4),
        DataType::Varchar { len } if *len == TEXT_LEN => (TEXT, -1),
        DataType::Varchar { len } => (VARCHAR, i64::from(*len) + 4),
        DataType::Bool => (BOOL, -1),
    }
}

/// PostgreSQL's type oid and modifier for an Arrow type (a view's column).
pub fn pg_type_of_arrow(ty: &ArrowType) -> (i64, i64) {
    match ty {
        ArrowType::Boolean => (BOOL, -1),
        ArrowType::Int8 | ArrowType::Int16 | ArrowType::UInt8 => (INT2, -1),
        ArrowType::Int32 | ArrowType::UInt16 => (INT4, -1),
        ArrowType::Int64 | ArrowType::UInt32 | ArrowType::UInt64 => (INT8, -1),
        ArrowType::Float16 | ArrowType::Float32 => (FLOAT4, -1),
        ArrowType::Float64 => (FLOAT8, -1),
        ArrowType::Decimal128(p, s) | ArrowType::Decimal256(p, s) => {
            (NUMERIC, ((i64::from(*p) << 16) | (*s as i64 & 0xffff)) + 4)
        }
        ArrowType::Date32 | ArrowType::Date64 => (DATE, -1),
        ArrowType::Timestamp(_, None) => (TIMESTAMP, -1),
        ArrowType::Timestamp(_, Some(_)) => (TIMESTAMPTZ, -1),
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => (BYTEA, -1),
        _ => (TEXT, -1),
    }
}

pub const BOOL: i64 = 16;
pub const BYTEA: i64 = 17;
pub const CHAR: i64 = 18;
pub const NAME: i64 = 19;
pub const INT8: i64 = 20;
pub const INT2: i64 = 21;
pub const INT4: i64 = 23;
pub const TEXT: i64 = 25;
pub const OID: i64 = 26;
pub const FLOAT4: i64 = 700;
pub const FLOAT8: i64 = 701;
pub const BPCHAR: i64 = 1042;
pub const VARCHAR: i64 = 1043;
pub const DATE: i64 = 1082;
pub const TIMESTAMP: i64 = 1114;
pub const TIMESTAMPTZ: i64 = 1184;
pub const NUMERIC: i64 = 1700;

/// The types `pg_type` lists: oid, name, length (-1: variable), category.
pub const TYPES: &[(i64, &str, i64, char)] = &[
    (BOOL, "bool", 1, 'B'),
    (BYTEA, "bytea", -1, 'U'),
    (CHAR, "char", 1, 'Z'),
    (NAME, "name", 64, 'S'),
    (INT8, "int8", 8, 'N'),
    (INT2, "int2", 2, 'N'),
    (INT4, "int4", 4, 'N'),
    (TEXT, "text", -1, 'S'),
    (OID, "oid", 4, 'N'),
    (FLOAT4, "float4", 4, 'N'),
    (FLOAT8, "float8", 8, 'N'),
    (BPCHAR, "bpchar", -1, 'S'),
    (VARCHAR, "varchar", -1, 'S'),
    (DATE, "date", 4, 'D'),
    (TIMESTAMP, "timestamp", 8, 'D'),
    (TIMESTAMPTZ, "timestamptz", 8, 'D'),
    (NUMERIC, "numeric", -1, 'N'),
];

/// `format_type(oid, typmod)`: a type as PostgreSQL writes it.
pub fn format_type(oid: i64, typmod: Option<i64>) -> Option<String> {
    let m = typmod.filter(|m| *m >= 4).map(|m| m - 4);
    Some(match oid {
        BOOL => "boolean".into(),
        BYTEA => "bytea".into(),
        CHAR => "\"char\"".into(),
        NAME => "name".into(),
        INT8 => "bigint".into(),
        INT2 => "smallint".into(),
        INT4 => "integer".into(),
        TEXT => "text".into(),
        OID => "oid".into(),
        FLOAT4 => "real".into(),
        FLOAT8 => "double precision".into(),
        BPCHAR => match m {
            Some(n) => format!("character({n})"),
            None => "character".into(),
        },
        VARCHAR => match m {
            Some(n) => format!("character varying({n})"),
            None => "character varying".into(),
        },
        DATE => "date".into(),
        TIMESTAMP => "timestamp without time zone".into(),
        TIMESTAMPTZ => "timestamp with time zone".into(),
        NUMERIC => match m {
            Some(m) => format!("numeric({},{})", m >> 16, m & 0xffff),
            None => "numeric".into(),
        },
        _ => return None,
    })
}

/// `pg_size_pretty(bytes)` as PostgreSQL computes it: bytes below 10 kB;
/// else the value is shifted right keeping one extra bit, and each unit is
/// used while the value stays below twice the limit, halved with rounding
/// away from zero.
pub fn size_pretty(bytes: i64) -> String {
    const LIMIT: i64 = 10 * 1024;
    const LIMIT2: i64 = LIMIT * 2 - 1;
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    if bytes.abs() < LIMIT {
        return format!("{bytes} bytes");
    }
    let mut size = bytes >> 9;
    for unit in ["kB", "MB", "GB", "TB"] {
        if size.abs() < LIMIT2 {
            return format!("{} {unit}", half_rounded(size));
        }
        size >>= 10;
    }
    format!("{} PB", half_rounded(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oids_are_stable_and_in_the_user_range() {
        assert_eq!(oid_of('r', "lineitem"), oid_of('r', "lineitem"));
        assert_ne!(oid_of('r', "t"), oid_of('i', "t"));
        for n in ["a", "t", "lineitem", "a_much_longer_table_name_than_usual"] {
            let o = oid_of('r', n);
            assert!((16_384..i64::from(i32::MAX)).contains(&o), "{n}: {o}");
        }
    }

    #[test]
    fn types_as_postgres_formats_them() {
        assert_eq!(
            format_type(NUMERIC, Some((15 << 16 | 2) + 4)).unwrap(),
            "numeric(15,2)"
        );
        assert_eq!(
            format_type(VARCHAR, Some(29)).unwrap(),
            "character varying(25)"
        );
        assert_eq!(format_type(BPCHAR, Some(5)).unwrap(), "character(1)");
        assert_eq!(format_type(INT4, Some(-1)).unwrap(), "integer");
        assert_eq!(format_type(12345, None), None);
        assert_eq!(pg_type(&DataType::Varchar { len: TEXT_LEN }), (TEXT, -1));
    }

    #[test]
    fn sizes_as_postgres_prints_them() {
        // Values checked against PostgreSQL 15's pg_size_pretty.
        assert_eq!(size_pretty(0), "0 bytes");
        assert_eq!(size_pretty(8192), "8192 bytes");
        assert_eq!(size_pretty(10239), "10239 bytes");
        assert_eq!(size_pretty(10240), "10 kB");
        assert_eq!(size_pretty(1_000_000), "977 kB");
        assert_eq!(size_pretty(10_485_760), "10 MB");
        assert_eq!(size_pretty(831_307_776), "793 MB");
    }
}
