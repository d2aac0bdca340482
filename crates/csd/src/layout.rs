//! Where objects live: the mapping of objects to disk groups.
//!
//! A CSD decides data placement, not its clients (§3.2): a tenant's data may
//! be in one group, spread over several for load balancing, or scattered by
//! whatever order increments arrived in. Which of these the device does
//! changes everything about how many group switches a workload costs, so the
//! layout is a configuration choice ([`LayoutSpec`]) and the experiments run
//! under each.
//!
//! [`Placement`] is the device's persistent metadata: once an object is
//! placed (at its first PUT) its group never changes, even if the layout's
//! counters move on, so a server restarted from the saved placement serves
//! every object from the group it was written to. It is plain serde data
//! for exactly that reason.
//!
//! Names: the client is the bucket; the relation is the first path component
//! of the key (`lineitem/0003` → `lineitem`; a key without `/` is its own
//! relation).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::CsdError;

/// How new objects are assigned to groups.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LayoutSpec {
    /// Each new bucket (client) gets the next group, round-robin: the
    /// paper's benchmark setup (§3.2, "each client is allotted its own disk
    /// group").
    #[default]
    OnePerClient,
    /// Objects of a bucket go to groups 0, 1, 2, … in the order they are
    /// first stored (a per-bucket counter modulo the groups): load balancing.
    Striped,
    /// Each new relation (bucket/relation) gets the next group, round-robin.
    ByRelation,
    /// A pseudo-random group per object, from a hash of the seed and the
    /// object's name: the same seed places the same name in the same group
    /// whatever order objects arrive in.
    Random { seed: u64 },
    /// Everything in group 0: the capacity tier without switches (the
    /// paper's HDD baseline in Fig. 4).
    AllInOne,
    /// The longest prefix of `bucket/key` in the map decides the group; an
    /// object matching none is refused at PUT ([`Placement::try_place`]).
    Explicit(BTreeMap<String, u32>),
}

impl fmt::Display for LayoutSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutSpec::OnePerClient => f.write_str("one-per-client"),
            LayoutSpec::Striped => f.write_str("striped"),
            LayoutSpec::ByRelation => f.write_str("by-relation"),
            LayoutSpec::Random { seed } => write!(f, "random:{seed}"),
            LayoutSpec::AllInOne => f.write_str("all-in-one"),
            LayoutSpec::Explicit(map) => {
                f.write_str("explicit:")?;
                for (i, (prefix, group)) in map.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{prefix}={group}")?;
                }
                Ok(())
            }
        }
    }
}

/// Parses the text form: `one-per-client`, `striped`, `by-relation`,
/// `random` (seed 0) or `random:SEED`, `all-in-one`, or
/// `explicit:PREFIX=GROUP,PREFIX=GROUP,…`.
impl FromStr for LayoutSpec {
    type Err = CsdError;

    fn from_str(s: &str) -> Result<Self, CsdError> {
        let bad = |m: &str| CsdError::parse("layout", s, m);
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let no_arg = |spec: LayoutSpec| match arg {
            None => Ok(spec),
            Some(_) => Err(bad("this layout takes no argument")),
        };
        match name {
            "one-per-client" => no_arg(LayoutSpec::OnePerClient),
            "striped" => no_arg(LayoutSpec::Striped),
            "by-relation" => no_arg(LayoutSpec::ByRelation),
            "all-in-one" => no_arg(LayoutSpec::AllInOne),
            "random" => {
                let seed = match arg {
                    None => 0,
                    Some(a) => a
                        .parse()
                        .map_err(|_| bad("the seed after `random:` must be an integer"))?,
                };
                Ok(LayoutSpec::Random { seed })
            }
            "explicit" => {
                let mut map = BTreeMap::new();
                for item in arg.unwrap_or("").split(',').filter(|i| !i.is_empty()) {
                    let (prefix, group) = item
                        .rsplit_once('=')
                        .ok_or_else(|| bad(&format!("{item:?} is not PREFIX=GROUP")))?;
                    let group = group
                        .parse()
                        .map_err(|_| bad(&format!("group of {prefix:?} is not a number")))?;
                    map.insert(prefix.to_string(), group);
                }
                if map.is_empty() {
                    return Err(bad("an explicit layout needs at least one PREFIX=GROUP"));
                }
                Ok(LayoutSpec::Explicit(map))
            }
            _ => Err(bad(
                "known layouts: one-per-client, striped, by-relation, random[:SEED], all-in-one, explicit:PREFIX=GROUP,…",
            )),
        }
    }
}

