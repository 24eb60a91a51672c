//! Issue #13 regressions found 2026-11-28 in the function overrides, the traces and `lwk pack`:
//! lwk-heap's realloc growth, overflow of the memalign family and malloc_usable_size of glibc's
//! blocks; pthread_cancel of a pooled thread under lwk-threads; the tsc override's CLOCK_REALTIME
//! after the real clock is stepped; forked children's traces after the guest changed directory;
//! the line and column of an overrides file's errors; the warning for a program importing
//! another function of an overridden family; `lwk pack -o DIR` and packing a packed file; a
//! relative or empty TMPDIR; the floating-point state a pooled thread starts with, and the clock
//! overrides' arithmetic under a program's MXCSR (`tests/c/overridefp.c`, compared with the
//! native run). Needs /dev/kvm and gcc: FAILS (never skips) without them.

use multios_lwk::overrides::{OverrideError, Overrides};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

const RUNNER: &str = env!("CARGO_BIN_EXE_lwk-run");

fn require_kvm() {
    if let Err(e) = multios_lwk::check_kvm() {
        panic!("issue #13 tests need KVM and it is not usable here: {e}");
    }
}

fn gcc(args: &[&str], out: &Path, srcs: &[PathBuf]) {
    let o = Command::new("gcc")
        .args(args)
        .arg("-o")
        .arg(out)
        .args(srcs)
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(o.status.success(), "gcc: {}", String::from_utf8_lossy(&o.stderr));
}

fn src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// Builds tests/c/NAME.c (dynamically linked, with pthreads) into `dir`.
fn build(dir: &Scratch, name: &str) -> PathBuf {
    let out = dir.path().join(name);
    gcc(
        &["-O1", "-g", "-pthread"],
        &out,
        &[src(&format!("tests/c/{name}.c"))],
    );
    out
}

fn overrides(dir: &Scratch, tag: &str, functions: &[&str]) -> PathBuf {
    let path = dir.path().join(format!("{tag}.yaml"));
    std::fs::write(&path, Overrides::file_text(functions)).expect("write overrides");
    path
}

