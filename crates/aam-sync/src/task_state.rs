//! A task's state machine (one atomic byte): the paper's enqueue handler.
//!
//! `SCHEDULED` (in exactly one ready queue) → `RUNNING` (a worker polls it) → `IDLE` (pending;
//! held only by the wakers it registered) or `DONE`. A wake-up moves `IDLE` to `SCHEDULED` (the
//! waker enqueues it) or `RUNNING` to `NOTIFIED`, in which case the worker that polls it enqueues
//! it again *after* the poll returned. A task therefore becomes visible to other cores only after
//! it left the core it ran on, it is in at most one queue at a time, and a wake-up that arrives
//! while it runs is recorded instead of lost. The loom model `task_state_wake_while_running`
//! checks it.

use crate::shim::AtomicU8;
use std::sync::atomic::Ordering;

const IDLE: u8 = 0;
const SCHEDULED: u8 = 1;
const RUNNING: u8 = 2;
const NOTIFIED: u8 = 3;
const DONE: u8 = 4;

pub struct TaskState(AtomicU8);

impl Default for TaskState {
    fn default() -> Self {
        TaskState::new()
    }
}

impl TaskState {
    /// A new task, `SCHEDULED`: its creator enqueues it.
    pub fn new() -> Self {
        TaskState(AtomicU8::new(SCHEDULED))
    }

    /// A task that waits to be woken before it first runs.
    pub fn idle() -> Self {
        TaskState(AtomicU8::new(IDLE))
    }

    /// The worker that dequeued the task starts polling it.
    pub fn begin_run(&self) {
        self.0.store(RUNNING, Ordering::Release);
    }

    /// The poll returned `Pending`: true if a wake-up arrived during the poll, and the caller must
    /// enqueue the task again (it is `SCHEDULED` once more); false if it is now `IDLE`.
    pub fn end_run_pending(&self) -> bool {
        if self
            .0
            .compare_exchange(RUNNING, IDLE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return false;
        }
        self.0.store(SCHEDULED, Ordering::Release);
        true
    }

    /// The task finished (or was cancelled).
    pub fn done(&self) {
        self.0.store(DONE, Ordering::Release);
    }

    /// A wake-up: true if the caller must enqueue the task (it was `IDLE`, now `SCHEDULED`).
    pub fn wake(&self) -> bool {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            let next = match s {
                IDLE => SCHEDULED,
                RUNNING => NOTIFIED,
                _ => return false,
            };
            match self
                .0
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return s == IDLE,
                Err(now) => s = now,
            }
        }
    }
}
