//! `lwk run --reserve` (issue #14, IHK's `reserve cpu` and `reserve mem`): the run's CPUs become a
//! reserved partition — no other task scheduled there, no load balancing
//! ([`multios_host::cgroup::reserve`]) — and its memory is reserved up front: the window is locked
//! and pre-faulted ([`GuestMemory::lock`](crate::memory::GuestMemory::lock)).
//!
//! The reservation is held here, for the whole process, so that every vCPU thread can enter it
//! when it starts ([`admit_this_thread`]) and every way out can give it back: the end of the run
//! (the guard returned by [`hold`]), an error, a signal that ends the guest, the signal pump's
//! last resort ([`release`]). A forked child is not its owner ([`disown_in_child`]). A multios
//! killed with SIGKILL cannot give it back: the next `lwk run` sweeps it ([`sweep_stale`]).

use multios_host::cgroup::reserve::{Reservation, ReserveError};
use std::sync::Mutex;

static HELD: Mutex<Option<Reservation>> = Mutex::new(None);

fn held() -> std::sync::MutexGuard<'static, Option<Reservation>> {
    HELD.lock().unwrap_or_else(|p| p.into_inner())
}

/// Gives the reservation back when dropped (the end of `run`, an error, a panic).
#[must_use = "the reservation is given back when the guard is dropped"]
pub struct Guard {
    summary: String,
}

impl Guard {
    /// What was reserved, in a sentence.
    pub fn summary(&self) -> &str {
        &self.summary
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        release();
    }
}

/// Reserves `cpus` for this process's LWK and moves the calling thread's later vCPU threads
/// there as they start.
pub fn hold(cpus: &[usize]) -> Result<Guard, ReserveError> {
    let r = Reservation::isolate(cpus)?;
    let summary = r.summary();
    *held() = Some(r);
    Ok(Guard { summary })
}

/// Puts the calling thread (a vCPU thread starting) on the reserved CPUs, when there are some.
pub fn admit_this_thread() -> Result<(), ReserveError> {
    match held().as_ref() {
        Some(r) => r.admit(0),
        None => Ok(()),
    }
}

/// Gives the reservation back now (idempotent).
pub fn release() {
    if let Some(mut r) = held().take() {
        if let Err(e) = r.restore() {
            crate::diag!("multios lwk: {e}");
        }
    }
}

/// In a forked child VMM: the reservation is the parent's to give back.
pub fn disown_in_child() {
    if let Some(r) = held().take() {
        r.disown();
    }
}

/// Undoes the reservations of multios processes that were killed before giving theirs back.
pub fn sweep_stale() -> Vec<String> {
    multios_host::cgroup::reserve::sweep_stale()
}
