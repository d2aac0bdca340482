//! PostgreSQL spellings that clients use in catalog queries, rewritten into
//! what DataFusion plans, before a statement is planned.
//!
//! psql and drivers write `pg_catalog.` before functions and operators (so a
//! user's search_path cannot shadow them), `COLLATE pg_catalog.default`,
//! casts to PostgreSQL's own types (`::pg_catalog.regclass`,
//! `::pg_catalog.text`, `::oid`) and `x = ANY(array_column)`. Each rewrite
//! keeps the meaning the statement has in PostgreSQL, given how
//! [`super::tables`] stores the catalog (oids as BIGINT, arrays as text):
//!
//! - `pg_catalog.f(...)` is `f(...)`, `OPERATOR(pg_catalog.~)` is `~`;
//! - `COLLATE` of the default collation (`default`, `C`, `POSIX`) is
//!   dropped: strata compares text bytewise, which is what `C` means;
//! - `'name'::regclass` looks the relation's oid up ([`super::functions`]'s
//!   `strata_regclass`); a cast of an oid to `regclass`, `regtype`, `oid`
//!   and the like keeps the number; `::text`, `::name`, `::"char"` are TEXT;
//! - `x = ANY(c)` over a catalog array column is `strata_any_equal(x, c)`;
//! - `ARRAY(SELECT … FROM unnest(….reloptions) …)` is NULL: strata keeps no
//!   storage options, so every `reloptions` is NULL and the array is empty;
//! - a SELECT that reads only from catalog tables strata never fills (in
//!   inner joins, or as the left side of left joins) returns no row, so its
//!   select list is never evaluated: a subquery in it (psql's list of a
//!   policy's roles, a publication's columns) is NULL, which DataFusion
//!   plans;
//! - in the select list of a query of the catalog, a second unnamed `NULL`
//!   gets a name of its own (`?column?2`): DataFusion wants distinct names,
//!   PostgreSQL calls each `?column?`, and clients read them by position;
//! - an unqualified `pg_class` (any `pg_catalog` table) is
//!   `pg_catalog.pg_class`, as PostgreSQL searches `pg_catalog` first;
//! - a subquery that reads a `pg_catalog` table strata never fills
//!   ([`super::tables::EMPTY`]: `pg_attrdef`, `pg_constraint`, ...) where
//!   every row needs one of its rows finds nothing, however it is
//!   correlated: a scalar subquery is NULL, `EXISTS` false, `IN` false,
//!   `ARRAY(…)` the empty array `{}`;
//! - a scalar subquery over `pg_catalog` tables alone that is correlated
//!   and not aggregated (psql's `(SELECT pg_get_expr(d.adbin, …) FROM
//!   pg_attrdef d WHERE d.adrelid = a.attrelid …)`) takes `max` of its one
//!   column, which DataFusion needs to plan it: such a lookup by a catalog
//!   key finds at most one row, where `max` is that row's value.

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CastKind, DataType, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArgumentList, FunctionArguments, GroupByExpr, Ident, JoinOperator, ObjectName,
    ObjectNamePart, Query, Select, SelectItem, SetExpr, TableFactor, Value, VisitMut, VisitorMut,
    visit_expressions_mut, visit_relations_mut,
};

/// `stmt` with PostgreSQL's catalog spellings rewritten.
pub fn for_postgres(mut stmt: DfStatement) -> DfStatement {
    if let DfStatement::Statement(s) = &mut stmt {
        let _ = visit_relations_mut(s.as_mut(), |name| {
            qualify(name);
            ControlFlow::<()>::Continue(())
        });
        let _ = s.as_mut().visit(&mut NeverEvaluated);
        let _ = visit_expressions_mut(s.as_mut(), |e| {
            rewrite(e);
            ControlFlow::<()>::Continue(())
        });
    }
    stmt
}

/// Replaces `ARRAY(subquery)` in the select lists of SELECTs that return no
/// row by construction (see the module's documentation).
struct NeverEvaluated;

impl VisitorMut for NeverEvaluated {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        each_select(q.body.as_mut(), &mut never_evaluated);
        ControlFlow::Continue(())
    }
}

