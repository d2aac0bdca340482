//! SQL text before DataFusion sees it: a script split into statements, and
//! strata's own `ANALYZE` statement recognized — both on sqlparser's tokenizer,
//! so quotes, quoted identifiers, dollar-quoted strings and comments are read
//! as SQL reads them.

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

/// The tokens of `text` (strings kept as written), or `None` when it does not
/// tokenize — an unterminated string or comment, which is also how an
/// interactive statement that continues on the next line looks.
fn tokens(text: &str) -> Option<Vec<Token>> {
    Tokenizer::new(&GenericDialect {}, text)
        .with_unescape(false)
        .tokenize()
        .ok()
}

/// Splits a script into statements at `;` outside quotes and comments (the
/// comments are dropped). Returns the complete statements and what is left
/// after the last `;`; text that does not tokenize yet (an open quote or
/// comment) is all left over.
pub fn split_statements(text: &str) -> (Vec<String>, String) {
    let Some(tokens) = tokens(text) else {
        return (Vec::new(), text.trim().to_string());
    };
    let mut out = Vec::new();
    let mut cur = String::new();
    for t in tokens {
        match t {
            Token::SemiColon => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_string());
                }
                cur.clear();
            }
            Token::Whitespace(Whitespace::SingleLineComment { .. }) => cur.push('\n'),
            Token::Whitespace(Whitespace::MultiLineComment(_)) => cur.push(' '),
            t => cur.push_str(&t.to_string()),
        }
    }
    (out, cur.trim().to_string())
}

/// The tables of an `ANALYZE [TABLE] [t [, t ...]] [;]` statement (unquoted
/// names folded to lower case, as DataFusion folds them), or `None` for any
/// other statement.
pub fn analyze_targets(sql: &str) -> Option<Vec<String>> {
    // Most statements are not ANALYZE: tell from the first word without
    // tokenizing the whole statement (a leading comment still goes the long way).
    let start = sql.trim_start();
    if !start.starts_with("--")
        && !start.starts_with("/*")
        && !start
            .get(..7)
            .is_some_and(|w| w.eq_ignore_ascii_case("analyze"))
    {
        return None;
    }
    let words: Vec<Token> = tokens(sql)?
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let mut it = words.iter().peekable();
    match it.next() {
        Some(Token::Word(w)) if w.keyword == Keyword::ANALYZE => {}
        _ => return None,
    }
    if matches!(it.peek(), Some(Token::Word(w)) if w.keyword == Keyword::TABLE) {
        it.next();
    }
    let mut tables = Vec::new();
    loop {
        match it.next() {
            None | Some(Token::SemiColon) => break,
            Some(Token::Word(w)) if w.quote_style.is_some() => tables.push(w.value.clone()),
            Some(Token::Word(w)) => tables.push(w.value.to_lowercase()),
            _ => return None,
        }
        match it.next() {
            Some(Token::Comma) => {}
            None | Some(Token::SemiColon) => break,
            _ => return None,
        }
    }
    it.next().is_none().then_some(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_split_at_semicolons_outside_quotes_and_comments() {
        let (s, rest) = split_statements(
            "select 'a;b' from t; -- a comment; here\nselect \"x;\" /* ; */ from u;\nselect 3",
        );
        assert_eq!(s, vec!["select 'a;b' from t", "select \"x;\"   from u"]);
        assert_eq!(rest, "select 3");
        let (s, rest) = split_statements("select 'it''s; here' ; select $$a;b$$;");
        assert_eq!(s, vec!["select 'it''s; here'", "select $$a;b$$"]);
        assert_eq!(rest, "");
    }

    #[test]
    fn an_open_quote_or_comment_leaves_everything_for_later() {
        assert_eq!(
            split_statements("select 1; select 'abc"),
            (vec![], "select 1; select 'abc".to_string())
        );
        assert_eq!(split_statements("select 1 /* ;").0, Vec::<String>::new());
    }

    #[test]
    fn analyze_statements_name_their_tables() {
        assert_eq!(analyze_targets("ANALYZE;"), Some(vec![]));
        assert_eq!(
            analyze_targets("analyze table Lineitem, orders"),
            Some(vec!["lineitem".to_string(), "orders".to_string()])
        );
        assert_eq!(
            analyze_targets("analyze \"Mixed\" -- why\n;"),
            Some(vec!["Mixed".to_string()])
        );
        assert_eq!(analyze_targets("explain analyze select 1"), None);
        assert_eq!(analyze_targets("select 1"), None);
        assert_eq!(
            analyze_targets("  -- first a comment\n/* and */ ANALYZE t"),
            Some(vec!["t".to_string()])
        );
        assert_eq!(analyze_targets("analyzed"), None);
        assert_eq!(analyze_targets("analyze t u"), None);
    }
}
