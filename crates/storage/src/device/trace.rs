//! I/O traces and the concurrent-users replay model.
//!
//! # Traces
//!
//! A [`ModeledDevice`](super::ModeledDevice) records, while a trace is active
//! ([`TraceRecorder::start`]), every request it charges: file, first page, pages,
//! read or write, its modeled start and end (ns on the device's modeled clock, the
//! sum of the modeled time charged so far) and its wall-clock start and end since
//! the trace started. The real device ([`FileDevice`](super::FileDevice)) records
//! the same events with the wall clock in both places: the time the request (or
//! its batch) took to complete, as the application saw it. Requests charged together (one `read_many` batch) share a
//! `step` number. [`Trace::write_csv`] writes them for plotting address vs time
//! (the flash paper's Fig. 5).
//!
//! # Replaying N users (why a replay)
//!
//! The flash paper's concurrency results (Figs. 2, 6, Table 2) come from N
//! sessions each running the query on its own copy of the table, on an SSD whose
//! channels serve concurrent random reads in parallel while one synchronous query
//! keeps one channel busy. strata reproduces them deterministically by recording
//! one run's request stream and replaying N copies of it on a discrete-event
//! model of the medium ([`replay`]), rather than running N threads against a
//! shared modeled clock: the replay needs no N physical copies of the table, its
//! result does not depend on how the OS schedules threads, and for one user it
//! gives exactly the modeled device's own time (tested), so the single-user
//! figures and the concurrent ones use one model.
//!
//! A user's stream is a list of steps (one synchronous request, or one batch in
//! flight together); the user issues a step when its previous step has
//! completed, plus the step's CPU gap (0 in strata's figures: modeled time counts
//! I/O only, which keeps it deterministic). Users on their own copies address
//! distinct files; on a shared copy they address the same ones. Steps are served
//! in the order they are issued (ties: lower user first), each request against:
//!
//! * **SSD** (`channels` = K, latency L, transfer T(bytes) at the profile's rate):
//!   a request takes the channel that frees up first (ties: lowest index),
//!   starting at `max(issue, channel free)` and holding it for `L + T`; the device's
//!   bandwidth is one shared bus on which each request also reserves `T`,
//!   starting at `max(issue, bus free)`. The request ends at the later of its
//!   channel end and its bus reservation end. For one batch issued at once this
//!   is exactly the modeled device's `max(list-schedule makespan, transfer of
//!   all bytes)`; for a single request it is `L + T`. N users' random reads
//!   overlap on the channels; N users' large sequential reads share the bus.
//! * **HDD**: one head, one request at a time, the step's requests in elevator
//!   order; a request not starting where the head is (same file of the same
//!   copy, next page) pays seek + rotation. Interleaved users make each other
//!   seek.
//!
//! Temporary files (sort runs and partitions, named [`TEMP_FILE_PREFIX`]...) can
//! be sent to a second medium, as the paper's Oracle put its temporary
//! tablespace on a separate disk.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use parking_lot::Mutex;
use serde::Serialize;

use super::{DeviceProfile, FileId, PAGE_SIZE, ProfileKind};
use crate::error::{Result, StorageError};

pub use crate::temp::TEMP_FILE_PREFIX;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IoKind {
    Read,
    Write,
}

/// One request of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// Requests charged together share a step.
    pub step: u64,
    pub file: FileId,
    pub first_page: u64,
    pub pages: u64,
    pub kind: IoKind,
    /// Modeled clock (ns) at the request's start and end.
    pub start_ns: u64,
    pub end_ns: u64,
    /// Wall clock (ns since the trace started) around the charge.
    pub wall_start_ns: u64,
    pub wall_end_ns: u64,
}

/// A recorded trace: the requests and the paths of the files they touched.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub events: Vec<TraceEvent>,
    pub files: BTreeMap<FileId, PathBuf>,
    /// Requests made after the cap of [`TraceRecorder::start_capped`] was
    /// reached, counted but not recorded.
    pub dropped: u64,
}

