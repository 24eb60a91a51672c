//! madvise (local). Linux's argument checks first, in Linux's order (`mm/madvise.c`): unknown
//! advice and an unaligned start are EINVAL, the length is rounded up to pages (EINVAL when that
//! overflows), an empty range is 0; a range with unmapped pages gets the advice on its mapped
//! parts and then ENOMEM. The advice itself:
//!
//! * MADV_DONTNEED (and _LOCKED) zeroes the LWK's memory (the host's madvise for shared mappings);
//! * MADV_POPULATE_READ/WRITE populate the host pages behind the range;
//! * MADV_WIPEONFORK, MADV_KEEPONFORK and MADV_REMOVE are the host's madvise of the mapped parts:
//!   guest memory is the VMM's own private anonymous memory at the same addresses (see "Unified
//!   address space" in docs/LWK.md), so a guest fork — a fork of the VMM — gives the child zeros
//!   there, and the host says EINVAL where Linux does (WIPEONFORK of a file or shared mapping,
//!   REMOVE of private anonymous memory) and EACCES for REMOVE of a private file mapping;
//! * MADV_HWPOISON and MADV_SOFT_OFFLINE are EPERM (Linux's answer without CAP_SYS_ADMIN; the
//!   LWK never poisons the VMM's pages);
//! * discarding advice on memory mseal sealed that is private, anonymous and read-only is EPERM
//!   (`mseal.rs`);
//! * the rest are hints, accepted. MADV_DONTFORK is one of them (a limit: a forked child still
//!   gets a copy; without the host pages the child VMM itself would fault on them).

use crate::kernel::{lock, Kernel, Reply};
use crate::mm::PAGE;
use crate::sys;
use libc::*;

fn err(e: i32) -> Reply {
    Reply::Ret(-(e as i64))
}

/// MADV_DONTNEED_LOCKED, MADV_COLLAPSE, MADV_GUARD_INSTALL, MADV_GUARD_REMOVE (not in libc).
const DONTNEED_LOCKED: i32 = sys::MADV_DONTNEED_LOCKED;
const COLLAPSE: i32 = 25;
const GUARD_INSTALL: i32 = 102;
const GUARD_REMOVE: i32 = 103;

/// Linux's `madvise_behavior_valid` (6.18 on x86-64, with KSM, transparent huge pages and memory
/// failure handling built in, as distribution kernels have them).
fn valid(advice: i32) -> bool {
    matches!(
        advice,
        MADV_NORMAL
            | MADV_RANDOM
            | MADV_SEQUENTIAL
            | MADV_WILLNEED
            | MADV_DONTNEED
            | MADV_FREE
            | MADV_REMOVE
            | MADV_DONTFORK
            | MADV_DOFORK
            | MADV_MERGEABLE
            | MADV_UNMERGEABLE
            | MADV_HUGEPAGE
            | MADV_NOHUGEPAGE
            | MADV_DONTDUMP
            | MADV_DODUMP
            | MADV_WIPEONFORK
            | MADV_KEEPONFORK
            | MADV_COLD
            | MADV_PAGEOUT
            | MADV_POPULATE_READ
            | MADV_POPULATE_WRITE
            | DONTNEED_LOCKED
            | COLLAPSE
            | MADV_HWPOISON
            | MADV_SOFT_OFFLINE
            | GUARD_INSTALL
            | GUARD_REMOVE
    )
}

/// The range of a madvise call after Linux's checks: Err(errno), Ok(None) for an empty range.
fn range(start: u64, len: u64, advice: i32) -> Result<Option<(u64, u64)>, i32> {
    if !valid(advice) || !start.is_multiple_of(PAGE) {
        return Err(EINVAL);
    }
    let len = len.checked_add(PAGE - 1).ok_or(EINVAL)? / PAGE * PAGE;
    let end = start.checked_add(len).ok_or(EINVAL)?;
    Ok((end > start).then_some((start, end)))
}

