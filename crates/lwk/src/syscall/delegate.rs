//! Delegated calls: checked, then performed by the serving host thread as a real system call.
//! Pointers need no translation (guest-physical == host-virtual); they only need the check.

#![allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case

use super::check::{check, EFAULT};
use super::layout::{self, Arg, Len};
use crate::kernel::{Kernel, Reply};
use crate::sys;
use libc::*;

/// ioctl TIOCGPTPEER (`_IO('T', 0x41)`): opens a pty master's slave and returns the new fd.
const TIOCGPTPEER: u64 = 0x5441;

impl Kernel {
    pub(super) fn delegate(&self, nr: u64, a: [u64; 6]) -> Reply {
        let layout: &[Arg] = match nr as i64 {
            SYS_ioctl => return self.ioctl(a),
            SYS_fcntl => return self.fcntl(a),
            SYS_semctl => return self.semctl(a),
            SYS_futex => return self.futex(a),
            SYS_close_range => return self.close_range(a),
            SYS_process_vm_readv | SYS_process_vm_writev => return self.process_vm(nr, a),
            // Kernel-shared mappings (issue #14): io_uring (`uring.rs`), perf events (`perf.rs`).
            SYS_io_uring_setup => return self.io_uring_setup(a),
            SYS_io_uring_enter => return self.io_uring_enter(a),
            SYS_io_uring_register => return self.io_uring_register(a),
            SYS_perf_event_open => return self.perf_event_open(a),
            SYS_getrlimit | SYS_setrlimit if a[0] == RLIMIT_NOFILE as u64 => return self.nofile(nr, a),
            SYS_getrlimit | SYS_setrlimit if a[0] == RLIMIT_AS as u64 => {
                return self.address_space_limit(nr, a)
            }
            SYS_prlimit64 if a[1] == RLIMIT_AS as u64 && (a[0] == 0 || self.is_self(a[0] as i32)) => {
                return self.address_space_limit(nr, a)
            }
            SYS_prlimit64 if a[1] == RLIMIT_NOFILE as u64 && (a[0] == 0 || self.is_self(a[0] as i32)) => {
                return self.nofile(nr, a)
            }
            SYS_getrlimit | SYS_setrlimit if a[0] == RLIMIT_DATA as u64 => return self.data_limit(nr, a),
            SYS_prlimit64 if a[1] == RLIMIT_DATA as u64 && (a[0] == 0 || self.is_self(a[0] as i32)) => {
                return self.data_limit(nr, a)
            }
            // Another VMM's own limits are not the guest's to lower (`fdrange.rs`).
            SYS_prlimit64 if self.sets_another_vmms_limit(a) => return Reply::Ret(-(EPERM as i64)),
            SYS_setsockopt if super::sockopt::takes_fprog(a[1] as i32, a[2] as i32) => return self.setsockopt_fprog(a),
            SYS_setsockopt | SYS_getsockopt
                if super::sockopt::refused(a[1] as i32, a[2] as i32, nr as i64 == SYS_setsockopt).is_some() =>
            {
                return self.refuse_sockopt(nr, a)
            }
            // MPOL_F_ADDR: the policy of the page at `addr`, looked up in this process's address
            // space: only the guest's window (the VMM's pages answered, a map of the VMM).
            SYS_get_mempolicy if a[4] & 2 != 0 && !self.mem.in_app(a[3], 1) => return Reply::Ret(EFAULT),
            // mbind acts on the pages of [addr, addr+len) in this process: only the guest's window
            // (Linux: EFAULT for a range not mapped). numpy's OpenBLAS binds its buffers.
            SYS_mbind if a[1] != 0 && !self.mem.in_app(a[0], a[1]) => return Reply::Ret(EFAULT),
            SYS_dup2 | SYS_dup3 if !crate::fds::guest_may_hold(a[1] as i32 as i64) => {
                return Reply::Ret(-(EBADF as i64))
            }
            n => match layout::layout(n) {
                Some(l) => l,
                None => {
                    return self.refuse(
                        nr,
                        "the proxy does not know its argument layout (add it to crates/lwk/src/syscall/layout.rs)",
                    )
                }
            },
        };
        let checked = match super::check::check_call(&self.mem, nr as i64, layout, &a, self.fd_floor) {
            Ok(c) => c,
            Err(e) => return Reply::Ret(e),
        };
        if let Some(e) = self.path_reaches_vmm(nr, &checked.paths) {
            return Reply::Ret(e);
        }
        match nr as i64 {
            SYS_open => return Reply::Ret(self.open_judged(AT_FDCWD, a[0], a[1] as i32, a[2] as u32)),
            SYS_openat => return Reply::Ret(self.open_judged(a[0] as i32, a[1], a[2] as i32, a[3] as u32)),
            SYS_creat => {
                let flags = O_CREAT | O_WRONLY | O_TRUNC;
                return Reply::Ret(self.open_judged(AT_FDCWD, a[0], flags, a[1] as u32));
            }
            _ => {}
        }
        // dup2/dup3 close their target number: not while a VMM thread has a temporary fd there.
        // The calls that create a guest descriptor without waiting for another party take the
        // lowest free number: not while a VMM temporary holds one (it would push the guest's up).
        // And a quick call on a descriptor number (fstat, lseek, fchmod…) must not find a VMM
        // temporary at a number the guest closed (it would act on the VMM's file).
        let low = (matches!(nr as i64, SYS_dup2 | SYS_dup3) || creates_fd_at_once(nr) || quick_on_fd(nr))
            .then(sys::low_fds);
        let r = sys::raw_syscall(nr, checked.args);
        drop(low);
        checked.finish(&self.mem, r);
        if r < 0 {
            return Reply::Ret(r);
        }
        Reply::Ret(self.after_delegated(nr, &a, r))
    }

