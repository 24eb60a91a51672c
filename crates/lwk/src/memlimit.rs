//! RLIMIT_AS as the guest sees and sets it (reported 2026-11-28: `ulimit -v` was applied to the
//! VMM, whose 4 GiB window then left no room for anything else, and every later fork failed with
//! "KVM_CREATE_VCPU: Cannot allocate memory"). The limit is the guest's: kept here (process-wide,
//! so it is inherited across fork — the VMM forks — and exec, as Linux's is), starting from the
//! VMM's own at start-up, and enforced by the LWK's memory manager (`mm.rs`): a mapping, break or
//! mremap growth that would take the guest's mapped bytes over the soft limit fails with ENOMEM,
//! as Linux's `may_expand_vm` makes it. The guest's stack counts with its whole reservation
//! (natively only the pages it grew to), so a limit within a few MiB of the program's size bites
//! a little earlier than natively.
//!
//! RLIMIT_DATA likewise (issue #16, reported 2026-11-28: `setrlimit(RLIMIT_DATA, 256 MiB)` was
//! applied to the VMM, whose window is a 4 GiB private writable mapping; its next allocation by
//! mmap aborted it, "memory allocation of 524288 bytes failed", and pthread_create's stacks
//! failed with EAGAIN). The guest's value is kept here and reported back, set with Linux's rules,
//! inherited across fork and exec, and given to a program an execve runs on Linux; the LWK's
//! memory manager does not enforce it (RLIMIT_AS is enforced).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One resource limit the LWK keeps for the guest: its (soft, hard), read from the VMM's own at
/// the first use.
struct Kept {
    resource: libc::__rlimit_resource_t,
    soft: AtomicU64,
    hard: AtomicU64,
    read: AtomicBool,
}

impl Kept {
    const fn new(resource: libc::__rlimit_resource_t) -> Self {
        Kept {
            resource,
            soft: AtomicU64::new(u64::MAX),
            hard: AtomicU64::new(u64::MAX),
            read: AtomicBool::new(false),
        }
    }

    fn get(&self) -> (u64, u64) {
        if !self.read.swap(true, Ordering::AcqRel) {
            let (s, h) = crate::sys::rlimit(self.resource);
            self.soft.store(s, Ordering::Relaxed);
            self.hard.store(h, Ordering::Relaxed);
        }
        (
            self.soft.load(Ordering::Relaxed),
            self.hard.load(Ordering::Relaxed),
        )
    }

    fn set(&self, soft: u64, hard: u64, privileged: bool) -> Result<(), i32> {
        allowed(soft, hard, self.get().1, privileged)?;
        self.soft.store(soft, Ordering::Relaxed);
        self.hard.store(hard, Ordering::Relaxed);
        Ok(())
    }
}

static AS: Kept = Kept::new(libc::RLIMIT_AS);
static DATA: Kept = Kept::new(libc::RLIMIT_DATA);

/// The guest's RLIMIT_AS (soft, hard); RLIM_INFINITY is u64::MAX.
pub fn guest_limit() -> (u64, u64) {
    AS.get()
}

/// setrlimit(RLIMIT_AS) by the guest, with Linux's rules: soft ≤ hard, and a hard limit raised
/// only with CAP_SYS_RESOURCE (`privileged`).
pub fn set_guest_limit(soft: u64, hard: u64, privileged: bool) -> Result<(), i32> {
    AS.set(soft, hard, privileged)
}

/// The guest's RLIMIT_DATA (soft, hard): recorded and reported, not enforced.
pub fn guest_data_limit() -> (u64, u64) {
    DATA.get()
}

/// setrlimit(RLIMIT_DATA) by the guest, with Linux's rules (as [`set_guest_limit`]).
pub fn set_guest_data_limit(soft: u64, hard: u64, privileged: bool) -> Result<(), i32> {
    DATA.set(soft, hard, privileged)
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
        let (soft, hard) = guest_data_limit();
        assert!(soft <= hard);
        assert_eq!(allowed(2, 1, u64::MAX, true), Err(libc::EINVAL));
        assert_eq!(allowed(64 << 20, 128 << 20, u64::MAX, false), Ok(()));
        assert_eq!(allowed(64 << 20, 256 << 20, 128 << 20, false), Err(libc::EPERM));
        assert_eq!(allowed(64 << 20, 256 << 20, 128 << 20, true), Ok(()));
        assert!(fits(32 << 20, 32 << 20, 64 << 20) && !fits(32 << 20, 33 << 20, 64 << 20));
        assert!(fits(u64::MAX - 1, 2, u64::MAX));
    }
}
