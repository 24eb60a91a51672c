//! `migrate`: the Intel mOS stand-in. A preload library (csrc/preload.c, built by build.rs and
//! embedded here) turns on Syscall User Dispatch in every thread of the program; its SIGSYS handler
//! migrates the thread to the control CPUs for a delegated call and back. Dynamically linked
//! programs only; exec'd dynamic programs inherit it through the environment.

use crate::cost::Dist;
use crate::report::Exit;
use crate::tsc::Calibration;
use crate::{launch, Config, Delegation, EmulateError, Interception};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libmultios_preload.so"));

/// Calls the in-process mechanisms run in the program's own context (see csrc/preload.c):
/// rt_sigreturn and rt_sigprocmask are handled on the signal frame, the next ones through local
/// stubs ([`STUB_LOCAL`]); the last [`CPU_LOCAL`] are about the CPUs the thread runs on, which
/// `migrate` changes while it serves a delegated call (made there, sched_getaffinity and getcpu
/// answered for the control CPUs, and a program's own sched_setaffinity was undone by the move
/// back).
pub const MIGRATE_LOCAL: &[&str] = &[
    "rt_sigreturn",
    "rt_sigprocmask",
    "rt_sigsuspend",
    "sigaltstack",
    "clone",
    "clone3",
    "fork",
    "vfork",
    "execve",
    "execveat",
    "sched_getaffinity",
    "sched_setaffinity",
    "getcpu",
];

/// How many calls at the end of [`MIGRATE_LOCAL`] are local because of the thread's CPUs (plain
/// local calls, not served at a local stub).
const CPU_LOCAL: usize = 3;

/// How long an shm delegate may be inside a call before its caller stops spinning and sleeps until
/// the reply wakes it: such a call is taken to block (an empty pipe, a terminal, a socket), and the
/// compute CPU must go to whatever else runs there — in a pipeline, the process that will unblock it
/// (issue #16: a reader spinning 10 ms at a time made `tar czf` 6× slower). Longer than the
/// non-blocking calls of a program (a 64 KiB read from the page cache takes ≈ 10 µs here).
const SHM_PATIENCE_SECS: f64 = 30e-6;

/// How long an shm delegate thread spins for the next request before it sleeps on a futex.
const SHM_IDLE_SECS: f64 = 200e-6;

/// Calls the `shm` delegate thread cannot make for the program because they act on the calling
/// thread (its identity, signal state, scheduling, credentials or memory policy) or would block the
/// delegate on behalf of other threads of the process (futex): kept local in addition to
/// [`MIGRATE_LOCAL`] (see [`crate::Mechanism::always_local`]).
pub const SHM_ONLY_LOCAL: &[&str] = &[
    "exit",
    "exit_group",
    "gettid",
    "set_tid_address",
    "set_robust_list",
    "get_robust_list",
    "rseq",
    "arch_prctl",
    "prctl",
    "futex",
    "futex_waitv",
    "sched_setscheduler",
    "sched_getscheduler",
    "sched_setparam",
    "sched_getparam",
    "sched_setattr",
    "sched_getattr",
    "sched_yield",
    // Priorities: `who` 0 is the calling thread (nice, ionice).
    "getpriority",
    "setpriority",
    "ioprio_get",
    "ioprio_set",
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setfsuid",
    "setfsgid",
    "setgroups",
    "capset",
    "unshare",
    "setns",
    // The calling thread's file table (CLOSE_RANGE_UNSHARE gives it its own).
    "close_range",
    "personality",
    // Restrictions of the calling thread (its delegate is then made again, inheriting them).
    "seccomp",
    "landlock_restrict_self",
    "rt_sigtimedwait",
    "rt_sigpending",
    "rt_sigaction",
    "pause",
    "tkill",
    "getrusage",
    "set_mempolicy",
    "get_mempolicy",
    "mbind",
    "ptrace",
    "wait4",
    "waitid",
    "mmap",
    "munmap",
    "mprotect",
    "brk",
];

