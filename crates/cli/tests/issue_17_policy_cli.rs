//! Issue #17: one delegation policy. `lwk run --policy` speaks `emulate --policy`'s language (the LWK
//! intersects it with what it can serve), `--local` is its inverse form and refused with it; the
//! per-syscall cost flags have one parser and both spellings on both commands. The LWK tests need
//! /dev/kvm and gcc: they fail (never skip) when either is missing.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MULTIOS: &str = env!("CARGO_BIN_EXE_multios");

/// A static program whose calls the policies split differently: getppid and uname (optional local
/// calls), write (delegated whatever the policy), brk/mmap (always local). Exits 3.
const PROG: &str = r#"
#include <stdio.h>
#include <unistd.h>
#include <sys/utsname.h>
int main(void) {
    struct utsname u;
    if (uname(&u) != 0) return 1;
    pid_t pp = getppid();
    for (int i = 0; i < 4; i++) if (getppid() != pp) return 2;
    printf("sysname %s, pid %s, ppid %s\n", u.sysname, getpid() > 0 ? "ok" : "bad", pp > 0 ? "ok" : "bad");
    return 3;
}
"#;

fn run(args: &[&str]) -> Output {
    Command::new(MULTIOS)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run multios {args:?}: {e}"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn require_kvm() {
    assert!(
        Path::new("/dev/kvm").exists(),
        "/dev/kvm is missing: the LWK tests need KVM"
    );
}

