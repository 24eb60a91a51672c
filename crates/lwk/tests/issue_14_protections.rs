//! Issue #14, part 1: page protections enforced in the LWK's guest page tables. The same C
//! programs run natively and in the LWK and must print the same and end the same way: a PROT_NONE
//! guard page, read-only and non-executable pages raise SIGSEGV with Linux's si_code and si_addr
//! in the guest's handler; a W^X JIT catches the write to its R-X page, makes it writable and
//! retries; delegated calls get EFAULT on buffers they may not copy to or from; a stack overflow
//! into a guard kills the process with SIGSEGV. Needs /dev/kvm and gcc: FAILS (never skips) without.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const RUNNER: &str = env!("CARGO_BIN_EXE_lwk-run");
/// Only detects a hang: every run here takes well under a second when it works.
const DEADLINE: Duration = Duration::from_secs(60);

fn require_kvm() {
    if let Err(e) = multios_lwk::check_kvm() {
        panic!("issue #14 tests need KVM and it is not usable here: {e}");
    }
}

#[path = "../../../testsupport/deadline.rs"]
mod deadline;
#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

/// Builds tests/c/NAME.c with gcc and `flags` into `dir`.
fn build_c(dir: &Scratch, name: &str, flags: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(format!("{name}.c"));
    let out = dir.path().join(format!("{name}{}", flags.concat()));
    let o = Command::new("gcc")
        .args(flags)
        .args(["-g", "-o"])
        .arg(&out)
        .arg(&src)
        .arg("-lpthread")
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

/// Runs `cmd` to its end, killing it (and failing) after DEADLINE.
fn run(cmd: Command, what: &str) -> Output {
    deadline::run(cmd, what, DEADLINE)
}

fn native(prog: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(prog);
    c.args(args);
    run(c, &format!("{} natively", prog.display()))
}

fn lwk(prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(RUNNER);
    c.envs(env.iter().copied()).arg(prog).args(args);
    run(c, &format!("{} in the LWK", prog.display()))
}

/// Runs `prog` natively and in the LWK (with `env`): same stdout, same exit code or signal.
fn assert_same(prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let n = native(prog, args);
    let l = lwk(prog, args, env);
    let show = |o: &Output| {
        format!(
            "status {:?}\nstdout:\n{}\nstderr:\n{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    assert_eq!(
        (n.status.code(), n.status.signal(), &n.stdout),
        (l.status.code(), l.status.signal(), &l.stdout),
        "{} {args:?} {env:?}: native and LWK differ\n--- native\n{}\n--- LWK\n{}",
        prog.display(),
        show(&n),
        show(&l)
    );
    l
}

#[test]
fn issue_14_guard_pages_read_only_and_no_exec_pages_and_a_wx_jit_fault_like_native() {
    require_kvm();
    let dir = Scratch::new("multios-lwk-issue14", "protections");
    for flags in [&["-O1"][..], &["-O1", "-static"][..]] {
        let prog = build_c(&dir, "protections", flags);
        let out = assert_same(&prog, &[], &[]);
        let text = String::from_utf8_lossy(&out.stdout);
        for line in [
            "write to a PROT_NONE guard page\n  SIGSEGV code 2 addr base+4104",
            "read of a read-only page\n  no fault",
            "write to a read-only page\n  SIGSEGV code 2 addr base+4128",
            "read of an unmapped page\n  SIGSEGV code 1 addr base+8200",
            "write to const data (.rodata)\n  SIGSEGV code 2 addr base+2048",
            "call into a read-write page\n  SIGSEGV code 2 addr base+0",
            "jit: 1 fault(s) caught and retried",
            "jit: new code returns 7",
            "write from a PROT_NONE buffer: -1 errno 14",
            "read into a read-only buffer: -1 errno 14",
            "write from a read-only buffer: 8 errno 0",
            "other thread: faulted 1, writes after mprotect returned 0",
            "done",
        ] {
            assert!(text.contains(line), "{flags:?}: missing {line:?} in\n{text}");
        }
        // The doorbell-only backend serves mprotect on the vCPU's own thread: the same.
        let exit = lwk(&prog, &[], &[("LWK_BACKEND", "exit")]);
        assert_eq!(exit.stdout, out.stdout, "{flags:?}: exit backend");
    }
}

#[test]
fn issue_14_stack_overflow_into_a_guard_is_killed_by_sigsegv_like_native() {
    require_kvm();
    let dir = Scratch::new("multios-lwk-issue14", "stackoverflow");
    // -O0: the recursion is not turned into a loop.
    let prog = build_c(&dir, "stackoverflow", &["-O0"]);
    for args in [&["thread"][..], &["main"][..], &["thread", "handled"][..]] {
        let out = assert_same(&prog, args, &[]);
        assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("page fault (#PF)"),
            "{args:?}: no fault report: {err}"
        );
        // The thread ran into glibc's guard page (mmap'd, then PROT_NONE), not past its mapping.
        assert_eq!(
            err.contains("mapped PROT_NONE"),
            args[0] == "thread",
            "{args:?}: {err}"
        );
    }
    // A handler on an alternate stack sees SEGV_MAPERR below the deepest frame, as natively.
    let out = assert_same(&prog, &["main", "handled"], &[]);
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("SIGSEGV 11 code 1 addr within 4 KiB below the deepest frame: yes"),
        "{text}"
    );
}
