//! The proxy parks while the guest faults (issue #15).
//!
//! A guest fault that makes the host replace a page — a first write to a copy-on-write file page
//! while ld.so relocates a library, a write to a page that read the zero page — flushes the TLB
//! of every CPU the VMM's threads run on, and on this VM that flush waits ≈ 1–3 ms for a CPU that
//! is busy (`aside.rs`): the proxy's, while it polls for the next call. In `/bin/true` the
//! relocations after the last library was mapped took 1.6–4.9 ms with the proxy polling and
//! 0.2 ms with it parked (docs/BENCHMARKS.md, "Calls that flush TLBs on the vCPU's thread").
//!
//! So while it polls without calls coming, the proxy reads vCPU 0's count of the faults KVM took
//! (`pf_taken`, from the vCPU's binary statistics: one `pread` of 8 bytes) every
//! [`CHECK_EVERY`]; when it grew by [`BURST`] or more since the last look, the guest is faulting,
//! not calling, and the proxy parks until the next doorbell as after standing aside. The next
//! call pays the doorbell (≈ 30 µs) and the proxy's wake-up.
//!
//! **Off by default** (`MULTIOS_LWK_FAULT_PARK=on`, or a number of faults for [`BURST`]): KVM's
//! count does not tell the faults that flush (a host page replaced) from those that do not (a
//! shadow entry built over a page populated at map time), and Racket's boot, which faults over
//! its populated heap between calls, paid the doorbells without the gain — paired on a loaded VM
//! (docs/BENCHMARKS.md, "The proxy parked while the guest faults"): xz 0.886–0.917 of polling,
//! `true` 0.965, but `python3 -c pass` 1.040 and Racket's boot 1.018–1.054 at bursts of 4–64.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How often a polling proxy looks at the fault count.
pub const CHECK_EVERY: Duration = Duration::from_micros(20);
/// Faults since the last look that make the proxy park.
pub const BURST: u64 = 4;

/// `MULTIOS_LWK_FAULT_PARK`: unset, `off` or 0 (None, the default), `on` ([`BURST`]) or a burst
/// size.
pub fn burst() -> Option<u64> {
    static B: OnceLock<Option<u64>> = OnceLock::new();
    *B.get_or_init(|| parse_burst(std::env::var("MULTIOS_LWK_FAULT_PARK").ok().as_deref()))
}

fn parse_burst(v: Option<&str>) -> Option<u64> {
    match v.map(str::trim) {
        None | Some("off") | Some("0") | Some("") => None,
        Some("on") => Some(BURST),
        Some(n) => n.parse().ok(),
    }
}

/// vCPU 0's fault counter, as the proxy reads it.
#[derive(Debug, Default)]
pub struct FaultWatch {
    /// The statistics file and the counter's offset in it.
    counter: Mutex<Option<(std::fs::File, u64)>>,
    /// The count at the last look.
    last: AtomicU64,
    /// Parks it caused.
    parks: AtomicU64,
}

impl FaultWatch {
    /// Watches the vCPU `fd` (vCPU 0; a forked child's own replaces its parent's). Nothing is
    /// watched when its statistics cannot be read (Linux < 5.14).
    pub fn watch(&self, vcpu: &impl AsRawFd) {
        let found = crate::sys::kvm::stats_fd(vcpu.as_raw_fd(), crate::fds::floor())
            .ok()
            .and_then(|fd: OwnedFd| {
                let file = std::fs::File::from(fd);
                let at = crate::costs::stat_offset(&file, "pf_taken")?;
                Some((file, at))
            });
        *self.counter.lock().unwrap_or_else(|p| p.into_inner()) = found;
        self.last.store(0, Relaxed);
    }

    /// True when the guest took `burst` faults or more since the last look (the proxy then
    /// parks, counted).
    pub fn faulting(&self, burst: u64) -> bool {
        let g = self.counter.lock().unwrap_or_else(|p| p.into_inner());
        let Some((file, at)) = g.as_ref() else {
            return false;
        };
        let mut v = [0u8; 8];
        if file.read_exact_at(&mut v, *at).is_err() {
            return false;
        }
        let now = u64::from_le_bytes(v);
        let before = self.last.swap(now, Relaxed);
        let burst_seen = before != 0 && now.saturating_sub(before) >= burst;
        if burst_seen {
            self.parks.fetch_add(1, Relaxed);
        }
        burst_seen
    }

    /// Parks caused by faults so far.
    pub fn parks(&self) -> u64 {
        self.parks.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_fault_parking_is_off_unless_asked() {
        assert_eq!(parse_burst(None), None);
        assert_eq!(parse_burst(Some("off")), None);
        assert_eq!(parse_burst(Some("0")), None);
        assert_eq!(parse_burst(Some("on")), Some(BURST));
        assert_eq!(parse_burst(Some(" 16 ")), Some(16));
        assert_eq!(parse_burst(Some("lots")), None);
    }

    #[test]
    fn issue_15_an_unwatched_vcpu_never_parks_the_proxy() {
        let w = FaultWatch::default();
        assert!(!w.faulting(1));
        assert_eq!(w.parks(), 0);
    }
}
