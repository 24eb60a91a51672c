//! Issue #16: signals sent to the LWK from outside, and signals that interrupt blocking calls.
//! Item 4: a SIGSEGV/SIGBUS sent by another process reaches the guest (its handler, or death by
//! that signal) instead of being swallowed. Item 6: a blocking delegated call is interrupted by a
//! signal the guest takes under the mask the call installs (`make -j2` hung in pselect6), EINTR or
//! a restart as SA_RESTART says, and SIGTERM ends a run stuck in such a call; rt_sigtimedwait
//! takes blocked signals (it was ENOSYS). Every run has a
//! deadline: a regression fails instead of hanging. Needs /dev/kvm, gcc and make.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const RUNNER: &str = env!("CARGO_BIN_EXE_lwk-run");
/// Only detects a hang: every run here takes well under a second when it works.
const DEADLINE: Duration = Duration::from_secs(60);

fn require_kvm() {
    if let Err(e) = multios_lwk::check_kvm() {
        panic!("issue #16 tests need KVM and it is not usable here: {e}");
    }
}

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

/// Builds tests/c/NAME.c (dynamic, or static with `-static` in `flags`) into `dir`.
fn build_c(dir: &Scratch, name: &str, flags: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(format!("{name}.c"));
    let out = dir.path().join(format!("{name}{}", flags.concat()));
    let o = Command::new("gcc")
        .args(flags)
        .args(["-O1", "-g", "-o"])
        .arg(&out)
        .arg(&src)
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

/// A process started in its own process group, with its stdout read line by line.
struct Run {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    err: std::thread::JoinHandle<String>,
    t0: Instant,
}

impl Run {
    fn start(cmd: &mut Command) -> Self {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
        let out = child.stdout.take().expect("piped stdout");
        let mut err = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Run {
            child,
            lines,
            seen: Vec::new(),
            err,
            t0: Instant::now(),
        }
    }

    fn left(&self) -> Duration {
        DEADLINE.saturating_sub(self.t0.elapsed())
    }

    /// Kills the whole process group (the VMM and any guest children) and fails.
    fn hung(&mut self, what: &str) -> ! {
        // SAFETY: kill with the negative pid of the group this test created has no memory effects.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
        while let Ok(l) = self.lines.try_recv() {
            self.seen.push(l);
        }
        panic!(
            "{what}: still running after {DEADLINE:?} (killed); output so far: {:?}",
            self.seen
        );
    }

    /// Waits for the line `want`.
    fn expect_line(&mut self, want: &str) {
        loop {
            match self.lines.recv_timeout(self.left()) {
                Ok(l) => {
                    let done = l == want;
                    self.seen.push(l);
                    if done {
                        return;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => self.hung(&format!("waiting for {want:?}")),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("the program ended before printing {want:?}: {:?}", self.seen)
                }
            }
        }
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill with a valid pid and signal has no memory effects.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, sig) }, 0);
    }

    /// Waits for the end (killing the group at the deadline): status, stdout lines, stderr.
    fn finish(mut self, what: &str) -> (ExitStatus, Vec<String>, String) {
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) if self.left().is_zero() => self.hung(what),
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => panic!("waiting for {what}: {e}"),
            }
        };
        // The reader ends with the pipe (guest children could keep it open: bounded).
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(l);
        }
        let err = self.err.join().unwrap_or_default();
        (status, self.seen, err)
    }
}

fn lwk_cmd(prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(RUNNER);
    c.arg(prog).args(args).envs(env.iter().copied());
    c
}

/// Runs `cmd` to its end under the deadline.
fn run(cmd: &mut Command, what: &str) -> (ExitStatus, Vec<String>, String) {
    Run::start(cmd).finish(what)
}

#[test]
fn issue_16_sigsegv_sent_by_another_process_reaches_the_guest_handler() {
    require_kvm();
    let dir = Scratch::new("multios-issue16", "fault");
    let prog = build_c(&dir, "interrupts", &[]);
    let mut r = Run::start(&mut lwk_cmd(&prog, &["fault"], &[]));
    r.expect_line("ready");
    r.signal(libc::SIGSEGV);
    let (status, lines, err) = r.finish("fault");
    assert!(status.success(), "{status:?} {lines:?} {err}");
    assert_eq!(
        lines.last().map(String::as_str),
        Some("SIGSEGV handled: si_code 0 (SI_USER 0), from my parent 1"),
        "{err}"
    );
}