impl Trace {
    /// Whether `file` is a temporary file (by its name).
    pub fn is_temp(&self, file: FileId) -> bool {
        self.files.get(&file).is_some_and(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(TEMP_FILE_PREFIX))
        })
    }

    /// A short name for a file: its file name.
    pub fn file_name(&self, file: FileId) -> String {
        self.files
            .get(&file)
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("file{}", file.0))
    }

    /// Writes `step,file,temp,first_page,pages,kind,start_ms,end_ms,wall_start_ms,wall_end_ms`.
    pub fn write_csv(&self, path: &Path) -> Result<()> {
        let mut out = std::io::BufWriter::new(
            std::fs::File::create(path).map_err(|e| StorageError::io(path, e))?,
        );
        let mut w = || -> std::io::Result<()> {
            writeln!(
                out,
                "step,file,temp,first_page,pages,kind,start_ms,end_ms,wall_start_ms,wall_end_ms"
            )?;
            for e in &self.events {
                writeln!(
                    out,
                    "{},{},{},{},{},{},{:.6},{:.6},{:.6},{:.6}",
                    e.step,
                    self.file_name(e.file),
                    self.is_temp(e.file),
                    e.first_page,
                    e.pages,
                    match e.kind {
                        IoKind::Read => "read",
                        IoKind::Write => "write",
                    },
                    e.start_ns as f64 / 1e6,
                    e.end_ns as f64 / 1e6,
                    e.wall_start_ns as f64 / 1e6,
                    e.wall_end_ns as f64 / 1e6
                )?;
            }
            out.flush()
        };
        w().map_err(|e| StorageError::io(path, e))
    }

    /// The trace as one user's request stream (steps in order, CPU gaps 0).
    pub fn stream(&self) -> Stream {
        let mut steps: Vec<Step> = Vec::new();
        let mut last = None;
        for e in &self.events {
            if last != Some(e.step) {
                steps.push(Step {
                    gap_ns: 0,
                    reqs: Vec::new(),
                });
                last = Some(e.step);
            }
            steps.last_mut().expect("a step").reqs.push(Req {
                file: e.file.0,
                temp: self.is_temp(e.file),
                first_page: e.first_page,
                pages: e.pages,
                kind: e.kind,
            });
        }
        Stream { steps }
    }
}

/// Records requests while started; kept by a modeled device.
#[derive(Default)]
pub struct TraceRecorder {
    state: Mutex<Option<Recording>>,
}

struct Recording {
    trace: Trace,
    step: u64,
    started: Option<Instant>,
    /// At most this many events are kept.
    limit: usize,
}

/// One request to record (the device fills it in).
pub(crate) struct Charged {
    pub file: FileId,
    pub path: Option<PathBuf>,
    pub first_page: u64,
    pub pages: u64,
    pub kind: IoKind,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl TraceRecorder {
    /// Starts (or restarts, dropping what was recorded) a trace.
    pub fn start(&self) {
        self.start_capped(usize::MAX);
    }

    /// Starts a trace that keeps the first `max_events` requests and only
    /// counts the rest ([`Trace::dropped`]), so that a long run's trace stays
    /// within memory.
    pub fn start_capped(&self, max_events: usize) {
        *self.state.lock() = Some(Recording {
            trace: Trace::default(),
            step: 0,
            started: Some(Instant::now()),
            limit: max_events,
        });
    }

    /// Stops recording and returns the trace (empty if none was started).
    pub fn take(&self) -> Trace {
        self.state
            .lock()
            .take()
            .map(|r| r.trace)
            .unwrap_or_default()
    }

    pub fn is_active(&self) -> bool {
        self.state.lock().is_some()
    }

    /// Records one step's requests of a device without a modeled clock (the
    /// real files): their start and end are the wall clock around the step,
    /// in both the modeled and the wall columns.
    pub(crate) fn record_wall(&self, wall_start: Instant, reqs: Vec<Charged>) {
        self.record_with(wall_start, reqs, true);
    }

    /// Records one step's requests; `wall_start` is when the charge began.
    pub(crate) fn record(&self, wall_start: Instant, reqs: Vec<Charged>) {
        self.record_with(wall_start, reqs, false);
    }

    fn record_with(&self, wall_start: Instant, reqs: Vec<Charged>, wall_only: bool) {
        let mut g = self.state.lock();
        let Some(r) = g.as_mut() else {
            return;
        };
        let t0 = *r.started.get_or_insert(wall_start);
        let ws = wall_start.saturating_duration_since(t0).as_nanos() as u64;
        let we = (Instant::now().saturating_duration_since(t0).as_nanos() as u64).max(ws + 1);
        for mut c in reqs {
            if r.trace.events.len() >= r.limit {
                r.trace.dropped += 1;
                continue;
            }
            if wall_only {
                (c.start_ns, c.end_ns) = (ws, we);
            }
            if let Some(p) = c.path {
                r.trace.files.entry(c.file).or_insert(p);
            }
            r.trace.events.push(TraceEvent {
                step: r.step,
                file: c.file,
                first_page: c.first_page,
                pages: c.pages,
                kind: c.kind,
                start_ns: c.start_ns,
                end_ns: c.end_ns,
                wall_start_ns: ws,
                wall_end_ns: we,
            });
        }
        r.step += 1;
    }
}

/// One request of a stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Req {
    pub file: u32,
    pub temp: bool,
    pub first_page: u64,
    pub pages: u64,
    pub kind: IoKind,
}

