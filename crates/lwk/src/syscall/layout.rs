//! Argument layouts of the delegated system calls: which arguments are pointers, how long the
//! memory behind them is, and which are file descriptors. A call not listed here is refused.

#![allow(non_upper_case_globals)]
// libc names the SYS_ constants in lower case
// A SYS_ name missing from the `use` below would be a catch-all binding in `layout`'s match,
// giving every unknown call its layout: make that a compile error.
#![deny(unreachable_patterns, unused_variables, non_snake_case)]

use libc::{
    SYS_accept, SYS_accept4, SYS_access, SYS_alarm, SYS_bind, SYS_capget, SYS_chdir, SYS_chmod, SYS_chown,
    SYS_chroot, SYS_clock_getres, SYS_clock_gettime, SYS_clock_nanosleep, SYS_clock_settime, SYS_close,
    SYS_connect, SYS_copy_file_range, SYS_creat, SYS_dup, SYS_dup2, SYS_dup3, SYS_epoll_create,
    SYS_epoll_create1, SYS_epoll_ctl, SYS_epoll_pwait, SYS_epoll_wait, SYS_eventfd2, SYS_faccessat,
    SYS_faccessat2, SYS_fadvise64, SYS_fallocate, SYS_fchdir, SYS_fchmod, SYS_fchmodat, SYS_fchown,
    SYS_fchownat, SYS_fdatasync, SYS_fgetxattr, SYS_flistxattr, SYS_flock, SYS_fremovexattr, SYS_fsetxattr,
    SYS_fstat, SYS_fstatfs, SYS_fsync, SYS_ftruncate, SYS_futex, SYS_futimesat, SYS_get_mempolicy,
    SYS_getcpu, SYS_getcwd, SYS_getdents, SYS_getdents64, SYS_getegid, SYS_geteuid, SYS_getgid,
    SYS_getgroups, SYS_getitimer, SYS_getpeername, SYS_getpgid, SYS_getpgrp, SYS_getppid, SYS_getrandom,
    SYS_getresgid, SYS_getresuid, SYS_getrlimit, SYS_getrusage, SYS_getsid, SYS_getsockname, SYS_getsockopt,
    SYS_gettimeofday, SYS_getuid, SYS_getxattr, SYS_inotify_add_watch, SYS_inotify_init, SYS_inotify_init1,
    SYS_inotify_rm_watch, SYS_ioprio_get, SYS_ioprio_set, SYS_lchown, SYS_lgetxattr, SYS_link, SYS_linkat,
    SYS_listen, SYS_listxattr, SYS_llistxattr, SYS_lremovexattr, SYS_lseek, SYS_lsetxattr, SYS_lstat,
    SYS_mbind, SYS_memfd_create, SYS_mkdir, SYS_mkdirat, SYS_mknod, SYS_mknodat, SYS_msgctl, SYS_msgget,
    SYS_msgrcv, SYS_msgsnd, SYS_nanosleep, SYS_newfstatat, SYS_open, SYS_openat, SYS_pidfd_open,
    SYS_pidfd_send_signal, SYS_pipe, SYS_pipe2, SYS_poll, SYS_ppoll, SYS_pread64, SYS_preadv, SYS_preadv2,
    SYS_prlimit64, SYS_pselect6, SYS_pwrite64, SYS_pwritev, SYS_pwritev2, SYS_read, SYS_readahead,
    SYS_readlink, SYS_readlinkat, SYS_readv, SYS_recvfrom, SYS_recvmsg, SYS_removexattr, SYS_rename,
    SYS_renameat, SYS_renameat2, SYS_rmdir, SYS_sched_get_priority_max, SYS_sched_get_priority_min,
    SYS_sched_getaffinity, SYS_sched_yield, SYS_select, SYS_semget, SYS_semop, SYS_semtimedop, SYS_sendfile,
    SYS_sendmsg, SYS_sendto, SYS_set_mempolicy, SYS_setitimer, SYS_setpgid, SYS_setrlimit, SYS_setsid,
    SYS_setsockopt, SYS_setxattr, SYS_shmctl, SYS_shmget, SYS_shutdown, SYS_socket, SYS_socketpair,
    SYS_splice, SYS_stat, SYS_statfs, SYS_statx, SYS_symlink, SYS_symlinkat, SYS_sync, SYS_sync_file_range,
    SYS_syncfs, SYS_sysinfo, SYS_tee, SYS_time, SYS_timer_create, SYS_timer_delete, SYS_timer_getoverrun,
    SYS_timer_gettime, SYS_timer_settime, SYS_timerfd_create, SYS_timerfd_gettime, SYS_timerfd_settime,
    SYS_times, SYS_truncate, SYS_umask, SYS_uname, SYS_unlink, SYS_unlinkat, SYS_utime, SYS_utimensat,
    SYS_utimes, SYS_wait4, SYS_waitid, SYS_write, SYS_writev,
};