#[test]
fn issue_16_sigsegv_and_sigbus_sent_without_a_handler_kill_like_native() {
    require_kvm();
    let dir = Scratch::new("multios-issue16", "fault-dfl");
    let prog = build_c(&dir, "interrupts", &[]);
    for sig in [libc::SIGSEGV, libc::SIGBUS] {
        for lwk in [false, true] {
            let mut cmd = if lwk {
                lwk_cmd(&prog, &["wait"], &[])
            } else {
                let mut c = Command::new(&prog);
                c.arg("wait");
                c
            };
            let mut r = Run::start(&mut cmd);
            r.expect_line("ready");
            r.signal(sig);
            let (status, lines, err) = r.finish("wait");
            assert_eq!(
                status.signal(),
                Some(sig),
                "{} with signal {sig}: {status:?} {lines:?} {err}",
                if lwk { "LWK" } else { "native" }
            );
        }
    }
}

#[test]
fn issue_16_make_j2_and_j4_finish_like_native() {
    require_kvm();
    let dir = Scratch::new("multios-issue16", "make");
    std::fs::write(
        dir.path().join("Makefile"),
        "all: t1 t2 t3 t4\nt1 t2 t3 t4:\n\t@sleep 0.1; echo $@\n",
    )
    .expect("write the Makefile");
    let d = dir.path().to_str().expect("utf-8 temp path");
    for j in ["-j1", "-j2", "-j4"] {
        let (status, mut lines, err) = run(
            &mut lwk_cmd(Path::new("/usr/bin/make"), &[j, "-s", "-B", "-C", d], &[]),
            &format!("make {j}"),
        );
        lines.sort();
        assert!(status.success(), "make {j}: {status:?} {lines:?} {err}");
        assert_eq!(lines, ["t1", "t2", "t3", "t4"], "make {j}: {err}");
    }
}

#[test]
fn issue_16_pselect_with_sigchld_unblocked_reaps_every_child() {
    require_kvm();
    let dir = Scratch::new("multios-issue16", "pselect");
    let want = "pselect: reaped 4 children, exit codes sum 10, woken by SIGCHLD 1, SIGCHLD still blocked 1";
    for flags in [&[][..], &["-static"][..]] {
        let prog = build_c(&dir, "interrupts", flags);
        let (status, lines, _) = run(Command::new(&prog).args(["pselect", "4"]), "native pselect");
        assert!(status.success());
        assert_eq!(lines, [want], "native");
        for env in [&[][..], &[("LWK_BACKEND", "exit")][..]] {
            let (status, lines, err) = run(&mut lwk_cmd(&prog, &["pselect", "4"], env), "pselect");
            assert!(status.success(), "{flags:?} {env:?}: {status:?} {lines:?} {err}");
            assert_eq!(lines, [want], "{flags:?} {env:?}: {err}");
        }
    }
}

#[test]
fn issue_16_shell_pipeline_with_a_sleep_finishes() {
    require_kvm();
    let (status, lines, err) = run(
        &mut lwk_cmd(Path::new("/bin/sh"), &["-c", "sleep 0.2 | cat; echo piped"], &[]),
        "sh pipeline",
    );
    assert!(status.success(), "{status:?} {lines:?} {err}");
    assert_eq!(lines, ["piped"]);
}

#[test]
fn issue_16_blocking_read_gets_eintr_or_restarts_as_sa_restart_says() {
    require_kvm();
    let dir = Scratch::new("multios-issue16", "read");
    let want = [
        "without SA_RESTART: read -1 (Interrupted system call), handler ran 1, then read 1 'x'",
        "with SA_RESTART: read 1 'x', handler ran 1",
    ];
    for flags in [&[][..], &["-static"][..]] {
        let prog = build_c(&dir, "interrupts", flags);
        let (_, native, _) = run(Command::new(&prog).arg("read"), "native read");
        assert_eq!(native, want, "native");
        // Rewritten sites (glibc's read is an `xor %eax,%eax` site), the trap path, the exit backend.
        for env in [
            &[][..],
            &[("LWK_NO_REWRITE", "1")][..],
            &[("LWK_BACKEND", "exit")][..],
        ] {
            let (status, lines, err) = run(&mut lwk_cmd(&prog, &["read"], env), "read");
            assert!(status.success(), "{flags:?} {env:?}: {status:?} {lines:?} {err}");
            assert_eq!(lines, want, "{flags:?} {env:?}: {err}");
        }
    }
}

