//! The PostgreSQL settings a connection keeps itself, and the transaction
//! statements it answers for the session.
//!
//! - `statement_timeout`, `lock_timeout` and
//!   `idle_in_transaction_session_timeout`, in PostgreSQL's units
//!   (milliseconds, or `'2s'`, `'1min'`; 0 turns one off).
//! - Isolation levels: strata gives READ COMMITTED — every statement reads
//!   the last commit, and a transaction that writes holds the database's
//!   writer turn from its first write to its end, so writers take turns.
//!   `READ COMMITTED` (and `READ UNCOMMITTED`, which PostgreSQL also runs as
//!   READ COMMITTED) are accepted; `REPEATABLE READ` and `SERIALIZABLE` are
//!   refused with SQLSTATE 0A000 rather than silently weakened.
//! - Settings drivers send on connect (`client_encoding`, `DateStyle`,
//!   `extra_float_digits`, `application_name`, `search_path`, `TimeZone`)
//!   are accepted where they ask for what strata does (UTF8, ISO dates,
//!   the public schema, UTC) and shown by `SHOW`.
//!
//! Anything else goes to the SQL session (`SET strata.…`).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::reply::leading_words;

/// A connection's own settings.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub statement_timeout: Option<Duration>,
    pub lock_timeout: Option<Duration>,
    pub idle_in_transaction: Option<Duration>,
    /// Client settings accepted as they are, by lower-case name.
    others: BTreeMap<String, String>,
}

/// What the connection does with a statement before the session sees it.
#[derive(Debug, PartialEq)]
pub enum Intercepted {
    /// A setting was set: answer with this command tag.
    Set,
    /// `SHOW name` of a connection setting: one row, this value.
    Show(String, String),
    /// Run this statement instead (`END` is `COMMIT`, a `BEGIN` with an
    /// isolation level strata gives is a plain `BEGIN`).
    Rewrite(&'static str),
    /// Refused: SQLSTATE and message.
    Refused(&'static str, String),
}

/// The isolation levels strata gives, as their words.
fn isolation_ok(words: &[String]) -> Result<(), (&'static str, String)> {
    let Some(i) = words.iter().position(|w| w == "ISOLATION") else {
        return Ok(());
    };
    let level: Vec<&str> = words[i + 1..]
        .iter()
        .skip_while(|w| *w == "LEVEL")
        .take(2)
        .map(String::as_str)
        .collect();
    match level.as_slice() {
        ["READ", "COMMITTED"] | ["READ", "UNCOMMITTED"] => Ok(()),
        ["REPEATABLE", "READ"] | ["SERIALIZABLE", ..] => Err((
            "0A000",
            format!(
                "isolation level {} is not supported: strata gives READ COMMITTED (every \
                 statement reads the last commit; writing transactions take turns)",
                level.join(" ")
            ),
        )),
        _ => Err((
            "42601",
            format!("unknown isolation level {}", level.join(" ")),
        )),
    }
}

/// A duration setting's value: a number of milliseconds or a number with a
/// unit; `None` turns the limit off (0).
fn duration(value: &str) -> Result<Option<Duration>, String> {
    let v = value.trim().trim_matches('\'').trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("invalid value for a duration: \"{value}\""))?;
    let ms = match unit.trim() {
        "" | "ms" => n,
        "s" => n * 1e3,
        "min" => n * 60e3,
        "h" => n * 3600e3,
        "d" => n * 86400e3,
        u => {
            return Err(format!(
                "invalid unit \"{u}\" for a duration (ms, s, min, h, d)"
            ));
        }
    };
    Ok((ms > 0.0).then(|| Duration::from_micros((ms * 1e3) as u64)))
}

fn show_duration(d: Option<Duration>) -> String {
    match d {
        None => "0".into(),
        Some(d) if d.as_millis() % 1000 == 0 => format!("{}s", d.as_secs()),
        Some(d) => format!("{}ms", d.as_millis()),
    }
}

/// The value of a `SET name = value` / `SET name TO value` statement.
fn set_value(sql: &str) -> Option<String> {
    let body = sql.trim().trim_end_matches(';').trim();
    let lower = body.to_ascii_lowercase();
    let at = lower
        .find(" to ")
        .map(|i| i + 4)
        .or_else(|| lower.find('=').map(|i| i + 1))?;
    Some(
        body[at..]
            .trim()
            .trim_matches('\'')
            .trim_matches('"')
            .to_owned(),
    )
}

impl Settings {
    /// What to do with `sql` before the session runs it; `None`: run it.
    pub fn intercept(&mut self, sql: &str) -> Option<Intercepted> {
        // Most statements are none of these: one word tells (twelve words
        // of every statement were a twentieth of a point query's work).
        strata_sql::statement::first_word_of(
            sql,
            &[
                "END", "COMMIT", "ABORT", "ROLLBACK", "BEGIN", "START", "SET", "SHOW",
            ],
        )?;
        let words = leading_words(sql, 12);
        let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
        match w(0) {
            "END" | "COMMIT" if w(1) != "PREPARED" => Some(Intercepted::Rewrite("COMMIT")),
            "ABORT" | "ROLLBACK" if w(1) != "PREPARED" && w(1) != "TO" => {
                Some(Intercepted::Rewrite("ROLLBACK"))
            }
            "BEGIN" | "START" => Some(match isolation_ok(&words) {
                Ok(()) => Intercepted::Rewrite("BEGIN"),
                Err((code, msg)) => Intercepted::Refused(code, msg),
            }),
            "SET"
                if matches!(w(1), "TRANSACTION" | "SESSION")
                    && words.contains(&"ISOLATION".to_string()) =>
            {
                Some(match isolation_ok(&words) {
                    Ok(()) => Intercepted::Set,
                    Err((code, msg)) => Intercepted::Refused(code, msg),
                })
            }
            "SET" => {
                let (name, _) = if w(1) == "SESSION" || w(1) == "LOCAL" {
                    (w(2), ())
                } else {
                    (w(1), ())
                };
                self.set(&name.to_ascii_lowercase(), sql)
            }
            "SHOW" => {
                let name = w(1).to_ascii_lowercase();
                self.show(&name).map(|v| Intercepted::Show(name, v))
            }
            _ => None,
        }
    }

