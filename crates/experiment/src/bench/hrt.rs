//! `multios bench hrt` (issue #13): Multiverse's Fig. 2 rows for split execution on this machine —
//! the synchronous call, the asynchronous call and the address-space merger — measured in this
//! process side by side with the cache-line round trip between the same two CPUs and a native
//! function call, rounds alternated ABBA (medians of batch means, and the median of the per-round
//! ratio synchronous call / cache-line round trip).

use crate::{ExperimentError, Progress};
use multios_hrt::{Config as HrtConfig, Hrt};
use serde::Serialize;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Debug, Clone)]
pub struct Config {
    /// Rounds, alternated ABBA.
    pub rounds: usize,
    /// Batches per row and round.
    pub batches: usize,
    /// Calls per batch of the fast rows (native, cache line, synchronous).
    pub batch: usize,
    /// Calls per batch of the slow rows (asynchronous call, thread, merger).
    pub slow_batch: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            rounds: 8,
            batches: 40,
            batch: 200,
            slow_batch: 10,
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub name: String,
    /// Median over rounds of each round's median batch mean, ns per operation.
    pub median_ns: f64,
    /// Lowest and highest round median.
    pub min_round_ns: f64,
    pub max_round_ns: f64,
    /// Multiverse's Fig. 2 value (bare metal), ns.
    pub paper_ns: Option<f64>,
    pub note: String,
}

/// The whole measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub rows: Vec<Row>,
    /// Median over rounds of (synchronous call / cache-line round trip) measured in that round.
    pub sync_over_cacheline: f64,
    pub sync_target_ns: f64,
    pub sync_target_met: bool,
    /// The merger when split execution started: memslots, tables, ns.
    pub init_merge_ns: u64,
    pub memslots_at_init: usize,
    /// Of the merger at start-up, the time in KVM_SET_USER_MEMORY_REGION for its chunks, ns.
    pub init_memslot_ns: u64,
    pub memslots_end: usize,
    pub memslot_ns_total: u64,
    pub faults_filled: u64,
    pub efaults: u64,
    pub calls_forwarded: u64,
    pub caller_cpu: usize,
    pub vcpu_cpu: usize,
}

pub const HEADER: [&str; 6] = [
    "row",
    "median",
    "rounds min..max",
    "Multiverse (Fig. 2)",
    "/ cache line",
    "what",
];

fn fmt_ns(ns: f64) -> String {
    if ns >= 10_000.0 {
        format!("{:.1} µs", ns / 1000.0)
    } else {
        format!("{ns:.0} ns")
    }
}

/// The table's rows as text.
pub fn rows(r: &Report) -> Vec<Vec<String>> {
    let cl = r
        .rows
        .iter()
        .find(|x| x.name == "cache-line round trip")
        .map_or(f64::NAN, |x| x.median_ns);
    r.rows
        .iter()
        .map(|x| {
            vec![
                x.name.clone(),
                fmt_ns(x.median_ns),
                format!("{}..{}", fmt_ns(x.min_round_ns), fmt_ns(x.max_round_ns)),
                x.paper_ns.map_or("-".into(), fmt_ns),
                format!("{:.1}×", x.median_ns / cl),
                x.note.clone(),
            ]
        })
        .collect()
}

unsafe extern "C" fn noop(arg: *mut libc::c_void) -> libc::c_long {
    arg as libc::c_long
}

unsafe extern "C" fn forwarded_close(_: *mut libc::c_void) -> libc::c_long {
    // SAFETY: closing an invalid descriptor has no effect but EBADF.
    unsafe { libc::close(-1) as libc::c_long }
}

unsafe extern "C" fn touch(arg: *mut libc::c_void) -> libc::c_long {
    // SAFETY: the caller passes a writable page.
    unsafe { std::ptr::write_volatile(arg as *mut u8, 1) };
    0
}

#[repr(align(64))]
struct Line(AtomicU64);

/// The other end of the cache-line ping-pong, on the vCPU's CPU; spins only while `active`.
struct Echo {
    ping: Line,
    pong: Line,
    active: AtomicBool,
    stop: AtomicBool,
}

