//! Tasks: a future, a name, and the machine that runs it, in one allocation and with no stack.
//!
//! The state machine (`multios_aam_sync::task_state`, checked by loom there) is the paper's
//! enqueue handler: a task becomes visible to other cores only after it left the core it ran on,
//! and a wake-up that arrives while it runs is recorded instead of lost.

use crate::machine::Shared;
use crate::oneshot;
use multios_aam_sync::task_state::TaskState;
use std::any::Any;
use std::cell::UnsafeCell;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// A task as queues hold it.
pub(crate) type TaskRef = Arc<dyn Runnable>;

pub(crate) trait Runnable: Send + Sync + 'static {
    /// Polls the task once. Called only by the holder of its `SCHEDULED` reference.
    fn run(self: Arc<Self>);
    /// Drops the future without running it (its machine stopped). Same caller rule as `run`.
    fn cancel(&self);
    /// The name given at spawn (or the machine call's name).
    fn name(&self) -> &'static str;
}

pub(crate) struct Task<F> {
    state: TaskState,
    name: &'static str,
    machine: Arc<Shared>,
    future: UnsafeCell<Option<F>>,
}

// SAFETY: `future` is touched only by the single holder of the task's SCHEDULED reference (the
// worker that moved it to RUNNING, or the canceller); the state transitions hand it over with
// acquire/release ordering. `F: Send` lets it move between workers.
unsafe impl<F: Send> Sync for Task<F> {}

impl<F: Future<Output = ()> + Send + 'static> Task<F> {
    /// A new task in state `SCHEDULED`: the caller must enqueue it.
    pub(crate) fn new(name: &'static str, machine: Arc<Shared>, future: F) -> Arc<Self> {
        Arc::new(Task {
            state: TaskState::new(),
            name,
            machine,
            future: UnsafeCell::new(Some(future)),
        })
    }

    /// A new task in state `IDLE`: it runs once woken (a machine call whose first poll waited).
    pub(crate) fn new_idle(name: &'static str, machine: Arc<Shared>, future: F) -> Arc<Self> {
        Arc::new(Task {
            state: TaskState::idle(),
            name,
            machine,
            future: UnsafeCell::new(Some(future)),
        })
    }
}

/// Bytes a queued task occupies: its allocation (two reference counts and [`Task`]) for a
/// future of type `F`. There is no stack: a task waiting in a queue costs exactly this.
pub fn task_size_of<F>() -> usize {
    2 * std::mem::size_of::<usize>() + std::mem::size_of::<Task<F>>()
}

impl<F: Future<Output = ()> + Send + 'static> Runnable for Task<F> {
    fn run(self: Arc<Self>) {
        self.state.begin_run();
        let waker = Waker::from(self.clone());
        let mut cx = Context::from_waker(&waker);
        // SAFETY: we hold the SCHEDULED reference, now RUNNING: nobody else touches the future.
        let slot = unsafe { &mut *self.future.get() };
        let Some(fut) = slot.as_mut() else {
            return;
        };
        // SAFETY: the future lives inside the Arc allocation and is never moved out while alive
        // (it is only dropped in place through `*slot = None`).
        let fut = unsafe { Pin::new_unchecked(fut) };
        match catch_unwind(AssertUnwindSafe(|| fut.poll(&mut cx))) {
            Ok(Poll::Ready(())) => {
                drop_future(slot);
                self.state.done();
            }
            Ok(Poll::Pending) => {
                if self.state.end_run_pending() {
                    // Woken while running: enqueue it now that it has left this core.
                    let machine = self.machine.clone();
                    machine.schedule(self);
                }
            }
            Err(payload) => {
                drop_future(slot);
                self.state.done();
                self.machine.report_panic(self.name, panic_message(&*payload));
            }
        }
    }

    fn name(&self) -> &'static str {
        self.name
    }

    fn cancel(&self) {
        // SAFETY: the caller holds the SCHEDULED reference (same rule as `run`).
        drop_future(unsafe { &mut *self.future.get() });
        self.state.done();
    }
}

/// Drops a future in place; a panic in its destructor is contained (the task is over anyway).
fn drop_future<F>(slot: &mut Option<F>) {
    let _ = catch_unwind(AssertUnwindSafe(|| *slot = None));
}

pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_string()
    }
}

impl<F: Future<Output = ()> + Send + 'static> Wake for Task<F> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.state.wake() {
            self.machine.schedule(self.clone());
        }
    }
}

/// Why a spawned task produced no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    #[error("task '{task}' on machine '{machine}' panicked (see the machine's panic reports)")]
    Panicked { machine: String, task: String },
    #[error("task '{task}' on machine '{machine}' was dropped unfinished: the machine stopped")]
    Cancelled { machine: String, task: String },
}

/// The future of a spawned task's result.
pub struct JoinHandle<T> {
    pub(crate) rx: oneshot::Receiver<T>,
    pub(crate) machine: Arc<Shared>,
    pub(crate) task: &'static str,
}

impl<T> JoinHandle<T> {
    fn error(&self, why: oneshot::Closed) -> TaskError {
        let (machine, task) = (self.machine.name.to_string(), self.task.to_string());
        match why {
            oneshot::Closed::Panicked => TaskError::Panicked { machine, task },
            oneshot::Closed::Dropped => TaskError::Cancelled { machine, task },
        }
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, TaskError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match Pin::new(&mut self.rx).poll(cx) {
            Poll::Ready(r) => Poll::Ready(r.map_err(|e| self.error(e))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Lets the other ready tasks of the machine run once, then continues (round robin).
pub fn yield_now() -> YieldNow {
    YieldNow(false)
}

/// The future of [`yield_now`].
pub struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
