//! Signals in the LWK: dispositions, per-thread masks, pending sets, and delivery to the guest's
//! handlers through a Linux-compatible signal frame.
//!
//! Where signals come from: the guest's own kill/tkill/tgkill (raise, abort, pthread_kill), an
//! EPIPE from a write while SIGPIPE has a handler, and signals sent to the VMM process (alarm,
//! timers, another process, Ctrl-C) for which the guest installed a handler (`hostsig.rs` catches
//! them). Where they are delivered: on the vCPU's own thread, at the return of a system call or
//! when the vCPU was kicked out of KVM_RUN in user code (`machine.rs`).
//!
//! The frame is the one Linux builds on x86-64 (`struct rt_sigframe`), so glibc's restorer, a
//! handler that reads `ucontext_t`, and `siglongjmp` out of a handler all work:
//!
//! ```text
//!   original rsp ──▶ ┌─────────────────────────────┐ high
//!                    │ red zone (128 bytes)        │
//!                    ├─────────────────────────────┤
//!                    │ XSAVE area (64-aligned) +   │ fpstate: the vCPU's FPU/SSE/AVX state,
//!                    │ FP_XSTATE_MAGIC2            │ restored by rt_sigreturn
//!                    ├─────────────────────────────┤
//!                    │ siginfo (128)               │ ◀── rsi
//!                    │ ucontext (304): flags, link,│ ◀── rdx
//!                    │   stack, sigcontext (all    │
//!                    │   registers), sigmask       │
//!   handler rsp ──▶  │ pretcode = sa_restorer      │ (rsp + 8) % 16 == 0, as after a call
//!                    └─────────────────────────────┘ low
//! ```
//!
//! Handlers installed with SA_ONSTACK run on the thread's alternate stack (sigaltstack), whose
//! settings the frame's uc_stack carries and rt_sigreturn restores.
//!
//! The handler starts with the FPU in its initial state, as on Linux.
//!
//! CPU exceptions of the guest's code (#PF, #GP, #DE, #UD, #BP, #XM, #AC) are raised as SIGSEGV,
//! SIGFPE, SIGILL, SIGTRAP or SIGBUS when the guest handles that signal (`deliver.rs`); otherwise
//! the guest ends with a fault report, as it dies of the signal natively.
//!
//! Not done: real-time signals queue at most one instance each (like the standard ones).

use super::{lock, Ctx, ExitStatus, Kernel, Reply};
use kvm_bindings::kvm_regs;
use kvm_ioctls::VcpuFd;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;

/// A guest signal disposition: the kernel's `struct sigaction` (handler, flags, restorer, mask).
#[derive(Debug, Clone, Copy, Default)]
pub struct SigAction {
    pub raw: [u64; 4],
}

/// The signal state of the guest process (the per-thread part is [`ThreadSignals`], kept in the
/// kernel's thread table under its lock).
///
/// Lock order, as every path nests them (and as the VMM's fork holds them): the kernel's `threads`
/// lock, then `pending`, then `info`. `actions` is never held while taking another of these.
pub struct Signals {
    /// Dispositions, indexed by signal number (0 unused).
    pub(crate) actions: Mutex<[SigAction; 65]>,
    /// Signals sent to the process and not yet delivered (bit sig-1); per-thread ones are in
    /// [`ThreadSignals::pending`].
    pub(crate) pending: Mutex<u64>,
    /// Who sent the last instance of each signal (or the CPU exception that raised it).
    pub(crate) info: Mutex<[SigInfo; 65]>,
    /// False when no signal is pending anywhere: the per-call check is then one load.
    pub(crate) hint: AtomicBool,
    /// Per vCPU: the host thread (pthread_t) performing its delegated call, 0 when none; the
    /// signal pump kicks it to interrupt a blocking call.
    pub(crate) serving: Box<[AtomicU64]>,
}

impl Signals {
    /// Every disposition SIG_DFL, nothing pending, `vcpus` serving entries.
    pub fn new(vcpus: usize) -> Self {
        Signals {
            actions: Mutex::new([SigAction::default(); 65]),
            pending: Mutex::new(0),
            info: Mutex::new([SigInfo::default(); 65]),
            hint: AtomicBool::new(false),
            serving: (0..vcpus).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

/// One thread's signal state.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadSignals {
    /// Blocked signals (bit sig-1).
    pub mask: u64,
    /// Signals sent to this thread and not yet delivered.
    pub pending: u64,
    /// The mask to restore after the next handler (rt_sigsuspend's caller's mask).
    pub saved_mask: Option<u64>,
    /// The alternate signal stack (sigaltstack), for handlers installed with SA_ONSTACK.
    pub altstack: Option<AltStack>,
}

/// sa_flags bits (asm-generic/signal.h, x86).
const SA_ONSTACK: u64 = 0x0800_0000;
const SA_RESTORER: u64 = 0x0400_0000;
const SA_RESTART: u64 = 0x1000_0000;
const SA_NODEFER: u64 = 0x4000_0000;
const SA_RESETHAND: u64 = 0x8000_0000;

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

/// siginfo codes.
pub const SI_USER: i32 = 0;
pub const SI_TKILL: i32 = -6;
pub const SI_KERNEL: i32 = 0x80;

/// Frame layout (bytes).
const UC_OFF: u64 = 8;
const MCONTEXT_OFF: u64 = UC_OFF + 40;
const SIGMASK_OFF: u64 = MCONTEXT_OFF + 256;
const INFO_OFF: u64 = SIGMASK_OFF + 8;
const FRAME_SIZE: u64 = INFO_OFF + 128;
/// Position in `struct sigcontext` of each kvm_regs field (in u64 words), in Linux's order:
/// r8–r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags, segments, err, trapno, oldmask,
/// cr2, fpstate, reserved.
const SC_RIP: u64 = 16;
const SC_EFLAGS: u64 = 17;
const SC_SEGS: u64 = 18;
const SC_ERR: u64 = 19;
const SC_TRAPNO: u64 = 20;
const SC_OLDMASK: u64 = 21;
const SC_CR2: u64 = 22;
const SC_FPSTATE: u64 = 23;
const UC_FLAGS: u64 = 0x1 | 0x2 | 0x4; // UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS
const FP_XSTATE_MAGIC1: u32 = 0x4650_5853;
const FP_XSTATE_MAGIC2: u32 = 0x4650_5845;
/// Flags a handler may change through its ucontext (Linux's FIX_EFLAGS).
const FIX_EFLAGS: u64 = 0x40DD5;
/// DF, TF and RF are cleared for the handler.
const HANDLER_CLEARS: u64 = 0x400 | 0x100 | 0x10000;
/// SIGKILL and SIGSTOP can be neither blocked nor caught.
const UNBLOCKABLE: u64 = (1 << (libc::SIGKILL - 1)) | (1 << (libc::SIGSTOP - 1));

/// A thread's alternate signal stack (`stack_t`: ss_sp at 0, ss_flags at 8, ss_size at 16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AltStack {
    pub sp: u64,
    pub size: u64,
    /// SS_AUTODISARM: disarmed while a handler runs on it, re-armed by its rt_sigreturn.
    pub autodisarm: bool,
}

const SS_ONSTACK: u32 = 1;
const SS_DISABLE: u32 = 2;
const SS_AUTODISARM: u32 = 1 << 31;
/// The smallest alternate stack Linux accepts (MINSIGSTKSZ on x86-64).
const MIN_ALTSTACK: u64 = 2048;

impl AltStack {
    fn contains(&self, sp: u64) -> bool {
        sp > self.sp && sp - self.sp <= self.size
    }