#[test]
fn issue_16_sigterm_ends_a_run_waiting_in_pselect() {
    require_kvm();
    let dir = Scratch::new("multios-issue16", "term");
    let prog = build_c(&dir, "interrupts", &[]);
    let mut r = Run::start(&mut lwk_cmd(&prog, &["term"], &[]));
    r.expect_line("ready");
    r.signal(libc::SIGTERM);
    let (status, lines, err) = r.finish("term");
    assert_eq!(status.code(), Some(3), "{status:?} {lines:?} {err}");
    assert_eq!(
        lines.last().map(String::as_str),
        Some("terminated, child reaped 1, killed by 15"),
        "{err}"
    );
}

#[test]
fn issue_16_sigtimedwait_takes_blocked_signals_like_native() {
    require_kvm();
    let dir = Scratch::new("multios-issue16", "sigwait");
    let prog = build_c(&dir, "interrupts", &[]);
    let (status, native, _) = run(Command::new(&prog).arg("sigwait"), "native sigwait");
    assert!(status.success());
    assert_eq!(native.len(), 3, "{native:?}");
    for env in [&[][..], &[("LWK_BACKEND", "exit")][..]] {
        let (status, lines, err) = run(&mut lwk_cmd(&prog, &["sigwait"], env), "sigwait");
        assert!(status.success(), "{env:?}: {status:?} {lines:?} {err}");
        assert_eq!(lines, native, "{env:?}: {err}");
    }
}

/// Reported 2026-11-28: a guest that raised SIGSTOP on itself ended with status 147 once
/// continued, and SIGTSTP, SIGTTIN and SIGTTOU at their default action were ignored (Ctrl-Z did
/// nothing). Raised by the program (a forked child, seen by its parent's waitpid) and sent from
/// outside, they stop it and SIGCONT continues it, as natively.
#[test]
fn issue_16_stop_signals_stop_and_continue_like_native() {
    require_kvm();
    let dir = Scratch::new("multios-issue16", "stops");
    for flags in [&[][..], &["-static"][..]] {
        let prog = build_c(&dir, "stops", flags);
        let (status, native, _) = run(&mut Command::new(&prog), "native stops");
        assert!(status.success(), "{native:?}");
        assert!(
            native.iter().any(|l| l == "signal 19: stopped by 19"),
            "{native:?}"
        );
        let (status, lines, err) = run(&mut lwk_cmd(&prog, &[], &[]), "stops");
        assert!(status.success(), "{flags:?}: {status:?} {lines:?} {err}");
        assert_eq!(lines, native, "{flags:?}: {err}");
        // From outside, as a terminal's Ctrl-Z would send it.
        let mut r = Run::start(&mut lwk_cmd(&prog, &["wait"], &[]));
        r.expect_line("ready");
        r.signal(libc::SIGTSTP);
        let status_file = format!("/proc/{}/status", r.child.id());
        let stopped = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            std::fs::read_to_string(&status_file)
                .unwrap_or_default()
                .lines()
                .any(|l| l.starts_with("State:") && l.contains("stopped"))
        });
        r.signal(libc::SIGCONT);
        let (status, lines, err) = r.finish("stopped from outside");
        assert!(
            stopped,
            "{flags:?}: SIGTSTP did not stop the run: {lines:?} {err}"
        );
        assert!(status.success(), "{flags:?}: {status:?} {lines:?} {err}");
        assert_eq!(lines, ["ready", "done"], "{flags:?}: {err}");
    }
}

