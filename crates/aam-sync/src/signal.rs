//! The counting signal: a future that completes once `signal` has been called as many times as
//! the count says (the paper's `counting signal`, e.g. "all n sub-tasks are done").
//!
//! No lost wake-up: a waiter stores its waker and re-reads the count inside one critical section
//! of `waiters`; the signal that brings the count to zero decrements it first and then takes the
//! same lock to wake. Either the waiter's re-read follows the decrement (it sees zero and does not
//! sleep) or its registration precedes the signaller's critical section (it is woken). The loom
//! model `counting_signal_no_lost_wakeup` checks it.

use crate::shim::{lock, Arc, AtomicUsize, Mutex};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};

struct Inner {
    count: AtomicUsize,
    waiters: Mutex<Vec<Waker>>,
}

/// A countdown shared by clones; `wait()` completes when it reaches zero.
#[derive(Clone)]
pub struct CountingSignal(Arc<Inner>);

impl Default for CountingSignal {
    fn default() -> Self {
        CountingSignal::new(0)
    }
}

impl CountingSignal {
    pub fn new(count: usize) -> Self {
        CountingSignal(Arc::new(Inner {
            count: AtomicUsize::new(count),
            waiters: Mutex::new(Vec::new()),
        }))
    }

    /// Expects `n` more signals.
    pub fn add(&self, n: usize) {
        self.0.count.fetch_add(n, Ordering::SeqCst);
    }

    /// One event happened. Extra signals past zero are ignored.
    pub fn signal(&self) {
        let prev = self
            .0
            .count
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| c.checked_sub(1));
        if prev == Ok(1) {
            let waiters = std::mem::take(&mut *lock(&self.0.waiters));
            for w in waiters {
                w.wake();
            }
        }
    }

    /// The signals still expected.
    pub fn count(&self) -> usize {
        self.0.count.load(Ordering::SeqCst)
    }

    /// Completes when the count is zero.
    pub fn wait(&self) -> Wait<'_> {
        Wait(self)
    }
}

/// The future of [`CountingSignal::wait`].
pub struct Wait<'a>(&'a CountingSignal);

impl Future for Wait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let inner = &self.0 .0;
        if inner.count.load(Ordering::SeqCst) == 0 {
            return Poll::Ready(());
        }
        let mut w = lock(&inner.waiters);
        if inner.count.load(Ordering::SeqCst) == 0 {
            return Poll::Ready(());
        }
        if !w.iter().any(|x| x.will_wake(cx.waker())) {
            w.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