fn echo_loop(e: &Echo, cpu: usize) {
    let _ = multios_lwk::sys::pin_to_cpu(cpu);
    let mut last = 0;
    while !e.stop.load(Acquire) {
        if !e.active.load(Acquire) {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        let p = e.ping.0.load(Acquire);
        if p != last {
            e.pong.0.store(p, Release);
            last = p;
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Median of `batches` batch means of `per` operations, ns per operation.
fn timed(batches: usize, per: usize, mut op: impl FnMut()) -> f64 {
    let mut v: Vec<f64> = (0..batches)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..per {
                op();
            }
            t.elapsed().as_nanos() as f64 / per as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    multios_stats::median_sorted(&v)
}

fn hrt_err(e: multios_hrt::HrtError) -> ExperimentError {
    ExperimentError::Run(format!("split execution: {e}"))
}

/// Runs the measurement.
pub fn run(cfg: &Config, progress: &mut dyn Progress) -> Result<Report, ExperimentError> {
    if cfg.rounds < 2 || cfg.batches == 0 || cfg.batch == 0 || cfg.slow_batch == 0 {
        return Err(ExperimentError::Config(
            "--rounds must be at least 2 and --batches, --batch, --slow-batch at least 1".into(),
        ));
    }
    let cpus = multios_lwk::available_cpus();
    let (Some(&caller), Some(&vcpu_cpu)) = (cpus.first(), cpus.last()) else {
        return Err(ExperimentError::Config("no CPU available".into()));
    };
    if caller == vcpu_cpu {
        return Err(ExperimentError::Config(
            "bench hrt needs two CPUs (the caller's and the vCPU's); this process may use one".into(),
        ));
    }
    let saved = multios_lwk::sys::affinity();
    let _ = multios_lwk::sys::pin_to_cpu(caller);
    let hrt = Hrt::init(HrtConfig {
        cpus: vec![vcpu_cpu],
        max_vcpus: 1,
        idle_spin: Duration::from_micros(500),
        verbose_faults: false,
        ..HrtConfig::default()
    })
    .map_err(hrt_err)?;
    let init = hrt.stats();
    let result = measure(cfg, &hrt, vcpu_cpu, progress);
    let end = hrt.stats();
    let _ = Hrt::fini();
    if let Some(s) = &saved {
        multios_lwk::sys::set_affinity(s);
    }
    let (rows, ratio) = result?;
    let sync = rows
        .iter()
        .find(|r| r.name == "synchronous call")
        .map_or(f64::NAN, |r| r.median_ns);
    Ok(Report {
        rows,
        sync_over_cacheline: ratio,
        sync_target_ns: 1000.0,
        sync_target_met: sync <= 1000.0,
        init_merge_ns: init.merge_ns,
        memslots_at_init: init.space.memslots,
        init_memslot_ns: init.space.memslot_ns,
        memslots_end: end.space.memslots,
        memslot_ns_total: end.space.memslot_ns,
        faults_filled: end.space.faults_filled,
        efaults: end.space.efaults,
        calls_forwarded: end.calls_forwarded,
        caller_cpu: caller,
        vcpu_cpu,
    })
}

type Rows = (Vec<Row>, f64);

fn measure(
    cfg: &Config,
    hrt: &Hrt,
    vcpu: usize,
    progress: &mut dyn Progress,
) -> Result<Rows, ExperimentError> {
    let echo = Arc::new(Echo {
        ping: Line(AtomicU64::new(0)),
        pong: Line(AtomicU64::new(0)),
        active: AtomicBool::new(false),
        stop: AtomicBool::new(false),
    });
    let e2 = echo.clone();
    let echo_thread = std::thread::spawn(move || echo_loop(&e2, vcpu));
    let names = [
        "native function call",
        "cache-line round trip",
        "synchronous call",
        "synchronous call + 1 forwarded call",
        "native close(-1)",
        "asynchronous call (invoke + join)",
        "native thread (spawn + join)",
        "merger (re-read maps, rewrite tables)",
        "first touch, new page",
        "first touch, new 64 MiB chunk",
        "touch of a fresh host page, table entry there",
    ];
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    let mut ratios = Vec::new();
    let (b, n, s) = (cfg.batches, cfg.batch, cfg.slow_batch);
    let mut seq = 0u64;
    let mut pages = Fresh::reserve((cfg.rounds * b.min(20) + 2) as u64 * (2 << 20))?;
    let mut chunks = Fresh::reserve((cfg.rounds * b.min(10) + 2) as u64 * (64 << 20))?;
    let call = |f: multios_hrt::Func| {
        // SAFETY: the bench's guest functions ignore or only write through their argument.
        let r = unsafe { hrt.call(f, std::ptr::null_mut()) };
        r.map_err(hrt_err)
    };
    progress.start(cfg.rounds as u64, "split execution: rounds");
    for round in 0..cfg.rounds {
        let mut cacheline = || {
            // The vCPU sleeps once idle for 0.5 ms: the echo thread has its CPU to itself.
            std::thread::sleep(Duration::from_millis(2));
            echo.active.store(true, Release);
            std::thread::sleep(Duration::from_micros(300));
            let v = timed(b, n, || {
                seq += 1;
                echo.ping.0.store(seq, Release);
                while echo.pong.0.load(Acquire) != seq {
                    std::hint::spin_loop();
                }
            });
            echo.active.store(false, Release);
            std::thread::sleep(Duration::from_micros(500));
            v
        };
        let sync = || -> Result<f64, ExperimentError> {
            for _ in 0..200 {
                call(noop)?;
            }
            let mut err = None;
            let v = timed(b, n, || {
                if let Err(e) = call(noop) {
                    err = Some(e);
                }
            });
            err.map_or(Ok(v), Err)
        };
        let (cl, sy) = if round % 4 == 0 || round % 4 == 3 {
            let c = cacheline();
            (c, sync()?)
        } else {
            let y = sync()?;
            (cacheline(), y)
        };
        per[1].push(cl);
        per[2].push(sy);
        ratios.push(sy / cl);
        let f = noop as unsafe extern "C" fn(*mut libc::c_void) -> libc::c_long;
        per[0].push(timed(b, n, || {
            // SAFETY: noop ignores its argument.
            black_box(unsafe { black_box(f)(std::ptr::null_mut()) });
        }));
        let mut err = None;
        per[3].push(timed(b, n, || {
            if let Err(e) = call(forwarded_close) {
                err = Some(e);
            }
        }));
        per[4].push(timed(b, n, || {
            // SAFETY: closing an invalid descriptor only returns EBADF.
            black_box(unsafe { libc::close(-1) });
        }));
        per[5].push(timed(b.min(20), s, || {
            // SAFETY: noop ignores its argument.
            match unsafe { hrt.invoke(noop, std::ptr::null_mut()) }.and_then(|i| i.join()) {
                Ok(_) => {}
                Err(e) => err = Some(hrt_err(e)),
            }
        }));
        per[6].push(timed(b.min(20), s, || {
            let _ = std::thread::spawn(|| black_box(1)).join();
        }));
        per[7].push(timed(b.min(20), s, || {
            if let Err(e) = hrt.merge() {
                err = Some(hrt_err(e));
            }
        }));
        let (page, refault) = first_touch(hrt, &mut pages, b.min(20), 2 << 20, &mut err);
        let (chunk, _) = first_touch(hrt, &mut chunks, b.min(10), 64 << 20, &mut err);
        per[8].push(page);
        per[9].push(chunk);
        per[10].push(refault);
        if let Some(e) = err {
            return Err(e);
        }
        progress.advance(&format!("synchronous call {:.0} ns, cache line {:.0} ns", sy, cl));
    }
    progress.finish();
    echo.stop.store(true, Release);
    let _ = echo_thread.join();
    let paper = [
        None,
        None,
        Some(359.0),
        None,
        None,
        Some(11_000.0),
        None,
        Some(15_000.0),
        None,
        None,
        None,
    ];
    let notes = [
        "call through a function pointer, same thread",
        "two threads on the caller's and the vCPU's CPUs",
        "noop posted to the resident vCPU, caller spins",
        "close(-1) in the guest, served by the waiting caller",
        "reference for the row above",
        "partner thread created, noop, joined",
        "reference: what a pthread costs here",
        "hrt_merge(): all mappings <= 256 MiB",
        "page fault, maps read, table fill, KVM fault-in (less a call)",
        "the same plus a new memslot",
        "KVM's own fault-in (the part of the rows above that is not the merger's)",
    ];
    let rows = names
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let mut v = per[k].clone();
            v.sort_by(f64::total_cmp);
            Row {
                name: name.to_string(),
                median_ns: multios_stats::median_sorted(&v),
                min_round_ns: v.first().copied().unwrap_or(f64::NAN),
                max_round_ns: v.last().copied().unwrap_or(f64::NAN),
                paper_ns: paper[k],
                note: notes[k].to_string(),
            }
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    Ok((rows, multios_stats::median_sorted(&ratios)))
}

/// The address space the first-touch rows map their pages in: reserved once (PROT_NONE), so
/// that every sample of the run gets a place no earlier sample used (a place used before keeps
/// its table entries after munmap, and would measure only KVM's fault-in).
struct Fresh {
    base: u64,
    len: u64,
    next: u64,
}

impl Fresh {
    fn reserve(len: u64) -> Result<Fresh, ExperimentError> {
        // SAFETY: a new reservation at an address the kernel picks; released in `Drop`.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len as usize,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(ExperimentError::Io {
                what: "reserving address space for the first-touch rows".into(),
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(Fresh {
            base: p as u64,
            len,
            next: p as u64,
        })
    }

    /// A page-aligned place `stride` past the last one (aligned to `stride`), or None when full.
    fn take(&mut self, stride: u64) -> Option<u64> {
        let at = self.next.div_ceil(stride) * stride;
        (at + 4096 <= self.base + self.len).then(|| {
            self.next = at + stride;
            at
        })
    }

    /// Maps a fresh read-write page at `at` (inside the reservation) or puts the reservation back.
    fn set(&self, at: u64, rw: bool) -> bool {
        let prot = if rw {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_NONE
        };
        // SAFETY: `at` lies inside this reservation, which nothing but the bench uses; MAP_FIXED
        // replaces only that page of it.
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                4096,
                prot,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        p != libc::MAP_FAILED
    }
}

impl Drop for Fresh {
    fn drop(&mut self) {
        // SAFETY: the reservation made in `reserve`; the guest touched only pages of it that the
        // bench mapped, and is done with them.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len as usize) };
    }
}

/// Touches of fresh pages in the guest (median of `n`, ns): `(first, again)` — the first touch
/// (page fault, maps read, table fill; with `stride` = 64 MiB also a new memslot; and KVM's
/// fault-in of the host page) less a call, and the first touch of a fresh host page at a place
/// whose table entry is already there (KVM's fault-in alone) less a call.
fn first_touch(
    hrt: &Hrt,
    fresh: &mut Fresh,
    n: usize,
    stride: u64,
    err: &mut Option<ExperimentError>,
) -> (f64, f64) {
    let mut first = Vec::with_capacity(n);
    let mut again = Vec::with_capacity(n);
    let mut timed_touch = |p: u64| {
        let t = Instant::now();
        // SAFETY: `touch` writes one byte of a page the bench just mapped read-write.
        if let Err(e) = unsafe { hrt.call(touch, p as *mut libc::c_void) } {
            *err = Some(hrt_err(e));
        }
        let with = t.elapsed().as_nanos() as f64;
        let t = Instant::now();
        // SAFETY: as above.
        let _ = unsafe { hrt.call(touch, p as *mut libc::c_void) };
        with - t.elapsed().as_nanos() as f64
    };
    for _ in 0..n {
        let Some(at) = fresh.take(stride) else { break };
        if !fresh.set(at, true) {
            continue;
        }
        first.push(timed_touch(at));
        // A fresh host page at the same place: the tables still map it.
        if fresh.set(at, true) {
            again.push(timed_touch(at));
        }
        fresh.set(at, false);
    }
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            f64::NAN
        } else {
            multios_stats::median_sorted(&v)
        }
    };
    (med(first), med(again))
}
