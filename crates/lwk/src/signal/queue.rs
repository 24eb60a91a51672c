//! Pending signals as Linux keeps them (kernel/signal.c): a set, and the siginfo of each instance
//! in the order they were sent. A standard signal (1–31) is pending at most once per set — a
//! second one sent while the first waits is dropped, the first's siginfo kept (`legacy_queue`);
//! a real-time signal (32–64) queues every instance with its own siginfo (sigqueue's si_value, a
//! timer's id and overrun), up to the queue limit (RLIMIT_SIGPENDING), and its instances are
//! delivered in the order they were sent. The lowest pending signal number is taken first. A
//! POSIX timer has at most one signal pending, as Linux preallocates one per timer: an expiry
//! while its signal waits adds to that signal's overrun count instead of queueing another.

use super::info::{SigInfo, SI_TIMER};
use std::collections::VecDeque;

/// Bit sig-1 of a set.
fn bit(sig: u64) -> u64 {
    1u64 << (sig - 1)
}

/// The first real-time signal (SIGRTMIN as the kernel numbers it).
pub const SIGRTMIN: u64 = 32;

/// One pending set: a thread's or the process's.
#[derive(Debug, Clone, Default)]
pub struct Pending {
    /// Signals with at least one instance pending (bit sig-1).
    pub set: u64,
    /// Every pending instance, oldest first.
    queue: VecDeque<(u64, SigInfo)>,
}

/// Why a signal was not made pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotQueued {
    /// A standard signal already pending: Linux drops the new instance (not an error).
    Coalesced,
    /// The real-time queue is at its limit: sigqueue fails with EAGAIN.
    Full,
}

impl Pending {
    /// Makes one instance of `sig` pending, unless `limit` real-time instances already wait or it
    /// is a standard signal that is already pending.
    pub fn add(&mut self, sig: u64, info: SigInfo, limit: usize) -> Result<(), NotQueued> {
        if sig < SIGRTMIN && self.set & bit(sig) != 0 {
            return Err(NotQueued::Coalesced);
        }
        if let Some(timer) = timer_of(&info) {
            // The timer's signal already waits: count the expiry as an overrun (si_overrun).
            if let Some((_, q)) = self
                .queue
                .iter_mut()
                .find(|(s, q)| *s == sig && timer_of(q) == Some(timer))
            {
                if let Some(f) = q.fields.as_mut() {
                    let overrun = (f[0] >> 32) as u32;
                    let more = (info.fields.map_or(0, |g| g[0] >> 32) as u32).saturating_add(1);
                    f[0] = (f[0] & 0xffff_ffff) | (u64::from(overrun.saturating_add(more)) << 32);
                }
                return Err(NotQueued::Coalesced);
            }
        }
        if sig >= SIGRTMIN && self.queue.len() >= limit {
            return Err(NotQueued::Full);
        }
        self.set |= bit(sig);
        self.queue.push_back((sig, info));
        Ok(())
    }

    /// Takes the oldest instance of the lowest signal in `allowed`.
    pub fn take(&mut self, allowed: u64) -> Option<(u64, SigInfo)> {
        let ready = self.set & allowed;
        if ready == 0 {
            return None;
        }
        let sig = u64::from(ready.trailing_zeros()) + 1;
        let at = self.queue.iter().position(|&(s, _)| s == sig)?;
        let (_, info) = self.queue.remove(at)?;
        if !self.queue.iter().any(|&(s, _)| s == sig) {
            self.set &= !bit(sig);
        }
        Some((sig, info))
    }

    /// Instances pending (every signal).
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Drops everything (a forked child starts with nothing pending).
    pub fn clear(&mut self) {
        self.set = 0;
        self.queue.clear();
    }
}

/// The POSIX timer a signal comes from (si_code SI_TIMER: si_timerid, the first int of the union).
fn timer_of(info: &SigInfo) -> Option<u32> {
    (info.code == SI_TIMER)
        .then(|| info.fields.map(|f| f[0] as u32))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(pid: i32) -> SigInfo {
        SigInfo {
            pid,
            ..Default::default()
        }
    }

    #[test]
    fn real_time_signals_queue_in_order_and_standard_ones_coalesce() {
        let mut p = Pending::default();
        for k in 1..=3 {
            p.add(40, from(k), 100).expect("queued");
        }
        p.add(10, from(7), 100).expect("queued");
        // The second SIGUSR1 is dropped and the first one's siginfo kept.
        assert_eq!(p.add(10, from(8), 100), Err(NotQueued::Coalesced));
        p.add(35, from(9), 100).expect("queued");
        let order: Vec<(u64, i32)> = std::iter::from_fn(|| p.take(!0))
            .map(|(s, i)| (s, i.pid))
            .collect();
        assert_eq!(order, vec![(10, 7), (35, 9), (40, 1), (40, 2), (40, 3)]);
        assert!(p.is_empty() && p.set == 0);
    }

    #[test]
    fn a_timer_has_one_signal_pending_and_counts_overruns() {
        let expiry = |timer: u64| SigInfo {
            code: SI_TIMER,
            fields: Some([timer, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            ..Default::default()
        };
        let mut p = Pending::default();
        p.add(34, expiry(7), 100).expect("queued");
        assert_eq!(p.add(34, expiry(7), 100), Err(NotQueued::Coalesced));
        assert_eq!(p.add(34, expiry(7), 100), Err(NotQueued::Coalesced));
        p.add(34, expiry(8), 100).expect("another timer queues");
        assert_eq!(p.len(), 2);
        let (_, first) = p.take(!0).expect("pending");
        // si_overrun (the high half of the first word) counts the two expiries merged into it.
        assert_eq!(first.fields.map(|f| (f[0] as u32, f[0] >> 32)), Some((7, 2)));
    }

    #[test]
    fn a_full_queue_refuses_real_time_signals_and_blocked_ones_stay() {
        let mut p = Pending::default();
        p.add(34, from(1), 2).expect("queued");
        p.add(34, from(2), 2).expect("queued");
        assert_eq!(p.add(34, from(3), 2), Err(NotQueued::Full));
        // Only signals in `allowed` are taken; the others keep their order.
        p.add(2, from(4), 2).expect("standard signals are not limited");
        assert_eq!(p.take(bit(2)).map(|(s, _)| s), Some(2));
        assert_eq!(p.take(bit(2)), None);
        assert_eq!(p.take(!0).map(|(_, i)| i.pid), Some(1));
        assert_eq!(p.len(), 1);
    }
}
