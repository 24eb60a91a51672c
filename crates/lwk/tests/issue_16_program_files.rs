//! Issue #16 (twenty-fourth session, attacker probe d1): the files an execve runs.
//!
//! * A FIFO, a socket or a character device with x bits, or a program whose `#!` or PT_INTERP
//!   interpreter is a FIFO, is EACCES at once natively (`may_open` with MAY_EXEC). The LWK opened
//!   them by name without O_NONBLOCK: a FIFO hung the VMM in its open — at start-up too — (SIGINT
//!   ended it only after a 10 s grace), a device gave ENOEXEC, a socket ENXIO. Now each file is
//!   opened once as O_PATH, checked, and read through that descriptor (`loader/exefile.rs`).
//! * The guest's own `exe` link was the VMM's binary under every spelling but the exact string
//!   "/proc/self/exe": `/proc/PID/exe`, `/proc/thread-self/exe`, `/proc/self/./exe`, a symbolic
//!   link to it, a name relative to /proc/self opened, named and exec'd lwk-run. It is now decided
//!   from the procfs entry the name resolves to (`procfs::Verdict::OwnExe`, `syscall/ownexe.rs`),
//!   and answered with the guest's program file (kept open, so a deleted program reads as natively).
//!
//! `tests/c/i16l_execfile.c` and `tests/c/i16l_selfexe.c` natively and in the LWK, dynamic and
//! static: same output and status, within a deadline that catches the hang. Needs /dev/kvm, gcc
//! and root (mknod): FAILS (never skips) without.

#[path = "../../../testsupport/deadline.rs"]
mod deadline;
#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{build_c, require_kvm, show, BUILDS, RUNNER};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

/// Each run takes well under a second when it works; a hung exec is caught after this.
const DEADLINE: Duration = Duration::from_secs(30);

fn native(prog: &Path, args: &[&Path]) -> Output {
    let mut c = Command::new(prog);
    c.args(args);
    deadline::run(c, &format!("{} natively", prog.display()), DEADLINE)
}

fn lwk(prog: &Path, args: &[&Path], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(RUNNER);
    c.envs(env.iter().copied()).arg(prog).args(args);
    deadline::run(c, &format!("{} in the LWK", prog.display()), DEADLINE)
}

fn assert_same(n: &Output, l: &Output, what: &str) {
    assert_eq!(
        (
            n.status.code(),
            n.status.signal(),
            String::from_utf8_lossy(&n.stdout)
        ),
        (
            l.status.code(),
            l.status.signal(),
            String::from_utf8_lossy(&l.stdout)
        ),
        "{what}: native and LWK differ\n--- native\n{}\n--- LWK\n{}",
        show(n),
        show(l)
    );
}

#[test]
fn issue_16_exec_of_a_fifo_socket_device_or_fifo_interpreter_is_eacces_at_once() {
    require_kvm("issue #16");
    let dir = Scratch::new("multios-issue16", "execfile");
    // A program whose PT_INTERP is the FIFO the C program makes in `dir`.
    let fifo = dir.path().join("fifo");
    let interp_fifo = dir.path().join("interp_fifo");
    let hello = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/hellomsg.c");
    let o = Command::new("gcc")
        .arg(format!("-Wl,--dynamic-linker={}", fifo.display()))
        .arg("-o")
        .arg(&interp_fifo)
        .arg(&hello)
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(o.status.success(), "gcc: {}", String::from_utf8_lossy(&o.stderr));
    for flags in BUILDS {
        let prog = build_c(dir.path(), "i16l_execfile", flags);
        let args = [dir.path(), interp_fifo.as_path()];
        let n = native(&prog, &args);
        for env in [&[][..], &[("LWK_BACKEND", "exit")][..]] {
            let l = lwk(&prog, &args, env);
            assert_same(&n, &l, &format!("i16l_execfile {flags:?} {env:?}"));
        }
        let s = String::from_utf8_lossy(&n.stdout);
        assert_eq!(s.matches("Permission denied").count(), 7, "{s}");
        assert!(s.ends_with("done\n"), "{s}");
    }
    // At start-up: the interpreter FIFO is refused (exit 126 as a shell's), not waited on.
    let e = Command::new(&interp_fifo)
        .status()
        .expect_err("natively the kernel refuses to run it");
    assert_eq!(e.raw_os_error(), Some(libc::EACCES), "{e}");
    let l = deadline::run(
        {
            let mut c = Command::new(RUNNER);
            c.arg(&interp_fifo);
            c
        },
        "lwk-run of a program whose interpreter is a FIFO",
        DEADLINE,
    );
    assert_eq!(l.status.code(), Some(126), "{}", show(&l));
    assert!(
        String::from_utf8_lossy(&l.stderr).contains("Permission denied"),
        "{}",
        show(&l)
    );
}

#[test]
fn issue_16_the_guests_own_exe_link_is_its_program_however_spelled() {
    require_kvm("issue #16");
    for flags in BUILDS {
        let dir = Scratch::new("multios-issue16", "selfexe");
        let prog = build_c(dir.path(), "i16l_selfexe", flags);
        let args = [dir.path()];
        let n = native(&prog, &args);
        for env in [
            &[][..],
            &[("LWK_BACKEND", "exit")][..],
            &[("LWK_NO_REWRITE", "1")][..],
        ] {
            let l = lwk(&prog, &args, env);
            assert_same(&n, &l, &format!("i16l_selfexe {flags:?} {env:?}"));
        }
        let s = String::from_utf8_lossy(&n.stdout);
        assert_eq!(s.matches(": the program").count(), 8, "{s}");
        assert_eq!(s.matches("child of").count(), 7, "{s}");
        assert!(s.contains("deleted: readlink ends in (deleted): yes"), "{s}");
        assert!(s.contains("deleted copy: status 0"), "{s}");
    }
}