impl LayoutSpec {
    /// Checks the groups an explicit layout names against the device's.
    pub fn check(&self, groups: u32) -> Result<(), CsdError> {
        if let LayoutSpec::Explicit(map) = self {
            for (prefix, &group) in map {
                if group >= groups {
                    return Err(CsdError::GroupOutOfRange {
                        what: format!("explicit layout prefix {prefix:?}"),
                        group,
                        groups,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The object → group metadata of a device, and the counters that place
/// new objects. Serializable: the server saves it and loads it at restart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    spec: LayoutSpec,
    groups: u32,
    /// Bucket → group (one-per-client).
    clients: BTreeMap<String, u32>,
    /// "bucket/relation" → group (by-relation).
    relations: BTreeMap<String, u32>,
    /// "bucket/key" → group: every stored object.
    objects: BTreeMap<String, u32>,
    /// Per-bucket count of objects placed (striped).
    stripes: BTreeMap<String, u64>,
    /// The next group handed out round-robin (one-per-client, by-relation).
    next: u32,
}

impl Placement {
    /// An empty placement. `groups` is at least 1 (0 is taken as 1).
    pub fn new(spec: LayoutSpec, groups: u32) -> Placement {
        Placement {
            spec,
            groups: groups.max(1),
            clients: BTreeMap::new(),
            relations: BTreeMap::new(),
            objects: BTreeMap::new(),
            stripes: BTreeMap::new(),
            next: 0,
        }
    }

    pub fn spec(&self) -> &LayoutSpec {
        &self.spec
    }

    pub fn groups(&self) -> u32 {
        self.groups
    }

    /// The group of an object, assigning (and remembering) one the first
    /// time the object is seen. Infallible: an object an explicit layout
    /// does not cover goes to group 0 — a server that must refuse it calls
    /// [`Placement::try_place`].
    pub fn place(&mut self, bucket: &str, key: &str) -> u32 {
        match self.try_place(bucket, key) {
            Ok(g) => g,
            Err(_) => {
                let object = object_name(bucket, key);
                self.objects.insert(object, 0);
                0
            }
        }
    }

    /// [`Placement::place`], refusing an object an explicit layout has no
    /// prefix for (the error names the object and the prefixes) or whose
    /// prefix names a group the device does not have.
    pub fn try_place(&mut self, bucket: &str, key: &str) -> Result<u32, CsdError> {
        let object = object_name(bucket, key);
        if let Some(&g) = self.objects.get(&object) {
            return Ok(g);
        }
        let groups = self.groups;
        let g = match &self.spec {
            LayoutSpec::OnePerClient => match self.clients.get(bucket) {
                Some(&g) => g,
                None => {
                    let g = self.next % groups;
                    self.next = (self.next + 1) % groups;
                    self.clients.insert(bucket.to_string(), g);
                    g
                }
            },
            LayoutSpec::Striped => {
                let n = self.stripes.entry(bucket.to_string()).or_insert(0);
                let g = (*n % groups as u64) as u32;
                *n += 1;
                g
            }
            LayoutSpec::ByRelation => {
                let rel = format!("{bucket}/{}", Placement::relation_of(bucket, key));
                match self.relations.get(&rel) {
                    Some(&g) => g,
                    None => {
                        let g = self.next % groups;
                        self.next = (self.next + 1) % groups;
                        self.relations.insert(rel, g);
                        g
                    }
                }
            }
            LayoutSpec::Random { seed } => {
                (mix(*seed ^ fnv1a(object.as_bytes())) % groups as u64) as u32
            }
            LayoutSpec::AllInOne => 0,
            LayoutSpec::Explicit(map) => {
                let (prefix, &g) = map
                    .iter()
                    .filter(|(p, _)| object.starts_with(p.as_str()))
                    .max_by_key(|(p, _)| p.len())
                    .ok_or_else(|| CsdError::Unplaced {
                        object: object.clone(),
                        prefixes: map
                            .keys()
                            .map(|p| format!("{p:?}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                    })?;
                if g >= groups {
                    return Err(CsdError::GroupOutOfRange {
                        what: format!("explicit layout prefix {prefix:?} (object {object:?})"),
                        group: g,
                        groups,
                    });
                }
                g
            }
        };
        self.objects.insert(object, g);
        Ok(g)
    }

    /// The group an object was placed in, if it was.
    pub fn group_of(&self, bucket: &str, key: &str) -> Option<u32> {
        self.objects.get(&object_name(bucket, key)).copied()
    }

    /// Drops an object (DELETE). Layout counters are not rewound: a later
    /// PUT of the same name is placed afresh (by the same rule).
    pub fn forget(&mut self, bucket: &str, key: &str) {
        self.objects.remove(&object_name(bucket, key));
    }

    /// Objects placed, per group (index = group).
    pub fn objects_per_group(&self) -> Vec<u64> {
        let mut counts = vec![0; self.groups as usize];
        for &g in self.objects.values() {
            if let Some(c) = counts.get_mut(g as usize) {
                *c += 1;
            }
        }
        counts
    }

    /// Number of objects placed.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The relation an object belongs to: the first path component of its
    /// key (the bucket is the client, so it is not part of it).
    pub fn relation_of(_bucket: &str, key: &str) -> String {
        let key = key.trim_start_matches('/');
        key.split('/').next().unwrap_or(key).to_string()
    }
}

fn object_name(bucket: &str, key: &str) -> String {
    format!("{bucket}/{key}")
}

/// FNV-1a: a stable hash of a name (std's hashers may change between
/// releases, and placements must not).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// splitmix64's finalizer: spreads the seed and hash bits over the word.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_per_client_round_robins_buckets() {
        let mut p = Placement::new(LayoutSpec::OnePerClient, 3);
        assert_eq!(p.place("c0", "lineitem/0"), 0);
        assert_eq!(p.place("c1", "lineitem/0"), 1);
        assert_eq!(p.place("c0", "orders/0"), 0);
        assert_eq!(p.place("c2", "a"), 2);
        assert_eq!(p.place("c3", "a"), 0);
        assert_eq!(p.group_of("c1", "lineitem/0"), Some(1));
        assert_eq!(p.group_of("c1", "nope"), None);
        assert_eq!(p.objects_per_group(), vec![3, 1, 1]);
    }

    #[test]
    fn striped_spreads_a_bucket_over_groups() {
        let mut p = Placement::new(LayoutSpec::Striped, 3);
        let gs: Vec<u32> = (0..7).map(|i| p.place("c0", &format!("t/{i}"))).collect();
        assert_eq!(gs, vec![0, 1, 2, 0, 1, 2, 0]);
        // another bucket has its own counter
        assert_eq!(p.place("c1", "t/0"), 0);
        // a placed object keeps its group
        assert_eq!(p.place("c0", "t/1"), 1);
    }

    #[test]
    fn by_relation_gives_each_relation_a_group() {
        let mut p = Placement::new(LayoutSpec::ByRelation, 2);
        assert_eq!(p.place("c0", "lineitem/0"), 0);
        assert_eq!(p.place("c0", "orders/0"), 1);
        assert_eq!(p.place("c0", "lineitem/1"), 0);
        assert_eq!(p.place("c1", "lineitem/0"), 0);
        assert_eq!(p.place("c0", "part"), 1);
        assert_eq!(Placement::relation_of("c0", "lineitem/0003"), "lineitem");
        assert_eq!(Placement::relation_of("c0", "part"), "part");
    }

    #[test]
    fn random_is_seeded_and_order_independent() {
        let names: Vec<String> = (0..200).map(|i| format!("t/{i}")).collect();
        let mut a = Placement::new(LayoutSpec::Random { seed: 7 }, 5);
        let mut b = Placement::new(LayoutSpec::Random { seed: 7 }, 5);
        let ga: Vec<u32> = names.iter().map(|n| a.place("c", n)).collect();
        let mut gb: Vec<u32> = names.iter().rev().map(|n| b.place("c", n)).collect();
        gb.reverse();
        assert_eq!(ga, gb);
        // every group used, none out of range
        let counts = a.objects_per_group();
        assert!(counts.iter().all(|&c| c > 10), "{counts:?}");
        let mut c = Placement::new(LayoutSpec::Random { seed: 8 }, 5);
        let gc: Vec<u32> = names.iter().map(|n| c.place("c", n)).collect();
        assert_ne!(ga, gc);
    }

    #[test]
    fn explicit_takes_the_longest_prefix_and_names_unplaced_objects() {
        let spec: LayoutSpec = "explicit:c0/=0,c0/orders=2,c1=1".parse().unwrap();
        let mut p = Placement::new(spec, 3);
        assert_eq!(p.try_place("c0", "lineitem/1").unwrap(), 0);
        assert_eq!(p.try_place("c0", "orders/1").unwrap(), 2);
        assert_eq!(p.try_place("c1", "x").unwrap(), 1);
        let e = p.try_place("c9", "lineitem/4").unwrap_err().to_string();
        assert!(e.contains("\"c9/lineitem/4\""), "{e}");
        assert!(e.contains("\"c0/orders\""), "{e}");
        assert_eq!(p.group_of("c9", "lineitem/4"), None);
        // the infallible form puts it in group 0 and remembers it
        assert_eq!(p.place("c9", "lineitem/4"), 0);
        assert_eq!(p.group_of("c9", "lineitem/4"), Some(0));
    }

    #[test]
    fn explicit_groups_are_checked() {
        let spec: LayoutSpec = "explicit:c0=4".parse().unwrap();
        let e = spec.check(3).unwrap_err().to_string();
        assert!(e.contains("\"c0\"") && e.contains("group 4"), "{e}");
        let mut p = Placement::new(spec, 3);
        assert!(
            p.try_place("c0", "k")
                .unwrap_err()
                .to_string()
                .contains("\"c0/k\"")
        );
    }

    #[test]
    fn placement_round_trips_through_json_and_keeps_counters() {
        for spec in [
            LayoutSpec::OnePerClient,
            LayoutSpec::Striped,
            LayoutSpec::ByRelation,
            LayoutSpec::Random { seed: 3 },
            LayoutSpec::AllInOne,
            "explicit:a=1,b=0".parse().unwrap(),
        ] {
            let mut p = Placement::new(spec.clone(), 4);
            for i in 0..10 {
                p.place(
                    if i % 2 == 0 { "a" } else { "b" },
                    &format!("r{}/{i}", i % 3),
                );
            }
            let json = serde_json::to_string(&p).unwrap();
            let mut q: Placement = serde_json::from_str(&json).unwrap();
            assert_eq!(p, q, "{spec}");
            // both continue identically: the counters were saved too
            for i in 10..20 {
                let (b, k) = (
                    if i % 3 == 0 { "c" } else { "a" },
                    format!("r{}/{i}", i % 3),
                );
                assert_eq!(p.place(b, &k), q.place(b, &k), "{spec} {b}/{k}");
            }
        }
    }

    #[test]
    fn forget_drops_only_the_object() {
        let mut p = Placement::new(LayoutSpec::OnePerClient, 2);
        p.place("a", "k");
        p.place("b", "k");
        p.forget("a", "k");
        assert_eq!(p.group_of("a", "k"), None);
        assert_eq!(p.len(), 1);
        // the bucket keeps its group
        assert_eq!(p.place("a", "k2"), 0);
    }

    #[test]
    fn layout_text_forms_parse_and_print() {
        for s in [
            "one-per-client",
            "striped",
            "by-relation",
            "random:42",
            "all-in-one",
            "explicit:a/=1,b=2",
        ] {
            let l: LayoutSpec = s.parse().unwrap();
            assert_eq!(l.to_string(), s);
        }
        assert_eq!(
            "random".parse::<LayoutSpec>().unwrap(),
            LayoutSpec::Random { seed: 0 }
        );
        for bad in ["stripy", "random:x", "striped:3", "explicit:", "explicit:a"] {
            let e = bad.parse::<LayoutSpec>().unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn layout_json_forms() {
        let l: LayoutSpec = serde_json::from_str("\"one-per-client\"").unwrap();
        assert_eq!(l, LayoutSpec::OnePerClient);
        let l: LayoutSpec = serde_json::from_str(r#"{"random":{"seed":9}}"#).unwrap();
        assert_eq!(l, LayoutSpec::Random { seed: 9 });
        let l: LayoutSpec = serde_json::from_str(r#"{"explicit":{"c0/":1}}"#).unwrap();
        assert_eq!(l, "explicit:c0/=1".parse().unwrap());
    }
}
