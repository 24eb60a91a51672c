//! multios-hrt: split execution, Multiverse's accelerator model (seed 002, §III–IV).
//!
//! An ordinary Linux process runs chosen functions on LWK vCPUs **in its own address space**: the
//! guest's page tables map every mapping of the process at its own address (guest-physical ==
//! guest-virtual == host-virtual, memslots made as the process's mappings need them) and follow
//! the process as it maps and unmaps memory (`space.rs`). A function runs in guest ring 3 on a
//! resident vCPU (`guest.rs`), posted through a three-cache-line event channel (`mailbox.rs`);
//! its system calls go through the LWK's LSTAR stub and slot (`multios-lwk`) to the thread waiting
//! for it — the caller of a synchronous call, or the **partner thread** of an asynchronous one —
//! which answers a few from the LWK's local set and forwards the rest (`forward.rs`).
//!
//! The C API is `include/multios/hrt.h` over this crate's cdylib (`capi.rs`); the Rust API is
//! [`Hrt`]. See docs/MULTIVERSE.md.

pub mod capi;
pub mod cpu;
pub mod forward;
pub mod fpu;
pub mod guest;
pub mod mailbox;
pub mod maps;
pub mod runtime;
pub mod slots;
pub mod space;
pub mod sys;
pub mod tables;

pub use cpu::Fault;
pub use guest::Func;
pub use runtime::{Config, HrtError};
pub use space::SpaceStats;

use runtime::{lock, Shared};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

static RUNTIME: Mutex<Option<Arc<Shared>>> = Mutex::new(None);
/// Set in a child of fork(): the VM and the vCPU threads stayed with the parent.
static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn in_forked_child() {
    FORKED.store(true, Ordering::Relaxed);
}

/// The process's split-execution runtime (one per process: the LWK's region is at a fixed address).
#[derive(Clone)]
pub struct Hrt {
    rt: Arc<Shared>,
}

/// An asynchronous invocation: its partner thread, to join.
pub struct Invocation {
    handle: std::thread::JoinHandle<Result<i64, HrtError>>,
}

impl Invocation {
    /// Waits for the function; its return value, or how it faulted.
    pub fn join(self) -> Result<i64, HrtError> {
        self.handle.join().unwrap_or(Err(HrtError::PartnerPanicked))
    }
}

/// What split execution has done so far.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub space: SpaceStats,
    pub vcpus: usize,
    /// The address-space merger at start-up (LWK region, memslots, tables), ns.
    pub merge_ns: u64,
    pub calls_local: u64,
    pub calls_forwarded: u64,
    pub calls_refused: u64,
}

thread_local! {
    /// Set while this thread's function runs in the guest. The guest runs with the poster's
    /// thread pointer (`mailbox.fs`), so a call made *by the function* sees the flag of the thread
    /// that posted it: a nested call must not wait for a vCPU (it holds one: with `max_vcpus`
    /// vCPUs busy it would wait forever).
    static IN_CALL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True inside a function run by split execution (on a vCPU).
pub fn in_guest_call() -> bool {
    IN_CALL.with(|c| c.get())
}

/// Runs `f` with [`IN_CALL`] set on this thread.
fn posting<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            IN_CALL.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(IN_CALL.with(|c| c.replace(true)));
    f()
}

/// Calls a boxed closure (the argument) in the guest.
unsafe extern "C" fn closure_entry<F: FnOnce() -> i64>(arg: *mut libc::c_void) -> libc::c_long {
    // SAFETY: `arg` is the `Option<F>` that `Hrt::run`/`spawn` keep alive until the call returns.
    let f = unsafe { &mut *(arg as *mut Option<F>) };
    f.take().map_or(0, |f| f()) as libc::c_long
}

impl Hrt {
    /// Starts split execution in this process: the VM, the LWK's region, the merged address space.
    pub fn init(cfg: Config) -> Result<Hrt, HrtError> {
        let mut g = lock(&RUNTIME);
        if g.is_some() {
            return Err(HrtError::AlreadyInitialised);
        }
        if FORKED.load(Ordering::Relaxed) {
            return Err(HrtError::ForkedChild);
        }
        let rt = Shared::new(cfg)?;
        rt.keep_off_vcpus();
        // SAFETY: the handler only stores to an atomic (async-signal-safe, as a child handler of
        // a multithreaded fork must be).
        unsafe { libc::pthread_atfork(None, None, Some(in_forked_child)) };
        *g = Some(rt.clone());
        Ok(Hrt { rt })
    }