/// How long the memory behind a pointer argument is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Len {
    /// The value of argument i.
    Arg(usize),
    /// A fixed size.
    Fixed(u64),
    /// The value of argument i times a fixed element size.
    ArgTimes(usize, u64),
    /// The u32 stored at the pointer in argument i (socklen_t *addrlen).
    DerefU32(usize),
    /// The value of argument i plus a fixed size (msgsnd's text and its `long mtype`).
    ArgPlus(usize, u64),
    /// A NUMA node mask of argument i `maxnode` in unsigned longs: Linux reads and writes
    /// `maxnode - 1` bits (`get_nodes`: "--maxnode"), rounded up to whole longs.
    Bits(usize),
}

/// One argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// A plain value.
    Val,
    /// A file descriptor (AT_FDCWD and other negatives pass; the VMM's own fds are refused).
    Fd,
    /// Memory the kernel reads or writes; NULL is refused with EFAULT.
    Buf(Len),
    /// As `Buf` but NULL is allowed.
    OptBuf(Len),
    /// A NUL-terminated path.
    Path,
    /// A path or NULL.
    OptPath,
    /// An iovec array with the count in argument i; every iov_base/iov_len is checked too.
    Iov(usize),
    /// A pollfd array with the count in argument i: copied into VMM memory (the kernel polls
    /// the checked fds), the revents written back.
    PollFds(usize),
    /// An fd_set of select/pselect6 (NULL allowed) with the number of fds in argument i: copied
    /// into VMM memory (the kernel polls the checked fds) and written back when the call
    /// succeeds; a bit at or above the floor is EBADF.
    FdSet(usize),
    /// A struct msghdr (sendmsg: true, recvmsg: false): name, iovec array and control buffer
    /// are checked; a sent control buffer is copied and its SCM_RIGHTS fds held to the floor.
    MsgHdr(bool),
}

use self::Arg::*;
use self::Len::*;

/// process_vm_readv/writev: the local iovecs are checked and copied here; the remote iovec array
/// is copied, and bounded toward VMMs, by `delegate.rs` (`Kernel::process_vm`).
pub const PROCESS_VM_LOCAL: &[Arg] = &[Val, Iov(2), Val, Val, Val, Val];

