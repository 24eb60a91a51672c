//! A machine: a name, a set of CPUs with one pinned worker thread each (or several), and its own
//! task scheduler.
//!
//! Scheduling, per worker, between two tasks: buffered machine signals; then the worker's local
//! ready queue (FIFO: round robin among ready tasks); every 61st pick and whenever the local queue
//! is empty, the machine's inject queue (tasks woken from other threads, e.g. by a machine call's
//! result); then, if enabled, stealing from the other workers of the machine; only then the
//! interface queues of the machine's clients, first come first served and round robin between
//! queues. When nothing is found the worker spins for the configured time and then sleeps on a
//! futex (see [`crate::ims`]), or, if a machine of its Machine Manager waits for its CPU, hands
//! the CPU over (see [`crate::manager`]).

use crate::builder::MachineBuilder;
use crate::domain::{self, Membership, PendingMove};
use crate::ims::Parker;
use crate::oneshot;
use crate::serve::Served;
use crate::task::{JoinHandle, Task, TaskRef};
use crate::trace::{Event, Ring};
use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use multios_host::{CpuListError, CpuSet};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::rc::Rc;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

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
    /// The Machine Manager took `cpu` from this machine (its worker there leaves after its
    /// current task).
    CoreRevoked { cpu: usize },
    /// The Machine Manager gave `cpu` to this machine (its worker there starts serving).
    CoreGranted { cpu: usize },
    /// IMS: new requests in a client queue or new tasks in the machine's inject queue; `ims`
    /// calls into the Machine Manager since this signal was last handled (they are coalesced in
    /// the machine's buffer).
    Messages { ims: u64 },
    /// A client dropped its endpoint: its queue is unregistered once every request it queued was
    /// taken.
    InterfaceClosed,
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
    /// IMS calls into the Machine Manager made by senders to this machine (its queues' polling
    /// flag was clear, or no worker of a machine with several was idle).
    pub ims_calls: u64,
    /// Of those, the ones that woke a sleeping worker of this machine (futex wake-ups).
    pub ims_wakeups: u64,
    /// Of those, the ones that found the machine without any core (the manager was asked for one).
    pub ims_without_core: u64,
    /// IMS calls made although a worker of this machine was awake, because none was idle (a
    /// machine with several workers: the sleeping one takes the work the busy one would delay).
    pub sibling_ims: u64,
    /// Cores the Machine Manager gave to and took from this machine.
    pub cores_gained: u64,
    pub cores_lost: u64,
    /// Times a worker went to sleep.
    pub sleeps: u64,
    /// Interface-queue visits that took at least one request, and requests taken.
    pub batches: u64,
    pub requests: u64,
    pub signals_handled: u64,
    /// Of those, the Machine Manager's core notifications (`CoreRevoked`, `CoreGranted`).
    pub core_signals: u64,
    pub panics: u64,
}

/// Counters other threads write (senders' IMS wake-ups, signals handled by any worker).
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) ims_calls: AtomicU64,
    pub(crate) ims_wakeups: AtomicU64,
    pub(crate) ims_without_core: AtomicU64,
    pub(crate) sibling_ims: AtomicU64,
    pub(crate) cores_gained: AtomicU64,
    pub(crate) cores_lost: AtomicU64,
    pub(crate) signals_handled: AtomicU64,
    pub(crate) core_signals: AtomicU64,
}

/// Counters only their worker writes (a load and a store, no locked instruction on the hot path),
/// on the worker's own cache line.
#[derive(Default)]
pub(crate) struct WorkerCounters {
    pub(crate) tasks_run: AtomicU64,
    pub(crate) sleeps: AtomicU64,
    pub(crate) batches: AtomicU64,
    pub(crate) requests: AtomicU64,
}

pub(crate) type SignalHandler = Box<dyn Fn(&MachineSignal) + Send + Sync>;

