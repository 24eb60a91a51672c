//! The Machine Manager: which machine's worker serves each CPU, and moving a CPU between
//! machines with their load.
//!
//! Machines that share a CPU each have a worker pinned there; the manager keeps exactly one of
//! them active. A move deactivates the donor's worker (it finishes its current task, hands its
//! ready tasks to its machine's other workers and sleeps) and activates the receiver's (woken by
//! futex). Machines publish their load as the number of ready tasks and waiting requests
//! ([`MachineHandle::ready_tasks`]), computed from their queues when the manager asks.
//!
//! Cores move for four reasons ([`MoveCause`]): an IMS to a machine of a [`MachineManager`] that
//! holds no core (the manager grants one in the sender's call, see [`crate::ims`]); a holder's
//! worker running out of work while a machine waits for its CPU (it hands the CPU over); the
//! periodic policy; and [`move_core`].
//!
//! Policies ([`Policy`]): `Static`, `Utilization` (§5.1 of the paper) and `Proportional`; both
//! moving policies also give a machine that waited a whole period for a core the CPU of the
//! least loaded busy holder ([`starving_step`]).

use crate::domain::{self, Domain};
use crate::machine::{lock, MachineHandle};
use multios_host::tsc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the manager could not do.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    #[error("core move of CPU {cpu}: machine '{machine}' has no worker on it (give it one with MachineBuilder::cpus)")]
    NoWorker { cpu: usize, machine: String },
    #[error("core move of CPU {cpu}: machine '{machine}' does not hold it now")]
    NotHeld { cpu: usize, machine: String },
    #[error("core move of CPU {cpu}: machine '{machine}' holds it already")]
    AlreadyHeld { cpu: usize, machine: String },
    #[error("core move of CPU {cpu} to machine '{machine}': its worker did not start within {waited:?} (is the machine stopped?)")]
    Timeout {
        cpu: usize,
        machine: String,
        waited: Duration,
    },
}

/// How cores are assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// The assignment given at build time never changes.
    Static,
    /// A machine with work and no core gets one; else an idle machine's CPU goes to the machine
    /// with the most ready tasks per core.
    Utilization,
    /// Cores in proportion to load: each machine's share of the shared CPUs follows its share of
    /// all ready tasks (at least one core while it has work, none while idle); one CPU per
    /// period moves from the machine furthest above its share to the one furthest below, even
    /// if the donor is busy.
    Proportional,
}

/// Why a core moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveCause {
    /// An IMS found the destination without a core and the manager granted it one (a free CPU,
    /// or one whose holder's worker slept).
    Ims,
    /// A holder's worker ran out of work and handed its CPU to a machine waiting for one (a
    /// machine switch when a core would start to idle).
    Idle,
    /// The periodic policy moved it (`MachineManager`).
    Policy,
    /// [`move_core`] was called.
    Explicit,
}

/// One core move.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Move {
    pub cpu: usize,
    /// The machine that lost the CPU ("" if no machine held it).
    pub from: String,
    pub to: String,
    /// From the manager's decision until the receiving worker ran (TSC; the receiving worker
    /// reads its own TSC against the deciding thread's).
    pub ns: f64,
    pub cause: MoveCause,
}

/// Moves made by a manager, by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MoveCounts {
    pub ims: u64,
    pub idle: u64,
    pub policy: u64,
    pub explicit: u64,
}

impl MoveCounts {
    pub fn total(&self) -> u64 {
        self.ims + self.idle + self.policy + self.explicit
    }
}

impl MachineHandle {
    /// Whether this machine's worker on `cpu` is serving it now.
    pub fn holds(&self, cpu: usize) -> bool {
        self.0
            .cpus
            .iter()
            .zip(&self.0.active)
            .any(|(&c, a)| c == cpu && a.load(Ordering::SeqCst))
    }

    /// The CPUs this machine holds now.
    pub fn active_cpus(&self) -> Vec<usize> {
        self.0
            .cpus
            .iter()
            .zip(&self.0.active)
            .filter(|(_, a)| a.load(Ordering::SeqCst))
            .map(|(&c, _)| c)
            .collect()
    }

    /// The CPUs whose worker is serving this machine now: a worker whose core was taken keeps
    /// serving until it finishes its current pass (so this lags [`active_cpus`](Self::active_cpus)).
    pub fn serving_cpus(&self) -> Vec<usize> {
        self.0
            .cpus
            .iter()
            .zip(&self.0.serving)
            .filter(|(_, s)| s.load(Ordering::SeqCst))
            .map(|(&c, _)| c)
            .collect()
    }

    /// Whether the machine waits for the Machine Manager to give it a core (it has work and
    /// holds none).
    pub fn waits_for_core(&self) -> bool {
        self.0.waiting.load(Ordering::SeqCst)
    }
}

