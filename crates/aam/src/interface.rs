//! Interfaces and machine calls.
//!
//! A server machine serves an object (`MachineHandle::serve`); every client that connects gets
//! its own request queue, allocated by the client ("in the client's memory") and registered with
//! the server, with the per-queue flag that says whether the server is polling. A machine call
//! packs its arguments into a request, pushes it into the queue, and performs IMS only if the
//! flag is clear. The server takes requests when it has nothing else ready, FIFO per queue, round
//! robin over queues, up to its batch size per visit and never more than the client's in-flight
//! limit, and turns each into a task of its own (allocated, run and freed on its core).
//!
//! The three call variants of the paper:
//! - asynchronous: [`Call`] is returned at once (the request is already queued) and can be held
//!   while the task does other work or issues more calls (latency hiding, batching);
//! - synchronous: `.await` it right away: the calling task is suspended and the client machine
//!   runs other tasks meanwhile (from a thread that is no machine: [`Call::wait`]);
//! - event-based: [`Call::then`] schedules a task of the client machine with the result.
//!
//! The [`interface!`](crate::interface) macro plays the role of the paper's `igen`: it turns a
//! list of method signatures into the server trait and a typed client.

use crate::machine::{MachineHandle, Shared};
use crate::oneshot;
use crate::task::{JoinHandle, Task, TaskRef};
use crossbeam_deque::{Injector, Steal, Worker};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// Why a machine call returned no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("machine call '{call}': machine '{machine}' has stopped; start it again or use another server")]
    Stopped { machine: String, call: String },
    #[error("machine call '{call}': its task panicked on machine '{machine}' (see the machine's panic reports); the machine goes on serving")]
    Panicked { machine: String, call: String },
}

/// A request as it waits in a client's queue: the client's arguments, turned into a task by
/// the server when it takes the request (so the task is allocated, run and freed on the
/// server's core, and the served object's reference count never leaves it).
type Thunk<S> = Box<dyn FnOnce(&Arc<CallQueue<S>>, &Arc<Shared>) -> TaskRef + Send>;

/// Keeps a value on its own cache lines (the client writes requests, the server writes its
/// polling flag and in-flight count: they must not share a line).
#[repr(align(128))]
struct Padded<T>(T);

/// One client's request queue on a server machine.
pub(crate) struct CallQueue<S> {
    requests: Injector<Thunk<S>>,
    receiver_polling: Padded<AtomicBool>,
    in_flight: Padded<AtomicUsize>,
    limit: usize,
    object: Arc<S>,
}

/// A client queue as the server machine sees it, whatever the served type.
pub(crate) trait Served: Send + Sync {
    fn set_polling(&self, on: bool);
    /// Takes up to `max` requests as tasks of `machine`: the first is returned, the rest go to
    /// `local`; also returns how many were taken.
    fn take_batch(
        &self,
        machine: &Arc<Shared>,
        local: &Worker<TaskRef>,
        max: usize,
    ) -> (Option<TaskRef>, usize);
    fn has_takeable(&self) -> bool;
    /// Requests waiting (the machine's published load counts them).
    fn pending(&self) -> usize;
    /// The server stopped: drop every queued request (their futures resolve to `Stopped`).
    fn close(&self);
}

struct Queue<S>(Arc<CallQueue<S>>);

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

    fn release(&self) {
        if self.limited() {
            self.in_flight.0.fetch_sub(1, Ordering::AcqRel);
        }
    }

    fn drain(&self) {
        loop {
            match self.requests.steal() {
                Steal::Success(t) => drop(t),
                Steal::Retry => continue,
                Steal::Empty => break,
            }
        }
    }
}