/// Calls that go through the local stubs: [`MIGRATE_LOCAL`] but the first two (rt_sigreturn and
/// rt_sigprocmask, handled on the signal frame) and the last [`CPU_LOCAL`].
const STUB_LOCAL: &[&str] = MIGRATE_LOCAL
    .split_at(2)
    .1
    .split_at(MIGRATE_LOCAL.len() - 2 - CPU_LOCAL)
    .0;

pub struct Outcome {
    pub exit: Exit,
    pub wall_secs: f64,
    pub cpu_secs: f64,
    pub delegated: Vec<u64>,
    pub local: Vec<u64>,
    /// TSC ticks spent in the local calls made through the trampoline (only with timing).
    pub local_ticks: Vec<u64>,
    pub delivered: Vec<u64>,
    /// What the library did: see [`crate::Report::interception`].
    pub interception: String,
    /// What the rewrite cache did (`None`: no cache).
    pub rewrite_cache: Option<crate::RewriteCache>,
    /// See [`crate::Report::red_zone_sites`].
    pub red_zone_sites: Option<u64>,
    pub warnings: Vec<String>,
    /// The signal multios received and forwarded to the program (the report is then partial).
    pub interrupted: Option<i32>,
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> EmulateError {
    let what = what.into();
    move |cause| EmulateError::Io { what, cause }
}

fn library_path() -> Result<PathBuf, EmulateError> {
    crate::embed::materialize("preload", ".so", LIBRARY, 0o644)
}

/// Where the eager interception keeps the sites it found, per file (`csrc/rewrite.c`, "rewrite
/// cache"): `MULTIOS_REWRITE_CACHE` (`off` or empty: no cache), else `rewrite-HASH` in the private
/// directory the library lives in, HASH the library's own (a new build classifies afresh). The
/// directory must belong to this user and be writable by no one else: a planted entry would make
/// the library patch bytes that are not `syscall` instructions.
fn rewrite_cache_dir(lib: &Path) -> Result<Option<PathBuf>, EmulateError> {
    let dir = match std::env::var_os("MULTIOS_REWRITE_CACHE") {
        Some(v) if v.is_empty() || v == "off" => return Ok(None),
        Some(v) => PathBuf::from(v),
        None => {
            let stem = lib.file_stem().and_then(|s| s.to_str()).unwrap_or("preload");
            let hash = stem.strip_prefix("preload-").unwrap_or(stem);
            lib.with_file_name(format!("rewrite-{hash}"))
        }
    };
    multios_host::embed::ensure_private(&dir).map_err(|e| EmulateError::Io {
        what: format!(
            "{} (MULTIOS_REWRITE_CACHE=off runs without the rewrite cache)",
            e.what
        ),
        cause: e.source,
    })?;
    Ok(Some(dir))
}

/// The configuration block for the preload library (crates/preload-abi).
fn config_block(
    cfg: &Config,
    d: &Delegation,
    cal: Calibration,
    stats: &Path,
    rewrite_cache: Option<&Path>,
    icpt: Interception,
    timing: bool,
) -> Result<Vec<u8>, EmulateError> {
    use multios_preload_abi::{intercept, mode, Block, Cpus, Delegated};
    use std::os::unix::ffi::OsStrExt;
    let mut b = Block::new();
    let c = b.config_mut();
    c.mode = if cfg.mechanism == crate::Mechanism::Shm {
        mode::SHM
    } else {
        mode::MIGRATE
    };
    c.intercept = match icpt {
        Interception::Eager => intercept::EAGER,
        Interception::Lazy => intercept::LAZY,
    };
    c.timing = u32::from(timing);
    c.rewrite = u32::from(cfg.rewrite);
    c.realtime = u32::from(cfg.wait.realtime);
    c.idle_ticks = cal.ticks(SHM_IDLE_SECS);
    c.patience_ticks = cal.ticks(SHM_PATIENCE_SECS);
    c.hv_exit_ticks =
        multios_host::hvexit::period_from_env().map_or(0, |p| cal.ticks(p.as_secs_f64()).max(1));
    b.set_cpus(Cpus::Compute, cfg.compute.0.iter().copied())?;
    b.set_cpus(Cpus::Control, cfg.control.0.iter().copied())?;
    b.set_stats_dir(stats.as_os_str().as_bytes())?;
    if let Some(dir) = rewrite_cache {
        b.set_rewrite_cache(dir.as_os_str().as_bytes())?;
    }
    for n in STUB_LOCAL {
        if let Some(nr) = multios_syscalls::by_name(n) {
            b.run_at_local_stub(nr as usize)?;
        }
    }
    for nr in 0..multios_syscalls::MAX_NR as u32 {
        if !d.is_delegated(nr) {
            continue;
        }
        let cost = match cfg.cost.for_nr(nr) {
            Dist::Constant { secs } => Delegated::Constant(cal.ticks(*secs)),
            Dist::Exponential { mean } => Delegated::Exponential(cal.ticks(*mean)),
            Dist::Samples { secs } => Delegated::Samples(secs.iter().map(|s| cal.ticks(*s)).collect()),
        };
        b.delegate(nr as usize, cost)?;
    }
    Ok(b.to_bytes())
}

/// The preload library refused the block at `cfg_file` when the program ended with
/// [`multios_preload_abi::REJECT_EXIT`] and the library left its reason next to the block.
fn refused(cfg_file: &Path, exit: &Exit) -> Option<EmulateError> {
    if *exit != Exit::Code(multios_preload_abi::REJECT_EXIT) {
        return None;
    }
    let mut why = cfg_file.as_os_str().to_owned();
    why.push(multios_preload_abi::REJECTED_SUFFIX);
    let reason = std::fs::read_to_string(why).ok()?;
    Some(EmulateError::PreloadRefused {
        file: cfg_file.display().to_string(),
        reason: reason.trim().to_string(),
        version: multios_preload_abi::VERSION,
    })
}

/// With `timing`, the trampoline also measures every local call it makes (TSC before and after
/// the `syscall`): `Outcome::local_ticks` (`multios profile --backend inproc`).
pub fn run(
    path: &Path,
    cfg: &Config,
    d: &Delegation,
    cal: Calibration,
    icpt: Interception,
    timing: bool,
    run_io: &crate::RunIo,
) -> Result<Outcome, EmulateError> {
    if launch::is_static(path) {
        return Err(EmulateError::Static {
            mechanism: cfg.mechanism.name(),
            path: path.display().to_string(),
        });
    }
    let lib = library_path()?;
    remove_stale_run_dirs();
    let run_dir = RunDir(std::env::temp_dir().join(format!(
        "{RUN_DIR_PREFIX}{}-{}",
        std::process::id(),
        crate::tsc::now()
    )));
    let stats = run_dir.0.join("stats");
    std::fs::create_dir_all(&stats).map_err(io(format!("creating {}", stats.display())))?;
    let cfg_file = run_dir.0.join("config");
    let cache_dir = if icpt == Interception::Eager && cfg.rewrite {
        rewrite_cache_dir(&lib)?
    } else {
        None
    };
    let block = config_block(cfg, d, cal, &stats, cache_dir.as_deref(), icpt, timing)?;
    std::fs::write(&cfg_file, block).map_err(io(format!("writing {}", cfg_file.display())))?;
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(old) if !old.is_empty() => format!("{}:{old}", lib.display()),
        _ => lib.display().to_string(),
    };
    let mut cmd = std::process::Command::new(path);
    cmd.arg0(&cfg.argv[0])
        .args(&cfg.argv[1..])
        .env("LD_PRELOAD", preload)
        .env("MULTIOS_EMU_CONFIG", &cfg_file);
    run_io.apply(&mut cmd)?;
    // migrate: SCHED_IDLE spinners on the compute and control CPUs, so that neither halts
    // between the thread's moves (`spinner.rs`; `--no-idle-spin` or MULTIOS_EMU_MIGRATE_SPIN=off
    // turns them off, for measurement side by side).
    let _awake = (cfg.mechanism == crate::Mechanism::Migrate
        && d.count() > 0
        && cfg.wait.idle_spinner
        && std::env::var_os("MULTIOS_EMU_MIGRATE_SPIN").is_none_or(|v| v != "off"))
    .then(|| {
        let both = crate::cpus::CpuSet(cfg.compute.0.union(&cfg.control.0).copied().collect());
        crate::spinner::IdleSpinner::start(&both)
    });
    let fwd = crate::sys::Forward::prepare();
    let (child, t0) = crate::launch::spawn_pinned(
        &mut cmd,
        &cfg.compute,
        cfg.wait.app_realtime,
        &cfg.argv[0].to_string_lossy(),
        "starting it",
    )?;
    fwd.arm(child.id() as libc::pid_t);
    let waited = crate::sys::wait_child(child.id() as libc::pid_t);
    let interrupted = fwd.caught();
    drop(fwd);
    let (status, cpu_secs) = waited.map_err(|cause| EmulateError::Io {
        what: "wait4".into(),
        cause,
    })?;
    let wall_secs = t0.elapsed().as_secs_f64();
    let exit = Exit::from_wait_status(status);
    if let Some(e) = refused(&cfg_file, &exit) {
        return Err(e);
    }
    let mut o = Outcome {
        interrupted,
        exit,
        wall_secs,
        cpu_secs,
        delegated: vec![0; multios_syscalls::MAX_NR],
        local: vec![0; multios_syscalls::MAX_NR],
        local_ticks: vec![0; multios_syscalls::MAX_NR],
        delivered: Vec::new(),
        interception: String::new(),
        rewrite_cache: None,
        red_zone_sites: None,
        warnings: Vec::new(),
    };
    let mut files = 0;
    let (mut rewritten, mut trampoline, mut nodelegate) = (0u64, true, 0u64);
    // migrate: moves to the control CPUs and back that sched_setaffinity refused.
    let (mut move_out_failed, mut move_back_failed) = (0u64, 0u64);
    // Per image (one stats file each): eager used, SUD off; unsure pairs at start-up and later.
    let (mut eager_files, mut sud_off_files, mut unsure, mut unsure_late) = (0u64, 0u64, 0u64, 0u64);
    // `syscall` sites left alone because their function uses the red zone: the most in one image.
    let mut redzone = 0u64;
    let mut cache = crate::RewriteCache::default();
    let (mut static_execs, mut static_path) = (0u64, None::<String>);
    let (mut bare_execs, mut bare_path) = (0u64, None::<String>);
    // Images that started (a PID-ID.start marker each) and those whose counts were dumped.
    let (mut started, mut dumped) = (
        std::collections::BTreeSet::<u64>::new(),
        std::collections::BTreeSet::<u64>::new(),
    );
    for e in std::fs::read_dir(&stats)
        .map_err(io(format!("reading {}", stats.display())))?
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".start") {
            if let Some(id) = stem.rsplit('-').next().and_then(|v| v.parse().ok()) {
                started.insert(id);
            }
            continue;
        }
        let text =
            std::fs::read_to_string(e.path()).map_err(io(format!("reading {}", e.path().display())))?;
        parse_stats(&text, &mut o);
        for l in text.lines() {
            if let Some(p) = l.strip_prefix("P ") {
                static_path.get_or_insert_with(|| p.to_string());
                continue;
            }
            if let Some(p) = l.strip_prefix("B ") {
                bare_path.get_or_insert_with(|| p.to_string());
                continue;
            }
            let f: Vec<u64> = l.split(' ').skip(1).filter_map(|v| v.parse().ok()).collect();
            match (l.split(' ').next(), f.as_slice()) {
                (Some("R"), [n, ok]) => {
                    rewritten += n;
                    trampoline &= *ok == 1;
                }
                (Some("N"), [n, _]) => nodelegate += n,
                (Some("M"), [out, back]) => {
                    move_out_failed += out;
                    move_back_failed += back;
                }
                (Some("E"), [e, off]) => {
                    eager_files += e;
                    sud_off_files += off;
                }
                (Some("U"), [a, b]) => {
                    unsure += a;
                    unsure_late += b;
                }
                (Some("Z"), [n, _]) => redzone = redzone.max(*n),
                (Some("X"), [n, _]) => static_execs += n,
                (Some("W"), [n, _]) => bare_execs += n,
                (Some("I"), [_, id]) => {
                    dumped.insert(*id);
                }
                (Some("C"), [hits, stored]) => {
                    cache.hits += hits;
                    cache.stored += stored;
                }
                _ => {}
            }
        }
        // One dump per E line: an image writes its dumps to the one file it opened at start
        // (an execve that failed, a vfork child's exec add more); an image that never dumped
        // leaves an empty file.
        files += text.lines().filter(|l| l.starts_with("E ")).count() as u64;
    }
    if files == 0 {
        o.warnings.push(
            "the preload library wrote no statistics: the program may be killed by a signal, have cleared \
             LD_PRELOAD, or be a script whose interpreter is statically linked"
                .into(),
        );
    }
    if cfg.rewrite && files > 0 && !trampoline {
        o.warnings.push(
            "could not map the trampoline page at address 0 (needs root, CAP_SYS_RAWIO or vm.mmap_min_addr = 0): \
             every system call raised SIGSYS (≈ 2 µs each)"
                .into(),
        );
    }
    if cache_dir.is_some() {
        o.rewrite_cache = Some(cache);
    }
    // glibc's own __longjmp_chk and ld.so's fcntl and sigaction have such sites: every dynamic
    // program does, so the count is reported beside the interception, not as a warning.
    if icpt == Interception::Eager && files > 0 {
        o.red_zone_sites = Some(redzone);
    }
    o.interception = if files == 0 {
        "unknown (no statistics)".into()
    } else if icpt == Interception::Lazy {
        "lazy".into()
    } else if sud_off_files == files {
        "eager, SUD off".into()
    } else if eager_files > 0 {
        "eager, SUD on".into()
    } else {
        "lazy (fallback)".into()
    };
    if icpt == Interception::Eager && cfg.rewrite && files > 0 && eager_files < files {
        o.warnings.push(format!(
            "eager rewriting was not possible in {} of {files} program images (it needs the trampoline page at \
             address 0, execute-only so that NULL-pointer accesses still fault — x86 protection keys, `pku` in \
             /proc/cpuinfo — and xsave): they ran in the lazy mode, with Syscall User Dispatch on",
            files - eager_files
        ));
    }
    if eager_files > sud_off_files {
        o.warnings.push(format!(
            "{unsure} bytes 0f 05 in executable memory could not be classified safely (code mixed with data, or \
             code without an ELF file): Syscall User Dispatch stayed on in {} program images, which costs every \
             local call ≈ 40 ns",
            eager_files - sud_off_files
        ));
    }
    if unsure_late > 0 {
        o.warnings.push(format!(
            "{unsure_late} bytes 0f 05 in code mapped after start-up could not be classified safely and were left \
             alone: system calls made there ran without interception"
        ));
    }
    if static_execs > 0 {
        o.warnings.push(format!(
            "{static_execs} execve of statically linked programs (first: {}): the preload library cannot enter \
             them, so their system calls ran natively, neither counted nor delegated; --mechanism proxy follows \
             static programs",
            static_path.as_deref().unwrap_or("?")
        ));
    }
    let lost = started.difference(&dumped).count();
    if files > 0 && lost > 0 {
        o.warnings.push(format!(
            "{lost} of {} processes (or exec'd images) wrote no statistics — killed by a signal (a pipeline's \
             reader that quit early leaves its writer to SIGPIPE), or ended without exit_group: their system \
             calls are missing from the counts",
            started.len()
        ));
    }
    if bare_execs > 0 {
        o.warnings.push(format!(
            "{bare_execs} execve whose environment no longer preloads the library (first: {}; `env -i`, or a \
             program that builds its children's environment): those programs ran natively, neither counted nor \
             delegated",
            bare_path.as_deref().unwrap_or("?")
        ));
    }
    if nodelegate > 0 {
        o.warnings.push(format!(
            "{nodelegate} delegated calls ran locally, uncharged: made by threads without a delegate (created by a raw clone) or by a signal handler that interrupted a delegated call"
        ));
    }
    o.warnings.extend(move_warnings(
        move_out_failed,
        move_back_failed,
        o.delegated.iter().sum(),
    ));
    let _ = rewritten;
    Ok(o)
}

