//! [`ModeledDevice`]: a device that charges every request by a [`DeviceProfile`].
//!
//! The experiments compare access methods on a disk and on a flash SSD, but they run
//! on whatever machine is at hand. A modeled device forwards every operation to a
//! real device underneath (so the data is real and every answer is checked) and, on
//! the side, adds up how long the profiled medium would have taken. The sum is
//! deterministic: the same sequence of requests always costs the same nanoseconds,
//! whatever the machine, its page cache or the other threads.
//!
//! # Charging rules
//!
//! Only reads and writes are charged; `create`, `open`, `truncate` and `sync` are
//! free. Empty requests (no pages) are neither charged nor counted. A failed request
//! is not charged. Let `transfer(bytes) = bytes / rate`, with the rate in bytes per
//! nanosecond (`MB/s` means 10^6 bytes per second, so `125 MB/s` is 0.125 B/ns and
//! an 8 KiB page takes 65,536 ns).
//!
//! * **HDD** (`seek_ms`, `rotation_ms`): the device has one head, shared by reads
//!   and writes. A request that starts exactly where the previous request ended
//!   (same [`FileId`], `first_page` equal to the previous request's end) costs
//!   `transfer` only; any other request costs `seek + rotation + transfer`. The
//!   first request, and the first one after [`IoStats::forget_position`] on this
//!   device's stats, is a random one. [`Device::read_many`] serves its batch in
//!   elevator order (sorted by file, then first page), charging each request as
//!   above; the batch costs the sum. Channels are not used.
//! * **SSD** (`latency_ms`, `channels`): every request costs `latency + transfer`.
//!   A single `read` or `write` is charged that cost (a synchronous caller keeps one
//!   channel busy). [`Device::read_many`] list-schedules its requests, in the order
//!   given, onto `channels` channels that all start free: each request goes to the
//!   channel that frees up earliest (ties to the lowest index) and keeps it busy for
//!   its cost. The batch costs `max(latest channel finish, transfer(all bytes of
//!   the batch))`: the channels overlap latencies but share the bandwidth.
//!
//! Rounding: costs are whole nanoseconds. The fixed part (`seek + rotation`, or
//! `latency`) is rounded once to the nearest ns, and each request's transfer time is
//! rounded to the nearest ns on its own; a batch's bandwidth bound is rounded once
//! for the whole batch. All the sums are then exact integer arithmetic.
//!
//! Counters: the device's own [`IoStats`] counts requests and pages like a real
//! device (a batch's reads are recorded in the order they are charged: elevator
//! order on HDD, submission order on SSD) plus the modeled time. The inner device
//! keeps counting real I/O in its own stats.
//!
//! Optionally, with `wait_scale = s`, after charging `t` ns the calling thread
//! sleeps `t * s` ns, so that contention between threads shows in wall time too.
//!
//! The built-in profiles and their numbers are in `profile.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::profile::{DeviceProfile, ProfileKind, ms};
use super::trace::{Charged, IoKind, TraceRecorder};
use super::{Device, FileId, IoStats, PAGE_SIZE, ReadRequest};
use crate::error::Result;

/// A device that forwards everything to `inner` and charges each request by a
/// [`DeviceProfile`] in its own [`IoStats`].
pub struct ModeledDevice {
    inner: Arc<dyn Device>,
    profile: DeviceProfile,
    /// Precomputed `profile.fixed_ns()`.
    fixed_ns: u64,
    stats: IoStats,
    /// The HDD head: where the previous request (read or write) ended.
    head: Mutex<Head>,
    /// Records requests with their modeled times while a trace is active.
    trace: TraceRecorder,
}

struct Head {
    at: Option<(FileId, u64)>,
    /// `stats.position_epoch()` when `at` was set; if it moved, `at` is forgotten.
    epoch: u64,
}

/// What a request does, for charging.
#[derive(Clone, Copy)]
enum Dir {
    Read,
    Write,
}