    /// semctl(semid, semnum, cmd, arg): `arg` is a value or a pointer by `cmd` (its low byte;
    /// glibc adds IPC_64): a semid_ds (104 bytes), a seminfo (40), or an array of `nsems`
    /// unsigned shorts, `nsems` from the set itself (fixed when the set was made; x86-64 takes no
    /// IPC_64 flag). A command the
    /// LWK does not know is EINVAL, as for Linux.
    fn semctl(&self, a: [u64; 6]) -> Reply {
        const IPC_RMID: u64 = 0;
        const IPC_SET: u64 = 1;
        const IPC_STAT: u64 = 2;
        const IPC_INFO: u64 = 3;
        const GETPID: u64 = 11;
        const GETVAL: u64 = 12;
        const GETALL: u64 = 13;
        const GETNCNT: u64 = 14;
        const GETZCNT: u64 = 15;
        const SETVAL: u64 = 16;
        const SETALL: u64 = 17;
        const SEM_STAT: u64 = 18;
        const SEM_INFO: u64 = 19;
        const SEM_STAT_ANY: u64 = 20;
        let (cmd, arg) = (a[2] & 0xff, a[3]);
        let (len, written) = match cmd {
            IPC_RMID | GETPID | GETVAL | GETNCNT | GETZCNT | SETVAL => (0, false),
            IPC_SET => (104, false),
            IPC_STAT | SEM_STAT | SEM_STAT_ANY => (104, true),
            IPC_INFO | SEM_INFO => (40, true),
            GETALL | SETALL => {
                // struct semid64_ds: sem_nsems at byte 80.
                let mut ds = [0u8; 104];
                let r = sys::raw_syscall(
                    SYS_semctl as u64,
                    [a[0], 0, IPC_STAT, ds.as_mut_ptr() as u64, 0, 0],
                );
                if r < 0 {
                    return Reply::Ret(r);
                }
                let nsems = u64::from_le_bytes(ds[80..88].try_into().unwrap_or([0; 8]));
                (nsems.saturating_mul(2), cmd == GETALL)
            }
            _ => return Reply::Ret(-(EINVAL as i64)),
        };
        if len > 0 && !self.mem.user_can(arg, len, written) {
            return Reply::Ret(EFAULT);
        }
        Reply::Ret(sys::raw_syscall(SYS_semctl as u64, a))
    }

