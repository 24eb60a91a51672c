//! The guest's own CPU time (issue #16): what CLOCK_PROCESS_CPUTIME_ID (and the own-pid CPU
//! clocks `clock_getcpuclockid` makes), getrusage(RUSAGE_SELF) and times() report
//! (`syscall/processcpu.rs`). Made by Linux they measured the whole VMM — the proxy polling after
//! each call, the signal pump —: a single-threaded program computing 0.8 s read 1.7–2.2 times
//! its thread clock. The guest's CPU time is the sum over the host threads that run its vCPUs,
//! each from its first guest entry: the live ones' clocks, read under the lock so that a thread
//! ending meanwhile counts once, and the total of the ended ones. The split into user and system
//! time is Linux's (`cputime_adjust`): the time on a CPU shared in the ratio of the ticks' user
//! and system counts, never less than reported before.

use crate::sys;
use std::sync::{Mutex, MutexGuard};

/// The kernel's CPU clock kinds (CPUCLOCK_PROF, _VIRT, _SCHED).
pub const PROF: i32 = 0;
pub const VIRT: i32 = 1;
pub const SCHED: i32 = 2;

/// CPU times, ns: on a CPU (the kernel's sum_exec_runtime) and the tick-sampled user and system
/// times (with guest mode counted as user time, as Linux counts a vCPU thread's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Times {
    pub run: u64,
    pub user: u64,
    pub system: u64,
}

impl Times {
    /// Host thread `tid`'s times (0: the calling thread); None once it has ended.
    fn of_thread(tid: i32) -> Option<Times> {
        let run = sys::thread_cpu_ns(tid, SCHED)?;
        let user = sys::thread_cpu_ns(tid, VIRT)?;
        let prof = sys::thread_cpu_ns(tid, PROF)?;
        Some(Times {
            run,
            user,
            system: prof.saturating_sub(user),
        })
    }

    fn since(self, base: Times) -> Times {
        Times {
            run: self.run.saturating_sub(base.run),
            user: self.user.saturating_sub(base.user),
            system: self.system.saturating_sub(base.system),
        }
    }

    fn plus(self, o: Times) -> Times {
        Times {
            run: self.run + o.run,
            user: self.user + o.user,
            system: self.system + o.system,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    /// The ended guest threads' times.
    ended: Times,
    /// The live ones: host thread id and its times at its first guest entry.
    live: Vec<(i32, Times)>,
    /// The last (user, system) split reported (Linux's prev_cputime).
    prev: (u64, u64),
}

/// The guest process's CPU time, kept per host thread that runs one of its vCPUs.
#[derive(Debug, Default)]
pub struct GuestCpu(Mutex<State>);

impl GuestCpu {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The calling host thread starts running a guest thread: its time counts from here (the
    /// VMM's set-up before does not).
    pub fn thread_started(&self) {
        let tid = sys::gettid();
        let base = Times::of_thread(0).unwrap_or_default();
        let mut s = self.lock();
        s.live.retain(|&(t, _)| t != tid);
        s.live.push((tid, base));
    }

    /// The calling host thread is done with its guest thread: its time joins the ended total.
    pub fn thread_ended(&self) {
        let tid = sys::gettid();
        let mut s = self.lock();
        if let Some(i) = s.live.iter().position(|&(t, _)| t == tid) {
            let (_, base) = s.live.swap_remove(i);
            let now = Times::of_thread(0).unwrap_or(base);
            s.ended = s.ended.plus(now.since(base));
        }
    }

    /// The lock, held across fork(2) by the forking thread (`machine/fork.rs`): another thread
    /// starting, ending or reading the clock at that instant would leave it locked for ever in
    /// the child, whose [`GuestCpu::forked`] then hung (a CI run: a program forking while its
    /// threads came and went, and one forking beside a timer's thread, hung for 120 s).
    pub(crate) fn hold_for_fork(&self) -> impl Sized + '_ {
        self.lock()
    }

    /// In a forked child: the calling host thread is the guest's only one. The parent's totals
    /// are not the child's (a forked child's CPU time starts at 0 on Linux): it counts from here.
    pub fn forked(&self) {
        let base = Times::of_thread(0).unwrap_or_default();
        *self.lock() = State {
            live: vec![(sys::gettid(), base)],
            ..State::default()
        };
    }

    /// The guest's times so far (user and system as the ticks counted them).
    pub fn total(&self) -> Times {
        let s = self.lock();
        total(&s)
    }

    /// getrusage's and times' (user, system) times, ns: the time on a CPU split as Linux splits
    /// it (`cputime_adjust`), never less than reported before.
    pub fn user_system(&self) -> (u64, u64) {
        let mut s = self.lock();
        let t = total(&s);
        adjust(t, &mut s.prev)
    }
}

fn total(s: &State) -> Times {
    s.live.iter().fold(s.ended, |sum, &(tid, base)| {
        sum.plus(Times::of_thread(tid).map_or_else(Times::default, |t| t.since(base)))
    })
}

/// Linux's `cputime_adjust`: `t.run` split into user and system time in the ratio of the ticks'
/// counts, each never below the split reported before (`prev`, updated).
fn adjust(t: Times, prev: &mut (u64, u64)) -> (u64, u64) {
    let rtime = t.run;
    if prev.0 + prev.1 >= rtime {
        return *prev;
    }
    let mut stime = if t.system == 0 {
        0
    } else if t.user == 0 {
        rtime
    } else {
        (rtime as u128 * t.system as u128 / (t.system + t.user) as u128) as u64
    };
    stime = stime.max(prev.1);
    let mut utime = rtime - stime;
    if utime < prev.0 {
        utime = prev.0;
        stime = rtime - utime;
    }
    *prev = (utime, stime);
    (utime, stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_follows_the_ticks_and_never_goes_back() {
        let mut prev = (0, 0);
        let t = |run, user, system| Times { run, user, system };
        assert_eq!(adjust(t(1000, 3, 1), &mut prev), (750, 250));
        // More system ticks: the user time stays where it was reported.
        assert_eq!(adjust(t(1100, 3, 3), &mut prev), (750, 350));
        // No time on a CPU since: the previous split.
        assert_eq!(adjust(t(1100, 9, 0), &mut prev), (750, 350));
        assert_eq!(adjust(t(2000, 9, 0), &mut prev), (1650, 350));
        let mut fresh = (0, 0);
        assert_eq!(adjust(t(500, 0, 0), &mut fresh), (500, 0));
    }

    #[test]
    fn a_thread_counts_from_its_start_and_once_after_its_end() {
        let g = GuestCpu::default();
        g.thread_started();
        // This thread's own CPU time, not wall time: the machine is shared.
        let spin = |ms: u64| {
            let cpu = || sys::thread_cpu_ns(0, SCHED).expect("the calling thread's clock");
            let t = cpu();
            let mut x = 1u64;
            while cpu() - t < ms * 1_000_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        };
        spin(30);
        let live = g.total().run;
        assert!(live >= 30_000_000, "a live thread's 30 ms read as {live} ns");
        g.thread_ended();
        let ended = g.total().run;
        spin(20);
        assert_eq!(g.total().run, ended, "an ended thread's time grew");
        assert!(ended >= live);
    }
}
