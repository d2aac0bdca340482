//! The device's one arm: the task that owns the [`Scheduler`] and the modeled
//! clock, and lets data requests reach their disk group one at a time.
//!
//! A MAID box can only serve the group that is spun up, and serving another
//! costs a switch; one group's bandwidth is shared by its requests. So every
//! GET or PUT of object data becomes a [`Request`] to its group, submitted
//! here with its query key, and waits for its [`Grant`]. The dispatcher asks
//! the scheduler for the next batch whenever it is idle, charges a switch
//! (`switch_ms` of modeled time) when the batch changes group, then serves the
//! batch's tickets in order, charging each `bytes / bandwidth` — modeled time
//! that is deterministic, plus a real sleep of modeled × `time_scale` so
//! concurrency shows in wall time (0: never sleep).
//!
//! Clients go away. A waiter is a future holding a [`TicketGuard`]: dropping it
//! (a client disconnecting while waiting, or mid-transfer) sends a cancel, and
//! the dispatcher forgets the ticket if it is still pending, skips it if its
//! batch has reached it, and cuts a transfer in progress short. Nobody is ever
//! left waiting on a request that has no one to receive it.
//!
//! While it sleeps, the dispatcher keeps taking submissions and cancels, so
//! arrivals are stamped with the modeled time at which they arrived. When the
//! device is idle and `time_scale` > 0, modeled time follows real time
//! (real / scale); with `time_scale` 0 it advances only by the service given.
//!
//! Tests need to hold the device still to build a queue ([`Dispatcher::pause`])
//! and to know when the queue has a given shape without sleeping
//! ([`Dispatcher::wait_state`]); both are part of the API, not test-only code.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::{mpsc, oneshot, watch};

use crate::schedule::{Batch, Policy, QueryKey, Request, Scheduler, Ticket};

pub use crate::config::transfer_ns;

/// Modeled nanoseconds of a group switch of `switch_ms` milliseconds.
pub fn switch_ns(switch_ms: f64) -> u64 {
    if switch_ms <= 0.0 || !switch_ms.is_finite() {
        0
    } else {
        (switch_ms * 1e6).round() as u64
    }
}

/// The device model the dispatcher charges by.
#[derive(Clone, Copy, Debug)]
pub struct DeviceModel {
    pub policy: Policy,
    pub groups: u32,
    pub initial_group: Option<u32>,
    pub switch_ms: f64,
    pub bandwidth_mib_s: f64,
    pub time_scale: f64,
}

/// A request's turn, sent when its transfer is over.
#[derive(Clone, Debug, PartialEq)]
pub struct Grant {
    pub ticket: Ticket,
    pub group: u32,
    /// Modeled time from submission to the start of the transfer.
    pub wait_ns: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Whether this request's batch began with a switch.
    pub switched: bool,
    /// Switches so far (since the last reset).
    pub switches: u64,
}

/// What a caller asks the dispatcher for.
pub struct Ask {
    /// The query the request belongs to (`x-strata-query`); `None`: its own.
    pub query: Option<String>,
    pub bucket: String,
    pub key: String,
    pub relation: String,
    pub group: u32,
    pub bytes: u64,
}

/// The dispatcher's observable state, for tests and the metrics.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct State {
    /// Requests waiting in the scheduler.
    pub pending: usize,
    /// Submitted requests (since the last reset).
    pub submitted: u64,
    pub served: u64,
    /// Requests whose client went away before or during their transfer.
    pub cancelled: u64,
    pub bytes_served: u64,
    pub switches: u64,
    pub active_group: Option<u32>,
    /// The ticket whose transfer is in progress, if any.
    pub transferring: Option<Ticket>,
    pub modeled_ns: u64,
    pub paused: bool,
}

enum Msg {
    Submit {
        req: Request,
        grant: oneshot::Sender<Grant>,
    },
    Cancel(Ticket),
    Pause(bool),
    Metrics(oneshot::Sender<serde_json::Value>),
    Reset(oneshot::Sender<Result<(), String>>),
}

