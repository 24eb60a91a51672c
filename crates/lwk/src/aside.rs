//! The proxy stands aside while a vCPU thread edits the host's mappings of the window
//! (issues #13, #15).
//!
//! On this VM an IPI to a CPU that is busy running a thread is acknowledged only after
//! ≈ 1–3 ms, while one to an idle CPU (or none, to a CPU in lazy TLB mode) costs microseconds:
//! natively, a process whose second thread spins on the other CPU paid 0.7–3.5 ms for an
//! mprotect that takes write access away and ≈ 1 ms for a write to a page that read the zero
//! page, against 4 µs and 2.5 µs with nothing beside it (`crates/lwk/scripts/ipi.c`). The proxy
//! spins on its CPU between calls, so every TLB flush of the VMM's address space made while it
//! spins — munmap, a tightening mprotect (`syscall/protect.rs`), a file mmap, mremap — waited
//! for it: `lwk run` of a loop of mprotect pairs took 2.3–2.7 ms a pair, against 0.11 ms with
//! the proxy parked.
//!
//! So the vCPU thread that serves such a call (`syscall/onvcpu.rs` hands them to it) asks the
//! proxy to park first ([`Aside::stand_aside`]), waits until it says it is about to, makes the
//! edit, and unparks it (the guard's drop). The wait is bounded ([`PATIENCE`]): a proxy inside a
//! long call of another vCPU's is not waited for, and the edit pays the slow IPI as before.
//! Without a proxy (the exit backend) it does nothing. Afterwards the proxy stays parked until the
//! guest's next doorbell ([`stay_parked`]; `MULTIOS_LWK_ASIDE=resume` makes it poll again at once).
//! `MULTIOS_LWK_ASIDE=off` turns both this and the handing of those calls to the vCPU's thread
//! off (to measure the two side by side). fork(2) of the VMM is made the same way:
//! it write-protects every page of the parent, and with the proxy spinning a fork of a guest
//! with 8 MiB touched took ≈ 11 ms in the LWK, against ≈ 3.3 ms with the proxy parked
//! (`machine/fork.rs`).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::*};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// False when `MULTIOS_LWK_ASIDE=off`: the proxy serves every call it can, spinning throughout.
pub fn on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("MULTIOS_LWK_ASIDE").is_none_or(|v| v != "off"))
}

/// True unless `MULTIOS_LWK_ASIDE=resume`: once it has stood aside, the proxy stays parked until
/// the guest's next doorbell instead of polling again — the faults that follow a mapping call
/// (relocations, first writes to copy-on-write pages) flush TLBs too. Paired on a loaded VM
/// (docs/BENCHMARKS.md): a WAL sqlite3 load with commits 0.842 of resuming, a fork loop 0.954,
/// `true`, `python3 -c pass`, Racket's boot and xz 0.995–1.015 (undecided).
pub fn stay_parked() -> bool {
    static STAY: OnceLock<bool> = OnceLock::new();
    *STAY.get_or_init(|| std::env::var_os("MULTIOS_LWK_ASIDE").is_none_or(|v| v != "resume"))
}

/// The longest a vCPU thread waits for the proxy to stand aside.
pub const PATIENCE: Duration = Duration::from_millis(1);
/// The longest the proxy stays parked for one request without being unparked (a safety net).
const PARK_LIMIT: Duration = Duration::from_millis(20);

/// The proxy's side and the vCPU threads' side of standing aside.
#[derive(Debug, Default)]
pub struct Aside {
    /// The proxy thread, once it runs (a forked child's own replaces its parent's).
    proxy: Mutex<Option<std::thread::Thread>>,
    /// vCPU threads that want the proxy parked.
    wanted: AtomicU32,
    /// The proxy is parked, or about to park.
    parked: AtomicBool,
    /// Requests made, and those the proxy did not stand aside for in time.
    asked: std::sync::atomic::AtomicU64,
    late: std::sync::atomic::AtomicU64,
}

/// While it lives, the proxy stays parked.
#[must_use]
pub struct Standing<'a>(&'a Aside);