pub(crate) struct Shared {
    pub(crate) name: Arc<str>,
    pub(crate) injector: Injector<TaskRef>,
    pub(crate) stealers: Vec<Stealer<TaskRef>>,
    pub(crate) parkers: Vec<Parker>,
    pub(crate) cpus: Vec<usize>,
    /// On its own cache line: every machine call reads it (twice), and the line must not be
    /// one the server's workers write per call (e.g. the `Arc`'s reference count, which every
    /// task of the machine increments and decrements).
    pub(crate) stopped: CacheLine<AtomicBool>,
    pub(crate) spin_ticks: u64,
    /// How long a task awaiting a call's result polls its slot (see `worker::poll_result`).
    pub(crate) call_spin_ticks: u64,
    pub(crate) stealing: bool,
    pub(crate) batch: usize,
    pub(crate) served: Mutex<Vec<Arc<dyn Served>>>,
    pub(crate) served_version: AtomicUsize,
    /// Guards `pollers` and the flags of the served queues together.
    pub(crate) idle: Mutex<()>,
    pub(crate) pollers: AtomicUsize,
    pub(crate) signals: Mutex<VecDeque<MachineSignal>>,
    pub(crate) signals_pending: AtomicBool,
    pub(crate) on_signal: Option<SignalHandler>,
    pub(crate) panics: Mutex<Vec<PanicReport>>,
    pub(crate) counters: Counters,
    pub(crate) worker_counters: Vec<CacheLine<WorkerCounters>>,
    /// One event ring per worker when tracing.
    pub(crate) traces: Vec<Ring>,
    /// Whether each worker serves the machine (the Machine Manager moves cores by flipping
    /// these); the number of times each was granted its core, and the grant it last saw while
    /// active (a core move waits for the acknowledgement).
    pub(crate) active: Vec<CacheLine<AtomicBool>>,
    pub(crate) grants: Vec<CacheLine<AtomicU64>>,
    /// False while the worker sits dormant (it has really left the core).
    pub(crate) serving: Vec<CacheLine<AtomicBool>>,
    pub(crate) acks: Vec<CacheLine<AtomicU64>>,
    /// Core moves to each worker not yet completed by it (see `domain::complete_move`).
    pub(crate) pending_moves: Vec<Mutex<Option<PendingMove>>>,
    /// The Machine Manager this machine belongs to, if any (one that may move its cores).
    pub(crate) domain: Mutex<Option<Membership>>,
    /// The machine has work and holds no core: it waits for its manager to give it one.
    pub(crate) waiting: CacheLine<AtomicBool>,
    /// Coalesced `Messages` signals buffered by IMS calls, not yet handled.
    pub(crate) work_signals: AtomicU64,
    /// More than one worker: a sender also signals when none of them is idle (read on every call,
    /// so on a line of its own that nobody writes).
    pub(crate) multi_worker: CacheLine<bool>,
    /// Workers in their idle loop now (kept only when `multi_worker`).
    pub(crate) idle_pollers: CacheLine<AtomicUsize>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if self.waiting.swap(false, Ordering::SeqCst) {
            self.count_wanted(false);
        }
    }
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

pub(crate) struct WorkerCtx {
    pub(crate) shared: Arc<Shared>,
    pub(crate) local: Worker<TaskRef>,
    pub(crate) index: usize,
    /// Machines waiting for this worker's CPU (see `domain::wanted`).
    pub(crate) wanted: &'static AtomicUsize,
    /// Counted in the machine's `idle_pollers` now.
    pub(crate) idle: std::cell::Cell<bool>,
}

