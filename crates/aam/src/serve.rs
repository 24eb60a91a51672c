//! Interfaces and machine calls: the server side.
//!
//! A server worker takes a request from a client's ring and runs it on its own core, inline: the
//! closure builds the call's future in a scratch block the worker keeps, and the worker polls it
//! once. If it is ready (a call that does not wait, the common case) the result goes into the
//! request's own slot and the block is reused: no task, no allocation. If it waits, the block
//! becomes the future's home (a pinned future cannot move) and a task is made for it; the waker
//! the future saw during that first poll forwards to the task, so a wake-up that came before the
//! task existed is kept. Calls in the overflow queue are boxed tasks with their own future, as
//! all calls were before the ring.

use crate::interface::ClientRing;
use crate::machine::{lock, Shared};
use crate::oneshot;
use crate::task::{panic_message, Task, TaskRef};
use crate::trace::{EventKind, Ring as TraceRing};
use multios_aam_sync::ring::{self, CLOSED, PANICKED};
use multios_host::tsc;
use std::alloc::Layout;
use std::cell::Cell;
use std::collections::VecDeque;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Wake, Waker};

/// Runs (or cancels) the request of ticket `t` of the queue behind `queue`
/// (`*const Arc<CallQueue<S>>`); monomorphized per call site by [`exec`].
pub(crate) type Exec = unsafe fn(queue: *const (), t: u64, mode: Mode, machine: &Arc<Shared>);

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Run,
    /// The server stopped: drop the request, the call gets `Stopped`.
    Cancel,
}

/// A request that did not fit the ring: turned into a task when the server takes it.
pub(crate) type Thunk<S> = Box<dyn FnOnce(&Arc<CallQueue<S>>, &Arc<Shared>) -> TaskRef + Send>;

pub(crate) struct Overflow<S> {
    /// The ring's head when it was queued: it runs after every ring ticket below.
    pub(crate) after: u64,
    pub(crate) thunk: Thunk<S>,
}

/// Keeps a value on its own cache lines (the client writes requests, the server writes its
/// polling flag and in-flight count: they must not share a line).
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

/// One client's queue on a server machine.
pub(crate) struct CallQueue<S> {
    pub(crate) client: Arc<ClientRing>,
    pub(crate) overflow: Mutex<VecDeque<Overflow<S>>>,
    pub(crate) overflow_len: Padded<AtomicUsize>,
    pub(crate) receiver_polling: Padded<AtomicBool>,
    /// The client dropped its endpoint: no request will be added (written once, by the client).
    pub(crate) closed: Padded<AtomicBool>,
    pub(crate) in_flight: Padded<AtomicUsize>,
    pub(crate) limit: usize,
    pub(crate) object: Arc<S>,
}

impl<S> CallQueue<S> {
    fn limited(&self) -> bool {
        self.limit != usize::MAX
    }

    fn reserve(&self) -> bool {
        if !self.limited() {
            return true;
        }
        self.in_flight
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .is_ok()
    }