/// Calls `f` on every SELECT of a set expression (the arms of a UNION).
fn each_select(body: &mut SetExpr, f: &mut dyn FnMut(&mut Select)) {
    match body {
        SetExpr::Select(s) => f(s),
        SetExpr::SetOperation { left, right, .. } => {
            each_select(left, f);
            each_select(right, f);
        }
        _ => {}
    }
}

fn never_evaluated(select: &mut Select) {
    {
        let empty = |t: &TableFactor| {
            matches!(t, TableFactor::Table { name, args: None, .. }
                if in_pg_catalog(name)
                    && last(name).is_some_and(|n| super::tables::EMPTY.contains(&n.as_str())))
        };
        // Each FROM item yields no row when its first table yields none and
        // every join keeps only rows of it (inner or left joins).
        let no_rows = select.from.len() == 1
            && select.from.iter().all(|f| {
                empty(&f.relation)
                    && f.joins.iter().all(|j| {
                        matches!(
                            j.join_operator,
                            JoinOperator::Join(_)
                                | JoinOperator::Inner(_)
                                | JoinOperator::Left(_)
                                | JoinOperator::LeftOuter(_)
                        )
                    })
            });
        let of_catalog = select.from.iter().any(|f| {
            std::iter::once(&f.relation)
                .chain(f.joins.iter().map(|j| &j.relation))
                .any(|t| matches!(t, TableFactor::Table { name, .. } if in_pg_catalog(name)))
        });
        if of_catalog {
            let mut nulls = 0;
            for item in &mut select.projection {
                if let SelectItem::UnnamedExpr(Expr::Value(v)) = item
                    && matches!(v.value, Value::Null)
                {
                    nulls += 1;
                    if nulls > 1 {
                        *item = SelectItem::ExprWithAlias {
                            expr: Expr::Value(Value::Null.into()),
                            alias: Ident::with_quote('"', format!("?column?{nulls}")),
                        };
                    }
                }
            }
        }
        if no_rows {
            for item in &mut select.projection {
                if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item
                {
                    let _ = visit_expressions_mut(e, |x| {
                        let subquery = match x {
                            Expr::Subquery(_) => true,
                            Expr::Function(f) => matches!(f.args, FunctionArguments::Subquery(_)),
                            _ => false,
                        };
                        if subquery {
                            *x = Expr::Value(Value::Null.into());
                        }
                        ControlFlow::<()>::Continue(())
                    });
                }
            }
        }
    }
}

/// The last part of a name, lowercased.
fn last(name: &ObjectName) -> Option<String> {
    match name.0.last()? {
        ObjectNamePart::Identifier(i) => Some(i.value.to_ascii_lowercase()),
        ObjectNamePart::Function(_) => None,
    }
}

/// Whether a name is `pg_catalog.<x>`.
fn in_pg_catalog(name: &ObjectName) -> bool {
    name.0.len() == 2
        && matches!(&name.0[0], ObjectNamePart::Identifier(i) if i.value.eq_ignore_ascii_case("pg_catalog"))
}

fn qualify(name: &mut ObjectName) {
    let Some(table) = last(name) else { return };
    if name.0.len() == 1 && super::tables::names().any(|n| n == table) {
        name.0
            .insert(0, ObjectNamePart::Identifier(Ident::new("pg_catalog")));
    } else if in_pg_catalog(name) && table == "pg_partition_ancestors" {
        // A table function: DataFusion looks it up by its bare name.
        name.0.remove(0);
    }
}

