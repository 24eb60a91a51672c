//! The Machine Manager: which machine's worker serves each CPU, and moving a CPU between
//! machines with their load.
//!
//! Machines that share a CPU each have a worker pinned there; the manager keeps exactly one of
//! them active. A move deactivates the donor's worker (it finishes its current task, hands its
//! ready tasks to its machine's other workers and sleeps) and activates the receiver's (woken by
//! futex). Machines publish their load as the number of ready tasks and waiting requests
//! ([`MachineHandle::ready_tasks`]), computed from their queues when the manager asks.
//!
//! Policies ([`Policy`]): `Static`, `Utilization` (§5.1 of the paper) and `Proportional`.

use crate::machine::{MachineHandle, MachineSignal};
use multios_host::tsc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// One core move.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Move {
    pub cpu: usize,
    pub from: String,
    pub to: String,
    /// From the manager's decision until it saw the receiving worker run (on the manager's
    /// clock).
    pub ns: f64,
}

impl MachineHandle {
    fn worker_on(&self, cpu: usize) -> Option<usize> {
        self.0.cpus.iter().position(|&c| c == cpu)
    }

    /// Whether this machine's worker on `cpu` is serving it now.
    pub fn holds(&self, cpu: usize) -> bool {
        self.worker_on(cpu)
            .is_some_and(|w| self.0.active[w].load(Ordering::SeqCst))
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

    /// The manager's side of a core move: the shared per-worker flag (the paper's data shared
    /// between machine and manager), then a machine signal (`CoreGranted` / `CoreRevoked`),
    /// buffered and handled between two tasks. A polling worker looks only at
    /// `signals_pending` while it spins (every extra load in that loop showed up in the
    /// machine-call latency), so the signal is what makes it re-read its flag at the top of its
    /// loop; a worker asleep on its futex is woken.
    pub(crate) fn set_active(&self, worker: usize, on: bool) {
        self.0.active[worker].store(on, Ordering::SeqCst);
        let cpu = self.0.cpus[worker];
        self.0.signal(if on {
            MachineSignal::CoreGranted { cpu }
        } else {
            MachineSignal::CoreRevoked { cpu }
        });
        self.0.wake_worker(worker);
    }
}

/// Moves `cpu` from machine `from` to machine `to`; returns how long until `to`'s worker ran.
pub fn move_core(cpu: usize, from: &MachineHandle, to: &MachineHandle) -> Result<Move, ManagerError> {
    let no_worker = |m: &MachineHandle| ManagerError::NoWorker {
        cpu,
        machine: m.name().to_string(),
    };
    let fw = from.worker_on(cpu).ok_or_else(|| no_worker(from))?;
    let tw = to.worker_on(cpu).ok_or_else(|| no_worker(to))?;
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
    // The receiving worker acknowledges the grant number it saw while active (grant numbers,
    // not TSC values, are compared: the TSCs of two vCPUs may be offset).
    let t0 = tsc::now();
    from.set_active(fw, false);
    let grant = to.0.grants[tw].fetch_add(1, Ordering::SeqCst) + 1;
    to.set_active(tw, true);
    let limit = Duration::from_secs(5);
    let start = Instant::now();
    let mut spins = 0u32;
    while to.0.acks[tw].load(Ordering::SeqCst) < grant {
        spins += 1;
        if spins > 10_000 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
        if start.elapsed() > limit {
            return Err(ManagerError::Timeout {
                cpu,
                machine: to.name().to_string(),
                waited: limit,
            });
        }
        std::thread::yield_now();
    }
    let t1 = tsc::now();
    from.record_core_move(fw, "core lost", t0, t1);
    to.record_core_move(tw, "core gained", t0, t1);
    let ticks = t1.saturating_sub(t0);
    Ok(Move {
        cpu,
        from: from.name().to_string(),
        to: to.name().to_string(),
        ns: ticks as f64 / tsc::calibration().ticks_per_ns(),
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
                if machines[needy].worker_on(cpu).is_some() && !machines[needy].holds(cpu) {
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
                if machines[n].worker_on(cpu).is_some() && !machines[n].holds(cpu) {
                    return Some((cpu, d, n));
                }
            }
        }
    }
    None
}

/// A running manager thread applying a policy every `period`.
pub struct MachineManager {
    stop: Arc<AtomicBool>,
    moves: Arc<Mutex<Vec<Move>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MachineManager {
    pub fn start(machines: Vec<MachineHandle>, policy: Policy, period: Duration) -> MachineManager {
        let stop = Arc::new(AtomicBool::new(false));
        let moves = Arc::new(Mutex::new(Vec::new()));
        let (s, mv) = (stop.clone(), moves.clone());
        let thread = std::thread::Builder::new()
            .name("aam:manager".into())
            .spawn(move || {
                while !s.load(Ordering::SeqCst) {
                    std::thread::sleep(period);
                    let step = match policy {
                        Policy::Static => None,
                        Policy::Utilization => utilization_step(&machines),
                        Policy::Proportional => proportional_step(&machines),
                    };
                    if let Some((cpu, from, to)) = step {
                        if let Ok(m) = move_core(cpu, &machines[from], &machines[to]) {
                            mv.lock().unwrap_or_else(PoisonError::into_inner).push(m);
                        }
                    }
                }
            })
            .ok();
        MachineManager { stop, moves, thread }
    }

    /// The moves made so far.
    pub fn moves(&self) -> Vec<Move> {
        self.moves.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Drop for MachineManager {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