impl ModeledDevice {
    pub fn new(inner: Arc<dyn Device>, profile: DeviceProfile) -> ModeledDevice {
        ModeledDevice {
            inner,
            fixed_ns: profile.fixed_ns(),
            profile,
            stats: IoStats::default(),
            head: Mutex::new(Head { at: None, epoch: 0 }),
            trace: TraceRecorder::default(),
        }
    }

    pub fn profile(&self) -> &DeviceProfile {
        &self.profile
    }

    pub fn inner(&self) -> &Arc<dyn Device> {
        &self.inner
    }

    fn transfer_ns(&self, pages: u64, dir: Dir) -> u64 {
        let rate = match dir {
            Dir::Read => self.profile.read_mb_s,
            Dir::Write => self.profile.write_mb_s,
        };
        DeviceProfile::transfer_ns(pages * PAGE_SIZE as u64, rate)
    }

    /// Cost of one request on its own: HDD by head position (moving the head), SSD
    /// latency + transfer.
    fn request_ns(&self, head: &mut Head, file: FileId, first: u64, pages: u64, dir: Dir) -> u64 {
        let transfer = self.transfer_ns(pages, dir);
        match self.profile.kind {
            ProfileKind::Hdd => {
                let epoch = self.stats.position_epoch();
                if head.epoch != epoch {
                    head.at = None;
                    head.epoch = epoch;
                }
                let sequential = head.at == Some((file, first));
                head.at = Some((file, first + pages));
                if sequential {
                    transfer
                } else {
                    self.fixed_ns + transfer
                }
            }
            ProfileKind::Ssd => self.fixed_ns + transfer,
        }
    }

    /// Charges one request (`read` or `write`) and counts it.
    fn charge_one(&self, file: FileId, first: u64, pages: u64, dir: Dir) {
        let wall = std::time::Instant::now();
        let ns = {
            let mut head = self.head.lock();
            match dir {
                Dir::Read => {
                    self.stats.record_read(file, first, pages);
                }
                Dir::Write => self.stats.record_write(pages),
            }
            let ns = self.request_ns(&mut head, file, first, pages, dir);
            if self.trace.is_active() {
                let start = self.stats.snapshot().modeled_ns;
                self.trace.record(
                    wall,
                    vec![self.charged(file, first, pages, dir, start, start + ns)],
                );
            }
            ns
        };
        self.finish(ns);
    }

    fn charged(
        &self,
        file: FileId,
        first: u64,
        pages: u64,
        dir: Dir,
        start: u64,
        end: u64,
    ) -> Charged {
        Charged {
            file,
            path: Some(self.inner.path(file)),
            first_page: first,
            pages,
            kind: match dir {
                Dir::Read => IoKind::Read,
                Dir::Write => IoKind::Write,
            },
            start_ns: start,
            end_ns: end,
        }
    }