/// Moves `cpu` from machine `from` to machine `to`; returns how long until `to`'s worker ran.
pub fn move_core(cpu: usize, from: &MachineHandle, to: &MachineHandle) -> Result<Move, ManagerError> {
    let no_worker = |m: &MachineHandle| ManagerError::NoWorker {
        cpu,
        machine: m.name().to_string(),
    };
    let fw = from.0.worker_on(cpu).ok_or_else(|| no_worker(from))?;
    let tw = to.0.worker_on(cpu).ok_or_else(|| no_worker(to))?;
    if !from.holds(cpu) {
        return Err(ManagerError::NotHeld {
            cpu,
            machine: from.name().to_string(),
        });
    }
    if to.holds(cpu) {
        return Err(ManagerError::AlreadyHeld {
            cpu,
            machine: to.name().to_string(),
        });
    }
    let fw = (0..from.0.cpus.len())
        .find(|&w| from.0.cpus[w] == cpu && from.0.active[w].load(Ordering::SeqCst))
        .unwrap_or(fw);
    // The receiving worker acknowledges the grant number it saw while active (grant numbers,
    // not TSC values, are compared: the TSCs of two vCPUs may be offset).
    let t0 = tsc::now();
    let member = to.0.membership();
    let grant = {
        let _lock = member.as_ref().map(|m| lock(&m.domain.queue));
        domain::start_move(
            cpu,
            Some((&from.0, fw)),
            (&to.0, tw),
            MoveCause::Explicit,
            member.as_ref().map(|m| m.domain.clone()),
        )
    };
    let limit = Duration::from_secs(5);
    let start = Instant::now();
    while to.0.acks[tw].load(Ordering::SeqCst) < grant {
        if start.elapsed() > limit {
            return Err(ManagerError::Timeout {
                cpu,
                machine: to.name().to_string(),
                waited: limit,
            });
        }
        std::thread::yield_now();
    }
    let ticks = tsc::now().saturating_sub(t0);
    Ok(Move {
        cpu,
        from: from.name().to_string(),
        to: to.name().to_string(),
        ns: ticks as f64 / tsc::calibration().ticks_per_ns(),
        cause: MoveCause::Explicit,
    })
}

/// One decision of the utilization policy, or `None`.
pub fn utilization_step(machines: &[MachineHandle]) -> Option<(usize, usize, usize)> {
    let load: Vec<usize> = machines.iter().map(MachineHandle::ready_tasks).collect();
    let cores: Vec<usize> = machines.iter().map(|m| m.active_cpus().len()).collect();
    // A machine with work and no core: take a shared CPU from the machine with the most cores.
    let starving = (0..machines.len()).find(|&i| load[i] > 0 && cores[i] == 0);
    let candidates: Vec<usize> = match starving {
        Some(i) => vec![i],
        None => {
            let mut by_load: Vec<usize> = (0..machines.len()).filter(|&i| load[i] > 0).collect();
            by_load.sort_by(|&a, &b| (load[b] * (cores[a].max(1))).cmp(&(load[a] * (cores[b].max(1)))));
            by_load
        }
    };
    for needy in candidates {
        let mut donors: Vec<usize> = (0..machines.len()).filter(|&d| d != needy).collect();
        donors.sort_by_key(|&d| std::cmp::Reverse(cores[d]));
        for d in donors {
            let idle_or_richer = load[d] == 0 || (starving.is_some() && cores[d] > 1);
            if !idle_or_richer || (starving.is_none() && load[d] > 0) {
                continue;
            }
            for cpu in machines[d].active_cpus() {
                if machines[needy].0.worker_on(cpu).is_some() && !machines[needy].holds(cpu) {
                    return Some((cpu, d, needy));
                }
            }
        }
    }
    None
}

/// One decision of the proportional policy, or `None`.
pub fn proportional_step(machines: &[MachineHandle]) -> Option<(usize, usize, usize)> {
    let load: Vec<usize> = machines.iter().map(MachineHandle::ready_tasks).collect();
    let cores: Vec<usize> = machines.iter().map(|m| m.active_cpus().len()).collect();
    let total_load: usize = load.iter().sum();
    let total_cores: usize = cores.iter().sum();
    if total_load == 0 {
        return None;
    }
    let target: Vec<f64> = load
        .iter()
        .map(|&l| {
            let share = l as f64 * total_cores as f64 / total_load as f64;
            if l > 0 {
                share.max(1.0)
            } else {
                0.0
            }
        })
        .collect();
    let gap = |i: usize| cores[i] as f64 - target[i];
    let mut order: Vec<usize> = (0..machines.len()).collect();
    order.sort_by(|&a, &b| gap(a).total_cmp(&gap(b)));
    // Needy: a full core short of its share, or working without a core. Donor: above its share
    // and not left without a core while it has work.
    let needy = order
        .iter()
        .copied()
        .filter(|&i| gap(i) <= -1.0 || (cores[i] == 0 && load[i] > 0));
    for n in needy {
        let donors = order
            .iter()
            .rev()
            .copied()
            .filter(|&d| d != n && gap(d) > 0.0 && (load[d] == 0 || cores[d] > 1));
        for d in donors {
            for cpu in machines[d].active_cpus() {
                if machines[n].0.worker_on(cpu).is_some() && !machines[n].holds(cpu) {
                    return Some((cpu, d, n));
                }
            }
        }
    }
    None
}

