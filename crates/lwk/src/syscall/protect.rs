//! Page protections enforced (issue #14): after every call that changes what the window holds
//! (mmap, munmap, mprotect, brk, mremap, shmat, execve), the page tables of the range are
//! rewritten from the memory manager's and the VMAs' view (`vmas::Vmas::protections`,
//! `pagetable.rs`) and every vCPU is made to see them before the call returns (`shadow.rs`).

use crate::kernel::{lock, Kernel};
use crate::memory::PAGE_2M;

impl Kernel {
    /// Rewrites the page tables of `[a, b)` (clipped to the window, widened to 2 MiB pages) and,
    /// when they changed, waits until no vCPU runs guest code with the old ones.
    pub(crate) fn sync_protections(&self, a: u64, b: u64) {
        let (lo, hi) = (
            a.max(self.mem.app.base) & !(PAGE_2M - 1),
            b.min(self.mem.app.end()),
        );
        if lo >= hi {
            return;
        }
        let generation = {
            let mm = lock(&self.space.mm);
            let vmas = lock(&self.space.vmas);
            let mut changed = false;
            let mut chunk = lo;
            while chunk < hi {
                changed |= self.mem.set_chunk(chunk, &vmas.protections(&mm, chunk));
                chunk += PAGE_2M;
            }
            if !changed {
                return;
            }
            self.mem.shadow.bump()
        };
        self.mem.shadow.shoot_down(generation);
    }

    /// True when `addr` lies in a mapping of the guest (whatever its protection): a fault there
    /// is SEGV_ACCERR, elsewhere SEGV_MAPERR.
    pub(crate) fn is_mapped(&self, addr: u64) -> bool {
        let mm = lock(&self.space.mm);
        let heap = mm.brk_start..mm.brk_cur.div_ceil(crate::mm::PAGE) * crate::mm::PAGE;
        mm.in_window(addr, 1) && (heap.contains(&addr) || mm.maps.covers(addr, addr + 1))
    }

    /// The whole window (start-up, execve).
    pub(crate) fn sync_all_protections(&self) {
        self.sync_protections(self.mem.app.base, self.mem.app.end());
    }
}
