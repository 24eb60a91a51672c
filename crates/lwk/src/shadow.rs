//! Keeping every vCPU's shadow of the guest page tables in step with them (issue #14).
//!
//! This KVM shadows guest page tables and does not see the VMM's edits. Every edit bumps a
//! generation; a vCPU thread reloads its CR3 (KVM_SET_SREGS) before it enters KVM_RUN when it has
//! not seen the latest generation ([`Shadow::enter`]), and a vCPU that faulted before its reload
//! retries the access ([`Shadow::stale`], Linux's spurious-fault path). The reload alone did not
//! make another vCPU drop a writable shadow entry, so an edit that takes access away from pages
//! that stay mapped also makes KVM drop the range's shadow entries ([`Shadow::invalidate`]: a
//! host protection flip, `syscall/protect.rs`) or, where the host refuses that, all its shadow
//! tables ([`Shadow::flush`]: a scratch memslot moved), and then the editing thread waits
//! ([`Shadow::shoot_down`]) until no
//! vCPU still runs guest code with an older generation, kicking those inside KVM_RUN out of it
//! (SIGUSR2, the machine's no-op handler): when mprotect returns, no thread of the guest can
//! still write a page it made read-only — the TLB shootdown Linux does.

use kvm_ioctls::VcpuFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};

/// vCPUs tracked: `memory::sys_page::MAX_VCPUS` (checked there; not imported, so that
/// `memory.rs`, which holds the [`Shadow`], is not imported back).
pub const MAX: usize = 128;

/// How long a shootdown waits for a vCPU before giving up on it (a guest that ignores kicks for
/// that long is stuck anyway; the wait must not hang the VMM).
const PATIENCE: Duration = Duration::from_secs(2);

/// The page tables' generation and what each vCPU has seen of it.
pub struct Shadow {
    generation: AtomicU64,
    /// True while vCPU i's thread is between its generation check and the end of KVM_RUN.
    in_run: [AtomicBool; MAX],
    /// The generation vCPU i last loaded.
    loaded: [AtomicU64; MAX],
    /// vCPU i's host thread (its tid), for kicks.
    thread: [AtomicU64; MAX],
    /// CR3 reloads done, for the measurements.
    reloads: AtomicU64,
    /// Flushes done and their time (ns), for the measurements (`costs.rs`).
    flushes: AtomicU64,
    flush_ns: AtomicU64,
    invalidations: AtomicU64,
    invalidate_ns: AtomicU64,
    /// The VM's fd (-1 before the VM exists), for `flush`.
    vm_fd: std::sync::atomic::AtomicI32,
    /// Where the scratch memslot is (0: not created in this VM yet).
    scratch: AtomicU64,
}

impl Default for Shadow {
    fn default() -> Self {
        Shadow {
            generation: AtomicU64::new(0),
            in_run: std::array::from_fn(|_| AtomicBool::new(false)),
            loaded: std::array::from_fn(|_| AtomicU64::new(0)),
            thread: std::array::from_fn(|_| AtomicU64::new(0)),
            reloads: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            flush_ns: AtomicU64::new(0),
            invalidations: AtomicU64::new(0),
            invalidate_ns: AtomicU64::new(0),
            vm_fd: std::sync::atomic::AtomicI32::new(-1),
            scratch: AtomicU64::new(0),
        }
    }
}

impl std::fmt::Debug for Shadow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shadow")
            .field("generation", &self.generation.load(SeqCst))
            .field("reloads", &self.reloads.load(SeqCst))
            .finish()
    }
}

impl Shadow {
    /// The page tables changed: returns the generation every vCPU must reach.
    pub fn bump(&self) -> u64 {
        self.generation.fetch_add(1, SeqCst) + 1
    }

    /// The VM whose vCPUs this tracks (a forked child has a new one).
    pub fn set_vm(&self, fd: i32) {
        self.vm_fd.store(fd, SeqCst);
        self.scratch.store(0, SeqCst);
    }

    /// Makes KVM drop its shadow page tables (see `sys::kvm::place_scratch_slot`); `host` is a page of
    /// guest memory to back the scratch memslot.
    pub fn flush(&self, host: u64) {
        let fd = self.vm_fd.load(SeqCst);
        if fd < 0 {
            return;
        }
        let t0 = Instant::now();
        // The scratch slot moves between two pages below the thunks (never mapped in the guest):
        // one memslot update per flush.
        let at = self.scratch.load(SeqCst);
        let r = if at == 0 {
            crate::sys::kvm::place_scratch_slot(fd, 7, 0x1000, host)
                .and_then(|()| crate::sys::kvm::place_scratch_slot(fd, 7, 0x2000, host))
                .map(|()| 0x2000)
        } else {
            let to = if at == 0x1000 { 0x2000 } else { 0x1000 };
            crate::sys::kvm::place_scratch_slot(fd, 7, to, host).map(|()| to)
        };
        match r {
            Ok(to) => self.scratch.store(to, SeqCst),
            Err(e) => crate::diag!("multios lwk: dropping KVM's shadow page tables: {e}"),
        }
        self.flushes.fetch_add(1, SeqCst);
        self.flush_ns.fetch_add(t0.elapsed().as_nanos() as u64, SeqCst);
    }

