//! What both engines run: the table's rows, the statements' text and the
//! keys the updates pick. Everything here is deterministic, so strata and
//! PostgreSQL get the same rows and the same statements.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The table every workload starts from.
pub const TABLE: &str = "acct";
/// The target of `INSERT ... SELECT`, created empty before each run of it.
pub const COPY_TABLE: &str = "acct2";
/// Length of the `pad` column (and of every value in it).
pub const PAD_LEN: usize = 40;

/// `CREATE TABLE` of a table with `acct`'s columns; the same text in both
/// engines.
pub fn create_table_sql(table: &str) -> String {
    format!(
        "CREATE TABLE {table} (k BIGINT NOT NULL, v BIGINT NOT NULL, pad VARCHAR({PAD_LEN}) NOT NULL)"
    )
}

/// The B-tree index on `k` (named `<table>_k`).
pub fn index_name(table: &str) -> String {
    format!("{table}_k")
}

/// `CREATE INDEX <table>_k ON <table> (k)`.
pub fn create_index_sql(table: &str) -> String {
    format!("CREATE INDEX {} ON {table} (k)", index_name(table))
}

/// A 64-bit mix (splitmix64's finalizer): the pad's bits from the key.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Row `k` of the table as it is loaded: `(k, 0, pad)`, keys 0..rows in
/// order and a 40-character hex pad derived from the key.
pub fn row(k: u64) -> (i64, i64, String) {
    let (a, b) = (mix(k), mix(k ^ 0x5555_5555_5555_5555));
    let pad = format!("{a:016x}{b:016x}{:08x}", (a ^ b) as u32);
    debug_assert_eq!(pad.len(), PAD_LEN);
    (k as i64, 0, pad)
}

/// The single-row update of key `k`.
pub fn update_sql(k: i64) -> String {
    format!("UPDATE {TABLE} SET v = v + 1 WHERE k = {k}")
}

/// `INSERT INTO acct2 SELECT * FROM acct`.
pub fn insert_select_sql() -> String {
    format!("INSERT INTO {COPY_TABLE} SELECT * FROM {TABLE}")
}

/// The keys the range delete removes: `k < cut`, a tenth of the rows.
pub fn delete_cut(rows: u64) -> i64 {
    (rows / 10) as i64
}

/// `DELETE FROM acct WHERE k < <cut>`.
pub fn delete_sql(rows: u64) -> String {
    format!("DELETE FROM {TABLE} WHERE k < {}", delete_cut(rows))
}

/// Puts the deleted rows back, exactly as they were: `acct2` is the copy of
/// `acct` made by the same run's `INSERT ... SELECT`.
pub fn restore_sql(rows: u64) -> String {
    format!(
        "INSERT INTO {TABLE} SELECT * FROM {COPY_TABLE} WHERE k < {}",
        delete_cut(rows)
    )
}

/// The keys of one run's updates: one list per client, `per_client` keys
/// each, uniform over 0..rows, from a seed that depends on the run, the
/// number of clients and the client (so the one-client and the many-client
/// workloads update different keys, and both engines the same ones).
pub fn update_keys(
    seed: u64,
    run: usize,
    clients: usize,
    per_client: usize,
    rows: u64,
) -> Vec<Vec<i64>> {
    (0..clients)
        .map(|c| {
            let s = mix(seed ^ mix((run as u64) << 32 | (clients as u64) << 16 | c as u64));
            let mut rng = SmallRng::seed_from_u64(s);
            (0..per_client)
                .map(|_| rng.random_range(0..rows) as i64)
                .collect()
        })
        .collect()
}

/// The four measured workloads, in the order a run makes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Single-row updates by one client, each its own durable commit.
    UpdateOne,
    /// The same from several clients at once (group commit).
    UpdateMany,
    /// `INSERT INTO acct2 SELECT * FROM acct`.
    InsertSelect,
    /// `DELETE FROM acct WHERE k < rows / 10`.
    DeleteRange,
}

impl Workload {
    pub const ALL: [Workload; 4] = [
        Workload::UpdateOne,
        Workload::UpdateMany,
        Workload::InsertSelect,
        Workload::DeleteRange,
    ];

    /// The name in result files.
    pub fn name(self) -> &'static str {
        match self {
            Workload::UpdateOne => "update-1-client",
            Workload::UpdateMany => "update-n-clients",
            Workload::InsertSelect => "insert-select",
            Workload::DeleteRange => "delete-range",
        }
    }

    /// The `x` of its result rows (1..4, a categorical axis).
    pub fn x(self) -> f64 {
        match self {
            Workload::UpdateOne => 1.0,
            Workload::UpdateMany => 2.0,
            Workload::InsertSelect => 3.0,
            Workload::DeleteRange => 4.0,
        }
    }

    /// What its rate counts.
    pub fn unit(self) -> &'static str {
        match self {
            Workload::UpdateOne | Workload::UpdateMany => "statements/s",
            Workload::InsertSelect | Workload::DeleteRange => "rows/s",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_statements() {
        let (k, v, pad) = row(12345);
        assert_eq!((k, v, pad.len()), (12345, 0, PAD_LEN));
        assert_eq!(row(12345).2, pad, "deterministic");
        assert_ne!(row(12346).2, pad);
        assert!(pad.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(update_sql(7), "UPDATE acct SET v = v + 1 WHERE k = 7");
        assert_eq!(delete_sql(1_000_000), "DELETE FROM acct WHERE k < 100000");
        assert_eq!(
            restore_sql(20_000),
            "INSERT INTO acct SELECT * FROM acct2 WHERE k < 2000"
        );
        assert_eq!(
            create_table_sql("acct2"),
            "CREATE TABLE acct2 (k BIGINT NOT NULL, v BIGINT NOT NULL, pad VARCHAR(40) NOT NULL)"
        );
        assert_eq!(
            create_index_sql("acct2"),
            "CREATE INDEX acct2_k ON acct2 (k)"
        );
    }

    #[test]
    fn keys_are_reproducible_and_differ_between_runs_and_clients() {
        let a = update_keys(42, 0, 8, 100, 1000);
        assert_eq!(a, update_keys(42, 0, 8, 100, 1000));
        assert_eq!(a.len(), 8);
        assert!(
            a.iter()
                .all(|c| c.len() == 100 && c.iter().all(|&k| (0..1000).contains(&k)))
        );
        assert_ne!(a[0], a[1]);
        assert_ne!(a, update_keys(42, 1, 8, 100, 1000));
        assert_ne!(update_keys(42, 0, 1, 100, 1000)[0], a[0]);
    }
}