    fn set(&mut self, name: &str, sql: &str) -> Option<Intercepted> {
        let value = set_value(sql)?;
        let refused = |msg: String| Some(Intercepted::Refused("22023", msg));
        let limit = |v: &str| duration(v);
        match name {
            "statement_timeout" => match limit(&value) {
                Ok(d) => self.statement_timeout = d,
                Err(m) => return refused(m),
            },
            "lock_timeout" => match limit(&value) {
                Ok(d) => self.lock_timeout = d,
                Err(m) => return refused(m),
            },
            "idle_in_transaction_session_timeout" => match limit(&value) {
                Ok(d) => self.idle_in_transaction = d,
                Err(m) => return refused(m),
            },
            "client_encoding" | "names" => {
                let v = value.to_ascii_uppercase().replace('-', "");
                if v != "UTF8" && v != "UNICODE" {
                    return refused(format!(
                        "client_encoding {value} is not supported: strata speaks UTF8"
                    ));
                }
                self.others.insert("client_encoding".into(), "UTF8".into());
            }
            "datestyle" => {
                if !value.to_ascii_uppercase().contains("ISO") {
                    return refused(format!(
                        "DateStyle {value} is not supported: strata writes ISO dates"
                    ));
                }
                self.others.insert(name.into(), "ISO, MDY".into());
            }
            "timezone" | "time" => {
                let v = value.to_ascii_uppercase();
                if !matches!(
                    v.as_str(),
                    "UTC" | "GMT" | "ZONE UTC" | "ZONE 'UTC'" | "ETC/UTC" | "+00" | "0"
                ) {
                    return refused(format!(
                        "TimeZone {value} is not supported: strata's timestamps have no zone (UTC)"
                    ));
                }
                self.others.insert("timezone".into(), "UTC".into());
            }
            "search_path" => {
                if !value
                    .split(',')
                    .any(|s| s.trim().trim_matches('"') == "public")
                {
                    return refused(format!(
                        "search_path {value}: strata has one schema, public"
                    ));
                }
                self.others.insert(name.into(), value);
            }
            "extra_float_digits"
            | "application_name"
            | "standard_conforming_strings"
            | "intervalstyle"
            | "bytea_output"
            | "client_min_messages"
            | "synchronous_commit"
            | "default_transaction_isolation" => {
                if name == "default_transaction_isolation" {
                    let words: Vec<String> = std::iter::once("ISOLATION".to_string())
                        .chain(value.split_whitespace().map(|s| s.to_ascii_uppercase()))
                        .collect();
                    if let Err((code, msg)) = isolation_ok(&words) {
                        return Some(Intercepted::Refused(code, msg));
                    }
                }
                self.others.insert(name.into(), value);
            }
            _ => return None,
        }
        Some(Intercepted::Set)
    }

