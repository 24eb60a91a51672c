//! How to start a machine: its CPUs (checked against the online and allowed ones), workers,
//! idle spin, stealing, batching, signal handler, tracing, and the cores it starts with.

use crate::ims::Parker;
use crate::machine::{
    lock, CacheLine, Counters, Machine, MachineError, MachineHandle, MachineSignal, Shared, SignalHandler,
    WorkerCtx, CURRENT,
};
use crate::task::TaskRef;
use crate::trace::Ring;
use crate::worker::worker_loop;
use crossbeam_deque::{Injector, Worker};
use multios_host::{tsc, CpuSet};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct MachineBuilder {
    name: String,
    cpus: Option<CpuSet>,
    cores: Option<usize>,
    workers_per_cpu: usize,
    spin: Duration,
    call_spin: Option<Duration>,
    stealing: bool,
    batch: usize,
    on_signal: Option<SignalHandler>,
    trace: usize,
    active_cpus: Option<CpuSet>,
    wake_siblings: bool,
}

impl MachineBuilder {
    pub fn new(name: &str) -> Self {
        MachineBuilder {
            name: name.to_string(),
            cpus: None,
            cores: None,
            workers_per_cpu: 1,
            spin: Duration::from_micros(50),
            call_spin: None,
            stealing: false,
            batch: 32,
            on_signal: None,
            trace: 0,
            active_cpus: None,
            wake_siblings: true,
        }
    }

    /// Exactly these CPUs (each must be online and allowed to this process).
    pub fn cpus(mut self, cpus: CpuSet) -> Self {
        self.cpus = Some(cpus);
        self
    }

    /// The first `n` CPUs this process may use (ignored when [`cpus`](Self::cpus) is given).
    pub fn cores(mut self, n: usize) -> Self {
        self.cores = Some(n);
        self
    }

    /// Several workers on each CPU (e.g. the OS machine, whose blocking calls block a worker).
    pub fn workers_per_cpu(mut self, n: usize) -> Self {
        self.workers_per_cpu = n.max(1);
        self
    }

    /// How long an idle worker polls before it sleeps on its futex. `Duration::ZERO`: sleep at
    /// once (the paper's idle case); `Duration::MAX`: never sleep (its active case).
    pub fn idle_spin(mut self, spin: Duration) -> Self {
        self.spin = spin;
        self
    }

    /// How long a task awaiting a machine call's result polls the result's slot itself, while
    /// its worker has nothing else ready, before it suspends and waits to be woken through the
    /// inject queue. The default is the idle spin, capped at 50 µs (so `idle_spin(ZERO)` keeps
    /// the pure IMS path); `Duration::ZERO` turns the polled wait off.
    pub fn call_spin(mut self, spin: Duration) -> Self {
        self.call_spin = Some(spin);
        self
    }

    /// Lets an idle worker steal ready tasks from the other workers of the machine.
    pub fn work_stealing(mut self, on: bool) -> Self {
        self.stealing = on;
        self
    }

