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
//! For migrate too, on the compute and control CPUs, since each spinner exits to the hypervisor
//! every 20 µs (`multios_host::hvexit`): a first trial without the exits (2026-11-27, ninth
//! session) was dropped because a CPU that never halts took the block device's interrupts
//! milliseconds late (an fdatasync 0.2 → 8 ms; with the exits 0.17 ms). With them the migrate
//! round trip fell from 41–64 µs to 27–30 µs (`multios fc`) and the suite's migrate accuracy with
//! every term rose (docs/EMULATOR.md, "Waiting").

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
                    // And it exits to the hypervisor now and then: on a VM a busy vCPU takes its
                    // interrupts (a block device's completions, IPIs) only at its next exit, ms
                    // later for one that never halts (`multios_host::hvexit`).
                    let mut hv = multios_host::hvexit::HvExit::from_env();
                    while !stop.load(Relaxed) {
                        sys::enter_kernel();
                        hv.tick(std::time::Duration::MAX);
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