fn rewrite(e: &mut Expr) {
    match e {
        Expr::Subquery(q) if finds_nothing(q) => *e = Expr::Value(Value::Null.into()),
        Expr::Subquery(q) => aggregate_catalog_lookup(q),
        Expr::Exists { subquery, negated } if finds_nothing(subquery) => {
            *e = Expr::Value(Value::Boolean(*negated).into());
        }
        Expr::InSubquery {
            subquery, negated, ..
        } if finds_nothing(subquery) => {
            *e = Expr::Value(Value::Boolean(*negated).into());
        }
        Expr::Function(f) => {
            if in_pg_catalog(&f.name) {
                f.name.0.remove(0);
            }
            if is_reloptions_array(f) {
                *e = Expr::Value(Value::Null.into());
            } else if let FunctionArguments::Subquery(q) = &f.args
                && last(&f.name).as_deref() == Some("array")
                && finds_nothing(q)
            {
                // The empty array, in the text form catalog arrays have.
                *e = Expr::Value(Value::SingleQuotedString("{}".into()).into());
            }
        }
        Expr::BinaryOp { op, .. } => {
            if let BinaryOperator::PGCustomBinaryOperator(parts) = op
                && parts.len() == 2
                && parts[0].eq_ignore_ascii_case("pg_catalog")
                && let Some(plain) = operator(&parts[1])
            {
                *op = plain;
            }
        }
        Expr::Collate { expr, collation }
            if last(collation).is_some_and(|c| matches!(c.as_str(), "default" | "c" | "posix")) =>
        {
            *e = std::mem::replace(expr.as_mut(), Expr::Value(Value::Null.into()));
        }
        Expr::Cast {
            expr, data_type, ..
        } => {
            if let Some(to) = pg_type(data_type) {
                let inner = std::mem::replace(expr.as_mut(), Expr::Value(Value::Null.into()));
                *e = match to {
                    PgType::Regclass if is_string(&inner) => call("strata_regclass", vec![inner]),
                    PgType::Regclass | PgType::Oid if is_string(&inner) => {
                        cast(inner, DataType::BigInt(None))
                    }
                    PgType::Regclass | PgType::Oid => inner,
                    PgType::Text => cast(inner, DataType::Text),
                };
            }
        }
        Expr::AnyOp {
            left,
            compare_op: BinaryOperator::Eq,
            right,
            ..
        } if matches!(
            right.as_ref(),
            Expr::Identifier(_) | Expr::CompoundIdentifier(_)
        ) =>
        {
            let null = || Expr::Value(Value::Null.into());
            let l = std::mem::replace(left.as_mut(), null());
            let r = std::mem::replace(right.as_mut(), null());
            *e = call("strata_any_equal", vec![l, r]);
        }
        _ => {}
    }
}

/// Whether a query finds no row whatever its correlation: a SELECT without
/// aggregates or grouping whose FROM has a catalog table strata never fills
/// where every row of the answer needs one of its rows (the first table of
/// a FROM item followed by inner or left joins, or any inner-joined table).
fn finds_nothing(q: &Query) -> bool {
    let SetExpr::Select(select) = q.body.as_ref() else {
        return false;
    };
    let inner = |j: &JoinOperator| {
        matches!(
            j,
            JoinOperator::Join(_) | JoinOperator::Inner(_) | JoinOperator::CrossJoin(_)
        )
    };
    let keeps_first = |j: &JoinOperator| {
        inner(j) || matches!(j, JoinOperator::Left(_) | JoinOperator::LeftOuter(_))
    };
    let empty_from = select.from.iter().any(|f| {
        (empty_table(&f.relation) && f.joins.iter().all(|j| keeps_first(&j.join_operator)))
            || f.joins
                .iter()
                .any(|j| inner(&j.join_operator) && empty_table(&j.relation))
    });
    let grouped = !matches!(&select.group_by, GroupByExpr::Expressions(keys, _) if keys.is_empty())
        || select.having.is_some();
    empty_from && !grouped && !select.projection.iter().any(has_aggregate)
}

/// A `pg_catalog` table strata never fills ([`super::tables::EMPTY`]).
fn empty_table(t: &TableFactor) -> bool {
    matches!(t, TableFactor::Table { name, args: None, .. }
        if in_pg_catalog(name)
            && last(name).is_some_and(|n| super::tables::EMPTY.contains(&n.as_str())))
}

