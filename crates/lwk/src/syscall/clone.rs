//! clone and clone3 (issue #16): the arguments decoded and checked as Linux checks them, then a
//! thread (a new vCPU, `machine.rs`) or a process (a forked VMM, `machine/fork.rs`).
//!
//! Served besides the stack, TLS and the three tid words: CLONE_VFORK (as fork, `vfork.rs`),
//! CLONE_PIDFD (the parent opens the child's pidfd right after the fork, before the child has a
//! VM to run its guest in, `Kernel::child_pidfd`) and CLONE_CLEAR_SIGHAND (the child's handled
//! signals back to SIG_DFL, as exec does). What a forked VMM cannot be is refused, with a note
//! once per reason and the errno a kernel without the feature gives — never a success that did
//! something else (before, every flag below was dropped and the call "succeeded"): namespaces
//! (EINVAL, a kernel without them), CLONE_INTO_CGROUP (EINVAL, a kernel before 5.7), set_tid
//! (E2BIG, a kernel before 5.5 seeing a non-zero field past what it knows), and ENOSYS for what
//! the LWK does not do: a process sharing its parent's file table, fs information, signal
//! handlers or SysV undo lists, CLONE_PARENT, an exit signal other than SIGCHLD (libc's fork
//! gives the VMM's child SIGCHLD, and a raw clone of a multi-threaded VMM would leave glibc's
//! locks held in the child), a thread that does not share them, and a thread's pidfd.

use crate::kernel::{lock, CloneReq, Kernel, Reply};
use libc::{E2BIG, EFAULT, EINVAL, ENOSYS, SIGCHLD};

const CSIGNAL: u64 = 0xff;
const CLONE_NEWTIME: u64 = 0x80;
const CLONE_CLEAR_SIGHAND: u64 = 0x1_0000_0000;
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
/// Every namespace flag.
const NAMESPACES: u64 = CLONE_NEWTIME
    | libc::CLONE_NEWNS as u64
    | libc::CLONE_NEWCGROUP as u64
    | libc::CLONE_NEWUTS as u64
    | libc::CLONE_NEWIPC as u64
    | libc::CLONE_NEWUSER as u64
    | libc::CLONE_NEWPID as u64
    | libc::CLONE_NEWNET as u64;
/// sizeof(struct clone_args) as Linux 5.7+ knows it (CLONE_ARGS_SIZE_VER2) and its first version.
const ARGS_SIZE: usize = 88;
const ARGS_SIZE_VER0: u64 = 64;
/// Linux's MAX_PID_NS_LEVEL.
const MAX_PID_NS_LEVEL: u64 = 32;

fn err(e: i32) -> Reply {
    Reply::Ret(-(e as i64))
}

fn has(flags: u64, f: i32) -> bool {
    flags & f as u32 as u64 != 0
}

/// struct clone_args, or the legacy clone's arguments in its shape.
#[derive(Debug, Default, Clone, Copy)]
struct Args {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

impl Kernel {
    /// clone(flags, stack, parent_tid, child_tid, tls) or clone3(args, size) from a vCPU thread.
    pub(super) fn clone_call(&self, nr: u64, a: [u64; 6]) -> Reply {
        let c = if nr as i64 == libc::SYS_clone3 {
            match self.clone3_args(a[0], a[1]) {
                Ok(c) => c,
                Err(e) => return err(e),
            }
        } else {
            // Linux's sys_clone: the low 32 bits; CLONE_PIDFD's int goes where parent_tid points.
            let low = a[0] & 0xffff_ffff;
            if has(low, libc::CLONE_PIDFD) && has(low, libc::CLONE_PARENT_SETTID) {
                return err(EINVAL);
            }
            Args {
                flags: low & !CSIGNAL,
                exit_signal: low & CSIGNAL,
                stack: a[1],
                pidfd: a[2],
                parent_tid: a[2],
                child_tid: a[3],
                tls: a[4],
                ..Args::default()
            }
        };
        if let Err(e) = linux_checks(c.flags) {
            return err(e);
        }
        if let Some((key, what, e)) = refused(&c) {
            // Go (1.23 and later) probes CLONE_PIDFD once per process with a child whose exit
            // signal is 0 and falls back on an error: every Go program that starts another would
            // print the note, so this one refusal is quiet (the errno still says it).
            if key == QUIET_PROBE && c.exit_signal == 0 {
                return err(e);
            }
            return self.refuse_clone(nr, &c, key, what, e);
        }
        let stack = c.stack.wrapping_add(c.stack_size);
        if stack != 0 && !self.mem.in_app(stack.wrapping_sub(8), 8) {
            return err(EINVAL);
        }
        let pidfd = if has(c.flags, libc::CLONE_PIDFD) {
            // Linux's put_user of the new fd: EFAULT, and no child, when it cannot be written.
            if !self.mem.user_can(c.pidfd, 4, true) {
                return err(EFAULT);
            }
            Some(c.pidfd)
        } else {
            None
        };
        let f = c.flags;
        let ptr = |flag: i32, p: u64| (has(f, flag) && self.mem.in_app(p, 4)).then_some(p);
        let req = CloneReq {
            stack,
            vfork: has(f, libc::CLONE_VFORK),
            tls: has(f, libc::CLONE_SETTLS).then_some(c.tls),
            parent_tid: ptr(libc::CLONE_PARENT_SETTID, c.parent_tid),
            child_tid: ptr(libc::CLONE_CHILD_SETTID, c.child_tid),
            clear_child_tid: ptr(libc::CLONE_CHILD_CLEARTID, c.child_tid),
            pidfd,
            clear_sighand: f & CLONE_CLEAR_SIGHAND != 0,
        };
        if !has(f, libc::CLONE_THREAD) {
            // A new process: a forked VMM. CLONE_VM with CLONE_VFORK (posix_spawn) is served as a
            // fork — the child gets a copy of the memory, which it only uses until it execs.
            if has(f, libc::CLONE_VM) && !has(f, libc::CLONE_VFORK) {
                return self.refuse(
                    nr,
                    "clone of a process sharing memory (CLONE_VM without CLONE_THREAD or CLONE_VFORK)",
                );
            }
            return Reply::Fork(req);
        }
        if stack == 0 {
            return err(EINVAL);
        }
        Reply::Clone(req)
    }

