//! Finding the program to run.

use crate::EmulateError;
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Resolves `cmd` like execvp: a name with a slash as is, otherwise the first executable in PATH.
pub fn resolve(cmd: impl AsRef<OsStr>) -> Result<PathBuf, EmulateError> {
    let cmd = cmd.as_ref();
    let is_exec = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    // Why a path that is not an executable file cannot be run.
    let why = |p: &Path| match p.metadata() {
        Ok(m) if m.is_dir() => EmulateError::IsDirectory(p.display().to_string()),
        Ok(_) => EmulateError::NotExecutable(p.display().to_string()),
        Err(_) => EmulateError::NoSuchFile(p.display().to_string()),
    };
    if cmd.as_bytes().contains(&b'/') {
        // Absolute, so that a run in another working directory (`RunIo::cwd`) finds the same file.
        let p = std::path::absolute(cmd).unwrap_or_else(|_| PathBuf::from(cmd));
        return if is_exec(&p) { Ok(p) } else { Err(why(&p)) };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(cmd))
        .find(|p| is_exec(p))
        .ok_or_else(|| EmulateError::NotFound(cmd.to_string_lossy().into_owned()))
}

/// Checks, before anything runs, that `path` (given with `flag`, e.g. `--report`) can be written
/// (`multios_host::output::check_writable`).
pub fn check_writable(path: &Path, flag: &str) -> Result<(), EmulateError> {
    multios_host::output::check_writable(path).map_err(|e| EmulateError::NotWritable {
        flag: flag.to_string(),
        path: e.path,
        why: e.why,
        fix: e.fix,
    })
}

pub fn cstring(p: &Path) -> Result<CString, EmulateError> {
    CString::new(p.as_os_str().as_encoded_bytes()).map_err(|_| EmulateError::Nul(p.display().to_string()))
}

/// True when the ELF file at `p` has no program interpreter (statically linked). Reads the ELF
/// header and the program headers only (not the whole file: gcc's cc1 is 33 MB).
pub fn is_static(p: &Path) -> bool {
    use std::os::unix::fs::FileExt;
    let Ok(f) = std::fs::File::open(p) else {
        return false;
    };
    let mut eh = [0u8; 64];
    if f.read_exact_at(&mut eh, 0).is_err() || &eh[..4] != b"\x7fELF" || eh[4] != 2 {
        return false; // not a 64-bit ELF (e.g. a script): its interpreter decides
    }
    let u16_at = |o: usize| usize::from(u16::from_le_bytes([eh[o], eh[o + 1]]));
    let mut off = [0u8; 8];
    off.copy_from_slice(&eh[32..40]);
    let (phoff, phentsize, phnum) = (u64::from_le_bytes(off), u16_at(54), u16_at(56));
    if phentsize < 4 {
        return false;
    }
    let mut ph = vec![0u8; phentsize * phnum];
    if f.read_exact_at(&mut ph, phoff).is_err() {
        return false;
    }
    !ph.chunks_exact(phentsize)
        .any(|h| u32::from_le_bytes([h[0], h[1], h[2], h[3]]) == 3)
}

/// How a native run went.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct NativeRun {
    pub exit: crate::Exit,
    pub wall_secs: f64,
    /// User + system CPU time of the program and the descendants it waited for.
    pub cpu_secs: f64,
    /// The signal (SIGINT, SIGTERM, SIGHUP) multios received and forwarded to the program.
    pub interrupted: Option<i32>,
}

/// Runs `argv` natively, pinned to `compute`; returns how it ended and its wall time.
pub fn run_native<S: AsRef<OsStr>>(
    argv: &[S],
    compute: &crate::CpuSet,
    wait: &crate::Wait,
) -> Result<NativeRun, EmulateError> {
    run_native_io(argv, compute, wait, &crate::RunIo::default())
}