    pub(crate) fn release(&self) {
        if self.limited() {
            self.in_flight.0.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// The overflow's first request if every ring ticket issued before it was taken.
    fn pop_overflow(&self) -> Option<Thunk<S>> {
        if self.overflow_len.0.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut o = lock(&self.overflow);
        if o.front()?.after > self.client.ring.tail() {
            return None;
        }
        let e = o.pop_front()?;
        self.overflow_len.0.fetch_sub(1, Ordering::SeqCst);
        Some(e.thunk)
    }

    fn overflow_takeable(&self) -> bool {
        self.overflow_len.0.load(Ordering::Acquire) > 0
            && lock(&self.overflow)
                .front()
                .is_some_and(|e| e.after <= self.client.ring.tail())
    }
}

impl<S: Send + Sync + 'static> CallQueue<S> {
    /// The server stopped: every queued request is dropped (its call gets `Stopped`).
    pub(crate) fn drain(self: &Arc<Self>, machine: &Arc<Shared>) {
        while let Some(t) = self.client.ring.take() {
            // SAFETY: taken by this thread; the producer wrote `meta` before publishing.
            let exec = unsafe { self.client.ring.with_data(t, |d| d.meta.assume_init()) };
            // SAFETY: `exec` belongs to this ticket and queue (see `Queue::run_one`).
            unsafe { exec(std::ptr::from_ref(self).cast(), t, Mode::Cancel, machine) };
        }
        let queued = std::mem::take(&mut *lock(&self.overflow));
        self.overflow_len.0.store(0, Ordering::SeqCst);
        drop(queued);
    }
}

/// A client queue as the server machine sees it, whatever the served type.
pub(crate) trait Served: Send + Sync {
    fn set_polling(&self, on: bool);
    /// Takes one request and runs it (inline, or by starting its task); false if none could be
    /// taken (empty, or the client's in-flight limit reached).
    fn run_one(&self, machine: &Arc<Shared>, trace: Option<&TraceRing>) -> bool;
    fn has_takeable(&self) -> bool;
    /// Requests waiting (the machine's published load counts them).
    fn pending(&self) -> usize;
    /// The server stopped: drop every queued request (their calls resolve to `Stopped`).
    fn close(&self, machine: &Arc<Shared>);
    /// The client dropped its endpoint.
    fn is_closed(&self) -> bool;
    /// The client dropped its endpoint and every request it queued was taken: the queue can
    /// leave the machine (calls still running hold their own reference).
    fn closed_and_drained(&self) -> bool;
}

pub(crate) struct Queue<S>(pub(crate) Arc<CallQueue<S>>);

impl<S: Send + Sync + 'static> Served for Queue<S> {
    fn set_polling(&self, on: bool) {
        self.0.receiver_polling.0.store(on, Ordering::SeqCst);
    }

    fn run_one(&self, machine: &Arc<Shared>, trace: Option<&TraceRing>) -> bool {
        let q = &self.0;
        if !q.reserve() {
            return false;
        }
        let start = trace.map(|_| tsc::now());
        let name = if let Some(t) = q.client.ring.take() {
            // SAFETY: ticket `t` is ours until completed; the producer wrote `meta` and `aux`
            // before publishing it. The name (`aux`, on a line of its own that the client writes
            // per call) is read only when tracing: reading it per call moved that line too.
            let (exec, name) = unsafe {
                (
                    q.client.ring.with_data(t, |d| d.meta.assume_init()),
                    if trace.is_some() { q.client.ring.aux(t) } else { "" },
                )
            };
            // SAFETY: `exec` was written for this queue's type by `Endpoint::call`; the queue
            // outlives the call (`self` holds it).
            unsafe { exec(std::ptr::from_ref(q).cast(), t, Mode::Run, machine) };
            name
        } else if let Some(thunk) = q.pop_overflow() {
            let task = thunk(q, machine);
            let name = task.name();
            task.run();
            name
        } else {
            q.release();
            return false;
        };
        if let (Some(ring), Some(s)) = (trace, start) {
            ring.record(EventKind::Task, name, s);
        }
        true
    }

    fn has_takeable(&self) -> bool {
        let q = &self.0;
        (q.client.ring.ready() || q.overflow_takeable())
            && (!q.limited() || q.in_flight.0.load(Ordering::Acquire) < q.limit)
    }

    fn pending(&self) -> usize {
        self.0.client.ring.pending() + self.0.overflow_len.0.load(Ordering::Relaxed)
    }

    fn close(&self, machine: &Arc<Shared>) {
        self.0.drain(machine);
    }

    fn is_closed(&self) -> bool {
        self.0.closed.0.load(Ordering::Relaxed)
    }

