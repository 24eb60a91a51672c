//! Address-space calls the proxy hands to the calling vCPU's own thread (issues #13, #15).
//!
//! A call that takes pages from the window's host mapping or changes it — munmap and brk shrink
//! give pages back (`MADV_DONTNEED`), mmap of a file or `MAP_FIXED` maps over it, a tightening
//! mprotect flips the host protection to make KVM drop its shadow entries (`syscall/protect.rs`)
//! — makes the host kernel flush the TLBs of every CPU the VMM's threads run on, and KVM's MMU
//! notifier flush every vCPU, each by an IPI it waits for. Served by the proxy, that IPI goes to
//! the CPU whose vCPU spins in guest mode in its stub, waiting for the reply, and under this
//! nested KVM its acknowledgement took ≈ 520 µs: `lwk run` of a loop of mprotect pairs spent
//! 523 µs per shadow invalidation on the proxy against 12 µs on the vCPU's thread
//! (`--backend exit`), and ld.so's three RELRO mprotects cost `/bin/true` ≈ 2 ms
//! (docs/BENCHMARKS.md, "Address-space calls on the vCPU's thread"). On the vCPU's own thread
//! (the proxy answers `EXIT`, the stub rings its doorbell, ≈ 30 µs) the vCPU is out of guest
//! mode, so neither flush waits for it.
//!
//! Calls that only add memory or access stay with the proxy: a fresh private anonymous mmap or
//! a growth of the break (their pages populated with `MADV_POPULATE_WRITE`, which flushes
//! nothing), an mprotect that takes nothing away from private memory, advice that drops nothing.
#![allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case

use crate::kernel::{lock, Kernel};
use libc::*;

impl Kernel {
    /// True when the local call `nr` (arguments `a`) may make the host or KVM flush TLBs: the
    /// proxy hands it to the vCPU's thread.
    pub(super) fn edits_host_mappings(&self, nr: u64, a: &[u64; 6]) -> bool {
        if !crate::aside::on() {
            return false;
        }
        match nr as i64 {
            // execve gives the whole window back (it needs the vCPU anyway).
            SYS_munmap | SYS_mremap | SYS_shmat | SYS_shmdt | SYS_execve | SYS_execveat => true,
            SYS_mmap => {
                let flags = a[3] as i32;
                flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0
                    || flags & MAP_ANONYMOUS == 0
                    || flags & MAP_TYPE != MAP_PRIVATE
            }
            SYS_brk => a[0] != 0 && a[0] < lock(&self.space.mm).brk_cur,
            SYS_madvise => drops_pages(a[2] as i32),
            SYS_mprotect | SYS_pkey_mprotect => {
                let (s, e) = (a[0], a[0].saturating_add(a[1]));
                // The locks in the LWK's order, one at a time: mm, then vmas; shared alone.
                let tightens = {
                    let mm = lock(&self.space.mm);
                    let vmas = lock(&self.space.vmas);
                    vmas.takes_away(&mm, s, e, a[2] as i32)
                };
                tightens || !lock(&self.space.shared).intersections(s, e).is_empty()
            }
            _ => false,
        }
    }
}

/// Advice that unmaps or frees pages (and so flushes), as opposed to hints.
fn drops_pages(advice: i32) -> bool {
    matches!(
        advice,
        MADV_DONTNEED | MADV_FREE | MADV_REMOVE | MADV_COLD | MADV_PAGEOUT | 24 /* MADV_DONTNEED_LOCKED */
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_13_advice_that_drops_pages_goes_to_the_vcpu() {
        assert!(drops_pages(MADV_DONTNEED) && drops_pages(MADV_FREE) && drops_pages(24));
        assert!(!drops_pages(MADV_WILLNEED) && !drops_pages(MADV_HUGEPAGE) && !drops_pages(MADV_SEQUENTIAL));
    }
}
