//! The future of a task: one value, one sender, one receiver, wait-free on both sides.
//!
//! Lost wake-ups are excluded by one atomic word with three bits. The receiver stores its waker
//! only while `WAKER` is clear and then sets `WAKER` with a read-modify-write that also returns
//! whether the value arrived first; the sender publishes the value and sets `DONE` with one
//! read-modify-write that also returns whether a waker was stored before. In the single
//! modification order of the word exactly one of the two sees the other's bit: either the sender
//! sees `WAKER` and wakes the stored waker, or the receiver sees `DONE` and takes the value
//! without sleeping. This is the role of the paper's enqueue handler: a waiting task registers
//! and re-checks in one step, so a completion between its check and its suspension is never lost.
//! The loom models `oneshot_*` check it.

use crate::shim::{Arc, AtomicU8, UnsafeCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};

const WAKER: u8 = 1;
const DONE: u8 = 2;
/// With `DONE`: the sender went away without a value.
const CLOSED: u8 = 4;
/// With `CLOSED`: it went away while its thread was panicking.
const PANICKED: u8 = 8;

struct Slot<T> {
    state: AtomicU8,
    value: UnsafeCell<Option<T>>,
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: `value` is written only by the sender before it sets DONE and read only by the receiver
// after it observed DONE (release/acquire on `state`); `waker` is written only by the receiver while
// WAKER is clear and read only by the sender after it observed WAKER (see the module comment).
unsafe impl<T: Send> Sync for Slot<T> {}
// SAFETY: as above; the slot moves `T` and a `Waker` (both Send) between threads.
unsafe impl<T: Send> Send for Slot<T> {}

/// Why a receiver got no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// The sender was dropped (its task was cancelled, e.g. its machine stopped).
    Dropped,
    /// The sender was dropped while its task panicked.
    Panicked,
}

/// The completing side.
pub struct Sender<T>(Option<Arc<Slot<T>>>);
/// The waiting side: a future of the value.
pub struct Receiver<T>(Arc<Slot<T>>);

pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let slot = Arc::new(Slot {
        state: AtomicU8::new(0),
        value: UnsafeCell::new(None),
        waker: UnsafeCell::new(None),
    });
    (Sender(Some(slot.clone())), Receiver(slot))
}

impl<T> Sender<T> {
    /// Completes the future and wakes its waiter.
    pub fn send(mut self, value: T) {
        if let Some(slot) = self.0.take() {
            // SAFETY: DONE is not set yet and only this sender sets it, so the receiver does not
            // read `value` until after the fetch_or below.
            slot.value.with_mut(|v| unsafe { *v = Some(value) });
            finish(&slot, DONE);
        }
    }
}

fn finish<T>(slot: &Slot<T>, bits: u8) {
    let prev = slot.state.fetch_or(bits, Ordering::AcqRel);
    if prev & WAKER != 0 {
        slot.waker.with(|w| {
            // SAFETY: WAKER was set before DONE, so the receiver stored the waker and will not
            // touch it again (it re-checks DONE before every store).
            if let Some(w) = unsafe { &*w } {
                w.wake_by_ref();
            }
        });
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            let why = if std::thread::panicking() { PANICKED } else { 0 };
            finish(&slot, DONE | CLOSED | why);
        }
    }
}

impl<T> Receiver<T> {
    fn take(&self, state: u8) -> Result<T, Closed> {
        if state & CLOSED != 0 {
            return Err(if state & PANICKED != 0 {
                Closed::Panicked
            } else {
                Closed::Dropped
            });
        }
        // SAFETY: DONE was observed with acquire ordering after the sender wrote the value; the
        // receiver is the only reader.
        self.0
            .value
            .with_mut(|v| unsafe { (*v).take() })
            .ok_or(Closed::Dropped)
    }

    /// Whether the value (or the sender's closing) has arrived: one read of the slot's line.
    pub fn is_done(&self) -> bool {
        self.0.state.load(Ordering::Acquire) & DONE != 0
    }

    /// The value if it has arrived (without registering a waker).
    pub fn try_take(&self) -> Option<Result<T, Closed>> {
        let s = self.0.state.load(Ordering::Acquire);
        (s & DONE != 0).then(|| self.take(s))
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, Closed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let slot = &self.0;
        let mut s = slot.state.load(Ordering::Acquire);
        if s & DONE != 0 {
            return Poll::Ready(self.take(s));
        }
        if s & WAKER != 0 {
            // SAFETY: WAKER is set, so the sender may read the waker but nobody writes it.
            let same = slot
                .waker
                .with(|w| unsafe { &*w }.as_ref().is_some_and(|w| w.will_wake(cx.waker())));
            if same {
                return Poll::Pending;
            }
            s = slot.state.fetch_and(!WAKER, Ordering::AcqRel);
            if s & DONE != 0 {
                return Poll::Ready(self.take(s));
            }
        }
        // SAFETY: WAKER is clear and DONE was not set when we cleared/observed it, so a sender
        // that sets DONE from now on sees WAKER clear and does not read the waker.
        slot.waker.with_mut(|w| unsafe { *w = Some(cx.waker().clone()) });
        let s = slot.state.fetch_or(WAKER, Ordering::AcqRel);
        if s & DONE != 0 {
            return Poll::Ready(self.take(s));
        }
        Poll::Pending
    }
}