    fn closed_and_drained(&self) -> bool {
        let q = &self.0;
        // SeqCst: the client's last publication precedes its `closed` store, so once `closed`
        // is seen the counts below include every request it issued.
        q.closed.0.load(Ordering::SeqCst)
            && q.client.ring.pending() == 0
            && q.overflow_len.0.load(Ordering::SeqCst) == 0
    }
}

/// Releases a client's in-flight slot when a boxed call's task ends (also by panic or
/// cancellation).
struct InFlight<S>(Arc<CallQueue<S>>);

impl<S> Drop for InFlight<S> {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// The task of an overflowed call: the result goes through its own future.
pub(crate) fn overflow_thunk<S, T, F, Fut>(name: &'static str, f: F, tx: oneshot::Sender<T>) -> Thunk<S>
where
    S: Send + Sync + 'static,
    T: Send + 'static,
    F: FnOnce(Arc<S>) -> Fut + Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    Box::new(move |q: &Arc<CallQueue<S>>, machine: &Arc<Shared>| {
        let fut = f(q.object.clone());
        let slot = q.limited().then(|| InFlight(q.clone()));
        let task: TaskRef = Task::new(name, machine.clone(), async move {
            let _slot = slot;
            tx.send(fut.await);
        });
        task
    })
}

/// Puts `v` in ticket `t`'s slot and completes the call.
fn deliver<S, T: Send + 'static>(q: &CallQueue<S>, t: u64, v: T) {
    let r = &q.client.ring;
    // SAFETY: ticket `t` is this server's until `complete`; the request was moved out.
    unsafe { r.with_data(t, |d| ring::put(&mut d.payload, v)) };
    r.complete(t, 0, |p| {
        // SAFETY: the result put above; the client abandoned the call.
        drop(unsafe { ring::take::<T>(p) })
    });
    q.release();
}

fn close_call<S>(q: &CallQueue<S>, t: u64, panicked: bool) {
    let bits = if panicked { CLOSED | PANICKED } else { CLOSED };
    q.client.ring.complete(t, bits, |_| {});
    q.release();
}

/// Completes a call whose future became a task: with its result, or, if the task is dropped
/// unfinished, with `Stopped` (`Panicked` while unwinding).
struct Completion<S> {
    queue: Arc<CallQueue<S>>,
    t: u64,
    done: bool,
}

impl<S> Completion<S> {
    fn deliver<T: Send + 'static>(mut self, v: T) {
        self.done = true;
        deliver(&self.queue, self.t, v);
    }
}

impl<S> Drop for Completion<S> {
    fn drop(&mut self) {
        if !self.done {
            close_call(&self.queue, self.t, std::thread::panicking());
        }
    }
}

