//! The Machine Manager's core: IMS as a synchronous call into the manager, made on the sender's
//! thread (the paper's system call, §3.3), and the core moves it makes.
//!
//! [`ims`] buffers the machine signal in the destination machine (a coalesced
//! [`MachineSignal::Messages`](crate::MachineSignal::Messages), handled between two tasks) and
//! activates the machine: it wakes one of its sleeping workers (futex); if the machine holds no
//! core at that moment (the manager moved its cores away) and belongs to a manager with a moving
//! policy ([`MachineManager`](crate::manager::MachineManager)), the manager grants it one — a CPU
//! no machine holds, or one whose holder's worker sleeps — or queues it until a holder's worker
//! runs out of work and hands its CPU over (a machine switch "when a core would start to idle"),
//! or until the periodic policy takes a CPU from a busy holder. The handshake between the two is
//! `multios_aam_sync::activation`, checked by loom.
//!
//! A core move is asynchronous: the manager flips the per-worker flags, buffers `CoreRevoked` /
//! `CoreGranted` in both machines and starts the receiving worker; that worker completes the
//! move when it runs (records the move with the time from the decision, traces it, and wakes the
//! donor's worker if it sleeps so that it leaves the CPU). [`crate::manager::move_core`] waits
//! for that completion; IMS grants, hand-overs and the policy thread do not.

use crate::machine::{lock, CacheLine, Shared};
use crate::manager::{Move, MoveCause, Policy};
use crate::trace::EventKind;
use multios_aam_sync::activation;
use multios_host::tsc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// Machines waiting for each CPU (the `wanted` words of `multios_aam_sync::activation`), one
/// cache line per CPU, shared by every manager of the process: an idle worker reads its CPU's
/// word in its spin loop and hands the CPU over when it is not zero.
fn wanted_table() -> &'static [CacheLine<AtomicUsize>] {
    static TABLE: OnceLock<Box<[CacheLine<AtomicUsize>]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let n = multios_host::CpuSet::online()
            .ok()
            .and_then(|s| s.to_vec().into_iter().max())
            .unwrap_or(0)
            .max(multios_host::CpuSet::allowed().to_vec().into_iter().max().unwrap_or(0));
        (0..=n.max(1)).map(|_| CacheLine(AtomicUsize::new(0))).collect()
    })
}

/// The `wanted` word of `cpu` (a word of its own for CPUs beyond the table: never wanted).
pub(crate) fn wanted(cpu: usize) -> &'static AtomicUsize {
    static BEYOND: AtomicUsize = AtomicUsize::new(0);
    wanted_table().get(cpu).map_or(&BEYOND, |c| &c.0)
}

/// A machine's membership in a manager.
#[derive(Clone)]
pub(crate) struct Membership {
    pub(crate) domain: Arc<Domain>,
    pub(crate) index: usize,
}

/// Core moves made, by cause.
#[derive(Default)]
pub(crate) struct MoveCounts {
    pub(crate) ims: AtomicU64,
    pub(crate) idle: AtomicU64,
    pub(crate) policy: AtomicU64,
    pub(crate) explicit: AtomicU64,
}

impl MoveCounts {
    pub(crate) fn of(&self, cause: MoveCause) -> &AtomicU64 {
        match cause {
            MoveCause::Ims => &self.ims,
            MoveCause::Idle => &self.idle,
            MoveCause::Policy => &self.policy,
            MoveCause::Explicit => &self.explicit,
        }
    }
}

/// The machines one manager assigns cores to, and its lock (every move and grant decision of the
/// manager is made with it held).
pub(crate) struct Domain {
    pub(crate) policy: Policy,
    pub(crate) machines: Vec<Weak<Shared>>,
    /// The manager's lock; holds the machines waiting for a core, in request order (entries
    /// whose machine no longer waits are skipped).
    pub(crate) queue: Mutex<Vec<usize>>,
    pub(crate) moves: Mutex<Vec<Move>>,
    pub(crate) counts: MoveCounts,
}

/// A move the receiving worker completes when it runs.
pub(crate) struct PendingMove {
    pub(crate) t0: u64,
    pub(crate) cpu: usize,
    pub(crate) cause: MoveCause,
    pub(crate) from: Option<(Arc<Shared>, usize)>,
    pub(crate) log: Option<Arc<Domain>>,
}

impl Shared {
    pub(crate) fn membership(&self) -> Option<Membership> {
        lock(&self.domain).clone()
    }

    /// Whether any worker of the machine holds its CPU.
    pub(crate) fn any_active(&self) -> bool {
        self.active.iter().any(|a| a.load(SeqCst))
    }

    /// The first worker of this machine on `cpu`.
    pub(crate) fn worker_on(&self, cpu: usize) -> Option<usize> {
        self.cpus.iter().position(|&c| c == cpu)
    }