/// A handle to the dispatcher task; cheap to clone.
#[derive(Clone)]
pub struct Dispatcher {
    tx: mpsc::UnboundedSender<Msg>,
    state: watch::Receiver<State>,
    next_ticket: Arc<AtomicU64>,
}

/// The dispatcher is gone (the server is shutting down).
#[derive(Debug, thiserror::Error)]
#[error("the CSD dispatcher has stopped (server shutting down)")]
pub struct Stopped;

/// Cancels its ticket when dropped before the grant arrived.
pub struct TicketGuard {
    ticket: Ticket,
    tx: mpsc::UnboundedSender<Msg>,
    granted: bool,
}

impl Drop for TicketGuard {
    fn drop(&mut self) {
        if !self.granted {
            // The dispatcher may be gone already; then there is nothing to free.
            let _ = self.tx.send(Msg::Cancel(self.ticket));
        }
    }
}

impl Dispatcher {
    /// Starts the dispatcher task on the current tokio runtime.
    pub fn spawn(model: DeviceModel) -> (Dispatcher, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (state_tx, state) = watch::channel(State {
            active_group: model.initial_group,
            ..State::default()
        });
        let task = Task {
            model,
            scheduler: new_scheduler(&model, model.initial_group),
            clock: 0,
            epoch: Instant::now(),
            waiters: HashMap::new(),
            gone: HashSet::new(),
            state: State {
                active_group: model.initial_group,
                ..State::default()
            },
            state_tx,
            rx,
        };
        let handle = tokio::spawn(task.run());
        (
            Dispatcher {
                tx,
                state,
                next_ticket: Arc::new(AtomicU64::new(1)),
            },
            handle,
        )
    }

    /// Submits a request and waits for its turn; dropping the future gives
    /// the place up.
    pub async fn request(&self, ask: Ask) -> Result<Grant, Stopped> {
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        let query = ask
            .query
            .map_or_else(|| QueryKey::untagged(ticket), QueryKey);
        let req = Request {
            ticket,
            query,
            object: format!("{}/{}", ask.bucket, ask.key),
            relation: ask.relation,
            group: ask.group,
            bytes: ask.bytes,
        };
        let (grant_tx, grant_rx) = oneshot::channel();
        let mut guard = TicketGuard {
            ticket,
            tx: self.tx.clone(),
            granted: false,
        };
        self.tx
            .send(Msg::Submit {
                req,
                grant: grant_tx,
            })
            .map_err(|_| Stopped)?;
        let grant = grant_rx.await.map_err(|_| Stopped)?;
        guard.granted = true;
        Ok(grant)
    }

    /// The ticket the next request will get (tickets are handed out in order).
    pub fn next_ticket(&self) -> Ticket {
        self.next_ticket.load(Ordering::Relaxed)
    }

    /// Holds the device still (submissions queue, nothing is served) or lets it go.
    pub fn pause(&self, paused: bool) {
        let _ = self.tx.send(Msg::Pause(paused));
    }

    pub fn state(&self) -> State {
        self.state.borrow().clone()
    }

    /// Waits until the state satisfies `pred` (no polling: woken on changes).
    pub async fn wait_state(&self, pred: impl Fn(&State) -> bool) -> Result<State, Stopped> {
        let mut rx = self.state.clone();
        let state = rx.wait_for(|s| pred(s)).await.map_err(|_| Stopped)?;
        Ok(state.clone())
    }

    /// The scheduler's metrics and the dispatcher's counters, as JSON.
    pub async fn metrics(&self) -> Result<serde_json::Value, Stopped> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(Msg::Metrics(tx)).map_err(|_| Stopped)?;
        rx.await.map_err(|_| Stopped)
    }

    /// Zeroes the metrics and the modeled clock; refused while requests wait.
    pub async fn reset(&self) -> Result<Result<(), String>, Stopped> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(Msg::Reset(tx)).map_err(|_| Stopped)?;
        rx.await.map_err(|_| Stopped)
    }
}