/// Runs the request of ticket `t`: see the module comment.
///
/// # Safety
/// `queue` points to the `Arc<CallQueue<S>>` the ticket belongs to; the caller took ticket `t`
/// and its slot holds an `F` (written by `Endpoint::call` with this function as its `meta`).
pub(crate) unsafe fn exec<S, T, F, Fut>(queue: *const (), t: u64, mode: Mode, machine: &Arc<Shared>)
where
    S: Send + Sync + 'static,
    T: Send + 'static,
    F: FnOnce(Arc<S>) -> Fut + Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    // SAFETY: the caller's contract.
    let q: &Arc<CallQueue<S>> = unsafe { &*queue.cast::<Arc<CallQueue<S>>>() };
    let r = &q.client.ring;
    // SAFETY: as above: the slot holds an `F`, ours to move out.
    let f: F = unsafe { r.with_data(t, |d| ring::take::<F>(&mut d.payload)) };
    if mode == Mode::Cancel {
        let _ = catch_unwind(AssertUnwindSafe(move || drop(f)));
        q.client.ring.complete(t, CLOSED, |_| {});
        return;
    }
    // The call's name (`aux`) is read only on the rare paths that need it (a panic, a call that
    // waits and becomes a task), while the ticket is still ours: see `Queue::run_one`.
    // SAFETY: the ticket is ours until completed; `aux` was written with the request.
    let name = || unsafe { r.aux(t) };
    let obj = q.object.clone();
    let fut = match catch_unwind(AssertUnwindSafe(move || f(obj))) {
        Ok(fut) => fut,
        Err(p) => {
            machine.report_panic(name(), panic_message(&*p));
            close_call(q, t, true);
            return;
        }
    };
    if std::mem::size_of::<Fut>() > SCRATCH.size() || std::mem::align_of::<Fut>() > SCRATCH.align() {
        spawn_call(q, t, name(), machine, fut, None);
        return;
    }
    let block = scratch_take();
    let fp = block.cast::<Fut>();
    // SAFETY: the block is SCRATCH-sized and aligned (checked above) and holds nothing.
    unsafe { fp.as_ptr().write(fut) };
    let probe = Probe::default();
    let waker = ManuallyDrop::new(probe.waker());
    let mut cx = Context::from_waker(&waker);
    let polled = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the future stays at `fp` until dropped there (inline) or by its `InBlock`.
        unsafe { Pin::new_unchecked(&mut *fp.as_ptr()) }.poll(&mut cx)
    }));
    match polled {
        Ok(Poll::Ready(v)) => {
            // SAFETY: the future finished; it is dropped in place once.
            let _ = catch_unwind(AssertUnwindSafe(|| unsafe { fp.as_ptr().drop_in_place() }));
            scratch_put(block);
            deliver(q, t, v);
        }
        Ok(Poll::Pending) => {
            let home = InBlock { fut: fp };
            spawn_call(q, t, name(), machine, home, Some(&probe));
        }
        Err(p) => {
            // SAFETY: as above (a panicking future is dropped once, its panic contained).
            let _ = catch_unwind(AssertUnwindSafe(|| unsafe { fp.as_ptr().drop_in_place() }));
            scratch_put(block);
            machine.report_panic(name(), panic_message(&*p));
            close_call(q, t, true);
        }
    }
}

/// A call whose future waits: a task of the server machine finishes it.
fn spawn_call<S, T, Fut>(
    q: &Arc<CallQueue<S>>,
    t: u64,
    name: &'static str,
    machine: &Arc<Shared>,
    fut: Fut,
    probe: Option<&Probe>,
) where
    S: Send + Sync + 'static,
    T: Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    let done = Completion {
        queue: q.clone(),
        t,
        done: false,
    };
    let task = Task::new_idle(name, machine.clone(), async move {
        let v = fut.await;
        done.deliver(v);
    });
    let waker = Waker::from(task);
    let woken = probe.is_none_or(|p| p.hand_over(&waker));
    if woken {
        waker.wake();
    }
}

/// The scratch block a worker builds a call's future in.
const SCRATCH: Layout = match Layout::from_size_align(512, 64) {
    Ok(l) => l,
    Err(_) => panic!("the scratch layout is valid"),
};

/// A worker's spare scratch block, freed when the thread exits.
struct Spare(Cell<Option<NonNull<u8>>>);

impl Drop for Spare {
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            // SAFETY: allocated by `scratch_take` with SCRATCH; nobody else holds it.
            unsafe { std::alloc::dealloc(b.as_ptr(), SCRATCH) };
        }
    }
}

thread_local! {
    static SPARE: Spare = const { Spare(Cell::new(None)) };
}

fn scratch_take() -> NonNull<u8> {
    if let Some(b) = SPARE.try_with(|s| s.0.take()).ok().flatten() {
        return b;
    }
    // SAFETY: SCRATCH has a non-zero size.
    let p = unsafe { std::alloc::alloc(SCRATCH) };
    NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(SCRATCH))
}

