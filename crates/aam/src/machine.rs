//! A machine: a name, a set of CPUs with one pinned worker thread each (or several), and its own
//! task scheduler.
//!
//! Scheduling, per worker, between two tasks: buffered machine signals; then the worker's local
//! ready queue (FIFO: round robin among ready tasks); every 61st pick and whenever the local queue
//! is empty, the machine's inject queue (tasks woken from other threads, e.g. by a machine call's
//! result); then, if enabled, stealing from the other workers of the machine; only then the
//! interface queues of the machine's clients, first come first served and round robin between
//! queues. When nothing is found the worker spins for the configured time and then sleeps on a
//! futex (see [`crate::ims`]).

use crate::ims::Parker;
use crate::interface::Served;
use crate::oneshot;
use crate::task::{JoinHandle, Task, TaskRef};
use crate::trace::{Event, EventKind, Ring};
use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use multios_host::{tsc, CpuListError, CpuSet};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::rc::Rc;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What keeps a machine from starting.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    #[error("machine '{machine}': asked for {asked} cores but this process may use only {usable} CPUs ({cpus}); ask for at most {usable}")]
    TooManyCores {
        machine: String,
        asked: usize,
        usable: usize,
        cpus: CpuSet,
    },
    #[error("machine '{machine}': CPU {cpu} is not online (online: {online}); choose CPUs from that list")]
    NotOnline {
        machine: String,
        cpu: usize,
        online: CpuSet,
    },
    #[error("machine '{machine}': this process may not run on CPU {cpu} (its affinity mask allows {allowed}); choose CPUs from that list or widen the mask (taskset)")]
    NotAllowed {
        machine: String,
        cpu: usize,
        allowed: CpuSet,
    },
    #[error("machine '{machine}': zero cores asked for; a machine needs at least one")]
    NoCores { machine: String },
    #[error("machine '{machine}': {source}")]
    CpuList {
        machine: String,
        #[source]
        source: CpuListError,
    },
    #[error("machine '{machine}': cannot start the worker thread for CPU {cpu}: {source}")]
    Thread {
        machine: String,
        cpu: usize,
        source: io::Error,
    },
    #[error("machine '{machine}': cannot pin the worker thread to CPU {cpu}: {source}")]
    Pin {
        machine: String,
        cpu: usize,
        source: io::Error,
    },
}

/// A machine signal (the paper's IMS payload): buffered and handled between two tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MachineSignal {
    /// A client registered an interface queue (name of the served interface object type).
    InterfaceRegistered { client_queue: usize },
    /// An application-defined signal number and parameter.
    User { number: u32, param: u64 },
}

/// A task that panicked: the machine reports it and goes on serving.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PanicReport {
    pub machine: String,
    pub task: String,
    pub message: String,
}

/// Counters of a machine (monotonic since it started).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct MachineStats {
    pub tasks_run: u64,
    /// Futex wake-ups this machine's senders performed to wake a sleeping worker of this machine.
    pub ims_wakeups: u64,
    /// Times a worker went to sleep.
    pub sleeps: u64,
    /// Interface-queue visits that took at least one request, and requests taken.
    pub batches: u64,
    pub requests: u64,
    pub signals_handled: u64,
    pub panics: u64,
}

#[derive(Default)]
struct Counters {
    ims_wakeups: AtomicU64,
    sleeps: AtomicU64,
    batches: AtomicU64,
    requests: AtomicU64,
    signals_handled: AtomicU64,
    tasks_run: AtomicU64,
}

type SignalHandler = Box<dyn Fn(&MachineSignal) + Send + Sync>;

pub(crate) struct Shared {
    pub(crate) name: Arc<str>,
    injector: Injector<TaskRef>,
    stealers: Vec<Stealer<TaskRef>>,
    parkers: Vec<Parker>,
    pub(crate) cpus: Vec<usize>,
    pub(crate) stopped: AtomicBool,
    spin_ticks: u64,
    stealing: bool,
    batch: usize,
    pub(crate) served: Mutex<Vec<Arc<dyn Served>>>,
    served_version: AtomicUsize,
    /// Guards `pollers` and the flags of the served queues together.
    idle: Mutex<()>,
    pollers: AtomicUsize,
    signals: Mutex<VecDeque<MachineSignal>>,
    pub(crate) signals_pending: AtomicBool,
    on_signal: Option<SignalHandler>,
    panics: Mutex<Vec<PanicReport>>,
    counters: Counters,
    /// One event ring per worker when tracing.
    traces: Vec<Ring>,
    /// Whether each worker serves the machine (the Machine Manager moves cores by flipping
    /// these); the number of times each was granted its core, and the grant it last saw while
    /// active (a core move waits for the acknowledgement).
    pub(crate) active: Vec<CacheLine<AtomicBool>>,
    pub(crate) grants: Vec<CacheLine<AtomicU64>>,
    /// False while the worker sits dormant (it has really left the core).
    pub(crate) serving: Vec<CacheLine<AtomicBool>>,
    pub(crate) acks: Vec<CacheLine<AtomicU64>>,
}

