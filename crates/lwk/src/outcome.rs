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
    #[error(transparent)]
    Reserve(#[from] multios_host::cgroup::reserve::ReserveError),
    #[error("--reserve needs the LWK's CPUs (--cpus); none are set")]
    ReserveWithoutCpus,
    /// No procfs for the VMM (`procfs::init`): it could tell neither its own files nor another
    /// VMM's apart from the guest's.
    #[error("{0}")]
    Proc(String),
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
        p.collection.notes.push(self.trap_note());
        p.collection.notes.extend(self.notes.iter().cloned());
        p
    }

    /// The share of calls that entered through the `syscall` trap (≈ 3.5 µs on this KVM) rather
    /// than a rewritten site, with the calls that trapped most.
    pub fn trap_note(&self) -> String {
        let (all, trapped) = (self.stats.calls(), self.stats.trapped());
        let top: Vec<String> = self
            .stats
            .top_trapped(5)
            .into_iter()
            .map(|(name, t, n)| format!("{name} {t}/{n}"))
            .collect();
        format!(
            "{trapped} of {all} calls ({:.1} %) entered through the syscall trap, not a rewritten site{}",
            trap_share(trapped, all) * 100.0,
            if top.is_empty() {
                String::new()
            } else {
                format!(" (most: {})", top.join(", "))
            }
        )
    }

    /// For a front end that has done its work (printed, written the profile): when the guest
    /// died of a signal, the VMM dies of it too, so its parent sees what Linux gives for the
    /// program — killed by that signal (SIGTERM: a shell's 143, Python's returncode -15), with
    /// the core-dump flag for SIGSEGV, SIGABRT… (issue #14). Returns for an exit; exit with
    /// [`Outcome::code`] then.
    pub fn die_if_signaled(&self) {
        if let ExitStatus::Signal(s) = self.status {
            crate::sys::die_by_signal(s);
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

/// `trapped` / `all`, 0 for no calls.
pub fn trap_share(trapped: u64, all: u64) -> f64 {
    if all == 0 {
        0.0
    } else {
        trapped as f64 / all as f64
    }
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
