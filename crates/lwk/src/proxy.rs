//! The proxy thread: pinned to a Linux CPU, it polls the vCPUs' ring slots and serves requests.
//! It spins while the guest is making calls and parks when idle: even short periodic sleeps on
//! the sibling CPU slowed a computing guest by 10-50% here. A call made while the proxy is parked
//! is not lost: the stub rings the doorbell (an MMIO exit), the vCPU thread serves that call
//! itself and unparks the proxy for the calls that follow. While parked, the proxy sets every
//! slot's spin budget to 1, so that the stub rings at once instead of spinning its whole budget
//! (≈ 40 µs) for a proxy that is not polling: a runtime that makes a call every few ms (Racket's
//! scheduler) paid that for every call. The proxy gives the budget back itself, once it polls
//! again: the doorbell's waker leaves it at 1, because a woken proxy takes a while to run (a
//! wake-up on the other CPU; much longer on a loaded machine), and the calls that follow the
//! first one in a burst (a runtime's clock read, poll, write) each spun their whole budget for it
//! and then rang anyway (`bench multiverse`, the proxy wake-up term; docs/LWK.md). How long it
//! polls before parking starts at `--proxy-idle-us` and grows while the guest's calls come soon
//! after its parks (`idlespin.rs`): a runtime that calls every 2 ms no longer parks it each time.
//! While it polls idle it exits to the hypervisor once every 20 µs (`multios_host::hvexit`): on
//! this VM an IPI for a busy CPU arrives only at its next exit, and the guest's faults that copy
//! a host page (the zero page, copy-on-write) flush this CPU's TLB by IPI — 1–3 ms each for a
//! proxy polling with `pause` alone.

use crate::kernel::{Ctx, Kernel, Reply};
use crate::slot::{claim, reply, request, state_of};
use multios_lwk_abi::{offset, state};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `MULTIOS_LWK_PROXY_YIELD_US=N`: an idle proxy that has polled N µs without a call yields its
/// CPU at every 64th poll until it parks (off by default). Measured on a quiet VM (2026-11-26
/// 22:25 UTC, docs/BENCHMARKS.md): with it at 20 µs a pipeline run in the LWK, whose stages' proxies
/// share one CPU, took 0.41–0.48 s against 0.49–0.53 s, but `make -j2` 3.05–3.07 s against
/// 2.49–2.50 s, so it is a knob, not the default.
fn idle_yield_after() -> Option<Duration> {
    std::env::var("MULTIOS_LWK_PROXY_YIELD_US")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_micros)
}

/// The longest an idle proxy stays parked without being unparked (a safety net).
const PARK_LIMIT: Duration = Duration::from_millis(20);
/// The stubs' spin budget while the proxy is parked: ring the doorbell at once.
const PARKED_BUDGET: u32 = 1;

/// Sets the spin budget of the first `n` slots to `budget`.
fn set_budgets(kernel: &Kernel, n: usize, budget: u32) {
    for cpu in 0..n {
        let at = crate::stub::slot_addr(cpu as u64) + offset::SPIN_BUDGET as u64;
        kernel.mem.write(at, &budget.to_le_bytes());
    }
}

/// A running proxy thread.
pub struct Proxy {
    stop: Arc<AtomicBool>,
    woken: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

/// Wakes a parked proxy (cheap when it is not parked).
#[derive(Clone, Debug)]
pub struct Waker {
    thread: std::thread::Thread,
    woken: Arc<AtomicBool>,
}

impl Waker {
    /// Wakes the proxy. The stubs keep the parked budget (they ring at once) until the proxy runs
    /// and gives them their budget back: calls made before it runs would otherwise spin their
    /// whole budget for it and ring anyway.
    pub fn wake(&self) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

/// What an idle proxy does between calls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Idle {
    /// How long it polls after a call before it parks (`--proxy-idle-us`; grown by `idlespin.rs`).
    pub spin: Duration,
    /// How often it exits to the hypervisor while it polls idle (`multios_host::hvexit`); `None`:
    /// never.
    pub hv_exit: Option<Duration>,
}

impl Proxy {
    /// Starts the proxy serving `slots`, pinned to `cpu` when given.
    pub fn start(
        kernel: Arc<Kernel>,
        nslots: Arc<AtomicUsize>,
        cpu: Option<usize>,
        idle: Idle,
        budget: u32,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let woken = Arc::new(AtomicBool::new(false));
        let w = woken.clone();
        let (ready, started) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("lwk-proxy".into())
            .spawn(move || {
                if let Some(c) = cpu {
                    let _ = crate::sys::pin_to_cpu(c);
                }
                kernel.aside.register();
                // Its scheduler times at the start: read before the guest runs, because the
                // read's descriptor is a temporary in the guest's range, where the guest's fcntl
                // or fstat of a number it just closed would see it (a thread started late on a
                // loaded machine did: `issue_16_closefrom_proc_self_fd_and_1021_files_like_native`).
                let sched0 = crate::cputime::Sched::this_thread();
                let _ = ready.send(());
                serve_loop(&kernel, &nslots, &s, &w, idle, budget, sched0)
            })
            .ok();
        if handle.is_some() {
            let _ = started.recv_timeout(Duration::from_secs(5));
        }
        Proxy { stop, woken, handle }
    }

