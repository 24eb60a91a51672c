//! Running a program in the LWK: build memory, load the ELF, start the proxy, drive the vCPU.

use crate::elf::{self, ElfError, Image};
use crate::memory::{GuestMemory, MemoryError, APP_BASE, DOORBELL_BASE};
use crate::mm::Mm;
use crate::proxy::{self, Proxy};
use crate::stack::{self, StackSpec};
use crate::stats::Stats;
use crate::stub;
use crate::syscall::{Ctx, ExitStatus, Kernel, Policy, Reply};
use crate::vcpu::{self, Entry, VcpuError};
use crate::vm::{Vm, VmError};
use kvm_ioctls::{VcpuExit, VcpuFd};
use multios_lwk_abi::state;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The VMM's own fds are moved at or above this number, out of the guest's way.
pub const FD_FLOOR: i32 = 1000;

/// How system calls reach the VMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Shared-memory ring served by a polling proxy thread (doorbell exit as fallback).
    Ring {
        proxy_cpu: Option<usize>,
        vcpu_cpu: Option<usize>,
    },
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
    pub policy: Policy,
    pub backend: Backend,
    /// Stub spin iterations before the doorbell.
    pub spin_budget: u32,
    /// Do not print refused-call reports to stderr (they are still in `Outcome::notes`).
    pub quiet: bool,
}

impl Config {
    /// Runs `program` with `args` and the current environment, default settings.
    pub fn new(program: &str, args: &[&str]) -> Self {
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
            policy: Policy::mckernel(),
            backend: Backend::Ring {
                proxy_cpu: Some(0),
                vcpu_cpu: Some(1),
            },
            spin_budget: 200_000,
            quiet: false,
        }
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
}

