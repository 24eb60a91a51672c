//! mseal(2) (local, issue #16), as Linux 6.18 serves it (`mm/mseal.c`): flags must be 0 and the
//! start page-aligned (EINVAL), the length is rounded up to pages (EINVAL when that overflows),
//! an empty range is 0, a range with an unmapped page ENOMEM. A sealed range is kept with the
//! memory manager's bookkeeping (`Mm::sealed`), which refuses munmap, mremap, mmap(MAP_FIXED)
//! and brk shrinking over it; mprotect of it and the discarding advice of madvise on read-only
//! private anonymous memory are refused here, before any change. All with EPERM. A forked child
//! (a copy of the VMM) inherits the seals; exec ends them (a new `Mm`).

use crate::kernel::{lock, Kernel, Reply};
use crate::mm::{RangeSet, PAGE};
use libc::{EINVAL, ENOMEM};

/// MADV_GUARD_INSTALL (not in libc).
const GUARD_INSTALL: i32 = 102;

/// The range of an mseal call after Linux's checks: Err(errno), Ok(None) for an empty range.
fn range(start: u64, len: u64, flags: u64) -> Result<Option<(u64, u64)>, i32> {
    if flags != 0 || !start.is_multiple_of(PAGE) {
        return Err(EINVAL);
    }
    let len = len.checked_add(PAGE - 1).ok_or(EINVAL)? / PAGE * PAGE;
    let end = start.checked_add(len).ok_or(EINVAL)?;
    Ok((end > start).then_some((start, end)))
}

/// Advice that discards memory (Linux's `is_discard`): refused on sealed read-only private
/// anonymous memory, whose contents the seal keeps.
fn discards(advice: i32) -> bool {
    matches!(
        advice,
        libc::MADV_FREE
            | libc::MADV_DONTNEED
            | crate::sys::MADV_DONTNEED_LOCKED
            | libc::MADV_REMOVE
            | libc::MADV_DONTFORK
            | libc::MADV_WIPEONFORK
            | GUARD_INSTALL
    )
}

impl Kernel {
    pub(super) fn mseal(&self, a: [u64; 6]) -> Reply {
        let (start, end) = match range(a[0], a[1], a[2]) {
            Ok(Some(r)) => r,
            Ok(None) => return Reply::Ret(0),
            Err(e) => return Reply::Ret(-(e as i64)),
        };
        let mut mm = lock(&self.space.mm);
        // Mapped: the mappings, the image and stack (`maps`) and the break.
        let mut mapped = RangeSet::default();
        for (s, e) in mm.maps.intersections(start, end) {
            mapped.insert_joined(s, e);
        }
        let heap = (
            mm.brk_start.max(start),
            (mm.brk_cur.div_ceil(PAGE) * PAGE).min(end),
        );
        if heap.0 < heap.1 {
            mapped.insert_joined(heap.0, heap.1);
        }
        if !mapped.covers(start, end) {
            return Reply::Ret(-(ENOMEM as i64));
        }
        mm.sealed.insert_joined(start, end);
        Reply::Ret(0)
    }

    /// True when some page of `[a, a+len)` (len rounded up to pages) is sealed.
    pub(super) fn sealed(&self, a: u64, len: u64) -> bool {
        let end = a.saturating_add(len.max(1).div_ceil(PAGE).saturating_mul(PAGE));
        !lock(&self.space.mm).sealed.is_free(a, end)
    }

    /// EPERM when madvise `advice` of `[start, end)` would discard sealed read-only private
    /// anonymous memory (a file or shared mapping, or memory the guest may write, is fine).
    pub(super) fn seal_refuses_advice(&self, start: u64, end: u64, advice: i32) -> bool {
        if !discards(advice) {
            return false;
        }
        let sealed = lock(&self.space.mm).sealed.intersections(start, end);
        if sealed.is_empty() {
            return false;
        }
        let vmas = lock(&self.space.vmas);
        sealed.into_iter().any(|(s, e)| {
            let mut pos = s;
            while pos < e {
                // Unannotated memory (the break, plain anonymous mappings) is read-write.
                let Some((_, v)) = vmas.at(pos) else {
                    pos = vmas.next_start(pos, e);
                    continue;
                };
                if v.name.is_empty() && !v.shared && v.prot & libc::PROT_WRITE == 0 {
                    return true;
                }
                pos = v.end.min(e);
            }
            false
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_like_linux() {
        assert_eq!(range(0x1000, 1, 0), Ok(Some((0x1000, 0x2000))));
        assert_eq!(range(0x1000, 4096, 1), Err(EINVAL));
        assert_eq!(range(0x1001, 4096, 0), Err(EINVAL));
        assert_eq!(range(0x1000, 0, 0), Ok(None));
        assert_eq!(range(0x1000, u64::MAX, 0), Err(EINVAL));
        assert_eq!(range(0x2000, u64::MAX - 0x1000, 0), Err(EINVAL));
        assert!(discards(libc::MADV_DONTNEED) && !discards(libc::MADV_WILLNEED));
    }
}