impl Kernel {
    pub(super) fn madvise(&self, nr: u64, a: [u64; 6]) -> Reply {
        let advice = a[2] as i32;
        let (start, end) = match range(a[0], a[1], advice) {
            Ok(Some(r)) => r,
            Ok(None) => return Reply::Ret(0),
            Err(e) => return err(e),
        };
        if matches!(advice, MADV_HWPOISON | MADV_SOFT_OFFLINE) {
            return err(EPERM);
        }
        if !lock(&self.space.mm).in_window(start, end - start) {
            return err(ENOMEM);
        }
        if self.seal_refuses_advice(start, end, advice) {
            return err(EPERM);
        }
        let parts = self.mapped_parts(start, end);
        let holes = parts.iter().map(|(s, e)| e - s).sum::<u64>() < end - start;
        let len = end - start;
        match advice {
            MADV_DONTNEED | DONTNEED_LOCKED => {
                if self.overlaps_shared(start, len) {
                    // The host's own madvise has Linux's meaning for file pages.
                    let r = sys::raw_syscall(nr, [start, len, advice as u64, 0, 0, 0]);
                    if r < 0 {
                        return Reply::Ret(r);
                    }
                } else {
                    self.mem.discard(start, len);
                    self.next.dropped(start, end);
                }
            }
            MADV_POPULATE_READ | MADV_POPULATE_WRITE => {
                // Prefaulting (the `mmap` override `prefault`, Multiverse's Fig. 12): the host
                // pages behind the range are allocated now, in one call. Unmapped pages in the
                // range are ENOMEM, as on Linux.
                if holes {
                    return err(ENOMEM);
                }
                if self.overlaps_shared(start, len) {
                    return Reply::Ret(sys::raw_syscall(nr, [start, len, advice as u64, 0, 0, 0]));
                }
                let _ = sys::madvise(start, len as usize, MADV_POPULATE_WRITE);
            }
            MADV_WIPEONFORK | MADV_KEEPONFORK | MADV_REMOVE => {
                if advice == MADV_WIPEONFORK {
                    crate::memory::note_wipe_on_fork();
                }
                for (s, e) in parts {
                    if let Err(e) = sys::madvise(s, (e - s) as usize, advice) {
                        return err(e.raw_os_error().unwrap_or(EINVAL));
                    }
                }
            }
            _ => {}
        }
        if holes {
            return err(ENOMEM);
        }
        Reply::Ret(0)
    }

    /// The parts of `[a, b)` the guest has mapped (mappings, image, stack, the break), in order.
    fn mapped_parts(&self, a: u64, b: u64) -> Vec<(u64, u64)> {
        let mut v = {
            let mm = lock(&self.space.mm);
            let mut v = mm.maps.intersections(a, b);
            let heap_end = mm.brk_cur.div_ceil(PAGE) * PAGE;
            let (s, e) = (mm.brk_start.max(a), heap_end.min(b));
            if s < e {
                v.push((s, e));
            }
            v
        };
        v.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
        for (s, e) in v {
            match out.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_like_linux() {
        assert_eq!(range(0x1000, 1, MADV_DONTNEED), Ok(Some((0x1000, 0x2000))));
        assert_eq!(range(0x1001, 4096, MADV_DONTNEED), Err(EINVAL));
        assert_eq!(range(0x1000, 4096, 12345), Err(EINVAL));
        assert_eq!(range(0x1000, 4096, MADV_HWPOISON + 100), Err(EINVAL));
        assert_eq!(range(0x1000, 0, MADV_DONTNEED), Ok(None));
        assert_eq!(range(0x1000, u64::MAX, MADV_DONTNEED), Err(EINVAL));
        assert_eq!(range(0x2000, u64::MAX - 0x1000, MADV_DONTNEED), Err(EINVAL));
        // An unknown advice is EINVAL before anything else, even for an empty range.
        assert_eq!(range(0x1000, 0, 12345), Err(EINVAL));
        assert_eq!(range(0x1000, 0, MADV_WIPEONFORK), Ok(None));
    }
}