impl Outcome {
    /// The shell-style exit code: the code, or 128 + signal.
    pub fn code(&self) -> i32 {
        match self.status {
            ExitStatus::Code(c) => c,
            ExitStatus::Signal(s) => 128 + s,
        }
    }
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

/// Runs the program of `cfg` to completion.
pub fn run(cfg: &Config) -> Result<Outcome, LwkError> {
    let t0 = Instant::now();
    let path = resolve(&cfg.program)?;
    let exe = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    let mem = Arc::new(GuestMemory::new(cfg.mem_size)?);
    let mut mm = Mm::new(mem.app.base, mem.app.end(), mem.app.base);
    let image = elf::load(&path, &mem, &mut mm, Some(APP_BASE))?;
    let mut mm2 = Mm::new(mem.app.base, mem.app.end(), image.hi);
    mm2.reserve(image.lo, image.hi - image.lo);
    let mut interp_image = None;
    if let Some(interp) = &image.interp {
        let i = elf::load(Path::new(interp), &mem, &mut mm2, None).map_err(|source| LwkError::Interp {
            program: cfg.program.clone(),
            interp: interp.clone(),
            source,
        })?;
        interp_image = Some(i);
    }
    let entry_rip = interp_image.as_ref().map_or(image.entry, |i| i.entry);
    // SAFETY: these identity getters cannot fail.
    let (uid, euid, gid, egid) =
        unsafe { (libc::getuid(), libc::geteuid(), libc::getgid(), libc::getegid()) };
    let spec = StackSpec {
        argv: cfg.argv.iter().map(|a| a.as_bytes().to_vec()).collect(),
        envp: cfg.env.iter().map(|e| e.as_bytes().to_vec()).collect(),
        execfn: cfg.program.as_bytes().to_vec(),
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
    let rsp = stack::build(&mem, mem.app.end(), &spec);
    let kernel = Arc::new(Kernel::new(
        mem.clone(),
        mm2,
        cfg.policy.clone(),
        exe.as_os_str().as_bytes().to_vec(),
        FD_FLOOR,
        cfg.quiet,
    ));
    let symbols = Symbols {
        main: image,
        interp: interp_image,
    };
    drive(
        cfg,
        mem,
        kernel,
        Entry {
            rip: entry_rip,
            rsp,
            ..Default::default()
        },
        &symbols,
        t0,
    )
}

/// Symbol tables for fault reports.
pub struct Symbols {
    pub main: Image,
    pub interp: Option<Image>,
}

impl Symbols {
    fn lookup(&self, addr: u64) -> Option<String> {
        self.main
            .symbolize(addr)
            .or_else(|| self.interp.as_ref().and_then(|i| i.symbolize(addr)))
    }
}

/// Creates the VM and vCPU 0 at `entry` and runs until the guest exits.
pub fn drive(
    cfg: &Config,
    mem: Arc<GuestMemory>,
    kernel: Arc<Kernel>,
    entry: Entry,
    symbols: &Symbols,
    t0: Instant,
) -> Result<Outcome, LwkError> {
    let vm = Vm::new(&mem, FD_FLOOR)?;
    stub::write_tables(&mem);
    let cpuid = vm
        .kvm
        .get_supported_cpuid(kvm_bindings::KVM_MAX_CPUID_ENTRIES)
        .map_err(|source| VmError::Kvm {
            what: "KVM_GET_SUPPORTED_CPUID",
            source,
        })?;
    let budget = if cfg.backend == Backend::Exit {
        1
    } else {
        cfg.spin_budget.max(1)
    };
    let mut vcpu = vcpu::create(&vm.vm, &mem, &cpuid, 0, entry, budget, FD_FLOOR)?;
    let slot = stub::slot_addr(0);
    let _proxy = match cfg.backend {
        Backend::Ring { proxy_cpu, vcpu_cpu } => {
            if let Some(c) = vcpu_cpu {
                let _ = crate::sys::pin_to_cpu(c);
            }
            Some(Proxy::start(
                kernel.clone(),
                vec![slot],
                proxy_cpu,
                Duration::from_millis(5),
            ))
        }
        Backend::Exit => None,
    };
    let startup = t0.elapsed();
    let mut doorbells = 0u64;
    let result = loop {
        match vcpu.run() {
            Ok(VcpuExit::MmioWrite(addr, _)) if addr == stub::doorbell_addr(0) => {
                doorbells += 1;
                if serve_doorbell(&kernel, &vcpu, slot) {
                    break Ok(());
                }
            }
            Ok(VcpuExit::Hlt) => break Err(fault(&vcpu, &mem, symbols)),
            Ok(VcpuExit::Intr) => {}
            Ok(other) => {
                let what = match other {
                    VcpuExit::Shutdown => "triple fault (shutdown)".to_string(),
                    VcpuExit::MmioWrite(a, _) | VcpuExit::MmioRead(a, _) if a >= DOORBELL_BASE => {
                        format!("access to the LWK doorbell page at {a:#x}")
                    }
                    VcpuExit::MmioWrite(a, _) | VcpuExit::MmioRead(a, _) => {
                        format!("access to unmapped memory {a:#x}")
                    }
                    o => format!("unexpected exit {o:?}"),
                };
                let rip = vcpu.get_regs().map(|r| r.rip).unwrap_or(0);
                break Err(LwkError::Stopped {
                    what,
                    rip,
                    symbol: symbols.lookup(rip),
                });
            }
            Err(e) if e.errno() == libc::EINTR || e.errno() == libc::EAGAIN => {}
            Err(e) => break Err(LwkError::Run(e)),
        }
    };
    drop(_proxy);
    result?;
    let status = kernel.exit_status().unwrap_or(ExitStatus::Code(0));
    Ok(Outcome {
        status,
        stats: kernel.stats(),
        wall: t0.elapsed(),
        startup,
        doorbells,
        notes: kernel.notes(),
    })
}

/// Serves the slot after a doorbell exit; true when the guest is gone.
fn serve_doorbell(kernel: &Kernel, vcpu: &VcpuFd, slot: u64) -> bool {
    let st = proxy::state_of(kernel, slot);
    let mut waited = 0u32;
    loop {
        let s = st.load(Ordering::Acquire);
        let claimed = match s {
            state::REQUEST => st
                .compare_exchange(
                    state::REQUEST,
                    state::CLAIMED,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok(),
            state::EXIT => {
                st.store(state::CLAIMED, Ordering::Release);
                true
            }
            state::CLAIMED => {
                // The proxy is serving it (maybe a blocking call): wait without burning the CPU.
                waited += 1;
                if waited < 1000 {
                    std::hint::spin_loop();
                } else {
                    std::thread::sleep(Duration::from_micros(20));
                }
                continue;
            }
            _ => return false,
        };
        if !claimed {
            continue;
        }
        let (nr, a) = proxy::request(kernel, slot);
        return match kernel.serve(Ctx::Vcpu(vcpu), nr, a) {
            Reply::Ret(r) => {
                proxy::reply(kernel, slot, r);
                false
            }
            Reply::NeedVcpu => {
                proxy::reply(kernel, slot, crate::syscall::ENOSYS);
                false
            }
            Reply::Stop => true,
        };
    }
}

fn fault(vcpu: &VcpuFd, mem: &GuestMemory, symbols: &Symbols) -> LwkError {
    let (regs, sregs) = match (vcpu.get_regs(), vcpu.get_sregs()) {
        (Ok(r), Ok(s)) => (r, s),
        (Err(e), _) | (_, Err(e)) => return LwkError::Run(e),
    };
    // The reporter pushed [vector, error code] over the CPU's [rip, cs, rflags, rsp, ss].
    let f = |k: u64| mem.read_u64(regs.rsp + 8 * k);
    let rip = f(2);
    LwkError::GuestFault(Fault {
        vector: f(0),
        error_code: f(1),
        rip,
        rsp: f(5),
        addr: sregs.cr2,
        symbol: symbols.lookup(rip),
    })
}
