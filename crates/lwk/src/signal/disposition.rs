//! Dispositions, masks and pending sets: the VMM's side of sigaction, queueing a signal for a
//! thread or the process, what a thread can take now, and the masks a call installs for its
//! duration (rt_sigsuspend, pselect6, ppoll, epoll_pwait).

use super::queue::NotQueued;
use super::{default_ignored, signals_in, stop_signal, SigInfo, UNBLOCKABLE};
use crate::kernel::{lock, Kernel};

impl Kernel {
    /// At start-up: the guest inherits the signals the VMM was started with ignored (as a program
    /// does across exec), and the VMM catches those whose default action ends the guest
    /// (`signal/host.rs`), so that the guest's mask applies and the run ends by them in order.
    pub fn adopt_host_dispositions(&self) {
        let mut acts = lock(&self.signals.actions);
        for (sig, act) in acts.iter_mut().enumerate().skip(1) {
            if act.raw[0] != libc::SIG_DFL as u64 {
                continue;
            }
            if crate::signal::host::inherited_ignore(sig as i32) {
                act.raw[0] = libc::SIG_IGN as u64;
            } else {
                crate::signal::host::follow(sig as i32, libc::SIG_DFL as u64, 0);
            }
        }
    }

    /// Handled signals go back to SIG_DFL on exec; ignored ones stay ignored. Every action's
    /// flags are cleared, as Linux's `flush_signal_handlers` does (SIGCHLD's SA_NOCLDWAIT and
    /// SA_NOCLDSTOP end with the program that set them).
    pub(crate) fn reset_handlers(&self) {
        let mut acts = lock(&self.signals.actions);
        for (sig, act) in acts.iter_mut().enumerate().skip(1) {
            let h = act.raw[0];
            if h != libc::SIG_DFL as u64 && h != libc::SIG_IGN as u64 {
                act.raw = [libc::SIG_DFL as u64, 0, 0, 0];
                crate::signal::host::follow(sig as i32, libc::SIG_DFL as u64, 0);
            } else if act.raw[1] != 0 {
                act.raw[1] = 0;
                crate::signal::host::follow(sig as i32, h, 0);
            }
        }
    }

    /// The calling thread's blocked signals.
    pub(crate) fn sigmask_of(&self, cpu: usize) -> u64 {
        lock(&self.threads).get(cpu).map_or(0, |t| t.sig.mask)
    }

    /// Makes one instance of `sig` pending for vCPU `thread`, or for the process when None (see
    /// `signal/queue.rs`: real-time signals queue, standard ones coalesce).
    pub fn queue_signal(&self, thread: Option<usize>, sig: u64, info: SigInfo) {
        let _ = self.try_queue_signal(thread, sig, info);
    }

    /// [`Kernel::queue_signal`], telling why an instance was not queued (sigqueue's EAGAIN).
    pub(crate) fn try_queue_signal(
        &self,
        thread: Option<usize>,
        sig: u64,
        info: SigInfo,
    ) -> Result<(), NotQueued> {
        if sig == 0 || sig > 64 {
            return Ok(());
        }
        let limit = self.signals.queue_limit;
        let r = match thread {
            Some(id) => match lock(&self.threads).get_mut(id) {
                Some(t) => t.sig.pending.add(sig, info, limit),
                None => Ok(()),
            },
            None => lock(&self.signals.pending).add(sig, info, limit),
        };
        // After the pending bit: take_signal clears the hint only under the locks, when it sees
        // nothing pending, so a signal queued concurrently keeps it set.
        self.signals
            .hint
            .store(true, std::sync::atomic::Ordering::Release);
        if r.is_ok() {
            // A signalfd whose mask has it becomes readable (`sfd.rs`).
            self.sync_signalfds();
        }
        r
    }

    /// True when vCPU `cpu` has a pending signal it does not block.
    pub fn deliverable(&self, cpu: usize) -> bool {
        if !self.signals.hint.load(std::sync::atomic::Ordering::Acquire) {
            return false;
        }
        let threads = lock(&self.threads);
        let process = lock(&self.signals.pending).set;
        threads
            .get(cpu)
            .is_some_and(|t| t.alive && (t.sig.pending.set | process) & !t.sig.mask != 0)
    }