    /// Makes KVM drop its shadow entries of `[addr, addr+len)` (`sys::invalidate_shadow`, see
    /// `syscall/protect.rs` for when that is safe); false when the host refused.
    pub fn invalidate(&self, addr: u64, len: u64) -> bool {
        let t0 = Instant::now();
        let ok = crate::sys::invalidate_shadow(addr, len as usize).is_ok();
        self.invalidations.fetch_add(1, SeqCst);
        self.invalidate_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, SeqCst);
        ok
    }

    /// Range invalidations so far and their total time.
    pub fn invalidations(&self) -> (u64, Duration) {
        (
            self.invalidations.load(SeqCst),
            Duration::from_nanos(self.invalidate_ns.load(SeqCst)),
        )
    }

    /// Flushes so far and their total time.
    pub fn flushes(&self) -> (u64, Duration) {
        (
            self.flushes.load(SeqCst),
            Duration::from_nanos(self.flush_ns.load(SeqCst)),
        )
    }

    /// CR3 reloads so far.
    pub fn reloads(&self) -> u64 {
        self.reloads.load(SeqCst)
    }

    /// vCPU `id` was created (its CR3 freshly set) by the calling thread.
    pub fn created(&self, id: usize) {
        if let Some(l) = self.loaded.get(id) {
            l.store(self.generation.load(SeqCst), SeqCst);
        }
    }

    /// vCPU `id` is about to enter KVM_RUN on the calling thread: reloads its CR3 if the tables
    /// changed since it last did. `io_exit`: its last exit was an I/O exit, to be completed
    /// before its state changes. Pair with [`Shadow::leave`].
    pub fn enter(&self, id: usize, vcpu: &mut VcpuFd, io_exit: bool) {
        let (Some(run), Some(loaded), Some(thread)) =
            (self.in_run.get(id), self.loaded.get(id), self.thread.get(id))
        else {
            return;
        };
        if thread.load(SeqCst) == 0 {
            // A vCPU keeps its thread (ids are not reused; `forked` starts over).
            thread.store(crate::sys::gettid() as u64, SeqCst);
        }
        // Set before the generation is read: a shootdown that bumps it afterwards sees this vCPU
        // in the run and waits for it.
        run.store(true, SeqCst);
        let g = self.generation.load(SeqCst);
        if loaded.load(SeqCst) < g {
            if reload(vcpu, io_exit).is_ok() {
                self.reloads.fetch_add(1, SeqCst);
            }
            loaded.store(g, SeqCst);
        }
    }

    /// vCPU `id` left KVM_RUN.
    pub fn leave(&self, id: usize) {
        if let Some(r) = self.in_run.get(id) {
            r.store(false, SeqCst);
        }
    }

    /// True when vCPU `id` ran with older tables than the current ones (a fault it took may be
    /// spurious: [`Shadow::enter`] reloads before it retries).
    pub fn stale(&self, id: usize) -> bool {
        self.loaded
            .get(id)
            .is_some_and(|l| l.load(SeqCst) < self.generation.load(SeqCst))
    }

    /// Waits until no vCPU runs guest code with tables older than generation `g`, kicking out of
    /// KVM_RUN those that do. A vCPU outside KVM_RUN reloads when it next enters it.
    pub fn shoot_down(&self, g: u64) {
        let t0 = Instant::now();
        let mut round = 0u32;
        loop {
            let mut waiting = false;
            for id in 0..MAX {
                if self.in_run[id].load(SeqCst) && self.loaded[id].load(SeqCst) < g {
                    waiting = true;
                    let t = self.thread[id].load(SeqCst);
                    // Kick again every 64 rounds: one that lands just before KVM_RUN is lost.
                    if t != 0 && round.is_multiple_of(64) {
                        crate::sys::kick_tid(t as i32);
                    }
                }
            }
            if !waiting || t0.elapsed() > PATIENCE {
                return;
            }
            round = round.wrapping_add(1);
            std::hint::spin_loop();
            if round > 4096 {
                std::thread::yield_now();
            }
        }
    }

    /// In a forked child: only vCPU `id`, the calling thread's, exists (freshly created).
    pub fn forked(&self, id: usize) {
        for r in &self.in_run {
            r.store(false, SeqCst);
        }
        for t in &self.thread {
            t.store(0, SeqCst);
        }
        self.created(id);
    }
}

/// Reloads a vCPU's CR3 (KVM_SET_SREGS with its own values), after completing the I/O exit it is
/// in, if any (the KVM API's rule before changing vCPU state).
fn reload(vcpu: &mut VcpuFd, io_exit: bool) -> Result<(), kvm_ioctls::Error> {
    if io_exit {
        // An immediate-exit KVM_RUN completes a pending I/O exit without running guest code.
        vcpu.set_kvm_immediate_exit(1);
        let _ = vcpu.run();
        vcpu.set_kvm_immediate_exit(0);
    }
    let s = vcpu.get_sregs()?;
    vcpu.set_sregs(&s)
}
