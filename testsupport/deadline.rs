//! Running a test's child process to its end with a deadline that only detects a hang: the
//! process is killed (and the test fails) after `deadline`, with what it printed so far.
//!
//! Test files include it with `#[path = "…/testsupport/deadline.rs"] mod deadline;`.
#![allow(dead_code)]

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd` (stdout and stderr captured) to its end; panics naming `what` if it cannot start,
/// or if it is still running after `deadline`.
pub fn run(mut cmd: Command, what: &str, deadline: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {what}: {e}"));
    let t0 = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if t0.elapsed() > deadline => {
                let _ = child.kill();
                let out = child.wait_with_output();
                panic!("{what} hung for {deadline:?}: {out:?}");
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("waiting for {what}: {e}"),
        }
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("reading the output of {what}: {e}"))
}
