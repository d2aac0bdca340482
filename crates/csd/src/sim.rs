//! A deterministic discrete-event simulation of one CSD shared by clients,
//! driving the real [`Scheduler`] in modeled time.
//!
//! Why simulate: the paper's claims about group scheduling (§3.2's C × S × D
//! collapse of pull-based clients, Fig. 12's balance of switches and stretch)
//! are about the order of service, not about bytes on a wire, and a
//! simulation runs the 10 s switches of the paper in microseconds, exactly
//! reproducibly. The server runs the same scheduler behind the S3 endpoint;
//! the simulation is the model its measurements are compared against.
//!
//! The device serves one object at a time: a batch that is a switch first
//! costs the switch time, then each object `bytes / bandwidth`. A client
//! runs its queries one after another, `think` apart. A query either issues
//! all its objects at once ([`Issue::Upfront`]: Skipper's out-of-order
//! clients, which process each object as it arrives, `compute` per object)
//! or pulls them ([`Issue::Pull`]: PostgreSQL on a CSD, §3.2 — one request,
//! wait for it, compute, then the next). Events at the same instant are all
//! processed before the device picks its next batch, so a pull client that
//! re-requests with zero compute is seen by that decision.
//!
//! A query's stretch is its time over its **ideal**: the same query alone on
//! the device, started on the group of its first object, under Max-Queries
//! (alone, the greediest policy merges everything a group holds). That ideal
//! belongs to the query, not to the policy compared.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::config::transfer_ns;
use crate::error::CsdError;
use crate::layout::{LayoutSpec, Placement};
use crate::schedule::{Metrics, Policy, QueryKey, Request, Scheduler, Ticket};

/// The modeled device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Device {
    pub groups: u32,
    pub switch_ns: u64,
    pub bandwidth_mib_s: f64,
    pub initial_group: Option<u32>,
}

impl Device {
    pub fn from_config(c: &crate::config::CsdConfig) -> Device {
        Device {
            groups: c.groups,
            switch_ns: c.switch_ns(),
            bandwidth_mib_s: c.bandwidth_mib_s,
            initial_group: c.initial_group,
        }
    }
}

