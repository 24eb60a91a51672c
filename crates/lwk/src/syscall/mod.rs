//! The LWK's system-call layer: local calls served by the VMM, delegated calls performed by the
//! proxy after their arguments have been checked against guest memory.

pub mod check;
mod clockid;
mod clone;
mod code;
mod cpus;
mod delegate;
pub(crate) mod exec;
mod fdrange;
mod interrupt;
pub mod layout;
pub(crate) mod linux_exec;
mod local;
mod madvise;
mod maps;
mod mseal;
mod netdev;
mod onvcpu;
mod open;
mod opened;
mod ownexe;
mod perf;
mod populate;
mod prctl;
mod processcpu;
mod procstatus;
mod protect;
mod robust;
mod schedattr;
mod shared;
pub mod signal;
mod signalfd;
mod sigqueue;
mod sockopt;
mod sysinfo;
mod uring;
mod uring_sqe;
mod vfork;

use crate::kernel::{lock, Ctx, ExitStatus, Kernel, Reply};
use crate::stats::Served;
use std::time::Instant;

pub use perf::init_pmu_types;

pub const ENOSYS: i64 = -(libc::ENOSYS as i64);

impl Kernel {
    /// Serves system call `nr` with arguments `a`.
    pub fn serve(&self, ctx: Ctx<'_>, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        let t0 = Instant::now();
        let local = self.policy.is_local(nr) || self.may_read_own_exe(nr, &a);
        if matches!(ctx, Ctx::Proxy) && self.uring_wants_vcpu(nr, &a) {
            // A ring one task must drive (SINGLE_ISSUER/DEFER_TASKRUN): the guest thread's own.
            return Reply::NeedVcpu;
        }
        if matches!(ctx, Ctx::Proxy) && !local && per_thread(nr, &a) {
            // A memory policy is the calling thread's (issue #15: hwloc sets and reads one in
            // every Open MPI start-up): made by the guest thread's own vCPU thread, the one that
            // faults its pages in, and read back from there; so are its CPU clock and usage.
            return Reply::NeedVcpu;
        }
        if matches!(ctx, Ctx::Proxy) && local && self.edits_host_mappings(nr, &a) {
            // Its TLB flushes would wait for the calling vCPU to leave guest mode (`onvcpu.rs`).
            return Reply::NeedVcpu;
        }
        // On the vCPU's thread the same calls are made with the proxy parked (`aside.rs`).
        let _aside = (matches!(ctx, Ctx::Vcpu(_)) && local && self.edits_host_mappings(nr, &a))
            .then(|| self.aside.stand_aside())
            .flatten();
        let a = match self.perf_args(cpu, nr, a) {
            Ok(a) => a,
            Err(r) => return r,
        };
        let a = match self.thread_clock_args(cpu, nr, a) {
            Ok(a) => a,
            Err(r) => return r,
        };
        let reply = if matches!(ctx, Ctx::Proxy)
            && self.live_threads.load(std::sync::atomic::Ordering::Acquire) > 1
            && may_block(nr, &a)
            && !self.returns_at_once(nr, &a)
        {
            // With several threads a blocking call must not hold the one proxy: its own vCPU
            // thread performs it (McKernel's per-thread proxy, in effect).
            return Reply::NeedVcpu;
        } else if let Some(r) = self.signalfd_call(cpu, nr, &a) {
            // A read or close of a signalfd (`signalfd.rs`).
            r
        } else if let Some(r) = self.process_cpu_call(nr, &a) {
            // The guest's own CPU time, not the VMM's (`processcpu.rs`).
            r
        } else if local {
            self.local(ctx, cpu, nr, a)
        } else {
            // Interrupted by a signal the guest takes, or restarted as Linux would (`interrupt.rs`).
            let r = self.delegate_interruptibly(cpu, nr, a);
            // The signal Linux sends the caller with this result: SIGPIPE with EPIPE from a
            // write-like call, SIGXFSZ with EFBIG past RLIMIT_FSIZE. The VMM's own copy (the
            // host sent it to the thread that made the call) is ignored or stays blocked there.
            let sent = match r {
                Reply::Ret(e) if e == -(libc::EPIPE as i64) && sigpipe_due(nr, &a) => Some(libc::SIGPIPE),
                Reply::Ret(e) if e == -(libc::EFBIG as i64) && sigxfsz_due(nr) => Some(libc::SIGXFSZ),
                _ => None,
            };
            if let Some(sig) = sent {
                let handler = lock(&self.signals.actions)[sig as usize].raw[0];
                let blocked = self.sigmask_of(cpu) & (1 << (sig - 1)) != 0;
                if handler == libc::SIG_IGN as u64 {
                } else if handler != libc::SIG_DFL as u64 || blocked {
                    // A handler runs on the way back; a blocked signal stays pending (and kills
                    // at its default action once unblocked), as on Linux.
                    self.queue_signal(Some(cpu), sig as u64, self.kernel_info());
                } else {
                    // Linux would end the caller with the signal; the LWK ends the guest the same
                    // way (the vCPU thread repeats the call to stop).
                    match ctx {
                        Ctx::Proxy => return Reply::NeedVcpu,
                        Ctx::Vcpu(_) => {
                            lock(&self.exit).get_or_insert(ExitStatus::Signal(sig));
                            return Reply::Stop;
                        }
                    }
                }
            }
            r
        };
        if reply != Reply::NeedVcpu && self.came_through_trap(cpu) {
            // Counted once: a call the proxy hands to the vCPU thread is served again there.
            lock(&self.stats).record_trap(nr);
        }
        if let Reply::Ret(r) = reply {
            let ns = t0.elapsed().as_nanos() as u64;
            lock(&self.stats).record(nr, ns, r, if local { Served::Local } else { Served::Delegated });
            self.trace_call(cpu, nr, ns, r, local);
        } else if matches!(reply, Reply::Stop | Reply::ThreadExit | Reply::Resumed) {
            lock(&self.stats).record(nr, 0, 0, Served::Local);
        }
        reply
    }

