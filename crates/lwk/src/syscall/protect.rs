//! Page protections enforced (issue #14): after every call that changes what the window holds
//! (mmap, munmap, mprotect, brk, mremap, shmat, execve), the page tables of the range are
//! rewritten from the memory manager's and the VMAs' view (`vmas::Vmas::protections`,
//! `pagetable.rs`) and every vCPU is made to see them before the call returns (`shadow.rs`).
//!
//! This KVM shadows the tables and does not see the VMM's writes to them; KVM_SET_SREGS (a CR3
//! reload) was not enough to make another vCPU drop a writable shadow entry (measured: a thread
//! kept writing a page another thread had made read-only). So an edit that takes access away
//! from pages that stay mapped (mprotect) makes KVM drop the shadow entries of those pages: of
//! the range only when the guest has one thread (a host mprotect to read-only and back, whose
//! MMU notifier unmaps the range from KVM's shadow tables: `drop_shadow_of`), else all its shadow
//! page tables (`Shadow::flush`, milliseconds), and the call waits for every vCPU to reload.
//! Pages the call also gave back to the host (munmap, brk shrink, MAP_FIXED over a mapping:
//! MADV_DONTNEED) need neither: KVM's MMU notifier has already dropped the shadow entries that
//! mapped them. Added access needs none either: a stale stricter entry faults into KVM, which
//! walks the guest tables anew and fixes it. So every edit but a tightening mprotect of a
//! multi-threaded guest can be made while the calling vCPU spins in its stub (the proxy serves
//! it, `syscall/local.rs`), and the vCPUs reload their CR3 when they next enter KVM_RUN.

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
        // Decided before mm and vmas are locked (it takes other locks, alone).
        let range_ok = kept && self.range_invalidation_allowed(a, b);
        let shootdown = {
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
            // Pages given back to the host (munmap, MAP_FIXED, brk shrink) had their shadow
            // entries dropped by MADV_DONTNEED; added access heals itself (above): only access
            // taken from pages that stay mapped needs KVM's shadow entries dropped here.
            let dropped = !(kept && what == Change::Tightened) || (range_ok && self.drop_shadow_of(a, b));
            if !dropped {
                self.mem.shadow.flush(self.mem.pt_pool.base);
            }
            (!dropped).then(|| self.mem.shadow.bump())
        };
        match shootdown {
            Some(generation) => self.mem.shadow.shoot_down(generation),
            None => {
                self.mem.shadow.bump();
            }
        }
    }

    /// With a single vCPU, makes KVM drop the shadow entries of the host pages of `[a, b)` only
    /// (`sys::invalidate_shadow`: a host mprotect to read-only and back, whose MMU notifier
    /// unmaps them from KVM's shadow tables and flushes the TLB): microseconds, where dropping
    /// every shadow table (a memslot move, [`crate::shadow::Shadow::flush`]) costs 0.3–12 ms and
    /// makes the guest fault every page in again. The guest's only thread is in this call (on
    /// the proxy it spins in its stub, which touches no window page; on its own thread it is out
    /// of KVM_RUN) and the VMM's other threads do not write guest memory while no call of the
    /// guest is in flight, so nothing writes the range while it is read-only in the host. With
    /// several vCPUs another thread, or a delegated call on its behalf, could: false, and the
    /// caller flushes. `MULTIOS_LWK_FLUSH=memslot` forces the flush (for measurements).
    /// Whether the host mprotect of [`Self::drop_shadow_of`] may touch `[a, b)`: not over a host
    /// mapping of its own (`space.shared`: shared file, memfd, SysV, MAP_SHARED or huge-page
    /// memory, whose host protection is not always read-write and which other processes or the
    /// host kernel may write) other than a private file mapping (read-write in the host and
    /// written only by the guest, like anonymous memory: ld.so's RELRO mprotect of every library's
    /// data lands on one, and a flush there cost 0.3–27 ms of every dynamically linked run, issue
    /// #13), and not while the guest has an io_uring instance (the host kernel's workers complete
    /// reads into guest buffers at any time; a transiently read-only page would fail them with
    /// EFAULT). Otherwise the caller flushes every shadow table instead.
    fn range_invalidation_allowed(&self, a: u64, b: u64) -> bool {
        lock(&self.space.uring).is_empty() && self.host_maps_only_private_files(a, b.saturating_sub(a))
    }

    fn drop_shadow_of(&self, a: u64, b: u64) -> bool {
        let single = self.live_threads.load(std::sync::atomic::Ordering::Acquire) == 1;
        if !single || std::env::var_os("MULTIOS_LWK_FLUSH").is_some_and(|v| v == "memslot") {
            return false;
        }
        let (s, e) = (
            a.max(self.mem.app.base) & !(crate::mm::PAGE - 1),
            b.min(self.mem.app.end()).div_ceil(crate::mm::PAGE) * crate::mm::PAGE,
        );
        s >= e || self.mem.shadow.invalidate(s, e - s)
    }

    /// True when `addr` lies in a mapping of the guest (whatever its protection): a fault there
    /// is SEGV_ACCERR, elsewhere SEGV_MAPERR.
    pub(crate) fn is_mapped(&self, addr: u64) -> bool {
        let mm = lock(&self.space.mm);
        let heap = mm.brk_start..mm.brk_cur.div_ceil(crate::mm::PAGE) * crate::mm::PAGE;
        mm.in_window(addr, 1) && (heap.contains(&addr) || mm.maps.covers(addr, addr + 1))
    }

    /// The whole window (execve).
    pub(crate) fn sync_all_protections(&self) {
        self.sync_protections(self.mem.app.base, self.mem.app.end());
    }

    /// At start-up, when the window's entries are all not present (`GuestMemory::new`): only the
    /// 2 MiB pages that hold something (the images, the stack, the heap) are written, instead of
    /// every one of a 4 GiB window's 2 048.
    pub(crate) fn sync_start_protections(&self) {
        let mut ranges = lock(&self.space.mm)
            .maps
            .intersections(self.mem.app.base, self.mem.app.end());
        {
            let mm = lock(&self.space.mm);
            ranges.push((mm.brk_start, mm.brk_cur.max(mm.brk_start + 1)));
        }
        for (a, b) in ranges {
            self.sync_protections(a, b);
        }
    }
}
