//! The call ring: a client's preallocated queue of one-cache-line slots, each carrying a machine
//! call's request and then its result inline, and the word that hands the slot back and forth.
//!
//! A slot's `state` word is `ticket << 8 | flags`. Ticket `h` uses slot `h % N`; the slot is free
//! for it when its `free` word (kept apart from the slot, in an array only the client writes on
//! the common path) says `h`. The client (producer) claims the next ticket (a CAS on `head`, so
//! several threads may issue on one endpoint), writes the request, and publishes it (`state =
//! h << 8 | REQ`, then a SeqCst fence: the sender side of IMS, see [`crate::parker`]). A server worker
//! (consumer) takes the ticket at `tail` when its slot holds `REQ` (a CAS on `tail`, so several
//! workers may serve one client), runs the call, writes the result over the request and sets
//! `DONE` with one read-modify-write that also tells it whether the client registered a waker
//! (`WAKER`) or abandoned the call (`ABANDON`). The client reads the result and frees the slot for
//! ticket `h + N` (its `free` word; the slot's line itself is not written again until the next
//! request: a store there would have to take the line back from the server, which last wrote it,
//! and the next request, queued behind that store, would wait for it).
//!
//! Between two polling machines a call moves one line there (the request) and back (the
//! result): the counters `head` and `tail` and the `free` words each stay on their owner's core,
//! and nothing is allocated.
//!
//! No lost wake-up, no use after free:
//! - the client changes `WAKER` only with a compare-and-swap that fails once `DONE` is set, so
//!   `WAKER` in the final state means exactly "the server saw a waker and wakes it";
//! - the waker cell is read by the server only when it saw `WAKER`, and then the slot is freed by
//!   whichever of the two sides finishes last (`SRV_OUT` / `CLI_OUT`); otherwise the server's
//!   `DONE` is its last access and the client frees the slot;
//! - a client that drops its call before the result sets `ABANDON` (again only before `DONE`);
//!   the server then drops the result and frees the slot.
//!
//! The loom models `ring_*` check these interleavings.

use crate::shim::{fence, AtomicU64, UnsafeCell};
use std::mem::MaybeUninit;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};
use std::task::{Poll, Waker};

/// Words of a slot's inline payload: with the state word and the 8-byte `meta`, a slot fills one
/// 64-byte line. A request or result that does not fit travels boxed (its pointer inline).
pub const PAYLOAD_WORDS: usize = 6;
pub type Payload = [MaybeUninit<u64>; PAYLOAD_WORDS];

const SHIFT: u32 = 8;
pub const REQ: u64 = 1;
pub const DONE: u64 = 2;
pub const WAKER: u64 = 4;
pub const ABANDON: u64 = 8;
/// With `DONE`: no result (the call was dropped, e.g. its server stopped).
pub const CLOSED: u64 = 16;
/// With `CLOSED`: the call's code panicked.
pub const PANICKED: u64 = 32;
const SRV_OUT: u64 = 64;
const CLI_OUT: u64 = 128;

/// What a slot holds besides its state word: `meta` (e.g. the function that runs the request)
/// and the payload.
pub struct Data<M> {
    pub meta: MaybeUninit<M>,
    pub payload: Payload,
}

/// 128-byte aligned: the slot the client polls for a result and the next one, where the server
/// polls for the next request, must not form one pair of lines for the adjacent-line prefetcher.
#[repr(C, align(128))]
struct Slot<M> {
    state: AtomicU64,
    data: UnsafeCell<Data<M>>,
}

#[repr(align(128))]
struct Counter(AtomicU64);

/// A client's ring of call slots. `M`: per-call metadata read by the server (inline); `A`: per-call
/// auxiliary data kept outside the line (e.g. the call's name, read only when tracing or on a
/// panic).
pub struct Ring<M, A> {
    head: Counter,
    tail: Counter,
    slots: Box<[Slot<M>]>,
    /// `free[i]`: the ticket that may use slot `i` next.
    free: Box<[AtomicU64]>,
    wakers: Box<[UnsafeCell<Option<Waker>>]>,
    aux: Box<[UnsafeCell<A>]>,
    mask: u64,
}

