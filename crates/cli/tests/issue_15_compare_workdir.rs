//! Issue #15 through the CLI, `multios emulate --compare --workdir DIR`: what the fresh copy of DIR
//! holds. A FIFO in DIR hung the comparison for ever (copying it opened it, waiting for a writer);
//! a device was read as a file (a copy of /dev/zero without end); a `TMPDIR` inside DIR copied the
//! comparison's scratch directory into itself until the path was too long; and a scratch directory
//! that a signal left behind stayed. Each output is compared with the same program run natively in
//! DIR. No timing is asserted.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

const EMU: [&str; 8] = [
    "emulate",
    "--compare",
    "--runs",
    "1",
    "--policy",
    "all",
    "--fc",
    "1us",
];

/// `multios ARGS` started in `cwd` with `TMPDIR=tmp`, stdin from /dev/null.
fn start(cwd: &Path, tmp: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(args)
        .current_dir(cwd)
        .env("TMPDIR", tmp)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run multios {args:?}: {e}"))
}

/// Waits up to `secs` for `child`; kills it (and fails) when it does not end: the FIFO hang.
fn finish(mut child: Child, secs: u64, what: &str) -> Output {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if let Ok(Some(_)) = child.try_wait() {
            return child.wait_with_output().expect("multios's output");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let o = child.wait_with_output().expect("multios's output");
    panic!(
        "{what}: multios did not end within {secs} s; stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn compare_in(cwd: &Path, tmp: &Path, extra: &[&str], what: &str) -> Output {
    let args: Vec<&str> = EMU.iter().copied().chain(extra.iter().copied()).collect();
    finish(start(cwd, tmp, &args), 60, what)
}

/// `sh -c SCRIPT` run natively in `dir`: what the comparison's runs must print.
fn native(dir: &Path, script: &str) -> String {
    let o = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("sh");
    assert!(o.status.success(), "native {script}: {o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn mkfifo(p: &Path, mode: u32) {
    let ok = Command::new("mkfifo")
        .args(["-m", &format!("{mode:o}")])
        .arg(p)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", p.display());
}

/// The comparison's scratch directories in `tmp`.
fn scratches(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("multios-compare-"))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// A FIFO in --workdir is made anew in each run's copy (same mode) instead of being opened for
/// copying, which waited for a writer for ever (`cat f` never started).
#[test]
fn issue_15_a_fifo_in_the_workdir_is_made_anew_not_waited_on() {
    let d = scratch::Scratch::new("multios-issue15", "workdir-fifo");
    let (wd, tmp) = (d.join("wd"), d.join("tmp"));
    std::fs::create_dir_all(&wd).expect("mkdir wd");
    std::fs::create_dir_all(&tmp).expect("mkdir tmp");
    std::fs::write(wd.join("f"), "hello\n").expect("f");
    mkfifo(&wd.join("fifo"), 0o640);
    let script = "stat -c '%F %a' fifo; cat f";
    let want = native(&wd, script);
    assert_eq!(want, "fifo 640\nhello\n");
    let o = compare_in(
        &d,
        &tmp,
        &["--workdir", "wd", "--", "sh", "-c", script],
        "a FIFO in --workdir",
    );
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(text(&o.stdout), want, "{err}");
    assert!(
        err.contains("every run wrote the same stdout and stderr"),
        "{err}"
    );
    // `cat f` too, the discovery's command.
    let o = compare_in(&d, &tmp, &["--workdir", "wd", "--", "cat", "f"], "cat f");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "hello\n");
    assert!(scratches(&tmp).is_empty(), "{:?}", scratches(&tmp));
}

/// A socket or a device node in --workdir is refused with its path and what to do, at once (a copy
/// of /dev/zero was read without end); no scratch directory stays behind.
#[test]
fn issue_15_a_socket_or_device_in_the_workdir_is_refused_with_its_path() {
    let d = scratch::Scratch::new("multios-issue15", "workdir-special");
    let (wd, tmp) = (d.join("wd"), d.join("tmp"));
    std::fs::create_dir_all(&wd).expect("mkdir wd");
    std::fs::create_dir_all(&tmp).expect("mkdir tmp");
    std::fs::write(wd.join("f"), "hello\n").expect("f");
    let sock = std::os::unix::net::UnixListener::bind(wd.join("sock")).expect("bind a socket");
    let o = compare_in(&d, &tmp, &["--workdir", "wd", "--", "cat", "f"], "a socket");
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("wd/sock is a socket") && err.contains("move it out of the directory"),
        "{err}"
    );
    drop(sock);
    std::fs::remove_file(wd.join("sock")).expect("rm sock");
    // A character device, as root (mknod needs CAP_MKNOD; without it only the socket is checked).
    let made = Command::new("mknod")
        .arg(wd.join("zero"))
        .args(["c", "1", "5"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if made {
        assert!(std::fs::symlink_metadata(wd.join("zero")).is_ok_and(|m| m.file_type().is_char_device()));
        let o = compare_in(&d, &tmp, &["--workdir", "wd", "--", "cat", "f"], "a device");
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{err}");
        assert!(err.contains("wd/zero is a character device"), "{err}");
    } else {
        eprintln!("mknod refused (not root): the device case is not checked");
    }
    assert!(scratches(&tmp).is_empty(), "{:?}", scratches(&tmp));
}

/// `TMPDIR` inside --workdir: the comparison's scratch directory (where the copies are made) is
/// left out of the copy, which copied itself into itself until ENAMETOOLONG. The program sees
/// what it sees natively.
#[test]
fn issue_15_a_scratch_directory_inside_the_workdir_is_not_copied() {
    let d = scratch::Scratch::new("multios-issue15", "workdir-tmp");
    let wd = d.join("td");
    std::fs::create_dir_all(wd.join("sub")).expect("mkdir td");
    std::fs::write(wd.join("f"), "x\n").expect("f");
    std::fs::write(wd.join("sub/g"), "y\n").expect("g");
    let script = "ls -AR; cat f";
    let want = native(&wd, script);
    let o = compare_in(
        &d,
        &wd,
        &["--workdir", "td", "--", "sh", "-c", script],
        "TMPDIR inside --workdir",
    );
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(text(&o.stdout), want, "{err}");
    assert!(!err.contains("File name too long"), "{err}");
    assert!(scratches(&wd).is_empty(), "{:?}", scratches(&wd));
}

/// A SIGTERM between two runs (here during a `--setup`) ends multios as the signal does, before
/// its scratch directory is removed; the next comparison removes it (its process is gone).
#[test]
fn issue_15_a_scratch_left_by_a_signal_is_removed_by_the_next_comparison() {
    let d = scratch::Scratch::new("multios-issue15", "stale-scratch");
    let tmp = d.join("tmp");
    std::fs::create_dir_all(&tmp).expect("mkdir tmp");
    let args: Vec<&str> = EMU
        .iter()
        .copied()
        .chain(["--setup", "sleep 5", "--", "true"])
        .collect();
    let child = start(&d, &tmp, &args);
    let pid = child.id();
    let end = Instant::now() + Duration::from_secs(20);
    while scratches(&tmp).is_empty() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let ok = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -TERM {pid}");
    let o = finish(child, 30, "SIGTERM during --setup");
    let st: ExitStatus = o.status;
    assert!(!st.success(), "{st:?}");
    let left = scratches(&tmp);
    assert_eq!(left.len(), 1, "{left:?}");
    // The setup's `sleep` (not signalled) ends on its own; its directory is what matters.
    let o = compare_in(&d, &tmp, &["--", "true"], "the next comparison");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(!left[0].exists(), "{} stayed", left[0].display());
    assert!(scratches(&tmp).is_empty(), "{:?}", scratches(&tmp));
}
