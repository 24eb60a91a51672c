//! SCHED_IDLE spinners that keep CPUs from halting while a program waits for a delegated call
//! (proxy: on the compute CPUs; migrate: on the compute and control CPUs).
//!
//! On this VM a vCPU that halts takes tens of µs to wake, and a waiting program's CPU would halt
//! at every delegated call. A spinner of the lowest class keeps it running and gives way to any
//! other task. It must enter the kernel on every turn: on Linux 6.18 a wake-up of a normal task
//! marks the SCHED_IDLE task spinning there for a *lazy* reschedule, taken at the next tick or at
//! its next return to user mode, so a spinner of pure `pause`s held the woken program off its CPU
//! for ≈ 1.3 ms a call (`scripts/spinwake.c`; docs/EMULATOR.md, "Waiting").

use crate::cpus::{pin_current_thread, CpuSet};
use crate::sys;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// One SCHED_IDLE spinner per CPU of a set, stopped on drop.
pub(crate) struct IdleSpinner {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl IdleSpinner {
    /// A spinner pinned on each CPU of `cpus` (one whose pinning or class is refused just ends).
    pub(crate) fn start(cpus: &CpuSet) -> IdleSpinner {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = cpus
            .0
            .iter()
            .map(|&cpu| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    if pin_current_thread(&CpuSet([cpu].into())).is_err() || !sys::set_sched_idle() {
                        return;
                    }
                    while !stop.load(Relaxed) {
                        sys::enter_kernel();
                    }
                })
            })
            .collect();
        IdleSpinner { stop, threads }
    }
}

impl Drop for IdleSpinner {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        for t in self.threads.drain(..) {
            t.join().ok();
        }
    }
}