fn new_scheduler(model: &DeviceModel, active: Option<u32>) -> Scheduler {
    let mut scheduler = Scheduler::new(model.policy, model.groups, active);
    // Stretch compares a query's time with its ideal, which counts a switch
    // per extra group it touched.
    scheduler.set_switch_ns(switch_ns(model.switch_ms));
    scheduler
}

struct Waiter {
    grant: oneshot::Sender<Grant>,
    submitted_ns: u64,
    bytes: u64,
}

struct Task {
    model: DeviceModel,
    scheduler: Scheduler,
    clock: u64,
    epoch: Instant,
    waiters: HashMap<Ticket, Waiter>,
    /// Tickets of the current batch whose clients went away.
    gone: HashSet<Ticket>,
    state: State,
    state_tx: watch::Sender<State>,
    rx: mpsc::UnboundedReceiver<Msg>,
}

/// How a sleep while serving ended.
enum Slept {
    Done,
    /// Nobody is waiting for the work any more.
    Abandoned,
    /// Every handle is gone: the server stopped.
    Stopped,
}

impl Task {
    /// The modeled now: the clock, or real time / scale if the device has
    /// been idle longer than that.
    fn now(&mut self) -> u64 {
        if self.model.time_scale > 0.0 {
            let real = self.epoch.elapsed().as_nanos() as f64 / self.model.time_scale;
            self.clock = self.clock.max(real as u64);
        }
        self.clock
    }

