//! Column definitions of `CREATE TABLE` and `ALTER TABLE ... ADD COLUMN`:
//! SQL types as strata types (see [`crate::ddl`] for the mapping), NULL /
//! NOT NULL, and a column's PRIMARY KEY or UNIQUE ([`crate::ddl::constraint`]).

use datafusion::sql::sqlparser::ast::{
    CharacterLength, ColumnDef, ColumnOption, DataType as SqlType, ExactNumberInfo, TimezoneInfo,
};
use strata_storage::row::{Column, DataType, TEXT_LEN};

use crate::ddl::constraint::Key;
use crate::ddl::object::Name;
use crate::error::SqlError;

fn query(msg: String) -> SqlError {
    SqlError::Query(msg)
}

/// A column definition: the column and the key its `PRIMARY KEY` or
/// `UNIQUE` option makes, if any (a PRIMARY KEY column is NOT NULL).
pub(crate) fn column(table: &str, c: &ColumnDef) -> Result<(Column, Option<Key>), SqlError> {
    let name = Name::of(&c.name).text;
    let mut nullable = true;
    let mut key = None;
    for o in &c.options {
        match &o.option {
            ColumnOption::Null => nullable = true,
            ColumnOption::NotNull => nullable = false,
            ColumnOption::PrimaryKey(p) if key.is_none() => {
                crate::ddl::constraint::plain_primary(table, p)?;
                key = Some(crate::ddl::constraint::column_key(
                    &name,
                    o.name.as_ref(),
                    true,
                ));
            }
            ColumnOption::Unique(u) if key.is_none() => {
                crate::ddl::constraint::plain_unique(table, u)?;
                key = Some(crate::ddl::constraint::column_key(
                    &name,
                    o.name.as_ref(),
                    false,
                ));
            }
            other => {
                return Err(query(format!(
                    "CREATE TABLE {table}: column '{name}': {other} is not supported \
                     (strata columns take NULL, NOT NULL, PRIMARY KEY or UNIQUE, once)"
                )));
            }
        }
    }
    if key.as_ref().is_some_and(|k| k.primary) {
        nullable = false;
    }
    let ty = column_type(&c.data_type)
        .and_then(|t| t.validate().map(|()| t))
        .map_err(|why| {
            query(format!(
                "CREATE TABLE {table}: column '{name}' of type {}: {why}",
                c.data_type
            ))
        })?;
    Ok((Column::new(name, ty, nullable), key))
}

/// The strata type of a SQL column type; the error says why there is none.
fn column_type(t: &SqlType) -> Result<DataType, String> {
    const TYPES: &str = "strata has INT, BIGINT, DOUBLE, DECIMAL(p,s) with p <= 18, DATE, TIMESTAMP, \
                         CHAR(n), VARCHAR(n), TEXT and BOOLEAN";
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
        u16::try_from(n)
            .ok()
            .filter(|n| *n <= strata_storage::row::MAX_DECLARED_LEN)
            .ok_or_else(|| format!("length {n} is more than 4000 bytes (TEXT has no length)"))
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
        // Microseconds, as PostgreSQL's TIMESTAMP(6), its default.
        SqlType::Timestamp(None | Some(6), TimezoneInfo::None | TimezoneInfo::WithoutTimeZone)
        | SqlType::Datetime(None | Some(6)) => DataType::Timestamp,
        SqlType::Timestamp(_, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone)
        | SqlType::Datetime(_) => {
            return Err("TIMESTAMP holds microseconds: give no precision (or 6)".into());
        }
        SqlType::Timestamp(..) => {
            return Err(
                "a TIMESTAMP WITH TIME ZONE is not supported; strata has TIMESTAMP (without time zone)"
                    .into(),
            );
        }
        SqlType::Char(l) | SqlType::Character(l) => DataType::Char {
            len: length(l, Some(1))?,
        },
        // Without a length (or MAX), a VARCHAR is TEXT, as in PostgreSQL.
        SqlType::Varchar(None | Some(CharacterLength::Max))
        | SqlType::CharacterVarying(None | Some(CharacterLength::Max))
        | SqlType::CharVarying(None | Some(CharacterLength::Max))
        | SqlType::Text
        | SqlType::String(_) => DataType::Varchar { len: TEXT_LEN },
        SqlType::Varchar(l) | SqlType::CharacterVarying(l) | SqlType::CharVarying(l) => {
            DataType::Varchar {
                len: length(l, None)?,
            }
        }
        SqlType::Bool | SqlType::Boolean => DataType::Bool,
        _ => return Err(format!("not supported; {TYPES}")),
    })
}
