//! Interfaces and machine calls: the client side.
//!
//! A server machine serves an object (`MachineHandle::serve`); every client that connects gets
//! its own queue, allocated by the client ("in the client's memory") and registered with the
//! server, with the per-queue flag that says whether the server is polling. The queue is a ring
//! of one-cache-line slots (`multios_aam_sync::ring`): a machine call claims the next slot,
//! writes its closure there (inline when it fits), publishes it, and performs IMS only if the flag
//! is clear; the server runs the call on its core and writes the result over the request in the
//! same line; the client reads it there. Nothing is allocated per call. When the ring is full
//! (more calls in flight than slots) calls go to an overflow queue as boxed tasks, in order.
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
use crate::serve::{exec, overflow_thunk, CallQueue, Overflow, Padded, Queue};
use crate::task::JoinHandle;
use multios_aam_sync::ring::{self, Ring, CLOSED, PANICKED};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// Why a machine call returned no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("machine call '{call}': machine '{machine}' has stopped; start it again or use another server")]
    Stopped { machine: String, call: String },
    #[error("machine call '{call}': its task panicked on machine '{machine}' (see the machine's panic reports); the machine goes on serving")]
    Panicked { machine: String, call: String },
}

/// Slots per client ring: calls in flight beyond this go to the overflow queue.
pub const RING_SLOTS: usize = 64;

