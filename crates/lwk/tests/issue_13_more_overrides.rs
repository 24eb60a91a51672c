//! Issue #13: the overrides beyond the clocks — `pthread_create`/`pthread_join` on LWK-native
//! threads (`lwk-threads`), `mmap` with prefaulting (`prefault`), the `malloc` family on the
//! LWK's allocator (`lwk-heap`) — each bound through the preloaded object: the override runs and
//! the original does not (the forwarded-event trace shows which calls the guest made), the output
//! is the native one, and a program without the function still runs with a warning. CPython
//! runs a threaded workload split across the LWK's CPUs with pthread_create overridden. Needs
//! /dev/kvm, gcc and Debian's python3.11: FAILS (never skips) without them.

use multios_lwk::trace::{Kind, Trace};
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

/// Builds tests/c/NAME.c (dynamically linked, with pthreads) into `dir`.
fn build(dir: &Scratch, name: &str) -> PathBuf {
    require_kvm();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let out = dir.path().join(name);
    let o = Command::new("gcc")
        .args(["-O1", "-g", "-pthread", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(o.status.success(), "gcc: {}", String::from_utf8_lossy(&o.stderr));
    out
}

/// An overrides file naming `functions` with their implementations.
fn overrides(dir: &Scratch, tag: &str, functions: &[&str]) -> PathBuf {
    let path = dir.path().join(format!("{tag}.yaml"));
    std::fs::write(&path, multios_lwk::overrides::Overrides::file_text(functions)).expect("write overrides");
    path
}

/// `argv` in the LWK with a trace (and overrides, and the partition `cpus`, when given).
fn lwk(dir: &Scratch, argv: &[&str], file: Option<&Path>, cpus: Option<&str>, tag: &str) -> (Output, Trace) {
    let trace = dir.path().join(format!("{tag}.trace"));
    let mut cmd = Command::new(RUNNER);
    cmd.args(argv).env("LWK_TRACE", &trace);
    if let Some(f) = file {
        cmd.env("LWK_OVERRIDES", f);
    }
    if let Some(c) = cpus {
        cmd.env("LWK_CPUS", c);
    }
    let o = cmd.output().expect("lwk-run");
    assert!(
        o.status.success(),
        "{tag}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (o, Trace::load(&trace).expect("trace"))
}

fn native(argv: &[&str]) -> Output {
    let o = Command::new(argv[0])
        .args(&argv[1..])
        .output()
        .expect("native run");
    assert!(
        o.status.success(),
        "native {argv:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn count(t: &Trace, kind: Kind, name: &str) -> usize {
    t.events
        .iter()
        .filter(|e| e.kind == kind && e.name == name)
        .count()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn issue_13_thread_override_runs_lwk_native_threads_and_not_glibcs() {
    let dir = Scratch::new("multios-issue-13", "threads");
    let prog = build(&dir, "threadpool");
    let p = prog.to_str().expect("utf-8 path");
    let file = overrides(&dir, "threads", &["pthread_create"]);
    let want = text(&native(&[p]));
    assert!(want.contains("300 sequential threads"), "{want}");
    let (o, t) = lwk(&dir, &[p], Some(&file), None, "threads");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("no effect"), "the override binds: {err}");
    assert_eq!(text(&o), want, "same output as natively");
    // 369 threads were asked for (300 sequential, 8, 1, 40 detached, 4 more, 2 for the masks);
    // glibc made only the pool's few: the original pthread_create did not run for the others.
    let clones = count(&t, Kind::Local, "clone3") + count(&t, Kind::Local, "clone");
    assert!((1..=16).contains(&clones), "{clones} threads made through clone");
}

#[test]
fn issue_13_thread_create_join_without_the_override_goes_through_clone() {
    let dir = Scratch::new("multios-issue-13", "threads-plain");
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiment/csrc/threadbench.c");
    let out = dir.path().join("threadbench");
    let o = Command::new("gcc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&out)
        .arg(&bench)
        .output()
        .expect("gcc");
    assert!(o.status.success(), "gcc: {}", String::from_utf8_lossy(&o.stderr));
    require_kvm();
    let b = out.to_str().expect("utf-8 path");
    let file = overrides(&dir, "threads", &["pthread_join"]);
    let (plain, t0) = lwk(&dir, &[b, "50"], None, None, "plain");
    let (over, t1) = lwk(&dir, &[b, "50"], Some(&file), None, "over");
    for o in [&plain, &over] {
        assert!(text(o).contains("pairs 50 failed 0"), "{}", text(o));
    }
    assert_eq!(
        count(&t0, Kind::Local, "clone3"),
        50,
        "one clone per thread without the override"
    );
    assert_eq!(
        count(&t1, Kind::Local, "clone3"),
        1,
        "naming pthread_join binds pthread_create too"
    );
}

#[test]
fn issue_13_prefault_override_populates_anonymous_mappings_when_made() {
    let dir = Scratch::new("multios-issue-13", "prefault");
    let prog = build(&dir, "prefault");
    let p = prog.to_str().expect("utf-8 path");
    let file = overrides(&dir, "prefault", &["mmap"]);
    // Natively with the object preloaded (the overrides work outside the LWK too): the big
    // mapping is resident before the program touches it; without it, it is not.
    let env = multios_lwk::overrides::Overrides::load(&file)
        .expect("overrides file")
        .environment(&[])
        .expect("the override object");
    let mut cmd = Command::new(p);
    for e in &env {
        let (k, v) = e.to_str().and_then(|e| e.split_once('=')).expect("NAME=value");
        cmd.env(k, v);
    }
    let with = cmd.output().expect("native run with the object");
    assert!(
        text(&with).contains("resident_before_touch all"),
        "{}",
        text(&with)
    );
    let without = text(&native(&[p]));
    assert!(without.contains("resident_before_touch none"), "{without}");
    // In the LWK: the output of a run with all pages resident, and every anonymous mapping of the
    // program followed by its populate call (a local madvise), which the plain run does not make.
    let (o, t) = lwk(&dir, &[p, "16"], Some(&file), None, "prefault");
    assert_eq!(text(&o), text(&with));
    let (_, plain) = lwk(&dir, &[p, "16"], None, None, "plain");
    let populates = count(&t, Kind::Local, "madvise") - count(&plain, Kind::Local, "madvise");
    assert!(
        populates >= 9,
        "{populates} populate calls for the program's 9 anonymous mappings"
    );
}

#[test]
fn issue_13_malloc_override_runs_the_lwk_heap_and_not_glibcs() {
    let dir = Scratch::new("multios-issue-13", "heap");
    // heap.c: four threads allocating and freeing blocks of every size; glibc's malloc grows its
    // main arena with brk, the other threads' arenas and big blocks with mmap.
    let prog = build(&dir, "heap");
    let p = prog.to_str().expect("utf-8 path");
    let file = overrides(&dir, "heap", &["malloc"]);
    let want = text(&native(&[p]));
    let (plain, t0) = lwk(&dir, &[p], None, None, "plain");
    let (over, t1) = lwk(&dir, &[p], Some(&file), None, "heap");
    assert!(want.starts_with("checked "), "{want}");
    assert_eq!(text(&plain), want);
    assert_eq!(text(&over), want);
    // ld.so sets up the break once (brk(0)) in every run; glibc's malloc then grows it.
    let (brk_plain, brk_heap) = (count(&t0, Kind::Local, "brk"), count(&t1, Kind::Local, "brk"));
    assert!(brk_plain > 1, "glibc's malloc uses brk: {brk_plain}");
    assert!(brk_heap <= 1, "the LWK heap makes no brk call: {brk_heap}");
}

#[test]
fn issue_13_cpython_threads_split_across_the_lwk_cpus_with_pthread_create_overridden() {
    require_kvm();
    let python = "/usr/bin/python3.11";
    assert!(
        Path::new(python).exists(),
        "{python} is missing: apt-get install python3.11 (scripts/deps.sh)"
    );
    let dir = Scratch::new("multios-issue-13", "cpython");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/threads.py");
    let s = script.to_str().expect("utf-8 path");
    // 4 threads × 40 rounds: 160 threads over the run, more than the LWK's 128 vCPU ids.
    let argv = [python, s, "4", "40"];
    let want = text(&native(&argv));
    assert!(want.contains("rounds 40 threads 4 digest"), "{want}");
    let cpus: Vec<usize> = multios_lwk::available_cpus();
    let list = cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let file = overrides(&dir, "threads", &["pthread_create"]);
    let (o, t) = lwk(&dir, &argv, Some(&file), Some(&list), "cpython");
    assert_eq!(text(&o), want, "same output as natively");
    let clones = count(&t, Kind::Local, "clone3") + count(&t, Kind::Local, "clone");
    assert!(
        clones <= 16,
        "{clones} threads made through clone for 160 Python threads"
    );
    // The threads ran on several vCPUs, placed round robin on the partition's CPUs.
    let mut vcpus: Vec<u32> = t.events.iter().map(|e| e.cpu).collect();
    vcpus.sort_unstable();
    vcpus.dedup();
    assert!(vcpus.len() >= 3, "events from vCPUs {vcpus:?}");
    assert!(
        cpus.len() >= 2,
        "the machine has {} CPU(s); the partition needs 2",
        cpus.len()
    );
}

#[test]
fn issue_13_programs_without_the_overridden_functions_still_run_with_a_warning() {
    require_kvm();
    let dir = Scratch::new("multios-issue-13", "absent");
    let file = overrides(&dir, "all", &["pthread_create", "mmap", "malloc"]);
    let o = Command::new(RUNNER)
        .arg("/bin/true")
        .env("LWK_OVERRIDES", &file)
        .output()
        .expect("lwk-run");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("do not call pthread_create"), "{err}");
}