thread_local! {
    pub(crate) static CURRENT: RefCell<Option<Rc<WorkerCtx>>> = const { RefCell::new(None) };
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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
            domain::ims(self);
        } else if self.no_idle_worker() {
            self.counters.sibling_ims.fetch_add(1, Ordering::Relaxed);
            domain::ims(self);
        }
        if self.stopped.load(Ordering::SeqCst) {
            self.drain_injector();
        }
    }

    /// A machine with several workers, none of them idle (all run tasks or sleep): a sender
    /// signals even though a worker is awake, so that a sleeping one takes the new work instead
    /// of leaving it to wait for a busy one.
    #[inline]
    pub(crate) fn no_idle_worker(&self) -> bool {
        *self.multi_worker && self.idle_pollers.load(Ordering::SeqCst) == 0
    }

    pub(crate) fn drain_injector(&self) {
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
    pub(crate) fn register(self: &Arc<Self>, q: Arc<dyn Served>) {
        {
            let _g = lock(&self.idle);
            q.set_polling(self.pollers.load(Ordering::SeqCst) > 0);
            lock(&self.served).push(q);
            self.served_version.fetch_add(1, Ordering::SeqCst);
        }
        let n = lock(&self.served).len();
        self.signal(MachineSignal::InterfaceRegistered { client_queue: n });
    }

    /// Buffers a machine signal and activates the machine if no worker polls (IMS through the
    /// Machine Manager).
    pub(crate) fn signal(self: &Arc<Self>, sig: MachineSignal) {
        self.post(sig);
        fence(Ordering::SeqCst);
        if self.pollers.load(Ordering::SeqCst) == 0 {
            domain::activate(self);
        }
    }

    /// Buffers a machine signal, handled between two tasks; wakes nobody.
    pub(crate) fn post(&self, sig: MachineSignal) {
        lock(&self.signals).push_back(sig);
        self.signals_pending.store(true, Ordering::SeqCst);
    }

    pub(crate) fn handle_signals(&self) {
        self.signals_pending.store(false, Ordering::SeqCst);
        let mut sigs: Vec<MachineSignal> = std::mem::take(&mut *lock(&self.signals)).into();
        let ims = self.work_signals.swap(0, Ordering::SeqCst);
        if ims > 0 {
            sigs.push(MachineSignal::Messages { ims });
        }
        for s in &sigs {
            match s {
                MachineSignal::CoreRevoked { .. } | MachineSignal::CoreGranted { .. } => {
                    self.counters.core_signals.fetch_add(1, Ordering::Relaxed);
                }
                MachineSignal::InterfaceClosed => self.sweep_closed(),
                _ => {}
            }
            if let Some(h) = &self.on_signal {
                h(s);
            }
        }
        self.counters
            .signals_handled
            .fetch_add(sigs.len() as u64, Ordering::Relaxed);
    }

    /// Unregisters the queues whose client dropped its endpoint and whose requests were all
    /// taken (a request still queued keeps its queue until a worker takes it).
    pub(crate) fn sweep_closed(&self) {
        let mut served = lock(&self.served);
        let before = served.len();
        served.retain(|q| !q.closed_and_drained());
        if served.len() != before {
            self.served_version.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The worker is about to sleep (`on == false`) or woke up.
    pub(crate) fn set_polling(&self, on: bool) {
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
    /// [`MachineBuilder::on_signal`]. If no worker polls, the machine is activated (IMS).
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

    /// Workers asleep on their futex now (or about to be: announced and re-checking for work).
    pub fn sleeping_workers(&self) -> usize {
        self.0.parkers.iter().filter(|p| p.is_sleeping()).count()
    }

    /// Client queues registered now (a dropped endpoint's queue leaves once its requests were
    /// taken).
    pub fn client_queues(&self) -> usize {
        lock(&self.0.served).len()
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
        let w = &self.0.worker_counters;
        let sum = |f: fn(&WorkerCounters) -> &AtomicU64| w.iter().map(|c| r(f(c))).sum::<u64>();
        MachineStats {
            tasks_run: sum(|c| &c.tasks_run) + sum(|c| &c.requests),
            ims_calls: r(&c.ims_calls),
            ims_wakeups: r(&c.ims_wakeups),
            ims_without_core: r(&c.ims_without_core),
            sibling_ims: r(&c.sibling_ims),
            cores_gained: r(&c.cores_gained),
            cores_lost: r(&c.cores_lost),
            sleeps: sum(|c| &c.sleeps),
            batches: sum(|c| &c.batches),
            requests: sum(|c| &c.requests),
            signals_handled: r(&c.signals_handled),
            core_signals: r(&c.core_signals),
            panics: lock(&self.0.panics).len() as u64,
        }
    }
}

/// The future a spawned task runs: the user's future, then its result handed to the join handle.
pub(crate) async fn completion<F>(fut: F, tx: oneshot::Sender<F::Output>)
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
/// A running machine; stops (and joins its workers) when dropped. Derefs to its
/// [`MachineHandle`].
pub struct Machine {
    pub(crate) handle: MachineHandle,
    pub(crate) threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
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
        if let Some(m) = shared.membership() {
            let _lock = lock(&m.domain.queue);
            multios_aam_sync::activation::withdraw(&shared.waiting, || shared.count_wanted(false));
        }
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
            q.close(shared);
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