    /// A socket option whose value holds a pointer the kernel follows (`sockopt.rs`): ENOPROTOOPT,
    /// reported once per option.
    fn refuse_sockopt(&self, nr: u64, a: [u64; 6]) -> Reply {
        let set = nr as i64 == SYS_setsockopt;
        let name = super::sockopt::refused(a[1] as i32, a[2] as i32, set).unwrap_or("?");
        let key = 0x2_0000_0000 | u64::from(set) << 32 | (a[1] & 0xffff) << 16 | (a[2] & 0xffff);
        if crate::kernel::lock(&self.reported).insert(key) {
            self.note(format!(
                "socket option {name}: its value holds a pointer, or a count, that would take the \
                 kernel outside the buffer the proxy checked; returning ENOPROTOOPT"
            ));
        }
        Reply::Ret(-(ENOPROTOOPT as i64))
    }

    /// setsockopt with a `struct sock_fprog { u16 len; struct sock_filter *filter; }`: the
    /// program (8 bytes an instruction) must lie in the window; the kernel reads copies of both.
    fn setsockopt_fprog(&self, a: [u64; 6]) -> Reply {
        if a[0] as i32 >= self.fd_floor {
            return Reply::Ret(-(EBADF as i64));
        }
        // Linux takes exactly a sock_fprog (EINVAL otherwise).
        if a[4] != 16 {
            return Reply::Ret(-(EINVAL as i64));
        }
        if !self.mem.user_can(a[3], 16, false) {
            return Reply::Ret(EFAULT);
        }
        let len = u64::from(self.mem.read_u64(a[3]) as u16);
        let filter = self.mem.read_u64(a[3] + 8);
        if len > 0 && !self.mem.user_can(filter, len * 8, false) {
            return Reply::Ret(EFAULT);
        }
        let mut insns = vec![0u8; (len * 8) as usize];
        if len > 0 {
            self.mem.read(filter, &mut insns);
        }
        let prog: [u64; 2] = [len, if len > 0 { insns.as_ptr() as u64 } else { 0 }];
        let b = [a[0], a[1], a[2], prog.as_ptr() as u64, 16, 0];
        Reply::Ret(sys::raw_syscall(SYS_setsockopt as u64, b))
    }

    fn ioctl(&self, a: [u64; 6]) -> Reply {
        let fd = a[0] as i32;
        if fd < 0 || fd >= self.fd_floor {
            return Reply::Ret(-(EBADF as i64));
        }
        // KVM's ioctls (type 0xAE): the guest has no KVM descriptor of its own (/dev/kvm is
        // refused), so a number of its range that answers them is a VMM vCPU's fd on its way
        // above the floor; KVM_SET_REGS on it ran the guest's code in ring 0 (issue #16).
        if (a[1] >> 8) & 0xff == 0xae {
            return Reply::Ret(-(ENOTTY as i64));
        }
        if a[1] & 0xffff_ffff == layout::PERF_EVENT_IOC_SET_OUTPUT && a[2] as i32 >= self.fd_floor {
            // Its argument is an fd (-1: none).
            return Reply::Ret(-(EBADF as i64));
        }
        match a[1] & 0xffff_ffff {
            layout::FICLONE => {
                // The source fd is the argument, of which the kernel takes the low 32 bits.
                if a[2] as u32 >= self.fd_floor as u32 {
                    return Reply::Ret(-(EBADF as i64));
                }
                // Not on a VMM temporary at a number the guest closed (see `delegate`).
                let _low = sys::low_fds();
                return Reply::Ret(sys::raw_syscall(SYS_ioctl as u64, a));
            }
            layout::FICLONERANGE => return self.clone_range(a),
            layout::FIDEDUPERANGE => return self.dedupe_range(a),
            _ => {}
        }
        if a[1] & 0xffff_ffff == TIOCGPTPEER {
            // A pty master's slave, opened with the flags given: a new fd for the guest.
            let r = sys::raw_syscall(SYS_ioctl as u64, a);
            return Reply::Ret(if r >= 0 { self.limit_fd(r) } else { r });
        }
        if a[1] & 0xffff_ffff == super::netdev::SIOCGIFCONF {
            return self.ifconf(a[0], a[2]);
        }
        if a[1] & 0xffff_ffff == super::netdev::SIOCETHTOOL {
            return self.ethtool(a[0], a[2]);
        }
        match layout::ioctl_arg(a[1] & 0xffff_ffff) {
            Some(Some(len)) => {
                if !self.mem.in_app(a[2], len) {
                    return Reply::Ret(EFAULT);
                }
            }
            Some(None) => {}
            None => {
                // Unknown request: refuse like Linux does for a non-terminal, reported once.
                if crate::kernel::lock(&self.reported).insert(0x1_0000_0000 | (a[1] & 0xffff_ffff))
                    && !self.quiet
                {
                    crate::diag!(
                        "multios lwk: ioctl request {:#x} has no known layout: returning ENOTTY",
                        a[1]
                    );
                }
                return Reply::Ret(-(ENOTTY as i64));
            }
        }
        Reply::Ret(sys::raw_syscall(SYS_ioctl as u64, a))
    }

