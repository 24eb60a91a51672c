//! The counting signal: a future that completes once `signal` has been called as many times as
//! the count says (the paper's `counting signal`, e.g. "all n sub-tasks are done").
//!
//! No lost wake-up: a waiter stores its waker and re-reads the count inside one critical section
//! of `waiters`; the signal that brings the count to zero decrements it first and then takes the
//! same lock to wake. Either the waiter's re-read follows the decrement (it sees zero and does not
//! sleep) or its registration precedes the signaller's critical section (it is woken).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

#[derive(Default)]
struct Inner {
    count: AtomicUsize,
    waiters: Mutex<Vec<Waker>>,
}

/// A countdown shared by clones; `wait()` completes when it reaches zero.
#[derive(Clone, Default)]
pub struct CountingSignal(Arc<Inner>);

impl CountingSignal {
    pub fn new(count: usize) -> Self {
        let s = CountingSignal::default();
        s.0.count.store(count, Ordering::SeqCst);
        s
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
            let waiters = std::mem::take(&mut *self.0.waiters.lock().unwrap_or_else(PoisonError::into_inner));
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
        let mut w = inner.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.count.load(Ordering::SeqCst) == 0 {
            return Poll::Ready(());
        }
        if !w.iter().any(|x| x.will_wake(cx.waker())) {
            w.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block_on;

    #[test]
    fn completes_after_the_last_signal_from_other_threads() {
        for _ in 0..200 {
            let s = CountingSignal::new(4);
            let ts: Vec<_> = (0..4)
                .map(|_| {
                    let s = s.clone();
                    std::thread::spawn(move || s.signal())
                })
                .collect();
            block_on(s.wait());
            assert_eq!(s.count(), 0);
            for t in ts {
                let _ = t.join();
            }
        }
    }
}
