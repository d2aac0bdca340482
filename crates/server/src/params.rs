//! A portal's `$n` parameters bound into its statement's text.
//!
//! strata's SQL session runs statements as text (its own paths — direct
//! writes, COPY, DDL, RETURNING — start from the text, not from DataFusion's
//! plan), so each value is written into the statement as a SQL literal of
//! its type, at the places the SQL tokenizer found `$n`. The value never
//! becomes SQL syntax: numbers are checked to be numbers, dates to be dates,
//! and anything else is a quoted string with its quotes doubled.

use chrono::{NaiveDate, NaiveDateTime};
use pgwire::api::Type;
use pgwire::api::portal::Portal;
use pgwire::error::{ErrorInfo, PgWireError};
use rust_decimal::Decimal;
use strata_sql::literal::{self, BindError, quoted};

/// A parameter that cannot be bound (SQLSTATE 22P02 or 08P01).
fn bad(code: &str, msg: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".to_owned(),
        code.to_owned(),
        msg,
    )))
}

/// `sql` with every `$n` replaced by the literal of parameter `n` of
/// `portal`, whose types are `types` (a parameter with no known type is
/// text).
pub fn bind<S: Clone>(
    sql: &str,
    types: &[Type],
    portal: &Portal<S>,
) -> Result<String, PgWireError> {
    let places = strata_sql::prepare::placeholders(sql).map_err(|e| bad("42601", e.to_string()))?;
    if places.is_empty() && portal.parameters.is_empty() {
        return Ok(sql.to_owned());
    }
    let mut literals = Vec::with_capacity(portal.parameters.len());
    for i in 0..portal.parameters.len() {
        let ty = types.get(i).cloned().unwrap_or(Type::TEXT);
        literals.push(literal(portal, i, &ty)?);
    }
    literal::substitute(sql, &places, &literals).map_err(|e| match e {
        BindError::Syntax(e) => bad("42601", e.to_string()),
        missing @ BindError::Missing { .. } => bad("08P01", missing.to_string()),
    })
}

/// Parameter `i` of `portal`, of type `ty`, as a SQL literal.
fn literal<S: Clone>(portal: &Portal<S>, i: usize, ty: &Type) -> Result<String, PgWireError> {
    let Some(raw) = &portal.parameters[i] else {
        return Ok("NULL".to_owned());
    };
    let n = i + 1;
    let invalid = |what: &str, e: &dyn std::fmt::Display| {
        bad("22P02", format!("parameter ${n}: invalid {what}: {e}"))
    };
    if portal.parameter_format.is_binary(i) {
        let get = |e: PgWireError| invalid(ty.name(), &e);
        return Ok(match *ty {
            Type::INT2 => number(portal.parameter::<i16>(i, ty).map_err(get)?),
            Type::INT4 => number(portal.parameter::<i32>(i, ty).map_err(get)?),
            Type::INT8 => number(portal.parameter::<i64>(i, ty).map_err(get)?),
            Type::FLOAT4 => float(portal.parameter::<f32>(i, ty).map_err(get)?.map(f64::from)),
            Type::FLOAT8 => float(portal.parameter::<f64>(i, ty).map_err(get)?),
            Type::NUMERIC => number(portal.parameter::<Decimal>(i, ty).map_err(get)?),
            Type::BOOL => match portal.parameter::<bool>(i, ty).map_err(get)? {
                Some(true) => "TRUE".into(),
                Some(false) => "FALSE".into(),
                None => "NULL".into(),
            },
            Type::DATE => match portal.parameter::<NaiveDate>(i, ty).map_err(get)? {
                Some(d) => format!("DATE '{}'", d.format("%Y-%m-%d")),
                None => "NULL".into(),
            },
            Type::TIMESTAMP => match portal.parameter::<NaiveDateTime>(i, ty).map_err(get)? {
                Some(t) => format!("TIMESTAMP '{}'", t.format("%Y-%m-%d %H:%M:%S%.f")),
                None => "NULL".into(),
            },
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                match portal.parameter::<String>(i, ty).map_err(get)? {
                    Some(s) => quoted(&s),
                    None => "NULL".into(),
                }
            }
            _ => {
                return Err(bad(
                    "0A000",
                    format!(
                        "parameter ${n}: binary values of type {} are not supported (send it as text)",
                        ty.name()
                    ),
                ));
            }
        });
    }
    let text = std::str::from_utf8(raw).map_err(|e| invalid("UTF-8 text", &e))?;
    text_literal(text, ty).map_err(|m| bad("22P02", format!("parameter ${n}: {m}")))
}

/// A value given as text (a text-format parameter, a field of COPY) as a
/// SQL literal of type `ty`; the message says what is wrong with it.
pub fn text_literal(text: &str, ty: &Type) -> Result<String, String> {
    let t = text.trim();
    let invalid = |what: &str, e: &dyn std::fmt::Display| format!("invalid {what} \"{text}\": {e}");
    Ok(match *ty {
        Type::INT2 | Type::INT4 | Type::INT8 | Type::OID => {
            t.parse::<i64>().map_err(|e| invalid(ty.name(), &e))?;
            literal::number(t)
        }
        Type::NUMERIC => {
            t.parse::<Decimal>()
                .or_else(|_| Decimal::from_scientific(t))
                .map_err(|e| invalid("numeric", &e))?;
            literal::number(t)
        }
        Type::FLOAT4 | Type::FLOAT8 => {
            float(Some(t.parse::<f64>().map_err(|e| invalid(ty.name(), &e))?))
        }
        Type::BOOL => match t.to_ascii_lowercase().as_str() {
            "t" | "true" | "y" | "yes" | "on" | "1" => "TRUE".into(),
            "f" | "false" | "n" | "no" | "off" | "0" => "FALSE".into(),
            _ => return Err(invalid("boolean", &"expected true or false")),
        },
        Type::DATE => {
            NaiveDate::parse_from_str(t, "%Y-%m-%d").map_err(|e| invalid("date", &e))?;
            format!("DATE {}", quoted(t))
        }
        Type::TIMESTAMP => format!("TIMESTAMP {}", quoted(t)),
        _ => quoted(text),
    })
}

fn number<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "NULL".to_owned(), |v| literal::number(&v.to_string()))
}

fn float(v: Option<f64>) -> String {
    v.map_or_else(|| "NULL".to_owned(), literal::double)
}
