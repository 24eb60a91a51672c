//! fork, vfork and clone of a new process: the VMM process forks.
//!
//! Guest memory is the VMM's own private anonymous memory (guest-physical == host-virtual), so
//! `fork(2)` of the VMM gives the child a copy-on-write copy of the whole guest — page tables,
//! stubs and thunks included — and shares its MAP_SHARED file mappings, exactly the memory
//! semantics of fork. What the child cannot inherit is KVM: a VM belongs to the process that
//! created it. So the child makes a new VM over the same addresses and a new vCPU 0 with the
//! parent's registers at the call (rax = 0, FPU/SSE/AVX state from XSAVE), starts its own proxy
//! and signal pump, and goes on. The parent gets the child's pid; the child is a real Linux
//! process, so wait4/waitid are delegated, and it exits with its guest's status (or dies by the
//! same signal). vfork and posix_spawn's clone(CLONE_VM|CLONE_VFORK) are served as fork: the
//! child works on a copy it only uses until it execs, and the parent waits for that and gets
//! back what the child wrote above its stack pointer (`crate::vfork`).
//!
//! Any guest thread may fork, as in Linux: the child is a copy of that thread alone (its registers,
//! TLS, signal mask and alternate stack), which becomes the child's vCPU 0; the host thread that
//! served the call goes on as the child's only VMM thread besides its new proxy and pump.
//!
//! Limits: the busiest LWK locks (threads,
//! pending signals, statistics) are held across the fork, so no other VMM thread holds them at
//! that instant; another lock held then (another vCPU's thread in the middle of an LWK-local call
//! such as mmap) would stay locked in the child — the same hazard as a multi-threaded program's
//! own locks across fork.

