//! Threads and their CPU affinity.

use std::io;
use std::sync::OnceLock;

/// Pins the calling thread to `cpu` (best effort: errors are returned for the caller to report).
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    pin_thread(0, &[cpu])
}

/// Restricts thread `tid` (0: the calling thread) to `cpus` (CPU sets: `multios-host`).
pub fn pin_thread(tid: i32, cpus: &[usize]) -> io::Result<()> {
    multios_host::cpus::pin_thread(tid, &cpus.iter().copied().collect())
}

/// The CPUs the calling thread may run on, ascending.
pub fn affinity_list() -> Vec<usize> {
    multios_host::CpuSet::allowed().to_vec()
}

/// The kernel's CPU mask size in bytes: what sched_getaffinity copies out at most
/// (`cpumask_size()`, from the kernel's compiled-in CPU count; 32 bytes here for 2 CPUs).
pub fn cpumask_size() -> usize {
    static SIZE: OnceLock<usize> = OnceLock::new();
    *SIZE.get_or_init(|| getaffinity_len(1024).filter(|&r| r > 0).unwrap_or(8))
}

/// The shortest buffer sched_getaffinity accepts, in bytes: the kernel wants room for
/// `nr_cpu_ids` bits rounded up to whole longs (8 bytes on a machine of up to 64 possible CPUs),
/// not room for all of [`cpumask_size`] (issue #15: hwloc asks with 8 bytes).
pub fn affinity_min_len() -> usize {
    static MIN: OnceLock<usize> = OnceLock::new();
    *MIN.get_or_init(|| {
        (1..=128)
            .map(|longs| 8 * longs)
            .find(|&len| getaffinity_len(len).is_some())
            .unwrap_or_else(cpumask_size)
    })
}

/// sched_getaffinity(0, len) of the calling thread into a scratch buffer: Some(bytes copied), or
/// None when the kernel refuses the length.
fn getaffinity_len(len: usize) -> Option<usize> {
    let mut buf = [0u64; 128];
    let len = len.min(std::mem::size_of_val(&buf));
    // SAFETY: `buf` is 1024 bytes long and `len` is at most that; the kernel writes at most `len`.
    let r = unsafe { libc::syscall(libc::SYS_sched_getaffinity, 0, len, buf.as_mut_ptr()) };
    (r >= 0).then_some(r as usize)
}

/// The calling thread's CPU affinity, to restore it after pinning.
pub fn affinity() -> Option<libc::cpu_set_t> {
    multios_host::cpus::current_mask().ok()
}

/// Restores an affinity returned by [`affinity`].
pub fn set_affinity(set: &libc::cpu_set_t) {
    let _ = multios_host::cpus::pin_thread_to_mask(0, set);
}

/// Lets the calling thread run on every CPU again (threads inherit their creator's pinning).
pub fn unpin() -> io::Result<()> {
    multios_host::cpus::unpin_current_thread()
}

/// The calling thread's pthread_t, as a number (for pthread_kill by another thread).
pub fn pthread_self() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

/// The calling thread's id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Kicks host thread `tid` of this process out of KVM_RUN with SIGUSR2 (the machine's no-op
/// handler, no SA_RESTART). tgkill, not pthread_kill: a thread that has just ended makes it fail
/// with ESRCH instead of touching freed memory.
pub fn kick_tid(tid: i32) {
    // SAFETY: tgkill only sends a signal; a stale tid is an ESRCH error, ignored.
    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, libc::SIGUSR2) };
}

/// The VMM's CPU affinity before any of its threads was pinned (`remember_start_affinity`).
static START_AFFINITY: std::sync::OnceLock<Option<libc::cpu_set_t>> = std::sync::OnceLock::new();

/// Records the calling thread's affinity as the run's start affinity (once, before the vCPU
/// threads are pinned): what a program the guest execs on Linux runs on (`exec_on_host`).
pub fn remember_start_affinity() {
    START_AFFINITY.get_or_init(affinity);
}

/// The affinity recorded by [`remember_start_affinity`].
pub fn start_affinity() -> Option<libc::cpu_set_t> {
    START_AFFINITY.get().copied().flatten()
}

/// Host thread `tid`'s CPU clock of kind `kind` (the kernel's CPUCLOCK_PROF 0: user + system
/// ticks, VIRT 1: user ticks, SCHED 2: time on a CPU), in ns; `tid` 0 is the calling thread. None
/// when `tid` is not (any more) a thread of this process.
pub fn thread_cpu_ns(tid: i32, kind: i32) -> Option<u64> {
    // The kernel's MAKE_THREAD_CPUCLOCK: `~tid << 3`, the per-thread bit 4, the kind.
    let id = (!tid << 3) | 4 | (kind & 3);
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live, writable timespec; a bad clock id is an EINVAL error.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}