/// The layout of delegated call `nr`, or None when the proxy does not know it.
/// The arguments of `nr` whose buffers the kernel writes (the other buffers it only reads): they
/// must be writable by the guest (issue #14).
pub fn written(nr: i64) -> &'static [usize] {
    match nr {
        SYS_read | SYS_pread64 | SYS_fstat | SYS_stat | SYS_lstat | SYS_statfs | SYS_fstatfs
        | SYS_getdents64 | SYS_getdents | SYS_readlink | SYS_getitimer | SYS_timer_gettime
        | SYS_clock_gettime | SYS_clock_getres | SYS_listxattr | SYS_llistxattr | SYS_flistxattr
        | SYS_timerfd_gettime => &[1],
        // The old value (timerfd_settime), the offsets splice moves on. (shmctl's buffer is
        // written by IPC_STAT but read by IPC_SET: per call number it stays unmarked.)
        SYS_timerfd_settime => &[3],
        SYS_splice => &[1, 3],
        SYS_newfstatat | SYS_readlinkat | SYS_getxattr | SYS_lgetxattr | SYS_fgetxattr => &[2],
        SYS_statx => &[4],
        SYS_getcwd | SYS_pipe | SYS_pipe2 | SYS_time | SYS_times | SYS_uname | SYS_sysinfo
        | SYS_getrandom => &[0],
        SYS_gettimeofday => &[0, 1],
        SYS_getrusage | SYS_getgroups => &[1],
        SYS_sched_getaffinity | SYS_timer_create | SYS_socketpair => &[2, 3],
        SYS_getresuid | SYS_getresgid | SYS_getcpu => &[0, 1, 2],
        SYS_capget | SYS_get_mempolicy => &[0, 1],
        SYS_wait4 => &[1, 3],
        SYS_waitid => &[2, 4],
        SYS_nanosleep => &[1],
        SYS_clock_nanosleep => &[3],
        SYS_setitimer => &[2],
        SYS_timer_settime => &[3],
        SYS_msgrcv => &[1],
        SYS_accept | SYS_accept4 | SYS_getsockname | SYS_getpeername => &[1, 2],
        SYS_recvfrom => &[1, 4, 5],
        SYS_getsockopt => &[3, 4],
        SYS_epoll_wait | SYS_epoll_pwait => &[1],
        SYS_prlimit64 => &[3],
        SYS_getrlimit => &[1],
        SYS_sendfile => &[2],
        SYS_copy_file_range => &[1, 3],
        // The time left is written back into the timeout (select, pselect6, ppoll).
        SYS_select | SYS_pselect6 => &[1, 2, 3, 4],
        SYS_ppoll => &[2],
        _ => &[],
    }
}