fn scratch_put(b: NonNull<u8>) {
    let back = SPARE.try_with(|s| s.0.replace(Some(b)));
    let surplus = match back {
        Ok(old) => old,
        // The thread is exiting: its spare is gone, free this block.
        Err(_) => Some(b),
    };
    if let Some(old) = surplus {
        // SAFETY: allocated by `scratch_take` with SCRATCH.
        unsafe { std::alloc::dealloc(old.as_ptr(), SCRATCH) };
    }
}

/// A future left in its scratch block (pinned there) after its first poll; frees the block.
struct InBlock<Fut> {
    fut: NonNull<Fut>,
}

// SAFETY: `InBlock` owns the `Fut` behind the pointer exclusively; `Fut: Send`.
unsafe impl<Fut: Send> Send for InBlock<Fut> {}

impl<Fut: Future> Future for InBlock<Fut> {
    type Output = Fut::Output;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Fut::Output> {
        // SAFETY: the future never moves out of its block (it was pinned there before its first
        // poll) and only this owner polls it.
        unsafe { Pin::new_unchecked(&mut *self.fut.as_ptr()) }.poll(cx)
    }
}

impl<Fut> Drop for InBlock<Fut> {
    fn drop(&mut self) {
        // SAFETY: the future is live (dropped once, here) and the block came from SCRATCH.
        unsafe {
            self.fut.as_ptr().drop_in_place();
            std::alloc::dealloc(self.fut.as_ptr().cast(), SCRATCH);
        }
    }
}

/// The waker of a call's first, inline poll: a wake-up by reference is recorded; a clone (kept
/// by whatever the future waits on) is a [`Forward`] that wakes the call's task once it exists.
#[derive(Default)]
struct Probe {
    woken: AtomicBool,
    forward: OnceLock<Arc<Forward>>,
}

static PROBE: RawWakerVTable = RawWakerVTable::new(probe_clone, probe_wake, probe_wake, probe_drop);

fn probe_of<'a>(p: *const ()) -> &'a Probe {
    // SAFETY: the probe's wakers point to the `Probe` on `exec`'s stack, which outlives the poll
    // they are lent to; clones are `Forward` wakers, not probe wakers.
    unsafe { &*p.cast::<Probe>() }
}

fn probe_clone(p: *const ()) -> RawWaker {
    let f = probe_of(p).forward.get_or_init(Arc::default).clone();
    let w = ManuallyDrop::new(Waker::from(f));
    RawWaker::new(w.data(), w.vtable())
}

fn probe_wake(p: *const ()) {
    probe_of(p).woken.store(true, Ordering::SeqCst);
}

fn probe_drop(_: *const ()) {}

impl Probe {
    fn waker(&self) -> Waker {
        // SAFETY: the vtable's functions treat the data pointer as `&Probe` (see `probe_of`);
        // the waker is only lent to the inline poll.
        unsafe { Waker::from_raw(RawWaker::new(std::ptr::from_ref(self).cast(), &PROBE)) }
    }

    /// The call's task exists now: wake-ups go to `task` from here on. True if one came before.
    fn hand_over(&self, task: &Waker) -> bool {
        let early = self.woken.load(Ordering::SeqCst);
        let forwarded = self.forward.get().is_some_and(|f| f.set(task.clone()));
        early || forwarded
    }
}

const EMPTY: u8 = 0;
const WOKEN: u8 = 1;
const SET: u8 = 2;

#[derive(Default)]
struct Forward {
    state: AtomicU8,
    target: OnceLock<Waker>,
}

impl Forward {
    /// Sets the target; true if a wake-up came before it.
    fn set(&self, w: Waker) -> bool {
        let _ = self.target.set(w);
        self.state.swap(SET, Ordering::AcqRel) == WOKEN
    }
}

impl Wake for Forward {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(w) = self.target.get() {
            w.wake_by_ref();
            return;
        }
        if self
            .state
            .compare_exchange(EMPTY, WOKEN, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // SET came in between: the target is there now.
            if let Some(w) = self.target.get() {
                w.wake_by_ref();
            }
        }
    }
}
