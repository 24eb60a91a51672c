//! Issue #18: `multios report` read its own command line (shown in the page) with
//! std::env::args(), which panicked on any argument that is not UTF-8, such as `-o
//! $'/tmp/r\xff.html'`. The page is written to that path now.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

mod common;
#[path = "../../../testsupport/scratch.rs"]
mod scratch;

#[test]
fn issue_18_report_writes_to_an_output_path_that_is_not_utf8() {
    let dir = scratch::Scratch::new("multios-issue18", "report-bytes");
    let profile = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bzip2/profile.json");
    let out = dir.join(OsString::from_vec(b"r\xff.html".to_vec()));
    let args: Vec<OsString> = vec![
        "report".into(),
        "--profile".into(),
        profile.into_os_string(),
        "-o".into(),
        out.clone().into_os_string(),
    ];
    let o = common::multios_in(&dir, &args);
    assert!(
        o.status.success(),
        "multios report failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let page = std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    assert!(page.contains("</html>"), "not a page: {} bytes", page.len());
    // The command line shown in the page, with U+FFFD for the stray byte.
    assert!(
        page.contains("r\u{fffd}.html"),
        "the command line is not in the page"
    );
}
