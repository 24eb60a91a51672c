//! Queued signals (issue #14): rt_sigqueueinfo and rt_tgsigqueueinfo (sigqueue, pthread_sigqueue)
//! to the guest itself, and the POSIX timers that signal one thread (timer_create with
//! SIGEV_THREAD_ID). The queue itself is `signal/queue.rs`; signals sent to the VMM from outside
//! (another process's sigqueue, a timer's SIGEV_SIGNAL) arrive with their siginfo through
//! `signal/host.rs`.

#![allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case

use crate::kernel::{lock, Ctx, Kernel, Reply};
use crate::signal::queue::NotQueued;
use crate::signal::{SigInfo, SI_TIMER, SI_TKILL};
use libc::*;

fn err(e: i32) -> Reply {
    Reply::Ret(-(e as i64))
}

/// sigev_notify: the signal goes to the thread in sigev_notify_thread_id (Linux's SIGEV_THREAD_ID).
const SIGEV_THREAD_ID: i32 = 4;
/// sizeof(struct sigevent) on x86-64.
const SIGEVENT_SIZE: usize = 64;
/// pidfd_send_signal's flags (Linux 6.9).
const PIDFD_SIGNAL_THREAD: u64 = 1;
const PIDFD_SIGNAL_THREAD_GROUP: u64 = 2;

impl Kernel {
    /// rt_sigqueueinfo(tgid, sig, info) and rt_tgsigqueueinfo(tgid, tid, sig, info). To the
    /// guest itself the instance is queued with the caller's siginfo (si_value included) — to
    /// the process, or to one of its threads; to any other process the host kernel sends it.
    pub(super) fn sigqueueinfo(&self, ctx: Ctx<'_>, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        let to_thread = nr as i64 == SYS_rt_tgsigqueueinfo;
        let (tgid, tid, sig, uinfo) = if to_thread {
            (a[0] as i32, a[1] as i32, a[2], a[3])
        } else {
            (a[0] as i32, 0, a[1], a[2])
        };
        if !self.mem.user_can(uinfo, 128, false) {
            return err(EFAULT);
        }
        if tgid != self.pid() {
            // Another process: Linux's permission rules and delivery (the guest's siginfo is
            // read by the kernel from the checked guest buffer).
            return Reply::Ret(crate::sys::raw_syscall(nr, a));
        }
        let thread = if to_thread {
            match lock(&self.threads).iter().position(|t| t.alive && t.tid == tid) {
                Some(id) => Some(id),
                None => return err(ESRCH),
            }
        } else {
            None
        };
        if sig > 64 {
            return err(EINVAL);
        }
        if sig == 0 {
            return Reply::Ret(0);
        }
        if sig == SIGKILL as u64 || sig == SIGSTOP as u64 {
            // Not catchable: what kill/tgkill does with them.
            let kill_args = if to_thread {
                [tgid as u64, tid as u64, sig, 0, 0, 0]
            } else {
                [tgid as u64, sig, 0, 0, 0, 0]
            };
            let kill_nr = if to_thread { SYS_tgkill } else { SYS_kill };
            return self.kill(ctx, cpu, kill_nr as u64, kill_args);
        }
        let mut bytes = [0u8; 128];
        self.mem.read(uinfo, &mut bytes);
        // To itself a process may send any si_code (Linux checks the code only toward others).
        let info = SigInfo::from_guest(&bytes);
        match self.try_queue_signal(thread, sig, info) {
            Err(NotQueued::Full) => return err(EAGAIN),
            Ok(()) | Err(NotQueued::Coalesced) => {}
        }
        if !self.deliverable(cpu) {
            // Another thread must take it: the signal pump kicks it.
            crate::signal::host::nudge();
        }
        Reply::Ret(0)
    }

    /// timer_create(clockid, sevp, timerid). A timer that signals one thread (SIGEV_THREAD_ID)
    /// names a guest tid the host does not know: the host timer signals the signal pump's thread
    /// instead, and the pump hands each expiry to the guest thread (`timer_thread`). Every other
    /// timer signals the VMM process, which the guest is, with the host's siginfo (si_value,
    /// si_timerid, si_overrun): delegated as it is.
    pub(super) fn timer_create(&self, nr: u64, a: [u64; 6]) -> Reply {
        let (sevp, idp) = (a[1], a[2]);
        if sevp == 0 || !self.mem.user_can(sevp, SIGEVENT_SIZE as u64, false) {
            return self.delegate(nr, a);
        }
        let mut ev = [0u8; SIGEVENT_SIZE];
        self.mem.read(sevp, &mut ev);
        let word = |at: usize| i32::from_le_bytes([ev[at], ev[at + 1], ev[at + 2], ev[at + 3]]);
        let (signo, notify, tid) = (word(8), word(12), word(16));
        if notify != SIGEV_THREAD_ID {
            return self.delegate(nr, a);
        }
        if !self.mem.user_can(idp, 4, true) {
            return err(EFAULT);
        }
        let Some(vcpu) = lock(&self.threads).iter().position(|t| t.alive && t.tid == tid) else {
            return err(EINVAL);
        };
        let pump = self.signals.pump_tid.load(std::sync::atomic::Ordering::Acquire);
        if pump == 0 {
            return err(EINVAL);
        }
        if signo == 32 {
            // glibc's SIGTIMER: its SIGEV_THREAD timers wait for it in a helper thread.
            crate::signal::host::catch_internal(32);
        }
        ev[16..20].copy_from_slice(&pump.to_le_bytes());
        // The kernel reads our copy of the sigevent and writes the id into the checked guest word.
        let r = crate::sys::timer_create(a[0] as i32, &ev, idp);
        if r == 0 {
            let mut id = [0u8; 4];
            self.mem.read(idp, &mut id);
            lock(&self.signals.thread_timers).insert(i32::from_le_bytes(id), (vcpu, tid));
        }
        Reply::Ret(r)
    }