    /// Charges a batch of reads `(file, first page, pages)` in submission order.
    fn charge_batch(&self, mut reqs: Vec<(FileId, u64, u64)>) {
        if reqs.is_empty() {
            return;
        }
        let wall = std::time::Instant::now();
        let tracing = self.trace.is_active();
        // Per request (start, end) relative to the batch's start, for the trace.
        let mut times: Vec<(u64, u64)> = Vec::new();
        let ns = {
            let mut head = self.head.lock();
            let ns = match self.profile.kind {
                ProfileKind::Hdd => {
                    // Elevator order: one sweep over the batch.
                    reqs.sort_by_key(|&(file, first, _)| (file, first));
                    let mut at = 0;
                    for &(file, first, pages) in &reqs {
                        self.stats.record_read(file, first, pages);
                        let c = self.request_ns(&mut head, file, first, pages, Dir::Read);
                        times.push((at, at + c));
                        at += c;
                    }
                    at
                }
                ProfileKind::Ssd => {
                    let mut channels = vec![0u64; self.profile.channels as usize];
                    let mut bus = 0;
                    for &(file, first, pages) in &reqs {
                        self.stats.record_read(file, first, pages);
                        let cost = self.request_ns(&mut head, file, first, pages, Dir::Read);
                        // The channel that frees up first; `min_by_key` keeps the
                        // first of equal ones, i.e. the lowest index.
                        let ch = channels
                            .iter_mut()
                            .min_by_key(|t| **t)
                            .expect("channels >= 1");
                        bus += self.transfer_ns(pages, Dir::Read);
                        times.push((*ch, (*ch + cost).max(bus)));
                        *ch += cost;
                    }
                    let busiest = channels.into_iter().max().unwrap_or(0);
                    let total_pages: u64 = reqs.iter().map(|r| r.2).sum();
                    busiest.max(self.transfer_ns(total_pages, Dir::Read))
                }
            };
            if tracing {
                let start = self.stats.snapshot().modeled_ns;
                let charged = reqs
                    .iter()
                    .zip(&times)
                    .map(|(&(file, first, pages), &(s, e))| {
                        self.charged(file, first, pages, Dir::Read, start + s, start + e)
                    })
                    .collect();
                self.trace.record(wall, charged);
            }
            ns
        };
        self.finish(ns);
    }

    /// Adds `ns` to the modeled time and, if the profile says so, really waits.
    fn finish(&self, ns: u64) {
        self.stats.add_modeled_ns(ns);
        let mut waited = 0;
        if let Some(scale) = self.profile.wait_scale {
            let wait = (ns as f64 * scale).round() as u64;
            if wait > 0 {
                std::thread::sleep(Duration::from_nanos(wait));
                waited = wait;
            }
        }
        super::add_thread_unwaited_ns(ns.saturating_sub(waited));
    }
}

impl Device for ModeledDevice {
    forward_files_to!(inner);

    fn read(&self, file: FileId, first_page: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read(file, first_page, buf)?;
        let pages = (buf.len() / PAGE_SIZE) as u64;
        if pages > 0 {
            self.charge_one(file, first_page, pages, Dir::Read);
        }
        Ok(())
    }

