//! Issue #16 (2026-12, session d2's findings): the LWK against native Linux after the guest drops
//! root or chroots (fork made a new VM by opening /dev/kvm by path again and the child exited 127;
//! the syscall-site cache was written inside the new root), with RLIMIT_STACK (the main stack was
//! always 8 MiB; execve's budget a fixed 2 MiB), execve's errnos (EFAULT for E2BIG and
//! ENAMETOOLONG) and sched_setattr/sched_getattr (ENOSYS). Needs /dev/kvm, gcc with a static
//! libc, and root for the setuid and chroot cases (as another user both sides fail alike).

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use sidebyside::{build_c, require_kvm, run, show, RUNNER};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};

/// `prog args` natively and in the LWK under `sh -c 'ulimit -s LIMIT; exec …'`: the same exit
/// code or signal and stdout. Returns the LWK's output.
fn same_under(limit: &str, prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let under = |front: &[&Path]| {
        let mut c = Command::new("sh");
        c.args(["-c", &format!("ulimit -S -s {limit} && exec \"$@\""), "sh"])
            .args(front)
            .arg(prog)
            .args(args)
            .envs(env.iter().copied());
        run(
            c,
            &format!("{} {args:?} (ulimit -s {limit}, {front:?})", prog.display()),
        )
    };
    let (n, l) = (under(&[]), under(&[Path::new(RUNNER)]));
    let key = |o: &Output| {
        (
            o.status.code(),
            o.status.signal(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    assert_eq!(
        key(&n),
        key(&l),
        "{} {args:?} ulimit -s {limit}: native and LWK differ\n--- native\n{}\n--- LWK\n{}",
        prog.display(),
        show(&n),
        show(&l)
    );
    l
}

#[test]
fn issue_16_fork_after_setuid_or_chroot_runs_the_child() {
    require_kvm("issue #16");
    let dir = scratch::Scratch::new("multios-i16p", "fork");
    let prog = build_c(dir.path(), "i16p_dropfork", &["-O1", "-static"]);
    let l = same_under("8192", &prog, &["uid"], &[]);
    assert!(
        String::from_utf8_lossy(&l.stdout).contains("child exit 7") || !is_root(),
        "{}",
        show(&l)
    );
    // A chroot holding only the program; the site cache named outside it must not appear inside.
    let root = dir.path().join("cr");
    std::fs::create_dir_all(&root).expect("chroot dir");
    std::fs::copy(&prog, root.join("prog")).expect("copy the program");
    let cache = dir.path().join("sitecache");
    let env = [("MULTIOS_LWK_SITE_CACHE", cache.to_str().expect("utf-8 path"))];
    let root_s = root.to_str().expect("utf-8 path");
    let l = same_under("8192", &prog, &["chroot", root_s], &env);
    if is_root() {
        assert!(
            String::from_utf8_lossy(&l.stdout).contains("vfork+exec: exit 2"),
            "{}",
            show(&l)
        );
    }
    let inside: Vec<_> = walk(&root);
    assert_eq!(
        inside,
        vec![root.join("prog")],
        "the run wrote into the guest's root"
    );
}

/// Every file and directory under `d`.
fn walk(d: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
        out.push(e.path());
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

fn is_root() -> bool {
    let o = Command::new("id").arg("-u").output().expect("id -u");
    String::from_utf8_lossy(&o.stdout).trim() == "0"
}

#[test]
fn issue_16_main_stack_follows_rlimit_stack() {
    require_kvm("issue #16");
    let dir = scratch::Scratch::new("multios-i16p", "stack");
    let prog = build_c(dir.path(), "i16p_recur", &["-O0"]);
    // 1 KiB frames: 20000 need ≈ 20 MiB, 7000 ≈ 7 MiB, 500 ≈ 0.5 MiB.
    for (limit, depth, ok) in [
        ("unlimited", "20000", true),
        ("65536", "20000", true),
        ("8192", "20000", false),
        ("1024", "7000", false),
        ("1024", "500", true),
    ] {
        let l = same_under(limit, &prog, &[depth], &[]);
        assert_eq!(
            l.status.success(),
            ok,
            "ulimit -s {limit}, depth {depth}: {}",
            show(&l)
        );
    }
    // The guest raises its own limit, then execs: the new image gets the larger stack.
    let sh = format!("ulimit -S -s unlimited && exec {} 20000", prog.display());
    let l = same_under("8192", Path::new("/bin/sh"), &["-c", &sh], &[]);
    assert!(l.status.success(), "{}", show(&l));
}

#[test]
fn issue_16_execve_errnos_and_budget_are_linuxs() {
    require_kvm("issue #16");
    let dir = scratch::Scratch::new("multios-i16p", "exec");
    let prog = build_c(dir.path(), "i16p_execerr", &["-O1"]);
    for limit in ["8192", "1024", "unlimited"] {
        let l = same_under(limit, &prog, &[], &[]);
        let out = String::from_utf8_lossy(&l.stdout);
        assert!(
            out.contains("arg 131072: 7\n") && out.contains("path 4096: 36\n"),
            "{out}"
        );
    }
}

#[test]
fn issue_16_sched_attr_calls_are_the_threads() {
    require_kvm("issue #16");
    let dir = scratch::Scratch::new("multios-i16p", "sched");
    let prog = build_c(dir.path(), "i16p_schedattr", &["-O1"]);
    let l = same_under("8192", &prog, &[], &[]);
    assert!(
        String::from_utf8_lossy(&l.stdout).contains("get thread by tid: 0 policy 5"),
        "{}",
        show(&l)
    );
}

#[test]
fn issue_16_a_path_longer_than_path_max_is_enametoolong() {
    require_kvm("issue #16");
    let dir = scratch::Scratch::new("multios-i16p", "longpath");
    let prog = build_c(dir.path(), "i16p_longpath", &["-O1"]);
    let l = same_under("8192", &prog, &[], &[]);
    assert_eq!(
        String::from_utf8_lossy(&l.stdout),
        "stat ENAMETOOLONG\nopen ENAMETOOLONG\naccess ENAMETOOLONG\nexecve ENAMETOOLONG\n",
        "{}",
        show(&l)
    );
}
