//! The kernel layer's families: each system call (by its x86_64 name) in fs, net, mm, ipc, sched or
//! other.

use crate::graph::Families;

const FS: &[&str] = &[
    "read",
    "write",
    "open",
    "close",
    "stat",
    "fstat",
    "lstat",
    "lseek",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "access",
    "dup",
    "dup2",
    "dup3",
    "fcntl",
    "flock",
    "fsync",
    "fdatasync",
    "truncate",
    "ftruncate",
    "getdents",
    "getdents64",
    "getcwd",
    "chdir",
    "fchdir",
    "rename",
    "renameat",
    "renameat2",
    "mkdir",
    "mkdirat",
    "rmdir",
    "creat",
    "link",
    "linkat",
    "unlink",
    "unlinkat",
    "symlink",
    "symlinkat",
    "readlink",
    "readlinkat",
    "chmod",
    "fchmod",
    "fchmodat",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "umask",
    "openat",
    "openat2",
    "newfstatat",
    "statx",
    "statfs",
    "fstatfs",
    "faccessat",
    "faccessat2",
    "sendfile",
    "splice",
    "tee",
    "copy_file_range",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "ioctl",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_wait",
    "epoll_pwait",
    "epoll_ctl",
    "epoll_create1",
    "close_range",
    "fadvise64",
    "fallocate",
    "sync",
    "syncfs",
    "getxattr",
    "lgetxattr",
    "fgetxattr",
    "utimensat",
    "inotify_add_watch",
    "inotify_init1",
];
const NET: &[&str] = &[
    "socket",
    "connect",
    "accept",
    "accept4",
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "shutdown",
    "bind",
    "listen",
    "getsockname",
    "getpeername",
    "socketpair",
    "setsockopt",
    "getsockopt",
    "recvmmsg",
    "sendmmsg",
];
const MM: &[&str] = &[
    "mmap",
    "mprotect",
    "munmap",
    "brk",
    "mremap",
    "msync",
    "mincore",
    "madvise",
    "mlock",
    "mlock2",
    "munlock",
    "mlockall",
    "munlockall",
    "mbind",
    "set_mempolicy",
    "get_mempolicy",
    "migrate_pages",
    "move_pages",
    "process_vm_readv",
    "process_vm_writev",
    "memfd_create",
    "pkey_mprotect",
];
const IPC: &[&str] = &[
    "pipe",
    "pipe2",
    "shmget",
    "shmat",
    "shmdt",
    "shmctl",
    "semget",
    "semop",
    "semtimedop",
    "semctl",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "futex",
    "futex_wait",
    "futex_wake",
    "futex_waitv",
    "futex_requeue",
    "kill",
    "tkill",
    "tgkill",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "rt_sigpending",
    "rt_sigtimedwait",
    "rt_sigqueueinfo",
    "rt_sigsuspend",
    "sigaltstack",
    "eventfd",
    "eventfd2",
    "signalfd",
    "signalfd4",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    "pidfd_send_signal",
    "set_robust_list",
    "get_robust_list",
];
const SCHED: &[&str] = &[
    "sched_yield",
    "sched_setaffinity",
    "sched_getaffinity",
    "sched_setparam",
    "sched_getparam",
    "sched_setscheduler",
    "sched_getscheduler",
    "sched_setattr",
    "sched_getattr",
    "clone",
    "clone3",
    "fork",
    "vfork",
    "execve",
    "execveat",
    "exit",
    "exit_group",
    "wait4",
    "waitid",
    "nanosleep",
    "clock_nanosleep",
    "getpid",
    "gettid",
    "getppid",
    "set_tid_address",
    "setpriority",
    "getpriority",
    "prctl",
    "arch_prctl",
    "rseq",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "getrusage",
    "prlimit64",
];

/// Adds `count` calls of number `nr` to `f`.
pub fn add(f: &mut Families, nr: u32, count: u64) {
    let name = multios_syscalls::by_number(nr).unwrap_or("");
    let slot = if FS.contains(&name) {
        &mut f.fs
    } else if NET.contains(&name) {
        &mut f.net
    } else if MM.contains(&name) {
        &mut f.mm
    } else if IPC.contains(&name) {
        &mut f.ipc
    } else if SCHED.contains(&name) {
        &mut f.sched
    } else {
        &mut f.other
    };
    *slot += count;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies() {
        let mut f = Families::default();
        add(&mut f, 1, 3); // write
        add(&mut f, 202, 2); // futex
        add(&mut f, 9, 1); // mmap
        add(&mut f, 44, 1); // sendto
        add(&mut f, 24, 1); // sched_yield
        add(&mut f, 96, 1); // gettimeofday
        assert_eq!((f.fs, f.ipc, f.mm, f.net, f.sched, f.other), (3, 2, 1, 1, 1, 1));
    }
}