    /// The handle that unparks this proxy.
    pub fn waker(&self) -> Option<Waker> {
        self.handle.as_ref().map(|h| Waker {
            thread: h.thread().clone(),
            woken: self.woken.clone(),
        })
    }
}

impl Proxy {
    /// Tells the proxy thread to end, without waiting for it (dropping the proxy joins it).
    pub fn ask_to_stop(&self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = &self.handle {
            h.thread().unpark();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.ask_to_stop();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn serve_loop(
    kernel: &Kernel,
    nslots: &AtomicUsize,
    stop: &AtomicBool,
    woken: &AtomicBool,
    idle_cfg: Idle,
    budget: u32,
    sched0: crate::cputime::Sched,
) {
    let mut last = Instant::now();
    let mut polls = 0u32;
    let mut idle = crate::idlespin::IdleSpin::new(idle_cfg.spin);
    // Its polling and parking, for `costs.threads` (`cputime.rs`).
    let born = last;
    let (mut parked, mut parks, mut wakes) = (Duration::ZERO, 0u64, 0u64);
    let mut idle_peak = idle.current();
    let yield_after = idle_yield_after();
    // Parked for a vCPU thread's call that flushes TLBs, or while the guest faults: stay parked
    // until the next doorbell.
    let mut stay = false;
    let fault_burst = crate::faultwatch::burst();
    let mut fault_look = Instant::now();
    // An idle poller exits to the hypervisor now and then, so that the guest's TLB flushes reach
    // this CPU in µs rather than ms (`multios_host::hvexit`).
    let mut hv = multios_host::hvexit::HvExit::new(idle_cfg.hv_exit);
    while !stop.load(Ordering::Acquire) {
        if kernel.aside.wanted() {
            // A vCPU thread edits the host's mappings: its TLB flushes need this CPU idle
            // (`aside.rs`).
            kernel.aside.park_while_wanted();
            stay = crate::aside::stay_parked();
            continue;
        }
        let mut served = false;
        for cpu in 0..nslots.load(Ordering::Acquire) {
            let slot = crate::stub::slot_addr(cpu as u64);
            let st = state_of(&kernel.mem, slot);
            if st.load(Ordering::Acquire) != state::REQUEST || !claim(st) {
                continue;
            }
            let (nr, a) = request(&kernel.mem, slot);
            match kernel.serve(Ctx::Proxy, cpu, nr, a) {
                Reply::Ret(r) if kernel.deliverable(cpu) || crate::signal::is_restart(r) => {
                    // A signal handler runs before the call returns, or a signal interrupted it
                    // (EINTR or the call again): the vCPU thread does it.
                    kernel.mem.write_u64(slot + offset::RET as u64, r as u64);
                    st.store(state::SIGNAL, Ordering::Release);
                }
                Reply::Ret(r) => reply(&kernel.mem, slot, r),
                _ => st.store(state::EXIT, Ordering::Release),
            }
            served = true;
        }
        if served {
            last = Instant::now();
            polls = 0;
            continue;
        }
        // Between calls: populate the guest's new memory ahead of its first touch
        // (`populate.rs`); the proxy does not park while some is left.
        if kernel.populate_step() {
            continue;
        }
        // Spin while calls are coming; once idle, park until a doorbell unparks us.
        polls = polls.wrapping_add(1);
        let quiet = polls.is_multiple_of(64).then(|| last.elapsed());
        if let (Some(_), Some(b)) = (quiet, fault_burst) {
            // The guest faulting, not calling: its flushes need this CPU idle (`faultwatch.rs`).
            if fault_look.elapsed() >= crate::faultwatch::CHECK_EVERY {
                fault_look = Instant::now();
                stay |= kernel.faults.faulting(b);
            }
        }
        if !stay && quiet.is_none_or(|q| q < idle.current()) {
            if quiet.zip(yield_after).is_some_and(|(q, y)| q >= y) {
                // Idle a while, not yet parked: let whatever else is runnable on this CPU run
                // first (the proxies of a pipeline's other stages share it); it returns at once
                // when nothing is.
                std::thread::yield_now();
            } else if !quiet.is_some_and(|q| hv.tick(q)) {
                std::hint::spin_loop();
            }
        } else {
            let until_doorbell = std::mem::take(&mut stay);
            let n = nslots.load(Ordering::Acquire);
            set_budgets(kernel, n, PARKED_BUDGET);
            // A request posted before the stubs saw the new budget is served now, not after the
            // park: its stub spins its old budget and would ring anyway, but need not.
            let pending = (0..n).any(|cpu| {
                state_of(&kernel.mem, crate::stub::slot_addr(cpu as u64)).load(Ordering::Acquire)
                    == state::REQUEST
            });
            if !pending {
                let p0 = Instant::now();
                kernel.aside.idle_parked(true);
                if until_doorbell {
                    // The doorbell of the call it stood aside for does not wake it; the next
                    // one does (or the safety net).
                    woken.store(false, Ordering::Release);
                    while !woken.load(Ordering::Acquire)
                        && !stop.load(Ordering::Acquire)
                        && !kernel.aside.wanted()
                        && p0.elapsed() < PARK_LIMIT
                    {
                        std::thread::park_timeout(PARK_LIMIT.saturating_sub(p0.elapsed()));
                    }
                } else {
                    std::thread::park_timeout(PARK_LIMIT);
                }
                kernel.aside.idle_parked(false);
                parked += p0.elapsed();
                parks += 1;
            }
            set_budgets(kernel, n, budget);
            let rung = woken.swap(false, Ordering::AcqRel);
            wakes += u64::from(rung);
            if !pending && !until_doorbell {
                idle.park_ended(rung, last.elapsed());
                idle_peak = idle_peak.max(idle.current());
            }
            if rung || pending {
                // A doorbell: the guest is making calls again, spin for the ones that follow.
                last = Instant::now();
            }
        }
    }
    kernel.cputime.add_proxy(crate::cputime::ProxyTime {
        alive: born.elapsed(),
        parked,
        parks,
        wakes,
        idle_peak,
        hv_exits: hv.exits(),
        sched: crate::cputime::Sched::this_thread().since(sched0),
    });
}
