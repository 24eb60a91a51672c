//! Issue #16 item 8: a process pipeline under `shm` (`tar czf`: tar | gzip) ran 6–8× slower than
//! natively, because a thread whose delegated call blocked (a read from an empty pipe, an open of
//! a FIFO) kept its compute CPU spinning for the reply — for 10 ms, then polling — while the process
//! that would unblock it needed that CPU. Now the caller sleeps on a futex once its delegate has
//! been inside the call for a while, and the delegate wakes it with the reply.
//!
//! No timing here (speed is `multios bench emulate`'s business): the test checks *where* the
//! caller waits — blocked in `futex` (system call 202 in /proc/PID/syscall), not running or
//! sleeping in `nanosleep` between polls — while its delegated `openat` of a FIFO blocks, and that
//! the program completes with the right output once the FIFO is opened for writing.

mod common;
use multios_emulate::{Delegation, Exit, Mechanism};
use std::io::Write;
use std::time::{Duration, Instant};

/// The system call the process's main thread is blocked in, from /proc/PID/syscall ("running"
/// or an unreadable file give None).
fn blocked_in(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/syscall")).ok()?;
    s.split_whitespace().next()?.parse().ok()
}

#[test]
fn issue_16_a_blocked_delegated_call_lets_its_caller_sleep() {
    let dir = common::tmpdir("issue16-pipeline");
    let fifo = dir.join("fifo");
    let pidfile = dir.join("pid");
    let out = dir.join("out");
    let c = std::ffi::CString::new(fifo.to_str().expect("UTF-8 temp dir")).expect("no NUL");
    // SAFETY: mkfifo on a valid NUL-terminated path.
    let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(made, 0, "mkfifo {}", fifo.display());
    let script = format!(
        "echo $$ > {}; exec cat {} > {}",
        pidfile.display(),
        fifo.display(),
        out.display()
    );
    let argv: Vec<String> = ["timeout", "-s", "KILL", "60", "sh", "-c", &script]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let runner = std::thread::spawn(move || {
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        common::run(Mechanism::Shm, Delegation::all(), 0.0, &refs)
    });
    // cat's pid (sh execs it), then where its main thread waits while openat(fifo) blocks.
    let end = Instant::now() + Duration::from_secs(30);
    let mut pid = None;
    while pid.is_none() && Instant::now() < end {
        pid = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = pid.expect("the program never wrote its pid");
    // Five samples in a row blocked in futex: before the fix the caller was never there (it
    // spun, then slept in nanosleep between polls).
    let mut in_a_row = 0;
    let mut seen = Vec::new();
    while in_a_row < 5 && Instant::now() < end {
        let b = blocked_in(pid);
        seen.push(b);
        in_a_row = if b == Some(libc::SYS_futex as u64) {
            in_a_row + 1
        } else {
            0
        };
        std::thread::sleep(Duration::from_millis(50));
    }
    // Unblock cat whatever happened, so the run ends.
    let mut w = std::fs::OpenOptions::new()
        .write(true)
        .open(&fifo)
        .unwrap_or_else(|e| panic!("opening {} for writing: {e}", fifo.display()));
    w.write_all(b"through the fifo\n").expect("write to the FIFO");
    drop(w);
    let report = runner.join().expect("the emulated run panicked");
    let got = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(report.exit, Exit::Code(0), "{report:?}");
    assert_eq!(got, "through the fifo\n");
    let last: Vec<_> = seen.iter().rev().take(20).collect();
    assert_eq!(
        in_a_row, 5,
        "the caller of a blocked delegated call never slept in futex; last samples of its system call (newest first): {last:?}"
    );
}