    /// The `stack_t` describing `alt` as seen from stack pointer `sp` (uc_stack, sigaltstack's
    /// old value).
    fn stack_t(alt: Option<AltStack>, sp: Option<u64>) -> [u8; 24] {
        let mut ss = [0u8; 24];
        let (base, size, flags) = match alt {
            None => (0, 0, SS_DISABLE),
            Some(a) => {
                let on = sp.is_some_and(|sp| a.contains(sp));
                let flags = if on { SS_ONSTACK } else { 0 } | if a.autodisarm { SS_AUTODISARM } else { 0 };
                (a.sp, a.size, flags)
            }
        };
        ss[0..8].copy_from_slice(&base.to_le_bytes());
        ss[8..12].copy_from_slice(&flags.to_le_bytes());
        ss[16..24].copy_from_slice(&size.to_le_bytes());
        ss
    }

    /// Reads a `stack_t` the guest passed: `Ok(None)` disables, `Err` is the errno.
    fn parse(ss: &[u8; 24]) -> Result<Option<AltStack>, i32> {
        let u64_at = |o: usize| u64::from_le_bytes(ss[o..o + 8].try_into().unwrap_or([0; 8]));
        let flags = u32::from_le_bytes(ss[8..12].try_into().unwrap_or([0; 4]));
        // SS_ONSTACK is accepted and means nothing, as in Linux.
        match flags & !SS_AUTODISARM {
            SS_DISABLE => Ok(None),
            0 | SS_ONSTACK => {
                let size = u64_at(16);
                if size < MIN_ALTSTACK {
                    return Err(libc::ENOMEM);
                }
                Ok(Some(AltStack {
                    sp: u64_at(0),
                    size,
                    autodisarm: flags & SS_AUTODISARM != 0,
                }))
            }
            _ => Err(libc::EINVAL),
        }
    }
}

/// `xsave` with every component in its initial state: x87 control word 0x37f, MXCSR 0x1f80, all
/// registers zero, XSTATE_BV = 0 (XRSTOR then loads the init values of every component).
fn initial_fpu(xsave: &kvm_bindings::kvm_xsave) -> kvm_bindings::kvm_xsave {
    let mut x = kvm_bindings::kvm_xsave {
        region: xsave.region,
        ..Default::default()
    };
    // MXCSR_MASK (bytes 28..32) says what the CPU supports: kept as it is.
    let mxcsr_mask = x.region[7];
    // The legacy area (512 bytes) and the XSAVE header (64) are the first 144 words.
    for w in x.region.iter_mut().take(144) {
        *w = 0;
    }
    x.region[0] = 0x037f; // FCW (low half of the first word); FSW = 0
    x.region[6] = 0x1f80; // MXCSR at byte 24
    x.region[7] = mxcsr_mask;
    x
}

/// Who sent a pending signal, or the CPU exception that raised it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SigInfo {
    pub code: i32,
    pub pid: i32,
    pub uid: u32,
    pub trap: Option<Trap>,
}

/// A CPU exception raised as a signal: what the frame's siginfo (si_addr) and sigcontext
/// (trapno, err, cr2) carry, as Linux fills them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trap {
    pub vector: u64,
    pub error: u64,
    /// si_addr: the faulting address (#PF), the instruction (#DE, #UD, #XM), 0 otherwise.
    pub addr: u64,
    pub cr2: u64,
}

fn bit(sig: u64) -> u64 {
    1u64 << (sig - 1)
}

/// The signal numbers in `set` (bit sig-1), ascending.
fn signals_in(set: u64) -> impl Iterator<Item = u64> {
    (1..=64u64).filter(move |&s| set & bit(s) != 0)
}

/// Signals whose default action is to ignore them (or to stop/continue, which one process in a
/// VM cannot do meaningfully).
pub fn default_ignored(sig: u64) -> bool {
    matches!(
        sig as i32,
        libc::SIGCHLD
            | libc::SIGURG
            | libc::SIGWINCH
            | libc::SIGCONT
            | libc::SIGTSTP
            | libc::SIGTTIN
            | libc::SIGTTOU
    )
}

/// The general registers in `struct sigcontext` order.
fn sc_regs(r: &kvm_regs) -> [u64; 16] {
    [
        r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rdi, r.rsi, r.rbp, r.rbx, r.rdx, r.rax,
        r.rcx, r.rsp,
    ]
}