/// `argv` in the LWK with the overrides `file`, killed (by pid) after `limit`.
fn lwk(argv: &[&str], file: &Path, limit: std::time::Duration) -> Output {
    require_kvm();
    let mut child = Command::new(RUNNER)
        .args(argv)
        .env("LWK_OVERRIDES", file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("lwk-run");
    let t0 = std::time::Instant::now();
    while child.try_wait().expect("waiting").is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!(
                "{argv:?} ran longer than {limit:?}:\n{}\n{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `tests/c/overridefp.c MODE` natively and in the LWK with `functions` overridden: the same
/// output.
fn same_as_native(tag: &str, mode: &str, functions: &[&str]) {
    let dir = Scratch::new("multios-issue-13", tag);
    let prog = build(&dir, "overridefp");
    let p = prog.to_str().expect("utf-8 path");
    let native = Command::new(&prog).arg(mode).output().expect("native run");
    assert!(native.status.success(), "{mode} natively: {}", text(&native));
    let file = overrides(&dir, tag, functions);
    let o = lwk(&[p, mode], &file, std::time::Duration::from_secs(60));
    assert_eq!(
        text(&o),
        text(&native),
        "{mode} with {functions:?} overridden\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{mode}: {:?}", o.status);
}

#[test]
fn issue_13_pooled_threads_start_with_the_creators_floating_point_state() {
    same_as_native("poolfp", "pool", &["pthread_create"]);
}

#[test]
fn issue_13_the_clock_overrides_do_no_floating_point_under_the_programs_mxcsr() {
    same_as_native("clockfp", "clock", &["clock_gettime", "gettimeofday", "time"]);
}

#[test]
fn issue_13_override_fixes_lwk_heap_realloc_growth_overflow_and_usable_size() {
    let dir = Scratch::new("multios-issue-13", "heapfix");
    let prog = build(&dir, "issue_13_heapfix");
    let p = prog.to_str().expect("utf-8 path");
    let file = overrides(&dir, "heap", &["malloc"]);
    let o = lwk(&[p, "256"], &file, std::time::Duration::from_secs(240));
    let out = text(&o);
    assert!(
        o.status.success() && out.contains("heapfix done") && !out.contains("not ok"),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("to 256 MiB (reached 256 MiB)"), "{out}");
    // Natively with the object preloaded too (it used to take 24 GB for the 256 MiB buffer).
    let so = dir.path().join("heap.so");
    gcc(
        &[
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-shared",
            "-fPIC",
            "-pthread",
            "-fno-builtin",
        ],
        &so,
        &[src("csrc/heap.c")],
    );
    let o = Command::new("/usr/bin/time")
        .args(["-f", "maxrss_kb %M"])
        .arg(&prog)
        .arg("256")
        .env("LD_PRELOAD", &so)
        .output()
        .expect("native run");
    let (out, err) = (text(&o), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(o.status.success() && out.contains("heapfix done"), "{out}\n{err}");
    let rss: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("maxrss_kb "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no maxrss in {err}"));
    assert!(rss < 2 << 20, "growing a 256 MiB buffer took {rss} kB");
}

#[test]
fn issue_13_override_fixes_cancelled_pooled_thread_is_joined_as_canceled() {
    let dir = Scratch::new("multios-issue-13", "cancel");
    let prog = build(&dir, "issue_13_cancel");
    let p = prog.to_str().expect("utf-8 path");
    let file = overrides(&dir, "threads", &["pthread_create"]);
    let o = lwk(&[p], &file, std::time::Duration::from_secs(60));
    let out = text(&o);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for k in 0..3 {
        assert!(
            out.contains(&format!("cancel {k}: cancel=0 join=0 canceled=1")),
            "{out}"
        );
    }
    assert!(out.contains("cleanup handler ran 1 time(s)"), "{out}");
    assert!(out.contains("pthread_exit: 7"), "{out}");
    assert!(out.contains("detached cancel=0"), "{out}");
    assert!(out.contains("next 20 create/join: 190"), "{out}");
}

#[test]
fn issue_13_override_fixes_tsc_realtime_follows_a_stepped_real_clock() {
    let dir = Scratch::new("multios-issue-13", "clockstep");
    // The override object from its sources, natively: a real clock can be stepped here (a fake
    // clock_gettime after it in the preload list) without touching the machine's.
    let obj = dir.path().join("overrides.so");
    gcc(
        &[
            "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-pthread",
        ],
        &obj,
        &[
            src("csrc/overrides.c"),
            src("csrc/threads.c"),
            src("csrc/prefault.c"),
        ],
    );
    let fake = dir.path().join("fakeclock.so");
    gcc(
        &["-O2", "-shared", "-fPIC"],
        &fake,
        &[src("tests/c/issue_13_fakeclock.c")],
    );
    let show = dir.path().join("clockstep");
    gcc(&["-O2", "-ldl"], &show, &[src("tests/c/issue_13_clockstep.c")]);
    let hz = multios_host::tsc::calibrate(std::time::Duration::from_millis(1)).hz;
    for step in ["-30", "30"] {
        let o = Command::new(&show)
            .arg(&fake)
            .env("LD_PRELOAD", format!("{}:{}", obj.display(), fake.display()))
            .env("MULTIOS_LWK_OVERRIDES", "clock_gettime,gettimeofday,time")
            // Without a rate the object leaves the clocks to libc (and the test would pass idly).
            .env("MULTIOS_LWK_TSC_HZ", format!("{hz:.0}"))
            .env("STEP_S", step)
            .output()
            .expect("clockstep");
        let out = text(&o);
        assert!(
            o.status.success() && out.matches("ok - ").count() == 2 && !out.contains("not ok"),
            "step {step}: {out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn issue_13_override_fixes_forked_children_trace_beside_the_parent_after_chdir() {
    require_kvm();
    let dir = Scratch::new("multios-issue-13", "chdirfork");
    let prog = build(&dir, "issue_13_chdirfork");
    let sub = dir.path().join("elsewhere");
    std::fs::create_dir_all(&sub).expect("subdir");
    let o = Command::new(RUNNER)
        .arg(&prog)
        .arg(&sub)
        .current_dir(dir.path())
        .env("LWK_TRACE", "run.trace")
        .output()
        .expect("lwk-run");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let names = |d: &Path| -> Vec<String> {
        std::fs::read_dir(d)
            .expect("read dir")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("run.trace"))
            .collect()
    };
    let beside = names(dir.path());
    assert_eq!(
        beside.len(),
        3,
        "the parent's and two children's traces in the starting directory: {beside:?}"
    );
    assert!(
        names(&sub).is_empty(),
        "traces in the guest's new directory: {:?}",
        names(&sub)
    );
}

fn syntax(text: &str) -> (usize, usize, String) {
    match Overrides::parse(text, Path::new("o.yaml")) {
        Err(e @ OverrideError::Syntax { .. }) => {
            let msg = e.to_string();
            let OverrideError::Syntax { line, column, .. } = e else {
                unreachable!()
            };
            (line, column, msg)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn issue_13_override_fixes_errors_point_at_the_entry_once() {
    // The wrong implementation of the second entry, not the first `with: tsc`.
    let (l, c, m) = syntax(
        "overrides:\n  - function: clock_gettime\n    with: tsc\n  - function: pthread_create\n    with: tsc\n",
    );
    assert_eq!((l, c), (5, 11), "{m}");
    // The second naming of a function, not the first.
    let (l, c, m) = syntax(
        "overrides:\n  - function: clock_gettime\n    with: tsc\n  - function: malloc\n    with: lwk-heap\n  - function: clock_gettime\n    with: tsc\n",
    );
    assert_eq!((l, c), (6, 15), "{m}");
    assert!(m.contains("named twice"), "{m}");
    // A value that is also a substring of another entry's line (": time" in "clock_gettime"…).
    let (l, c, m) =
        syntax("overrides:\n  - function: time\n    with: tsc\n  - {function: gettimeofday, with: vdso}\n");
    assert_eq!((l, c), (4, 36), "{m}");
    let (l, c, m) = syntax(
        "overrides:\n  # the clocks\n  - function: clock_gettime\n    with: tsc\n\n  - function: fopen\n    with: tsc\n",
    );
    assert_eq!((l, c), (6, 15), "{m}");
    // serde_yaml's own location is not repeated after the file's.
    let (l, c, m) = syntax("overrides:\n  - function: clock_gettime\n    with: tsc\n    mode: fast\n");
    assert_eq!((l, c), (4, 5), "{m}");
    assert!(m.starts_with("--overrides o.yaml:4:5: "), "{m}");
    assert!(!m.contains("at line 4 column 5"), "the location twice: {m}");
}

#[test]
fn issue_13_override_fixes_no_warning_when_the_program_imports_another_function_of_the_family() {
    let dir = Scratch::new("multios-issue-13", "family");
    let prog = build(&dir, "issue_13_reallocuser");
    let o = Overrides::parse(
        "overrides:\n  - function: malloc\n    with: lwk-heap\n",
        Path::new("o.yaml"),
    )
    .expect("valid");
    let w = o.warnings(&prog);
    assert!(w.is_empty(), "realloc is bound with malloc: {w:?}");
    // A program calling none of the family (the libraries' own calls are not imports).
    let none = build(&dir, "issue_13_chdirfork");
    let w = o.warnings(&none);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("do not call malloc") && w[0].contains("may have no effect"),
        "{w:?}"
    );
}

#[test]
fn issue_13_override_fixes_pack_checks_the_output_first_and_leaves_no_temporary() {
    use multios_lwk::pack::{write, Settings};
    let dir = Scratch::new("multios-issue-13", "pack");
    let d = dir.path();
    let (runner, prog) = (d.join("runner"), d.join("prog"));
    std::fs::write(&runner, vec![0x7f; 1 << 20]).expect("runner");
    std::fs::write(&prog, b"\x7fELF program").expect("prog");
    let s = Settings {
        name: "prog".into(),
        flags: vec![],
        overrides: None,
    };
    let listing = || {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .expect("dir")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let out_dir = d.join("outdir");
    std::fs::create_dir_all(&out_dir).expect("outdir");
    let before = listing();
    let e = write(&runner, &prog, &s, &out_dir).expect_err("-o DIR");
    assert!(e.to_string().contains("is a directory"), "{e}");
    let e = write(&runner, &prog, &s, &d.join("missing/prog.lwk")).expect_err("no such directory");
    assert!(e.to_string().contains("does not exist"), "{e}");
    assert_eq!(listing(), before, "nothing left behind");
    // Packed once; packing the packed file is refused with a clear message.
    let packed = d.join("prog.lwk");
    write(&runner, &prog, &s, &packed).expect("pack");
    let before = listing();
    let e = write(&runner, &packed, &s, &d.join("twice.lwk")).expect_err("packing a packed file");
    assert!(e.to_string().contains("already a packed executable"), "{e}");
    assert_eq!(listing(), before, "nothing left behind");
}

#[test]
fn issue_13_override_fixes_relative_or_empty_tmpdir() {
    require_kvm();
    let dir = Scratch::new("multios-issue-13", "tmpdir");
    let file = overrides(&dir, "clock", &["clock_gettime"]);
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").expect("/proc/self"));
    // Empty: /tmp, not the current directory.
    let o = Command::new(RUNNER)
        .arg("/bin/true")
        .current_dir(dir.path())
        .env("LWK_OVERRIDES", &file)
        .env("TMPDIR", "")
        .output()
        .expect("lwk-run");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        !dir.path().join(format!("multios-{uid}")).exists(),
        "an empty TMPDIR is the current directory"
    );
    // Relative: made absolute, so a program that changes directory still finds the preloaded
    // object (ld.so reads LD_PRELOAD at each exec).
    let o = Command::new(RUNNER)
        .args(["/bin/sh", "-c", "cd / && exec /bin/true"])
        .current_dir(dir.path())
        .env("LWK_OVERRIDES", &file)
        .env("TMPDIR", "rel")
        .output()
        .expect("lwk-run");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("cannot be preloaded"), "{err}");
    assert!(dir.path().join(format!("rel/multios-{uid}")).is_dir(), "{err}");
}
