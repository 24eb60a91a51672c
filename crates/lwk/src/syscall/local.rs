//! The calls the LWK serves itself.

#![allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case

use super::ENOSYS;
use crate::kernel::{lock, Ctx, ExitStatus, Kernel, Reply};
use crate::mm::{Effects, MmError};
use crate::sys;
use libc::*;

const ARCH_SET_GS: u64 = 0x1001;
const ARCH_SET_FS: u64 = 0x1002;
const ARCH_GET_FS: u64 = 0x1003;
const ARCH_GET_GS: u64 = 0x1004;
/// statfs f_type of hugetlbfs.
const HUGETLBFS_MAGIC: i64 = 0x9584_58f6;

fn err(e: i32) -> Reply {
    Reply::Ret(-(e as i64))
}

impl Kernel {
    pub(super) fn local(&self, ctx: Ctx<'_>, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        // Protection keys: the guest has none but key 0 (its page tables carry no key bits).
        // pkey_alloc answers what the host answers when that is an error (EINVAL on this VM, whose
        // kernel does not enable them), ENOSPC (no key free) when the host could allocate one;
        // pkey_free EINVAL; pkey_mprotect with key -1 is mprotect, with any other key EINVAL
        // (never allocated).
        let nr = match nr as i64 {
            SYS_pkey_alloc => {
                let r = sys::raw_syscall(nr, a);
                if r >= 0 {
                    sys::raw_syscall(SYS_pkey_free as u64, [r as u64, 0, 0, 0, 0, 0]);
                    return err(ENOSPC);
                }
                return Reply::Ret(r);
            }
            SYS_pkey_free => return err(EINVAL),
            SYS_pkey_mprotect if a[3] as i32 != -1 => return err(EINVAL),
            SYS_pkey_mprotect => SYS_mprotect as u64,
            _ => nr,
        };
        if matches!(ctx, Ctx::Proxy)
            && nr as i64 == SYS_mprotect
            && self.live_threads.load(std::sync::atomic::Ordering::Acquire) > 1
        {
            // mprotect may take access away; where the host refuses to drop only the range's
            // shadow entries (`protect.rs`), a multi-threaded guest has every shadow table
            // dropped and every vCPU reload its CR3 before the call returns: served on the
            // calling vCPU's own thread (a doorbell exit), its reload needs no kick out of
            // KVM_RUN, which costs more on this KVM. The other edits are made while the caller
            // spins in its stub (`syscall/protect.rs` says why that is safe).
            return Reply::NeedVcpu;
        }
        // One address-space change at a time, whole (`AddressSpace::map`).
        let _map = matches!(
            nr as i64,
            SYS_brk
                | SYS_mmap
                | SYS_munmap
                | SYS_mremap
                | SYS_mprotect
                | SYS_madvise
                | SYS_shmat
                | SYS_shmdt
                | SYS_mseal
        )
        .then(|| lock(&self.space.map));
        if _map.is_some() && !matches!(nr as i64, SYS_mprotect | SYS_mseal) {
            // Free memory may change: the next mappings are foreseen again (`next.rs`).
            self.next.changed();
        }
        match nr as i64 {
            SYS_brk => {
                let mut fx = Effects::default();
                let (old, r) = {
                    let mut mm = lock(&self.space.mm);
                    (mm.brk_cur, mm.brk(a[0], &mut fx))
                };
                self.apply(fx);
                self.sync_protections(old.min(r), old.max(r).saturating_add(crate::mm::PAGE));
                if r > old {
                    self.populate_new(old, r, crate::atmap::New::Break);
                }
                Reply::Ret(r as i64)
            }
            SYS_mmap => self.mmap(a),
            SYS_shmat => self.shmat(a),
            SYS_shmdt => self.shmdt(a[0]),
            SYS_munmap => {
                // A sealed page anywhere in the range: nothing is unmapped (`mseal.rs`).
                if a[0].is_multiple_of(crate::mm::PAGE) && a[1] != 0 && self.sealed(a[0], a[1]) {
                    return err(EPERM);
                }
                if let Err(e) = self.unshare(a[0], a[1]) {
                    return Reply::Ret(e);
                }
                Reply::Ret(self.release(a[0], a[1]).map_or_else(MmError::errno, |_| 0))
            }
            SYS_mremap => {
                let mut fx = Effects::default();
                // Linux's flag checks first; MREMAP_DONTUNMAP is not served (it was ignored: the
                // old address came back as the new one, and the caller's munmap of the old
                // range took its data).
                let known = (MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP) as u64;
                if a[3] & !known != 0 {
                    return err(EINVAL);
                }
                // A sealed source (grown, shrunk or moved) or a sealed destination: EPERM.
                let fixed = a[3] & MREMAP_FIXED as u64 != 0;
                if a[0].is_multiple_of(crate::mm::PAGE)
                    && a[2] != 0
                    && (self.sealed(a[0], a[1]) || (fixed && self.sealed(a[4], a[2])))
                {
                    return err(EPERM);
                }
                if a[3] & MREMAP_DONTUNMAP as u64 != 0 {
                    return self.refuse(nr, "mremap with MREMAP_DONTUNMAP");
                }
                if fixed {
                    return self.mremap_fixed(nr, a);
                }
                if self.overlaps_shared(a[0], a[1]) {
                    return self.mremap_shared(nr, a);
                }
                let r =
                    lock(&self.space.mm).mremap(a[0], a[1], a[2], a[3] & MREMAP_MAYMOVE as u64 != 0, &mut fx);
                self.apply(fx);
                if let Ok(new) = r {
                    self.note_remap(a[0], a[1], new, a[2]);
                    self.sync_protections(a[0], a[0].saturating_add(a[1].max(a[2])));
                    self.sync_protections(new, new.saturating_add(a[2]));
                }
                Reply::Ret(r.map_or_else(MmError::errno, |v| v as i64))
            }
            SYS_msync => self.msync(a),
            SYS_mprotect if lock(&self.space.mm).in_window(a[0], a[1]) => {
                if !a[0].is_multiple_of(crate::mm::PAGE) {
                    return err(EINVAL);
                }
                if a[1] != 0 && self.sealed(a[0], a[1]) {
                    return err(EPERM);
                }
                if let Err(e) = self.share_protect(a[0], a[1], a[2] as i32) {
                    return Reply::Ret(e);
                }
                self.note_protect(a[0], a[1], a[2] as i32);
                self.sync_protections_kept(a[0], a[0].saturating_add(a[1]));
                Reply::Ret(0)
            }
            SYS_mprotect | SYS_mlock | SYS_munlock => {
                Reply::Ret(if lock(&self.space.mm).in_window(a[0], a[1]) {
                    0
                } else {
                    -(ENOMEM as i64)
                })
            }
            SYS_mlockall | SYS_munlockall => Reply::Ret(0),
            // Linux's checks, then the advice (`madvise.rs`).
            SYS_madvise => self.madvise(nr, a),
            SYS_mincore => self.mincore(a),
            SYS_mseal => self.mseal(a),
            SYS_arch_prctl => self.arch_prctl(ctx, a),
            SYS_getpid => Reply::Ret(self.pid() as i64),
            SYS_personality => {
                // Kept and reported as Linux does (setarch sets it, then execs); the LWK's layout
                // is the same whatever the flags: it has no address randomization to turn off.
                let old = self.persona.load(std::sync::atomic::Ordering::Relaxed);
                if a[0] as u32 != u32::MAX {
                    self.persona
                        .store(a[0] & 0xffff_ffff, std::sync::atomic::Ordering::Relaxed);
                }
                Reply::Ret(old as i64)
            }
            SYS_gettid => Reply::Ret(self.tid(cpu) as i64),
            SYS_set_tid_address => {
                if let Some(t) = lock(&self.threads).get_mut(cpu) {
                    t.clear_child_tid = (a[0] != 0).then_some(a[0]);
                }
                Reply::Ret(self.tid(cpu) as i64)
            }
            SYS_set_robust_list => self.set_robust_list(cpu, a),
            SYS_get_robust_list => self.get_robust_list(cpu, a),
            SYS_rseq => Reply::Ret(ENOSYS),
            SYS_getppid => Reply::Ret(sys::raw_syscall(nr, a)),
            SYS_getuid | SYS_geteuid | SYS_getgid | SYS_getegid => Reply::Ret(sys::raw_syscall(nr, a)),
            SYS_sched_yield => Reply::Ret(0),
            SYS_sched_getaffinity => self.sched_getaffinity(cpu, a),
            SYS_sysinfo => self.sysinfo(a),
            SYS_sched_setaffinity => self.sched_setaffinity(cpu, a),
            SYS_getcpu => self.getcpu(cpu, a),
            SYS_getpriority | SYS_setpriority => self.priority(cpu, nr, a),
            SYS_sched_getscheduler
            | SYS_sched_setscheduler
            | SYS_sched_getparam
            | SYS_sched_setparam
            | SYS_sched_rr_get_interval => self.sched_policy(cpu, nr, a),
            SYS_sched_setattr | SYS_sched_getattr => self.sched_attr(cpu, nr, a),
            // Credentials are per thread in the kernel: glibc's wrappers change every VMM thread's
            // (proxy and vCPUs alike), as they would every thread of the guest.
            SYS_setuid | SYS_setgid | SYS_setreuid | SYS_setregid | SYS_setresuid | SYS_setresgid => {
                Reply::Ret(sys::set_ids(nr, a))
            }
            SYS_setgroups => {
                let n = a[0] as usize;
                if n > 65536 {
                    return err(EINVAL);
                }
                let mut raw = vec![0u8; 4 * n];
                if self.mem.read_user(a[1], &mut raw).is_err() {
                    return err(EFAULT);
                }
                let groups: Vec<u32> = raw
                    .chunks_exact(4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                Reply::Ret(sys::set_groups(&groups))
            }
            SYS_uname => {
                // The host writes it: checked as the guest may write (not only inside the window).
                if !self.mem.user_can(a[0], 390, true) {
                    return err(EFAULT);
                }
                Reply::Ret(sys::raw_syscall(nr, a))
            }
            SYS_readlink | SYS_readlinkat => match self.readlink_own_exe(nr, &a) {
                Some(r) => r,
                None => self.delegate(nr, a),
            },
            SYS_exit | SYS_exit_group => match ctx {
                Ctx::Proxy => Reply::NeedVcpu,
                Ctx::Vcpu(_) => self.exit(cpu, nr as i64 == SYS_exit_group, a[0] as i32 & 0xff),
            },
            SYS_rt_sigaction => self.sigaction(a),
            SYS_rt_sigprocmask => self.sigprocmask(cpu, a),
            SYS_rt_sigpending => self.sigpending(cpu, a),
            SYS_rt_sigsuspend | SYS_pause => match ctx {
                Ctx::Proxy => Reply::NeedVcpu,
                Ctx::Vcpu(_) => self.sigsuspend(cpu, nr, a),
            },
            SYS_rt_sigtimedwait => match ctx {
                Ctx::Proxy => Reply::NeedVcpu,
                Ctx::Vcpu(_) => self.sigtimedwait(cpu, a),
            },
            SYS_sigaltstack => self.sigaltstack(cpu, a),
            SYS_signalfd | SYS_signalfd4 => self.signalfd4(nr, a),
            SYS_kill | SYS_tkill | SYS_tgkill => self.kill(ctx, cpu, nr, a),
            SYS_rt_sigqueueinfo | SYS_rt_tgsigqueueinfo => self.sigqueueinfo(ctx, cpu, nr, a),
            SYS_timer_create => self.timer_create(nr, a),
            SYS_timer_delete => self.timer_delete(nr, a),
            SYS_pidfd_send_signal => self.pidfd_send_signal(ctx, cpu, nr, a),
            SYS_prctl => self.prctl(ctx, cpu, a),
            SYS_clone | SYS_clone3 => match ctx {
                Ctx::Proxy => Reply::NeedVcpu,
                Ctx::Vcpu(_) => self.clone_call(nr, a),
            },
            SYS_execve | SYS_execveat => self.execve(ctx, cpu, nr, a),
            SYS_fork | SYS_vfork => match ctx {
                Ctx::Proxy => Reply::NeedVcpu,
                Ctx::Vcpu(_) => Reply::Fork(crate::kernel::CloneReq {
                    vfork: nr as i64 == SYS_vfork,
                    ..Default::default()
                }),
            },
            // The children are real processes (forked VMMs): waiting for them is Linux's business.
            SYS_wait4 | SYS_waitid => self.delegate_interruptibly(cpu, nr, a),
            SYS_rt_sigreturn => match ctx {
                Ctx::Proxy => Reply::NeedVcpu,
                Ctx::Vcpu(v) => self.sigreturn(cpu, v, self.caller_rsp(cpu)),
            },
            _ => self.refuse(nr, "no local handler"),
        }
    }

    /// Gives `[addr, addr+len)` back to the memory manager (munmap, or undoing a mapping whose
    /// second half failed) and applies what that requires.
    pub(super) fn release(&self, addr: u64, len: u64) -> Result<(), MmError> {
        let mut fx = Effects::default();
        let r = lock(&self.space.mm).munmap(addr, len, &mut fx);
        self.apply(fx);
        if r.is_ok() {
            self.note_unmap(addr, len);
            self.sync_protections(addr, addr.saturating_add(len));
        }
        r
    }

    /// Zeroes and copies guest memory as a memory call requires.
    pub(super) fn apply(&self, fx: Effects) {
        if let Some((from, to, len)) = fx.copy {
            let mut buf = vec![0u8; len as usize];
            self.mem.read(from, &mut buf);
            self.mem.write(to, &buf);
        }
        for (a, l) in fx.zero {
            self.mem.zero(a, l);
            self.next.dropped(a, a.saturating_add(l));
        }
    }

    fn mmap(&self, a: [u64; 6]) -> Reply {
        let (addr, len, prot, flags, fd, off) = (a[0], a[1], a[2] as i32, a[3] as i32, a[4] as i32, a[5]);
        let anon = flags & MAP_ANONYMOUS != 0;
        let shared = !anon && flags & MAP_SHARED != 0;
        if !anon && (fd < 0 || fd >= self.fd_floor) {
            return err(EBADF);
        }
        if off % 4096 != 0 {
            return err(EINVAL);
        }
        // The file is mapped through a duplicate above the floor, made under `sys::low_fds`: the
        // guest's number, looked up again by every host call below, could otherwise name a VMM
        // descriptor on its way above the floor — a new vCPU's, whose mmap is its `kvm_run` page
        // with the registers the vCPU's next entry loads (issue #16).
        let pinned = if anon {
            None
        } else {
            let _low = sys::low_fds();
            match sys::dup_high(fd, self.fd_floor) {
                Ok(o) => Some(o),
                Err(_) => return err(EBADF),
            }
        };
        let fd = pinned.as_ref().map_or(fd, std::os::fd::AsRawFd::as_raw_fd);
        // A procfs file the LWK answered (its own maps, status…) is a memfd, which the host could
        // map; Linux maps no procfs file of that kind (ENODEV).
        if !anon && super::opened::is_procfs_answer(fd) {
            return err(ENODEV);
        }
        let fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0;
        let huge = anon && flags & MAP_HUGETLB != 0;
        // A file of hugetlbfs is mapped with its 2 MiB pages, at a 2 MiB-aligned address.
        let huge_file = shared && sys::fs_type(fd).ok() == Some(HUGETLBFS_MAGIC);
        let len = if huge_file {
            len.div_ceil(crate::memory::PAGE_2M) * crate::memory::PAGE_2M
        } else {
            len
        };
        if huge {
            if let Some(r) = self.hugetlb_refused(flags, addr, fixed) {
                return r;
            }
        }
        if shared {
            // Kernel objects the LWK serves itself (io_uring rings: `uring.rs`), found by the
            // guest's number (a ring's memory is the VMM's region, not the file's mapping).
            if let Some(r) = self.mmap_kernel_object(a) {
                return r;
            }
        }
        let rewriting = lock(&self.program.thunks).is_some();
        let mut fx = Effects::default();
        let r = {
            let mut mm = lock(&self.space.mm);
            if flags & MAP_FIXED_NOREPLACE != 0 && !mm.maps.is_free(addr, addr.saturating_add(len)) {
                return err(EEXIST);
            }
            if (huge || huge_file) && !fixed {
                mm.mmap_aligned(len, crate::memory::PAGE_2M)
            } else if rewriting && !anon && !shared && !fixed {
                // Files (libraries) go low, within rel32 reach of the thunk page.
                mm.mmap_low(len)
            } else {
                mm.mmap(addr, len, fixed, &mut fx)
            }
        };
        let addr = match r {
            Ok(v) => v,
            Err(e) => {
                if e == crate::mm::MmError::NoMemory {
                    let window = lock(&self.space.mm).window;
                    no_room_note(len, window.1 - window.0);
                }
                return Reply::Ret(e.errno());
            }
        };
        if let Err(e) = self.unshare(addr, len) {
            return Reply::Ret(e);
        }
        self.apply(fx);
        if anon && (huge || flags & MAP_SHARED != 0) {
            // MAP_SHARED anonymous memory (shared with forked children) and MAP_HUGETLB pages
            // are host mappings of their own over the range (`shared.rs`).
            let len = if huge {
                len.div_ceil(crate::memory::PAGE_2M) * crate::memory::PAGE_2M
            } else {
                len
            };
            let r = self.map_anonymous_special(addr, len, flags & MAP_SHARED != 0, huge);
            if !matches!(r, Reply::Ret(v) if v >= 0) {
                self.release(addr, len).ok();
            } else {
                self.note_map(addr, len, prot, flags & MAP_SHARED != 0, None, 0);
                self.sync_protections(addr, addr.saturating_add(len));
            }
            return r;
        }
        if shared {
            let r = self.map_shared(addr, len, prot, fd, off);
            if !matches!(r, Reply::Ret(v) if v >= 0) {
                self.release(addr, len).ok();
            } else {
                self.note_map(addr, len, prot, true, Some(fd), off);
                self.sync_protections(addr, addr.saturating_add(len));
            }
            return r;
        }
        if !anon && prot & PROT_EXEC == 0 {
            // The host's copy-on-write mapping of the file (`shared.rs`); a file the host cannot
            // map is refused as Linux refuses it (it was copied with pread: /proc/self/status
            // mapped where Linux says ENODEV, a socket left a hole that killed the VMM).
            if let Err(e) = self.map_private_file(addr, len, fd, off) {
                self.release(addr, len).ok();
                return Reply::Ret(e);
            }
        } else if !anon && prot & PROT_EXEC != 0 && self.map_code(addr, len, fd, off) {
            // Code: the host's copy-on-write mapping too, rewritten in place (issue #15).
        } else if !anon {
            // A private copy of the file: pread into the (zeroed) range, the tail stays zero.
            // Executable mappings are copies: the LWK rewrites their syscall sites.
            let mut done = 0u64;
            while done < len {
                let n = sys::raw_syscall(
                    SYS_pread64 as u64,
                    [fd as u64, addr + done, len - done, off + done, 0, 0],
                );
                if n < 0 {
                    self.release(addr, len).ok();
                    return Reply::Ret(n);
                }
                if n == 0 {
                    break;
                }
                done += n as u64;
            }
            if prot & PROT_EXEC != 0 {
                if let Some(t) = lock(&self.program.thunks).as_mut() {
                    // Decoding starts at the library's function starts (`loader/ehframe.rs`).
                    let starts = sys::MappedFile::of_fd(fd)
                        .map(|f| crate::loader::ehframe::starts_in_mapping(f.bytes(), off, addr, done))
                        .unwrap_or_default();
                    let n = crate::rewrite::rewrite_from(&self.mem, t, addr, done, &starts);
                    self.program
                        .rewritten
                        .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
        if anon && self.prefault && prot & PROT_WRITE != 0 {
            // `--prefault` (Multiverse's Fig. 12 change): the host pages behind the range are
            // allocated now, in one call, instead of by one fault per first touch of the guest.
            let _ = sys::madvise(addr, len as usize, MADV_POPULATE_WRITE);
        } else if anon && prot & PROT_WRITE != 0 {
            // `--populate-at-map`: the head of the range made now; `--populate`: the rest by the
            // proxy before the guest touches it.
            self.populate_new(addr, addr.saturating_add(len), crate::atmap::New::Map(flags));
        }
        let file = (!anon).then_some(fd);
        self.note_map(addr, len, prot, flags & MAP_SHARED != 0, file, off);
        self.sync_protections(addr, addr.saturating_add(len));
        Reply::Ret(addr as i64)
    }

    fn arch_prctl(&self, ctx: Ctx<'_>, a: [u64; 6]) -> Reply {
        let Ctx::Vcpu(vcpu) = ctx else {
            return Reply::NeedVcpu;
        };
        let Ok(mut sregs) = vcpu.get_sregs() else {
            return err(EIO);
        };
        match a[0] {
            ARCH_SET_GS if lock(&self.program.thunks).is_some() => self.refuse(
                SYS_arch_prctl as u64,
                "ARCH_SET_GS: the LWK keeps each vCPU's stub address in GS for rewritten syscall \
                 sites (run with --no-rewrite-syscalls to allow it)",
            ),
            ARCH_SET_GS => {
                sregs.gs.base = a[1];
                Reply::Ret(if vcpu.set_sregs(&sregs).is_ok() {
                    0
                } else {
                    -(EIO as i64)
                })
            }
            ARCH_SET_FS => {
                sregs.fs.base = a[1];
                Reply::Ret(if vcpu.set_sregs(&sregs).is_ok() {
                    0
                } else {
                    -(EIO as i64)
                })
            }
            ARCH_GET_FS | ARCH_GET_GS => {
                // With rewriting, GS holds the stub address, not anything the program set.
                let gs = if lock(&self.program.thunks).is_some() {
                    0
                } else {
                    sregs.gs.base
                };
                let v = if a[0] == ARCH_GET_FS { sregs.fs.base } else { gs };
                Reply::Ret(self.mem.write_user_u64(a[1], v).err().unwrap_or(0))
            }
            _ => err(EINVAL),
        }
    }

    /// exit (one thread) or exit_group (the process).
    fn exit(&self, cpu: usize, group: bool, code: i32) -> Reply {
        // Under the address-space lock: the thread count falls and the clear-child-tid word is
        // written in one step, so no mprotect sees one thread left (and is served on the proxy,
        // above) while the VMM still has that word to write.
        let _map = lock(&self.space.map);
        // Linux's exit_robust_list, before the clear-child-tid wake (a joiner may lock next).
        self.exit_robust_list(cpu);
        let (ctid, last) = {
            let mut t = lock(&self.threads);
            let ctid = t.get_mut(cpu).and_then(|t| {
                t.alive = false;
                t.clear_child_tid
            });
            let last = self
                .live_threads
                .fetch_sub(1, std::sync::atomic::Ordering::AcqRel)
                == 1;
            (ctid, last)
        };
        if group || last {
            lock(&self.exit).get_or_insert(ExitStatus::Code(code));
            return Reply::Stop;
        }
        if let Some(addr) = ctid.filter(|&a| self.mem.in_app(a, 4)) {
            // CLONE_CHILD_CLEARTID: what pthread_join waits for (Linux's put_user, its failure
            // ignored: not into a page the guest may not write).
            let _ = self.mem.write_user_u32(addr, 0);
            sys::raw_syscall(
                SYS_futex as u64,
                [addr, FUTEX_WAKE as u64, i32::MAX as u64, 0, 0, 0],
            );
        }
        Reply::ThreadExit
    }
}

/// Says once on stderr that a guest mmap found no room in the application window: the program
/// gets ENOMEM (as an LWK with a fixed partition answers), where natively the same call may have
/// succeeded, and the fix is a larger `--mem-mib`.
fn no_room_note(len: u64, window: u64) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        crate::diag!(
            "multios lwk: note: the program's mmap of {} MiB found no room in the guest's {} MiB of \
             application memory and got ENOMEM; natively it may have succeeded: give --mem-mib more \
             (at most 65532)",
            len.div_ceil(1 << 20),
            window >> 20
        );
    }
}
