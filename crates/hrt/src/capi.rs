//! The C API (`include/multios/hrt.h`): the same calls as [`crate::Hrt`], with integer handles so
//! that joining an invocation twice is an error (HRT_ESRCH) rather than undefined.

use crate::{Config, Fault, Func, Hrt, HrtError, Invocation};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

pub const HRT_OK: i32 = 0;
pub const HRT_ENOTINIT: i32 = -1;
pub const HRT_EINIT: i32 = -2;
pub const HRT_ESRCH: i32 = -3;
pub const HRT_EFAULTED: i32 = -4;
pub const HRT_EBUSY: i32 = -5;
pub const HRT_EINVAL: i32 = -6;
pub const HRT_EAGAIN: i32 = -7;
pub const HRT_EFORKED: i32 = -8;
pub const HRT_ENESTED: i32 = -9;

/// `struct hrt_config` (zeros: defaults).
#[repr(C)]
pub struct HrtConfig {
    pub max_vcpus: u32,
    pub idle_spin_us: u32,
    /// CPU of vCPU 0 (-1: automatic); vCPU k goes on the k-th allowed CPU from there.
    pub first_cpu: i32,
    /// 1: do not print a function's fault on stderr.
    pub quiet: u32,
    /// 1: leave the calling thread's CPU affinity alone.
    pub keep_affinity: u32,
}

static HANDLES: Mutex<Option<HashMap<u64, Invocation>>> = Mutex::new(None);
static NEXT: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static LAST_FAULT: Cell<Fault> = const { Cell::new(Fault { vector: 0, error: 0, rip: 0, addr: 0, mapped: 0 }) };
}

fn code(e: &HrtError) -> i32 {
    match e {
        HrtError::NotInitialised => HRT_ENOTINIT,
        HrtError::AlreadyInitialised => HRT_EBUSY,
        HrtError::NoSuchInvocation => HRT_ESRCH,
        HrtError::Faulted(f) => {
            LAST_FAULT.with(|c| c.set(*f));
            HRT_EFAULTED
        }
        HrtError::Thread(_) | HrtError::VcpuThread(..) => HRT_EAGAIN,
        HrtError::Nested => HRT_ENESTED,
        HrtError::ForkedChild => HRT_EFORKED,
        _ => HRT_EINIT,
    }
}

fn report(e: HrtError) -> i32 {
    if !matches!(
        e,
        HrtError::Faulted(_) | HrtError::NoSuchInvocation | HrtError::ForkedChild | HrtError::Nested
    ) {
        eprintln!("multios-hrt: {e}");
    }
    code(&e)
}

/// # Safety
/// `cfg` is null or points to a `struct hrt_config`.
#[no_mangle]
pub unsafe extern "C" fn hrt_init(cfg: *const HrtConfig) -> i32 {
    let mut c = Config::default();
    // SAFETY: the caller passes null or a valid struct.
    if let Some(h) = unsafe { cfg.as_ref() } {
        if h.max_vcpus > 0 {
            c.max_vcpus = h.max_vcpus as usize;
        }
        if h.idle_spin_us > 0 {
            c.idle_spin = Duration::from_micros(h.idle_spin_us as u64);
        }
        if h.first_cpu >= 0 {
            let all = multios_lwk::available_cpus();
            let Some(k) = all.iter().position(|&x| x == h.first_cpu as usize) else {
                eprintln!(
                    "multios-hrt: first_cpu {} is not a CPU this process may use ({all:?})",
                    h.first_cpu
                );
                return HRT_EINVAL;
            };
            c.cpus = all[k..].iter().chain(all[..k].iter()).copied().collect();
        }
        c.verbose_faults = h.quiet == 0;
        c.keep_affinity = h.keep_affinity != 0;
    }
    match Hrt::init(c) {
        Ok(_) => HRT_OK,
        Err(e) => report(e),
    }
}

#[no_mangle]
pub extern "C" fn hrt_fini() -> i32 {
    lock_handles().take();
    match Hrt::fini() {
        Ok(()) => HRT_OK,
        Err(e) => report(e),
    }
}