/// Requests issued together, after `gap_ns` of CPU since the previous step ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub gap_ns: u64,
    pub reqs: Vec<Req>,
}

/// One user's request stream.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stream {
    pub steps: Vec<Step>,
}

impl Stream {
    pub fn requests(&self) -> usize {
        self.steps.iter().map(|s| s.reqs.len()).sum()
    }
}

/// A user of a replay: its stream and the copy of the data it works on (users
/// with the same copy address the same files).
pub struct User<'a> {
    pub stream: &'a Stream,
    pub copy: u32,
}

/// The state of one modeled medium over time.
struct Medium {
    kind: ProfileKind,
    fixed_ns: u64,
    read_mb_s: f64,
    write_mb_s: f64,
    channels: Vec<u64>,
    bus_free: u64,
    /// HDD: where the head is ((copy, file), next page) and when it is free.
    head: Option<((u32, u32), u64)>,
    free: u64,
}

impl Medium {
    fn new(p: &DeviceProfile) -> Medium {
        Medium {
            kind: p.kind,
            fixed_ns: p.fixed_ns(),
            read_mb_s: p.read_mb_s,
            write_mb_s: p.write_mb_s,
            channels: vec![0; p.channels.max(1) as usize],
            bus_free: 0,
            head: None,
            free: 0,
        }
    }

    fn transfer(&self, r: &Req) -> u64 {
        let rate = match r.kind {
            IoKind::Read => self.read_mb_s,
            IoKind::Write => self.write_mb_s,
        };
        DeviceProfile::transfer_ns(r.pages * PAGE_SIZE as u64, rate)
    }

    /// Serves requests issued at `t`; returns when the last one ends.
    fn serve(&mut self, t: u64, copy: u32, reqs: &mut [&Req]) -> u64 {
        let mut end = t;
        match self.kind {
            ProfileKind::Ssd => {
                for r in reqs.iter() {
                    let transfer = self.transfer(r);
                    let ch = (0..self.channels.len())
                        .min_by_key(|&i| self.channels[i])
                        .expect("channels >= 1");
                    let start = t.max(self.channels[ch]);
                    self.channels[ch] = start + self.fixed_ns + transfer;
                    self.bus_free = self.bus_free.max(t) + transfer;
                    end = end.max(self.channels[ch]).max(self.bus_free);
                }
            }
            ProfileKind::Hdd => {
                reqs.sort_by_key(|r| (r.file, r.first_page));
                for r in reqs.iter() {
                    let key = (copy, r.file);
                    let seek = if self.head == Some((key, r.first_page)) {
                        0
                    } else {
                        self.fixed_ns
                    };
                    self.head = Some((key, r.first_page + r.pages));
                    let start = t.max(self.free);
                    self.free = start + seek + self.transfer(r);
                    end = end.max(self.free);
                }
            }
        }
        end
    }
}