    /// True when the guest may let the kernel read (`write`: write) `[addr, addr+len)`.
    fn guest_can(&self, addr: u64, len: u64, write: bool) -> bool {
        self.mem.in_app(addr, len) && self.mem.user_can(addr, len, write)
    }

    /// FICLONERANGE: `struct file_clone_range { s64 src_fd; u64 src_offset, src_length,
    /// dest_offset; }`. The kernel reads a copy made here, so the source fd, held to the floor,
    /// cannot be changed by another guest thread after the check.
    fn clone_range(&self, a: [u64; 6]) -> Reply {
        if !self.guest_can(a[2], 32, false) {
            return Reply::Ret(EFAULT);
        }
        let mut raw = [0u8; 32];
        self.mem.read(a[2], &mut raw);
        let mut range = [0u64; 4];
        for (v, b) in range.iter_mut().zip(raw.chunks_exact(8)) {
            *v = u64::from_le_bytes(b.try_into().expect("8 bytes"));
        }
        // The kernel takes the low 32 bits of src_fd.
        if range[0] as u32 >= self.fd_floor as u32 {
            return Reply::Ret(-(EBADF as i64));
        }
        let _low = sys::low_fds();
        Reply::Ret(sys::raw_syscall(
            SYS_ioctl as u64,
            [a[0], a[1], range.as_ptr() as u64, 0, 0, 0],
        ))
    }

    /// FIDEDUPERANGE: `struct file_dedupe_range { u64 src_offset, src_length; u16 dest_count;
    /// u16, u32 reserved; struct file_dedupe_range_info { s64 dest_fd; u64 dest_offset,
    /// bytes_deduped; s32 status; u32 reserved; } info[dest_count]; }`, read and written back
    /// whole (at most a page, ENOMEM beyond, as Linux). The kernel works on a copy made here,
    /// its count fixed to the one the size was computed from; a destination fd at or above the
    /// floor is -1 in the copy, so the kernel reports it as it reports any bad descriptor there
    /// (status -EBADF), and the guest gets its own values back.
    fn dedupe_range(&self, a: [u64; 6]) -> Reply {
        const HEAD: usize = 24;
        const INFO: usize = 32;
        if !self.guest_can(a[2], HEAD as u64, false) {
            return Reply::Ret(EFAULT);
        }
        let mut head = [0u8; HEAD];
        self.mem.read(a[2], &mut head);
        let count = u16::from_le_bytes([head[16], head[17]]);
        let size = HEAD + usize::from(count) * INFO;
        if size > 4096 {
            return Reply::Ret(-(ENOMEM as i64));
        }
        if !self.guest_can(a[2], size as u64, false) {
            return Reply::Ret(EFAULT);
        }
        let mut buf = vec![0u8; size];
        self.mem.read(a[2], &mut buf);
        buf[16..18].copy_from_slice(&count.to_le_bytes());
        let mut held = Vec::new();
        for off in (HEAD..size).step_by(INFO) {
            let fd = i64::from_le_bytes(buf[off..off + 8].try_into().expect("8 bytes"));
            if fd as u32 >= self.fd_floor as u32 {
                held.push((off, fd));
                buf[off..off + 8].copy_from_slice(&(-1i64).to_le_bytes());
            }
        }
        let r = {
            let _low = sys::low_fds();
            sys::raw_syscall(SYS_ioctl as u64, [a[0], a[1], buf.as_mut_ptr() as u64, 0, 0, 0])
        };
        if r < 0 {
            return Reply::Ret(r);
        }
        for (off, fd) in held {
            buf[off..off + 8].copy_from_slice(&fd.to_le_bytes());
        }
        if !self.guest_can(a[2], size as u64, true) {
            return Reply::Ret(EFAULT);
        }
        self.mem.write(a[2], &buf);
        Reply::Ret(r)
    }

