//! The signal system calls: sigaction, sigprocmask, sigpending, sigsuspend/pause, kill/tkill/tgkill,
//! sigtimedwait and sigaltstack — argument checks and guest memory here, the signal state and its
//! rules in `crate::signal` (rt_sigreturn is in `signal/frame.rs`, with the frame it reads).

use crate::kernel::{lock, Ctx, ExitStatus, Kernel, Reply};
use crate::signal::{AltStack, SigInfo, ERESTARTNOHAND, SI_TKILL, SI_USER, UNBLOCKABLE};

impl Kernel {
    pub(super) fn sigaction(&self, a: [u64; 6]) -> Reply {
        let sig = a[0];
        if sig == 0 || sig > 64 || a[3] != 8 {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        if a[1] != 0 && (sig == libc::SIGKILL as u64 || sig == libc::SIGSTOP as u64) {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        // As Linux: the new action is read (EFAULT), installed, then the old one written (EFAULT
        // where the guest may not write, the new action staying installed).
        let mut new = [0u8; 32];
        if a[1] != 0 {
            if let Err(e) = self.mem.read_user(a[1], &mut new) {
                return Reply::Ret(e);
            }
        }
        let mut acts = lock(&self.signals.actions);
        let slot = &mut acts[sig as usize];
        let mut old = [0u8; 32];
        for (k, w) in slot.raw.iter().enumerate() {
            old[8 * k..8 * k + 8].copy_from_slice(&w.to_le_bytes());
        }
        if a[1] != 0 {
            for (k, w) in new.chunks_exact(8).enumerate() {
                slot.raw[k] = u64::from_le_bytes(w.try_into().unwrap_or_default());
            }
            // Signals sent to the VMM process reach the guest only when it has a handler.
            crate::signal::host::follow(sig as i32, slot.raw[0], slot.raw[1]);
        }
        drop(acts);
        if a[2] != 0 {
            if let Err(e) = self.mem.write_user(a[2], &old) {
                return Reply::Ret(e);
            }
        }
        Reply::Ret(0)
    }

    pub(super) fn sigprocmask(&self, cpu: usize, a: [u64; 6]) -> Reply {
        if a[3] != 8 {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        // As Linux: the new set is read (EFAULT) and applied (EINVAL for a bad `how`), then the
        // old mask written (EFAULT where the guest may not write, the new mask staying).
        let set = if a[1] != 0 {
            match self.mem.read_user_u64(a[1]) {
                Ok(set) => Some(set),
                Err(e) => return Reply::Ret(e),
            }
        } else {
            None
        };
        let old = {
            let mut threads = lock(&self.threads);
            let Some(t) = threads.get_mut(cpu) else {
                return Reply::Ret(-(libc::ESRCH as i64));
            };
            let old = t.sig.mask;
            if let Some(set) = set {
                t.sig.mask = match a[0] as i32 {
                    libc::SIG_BLOCK => t.sig.mask | set,
                    libc::SIG_UNBLOCK => t.sig.mask & !set,
                    libc::SIG_SETMASK => set,
                    _ => return Reply::Ret(-(libc::EINVAL as i64)),
                } & !UNBLOCKABLE;
            }
            old
        };
        if a[2] != 0 {
            if let Err(e) = self.mem.write_user_u64(a[2], old) {
                return Reply::Ret(e);
            }
        }
        Reply::Ret(0)
    }

    /// rt_sigpending: the pending signals of the thread and the process.
    pub(super) fn sigpending(&self, cpu: usize, a: [u64; 6]) -> Reply {
        if a[1] != 8 {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        let own = lock(&self.threads).get(cpu).map_or(0, |t| t.sig.pending.set);
        let process = lock(&self.signals.pending).set;
        Reply::Ret(self.mem.write_user_u64(a[0], own | process).err().unwrap_or(0))
    }

    /// rt_sigsuspend and pause, on the vCPU thread: (with the mask given) wait until a signal is
    /// deliverable, then return EINTR; the handler runs on the way back and the caller's mask is
    /// restored after it.
    pub(super) fn sigsuspend(&self, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        if nr == libc::SYS_rt_sigsuspend as u64 {
            if a[1] != 8 {
                return Reply::Ret(-(libc::EINVAL as i64));
            }
            match self.mem.read_user_u64(a[0]) {
                Ok(mask) => self.install_call_mask(cpu, mask),
                Err(e) => return Reply::Ret(e),
            }
        }
        while !self.deliverable(cpu) && lock(&self.exit).is_none() {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        // EINTR after a handler; restarted (with the mask again) when the signal is ignored.
        Reply::Ret(ERESTARTNOHAND)
    }

    /// kill, tkill, tgkill.
    pub(super) fn kill(&self, ctx: Ctx<'_>, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        let (target, sig) = match nr as i64 {
            libc::SYS_kill | libc::SYS_tkill => (a[0] as i32, a[1]),
            _ => (a[1] as i32, a[2]),
        };
        let process = nr as i64 == libc::SYS_kill;
        if process && (target == 0 || target < -1) {
            return self.kill_group(target, sig);
        }
        let to_self = if process {
            target == self.pid()
        } else {
            (nr as i64 == libc::SYS_tkill || a[0] as i32 == self.pid()) && self.is_own_tid(target)
        };
        if !to_self {
            // Every process (-1): a real signal would reach every process of the user on the
            // host, so it is refused; signal 0 only probes for permission and delivers nothing,
            // so it is made as asked.
            if target == -1 && process && sig != 0 {
                return Reply::Ret(-(libc::EPERM as i64));
            }
            return Reply::Ret(crate::sys::raw_syscall(nr, a));
        }
        if sig == 0 {
            return Reply::Ret(0);
        }
        if sig > 64 {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        if sig == libc::SIGKILL as u64 {
            // Not catchable: the process ends at once.
            return match ctx {
                Ctx::Proxy => Reply::NeedVcpu,
                Ctx::Vcpu(_) => {
                    lock(&self.exit).get_or_insert(ExitStatus::Signal(sig as i32));
                    Reply::Stop
                }
            };
        }
        let info = SigInfo {
            code: if process { SI_USER } else { SI_TKILL },
            pid: self.pid(),
            uid: crate::sys::uid(),
            ..Default::default()
        };
        let thread = if process {
            None
        } else {
            lock(&self.threads)
                .iter()
                .position(|t| t.alive && t.tid == target)
        };
        self.queue_signal(thread.or((!process).then_some(cpu)), sig, info);
        if !self.deliverable(cpu) {
            // Another thread must take it: the signal pump kicks it.
            crate::signal::host::nudge();
        }
        Reply::Ret(0)
    }

    /// kill(0, sig) and kill(-pgid, sig): a process group. The guest's process group is the
    /// VMM's (the VMM is the guest's process, its children the guest's children, setpgid and
    /// setsid are delegated), and its other members are processes of their own — forked VMMs,
    /// whose signal pumps hand what they receive to their guests as from any sender, or programs
    /// outside the LWK — so the host sends the signal to the group, as Linux would. The VMM's
    /// own copy is the caller's: it reaches the guest through the signal pump like a signal from
    /// another process (sent by this pid), and the call waits until it is pending, so a caller
    /// that does not block it takes it before kill returns, as on Linux. The VMM keeps SIGUSR2
    /// (its kick) and SIGPIPE for itself: the caller's copy of those is made here (other VMMs of
    /// the group do not hand them over, as for any sender).
    fn kill_group(&self, target: i32, sig: u64) -> Reply {
        if sig > 64 {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        let own_group = crate::sys::raw_syscall(libc::SYS_getpgid as u64, [0; 6]) as i32;
        let r = crate::sys::raw_syscall(libc::SYS_kill as u64, [target as u64, sig, 0, 0, 0, 0]);
        let to_self = target == 0 || target.checked_neg() == Some(own_group);
        if r < 0 || sig == 0 || !to_self {
            return Reply::Ret(r);
        }
        if sig == libc::SIGUSR2 as u64 || sig == libc::SIGPIPE as u64 {
            let info = SigInfo {
                code: SI_USER,
                pid: self.pid(),
                uid: crate::sys::uid(),
                ..Default::default()
            };
            self.queue_signal(None, sig, info);
            crate::signal::host::nudge();
        } else {
            self.sync_host_signals();
        }
        Reply::Ret(0)
    }

    /// rt_sigtimedwait(set, info, timeout, 8), on the vCPU thread: takes a pending signal of `set`
    /// (blocked ones included, the usual case) and returns its number with its siginfo; EAGAIN
    /// when the timeout passes first, EINTR when a handled signal outside `set` arrives.
    pub(super) fn sigtimedwait(&self, cpu: usize, a: [u64; 6]) -> Reply {
        if a[3] != 8 {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        let set = match self.mem.read_user_u64(a[0]) {
            Ok(set) => set & !UNBLOCKABLE,
            Err(e) => return Reply::Ret(e),
        };
        if a[1] != 0 && !self.mem.in_app(a[1], 128) {
            return Reply::Ret(-(libc::EFAULT as i64));
        }
        let deadline = if a[2] != 0 {
            let (sec, nsec) = match (self.mem.read_user_u64(a[2]), self.mem.read_user_u64(a[2] + 8)) {
                (Ok(s), Ok(n)) => (s as i64, n as i64),
                _ => return Reply::Ret(-(libc::EFAULT as i64)),
            };
            if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
                return Reply::Ret(-(libc::EINVAL as i64));
            }
            let d = std::time::Duration::new(sec as u64, nsec as u32);
            Some(std::time::Instant::now().checked_add(d))
        } else {
            None
        };
        loop {
            if let Some((sig, info)) = self.take_signal_in(cpu, Some(set)) {
                // As Linux: the signal is taken, and EFAULT when its siginfo cannot be written.
                if a[1] != 0 {
                    if let Err(e) = self.mem.write_user(a[1], &info.bytes(sig)) {
                        return Reply::Ret(e);
                    }
                }
                return Reply::Ret(sig as i64);
            }
            if self.deliverable(cpu) || lock(&self.exit).is_some() {
                return Reply::Ret(-(libc::EINTR as i64));
            }
            // A timeout too large for an Instant never passes.
            if deadline.is_some_and(|d| d.is_some_and(|d| std::time::Instant::now() >= d)) {
                return Reply::Ret(-(libc::EAGAIN as i64));
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    /// sigaltstack(ss, old_ss) for vCPU `cpu`'s thread, judged from the stack pointer at the call
    /// (the stub saved it in the vCPU's slot): SS_ONSTACK in the old value, EPERM for a change
    /// while running on the alternate stack.
    pub(super) fn sigaltstack(&self, cpu: usize, a: [u64; 6]) -> Reply {
        let (new, old) = (a[0], a[1]);
        // As Linux: the new stack is read (EFAULT), judged and set, then the old one written
        // (EFAULT where the guest may not write, the new stack staying set).
        let mut ss = [0u8; 24];
        if new != 0 {
            if let Err(e) = self.mem.read_user(new, &mut ss) {
                return Reply::Ret(e);
            }
        }
        let sp = self.caller_rsp(cpu);
        let current = lock(&self.threads).get(cpu).and_then(|t| t.sig.altstack);
        if new != 0 && current.is_some_and(|c| c.contains(sp)) {
            return Reply::Ret(-(libc::EPERM as i64));
        }
        let parsed = if new != 0 {
            match AltStack::parse(&ss) {
                Ok(alt) => Some(alt),
                Err(e) => return Reply::Ret(-(e as i64)),
            }
        } else {
            None
        };
        if let Some(alt) = parsed {
            if let Some(t) = lock(&self.threads).get_mut(cpu) {
                t.sig.altstack = alt;
            }
        }
        if old != 0 {
            if let Err(e) = self.mem.write_user(old, &AltStack::stack_t(current, Some(sp))) {
                return Reply::Ret(e);
            }
        }
        Reply::Ret(0)
    }
}
