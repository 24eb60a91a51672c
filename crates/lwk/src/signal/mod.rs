//! Signals in the LWK: dispositions, per-thread masks, pending sets, and delivery to the guest's
//! handlers through a Linux-compatible signal frame.
//!
//! Where signals come from: the guest's own kill/tkill/tgkill (raise, abort, pthread_kill), an
//! EPIPE from a write while SIGPIPE has a handler, and signals sent to the VMM process (alarm,
//! timers, another process, Ctrl-C) for which the guest installed a handler ([`host`] catches
//! them). Where they are delivered: on the vCPU's own thread, at the return of a system call or
//! when the vCPU was kicked out of KVM_RUN in user code (`machine.rs`).
//!
//! One concern per file:
//!
//! * this file: the state — [`Signals`] (held by the kernel) and [`ThreadSignals`] (one per
//!   thread) — and the shared vocabulary (siginfo, flags, restart codes);
//! * [`disposition`]: actions, masks and pending sets (queueing, what is deliverable, dequeueing);
//! * [`altstack`]: the alternate signal stack's `stack_t`;
//! * [`frame`]: the signal frame pushed for a handler and taken back by rt_sigreturn;
//! * [`deliver`]: entering the guest's handlers from a vCPU thread (call returns, kicks, CPU
//!   exceptions);
//! * [`host`]: signals sent to the VMM process on the guest's behalf;
//! * [`info`]: a signal's siginfo (who sent it, or the CPU exception that raised it);
//! * [`queue`]: a pending set — real-time signals queue with their siginfo, standard ones
//!   coalesce, as on Linux;
//! * [`sfd`]: the guest's signalfds (a host pipe each, kept readable while a signal of its mask
//!   is pending) and the records their reads return.
//!
//! The system calls themselves (sigaction, sigprocmask, kill, sigaltstack…) are thin entry points
//! in `syscall/signal.rs`, and interruptible delegated calls are in `syscall/interrupt.rs`.

pub mod altstack;
pub mod deliver;
pub mod disposition;
pub mod frame;
pub mod host;
pub mod info;
pub mod inherited;
pub mod queue;
pub mod sfd;
mod sfd_ops;

pub use altstack::AltStack;
pub use info::{SigInfo, Trap, SI_KERNEL, SI_QUEUE, SI_TIMER, SI_TKILL, SI_USER};
pub use queue::Pending;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize};
use std::sync::Mutex;

/// A guest signal disposition: the kernel's `struct sigaction` (handler, flags, restorer, mask).
#[derive(Debug, Clone, Copy, Default)]
pub struct SigAction {
    pub raw: [u64; 4],
}

/// The signal state of the guest process (the per-thread part is [`ThreadSignals`], kept in the
/// kernel's thread table under its lock).
///
/// Lock order, as every path nests them (and as the VMM's fork holds them): `sfds`, the kernel's
/// `threads` lock, then `pending`. `actions` and `thread_timers` are never held while taking another lock.
pub struct Signals {
    /// Dispositions, indexed by signal number (0 unused).
    pub(crate) actions: Mutex<[SigAction; 65]>,
    /// Signals sent to the process and not yet delivered, each instance with its siginfo;
    /// per-thread ones are in [`ThreadSignals::pending`].
    pub(crate) pending: Mutex<Pending>,
    /// How many real-time instances a pending set holds (the VMM's RLIMIT_SIGPENDING).
    pub(crate) queue_limit: usize,
    /// POSIX timers that signal one thread (SIGEV_THREAD_ID): host timer id → (vCPU, guest tid).
    /// The host timer signals the signal pump's thread, which routes the signal by this table.
    pub(crate) thread_timers: Mutex<BTreeMap<i32, (usize, i32)>>,
    /// The host tid of the signal pump's thread (0 before it runs).
    pub(crate) pump_tid: AtomicI32,
    /// Rounds of the signal pump begun (before it takes the host's signals) and finished (after
    /// it has made them pending for the guest): `Kernel::sync_host_signals` waits on them.
    pub(crate) pump_begun: AtomicU64,
    pub(crate) pump_done: AtomicU64,
    /// False when no signal is pending anywhere: the per-call check is then one load.
    pub(crate) hint: AtomicBool,
    /// Per vCPU: the host thread (pthread_t) performing its delegated call, 0 when none; the
    /// signal pump kicks it to interrupt a blocking call.
    pub(crate) serving: Box<[AtomicU64]>,
    /// The guest's signalfds (`sfd.rs`), and how many there are (0: no per-call work).
    pub(crate) sfds: Mutex<sfd::Table>,
    pub(crate) sfd_count: AtomicUsize,
}

