//! `multios emulate`: run an unmodified program with chosen system calls delegated to a control CPU
//! at a tunable forwarding cost f_c (each way), delivered by a calibrated TSC spin.
//!
//! Mechanisms (see `docs/EMULATOR.md`):
//! - [`Mechanism::Shm`] — exception-less (FlexSC-like): `syscall` sites are rewritten into calls to a
//!   trampoline (lazypoline/zpoline), delegated calls go through a cache-line mailbox to a delegate
//!   thread pinned on a control CPU; lowest floor; dynamically linked programs only.
//! - [`Mechanism::Proxy`] — seccomp user notification to supervisor threads on the control CPUs
//!   (McKernel's proxy process); follows threads, fork and exec; works for static programs.
//! - [`Mechanism::Migrate`] — the calling thread migrates to a control CPU for the call and back
//!   (Intel mOS); same interception as `shm`, so dynamically linked programs only.

pub mod bench;
mod bpf;
pub mod cost;
pub mod cpus;
pub mod embed;
mod error;
pub mod fc;
mod launch;
mod preload;
mod proxy;
pub mod report;
mod runio;
mod spinner;
mod sys;
pub mod tsc;

pub use cost::{CostModel, Dist};
pub use cpus::CpuSet;
pub use error::EmulateError;
pub use launch::{check_writable, run_at, run_native, run_native_io, NativeRun};
/// The one resolved policy table (`multios_model::Policy::resolve` makes it).
pub use multios_model::Delegation;
pub use runio::RunIo;

/// The mechanism to use when none is asked for: `shm` (lowest floor) for a dynamically linked
/// program, `proxy` for a statically linked one (the in-process mechanisms need the preload library).
pub fn default_mechanism(cmd: impl AsRef<std::ffi::OsStr>) -> Mechanism {
    match launch::resolve(cmd) {
        Ok(p) if launch::is_static(&p) => Mechanism::Proxy,
        _ => Mechanism::Shm,
    }
}
pub use proxy::Wait;
pub use report::{Counts, Exit, Report, RewriteCache, Summary};

use std::sync::Arc;

/// How delegated calls reach the control CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mechanism {
    Shm,
    Proxy,
    Migrate,
}

impl Mechanism {
    pub const ALL: [Mechanism; 3] = [Mechanism::Shm, Mechanism::Proxy, Mechanism::Migrate];

    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Shm => "shm",
            Mechanism::Proxy => "proxy",
            Mechanism::Migrate => "migrate",
        }
    }

    /// Whether this build implements the mechanism.
    pub fn available(self) -> bool {
        true
    }

    /// The one-way f_c below which the mechanism's own cost dominates: half its median round trip
    /// as measured by `multios fc` on the reference machine (docs/EMULATOR.md).
    pub fn floor_secs(self) -> f64 {
        match self {
            Mechanism::Shm => 100e-9,
            Mechanism::Proxy => 10e-6,
            Mechanism::Migrate => 15e-6,
        }
    }

    /// System calls the mechanism always keeps local, because delegating them would change their
    /// meaning (they act on the calling thread or on the signal frame of the interception itself).
    pub fn always_local(self) -> Vec<&'static str> {
        match self {
            // CONTINUE runs every call in its own thread: nothing has to stay local.
            Mechanism::Proxy => Vec::new(),
            Mechanism::Migrate => preload::MIGRATE_LOCAL.to_vec(),
            Mechanism::Shm => [preload::MIGRATE_LOCAL, preload::SHM_ONLY_LOCAL].concat(),
        }
    }
}

impl std::str::FromStr for Mechanism {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Mechanism::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown mechanism '{s}': use shm, proxy or migrate"))
    }
}

/// How `shm` and `migrate` find the program's system calls (docs/EMULATOR.md, "Pass-through cost").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Interception {
    /// zpoline-style: every `syscall` instruction of every executable mapping is rewritten at
    /// start-up (found with an x86 decoder) and in code mapped later (mmap/mprotect with
    /// PROT_EXEC); Syscall User Dispatch stays off, so local calls pay only the trampoline. Falls
    /// back to `Lazy` (with a warning) when the trampoline page at address 0 cannot be mapped, and
    /// keeps SUD on when some 0f 05 bytes cannot be classified safely.
    Eager,
    /// lazypoline-style: Syscall User Dispatch stays on in every thread; a site is rewritten when
    /// its first call traps.
    Lazy,
}

