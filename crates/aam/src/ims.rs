//! Inter-machine signaling (IMS): how a sender wakes a machine whose workers sleep.
//!
//! An idle worker polls for the machine's configured spin time, then sleeps on a futex word of
//! its own (its [`Parker`]). The protocol, with every step sequentially consistent:
//!
//! - receiver: `state = SLEEPING`; clear the machine's "polling" count and, when it reaches zero,
//!   the "receiver is polling" flag of every client queue; fence; re-check every source of work
//!   (ready queues, inject queue, interface queues, signals, stop); sleep only if all were empty,
//!   with `FUTEX_WAIT(state, SLEEPING)`;
//! - sender: enqueue; fence; read the queue's polling flag (or the machine's polling count); if
//!   clear, change some worker's `SLEEPING` into `NOTIFIED` and `FUTEX_WAKE` it.
//!
//! Either the receiver's re-check comes after the enqueue in the single total order (it finds
//! the work and does not sleep), or the sender's read of the flag comes after the receiver
//! cleared it, and then the sender's compare-and-swap finds `SLEEPING` (the futex wait returns at
//! once if the value already changed, or the wake ends it). A sender that saw the flag set knows
//! a worker will re-check before sleeping. No wake-up is lost; a spurious one is harmless.
//!
//! The paper's Machine Manager performs this wake-up with a system call; here the sender does,
//! which is the same system call (`futex`) without the manager's bookkeeping.

use crate::sys;
use std::sync::atomic::{AtomicU32, Ordering};

pub(crate) const RUNNING: u32 = 0;
pub(crate) const SLEEPING: u32 = 1;
pub(crate) const NOTIFIED: u32 = 2;

/// One worker's futex word (alone on its cache lines).
#[derive(Default)]
#[repr(align(128))]
pub(crate) struct Parker {
    state: AtomicU32,
}

impl Parker {
    /// Announces that the worker is about to sleep (before it re-checks for work).
    pub(crate) fn prepare(&self) {
        self.state.store(SLEEPING, Ordering::SeqCst);
    }

    /// Sleeps until notified (returns at once if already notified).
    pub(crate) fn park(&self) {
        while self.state.load(Ordering::SeqCst) == SLEEPING {
            sys::futex_wait(&self.state, SLEEPING);
        }
    }

    pub(crate) fn running(&self) {
        self.state.store(RUNNING, Ordering::SeqCst);
    }

    /// Wakes the worker if it sleeps or is about to; true if it did.
    pub(crate) fn notify(&self) -> bool {
        if self
            .state
            .compare_exchange(SLEEPING, NOTIFIED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            sys::futex_wake(&self.state, 1);
            true
        } else {
            false
        }
    }

    /// Wakes the worker whatever it does (stop).
    pub(crate) fn force_wake(&self) {
        self.state.store(NOTIFIED, Ordering::SeqCst);
        sys::futex_wake(&self.state, 1);
    }
}
