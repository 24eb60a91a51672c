//! Delegated calls a signal can interrupt, as on Linux: the serving host thread is registered for
//! the signal pump's kicks, a mask the call installs is applied by the LWK, and an interrupted
//! call ends with Linux's internal restart codes (EINTR or the call again, decided at delivery).

use crate::kernel::{lock, Kernel, Reply};
use crate::signal::{is_restart, ERESTARTNOHAND, ERESTARTNOINTR, ERESTARTSYS};

/// The internal result of call `nr` interrupted by a signal: ERESTARTNOHAND for the calls Linux
/// never restarts after a handler (sleeps, waits for events or signals; signal(7)), ERESTARTSYS
/// (restarted under SA_RESTART) for the others.
#[allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case
fn interrupted_code(nr: u64) -> Reply {
    use libc::*;
    let never_restarted = [
        SYS_select,
        SYS_pselect6,
        SYS_poll,
        SYS_ppoll,
        SYS_epoll_wait,
        SYS_epoll_pwait,
        441, // epoll_pwait2
        SYS_nanosleep,
        SYS_clock_nanosleep,
        SYS_pause,
        SYS_rt_sigsuspend,
        SYS_rt_sigtimedwait,
        // System V IPC waits (signal(7): never restarted after a handler).
        SYS_msgsnd,
        SYS_msgrcv,
        SYS_semop,
        SYS_semtimedop,
    ];
    Reply::Ret(if never_restarted.contains(&(nr as i64)) {
        ERESTARTNOHAND
    } else {
        ERESTARTSYS
    })
}

impl Kernel {
    /// The signal mask delegated call `nr` installs while it waits (pselect6, ppoll, epoll_pwait,
    /// epoll_pwait2), and its arguments without it: the LWK applies the guest's mask itself, and
    /// the host call runs under the serving thread's own mask, which lets the VMM's kick through.
    /// `Err` is the errno Linux returns for a bad mask argument.
    #[allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case
    fn call_mask(&self, nr: u64, a: &[u64; 6]) -> Result<Option<(u64, [u64; 6])>, i64> {
        use libc::*;
        const SYS_EPOLL_PWAIT2: i64 = 441;
        let (ptr_arg, size) = match nr as i64 {
            SYS_pselect6 => {
                // The sixth argument points at { const sigset_t *ss; size_t ss_len; }.
                if a[5] == 0 {
                    return Ok(None);
                }
                let (ss, len) = (self.mem.read_user_u64(a[5])?, self.mem.read_user_u64(a[5] + 8)?);
                if ss == 0 {
                    return Ok(None);
                }
                let mut b = *a;
                b[5] = 0;
                return self.read_mask(ss, len).map(|m| Some((m, b)));
            }
            SYS_ppoll => (3, a[4]),
            SYS_epoll_pwait | SYS_EPOLL_PWAIT2 => (4, a[5]),
            _ => return Ok(None),
        };
        if a[ptr_arg] == 0 {
            return Ok(None);
        }
        let mut b = *a;
        b[ptr_arg] = 0;
        self.read_mask(a[ptr_arg], size).map(|m| Some((m, b)))
    }

    fn read_mask(&self, ptr: u64, size: u64) -> Result<u64, i64> {
        if size != 8 {
            return Err(-(libc::EINVAL as i64));
        }
        self.mem.read_user_u64(ptr)
    }

    /// Performs delegated call `nr` for vCPU `cpu` so that a signal can interrupt it, as on
    /// Linux: the serving host thread is registered for the signal pump's kicks (SIGUSR2, which
    /// makes a blocking host call return EINTR), and a mask the call installs (pselect6, ppoll,
    /// epoll_pwait) becomes the thread's mask meanwhile. When the call is interrupted and the
    /// thread has a deliverable signal, the result is Linux's internal restart code (EINTR or the
    /// call again, decided at delivery); when nothing is deliverable (a kick meant for another
    /// call, or a signal the guest blocks) the call goes on, as Linux would not have stopped it.
    pub(super) fn delegate_interruptibly(&self, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        let (masked, args) = match self.call_mask(nr, &a) {
            Ok(Some((mask, args))) => {
                self.install_call_mask(cpu, mask);
                (true, args)
            }
            Ok(None) => (false, a),
            Err(e) => return Reply::Ret(e),
        };
        let slot = self.signals.serving.get(cpu);
        if let Some(s) = slot {
            s.store(crate::sys::pthread_self(), std::sync::atomic::Ordering::Release);
        }
        let blocking = masked || super::may_block(nr, &a);
        let r = loop {
            if blocking && self.deliverable(cpu) {
                // Pending already. A signal the call's own mask unblocks (make's SIGCHLD before
                // pselect6) ends it at once, as on Linux; otherwise the signal came before the
                // call, where Linux would have run the handler first: run it, then the call.
                break if masked {
                    interrupted_code(nr)
                } else {
                    Reply::Ret(ERESTARTNOINTR)
                };
            }
            let r = self.delegate(nr, args);
            if r != Reply::Ret(-(libc::EINTR as i64)) {
                break r;
            }
            if self.deliverable(cpu) {
                break interrupted_code(nr);
            }
            if lock(&self.exit).is_some() {
                break r;
            }
        };
        if let Some(s) = slot {
            s.store(0, std::sync::atomic::Ordering::Release);
        }
        if masked && !matches!(r, Reply::Ret(v) if is_restart(v)) {
            // Completed: the caller's mask is back before anything is delivered.
            self.restore_call_mask(cpu);
        }
        r
    }
}