    /// At most this many requests taken from one interface queue per visit (FlexSC-style
    /// batching: what is queued runs back to back).
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = n.max(1);
        self
    }

    /// With several workers: whether a sender signals (IMS) when no worker is idle although one
    /// is awake, so that a sleeping worker takes the new work instead of leaving it queued behind
    /// a busy one (default on). Off: only when no worker is awake (as with one worker).
    pub fn wake_idle_siblings(mut self, on: bool) -> Self {
        self.wake_siblings = on;
        self
    }

    /// Starts only the workers on these CPUs; the others wait until the Machine Manager gives
    /// the machine their core (see [`crate::manager`]). Default: all.
    pub fn active_cpus(mut self, cpus: CpuSet) -> Self {
        self.active_cpus = Some(cpus);
        self
    }

    /// Records the last `events_per_worker` task runs and sleeps of each worker (see
    /// [`crate::trace`]); 0 (the default) records nothing.
    pub fn trace(mut self, events_per_worker: usize) -> Self {
        self.trace = events_per_worker;
        self
    }

    pub fn on_signal(mut self, f: impl Fn(&MachineSignal) + Send + Sync + 'static) -> Self {
        self.on_signal = Some(Box::new(f));
        self
    }

    fn choose_cpus(&self) -> Result<Vec<usize>, MachineError> {
        let machine = self.name.clone();
        let online = CpuSet::online().map_err(|source| MachineError::CpuList {
            machine: machine.clone(),
            source,
        })?;
        let allowed = CpuSet::allowed();
        if let Some(set) = &self.cpus {
            for &cpu in &set.0 {
                if !online.contains(cpu) {
                    return Err(MachineError::NotOnline { machine, cpu, online });
                }
                if !allowed.contains(cpu) {
                    return Err(MachineError::NotAllowed {
                        machine,
                        cpu,
                        allowed,
                    });
                }
            }
            return Ok(set.to_vec());
        }
        let usable: CpuSet = allowed.0.intersection(&online.0).copied().collect();
        let n = self.cores.unwrap_or(1);
        if n == 0 {
            return Err(MachineError::NoCores { machine });
        }
        if n > usable.len() {
            return Err(MachineError::TooManyCores {
                machine,
                asked: n,
                usable: usable.len(),
                cpus: usable,
            });
        }
        Ok(usable.to_vec().into_iter().take(n).collect())
    }

    /// Starts the workers, pinned; returns once every worker is pinned and running.
    pub fn build(self) -> Result<Machine, MachineError> {
        let cpus = self.choose_cpus()?;
        let worker_cpus: Vec<usize> = cpus
            .iter()
            .flat_map(|&c| std::iter::repeat_n(c, self.workers_per_cpu))
            .collect();
        let locals: Vec<Worker<TaskRef>> = worker_cpus.iter().map(|_| Worker::new_fifo()).collect();
        let spin_ticks = if self.spin == Duration::MAX {
            u64::MAX
        } else {
            tsc::calibration().ticks(self.spin.as_secs_f64())
        };
        let call_spin = self
            .call_spin
            .unwrap_or_else(|| self.spin.min(Duration::from_micros(50)));
        let call_spin_ticks = tsc::calibration().ticks(call_spin.min(Duration::from_secs(1)).as_secs_f64());
        let shared = Arc::new(Shared {
            name: self.name.as_str().into(),
            injector: Injector::new(),
            stealers: locals.iter().map(Worker::stealer).collect(),
            parkers: worker_cpus.iter().map(|_| Parker::default()).collect(),
            cpus: worker_cpus.clone(),
            stopped: crate::machine::CacheLine(AtomicBool::new(false)),
            spin_ticks,
            call_spin_ticks,
            stealing: self.stealing,
            batch: self.batch,
            served: Mutex::new(Vec::new()),
            served_version: AtomicUsize::new(0),
            idle: Mutex::new(()),
            // Every worker counts until it sleeps; a dormant one leaves the count in `dormant`.
            pollers: AtomicUsize::new(worker_cpus.len()),
            signals: Mutex::new(VecDeque::new()),
            signals_pending: AtomicBool::new(false),
            on_signal: self.on_signal,
            panics: Mutex::new(Vec::new()),
            counters: Counters::default(),
            worker_counters: worker_cpus
                .iter()
                .map(|_| CacheLine(Default::default()))
                .collect(),
            active: worker_cpus
                .iter()
                .map(|c| {
                    CacheLine(AtomicBool::new(
                        self.active_cpus.as_ref().is_none_or(|a| a.contains(*c)),
                    ))
                })
                .collect(),
            grants: worker_cpus.iter().map(|_| CacheLine(AtomicU64::new(0))).collect(),
            serving: worker_cpus
                .iter()
                .map(|_| CacheLine(AtomicBool::new(true)))
                .collect(),
            acks: worker_cpus.iter().map(|_| CacheLine(AtomicU64::new(0))).collect(),
            pending_moves: worker_cpus.iter().map(|_| Mutex::new(None)).collect(),
            domain: Mutex::new(None),
            waiting: CacheLine(AtomicBool::new(false)),
            work_signals: AtomicU64::new(0),
            multi_worker: CacheLine(worker_cpus.len() > 1 && self.wake_siblings),
            idle_pollers: CacheLine(AtomicUsize::new(0)),
            traces: if self.trace > 0 {
                worker_cpus.iter().map(|_| Ring::new(self.trace)).collect()
            } else {
                Vec::new()
            },
        });
        let machine = Machine {
            handle: MachineHandle(shared.clone()),
            threads: Mutex::new(Vec::new()),
        };
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), MachineError>>();
        for (index, (local, cpu)) in locals.into_iter().zip(worker_cpus).enumerate() {
            let shared = shared.clone();
            let ready = ready_tx.clone();
            let name = self.name.clone();
            let t = std::thread::Builder::new()
                .name(format!("aam:{}:{cpu}", self.name))
                .spawn(move || {
                    let pinned = multios_host::cpus::pin_current_thread(&CpuSet([cpu].into()));
                    let ok = pinned.map_err(|source| MachineError::Pin {
                        machine: name,
                        cpu,
                        source,
                    });
                    let failed = ok.is_err();
                    let _ = ready.send(ok);
                    drop(ready);
                    if failed {
                        return;
                    }
                    let ctx = Rc::new(WorkerCtx {
                        shared,
                        local,
                        index,
                        wanted: crate::domain::wanted(cpu),
                        idle: std::cell::Cell::new(false),
                    });
                    CURRENT.with(|c| *c.borrow_mut() = Some(ctx.clone()));
                    worker_loop(&ctx);
                    CURRENT.with(|c| *c.borrow_mut() = None);
                })
                .map_err(|source| MachineError::Thread {
                    machine: self.name.clone(),
                    cpu,
                    source,
                })?;
            lock(&machine.threads).push(t);
        }
        drop(ready_tx);
        for r in ready_rx {
            r?;
        }
        Ok(machine)
    }
}