impl Interception {
    /// The environment variable that chooses the interception of [`run`] (`eager` or `lazy`).
    pub const ENV: &'static str = "MULTIOS_EMU_INTERCEPT";

    pub fn name(self) -> &'static str {
        match self {
            Interception::Eager => "eager",
            Interception::Lazy => "lazy",
        }
    }

    /// `MULTIOS_EMU_INTERCEPT` if set (eager or lazy), else `Eager`.
    pub fn from_env() -> Result<Self, EmulateError> {
        match std::env::var(Self::ENV) {
            Ok(v) => v.parse().map_err(EmulateError::Supervisor),
            Err(_) => Ok(Interception::Eager),
        }
    }
}

impl std::str::FromStr for Interception {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "eager" => Ok(Interception::Eager),
            "lazy" => Ok(Interception::Lazy),
            _ => Err(format!(
                "unknown interception '{s}' (from --interception or {}): use eager or lazy",
                Interception::ENV
            )),
        }
    }
}

/// One emulated run.
#[derive(Debug, Clone)]
pub struct Config {
    pub mechanism: Mechanism,
    pub delegation: Delegation,
    pub cost: CostModel,
    pub compute: CpuSet,
    pub control: CpuSet,
    /// The program and its arguments, passed to exec as given (bytes, not necessarily UTF-8).
    pub argv: Vec<std::ffi::OsString>,
    /// Accept an f_c below the mechanism's floor (the delivered cost is then the floor).
    pub allow_below_floor: bool,
    /// How the proxy's supervisor and the waiting program wait.
    pub wait: Wait,
    /// shm/migrate: rewrite `syscall` sites into calls to the trampoline at address 0 (needs root);
    /// without it every call of the program raises SIGSYS.
    pub rewrite: bool,
}

impl Config {
    /// Checks what can be checked before running; returns warnings (e.g. shared CPUs).
    pub fn check(&self) -> Result<Vec<String>, EmulateError> {
        if self.argv.is_empty() {
            return Err(EmulateError::NoCommand);
        }
        if !self.mechanism.available() {
            return Err(EmulateError::NotBuilt(self.mechanism.name()));
        }
        let min = self.cost.min();
        let floor = self.mechanism.floor_secs();
        if min > 0.0 && min < floor * (1.0 - 1e-9) && !self.allow_below_floor {
            return Err(EmulateError::BelowFloor {
                mechanism: self.mechanism.name(),
                requested: multios_units::Duration::from_secs(min).to_string(),
                floor: multios_units::Duration::from_secs(floor).to_string(),
            });
        }
        let mut warnings = Vec::new();
        if self.compute.overlaps(&self.control) {
            warnings.push(format!(
                "control CPUs {} overlap compute CPUs {}: delegated calls and the program compete for the same CPU, \
                 so measured times include that contention",
                self.control, self.compute
            ));
        }
        Ok(warnings)
    }
}

/// Runs the program under emulation and reports what happened; `shm` and `migrate` intercept as
/// [`Interception::from_env`] says (eager unless `MULTIOS_EMU_INTERCEPT=lazy`).
pub fn run(cfg: &Config) -> Result<Report, EmulateError> {
    run_with(cfg, Interception::from_env()?)
}

/// [`run`] with the interception of `shm` and `migrate` given (ignored by `proxy`).
pub fn run_with(cfg: &Config, interception: Interception) -> Result<Report, EmulateError> {
    run_inner(cfg, interception, false, &RunIo::default())
}

/// [`run_with`] with the streams and working directory `io` gives (issue #15: the runs of
/// `emulate --compare` each get the same stdin, their own captured output and working copy).
pub fn run_io(cfg: &Config, interception: Interception, io: &RunIo) -> Result<Report, EmulateError> {
    run_inner(cfg, interception, false, io)
}