    fn distinct_cpus(&self) -> Vec<usize> {
        let mut v = self.cpus.clone();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Counts (`up`) or uncounts this machine in the `wanted` word of each of its CPUs.
    pub(crate) fn count_wanted(&self, up: bool) {
        for cpu in self.distinct_cpus() {
            if up {
                wanted(cpu).fetch_add(1, SeqCst);
            } else {
                wanted(cpu).fetch_sub(1, SeqCst);
            }
        }
    }
}

/// IMS: the sender's synchronous call into the Machine Manager (on the sender's thread, after it
/// published its request or task with a SeqCst fence): buffers a `Messages` machine signal in
/// `dest` and activates it.
pub(crate) fn ims(dest: &Arc<Shared>) {
    dest.work_signals.fetch_add(1, SeqCst);
    dest.signals_pending.store(true, SeqCst);
    activate(dest);
}

/// Wakes one sleeping worker of `dest` that holds its core; if none holds one, asks the
/// machine's manager for a core. (Also the activation of a buffered signal, of work a blocked or
/// dormant worker leaves queued: every such call counts in `ims_calls`.)
pub(crate) fn activate(dest: &Arc<Shared>) {
    dest.counters.ims_calls.fetch_add(1, SeqCst);
    if wake_one(dest) {
        return;
    }
    if dest.any_active() || dest.stopped.load(SeqCst) {
        // A worker that holds its core is running: it re-checks every source of work before it
        // sleeps (`multios_aam_sync::parker`).
        return;
    }
    dest.counters.ims_without_core.fetch_add(1, SeqCst);
    if let Some(m) = dest.membership() {
        m.domain.request_core(m.index, dest);
    }
}

/// Wakes one sleeping worker of `dest` that holds its core (an IMS wake-up, counted and traced).
pub(crate) fn wake_one(dest: &Shared) -> bool {
    for (i, (p, active)) in dest.parkers.iter().zip(&dest.active).enumerate() {
        if active.load(SeqCst) && p.notify() {
            dest.counters.ims_wakeups.fetch_add(1, SeqCst);
            if let Some(ring) = dest.traces.get(i) {
                ring.mark(EventKind::Ims, "ims wake-up");
            }
            return true;
        }
    }
    false
}

impl Domain {
    pub(crate) fn new(policy: Policy, machines: &[Arc<Shared>]) -> Domain {
        Domain {
            policy,
            machines: machines.iter().map(Arc::downgrade).collect(),
            queue: Mutex::new(Vec::new()),
            moves: Mutex::new(Vec::new()),
            counts: MoveCounts::default(),
        }
    }

    fn machine(&self, index: usize) -> Option<Arc<Shared>> {
        self.machines.get(index).and_then(Weak::upgrade)
    }

    /// The domain's running machines other than `except` whose worker on `cpu` holds it (a
    /// stopped machine holds nothing).
    fn holders(&self, cpu: usize, except: usize) -> Vec<(Arc<Shared>, usize)> {
        (0..self.machines.len())
            .filter(|&i| i != except)
            .filter_map(|i| self.machine(i))
            .filter(|m| !m.stopped.load(SeqCst))
            .filter_map(|m| {
                let w = m
                    .cpus
                    .iter()
                    .enumerate()
                    .position(|(w, &c)| c == cpu && m.active[w].load(SeqCst))?;
                Some((m, w))
            })
            .collect()
    }

    /// The requester's side (see `multios_aam_sync::activation`): `dest` (index `index`) holds
    /// no core and has work.
    pub(crate) fn request_core(self: &Arc<Self>, index: usize, dest: &Arc<Shared>) {
        if self.policy == Policy::Static {
            return;
        }
        let mut queue = lock(&self.queue);
        let granted = activation::request(
            &dest.waiting,
            || dest.count_wanted(true),
            || self.grant(index, dest),
        );
        if !granted && !queue.contains(&index) {
            queue.push(index);
        }
    }

    /// With the manager's lock: a free CPU of `dest`, or one whose holder's worker sleeps there,
    /// goes to `dest`. Prefers a free CPU, then the holder with the most cores.
    fn grant(self: &Arc<Self>, index: usize, dest: &Arc<Shared>) -> bool {
        if dest.any_active() {
            activation::withdraw(&dest.waiting, || dest.count_wanted(false));
            return true;
        }
        let mut best: Option<(usize, usize, usize, Option<(Arc<Shared>, usize)>)> = None;
        for (tw, &cpu) in dest.cpus.iter().enumerate() {
            if dest.worker_on(cpu) != Some(tw) {
                continue;
            }
            let holders = self.holders(cpu, index);
            let (score, from) = match holders.as_slice() {
                [] => (usize::MAX, None),
                [(h, hw)] if h.parkers[*hw].is_sleeping() => {
                    let cores = h.active.iter().filter(|a| a.load(SeqCst)).count();
                    (cores, Some((h.clone(), *hw)))
                }
                _ => continue,
            };
            if best.as_ref().is_none_or(|b| score > b.0) {
                best = Some((score, cpu, tw, from));
            }
        }
        let Some((_, cpu, tw, from)) = best else {
            return false;
        };
        let from = from.as_ref().map(|(m, w)| (m, *w));
        start_move(cpu, from, (dest, tw), MoveCause::Ims, Some(self.clone()));
        true
    }

