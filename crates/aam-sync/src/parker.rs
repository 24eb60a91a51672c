//! Inter-machine signaling (IMS): how an idle worker sleeps and how a sender wakes it, without a
//! lost wake-up.
//!
//! An idle worker polls for its machine's spin time, then sleeps on a futex word of its own (its
//! [`Parker`]) following [`sleep_unless`]; a sender follows [`notify_unless_polling`]. With every
//! step sequentially consistent:
//!
//! - receiver: `state = SLEEPING`; clear the "receiver is polling" flags (the caller's `clear`);
//!   SeqCst fence; re-check every source of work (`has_work`); sleep only if all were empty, with
//!   `FUTEX_WAIT(state, SLEEPING)`;
//! - sender: publish the request (the ring's `publish` ends with a SeqCst fence); read the flag;
//!   if clear, change the worker's `SLEEPING` into `NOTIFIED` and `FUTEX_WAKE` it.
//!
//! Either the receiver's re-check comes after the publication in the single order of SeqCst
//! fences (it finds the work and does not sleep), or the sender's read of the flag comes after the
//! receiver cleared it, and then the sender's compare-and-swap finds `SLEEPING` (the futex wait
//! returns at once if the value already changed, or the wake ends it). A sender that saw the flag
//! set knows a worker will re-check before sleeping. No wake-up is lost; a spurious one is
//! harmless. The loom model `ims_no_lost_wakeup` checks exactly this code.

use crate::shim::{fence, AtomicBool, AtomicU32};
use std::sync::atomic::Ordering::SeqCst;

pub const RUNNING: u32 = 0;
pub const SLEEPING: u32 = 1;
pub const NOTIFIED: u32 = 2;

/// One worker's futex word (alone on its cache lines).
#[derive(Default)]
#[repr(align(128))]
pub struct Parker {
    state: AtomicU32,
    #[cfg(multios_loom)]
    futex: crate::futex_model::Futex,
}

impl Parker {
    /// Announces that the worker is about to sleep (before it re-checks for work).
    pub fn prepare(&self) {
        self.state.store(SLEEPING, SeqCst);
    }

    /// Sleeps until notified (returns at once if already notified).
    pub fn park(&self) {
        while self.state.load(SeqCst) == SLEEPING {
            self.wait(SLEEPING);
        }
    }

    pub fn running(&self) {
        self.state.store(RUNNING, SeqCst);
    }

    /// Whether the worker sleeps or is about to (announced, re-checking for work).
    pub fn is_sleeping(&self) -> bool {
        self.state.load(SeqCst) == SLEEPING
    }

    /// Wakes the worker if it sleeps or is about to; true if it did. Reads the word first, so a
    /// sender that finds the worker running does not take its line exclusively.
    pub fn notify(&self) -> bool {
        if self.state.load(SeqCst) != SLEEPING {
            return false;
        }
        if self
            .state
            .compare_exchange(SLEEPING, NOTIFIED, SeqCst, SeqCst)
            .is_ok()
        {
            self.wake();
            true
        } else {
            false
        }
    }

    /// Wakes the worker whatever it does (stop, core moves).
    pub fn force_wake(&self) {
        self.state.store(NOTIFIED, SeqCst);
        self.wake();
    }

    #[cfg(not(multios_loom))]
    fn wait(&self, expected: u32) {
        crate::sys::futex_wait(&self.state, expected);
    }
    #[cfg(not(multios_loom))]
    fn wake(&self) {
        crate::sys::futex_wake(&self.state, 1);
    }
    #[cfg(multios_loom)]
    fn wait(&self, expected: u32) {
        self.futex.wait(&self.state, expected);
    }
    #[cfg(multios_loom)]
    fn wake(&self) {
        self.futex.wake();
    }
}

/// The receiver side: announce sleep, clear the polling flags (`clear`), fence, re-check
/// (`has_work`), sleep only if nothing arrived, then set the flags again (`set`). Returns whether
/// it slept.
pub fn sleep_unless(
    parker: &Parker,
    clear: impl FnOnce(),
    has_work: impl FnOnce() -> bool,
    set: impl FnOnce(),
) -> bool {
    parker.prepare();
    clear();
    fence(SeqCst);
    let slept = !has_work();
    if slept {
        parker.park();
    }
    parker.running();
    set();
    slept
}

/// The sender side, after the work was published with a SeqCst fence after it: if the receiver
/// does not poll, wake it (`wake`, e.g. [`Parker::notify`] on one of its workers). Returns
/// whether it called `wake`.
pub fn notify_unless_polling(polling: &AtomicBool, wake: impl FnOnce()) -> bool {
    if polling.load(SeqCst) {
        false
    } else {
        wake();
        true
    }
}
