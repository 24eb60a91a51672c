//! SCHED_IDLE spinners that keep the compute CPUs from halting while a program waits for a
//! delegated call (proxy).
//!
//! On this VM a vCPU that halts takes tens of µs to wake, and a waiting program's CPU would halt
//! at every delegated call. A spinner of the lowest class keeps it running and gives way to any
//! other task. It must enter the kernel on every turn: a wake-up of the program only marks the
//! spinner for rescheduling, and a task spinning in user mode acts on that at the next interrupt
//! its vCPU takes (on this VM, with Linux 6.18's lazy preemption and delayed IPIs to a running vCPU,
//! about a millisecond later), while one that enters the kernel acts on it on its way out. A spinner
//! of pure `pause`s held the woken program off its CPU ≈ 1.3 ms a call (`scripts/spinwake.c`;
//! docs/EMULATOR.md, "Waiting").
//!
//! Not for migrate (tried, 2026-11-27, docs/EMULATOR.md): on the control CPUs a CPU that never
//! halts takes the block device's interrupts milliseconds late (an fdatasync 0.2 → 8 ms), and on
//! the compute CPU alone a program that computes between calls ran up to 2× slower, as if the
//! spinner shared its CPU each time the program migrated back.

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
                    // Started a SCHED_OTHER thread, it may have preempted the program on its CPU,
                    // and turning SCHED_IDLE does not give the CPU back: the class change keeps
                    // the priority, so the kernel does not reschedule, and the spinner kept the
                    // CPU for the rest of its slice (a `true` under proxy took +2–5 ms in about a
                    // quarter of its runs). So: the class first, then the CPU, then a yield.
                    if !sys::set_sched_idle() || pin_current_thread(&CpuSet([cpu].into())).is_err() {
                        return;
                    }
                    std::thread::yield_now();
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