    /// True when vCPU `cpu`'s current call entered through the `syscall` instruction (its trap to
    /// LSTAR): r11 held the flags. A rewritten site's thunk enters the stub with r11 = the stub's
    /// address (`rewrite.rs`), which the stub stores where the trap's flags go.
    fn came_through_trap(&self, cpu: usize) -> bool {
        let slot = crate::stub::slot_addr(cpu as u64);
        self.mem.read_u64(slot + multios_lwk_abi::offset::RFLAGS as u64) != crate::stub::stub_addr(cpu as u64)
    }

    /// Records a clone that made a thread (a vCPU and its host thread) in `ns`: the machine
    /// serves it (`machine.rs`), so it is counted and traced here, with its time.
    pub(crate) fn record_clone(&self, cpu: usize, nr: u64, ns: u64, ret: i64) {
        lock(&self.stats).record(nr, ns, ret, Served::Local);
        self.trace_call(cpu, nr, ns, ret, true);
    }

    /// siginfo of a signal the kernel (here: the LWK) raises.
    fn kernel_info(&self) -> crate::signal::SigInfo {
        crate::signal::SigInfo {
            code: crate::signal::SI_USER,
            pid: self.pid(),
            uid: crate::sys::uid(),
            ..Default::default()
        }
    }

    /// Refuses `nr` with ENOSYS, reporting it once with what would cover it.
    pub(crate) fn refuse(&self, nr: u64, why: &str) -> Reply {
        if lock(&self.reported).insert(nr) {
            let name = multios_syscalls::by_number(nr as u32).unwrap_or("?");
            self.note(format!(
                "system call {name} (nr {nr}) is not supported by the LWK: {why}; returning ENOSYS"
            ));
        }
        Reply::Ret(ENOSYS)
    }

