//! Issue #16 (twenty-fourth session): a VMM started where /proc is not procfs — a chroot, a
//! container or a sandbox without it, here a mount namespace with /proc unmounted, or with a
//! tmpfs at /proc that a root guest filled with a `self/fd` directory and FIFOs of its own. The
//! LWK refused a non-procfs /proc (rightly) but then had no procfs at all: every open the guest
//! made (reopened through `self/fd/N`) failed with EACCES, and a dynamic program died loading
//! libc. The VMM now makes a procfs instance of its own with the new mount API (`fsopen`,
//! `fsmount`: mounted nowhere, `sys/procmount.rs`) and never opens `/proc/…` by path
//! (`sys::open_proc`). `tests/c/noproc.c` opens, forks and execs itself with a close-on-exec
//! descriptor under `unshare -m`, natively and in the LWK: same output and status. Needs
//! /dev/kvm, gcc, unshare and root: FAILS (never skips) without.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{build_c, require_kvm, run, show, BUILDS, RUNNER, VARIANTS};
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

/// What each run's mount namespace has at /proc.
const SETUPS: [(&str, &str); 2] = [
    ("no /proc", "umount -l /proc"),
    (
        "a tmpfs the guest filled",
        "umount -l /proc && mount -t tmpfs none /proc && mkdir -p /proc/self/fd /proc/thread-self \
         && mkfifo /proc/self/stat /proc/self/pagemap /proc/thread-self/schedstat",
    ),
];

/// Runs `cmd` (program and arguments) in a new mount namespace after `setup`.
fn unshared(setup: &str, cmd: &[&str], env: &[(&str, &str)], what: &str) -> std::process::Output {
    let mut c = Command::new("unshare");
    c.args(["-m", "sh", "-c", &format!("{setup} && exec \"$@\""), "sh"])
        .args(cmd)
        .envs(env.iter().copied());
    run(c, what)
}

#[test]
fn issue_16_no_procfs() {
    require_kvm("issue #16");
    let dir = Scratch::new("multios-issue16", "noproc");
    for flags in BUILDS {
        let prog = build_c(dir.path(), "noproc", flags);
        let p = prog.to_str().expect("a UTF-8 scratch path");
        for (name, setup) in SETUPS {
            let n = unshared(setup, &[p], &[], &format!("{p} natively, {name}"));
            assert!(
                n.status.success() && String::from_utf8_lossy(&n.stdout).contains("open of the program: ok"),
                "{p} natively with {name} (unshare -m needs root):\n{}",
                show(&n)
            );
            for env in VARIANTS {
                let l = unshared(setup, &[RUNNER, p], env, &format!("{p} in the LWK, {name}"));
                assert_eq!(
                    (n.status.code(), n.status.signal(), &n.stdout),
                    (l.status.code(), l.status.signal(), &l.stdout),
                    "{p} with {name} {env:?}\n--- native\n{}\n--- LWK\n{}",
                    show(&n),
                    show(&l)
                );
            }
        }
    }
}
