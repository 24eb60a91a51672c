//! What keeps a pinned group from losing to other programs: a placement pins a group to one CPU on
//! the assumption that the CPU is the program's. When other programs load that CPU, a pinned group
//! cannot leave it, while Linux would move the threads — a producer and a consumer pinned together
//! on a CPU shared with a compiler wait for the compiler's time slice at every hand-off (measured
//! here: 5 s instead of 0.4 s). So at every check the time the pinned threads of each CPU ran and
//! waited to run (/proc/TID/schedstat) is compared with the time that passed: when they waited for
//! more than [`WAIT_SHARE`] of it while running less than [`RUN_SHARE`] of it — the CPU went to
//! other programs while they were ready — that CPU's groups are released to every CPU the program
//! may use (Linux's placement) for the rest of the run. A CPU kept busy by the program's own groups
//! (eight pipe pairs on two CPUs) runs them most of the time and is not released.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// Released when the pinned threads waited for more than this share of the interval …
pub const WAIT_SHARE: f64 = 0.2;
/// … while running less than this share of it.
pub const RUN_SHARE: f64 = 0.7;

/// A CPU whose groups were released.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Released {
    pub cpu: u32,
    /// Seconds into the run.
    pub at_s: f64,
    /// What its pinned threads did in the interval that decided: share of the time run, waited.
    pub ran: f64,
    pub waited: f64,
}

/// (run ns, wait ns) of a thread from /proc/TID/schedstat.
fn schedstat(tid: u32) -> Option<(u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/schedstat")).ok()?;
    let mut it = s.split_whitespace();
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// The pinned threads and what they did at the last check.
#[derive(Debug)]
pub struct Watch {
    started: Instant,
    last: Option<Instant>,
    /// tid → its CPU.
    pinned: BTreeMap<u32, u32>,
    seen: BTreeMap<u32, (u64, u64)>,
    released: BTreeSet<u32>,
    pub log: Vec<Released>,
}

impl Watch {
    pub fn new(started: Instant) -> Watch {
        Watch {
            started,
            last: None,
            pinned: BTreeMap::new(),
            seen: BTreeMap::new(),
            released: BTreeSet::new(),
            log: Vec::new(),
        }
    }

    /// `tid` was given `cpus`: watched when that is one CPU, forgotten otherwise.
    pub fn placed(&mut self, tid: u32, cpus: &[u32]) {
        match cpus {
            [cpu] => {
                self.pinned.insert(tid, *cpu);
            }
            _ => {
                self.pinned.remove(&tid);
                self.seen.remove(&tid);
            }
        }
    }

    /// Whether any pinned thread is watched (the runner then checks every sweep interval).
    pub fn watching(&self) -> bool {
        !self.pinned.is_empty()
    }

    /// Whether `cpu`'s groups were released.
    pub fn is_released(&self, cpu: u32) -> bool {
        self.released.contains(&cpu)
    }

    /// Compares what the pinned threads did since the last check with the time that passed; returns
    /// the threads of the CPUs released now (to be given every allowed CPU).
    pub fn check(&mut self) -> Vec<u32> {
        let now = Instant::now();
        let dt = self.last.map(|l| now.duration_since(l).as_nanos() as f64);
        self.last = Some(now);
        let mut per_cpu: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
        let mut gone = Vec::new();
        for (&tid, &cpu) in &self.pinned {
            let Some((run, wait)) = schedstat(tid) else {
                gone.push(tid);
                continue;
            };
            if let Some(&(r0, w0)) = self.seen.get(&tid) {
                let e = per_cpu.entry(cpu).or_default();
                e.0 += run.saturating_sub(r0) as f64;
                e.1 += wait.saturating_sub(w0) as f64;
            }
            self.seen.insert(tid, (run, wait));
        }
        for tid in gone {
            self.pinned.remove(&tid);
            self.seen.remove(&tid);
        }
        let Some(dt) = dt.filter(|d| *d > 0.0) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (cpu, (run, wait)) in per_cpu {
            let (ran, waited) = (run / dt, wait / dt);
            if waited > WAIT_SHARE && ran < RUN_SHARE && self.released.insert(cpu) {
                self.log.push(Released {
                    cpu,
                    at_s: self.started.elapsed().as_secs_f64(),
                    ran,
                    waited,
                });
                out.extend(self.pinned.iter().filter(|(_, c)| **c == cpu).map(|(t, _)| *t));
            }
        }
        for t in &out {
            self.pinned.remove(t);
            self.seen.remove(t);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_threads_schedstat() {
        // SAFETY: gettid has no preconditions.
        let me = unsafe { libc::gettid() } as u32;
        let t0 = Instant::now();
        while t0.elapsed().as_millis() < 20 {
            std::hint::spin_loop();
        }
        let (run, _) = schedstat(me).expect("/proc/TID/schedstat (CONFIG_SCHED_INFO)");
        assert!(run > 0, "a thread that spun 20 ms has run");
    }

    #[test]
    fn a_cpu_lost_to_other_programs_is_released() {
        // two threads of this test pinned "on CPU 5": one spins, so its run time grows; the check
        // after an interval sees it run most of the time and releases nothing
        let mut w = Watch::new(Instant::now());
        // SAFETY: gettid has no preconditions.
        let me = unsafe { libc::gettid() } as u32;
        w.placed(me, &[5]);
        assert!(w.check().is_empty(), "the first check only takes a baseline");
        let t0 = Instant::now();
        while t0.elapsed().as_millis() < 30 {
            std::hint::spin_loop();
        }
        let released = w.check();
        assert!(released.is_empty() || w.log[0].ran < RUN_SHARE, "{:?}", w.log);
        w.placed(me, &[0, 1]);
        assert!(w.pinned.is_empty());
    }
}