/// `migrate`'s warnings for the moves of `total` delegated calls that sched_setaffinity refused:
/// `out` to the control CPUs (the call then ran on the compute CPU), `back` to the thread's own
/// CPUs (it went on running on the control CPUs).
fn move_warnings(out: u64, back: u64, total: u64) -> Vec<String> {
    let mut w = Vec::new();
    if out > 0 {
        w.push(format!(
            "{out} of {total} delegated calls could not move to the control CPUs (sched_setaffinity refused: a \
             seccomp filter of the program's, or a cpuset without the control CPUs): they ran on the compute CPU"
        ));
    }
    if back > 0 {
        w.push(format!(
            "{back} of {total} delegated calls could not move back from the control CPUs (sched_setaffinity \
             refused: a seccomp filter of the program's, or a cpuset without the thread's own CPUs): the thread \
             went on running on the control CPUs"
        ));
    }
    w
}

/// A run's directory (config and statistics): `$TMPDIR/multios-emulate-PID-TSC`.
const RUN_DIR_PREFIX: &str = "multios-emulate-";

/// Removes the run directory when the run ends, whichever way.
struct RunDir(PathBuf);

impl Drop for RunDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// Removes the run directories left by multios processes that no longer exist (killed with
/// SIGKILL before they could clean up; their programs died with them, see
/// `sys::die_with_parent`). Only names of the exact form PID-TSC holding a `config` file.
fn remove_stale_run_dirs() {
    let Ok(dir) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(RUN_DIR_PREFIX)) else {
            continue;
        };
        let Some((pid, tsc)) = rest.split_once('-') else {
            continue;
        };
        let (Ok(pid), true) = (
            pid.parse::<libc::pid_t>(),
            !tsc.is_empty() && tsc.bytes().all(|b| b.is_ascii_digit()),
        ) else {
            continue;
        };
        if pid > 0 && !crate::sys::process_exists(pid) && e.path().join("config").exists() {
            std::fs::remove_dir_all(e.path()).ok();
        }
    }
}

