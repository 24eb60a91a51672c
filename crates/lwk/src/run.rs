//! Running a program in the LWK: build memory, load the ELF, start the proxy, drive the vCPU.

use crate::elf::{self, ElfError, Image};
use crate::memory::{GuestMemory, MemoryError, APP_BASE};
use crate::mm::Mm;
use crate::stack::{self, StackSpec};
use crate::stats::Stats;
use crate::stub;
use crate::syscall::{ExitStatus, Kernel, LocalSet};
use crate::vcpu::{Entry, VcpuError};
use crate::vm::VmError;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How system calls reach the VMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Shared-memory ring served by a polling proxy thread (doorbell exit as fallback).
    Ring { proxy_cpu: Option<usize> },
    /// Every call exits to the vCPU thread through the doorbell (MMIO exit); no proxy thread.
    Exit,
}

/// What to run and how.
#[derive(Debug, Clone)]
pub struct Config {
    /// The program as the user named it (searched in PATH when it has no '/').
    pub program: String,
    /// argv, including argv[0].
    pub argv: Vec<OsString>,
    /// The environment (`NAME=value`).
    pub env: Vec<OsString>,
    /// Size of the application window in bytes (multiple of 2 MiB).
    pub mem_size: u64,
    pub policy: LocalSet,
    pub backend: Backend,
    /// Stub spin iterations before the doorbell (one `pause` is ≈ 40 ns here: 1000 ≈ 40 µs).
    pub spin_budget: u32,
    /// Do not print refused-call reports to stderr (they are still in `Outcome::notes`).
    pub quiet: bool,
    /// Rewrite `mov $nr,%eax; syscall` sites of the program and its libraries to enter the stub
    /// without the trap (see `rewrite.rs`). On by default.
    pub rewrite_syscalls: bool,
    /// How long the proxy keeps polling after the last call before it parks. A call that comes
    /// later rings the doorbell (≈ 20 µs) and unparks it; a polling proxy slows a computing guest
    /// on this machine (its sibling CPU), hence the short default.
    pub proxy_idle_spin: Duration,
    /// The LWK partition's CPUs: vCPU k runs pinned on `cpus[k % len]`, and the guest's
    /// sched_getaffinity reports the whole list. Empty: vCPUs are not pinned and the VMM's own
    /// affinity is reported.
    pub cpus: Vec<usize>,
}

impl Config {
    /// Runs `program` with `args` and the current environment, default settings.
    pub fn new(program: &str, args: &[&str]) -> Self {
        let (proxy_cpu, cpus) = default_partition(&crate::sys::affinity_list());
        let mut argv = vec![OsString::from(program)];
        argv.extend(args.iter().map(OsString::from));
        Config {
            program: program.to_string(),
            argv,
            env: std::env::vars_os()
                .map(|(k, v)| {
                    let mut s = k;
                    s.push("=");
                    s.push(v);
                    s
                })
                .collect(),
            mem_size: 4 << 30,
            policy: LocalSet::mckernel(),
            // A proxy sharing the only CPU would steal the guest's time while it polls: without a
            // CPU of its own, every call exits to the vCPU's thread instead (see docs/LWK.md).
            backend: if proxy_cpu.is_some_and(|p| cpus.contains(&p)) {
                Backend::Exit
            } else {
                Backend::Ring { proxy_cpu }
            },
            cpus,
            spin_budget: 1_000,
            quiet: false,
            rewrite_syscalls: true,
            proxy_idle_spin: Duration::from_millis(1),
        }
    }
}