    /// A readlink whose name ends in `exe`: served locally, the guest's own `exe` link answered
    /// with its program's path (`ownexe.rs`), any other name delegated from there.
    fn may_read_own_exe(&self, nr: u64, a: &[u64; 6]) -> bool {
        let path = match nr as i64 {
            libc::SYS_readlink => a[0],
            libc::SYS_readlinkat => a[1],
            _ => return false,
        };
        self.mem
            .read_cstr(path, 4096)
            .is_some_and(|p| ownexe::names_exe(&p))
    }
}

/// Delegated calls about the calling Linux thread itself, with no thread argument to redirect:
/// the guest thread's vCPU thread must make them. Besides the memory policy, the calling thread's
/// CPU clock (CLOCK_THREAD_CPUTIME_ID: read, resolution, sleep, a timer on it) and
/// getrusage(RUSAGE_THREAD): made by the proxy they were the proxy's (issue #16: a thread's 0.2 s
/// of compute read as 0.01 s, and a thread CPU timer never fired while the proxy was parked).
fn per_thread(nr: u64, a: &[u64; 6]) -> bool {
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    const RUSAGE_THREAD: i32 = 1;
    match nr as i64 {
        libc::SYS_set_mempolicy | libc::SYS_get_mempolicy => true,
        libc::SYS_clock_gettime
        | libc::SYS_clock_getres
        | libc::SYS_clock_nanosleep
        | libc::SYS_timer_create => {
            a[0] as i32 == CLOCK_THREAD_CPUTIME_ID || clockid::thread_clock_tid(a[0] as i32) == Some(0)
        }
        libc::SYS_getrusage => a[0] as i32 == RUSAGE_THREAD,
        _ => false,
    }
}

impl Kernel {
    /// Calls of the kinds [`may_block`] names that return at once here, which the proxy may serve
    /// with several threads running (issue #15: each would otherwise take the doorbell exit,
    /// ≈ 25–30 µs; an Open MPI start-up's progress threads read O_NONBLOCK eventfds and sockets,
    /// and dlopen reads ELF headers from files): a read, receive, accept or connect on a
    /// descriptor that never waits (O_NONBLOCK, a regular file, a block device, a directory) or
    /// with MSG_DONTWAIT; poll and epoll_wait with a zero timeout; wait4/waitid with WNOHANG;
    /// flock with LOCK_NB. Another thread that clears O_NONBLOCK meanwhile makes the proxy wait
    /// in the call: the other threads' calls then take the doorbell until it returns.
    #[allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case
    fn returns_at_once(&self, nr: u64, a: &[u64; 6]) -> bool {
        use libc::*;
        let quick_fd = |fd: u64| {
            let fd = fd as i32;
            (0..self.fd_floor).contains(&fd) && crate::sys::never_waits(fd)
        };
        match nr as i64 {
            SYS_read | SYS_readv | SYS_accept | SYS_accept4 | SYS_connect => quick_fd(a[0]),
            SYS_recvfrom => a[3] as i32 & MSG_DONTWAIT != 0 || quick_fd(a[0]),
            SYS_recvmsg => a[2] as i32 & MSG_DONTWAIT != 0 || quick_fd(a[0]),
            SYS_poll => a[2] as i32 == 0,
            SYS_epoll_wait | SYS_epoll_pwait => a[3] as i32 == 0,
            SYS_wait4 => a[2] as i32 & WNOHANG != 0,
            SYS_waitid => a[3] as i32 & WNOHANG != 0,
            SYS_flock => a[1] as i32 & LOCK_NB != 0,
            _ => false,
        }
    }
}

/// Calls that may wait for another party: the blocking kinds [`may_block`] names, and writes,
/// sends and opens (a full pipe or socket, a FIFO without its other end), SysV messages and
/// semaphores, signal waits. A vCPU thread waiting for the proxy to finish one of these yields its
/// CPU (`machine/claimed.rs`): the other party may be a guest process whose vCPU shares that CPU.
#[allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case
pub(crate) fn may_wait_for_another(nr: u64, a: &[u64; 6]) -> bool {
    use libc::*;
    may_block(nr, a)
        || [
            SYS_write,
            SYS_writev,
            SYS_sendto,
            SYS_sendmsg,
            SYS_sendmmsg,
            SYS_recvmmsg,
            SYS_splice,
            SYS_tee,
            SYS_open,
            SYS_openat,
            SYS_msgsnd,
            SYS_msgrcv,
            SYS_semop,
            SYS_semtimedop,
            SYS_rt_sigsuspend,
            SYS_rt_sigtimedwait,
            SYS_epoll_pwait2,
            SYS_fcntl,
        ]
        .contains(&(nr as i64))
}

