//! The proxy thread: pinned to a Linux CPU, it polls the vCPUs' ring slots and serves requests.
//! It spins while the guest is making calls and parks when idle: even short periodic sleeps on
//! the sibling CPU slowed a computing guest by 10-50% here. A call made while the proxy is parked
//! is not lost: the stub's spin budget runs out, it rings the doorbell (an MMIO exit), the vCPU
//! thread serves that call itself and unparks the proxy for the calls that follow.

use crate::kernel::{Ctx, Kernel, Reply};
use crate::slot::{claim, reply, request, state_of};
use multios_lwk_abi::{offset, state};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest an idle proxy stays parked without being unparked (a safety net).
const PARK_LIMIT: Duration = Duration::from_millis(20);

/// A running proxy thread.
pub struct Proxy {
    stop: Arc<AtomicBool>,
    woken: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

/// Wakes a parked proxy (cheap when it is not parked).
#[derive(Clone, Debug)]
pub struct Waker(std::thread::Thread, Arc<AtomicBool>);

impl Waker {
    pub fn wake(&self) {
        self.1.store(true, Ordering::Release);
        self.0.unpark();
    }
}

impl Proxy {
    /// Starts the proxy serving `slots`, pinned to `cpu` when given.
    pub fn start(
        kernel: Arc<Kernel>,
        nslots: Arc<AtomicUsize>,
        cpu: Option<usize>,
        idle_spin: Duration,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let woken = Arc::new(AtomicBool::new(false));
        let w = woken.clone();
        let handle = std::thread::Builder::new()
            .name("lwk-proxy".into())
            .spawn(move || {
                if let Some(c) = cpu {
                    let _ = crate::sys::pin_to_cpu(c);
                }
                serve_loop(&kernel, &nslots, &s, &w, idle_spin)
            })
            .ok();
        Proxy { stop, woken, handle }
    }

    /// The handle that unparks this proxy.
    pub fn waker(&self) -> Option<Waker> {
        self.handle
            .as_ref()
            .map(|h| Waker(h.thread().clone(), self.woken.clone()))
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

fn serve_loop(
    kernel: &Kernel,
    nslots: &AtomicUsize,
    stop: &AtomicBool,
    woken: &AtomicBool,
    idle_spin: Duration,
) {
    let mut last = Instant::now();
    let mut polls = 0u32;
    while !stop.load(Ordering::Acquire) {
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
        // Spin while calls are coming; once idle, park until a doorbell unparks us.
        polls = polls.wrapping_add(1);
        if !polls.is_multiple_of(64) || last.elapsed() < idle_spin {
            std::hint::spin_loop();
        } else {
            std::thread::park_timeout(PARK_LIMIT);
            if woken.swap(false, Ordering::AcqRel) {
                // A doorbell: the guest is making calls again, spin for the ones that follow.
                last = Instant::now();
            }
        }
    }
}
