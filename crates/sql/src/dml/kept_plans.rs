//! Plans kept by statement shape, for one version of the catalog: the store
//! point queries' plans ([`super::point_plans`]) and writes' plans
//! ([`super::write_plans`]) share. Any DDL or ANALYZE anywhere moves the
//! catalog's version, and the first use at a new version forgets every plan:
//! a plan names tables, columns and indexes as they were.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

/// Plans kept per session; when full, the store starts over (a client with
/// more distinct statements than this gains little from it anyway).
const CAPACITY: usize = 256;

/// A session's plans of one kind by shape key.
pub(super) struct ByShape<T> {
    /// The catalog saves count the plans were made at, and the plans.
    kept: Mutex<(u64, HashMap<String, Arc<T>>)>,
}

impl<T> Default for ByShape<T> {
    fn default() -> Self {
        ByShape {
            kept: Mutex::new((0, HashMap::new())),
        }
    }
}

impl<T> ByShape<T> {
    /// The plan kept for `key`, when the catalog is still at version `saves`.
    pub(super) fn get(&self, saves: u64, key: &str) -> Option<Arc<T>> {
        let mut k = self.kept.lock();
        if k.0 != saves {
            *k = (saves, HashMap::new());
            return None;
        }
        k.1.get(key).cloned()
    }

    /// Keeps `plan` for `key`, made at catalog version `saves`.
    pub(super) fn insert(&self, saves: u64, key: &str, plan: T) {
        let mut k = self.kept.lock();
        if k.0 != saves {
            *k = (saves, HashMap::new());
        }
        if k.1.len() >= CAPACITY {
            k.1.clear();
        }
        k.1.insert(key.to_string(), Arc::new(plan));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_catalog_version_forgets_every_plan() {
        let plans = ByShape::<u32>::default();
        plans.insert(3, "a", 1);
        plans.insert(3, "b", 2);
        assert_eq!(plans.get(3, "a").as_deref(), Some(&1));
        assert_eq!(plans.get(4, "b"), None);
        // Forgotten, not only hidden: back at 3 nothing is there either.
        assert_eq!(plans.get(3, "b"), None);
        for i in 0..CAPACITY as u32 {
            plans.insert(3, &i.to_string(), i);
        }
        // Full: the next plan starts the store over.
        plans.insert(3, "last", 7);
        assert_eq!(plans.get(3, "0"), None);
        assert_eq!(plans.get(3, "last").as_deref(), Some(&7));
    }
}