/// How a client issues a query's objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Issue {
    Upfront,
    Pull,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Object {
    pub group: u32,
    pub relation: String,
    pub bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QuerySpec {
    /// In the order a pull client requests them.
    pub objects: Vec<Object>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClientSpec {
    pub name: String,
    pub issue: Issue,
    /// Processing time per object received.
    pub compute_ns: u64,
    /// When the first query starts.
    pub start_ns: u64,
    /// Gap between a query's end and the next one's start.
    pub think_ns: u64,
    pub queries: Vec<QuerySpec>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scenario {
    pub name: String,
    pub device: Device,
    pub clients: Vec<ClientSpec>,
}

impl Scenario {
    /// Something to simulate: clients, queries, objects, groups in range.
    pub fn check(&self) -> Result<(), CsdError> {
        if self.device.groups == 0 {
            return Err(CsdError::sim("device.groups", "must be at least 1"));
        }
        if !(self.device.bandwidth_mib_s.is_finite() && self.device.bandwidth_mib_s > 0.0) {
            return Err(CsdError::sim("device.bandwidth_mib_s", "must be > 0"));
        }
        if self.clients.is_empty() {
            return Err(CsdError::sim("clients", "no client"));
        }
        for c in &self.clients {
            for (qi, q) in c.queries.iter().enumerate() {
                if q.objects.is_empty() {
                    return Err(CsdError::sim(
                        &format!("client {} query {qi}", c.name),
                        "has no object",
                    ));
                }
                if let Some(o) = q.objects.iter().find(|o| o.group >= self.device.groups) {
                    return Err(CsdError::sim(
                        &format!("client {} query {qi}", c.name),
                        format!(
                            "object of {} on group {} (the device has {})",
                            o.relation, o.group, self.device.groups
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// One query's outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueryResult {
    pub client: usize,
    pub index: usize,
    pub arrival_ns: u64,
    pub completion_ns: u64,
    pub time_ns: u64,
    pub ideal_ns: u64,
    pub stretch: f64,
}

/// One policy's run of a scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimResult {
    pub scenario: String,
    pub policy: String,
    /// When the last query finished.
    pub makespan_ns: u64,
    pub switches: u64,
    pub batches: u64,
    pub requests: u64,
    /// Σ of query times (Fig. 12b's cumulative execution time).
    pub total_query_ns: u64,
    pub mean_query_ns: f64,
    pub mean_stretch: f64,
    pub max_stretch: f64,
    /// sqrt(Σ stretch²).
    pub l2_stretch: f64,
    pub queries: Vec<QueryResult>,
    /// The scheduler's own figures (its stretch is device-side: transfer
    /// only, no client compute).
    #[serde(skip)]
    pub metrics: Metrics,
}

impl SimResult {
    /// Mean time of client `c`'s queries.
    pub fn mean_time_of_client(&self, c: usize) -> f64 {
        let ts: Vec<u64> = self
            .queries
            .iter()
            .filter(|q| q.client == c)
            .map(|q| q.time_ns)
            .collect();
        ts.iter().sum::<u64>() as f64 / ts.len().max(1) as f64
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// Client starts query `index`.
    Start { client: usize },
    /// Pull client requests object `object` of its current query.
    Request { client: usize, object: usize },
    /// The device finished a ticket's transfer.
    Done { ticket: Ticket, start: u64 },
    /// Client finished its current query.
    Finish { client: usize },
}

struct ClientState {
    query: usize,
    arrival: u64,
    outstanding: usize,
    proc_end: u64,
}

/// Runs a scenario under a policy; queries' ideals come from running each
/// alone (see the module documentation).
pub fn simulate(s: &Scenario, policy: Policy) -> Result<SimResult, CsdError> {
    s.check()?;
    let mut ideals: HashMap<(usize, usize), u64> = HashMap::new();
    for (ci, c) in s.clients.iter().enumerate() {
        for (qi, q) in c.queries.iter().enumerate() {
            let alone = Scenario {
                name: format!("{} alone", s.name),
                device: Device {
                    initial_group: Some(q.objects[0].group),
                    ..s.device.clone()
                },
                clients: vec![ClientSpec {
                    start_ns: 0,
                    queries: vec![q.clone()],
                    ..c.clone()
                }],
            };
            let r = run(&alone, Policy::MaxQueries);
            ideals.insert((ci, qi), r.queries[0].time_ns);
        }
    }
    let mut r = run(s, policy);
    for q in &mut r.queries {
        q.ideal_ns = ideals[&(q.client, q.index)];
        q.stretch = q.time_ns as f64 / q.ideal_ns.max(1) as f64;
    }
    let n = r.queries.len().max(1) as f64;
    r.mean_stretch = r.queries.iter().map(|q| q.stretch).sum::<f64>() / n;
    r.max_stretch = r.queries.iter().map(|q| q.stretch).fold(0.0, f64::max);
    r.l2_stretch = r
        .queries
        .iter()
        .map(|q| q.stretch * q.stretch)
        .sum::<f64>()
        .sqrt();
    Ok(r)
}

/// The event loop (no ideals).
fn run(s: &Scenario, policy: Policy) -> SimResult {
    let dev = &s.device;
    let mut sched = Scheduler::new(policy, dev.groups, dev.initial_group);
    sched.set_switch_ns(dev.switch_ns);
    let mut events: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |events: &mut BinaryHeap<_>, t: u64, e: Event| {
        seq += 1;
        events.push(Reverse((t, seq, e)));
    };
    let mut clients: Vec<ClientState> = s
        .clients
        .iter()
        .map(|_| ClientState {
            query: 0,
            arrival: 0,
            outstanding: 0,
            proc_end: 0,
        })
        .collect();
    for (ci, c) in s.clients.iter().enumerate() {
        if !c.queries.is_empty() {
            push(&mut events, c.start_ns, Event::Start { client: ci });
        }
    }
    // ticket → (client, object index)
    let mut owner: HashMap<Ticket, (usize, usize)> = HashMap::new();
    let mut next_ticket: Ticket = 0;
    let mut batch: VecDeque<Ticket> = VecDeque::new();
    let mut busy = false;
    let mut results = Vec::new();
    let mut requests = 0u64;
    let mut submit = |sched: &mut Scheduler,
                      owner: &mut HashMap<Ticket, (usize, usize)>,
                      ci: usize,
                      qi: usize,
                      oi: usize,
                      now: u64| {
        let o = &s.clients[ci].queries[qi].objects[oi];
        let ticket = next_ticket;
        next_ticket += 1;
        owner.insert(ticket, (ci, oi));
        sched.submit(
            Request {
                ticket,
                query: QueryKey(format!("{}.{qi}", s.clients[ci].name)),
                object: format!("{}/{}/{oi}", s.clients[ci].name, o.relation),
                relation: o.relation.clone(),
                group: o.group,
                bytes: o.bytes,
            },
            now,
        );
    };
    let mut now = 0u64;
    loop {
        // all events at the earliest instant, including ones they add at it
        while let Some(Reverse((t, _, _))) = events.peek() {
            if *t != now {
                break;
            }
            let Reverse((t, _, e)) = events.pop().expect("peeked");
            now = t;
            match e {
                Event::Start { client } => {
                    let c = &s.clients[client];
                    let st = &mut clients[client];
                    st.arrival = t;
                    st.proc_end = t;
                    let qi = st.query;
                    match c.issue {
                        Issue::Upfront => {
                            st.outstanding = c.queries[qi].objects.len();
                            for oi in 0..c.queries[qi].objects.len() {
                                submit(&mut sched, &mut owner, client, qi, oi, t);
                            }
                        }
                        Issue::Pull => submit(&mut sched, &mut owner, client, qi, 0, t),
                    }
                }
                Event::Request { client, object } => {
                    let qi = clients[client].query;
                    submit(&mut sched, &mut owner, client, qi, object, t);
                }
                Event::Done { ticket, start } => {
                    busy = false;
                    requests += 1;
                    sched.served(ticket, start, t);
                    let (client, oi) = owner.remove(&ticket).expect("ticket owned");
                    let c = &s.clients[client];
                    let st = &mut clients[client];
                    match c.issue {
                        Issue::Upfront => {
                            st.proc_end = st.proc_end.max(t) + c.compute_ns;
                            st.outstanding -= 1;
                            if st.outstanding == 0 {
                                push(&mut events, st.proc_end, Event::Finish { client });
                            }
                        }
                        Issue::Pull => {
                            let done = t + c.compute_ns;
                            if oi + 1 < c.queries[st.query].objects.len() {
                                push(
                                    &mut events,
                                    done,
                                    Event::Request {
                                        client,
                                        object: oi + 1,
                                    },
                                );
                            } else {
                                push(&mut events, done, Event::Finish { client });
                            }
                        }
                    }
                }
                Event::Finish { client } => {
                    let c = &s.clients[client];
                    let st = &mut clients[client];
                    results.push(QueryResult {
                        client,
                        index: st.query,
                        arrival_ns: st.arrival,
                        completion_ns: t,
                        time_ns: t - st.arrival,
                        ideal_ns: 0,
                        stretch: 0.0,
                    });
                    st.query += 1;
                    if st.query < c.queries.len() {
                        push(&mut events, t + c.think_ns, Event::Start { client });
                    }
                }
            }
        }
        // the device, idle, takes the next ticket or batch
        if !busy {
            let mut start = now;
            if batch.is_empty()
                && let Some(b) = sched.next_batch(now)
            {
                if b.switch {
                    start += dev.switch_ns;
                }
                batch.extend(b.tickets);
            }
            if let Some(ticket) = batch.pop_front() {
                let (ci, oi) = owner[&ticket];
                let qi = clients[ci].query;
                let bytes = s.clients[ci].queries[qi].objects[oi].bytes;
                let end = start + transfer_ns(bytes, dev.bandwidth_mib_s);
                busy = true;
                push(&mut events, end, Event::Done { ticket, start });
            }
        }
        match events.peek() {
            Some(Reverse((t, _, _))) => now = *t,
            None => break,
        }
    }
    results.sort_by_key(|q| (q.client, q.index));
    let metrics = sched.metrics();
    let total: u64 = results.iter().map(|q| q.time_ns).sum();
    SimResult {
        scenario: s.name.clone(),
        policy: policy.to_string(),
        makespan_ns: results.iter().map(|q| q.completion_ns).max().unwrap_or(0),
        switches: metrics.switches,
        batches: metrics.batches,
        requests,
        total_query_ns: total,
        mean_query_ns: total as f64 / results.len().max(1) as f64,
        mean_stretch: 0.0,
        max_stretch: 0.0,
        l2_stretch: 0.0,
        queries: results,
        metrics,
    }
}

/// Objects of one query as relation → count, placed by a layout for a
/// client (bucket) named `client`; keys `relation/NNNN`, placed in order.
pub fn place_query(
    placement: &mut Placement,
    client: &str,
    relations: &[(&str, usize)],
    bytes: u64,
) -> Result<QuerySpec, CsdError> {
    let mut objects = Vec::new();
    for (rel, n) in relations {
        for i in 0..*n {
            let g = placement.try_place(client, &format!("{rel}/{i:04}"))?;
            objects.push(Object {
                group: g,
                relation: rel.to_string(),
                bytes,
            });
        }
    }
    Ok(QuerySpec { objects })
}

pub const GIB: u64 = 1 << 30;

/// Fig. 4 / Fig. 5's setting: `clients` PostgreSQL clients pulling one
/// query of `objects` 1 GiB segments each (Q12: lineitem then orders, 4 to
/// 1), `compute` per segment, their data laid out by `layout`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PullParams {
    pub clients: usize,
    pub objects: usize,
    pub switch_ns: u64,
    pub bandwidth_mib_s: f64,
    pub compute_ns: u64,
    pub object_bytes: u64,
    pub layout: LayoutSpec,
}

impl PullParams {
    /// The paper's device and a 45-segment query (Q12 on SF 50 reads about
    /// 45 GB of lineitem and orders), 1 s of processing per segment.
    pub fn paper(clients: usize) -> PullParams {
        PullParams {
            clients,
            objects: 45,
            switch_ns: 10_000_000_000,
            bandwidth_mib_s: 1_200.0,
            compute_ns: 1_000_000_000,
            object_bytes: GIB,
            layout: LayoutSpec::OnePerClient,
        }
    }
}

/// The pull-based baseline scenario (§3.2, Fig. 4/5).
pub fn pull_scenario(p: &PullParams) -> Result<Scenario, CsdError> {
    if p.clients == 0 || p.objects == 0 {
        return Err(CsdError::sim("clients/objects", "must be at least 1"));
    }
    let groups = p.clients as u32;
    let mut placement = Placement::new(p.layout.clone(), groups);
    let lineitem = (p.objects * 4).div_ceil(5);
    let clients = (0..p.clients)
        .map(|c| {
            let name = format!("client{c}");
            let q = place_query(
                &mut placement,
                &name,
                &[("lineitem", lineitem), ("orders", p.objects - lineitem)],
                p.object_bytes,
            )?;
            Ok(ClientSpec {
                name,
                issue: Issue::Pull,
                compute_ns: p.compute_ns,
                start_ns: 0,
                think_ns: 0,
                queries: vec![q],
            })
        })
        .collect::<Result<Vec<_>, CsdError>>()?;
    Ok(Scenario {
        name: format!("pull C={} S={}s", p.clients, p.switch_ns as f64 / 1e9),
        device: Device {
            groups,
            switch_ns: p.switch_ns,
            bandwidth_mib_s: p.bandwidth_mib_s,
            initial_group: Some(0),
        },
        clients,
    })
}

/// The paper's model of the pull baseline: C × S × D.
pub fn pull_model_ns(p: &PullParams) -> f64 {
    p.clients as f64 * p.switch_ns as f64 * p.objects as f64
}

/// Fig. 12's setting: `clients` Skipper clients (objects up front) each
/// running the same query `repeats` times; client c's data on the group a
/// skewed layout gives it (default: groups of 2, 2, 1 clients).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SkewParams {
    /// Clients per group, e.g. [2, 2, 1].
    pub clients_per_group: Vec<usize>,
    pub repeats: usize,
    /// The query's objects per relation.
    pub relations: Vec<(String, usize)>,
    pub object_bytes: u64,
    pub switch_ns: u64,
    pub bandwidth_mib_s: f64,
    pub compute_ns: u64,
}

impl SkewParams {
    /// 5 clients, 10 runs of a Q12-like query (8 lineitem + 2 orders
    /// segments of 1 GiB), 10 s switches, 0.5 s of processing per segment.
    pub fn paper() -> SkewParams {
        SkewParams {
            clients_per_group: vec![2, 2, 1],
            repeats: 10,
            relations: vec![("lineitem".into(), 8), ("orders".into(), 2)],
            object_bytes: GIB,
            switch_ns: 10_000_000_000,
            bandwidth_mib_s: 1_200.0,
            compute_ns: 500_000_000,
        }
    }
}

pub fn skew_scenario(p: &SkewParams) -> Result<Scenario, CsdError> {
    if p.clients_per_group.is_empty() || p.repeats == 0 || p.relations.is_empty() {
        return Err(CsdError::sim("skew", "needs groups, repeats and relations"));
    }
    let mut explicit = std::collections::BTreeMap::new();
    let mut names = Vec::new();
    for (g, &n) in p.clients_per_group.iter().enumerate() {
        for _ in 0..n {
            let name = format!("client{}", names.len());
            explicit.insert(format!("{name}/"), g as u32);
            names.push(name);
        }
    }
    let groups = p.clients_per_group.len() as u32;
    let mut placement = Placement::new(LayoutSpec::Explicit(explicit), groups);
    let rels: Vec<(&str, usize)> = p.relations.iter().map(|(r, n)| (r.as_str(), *n)).collect();
    let clients = names
        .iter()
        .map(|name| {
            let q = place_query(&mut placement, name, &rels, p.object_bytes)?;
            Ok(ClientSpec {
                name: name.clone(),
                issue: Issue::Upfront,
                compute_ns: p.compute_ns,
                start_ns: 0,
                think_ns: 0,
                queries: vec![q; p.repeats],
            })
        })
        .collect::<Result<Vec<_>, CsdError>>()?;
    Ok(Scenario {
        name: format!("skewed {:?}", p.clients_per_group),
        device: Device {
            groups,
            switch_ns: p.switch_ns,
            bandwidth_mib_s: p.bandwidth_mib_s,
            initial_group: Some(0),
        },
        clients,
    })
}

/// A seeded random mix of clients and queries over a layout.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MixParams {
    pub seed: u64,
    pub clients: usize,
    pub groups: u32,
    pub layout: LayoutSpec,
    pub queries_per_client: usize,
    /// Relations per client (each query reads a random non-empty subset).
    pub relations: usize,
    /// Segments per relation, at most.
    pub max_objects: usize,
    /// Mean gap between a client's queries (exponential).
    pub mean_gap_ns: u64,
    /// Share of clients that pull (the rest issue up front).
    pub pull_share: f64,
    pub object_bytes: u64,
    pub switch_ns: u64,
    pub bandwidth_mib_s: f64,
    pub compute_ns: u64,
}

impl MixParams {
    pub fn new(seed: u64, clients: usize, layout: LayoutSpec) -> MixParams {
        MixParams {
            seed,
            clients,
            groups: 5,
            layout,
            queries_per_client: 5,
            relations: 3,
            max_objects: 4,
            mean_gap_ns: 5_000_000_000,
            pull_share: 0.0,
            object_bytes: GIB,
            switch_ns: 10_000_000_000,
            bandwidth_mib_s: 1_200.0,
            compute_ns: 500_000_000,
        }
    }
}

pub fn mix_scenario(p: &MixParams) -> Result<Scenario, CsdError> {
    if p.clients == 0 || p.groups == 0 || p.relations == 0 || p.max_objects == 0 {
        return Err(CsdError::sim(
            "mix",
            "clients, groups, relations and max_objects must be at least 1",
        ));
    }
    if p.queries_per_client == 0 {
        return Err(CsdError::sim(
            "mix.queries_per_client",
            "must be at least 1",
        ));
    }
    let mut rng = SmallRng::seed_from_u64(p.seed);
    let mut placement = Placement::new(p.layout.clone(), p.groups);
    let mut clients = Vec::new();
    for c in 0..p.clients {
        let name = format!("client{c}");
        // the client's relations and their sizes: stored once, read by many queries
        let sizes: Vec<usize> = (0..p.relations)
            .map(|_| rng.random_range(1..=p.max_objects))
            .collect();
        let mut all = Vec::new();
        for (r, &n) in sizes.iter().enumerate() {
            let rel = format!("r{r}");
            all.push(place_query(
                &mut placement,
                &name,
                &[(rel.as_str(), n)],
                p.object_bytes,
            )?);
        }
        let queries = (0..p.queries_per_client)
            .map(|_| {
                let mut objects = Vec::new();
                loop {
                    for rel in &all {
                        if rng.random_bool(0.6) {
                            objects.extend(rel.objects.iter().cloned());
                        }
                    }
                    if !objects.is_empty() {
                        break;
                    }
                }
                QuerySpec { objects }
            })
            .collect();
        let gap = |rng: &mut SmallRng| {
            let u: f64 = rng.random_range(f64::EPSILON..1.0);
            (-u.ln() * p.mean_gap_ns as f64) as u64
        };
        clients.push(ClientSpec {
            name,
            issue: if rng.random_bool(p.pull_share.clamp(0.0, 1.0)) {
                Issue::Pull
            } else {
                Issue::Upfront
            },
            compute_ns: p.compute_ns,
            start_ns: gap(&mut rng),
            think_ns: gap(&mut rng),
            queries,
        });
    }
    Ok(Scenario {
        name: format!("mix seed={} C={} layout={}", p.seed, p.clients, p.layout),
        device: Device {
            groups: p.groups,
            switch_ns: p.switch_ns,
            bandwidth_mib_s: p.bandwidth_mib_s,
            initial_group: Some(0),
        },
        clients,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t_ns(bytes: u64) -> u64 {
        transfer_ns(bytes, 1_200.0)
    }

    #[test]
    fn one_client_alone_has_stretch_one() {
        let p = PullParams::paper(1);
        let s = pull_scenario(&p).unwrap();
        for policy in Policy::ALL {
            let r = simulate(&s, policy).unwrap();
            assert_eq!(r.switches, 0);
            let expect = 45 * (t_ns(GIB) + 1_000_000_000);
            assert_eq!(r.queries[0].time_ns, expect, "{policy}");
            assert_eq!(r.max_stretch, 1.0);
        }
    }

    #[test]
    fn hand_worked_two_pull_clients() {
        // two clients, 2 objects each on their own groups, object FCFS,
        // switch 10, transfer 1 (1200 MiB at 1200 MiB/s = 1 s), compute 0.
        let p = PullParams {
            clients: 2,
            objects: 2,
            switch_ns: 10_000_000_000,
            bandwidth_mib_s: 1_200.0,
            compute_ns: 0,
            object_bytes: 1_200 << 20,
            layout: LayoutSpec::OnePerClient,
        };
        let s = pull_scenario(&p).unwrap();
        let r = simulate(&s, Policy::ObjectFcfs).unwrap();
        // t=0: both request; c0 served 0..1 (g0 up). c0 re-requests at 1 but
        // c1's is older: switch 1..11, c1 served 11..12; c1 re-requests at
        // 12, c0's (at 1) is older: switch 12..22, c0 23 done; switch to c1
        // 23..33, c1 done at 34.
        let s_ = 1_000_000_000u64;
        assert_eq!(r.queries[0].completion_ns, 23 * s_);
        assert_eq!(r.queries[1].completion_ns, 34 * s_);
        assert_eq!(r.switches, 3);
        // with compute 0, Max-Queries keeps serving the client whose next
        // request arrives at the instant the device frees: no switch until
        // it is done
        let r = simulate(&s, Policy::MaxQueries).unwrap();
        assert_eq!(r.switches, 1);
        assert_eq!(r.queries[0].completion_ns, 2 * s_);
        assert_eq!(r.queries[1].completion_ns, 14 * s_);
    }

    /// §3.2: with C clients on their own groups the pull baseline takes
    /// about C × S × D; the target is within 20% for C = 2..5.
    #[test]
    fn pull_baseline_follows_c_s_d() {
        for c in 2..=5 {
            let p = PullParams::paper(c);
            let r = simulate(&pull_scenario(&p).unwrap(), Policy::ObjectFcfs).unwrap();
            let model = pull_model_ns(&p);
            let mean = r.mean_query_ns;
            let ratio = mean / model;
            assert!(
                (0.8..=1.2).contains(&ratio),
                "C={c}: {mean} vs {model} ({ratio})"
            );
        }
        // and the same clients on one group (the HDD capacity tier) do not
        // collapse: no switch at all
        let mut p = PullParams::paper(5);
        p.layout = LayoutSpec::AllInOne;
        let r = simulate(&pull_scenario(&p).unwrap(), Policy::ObjectFcfs).unwrap();
        assert_eq!(r.switches, 0);
        assert!(r.mean_query_ns < pull_model_ns(&p) / 5.0);
    }

    /// Fig. 12's claims on the skewed layout: Rank makes fewer switches than
    /// query FCFS and has a lower max stretch than Max-Queries.
    #[test]
    fn fig12_rank_balances_switches_and_stretch() {
        let s = skew_scenario(&SkewParams::paper()).unwrap();
        let rank = simulate(&s, Policy::Rank { k: 1.0 }).unwrap();
        let qfcfs = simulate(&s, Policy::QueryFcfs).unwrap();
        let maxq = simulate(&s, Policy::MaxQueries).unwrap();
        let ofcfs = simulate(&s, Policy::ObjectFcfs).unwrap();
        assert!(
            rank.switches < qfcfs.switches,
            "{} vs {}",
            rank.switches,
            qfcfs.switches
        );
        assert!(
            rank.max_stretch < maxq.max_stretch,
            "{} vs {}",
            rank.max_stretch,
            maxq.max_stretch
        );
        // Max-Queries is the most efficient, object FCFS the least
        assert!(maxq.switches <= rank.switches);
        assert!(ofcfs.switches >= qfcfs.switches);
        for r in [&rank, &qfcfs, &maxq, &ofcfs] {
            assert_eq!(r.queries.len(), 50);
        }
    }

    #[test]
    fn simulations_are_deterministic() {
        let p = MixParams::new(11, 6, LayoutSpec::Random { seed: 3 });
        let s = mix_scenario(&p).unwrap();
        assert_eq!(s, mix_scenario(&p).unwrap());
        for policy in Policy::ALL {
            let a = simulate(&s, policy).unwrap();
            let b = simulate(&s, policy).unwrap();
            assert_eq!(a, b);
            assert_eq!(a.queries.len(), 30);
            // every query at least as slow as alone
            assert!(
                a.queries.iter().all(|q| q.stretch >= 1.0 - 1e-9),
                "{policy}"
            );
        }
        let other = mix_scenario(&MixParams::new(12, 6, LayoutSpec::Random { seed: 3 })).unwrap();
        assert_ne!(s, other);
    }

    #[test]
    fn bad_scenarios_are_named() {
        let mut s = skew_scenario(&SkewParams::paper()).unwrap();
        s.clients[1].queries[3].objects.clear();
        let e = simulate(&s, Policy::MaxQueries).unwrap_err().to_string();
        assert!(e.contains("client client1 query 3"), "{e}");
        let mut s = skew_scenario(&SkewParams::paper()).unwrap();
        s.clients[0].queries[0].objects[0].group = 9;
        let e = simulate(&s, Policy::MaxQueries).unwrap_err().to_string();
        assert!(e.contains("group 9"), "{e}");
    }
}