    /// clone3's struct at `at`, `size` bytes, read as Linux's copy_clone_args_from_user reads it
    /// (EFAULT on a page the guest may not read, E2BIG for a non-zero tail past what it knows)
    /// and checked as its clone3_args_valid checks it.
    fn clone3_args(&self, at: u64, size: u64) -> Result<Args, i32> {
        if size < ARGS_SIZE_VER0 {
            return Err(EINVAL);
        }
        if size > crate::mm::PAGE {
            return Err(E2BIG);
        }
        let mut b = [0u8; ARGS_SIZE];
        let known = (size as usize).min(ARGS_SIZE);
        self.mem.read_user(at, &mut b[..known]).map_err(|_| EFAULT)?;
        if size as usize > ARGS_SIZE {
            let mut tail = vec![0u8; size as usize - ARGS_SIZE];
            self.mem
                .read_user(at + ARGS_SIZE as u64, &mut tail)
                .map_err(|_| EFAULT)?;
            if tail.iter().any(|&x| x != 0) {
                return Err(E2BIG);
            }
        }
        let w = |k: usize| u64::from_le_bytes(b[8 * k..8 * k + 8].try_into().unwrap_or_default());
        let c = Args {
            flags: w(0),
            pidfd: w(1),
            child_tid: w(2),
            parent_tid: w(3),
            exit_signal: w(4),
            stack: w(5),
            stack_size: w(6),
            tls: w(7),
            set_tid: w(8),
            set_tid_size: w(9),
            cgroup: w(10),
        };
        let bad = c.set_tid_size > MAX_PID_NS_LEVEL
            || (c.set_tid == 0) != (c.set_tid_size == 0)
            || c.exit_signal > 64
            || (c.flags & CLONE_INTO_CGROUP != 0 && (c.cgroup > i32::MAX as u64 || size < ARGS_SIZE as u64))
            || c.flags & !(0xffff_ffff | CLONE_CLEAR_SIGHAND | CLONE_INTO_CGROUP) != 0
            || has(c.flags, libc::CLONE_DETACHED)
            || c.flags & CSIGNAL & !CLONE_NEWTIME != 0
            || (has(c.flags, libc::CLONE_SIGHAND) && c.flags & CLONE_CLEAR_SIGHAND != 0)
            || (has(c.flags, libc::CLONE_THREAD | libc::CLONE_PARENT) && c.exit_signal != 0)
            || (c.stack == 0) != (c.stack_size == 0);
        if bad {
            return Err(EINVAL);
        }
        Ok(c)
    }

