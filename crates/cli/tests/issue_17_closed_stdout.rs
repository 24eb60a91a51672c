//! Issue #17 (found while wiring `multios aam`): `multios … --json | head -1` panicked with
//! "failed printing to stdout: Broken pipe" once the reader had gone. The CLI now ends quietly
//! with status 0, as ripgrep does, in every output mode.

use std::process::{Command, Stdio};

/// Runs multios with a stdout pipe whose read end is closed before multios writes anything.
fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run multios: {e}"));
    // Closing our read end now: the only reader is gone before the model has printed a line.
    drop(child.stdout.take());
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("waiting for multios: {e}"));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn issue_17_a_closed_stdout_pipe_ends_multios_quietly_in_every_output_mode() {
    for mode in [&[][..], &["--json"][..], &["--csv"][..]] {
        let mut args = vec!["model", "naive", "--paper-table1", "--gamma", "2,10"];
        args.extend_from_slice(mode);
        let (code, stderr) = with_closed_stdout(&args);
        assert_eq!(code, Some(0), "{args:?}: stderr {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