/// A value alone on its cache lines (per-worker flags must not share a line with small heap
/// objects another core writes).
#[repr(align(128))]
pub(crate) struct CacheLine<T>(pub(crate) T);

impl<T> std::ops::Deref for CacheLine<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

struct WorkerCtx {
    shared: Arc<Shared>,
    local: Worker<TaskRef>,
    index: usize,
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<WorkerCtx>>> = const { RefCell::new(None) };
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// Makes a `SCHEDULED` task runnable: into the local queue when called on a worker of this
    /// machine, else into the inject queue with an IMS if no worker is polling.
    pub(crate) fn schedule(self: &Arc<Self>, task: TaskRef) {
        let mut task = Some(task);
        let _ = CURRENT.try_with(|c| {
            if let Some(ctx) = &*c.borrow() {
                if std::ptr::eq(&*ctx.shared, &**self) {
                    if let Some(t) = task.take() {
                        ctx.local.push(t);
                    }
                }
            }
        });
        let Some(task) = task else { return };
        if self.stopped.load(Ordering::SeqCst) {
            task.cancel();
            return;
        }
        self.injector.push(task);
        fence(Ordering::SeqCst);
        if self.pollers.load(Ordering::SeqCst) == 0 {
            self.ims();
        }
        if self.stopped.load(Ordering::SeqCst) {
            self.drain_injector();
        }
    }