    /// Says once per reason (`key`) that clone `c`'s `what` is refused, and returns `-e`.
    fn refuse_clone(&self, nr: u64, c: &Args, key: u64, what: &str, e: i32) -> Reply {
        if lock(&self.reported).insert(0x3_0000_0000 | key) {
            let name = multios_syscalls::by_number(nr as u32).unwrap_or("?");
            let errno = match e {
                EINVAL => "EINVAL",
                E2BIG => "E2BIG",
                _ => "ENOSYS",
            };
            self.note(format!(
                "system call {name} (nr {nr}): {what} is not supported by the LWK (flags {:#x}, exit \
                 signal {}); returning {errno}",
                c.flags, c.exit_signal
            ));
        }
        err(e)
    }

    /// CLONE_PIDFD: a pidfd for the forked child `pid`, in the guest's range as pidfd_open's
    /// (made under the low-fd lock, refused at the guest's RLIMIT_NOFILE). Made by the parent
    /// right after the fork, while the child is still making its VM, so the child cannot have
    /// exited and been reaped yet. On failure the child is killed and reaped — Linux would not
    /// have made it — and the errno is returned.
    pub(crate) fn child_pidfd(&self, pid: i32) -> Result<i32, i64> {
        let fd = {
            let _low = crate::sys::low_fds();
            crate::sys::raw_syscall(libc::SYS_pidfd_open as u64, [pid as u64, 0, 0, 0, 0, 0])
        };
        let fd = if fd < 0 { fd } else { self.limit_fd(fd) };
        if fd >= 0 {
            return Ok(fd as i32);
        }
        crate::sys::kill_and_reap(pid);
        Err(fd)
    }
}

/// Linux's copy_process checks of the flags alone (EINVAL), in its order.
fn linux_checks(f: u64) -> Result<(), i32> {
    let both = |x: i32, y: i32| has(f, x) && has(f, y);
    if both(libc::CLONE_NEWNS, libc::CLONE_FS) || both(libc::CLONE_NEWUSER, libc::CLONE_FS) {
        return Err(EINVAL);
    }
    if has(f, libc::CLONE_THREAD) && !has(f, libc::CLONE_SIGHAND) {
        return Err(EINVAL);
    }
    if has(f, libc::CLONE_SIGHAND) && !has(f, libc::CLONE_VM) {
        return Err(EINVAL);
    }
    if has(f, libc::CLONE_THREAD) && has(f, libc::CLONE_NEWUSER | libc::CLONE_NEWPID) {
        return Err(EINVAL);
    }
    if both(libc::CLONE_PIDFD, libc::CLONE_DETACHED) {
        return Err(EINVAL);
    }
    Ok(())
}

/// The key of the refusal of an exit signal other than SIGCHLD, quiet for exit signal 0.
const QUIET_PROBE: u64 = 8;

/// Why the LWK refuses clone `c`: a key for its one note, what is refused, and the errno.
fn refused(c: &Args) -> Option<(u64, &'static str, i32)> {
    let f = c.flags;
    if f & NAMESPACES != 0 {
        return Some((1, "a new namespace (CLONE_NEW*)", EINVAL));
    }
    if f & CLONE_INTO_CGROUP != 0 {
        return Some((2, "CLONE_INTO_CGROUP", EINVAL));
    }
    if c.set_tid_size != 0 {
        return Some((3, "choosing the child's pid (set_tid)", E2BIG));
    }
    if has(f, libc::CLONE_THREAD) {
        let shared = (libc::CLONE_FS | libc::CLONE_FILES | libc::CLONE_SYSVSEM) as u32 as u64;
        if f & shared != shared {
            return Some((
                4,
                "a thread with its own file table, fs information or SysV undo list (CLONE_THREAD \
                 without CLONE_FILES, CLONE_FS or CLONE_SYSVSEM)",
                ENOSYS,
            ));
        }
        if has(f, libc::CLONE_PIDFD) {
            return Some((5, "a thread's pidfd (CLONE_PIDFD with CLONE_THREAD)", EINVAL));
        }
        return None;
    }
    if has(
        f,
        libc::CLONE_FS | libc::CLONE_FILES | libc::CLONE_SIGHAND | libc::CLONE_SYSVSEM,
    ) {
        return Some((
            6,
            "a process sharing its parent's file table, fs information, signal handlers or SysV \
             undo list (CLONE_FILES, CLONE_FS, CLONE_SIGHAND or CLONE_SYSVSEM without CLONE_THREAD)",
            ENOSYS,
        ));
    }
    if has(f, libc::CLONE_PARENT) {
        return Some((7, "a child of the caller's parent (CLONE_PARENT)", ENOSYS));
    }
    if c.exit_signal != SIGCHLD as u64 {
        return Some((
            QUIET_PROBE,
            "a child whose exit signal is not SIGCHLD (a forked VMM's is)",
            ENOSYS,
        ));
    }
    None
}