pub fn layout(nr: i64) -> Option<&'static [Arg]> {
    Some(match nr {
        SYS_read | SYS_write => &[Fd, Buf(Arg(2)), Val],
        SYS_pread64 | SYS_pwrite64 => &[Fd, Buf(Arg(2)), Val, Val],
        SYS_readv | SYS_writev => &[Fd, Iov(2), Val],
        SYS_preadv | SYS_pwritev | SYS_preadv2 | SYS_pwritev2 => &[Fd, Iov(2), Val, Val, Val, Val],
        SYS_open => &[Path, Val, Val],
        SYS_openat => &[Fd, Path, Val, Val],
        SYS_creat => &[Path, Val],
        SYS_close => &[Fd],
        SYS_lseek => &[Fd, Val, Val],
        SYS_fstat => &[Fd, Buf(Fixed(144))],
        SYS_stat | SYS_lstat => &[Path, Buf(Fixed(144))],
        SYS_newfstatat => &[Fd, Path, Buf(Fixed(144)), Val],
        SYS_statx => &[Fd, Path, Val, Val, Buf(Fixed(256))],
        SYS_statfs => &[Path, Buf(Fixed(120))],
        SYS_fstatfs => &[Fd, Buf(Fixed(120))],
        SYS_getdents64 | SYS_getdents => &[Fd, Buf(Arg(2)), Val],
        SYS_access => &[Path, Val],
        SYS_faccessat | SYS_faccessat2 => &[Fd, Path, Val, Val],
        SYS_readlink => &[Path, Buf(Arg(2)), Val],
        SYS_readlinkat => &[Fd, Path, Buf(Arg(3)), Val],
        SYS_getcwd => &[Buf(Arg(1)), Val],
        SYS_chdir | SYS_rmdir | SYS_unlink => &[Path],
        SYS_fchdir | SYS_fsync | SYS_fdatasync | SYS_syncfs => &[Fd],
        SYS_mkdir | SYS_chmod => &[Path, Val],
        SYS_mkdirat | SYS_fchmodat => &[Fd, Path, Val],
        SYS_unlinkat => &[Fd, Path, Val],
        SYS_rename | SYS_link | SYS_symlink => &[Path, Path],
        SYS_renameat | SYS_linkat => &[Fd, Path, Fd, Path, Val],
        SYS_renameat2 => &[Fd, Path, Fd, Path, Val],
        SYS_symlinkat => &[Path, Fd, Path],
        SYS_chown | SYS_lchown => &[Path, Val, Val],
        SYS_fchown => &[Fd, Val, Val],
        SYS_fchownat => &[Fd, Path, Val, Val, Val],
        SYS_fchmod => &[Fd, Val],
        SYS_truncate => &[Path, Val],
        SYS_ftruncate => &[Fd, Val],
        SYS_fallocate => &[Fd, Val, Val, Val],
        SYS_fadvise64 => &[Fd, Val, Val, Val],
        SYS_utimensat => &[Fd, OptPath, OptBuf(Fixed(32)), Val],
        // struct utimbuf (two time_t), two struct timeval.
        SYS_utime => &[Path, OptBuf(Fixed(16))],
        SYS_utimes => &[Path, OptBuf(Fixed(32))],
        SYS_futimesat => &[Fd, OptPath, OptBuf(Fixed(32))],
        SYS_sync_file_range => &[Fd, Val, Val, Val],
        SYS_readahead => &[Fd, Val, Val],
        // System V message queues: a message is `long mtype` and `msgsz` bytes of text; msqid_ds
        // is 120 bytes (msginfo, for IPC_INFO/MSG_INFO, 32).
        SYS_msgget => &[Val, Val],
        SYS_msgsnd => &[Val, Buf(ArgPlus(2, 8)), Val, Val],
        SYS_msgrcv => &[Val, Buf(ArgPlus(2, 8)), Val, Val, Val],
        SYS_msgctl => &[Val, Val, OptBuf(Fixed(120))],
        // System V semaphores: struct sembuf is 6 bytes (semctl has its own handler).
        SYS_semget => &[Val, Val, Val],
        SYS_semop => &[Val, Buf(ArgTimes(2, 6)), Val],
        SYS_semtimedop => &[Val, Buf(ArgTimes(2, 6)), Val, OptBuf(Fixed(16))],
        SYS_dup => &[Fd],
        SYS_dup2 => &[Fd, Fd],
        SYS_dup3 => &[Fd, Fd, Val],
        SYS_pipe => &[Buf(Fixed(8))],
        SYS_pipe2 => &[Buf(Fixed(8)), Val],
        SYS_sendfile => &[Fd, Fd, OptBuf(Fixed(8)), Val],
        SYS_copy_file_range => &[Fd, OptBuf(Fixed(8)), Fd, OptBuf(Fixed(8)), Val, Val],
        SYS_flock => &[Fd, Val],
        SYS_umask | SYS_sync => &[Val],
        SYS_poll => &[PollFds(1), Val, Val],
        SYS_ppoll => &[PollFds(1), Val, OptBuf(Fixed(16)), OptBuf(Fixed(8)), Val],
        SYS_select => &[Val, FdSet(0), FdSet(0), FdSet(0), OptBuf(Fixed(16))],
        SYS_pselect6 => &[
            Val,
            FdSet(0),
            FdSet(0),
            FdSet(0),
            OptBuf(Fixed(16)),
            OptBuf(Fixed(16)),
        ],
        SYS_clock_gettime | SYS_clock_getres => &[Val, OptBuf(Fixed(16))],
        SYS_gettimeofday => &[OptBuf(Fixed(16)), OptBuf(Fixed(8))],
        SYS_time => &[OptBuf(Fixed(8))],
        SYS_nanosleep => &[Buf(Fixed(16)), OptBuf(Fixed(16))],
        SYS_clock_nanosleep => &[Val, Val, Buf(Fixed(16)), OptBuf(Fixed(16))],
        SYS_times => &[OptBuf(Fixed(32))],
        // Timers signal the VMM process, which passes the signal on to a guest handler.
        SYS_alarm => &[Val],
        SYS_wait4 => &[Val, OptBuf(Fixed(4)), Val, OptBuf(Fixed(144))],
        SYS_waitid => &[Val, Val, OptBuf(Fixed(128)), Val, OptBuf(Fixed(144))],
        // Made by the guest thread's own vCPU thread (a memory policy is per thread: see
        // `syscall/mod.rs`), so that it applies to the Linux thread that faults the guest's pages.
        SYS_get_mempolicy => &[OptBuf(Fixed(4)), OptBuf(Bits(2)), Val, Val, Val],
        SYS_set_mempolicy => &[Val, OptBuf(Bits(2)), Val],
        // The policy of a range of the guest's window (`delegate.rs` refuses one outside it): the
        // same pages in the VMM's address space, a per-mapping property, so any thread makes it.
        SYS_mbind => &[Val, Val, Val, OptBuf(Bits(4)), Val, Val],
        SYS_setitimer => &[Val, OptBuf(Fixed(32)), OptBuf(Fixed(32))],
        SYS_getitimer => &[Val, Buf(Fixed(32))],
        SYS_timer_create => &[Val, OptBuf(Fixed(64)), Buf(Fixed(4))],
        SYS_timer_settime => &[Val, Val, Buf(Fixed(32)), OptBuf(Fixed(32))],
        SYS_timer_gettime => &[Val, Buf(Fixed(32))],
        SYS_timer_getoverrun | SYS_timer_delete => &[Val],
        SYS_uname => &[Buf(Fixed(390))],
        SYS_sysinfo => &[Buf(Fixed(112))],
        SYS_getrandom => &[Buf(Arg(1)), Val, Val],
        SYS_getrusage => &[Val, Buf(Fixed(144))],
        SYS_getrlimit | SYS_setrlimit => &[Val, Buf(Fixed(16))],
        SYS_prlimit64 => &[Val, Val, OptBuf(Fixed(16)), OptBuf(Fixed(16))],
        SYS_getuid | SYS_geteuid | SYS_getgid | SYS_getegid | SYS_getppid | SYS_getpgrp | SYS_setsid
        | SYS_sched_yield => &[],
        SYS_getpgid | SYS_getsid => &[Val],
        SYS_getgroups => &[Val, OptBuf(ArgTimes(0, 4))],
        SYS_getresuid | SYS_getresgid => &[Buf(Fixed(4)), Buf(Fixed(4)), Buf(Fixed(4))],
        SYS_sched_getaffinity => &[Val, Val, Buf(Arg(1))],
        // The process's capabilities (perf asks): the header is written back on a version
        // mismatch; the data is two v3 structs (24 bytes).
        SYS_capget => &[Buf(Fixed(8)), OptBuf(Fixed(24))],
        SYS_getcpu => &[OptBuf(Fixed(4)), OptBuf(Fixed(4)), Val],
        // SysV shared memory: the segments live in the host; shmat/shmdt are local (shared.rs).
        SYS_shmget => &[Val, Val, Val],
        // The largest of shmid_ds (112 bytes), shminfo and shm_info.
        SYS_shmctl => &[Val, Val, OptBuf(Fixed(112))],
        SYS_eventfd2 => &[Val, Val],
        SYS_inotify_init => &[],
        SYS_inotify_init1 => &[Val],
        SYS_inotify_add_watch => &[Fd, Path, Val],
        SYS_inotify_rm_watch => &[Fd, Val],
        // `who` 0 is the calling thread: the proxy's, which makes the guest's delegated I/O.
        SYS_ioprio_get => &[Val, Val],
        SYS_ioprio_set => &[Val, Val, Val],
        SYS_memfd_create => &[Path, Val],
        SYS_socket => &[Val, Val, Val],
        SYS_socketpair => &[Val, Val, Val, Buf(Fixed(8))],
        SYS_connect | SYS_bind => &[Fd, Buf(Arg(2)), Val],
        SYS_listen | SYS_shutdown => &[Fd, Val],
        SYS_accept | SYS_getsockname | SYS_getpeername => &[Fd, OptBuf(DerefU32(2)), OptBuf(Fixed(4))],
        SYS_accept4 => &[Fd, OptBuf(DerefU32(2)), OptBuf(Fixed(4)), Val],
        SYS_sendto => &[Fd, Buf(Arg(2)), Val, Val, OptBuf(Arg(5)), Val],
        SYS_recvfrom => &[Fd, Buf(Arg(2)), Val, Val, OptBuf(DerefU32(5)), OptBuf(Fixed(4))],
        SYS_setsockopt => &[Fd, Val, Val, Buf(Arg(4)), Val],
        SYS_getsockopt => &[Fd, Val, Val, Buf(DerefU32(4)), Buf(Fixed(4))],
        SYS_getxattr | SYS_lgetxattr => &[Path, Path, OptBuf(Arg(3)), Val],
        SYS_fgetxattr => &[Fd, Path, OptBuf(Arg(3)), Val],
        SYS_setxattr | SYS_lsetxattr => &[Path, Path, Buf(Arg(3)), Val, Val],
        SYS_fsetxattr => &[Fd, Path, Buf(Arg(3)), Val, Val],
        SYS_listxattr | SYS_llistxattr => &[Path, OptBuf(Arg(2)), Val],
        SYS_flistxattr => &[Fd, OptBuf(Arg(2)), Val],
        SYS_removexattr | SYS_lremovexattr => &[Path, Path],
        SYS_fremovexattr => &[Fd, Path],
        SYS_mknod => &[Path, Val, Val],
        SYS_mknodat => &[Fd, Path, Val, Val],
        // A process group is the process's (the VMM's), whichever thread asks.
        SYS_setpgid => &[Val, Val],
        SYS_sched_get_priority_max | SYS_sched_get_priority_min => &[Val],
        SYS_pidfd_open => &[Val, Val],
        // A signal for the guest's own process reaches it like one sent from outside
        // (signal/host.rs); siginfo_t is 128 bytes.
        SYS_pidfd_send_signal => &[Fd, Val, OptBuf(Fixed(128)), Val],
        SYS_splice => &[Fd, OptBuf(Fixed(8)), Fd, OptBuf(Fixed(8)), Val, Val],
        SYS_tee => &[Fd, Fd, Val, Val],
        // The root is the process's (the VMM's): later opens and execve resolve in it, as on Linux.
        SYS_chroot => &[Path],
        // The host's clock, as for a native process (EPERM without CAP_SYS_TIME).
        SYS_clock_settime => &[Val, Buf(Fixed(16))],
        SYS_sendmsg => &[Fd, MsgHdr(true), Val],
        SYS_recvmsg => &[Fd, MsgHdr(false), Val],
        SYS_epoll_create | SYS_epoll_create1 => &[Val],
        SYS_epoll_ctl => &[Fd, Val, Fd, OptBuf(Fixed(12))],
        SYS_epoll_wait => &[Fd, Buf(ArgTimes(2, 12)), Val, Val],
        SYS_epoll_pwait => &[Fd, Buf(ArgTimes(2, 12)), Val, Val, OptBuf(Fixed(8)), Val],
        SYS_timerfd_create => &[Val, Val],
        SYS_timerfd_settime => &[Fd, Val, Buf(Fixed(32)), OptBuf(Fixed(32))],
        SYS_timerfd_gettime => &[Fd, Buf(Fixed(32))],
        SYS_futex => return None, // served by `futex()` (layout depends on the operation)
        _ => return None,
    })
}