    /// Inter-machine signaling: wakes one sleeping worker, if any.
    pub(crate) fn ims(&self) {
        for (p, active) in self.parkers.iter().zip(&self.active) {
            if active.load(Ordering::SeqCst) && p.notify() {
                self.counters.ims_wakeups.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
    }

    pub(crate) fn wake_worker(&self, worker: usize) {
        if let Some(p) = self.parkers.get(worker) {
            p.force_wake();
        }
    }

    fn drain_injector(&self) {
        loop {
            match self.injector.steal() {
                Steal::Success(t) => t.cancel(),
                Steal::Retry => continue,
                Steal::Empty => break,
            }
        }
    }

    pub(crate) fn report_panic(&self, task: &str, message: String) {
        lock(&self.panics).push(PanicReport {
            machine: self.name.to_string(),
            task: task.to_string(),
            message,
        });
    }

    /// Registers a client's interface queue; the queue's polling flag starts as the machine's.
    pub(crate) fn register(&self, q: Arc<dyn Served>) {
        {
            let _g = lock(&self.idle);
            q.set_polling(self.pollers.load(Ordering::SeqCst) > 0);
            lock(&self.served).push(q);
            self.served_version.fetch_add(1, Ordering::SeqCst);
        }
        let n = lock(&self.served).len();
        self.signal(MachineSignal::InterfaceRegistered { client_queue: n });
    }

    pub(crate) fn signal(&self, sig: MachineSignal) {
        lock(&self.signals).push_back(sig);
        self.signals_pending.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self.pollers.load(Ordering::SeqCst) == 0 {
            self.ims();
        }
    }

    fn handle_signals(&self) {
        self.signals_pending.store(false, Ordering::SeqCst);
        let sigs = std::mem::take(&mut *lock(&self.signals));
        for s in &sigs {
            if let Some(h) = &self.on_signal {
                h(s);
            }
        }
        self.counters
            .signals_handled
            .fetch_add(sigs.len() as u64, Ordering::Relaxed);
    }

    /// The worker is about to sleep (`on == false`) or woke up.
    fn set_polling(&self, on: bool) {
        let _g = lock(&self.idle);
        let before = if on {
            self.pollers.fetch_add(1, Ordering::SeqCst)
        } else {
            self.pollers.fetch_sub(1, Ordering::SeqCst)
        };
        let now_zero = !on && before == 1;
        let now_one = on && before == 0;
        if now_zero || now_one {
            for q in lock(&self.served).iter() {
                q.set_polling(on);
            }
        }
    }
}

/// A cheap, clonable reference to a machine: spawn tasks on it, signal it, read its state.
#[derive(Clone)]
pub struct MachineHandle(pub(crate) Arc<Shared>);

impl MachineHandle {
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The CPUs of its workers, in worker order.
    pub fn cpus(&self) -> &[usize] {
        &self.0.cpus
    }

    pub fn is_stopped(&self) -> bool {
        self.0.stopped.load(Ordering::SeqCst)
    }

    /// The machine whose worker runs the calling thread, if any.
    pub fn current() -> Option<MachineHandle> {
        CURRENT
            .try_with(|c| c.borrow().as_ref().map(|ctx| MachineHandle(ctx.shared.clone())))
            .ok()
            .flatten()
    }

    /// Spawns a task named `name`; its result arrives through the returned future. On a worker
    /// of this machine the task goes to that worker's ready queue, from anywhere else to the
    /// machine's inject queue. On a stopped machine the handle resolves to
    /// [`TaskError::Cancelled`](crate::TaskError::Cancelled).
    pub fn spawn<F>(&self, name: &'static str, fut: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let task = Task::new(name, self.0.clone(), completion(fut, tx));
        self.0.schedule(task);
        JoinHandle {
            rx,
            machine: self.0.clone(),
            task: name,
        }
    }

    /// Sends a machine signal; it is handled between two tasks by the handler given to
    /// [`MachineBuilder::on_signal`].
    pub fn signal(&self, number: u32, param: u64) {
        self.0.signal(MachineSignal::User { number, param });
    }

    /// The machine's published load: ready tasks (inject and local queues) plus requests waiting
    /// in its clients' queues.
    pub fn ready_tasks(&self) -> usize {
        let s = &self.0;
        let queued: usize = lock(&s.served).iter().map(|q| q.pending()).sum();
        s.injector.len() + s.stealers.iter().map(Stealer::len).sum::<usize>() + queued
    }

    /// Each worker's recorded events with its CPU, in worker order (empty unless tracing).
    pub fn trace_events(&self) -> Vec<(usize, Vec<Event>)> {
        self.0
            .traces
            .iter()
            .zip(&self.0.cpus)
            .map(|(r, &cpu)| (cpu, r.snapshot()))
            .collect()
    }

    pub fn panics(&self) -> Vec<PanicReport> {
        lock(&self.0.panics).clone()
    }

    pub fn stats(&self) -> MachineStats {
        let c = &self.0.counters;
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        MachineStats {
            tasks_run: r(&c.tasks_run),
            ims_wakeups: r(&c.ims_wakeups),
            sleeps: r(&c.sleeps),
            batches: r(&c.batches),
            requests: r(&c.requests),
            signals_handled: r(&c.signals_handled),
            panics: lock(&self.0.panics).len() as u64,
        }
    }
}

/// The future a spawned task runs: the user's future, then its result handed to the join handle.
async fn completion<F>(fut: F, tx: oneshot::Sender<F::Output>)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tx.send(fut.await)
}

/// Bytes a task spawned with `fut` occupies while queued: one allocation holding the reference
/// counts, the task header and the future (the user's future plus the result sender). No stack.
pub fn spawned_task_bytes<F>(fut: F) -> usize
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn bytes_of<W>(_: &W) -> usize {
        crate::task::task_size_of::<W>()
    }
    let (tx, _rx) = oneshot::channel();
    bytes_of(&completion(fut, tx))
}

/// How to start a machine.
pub struct MachineBuilder {
    name: String,
    cpus: Option<CpuSet>,
    cores: Option<usize>,
    workers_per_cpu: usize,
    spin: Duration,
    stealing: bool,
    batch: usize,
    on_signal: Option<SignalHandler>,
    trace: usize,
    active_cpus: Option<CpuSet>,
}

