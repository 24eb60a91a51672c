//! Issue #3 through the CLI: `multios profile -- CMD` writes a loadable profile and a table, passes the
//! target's exit code through, explains errors, and writes one profile per MPI rank under mpirun.
//! Needs root (eBPF) and, for the MPI test, Debian's openmpi-bin; fails loudly without them.

use std::path::{Path, PathBuf};
use std::process::Command;

fn multios() -> Command {
    Command::new(env!("CARGO_BIN_EXE_multios"))
}

#[path = "../../../testsupport/exec_file.rs"]
mod exec_file;
#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

/// A scratch directory, removed when the test is done.
fn scratch(name: &str) -> Scratch {
    Scratch::new("multios-cli", name)
}

fn require_root() {
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc_geteuid() };
    assert_eq!(
        euid, 0,
        "multios profile's eBPF backend needs root: run the tests as root"
    );
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

#[test]
fn issue_3_profile_writes_profile_and_table() {
    require_root();
    let dir = scratch("table");
    let out_path = dir.join("p.json");
    let out = multios()
        .args(["profile", "-o"])
        .arg(&out_path)
        .arg("--plot")
        .arg(dir.join("plots"))
        .args(["--", "busybox", "ls", "/"])
        .output()
        .expect("run multios");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("n(s)") && stdout.contains("g(s)") && stdout.contains("execve"),
        "{stdout}"
    );
    assert!(stdout.contains("Σg") && stdout.contains("p = "), "{stdout}");
    let p = multios_profile::load(&out_path).expect("the profile loads");
    assert_eq!(p.collection.tool, "multios-ebpf");
    assert!(p.syscall("getdents64").is_some());
    for ext in ["png", "svg", "csv"] {
        let f = dir.join("plots").join(format!("syscall-cdf.{ext}"));
        assert!(f.exists(), "--plot wrote no {}", f.display());
    }
}

#[test]
fn issue_3_profile_passes_exit_code_and_explains_errors() {
    require_root();
    let dir = scratch("exit");
    let st = multios()
        .args(["profile", "-o"])
        .arg(dir.join("p.json"))
        .args(["--", "sh", "-c", "exit 7"])
        .output()
        .expect("run multios");
    assert_eq!(st.status.code(), Some(7));
    let st = multios()
        .args(["profile", "-o"])
        .arg(dir.join("q.json"))
        .args(["--", "no-such-program-xyz"])
        .output()
        .expect("run multios");
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    assert!(err.contains("command not found: 'no-such-program-xyz'"), "{err}");
    let st = multios()
        .args(["profile", "-p", "3999999", "--duration", "1s"])
        .output()
        .expect("run multios");
    let err = String::from_utf8_lossy(&st.stderr);
    assert!(err.contains("process 3999999 does not exist"), "{err}");
}

/// Runs `multios profile -o prof.%r.json -- busybox true` at two ranks under `launcher` and
/// merges the two profiles.
fn profile_two_ranks(launcher: &[&str], package: &str, tag: &str) {
    require_root();
    let dir = scratch(tag);
    let pattern = dir.join("prof.%r.json");
    let st = Command::new(launcher[0])
        .args(&launcher[1..])
        .args(["-n", "2", env!("CARGO_BIN_EXE_multios"), "profile", "-o"])
        .arg(&pattern)
        .args(["--", "busybox", "true"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} (Debian package {package}): {e}", launcher[0]));
    assert!(
        st.status.success(),
        "{}: {}",
        launcher[0],
        String::from_utf8_lossy(&st.stderr)
    );
    let files: Vec<PathBuf> = (0..2).map(|r| dir.join(format!("prof.{r}.json"))).collect();
    for f in &files {
        assert!(f.exists(), "{} missing", f.display());
    }
    let merged = dir.join("merged.json");
    let st = multios()
        .args(["profile", "merge"])
        .args(&files)
        .arg("-o")
        .arg(&merged)
        .output()
        .expect("merge");
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let p = multios_profile::load(&merged).expect("merged profile loads");
    let ranks: Vec<u32> = p.ranks.iter().map(|r| r.rank).collect();
    assert_eq!(ranks, vec![0, 1]);
    assert_eq!(p.syscall("execve").map(|s| s.count), Some(2));
}

#[test]
fn issue_3_mpirun_writes_one_profile_per_rank() {
    // Open MPI: the rank comes from OMPI_COMM_WORLD_RANK.
    profile_two_ranks(
        &["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"],
        "openmpi-bin",
        "mpi",
    );
}

#[test]
fn issue_3_mpich_writes_one_profile_per_rank() {
    // MPICH (Hydra): the rank comes from PMI_RANK.
    profile_two_ranks(&["mpiexec.mpich"], "mpich", "mpich");
}

/// A copy of the multios binary that an unprivileged user can execute.
fn world_executable_copy(dir: &std::path::Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let exe = dir.join("multios");
    exec_file::copy(Path::new(env!("CARGO_BIN_EXE_multios")), &exe, 0o755);
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).expect("chmod dir");
    exe
}

