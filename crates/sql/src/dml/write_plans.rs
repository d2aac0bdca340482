//! Writes' plans kept by statement shape.
//!
//! An OLTP client's writes repeat a few shapes with other values:
//! pgbench's `UPDATE pgbench_accounts SET abalance = abalance + -1234 WHERE
//! aid = 42`, then `… + 17 WHERE aid = 9`. Planning one from its syntax
//! tree ([`super::direct_write`]) still makes DataFusion's logical
//! expressions, coerces their types, applies strata's rewrites and makes
//! the physical expressions: in pgbench's TPC-B-like transaction that was
//! about 100,000 instructions per write, half of the server's work for the
//! transaction (callgrind), for plans that differ from the last ones only
//! in their literals.
//!
//! So a write planned from its syntax tree is kept under its shape
//! ([`crate::parse_cache`]) when each of its literals is one literal node of
//! the plan ([`super::literal_sites`]: the nodes are the statement's
//! literals in text order, typed as DataFusion types them, distinct, and
//! none folded into a constant). A later statement of that shape is planned
//! by putting its own literals at those nodes; what depends on the values
//! is made again from them: the WHERE's comparisons on stored bytes, the
//! index to try when more than one could serve, an INSERT's row (stable
//! functions such as `now()` simplified anew, so they hold the statement's
//! own time). A literal that DataFusion would type otherwise (a fraction, a
//! number past BIGINT, a string with trailing spaces) sends the statement
//! the usual way.
//!
//! A kept plan is used only under the session settings it was made under
//! (when a statement DataFusion planned moved the settings version, the
//! options the plan depends on are compared), while the catalog is as it was (DDL or ANALYZE anywhere
//! empties the cache) and while its table's name opens the same table
//! object.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::common::config::SqlParserOptions;
use datafusion::execution::SessionState;

use super::direct_write::DirectWrite;
use super::kept_plans::ByShape;
use super::literal_sites::{Binding, bind};
use super::txn::Writes;
use crate::parse_cache::Shape;

/// Writes this process planned from a kept plan (tests assert it).
pub static HITS: AtomicU64 = AtomicU64::new(0);

/// What of a session's settings a write's plan depends on: how its
/// expressions were read (the SQL parser's options: names folded to lower
/// case or not, the dialect) and the time zone casts to timestamps take.
/// Whether the session plans writes itself (`strata.direct_dml`) is its
/// caller's to check.
#[derive(Clone, Debug, PartialEq)]
struct Depends {
    sql_parser: SqlParserOptions,
    time_zone: Option<String>,
}

impl Depends {
    fn of(state: &SessionState) -> Depends {
        let options = state.config().options();
        Depends {
            sql_parser: options.sql_parser.clone(),
            time_zone: options.execution.time_zone.clone(),
        }
    }
}

/// A plan kept for a shape.
struct Kept {
    /// The latest session settings version it is known to hold under.
    settings: AtomicU64,
    /// The settings it was made under.
    depends: Depends,
    /// The table it writes, as its name opened when it was made.
    table: Arc<strata_storage::Table>,
    plan: DirectWrite,
    binding: Binding,
}

/// A session's write plans by shape.
#[derive(Default)]
pub struct WritePlans {
    kept: ByShape<Kept>,
}

impl WritePlans {
    /// The plan of a write of `shape` from a kept one, when one holds under
    /// settings version `settings` (made under it, or under settings that
    /// are the same where it depends on them) and catalog version `saves`,
    /// and the statement's literals fit it; `None` otherwise.
    pub fn plan(
        &self,
        shape: &Shape,
        settings: u64,
        saves: u64,
        state: &SessionState,
        writes: &Writes,
    ) -> Option<DirectWrite> {
        let kept = self.kept.get(saves, &shape.key)?;
        if kept.settings.load(Ordering::Acquire) != settings {
            if Depends::of(state) != kept.depends {
                return None;
            }
            kept.settings.store(settings, Ordering::Release);
        }
        // The name may open another table object (a table reopened).
        let table = writes.database().table(kept.table.name()).ok()?;
        if !Arc::ptr_eq(&table, &kept.table) {
            return None;
        }
        let values = kept.binding.values(&shape.literals)?;
        let plan = kept.plan.with_literals(&values, state, &table)?;
        HITS.fetch_add(1, Ordering::Relaxed);
        Some(plan)
    }

    /// Keeps `plan`, made for a statement of `shape` under settings version
    /// `settings` at catalog version `saves`, when its literals bind to
    /// the shape's ([`bind`]).
    pub fn learn(
        &self,
        shape: &Shape,
        plan: &DirectWrite,
        state: &SessionState,
        settings: u64,
        saves: u64,
        writes: &Writes,
    ) {
        let Some(binding) = plan
            .literal_sites()
            .and_then(|sites| bind(&sites, &shape.literals))
        else {
            return;
        };
        let Ok(table) = writes.database().table(plan.table_name()) else {
            return;
        };
        let kept = Kept {
            settings: AtomicU64::new(settings),
            depends: Depends::of(state),
            table,
            plan: plan.clone(),
            binding,
        };
        self.kept.insert(saves, &shape.key, kept);
    }
}