/// Reported 2026-11-28: a read of a file mapping's page past the end of its file stopped the VMM
/// ("KVM_RUN failed: Bad address", the guest's handler never ran) where Linux raises SIGBUS with
/// BUS_ADRERR. Handled (private and shared mappings, a file truncated under its mapping) and not
/// (death by SIGBUS, 135 from a shell), as natively.
#[test]
fn issue_5_a_read_past_the_end_of_a_mapped_file_is_sigbus_as_natively() {
    require_kvm();
    let dir = Scratch::new("multios-issue5", "pasteof");
    for flags in [&[][..], &["-static"][..]] {
        let prog = build_c(&dir, "pasteof", flags);
        for mode in ["0", "1", "2", "die"] {
            let (nstatus, native, _) = run(Command::new(&prog).arg(mode), "native pasteof");
            let (status, lines, err) = run(&mut lwk_cmd(&prog, &[mode], &[]), "pasteof");
            assert_eq!(lines, native, "{flags:?} {mode}: {err}");
            assert_eq!(status.code(), nstatus.code(), "{flags:?} {mode}: {err}");
            assert_eq!(status.signal(), nstatus.signal(), "{flags:?} {mode}: {err}");
            if mode == "die" {
                assert_eq!(nstatus.signal(), Some(libc::SIGBUS), "{native:?}");
            } else {
                assert!(native.iter().any(|l| l == "recovered"), "{native:?}");
            }
        }
    }
}

/// Reported 2026-11-28: `ulimit -v` (RLIMIT_AS) was applied to the VMM, whose 4 GiB window then
/// left no room: every later fork failed ("KVM_CREATE_VCPU: Cannot allocate memory") and a shell
/// that set it could run nothing. The limit is now the guest's, kept and enforced by the LWK.
#[test]
fn issue_5_rlimit_as_is_the_guests_and_fork_still_works() {
    require_kvm();
    let dir = Scratch::new("multios-issue5", "rlimitas");
    for flags in [&[][..], &["-static"][..]] {
        let prog = build_c(&dir, "rlimitas", flags);
        let (status, native, _) = run(&mut Command::new(&prog), "native rlimitas");
        assert!(status.success(), "{native:?}");
        let (status, lines, err) = run(&mut lwk_cmd(&prog, &[], &[]), "rlimitas");
        assert!(status.success(), "{flags:?}: {status:?} {lines:?} {err}");
        assert_eq!(lines, native, "{flags:?}: {err}");
    }
    let script = "ulimit -v 2000000; /bin/true; echo $?";
    let (status, lines, err) = run(
        &mut lwk_cmd(Path::new("/bin/sh"), &["-c", script], &[]),
        "ulimit -v",
    );
    assert!(status.success(), "{status:?} {lines:?} {err}");
    assert_eq!(lines, ["0"], "{err}");
}

/// Reported 2026-11-28: with SIGPIPE blocked a write to a pipe without readers left nothing
/// pending (natively it stays pending and kills once unblocked), splice into such a pipe raised
/// no SIGPIPE, and a write past RLIMIT_FSIZE gave EFBIG without SIGXFSZ (a shell's `ulimit -f`
/// printed "File too large" where the program dies with 153).
#[test]
fn issue_5_signals_the_kernel_sends_with_epipe_and_efbig_like_native() {
    require_kvm();
    let dir = Scratch::new("multios-issue5", "kernelsigs");
    for flags in [&[][..], &["-static"][..]] {
        let prog = build_c(&dir, "kernelsigs", flags);
        for mode in ["blocked", "splice", "xfsz", "xfsz-die"] {
            let (nstatus, native, _) = run(Command::new(&prog).arg(mode), "native kernelsigs");
            let (status, lines, err) = run(&mut lwk_cmd(&prog, &[mode], &[]), "kernelsigs");
            assert_eq!(lines, native, "{flags:?} {mode}: {err}");
            assert_eq!(status.code(), nstatus.code(), "{flags:?} {mode}: {err}");
            assert_eq!(status.signal(), nstatus.signal(), "{flags:?} {mode}: {err}");
        }
    }
}

/// Reported 2026-11-28: inotify (init, init1, add_watch, rm_watch) and ioprio_get/ioprio_set were
/// ENOSYS in the LWK (`tail -f` fell back to polling, `ionice` failed).
#[test]
fn issue_5_inotify_and_ioprio_work_like_native() {
    require_kvm();
    let dir = Scratch::new("multios-issue5", "inotify");
    let prog = build_c(&dir, "inotify", &[]);
    let (status, native, _) = run(&mut Command::new(&prog), "native inotify");
    assert!(status.success(), "{native:?}");
    assert_eq!(
        native.first().map(String::as_str),
        Some("event: created new-file")
    );
    let (status, lines, err) = run(&mut lwk_cmd(&prog, &[], &[]), "inotify");
    assert!(status.success(), "{status:?} {lines:?} {err}");
    assert_eq!(lines, native, "{err}");
    assert!(!err.contains("not supported"), "{err}");
}