impl<S: Send + Sync + 'static> Served for Queue<S> {
    fn set_polling(&self, on: bool) {
        self.0.receiver_polling.0.store(on, Ordering::SeqCst);
    }

    fn take_batch(
        &self,
        machine: &Arc<Shared>,
        local: &Worker<TaskRef>,
        max: usize,
    ) -> (Option<TaskRef>, usize) {
        let q = &self.0;
        let mut first = None;
        let mut taken = 0;
        while taken < max && !q.requests.is_empty() && q.reserve() {
            match q.requests.steal() {
                Steal::Success(thunk) => {
                    taken += 1;
                    let t = thunk(q, machine);
                    if first.is_none() {
                        first = Some(t);
                    } else {
                        local.push(t);
                    }
                }
                Steal::Empty | Steal::Retry => {
                    q.release();
                    if q.requests.is_empty() {
                        break;
                    }
                }
            }
        }
        (first, taken)
    }

    fn has_takeable(&self) -> bool {
        let q = &self.0;
        !q.requests.is_empty() && (!q.limited() || q.in_flight.0.load(Ordering::Acquire) < q.limit)
    }

    fn pending(&self) -> usize {
        self.0.requests.len()
    }

    fn close(&self) {
        self.0.drain();
    }
}

/// Releases a client's in-flight slot when a call's task ends (also by panic or cancellation).
/// Only for queues with a limit: unlimited queues keep no count.
struct InFlight<S>(Arc<CallQueue<S>>);

impl<S> Drop for InFlight<S> {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// How a server treats each client's queue.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// At most this many calls of one client run (or wait) on the server at once.
    pub max_in_flight_per_client: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_in_flight_per_client: usize::MAX,
        }
    }
}

/// How a client connects.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnectOptions {
    /// Run this client's calls one at a time, in the order issued (e.g. writes to one file).
    pub ordered: bool,
}

/// An object served by a machine; clients connect to it.
pub struct Service<S> {
    object: Arc<S>,
    machine: Arc<Shared>,
    options: ServeOptions,
}

impl<S> Clone for Service<S> {
    fn clone(&self) -> Self {
        Service {
            object: self.object.clone(),
            machine: self.machine.clone(),
            options: self.options,
        }
    }
}

impl MachineHandle {
    /// Serves `object` on this machine: machine calls on it run as tasks of this machine.
    pub fn serve<S: Send + Sync + 'static>(&self, object: S, options: ServeOptions) -> Service<S> {
        Service {
            object: Arc::new(object),
            machine: self.0.clone(),
            options,
        }
    }
}

impl<S: Send + Sync + 'static> Service<S> {
    /// A new client: its own request queue, registered with the server machine.
    pub fn connect(&self, options: ConnectOptions) -> Endpoint<S> {
        let limit = if options.ordered {
            1
        } else {
            self.options.max_in_flight_per_client.max(1)
        };
        let queue = Arc::new(CallQueue {
            requests: Injector::new(),
            receiver_polling: Padded(AtomicBool::new(false)),
            in_flight: Padded(AtomicUsize::new(0)),
            limit,
            object: self.object.clone(),
        });
        self.machine.register(Arc::new(Queue(queue.clone())));
        Endpoint {
            machine: self.machine.clone(),
            queue,
        }
    }

    pub fn machine(&self) -> MachineHandle {
        MachineHandle(self.machine.clone())
    }
}

/// A client's connection to a served object.
pub struct Endpoint<S> {
    machine: Arc<Shared>,
    queue: Arc<CallQueue<S>>,
}

impl<S: Send + Sync + 'static> Endpoint<S> {
    /// Issues a machine call named `name`: `f` gets the served object and returns the future the
    /// server runs. The request is queued before this returns.
    pub fn call<T, F, Fut>(&self, name: &'static str, f: F) -> Call<T>
    where
        T: Send + 'static,
        F: FnOnce(Arc<S>) -> Fut + Send + 'static,
        Fut: Future<Output = T> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let call = Call {
            rx,
            machine: self.machine.name.clone(),
            name,
        };
        if self.machine.stopped.load(Ordering::SeqCst) {
            drop(tx);
            return call;
        }
        let thunk: Thunk<S> = Box::new(move |q: &Arc<CallQueue<S>>, machine: &Arc<Shared>| {
            let fut = f(q.object.clone());
            let slot = q.limited().then(|| InFlight(q.clone()));
            let task: TaskRef = Task::new(name, machine.clone(), async move {
                let _slot = slot;
                tx.send(fut.await);
            });
            task
        });
        self.queue.requests.push(thunk);
        fence(Ordering::SeqCst);
        if !self.queue.receiver_polling.0.load(Ordering::SeqCst) {
            self.machine.ims();
        }
        if self.machine.stopped.load(Ordering::SeqCst) {
            self.queue.drain();
        }
        call
    }

    /// Whether the server polls this queue now (no IMS needed to reach it).
    pub fn receiver_polling(&self) -> bool {
        self.queue.receiver_polling.0.load(Ordering::SeqCst)
    }

    pub fn server(&self) -> MachineHandle {
        MachineHandle(self.machine.clone())
    }
}

