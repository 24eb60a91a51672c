//! `multios profile --backend inproc`: the in-process profiler. The emulator's preload library
//! runs the program with nothing delegated (policy none, eager interception: every `syscall`
//! instruction rewritten to call its trampoline, Syscall User Dispatch off) and the trampoline
//! reads the TSC before and after each call. No kernel tracing at all, so it costs a few tens of
//! ns per call where the syscall tracepoints cost ≈ 300 ns on this kernel (docs/PROFILER.md).
//!
//! n(s) and g(s) per call; C = wall − Σg (one thread's view: the library keeps no per-thread
//! records); no per-call distribution. Dynamically linked programs only; calls made before the
//! library's constructor (the dynamic loader's) and the calls it routes elsewhere (clone, fork,
//! execve, exit, rt_sigreturn) are counted but not timed.

use crate::ProfilerError;
use multios_profile::{Exit, Profile, SyscallStats};

/// Profiles `command` (the caller has checked the output path before, as for every backend).
pub fn profile<S: AsRef<std::ffi::OsStr>>(command: &[S]) -> Result<Profile, ProfilerError> {
    let prog = command
        .first()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .unwrap_or_default();
    let prog = prog.as_str();
    if multios_emulate::default_mechanism(prog) == multios_emulate::Mechanism::Proxy {
        return Err(ProfilerError::Inproc(format!(
            "'{prog}' is statically linked; the in-process \
             backend injects a preload library, so it needs a dynamically linked program: use --backend ebpf"
        )));
    }
    let available = multios_emulate::CpuSet::allowed();
    let cfg = multios_emulate::Config {
        mechanism: multios_emulate::Mechanism::Shm,
        delegation: multios_emulate::Delegation::none(),
        cost: multios_emulate::CostModel::constant(0.0),
        compute: available.clone(),
        control: available,
        argv: command.iter().map(|a| a.as_ref().to_os_string()).collect(),
        allow_below_floor: true,
        rewrite: true,
        wait: multios_emulate::Wait::default(),
    };
    let r = multios_emulate::profile_run(&cfg).map_err(|e| ProfilerError::Inproc(e.to_string()))?;
    let mut p = Profile::new(crate::run::lossy(command), "multios-inproc", "high");
    p.wall_time_s = r.wall_secs;
    p.exit = Some(match r.exit {
        multios_emulate::Exit::Code(c) => Exit {
            code: Some(c),
            signal: None,
        },
        multios_emulate::Exit::Signal(s) => Exit {
            code: None,
            signal: Some(s),
        },
    });
    // SIGINT/SIGTERM/SIGHUP to multios were forwarded to the program and it was waited for
    // (issue #16): the profile holds what the processes that wrote statistics saw.
    // (The note saying so comes with the report's warnings, below.)
    p.collection.partial = r.partial;
    let mut untimed = Vec::new();
    for (name, c) in &r.syscalls {
        let (Some(n), Some(nr)) = (c.local, multios_syscalls::by_name(name)) else {
            continue;
        };
        if n == 0 {
            continue;
        }
        let g = c.local_secs.unwrap_or(0.0);
        if g == 0.0 {
            untimed.push(format!("{name} ({n})"));
        }
        p.syscalls.push(SyscallStats {
            name: name.clone(),
            nr,
            count: n,
            total_s: g,
            ..Default::default()
        });
    }
    p.sort();
    p.compute_time_s = (p.wall_time_s - p.syscall_time_s()).max(0.0);
    p.collection.notes.push(
        "in-process: the trampoline of the emulator's preload library timed each call with the TSC \
         around its `syscall` instruction (nothing delegated); C = wall − Σg"
            .into(),
    );
    if !untimed.is_empty() {
        p.collection.notes.push(format!(
            "counted but not timed (routed outside the trampoline's timed path): {}",
            untimed.join(", ")
        ));
    }
    p.collection.notes.extend(r.warnings.iter().cloned());
    let misses = ["calls before the preload library's constructor (the dynamic loader's start-up)"];
    p.collection.coverage = Some(multios_profile::Coverage::partial(
        &misses,
        &["syscalls[].errors", "syscalls[].min_s/median_s/max_s", "threads"],
    ));
    Ok(p)
}