/// Builds [`PROG`] with `gcc -static` into `dir`.
fn build(dir: &Path) -> PathBuf {
    let src = dir.join("split.c");
    let exe = dir.join("split");
    std::fs::write(&src, PROG).unwrap_or_else(|e| panic!("write {}: {e}", src.display()));
    let o = Command::new("gcc")
        .args(["-static", "-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(o.status.success(), "gcc: {}", stderr(&o));
    exe
}

/// Where the LWK served `name` in the profile at `path`: (local, delegated) counts.
fn placement(path: &Path, name: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let v: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let calls = v["syscalls"].as_array().cloned().unwrap_or_default();
    let Some(c) = calls.iter().find(|c| c["name"] == name) else {
        panic!("{name} is not in {}: {text}", path.display())
    };
    let n = |k: &str| c["placement"][k].as_u64().unwrap_or(u64::MAX);
    (n("local_count"), n("delegated_count"))
}

/// The `--json` summary `lwk run` prints last on stderr.
fn summary(o: &Output) -> serde_json::Value {
    let e = stderr(o);
    let start = match e.starts_with('{') {
        true => 0,
        false => e
            .find("\n{")
            .map(|i| i + 1)
            .unwrap_or_else(|| panic!("no JSON summary: {e}")),
    };
    serde_json::from_str(&e[start..]).unwrap_or_else(|err| panic!("summary: {err}: {e}"))
}

/// `lwk run [--policy P] --profile DIR/NAME.json --json -- PROG`.
fn lwk_run(dir: &Path, exe: &Path, name: &str, policy: &[&str]) -> (Output, PathBuf) {
    let profile = dir.join(format!("{name}.json"));
    let mut c = Command::new(MULTIOS);
    c.args(["--json", "lwk", "run"])
        .args(policy)
        .arg("--profile")
        .arg(&profile);
    c.arg("--").arg(exe);
    let o = c.output().unwrap_or_else(|e| panic!("run multios lwk run: {e}"));
    (o, profile)
}

#[test]
fn issue_17_lwk_run_policy_none_all_mckernel() {
    require_kvm();
    let dir = scratch::Scratch::new("multios-issue17", "lwk-policy");
    let exe = build(&dir);
    let native = Command::new(&exe)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", exe.display()));
    assert_eq!(native.status.code(), Some(3), "native: {}", stderr(&native));
    // (policy, getppid local?, uname local?, the note it gives)
    let cases = [
        (
            "none",
            true,
            true,
            Some("which the LWK cannot serve: they are delegated"),
        ),
        (
            "all",
            false,
            false,
            Some("which the LWK must serve itself: they stay local"),
        ),
        ("mckernel", true, false, None),
    ];
    for (policy, ppid_local, uname_local, note) in cases {
        let (o, profile) = lwk_run(&dir, &exe, policy, &["--policy", policy]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "--policy {policy}: {e}");
        assert_eq!(
            o.stdout, native.stdout,
            "--policy {policy}: output differs from native: {e}"
        );
        let local = |on: bool, n: u64| if on { (n, 0) } else { (0, n) };
        assert_eq!(
            placement(&profile, "getppid"),
            local(ppid_local, 5),
            "--policy {policy}"
        );
        assert_eq!(
            placement(&profile, "uname"),
            local(uname_local, 1),
            "--policy {policy}"
        );
        assert_eq!(
            placement(&profile, "write"),
            (0, 1),
            "--policy {policy}: write is delegated"
        );
        assert_eq!(placement(&profile, "brk").1, 0, "--policy {policy}: brk is local");
        if let Some(note) = note {
            assert_eq!(
                e.matches(note).count(),
                1,
                "--policy {policy}: the note once: {e}"
            );
        }
        let s = summary(&o);
        assert_eq!(s["policy"]["label"], policy, "{s}");
        let listed = |k: &str, n: &str| {
            s["policy"]["overrides"][k]
                .as_array()
                .is_some_and(|v| v.iter().any(|x| x == n))
        };
        match policy {
            "none" => assert!(
                listed("delegated", "write") && !listed("kept_local", "mmap"),
                "{s}"
            ),
            "all" => assert!(
                listed("kept_local", "mmap") && !listed("delegated", "write"),
                "{s}"
            ),
            _ => {}
        }
    }
    // Without --policy: McKernel's split as before, and no note.
    let (o, profile) = lwk_run(&dir, &exe, "default", &[]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(!stderr(&o).contains("note: --policy"), "{}", stderr(&o));
    assert_eq!(summary(&o)["policy"]["label"], "mckernel");
    assert_eq!(placement(&profile, "getppid"), (5, 0));
    assert_eq!(placement(&profile, "uname"), (0, 1));
}

#[test]
fn issue_17_lwk_run_fraction_policy_reads_policy_profile() {
    require_kvm();
    let dir = scratch::Scratch::new("multios-issue17", "lwk-fraction");
    let exe = build(&dir);
    let (o, first) = lwk_run(&dir, &exe, "first", &["--policy", "none"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let o = run(&[
        "lwk",
        "run",
        "--policy",
        "most:1",
        "--",
        exe.to_str().unwrap_or_default(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("add --policy-profile FILE"), "{}", stderr(&o));
    // most:1 delegates every call the profile has: getppid and uname go to Linux.
    let first = first.to_str().unwrap_or_default();
    let (o, second) = lwk_run(
        &dir,
        &exe,
        "second",
        &["--policy", "most:1", "--policy-profile", first],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(placement(&second, "getppid"), (0, 5));
    assert_eq!(placement(&second, "uname"), (0, 1));
}

#[test]
fn issue_17_local_and_policy_are_refused_together() {
    let dir = scratch::Scratch::new("multios-issue17", "local-policy");
    let list = dir.join("local.list");
    std::fs::write(&list, "getppid\n").unwrap_or_else(|e| panic!("write {}: {e}", list.display()));
    let list = list.to_str().unwrap_or_default();
    let o = run(&[
        "lwk",
        "run",
        "--local",
        list,
        "--policy",
        "none",
        "--",
        "/bin/true",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--policy")
            && stderr(&o).contains("--local")
            && stderr(&o).contains("cannot be used with"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn issue_17_fc_syscall_on_model_is_fc_for() {
    let base = [
        "model",
        "refined",
        "--compute",
        "1s",
        "--syscall",
        "write:1000:1ms",
        "--fc",
        "1us",
    ];
    let with = |flag: &str, spec: &str| {
        let mut a = base.to_vec();
        a.extend([flag, spec]);
        run(&a)
    };
    let canonical = with("--fc-for", "write=40us");
    let alias = with("--fc-syscall", "write=40us");
    assert!(canonical.status.success(), "{}", stderr(&canonical));
    assert!(alias.status.success(), "{}", stderr(&alias));
    assert_eq!(canonical.stdout, alias.stdout);
    let plain = run(&base);
    assert_ne!(plain.stdout, alias.stdout, "the override changed nothing");
    let typo = with("--fc-syscall", "wrtie=40us");
    assert!(!typo.status.success());
    assert!(
        stderr(&typo).contains("unknown system call 'wrtie' (did you mean 'write'?)"),
        "{}",
        stderr(&typo)
    );
}

#[test]
fn issue_17_fc_for_on_emulate_is_fc_syscall() {
    let report = |flag: &str, spec: &str| {
        let o = run(&[
            "--json",
            "emulate",
            "--policy",
            "list:/dev/null",
            "--fc",
            "1us",
            flag,
            spec,
            "--",
            "true",
        ]);
        assert!(o.status.success(), "{flag} {spec}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{flag}: {e}: {}", String::from_utf8_lossy(&o.stdout)));
        v["fc"].as_str().unwrap_or_default().to_string()
    };
    let alias = report("--fc-for", "write=3us");
    assert_eq!(alias, report("--fc-syscall", "write=3us"));
    assert!(alias.contains("write=3.000 µs"), "{alias}");
    let o = run(&[
        "emulate",
        "--policy",
        "all",
        "--fc",
        "1us",
        "--fc-for",
        "wrtie=3us",
        "--",
        "true",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("unknown system call 'wrtie' (did you mean 'write'?)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn issue_17_local_is_the_inverse_form() {
    require_kvm();
    let dir = scratch::Scratch::new("multios-issue17", "local");
    let exe = build(&dir);
    let list = dir.join("local.list");
    std::fs::write(&list, "# kept local\ngetppid\nwrite\n")
        .unwrap_or_else(|e| panic!("write {}: {e}", list.display()));
    let list = list.to_str().unwrap_or_default();
    let (o, profile) = lwk_run(&dir, &exe, "local", &["--local", list]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{e}");
    assert!(e.contains("has no local implementation of write"), "{e}");
    assert_eq!(placement(&profile, "getppid"), (5, 0));
    assert_eq!(placement(&profile, "uname"), (0, 1));
    assert_eq!(placement(&profile, "write"), (0, 1));
    assert_eq!(summary(&o)["policy"]["label"], list);
}