/// A client's ring and the server's name (for errors), shared by the endpoint and its calls.
pub(crate) struct ClientRing {
    pub(crate) ring: Ring<crate::serve::Exec, &'static str>,
    pub(crate) machine: Arc<str>,
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
    /// A new client: its own call ring, registered with the server machine.
    pub fn connect(&self, options: ConnectOptions) -> Endpoint<S> {
        let limit = if options.ordered {
            1
        } else {
            self.options.max_in_flight_per_client.max(1)
        };
        let queue = Arc::new(CallQueue {
            client: Arc::new(ClientRing {
                ring: Ring::new(RING_SLOTS),
                machine: self.machine.name.clone(),
            }),
            overflow: Mutex::new(VecDeque::new()),
            overflow_len: Padded(AtomicUsize::new(0)),
            receiver_polling: Padded(AtomicBool::new(false)),
            closed: Padded(AtomicBool::new(false)),
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
        let q = &self.queue;
        let client = &q.client;
        if self.machine.stopped.load(Ordering::SeqCst) {
            return Call::new(CallState::Closed, client.clone(), name);
        }
        let ticket = if q.overflow_len.0.load(Ordering::Acquire) == 0 {
            client.ring.claim()
        } else {
            None
        };
        let state = match ticket {
            Some(t) => {
                // SAFETY: `t` was just claimed by this thread and is not published yet; the
                // payload receives the closure `exec::<S, T, F, Fut>` reads back.
                unsafe {
                    client
                        .ring
                        .write(t, exec::<S, T, F, Fut>, name, |p| ring::put(p, f));
                }
                client.ring.publish(t);
                CallState::Ring(t)
            }
            None => {
                let (tx, rx) = oneshot::channel();
                let after = client.ring.head();
                crate::machine::lock(&q.overflow).push_back(Overflow {
                    after,
                    thunk: overflow_thunk(name, f, tx),
                });
                q.overflow_len.0.fetch_add(1, Ordering::SeqCst);
                fence(Ordering::SeqCst);
                CallState::Boxed(rx)
            }
        };
        // IMS through the Machine Manager when no worker polls this queue, or (a machine with
        // several workers) when none of them is idle: a sleeping one then takes the request.
        if !q.receiver_polling.0.load(Ordering::SeqCst) {
            crate::domain::ims(&self.machine);
        } else if self.machine.no_idle_worker() {
            self.machine
                .counters
                .sibling_ims
                .fetch_add(1, Ordering::Relaxed);
            crate::domain::ims(&self.machine);
        }
        if self.machine.stopped.load(Ordering::SeqCst) {
            q.drain(&self.machine);
        }
        Call::new(state, client.clone(), name)
    }

    /// Whether the server polls this queue now (no IMS needed to reach it).
    pub fn receiver_polling(&self) -> bool {
        self.queue.receiver_polling.0.load(Ordering::SeqCst)
    }

    pub fn server(&self) -> MachineHandle {
        MachineHandle(self.machine.clone())
    }
}

impl<S> Drop for Endpoint<S> {
    /// The queue leaves the server machine once every request it holds was taken (calls in
    /// flight keep their results' slots): `closed` is set after the last publication, and the
    /// server, told by a machine signal, unregisters it when it finds it closed and drained.
    fn drop(&mut self) {
        self.queue.closed.0.store(true, Ordering::SeqCst);
        if !self.machine.stopped.load(Ordering::SeqCst) {
            self.machine
                .signal(crate::machine::MachineSignal::InterfaceClosed);
        }
    }
}

enum CallState<T> {
    /// In the ring, ticket `t`.
    Ring(u64),
    /// In the overflow queue: the result comes through its own future.
    Boxed(oneshot::Receiver<T>),
    /// Never queued (the server had stopped).
    Closed,
    /// The result was taken.
    Taken,
}

/// A machine call in flight: a future of its result.
pub struct Call<T> {
    state: CallState<T>,
    /// The client's ring (its slot holds the result) and the server's name (for errors). Not
    /// the server machine's `Arc`: its reference count is written by every task the server
    /// runs, and touching it per call moved that line.
    client: Arc<ClientRing>,
    name: &'static str,
}

impl<T: Send + 'static> Call<T> {
    fn new(state: CallState<T>, client: Arc<ClientRing>, name: &'static str) -> Self {
        Call { state, client, name }
    }

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

impl<T> Call<T> {
    fn error(&self, panicked: bool) -> CallError {
        let machine = self.client.machine.to_string();
        let call = self.name.to_string();
        if panicked {
            CallError::Panicked { machine, call }
        } else {
            CallError::Stopped { machine, call }
        }
    }

    /// The result of ticket `t` once its slot says `DONE` (`flags`); frees the slot.
    fn take_result(&self, t: u64, flags: u64) -> Result<T, CallError> {
        let r = if flags & CLOSED != 0 {
            Err(self.error(flags & PANICKED != 0))
        } else {
            // SAFETY: DONE was observed: the slot's payload holds the server's `T` (put by
            // `serve::exec` for this call's type) and is the client's until released.
            Ok(unsafe { self.client.ring.with_data(t, |d| ring::take::<T>(&mut d.payload)) })
        };
        self.client.ring.release(t);
        r
    }
}

impl<T> Future for Call<T> {
    type Output = Result<T, CallError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            CallState::Ring(t) => {
                let t = *t;
                // Active path: poll the slot while the worker is otherwise idle, so the server's
                // completion needs no wake-up (see `worker::poll_result`).
                let ring = &self.client.ring;
                crate::worker::poll_result(|| ring.is_done(t));
                match ring.poll(t, cx.waker()) {
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(flags) => {
                        self.state = CallState::Taken;
                        Poll::Ready(self.take_result(t, flags))
                    }
                }
            }
            CallState::Boxed(rx) => {
                let rx_done = {
                    let seen: &oneshot::Receiver<T> = rx;
                    crate::worker::poll_result(|| seen.is_done());
                    Pin::new(rx).poll(cx)
                };
                match rx_done {
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(r) => {
                        self.state = CallState::Taken;
                        Poll::Ready(r.map_err(|why| self.error(why == oneshot::Closed::Panicked)))
                    }
                }
            }
            CallState::Closed => {
                self.state = CallState::Taken;
                Poll::Ready(Err(self.error(false)))
            }
            CallState::Taken => Poll::Ready(Err(self.error(false))),
        }
    }
}

impl<T> Drop for Call<T> {
    fn drop(&mut self) {
        if let CallState::Ring(t) = self.state {
            // A call dropped before its result: the server drops the result and frees the slot,
            // unless the result is already there.
            if let Some(flags) = self.client.ring.abandon(t) {
                drop(self.take_result(t, flags));
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
