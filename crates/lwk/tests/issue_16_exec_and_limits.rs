//! Issue #16 (security, 2026-11-28): a guest's execve runs on Linux only the files trusted at
//! start-up, by identity and not by name, with the VMM's loader variables (`syscall/linux_exec.rs`);
//! RLIMIT_DATA is the guest's own, and another VMM's limits are not the guest's to lower
//! (`memlimit.rs`, `syscall/fdrange.rs`). These tests need /dev/kvm and gcc (and Open MPI's
//! `orted` in the PATH for the preload test): they FAIL (never skip) when one is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RUNNER: &str = env!("CARGO_BIN_EXE_lwk-run");

fn require_kvm() {
    if let Err(e) = multios_lwk::check_kvm() {
        panic!("issue #16 tests need KVM and it is not usable here: {e}");
    }
}

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

/// Builds tests/c/NAME.c with gcc `flags` into `dir` as `out`.
fn build_c_as(name: &str, out: &str, flags: &[&str], dir: &Scratch) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(format!("{name}.c"));
    let out = dir.path().join(out);
    let (libs, flags): (Vec<&str>, Vec<&str>) = flags.iter().partition(|f| f.starts_with("-l"));
    let o = Command::new("gcc")
        .args(flags)
        .args(["-O1", "-g", "-o"])
        .arg(&out)
        .arg(&src)
        .args(libs)
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(
        o.status.success(),
        "gcc {}: {}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Builds tests/c/NAME.c with gcc `flags` into `dir`.
fn build_c(name: &str, flags: &[&str], dir: &Scratch) -> PathBuf {
    build_c_as(
        name,
        &format!("{name}{}", flags.concat().replace('-', "_")),
        flags,
        dir,
    )
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"))
}

/// The program in the LWK (`lwk-run`, its default options: `--linux-exec orted,prted`).
/// In the LWK with Open MPI's daemons asked to run on Linux (the default list is empty): what is
/// tested is that a file of that name is not trusted for its name.
fn lwk(prog: &Path, args: &[&str]) -> Output {
    run(Command::new(RUNNER)
        .arg(prog)
        .args(args)
        .env("LWK_LINUX_EXEC", "orted,prted"))
}

fn native(prog: &Path, args: &[&str]) -> Output {
    run(Command::new(prog).args(args))
}

fn show(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A guest that copies its own code to DIR/orted (and a symlink DIR/lnk/orted to it) and execs it
/// got it run on Linux by the forked VMM, which it could then read and write (lwkX/escape.c). The
/// file name is no longer what trusts a program: both run in the LWK, where the VMM stays out of
/// reach.
#[test]
fn issue_16_a_guest_program_named_orted_is_not_run_on_linux() {
    require_kvm();
    let dir = Scratch::new("multios-issue16x", "orted");
    for flags in [&["-static"][..], &[][..]] {
        let prog = build_c("i16x_orted", flags, &dir);
        let work = dir.path().join(format!("w{}", flags.len()));
        std::fs::create_dir_all(&work).expect("work dir");
        let out = lwk(&prog, &[work.to_str().expect("utf-8 path")]);
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{flags:?}\n{}", show(&out));
        assert_eq!(
            s.matches("child: read the parent's system page: no; opened its mem: no")
                .count(),
            2,
            "{flags:?}: an `orted` the guest wrote must run in the LWK:\n{}",
            show(&out)
        );
        assert!(
            s.contains("copy: exit 0") && s.contains("symlink: exit 0") && !s.contains("YES"),
            "{flags:?}\n{}",
            show(&out)
        );
    }
}

/// A trusted program (the host's `orted`, run on Linux) gets the VMM's dynamic loader variables,
/// not the guest's: an LD_PRELOAD the guest passes in its execve would load the guest's code into
/// a native process.
#[test]
fn issue_16_a_program_run_on_linux_gets_the_vmms_loader_variables() {
    require_kvm();
    let orted = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("orted"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("the test needs Open MPI's orted in the PATH (apt-get install openmpi-bin)")
        });
    let dir = Scratch::new("multios-issue16x", "preload");
    let lib = dir.path().join("libi16x.so");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/i16x_preload.c");
    let o = run(Command::new("gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src));
    assert!(o.status.success(), "gcc: {}", show(&o));
    let prog = build_c("i16x_execpreload", &[], &dir);
    let args = [
        lib.to_str().expect("utf-8"),
        orted.to_str().expect("utf-8"),
        "--help",
    ];
    // Natively the preload works: the probe is sound.
    let nat = native(&prog, &args);
    assert!(
        String::from_utf8_lossy(&nat.stderr).contains("PRELOADED"),
        "natively:\n{}",
        show(&nat)
    );
    // orted on Linux: asked for (the default list is empty).
    let out = run(Command::new(RUNNER)
        .arg(&prog)
        .args(args)
        .env("LWK_LINUX_EXEC", "orted"));
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("exec'd"),
        "{}",
        show(&out)
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("PRELOADED"),
        "the guest's LD_PRELOAD reached a program run on Linux:\n{}",
        show(&out)
    );
}

/// setrlimit(RLIMIT_DATA, 256 MiB) reached the VMM, whose 4 GiB window exceeds it: its next
/// allocation by mmap aborted it (a sendmsg with a 512 KiB control buffer: "memory allocation of
/// 524288 bytes failed", exit 134) and pthread_create failed with EAGAIN (lwkX/rlimabort.c,
/// rlimdata.c). The limit is the guest's: reported back as set, inherited by a fork, and the
/// program runs as natively.
#[test]
fn issue_16_rlimit_data_is_the_guests_own_like_native() {
    require_kvm();
    let dir = Scratch::new("multios-issue16x", "rlimdata");
    for flags in [&["-pthread"][..], &["-pthread", "-static"][..]] {
        let prog = build_c("i16x_rlimdata", flags, &dir);
        let nat = native(&prog, &[]);
        assert!(nat.status.success(), "natively:\n{}", show(&nat));
        let text = String::from_utf8_lossy(&nat.stdout).into_owned();
        for want in [
            "getrlimit = 0: soft 256 MiB",
            "sendmsg(512 KiB control) = -1",
            "pthread_create 3 = 0",
            "child getrlimit = 0: soft 256 MiB",
            "survived",
        ] {
            assert!(text.contains(want), "natively, no {want:?} in\n{text}");
        }
        let out = lwk(&prog, &[]);
        assert!(out.status.success(), "{flags:?} in the LWK:\n{}", show(&out));
        assert_eq!(
            text,
            String::from_utf8_lossy(&out.stdout),
            "{flags:?}: in the LWK differs from native:\n{}",
            show(&out)
        );
    }
}

/// A forked guest's parent is a VMM: prlimit64 from the child must not lower the limits that VMM
/// lives by (its memory, fds, stack). Refused with EPERM; the parent goes on as before.
#[test]
fn issue_16_a_guest_cannot_lower_another_vmms_limits() {
    require_kvm();
    let dir = Scratch::new("multios-issue16x", "prlimit");
    let prog = build_c("i16x_rlimdata", &["-pthread"], &dir);
    let out = lwk(&prog, &["parent"]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", show(&out));
    for res in ["DATA", "AS", "NOFILE", "STACK"] {
        let want = format!("child: prlimit(parent, RLIMIT_{res}, small) = -1 (Operation not permitted)");
        assert!(s.contains(&want), "no {want:?}:\n{}", show(&out));
    }
    for want in [
        "child: prlimit(parent, RLIMIT_DATA) read = 0",
        "pthread_create 3 = 0",
        "malloc(1 MiB) ok",
        "survived",
    ] {
        assert!(s.contains(want), "no {want:?}:\n{}", show(&out));
    }
}