/// Replays `users` on `data` (and temporary files on `temp`, if given; else on
/// `data` too); returns each user's completion time in ns. See the module docs.
pub fn replay(users: &[User<'_>], data: &DeviceProfile, temp: Option<&DeviceProfile>) -> Vec<u64> {
    let mut media = vec![Medium::new(data)];
    if let Some(t) = temp {
        media.push(Medium::new(t));
    }
    let n = users.len();
    let mut next_step = vec![0usize; n];
    let mut ready = vec![0u64; n];
    let mut done = vec![0u64; n];
    // Users by (issue time, index): a binary heap of pending issues.
    let mut queue: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>> = (0..n)
        .filter(|&u| !users[u].stream.steps.is_empty())
        .map(|u| std::cmp::Reverse((users[u].stream.steps[0].gap_ns, u)))
        .collect();
    while let Some(std::cmp::Reverse((t, u))) = queue.pop() {
        let step = &users[u].stream.steps[next_step[u]];
        let mut end = t;
        for (m, medium) in media.iter_mut().enumerate() {
            let mut reqs: Vec<&Req> = step
                .reqs
                .iter()
                .filter(|r| (temp.is_some() && r.temp) == (m == 1))
                .collect();
            if !reqs.is_empty() {
                end = end.max(medium.serve(t, users[u].copy, &mut reqs));
            }
        }
        ready[u] = end;
        next_step[u] += 1;
        if let Some(s) = users[u].stream.steps.get(next_step[u]) {
            queue.push(std::cmp::Reverse((end + s.gap_ns, u)));
        } else {
            done[u] = end;
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(file: u32, first: u64, pages: u64) -> Req {
        Req {
            file,
            temp: false,
            first_page: first,
            pages,
            kind: IoKind::Read,
        }
    }

    fn one_step(reqs: Vec<Req>) -> Stream {
        Stream {
            steps: vec![Step { gap_ns: 0, reqs }],
        }
    }

    #[test]
    fn a_capped_trace_keeps_the_first_events_and_counts_the_rest() {
        let rec = TraceRecorder::default();
        rec.start_capped(3);
        let charged = |first| Charged {
            file: FileId(0),
            path: None,
            first_page: first,
            pages: 1,
            kind: IoKind::Read,
            start_ns: 0,
            end_ns: 1,
        };
        for i in 0..5 {
            rec.record(Instant::now(), vec![charged(i)]);
        }
        let t = rec.take();
        let firsts: Vec<u64> = t.events.iter().map(|e| e.first_page).collect();
        assert_eq!(firsts, [0, 1, 2]);
        assert_eq!(t.dropped, 2);
        assert!(!rec.is_active());
    }

    // SSD: a page is 40_960 ns at 200 MB/s, latency 200_000 ns.
    const PAGE: u64 = 40_960;
    const LAT: u64 = 200_000;

    #[test]
    fn ssd_users_overlap_on_channels_and_share_the_bus() {
        let ssd = DeviceProfile::builtin("ssd").unwrap();
        let s = one_step(vec![req(0, 5, 1)]);
        // Two users, one page each: channels 0 and 1 at once; the bus moves both
        // pages by 81_920 < 240_960.
        let users: Vec<User> = (0..2)
            .map(|c| User {
                stream: &s,
                copy: c,
            })
            .collect();
        assert_eq!(replay(&users, &ssd, None), vec![LAT + PAGE; 2]);
        // Nine users on 8 channels: the first five end with their channels; the
        // bus (8 pages take 327_680 ns > 240_960) holds users 6-8 back: user i's
        // page is on the bus until (i + 1) * 40_960. The ninth waits for channel 0.
        let users: Vec<User> = (0..9)
            .map(|c| User {
                stream: &s,
                copy: c,
            })
            .collect();
        let t = replay(&users, &ssd, None);
        assert_eq!(t[..5], [LAT + PAGE; 5]);
        assert_eq!(t[5..8], [6 * PAGE, 7 * PAGE, 8 * PAGE]);
        assert_eq!(t[8], 2 * (LAT + PAGE));
        // Two users reading 1 MiB each: the second's transfer waits for the bus.
        let big = one_step(vec![req(0, 0, 128)]);
        let users: Vec<User> = (0..2)
            .map(|c| User {
                stream: &big,
                copy: c,
            })
            .collect();
        assert_eq!(
            replay(&users, &ssd, None),
            vec![LAT + 128 * PAGE, 2 * 128 * PAGE]
        );
        assert_eq!(LAT + 128 * PAGE, 5_442_880);
    }

    #[test]
    fn a_synchronous_user_keeps_one_channel_busy() {
        let ssd = DeviceProfile::builtin("ssd").unwrap();
        // Four synchronous one-page reads: one after another, alone or with 4
        // others (5 pages on the bus take 204_800 ns < 240_960: no wait).
        let s = Stream {
            steps: (0..4)
                .map(|i| Step {
                    gap_ns: 0,
                    reqs: vec![req(0, i * 10, 1)],
                })
                .collect(),
        };
        let alone = replay(
            &[User {
                stream: &s,
                copy: 0,
            }],
            &ssd,
            None,
        );
        assert_eq!(alone, vec![4 * (LAT + PAGE)]);
        let users: Vec<User> = (0..5)
            .map(|c| User {
                stream: &s,
                copy: c,
            })
            .collect();
        assert_eq!(replay(&users, &ssd, None), vec![4 * (LAT + PAGE); 5]);
        // A CPU gap delays the next step.
        let mut g = s.clone();
        g.steps[2].gap_ns = 1000;
        assert_eq!(
            replay(
                &[User {
                    stream: &g,
                    copy: 0
                }],
                &ssd,
                None
            ),
            vec![4 * (LAT + PAGE) + 1000]
        );
    }

    #[test]
    fn hdd_users_make_each_other_seek() {
        let hdd = DeviceProfile::builtin("hdd").unwrap();
        // 3.5 ms positioning, 65_536 ns a page.
        let one = 3_500_000 + 65_536;
        let s = Stream {
            steps: (0..2)
                .map(|i| Step {
                    gap_ns: 0,
                    reqs: vec![req(0, i, 1)],
                })
                .collect(),
        };
        // Alone: random then sequential.
        assert_eq!(
            replay(
                &[User {
                    stream: &s,
                    copy: 0
                }],
                &hdd,
                None
            ),
            vec![one + 65_536]
        );
        // Two users on their own copies: every request seeks. u0 [0, one],
        // u1 [one, 2 one], u0 [2 one, 3 one], u1 [3 one, 4 one].
        let users: Vec<User> = (0..2)
            .map(|c| User {
                stream: &s,
                copy: c,
            })
            .collect();
        assert_eq!(replay(&users, &hdd, None), vec![3 * one, 4 * one]);
        // On a shared copy u1's first read (page 0) follows nothing sequential,
        // but u0's second read (page 1) finds the head at page 1 after u1's read.
        let users: Vec<User> = (0..2)
            .map(|_| User {
                stream: &s,
                copy: 0,
            })
            .collect();
        assert_eq!(
            replay(&users, &hdd, None),
            vec![2 * one + 65_536, 3 * one + 65_536]
        );
    }

    #[test]
    fn temporary_files_can_go_to_a_second_medium() {
        let ssd = DeviceProfile::builtin("ssd").unwrap();
        let hdd = DeviceProfile::builtin("hdd").unwrap();
        let mut t = req(1, 0, 1);
        t.temp = true;
        t.kind = IoKind::Write;
        // One step: a data read (ssd: 240_960) and a temp write (hdd: 3_565_536) in parallel.
        let s = one_step(vec![req(0, 0, 1), t]);
        assert_eq!(
            replay(
                &[User {
                    stream: &s,
                    copy: 0
                }],
                &ssd,
                Some(&hdd)
            ),
            vec![3_565_536]
        );
        // Without a temp medium both go to the ssd: 2 channels, bus 81_920.
        assert_eq!(
            replay(
                &[User {
                    stream: &s,
                    copy: 0
                }],
                &ssd,
                None
            ),
            vec![LAT + PAGE]
        );
    }
}
