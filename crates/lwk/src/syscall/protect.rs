//! Page protections enforced (issue #14): after every call that changes what the window holds
//! (mmap, munmap, mprotect, brk, mremap, shmat, execve), the page tables of the range are
//! rewritten from the memory manager's and the VMAs' view (`vmas::Vmas::protections`,
//! `pagetable.rs`) and every vCPU is made to see them before the call returns (`shadow.rs`).
//!
//! This KVM shadows the tables and does not see the VMM's writes to them; KVM_SET_SREGS (a CR3
//! reload) was not enough to make another vCPU drop a writable shadow entry (measured: a thread
//! kept writing a page another thread had made read-only). So an edit that takes access away
//! from pages that stay mapped (mprotect) makes KVM drop all its shadow page tables
//! (`Shadow::flush`, milliseconds). Pages the call also gave back to the host (munmap, brk
//! shrink, MAP_FIXED over a mapping: MADV_DONTNEED) need no flush: KVM's MMU notifier has already
//! dropped the shadow entries that mapped them. Added access needs none either: a stale stricter
//! entry faults into KVM, which walks the guest tables anew and fixes it.

use crate::kernel::{lock, Kernel};
use crate::memory::PAGE_2M;
use crate::pagetable::Change;

impl Kernel {
    /// Rewrites the page tables of `[a, b)` (clipped to the window, widened to 2 MiB pages) and,
    /// when they changed, makes the vCPUs reload them; when access was taken from pages that stay
    /// mapped (`kept`: the call did not give the range back to the host), KVM drops its shadow
    /// tables and the call waits until no vCPU runs guest code with the old ones.
    pub(crate) fn sync_protections(&self, a: u64, b: u64) {
        self.sync(a, b, false);
    }

    /// mprotect: the pages stay mapped.
    pub(crate) fn sync_protections_kept(&self, a: u64, b: u64) {
        self.sync(a, b, true);
    }

    fn sync(&self, a: u64, b: u64, kept: bool) {
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
            let mut what = Change::None;
            let mut chunk = lo;
            while chunk < hi {
                what = what.max(self.mem.set_chunk(chunk, &vmas.protections(&mm, chunk)));
                chunk += PAGE_2M;
            }
            if what == Change::None {
                return;
            }
            if kept && what == Change::Tightened {
                self.mem.shadow.flush(self.mem.pt_pool.base);
            }
            (self.mem.shadow.bump(), what)
        };
        if generation.1 == Change::Tightened {
            self.mem.shadow.shoot_down(generation.0);
        }
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
