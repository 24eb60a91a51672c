//! Issue #3 through the CLI: `multios profile -o FILE` took FILE as a UTF-8 string and refused a
//! path that is not ("invalid UTF-8 was detected in one or more arguments"); it is a path now,
//! and `%p`/`%r` are expanded on its bytes, the others kept unchanged.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::{Command, Stdio};

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

#[test]
fn issue_3_profile_writes_to_an_output_path_that_is_not_utf8() {
    let dir = scratch::Scratch::new("multios-issue3", "output-bytes");
    let pattern = OsString::from_vec(b"p\xff.%p.json".to_vec());
    let child = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(["profile", "--backend", "ptrace", "-o"])
        .arg(&pattern)
        .args(["--", "true"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run multios: {e}"));
    let pid = child.id();
    let o = child.wait_with_output().expect("multios ends");
    assert!(
        o.status.success(),
        "multios failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let want = [b"p\xff.".as_slice(), pid.to_string().as_bytes(), b".json"].concat();
    let names: Vec<OsString> = std::fs::read_dir(&dir)
        .expect("the scratch directory")
        .map(|e| e.expect("an entry").file_name())
        .collect();
    assert!(
        names.iter().any(|n| n.as_bytes() == want.as_slice()),
        "no {:?} among {names:?}",
        OsString::from_vec(want.clone())
    );
    let text = std::fs::read_to_string(dir.join(OsString::from_vec(want))).expect("the profile");
    assert!(text.contains("\"syscalls\""), "{text}");
}