    fn fcntl(&self, a: [u64; 6]) -> Reply {
        let fd = a[0] as i32;
        if fd < 0 || fd >= self.fd_floor {
            return Reply::Ret(-(EBADF as i64));
        }
        let arg: &[Arg] = match a[1] as i32 {
            F_DUPFD | F_DUPFD_CLOEXEC => {
                if !crate::fds::guest_may_hold(a[2] as i64) {
                    return Reply::Ret(-(EINVAL as i64));
                }
                let low = sys::low_fds();
                let r = sys::raw_syscall(SYS_fcntl as u64, a);
                drop(low);
                return Reply::Ret(if r >= 0 { self.limit_fd(r) } else { r });
            }
            F_GETLK | F_SETLK | F_SETLKW | F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW => {
                &[Arg::Fd, Arg::Val, Arg::Buf(Len::Fixed(32))]
            }
            F_GETFD | F_SETFD | F_GETFL | F_SETFL | F_GETPIPE_SZ | F_SETPIPE_SZ | F_ADD_SEALS
            | F_GET_SEALS | F_NOTIFY | F_GETLEASE | F_SETLEASE | F_GETOWN | F_SETOWN => {
                &[Arg::Fd, Arg::Val, Arg::Val]
            }
            // F_SETSIG, F_GETSIG (not in the libc crate)
            10 | 11 => &[Arg::Fd, Arg::Val, Arg::Val],
            // F_SETOWN_EX, F_GETOWN_EX: struct f_owner_ex { int type; pid_t pid; }
            15 | 16 => &[Arg::Fd, Arg::Val, Arg::Buf(Len::Fixed(8))],
            _ => return Reply::Ret(-(EINVAL as i64)),
        };
        if let Err(e) = check(&self.mem, arg, &a, self.fd_floor) {
            return Reply::Ret(e);
        }
        // Not on a VMM temporary at a number the guest closed (see `delegate`); a lock that
        // waits for another process is made without the lock.
        let _low = (!matches!(a[1] as i32, F_SETLKW | F_OFD_SETLKW)).then(sys::low_fds);
        Reply::Ret(sys::raw_syscall(SYS_fcntl as u64, a))
    }

    fn futex(&self, a: [u64; 6]) -> Reply {
        let op = a[1] as i32 & FUTEX_CMD_MASK;
        let layout: &[Arg] = match op {
            FUTEX_WAIT | FUTEX_WAIT_BITSET | FUTEX_LOCK_PI | FUTEX_LOCK_PI2 => &[
                Arg::Buf(Len::Fixed(4)),
                Arg::Val,
                Arg::Val,
                Arg::OptBuf(Len::Fixed(16)),
            ],
            FUTEX_WAKE | FUTEX_WAKE_BITSET | FUTEX_UNLOCK_PI | FUTEX_TRYLOCK_PI => &[Arg::Buf(Len::Fixed(4))],
            FUTEX_REQUEUE | FUTEX_CMP_REQUEUE | FUTEX_WAKE_OP => &[
                Arg::Buf(Len::Fixed(4)),
                Arg::Val,
                Arg::Val,
                Arg::Val,
                Arg::Buf(Len::Fixed(4)),
            ],
            _ => return self.refuse(SYS_futex as u64, "this futex operation"),
        };
        if let Err(e) = check(&self.mem, layout, &a, self.fd_floor) {
            return Reply::Ret(e);
        }
        Reply::Ret(sys::raw_syscall(SYS_futex as u64, a))
    }
}

