//! The file-descriptor space of a VMM: the guest's fds below the *floor*, the VMM's own (/dev/kvm,
//! the VM, vCPUs, the signal eventfd, its procfs directory) in a reserved range just under the
//! hard RLIMIT_NOFILE, and the RLIMIT_NOFILE the guest sees.
//!
//! The VMM raises its own soft limit to the top of the range (F_DUPFD cannot place an fd at or
//! above the soft limit) and keeps the guest's limit itself: getrlimit/prlimit64 report
//! `soft = min(host soft, floor)`, `hard = floor`, setrlimit changes only the guest's values, and
//! an fd the kernel hands to the guest at or above the guest's soft limit is closed and reported
//! as EMFILE, as Linux would. With the usual soft limit of 1024 the guest can so open fds 3…1023,
//! as natively.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Fds reserved for the VMM at and above the floor (KVM, VM, up to 128 vCPUs, eventfd, procfs).
pub const RESERVED: u64 = 256;
/// The top of the VMM's range is at most this: the kernel's fd table grows to the highest fd in
/// use (8 bytes per slot, copied at every fork), so a hard limit of 2^20 is not worth following.
const MAX_TOP: u64 = 1 << 16;

static FLOOR: OnceLock<i32> = OnceLock::new();
static GUEST_SOFT: AtomicU64 = AtomicU64::new(0);
static GUEST_HARD: AtomicU64 = AtomicU64::new(0);

/// The lowest fd number of the VMM's range (computed once per process; raises the VMM's soft
/// RLIMIT_NOFILE to the top of the range).
pub fn floor() -> i32 {
    *FLOOR.get_or_init(|| {
        let (soft, hard) = crate::sys::nofile_limit();
        let top = hard.min(MAX_TOP);
        let floor = if top >= 2 * RESERVED {
            top - RESERVED
        } else {
            top / 2
        };
        if soft < top {
            // Best effort: without it the VMM's fds fail to move high and the run reports that.
            let _ = crate::sys::set_nofile_limit(top, hard);
        }
        GUEST_SOFT.store(soft.min(floor), Ordering::Relaxed);
        GUEST_HARD.store(floor, Ordering::Relaxed);
        grow_table(top);
        floor as i32
    })
}

/// Grows the process's fd table to hold fd `top - 1` now, while (at `lwk run`'s start) the VMM
/// has no other thread: a table shared by several threads grows only after an RCU grace period
/// (`expand_fdtable` calls synchronize_rcu when the table has more than one user), which cost
/// 6–15 ms of every run here when the first fd moved to the floor came after the VM thread had
/// started (issue #13, "The LWK's fixed cost per run" in docs/BENCHMARKS.md). The table never
/// shrinks, so every later fd of the VMM's range fits without growing it again.
fn grow_table(top: u64) {
    let Ok(fd) = crate::sys::eventfd() else {
        return;
    };
    if let Ok(high) = crate::sys::dup_high(fd, top.saturating_sub(1) as i32) {
        drop(high);
    }
    crate::sys::close(fd);
}

/// The guest's RLIMIT_NOFILE (soft, hard).
pub fn guest_limit() -> (u64, u64) {
    floor();
    (
        GUEST_SOFT.load(Ordering::Relaxed),
        GUEST_HARD.load(Ordering::Relaxed),
    )
}

/// setrlimit(RLIMIT_NOFILE) by the guest: Linux's rules, with the floor as the highest hard limit
/// (raising the hard limit above it is EPERM, as for an unprivileged process).
pub fn set_guest_limit(soft: u64, hard: u64) -> Result<(), i32> {
    let (_, old_hard) = guest_limit();
    if soft > hard {
        return Err(libc::EINVAL);
    }
    if hard > old_hard {
        return Err(libc::EPERM);
    }
    GUEST_SOFT.store(soft, Ordering::Relaxed);
    GUEST_HARD.store(hard, Ordering::Relaxed);
    Ok(())
}

/// True when the guest may hold fd `fd` (below its soft limit).
pub fn guest_may_hold(fd: i64) -> bool {
    fd >= 0 && (fd as u64) < guest_limit().0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_sees_a_limit_below_the_vmm_range() {
        let f = floor() as u64;
        let (soft, hard) = guest_limit();
        assert!(soft <= hard && hard == f, "{soft} {hard} {f}");
        let (vsoft, _) = crate::sys::nofile_limit();
        assert!(vsoft > f, "the VMM must be able to place fds at the floor");
        assert_eq!(set_guest_limit(hard, hard + 1), Err(libc::EPERM));
        assert_eq!(set_guest_limit(2, 1), Err(libc::EINVAL));
    }
}