/// Calls that may block for a long time (they must not occupy the shared proxy).
#[allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case
fn may_block(nr: u64, a: &[u64; 6]) -> bool {
    use libc::*;
    match nr as i64 {
        SYS_futex => matches!(
            a[1] as i32 & 127,
            FUTEX_WAIT | FUTEX_WAIT_BITSET | FUTEX_LOCK_PI | 13
        ),
        // io_uring_enter that waits for completions (IORING_ENTER_GETEVENTS, min_complete > 0).
        SYS_io_uring_enter => a[3] & 1 != 0 && a[2] > 0,
        n => [
            SYS_read,
            SYS_readv,
            SYS_recvfrom,
            SYS_recvmsg,
            SYS_accept,
            SYS_accept4,
            SYS_connect,
            SYS_poll,
            SYS_ppoll,
            SYS_select,
            SYS_pselect6,
            SYS_epoll_wait,
            SYS_epoll_pwait,
            SYS_nanosleep,
            SYS_clock_nanosleep,
            SYS_wait4,
            SYS_waitid,
            SYS_pause,
            SYS_flock,
            SYS_msgsnd,
            SYS_msgrcv,
            SYS_semop,
            SYS_semtimedop,
        ]
        .contains(&n),
    }
}

/// True when an EPIPE from `nr` comes with SIGPIPE on Linux: a write-like call (splice and tee
/// into a pipe without readers too) without MSG_NOSIGNAL.
#[allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case
fn sigpipe_due(nr: u64, a: &[u64; 6]) -> bool {
    use libc::*;
    match nr as i64 {
        SYS_sendto => a[3] & MSG_NOSIGNAL as u64 == 0,
        SYS_sendmsg => a[2] & MSG_NOSIGNAL as u64 == 0,
        SYS_write | SYS_writev | SYS_pwrite64 | SYS_pwritev | SYS_pwritev2 | SYS_sendfile | SYS_splice
        | SYS_tee | SYS_vmsplice => true,
        _ => false,
    }
}

/// True when an EFBIG from `nr` comes with SIGXFSZ on Linux: a call that writes or extends a file
/// past RLIMIT_FSIZE (the VMM's, which the guest's setrlimit sets). Without a finite limit EFBIG is
/// the file system's maximum size, which sends nothing.
#[allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case
fn sigxfsz_due(nr: u64) -> bool {
    use libc::*;
    matches!(
        nr as i64,
        SYS_write
            | SYS_writev
            | SYS_pwrite64
            | SYS_pwritev
            | SYS_pwritev2
            | SYS_sendfile
            | SYS_splice
            | SYS_copy_file_range
            | SYS_truncate
            | SYS_ftruncate
            | SYS_fallocate
    ) && crate::sys::rlimit(RLIMIT_FSIZE).0 != u64::MAX
}

#[cfg(test)]
mod tests {
    use super::may_wait_for_another;

    /// A vCPU waiting for one of these yields its CPU (a pipeline's other stage may need it); for
    /// the rest it keeps the CPU for its spin (`machine/claimed.rs`).
    #[test]
    fn issue_15_calls_that_may_wait_for_another_party() {
        let a = [0u64; 6];
        for nr in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_wait4,
            libc::SYS_openat,
            libc::SYS_poll,
        ] {
            assert!(may_wait_for_another(nr as u64, &a), "{nr}");
        }
        for nr in [
            libc::SYS_mmap,
            libc::SYS_mprotect,
            libc::SYS_exit_group,
            libc::SYS_brk,
            libc::SYS_close,
        ] {
            assert!(!may_wait_for_another(nr as u64, &a), "{nr}");
        }
    }
}