fn parse_stats(text: &str, o: &mut Outcome) {
    for line in text.lines() {
        let mut it = line.split(' ');
        let (kind, a, b) = (
            it.next(),
            it.next().and_then(|v| v.parse::<u64>().ok()),
            it.next(),
        );
        match (kind, a) {
            (Some("D"), Some(nr)) | (Some("L"), Some(nr)) | (Some("T"), Some(nr)) => {
                let n = b.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
                let table = match kind {
                    Some("D") => &mut o.delegated,
                    Some("L") => &mut o.local,
                    _ => &mut o.local_ticks,
                };
                if let Some(slot) = table.get_mut(nr as usize) {
                    *slot += n;
                }
            }
            (Some("S"), Some(t)) => o.delivered.push(t),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs /bin/true under the preload library with `block` as its configuration; returns the
    /// exit, stderr and what `refused` makes of it.
    fn run_with_block(name: &str, block: &[u8]) -> (Exit, String, Option<EmulateError>) {
        let dir =
            RunDir(std::env::temp_dir().join(format!("multios-preload-test-{name}-{}", std::process::id())));
        std::fs::create_dir_all(dir.0.join("stats")).expect("creating the test directory");
        let file = dir.0.join("config");
        std::fs::write(&file, block).expect("writing the block");
        let out = std::process::Command::new("/bin/true")
            .env("LD_PRELOAD", library_path().expect("the preload library"))
            .env("MULTIOS_EMU_CONFIG", &file)
            .output()
            .expect("running /bin/true");
        let exit = match out.status.code() {
            Some(c) => Exit::Code(c),
            None => Exit::Signal(-1),
        };
        let refusal = refused(&file, &exit);
        (exit, String::from_utf8_lossy(&out.stderr).into_owned(), refusal)
    }

    fn block(stats: &str) -> Vec<u8> {
        let mut b = multios_preload_abi::Block::new();
        b.set_stats_dir(stats.as_bytes()).expect("a short path");
        b.to_bytes()
    }

    #[test]
    fn issue_17_the_library_accepts_a_block_of_its_version() {
        let (exit, stderr, refusal) = run_with_block("ok", &block("/nonexistent"));
        assert_eq!(exit, Exit::Code(0), "stderr: {stderr}");
        assert!(refusal.is_none());
    }

    #[test]
    fn issue_17_the_library_refuses_another_version_and_multios_names_it() {
        let mut b = block("/nonexistent");
        let other = multios_preload_abi::VERSION + 1;
        b[4..8].copy_from_slice(&other.to_ne_bytes());
        let (exit, stderr, refusal) = run_with_block("version", &b);
        assert_eq!(
            exit,
            Exit::Code(multios_preload_abi::REJECT_EXIT),
            "stderr: {stderr}"
        );
        assert!(stderr.contains(&format!("version {other}")), "stderr: {stderr}");
        let e = refusal
            .expect("refused() turns the exit into an error")
            .to_string();
        assert!(
            e.contains(&format!(
                "version {other}, this library expects {}",
                multios_preload_abi::VERSION
            )),
            "{e}"
        );
    }

    #[test]
    fn issue_17_the_library_refuses_a_wrong_magic_or_size() {
        let mut b = block("/nonexistent");
        b[0] ^= 0xff;
        let (exit, stderr, _) = run_with_block("magic", &b);
        assert_eq!(exit, Exit::Code(multios_preload_abi::REJECT_EXIT));
        assert!(stderr.contains("magic"), "stderr: {stderr}");
        let b = block("/nonexistent");
        let (exit, stderr, _) = run_with_block("short", &b[..b.len() / 2]);
        assert_eq!(exit, Exit::Code(multios_preload_abi::REJECT_EXIT));
        assert!(stderr.contains("file size"), "stderr: {stderr}");
    }

    #[test]
    fn the_local_stubs_serve_all_but_the_signal_frame_calls() {
        assert_eq!(&MIGRATE_LOCAL[..2], ["rt_sigreturn", "rt_sigprocmask"]);
        assert_eq!(STUB_LOCAL.first(), Some(&"rt_sigsuspend"));
        assert_eq!(STUB_LOCAL.last(), Some(&"execveat"));
        assert_eq!(STUB_LOCAL.len(), MIGRATE_LOCAL.len() - 2 - CPU_LOCAL);
    }

    #[test]
    fn issue_16_refused_moves_are_warned_about() {
        assert!(move_warnings(0, 0, 10).is_empty());
        let w = move_warnings(3, 1, 10);
        assert_eq!(w.len(), 2);
        assert!(
            w[0].starts_with("3 of 10 delegated calls could not move to the control CPUs"),
            "{}",
            w[0]
        );
        assert!(w[0].ends_with("they ran on the compute CPU"), "{}", w[0]);
        assert!(
            w[1].starts_with("1 of 10 delegated calls could not move back"),
            "{}",
            w[1]
        );
    }

    #[test]
    fn stats_lines_accumulate() {
        let mut o = Outcome {
            exit: Exit::Code(0),
            wall_secs: 0.0,
            cpu_secs: 0.0,
            delegated: vec![0; 512],
            local: vec![0; 512],
            local_ticks: vec![0; 512],
            delivered: vec![],
            interception: String::new(),
            rewrite_cache: None,
            red_zone_sites: None,
            warnings: vec![],
            interrupted: None,
        };
        parse_stats("D 1 3\nL 0 2\nS 100\nS 200\n", &mut o);
        parse_stats("D 1 1\n", &mut o);
        assert_eq!((o.delegated[1], o.local[0], o.delivered.len()), (4, 2, 2));
    }
}