/// A machine call in flight: a future of its result.
pub struct Call<T> {
    rx: oneshot::Receiver<T>,
    /// The server machine's name (for errors). Not the machine's `Arc`: its reference count is
    /// written by every task the server runs, and touching it per call moved that line.
    machine: Arc<str>,
    name: &'static str,
}

impl<T: Send + 'static> Call<T> {
    /// Blocks the calling thread until the result arrives (for threads that are no machine).
    pub fn wait(self) -> Result<T, CallError> {
        crate::block_on(self)
    }

    /// Event-based variant: runs `then(result)` as a task of `client` once the result is there.
    pub fn then<R, G, Fut>(self, client: &MachineHandle, name: &'static str, then: G) -> JoinHandle<R>
    where
        R: Send + 'static,
        G: FnOnce(Result<T, CallError>) -> Fut + Send + 'static,
        Fut: Future<Output = R> + Send + 'static,
    {
        client.spawn(name, async move { then(self.await).await })
    }
}

impl<T> Future for Call<T> {
    type Output = Result<T, CallError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Active path: poll the result's slot while the worker is otherwise idle, so the
        // server's completion needs no wake-up (see `worker::poll_result`).
        let rx = &self.rx;
        crate::worker::poll_result(|| rx.is_done());
        match Pin::new(&mut self.rx).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(v)) => Poll::Ready(Ok(v)),
            Poll::Ready(Err(why)) => {
                let machine = self.machine.to_string();
                let call = self.name.to_string();
                Poll::Ready(Err(match why {
                    oneshot::Closed::Panicked => CallError::Panicked { machine, call },
                    oneshot::Closed::Dropped => CallError::Stopped { machine, call },
                }))
            }
        }
    }
}

/// Declares a machine interface (the role of the paper's `igen` IDL): a server trait whose
/// methods are `async`, and a typed client whose methods issue machine calls.
///
/// ```
/// multios_aam::interface! {
///     /// A counter machine.
///     pub trait Counter as CounterClient {
///         fn add(&self, n: u64) -> u64;
///     }
/// }
/// ```
#[macro_export]
macro_rules! interface {
    ($(#[$meta:meta])* $vis:vis trait $name:ident as $client:ident {
        $( $(#[$mmeta:meta])* fn $method:ident(&self $(, $arg:ident : $ty:ty)* $(,)?) -> $ret:ty; )*
    }) => {
        $(#[$meta])*
        $vis trait $name: Send + Sync + 'static {
            $( $(#[$mmeta])* fn $method(&self $(, $arg: $ty)*)
                -> impl ::core::future::Future<Output = $ret> + Send; )*
        }

        /// The typed client of the interface: each method is an asynchronous machine call.
        $vis struct $client<S: $name> {
            endpoint: $crate::Endpoint<S>,
        }

        impl<S: $name> $client<S> {
            pub fn new(endpoint: $crate::Endpoint<S>) -> Self {
                $client { endpoint }
            }
            pub fn endpoint(&self) -> &$crate::Endpoint<S> {
                &self.endpoint
            }
            $(
                $(#[$mmeta])*
                pub fn $method(&self $(, $arg: $ty)*) -> $crate::Call<$ret> {
                    self.endpoint.call(
                        concat!(stringify!($name), "::", stringify!($method)),
                        move |s| async move { s.$method($($arg),*).await },
                    )
                }
            )*
        }
    };
}