/// The default split of `available` CPUs: the first serves Linux (the proxy), the rest are the
/// LWK's; with a single CPU both share it.
pub fn default_partition(available: &[usize]) -> (Option<usize>, Vec<usize>) {
    match available {
        [] => (None, Vec::new()),
        [only] => (Some(*only), vec![*only]),
        [first, rest @ ..] => (Some(*first), rest.to_vec()),
    }
}

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
    Elf(#[from] ElfError),
    #[error(transparent)]
    Vcpu(#[from] VcpuError),
    #[error("program '{0}' not found (looked in PATH)")]
    NotFound(String),
    #[error("interpreter '{interp}' of '{program}': {source}")]
    Interp {
        program: String,
        interp: String,
        source: ElfError,
    },
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

/// Finds `program` like execvp.
pub fn resolve(program: &str) -> Result<PathBuf, LwkError> {
    if program.contains('/') {
        return Ok(PathBuf::from(program));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| LwkError::NotFound(program.to_string()))
}

fn random16() -> [u8; 16] {
    let mut b = [0u8; 16];
    let _ = crate::sys::raw_syscall(
        libc::SYS_getrandom as u64,
        [b.as_mut_ptr() as u64, 16, 0, 0, 0, 0],
    );
    b
}

fn hwcap() -> u64 {
    std::arch::x86_64::__cpuid(1).edx as u64
}

/// A program loaded into guest memory, ready to start.
pub(crate) struct Loaded {
    pub image: Image,
    pub interp: Option<Image>,
    /// Where the first instruction runs (the interpreter's entry for a dynamic program).
    pub entry: u64,
    /// The initial stack pointer (argc, argv, envp, auxv).
    pub rsp: u64,
    /// The memory manager, with the images reserved.
    pub mm: Mm,
    /// With rewriting: the thunks handed out so far.
    pub thunks: Option<crate::rewrite::Thunks>,
    pub rewritten: usize,
}

/// Loads the ELF program at `path` (named `name` in messages and AT_EXECFN) and its interpreter
/// into the (empty) application window of `mem`, rewrites syscall sites when asked, and builds the
/// initial stack with `argv`, `envp` and the auxiliary vector. Used at start-up and by execve.
pub(crate) fn load_program(
    mem: &GuestMemory,
    path: &Path,
    name: &str,
    argv: Vec<Vec<u8>>,
    envp: Vec<Vec<u8>>,
    rewrite: bool,
) -> Result<Loaded, LwkError> {
    let mut mm = Mm::new(mem.app.base, mem.app.end(), mem.app.base);
    let image = elf::load(path, mem, &mut mm, Some(APP_BASE), false)?;
    let mut mm2 = Mm::new(mem.app.base, mem.app.end(), image.hi);
    mm2.reserve(image.lo, image.hi - image.lo);
    let mut interp_image = None;
    if let Some(interp) = &image.interp {
        let i = elf::load(Path::new(interp), mem, &mut mm2, None, rewrite).map_err(|source| {
            LwkError::Interp {
                program: name.to_string(),
                interp: interp.clone(),
                source,
            }
        })?;
        interp_image = Some(i);
    }
    let entry = interp_image.as_ref().map_or(image.entry, |i| i.entry);
    let mut rewritten = 0;
    let mut thunks = crate::rewrite::Thunks::new(mem);
    if rewrite {
        for img in std::iter::once(&image).chain(interp_image.as_ref()) {
            let mut starts: Vec<u64> = img.symbols.iter().map(|s| s.0).collect();
            starts.sort_unstable();
            for &(a, l) in &img.exec {
                rewritten += crate::rewrite::rewrite_from(mem, &mut thunks, a, l, &starts);
            }
        }
    }
    // SAFETY: these identity getters cannot fail.
    let (uid, euid, gid, egid) =
        unsafe { (libc::getuid(), libc::geteuid(), libc::getgid(), libc::getegid()) };
    let spec = StackSpec {
        argv,
        envp,
        execfn: name.as_bytes().to_vec(),
        auxv: vec![
            (stack::AT_PHDR, image.phdr),
            (stack::AT_PHENT, image.phent),
            (stack::AT_PHNUM, image.phnum),
            (stack::AT_PAGESZ, 4096),
            (stack::AT_BASE, interp_image.as_ref().map_or(0, |i| i.bias)),
            (stack::AT_FLAGS, 0),
            (stack::AT_ENTRY, image.entry),
            (stack::AT_UID, uid as u64),
            (stack::AT_EUID, euid as u64),
            (stack::AT_GID, gid as u64),
            (stack::AT_EGID, egid as u64),
            (stack::AT_SECURE, 0),
            (stack::AT_HWCAP, hwcap()),
            (stack::AT_HWCAP2, 2), // HWCAP2_FSGSBASE: CR4.FSGSBASE is on
            (stack::AT_CLKTCK, 100),
        ],
        random: random16(),
    };
    let rsp = stack::build(mem, mem.app.end(), &spec);
    Ok(Loaded {
        image,
        interp: interp_image,
        entry,
        rsp,
        mm: mm2,
        thunks: rewrite.then_some(thunks),
        rewritten,
    })
}

/// Runs the program of `cfg` to completion.
pub fn run(cfg: &Config) -> Result<Outcome, LwkError> {
    let t0 = Instant::now();
    let mut path = resolve(&cfg.program)?;
    let mut argv: Vec<Vec<u8>> = cfg.argv.iter().map(|a| a.as_bytes().to_vec()).collect();
    // A `#!` script runs its interpreter on it, as execve does.
    if let Ok(Some(shebang)) = crate::syscall::exec::script_interpreter(&path) {
        let interp = PathBuf::from(std::ffi::OsStr::from_bytes(&shebang.0));
        argv = crate::syscall::exec::script_argv(shebang, path.as_os_str().as_bytes().to_vec(), argv);
        path = interp;
    }
    let exe = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    let mem = Arc::new(GuestMemory::new(cfg.mem_size)?);
    let loaded = load_program(
        &mem,
        &path,
        &cfg.program,
        argv,
        cfg.env.iter().map(|e| e.as_bytes().to_vec()).collect(),
        cfg.rewrite_syscalls,
    )?;
    let (entry_rip, rsp, rewritten) = (loaded.entry, loaded.rsp, loaded.rewritten);
    mem.enable_huge_pages();
    let mut kernel = Kernel::new(
        mem.clone(),
        loaded.mm,
        cfg.policy.clone(),
        exe.as_os_str().as_bytes().to_vec(),
        crate::fds::floor(),
        cfg.quiet,
    );
    if let Some(thunks) = loaded.thunks {
        kernel.set_thunks(thunks);
    }
    kernel.set_cpus(cfg.cpus.clone(), !cfg.cpus.is_empty());
    kernel.note_images(&loaded.image, loaded.interp.as_ref());
    let kernel = Arc::new(kernel);
    let symbols = Symbols {
        main: loaded.image,
        interp: loaded.interp,
    };
    let mut o = drive(
        cfg,
        mem,
        kernel,
        Entry {
            rip: entry_rip,
            rsp,
            ..Default::default()
        },
        symbols,
        t0,
    )?;
    o.rewritten += rewritten;
    Ok(o)
}

/// Symbol tables for fault reports.
pub struct Symbols {
    pub main: Image,
    pub interp: Option<Image>,
}

impl Symbols {
    pub fn lookup(&self, addr: u64) -> Option<String> {
        self.main
            .symbolize(addr)
            .or_else(|| self.interp.as_ref().and_then(|i| i.symbolize(addr)))
    }
}

pub use crate::machine::drive;

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
        };
        assert_eq!(o.code(), 134);
    }
}