/// A machine that has waited for a core for a whole period while every CPU it could use was
/// held by a busy machine: the CPU of the holder with the fewest ready tasks per core goes to it
/// (time slicing between machines at the policy's period). `(cpu, from, to)` or `None`.
pub fn starving_step(machines: &[MachineHandle], waited: &[bool]) -> Option<(usize, usize, usize)> {
    let needy = (0..machines.len()).find(|&i| waited[i] && machines[i].waits_for_core())?;
    let per_core = |d: usize| {
        let cores = machines[d].active_cpus().len().max(1);
        machines[d].ready_tasks() as f64 / cores as f64
    };
    let mut best: Option<(f64, usize, usize)> = None;
    for cpu in machines[needy].cpus().iter().copied() {
        let Some(d) = (0..machines.len()).find(|&d| d != needy && machines[d].holds(cpu)) else {
            continue;
        };
        let load = per_core(d);
        if best.is_none_or(|b| load < b.0) {
            best = Some((load, cpu, d));
        }
    }
    best.map(|(_, cpu, d)| (cpu, d, needy))
}

/// A running Machine Manager: the machines it assigns cores to (IMS to one of them that holds no
/// core gets it one, see [`crate::ims`]) and a thread applying its policy every `period`.
pub struct MachineManager {
    stop: Arc<AtomicBool>,
    domain: Arc<Domain>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MachineManager {
    /// Takes `machines` under this manager (a machine belongs to one manager at a time: the
    /// newest) and starts its policy thread. With `Policy::Static` nothing ever moves.
    pub fn start(machines: Vec<MachineHandle>, policy: Policy, period: Duration) -> MachineManager {
        let shared: Vec<_> = machines.iter().map(|m| m.0.clone()).collect();
        let domain = Arc::new(Domain::new(policy, &shared));
        for (index, m) in shared.iter().enumerate() {
            let old = lock(&m.domain).replace(domain::Membership {
                domain: domain.clone(),
                index,
            });
            if let Some(old) = old {
                old.domain.dissolve();
                *lock(&m.domain) = Some(domain::Membership {
                    domain: domain.clone(),
                    index,
                });
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (s, d) = (stop.clone(), domain.clone());
        let thread = std::thread::Builder::new()
            .name("aam:manager".into())
            .spawn(move || policy_thread(&machines, &d, policy, period, &s))
            .ok();
        MachineManager { stop, domain, thread }
    }

    /// The moves made so far (by every cause), in the order they completed.
    pub fn moves(&self) -> Vec<Move> {
        lock(&self.domain.moves).clone()
    }

    /// How many moves each cause made.
    pub fn move_counts(&self) -> MoveCounts {
        let c = &self.domain.counts;
        let r = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::SeqCst);
        MoveCounts {
            ims: r(&c.ims),
            idle: r(&c.idle),
            policy: r(&c.policy),
            explicit: r(&c.explicit),
        }
    }

    pub fn policy(&self) -> Policy {
        self.domain.policy
    }
}

fn policy_thread(
    machines: &[MachineHandle],
    domain: &Arc<Domain>,
    policy: Policy,
    period: Duration,
    stop: &AtomicBool,
) {
    let mut waited = vec![false; machines.len()];
    loop {
        // Parked, not slept: dropping the manager unparks the thread.
        let deadline = Instant::now() + period;
        while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::park_timeout(deadline.saturating_duration_since(Instant::now()));
        }
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if policy == Policy::Static {
            continue;
        }
        let _lock = lock(&domain.queue);
        let step = match policy {
            Policy::Static => None,
            Policy::Utilization => utilization_step(machines),
            Policy::Proportional => proportional_step(machines),
        }
        .or_else(|| starving_step(machines, &waited));
        if let Some((cpu, from, to)) = step {
            let (f, t) = (&machines[from].0, &machines[to].0);
            let fw = (0..f.cpus.len()).find(|&w| f.cpus[w] == cpu && f.active[w].load(Ordering::SeqCst));
            if let (Some(fw), Some(tw)) = (fw, t.worker_on(cpu)) {
                domain::start_move(cpu, Some((f, fw)), (t, tw), MoveCause::Policy, Some(domain.clone()));
            }
        }
        for (w, m) in waited.iter_mut().zip(machines) {
            *w = m.waits_for_core();
        }
    }
}

impl Drop for MachineManager {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        self.domain.dissolve();
    }
}