#[test]
fn issue_3_unprivileged_ebpf_is_refused_and_ptrace_works() {
    require_root();
    let dir = scratch("nobody");
    let exe = world_executable_copy(&dir);
    let as_nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&exe)
            .args(args)
            .current_dir(&*dir)
            .output()
            .unwrap_or_else(|e| panic!("cannot run setpriv (Debian package util-linux): {e}"))
    };
    let out = as_nobody(&["profile", "--backend", "ebpf", "-o", "p.json", "--", "true"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("needs root or CAP_BPF+CAP_PERFMON") && err.contains("--backend ptrace"),
        "{err}"
    );
    // Without --backend an unprivileged user gets the ptrace backend.
    let out = as_nobody(&["profile", "-o", "q.json", "--", "busybox", "true"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let p = multios_profile::load(&dir.join("q.json")).expect("profile written by nobody");
    assert_eq!(
        (p.collection.tool.as_str(), p.collection.accuracy.as_str()),
        ("multios-ptrace", "low")
    );
}

#[test]
fn issue_3_inproc_backend_counts_and_times_without_kernel_tracing() {
    require_root(); // the trampoline page at address 0 needs CAP_SYS_RAWIO (and eBPF for the comparison)
    let dir = scratch("inproc");
    let dd = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=20000"];
    let profile_with = |backend: &str, file: &str| {
        let out = dir.join(file);
        let st = multios()
            .args(["profile", "--backend", backend, "-o"])
            .arg(&out)
            .arg("--")
            .args(dd)
            .output()
            .expect("run multios profile");
        assert!(
            st.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&st.stderr)
        );
        multios_profile::load(&out).expect("the profile loads")
    };
    let inproc = profile_with("inproc", "inproc.json");
    let ebpf = profile_with("ebpf", "ebpf.json");
    assert_eq!(inproc.collection.tool, "multios-inproc");
    let n = |p: &multios_profile::Profile, s: &str| p.syscall(s).map_or(0, |c| c.count);
    // dd's own calls all come after the library's constructor; only the dynamic loader's few
    // earlier calls (e.g. reading libc's ELF header) are missing from the in-process count.
    for s in ["read", "write"] {
        let (i, e) = (n(&inproc, s), n(&ebpf, s));
        assert!(i >= 20_000 && e >= i && e - i <= 5, "{s}: inproc {i}, eBPF {e}");
    }
    let read = inproc.syscall("read").expect("read");
    let per_call = read.total_s / read.count as f64;
    assert!(
        (30e-9..20e-6).contains(&per_call),
        "g(read)/n = {per_call} s: timed by the trampoline"
    );
    assert!(inproc.compute_time_s > 0.0 && inproc.compute_time_s < inproc.wall_time_s);
    // Every call it counted is timed, rt_sigaction too, which takes the slow path since its
    // SIGSEGV handlers go behind the page-0 shim (it was counted with g = 0 for a while).
    // (The calls that do not return to the site, exit_group and a successful execve, are not.)
    let timed = |c: &&multios_profile::SyscallStats| {
        !["exit_group", "exit", "execve", "execveat"].contains(&c.name.as_str())
    };
    for c in inproc.syscalls.iter().filter(timed) {
        assert!(
            c.count == 0 || c.total_s > 0.0,
            "{} counted {} times, not timed",
            c.name,
            c.count
        );
    }
    assert!(n(&inproc, "rt_sigaction") > 0, "dd installs its signal handlers");
}

/// Reported 2026-11-28: the ptrace backend set no-new-privileges for root too, so a setgid
/// program profiled by root ran without its group (`id` printed no egid), unlike natively and
/// under the other backends. It is now set only when the seccomp filter needs it.
#[test]
fn issue_3_ptrace_backend_keeps_setgid_programs_privileges_for_root() {
    require_root();
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("setgid");
    let id = dir.join("id");
    exec_file::copy(Path::new("/usr/bin/id"), &id, 0o755);
    std::os::unix::fs::chown(&id, None, Some(8)).expect("chgrp 8 (mail)");
    std::fs::set_permissions(&id, std::fs::Permissions::from_mode(0o2755)).expect("chmod g+s");
    let native = Command::new(&id).output().expect("run id");
    let native = String::from_utf8_lossy(&native.stdout).into_owned();
    assert!(
        native.contains("egid=8"),
        "the scratch directory must allow setgid programs: {native}"
    );
    for backend in ["ptrace", "ebpf"] {
        let out = multios()
            .args(["profile", "--backend", backend, "--results", "/dev/null", "-o"])
            .arg(dir.join(format!("{backend}.json")))
            .arg("--")
            .arg(&id)
            .output()
            .expect("run multios");
        assert!(out.status.success(), "{backend}: {out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), native, "{backend}");
    }
}