/// [`run_native`] with the streams and working directory `io` gives.
pub fn run_native_io<S: AsRef<OsStr>>(
    argv: &[S],
    compute: &crate::CpuSet,
    wait: &crate::Wait,
    io: &crate::RunIo,
) -> Result<NativeRun, EmulateError> {
    let rt = wait.app_realtime;
    use std::os::unix::process::CommandExt;
    let first = argv.first().ok_or(EmulateError::NoCommand)?;
    let path = resolve(first)?;
    let mut cmd = std::process::Command::new(path);
    cmd.arg0(first).args(&argv[1..]);
    io.apply(&mut cmd)?;
    let fwd = crate::sys::Forward::prepare();
    let name = first.as_ref().to_string_lossy();
    let (child, t0) = spawn_pinned(&mut cmd, compute, rt, &name, "starting it natively")?;
    fwd.arm(child.id() as libc::pid_t);
    let (st, cpu_secs) =
        crate::sys::wait_child(child.id() as libc::pid_t).map_err(|cause| EmulateError::Io {
            what: "wait4".into(),
            cause,
        })?;
    Ok(NativeRun {
        exit: crate::Exit::from_wait_status(st),
        wall_secs: t0.elapsed().as_secs_f64(),
        cpu_secs,
        interrupted: fwd.caught(),
    })
}

/// Runs a benchmark program of ours natively (`mech` = None) or under `mech` with `delegation` at a
/// constant one-way cost `fc` (below the mechanism's floor allowed: the benchmarks measure the floor).
pub fn run_at(
    mech: Option<crate::Mechanism>,
    delegation: &crate::Delegation,
    fc: f64,
    compute: &crate::CpuSet,
    control: &crate::CpuSet,
    argv: Vec<String>,
    wait: crate::Wait,
) -> Result<crate::Exit, EmulateError> {
    Ok(match mech {
        None => run_native(&argv, compute, &wait)?.exit,
        Some(mechanism) => {
            let cfg = crate::Config {
                mechanism,
                delegation: delegation.clone(),
                cost: crate::CostModel::constant(fc),
                compute: compute.clone(),
                control: control.clone(),
                argv: argv.into_iter().map(OsString::from).collect(),
                allow_below_floor: true,
                wait,
                rewrite: true,
            };
            crate::run(&cfg)?.exit
        }
    })
}

/// Spawns `cmd` pinned to `compute` (and SCHED_FIFO below the supervisors when `rt`), returning the
/// child and the instant it was started; `name` and `stage` go into the error.
pub(crate) fn spawn_pinned(
    cmd: &mut std::process::Command,
    compute: &crate::CpuSet,
    rt: bool,
    name: &str,
    stage: &'static str,
) -> Result<(std::process::Child, std::time::Instant), EmulateError> {
    let mask = compute.to_libc().map_err(|cause| EmulateError::Launch {
        cmd: name.to_string(),
        stage,
        cause,
    })?;
    let parent = std::process::id() as libc::pid_t;
    crate::sys::pin_before_exec(cmd, parent, mask, rt.then_some(crate::proxy::APP_PRIO));
    let t0 = std::time::Instant::now();
    let child = cmd.spawn().map_err(|cause| EmulateError::Launch {
        cmd: name.to_string(),
        stage,
        cause,
    })?;
    Ok((child, t0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_in_path_and_reports_missing() {
        assert!(resolve("sh").is_ok());
        let e = resolve("no-such-program-xyz")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(e, "command 'no-such-program-xyz' not found in PATH");
    }

    #[test]
    fn issue_16_directories_and_non_executables_are_named_as_such() {
        let msg = |c: &str| resolve(c).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg("/tmp").contains("is a directory"), "{}", msg("/tmp"));
        let plain = std::env::temp_dir().join(format!("multios-issue16-plain-{}", std::process::id()));
        std::fs::write(&plain, "data").ok();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).ok();
        let p = plain.display().to_string();
        assert!(msg(&p).contains("not executable"), "{}", msg(&p));
        std::fs::remove_file(&plain).ok();
        assert!(
            msg("/no/such/prog").contains("does not exist"),
            "{}",
            msg("/no/such/prog")
        );
    }

    #[test]
    fn issue_16_unwritable_output_paths_are_refused_before_running() {
        let msg = |p: &str| {
            check_writable(Path::new(p), "--report")
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(msg("/no/such/dir/r.json").contains("does not exist"));
        assert!(msg("/tmp").contains("is a directory"));
        assert!(
            msg("/proc/multios-issue16.json").contains("--report /proc/multios-issue16.json: cannot write")
        );
        assert!(check_writable(Path::new("/tmp/multios-issue16-new.json"), "--report").is_ok());
        assert!(!Path::new("/tmp/multios-issue16-new.json").exists());
    }

    #[test]
    fn detects_static_binaries() {
        assert!(!is_static(Path::new("/bin/sh")));
        let bb = Path::new("/bin/busybox");
        assert!(
            bb.exists(),
            "busybox-static must be installed (apt-get install busybox-static)"
        );
        assert!(is_static(bb));
    }
}
