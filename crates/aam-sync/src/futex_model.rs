//! A futex for loom: `wait` sleeps while the word holds the expected value, `wake` ends a wait.
//! Built from loom's mutex and condition variable, whose interleavings loom explores (a thread
//! that waits forever is reported as a deadlock: that is how a lost wake-up shows).

use loom::sync::{Condvar, Mutex};
use std::sync::atomic::Ordering::SeqCst;

#[derive(Default)]
pub(crate) struct Futex {
    lock: Mutex<()>,
    cv: Condvar,
}

impl Futex {
    pub(crate) fn wait(&self, word: &loom::sync::atomic::AtomicU32, expected: u32) {
        let g = crate::shim::lock(&self.lock);
        if word.load(SeqCst) == expected {
            let _g = self.cv.wait(g).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    pub(crate) fn wake(&self) {
        let _g = crate::shim::lock(&self.lock);
        self.cv.notify_one();
    }
}