// SAFETY: a slot's data, waker and aux cells are accessed only by the side that owns the slot's
// current phase (see the module comment); ownership passes with release/acquire on `state`. `M`
// and `A` are plain data copied between threads; the payload carries `Send` values.
unsafe impl<M: Send, A: Send> Sync for Ring<M, A> {}
// SAFETY: as above.
unsafe impl<M: Send, A: Send> Send for Ring<M, A> {}

/// What [`Ring::complete`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completed {
    /// The client polls, or will see `DONE` on its next look.
    Posted,
    /// The client had registered a waker; it was woken.
    Woken,
    /// The client had dropped the call: the result was dropped and the slot freed.
    Abandoned,
}

impl<M: Copy, A: Copy + Default> Ring<M, A> {
    /// A ring of `slots` slots (rounded up to a power of two, at least 2).
    pub fn new(slots: usize) -> Self {
        let n = slots.max(2).next_power_of_two();
        Ring {
            head: Counter(AtomicU64::new(0)),
            tail: Counter(AtomicU64::new(0)),
            slots: (0..n as u64)
                .map(|i| Slot {
                    state: AtomicU64::new(i << SHIFT),
                    data: UnsafeCell::new(Data {
                        meta: MaybeUninit::uninit(),
                        payload: [MaybeUninit::uninit(); PAYLOAD_WORDS],
                    }),
                })
                .collect(),
            free: (0..n as u64).map(AtomicU64::new).collect(),
            wakers: (0..n).map(|_| UnsafeCell::new(None)).collect(),
            aux: (0..n).map(|_| UnsafeCell::new(A::default())).collect(),
            mask: n as u64 - 1,
        }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn at(&self, t: u64) -> usize {
        (t & self.mask) as usize
    }

    fn slot(&self, t: u64) -> &Slot<M> {
        &self.slots[self.at(t)]
    }

    fn free_for_next_lap(&self, t: u64) {
        self.free[self.at(t)].store(t + self.slots.len() as u64, Release);
    }

    /// Producer: claims the next ticket if its slot is free; `None` when the ring is full (the
    /// slot still holds the call of `N` tickets ago).
    pub fn claim(&self) -> Option<u64> {
        loop {
            let h = self.head.0.load(Relaxed);
            let f = self.free[self.at(h)].load(Acquire);
            if f == h {
                if self
                    .head
                    .0
                    .compare_exchange_weak(h, h + 1, Relaxed, Relaxed)
                    .is_ok()
                {
                    return Some(h);
                }
            } else if f < h {
                return None;
            }
            std::hint::spin_loop();
        }
    }

    /// Producer: writes the request of ticket `t`.
    ///
    /// # Safety
    /// `t` was claimed by the caller and not yet published.
    pub unsafe fn write(&self, t: u64, meta: M, aux: A, payload: impl FnOnce(*mut Payload)) {
        self.slot(t).data.with_mut(|d| {
            // SAFETY: the caller owns the slot between claim and publish.
            let d = unsafe { &mut *d };
            d.meta = MaybeUninit::new(meta);
            payload(&mut d.payload);
        });
        // SAFETY: as above; the aux cell belongs to the same phase.
        self.aux[self.at(t)].with_mut(|a| unsafe { *a = aux });
    }

    /// Producer: makes ticket `t` visible to the server; ends with a SeqCst fence, after which the
    /// caller reads the server's polling flag (IMS).
    pub fn publish(&self, t: u64) {
        self.slot(t).state.store(t << SHIFT | REQ, Release);
        fence(SeqCst);
    }

    /// Consumer: whether a request waits at the tail.
    pub fn ready(&self) -> bool {
        let t = self.tail.0.load(Relaxed);
        let s = self.slot(t).state.load(Acquire);
        s >> SHIFT == t && s & REQ != 0
    }

    /// Tickets issued and not yet taken (the load a machine publishes).
    pub fn pending(&self) -> usize {
        let h = self.head.0.load(Relaxed);
        let t = self.tail.0.load(Relaxed);
        h.saturating_sub(t) as usize
    }

    /// The next ticket a producer will claim; the overflow queue tags its entries with it.
    pub fn head(&self) -> u64 {
        self.head.0.load(Acquire)
    }

    /// The next ticket a consumer will take.
    pub fn tail(&self) -> u64 {
        self.tail.0.load(Acquire)
    }

    /// Consumer: takes the request at the tail, if one is published.
    pub fn take(&self) -> Option<u64> {
        loop {
            let t = self.tail.0.load(Relaxed);
            let s = self.slot(t).state.load(Acquire);
            if s >> SHIFT != t || s & REQ == 0 {
                return None;
            }
            if self
                .tail
                .0
                .compare_exchange_weak(t, t + 1, Relaxed, Relaxed)
                .is_ok()
            {
                return Some(t);
            }
        }
    }

    /// The slot's data of ticket `t`.
    ///
    /// # Safety
    /// The caller owns the phase: the producer between claim and publish, the consumer between
    /// take and complete, the client after it saw `DONE` and before it frees the slot.
    pub unsafe fn with_data<R>(&self, t: u64, f: impl FnOnce(&mut Data<M>) -> R) -> R {
        // SAFETY: the caller owns the phase.
        self.slot(t).data.with_mut(|d| f(unsafe { &mut *d }))
    }

    /// The auxiliary data of ticket `t`.
    ///
    /// # Safety
    /// As for [`with_data`](Self::with_data).
    pub unsafe fn aux(&self, t: u64) -> A {
        // SAFETY: the caller owns the phase.
        self.aux[self.at(t)].with(|a| unsafe { *a })
    }

    /// Consumer: the call of ticket `t` is over: its result was written into the payload (with
    /// `bits == 0`), or there is none (`CLOSED`, maybe `PANICKED`). `drop_result` drops the
    /// payload's result if the client abandoned the call (called only with `bits == 0`).
    pub fn complete(&self, t: u64, bits: u64, drop_result: impl FnOnce(*mut Payload)) -> Completed {
        let slot = self.slot(t);
        let prev = slot.state.fetch_or(DONE | bits, AcqRel);
        if prev & ABANDON != 0 {
            if bits & CLOSED == 0 {
                // SAFETY: the client left; the slot is the consumer's until freed.
                slot.data.with_mut(|d| drop_result(unsafe { &mut (*d).payload }));
            }
            if prev & WAKER != 0 {
                // SAFETY: the client set WAKER before ABANDON and touches the slot no more.
                self.wakers[self.at(t)].with_mut(|w| unsafe { *w = None });
            }
            self.free_for_next_lap(t);
            return Completed::Abandoned;
        }
        if prev & WAKER == 0 {
            return Completed::Posted;
        }
        self.wakers[self.at(t)].with(|w| {
            // SAFETY: WAKER was set before DONE: the client stored the waker and does not touch
            // the cell until both sides are out.
            if let Some(w) = unsafe { &*w } {
                w.wake_by_ref();
            }
        });
        if slot.state.fetch_or(SRV_OUT, AcqRel) & CLI_OUT != 0 {
            // SAFETY: the client is out: the cell is ours.
            self.wakers[self.at(t)].with_mut(|w| unsafe { *w = None });
            self.free_for_next_lap(t);
        }
        Completed::Woken
    }

    /// Client: whether ticket `t`'s call is over (one read of the slot's line).
    pub fn is_done(&self, t: u64) -> bool {
        self.slot(t).state.load(Acquire) & DONE != 0
    }

    /// Client: `Ready(flags)` once the call is over (then read the result unless `flags` has
    /// `CLOSED`, and [`release`](Self::release)); otherwise registers `waker` and returns
    /// `Pending`.
    pub fn poll(&self, t: u64, waker: &Waker) -> Poll<u64> {
        let slot = self.slot(t);
        let cell = &self.wakers[self.at(t)];
        let mut s = slot.state.load(Acquire);
        if s & DONE != 0 {
            return Poll::Ready(s);
        }
        if s & WAKER != 0 {
            // SAFETY: WAKER is set and DONE is not: nobody writes the cell.
            if cell.with(|w| unsafe { &*w }.as_ref().is_some_and(|w| w.will_wake(waker))) {
                return Poll::Pending;
            }
            loop {
                match slot.state.compare_exchange(s, s & !WAKER, AcqRel, Acquire) {
                    Ok(_) => break,
                    Err(now) if now & DONE != 0 => return Poll::Ready(now),
                    Err(now) => s = now,
                }
            }
        }
        // SAFETY: WAKER is clear and was cleared (or never set) before DONE: the server does not
        // read the cell.
        cell.with_mut(|w| unsafe { *w = Some(waker.clone()) });
        let mut s = slot.state.load(Acquire);
        loop {
            if s & DONE != 0 {
                return Poll::Ready(s);
            }
            match slot.state.compare_exchange(s, s | WAKER, AcqRel, Acquire) {
                Ok(_) => return Poll::Pending,
                Err(now) => s = now,
            }
        }
    }

    /// Client: the result of ticket `t` was read (or there was none); frees the slot, or leaves
    /// that to the server if it is still waking the client.
    pub fn release(&self, t: u64) {
        let slot = self.slot(t);
        let s = slot.state.load(Acquire);
        if s & WAKER == 0 {
            // The server's DONE was its last access; a waker stored too late is ours to drop.
            // SAFETY: the server did not see WAKER, so it never reads the cell.
            self.wakers[self.at(t)].with_mut(|w| unsafe { *w = None });
            self.free_for_next_lap(t);
            return;
        }
        if slot.state.fetch_or(CLI_OUT, AcqRel) & SRV_OUT != 0 {
            // SAFETY: the server is out too.
            self.wakers[self.at(t)].with_mut(|w| unsafe { *w = None });
            self.free_for_next_lap(t);
        }
    }

    /// Client: drops its interest in ticket `t`. Returns `Some(flags)` if the call was already
    /// over (the caller drops the result unless `CLOSED`, then calls [`release`](Self::release));
    /// `None` if the server will drop the result and free the slot.
    pub fn abandon(&self, t: u64) -> Option<u64> {
        let slot = self.slot(t);
        let mut s = slot.state.load(Acquire);
        loop {
            if s & DONE != 0 {
                return Some(s);
            }
            match slot.state.compare_exchange(s, s | ABANDON, AcqRel, Acquire) {
                Ok(_) => return None,
                Err(now) => s = now,
            }
        }
    }
}

/// Whether a `T` travels inline in a slot's payload (else boxed).
pub const fn fits<T>() -> bool {
    std::mem::size_of::<T>() <= std::mem::size_of::<Payload>() && std::mem::align_of::<T>() <= 8
}

/// Moves `v` into the payload (inline if it fits, else boxed).
///
/// # Safety
/// `p` points to a payload the caller owns and that holds no live value.
pub unsafe fn put<T>(p: *mut Payload, v: T) {
    if fits::<T>() {
        // SAFETY: the payload is large and aligned enough (checked by `fits`).
        unsafe { p.cast::<T>().write(v) }
    } else {
        // SAFETY: a pointer fits any payload.
        unsafe { p.cast::<Box<T>>().write(Box::new(v)) }
    }
}

/// Moves the `T` out of the payload.
///
/// # Safety
/// The payload holds a `T` put there by [`put`] and not taken since.
pub unsafe fn take<T>(p: *mut Payload) -> T {
    if fits::<T>() {
        // SAFETY: the caller says a `T` lives there.
        unsafe { p.cast::<T>().read() }
    } else {
        // SAFETY: as above, boxed.
        *unsafe { p.cast::<Box<T>>().read() }
    }
}
