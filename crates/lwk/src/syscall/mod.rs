//! The LWK's system-call layer: local calls served by the VMM, delegated calls performed by the
//! proxy after their arguments have been checked against guest memory.

pub mod check;
mod delegate;
pub mod layout;
mod local;
pub mod policy;

use crate::memory::GuestMemory;
use crate::mm::Mm;
use crate::stats::{Served, Stats};
use kvm_ioctls::VcpuFd;
pub use policy::Policy;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

pub const ENOSYS: i64 = -(libc::ENOSYS as i64);

/// The answer to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Return this value in rax.
    Ret(i64),
    /// Only the vCPU thread can serve this call (it needs the vCPU): ring the doorbell.
    NeedVcpu,
    /// The process is gone (exit, fatal signal): stop the vCPU.
    Stop,
}

/// Who is serving the call.
pub enum Ctx<'a> {
    Proxy,
    Vcpu(&'a VcpuFd),
}

/// How the guest process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
}

/// A guest signal disposition (the LWK records them; it does not deliver signals yet).
#[derive(Debug, Clone, Copy, Default)]
pub struct SigAction {
    pub raw: [u64; 4],
}

/// The LWK state of the one guest process.
pub struct Kernel {
    pub mem: Arc<GuestMemory>,
    pub(crate) mm: Mutex<Mm>,
    pub(crate) policy: Policy,
    /// The program's absolute path, the answer to readlink("/proc/self/exe").
    pub(crate) exe: Vec<u8>,
    pub(crate) pid: i32,
    pub(crate) fd_floor: i32,
    pub(crate) sigactions: Mutex<[SigAction; 65]>,
    pub(crate) sigmask: Mutex<u64>,
    pub(crate) reported: Mutex<BTreeSet<u64>>,
    pub(crate) exit: Mutex<Option<ExitStatus>>,
    pub(crate) stats: Mutex<Stats>,
    /// Reports of refused calls, kept for the caller (also printed to stderr once each).
    pub(crate) notes: Mutex<Vec<String>>,
    pub(crate) quiet: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Kernel {
    pub fn new(
        mem: Arc<GuestMemory>,
        mm: Mm,
        policy: Policy,
        exe: Vec<u8>,
        fd_floor: i32,
        quiet: bool,
    ) -> Self {
        Kernel {
            mem,
            mm: Mutex::new(mm),
            policy,
            exe,
            pid: std::process::id() as i32,
            fd_floor,
            sigactions: Mutex::new([SigAction::default(); 65]),
            sigmask: Mutex::new(0),
            reported: Mutex::new(BTreeSet::new()),
            exit: Mutex::new(None),
            stats: Mutex::new(Stats::default()),
            notes: Mutex::new(Vec::new()),
            quiet,
        }
    }

    /// Serves system call `nr` with arguments `a`.
    pub fn serve(&self, ctx: Ctx<'_>, nr: u64, a: [u64; 6]) -> Reply {
        let t0 = Instant::now();
        let local = self.policy.is_local(nr) || self.is_proc_self_exe(nr, &a);
        let reply = if local {
            self.local(ctx, nr, a)
        } else {
            self.delegate(nr, a)
        };
        if let Reply::Ret(r) = reply {
            let ns = t0.elapsed().as_nanos() as u64;
            lock(&self.stats).record(nr, ns, r, if local { Served::Local } else { Served::Delegated });
        } else if reply == Reply::Stop {
            lock(&self.stats).record(nr, 0, 0, Served::Local);
        }
        reply
    }

    /// The exit status, once the process is gone.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *lock(&self.exit)
    }

    pub fn stats(&self) -> Stats {
        lock(&self.stats).clone()
    }

    pub fn notes(&self) -> Vec<String> {
        lock(&self.notes).clone()
    }

    /// Refuses `nr` with ENOSYS, reporting it once with what would cover it.
    pub(crate) fn refuse(&self, nr: u64, why: &str) -> Reply {
        if lock(&self.reported).insert(nr) {
            let name = multios_syscalls::by_number(nr as u32).unwrap_or("?");
            let msg =
                format!("system call {name} (nr {nr}) is not supported by the LWK: {why}; returning ENOSYS");
            if !self.quiet {
                eprintln!("multios lwk: {msg}");
            }
            lock(&self.notes).push(msg);
        }
        Reply::Ret(ENOSYS)
    }

    fn is_proc_self_exe(&self, nr: u64, a: &[u64; 6]) -> bool {
        let path = match nr as i64 {
            libc::SYS_readlink => a[0],
            libc::SYS_readlinkat if a[0] as i32 == libc::AT_FDCWD => a[1],
            _ => return false,
        };
        self.mem
            .read_cstr(path, 64)
            .is_some_and(|p| p == b"/proc/self/exe")
    }
}