    fn show(&self, name: &str) -> Option<String> {
        Some(match name {
            "statement_timeout" => show_duration(self.statement_timeout),
            "lock_timeout" => show_duration(self.lock_timeout),
            "idle_in_transaction_session_timeout" => show_duration(self.idle_in_transaction),
            "transaction_isolation" | "default_transaction_isolation" => "read committed".into(),
            "server_version" => "16.6".into(),
            "server_encoding" => "UTF8".into(),
            n => match self.others.get(n) {
                Some(v) => v.clone(),
                None => match n {
                    "client_encoding" => "UTF8".into(),
                    "datestyle" => "ISO, MDY".into(),
                    "timezone" => "UTC".into(),
                    "search_path" => "public".into(),
                    "standard_conforming_strings" => "on".into(),
                    _ => return None,
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_take_postgresql_units_and_zero_turns_them_off() {
        let mut s = Settings::default();
        assert_eq!(
            s.intercept("SET statement_timeout = 250"),
            Some(Intercepted::Set)
        );
        assert_eq!(s.statement_timeout, Some(Duration::from_millis(250)));
        assert_eq!(
            s.intercept("set lock_timeout to '2s'"),
            Some(Intercepted::Set)
        );
        assert_eq!(s.lock_timeout, Some(Duration::from_secs(2)));
        assert_eq!(
            s.intercept("SHOW lock_timeout"),
            Some(Intercepted::Show("lock_timeout".into(), "2s".into()))
        );
        assert_eq!(
            s.intercept("SET statement_timeout = 0"),
            Some(Intercepted::Set)
        );
        assert_eq!(s.statement_timeout, None);
        assert!(matches!(
            s.intercept("SET statement_timeout = 'soon'"),
            Some(Intercepted::Refused("22023", _))
        ));
        // strata's own settings go to the session.
        assert_eq!(s.intercept("SET strata.access_path = 'smooth'"), None);
    }

    #[test]
    fn isolation_levels_strata_gives_are_accepted_others_refused() {
        let mut s = Settings::default();
        assert_eq!(
            s.intercept("BEGIN ISOLATION LEVEL READ COMMITTED"),
            Some(Intercepted::Rewrite("BEGIN"))
        );
        assert_eq!(
            s.intercept("start transaction"),
            Some(Intercepted::Rewrite("BEGIN"))
        );
        assert!(matches!(
            s.intercept("BEGIN ISOLATION LEVEL SERIALIZABLE"),
            Some(Intercepted::Refused("0A000", _))
        ));
        assert!(matches!(
            s.intercept("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"),
            Some(Intercepted::Refused("0A000", _))
        ));
        assert_eq!(
            s.intercept(
                "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED"
            ),
            Some(Intercepted::Set)
        );
        assert_eq!(s.intercept("END"), Some(Intercepted::Rewrite("COMMIT")));
        assert_eq!(s.intercept("abort"), Some(Intercepted::Rewrite("ROLLBACK")));
    }
}