/// PERF_EVENT_IOC_SET_OUTPUT: its integer argument is a file descriptor.
pub const PERF_EVENT_IOC_SET_OUTPUT: u64 = 0x2405;

/// FICLONE (`_IOW(0x94, 9, int)`): its integer argument is the source file's descriptor.
pub const FICLONE: u64 = 0x4004_9409;
/// FICLONERANGE (`_IOW(0x94, 13, struct file_clone_range)`): a struct holding the source fd;
/// served by `delegate.rs` on a checked copy (not by [`ioctl_arg`]).
pub const FICLONERANGE: u64 = 0x4020_940d;
/// FIDEDUPERANGE (`_IOWR(0x94, 54, struct file_dedupe_range)`): a struct holding destination
/// fds; served by `delegate.rs` on a checked copy (not by [`ioctl_arg`]).
pub const FIDEDUPERANGE: u64 = 0xc018_9436;

/// ioctl requests the proxy knows: (request, size of the argument struct, pointer?).
pub fn ioctl_arg(request: u64) -> Option<Option<u64>> {
    match request {
        // File ioctls that `cp`, `lsattr` and `chattr` make. FICLONE's argument is an fd, which
        // the caller holds to the floor. FS_IOC_GETFLAGS/SETFLAGS and FS_IOC_GETVERSION/
        // SETVERSION are declared with `long` but the kernel reads and writes an int;
        // FS_IOC_FSGETXATTR/FSSETXATTR take a struct fsxattr (28 bytes).
        FICLONE => Some(None),
        0x8008_6601 | 0x4008_6602 | 0x8008_7601 | 0x4008_7602 => Some(Some(4)),
        0x801c_581f | 0x401c_5820 => Some(Some(28)),
        0x5401 => Some(Some(36)),          // TCGETS: struct termios (kernel)
        0x5402..=0x5404 => Some(Some(36)), // TCSETS, TCSETSW, TCSETSF
        0x5413 => Some(Some(8)),           // TIOCGWINSZ
        0x5414 => Some(Some(8)),           // TIOCSWINSZ
        0x540f => Some(Some(4)),           // TIOCGPGRP
        0x541b => Some(Some(4)),           // FIONREAD
        0x5421 => Some(Some(4)),           // FIONBIO
        0x5451 | 0x5450 => Some(None),     // FIOCLEX, FIONCLEX
        0x5410 => Some(Some(4)),           // TIOCSPGRP (tcsetpgrp)
        0x5429 => Some(Some(4)),           // TIOCGSID (tcgetsid)
        0x5411 => Some(Some(4)),           // TIOCOUTQ
        0x5420 => Some(Some(4)),           // TIOCPKT
        0x5452 => Some(Some(4)),           // FIOASYNC
        0x8004_5430 => Some(Some(4)),      // TIOCGPTN (ptsname)
        0x4004_5431 => Some(Some(4)),      // TIOCSPTLCK (unlockpt)
        // Integer arguments: TCSBRK (tcdrain, tcsendbreak), TCXONC (tcflow), TCFLSH (tcflush),
        // TIOCSCTTY (login_tty), TIOCNOTTY, TCSBRKP.
        0x5409 | 0x540a | 0x540b | 0x540e | 0x5422 | 0x5425 => Some(None),
        // stress-ng's pty stressor (issue #14): TCGETA, TCSETA, TCSETAW, TCSETAF (struct termio);
        // TIOCGLCKTRMIOS, TIOCSLCKTRMIOS (struct termios); TCGETS2, TCSETS2, TCSETSW2, TCSETSF2
        // (struct termios2).
        0x5405..=0x5408 => Some(Some(18)),
        0x5456 | 0x5457 => Some(Some(36)),
        0x802c_542a | 0x402c_542b..=0x402c_542d => Some(Some(44)),
        // int *: TIOCMGET, TIOCMBIS, TIOCMBIC, TIOCMSET, TIOCGSOFTCAR, TIOCSSOFTCAR, TIOCSETD,
        // TIOCGETD, TIOCGPKT, TIOCGPTLCK, TIOCGEXCL, TIOCGDEV.
        0x5415..=0x541a | 0x5423 | 0x5424 => Some(Some(4)),
        0x8004_5438 | 0x8004_5439 | 0x8004_5440 | 0x8004_5432 => Some(Some(4)),
        // No argument or an integer: TIOCEXCL, TIOCNXCL, TIOCVHANGUP, TIOCSIG.
        0x540c | 0x540d | 0x5437 | 0x4004_5436 => Some(None),
        // struct ifreq (40 bytes): SIOCGIFNAME (if_indextoname), SIOCGIFINDEX (if_nametoindex);
        // and what Open MPI's and PMIx's interface lists read of each interface (issue #15):
        // SIOCGIFFLAGS, SIOCGIFADDR, SIOCGIFDSTADDR, SIOCGIFBRDADDR, SIOCGIFNETMASK,
        // SIOCGIFMETRIC, SIOCGIFMTU, SIOCGIFHWADDR, SIOCGIFTXQLEN, SIOCGIFMAP (ifconfig's
        // `struct ifmap`, inside the ifreq). Only the reading requests, and
        // none whose ifreq carries a pointer (SIOCETHTOOL, SIOCDEVPRIVATE…). SIOCGIFCONF holds a
        // pointer and is served by `netdev.rs`.
        0x8910 | 0x8933 => Some(Some(40)),
        0x8913 | 0x8915 | 0x8917 | 0x8919 | 0x891b | 0x891d | 0x8921 | 0x8927 | 0x8942 | 0x8970 => {
            Some(Some(40))
        }
        // perf events (issue #14): ENABLE, DISABLE, REFRESH, RESET, SET_OUTPUT (an fd, checked by
        // the caller), PAUSE_OUTPUT take integers; ID writes a u64, PERIOD reads one.
        0x2400..=0x2403 | PERF_EVENT_IOC_SET_OUTPUT | 0x4004_2409 => Some(None),
        0x8008_2407 | 0x4008_2404 => Some(Some(8)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_argument_exists() {
        for nr in 0..512 {
            if let Some(l) = layout(nr) {
                for a in l {
                    let idx = match a {
                        Buf(Arg(i)) | OptBuf(Arg(i)) | Buf(ArgTimes(i, _)) | OptBuf(ArgTimes(i, _)) => {
                            Some(*i)
                        }
                        Buf(DerefU32(i)) | OptBuf(DerefU32(i)) | Iov(i) | PollFds(i) | FdSet(i) => Some(*i),
                        Buf(ArgPlus(i, _)) | OptBuf(ArgPlus(i, _)) => Some(*i),
                        _ => None,
                    };
                    if let Some(i) = idx {
                        assert!(i < 6, "syscall {nr}: length argument {i}");
                    }
                }
            }
        }
    }

    #[test]
    fn ioctls_holding_fds_in_a_struct_have_no_plain_layout() {
        // Their fds must be checked on a copy (`delegate.rs`): a plain layout would pass them.
        assert_eq!(ioctl_arg(FICLONERANGE), None);
        assert_eq!(ioctl_arg(FIDEDUPERANGE), None);
        assert_eq!(ioctl_arg(FICLONE), Some(None));
        assert_eq!(ioctl_arg(0x8008_6601), Some(Some(4)));
        assert_eq!(ioctl_arg(0x801c_581f), Some(Some(28)));
    }

    #[test]
    fn dangerous_calls_have_no_layout() {
        use libc::{
            SYS_clone, SYS_execve, SYS_mmap, SYS_prctl, SYS_process_vm_writev, SYS_ptrace, SYS_rt_sigaction,
        };
        for nr in [
            SYS_mmap,
            SYS_clone,
            SYS_execve,
            SYS_rt_sigaction,
            SYS_process_vm_writev,
            SYS_ptrace,
            SYS_prctl,
        ] {
            assert!(layout(nr).is_none(), "{nr} must never be passed through");
        }
    }
}