    fn read_many(&self, reqs: &mut [ReadRequest<'_>]) -> Result<()> {
        self.inner.read_many(reqs)?;
        let batch = reqs
            .iter()
            .map(|r| (r.file, r.first_page, (r.buf.len() / PAGE_SIZE) as u64))
            .filter(|r| r.2 > 0)
            .collect();
        self.charge_batch(batch);
        Ok(())
    }

    fn write(&self, file: FileId, first_page: u64, buf: &[u8]) -> Result<()> {
        self.inner.write(file, first_page, buf)?;
        let pages = (buf.len() / PAGE_SIZE) as u64;
        if pages > 0 {
            self.charge_one(file, first_page, pages, Dir::Write);
        }
        Ok(())
    }

    fn truncate(&self, file: FileId, pages: u64) -> Result<()> {
        self.inner.truncate(file, pages)
    }

    fn sync(&self, file: FileId) -> Result<()> {
        self.inner.sync(file)
    }

    fn charge_read(&self, file: FileId, first_page: u64, pages: u64) {
        if pages > 0 {
            self.charge_one(file, first_page, pages, Dir::Read);
        }
    }
    fn stats(&self) -> &IoStats {
        &self.stats
    }

    fn trace(&self) -> Option<&TraceRecorder> {
        Some(&self.trace)
    }

    fn parallelism(&self) -> usize {
        match self.profile.kind {
            ProfileKind::Hdd => 1,
            ProfileKind::Ssd => self.profile.channels.max(1) as usize,
        }
    }

    fn describe(&self) -> String {
        let p = &self.profile;
        let rate = if p.read_mb_s == p.write_mb_s {
            format!("{} MB/s", p.read_mb_s)
        } else {
            format!("{} MB/s read, {} MB/s write", p.read_mb_s, p.write_mb_s)
        };
        let model = match p.kind {
            ProfileKind::Hdd => format!(
                "seek {} ms + rotation {} ms, {rate}",
                ms(p.seek_ms),
                ms(p.rotation_ms)
            ),
            ProfileKind::Ssd => format!(
                "latency {} ms, {rate}, {} channel{}",
                ms(p.latency_ms),
                p.channels,
                if p.channels == 1 { "" } else { "s" }
            ),
        };
        let wait = match p.wait_scale {
            Some(s) => format!(", waiting x{s}"),
            None => String::new(),
        };
        format!("{} (modeled: {model}{wait})", p.name)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{AlignedBuf, FileDevice};
    use super::*;
    use crate::error::StorageError;

    /// A modeled device over buffered files in a fresh temp dir, with files `a`
    /// (200 pages) and `b` (10 pages) written through the inner device (so uncharged).
    fn setup(profile: &str) -> (tempfile::TempDir, ModeledDevice, FileId, FileId) {
        let dir = tempfile::tempdir().unwrap();
        let inner = Arc::new(FileDevice::new(false));
        let dev = ModeledDevice::new(inner.clone(), DeviceProfile::builtin(profile).unwrap());
        let a = dev.create(&dir.path().join("a"), 16).unwrap();
        let b = dev.create(&dir.path().join("b"), 16).unwrap();
        inner.write(a, 0, &AlignedBuf::new(200)).unwrap();
        inner.write(b, 0, &AlignedBuf::new(10)).unwrap();
        assert_eq!(dev.stats().snapshot(), Default::default());
        (dir, dev, a, b)
    }

    fn read(dev: &ModeledDevice, file: FileId, first: u64, pages: usize) -> u64 {
        let before = dev.stats().snapshot().modeled_ns;
        dev.read(
            file,
            first,
            &mut AlignedBuf::new(pages)[..pages * PAGE_SIZE],
        )
        .unwrap();
        dev.stats().snapshot().modeled_ns - before
    }

    fn read_many(dev: &ModeledDevice, reqs: &[(FileId, u64, usize)]) -> u64 {
        let before = dev.stats().snapshot().modeled_ns;
        let mut bufs: Vec<AlignedBuf> = reqs.iter().map(|r| AlignedBuf::new(r.2)).collect();
        let mut rs: Vec<ReadRequest> = bufs
            .iter_mut()
            .zip(reqs)
            .map(|(buf, r)| ReadRequest {
                file: r.0,
                first_page: r.1,
                buf,
            })
            .collect();
        dev.read_many(&mut rs).unwrap();
        dev.stats().snapshot().modeled_ns - before
    }

    fn write(dev: &ModeledDevice, file: FileId, first: u64, pages: usize) -> u64 {
        let before = dev.stats().snapshot().modeled_ns;
        dev.write(file, first, &AlignedBuf::new(pages)).unwrap();
        dev.stats().snapshot().modeled_ns - before
    }

    // HDD: 125 MB/s = 125 B/us, so a page of 8192 B takes 65.536 us = 65_536 ns and
    // a random request pays 2.5 + 1.0 = 3.5 ms = 3_500_000 ns on top.
    const HDD_PAGE: u64 = 65_536;
    const HDD_POS: u64 = 3_500_000;

    #[test]
    fn hdd_charges_by_head_position() {
        let (_dir, dev, a, b) = setup("hdd");
        let mut expected = 0;
        let mut check = |got: u64, want: u64| {
            assert_eq!(got, want);
            expected += want;
        };
        check(read(&dev, a, 0, 4), HDD_POS + 32_768 * 1000 / 125); // random: 3_762_144
        check(read(&dev, a, 4, 4), 262_144); // sequential: transfer only
        check(read(&dev, a, 100, 1), HDD_POS + HDD_PAGE); // random
        check(read(&dev, b, 9, 1), HDD_POS + HDD_PAGE); // another file: random
        // Writes move the same head: the read of page 9 of b ended at 10, so a
        // write there is sequential.
        check(write(&dev, b, 10, 2), 2 * HDD_PAGE);
        check(read(&dev, b, 12, 0), 0); // empty: free, and the head stays
        check(read(&dev, b, 0, 1), HDD_POS + HDD_PAGE);
        check(read(&dev, b, 1, 1), HDD_PAGE);
        // Forgetting the position makes the next request random.
        dev.stats().forget_position();
        check(read(&dev, b, 2, 1), HDD_POS + HDD_PAGE);
        assert_eq!(
            expected,
            3_762_144 + 262_144 + 3 * 3_565_536 + 131_072 + 3_565_536 + 65_536
        );

        // A batch is served in elevator order, sorted by (file, page) and a < b:
        // a10 (random: the head is at b3), a11 (sequential), a50..52 (random),
        // b3 (random: the head is at a52), b8 (random).
        let got = read_many(
            &dev,
            &[(a, 50, 2), (b, 8, 1), (a, 11, 1), (b, 3, 1), (a, 10, 1)],
        );
        assert_eq!(
            got,
            (HDD_POS + HDD_PAGE)
                + HDD_PAGE
                + (HDD_POS + 2 * HDD_PAGE)
                + (HDD_POS + HDD_PAGE)
                + (HDD_POS + HDD_PAGE)
        );
        assert_eq!(got, 14_393_216);
        expected += got;

        let s = dev.stats().snapshot();
        assert_eq!(s.modeled_ns, expected);
        // Reads are counted like a real device: sequential = starts where the
        // previous *read* ended (the write in between does not count).
        assert_eq!(s.read_requests, 7 + 5);
        assert_eq!(s.sequential_reads, 2 + 1);
        assert_eq!(s.random_reads, 5 + 4);
        assert_eq!(s.pages_read, 4 + 4 + 1 + 1 + 1 + 1 + 1 + 6);
        assert_eq!((s.write_requests, s.pages_written), (1, 2));
        // The data is real: the inner device did every read.
        assert_eq!(dev.inner().stats().snapshot().read_requests, 12);
    }

    // SSD: 200 MB/s = 200 B/us, so a page takes 40.96 us = 40_960 ns; every request
    // pays 0.2 ms = 200_000 ns of latency on top: 240_960 ns for one page.
    const SSD_PAGE: u64 = 40_960;
    const SSD_LAT: u64 = 200_000;

    #[test]
    fn a_threads_unwaited_time_is_what_its_own_reads_were_charged() {
        let (_dir, dev, a, _b) = setup("ssd");
        let before = crate::device::thread_unwaited_ns();
        let charged = read(&dev, a, 0, 1) + read(&dev, a, 5, 1);
        assert_eq!(crate::device::thread_unwaited_ns() - before, charged);
        // Another thread's reads are its own.
        let other = std::thread::scope(|s| {
            s.spawn(|| {
                let t0 = crate::device::thread_unwaited_ns();
                let c = read(&dev, a, 9, 1);
                (crate::device::thread_unwaited_ns() - t0, c)
            })
            .join()
            .unwrap()
        });
        assert_eq!(other.0, other.1);
        assert_eq!(crate::device::thread_unwaited_ns() - before, charged);
    }

    #[test]
    fn ssd_charges_latency_and_schedules_batches_on_channels() {
        let (_dir, dev, a, b) = setup("ssd");
        // Single reads: each its full cost, sequential or not.
        assert_eq!(read(&dev, a, 0, 1), SSD_LAT + SSD_PAGE);
        assert_eq!(read(&dev, a, 1, 1), SSD_LAT + SSD_PAGE);
        assert_eq!(read(&dev, b, 7, 1), SSD_LAT + SSD_PAGE);
        // 10 one-page reads on 8 channels: 8 run at once (240_960 each), the 9th and
        // 10th go to channels 0 and 1 and finish at 481_920. Bandwidth bound:
        // 10 * 40_960 = 409_600 < 481_920.
        let ten: Vec<_> = (0..10).map(|i| (a, i * 7, 1)).collect();
        assert_eq!(read_many(&dev, &ten), 2 * (SSD_LAT + SSD_PAGE));
        // 3 reads of 32 pages (200_000 + 32 * 40_960 = 1_510_720 each) and 5 of 2
        // pages (281_920 each) all run at once on their own channels, but the batch
        // moves 106 pages, 106 * 40_960 = 4_341_760 ns at 200 MB/s: bandwidth bound.
        let big: Vec<_> = (0..3)
            .map(|i| (a, i * 32, 32))
            .chain((0..5).map(|_| (b, 0, 2)))
            .collect();
        assert_eq!(read_many(&dev, &big), 4_341_760);
        // Uneven channel loads: 3 channels, requests of 4, 1, 1, 1, 2 pages.
        let mut p = DeviceProfile::builtin("ssd").unwrap();
        p.channels = 3;
        let dev3 = ModeledDevice::new(dev.inner().clone(), p);
        let c = |pages: u64| SSD_LAT + pages * SSD_PAGE;
        // ch0: 4p (363_840); ch1: 1p (240_960); ch2: 1p (240_960); the 4th (1p) goes
        // to ch1 (ties: lowest index) -> 481_920; the 5th (2p) to ch2 -> 522_880.
        let got = read_many(
            &dev3,
            &[(a, 0, 4), (a, 10, 1), (a, 20, 1), (a, 30, 1), (a, 40, 2)],
        );
        assert_eq!(got, c(1) + c(2));
        assert_eq!(got, 522_880);
        // Writes: latency + transfer at the write rate.
        assert_eq!(write(&dev, a, 100, 2), SSD_LAT + 2 * SSD_PAGE);
        let s = dev.stats().snapshot();
        assert_eq!(s.modeled_ns, 3 * 240_960 + 481_920 + 4_341_760 + 281_920);
        assert_eq!((s.read_requests, s.pages_read), (3 + 10 + 8, 3 + 10 + 106));
        assert_eq!((s.write_requests, s.pages_written), (1, 2));
    }

    #[test]
    fn a_trace_replayed_by_one_user_costs_the_modeled_time() {
        use crate::device::trace::{IoKind, User, replay};
        for profile in ["hdd", "ssd"] {
            let (_dir, dev, a, b) = setup(profile);
            dev.trace().unwrap().start();
            read(&dev, a, 0, 4);
            read(&dev, a, 4, 4);
            read_many(
                &dev,
                &[(a, 50, 2), (b, 8, 1), (a, 11, 1), (b, 3, 1), (a, 10, 1)],
            );
            write(&dev, b, 10, 2);
            read(&dev, b, 11, 1);
            let ten: Vec<_> = (0..10).map(|i| (a, i * 7, 32)).collect();
            read_many(&dev, &ten);
            let trace = dev.trace().unwrap().take();
            assert!(!dev.trace().unwrap().is_active());
            let total = dev.stats().snapshot().modeled_ns;
            assert_eq!(trace.events.len(), 2 + 5 + 1 + 1 + 10);
            assert_eq!(trace.events.iter().map(|e| e.step).max(), Some(5));
            assert_eq!(
                trace
                    .events
                    .iter()
                    .filter(|e| e.kind == IoKind::Write)
                    .count(),
                1
            );
            // Requests end no later than their step, and the last at the total.
            assert_eq!(trace.events.iter().map(|e| e.end_ns).max(), Some(total));
            assert!(trace.events.iter().all(|e| e.start_ns < e.end_ns));
            assert!(trace.file_name(a).starts_with('a') && !trace.is_temp(a));
            let stream = trace.stream();
            assert_eq!(stream.steps.len(), 6);
            let got = replay(
                &[User {
                    stream: &stream,
                    copy: 0,
                }],
                dev.profile(),
                None,
            );
            assert_eq!(got, vec![total], "{profile}");
        }
    }

    #[test]
    fn a_bandwidth_bound_batch() {
        let (_dir, dev, a, _b) = setup("ssd");
        // 8 one-page reads on 8 channels: each takes 240_960 ns on its own channel,
        // but 8 pages at 200 MB/s take 8 * 40_960 = 327_680 ns, which is what the
        // batch costs (not much more than one request's 240_960).
        let reqs: Vec<_> = (0..8).map(|i| (a, i * 12, 1)).collect();
        assert_eq!(read_many(&dev, &reqs), 8 * SSD_PAGE);
        // 8 reads of 32 pages: 1_510_720 each, all at once, but 256 pages at
        // 200 MB/s take 256 * 40_960 = 10_485_760 ns.
        let reqs: Vec<_> = (0..8).map(|i| (a, i * 20, 32)).collect();
        assert_eq!(read_many(&dev, &reqs), 10_485_760);
        let mut p = DeviceProfile::builtin("ssd").unwrap();
        p.read_mb_s = 20.0; // 409_600 ns a page
        let slow = ModeledDevice::new(dev.inner().clone(), p);
        let reqs: Vec<_> = (0..8).map(|i| (a, i * 12, 1)).collect();
        // Each alone: 200_000 + 409_600 = 609_600; 8 in parallel; bandwidth 8 * 409_600.
        assert_eq!(read_many(&slow, &reqs), 3_276_800);
    }

    #[test]
    fn failed_requests_are_not_charged() {
        let (_dir, dev, a, _b) = setup("hdd");
        assert!(dev.read(a, 200, &mut AlignedBuf::new(1)).is_err());
        assert_eq!(dev.stats().snapshot(), Default::default());
    }

    #[test]
    fn waiting_really_sleeps() {
        let (_dir, dev, a, _b) = setup("ssd");
        let mut p = dev.profile().clone();
        p.wait_scale = Some(2.0);
        let dev = ModeledDevice::new(dev.inner().clone(), p);
        let start = std::time::Instant::now();
        dev.read(a, 0, &mut AlignedBuf::new(1)).unwrap();
        assert!(start.elapsed() >= Duration::from_nanos(2 * 240_960));
        assert!(
            dev.describe().ends_with(", waiting x2)"),
            "{}",
            dev.describe()
        );
    }

    #[test]
    fn describe_names_the_model() {
        let inner: Arc<dyn Device> = Arc::new(FileDevice::new(false));
        let hdd = ModeledDevice::new(inner.clone(), DeviceProfile::builtin("hdd").unwrap());
        assert_eq!(
            hdd.describe(),
            "hdd (modeled: seek 2.5 ms + rotation 1.0 ms, 125 MB/s)"
        );
        let ssd = ModeledDevice::new(inner, DeviceProfile::builtin("ssd").unwrap());
        assert_eq!(
            ssd.describe(),
            "ssd (modeled: latency 0.2 ms, 200 MB/s, 8 channels)"
        );
        assert_eq!(ssd.profile().channels, 8);
    }

    #[test]
    fn builtin_numbers_match_the_table() {
        // HDD: a random 4 KB read is 3.5 ms plus 32.768 us of transfer.
        let hdd = DeviceProfile::builtin("hdd").unwrap();
        assert_eq!(
            hdd.fixed_ns() + DeviceProfile::transfer_ns(4096, hdd.read_mb_s),
            3_532_768
        );
        // SSD: 8 channels of 4 KB reads at 0.22048 ms each: ~36,284 IOPS.
        let ssd = DeviceProfile::builtin("ssd").unwrap();
        let one = ssd.fixed_ns() + DeviceProfile::transfer_ns(4096, ssd.read_mb_s);
        assert_eq!(one, 220_480);
        let iops = ssd.channels as f64 * 1e9 / one as f64;
        assert!((34_000.0..37_000.0).contains(&iops), "{iops}");
        assert!(DeviceProfile::builtin("tape").is_none());
    }

    #[test]
    fn custom_profile_round_trips_through_json() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = DeviceProfile::builtin("ssd").unwrap();
        p.name = "nvme".into();
        p.latency_ms = 0.08;
        p.read_mb_s = 3000.0;
        p.write_mb_s = 1500.0;
        p.channels = 32;
        p.wait_scale = Some(0.5);
        let path = dir.path().join("nvme.json");
        std::fs::write(&path, serde_json::to_string_pretty(&p).unwrap()).unwrap();
        assert_eq!(DeviceProfile::from_file(&path).unwrap(), p);
        assert_eq!(DeviceProfile::parse(path.to_str().unwrap()).unwrap(), p);
        assert_eq!(
            DeviceProfile::parse("hdd").unwrap(),
            DeviceProfile::builtin("hdd").unwrap()
        );

        // Minimal JSON: defaults fill the rest, the name comes from the file.
        let path = dir.path().join("slowdisk.json");
        std::fs::write(
            &path,
            r#"{"kind": "hdd", "seek_ms": 8, "read_mb_s": 80, "write_mb_s": 60}"#,
        )
        .unwrap();
        let p = DeviceProfile::from_file(&path).unwrap();
        assert_eq!(
            (p.name.as_str(), p.kind, p.channels, p.rotation_ms),
            ("slowdisk", ProfileKind::Hdd, 1, 0.0)
        );
        let dev = ModeledDevice::new(Arc::new(FileDevice::new(false)), p);
        assert_eq!(
            dev.describe(),
            "slowdisk (modeled: seek 8.0 ms + rotation 0.0 ms, 80 MB/s read, 60 MB/s write)"
        );
    }

    #[test]
    fn bad_profiles_are_rejected_naming_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                r#"{"kind": "ssd", "latency_ms": 0.1, "read_mb_s": -5, "write_mb_s": 100}"#,
                "`read_mb_s`",
            ),
            (
                r#"{"kind": "ssd", "read_mb_s": 5, "write_mb_s": 0}"#,
                "`write_mb_s`",
            ),
            (
                r#"{"kind": "ssd", "read_mb_s": 5, "write_mb_s": 5, "channels": 0}"#,
                "`channels`",
            ),
            (
                r#"{"kind": "ssd", "seek_ms": 3, "read_mb_s": 5, "write_mb_s": 5}"#,
                "`seek_ms`",
            ),
            (
                r#"{"kind": "hdd", "seek_ms": -1, "read_mb_s": 5, "write_mb_s": 5}"#,
                "`seek_ms`",
            ),
            (r#"{"kind": "hdd", "read_mb_s": 5}"#, "`write_mb_s`"),
            (
                r#"{"kind": "tape", "read_mb_s": 5, "write_mb_s": 5}"#,
                "tape",
            ),
            (
                r#"{"kind": "hdd", "read_mb_s": 5, "write_mb_s": 5, "seek": 1}"#,
                "`seek`",
            ),
            (
                r#"{"kind": "hdd", "read_mb_s": 5, "write_mb_s": 5, "wait_scale": -1}"#,
                "`wait_scale`",
            ),
        ];
        for (i, (json, field)) in cases.iter().enumerate() {
            let path = dir.path().join(format!("bad{i}.json"));
            std::fs::write(&path, json).unwrap();
            let err = DeviceProfile::from_file(&path).unwrap_err();
            assert!(matches!(err, StorageError::Profile(_)), "{err}");
            let msg = err.to_string();
            assert!(
                msg.contains(&format!("bad{i}.json")) && msg.contains(field),
                "{json}: {msg}"
            );
        }
        let msg = DeviceProfile::parse("floppy").unwrap_err().to_string();
        assert!(msg.contains("unknown device profile 'floppy'"), "{msg}");
        let msg = DeviceProfile::from_file(&dir.path().join("missing.json"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("missing.json"), "{msg}");
    }
}