impl MachineBuilder {
    pub fn new(name: &str) -> Self {
        MachineBuilder {
            name: name.to_string(),
            cpus: None,
            cores: None,
            workers_per_cpu: 1,
            spin: Duration::from_micros(50),
            stealing: false,
            batch: 32,
            on_signal: None,
            trace: 0,
            active_cpus: None,
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
        let shared = Arc::new(Shared {
            name: self.name.as_str().into(),
            injector: Injector::new(),
            stealers: locals.iter().map(Worker::stealer).collect(),
            parkers: worker_cpus.iter().map(|_| Parker::default()).collect(),
            cpus: worker_cpus.clone(),
            stopped: AtomicBool::new(false),
            spin_ticks,
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
                    let ctx = Rc::new(WorkerCtx { shared, local, index });
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

fn steal_injector(ctx: &WorkerCtx) -> Option<TaskRef> {
    // Cheap test first: a steal attempt on an empty queue costs a SeqCst fence.
    if ctx.shared.injector.is_empty() {
        return None;
    }
    loop {
        match ctx.shared.injector.steal_batch_and_pop(&ctx.local) {
            Steal::Success(t) => return Some(t),
            Steal::Empty => return None,
            Steal::Retry => continue,
        }
    }
}

struct Cursor {
    tick: u32,
    queues: Vec<Arc<dyn Served>>,
    version: usize,
    next_queue: usize,
}

impl Cursor {
    fn refresh(&mut self, shared: &Shared) {
        let v = shared.served_version.load(Ordering::Acquire);
        if v != self.version {
            self.queues = lock(&shared.served).clone();
            self.version = v;
        }
    }
}

fn next_task(ctx: &WorkerCtx, cur: &mut Cursor) -> Option<TaskRef> {
    // Every 61st pick looks at the inject queue first, so remote wake-ups are not starved.
    cur.tick = if cur.tick == 0 { 60 } else { cur.tick - 1 };
    if cur.tick == 0 {
        if let Some(t) = steal_injector(ctx) {
            return Some(t);
        }
    }
    if let Some(t) = ctx.local.pop() {
        return Some(t);
    }
    if let Some(t) = steal_injector(ctx) {
        return Some(t);
    }
    let shared = &ctx.shared;
    if shared.stealing {
        for (i, s) in shared.stealers.iter().enumerate() {
            if i == ctx.index {
                continue;
            }
            loop {
                match s.steal_batch_and_pop(&ctx.local) {
                    Steal::Success(t) => return Some(t),
                    Steal::Empty => break,
                    Steal::Retry => continue,
                }
            }
        }
    }
    cur.refresh(shared);
    let n = cur.queues.len();
    for i in 0..n {
        let k = (cur.next_queue + i) % n;
        let (first, taken) = cur.queues[k].take_batch(shared, &ctx.local, shared.batch);
        if let Some(t) = first {
            cur.next_queue = (k + 1) % n;
            shared.counters.batches.fetch_add(1, Ordering::Relaxed);
            shared
                .counters
                .requests
                .fetch_add(taken as u64, Ordering::Relaxed);
            return Some(t);
        }
    }
    None
}

fn has_work(ctx: &WorkerCtx, cur: &mut Cursor) -> bool {
    let shared = &ctx.shared;
    cur.refresh(shared);
    !ctx.local.is_empty()
        || !shared.injector.is_empty()
        || (shared.stealing && shared.stealers.iter().any(|s| !s.is_empty()))
        || cur.queues.iter().any(|q| q.has_takeable())
        || shared.signals_pending.load(Ordering::SeqCst)
        || shared.stopped.load(Ordering::SeqCst)
        || !shared.active[ctx.index].load(Ordering::SeqCst)
        || shared.grants[ctx.index].load(Ordering::SeqCst) != shared.acks[ctx.index].load(Ordering::SeqCst)
}

fn worker_loop(ctx: &WorkerCtx) {
    let shared = &ctx.shared;
    let mut cur = Cursor {
        tick: 0,
        queues: Vec::new(),
        version: usize::MAX,
        next_queue: 0,
    };
    let mut run = 0u64;
    let mut acked = 0u64;
    'serve: loop {
        if shared.signals_pending.load(Ordering::Relaxed) {
            shared.handle_signals();
        }
        if shared.stopped.load(Ordering::Relaxed) {
            break;
        }
        if !shared.active[ctx.index].load(Ordering::Relaxed) {
            dormant(ctx);
            continue;
        }
        let grant = shared.grants[ctx.index].load(Ordering::Relaxed);
        if grant != acked {
            acked = grant;
            shared.acks[ctx.index].store(grant, Ordering::SeqCst);
        }
        if let Some(t) = next_task(ctx, &mut cur) {
            run_one(ctx, t);
            run += 1;
            if run & 1023 == 0 {
                shared.counters.tasks_run.fetch_add(1024, Ordering::Relaxed);
            }
            continue;
        }
        let start = tsc::now();
        loop {
            std::hint::spin_loop();
            if shared.signals_pending.load(Ordering::Relaxed) || shared.stopped.load(Ordering::Relaxed) {
                continue 'serve;
            }
            if let Some(t) = next_task(ctx, &mut cur) {
                run_one(ctx, t);
                run += 1;
                continue 'serve;
            }
            if tsc::now().wrapping_sub(start) >= shared.spin_ticks {
                break;
            }
        }
        sleep(ctx, &mut cur);
    }
    shared.counters.tasks_run.fetch_add(run & 1023, Ordering::Relaxed);
    while let Some(t) = ctx.local.pop() {
        t.cancel();
    }
}

/// The worker's core was taken from the machine: hand its ready tasks to the machine's other
/// workers, stop counting as a poller, and sleep until the core is given back (or the machine
/// stops). A wake-up meant for the machine that lands here is passed on.
fn dormant(ctx: &WorkerCtx) {
    let shared = &ctx.shared;
    let parker = &shared.parkers[ctx.index];
    while let Some(t) = ctx.local.pop() {
        shared.injector.push(t);
    }
    parker.prepare();
    shared.set_polling(false);
    shared.serving[ctx.index].store(false, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    // A sender may have skipped IMS because this worker still counted as polling: wake an
    // active sleeper so it re-checks (and takes the tasks handed over above).
    shared.ims();
    while !shared.active[ctx.index].load(Ordering::SeqCst) && !shared.stopped.load(Ordering::SeqCst) {
        parker.park();
        parker.prepare();
        if !shared.active[ctx.index].load(Ordering::SeqCst) {
            shared.ims();
        }
    }
    parker.running();
    shared.serving[ctx.index].store(true, Ordering::SeqCst);
    shared.set_polling(true);
}

fn run_one(ctx: &WorkerCtx, t: TaskRef) {
    match ctx.shared.traces.get(ctx.index) {
        None => t.run(),
        Some(ring) => {
            let name = t.name();
            let start = tsc::now();
            t.run();
            ring.record(EventKind::Task, name, start);
        }
    }
}

/// The receiver side of IMS: announce sleep, re-check every source of work, then sleep unless
/// something arrived (see [`crate::ims`] for why no wake-up is lost).
fn sleep(ctx: &WorkerCtx, cur: &mut Cursor) {
    let shared = &ctx.shared;
    let parker = &shared.parkers[ctx.index];
    parker.prepare();
    shared.set_polling(false);
    fence(Ordering::SeqCst);
    if !has_work(ctx, cur) {
        shared.counters.sleeps.fetch_add(1, Ordering::Relaxed);
        let start = tsc::now();
        parker.park();
        if let Some(ring) = shared.traces.get(ctx.index) {
            ring.record(EventKind::Sleep, "sleep", start);
        }
    }
    parker.running();
    shared.set_polling(true);
}

/// A running machine; stops (and joins its workers) when dropped. Derefs to its
/// [`MachineHandle`].
pub struct Machine {
    handle: MachineHandle,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl std::ops::Deref for Machine {
    type Target = MachineHandle;
    fn deref(&self) -> &MachineHandle {
        &self.handle
    }
}

impl Machine {
    pub fn builder(name: &str) -> MachineBuilder {
        MachineBuilder::new(name)
    }

    pub fn handle(&self) -> MachineHandle {
        self.handle.clone()
    }

    /// Stops the workers after the task each is running; queued tasks and queued machine calls
    /// are dropped, so their futures resolve to errors. Idempotent.
    pub fn stop(&self) {
        let shared = &self.handle.0;
        shared.stopped.store(true, Ordering::SeqCst);
        for p in &shared.parkers {
            p.force_wake();
        }
        let on_own_worker = MachineHandle::current().is_some_and(|h| Arc::ptr_eq(&h.0, shared));
        if !on_own_worker {
            for t in lock(&self.threads).drain(..) {
                let _ = t.join();
            }
        }
        shared.drain_injector();
        let queues = std::mem::take(&mut *lock(&shared.served));
        for q in queues {
            q.close();
        }
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block_on;

    #[test]
    fn spawned_tasks_return_their_values() {
        let m = MachineBuilder::new("t").build().unwrap_or_else(|e| panic!("{e}"));
        let h = m.handle();
        let r = block_on(m.spawn("outer", async move {
            let mut sum = 0u64;
            for i in 0..100u64 {
                sum += h.spawn("inner", async move { i }).await.unwrap_or(0);
            }
            sum
        }));
        assert_eq!(r, Ok(4950));
    }

    #[test]
    fn too_many_cores_names_the_usable_cpus() {
        let e = MachineBuilder::new("big").cores(100_000).build().err();
        let msg = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            msg.contains("asked for 100000 cores") && msg.contains("big"),
            "{msg}"
        );
    }
}