use super::{lock, End, Machine};
use crate::kernel::{CloneReq, ExitStatus};
use crate::proxy::Proxy;
use crate::slot;
use crate::stub;
use crate::vcpu::{self, Entry};
use kvm_ioctls::VcpuFd;
use multios_lwk_abi::state;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Machine {
    /// Serves a process-creating call of vCPU `id` (after a doorbell exit).
    pub(super) fn fork_process(self: &Arc<Self>, id: u64, vcpu: &mut VcpuFd, req: CloneReq) -> Option<End> {
        let slot = stub::slot_addr(id);
        crate::signal::deliver::settle(vcpu);
        let (Ok(regs), Ok(sregs), Ok(xsave)) = (vcpu.get_regs(), vcpu.get_sregs(), vcpu.get_xsave()) else {
            slot::reply(&self.kernel.mem, slot, -(libc::EIO as i64));
            return None;
        };
        // vfork: the handshake's sockets and the parent's stack range (`vfork.rs`). Made before
        // the locks below are taken (the sockets take the low-fd lock).
        let vfork = if req.vfork {
            match crate::sys::socketpair_high(crate::fds::floor()) {
                Ok((parent, child)) => Some((parent, child, self.kernel.vfork_span(regs.rsp))),
                Err(e) => {
                    slot::reply(
                        &self.kernel.mem,
                        slot,
                        -(e.raw_os_error().unwrap_or(libc::EAGAIN) as i64),
                    );
                    return None;
                }
            }
        } else {
            None
        };
        // The LWK's busiest locks, taken in the order the LWK nests them and held across fork(2):
        // another VMM thread holding one at that instant would leave it locked forever in the
        // child (seen: the statistics' lock, taken by every call of the other vCPUs).
        // fork(2) write-protects the parent's pages: its TLB flush needs the proxy's CPU idle
        // (`aside.rs`). Asked before the locks, which the proxy may hold while it finishes a call.
        let aside = self.kernel.aside.stand_aside();
        let held = (
            lock(&self.kernel.space.map),
            // Before `threads`, as the signalfds' sync nests them (`signal/sfd.rs`).
            lock(&self.kernel.signals.sfds),
            lock(&self.kernel.threads),
            lock(&self.kernel.signals.pending),
            lock(&self.kernel.stats),
            self.kernel.hold_trace(),
            // A leaf lock: the guest's CPU-time accounts (`guestcpu.rs`), reset in the child.
            self.kernel.guest_cpu.hold_for_fork(),
            // Last: a leaf lock (`sys::low_fds`); a temporary fd half-moved at the fork would
            // be the child's to leak, and the lock would stay taken in the child.
            crate::sys::low_fds(),
        );
        let forked = crate::sys::fork();
        drop(held);
        drop(aside);
        match forked {
            Err(e) => {
                if let Some((parent, child, _)) = vfork {
                    crate::sys::close(parent);
                    crate::sys::close(child);
                }
                slot::reply(
                    &self.kernel.mem,
                    slot,
                    -(e.raw_os_error().unwrap_or(libc::EAGAIN) as i64),
                );
                None
            }
            Ok(pid) if pid > 0 => {
                // CLONE_PIDFD: before the child can run its guest (it first makes a VM) and before
                // a vfork's wait (the child could exit and be reaped in it).
                if let Some(at) = req.pidfd {
                    match self.kernel.child_pidfd(pid) {
                        // Linux's put_user, its failure ignored (checked writable before).
                        Ok(fd) => {
                            let _ = self.mem.write_user_u32(at, fd as u32);
                        }
                        Err(e) => {
                            if let Some((parent, child, _)) = vfork {
                                crate::sys::close(parent);
                                crate::sys::close(child);
                            }
                            slot::reply(&self.kernel.mem, slot, e);
                            return None;
                        }
                    }
                }
                if let Some((parent, child, (lo, hi))) = vfork {
                    // As vfork: this thread waits for the child's exec or exit, and sees what
                    // the child wrote above its stack pointer.
                    crate::sys::close(child);
                    let _ = crate::vfork::wait_for_child(parent, lo, hi, |at, d| self.mem.write(at, d));
                    crate::sys::close(parent);
                }
                if let Some(p) = req.parent_tid {
                    // Linux's put_user, its failure ignored.
                    let _ = self.mem.write_user_u32(p, pid as u32);
                }
                slot::reply(&self.kernel.mem, slot, pid as i64);
                None
            }
            Ok(_) => {
                // The child: this thread is all that is left of the VMM.
                self.kernel
                    .set_vfork_release(vfork.map(|(parent, child, (lo, hi))| {
                        crate::sys::close(parent);
                        crate::vfork::Release { fd: child, lo, hi }
                    }));
                let regs = slot::returned(&self.kernel.mem, slot, regs, 0, req.stack);
                let entry = Entry {
                    rip: regs.rip,
                    rsp: regs.rsp,
                    fs_base: req.tls.unwrap_or(sregs.fs.base),
                    rax: 0,
                    regs: Some(regs),
                };
                if let Err(why) = self.become_child(id, vcpu, entry, &xsave, &req) {
                    crate::diag!("multios lwk: forked child: {why}");
                    crate::sys::exit_now(127);
                }
                slot::state_of(&self.kernel.mem, slot).store(state::IDLE, Ordering::Release);
                // The caller's loop goes on as the child's vCPU 0.
                Some(End::Forked)
            }
        }
    }

    fn become_child(
        self: &Arc<Self>,
        id: u64,
        vcpu: &mut VcpuFd,
        entry: Entry,
        xsave: &kvm_bindings::kvm_xsave,
        req: &CloneReq,
    ) -> Result<(), String> {
        self.forked.store(true, Ordering::Release);
        crate::reserve::disown_in_child();
        let pid = std::process::id() as i32;
        self.kernel.become_child(pid, req.clear_child_tid, id as usize);
        if req.clear_sighand {
            // CLONE_CLEAR_SIGHAND: Linux's flush_signal_handlers, as exec's.
            self.kernel.reset_handlers();
        }
        self.kernel.trace_child();
        // Host threads of the parent that were serving calls do not exist here: never kick them.
        for s in self.kernel.signals.serving.iter() {
            s.store(0, Ordering::Release);
        }
        self.main_thread
            .store(crate::sys::pthread_self(), Ordering::Release);
        if let Some(p) = req.child_tid {
            let _ = self.mem.write_user_u32(p, pid as u32);
        }
        // The parent's other vCPU threads do not exist here: forget their handles without
        // touching them (dropping a JoinHandle would detach a thread of another process).
        std::mem::forget(std::mem::take(&mut *lock(&self.threads)));
        self.nslots.store(1, Ordering::Release);
        self.next_id.store(1, Ordering::Release);
        // The parent's spare vCPUs belong to its VM: closing the child's copies of their fds
        // leaves them to the parent.
        lock(&self.spare).clear();
        // Through the parent's /dev/kvm descriptor, not its path (a chroot or setuid of the
        // guest may have hidden or forbidden it since the start).
        let vm = lock(&self.vm)
            .again(&self.mem, crate::fds::floor())
            .map_err(|e| format!("a new VM: {e}"))?;
        let fresh = vcpu::create(
            &vm.vm,
            &self.mem,
            &self.cpuid,
            0,
            entry,
            self.budget,
            crate::fds::floor(),
        )
        .map_err(|e| format!("a new vCPU: {e}"))?;
        crate::sys::kvm::set_xsave(&fresh, xsave).map_err(|e| format!("KVM_SET_XSAVE: {e}"))?;
        self.mem.shadow.forked(0);
        self.mem.shadow.set_vm(std::os::fd::AsRawFd::as_raw_fd(&vm.vm));
        *vcpu = fresh;
        self.kernel.faults.watch(vcpu);
        *lock(&self.vm) = vm;
        crate::signal::host::forget_event();
        let pump = self.start_signal_pump();
        if pump.is_none() {
            crate::signal::host::unblock_in_this_thread();
        }
        let proxy = self.proxy_cfg.map(|(cpu, idle)| {
            Proxy::start(self.kernel.clone(), self.nslots.clone(), cpu, idle, self.budget)
        });
        *lock(&self.waker) = proxy.as_ref().and_then(Proxy::waker);
        // A child of a child: the previous generation's proxy and pump do not exist here, so
        // their handles must not be dropped (that would join threads that never end).
        let parents = std::mem::replace(&mut *lock(&self.child_threads), (proxy, pump));
        std::mem::forget(parents);
        Ok(())
    }

    /// The end of a forked child: its guest is done; exit with its status, or die by its signal,
    /// without unwinding into the parent's frames (their threads do not exist here).
    pub(super) fn exit_forked_child(&self) -> ! {
        // A vfork child that exits before it execs lets its parent go on (`vfork.rs`).
        self.kernel.release_vfork_parent();
        self.stop_all();
        // Before the process is gone: a waiter in the parent (MAP_SHARED memory) sees the owner
        // died (Linux's exit_robust_list).
        self.kernel.exit_robust_lists();
        self.kernel.finish_trace();
        if let Some(e) = lock(&self.error).take() {
            crate::diag!("multios lwk: {e}");
            crate::sys::die_by_signal(libc::SIGSEGV);
        }
        match self.kernel.exit_status().unwrap_or(ExitStatus::Code(0)) {
            ExitStatus::Code(c) => crate::sys::exit_now(c),
            ExitStatus::Signal(s) => crate::sys::die_by_signal(s),
        }
    }
}