impl Signals {
    /// Every disposition SIG_DFL, nothing pending, `vcpus` serving entries.
    pub fn new(vcpus: usize) -> Self {
        Signals {
            actions: Mutex::new([SigAction::default(); 65]),
            pending: Mutex::new(Pending::default()),
            queue_limit: crate::sys::sigpending_limit(),
            thread_timers: Mutex::new(BTreeMap::new()),
            pump_tid: AtomicI32::new(0),
            pump_begun: AtomicU64::new(0),
            pump_done: AtomicU64::new(0),
            hint: AtomicBool::new(false),
            serving: (0..vcpus).map(|_| AtomicU64::new(0)).collect(),
            sfds: Mutex::new(sfd::Table::new()),
            sfd_count: AtomicUsize::new(0),
        }
    }
}

/// One thread's signal state.
#[derive(Debug, Clone, Default)]
pub struct ThreadSignals {
    /// Blocked signals (bit sig-1).
    pub mask: u64,
    /// Signals sent to this thread and not yet delivered.
    pub pending: Pending,
    /// The mask to restore after the next handler (rt_sigsuspend's caller's mask).
    pub saved_mask: Option<u64>,
    /// The alternate signal stack (sigaltstack), for handlers installed with SA_ONSTACK.
    pub altstack: Option<AltStack>,
}

/// sa_flags bits (asm-generic/signal.h, x86).
pub(crate) const SA_ONSTACK: u64 = 0x0800_0000;
pub(crate) const SA_RESTORER: u64 = 0x0400_0000;
pub(crate) const SA_RESTART: u64 = 0x1000_0000;
pub(crate) const SA_NODEFER: u64 = 0x4000_0000;
pub(crate) const SA_RESETHAND: u64 = 0x8000_0000;

/// Linux's internal results of a call a signal interrupted (include/linux/errno.h): they never
/// reach the guest. At delivery a handler turns them into EINTR — or, for ERESTARTSYS under
/// SA_RESTART, into the call again; without a handler the call is made again.
pub const ERESTARTSYS: i64 = -512;
pub const ERESTARTNOINTR: i64 = -513;
pub const ERESTARTNOHAND: i64 = -514;

/// True for an internal restart result (see [`ERESTARTSYS`]).
pub fn is_restart(r: i64) -> bool {
    (ERESTARTNOHAND..=ERESTARTSYS).contains(&r)
}

/// SIGKILL and SIGSTOP can be neither blocked nor caught.
pub(crate) const UNBLOCKABLE: u64 = (1 << (libc::SIGKILL - 1)) | (1 << (libc::SIGSTOP - 1));

pub(crate) fn bit(sig: u64) -> u64 {
    1u64 << (sig - 1)
}

/// The signal numbers in `set` (bit sig-1), ascending.
pub(crate) fn signals_in(set: u64) -> impl Iterator<Item = u64> {
    (1..=64u64).filter(move |&s| set & bit(s) != 0)
}

/// Signals whose default action is to ignore them, or to continue (SIGCONT: the kernel continues
/// the VMM process itself when it is sent).
pub fn default_ignored(sig: u64) -> bool {
    matches!(
        sig as i32,
        libc::SIGCHLD | libc::SIGURG | libc::SIGWINCH | libc::SIGCONT
    )
}

/// The stop signals: their default action stops the process until SIGCONT (in the LWK, the VMM
/// process, every vCPU with it: `host::stop_like_the_program`).
pub fn stop_signal(sig: u64) -> bool {
    matches!(
        sig as i32,
        libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU
    )
}

/// What happened when the LWK looked for a signal to deliver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Nothing deliverable (or only ignored signals).
    None,
    /// The vCPU's registers now enter a handler.
    Entered,
    /// A signal's default action ends the process.
    Stop,
}