fn has_aggregate(item: &SelectItem) -> bool {
    let (SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }) = item else {
        return false;
    };
    let mut e = e.clone();
    visit_expressions_mut(&mut e, |x| match x {
        Expr::Function(f) if is_aggregate(&f.name) => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

fn is_aggregate(name: &ObjectName) -> bool {
    last(name).is_some_and(|n| {
        matches!(
            n.as_str(),
            "count"
                | "max"
                | "min"
                | "sum"
                | "avg"
                | "array_agg"
                | "string_agg"
                | "bool_and"
                | "bool_or"
                | "every"
        )
    })
}

/// `(SELECT x FROM pg_catalog.… WHERE …)`, correlated and not aggregated, as
/// `(SELECT max(x) …)`.
fn aggregate_catalog_lookup(q: &mut Query) {
    let SetExpr::Select(select) = q.body.as_mut() else {
        return;
    };
    let grouped = !matches!(&select.group_by, GroupByExpr::Expressions(keys, _) if keys.is_empty());
    let catalog_only = !select.from.is_empty()
        && select.from.iter().all(|f| {
            f.joins.is_empty()
                && matches!(&f.relation, TableFactor::Table { name, args: None, .. } if in_pg_catalog(name))
        });
    if grouped || !catalog_only || select.projection.len() != 1 || select.distinct.is_some() {
        return;
    }
    if has_aggregate(&select.projection[0]) {
        return;
    }
    if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } =
        &mut select.projection[0]
    {
        let inner = std::mem::replace(e, Expr::Value(Value::Null.into()));
        *e = call("max", vec![inner]);
    }
}

/// The plain operator `OPERATOR(pg_catalog.<op>)` names.
fn operator(op: &str) -> Option<BinaryOperator> {
    Some(match op {
        "~" => BinaryOperator::PGRegexMatch,
        "~*" => BinaryOperator::PGRegexIMatch,
        "!~" => BinaryOperator::PGRegexNotMatch,
        "!~*" => BinaryOperator::PGRegexNotIMatch,
        "~~" => BinaryOperator::PGLikeMatch,
        "!~~" => BinaryOperator::PGNotLikeMatch,
        "=" => BinaryOperator::Eq,
        "<>" | "!=" => BinaryOperator::NotEq,
        "<" => BinaryOperator::Lt,
        "<=" => BinaryOperator::LtEq,
        ">" => BinaryOperator::Gt,
        ">=" => BinaryOperator::GtEq,
        "||" => BinaryOperator::StringConcat,
        _ => return None,
    })
}

enum PgType {
    Regclass,
    Oid,
    Text,
}

/// What a cast to one of PostgreSQL's own types becomes.
fn pg_type(t: &DataType) -> Option<PgType> {
    let name = match t {
        DataType::Regclass => return Some(PgType::Regclass),
        DataType::Custom(name, _) => last(name)?,
        _ => return None,
    };
    Some(match name.as_str() {
        "regclass" => PgType::Regclass,
        "oid" | "regtype" | "regproc" | "regprocedure" | "regnamespace" | "regrole" | "regoper"
        | "regoperator" | "regconfig" | "xid" | "cid" => PgType::Oid,
        "text" | "name" | "char" | "bpchar" | "varchar" | "int2vector" | "oidvector" => {
            PgType::Text
        }
        _ => return None,
    })
}

fn is_string(e: &Expr) -> bool {
    matches!(e, Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_) | Value::EscapedStringLiteral(_)))
}

fn cast(e: Expr, to: DataType) -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(e),
        data_type: to,
        array: false,
        format: None,
    }
}

fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a)))
                .collect(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// `ARRAY(SELECT … FROM unnest(x.reloptions) …)`.
fn is_reloptions_array(f: &Function) -> bool {
    let FunctionArguments::Subquery(q) = &f.args else {
        return false;
    };
    last(&f.name).as_deref() == Some("array") && {
        let text = q.to_string().to_ascii_lowercase();
        text.contains("unnest(") && text.contains("reloptions")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParser;

    fn rewritten(sql: &str) -> String {
        let mut stmts = DFParser::parse_sql(sql).unwrap();
        for_postgres(stmts.pop_front().unwrap()).to_string()
    }

    #[test]
    fn psql_spellings() {
        assert_eq!(
            rewritten(
                "SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default AND pg_catalog.pg_table_is_visible(c.oid)"
            ),
            "SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname ~ '^(t)$' AND pg_table_is_visible(c.oid)"
        );
        assert_eq!(
            rewritten(
                "SELECT 'lineitem'::pg_catalog.regclass, '16384'::oid, x::pg_catalog.text FROM pg_class"
            ),
            "SELECT strata_regclass('lineitem'), CAST('16384' AS BIGINT), CAST(x AS TEXT) FROM pg_catalog.pg_class"
        );
        assert_eq!(
            rewritten("SELECT 'd' = any(stxkind) FROM pg_catalog.pg_statistic_ext"),
            "SELECT strata_any_equal('d', stxkind) FROM pg_catalog.pg_statistic_ext"
        );
        assert_eq!(
            rewritten(
                "SELECT array_to_string(c.reloptions || array(select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x), ', ') FROM pg_catalog.pg_class c"
            ),
            "SELECT array_to_string(c.reloptions || NULL, ', ') FROM pg_catalog.pg_class c"
        );
    }

    #[test]
    fn lookups_in_the_catalog() {
        assert_eq!(
            rewritten(
                "SELECT (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true) FROM pg_catalog.pg_attrdef d WHERE d.adrelid = a.attrelid AND a.atthasdef) FROM pg_catalog.pg_attribute a"
            ),
            "SELECT NULL FROM pg_catalog.pg_attribute a"
        );
        assert_eq!(
            rewritten(
                "SELECT NOT i.indimmediate AND EXISTS (SELECT 1 FROM pg_catalog.pg_constraint WHERE conrelid = i.indrelid), ARRAY(SELECT b.rolname FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles b ON (m.roleid = b.oid) WHERE m.member = r.oid) FROM pg_catalog.pg_index i, pg_catalog.pg_roles r"
            ),
            "SELECT NOT i.indimmediate AND false, '{}' FROM pg_catalog.pg_index i, pg_catalog.pg_roles r"
        );
        // An aggregate over no row has an answer of its own: untouched.
        let sql = "SELECT (SELECT count(*) FROM pg_catalog.pg_constraint c WHERE c.conrelid = t.oid) FROM pg_catalog.pg_class t";
        assert_eq!(rewritten(sql), sql);
        assert_eq!(
            rewritten(
                "SELECT (SELECT c.relname FROM pg_class c WHERE c.oid = i.indrelid) FROM pg_index i"
            ),
            "SELECT (SELECT max(c.relname) FROM pg_catalog.pg_class c WHERE c.oid = i.indrelid) FROM pg_catalog.pg_index i"
        );
        // A user's table is not the catalog's: untouched.
        assert_eq!(
            rewritten("SELECT (SELECT b FROM u WHERE u.a = t.a) FROM t"),
            "SELECT (SELECT b FROM u WHERE u.a = t.a) FROM t"
        );
    }

    #[test]
    fn select_lists_never_evaluated() {
        assert_eq!(
            rewritten(
                "SELECT pol.polname, pg_catalog.array_to_string(array(select rolname from pg_catalog.pg_roles where oid = any (pol.polroles) order by 1),',') FROM pg_catalog.pg_policy pol WHERE pol.polrelid = '1'"
            ),
            "SELECT pol.polname, array_to_string(NULL, ',') FROM pg_catalog.pg_policy pol WHERE pol.polrelid = '1'"
        );
        // pg_roles has a row: its ARRAY(subquery) stays (and DataFusion
        // refuses it, as it would anywhere).
        let sql = "SELECT array(SELECT 1) FROM pg_catalog.pg_roles";
        assert_eq!(rewritten(sql), sql);
    }

    #[test]
    fn other_statements_are_untouched() {
        for sql in [
            "SELECT a FROM t WHERE b ~ 'x' ORDER BY a",
            "SELECT CAST(a AS VARCHAR) FROM orders",
            "SELECT a = ANY(SELECT b FROM u) FROM t",
        ] {
            let plain = DFParser::parse_sql(sql)
                .unwrap()
                .pop_front()
                .unwrap()
                .to_string();
            assert_eq!(rewritten(sql), plain);
        }
    }
}
