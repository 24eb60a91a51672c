//! How a run ends: its [`Outcome`] (status, statistics, timings, notes), or the [`LwkError`] that
//! stopped it, a guest [`Fault`] among them.

use crate::kernel::ExitStatus;
use crate::loader::LoadError;
use crate::memory::{MemoryError, APP_BASE};
use crate::stats::Stats;
use crate::stub;
use crate::vcpu::VcpuError;
use crate::vm::VmError;
use std::time::Duration;

/// A guest CPU exception.
#[derive(Debug, Clone)]
pub struct Fault {
    pub vector: u64,
    pub error_code: u64,
    pub rip: u64,
    pub rsp: u64,
    /// CR2: the faulting address of a page fault.
    pub addr: u64,
    pub symbol: Option<String>,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at rip {:#x}", stub::exception_name(self.vector), self.rip)?;
        if let Some(s) = &self.symbol {
            write!(f, " ({s})")?;
        }
        if self.vector == 14 {
            let what = if self.error_code & 2 != 0 { "write" } else { "read" };
            let why = if self.error_code & 1 != 0 {
                "protection"
            } else {
                "not mapped"
            };
            let what = if self.error_code & 16 != 0 {
                "instruction fetch"
            } else {
                what
            };
            write!(f, ", {what} of address {:#x} ({why}", self.addr)?;
            if self.addr < APP_BASE {
                write!(f, ", below the application window: a NULL-pointer dereference?")?;
            }
            write!(f, ")")?;
        } else {
            write!(f, ", error code {:#x}", self.error_code)?;
        }
        write!(f, ", rsp {:#x}", self.rsp)
    }
}

/// Errors of an LWK run.
#[derive(Debug, thiserror::Error)]
pub enum LwkError {
    #[error(transparent)]
    Vm(#[from] VmError),
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Vcpu(#[from] VcpuError),
    #[error("guest fault: {0}")]
    GuestFault(Fault),
    #[error("the guest stopped unexpectedly: {what} at rip {rip:#x}{}", symbol.as_ref().map(|s| format!(" ({s})")).unwrap_or_default())]
    Stopped {
        what: String,
        rip: u64,
        symbol: Option<String>,
    },
    #[error("KVM_RUN failed: {0}")]
    Run(kvm_ioctls::Error),
    #[error("--trace {0}")]
    Trace(crate::trace::TraceError),
    #[error(transparent)]
    Overrides(#[from] crate::overrides::OverrideError),
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: ExitStatus,
    pub stats: Stats,
    /// From `run` to the guest's exit.
    pub wall: Duration,
    /// From `run` to the first KVM_RUN.
    pub startup: Duration,
    /// Doorbell exits taken (fallbacks and vCPU-context calls).
    pub doorbells: u64,
    /// Refused calls.
    pub notes: Vec<String>,
    /// Syscall sites rewritten to skip the trap (0 unless `rewrite_syscalls`).
    pub rewritten: usize,
    /// Start-up phases and the run's costly events (`costs.rs`).
    pub costs: crate::costs::Costs,
}

impl Outcome {
    /// The run as a multios profile: n(s) and g(s) per call with the local/delegated placement.
    /// g(s) is the VMM's service time; the guest's trap and ring round trip are not in it.
    pub fn profile(&self, command: Vec<String>, policy: &str) -> multios_profile::Profile {
        let mut p = multios_profile::Profile::new(command, "multios-lwk", "high");
        // The LWK is the guest's kernel: it sees every call from the first instruction on.
        p.collection.coverage = Some(multios_profile::Coverage::complete());
        self.stats.fill(&mut p);
        // The program's run: from the first KVM_RUN to its exit (VM start-up is in the notes).
        p.wall_time_s = self.wall.saturating_sub(self.startup).as_secs_f64();
        p.compute_time_s = (p.wall_time_s - p.syscall_time_s()).max(0.0);
        // Like the other profilers: a run that a signal ended (Ctrl-C, kill) is partial.
        p.collection.partial = matches!(self.status, ExitStatus::Signal(_));
        p.exit = Some(match self.status {
            ExitStatus::Code(c) => multios_profile::Exit {
                code: Some(c),
                signal: None,
            },
            ExitStatus::Signal(s) => multios_profile::Exit {
                code: None,
                signal: Some(s),
            },
        });
        p.collection.notes.push(format!(
            "LWK run, policy {policy}; g(s) is the VMM's service time per call; the guest's syscall trap and \
             ring round trip (see `multios lwk fc`) are not included; VM start-up {:.3} ms; {} syscall sites \
             rewritten",
            self.startup.as_secs_f64() * 1e3,
            self.rewritten
        ));
        p.collection.notes.extend(self.notes.iter().cloned());
        p
    }

    /// For a front end that has done its work (printed, written the profile): when the guest
    /// died of a signal whose default action dumps core (SIGSEGV, SIGBUS, SIGABRT…), the VMM dies
    /// of it too, so the shell sees the signal and the core-dump flag as natively. Returns for
    /// the other endings; exit with [`Outcome::code`] then (128 + signal, like time(1)).
    pub fn die_if_core_signal(&self) {
        if let ExitStatus::Signal(s) = self.status {
            if dumps_core(s) {
                crate::sys::die_by_signal(s);
            }
        }
    }

    /// The shell-style exit code: the code, or 128 + signal.
    pub fn code(&self) -> i32 {
        match self.status {
            ExitStatus::Code(c) => c,
            ExitStatus::Signal(s) => 128 + s,
        }
    }
}

/// True for the signals whose default action dumps core (signal(7)).
pub fn dumps_core(sig: i32) -> bool {
    [
        libc::SIGQUIT,
        libc::SIGILL,
        libc::SIGTRAP,
        libc::SIGABRT,
        libc::SIGBUS,
        libc::SIGFPE,
        libc::SIGSEGV,
        libc::SIGSYS,
        libc::SIGXCPU,
        libc::SIGXFSZ,
    ]
    .contains(&sig)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_report_names_rip_address_and_symbol() {
        let f = Fault {
            vector: 14,
            error_code: 4,
            rip: 0x401000,
            rsp: 0x1000,
            addr: 0,
            symbol: Some("main+0x4".into()),
        };
        let s = f.to_string();
        assert!(
            s.starts_with("page fault (#PF) at rip 0x401000 (main+0x4), read of address 0x0"),
            "{s}"
        );
        assert!(s.contains("NULL-pointer"), "{s}");
        let g = Fault {
            vector: 13,
            error_code: 0,
            rip: 0x401000,
            rsp: 0,
            addr: 0,
            symbol: None,
        };
        assert!(g
            .to_string()
            .starts_with("general protection fault (#GP) at rip 0x401000, error code 0x0"));
    }

    #[test]
    fn exit_code_of_a_signal_is_128_plus() {
        let o = Outcome {
            status: ExitStatus::Signal(6),
            stats: Stats::default(),
            wall: Duration::ZERO,
            startup: Duration::ZERO,
            doorbells: 0,
            notes: vec![],
            rewritten: 0,
            costs: Default::default(),
        };
        assert_eq!(o.code(), 134);
    }
}
