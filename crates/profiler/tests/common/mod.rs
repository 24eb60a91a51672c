//! Helpers shared by the profiler's integration tests: real programs, strace as the reference.
#![allow(dead_code)]

use multios_profile::Profile;
use multios_profiler::{Backend, Options};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

/// The profiler waits for every child of the test process, so the tests run one at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Panics unless we run as root (eBPF needs it): these tests must not pass silently without it.
pub fn require_root() {
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "the eBPF profiler tests need root (or CAP_BPF+CAP_PERFMON): run them as root"
    );
}

/// A fresh scratch directory for one test, removed when the test is done.
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("multios-profiler-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("cannot create {}: {e}", d.display()));
    Scratch(d)
}

/// Runs the profiler on `cmd` with `backend`.
pub fn profile(backend: Backend, cmd: &[&str]) -> Profile {
    let opts = Options {
        backend: Some(backend),
        command: cmd.iter().map(std::ffi::OsString::from).collect(),
        ..Options::default()
    };
    multios_profiler::profile(&opts).unwrap_or_else(|e| panic!("profiling {cmd:?} failed: {e}"))
}

/// `strace -c -f` counts per system call name.
pub fn strace_counts(cmd: &[&str], dir: &Path) -> BTreeMap<String, u64> {
    let out = dir.join("strace.txt");
    let st = Command::new("strace")
        .args(["-f", "-c", "-o"])
        .arg(&out)
        .arg("--")
        .args(cmd)
        .status()
        .unwrap_or_else(|e| panic!("cannot run strace (Debian package strace): {e}"));
    assert!(st.success() || st.code().is_some(), "strace {cmd:?}: {st}");
    let text =
        std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("strace wrote no {}: {e}", out.display()));
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 5 || !f[0].starts_with(|c: char| c.is_ascii_digit()) || f[f.len() - 1] == "total" {
            continue;
        }
        if let Ok(n) = f[3].parse::<u64>() {
            counts.insert(f[f.len() - 1].to_string(), n);
        }
    }
    assert!(!counts.is_empty(), "no counts parsed from strace output:\n{text}");
    counts
}

/// Our counts per name.
pub fn counts(p: &Profile) -> BTreeMap<String, u64> {
    p.syscalls.iter().map(|s| (s.name.clone(), s.count)).collect()
}

/// Asserts that our counts equal strace's for every system call but `skip` and the calls that
/// never return (strace -c only counts a call when it returns: exit and exit_group never do).
pub fn assert_counts_match(ours: &BTreeMap<String, u64>, strace: &BTreeMap<String, u64>, skip: &[&str]) {
    let never_return = ["exit", "exit_group"];
    let names: std::collections::BTreeSet<&String> = ours.keys().chain(strace.keys()).collect();
    let mut diff = Vec::new();
    for n in names {
        if never_return.contains(&n.as_str()) || skip.contains(&n.as_str()) {
            continue;
        }
        let (a, b) = (
            ours.get(n).copied().unwrap_or(0),
            strace.get(n).copied().unwrap_or(0),
        );
        if a != b {
            diff.push(format!("{n}: ours {a}, strace {b}"));
        }
    }
    assert!(
        diff.is_empty(),
        "counts differ from strace -c -f:\n{}\nours: {ours:?}\nstrace: {strace:?}",
        diff.join("\n")
    );
}

/// Compiles a C program with gcc (extra flags such as -pthread) into `dir`.
pub fn compile_c(dir: &Path, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap_or_else(|e| panic!("cannot write {}: {e}", src.display()));
    let bin = dir.join(name);
    let st = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .args(flags)
        .status()
        .unwrap_or_else(|e| panic!("cannot run gcc (Debian package gcc): {e}"));
    assert!(st.success(), "gcc failed on {}", src.display());
    bin
}

/// A deterministic, compressible file of `len` bytes.
pub fn data_file(dir: &Path, len: usize) -> PathBuf {
    let path = dir.join("data.txt");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let words = [
        "alpha ", "beta ", "gamma ", "delta ", "syscall ", "kernel ", "lwk ", "\n",
    ];
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(words[(x % words.len() as u64) as usize]);
    }
    std::fs::write(&path, s).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}
