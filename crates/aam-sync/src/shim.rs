//! The atomics, cells and locks the protocols use: the standard library's in normal builds,
//! loom's under `--cfg multios_loom` (so loom explores every interleaving of the same code).

#[cfg(not(multios_loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};
#[cfg(not(multios_loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

#[cfg(multios_loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};
#[cfg(multios_loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};

/// An `UnsafeCell` with loom's access-tracking API (`with`, `with_mut`).
#[cfg(not(multios_loom))]
#[derive(Debug, Default)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(multios_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(v: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(v))
    }
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(multios_loom)]
pub(crate) use loom::cell::UnsafeCell;

/// Locks a mutex, ignoring poisoning (a panicking task must not take the machine down).
#[cfg(not(multios_loom))]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(multios_loom)]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
