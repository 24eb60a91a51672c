//! Page protections enforced (issue #14): after every call that changes what the window holds
//! (mmap, munmap, mprotect, brk, mremap, shmat, execve), the page tables of the range are
//! rewritten from the memory manager's and the VMAs' view (`vmas::Vmas::protections`,
//! `pagetable.rs`) and every vCPU is made to see them before the call returns (`shadow.rs`).
//!
//! This KVM shadows the tables and does not see the VMM's writes to them; KVM_SET_SREGS (a CR3
//! reload) was not enough to make another vCPU drop a writable shadow entry (measured: a thread
//! kept writing a page another thread had made read-only). So an edit that takes access away
//! from pages that stay mapped (mprotect) makes KVM drop the shadow entries of those pages: of
//! the range (a host mprotect that adds execute permission and takes it away, whose MMU notifier
//! unmaps the range from KVM's shadow tables and flushes every vCPU's TLB: `drop_shadow_of`), or,
//! where the host refuses that, all its shadow page tables (`Shadow::flush`, milliseconds), and
//! then the call waits for every vCPU to reload.
//! Pages the call also gave back to the host (munmap, brk shrink, MAP_FIXED over a mapping:
//! MADV_DONTNEED) need neither: KVM's MMU notifier has already dropped the shadow entries that
//! mapped them. Added access needs none either: a stale stricter entry faults into KVM, which
//! walks the guest tables anew and fixes it. So every edit but a tightening mprotect of a
//! multi-threaded guest that needs the flush can be made while the calling vCPU spins in its stub
//! (the proxy serves it, `syscall/local.rs`), and the vCPUs reload their CR3 when they next enter
//! KVM_RUN.

use crate::kernel::{lock, Kernel};
use crate::memory::PAGE_2M;
use crate::pagetable::Change;

/// The most pages [`Kernel::unbacked_file_page`] probes when no register names the page.
const HOST_FAULT_SCAN: u64 = 1 << 18;

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
            let dropped = !(kept && what == Change::Tightened) || self.drop_shadow_of(a, b);
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

    /// Makes KVM drop the shadow entries of the host pages of `[a, b)` only
    /// (`sys::invalidate_shadow`: a host mprotect that adds execute permission and takes it away
    /// again, whose MMU notifier unmaps them from every shadow table and flushes every vCPU's
    /// TLB): microseconds, where dropping every shadow table (a memslot move,
    /// [`crate::shadow::Shadow::flush`]) costs 0.3–12 ms and makes the guest fault every page in
    /// again. Nobody loses access meanwhile, so it serves guests with any number of threads, an
    /// io_uring whose workers write guest buffers, and the host's own mappings (shared memory,
    /// private file mappings such as ld.so's RELRO segments). False when the host refuses (a
    /// shared mapping of a read-only file, a noexec mount, a huge page cut in two): the caller
    /// flushes. `MULTIOS_LWK_FLUSH=memslot` forces the flush (for measurements).
    fn drop_shadow_of(&self, a: u64, b: u64) -> bool {
        if std::env::var_os("MULTIOS_LWK_FLUSH").is_some_and(|v| v == "memslot") {
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

    /// The guest address whose page the host could not back when KVM_RUN failed with EFAULT (a
    /// file mapping's page past the end of its file, natively SIGBUS with BUS_ADRERR): KVM says
    /// neither the address nor the access here. A general register holding an address in such
    /// a page (the load's or store's base, usually) gives it exactly; otherwise the first such
    /// page of the guest's file mappings is taken (at most [`HOST_FAULT_SCAN`] pages probed).
    pub(crate) fn unbacked_file_page(&self, regs: &kvm_bindings::kvm_regs) -> Option<u64> {
        let files: Vec<(u64, u64)> = {
            let mm = lock(&self.space.mm);
            let vmas = lock(&self.space.vmas);
            vmas.areas(&mm)
                .into_iter()
                .filter(|(_, v)| !v.name.is_empty() && v.name != "[stack]" && !v.name.starts_with('['))
                .map(|(s, v)| (s, v.end))
                .collect()
        };
        let in_file = |a: u64| files.iter().any(|&(s, e)| (s..e).contains(&a));
        let r = regs;
        let gprs = [
            r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8, r.r9, r.r10, r.r11, r.r12, r.r13,
            r.r14, r.r15,
        ];
        if let Some(&a) = gprs
            .iter()
            .find(|&&a| in_file(a) && !crate::sys::host_page_backed(a))
        {
            return Some(a);
        }
        let mut budget = HOST_FAULT_SCAN;
        for (s, e) in files {
            let mut p = s;
            while p < e && budget > 0 {
                if !crate::sys::host_page_backed(p) {
                    return Some(p);
                }
                p += crate::mm::PAGE;
                budget -= 1;
            }
        }
        None
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