fn lock_handles() -> std::sync::MutexGuard<'static, Option<HashMap<u64, Invocation>>> {
    HANDLES.lock().unwrap_or_else(|p| p.into_inner())
}

/// # Safety
/// `f` must be safe to call with `arg` on another thread; `out` points to a `hrt_thread_t`.
#[no_mangle]
pub unsafe extern "C" fn hrt_invoke_func(f: Option<Func>, arg: *mut libc::c_void, out: *mut u64) -> i32 {
    let Some(f) = f else { return HRT_EINVAL };
    if out.is_null() {
        return HRT_EINVAL;
    }
    let hrt = match Hrt::get() {
        Ok(h) => h,
        Err(e) => return report(e),
    };
    // SAFETY: the caller vouches for `f(arg)`.
    match unsafe { hrt.invoke(f, arg) } {
        Ok(inv) => {
            let id = NEXT.fetch_add(1, Ordering::Relaxed);
            lock_handles().get_or_insert_with(HashMap::new).insert(id, inv);
            // SAFETY: `out` is non-null and the caller's.
            unsafe { *out = id };
            HRT_OK
        }
        Err(e) => report(e),
    }
}

/// # Safety
/// `ret` is null or points to a `long`.
#[no_mangle]
pub unsafe extern "C" fn hrt_join(t: u64, ret: *mut libc::c_long) -> i32 {
    let inv = lock_handles().as_mut().and_then(|m| m.remove(&t));
    let Some(inv) = inv else { return HRT_ESRCH };
    match inv.join() {
        Ok(v) => {
            // SAFETY: null or the caller's long.
            if let Some(r) = unsafe { ret.as_mut() } {
                *r = v as libc::c_long;
            }
            HRT_OK
        }
        Err(e) => report(e),
    }
}

/// # Safety
/// `f` must be safe to call with `arg`; `ret` is null or points to a `long`.
#[no_mangle]
pub unsafe extern "C" fn hrt_call(f: Option<Func>, arg: *mut libc::c_void, ret: *mut libc::c_long) -> i32 {
    let Some(f) = f else { return HRT_EINVAL };
    let hrt = match Hrt::get() {
        Ok(h) => h,
        Err(e) => return report(e),
    };
    // SAFETY: the caller vouches for `f(arg)`.
    match unsafe { hrt.call(f, arg) } {
        Ok(v) => {
            // SAFETY: null or the caller's long.
            if let Some(r) = unsafe { ret.as_mut() } {
                *r = v as libc::c_long;
            }
            HRT_OK
        }
        Err(e) => report(e),
    }
}

/// # Safety
/// `out` is null or points to a `struct hrt_fault`.
#[no_mangle]
pub unsafe extern "C" fn hrt_last_fault(out: *mut Fault) -> i32 {
    // SAFETY: null or the caller's struct.
    match unsafe { out.as_mut() } {
        Some(o) => {
            *o = LAST_FAULT.with(|c| c.get());
            HRT_OK
        }
        None => HRT_EINVAL,
    }
}

#[no_mangle]
pub extern "C" fn hrt_merge() -> i32 {
    match Hrt::get().and_then(|h| h.merge()) {
        Ok(()) => HRT_OK,
        Err(e) => report(e),
    }
}

#[no_mangle]
pub extern "C" fn hrt_strerror(e: i32) -> *const libc::c_char {
    let s: &'static [u8] = match e {
        HRT_OK => b"success\0",
        HRT_ENOTINIT => b"split execution is not initialised (call hrt_init)\0",
        HRT_EINIT => b"split execution could not start (see stderr)\0",
        HRT_ESRCH => b"no such invocation (already joined?)\0",
        HRT_EFAULTED => b"the function faulted (hrt_last_fault says how)\0",
        HRT_EBUSY => b"split execution is already initialised\0",
        HRT_EINVAL => b"invalid argument\0",
        HRT_EAGAIN => b"no thread or vCPU could be started\0",
        HRT_EFORKED => b"split execution does not cross fork(): this is a child\0",
        HRT_ENESTED => b"hrt_invoke_func inside a split-executed function (call the function directly)\0",
        _ => b"unknown error\0",
    };
    s.as_ptr() as *const libc::c_char
}