    /// pidfd_send_signal(pidfd, sig, info, flags). To the guest's own process it is served as
    /// kill/tgkill or rt_sigqueueinfo/rt_tgsigqueueinfo to itself are: queued by the LWK, with
    /// Linux's checks (issue #16: through the host, a siginfo with si_code ≥ 0 was EPERM, as the
    /// proxy thread making the call is not the VMM's leader; and a fault signal with si_code > 0
    /// must not reach the VMM's own fault handler, `signal/host.rs`). Otherwise — another
    /// process, a /proc/PID directory, a thread's pidfd, a process group, a kernel without
    /// PIDFD_GET_INFO — the host's. Sent to the guest through the host, the signal reaches the
    /// VMM and the signal pump makes it pending for the guest later; Linux has it pending when the
    /// call returns (CPython's test_pidfd_send_signal expects KeyboardInterrupt from the call
    /// itself). So after a signal was sent the call waits for the pump to take what the host
    /// holds ([`Self::sync_host_signals`]).
    pub(super) fn pidfd_send_signal(&self, ctx: Ctx<'_>, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        let thread = match a[3] {
            0 | PIDFD_SIGNAL_THREAD_GROUP => Some(false),
            PIDFD_SIGNAL_THREAD => Some(true),
            _ => None,
        };
        let fd = a[0] as i32;
        if let Some(thread) = thread.filter(|_| (0..self.fd_floor).contains(&fd)) {
            if crate::sys::pidfd_process(fd) == Some(self.pid()) {
                return self.pidfd_signal_self(ctx, cpu, thread, a[1], a[2]);
            }
        }
        let r = self.delegate(nr, a);
        if r == Reply::Ret(0) && a[1] != 0 {
            self.sync_host_signals();
        }
        r
    }

    /// pidfd_send_signal of `sig` (siginfo at `uinfo`, or none) to the guest's own process, or
    /// to its leader thread when `thread` (PIDFD_SIGNAL_THREAD), in Linux's order: the siginfo
    /// read (EFAULT), its si_signo the signal (EINVAL), an si_code ≥ 0 or SI_TKILL only from the
    /// leader thread itself (EPERM: Linux compares the caller's pid with the pidfd's).
    fn pidfd_signal_self(&self, ctx: Ctx<'_>, cpu: usize, thread: bool, sig: u64, uinfo: u64) -> Reply {
        let pid = self.pid() as u64;
        if uinfo == 0 {
            return if thread {
                self.kill(ctx, cpu, SYS_tgkill as u64, [pid, pid, sig, 0, 0, 0])
            } else {
                self.kill(ctx, cpu, SYS_kill as u64, [pid, sig, 0, 0, 0, 0])
            };
        }
        let mut b = [0u8; 128];
        if let Err(e) = self.mem.read_user(uinfo, &mut b) {
            return Reply::Ret(e);
        }
        let word = |at: usize| i32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        if word(0) as i64 != sig as i64 {
            return err(EINVAL);
        }
        let code = word(8);
        let leader = lock(&self.threads).get(cpu).is_some_and(|t| t.tid == self.pid());
        if (code >= 0 || code == SI_TKILL) && !leader {
            return err(EPERM);
        }
        if thread {
            self.sigqueueinfo(
                ctx,
                cpu,
                SYS_rt_tgsigqueueinfo as u64,
                [pid, pid, sig, uinfo, 0, 0],
            )
        } else {
            self.sigqueueinfo(ctx, cpu, SYS_rt_sigqueueinfo as u64, [pid, sig, uinfo, 0, 0, 0])
        }
    }

    /// Waits (at most 100 ms) until a round of the signal pump that began after this call has
    /// made every signal the host holds for the guest pending: a signal the guest sent itself
    /// through the host is then pending when its call returns, as on Linux.
    pub(crate) fn sync_host_signals(&self) {
        use std::sync::atomic::Ordering::Acquire;
        if self.signals.pump_tid.load(Acquire) == 0 {
            return;
        }
        let begun = self.signals.pump_begun.load(Acquire);
        crate::signal::host::nudge();
        let t0 = std::time::Instant::now();
        while self.signals.pump_done.load(Acquire) <= begun
            && t0.elapsed() < std::time::Duration::from_millis(100)
        {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }

    /// timer_delete(id): the host's, and the timer leaves the table of thread timers.
    pub(super) fn timer_delete(&self, nr: u64, a: [u64; 6]) -> Reply {
        let r = self.delegate(nr, a);
        if r == Reply::Ret(0) {
            lock(&self.signals.thread_timers).remove(&(a[0] as i32));
        }
        r
    }

    /// The guest thread (vCPU) a host signal with siginfo `info` is for: the thread a
    /// SIGEV_THREAD_ID timer names, while that thread lives; None for the process.
    pub(crate) fn timer_thread(&self, info: &SigInfo) -> Option<usize> {
        if info.code != SI_TIMER {
            return None;
        }
        // si_timerid is the first int of the union (byte 16 of the siginfo).
        let id = info.fields?[0] as u32 as i32;
        let (vcpu, tid) = *lock(&self.signals.thread_timers).get(&id)?;
        lock(&self.threads)
            .get(vcpu)
            .is_some_and(|t| t.alive && t.tid == tid)
            .then_some(vcpu)
    }
}