    fn publish(&mut self) {
        self.state.pending = self.scheduler.pending();
        self.state.active_group = self.scheduler.active();
        self.state.modeled_ns = self.clock;
        self.state_tx.send_replace(self.state.clone());
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Submit { req, grant } => {
                let now = self.now();
                self.waiters.insert(
                    req.ticket,
                    Waiter {
                        grant,
                        submitted_ns: now,
                        bytes: req.bytes,
                    },
                );
                self.scheduler.submit(req, now);
                self.state.submitted += 1;
            }
            Msg::Cancel(ticket) => {
                if self.scheduler.cancel(ticket) {
                    self.waiters.remove(&ticket);
                    self.state.cancelled += 1;
                } else if self.waiters.contains_key(&ticket)
                    || self.state.transferring == Some(ticket)
                {
                    // Taken into the batch being served: skipped when its turn
                    // comes, or its transfer cut short. (The cancel can arrive
                    // before its grant's receiver is dropped, so remember it.)
                    self.gone.insert(ticket);
                }
            }
            Msg::Pause(paused) => self.state.paused = paused,
            Msg::Metrics(reply) => {
                let _ = reply.send(self.metrics());
            }
            Msg::Reset(reply) => {
                let busy = self.waiters.len();
                if busy > 0 || self.state.transferring.is_some() {
                    let _ = reply.send(Err(format!(
                        "{busy} requests are waiting; reset when the device is idle"
                    )));
                } else {
                    self.scheduler = new_scheduler(&self.model, self.scheduler.active());
                    self.clock = 0;
                    self.epoch = Instant::now();
                    self.state = State {
                        active_group: self.scheduler.active(),
                        paused: self.state.paused,
                        ..State::default()
                    };
                    let _ = reply.send(Ok(()));
                }
            }
        }
        self.publish();
    }

    fn metrics(&mut self) -> serde_json::Value {
        let scheduler =
            serde_json::to_value(self.scheduler.metrics()).unwrap_or(serde_json::Value::Null);
        serde_json::json!({
            "policy": self.model.policy.to_string(),
            "groups": self.model.groups,
            "switch_ms": self.model.switch_ms,
            "bandwidth_mib_s": self.model.bandwidth_mib_s,
            "time_scale": self.model.time_scale,
            "state": self.state,
            "modeled_ms": self.clock as f64 / 1e6,
            "scheduler": scheduler,
        })
    }

    /// Sleeps `modeled_ns × time_scale` of real time while handling messages;
    /// stops early when `abandoned` says nobody waits for the work (checked
    /// after every message: a client going away always sends one).
    async fn sleep(&mut self, modeled_ns: u64, abandoned: impl Fn(&Task) -> bool) -> Slept {
        let real = modeled_ns as f64 * self.model.time_scale;
        if real < 1.0 {
            return if abandoned(self) {
                Slept::Abandoned
            } else {
                Slept::Done
            };
        }
        let sleep = tokio::time::sleep(Duration::from_nanos(real.min(u64::MAX as f64) as u64));
        tokio::pin!(sleep);
        loop {
            if abandoned(self) {
                return Slept::Abandoned;
            }
            tokio::select! {
                () = &mut sleep => return Slept::Done,
                msg = self.rx.recv() => match msg {
                    Some(msg) => self.handle(msg),
                    None => return Slept::Stopped,
                },
            }
        }
    }

    async fn run(mut self) {
        loop {
            // Take every message already queued before deciding what to serve.
            while let Ok(msg) = self.rx.try_recv() {
                self.handle(msg);
            }
            let now = self.now();
            let batch = if self.state.paused {
                None
            } else {
                self.scheduler.next_batch(now)
            };
            let Some(batch) = batch else {
                match self.rx.recv().await {
                    Some(msg) => {
                        self.handle(msg);
                        continue;
                    }
                    None => return,
                }
            };
            if self.serve(batch).await.is_err() {
                return;
            }
        }
    }

    async fn serve(&mut self, batch: Batch) -> Result<(), Stopped> {
        if batch.switch {
            self.state.switches += 1;
            self.clock += switch_ns(self.model.switch_ms);
            self.publish();
            let tickets = batch.tickets.clone();
            let gone = move |t: &Task| {
                tickets.iter().all(|k| {
                    t.gone.contains(k) || t.waiters.get(k).is_none_or(|w| w.grant.is_closed())
                })
            };
            // The modeled switch is charged whole (the device is
            // non-preemptive); only the real wait ends early when the whole
            // batch has gone away.
            if let Slept::Stopped = self.sleep(switch_ns(self.model.switch_ms), gone).await {
                return Err(Stopped);
            }
        }
        for ticket in batch.tickets {
            let Some(waiter) = self.waiters.remove(&ticket) else {
                continue;
            };
            if self.gone.remove(&ticket) || waiter.grant.is_closed() {
                self.scheduler.cancel(ticket);
                self.state.cancelled += 1;
                self.publish();
                continue;
            }
            let start = self.clock;
            let duration = transfer_ns(waiter.bytes, self.model.bandwidth_mib_s);
            self.state.transferring = Some(ticket);
            self.publish();
            let real_start = Instant::now();
            let grant = &waiter.grant;
            let slept = self
                .sleep(duration, |t| t.gone.contains(&ticket) || grant.is_closed())
                .await;
            self.gone.remove(&ticket);
            self.state.transferring = None;
            match slept {
                Slept::Stopped => return Err(Stopped),
                Slept::Abandoned => {
                    // Cut short: charge the part that really ran.
                    let ran = if self.model.time_scale > 0.0 {
                        (real_start.elapsed().as_nanos() as f64 / self.model.time_scale) as u64
                    } else {
                        0
                    };
                    self.clock = start + ran.min(duration);
                    self.scheduler.cancel(ticket);
                    self.state.cancelled += 1;
                    self.publish();
                }
                Slept::Done => {
                    self.clock = start + duration;
                    self.scheduler.served(ticket, start, self.clock);
                    self.state.served += 1;
                    self.state.bytes_served += waiter.bytes;
                    let grant = Grant {
                        ticket,
                        group: batch.group,
                        wait_ns: start.saturating_sub(waiter.submitted_ns),
                        start_ns: start,
                        end_ns: self.clock,
                        switched: batch.switch,
                        switches: self.state.switches,
                    };
                    if waiter.grant.send(grant).is_err() {
                        // Gone at the last moment: the transfer happened, the
                        // client just did not stay for it.
                        self.state.cancelled += 1;
                    }
                    self.publish();
                }
            }
        }
        Ok(())
    }
}
