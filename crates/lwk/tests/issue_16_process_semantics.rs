//! Issue #16, process semantics found different from Linux by a tester, each compared with the
//! native run (same stdout, same exit code or signal):
//!
//! 1. robust mutexes whose owner dies are reported (EOWNERDEAD) — a thread's exit, a forked
//!    child's exit, death by a signal or exit_group with another thread holding the lock — and a
//!    waiter is woken (it hung, or timed out for a process-shared one): `tests/c/robustdeath.c`;
//! 2. SIGCHLD's SA_NOCLDSTOP, SA_NOCLDWAIT and SIG_IGN (a stopped child ran the handler, wait
//!    returned a child that should not have been a zombie): `tests/c/nocld.c`;
//! 3. kill(0, sig) and kill(-pgid, sig) reach the caller's process group (only the caller got
//!    it, and -pgid was EPERM): `tests/c/killgroup.c`, and `sh -c 'kill -TERM 0'` ends the shell;
//! 4. prctl: the thread name round trip, and the options that were EINVAL: `tests/c/prctls.c`;
//! 5. a new thread's floating-point state is its creator's (rounding mode, flush-to-zero, x87
//!    control word), as clone copies it: `tests/c/thrfp.c`; and after execve it is the initial
//!    one, whatever the program before set: `tests/c/execfp.c`.
//!
//! Every run has a deadline (a hang fails). The group kills run in a process group of their own.
//! Needs /dev/kvm and gcc.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{assert_same, build_c, require_kvm, run, show, BUILDS, RUNNER};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Command;

/// The ring backend and the exit backend (every call through the vCPU thread).
const BACKENDS: [&[(&str, &str)]; 2] = [&[], &[("LWK_BACKEND", "exit")]];

fn same_everywhere(name: &str) {
    require_kvm("issue #16");
    let dir = Scratch::new("multios-issue16-proc", name);
    for flags in BUILDS {
        let prog = build_c(dir.path(), name, flags);
        for env in BACKENDS {
            assert_same(&prog, &[], env);
        }
    }
}

#[test]
fn issue_16_new_threads_inherit_the_floating_point_state() {
    same_everywhere("thrfp");
}

#[test]
fn issue_16_exec_starts_with_the_initial_floating_point_state() {
    same_everywhere("execfp");
}

#[test]
fn issue_16_a_dead_owner_of_a_robust_mutex_is_reported_like_native() {
    same_everywhere("robustdeath");
}

#[test]
fn issue_16_sa_nocldstop_sa_nocldwait_and_ignored_sigchld_like_native() {
    same_everywhere("nocld");
}

#[test]
fn issue_16_prctl_names_and_attributes_like_native() {
    same_everywhere("prctls");
}

/// Runs `cmd` in a process group of its own (a group kill must not reach the test).
fn in_own_group(mut cmd: Command, what: &str) -> std::process::Output {
    cmd.process_group(0);
    run(cmd, what)
}

#[test]
fn issue_16_kill_of_the_process_group_reaches_every_member_like_native() {
    require_kvm("issue #16");
    let dir = Scratch::new("multios-issue16-proc", "killgroup");
    for flags in BUILDS {
        let prog = build_c(dir.path(), "killgroup", flags);
        let n = in_own_group(Command::new(&prog), "killgroup natively");
        for env in BACKENDS {
            let mut c = Command::new(RUNNER);
            c.envs(env.iter().copied()).arg(&prog);
            let l = in_own_group(c, "killgroup in the LWK");
            assert_eq!(
                (n.status.code(), String::from_utf8_lossy(&n.stdout)),
                (l.status.code(), String::from_utf8_lossy(&l.stdout)),
                "{flags:?} {env:?}\n--- native\n{}\n--- LWK\n{}",
                show(&n),
                show(&l)
            );
        }
    }
}

#[test]
fn issue_16_a_script_killing_its_own_group_dies_like_native() {
    require_kvm("issue #16");
    let script = "echo before; kill -TERM 0; echo after";
    let mut c = Command::new("/bin/sh");
    c.args(["-c", script]);
    let n = in_own_group(c, "sh natively");
    let mut c = Command::new(RUNNER);
    c.args(["/bin/sh", "-c", script]);
    let l = in_own_group(c, "sh in the LWK");
    assert_eq!(n.status.signal(), Some(libc::SIGTERM), "{}", show(&n));
    assert_eq!(
        (l.status.signal(), String::from_utf8_lossy(&l.stdout)),
        (n.status.signal(), String::from_utf8_lossy(&n.stdout)),
        "{}",
        show(&l)
    );
}

/// The argument and environment strings were laid out in reverse (argv[0] highest), and the task
/// kept the VMM's name ("multios" in /proc/self/comm, `ps`, `pgrep`): both as Linux now, after
/// an exec too (`tests/c/argvlayout.c`).
#[test]
fn issue_16_argv_strings_and_the_task_name_like_native() {
    same_everywhere("argvlayout");
    let d = Scratch::new("multios-issue16", "argvlayout-exec");
    let prog = build_c(d.path(), "argvlayout", &["-O1"]);
    let script = format!("exec {} a bb ccc", prog.display());
    let mut c = Command::new(RUNNER);
    c.args(["/bin/sh", "-c", &script]);
    let o = run(c, "in the LWK after an exec");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("strings laid out as Linux: yes") && text.contains("comm: argvlayout"),
        "{}",
        show(&o)
    );
}