    /// The holder's side: `holder`'s idle `worker` gives its CPU to the machine that has waited
    /// longest for it, if any. True if it did (the worker then leaves the CPU).
    pub(crate) fn hand_over(self: &Arc<Self>, holder: &Arc<Shared>, worker: usize) -> bool {
        if self.policy == Policy::Static {
            return false;
        }
        let mut queue = lock(&self.queue);
        if !holder.active[worker].load(SeqCst) {
            return false;
        }
        let cpu = holder.cpus[worker];
        let mut pick = None;
        queue.retain(|&i| {
            let Some(m) = self.machine(i) else { return false };
            if !m.waiting.load(SeqCst) {
                return false;
            }
            if m.any_active() {
                activation::withdraw(&m.waiting, || m.count_wanted(false));
                return false;
            }
            if pick.is_none() {
                if let Some(tw) = m.worker_on(cpu) {
                    pick = Some((m, tw));
                    return false;
                }
            }
            true
        });
        let Some((m, tw)) = pick else { return false };
        start_move(cpu, Some((holder, worker)), (&m, tw), MoveCause::Idle, Some(self.clone()));
        true
    }

    /// Every machine leaves the manager: their requests are withdrawn.
    pub(crate) fn dissolve(&self) {
        let _queue = lock(&self.queue);
        for m in self.machines.iter().filter_map(Weak::upgrade) {
            activation::withdraw(&m.waiting, || m.count_wanted(false));
            let mut d = lock(&m.domain);
            if d.as_ref().is_some_and(|d| std::ptr::eq(Arc::as_ptr(&d.domain), self)) {
                *d = None;
            }
        }
    }
}

/// Starts a core move (with the manager's lock held when the machines have one): `from`'s worker
/// leaves `cpu` at its next task boundary (or is woken by the receiver if it sleeps), `to`'s
/// worker there is started; both machines get the machine signal. Returns the grant number the
/// receiving worker acknowledges when it runs.
pub(crate) fn start_move(
    cpu: usize,
    from: Option<(&Arc<Shared>, usize)>,
    to: (&Arc<Shared>, usize),
    cause: MoveCause,
    log: Option<Arc<Domain>>,
) -> u64 {
    use crate::machine::MachineSignal::{CoreGranted, CoreRevoked};
    let t0 = tsc::now();
    if let Some((f, fw)) = from {
        f.active[fw].store(false, SeqCst);
        f.counters.cores_lost.fetch_add(1, SeqCst);
        f.post(CoreRevoked { cpu });
    }
    let (t, tw) = to;
    activation::withdraw(&t.waiting, || t.count_wanted(false));
    *lock(&t.pending_moves[tw]) = Some(PendingMove {
        t0,
        cpu,
        cause,
        from: from.map(|(f, fw)| (f.clone(), fw)),
        log,
    });
    let grant = t.grants[tw].fetch_add(1, SeqCst) + 1;
    t.counters.cores_gained.fetch_add(1, SeqCst);
    t.post(CoreGranted { cpu });
    activation::start(&t.parkers[tw], || t.active[tw].store(true, SeqCst));
    grant
}

/// The receiving worker's side, when it runs with its new core: records the move (in its
/// manager's log and both workers' trace rings) and wakes the donor's worker if it sleeps, so it
/// leaves the CPU.
pub(crate) fn complete_move(shared: &Arc<Shared>, worker: usize) {
    let Some(pm) = lock(&shared.pending_moves[worker]).take() else {
        return;
    };
    let t1 = tsc::now();
    let ns = t1.saturating_sub(pm.t0) as f64 / tsc::calibration().ticks_per_ns();
    if let Some(ring) = shared.traces.get(worker) {
        ring.record_span(EventKind::CoreMove, "core gained", pm.t0, t1);
    }
    if let Some((f, fw)) = &pm.from {
        if let Some(ring) = f.traces.get(*fw) {
            ring.record_span(EventKind::CoreMove, "core lost", pm.t0, t1);
        }
        if !f.active[*fw].load(SeqCst) {
            f.parkers[*fw].notify();
        }
    }
    if let Some(d) = pm.log {
        d.counts.of(pm.cause).fetch_add(1, SeqCst);
        lock(&d.moves).push(Move {
            cpu: pm.cpu,
            from: pm.from.as_ref().map_or_else(String::new, |(f, _)| f.name.to_string()),
            to: shared.name.to_string(),
            ns,
            cause: pm.cause,
        });
    }
}