    /// The runtime started by [`Hrt::init`], if any.
    pub fn get() -> Result<Hrt, HrtError> {
        lock(&RUNTIME)
            .clone()
            .map(|rt| Hrt { rt })
            .ok_or(HrtError::NotInitialised)
    }

    /// Stops every vCPU and the VM. Invocations still running are not waited for.
    pub fn fini() -> Result<(), HrtError> {
        let rt = lock(&RUNTIME).take().ok_or(HrtError::NotInitialised)?;
        rt.stop();
        Ok(())
    }

    /// Runs `f(arg)` on a resident vCPU and waits (the caller serves its forwarded calls).
    /// Called from inside a function that split execution runs, `f(arg)` is called directly:
    /// the caller is already on a vCPU, in the same address space.
    ///
    /// # Safety
    /// `f` must be safe to call with `arg` (it runs in this address space, as a call would).
    pub unsafe fn call(&self, f: Func, arg: *mut libc::c_void) -> Result<i64, HrtError> {
        if in_guest_call() {
            // SAFETY: the caller vouches for `f(arg)`.
            return Ok(unsafe { f(arg) });
        }
        if FORKED.load(Ordering::Relaxed) {
            return Err(HrtError::ForkedChild);
        }
        let cpu = self.rt.acquire()?;
        let r = posting(|| self.rt.run_on(&cpu, f, arg as u64, false));
        self.rt.release(cpu);
        r
    }

    /// Starts `f(arg)` on a vCPU with a partner thread serving it; join the result.
    ///
    /// # Safety
    /// `f` must be safe to call with `arg` on another thread.
    pub unsafe fn invoke(&self, f: Func, arg: *mut libc::c_void) -> Result<Invocation, HrtError> {
        if in_guest_call() {
            return Err(HrtError::Nested);
        }
        if FORKED.load(Ordering::Relaxed) {
            return Err(HrtError::ForkedChild);
        }
        let rt = self.rt.clone();
        let arg = arg as u64;
        let handle = std::thread::Builder::new()
            .name("hrt-partner".into())
            .spawn(move || {
                let cpu = rt.acquire()?;
                let r = posting(|| rt.run_on(&cpu, f, arg, true));
                rt.release(cpu);
                r
            })
            .map_err(HrtError::Thread)?;
        Ok(Invocation { handle })
    }

    /// Runs a closure in the guest, synchronously.
    pub fn run<F: FnOnce() -> i64 + Send>(&self, f: F) -> Result<i64, HrtError> {
        let mut slot = Some(f);
        // SAFETY: `closure_entry::<F>` takes the `Option<F>` at `arg`, alive until `call` returns.
        unsafe {
            self.call(
                closure_entry::<F>,
                &mut slot as *mut Option<F> as *mut libc::c_void,
            )
        }
    }

    /// Runs a closure in the guest on a partner thread; join the result.
    pub fn spawn<F: FnOnce() -> i64 + Send + 'static>(&self, f: F) -> Result<Invocation, HrtError> {
        if in_guest_call() {
            return Err(HrtError::Nested);
        }
        if FORKED.load(Ordering::Relaxed) {
            return Err(HrtError::ForkedChild);
        }
        let rt = self.rt.clone();
        let handle = std::thread::Builder::new()
            .name("hrt-partner".into())
            .spawn(move || {
                let mut slot = Some(f);
                let cpu = rt.acquire()?;
                let arg = &mut slot as *mut Option<F> as u64;
                let r = posting(|| rt.run_on(&cpu, closure_entry::<F>, arg, true));
                rt.release(cpu);
                r
            })
            .map_err(HrtError::Thread)?;
        Ok(Invocation { handle })
    }

    /// Re-reads the process's mappings into the guest's tables (what start-up did).
    pub fn merge(&self) -> Result<(), HrtError> {
        lock(&self.rt.space).merge(&self.rt.vm)?;
        self.rt.mem.shadow.bump();
        Ok(())
    }

    pub fn stats(&self) -> Stats {
        use std::sync::atomic::Ordering::Relaxed;
        Stats {
            space: self.rt.space_stats(),
            vcpus: self.rt.vcpus(),
            merge_ns: self.rt.merge_ns.load(Relaxed),
            calls_local: self.rt.local.local.load(Relaxed),
            calls_forwarded: self.rt.local.forwarded.load(Relaxed),
            calls_refused: self.rt.local.refused.load(Relaxed),
        }
    }

    /// The bits the guest's tables give `addr` now (0: not present), for tests.
    pub fn table_bits(&self, addr: u64) -> u64 {
        lock(&self.rt.space).bits_at(addr)
    }
}
