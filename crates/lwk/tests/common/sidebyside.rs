//! Running one program natively and in the LWK and comparing them: the helpers the issue #14
//! tests of real-time signals, thread churn and clean ends share (`tests/issue_14_*.rs` include
//! it with `#[path = "common/sidebyside.rs"] mod sidebyside;`).
#![allow(dead_code)]

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The crate's test front end (`src/bin/lwk-run.rs`).
pub const RUNNER: &str = env!("CARGO_BIN_EXE_lwk-run");

/// Only detects a hang: every run of these tests takes seconds when it works.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// The builds a side-by-side test compiles its C program with: dynamic and static.
pub const BUILDS: [&[&str]; 2] = [&["-O1"], &["-O1", "-static"]];

/// The LWK variants a side-by-side test runs each build under: the ring backend, the exit
/// backend, and syscall sites left to trap (not rewritten).
pub const VARIANTS: [&[(&str, &str)]; 3] = [&[], &[("LWK_BACKEND", "exit")], &[("LWK_NO_REWRITE", "1")]];

/// Fails loudly when KVM is not usable (these tests never skip).
pub fn require_kvm(issue: &str) {
    if let Err(e) = multios_lwk::check_kvm() {
        panic!("{issue} tests need KVM and it is not usable here: {e}");
    }
}

/// Builds tests/c/NAME.c with gcc, `flags` and -lpthread into `dir`.
pub fn build_c(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(format!("{name}.c"));
    let out = dir.join(format!("{name}{}", flags.concat()));
    let o = Command::new("gcc")
        .args(flags)
        .args(["-g", "-o"])
        .arg(&out)
        .arg(&src)
        .args(["-lpthread", "-lrt"])
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(
        o.status.success(),
        "gcc {}: {}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Runs `cmd` to its end, killing it (and failing) after [`DEADLINE`].
pub fn run(mut cmd: Command, what: &str) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {what}: {e}"));
    // Read both pipes while waiting, so a talkative program cannot fill one and stall.
    let out = child.stdout.take().map(drain);
    let err = child.stderr.take().map(drain);
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if t0.elapsed() > DEADLINE => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what} hung for {DEADLINE:?}");
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("waiting for {what}: {e}"),
        }
    };
    let take = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
        h.map(|h| h.join().unwrap_or_default()).unwrap_or_default()
    };
    Output {
        status,
        stdout: take(out),
        stderr: take(err),
    }
}

fn drain(mut r: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        v
    })
}

pub fn native(prog: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(prog);
    c.args(args);
    run(c, &format!("{} natively", prog.display()))
}

pub fn lwk(prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(RUNNER);
    c.envs(env.iter().copied()).arg(prog).args(args);
    run(c, &format!("{} in the LWK", prog.display()))
}

/// The status, stdout and stderr of `o`, for a failure message.
pub fn show(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `prog` natively and in the LWK (with `env`): same stdout, same exit code or signal.
/// Returns the LWK's output.
pub fn assert_same(prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let n = native(prog, args);
    let l = lwk(prog, args, env);
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
        "{} {args:?} {env:?}: native and LWK differ\n--- native\n{}\n--- LWK\n{}",
        prog.display(),
        show(&n),
        show(&l)
    );
    l
}