    /// A pending signal that a live thread does not block and whose action is the default one
    /// that ends the process (the signal pump's safety net, see `machine.rs`).
    pub fn fatal_pending(&self) -> Option<i32> {
        let acts: Vec<u64> = lock(&self.signals.actions).iter().map(|a| a.raw[0]).collect();
        let threads = lock(&self.threads);
        let process = lock(&self.signals.pending).set;
        let deliverable = threads
            .iter()
            .filter(|t| t.alive)
            .fold(0, |all, t| all | ((t.sig.pending.set | process) & !t.sig.mask));
        signals_in(deliverable)
            .find(|&sig| {
                acts[sig as usize] == libc::SIG_DFL as u64 && !default_ignored(sig) && !stop_signal(sig)
            })
            .map(|sig| sig as i32)
    }

    /// The vCPU that should take a process-directed signal now: the first live thread that does
    /// not block one of the pending signals.
    pub fn signal_target(&self) -> Option<usize> {
        let threads = lock(&self.threads);
        let process = lock(&self.signals.pending).set;
        threads
            .iter()
            .position(|t| t.alive && (t.sig.pending.set | process) & !t.sig.mask != 0)
    }

    /// Dequeues the lowest unblocked pending signal of vCPU `cpu` (thread-directed first).
    pub(crate) fn take_signal(&self, cpu: usize) -> Option<(u64, SigInfo)> {
        self.take_signal_in(cpu, None)
    }

    /// Dequeues the lowest pending signal of vCPU `cpu` in `wanted` (None: those it does not
    /// block), thread-directed first.
    pub(crate) fn take_signal_in(&self, cpu: usize, wanted: Option<u64>) -> Option<(u64, SigInfo)> {
        let taken = self.dequeue(cpu, wanted);
        if taken.is_some() {
            // A signalfd that reported only this one is no longer readable (`sfd.rs`).
            self.sync_signalfds();
        }
        taken
    }

    fn dequeue(&self, cpu: usize, wanted: Option<u64>) -> Option<(u64, SigInfo)> {
        let mut threads = lock(&self.threads);
        let t = threads.get_mut(cpu)?;
        let allowed = wanted.unwrap_or(!t.sig.mask);
        let mut process = lock(&self.signals.pending);
        // Thread-directed first, as Linux dequeues them.
        let taken = t.sig.pending.take(allowed).or_else(|| process.take(allowed))?;
        if process.is_empty() && t.sig.pending.is_empty() {
            let others = threads.iter().any(|o| !o.sig.pending.is_empty());
            if !others {
                self.signals
                    .hint
                    .store(false, std::sync::atomic::Ordering::Release);
            }
        }
        Some(taken)
    }

    /// Puts back the mask a call replaced for its duration (none: nothing to do).
    pub(crate) fn restore_call_mask(&self, cpu: usize) {
        if let Some(t) = lock(&self.threads).get_mut(cpu) {
            if let Some(m) = t.sig.saved_mask.take() {
                t.sig.mask = m;
            }
        }
    }

    /// Installs `mask` as vCPU `cpu`'s mask for the duration of a call (rt_sigsuspend, pselect6,
    /// ppoll, epoll_pwait); the handler's frame, or the call's return, restores the old one.
    pub(crate) fn install_call_mask(&self, cpu: usize, mask: u64) {
        if let Some(t) = lock(&self.threads).get_mut(cpu) {
            if t.sig.saved_mask.is_none() {
                t.sig.saved_mask = Some(t.sig.mask);
            }
            t.sig.mask = mask & !UNBLOCKABLE;
        }
    }

    /// The host thread performing vCPU `cpu`'s delegated call right now, if any.
    pub fn serving_thread(&self, cpu: usize) -> Option<u64> {
        self.signals
            .serving
            .get(cpu)
            .map(|s| s.load(std::sync::atomic::Ordering::Acquire))
            .filter(|&t| t != 0)
    }
}
