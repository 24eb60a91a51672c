//! RLIMIT_AS as the guest sees and sets it (reported 2026-11-28: `ulimit -v` was applied to the
//! VMM, whose 4 GiB window then left no room for anything else, and every later fork failed with
//! "KVM_CREATE_VCPU: Cannot allocate memory"). The limit is the guest's: kept here (process-wide,
//! so it is inherited across fork — the VMM forks — and exec, as Linux's is), starting from the
//! VMM's own at start-up, and enforced by the LWK's memory manager (`mm.rs`): a mapping, break or
//! mremap growth that would take the guest's mapped bytes over the soft limit fails with ENOMEM,
//! as Linux's `may_expand_vm` makes it. The guest's stack counts with its whole reservation
//! (natively only the pages it grew to), so a limit within a few MiB of the program's size bites
//! a little earlier than natively.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static SOFT: AtomicU64 = AtomicU64::new(u64::MAX);
static HARD: AtomicU64 = AtomicU64::new(u64::MAX);
static READ: AtomicBool = AtomicBool::new(false);

/// The guest's RLIMIT_AS (soft, hard); RLIM_INFINITY is u64::MAX.
pub fn guest_limit() -> (u64, u64) {
    if !READ.swap(true, Ordering::AcqRel) {
        let (s, h) = crate::sys::rlimit(libc::RLIMIT_AS);
        SOFT.store(s, Ordering::Relaxed);
        HARD.store(h, Ordering::Relaxed);
    }
    (SOFT.load(Ordering::Relaxed), HARD.load(Ordering::Relaxed))
}

/// setrlimit(RLIMIT_AS) by the guest, with Linux's rules: soft ≤ hard, and a hard limit raised
/// only with CAP_SYS_RESOURCE (`privileged`).
pub fn set_guest_limit(soft: u64, hard: u64, privileged: bool) -> Result<(), i32> {
    allowed(soft, hard, guest_limit().1, privileged)?;
    SOFT.store(soft, Ordering::Relaxed);
    HARD.store(hard, Ordering::Relaxed);
    Ok(())
}

/// Linux's rules for a new limit (soft, hard) over one whose hard limit is `old_hard`.
fn allowed(soft: u64, hard: u64, old_hard: u64, privileged: bool) -> Result<(), i32> {
    if soft > hard {
        return Err(libc::EINVAL);
    }
    if hard > old_hard && !privileged {
        return Err(libc::EPERM);
    }
    Ok(())
}

/// Whether the guest, with `mapped` bytes mapped, may map `more`.
pub fn room_for(mapped: u64, more: u64) -> bool {
    fits(mapped, more, guest_limit().0)
}

fn fits(mapped: u64, more: u64, limit: u64) -> bool {
    mapped.saturating_add(more) <= limit
}

#[cfg(test)]
mod tests {
    use super::*;

    // (The process-wide limit itself is not changed here: other tests of this binary map memory
    // through `mm.rs` at the same time. `tests/c/rlimitas.c` sets it in a guest.)
    #[test]
    fn the_guest_limit_follows_linuxs_rules() {
        let (soft, hard) = guest_limit();
        assert!(soft <= hard);
        assert_eq!(allowed(2, 1, u64::MAX, true), Err(libc::EINVAL));
        assert_eq!(allowed(64 << 20, 128 << 20, u64::MAX, false), Ok(()));
        assert_eq!(allowed(64 << 20, 256 << 20, 128 << 20, false), Err(libc::EPERM));
        assert_eq!(allowed(64 << 20, 256 << 20, 128 << 20, true), Ok(()));
        assert!(fits(32 << 20, 32 << 20, 64 << 20) && !fits(32 << 20, 33 << 20, 64 << 20));
        assert!(fits(u64::MAX - 1, 2, u64::MAX));
    }
}