/// Runs `cfg` (mechanism `shm` or `migrate`, eager interception) with the trampoline timing every
/// local call: each syscall's `Counts::local_secs` is the time its local calls spent between the
/// TSC reads around the `syscall` instruction. With policy `none` this is an in-process system
/// call profiler (`multios profile --backend inproc`). Calls the library routes elsewhere
/// (clone, fork, execve, exit, rt_sigreturn, and calls before its constructor) are not timed.
pub fn profile_run(cfg: &Config) -> Result<Report, EmulateError> {
    run_inner(cfg, Interception::Eager, true, &RunIo::default())
}

fn run_inner(
    cfg: &Config,
    interception: Interception,
    timing: bool,
    io: &RunIo,
) -> Result<Report, EmulateError> {
    let mut warnings = cfg.check()?;
    let path = launch::resolve(&cfg.argv[0])?;
    let mut d = cfg.delegation.clone();
    let forced_local = d.keep_local(&cfg.mechanism.always_local());
    let cal = tsc::calibration();
    let samplers = Arc::new(cfg.cost.samplers(cal));
    let mut interception_used = None;
    let mut rewrite_cache = None;
    let mut red_zone_sites = None;
    let mut local_ticks: Option<Vec<u64>> = None;
    let interrupted;
    let (exit, wall_secs, cpu_secs, counts, local, delivered) = match cfg.mechanism {
        Mechanism::Proxy => {
            let o = proxy::run(launch::cstring(&path)?, cfg, &d, samplers, io)?;
            interrupted = o.interrupted;
            (
                o.exit,
                o.wall_secs,
                o.cpu_secs,
                o.served.counts,
                None,
                o.served.delivered,
            )
        }
        Mechanism::Migrate | Mechanism::Shm => {
            let o = preload::run(&path, cfg, &d, cal, interception, timing, io)?;
            warnings.extend(o.warnings);
            interception_used = Some(o.interception);
            rewrite_cache = o.rewrite_cache;
            red_zone_sites = o.red_zone_sites;
            interrupted = o.interrupted;
            if timing {
                local_ticks = Some(o.local_ticks);
            }
            (
                o.exit,
                o.wall_secs,
                o.cpu_secs,
                o.delegated,
                Some(o.local),
                o.delivered,
            )
        }
    };
    let mut syscalls = std::collections::BTreeMap::new();
    for (nr, &n) in counts.iter().enumerate() {
        let l = local.as_ref().map(|l: &Vec<u64>| l.get(nr).copied().unwrap_or(0));
        if n == 0 && l.unwrap_or(0) == 0 {
            continue;
        }
        let name = multios_syscalls::by_number(nr as u32)
            .map(str::to_string)
            .unwrap_or_else(|| format!("#{nr}"));
        syscalls.insert(
            name,
            Counts {
                delegated: n,
                local: l,
                local_secs: local_ticks
                    .as_ref()
                    .map(|t| cal.secs(t.get(nr).copied().unwrap_or(0))),
            },
        );
    }
    let mut secs: Vec<f64> = delivered.iter().map(|t| cal.secs(*t)).collect();
    if let Some(sig) = interrupted {
        warnings.push(format!(
            "interrupted by signal {sig} ({}), which was forwarded to the program: this report is partial \
             (processes killed by the signal wrote no statistics)",
            signal_name(sig)
        ));
    }
    Ok(Report {
        interrupted,
        partial: interrupted.is_some() || matches!(exit, Exit::Signal(_)),
        command: cfg
            .argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        mechanism: cfg.mechanism.name().into(),
        policy: cfg.delegation.label.clone(),
        fc: fc_label(&cfg.cost),
        compute_cpus: cfg.compute.to_string(),
        control_cpus: cfg.control.to_string(),
        wall_secs,
        cpu_secs,
        exit,
        delegated_total: counts.iter().sum(),
        local_total: local.map(|l| l.iter().sum()),
        syscalls,
        delivered_fc: Summary::of(&mut secs),
        forced_local,
        interception: interception_used,
        rewrite_cache,
        red_zone_sites,
        warnings,
    })
}

/// SIGINT, SIGTERM, SIGHUP by name (the signals multios forwards), else the number.
pub fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGKILL => "SIGKILL".into(),
        _ => format!("signal {sig}"),
    }
}

fn fc_label(c: &CostModel) -> String {
    let mut s = c.default.to_string();
    for (k, v) in &c.per_syscall {
        s.push_str(&format!(", {k}={v}"));
    }
    s
}
