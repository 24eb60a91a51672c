//! Machine activation through the Machine Manager: how a machine that holds no core gets one,
//! without a lost activation.
//!
//! IMS is a synchronous call into the Machine Manager made by the sender (seed 004, §3.3). When the
//! destination machine has a worker on a core, the manager wakes it ([`crate::parker`]). When it
//! has none (the manager gave its cores to other machines), the manager must activate it on a
//! core. Two parties can do that, and at least one of them always does:
//!
//! - the **requester** (the sender's IMS call, or a worker whose machine lost its last core with
//!   work queued), with the manager's lock held: [`request`] marks the machine as waiting and
//!   counts it in the `wanted` word of every CPU it has a worker on (`count`), then a SeqCst fence,
//!   then `grant`: a CPU no machine holds, or one whose holder's worker sleeps there
//!   ([`Parker::is_sleeping`]), is given to the machine;
//! - the **holder** of such a CPU, whose worker runs out of work: [`sleep_or_hand_over`] announces
//!   sleep ([`Parker::prepare`]), fences, re-checks its own machine's work, and then, if the CPU's
//!   `wanted` word is non-zero, calls `hand_over` (with the manager's lock), which gives the CPU to
//!   a waiting machine: the paper's machine switch "when a core would start to idle".
//!
//! Both sides store first (the requester its `wanted` count, the holder `SLEEPING`), fence, and
//! then load what the other stored. In the single order of SeqCst fences one of the two fences
//! comes first, so at least one side sees the other: the requester finds the holder asleep and
//! grants, or the holder finds the count and hands over (both may; the manager's lock makes the
//! second find the machine no longer waiting). A holder that is busy neither sleeps nor hands over;
//! the machine then waits for the holder's next idle moment or for the manager's periodic policy.
//!
//! The machine given the core is started by [`start`] (its flag set, a fence, a forced wake-up);
//! its dormant worker waits in [`dormant_until`] (announce sleep, fence, check the flag, sleep).
//! Each side stores, fences and loads what the other stored, so the worker either sees its flag
//! or is woken after it announced its sleep.
//!
//! The loom model `issue_11_loom_activation_no_lost_grant` checks exactly these functions, and
//! `issue_11_loom_activation_broken_order_is_caught` checks that the model finds the lost
//! activation of a holder that reads `wanted` before announcing its sleep.

use crate::parker::Parker;
use crate::shim::{fence, AtomicBool};
use std::sync::atomic::Ordering::SeqCst;

/// What an idle worker did in [`sleep_or_hand_over`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idle {
    /// Its own machine had work after all: it did not sleep.
    Work,
    /// It gave its CPU to a waiting machine (a machine switch): it leaves the CPU.
    HandedOver,
    /// It slept until woken.
    Slept,
}

/// The requester's side, called with the manager's lock held: marks the machine `waiting`
/// (calling `count` only if it was not waiting yet), fences, and tries `grant`. Returns `grant`'s
/// answer (true: the machine got a core now; false: it waits for a holder to hand one over).
pub fn request(waiting: &AtomicBool, count: impl FnOnce(), grant: impl FnOnce() -> bool) -> bool {
    if !waiting.swap(true, SeqCst) {
        count();
    }
    fence(SeqCst);
    grant()
}

/// Ends a request (with the manager's lock held, by whoever gave the machine a core, or when the
/// machine leaves the manager): clears `waiting` and calls `uncount` if it was set. Returns
/// whether it was set.
pub fn withdraw(waiting: &AtomicBool, uncount: impl FnOnce()) -> bool {
    let was = waiting.swap(false, SeqCst);
    if was {
        uncount();
    }
    was
}

/// The holder's side, an idle worker: announce sleep, clear the polling flags (`clear`), fence,
/// re-check the own machine's work (`has_work`); without work, hand the CPU over if a machine
/// wants it (`wanted` non-zero and `hand_over` true), else sleep. Sets the flags again (`set`)
/// before returning.
pub fn sleep_or_hand_over(
    parker: &Parker,
    clear: impl FnOnce(),
    has_work: impl FnOnce() -> bool,
    wanted: impl FnOnce() -> bool,
    hand_over: impl FnOnce() -> bool,
    set: impl FnOnce(),
) -> Idle {
    parker.prepare();
    clear();
    fence(SeqCst);
    let r = if has_work() {
        Idle::Work
    } else if wanted() && hand_over() {
        Idle::HandedOver
    } else {
        parker.park();
        Idle::Slept
    };
    parker.running();
    set();
    r
}

/// A worker whose machine does not hold its CPU: sleeps until `wake()` says to go on (its machine
/// was given the CPU, or the machine stops). `wake` runs after every wake-up, also a wake-up meant
/// for the machine that landed here (it may pass it on).
pub fn dormant_until(parker: &Parker, mut wake: impl FnMut() -> bool) {
    loop {
        parker.prepare();
        fence(SeqCst);
        if wake() {
            break;
        }
        parker.park();
    }
    parker.running();
}

/// The manager's side of giving a machine a CPU: `set` (the worker's flag), a fence, and a forced
/// wake-up of its worker there (asleep in [`dormant_until`], or about to be).
pub fn start(parker: &Parker, set: impl FnOnce()) {
    set();
    fence(SeqCst);
    parker.force_wake();
}
