//! Issue #16, calls and loading: file ioctls with known layouts (FICLONE & co., the flags and
//! fsxattr ioctls of `lsattr`/`chattr`, fds inside them held to the floor), madvise checked and
//! applied like Linux (MADV_WIPEONFORK), nested `#!` interpreters (up to Linux's 5 levels), ld.so
//! run as the program (`ldd`, `ld.so PROG`), and the exit status of a program that cannot be
//! found (127) or run (126), mbind on the guest's pages. Every run compares with native and has a
//! deadline. Needs /dev/kvm and gcc.

#[path = "../../../testsupport/exec_file.rs"]
mod exec_file;
#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use sidebyside::{assert_same, build_c, lwk, native, require_kvm, run, show, BUILDS, RUNNER};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LD_SO: &str = "/lib64/ld-linux-x86-64.so.2";

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `prog args` natively and in the LWK with `dir` as the working directory (each in a fresh
/// subdirectory), asserting the same status and stdout.
fn same_in(dir: &Path, prog: &Path, args: &[&str]) -> Output {
    let (n, l) = (dir.join("native"), dir.join("lwk"));
    for d in [&n, &l] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let mut c = Command::new(prog);
    c.args(args).current_dir(&n);
    let no = run(c, "natively");
    let mut c = Command::new(RUNNER);
    c.arg(prog).args(args).current_dir(&l);
    let lo = run(c, "in the LWK");
    assert_eq!(
        (no.status.code(), text(&no)),
        (lo.status.code(), text(&lo)),
        "{} {args:?}\n--- native\n{}\n--- LWK\n{}",
        prog.display(),
        show(&no),
        show(&lo)
    );
    assert!(
        !String::from_utf8_lossy(&lo.stderr).contains("no known layout"),
        "{}",
        show(&lo)
    );
    lo
}

#[test]
fn issue_16_file_ioctls_have_layouts_and_their_fds_are_checked() {
    require_kvm("issue #16");
    let d = scratch::Scratch::new("multios-issue16", "fileioctls");
    for flags in BUILDS {
        let prog = build_c(d.path(), "fileioctls", flags);
        let o = same_in(d.path(), &prog, &[]);
        let out = text(&o);
        assert!(out.contains("FS_IOC_GETFLAGS, &flags)              r=0"), "{out}");
        // An fd at the descriptor limit (in the LWK the VMM's floor, where its own streams are)
        // is EBADF, not the kernel's answer for a VMM file.
        assert!(
            out.contains("ioctl(dst, FICLONE, limit)                       r=-1 EBADF"),
            "{out}"
        );
    }
    // cp tries FICLONE first (EOPNOTSUPP here: it falls back silently), lsattr reads the flags.
    std::fs::write(d.path().join("src1"), "hello\n").expect("write");
    let cp = Path::new("/bin/cp");
    let src = d.path().join("src1");
    let s = src.to_str().expect("utf-8");
    let o = same_in(d.path(), cp, &[s, "dst"]);
    assert!(o.stderr.is_empty(), "{}", show(&o));
    same_in(d.path(), cp, &["--reflink=always", s, "dst"]);
    let o = same_in(d.path(), Path::new("/usr/bin/lsattr"), &["-d", "."]);
    assert!(o.status.success(), "{}", show(&o));
}

#[test]
fn issue_16_madvise_checks_and_wipeonfork_like_native() {
    require_kvm("issue #16");
    let d = scratch::Scratch::new("multios-issue16", "madvise");
    for flags in BUILDS {
        let prog = build_c(d.path(), "madvise", flags);
        let o = assert_same(&prog, &[], &[]);
        let out = text(&o);
        assert!(out.contains("wipe 0,2,3: child sees 0 9 0 0"), "{out}");
        assert!(out.contains("remapped 3: child sees 0 9 9 7"), "{out}");
        assert!(
            out.contains("madvise(a, pg, 12345)                                r=-1 EINVAL"),
            "{out}"
        );
    }
}

#[test]
fn issue_16_mbind_sets_the_policy_of_guest_pages_like_native() {
    require_kvm("issue #16");
    let d = scratch::Scratch::new("multios-issue16", "mbind");
    for flags in BUILDS {
        let prog = build_c(d.path(), "mbind", flags);
        let o = assert_same(&prog, &[], &[]);
        let out = text(&o);
        assert!(out.contains("bind to node 0               0 ok"), "{out}");
        assert!(out.contains("nothing mapped there         -1 EFAULT"), "{out}");
        assert!(String::from_utf8_lossy(&o.stderr).is_empty(), "{:?}", o.stderr);
    }
}

/// Writes the chain s0 (`#!/bin/sh`, printing its arguments) ← s1 ← … ← s5 into `dir`, each
/// `#!` naming the previous one with one argument.
fn script_chain(dir: &Path) -> Vec<PathBuf> {
    let s: Vec<PathBuf> = (0..6).map(|i| dir.join(format!("s{i}"))).collect();
    exec_file::write(&s[0], "#!/bin/sh\necho \"args: $0 $*\"\n", 0o755);
    for i in 1..6 {
        exec_file::write(&s[i], format!("#!{} a{i}\n", s[i - 1].display()), 0o755);
    }
    s
}

#[test]
fn issue_16_nested_interpreters_run_at_start_and_on_execve_like_native() {
    require_kvm("issue #16");
    let d = scratch::Scratch::new("multios-issue16", "nested");
    let s = script_chain(d.path());
    for i in [1, 2, 4] {
        let o = assert_same(&s[i], &["x", "y"], &[]);
        assert!(
            text(&o).contains(&format!("a{i} {} x y", s[i].display())),
            "{}",
            show(&o)
        );
    }
    // Six levels: ELOOP natively (a shell says 126), and at `lwk run` start a message.
    let l = lwk(&s[5], &[], &[]);
    assert_eq!(l.status.code(), Some(126), "{}", show(&l));
    assert!(
        String::from_utf8_lossy(&l.stderr).contains("Too many levels"),
        "{}",
        show(&l)
    );
    for flags in BUILDS {
        let ex = build_c(d.path(), "nestexec", flags);
        for i in [2, 4, 5] {
            let p = s[i].to_str().expect("utf-8");
            let o = assert_same(&ex, &[p, "q"], &[]);
            if i == 5 {
                assert!(text(&o).contains("failed: ELOOP"), "{}", show(&o));
            } else {
                assert!(text(&o).contains("q"), "{}", show(&o));
            }
        }
    }
}

#[test]
fn issue_16_ld_so_run_as_the_program_loads_static_non_pie_and_pie_programs() {
    require_kvm("issue #16");
    let d = scratch::Scratch::new("multios-issue16", "ldso");
    let ld = Path::new(LD_SO);
    for flags in [
        &["-O1", "-static"][..],
        &["-O1", "-no-pie"],
        &["-O1", "-pie", "-fPIE"],
    ] {
        let prog = build_c(d.path(), "ldso", flags);
        let p = prog.to_str().expect("utf-8");
        let o = assert_same(ld, &[p, "arg"], &[]);
        assert!(text(&o).contains("ldso test: 2 args, first arg"), "{}", show(&o));
        assert_eq!(o.status.code(), Some(3));
        assert_same(ld, &["--verify", p], &[]);
        // ldd: the same libraries (the LWK has no vDSO; addresses differ).
        let n = native(Path::new("/usr/bin/ldd"), &[p]);
        let l = lwk(Path::new("/usr/bin/ldd"), &[p], &[]);
        let libs = |o: &Output| -> Vec<String> {
            text(o)
                .lines()
                .filter(|l| !l.contains("linux-vdso"))
                .map(|l| l.split(" (0x").next().unwrap_or(l).trim().to_string())
                .collect()
        };
        assert_eq!(
            (n.status.code(), libs(&n)),
            (l.status.code(), libs(&l)),
            "ldd {p}\n--- native\n{}\n--- LWK\n{}",
            show(&n),
            show(&l)
        );
    }
}

#[test]
fn issue_16_a_program_that_cannot_be_found_or_run_exits_127_or_126() {
    require_kvm("issue #16");
    let d = scratch::Scratch::new("multios-issue16", "exitcodes");
    let noperm = d.path().join("noperm");
    std::fs::write(&noperm, "#!/bin/sh\n").expect("write");
    let badint = d.path().join("badint");
    std::fs::write(&badint, "#!/nonexistent/interp\n").expect("write");
    std::fs::set_permissions(&badint, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let missing = d.path().join("missing");
    for (prog, code) in [
        (Path::new("multios-no-such-program"), 127),
        (missing.as_path(), 127),
        (badint.as_path(), 127),
        (noperm.as_path(), 126),
        (d.path(), 126),
    ] {
        let o = lwk(prog, &[], &[]);
        assert_eq!(o.status.code(), Some(code), "{}: {}", prog.display(), show(&o));
        let name = prog.file_name().and_then(|n| n.to_str()).expect("name");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(name),
            "{}: {}",
            prog.display(),
            show(&o)
        );
    }
}

/// stress-ng's sock, shm-sysv and mremap stressors in the LWK: an mmap of a socket killed the VMM
/// (the host's failed MAP_FIXED left a hole the VMM then touched), a pipe and a procfs file were
/// mapped as pread copies where Linux says ENODEV, shmat over the heap without SHM_REMAP replaced
/// a heap page (glibc's free() aborted), and MREMAP_DONTUNMAP returned the old address
/// (`tests/c/mapquirks.c`; DONTUNMAP is ENOSYS in the LWK, a move natively: both are "moved or
/// refused").
#[test]
fn issue_16_mappings_the_host_refuses_and_shmat_over_memory_like_native() {
    require_kvm("issue #16");
    let d = scratch::Scratch::new("multios-issue16", "mapquirks");
    for flags in BUILDS {
        let prog = build_c(d.path(), "mapquirks", flags);
        let o = same_in(d.path(), &prog, &[]);
        assert!(text(&o).contains("still alive"), "{}", show(&o));
    }
}

/// stress-ng's msg, sem-sysv, sync-file, readahead and utime stressors failed or skipped on
/// ENOSYS: System V message queues and semaphores (a parent and its child exchange messages and
/// wait on a semaphore; a blocked msgrcv is interrupted by a handler), sync_file_range, readahead,
/// utime and utimes, as natively (`tests/c/sysvipc.c`).
#[test]
fn issue_16_system_v_queues_and_semaphores_and_file_calls_like_native() {
    require_kvm("issue #16");
    let d = scratch::Scratch::new("multios-issue16", "sysvipc");
    for flags in BUILDS {
        let prog = build_c(d.path(), "sysvipc", flags);
        let o = same_in(d.path(), &prog, &[]);
        assert!(text(&o).contains("left in the queue: 1"), "{}", show(&o));
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("not supported"),
            "{}",
            show(&o)
        );
    }
}