impl Drop for Standing<'_> {
    fn drop(&mut self) {
        if self.0.wanted.fetch_sub(1, AcqRel) == 1 {
            if let Some(t) = self.0.thread() {
                t.unpark();
            }
        }
    }
}

impl Aside {
    /// Called by the proxy thread when it starts (in a forked child too, whose copy of `parked`
    /// may say its parent's proxy was parked).
    pub fn register(&self) {
        self.parked.store(false, Release);
        *self.proxy.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::thread::current());
    }

    fn thread(&self) -> Option<std::thread::Thread> {
        self.proxy.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Asks the proxy to park and waits (at most [`PATIENCE`]) until it is; None without a proxy.
    pub fn stand_aside(&self) -> Option<Standing<'_>> {
        if !on() {
            return None;
        }
        self.thread()?;
        self.wanted.fetch_add(1, AcqRel);
        self.asked.fetch_add(1, Relaxed);
        let t0 = Instant::now();
        while !self.parked.load(Acquire) {
            if t0.elapsed() > PATIENCE {
                self.late.fetch_add(1, Relaxed);
                break;
            }
            std::hint::spin_loop();
        }
        Some(Standing(self))
    }

    /// The proxy's poll: true when a vCPU thread wants it parked.
    pub fn wanted(&self) -> bool {
        self.wanted.load(Acquire) > 0
    }

    /// The proxy parks until no vCPU thread wants it parked.
    pub fn park_while_wanted(&self) {
        self.parked.store(true, Release);
        while self.wanted() {
            std::thread::park_timeout(PARK_LIMIT);
        }
        self.parked.store(false, Release);
    }

    /// The proxy's idle park begins (true) or ends (false): a request meanwhile need not wait.
    pub fn idle_parked(&self, on: bool) {
        self.parked.store(on, Release);
    }

    /// (requests, requests the proxy did not stand aside for within [`PATIENCE`]).
    pub fn counts(&self) -> (u64, u64) {
        (self.asked.load(Relaxed), self.late.load(Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn issue_15_without_a_proxy_nothing_waits() {
        let a = Aside::default();
        assert!(a.stand_aside().is_none());
        assert!(!a.wanted());
    }

    /// Waits (at most 10 s, a hang guard only) until `f` holds.
    fn eventually(f: impl Fn() -> bool) -> bool {
        let t0 = Instant::now();
        while !f() {
            if t0.elapsed() > Duration::from_secs(10) {
                return false;
            }
            std::thread::yield_now();
        }
        true
    }

    #[test]
    fn issue_15_the_proxy_parks_while_a_vcpu_thread_edits() {
        use std::sync::atomic::AtomicU64;
        let a = Arc::new(Aside::default());
        let stop = Arc::new(AtomicBool::new(false));
        let polls = Arc::new(AtomicU64::new(0));
        let (a2, s2, p2) = (a.clone(), stop.clone(), polls.clone());
        let proxy = std::thread::spawn(move || {
            a2.register();
            while !s2.load(Acquire) {
                if a2.wanted() {
                    a2.park_while_wanted();
                    continue;
                }
                p2.fetch_add(1, Relaxed);
                std::hint::spin_loop();
            }
        });
        assert!(eventually(|| a.thread().is_some()));
        for _ in 0..3 {
            let g = a.stand_aside().expect("a proxy is registered");
            // However late the proxy sees the request, it parks, and polls no more while the
            // guard lives.
            assert!(eventually(|| a.parked.load(Acquire)));
            let before = polls.load(Relaxed);
            std::thread::sleep(Duration::from_millis(30));
            assert_eq!(
                polls.load(Relaxed),
                before,
                "the proxy polled while it stood aside"
            );
            drop(g);
            assert!(
                eventually(|| polls.load(Relaxed) > before),
                "the proxy did not resume"
            );
        }
        stop.store(true, Release);
        proxy.join().expect("the proxy thread panicked");
        assert!(!a.wanted());
        assert_eq!(a.counts().0, 3);
    }
}
