//! Helpers shared by the CLI's integration tests (each test file is its own crate: `mod common;`).
#![allow(dead_code)] // each test crate uses some of them

use std::process::Command;

/// Runs the `multios` binary of this build with `args` and `NO_COLOR=1`: (exit code, stdout,
/// stderr); −1 when it ended by a signal.
pub fn multios(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run multios: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the `multios` binary of this build in `cwd` with `args` (any bytes) and stdin from
/// /dev/null; its whole output.
pub fn multios_in<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
    cwd: &std::path::Path,
    args: &[S],
) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run multios {args:?}: {e}"))
}
