//! Issue #16 (the twenty-second session), process creation and signals to oneself found different from Linux:
//!
//! 1. clone and clone3 dropped every process-creation flag but the tid words, TLS and
//!    CLONE_VFORK, and "succeeded": CLONE_PIDFD's pidfd was never written, a clone3 struct with a
//!    non-zero tail past what Linux knows, on a PROT_NONE page or of a bad size made a child,
//!    CLONE_CLEAR_SIGHAND was ignored, and namespaces, CLONE_INTO_CGROUP, set_tid,
//!    CLONE_FILES/CLONE_PARENT/exit signal 0 made a plain child. Now what is served is as native
//!    (`tests/c/i16c_cloneflags.c served`) and the rest fails with a note, making no child
//!    (`… refused`);
//! 2. pidfd_send_signal to the caller's own process with a siginfo whose si_code ≥ 0 was EPERM
//!    (the host saw the proxy thread, not the leader, make the call); now queued by the LWK, with
//!    Linux's checks, fault signals with a kernel si_code included (`tests/c/i16c_pidfdself.c`).
//!
//! Needs /dev/kvm and gcc.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{assert_same, build_c, lwk, require_kvm, show, BUILDS};

/// The ring backend and the exit backend (every call through the vCPU thread).
const BACKENDS: [&[(&str, &str)]; 2] = [&[], &[("LWK_BACKEND", "exit")]];

#[test]
fn issue_16_clone_flags_are_served_or_refused_never_ignored() {
    require_kvm("issue #16");
    let dir = Scratch::new("multios-issue16-clone", "cloneflags");
    let refused = [
        ("clone CLONE_NEWUSER: fails errno 22", "a new namespace"),
        (
            "clone3 CLONE_NEWNET|CLONE_NEWUTS: fails errno 22",
            "a new namespace",
        ),
        ("clone3 CLONE_INTO_CGROUP: fails errno 22", "CLONE_INTO_CGROUP"),
        ("clone3 set_tid: fails errno 7", "set_tid"),
        ("clone CLONE_FILES: fails errno 38", "CLONE_FILES"),
        ("clone CLONE_PARENT: fails errno 38", "CLONE_PARENT"),
        // Quiet: Go's CLONE_PIDFD probe has exit signal 0 (`clone.rs`, QUIET_PROBE).
        ("clone3 exit signal 0: fails errno 38", ""),
        (
            "clone of a thread without CLONE_FILES: fails errno 38",
            "a thread with its own file table",
        ),
        (
            "clone of a thread with CLONE_PIDFD: fails errno 22",
            "a thread's pidfd",
        ),
        ("refused: no child left: yes", ""),
    ];
    for flags in BUILDS {
        let prog = build_c(dir.path(), "i16c_cloneflags", flags);
        for env in BACKENDS {
            assert_same(&prog, &["served"], env);
            let l = lwk(&prog, &["refused"], env);
            let out = String::from_utf8_lossy(&l.stdout);
            let err = String::from_utf8_lossy(&l.stderr);
            assert_eq!(l.status.code(), Some(0), "{flags:?} {env:?}\n{}", show(&l));
            let lines: Vec<&str> = out.lines().collect();
            let want: Vec<&str> = refused.iter().map(|r| r.0).collect();
            assert_eq!(lines, want, "{flags:?} {env:?}\n{}", show(&l));
            for (_, note) in refused.iter().filter(|r| !r.1.is_empty()) {
                assert!(
                    err.contains(note) && err.contains("is not supported by the LWK"),
                    "{flags:?} {env:?}: no note naming {note:?}\n{}",
                    show(&l)
                );
            }
        }
    }
}

#[test]
fn issue_16_pidfd_send_signal_to_oneself_like_native() {
    require_kvm("issue #16");
    let dir = Scratch::new("multios-issue16-clone", "pidfdself");
    for flags in BUILDS {
        let prog = build_c(dir.path(), "i16c_pidfdself", flags);
        for env in BACKENDS {
            assert_same(&prog, &[], env);
        }
    }
}