impl Kernel {
    /// True when `pid` is this guest process or one of its threads (the VMM's pid or a tid).
    pub(super) fn is_self(&self, pid: i32) -> bool {
        pid == self.pid() || crate::procfs::is_own(pid)
    }

    /// process_vm_readv/writev. The local iovecs are checked and copied like any iovec array; the
    /// remote array is copied too (the kernel reads the copy, so it cannot be swapped after the
    /// check). Toward a VMM — this one, or any other process whose executable is the VMM's: an
    /// ancestor, sibling or child of a guest fork, another LWK rank — every remote range must lie
    /// in that VMM's guest window (from its maps): its guest's memory, which the guest could reach
    /// natively (MPI's single-copy transfers between ranks rely on it), never the VMM's own. Other
    /// processes are the kernel's business, as natively.
    fn process_vm(&self, nr: u64, a: [u64; 6]) -> Reply {
        let pid = a[0] as i32;
        if pid <= 0 {
            return Reply::Ret(-(ESRCH as i64));
        }
        let mut c = match check(&self.mem, layout::PROCESS_VM_LOCAL, &a, self.fd_floor) {
            Ok(c) => c,
            Err(e) => return Reply::Ret(e),
        };
        let remote = match super::check::copy_iov_unchecked(&self.mem, a[3], a[4]) {
            Ok(v) => v,
            Err(e) => return Reply::Ret(e),
        };
        let own = self.is_self(pid);
        if own || crate::procfs::is_vmm(pid) {
            let window = if own {
                Some((self.mem.app.base, self.mem.app.end()))
            } else {
                crate::procfs::vmm_window(pid)
            };
            let inside = |(lo, hi): (u64, u64)| {
                remote
                    .chunks(2)
                    .all(|v| v[1] == 0 || (v[0] >= lo && v[0].checked_add(v[1]).is_some_and(|e| e <= hi)))
            };
            if !window.is_some_and(inside) {
                return Reply::Ret(-(EPERM as i64));
            }
        }
        if !remote.is_empty() {
            c.args[3] = remote.as_ptr() as u64;
        }
        Reply::Ret(sys::raw_syscall(nr, c.args))
    }
}

/// Calls that create a descriptor at the lowest free number and return without waiting for
/// another party (accept, recvmsg's SCM_RIGHTS and opens of FIFOs wait, and are not here: holding
/// the lock there could keep it from the party they wait for).
fn creates_fd_at_once(nr: u64) -> bool {
    matches!(
        nr as i64,
        SYS_dup
            | SYS_pipe
            | SYS_pipe2
            | SYS_socket
            | SYS_socketpair
            | SYS_eventfd
            | SYS_eventfd2
            | SYS_epoll_create
            | SYS_epoll_create1
            | SYS_inotify_init
            | SYS_inotify_init1
            | SYS_timerfd_create
            | SYS_memfd_create
            | SYS_pidfd_open
            | SYS_pidfd_getfd
            | SYS_fanotify_init
            | SYS_userfaultfd
    )
}

/// Calls on a descriptor number that return at once and only look at or change that file: made
/// under `sys::low_fds`, so that a number the guest closed is not found holding a VMM temporary
/// (issue #16: the guest's fcntl of a closed number saw the proxy's /proc read of its schedstat).
fn quick_on_fd(nr: u64) -> bool {
    matches!(
        nr as i64,
        // close: a number the guest closes may hold a VMM temporary it had closed before (a new
        // vCPU's fd on its way above the floor: the VMM then duplicated whatever the guest put
        // there instead, issue #16).
        SYS_close
            | SYS_fstat
            | SYS_newfstatat
            | SYS_statx
            | SYS_lseek
            | SYS_fstatfs
            | SYS_getdents64
            | SYS_fchdir
            | SYS_fchmod
            | SYS_fchown
            | SYS_ftruncate
            | SYS_fadvise64
            | SYS_fgetxattr
            | SYS_flistxattr
    )
}