fn set_sc_regs(r: &mut kvm_regs, v: &[u64; 16]) {
    [
        r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rdi, r.rsi, r.rbp, r.rbx, r.rdx, r.rax,
        r.rcx, r.rsp,
    ] = *v;
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

/// The internal result of call `nr` interrupted by a signal: ERESTARTNOHAND for the calls Linux
/// never restarts after a handler (sleeps, waits for events or signals; signal(7)), ERESTARTSYS
/// (restarted under SA_RESTART) for the others.
#[allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case
fn interrupted_code(nr: u64) -> Reply {
    use libc::*;
    let never_restarted = [
        SYS_select,
        SYS_pselect6,
        SYS_poll,
        SYS_ppoll,
        SYS_epoll_wait,
        SYS_epoll_pwait,
        441, // epoll_pwait2
        SYS_nanosleep,
        SYS_clock_nanosleep,
        SYS_pause,
        SYS_rt_sigsuspend,
        SYS_rt_sigtimedwait,
    ];
    Reply::Ret(if never_restarted.contains(&(nr as i64)) {
        ERESTARTNOHAND
    } else {
        ERESTARTSYS
    })
}

/// Turns an internal restart result in `regs.rax` into what the guest sees after call `nr`: with
/// a handler (its sa_flags) EINTR, or the call again for ERESTARTSYS under SA_RESTART (and for
/// ERESTARTNOINTR); without one, the call again. "Again" is Linux's way: rax = the call number and
/// rip back over the 2-byte `syscall` (or to the start of a rewritten site's thunk:
/// `rewrite::restart_at`), so the guest issues it anew with its argument registers, which the
/// stub does not touch.
fn after_interrupt(regs: &mut kvm_regs, nr: u64, handler_flags: Option<u64>) {
    let r = regs.rax as i64;
    if !is_restart(r) {
        return;
    }
    let again = match handler_flags {
        None => true,
        Some(flags) => r == ERESTARTNOINTR || (r == ERESTARTSYS && flags & SA_RESTART != 0),
    };
    if again {
        regs.rax = nr;
        regs.rip = crate::rewrite::restart_at(regs.rip);
        regs.rcx = regs.rip;
    } else {
        regs.rax = -(libc::EINTR as i64) as u64;
    }
}

impl Kernel {
    pub(super) fn sigaction(&self, a: [u64; 6]) -> Reply {
        let sig = a[0];
        if sig == 0 || sig > 64 || a[3] != 8 {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        if a[1] != 0 && (sig == libc::SIGKILL as u64 || sig == libc::SIGSTOP as u64) {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        if (a[1] != 0 && !self.mem.in_app(a[1], 32)) || (a[2] != 0 && !self.mem.in_app(a[2], 32)) {
            return Reply::Ret(-(libc::EFAULT as i64));
        }
        let mut acts = lock(&self.signals.actions);
        let slot = &mut acts[sig as usize];
        if a[2] != 0 {
            let mut b = [0u8; 32];
            for (k, w) in slot.raw.iter().enumerate() {
                b[8 * k..8 * k + 8].copy_from_slice(&w.to_le_bytes());
            }
            self.mem.write(a[2], &b);
        }
        if a[1] != 0 {
            for k in 0..4 {
                slot.raw[k] = self.mem.read_u64(a[1] + 8 * k as u64);
            }
            // Signals sent to the VMM process reach the guest only when it has a handler.
            crate::hostsig::follow(sig as i32, slot.raw[0], slot.raw[1] & SA_RESTART != 0);
        }
        Reply::Ret(0)
    }

    /// At start-up: the guest inherits the signals the VMM was started with ignored (as a program
    /// does across exec), and the VMM catches those whose default action ends the guest
    /// (`hostsig.rs`), so that the guest's mask applies and the run ends by them in order.
    pub fn adopt_host_dispositions(&self) {
        let mut acts = lock(&self.signals.actions);
        for (sig, act) in acts.iter_mut().enumerate().skip(1) {
            if act.raw[0] != libc::SIG_DFL as u64 {
                continue;
            }
            if crate::hostsig::inherited_ignore(sig as i32) {
                act.raw[0] = libc::SIG_IGN as u64;
            } else {
                crate::hostsig::follow(sig as i32, libc::SIG_DFL as u64, false);
            }
        }
    }

    pub(super) fn sigprocmask(&self, cpu: usize, a: [u64; 6]) -> Reply {
        if a[3] != 8 {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        if (a[2] != 0 && !self.mem.in_app(a[2], 8)) || (a[1] != 0 && !self.mem.in_app(a[1], 8)) {
            return Reply::Ret(-(libc::EFAULT as i64));
        }
        let mut threads = lock(&self.threads);
        let Some(t) = threads.get_mut(cpu) else {
            return Reply::Ret(-(libc::ESRCH as i64));
        };
        if a[2] != 0 {
            self.mem.write_u64(a[2], t.sig.mask);
        }
        if a[1] != 0 {
            let set = self.mem.read_u64(a[1]);
            t.sig.mask = match a[0] as i32 {
                libc::SIG_BLOCK => t.sig.mask | set,
                libc::SIG_UNBLOCK => t.sig.mask & !set,
                libc::SIG_SETMASK => set,
                _ => return Reply::Ret(-(libc::EINVAL as i64)),
            } & !UNBLOCKABLE;
        }
        Reply::Ret(0)
    }

    /// rt_sigpending: the pending signals of the thread and the process.
    pub(super) fn sigpending(&self, cpu: usize, a: [u64; 6]) -> Reply {
        if a[1] != 8 {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        if !self.mem.in_app(a[0], 8) {
            return Reply::Ret(-(libc::EFAULT as i64));
        }
        let process = *lock(&self.signals.pending);
        let own = lock(&self.threads).get(cpu).map_or(0, |t| t.sig.pending);
        self.mem.write_u64(a[0], own | process);
        Reply::Ret(0)
    }

    /// rt_sigsuspend and pause, on the vCPU thread: (with the mask given) wait until a signal is
    /// deliverable, then return EINTR; the handler runs on the way back and the caller's mask is
    /// restored after it.
    pub(super) fn sigsuspend(&self, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        if nr == libc::SYS_rt_sigsuspend as u64 {
            if a[1] != 8 {
                return Reply::Ret(-(libc::EINVAL as i64));
            }
            if !self.mem.in_app(a[0], 8) {
                return Reply::Ret(-(libc::EFAULT as i64));
            }
            self.install_call_mask(cpu, self.mem.read_u64(a[0]));
        }
        while !self.deliverable(cpu) && lock(&self.exit).is_none() {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        // EINTR after a handler; restarted (with the mask again) when the signal is ignored.
        Reply::Ret(ERESTARTNOHAND)
    }

    /// The calling thread's blocked signals.
    pub(crate) fn sigmask_of(&self, cpu: usize) -> u64 {
        lock(&self.threads).get(cpu).map_or(0, |t| t.sig.mask)
    }

    /// kill, tkill, tgkill.
    pub(super) fn kill(&self, ctx: Ctx<'_>, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        let (target, sig) = match nr as i64 {
            libc::SYS_kill | libc::SYS_tkill => (a[0] as i32, a[1]),
            _ => (a[1] as i32, a[2]),
        };
        let process = nr as i64 == libc::SYS_kill;
        let to_self = if process {
            target == self.pid() || target == 0
        } else {
            (nr as i64 == libc::SYS_tkill || a[0] as i32 == self.pid()) && self.is_own_tid(target)
        };
        if !to_self {
            if target <= 0 && process {
                return Reply::Ret(-(libc::EPERM as i64));
            }
            return Reply::Ret(crate::sys::raw_syscall(nr, a));
        }
        if sig == 0 {
            return Reply::Ret(0);
        }
        if sig > 64 {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        if sig == libc::SIGKILL as u64 {
            // Not catchable: the process ends at once.
            return match ctx {
                Ctx::Proxy => Reply::NeedVcpu,
                Ctx::Vcpu(_) => {
                    lock(&self.exit).get_or_insert(ExitStatus::Signal(sig as i32));
                    Reply::Stop
                }
            };
        }
        let info = SigInfo {
            code: if process { SI_USER } else { SI_TKILL },
            pid: self.pid(),
            uid: crate::sys::uid(),
            trap: None,
        };
        let thread = if process {
            None
        } else {
            lock(&self.threads)
                .iter()
                .position(|t| t.alive && t.tid == target)
        };
        self.queue_signal(thread.or((!process).then_some(cpu)), sig, info);
        if !self.deliverable(cpu) {
            // Another thread must take it: the signal pump kicks it.
            crate::hostsig::nudge();
        }
        Reply::Ret(0)
    }

    /// Makes `sig` pending for vCPU `thread`, or for the process when None.
    pub fn queue_signal(&self, thread: Option<usize>, sig: u64, info: SigInfo) {
        if sig == 0 || sig > 64 {
            return;
        }
        lock(&self.signals.info)[sig as usize] = info;
        match thread {
            Some(id) => {
                if let Some(t) = lock(&self.threads).get_mut(id) {
                    t.sig.pending |= bit(sig);
                }
            }
            None => *lock(&self.signals.pending) |= bit(sig),
        }
        // After the pending bit: take_signal clears the hint only under the locks, when it sees
        // nothing pending, so a signal queued concurrently keeps it set.
        self.signals
            .hint
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// True when vCPU `cpu` has a pending signal it does not block.
    pub fn deliverable(&self, cpu: usize) -> bool {
        if !self.signals.hint.load(std::sync::atomic::Ordering::Acquire) {
            return false;
        }
        let process = *lock(&self.signals.pending);
        lock(&self.threads)
            .get(cpu)
            .is_some_and(|t| t.alive && (t.sig.pending | process) & !t.sig.mask != 0)
    }

    /// A pending signal that a live thread does not block and whose action is the default one
    /// that ends the process (the signal pump's safety net, see `machine.rs`).
    pub fn fatal_pending(&self) -> Option<i32> {
        let acts: Vec<u64> = lock(&self.signals.actions).iter().map(|a| a.raw[0]).collect();
        let process = *lock(&self.signals.pending);
        let threads = lock(&self.threads);
        let deliverable = threads
            .iter()
            .filter(|t| t.alive)
            .fold(0, |all, t| all | ((t.sig.pending | process) & !t.sig.mask));
        signals_in(deliverable)
            .find(|&sig| acts[sig as usize] == libc::SIG_DFL as u64 && !default_ignored(sig))
            .map(|sig| sig as i32)
    }

    /// The vCPU that should take a process-directed signal now: the first live thread that does
    /// not block one of the pending signals.
    pub fn signal_target(&self) -> Option<usize> {
        let process = *lock(&self.signals.pending);
        lock(&self.threads)
            .iter()
            .position(|t| t.alive && (t.sig.pending | process) & !t.sig.mask != 0)
    }

    /// Dequeues the lowest unblocked pending signal of vCPU `cpu` (thread-directed first).
    fn take_signal(&self, cpu: usize) -> Option<(u64, SigInfo)> {
        self.take_signal_in(cpu, None)
    }

    /// Dequeues the lowest pending signal of vCPU `cpu` in `wanted` (None: those it does not
    /// block), thread-directed first.
    fn take_signal_in(&self, cpu: usize, wanted: Option<u64>) -> Option<(u64, SigInfo)> {
        let mut threads = lock(&self.threads);
        let t = threads.get_mut(cpu)?;
        let allowed = wanted.unwrap_or(!t.sig.mask);
        let mut process = lock(&self.signals.pending);
        let (set, own) = if t.sig.pending & allowed != 0 {
            (t.sig.pending & allowed, true)
        } else if *process & allowed != 0 {
            (*process & allowed, false)
        } else {
            return None;
        };
        let sig = set.trailing_zeros() as u64 + 1;
        if own {
            t.sig.pending &= !bit(sig);
        } else {
            *process &= !bit(sig);
        }
        if *process == 0 && t.sig.pending == 0 {
            let others = threads.iter().any(|o| o.sig.pending != 0);
            if !others {
                self.signals
                    .hint
                    .store(false, std::sync::atomic::Ordering::Release);
            }
        }
        Some((sig, lock(&self.signals.info)[sig as usize]))
    }

    /// rt_sigtimedwait(set, info, timeout, 8), on the vCPU thread: takes a pending signal of `set`
    /// (blocked ones included, the usual case) and returns its number with its siginfo; EAGAIN
    /// when the timeout passes first, EINTR when a handled signal outside `set` arrives.
    pub(super) fn sigtimedwait(&self, cpu: usize, a: [u64; 6]) -> Reply {
        if a[3] != 8 {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        if !self.mem.in_app(a[0], 8) || (a[1] != 0 && !self.mem.in_app(a[1], 128)) {
            return Reply::Ret(-(libc::EFAULT as i64));
        }
        let deadline = if a[2] != 0 {
            if !self.mem.in_app(a[2], 16) {
                return Reply::Ret(-(libc::EFAULT as i64));
            }
            let (sec, nsec) = (self.mem.read_u64(a[2]) as i64, self.mem.read_u64(a[2] + 8) as i64);
            if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
                return Reply::Ret(-(libc::EINVAL as i64));
            }
            let d = std::time::Duration::new(sec as u64, nsec as u32);
            Some(std::time::Instant::now().checked_add(d))
        } else {
            None
        };
        let set = self.mem.read_u64(a[0]) & !UNBLOCKABLE;
        loop {
            if let Some((sig, info)) = self.take_signal_in(cpu, Some(set)) {
                if a[1] != 0 {
                    let mut si = [0u8; 128];
                    si[0..4].copy_from_slice(&(sig as i32).to_le_bytes());
                    si[8..12].copy_from_slice(&info.code.to_le_bytes());
                    si[16..20].copy_from_slice(&info.pid.to_le_bytes());
                    si[20..24].copy_from_slice(&info.uid.to_le_bytes());
                    self.mem.write(a[1], &si);
                }
                return Reply::Ret(sig as i64);
            }
            if self.deliverable(cpu) || lock(&self.exit).is_some() {
                return Reply::Ret(-(libc::EINTR as i64));
            }
            // A timeout too large for an Instant never passes.
            if deadline.is_some_and(|d| d.is_some_and(|d| std::time::Instant::now() >= d)) {
                return Reply::Ret(-(libc::EAGAIN as i64));
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    /// Delivers the next deliverable signal of vCPU `cpu`, whose user-mode registers are `regs`
    /// (a system call already completed in them): pushes a signal frame and points the vCPU at the
    /// handler, ends the process for a fatal default action, or drops ignored signals. `call` is
    /// the number of the system call whose result is in `regs.rax` (None when the guest was
    /// interrupted in its own code): an internal restart result there becomes EINTR or the call
    /// again, as the handler's SA_RESTART says.
    pub fn deliver(&self, cpu: usize, vcpu: &VcpuFd, regs: &kvm_regs, call: Option<u64>) -> Delivery {
        while let Some((sig, info)) = self.take_signal(cpu) {
            let act = lock(&self.signals.actions)[sig as usize];
            let handler = act.raw[0];
            if handler == libc::SIG_IGN as u64 || (handler == libc::SIG_DFL as u64 && default_ignored(sig)) {
                continue;
            }
            if handler == libc::SIG_DFL as u64 {
                lock(&self.exit).get_or_insert(ExitStatus::Signal(sig as i32));
                return Delivery::Stop;
            }
            let mut regs = *regs;
            if let Some(nr) = call {
                after_interrupt(&mut regs, nr, Some(act.raw[1]));
            }
            return match self.push_frame(cpu, vcpu, &regs, sig, info, act.raw) {
                Ok(()) => Delivery::Entered,
                Err(why) => {
                    self.end_with_sigsegv(format!("signal {sig}: cannot enter the guest's handler ({why})"));
                    Delivery::Stop
                }
            };
        }
        Delivery::None
    }

    /// A system call of vCPU `cpu` returns (`regs.rax` its result) without entering a handler:
    /// an internal restart result makes the guest issue call `nr` again, and a mask the call
    /// installed (rt_sigsuspend, pselect6…) is taken back, as Linux does.
    pub fn returned_without_handler(&self, cpu: usize, regs: &mut kvm_regs, nr: u64) {
        after_interrupt(regs, nr, None);
        self.restore_call_mask(cpu);
    }

    /// Puts back the mask a call replaced for its duration (none: nothing to do).
    fn restore_call_mask(&self, cpu: usize) {
        if let Some(t) = lock(&self.threads).get_mut(cpu) {
            if let Some(m) = t.sig.saved_mask.take() {
                t.sig.mask = m;
            }
        }
    }

    /// Installs `mask` as vCPU `cpu`'s mask for the duration of a call (rt_sigsuspend, pselect6,
    /// ppoll, epoll_pwait); the handler's frame, or the call's return, restores the old one.
    fn install_call_mask(&self, cpu: usize, mask: u64) {
        if let Some(t) = lock(&self.threads).get_mut(cpu) {
            if t.sig.saved_mask.is_none() {
                t.sig.saved_mask = Some(t.sig.mask);
            }
            t.sig.mask = mask & !UNBLOCKABLE;
        }
    }

    /// The signal mask delegated call `nr` installs while it waits (pselect6, ppoll, epoll_pwait,
    /// epoll_pwait2), and its arguments without it: the LWK applies the guest's mask itself, and
    /// the host call runs under the serving thread's own mask, which lets the VMM's kick through.
    /// `Err` is the errno Linux returns for a bad mask argument.
    #[allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case
    fn call_mask(&self, nr: u64, a: &[u64; 6]) -> Result<Option<(u64, [u64; 6])>, i64> {
        use libc::*;
        const SYS_EPOLL_PWAIT2: i64 = 441;
        let (ptr_arg, size) = match nr as i64 {
            SYS_pselect6 => {
                // The sixth argument points at { const sigset_t *ss; size_t ss_len; }.
                if a[5] == 0 {
                    return Ok(None);
                }
                if !self.mem.in_app(a[5], 16) {
                    return Err(-(EFAULT as i64));
                }
                let (ss, len) = (self.mem.read_u64(a[5]), self.mem.read_u64(a[5] + 8));
                if ss == 0 {
                    return Ok(None);
                }
                let mut b = *a;
                b[5] = 0;
                return self.read_mask(ss, len).map(|m| Some((m, b)));
            }
            SYS_ppoll => (3, a[4]),
            SYS_epoll_pwait | SYS_EPOLL_PWAIT2 => (4, a[5]),
            _ => return Ok(None),
        };
        if a[ptr_arg] == 0 {
            return Ok(None);
        }
        let mut b = *a;
        b[ptr_arg] = 0;
        self.read_mask(a[ptr_arg], size).map(|m| Some((m, b)))
    }

    fn read_mask(&self, ptr: u64, size: u64) -> Result<u64, i64> {
        if size != 8 {
            return Err(-(libc::EINVAL as i64));
        }
        if !self.mem.in_app(ptr, 8) {
            return Err(-(libc::EFAULT as i64));
        }
        Ok(self.mem.read_u64(ptr))
    }

    /// Performs delegated call `nr` for vCPU `cpu` so that a signal can interrupt it, as on
    /// Linux: the serving host thread is registered for the signal pump's kicks (SIGUSR2, which
    /// makes a blocking host call return EINTR), and a mask the call installs (pselect6, ppoll,
    /// epoll_pwait) becomes the thread's mask meanwhile. When the call is interrupted and the
    /// thread has a deliverable signal, the result is Linux's internal restart code (EINTR or the
    /// call again, decided at delivery); when nothing is deliverable (a kick meant for another
    /// call, or a signal the guest blocks) the call goes on, as Linux would not have stopped it.
    pub(super) fn delegate_interruptibly(&self, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        let (masked, args) = match self.call_mask(nr, &a) {
            Ok(Some((mask, args))) => {
                self.install_call_mask(cpu, mask);
                (true, args)
            }
            Ok(None) => (false, a),
            Err(e) => return Reply::Ret(e),
        };
        let slot = self.signals.serving.get(cpu);
        if let Some(s) = slot {
            s.store(crate::sys::pthread_self(), std::sync::atomic::Ordering::Release);
        }
        let blocking = masked || super::may_block(nr, &a);
        let r = loop {
            if blocking && self.deliverable(cpu) {
                // Pending already. A signal the call's own mask unblocks (make's SIGCHLD before
                // pselect6) ends it at once, as on Linux; otherwise the signal came before the
                // call, where Linux would have run the handler first: run it, then the call.
                break if masked {
                    interrupted_code(nr)
                } else {
                    Reply::Ret(ERESTARTNOINTR)
                };
            }
            let r = self.delegate(nr, args);
            if r != Reply::Ret(-(libc::EINTR as i64)) {
                break r;
            }
            if self.deliverable(cpu) {
                break interrupted_code(nr);
            }
            if lock(&self.exit).is_some() {
                break r;
            }
        };
        if let Some(s) = slot {
            s.store(0, std::sync::atomic::Ordering::Release);
        }
        if masked && !matches!(r, Reply::Ret(v) if is_restart(v)) {
            // Completed: the caller's mask is back before anything is delivered.
            self.restore_call_mask(cpu);
        }
        r
    }

    /// The host thread performing vCPU `cpu`'s delegated call right now, if any.
    pub fn serving_thread(&self, cpu: usize) -> Option<u64> {
        self.signals
            .serving
            .get(cpu)
            .map(|s| s.load(std::sync::atomic::Ordering::Acquire))
            .filter(|&t| t != 0)
    }

    /// A CPU exception in vCPU `cpu`'s own code, raised as `sig`: enters the guest's handler with
    /// `regs` (the faulting context) saved in the frame. Like Linux's forced fault signals, a
    /// blocked, ignored or default-action signal is not deliverable: the caller then ends the
    /// process with its fault report.
    pub fn deliver_fault(
        &self,
        cpu: usize,
        vcpu: &VcpuFd,
        regs: &kvm_regs,
        sig: u64,
        info: SigInfo,
    ) -> Delivery {
        let act = lock(&self.signals.actions)[sig as usize];
        let handler = act.raw[0];
        let blocked = lock(&self.threads)
            .get(cpu)
            .is_some_and(|t| t.sig.mask & bit(sig) != 0);
        if blocked || handler == libc::SIG_IGN as u64 || handler == libc::SIG_DFL as u64 {
            return Delivery::None;
        }
        match self.push_frame(cpu, vcpu, regs, sig, info, act.raw) {
            Ok(()) => Delivery::Entered,
            // No room for a frame (an overflowed stack, without an alternate one): the fault
            // report says where the guest died.
            Err(_) => Delivery::None,
        }
    }

    fn push_frame(
        &self,
        cpu: usize,
        vcpu: &VcpuFd,
        regs: &kvm_regs,
        sig: u64,
        info: SigInfo,
        act: [u64; 4],
    ) -> Result<(), String> {
        let [handler, flags, restorer, mask] = act;
        if flags & SA_RESTORER == 0 || restorer == 0 {
            return Err("the handler has no SA_RESTORER (glibc and musl always set one)".into());
        }
        let xsave = vcpu.get_xsave().map_err(|e| format!("KVM_GET_XSAVE: {e}"))?;
        let xbytes: Vec<u8> = xsave.region.iter().flat_map(|w| w.to_le_bytes()).collect();
        let xlen = crate::sys::xsave_size().min(xbytes.len());
        let mut fp = xbytes[..xlen].to_vec();
        // The software-reserved bytes of the FXSAVE area tell sigreturn (and glibc) the layout.
        fp[464..468].copy_from_slice(&FP_XSTATE_MAGIC1.to_le_bytes());
        fp[468..472].copy_from_slice(&(xlen as u32 + 4).to_le_bytes());
        fp[472..480].copy_from_slice(&crate::sys::xcr0().to_le_bytes());
        fp[480..484].copy_from_slice(&(xlen as u32).to_le_bytes());
        fp.extend_from_slice(&FP_XSTATE_MAGIC2.to_le_bytes());

        // SA_ONSTACK with an armed alternate stack the thread is not already on: the frame goes
        // at its top (no red zone there); otherwise below the interrupted stack's red zone.
        let alt = lock(&self.threads).get(cpu).and_then(|t| t.sig.altstack);
        let switch = alt.filter(|a| flags & SA_ONSTACK != 0 && !a.contains(regs.rsp));
        let top = match switch {
            Some(a) => a.sp.wrapping_add(a.size),
            None => regs.rsp.wrapping_sub(128),
        };
        let fp_addr = (top.wrapping_sub(fp.len() as u64)) & !63;
        let frame = ((fp_addr.wrapping_sub(FRAME_SIZE)) & !15).wrapping_sub(8);
        if !self.mem.in_app(frame, top.wrapping_sub(frame)) {
            return Err(format!("the stack at {:#x} has no room for a signal frame", top));
        }
        let oldmask = {
            let mut t = lock(&self.threads);
            let t = t.get_mut(cpu);
            t.map_or(0, |t| t.sig.saved_mask.take().unwrap_or(t.sig.mask))
        };
        let mut f = vec![0u8; FRAME_SIZE as usize];
        let put = |f: &mut Vec<u8>, off: u64, v: u64| {
            f[off as usize..off as usize + 8].copy_from_slice(&v.to_le_bytes())
        };
        put(&mut f, 0, restorer);
        put(&mut f, UC_OFF, UC_FLAGS);
        // uc_stack: the alternate stack as it was, which rt_sigreturn restores (re-arming an
        // SS_AUTODISARM one).
        let uc_stack = AltStack::stack_t(alt, Some(regs.rsp));
        f[(UC_OFF + 16) as usize..(UC_OFF + 40) as usize].copy_from_slice(&uc_stack);
        for (k, v) in sc_regs(regs).iter().enumerate() {
            put(&mut f, MCONTEXT_OFF + 8 * k as u64, *v);
        }
        put(&mut f, MCONTEXT_OFF + 8 * SC_RIP, regs.rip);
        put(&mut f, MCONTEXT_OFF + 8 * SC_EFLAGS, regs.rflags);
        // cs, gs, fs, ss as four u16.
        let segs = u64::from(crate::stub::sel::USER_CS) | (u64::from(crate::stub::sel::USER_DS) << 48);
        put(&mut f, MCONTEXT_OFF + 8 * SC_SEGS, segs);
        put(&mut f, MCONTEXT_OFF + 8 * SC_OLDMASK, oldmask);
        put(&mut f, MCONTEXT_OFF + 8 * SC_FPSTATE, fp_addr);
        put(&mut f, SIGMASK_OFF, oldmask);
        f[INFO_OFF as usize..][..4].copy_from_slice(&(sig as i32).to_le_bytes());
        f[INFO_OFF as usize + 8..][..4].copy_from_slice(&info.code.to_le_bytes());
        match info.trap {
            Some(t) => {
                put(&mut f, INFO_OFF + 16, t.addr);
                put(&mut f, MCONTEXT_OFF + 8 * SC_ERR, t.error);
                put(&mut f, MCONTEXT_OFF + 8 * SC_TRAPNO, t.vector);
                put(&mut f, MCONTEXT_OFF + 8 * SC_CR2, t.cr2);
            }
            None => {
                f[INFO_OFF as usize + 16..][..4].copy_from_slice(&info.pid.to_le_bytes());
                f[INFO_OFF as usize + 20..][..4].copy_from_slice(&info.uid.to_le_bytes());
            }
        }
        self.mem.write(fp_addr, &fp);
        self.mem.write(frame, &f);

        // The handler starts with the FPU in its initial state, as on Linux (fpu__clear_user_states):
        // the interrupted code's state is in the frame, for rt_sigreturn.
        crate::vcpu::set_xsave(vcpu, &initial_fpu(&xsave)).map_err(|e| format!("KVM_SET_XSAVE: {e}"))?;
        let mut new = *regs;
        new.rip = handler;
        new.rsp = frame;
        new.rdi = sig;
        new.rsi = frame + INFO_OFF;
        new.rdx = frame + UC_OFF;
        new.rax = 0;
        new.rflags &= !HANDLER_CLEARS;
        vcpu.set_regs(&new).map_err(|e| format!("KVM_SET_REGS: {e}"))?;

        let mut block = oldmask | mask;
        if flags & SA_NODEFER == 0 {
            block |= bit(sig);
        }
        if let Some(t) = lock(&self.threads).get_mut(cpu) {
            t.sig.mask = block & !UNBLOCKABLE;
            if switch.is_some_and(|a| a.autodisarm) {
                t.sig.altstack = None;
            }
        }
        if flags & SA_RESETHAND != 0 {
            lock(&self.signals.actions)[sig as usize].raw = [libc::SIG_DFL as u64, 0, 0, 0];
            crate::hostsig::follow(sig as i32, libc::SIG_DFL as u64, false);
        }
        Ok(())
    }

    /// sigaltstack(ss, old_ss) for vCPU `cpu`'s thread, judged from the stack pointer at the call
    /// (the stub saved it in the vCPU's slot): SS_ONSTACK in the old value, EPERM for a change
    /// while running on the alternate stack.
    pub(super) fn sigaltstack(&self, cpu: usize, a: [u64; 6]) -> Reply {
        let (new, old) = (a[0], a[1]);
        for p in [new, old] {
            if p != 0 && !self.mem.in_app(p, 24) {
                return Reply::Ret(-(libc::EFAULT as i64));
            }
        }
        let sp = self.caller_rsp(cpu);
        let current = lock(&self.threads).get(cpu).and_then(|t| t.sig.altstack);
        if new != 0 && current.is_some_and(|c| c.contains(sp)) {
            return Reply::Ret(-(libc::EPERM as i64));
        }
        let parsed = if new != 0 {
            let mut ss = [0u8; 24];
            self.mem.read(new, &mut ss);
            match AltStack::parse(&ss) {
                Ok(alt) => Some(alt),
                Err(e) => return Reply::Ret(-(e as i64)),
            }
        } else {
            None
        };
        if old != 0 {
            self.mem.write(old, &AltStack::stack_t(current, Some(sp)));
        }
        if let Some(alt) = parsed {
            if let Some(t) = lock(&self.threads).get_mut(cpu) {
                t.sig.altstack = alt;
            }
        }
        Reply::Ret(0)
    }

    /// rt_sigreturn from vCPU `cpu`: `rsp` at the call points at the ucontext of the frame (the
    /// handler's `ret` popped the restorer's address). Restores the registers, the FPU state and
    /// the signal mask.
    pub(super) fn sigreturn(&self, cpu: usize, vcpu: &VcpuFd, rsp: u64) -> Reply {
        let uc = rsp;
        if !self.mem.in_app(uc, FRAME_SIZE - UC_OFF) {
            return self.bad_sigreturn(format!("its frame at {uc:#x} is outside guest memory"));
        }
        let Ok(mut regs) = vcpu.get_regs() else {
            return self.bad_sigreturn("KVM_GET_REGS failed".into());
        };
        let mc = uc + (MCONTEXT_OFF - UC_OFF);
        let word = |k: u64| self.mem.read_u64(mc + 8 * k);
        let mut gpr = [0u64; 16];
        for (k, v) in gpr.iter_mut().enumerate() {
            *v = word(k as u64);
        }
        set_sc_regs(&mut regs, &gpr);
        regs.rip = word(SC_RIP);
        regs.rflags = (regs.rflags & !FIX_EFLAGS) | (word(SC_EFLAGS) & FIX_EFLAGS);
        let fp = word(SC_FPSTATE);
        if fp != 0 {
            if let Err(why) = self.restore_fpu(vcpu, fp) {
                return self.bad_sigreturn(why);
            }
        }
        let mask = self.mem.read_u64(uc + (SIGMASK_OFF - UC_OFF));
        let mut ss = [0u8; 24];
        self.mem.read(uc + 16, &mut ss);
        if let Some(t) = lock(&self.threads).get_mut(cpu) {
            t.sig.mask = mask & !UNBLOCKABLE;
            // Like Linux's restore_altstack: a bad uc_stack is ignored.
            if let Ok(alt) = AltStack::parse(&ss) {
                t.sig.altstack = alt;
            }
        }
        match vcpu.set_regs(&regs) {
            Ok(()) => Reply::Resumed,
            Err(e) => self.bad_sigreturn(format!("KVM_SET_REGS: {e}")),
        }
    }

    fn restore_fpu(&self, vcpu: &VcpuFd, fp: u64) -> Result<(), String> {
        let xlen = crate::sys::xsave_size().min(4096);
        if !self.mem.in_app(fp, xlen as u64 + 4) {
            return Err(format!("its FPU state at {fp:#x} is outside guest memory"));
        }
        let mut bytes = vec![0u8; xlen];
        self.mem.read(fp, &mut bytes);
        if bytes[464..468] != FP_XSTATE_MAGIC1.to_le_bytes() {
            return Err("its FPU state lacks FP_XSTATE_MAGIC1".into());
        }
        let mut xsave = vcpu.get_xsave().map_err(|e| format!("KVM_GET_XSAVE: {e}"))?;
        for (k, w) in xsave.region.iter_mut().enumerate().take(xlen / 4) {
            *w = u32::from_le_bytes([bytes[4 * k], bytes[4 * k + 1], bytes[4 * k + 2], bytes[4 * k + 3]]);
        }
        crate::vcpu::set_xsave(vcpu, &xsave).map_err(|e| format!("KVM_SET_XSAVE: {e}"))
    }

    fn bad_sigreturn(&self, why: String) -> Reply {
        self.end_with_sigsegv(format!("rt_sigreturn: {why}"));
        Reply::Stop
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack_t(sp: u64, flags: u32, size: u64) -> [u8; 24] {
        let mut ss = [0u8; 24];
        ss[0..8].copy_from_slice(&sp.to_le_bytes());
        ss[8..12].copy_from_slice(&flags.to_le_bytes());
        ss[16..24].copy_from_slice(&size.to_le_bytes());
        ss
    }

    #[test]
    fn interrupted_calls_return_eintr_or_run_again_as_linux_decides() {
        let at = |rax: i64| kvm_regs {
            rax: rax as u64,
            rip: 0x40_1002,
            ..Default::default()
        };
        let eintr = -(libc::EINTR as i64) as u64;
        // A handler without SA_RESTART: EINTR; with it, ERESTARTSYS runs the call again (rax = its
        // number, rip on the `syscall`), ERESTARTNOHAND still gives EINTR.
        let mut r = at(ERESTARTSYS);
        after_interrupt(&mut r, 0, Some(0));
        assert_eq!((r.rax, r.rip), (eintr, 0x40_1002));
        let mut r = at(ERESTARTSYS);
        after_interrupt(&mut r, 0, Some(SA_RESTART));
        assert_eq!((r.rax, r.rip), (0, 0x40_1000));
        let mut r = at(ERESTARTNOHAND);
        after_interrupt(&mut r, 270, Some(SA_RESTART));
        assert_eq!(r.rax, eintr);
        // No handler: the call again, whatever the code; a real result is left alone.
        let mut r = at(ERESTARTNOHAND);
        after_interrupt(&mut r, 270, None);
        assert_eq!((r.rax, r.rip), (270, 0x40_1000));
        let mut r = at(-4);
        after_interrupt(&mut r, 0, None);
        assert_eq!((r.rax, r.rip), (-4i64 as u64, 0x40_1002));
        // A return into a rewritten site's thunk goes back to the thunk's start.
        assert_eq!(
            crate::rewrite::restart_at(0x20_0000 + 3 * 32 + 17),
            0x20_0000 + 3 * 32
        );
        assert!(!is_restart(-(libc::EINTR as i64)) && is_restart(ERESTARTNOINTR));
    }

    #[test]
    fn sigaltstack_values_round_trip_and_bad_ones_get_linux_errors() {
        let a = AltStack::parse(&stack_t(0x1000, SS_AUTODISARM, 8192)).expect("valid");
        assert_eq!(
            a,
            Some(AltStack {
                sp: 0x1000,
                size: 8192,
                autodisarm: true
            })
        );
        // Reported as it was set; SS_ONSTACK when the stack pointer is inside.
        assert_eq!(AltStack::stack_t(a, None), stack_t(0x1000, SS_AUTODISARM, 8192));
        assert_eq!(
            AltStack::stack_t(a, Some(0x2000)),
            stack_t(0x1000, SS_AUTODISARM | SS_ONSTACK, 8192)
        );
        assert_eq!(AltStack::stack_t(None, None), stack_t(0, SS_DISABLE, 0));
        assert_eq!(AltStack::parse(&stack_t(0, SS_DISABLE, 0)), Ok(None));
        assert_eq!(AltStack::parse(&stack_t(0x1000, 0, 100)), Err(libc::ENOMEM));
        assert_eq!(AltStack::parse(&stack_t(0x1000, 5, 8192)), Err(libc::EINVAL));
    }
}
